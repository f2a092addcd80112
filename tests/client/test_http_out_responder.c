/* SPDX-License-Identifier: MIT */
/* test_http_out_responder.c - the scripted loopback HTTP server of the network tests. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nwb/deadline.h"
#include "test_http_out_responder.h"
#include "test_support.h"

/* Requests larger than this are a test bug. */
#define REQ_MAX (32u * 1024u * 1024u)

static void send_all(int fd, const char *p, size_t n, int split)
{
    while (n > 0) {
        const size_t chunk = split ? 1 : n;
        const ssize_t w = send(fd, p, chunk, MSG_NOSIGNAL);

        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                struct pollfd pf = {fd, POLLOUT, 0};

                poll(&pf, 1, 1000);
                continue;
            }
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static void header_copy(const char *head, size_t head_len, const char *name, char *out, size_t cap)
{
    const size_t nl = strlen(name);
    const char *p = head;
    const char *end = head + head_len;

    out[0] = '\0';
    while (p < end) {
        const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        const size_t ll = eol != NULL ? (size_t)(eol - p) : (size_t)(end - p);

        if (ll > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            size_t vl = ll - nl - 1;

            while (vl > 0 && *v == ' ') {
                v++;
                vl--;
            }
            if (vl >= cap) {
                vl = cap - 1;
            }
            memcpy(out, v, vl);
            out[vl] = '\0';
            return;
        }
        if (eol == NULL) {
            break;
        }
        p = eol + 2;
    }
}

static void conn_drop(struct resp_conn *c)
{
    if (c->fd >= 0) {
        close(c->fd);
    }
    free(c->buf);
    memset(c, 0, sizeof(*c));
    c->fd = -1;
}

/* Handle every complete request in the connection's buffer. Returns -1 to close it. */
static int conn_process(struct responder *r, struct resp_conn *c)
{
    for (;;) {
        const uint8_t *sep = c->len >= 4 ? memmem(c->buf, c->len, "\r\n\r\n", 4) : NULL;
        struct resp_request q;
        struct resp_action a;
        char clen[32];
        size_t head_len;
        size_t body_len;
        char resp[512];
        int n;
        const char *eol;

        if (sep == NULL) {
            return 0;
        }
        head_len = (size_t)(sep - c->buf) + 4;
        memset(&q, 0, sizeof(q));
        header_copy((const char *)c->buf, head_len, "Content-Length", clen, sizeof(clen));
        body_len = (size_t)strtoull(clen, NULL, 10);
        if (head_len + body_len > c->len) {
            return 0;
        }
        eol = memmem(c->buf, head_len, "\r\n", 2);
        snprintf(q.method_line, sizeof(q.method_line), "%.*s",
                 (int)(eol != NULL ? eol - (const char *)c->buf : 0), (const char *)c->buf);
        header_copy((const char *)c->buf, head_len, "X-NWB-Program", q.program, sizeof(q.program));
        header_copy((const char *)c->buf, head_len, "X-NWB-Run", q.run, sizeof(q.run));
        header_copy((const char *)c->buf, head_len, "X-NWB-Seq", q.seq, sizeof(q.seq));
        header_copy((const char *)c->buf, head_len, "Host", q.host, sizeof(q.host));
        header_copy((const char *)c->buf, head_len, "Content-Type", q.ctype, sizeof(q.ctype));
        header_copy((const char *)c->buf, head_len, "Authorization", q.auth, sizeof(q.auth));
        q.body = malloc(body_len + 1);
        if (q.body == NULL) {
            return -1;
        }
        memcpy(q.body, c->buf + head_len, body_len);
        q.body_len = body_len;
        memmove(c->buf, c->buf + head_len + body_len, c->len - head_len - body_len);
        c->len -= head_len + body_len;

        pthread_mutex_lock(&r->mu);
        memset(&a, 0, sizeof(a));
        if (r->nreq < r->nscript) {
            a = r->script[r->nreq];
        }
        q.status = a.no_answer || a.close_now ? 0 : (a.status != 0 ? a.status : 200);
        if (r->nreq == r->cap) {
            const size_t cap = r->cap ? r->cap * 2 : 64;
            struct resp_request *g = realloc(r->reqs, cap * sizeof(*g));

            if (g == NULL) {
                pthread_mutex_unlock(&r->mu);
                free(q.body);
                return -1;
            }
            r->reqs = g;
            r->cap = cap;
        }
        r->reqs[r->nreq++] = q;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);

        if (a.no_answer) {
            c->silent = 1;
            return 0;
        }
        if (a.close_now) {
            return -1;
        }
        n = snprintf(resp, sizeof(resp), "HTTP/1.1 %d X\r\nContent-Length: 0\r\n%s%s\r\n", q.status,
                     a.headers != NULL ? a.headers : "",
                     r->close_always ? "Connection: close\r\n" : "");
        send_all(c->fd, resp, (size_t)n, r->split_bytes);
        if (r->close_always) {
            return -1;
        }
    }
}

