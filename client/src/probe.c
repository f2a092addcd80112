/* SPDX-License-Identifier: MIT */
/*
 * probe.c - the start-up probe of MODE_AUTO: does anything accept a TCP
 * connection at host:port within a timeout? Non-blocking connect plus poll,
 * over every address the host resolves to, all within one deadline.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nwb/log_line.h"

#include "net_int.h"

/* 1 when a connect to @p sa completes before @p deadline_ns. */
static int probe_one(const struct sockaddr *sa, socklen_t len, uint64_t deadline_ns)
{
    const int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int ok = 0;

    if (fd < 0) {
        return 0;
    }
    if (connect(fd, sa, len) == 0) {
        ok = 1;
    } else if (errno == EINPROGRESS || errno == EINTR) {
        for (;;) {
            const uint64_t now = nwb_time_mono_ns();
            struct pollfd p = {fd, POLLOUT, 0};
            int n;

            if (now >= deadline_ns) {
                break;
            }
            n = poll(&p, 1, (int)((deadline_ns - now + 999999u) / 1000000u));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n > 0) {
                int err = 0;
                socklen_t elen = sizeof(err);

                ok = getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == 0 && err == 0;
            }
            break;
        }
    }
    close(fd);
    return ok;
}

int nwb__server_probe(const char *host, const char *port, unsigned timeout_ms)
{
    const uint64_t deadline = nwb_time_mono_ns() + (uint64_t)timeout_ms * 1000000u;
    struct addrinfo hints;
    struct addrinfo *res = NULL;
    char h[256];
    size_t hl;
    int ok = 0;

    if (host == NULL || port == NULL || host[0] == '\0' || port[0] == '\0') {
        return 0;
    }
    hl = strlen(host);
    if (hl >= sizeof(h)) {
        return 0;
    }
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        memcpy(h, host + 1, hl - 2);
        h[hl - 2] = '\0';
    } else {
        memcpy(h, host, hl + 1);
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    if (getaddrinfo(h, port, &hints, &res) != 0) {
        return 0;
    }
    for (struct addrinfo *ai = res; ai != NULL && !ok; ai = ai->ai_next) {
        if (nwb_time_mono_ns() >= deadline) {
            break;
        }
        ok = probe_one(ai->ai_addr, ai->ai_addrlen, deadline);
    }
    freeaddrinfo(res);
    return ok;
}
