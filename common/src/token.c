/* SPDX-License-Identifier: MIT */
/*
 * token.c - the token of --token-file: its byte rule, reading it from a file
 * (a regular file, bounded, one trailing newline dropped; the one reader the
 * clients and nwb-logserver share) and from the environment. The server adds
 * its own rules on top (file mode, 16-byte minimum) in server/src/auth.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "nwb/token.h"

int nwb_token_valid(const char *s, size_t len)
{
    if (len == 0 || len > NWB_TOKEN_MAX) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)s[i];

        if (c < 0x21 || c > 0x7e) {
            return 0;
        }
    }
    return 1;
}

/* "the token file PATH: <what>" in @p errbuf; returns NWB_ECONFIG. */
static int token_error(char *errbuf, size_t errlen, const char *path, const char *fmt, ...)
    NWB_PRINTF_LIKE(4, 5);

static int token_error(char *errbuf, size_t errlen, const char *path, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (errbuf == NULL || errlen == 0) {
        return NWB_ECONFIG;
    }
    n = snprintf(errbuf, errlen, "the token file %s: ", path);
    if (n >= 0 && (size_t)n < errlen) {
        va_start(ap, fmt);
        vsnprintf(errbuf + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return NWB_ECONFIG;
}

/* Wipe a copy of the token before it is freed or goes out of scope. */
static void token_wipe(void *p, size_t n)
{
    volatile unsigned char *v = p;

    for (size_t i = 0; i < n; i++) {
        v[i] = 0;
    }
}

int nwb_token_file_read(const char *path, char *dst, size_t cap, char *errbuf, size_t errlen)
{
    /* The longest token and a CRLF; a larger file is NWB_ETOOBIG. */
    const size_t max = NWB_TOKEN_MAX + 2;
    uint8_t *data = NULL;
    size_t len = 0;
    int rc;

    if (cap > 0) {
        dst[0] = '\0';
    }
    rc = nwb_file_read(path, max, &data, &len);
    if (rc == NWB_ENOTREG) {
        return token_error(errbuf, errlen, path, "not a regular file");
    }
    if (rc == NWB_ETOOBIG) {
        return token_error(errbuf, errlen, path, "the token is longer than %u bytes",
                           NWB_TOKEN_MAX);
    }
    if (rc != 0) {
        char ebuf[128];

        return token_error(errbuf, errlen, path, "cannot be read: %s (%s)",
                           nwb_strerror_r(rc, ebuf, sizeof(ebuf)), nwb_err_name(rc));
    }
    /* One trailing newline (LF or CRLF) is the editor's, not the token's. */
    if (len > 0 && data[len - 1] == '\n') {
        len--;
        if (len > 0 && data[len - 1] == '\r') {
            len--;
        }
    }
    if (len == 0) {
        rc = token_error(errbuf, errlen, path, "the token is empty");
    } else if (len > NWB_TOKEN_MAX) {
        rc = token_error(errbuf, errlen, path, "the token is longer than %u bytes", NWB_TOKEN_MAX);
    } else if (len >= cap) {
        rc = token_error(errbuf, errlen, path, "the token does not fit a %zu-byte buffer", cap);
    }
    for (size_t i = 0; rc == 0 && i < len; i++) {
        if (data[i] < 0x21 || data[i] > 0x7e) {
            rc = token_error(errbuf, errlen, path,
                             "byte %zu of the token is not visible ASCII (0x21..0x7e; spaces, "
                             "control bytes and a second line are not allowed)",
                             i);
        }
    }
    if (rc == 0) {
        memcpy(dst, data, len);
        dst[len] = '\0';
    }
    token_wipe(data, len);
    nwb_free(data);
    return rc;
}

int nwb_token_from_env(char *dst, size_t cap, char *errbuf, size_t errlen)
{
    const char *tok = getenv("NWB_LOGSERVER_TOKEN");
    const char *path = getenv("NWB_LOGSERVER_TOKEN_FILE");

    if (cap > 0) {
        dst[0] = '\0';
    }
    if (tok != NULL && tok[0] != '\0') {
        const size_t n = strlen(tok);

        if (!nwb_token_valid(tok, n) || n >= cap) {
            if (errbuf != NULL && errlen > 0) {
                snprintf(errbuf, errlen,
                         "$NWB_LOGSERVER_TOKEN must hold 1..255 visible ASCII bytes");
            }
            return NWB_ECONFIG;
        }
        memcpy(dst, tok, n + 1);
        return 0;
    }
    if (path != NULL && path[0] != '\0') {
        return nwb_token_file_read(path, dst, cap, errbuf, errlen);
    }
    return 0;
}
