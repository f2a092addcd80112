/* SPDX-License-Identifier: MIT */
/*
 * ch_http.c - blocking HTTP/1.1 POSTs to ClickHouse with a kept-alive connection and an llhttp
 * answer parser (ch_http.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <llhttp.h>
#include <uv.h>

#include "nwb/error.h"
#include "ch_http.h"

int nwb__ch_http_init(struct nwb__ch_http *h, const char *url, char *err, size_t errlen)
{
    static const char http[] = "http://", https[] = "https://";
    const char *p, *host_end, *rest;
    size_t host_len;
    long port = NWB__CH_HTTP_PORT;

    memset(h, 0, sizeof(*h));
    h->fd = -1;
    snprintf(h->database, sizeof(h->database), "nwb");
    if (strncmp(url, https, sizeof(https) - 1) == 0) {
        h->https = 1;
        port = NWB__CH_HTTPS_PORT;
        p = url + sizeof(https) - 1;
    } else if (strncmp(url, http, sizeof(http) - 1) == 0) {
        p = url + sizeof(http) - 1;
    } else {
        snprintf(err, errlen, "the URL must start with http:// or https://");
        return NWB_ECONFIG;
    }
    if (*p == '[') {
        host_end = strchr(p, ']');
        if (host_end == NULL) {
            snprintf(err, errlen, "the URL's [IPv6] host has no ']'");
            return NWB_ECONFIG;
        }
        p++;
        rest = host_end + 1;
    } else {
        host_end = p + strcspn(p, ":/?");
        rest = host_end;
    }
    host_len = (size_t)(host_end - p);
    if (host_len == 0 || host_len > NWB__CH_HOST_MAX) {
        snprintf(err, errlen, "the URL's host must be 1..%u bytes", NWB__CH_HOST_MAX);
        return NWB_ECONFIG;
    }
    for (size_t i = 0; i < host_len; i++) {
        const unsigned char c = (unsigned char)p[i];

        if (c <= 0x20 || c >= 0x7f || c == '@') {
            snprintf(err, errlen, "the URL's host has a byte that cannot be in a host name");
            return NWB_ECONFIG;
        }
    }
    memcpy(h->host, p, host_len);
    h->host[host_len] = '\0';
    if (*rest == ':') {
        char *end;

        errno = 0;
        port = strtol(rest + 1, &end, 10);
        if (end == rest + 1 || errno != 0 || port < 1 || port > 65535 ||
            (*end != '\0' && *end != '/' && *end != '?')) {
            snprintf(err, errlen, "the URL's port must be a number in 1..65535");
            return NWB_ECONFIG;
        }
        rest = end;
    }
    h->port = (int)port;
    if (*rest == '/') {
        rest++;
    }
    if (*rest == '?') {
        static const char key[] = "database=";

        rest++;
        if (strncmp(rest, key, sizeof(key) - 1) != 0 || strchr(rest, '&') != NULL) {
            snprintf(err, errlen, "the URL's only query parameter is database=NAME");
            return NWB_ECONFIG;
        }
        rest += sizeof(key) - 1;
        if (nwb__ch_db_name_check(rest, err, errlen) != 0) {
            return NWB_ECONFIG;
        }
        snprintf(h->database, sizeof(h->database), "%s", rest);
    } else if (*rest != '\0') {
        snprintf(err, errlen, "the URL has a path: give only http[s]://HOST:PORT/?database=NAME");
        return NWB_ECONFIG;
    }
    return 0;
}

int nwb__ch_http_tls_setup(struct nwb__ch_http *h, const char *ca_file, char *err, size_t errlen)
{
    if (!h->https) {
        if (ca_file != NULL) {
            snprintf(err, errlen, "--forward-ca-file is only for an https:// URL");
            return NWB_ECONFIG;
        }
        return 0;
    }
    return nwb__ch_tls_create(ca_file, &h->tls, err, errlen);
}

static void base64(const unsigned char *src, size_t n, char *dst)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;

    for (size_t i = 0; i < n; i += 3) {
        const unsigned v = (unsigned)src[i] << 16 | (i + 1 < n ? (unsigned)src[i + 1] << 8 : 0) |
                           (i + 2 < n ? src[i + 2] : 0);

        dst[o++] = tab[v >> 18 & 63];
        dst[o++] = tab[v >> 12 & 63];
        dst[o++] = i + 1 < n ? tab[v >> 6 & 63] : '=';
        dst[o++] = i + 2 < n ? tab[v & 63] : '=';
    }
    dst[o] = '\0';
}

int nwb__ch_http_set_credentials(struct nwb__ch_http *h, const char *user, const char *password)
{
    char plain[260];
    char enc[360];
    const int n = snprintf(plain, sizeof(plain), "%s:%s", user, password);

    if (n < 0 || (size_t)n >= sizeof(plain)) {
        return NWB_ECONFIG;
    }
    base64((const unsigned char *)plain, (size_t)n, enc);
    snprintf(h->auth, sizeof(h->auth), "Authorization: Basic %s\r\n", enc);
    return 0;
}

void nwb__ch_http_close(struct nwb__ch_http *h)
{
    if (h == NULL) {
        return;
    }
    nwb__ch_tls_close(h->conn);
    h->conn = NULL;
    if (h->fd >= 0) {
        close(h->fd);
        h->fd = -1;
    }
}

void nwb__ch_http_cleanup(struct nwb__ch_http *h)
{
    if (h == NULL) {
        return;
    }
    nwb__ch_http_close(h);
    nwb__ch_tls_destroy(h->tls);
    h->tls = NULL;
}

static int http_connect(struct nwb__ch_http *h)
{
    struct addrinfo hints, *res = NULL;
    char port[8];
    int err = UV_ECONNREFUSED;
    const struct timeval tv = {NWB__CH_HTTP_TIMEOUT_MS / 1000, 0};
    const int one = 1;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port, sizeof(port), "%d", h->port);
    if (getaddrinfo(h->host, port, &hints, &res) != 0) {
        return UV_EAI_NONAME;
    }
    for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);

        if (fd < 0) {
            err = -errno;
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            h->fd = fd;
            err = 0;
            break;
        }
        err = -errno;
        close(fd);
    }
    freeaddrinfo(res);
    if (err == 0 && h->https) {
        /* The socket's timeouts bound each read and write of the handshake too. A failed
         * handshake is not retried on another address: the same server answered. */
        err = h->tls == NULL ? NWB_ECONFIG
                             : nwb__ch_tls_connect(h->tls, h->fd, h->host, &h->conn, h->tls_reason,
                                                   sizeof(h->tls_reason));
        if (err != 0) {
            if (h->tls == NULL) {
                snprintf(h->tls_reason, sizeof(h->tls_reason), "no TLS context was set up");
            }
            close(h->fd);
            h->fd = -1;
        }
    }
    return err;
}

