/* SPDX-License-Identifier: MIT */
/*
 * sse_client.c - the blocking GET /v1/events test client of sse_client.h.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "json_check.h"
#include "sse_client.h"
#include "test_support.h"

/* Wait up to @p ms for @p fd to be readable: 1, 0 on timeout. */
static int readable(int fd, long long ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};

    if (ms < 0) {
        ms = 0;
    }
    return poll(&pfd, 1, (int)ms) > 0;
}

int nwb_test_sse_open(struct nwb_test_sse *s, int port, const char *target, const char *headers,
                      int rcvbuf, int timeout_ms)
{
    const struct sockaddr_in sa = nwb_test_loopback(port);
    const long long deadline = nwb_test_now_ms() + timeout_ms;
    char req[2048];
    size_t used = 0;
    const char *end = NULL;
    int one = 1;
    int n;

    memset(s->head, 0, sizeof(s->head));
    s->body[0] = '\0';
    s->status = 0;
    nwb_test_sse_parser_init(&s->p);
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->fd < 0) {
        return -1;
    }
    if (rcvbuf > 0) {
        setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    }
    setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", target,
                 headers != NULL ? headers : "");
    if (connect(s->fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0 || n <= 0 ||
        (size_t)n >= sizeof(req) || nwb_test_send_all(s->fd, req, (size_t)n) != 0) {
        nwb_test_sse_close(s);
        return -1;
    }
    /* The head; bytes after it are the stream's (or a non-200 answer's body). */
    while (end == NULL) {
        ssize_t got;

        if (used == sizeof(s->head) - 1 || !readable(s->fd, deadline - nwb_test_now_ms())) {
            nwb_test_sse_close(s);
            return -1;
        }
        got = recv(s->fd, s->head + used, sizeof(s->head) - 1 - used, 0);
        if (got <= 0) {
            nwb_test_sse_close(s);
            return -1;
        }
        used += (size_t)got;
        s->head[used] = '\0';
        end = strstr(s->head, "\r\n\r\n");
    }
    {
        const size_t head_len = (size_t)(end + 4 - s->head);
        const size_t rest = used - head_len;
        size_t room;
        char *to = nwb_test_sse_parser_room(&s->p, &room);

        memcpy(to, end + 4, rest);
        nwb_test_sse_parser_wrote(&s->p, rest);
        s->head[head_len] = '\0';
    }
    if (sscanf(s->head, "HTTP/1.%*c %d", &s->status) != 1) {
        nwb_test_sse_close(s);
        return -1;
    }
    if (s->status != 200) {
        char len_text[32];
        const long want = nwb_test_sse_header(s, "Content-Length", len_text, sizeof(len_text))
                              ? strtol(len_text, NULL, 10)
                              : 0;
        size_t have = s->p.len;

        while ((long)have < want && have < sizeof(s->body) - 1 &&
               readable(s->fd, deadline - nwb_test_now_ms())) {
            size_t room;
            char *to = nwb_test_sse_parser_room(&s->p, &room);
            const ssize_t got = recv(s->fd, to, room, 0);

            if (got <= 0) {
                break;
            }
            nwb_test_sse_parser_wrote(&s->p, (size_t)got);
            have = s->p.len;
        }
        if (have > sizeof(s->body) - 1) {
            have = sizeof(s->body) - 1;
        }
        memcpy(s->body, s->p.buf + s->p.off, have);
        s->body[have] = '\0';
    }
    return 0;
}

int nwb_test_sse_header(const struct nwb_test_sse *s, const char *name, char *out, size_t cap)
{
    const size_t nlen = strlen(name);
    const char *line = strstr(s->head, "\r\n");

    while (line != NULL && line[2] != '\r' && line[2] != '\0') {
        const char *l = line + 2;
        const char *eol = strstr(l, "\r\n");

        if (eol == NULL) {
            break;
        }
        if (strncasecmp(l, name, nlen) == 0 && l[nlen] == ':') {
            const char *v = l + nlen + 1;
            size_t vlen;

            while (*v == ' ') {
                v++;
            }
            vlen = (size_t)(eol - v);
            if (vlen >= cap) {
                vlen = cap - 1;
            }
            memcpy(out, v, vlen);
            out[vlen] = '\0';
            return 1;
        }
        line = eol;
    }
    return 0;
}

int nwb_test_sse_next(struct nwb_test_sse *s, struct nwb_test_sse_block *b, int timeout_ms)
{
    const long long deadline = nwb_test_now_ms() + timeout_ms;

    for (;;) {
        const int rc = nwb_test_sse_parser_next(&s->p, b);
        size_t room;
        char *to;
        ssize_t got;

        if (rc < 0) {
            fprintf(stderr, "sse: malformed stream near: %.200s\n", s->p.buf + s->p.off);
            return -1;
        }
        if (rc > 0) {
            size_t bad = 0;

            if (b->has_data && nwb_test_json_check(b->data, b->data_len, &bad) != 0) {
                fprintf(stderr, "sse: data is not strict JSON at byte %zu: %s\n", bad, b->data);
                return -1;
            }
            return 1;
        }
        if (!readable(s->fd, deadline - nwb_test_now_ms())) {
            return 0;
        }
        to = nwb_test_sse_parser_room(&s->p, &room);
        got = recv(s->fd, to, room, 0);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            return -1;
        }
        nwb_test_sse_parser_wrote(&s->p, (size_t)got);
    }
}

int nwb_test_sse_next_event(struct nwb_test_sse *s, struct nwb_test_sse_block *b, int timeout_ms)
{
    const long long deadline = nwb_test_now_ms() + timeout_ms;

    for (;;) {
        const int rc = nwb_test_sse_next(s, b, (int)(deadline - nwb_test_now_ms()));

        if (rc != 1 || b->event[0] != '\0') {
            return rc;
        }
    }
}

int nwb_test_sse_wait_closed(struct nwb_test_sse *s, int timeout_ms)
{
    const long long deadline = nwb_test_now_ms() + timeout_ms;
    char buf[65536];

    while (readable(s->fd, deadline - nwb_test_now_ms())) {
        const ssize_t got = recv(s->fd, buf, sizeof(buf), 0);

        if (got == 0 || (got < 0 && errno != EINTR)) {
            return 1;
        }
    }
    return 0;
}

void nwb_test_sse_close(struct nwb_test_sse *s)
{
    if (s->fd >= 0) {
        close(s->fd);
    }
    s->fd = -1;
}
