/* SPDX-License-Identifier: MIT */
/*
 * http_response.c - status reason phrases and the server's response heads, each with the
 * security headers (NWB__HTTP_SECURITY_HEADERS) a browser applies to whatever it shows.
 */
#include <stdio.h>

#include "server_int.h"

const char *nwb__http_status_text(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 411:
        return "Length Required";
    case 413:
        return "Content Too Large";
    case 415:
        return "Unsupported Media Type";
    case 416:
        return "Range Not Satisfiable";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Unknown";
    }
}

size_t nwb__http_head_format(char *dst, size_t cap, int status, const char *ctype,
                             size_t content_length, const char *extra, int close)
{
    /* A 304 has no body, and a Content-Length there would have to be the 200's: none. */
    char length[48] = "";
    int n;

    if (status != 304) {
        snprintf(length, sizeof(length), "Content-Length: %zu\r\n", content_length);
    }
    n = snprintf(dst, cap, "HTTP/1.1 %d %s\r\n%s%s%s%s%s%s%s\r\n", status,
                 nwb__http_status_text(status), length, ctype != NULL ? "Content-Type: " : "",
                 ctype != NULL ? ctype : "", ctype != NULL ? "\r\n" : "",
                 NWB__HTTP_SECURITY_HEADERS, extra != NULL ? extra : "",
                 close ? "Connection: close\r\n" : "");

    if (n < 0 || (size_t)n >= cap) {
        return 0;
    }
    return (size_t)n;
}
