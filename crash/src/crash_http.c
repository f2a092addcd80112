/* SPDX-License-Identifier: MIT */
/*
 * crash_http.c - a small blocking HTTP/1.1 POST for the uploader (never the
 * dying process or a game thread): non-blocking socket driven by poll() under
 * one deadline, the body streamed from a file, the answer parsed with llhttp.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <llhttp.h>

#include "nwb/deadline.h"
#include "nwb/error.h"

#include "capture_int.h"

#define RESP_HEAD_MAX (64u * 1024u) /* answer bytes read before giving up */

/* What is left of @p deadline for one poll(2), at most a minute; 0 once it has passed. */
static int left_ms(const nwb_deadline_t *deadline)
{
    const long long left = nwb_deadline_left_ms(deadline);

    return (int)(left > 60000 ? 60000 : left);
}

/* "host:port", "[v6]:port". */
static int split_server(const char *server, char *host, size_t hcap, char *port, size_t pcap)
{
    const char *colon;
    size_t hlen;

    if (server[0] == '[') {
        const char *close = strchr(server, ']');

        if (close == NULL || close[1] != ':') {
            return NWB_ECONFIG;
        }
        hlen = (size_t)(close - server - 1);
        server++;
        colon = close + 1;
    } else {
        colon = strrchr(server, ':');
        if (colon == NULL) {
            return NWB_ECONFIG;
        }
        hlen = (size_t)(colon - server);
    }
    if (hlen == 0 || hlen >= hcap || strlen(colon + 1) == 0 || strlen(colon + 1) >= pcap) {
        return NWB_ECONFIG;
    }
    memcpy(host, server, hlen);
    host[hlen] = '\0';
    snprintf(port, pcap, "%s", colon + 1);
    for (const char *p = port; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            return NWB_ECONFIG;
        }
    }
    return 0;
}

static int wait_fd(int fd, short events, const nwb_deadline_t *deadline)
{
    for (;;) {
        struct pollfd pfd = {fd, events, 0};
        const int t = left_ms(deadline);
        int r;

        if (t == 0) {
            return NWB_ETIMEOUT;
        }
        r = poll(&pfd, 1, t);
        if (r > 0) {
            return 0;
        }
        if (r < 0 && errno != EINTR) {
            return -errno;
        }
    }
}

static int connect_one(const struct addrinfo *ai, const nwb_deadline_t *deadline)
{
    const int fd =
        socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    int err = 0;
    socklen_t len = sizeof(err);

    if (fd < 0) {
        return -errno;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            err = -errno;
            close(fd);
            return err;
        }
        err = wait_fd(fd, POLLOUT, deadline);
        if (err == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0) {
            err = -err;
        }
        if (err != 0) {
            close(fd);
            return err;
        }
    }
    return fd;
}

static int send_all(int fd, const char *p, size_t n, const nwb_deadline_t *deadline)
{
    while (n > 0) {
        const ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            const int err = wait_fd(fd, POLLOUT, deadline);

            if (err != 0) {
                return err;
            }
            continue;
        }
        return k < 0 ? -errno : -EPIPE;
    }
    return 0;
}

struct resp_state {
    char *body;
    size_t cap;
    size_t used;
    int done;
};

static int on_body(llhttp_t *p, const char *at, size_t len)
{
    struct resp_state *r = p->data;

    if (r->cap > 0) {
        const size_t room = r->cap - 1 - r->used;
        const size_t k = len < room ? len : room;

        memcpy(r->body + r->used, at, k);
        r->used += k;
        r->body[r->used] = '\0';
    }
    return 0;
}

static int on_complete(llhttp_t *p)
{
    struct resp_state *r = p->data;

    r->done = 1;
    return HPE_PAUSED;
}

static int read_answer(int fd, const nwb_deadline_t *deadline, int *status, char *resp,
                       size_t resp_cap)
{
    llhttp_settings_t settings;
    llhttp_t parser;
    struct resp_state r = {resp, resp_cap, 0, 0};
    size_t total = 0;

    if (resp_cap > 0) {
        resp[0] = '\0';
    }
    llhttp_settings_init(&settings);
    settings.on_body = on_body;
    settings.on_message_complete = on_complete;
    llhttp_init(&parser, HTTP_RESPONSE, &settings);
    parser.data = &r;
    while (!r.done) {
        char buf[4096];
        const ssize_t n = recv(fd, buf, sizeof(buf), 0);
        llhttp_errno_t e;

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            const int err = wait_fd(fd, POLLIN, deadline);

            if (err != 0) {
                return err;
            }
            continue;
        }
        if (n < 0) {
            return -errno;
        }
        e = n == 0 ? llhttp_finish(&parser) : llhttp_execute(&parser, buf, (size_t)n);
        if (e != HPE_OK && e != HPE_PAUSED) {
            return NWB_EPROTO;
        }
        if (n == 0 && !r.done) {
            return NWB_EPROTO;
        }
        total += (size_t)n;
        if (total > RESP_HEAD_MAX && !r.done) {
            return NWB_EPROTO;
        }
    }
    *status = parser.status_code;
    return 0;
}

static int send_body(int sock, int body_fd, uint64_t len, const nwb_deadline_t *deadline)
{
    char buf[64 * 1024];

    while (len > 0) {
        const size_t want = len < sizeof(buf) ? (size_t)len : sizeof(buf);
        const ssize_t n = read(body_fd, buf, want);
        int err;

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return n < 0 ? -errno : NWB_ETRUNCATED; /* the file shrank under us */
        }
        err = send_all(sock, buf, (size_t)n, deadline);
        if (err != 0) {
            return err;
        }
        len -= (uint64_t)n;
    }
    return 0;
}

int nwb__crash_http_post(const char *server, const char *path, const char *headers, int body_fd,
                         uint64_t body_len, unsigned timeout_ms, int *status, char *resp,
                         size_t resp_cap)
{
    const nwb_deadline_t at = nwb_deadline_in_ms(timeout_ms);
    const nwb_deadline_t *deadline = &at;
    char host[256], port[16];
    char head[2048];
    struct addrinfo hints, *res = NULL;
    int err, fd = -1, n;

    *status = 0;
    err = split_server(server, host, sizeof(host), port, sizeof(port));
    if (err != 0) {
        return err;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    if (getaddrinfo(host, port, &hints, &res) != 0 || res == NULL) {
        return -EHOSTUNREACH;
    }
    err = -ECONNREFUSED;
    for (const struct addrinfo *ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
        fd = connect_one(ai, deadline);
        if (fd < 0) {
            err = fd;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        return err;
    }
    {
        const int v6 = strchr(host, ':') != NULL; /* an IPv6 literal goes in brackets */

        n = snprintf(head, sizeof(head),
                     "POST %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nContent-Length: %llu\r\n"
                     "Connection: close\r\n%s\r\n",
                     path, v6 ? "[" : "", host, v6 ? "]" : "", port, (unsigned long long)body_len,
                     headers != NULL ? headers : "");
    }
    if (n < 0 || (size_t)n >= sizeof(head)) {
        close(fd);
        return NWB_ECONFIG;
    }
    err = send_all(fd, head, (size_t)n, deadline);
    if (err == 0) {
        err = send_body(fd, body_fd, body_len, deadline);
    }
    if (err == 0 || err == -EPIPE || err == -ECONNRESET) {
        /* A server that refuses early (413) may answer before reading the whole body. */
        const int rerr = read_answer(fd, deadline, status, resp, resp_cap);

        err = rerr == 0 ? 0 : (err != 0 ? err : rerr);
    }
    close(fd);
    return err;
}