static void *responder_main(void *arg)
{
    struct responder *r = arg;

    for (;;) {
        struct pollfd p[2 + RESP_CONN_MAX];
        int map[2 + RESP_CONN_MAX];
        int np = 0;

        p[np].fd = r->wake[0];
        p[np].events = POLLIN;
        map[np++] = -1;
        p[np].fd = r->listen_fd;
        p[np].events = POLLIN;
        map[np++] = -2;
        for (int i = 0; i < RESP_CONN_MAX; i++) {
            if (r->conns[i].fd >= 0) {
                p[np].fd = r->conns[i].fd;
                p[np].events = POLLIN;
                map[np++] = i;
            }
        }
        if (poll(p, (nfds_t)np, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        if (p[0].revents != 0) {
            break;
        }
        if (p[1].revents & POLLIN) {
            const int fd = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC);

            if (fd >= 0) {
                int slot = -1;

                for (int i = 0; i < RESP_CONN_MAX; i++) {
                    if (r->conns[i].fd < 0) {
                        slot = i;
                        break;
                    }
                }
                if (slot < 0) {
                    close(fd);
                } else {
                    const int one = 1;

                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                    r->conns[slot].fd = fd;
                    pthread_mutex_lock(&r->mu);
                    r->accepted++;
                    pthread_mutex_unlock(&r->mu);
                }
            }
        }
        for (int k = 2; k < np; k++) {
            struct resp_conn *c = &r->conns[map[k]];
            ssize_t n;

            if (p[k].revents == 0) {
                continue;
            }
            if (c->len == c->cap) {
                const size_t cap = c->cap ? c->cap * 2 : 65536;
                uint8_t *g = cap <= REQ_MAX ? realloc(c->buf, cap) : NULL;

                if (g == NULL) {
                    conn_drop(c);
                    continue;
                }
                c->buf = g;
                c->cap = cap;
            }
            n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
            if (n <= 0) {
                conn_drop(c);
                continue;
            }
            if (c->silent) {
                continue;
            }
            c->len += (size_t)n;
            if (conn_process(r, c) != 0) {
                conn_drop(c);
            }
        }
    }
    return NULL;
}

int responder_start(struct responder *r, int port)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    const int one = 1;

    memset(r, 0, sizeof(*r));
    for (int i = 0; i < RESP_CONN_MAX; i++) {
        r->conns[i].fd = -1;
    }
    pthread_mutex_init(&r->mu, NULL);
    nwb_cond_init_monotonic(&r->cv);
    r->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (r->listen_fd < 0) {
        return -1;
    }
    setsockopt(r->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    a = nwb_test_loopback(port);
    if (bind(r->listen_fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(r->listen_fd, 16) != 0 ||
        getsockname(r->listen_fd, (struct sockaddr *)&a, &len) != 0 ||
        pipe2(r->wake, O_CLOEXEC) != 0) {
        close(r->listen_fd);
        return -1;
    }
    r->port = ntohs(a.sin_port);
    if (pthread_create(&r->thread, NULL, responder_main, r) != 0) {
        close(r->listen_fd);
        close(r->wake[0]);
        close(r->wake[1]);
        return -1;
    }
    r->running = 1;
    return 0;
}

void responder_stop(struct responder *r)
{
    if (!r->running) {
        return;
    }
    if (write(r->wake[1], "x", 1) != 1) {
        /* the thread also stops when the pipe closes */
    }
    pthread_join(r->thread, NULL);
    r->running = 0;
    close(r->wake[0]);
    close(r->wake[1]);
    close(r->listen_fd);
    for (int i = 0; i < RESP_CONN_MAX; i++) {
        conn_drop(&r->conns[i]);
    }
    for (size_t i = 0; i < r->nreq; i++) {
        free(r->reqs[i].body);
    }
    free(r->reqs);
    r->reqs = NULL;
    r->nreq = 0;
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
}

void responder_push(struct responder *r, struct resp_action a)
{
    pthread_mutex_lock(&r->mu);
    if (r->nscript < RESP_SCRIPT_MAX) {
        r->script[r->nscript++] = a;
    }
    pthread_mutex_unlock(&r->mu);
}

int responder_wait(struct responder *r, size_t n, int timeout_ms)
{
    const nwb_deadline_t deadline = nwb_deadline_in_ms(timeout_ms);
    int ok;

    pthread_mutex_lock(&r->mu);
    while (r->nreq < n) {
        if (nwb_cond_wait_until(&r->cv, &r->mu, &deadline) == ETIMEDOUT) {
            break;
        }
    }
    ok = r->nreq >= n;
    pthread_mutex_unlock(&r->mu);
    return ok;
}

size_t responder_count(struct responder *r)
{
    size_t n;

    pthread_mutex_lock(&r->mu);
    n = r->nreq;
    pthread_mutex_unlock(&r->mu);
    return n;
}

struct resp_request responder_get(struct responder *r, size_t i)
{
    struct resp_request q;

    pthread_mutex_lock(&r->mu);
    memset(&q, 0, sizeof(q));
    if (i < r->nreq) {
        q = r->reqs[i];
    }
    pthread_mutex_unlock(&r->mu);
    return q;
}