struct answer {
    llhttp_t parser;
    nwb_buf_t *body;
    int complete;
};

static int on_body(llhttp_t *p, const char *at, size_t len)
{
    struct answer *a = p->data;
    const size_t room = NWB__CH_ANSWER_KEEP - a->body->len;

    (void)nwb_buf_append(a->body, at, len < room ? len : room);
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    struct answer *a = p->data;

    a->complete = 1;
    return HPE_PAUSED;
}

static const llhttp_settings_t answer_settings = {
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* The request target: "/" or "/?query=" + percent-encoded @p query. No database= parameter:
 * every statement names its tables with the database, and CREATE DATABASE must run before
 * the database exists. */
static int target_append(nwb_buf_t *b, const char *query)
{
    static const char hex[] = "0123456789ABCDEF";
    int err = nwb_buf_append_str(b, "/");

    if (err != 0 || query == NULL) {
        return err;
    }
    err = nwb_buf_append_str(b, "?query=");
    for (const unsigned char *q = (const unsigned char *)query; err == 0 && *q != '\0'; q++) {
        const int plain = (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') ||
                          (*q >= '0' && *q <= '9') || *q == '-' || *q == '_' || *q == '.';

        if (plain) {
            err = nwb_buf_append(b, q, 1);
        } else {
            const char esc[3] = {'%', hex[*q >> 4], hex[*q & 15]};

            err = nwb_buf_append(b, esc, 3);
        }
    }
    return err;
}

/* send() with MSG_NOSIGNAL: a ClickHouse that closed the connection is an EPIPE here, never a
 * SIGPIPE for an embedding process that did not ignore it. 0, or a negated errno. */
static int send_all(struct nwb__ch_http *h, const void *data, size_t len)
{
    const char *p = data;
    const int fd = h->fd;

    if (h->conn != NULL) {
        return nwb__ch_tls_send(h->conn, data, len);
    }

    while (len > 0) {
        const ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return errno == EAGAIN ? UV_ETIMEDOUT : -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int send_request(struct nwb__ch_http *h, const char *query, const void *body,
                        size_t body_len)
{
    nwb_buf_t head = NWB_BUF_INIT(64 * 1024);
    int err = nwb_buf_append_str(&head, "POST ");

    err = err != 0 ? err : target_append(&head, query);
    err = err != 0 ? err
                   : nwb_buf_appendf(&head,
                                     " HTTP/1.1\r\nHost: %s\r\nContent-Length: %zu\r\n"
                                     "Connection: keep-alive\r\n%s\r\n",
                                     h->host, body_len, h->auth);
    if (err == 0) {
        err = send_all(h, head.data, head.len);
    }
    if (err == 0 && body_len > 0) {
        err = send_all(h, body, body_len);
    }
    nwb_buf_cleanup(&head);
    return err;
}

static int read_answer(struct nwb__ch_http *h, int *status, nwb_buf_t *answer, int *keep)
{
    struct answer a;
    char buf[16384];

    memset(&a, 0, sizeof(a));
    llhttp_init(&a.parser, HTTP_RESPONSE, &answer_settings);
    a.parser.data = &a;
    a.body = answer;
    while (!a.complete) {
        const ssize_t n = h->conn != NULL ? nwb__ch_tls_recv(h->conn, buf, sizeof(buf))
                                          : recv(h->fd, buf, sizeof(buf), 0);
        llhttp_errno_t perr;

        if (h->conn != NULL && n < 0) {
            return (int)n;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return errno == EAGAIN ? UV_ETIMEDOUT : -errno;
        }
        if (n == 0) {
            if (llhttp_finish(&a.parser) != HPE_OK && !a.complete) {
                return NWB_EPROTO;
            }
            *keep = 0;
            break;
        }
        perr = llhttp_execute(&a.parser, buf, (size_t)n);
        if (perr != HPE_OK && perr != HPE_PAUSED) {
            return NWB_EPROTO;
        }
        if (a.complete && perr == HPE_PAUSED) {
            const char *pos = llhttp_get_error_pos(&a.parser);

            /* Bytes after the answer on a connection we only ever send one request at a time
             * on: not ClickHouse; start afresh next time. */
            if (pos != NULL && pos < buf + n) {
                *keep = 0;
            }
        }
    }
    if (!a.complete) {
        return NWB_EPROTO;
    }
    *status = a.parser.status_code;
    if (*keep) {
        *keep = llhttp_should_keep_alive(&a.parser);
    }
    return 0;
}

int nwb__ch_http_post(struct nwb__ch_http *h, const char *query, const void *body, size_t body_len,
                      int *status, nwb_buf_t *answer)
{
    int err;
    int keep = 1;

    *status = 0;
    nwb_buf_reset(answer);
    h->tls_reason[0] = '\0';
    for (int attempt = 0; attempt < 2; attempt++) {
        const int reused = h->fd >= 0;

        if (!reused) {
            err = http_connect(h);
            if (err != 0) {
                return err;
            }
        }
        err = send_request(h, query, body, body_len);
        if (err == 0) {
            err = read_answer(h, status, answer, &keep);
        }
        if (err == 0) {
            if (!keep) {
                nwb__ch_http_close(h);
            }
            return 0;
        }
        nwb__ch_http_close(h);
        /* A kept-alive connection the server closed while idle: one fresh try. */
        if (!reused) {
            break;
        }
        nwb_buf_reset(answer);
    }
    return err;
}
