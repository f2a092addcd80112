/* SPDX-License-Identifier: MIT */
/*
 * client_post.c - nwb_client_post(): one blocking POST of an opaque body to
 * the client's server with the run's identity headers, for uploader threads
 * (telemetry) that must not share the log worker's connection. Never used on
 * a game thread; every step is bounded by the caller's timeout.
 */
#define _GNU_SOURCE /* getaddrinfo's AI_NUMERICSERV and friends under C11 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nwb/error.h"
#include "nwb/log_line.h"

#include "client_core.h"
#include "net_int.h"

#define POST_HEAD_MAX 1536u

/* Milliseconds left until @p deadline (monotonic ns), at least 0. */
static int ms_left(uint64_t deadline)
{
    const uint64_t now = nwb_time_mono_ns();

    return now >= deadline ? 0 : (int)((deadline - now) / 1000000u) + 1;
}

static int wait_fd(int fd, short events, uint64_t deadline)
{
    struct pollfd p = {fd, events, 0};

    for (;;) {
        const int left = ms_left(deadline);
        int n;

        if (left == 0) {
            return NWB_ETIMEOUT;
        }
        n = poll(&p, 1, left);
        if (n > 0) {
            return 0;
        }
        if (n == 0) {
            return NWB_ETIMEOUT;
        }
        if (errno != EINTR) {
            return -errno;
        }
    }
}

static int connect_to(const struct nwb__settings *s, uint64_t deadline)
{
    struct addrinfo hints, *res = NULL;
    int fd = -1, rc;

    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    rc = getaddrinfo(s->host, s->port, &hints, &res);
    if (rc != 0 || res == NULL) {
        return -EHOSTUNREACH;
    }
    fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        rc = -errno;
        freeaddrinfo(res);
        return rc;
    }
    rc = connect(fd, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (rc != 0 && errno != EINPROGRESS) {
        rc = -errno;
        close(fd);
        return rc;
    }
    if (rc != 0) {
        int soerr = 0;
        socklen_t len = sizeof(soerr);

        rc = wait_fd(fd, POLLOUT, deadline);
        if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr != 0) {
            rc = -soerr;
        }
        if (rc != 0) {
            close(fd);
            return rc;
        }
    }
    {
        const int one = 1;

        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    return fd;
}

static int send_all(int fd, const void *data, size_t len, uint64_t deadline)
{
    const char *p = data;

    while (len > 0) {
        const ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            const int rc = wait_fd(fd, POLLOUT, deadline);

            if (rc != 0) {
                return rc;
            }
            continue;
        }
        return n < 0 ? -errno : -EPIPE;
    }
    return 0;
}

static int read_response(int fd, uint64_t deadline)
{
    struct nwb__http_resp resp;
    char buf[4096];

    nwb__http_resp_init(&resp);
    for (;;) {
        size_t used = 0;
        ssize_t n;
        int rc = wait_fd(fd, POLLIN, deadline);

        if (rc != 0) {
            return rc;
        }
        n = recv(fd, buf, sizeof(buf), 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (n < 0) {
            return -errno;
        }
        rc = n == 0 ? nwb__http_resp_eof(&resp) : nwb__http_resp_feed(&resp, buf, (size_t)n, &used);
        if (rc != 0) {
            return rc;
        }
        if (resp.complete) {
            return resp.status;
        }
        if (n == 0) {
            return -ECONNRESET;
        }
    }
}

int nwb_client_post(nwb_client_t *c, const char *path, const void *body, size_t len,
                    const char *content_type, const char *content_encoding, uint64_t seq,
                    unsigned timeout_ms)
{
    const struct nwb__settings *s;
    const uint64_t deadline = nwb_time_mono_ns() + (uint64_t)timeout_ms * 1000000u;
    char head[POST_HEAD_MAX];
    int fd, n, rc;

    if (c == NULL || path == NULL || (body == NULL && len > 0)) {
        return NWB_ECONFIG;
    }
    s = &c->s;
    if (s->mode != NWB_CLIENT_MODE_SERVER || path[0] != '/' || !nwb__http_header_safe(path, 0) ||
        (content_type != NULL && !nwb__http_header_safe(content_type, 1)) ||
        (content_encoding != NULL && !nwb__http_header_safe(content_encoding, 0))) {
        return NWB_ECONFIG;
    }
    n = snprintf(
        head, sizeof(head),
        "POST %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nContent-Length: %zu\r\n"
        "X-NWB-Program: %s\r\nX-NWB-Run: %s\r\nX-NWB-Seq: %" PRIu64 "\r\n"
        "%s%s%s%s%s%s%s%s%sConnection: close\r\n\r\n",
        path, strchr(s->host, ':') != NULL ? "[" : "", s->host,
        strchr(s->host, ':') != NULL ? "]" : "", s->port, len, s->program, s->run_id, seq,
        content_type != NULL ? "Content-Type: " : "", content_type != NULL ? content_type : "",
        content_type != NULL ? "\r\n" : "", content_encoding != NULL ? "Content-Encoding: " : "",
        content_encoding != NULL ? content_encoding : "", content_encoding != NULL ? "\r\n" : "",
        s->token[0] != '\0' ? "Authorization: Bearer " : "", s->token,
        s->token[0] != '\0' ? "\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof(head)) {
        return NWB_ETOOBIG;
    }
    fd = connect_to(s, deadline);
    if (fd < 0) {
        return fd;
    }
    rc = send_all(fd, head, (size_t)n, deadline);
    if (rc == 0 && len > 0) {
        rc = send_all(fd, body, len, deadline);
    }
    if (rc == 0) {
        rc = read_response(fd, deadline);
    }
    close(fd);
    return rc;
}

const char *nwb_client_run_dir(const nwb_client_t *c)
{
    return c != NULL && c->run_dir[0] != '\0' ? c->run_dir : NULL;
}
