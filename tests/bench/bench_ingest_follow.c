/* SPDX-License-Identifier: MIT */
/*
 * bench_ingest_follow.c - the live followers of bench_ingest --followers
 * (bench_ingest_follow.h): event streams read with the tests' SSE parser, log range polls
 * answered through llhttp, all on one epoll thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <llhttp.h>

#include "nwb/alloc.h"

#include "bench_ingest_follow.h"
#include "bench_util.h"
#include "sse_parse.h"

#define WAKE_TAG   UINT64_MAX /* epoll data of the stop eventfd */
#define RUN_ID_MAX 256

struct follower {
    struct nwb_bench_follow *fw;
    int index;
    int sse_fd;
    int log_fd;
    struct nwb_test_sse_parser p;
    uint64_t last_id;
    int runs_seen;
    char run[RUN_ID_MAX]; /* "" until it picks one */
    uint64_t want;        /* the followed run's log size in its newest log event */
    uint64_t read_to;     /* the log is read up to here */
    uint64_t asking_to;   /* the request in flight reads up to here */
    int polling;
    llhttp_t parser;
    int complete;
    uint64_t body_bytes;
};

struct nwb_bench_follow {
    int port;
    int n;
    int ep;
    int wake_fd;
    pthread_t thread;
    uint64_t t_start;
    llhttp_settings_t settings;
    struct nwb_bench_follow_stats st;
    struct follower *f; /* n of them */
};

static int on_body(llhttp_t *p, const char *at, size_t len)
{
    struct follower *fo = p->data;

    (void)at;
    fo->body_bytes += len;
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    struct follower *fo = p->data;

    fo->complete = 1;
    return 0;
}

static int watch(struct nwb_bench_follow *fw, int fd, uint64_t tag)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = tag;
    return epoll_ctl(fw->ep, EPOLL_CTL_ADD, fd, &ev);
}

static void fd_close(struct nwb_bench_follow *fw, int *fd)
{
    if (*fd >= 0) {
        epoll_ctl(fw->ep, EPOLL_CTL_DEL, *fd, NULL);
        close(*fd);
        *fd = -1;
    }
}

/* GET /v1/events, its head read here (blocking), the rest left in the parser. */
static int sse_open(struct nwb_bench_follow *fw, struct follower *fo, int timeout_ms, char *err,
                    size_t errlen)
{
    static const char req[] = "GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    const char *end = NULL;

    fo->sse_fd = nwb_bench_connect(fw->port, timeout_ms);
    if (fo->sse_fd < 0 || write(fo->sse_fd, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1)) {
        snprintf(err, errlen, "follower %d: cannot open GET /v1/events", fo->index);
        return -1;
    }
    nwb_test_sse_parser_init(&fo->p);
    while (end == NULL) {
        size_t room;
        char *to = nwb_test_sse_parser_room(&fo->p, &room);
        const ssize_t got = room > 1 ? read(fo->sse_fd, to, room - 1) : -1;

        if (got <= 0) {
            snprintf(err, errlen, "follower %d: no answer to GET /v1/events", fo->index);
            return -1;
        }
        to[got] = '\0';
        nwb_test_sse_parser_wrote(&fo->p, (size_t)got);
        end = strstr(fo->p.buf, "\r\n\r\n");
    }
    if (strncmp(fo->p.buf, "HTTP/1.1 200 ", 13) != 0) {
        snprintf(err, errlen, "follower %d: GET /v1/events answered %.12s", fo->index,
                 fo->p.buf + 9);
        return -1;
    }
    {
        const size_t head = (size_t)(end + 4 - fo->p.buf);

        fo->p.off += head;
        fo->p.len -= head;
    }
    if (fcntl(fo->sse_fd, F_SETFL, O_NONBLOCK) != 0 ||
        watch(fw, fo->sse_fd, (uint64_t)fo->index * 2) != 0) {
        snprintf(err, errlen, "follower %d: %s", fo->index, strerror(errno));
        return -1;
    }
    return 0;
}

/* Ask for the newest part of the followed run's log, unless a request is out or it is read. */
static void poll_log(struct nwb_bench_follow *fw, struct follower *fo)
{
    char req[512];
    uint64_t off;
    int n;

    if (fo->polling || fo->run[0] == '\0' || fo->want <= fo->read_to) {
        return;
    }
    off = fo->want > NWB_BENCH_FOLLOW_TAIL ? fo->want - NWB_BENCH_FOLLOW_TAIL : 0;
    if (off < fo->read_to) {
        off = fo->read_to;
    }
    if (fo->log_fd < 0) {
        fo->log_fd = nwb_bench_connect(fw->port, 5000);
        if (fo->log_fd < 0 || fcntl(fo->log_fd, F_SETFL, O_NONBLOCK) != 0 ||
            watch(fw, fo->log_fd, (uint64_t)fo->index * 2 + 1) != 0) {
            fd_close(fw, &fo->log_fd);
            fw->st.poll_failures++;
            return;
        }
        llhttp_init(&fo->parser, HTTP_RESPONSE, &fw->settings);
        fo->parser.data = fo;
    }
    n = snprintf(req, sizeof(req),
                 "GET /v1/runs/%s/log?offset=%llu&limit=%u HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                 fo->run, (unsigned long long)off, NWB_BENCH_FOLLOW_TAIL);
    /* A short request on an idle keep-alive connection: the socket takes it whole. */
    if (n <= 0 || (size_t)n >= sizeof(req) || write(fo->log_fd, req, (size_t)n) != n) {
        fd_close(fw, &fo->log_fd);
        fw->st.poll_failures++;
        return;
    }
    fo->polling = 1;
    fo->complete = 0;
    fo->body_bytes = 0;
    fo->asking_to = fo->want;
}

static void on_log_readable(struct nwb_bench_follow *fw, struct follower *fo)
{
    char buf[16384];
    const ssize_t got = read(fo->log_fd, buf, sizeof(buf));

    if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    if (got <= 0 || llhttp_execute(&fo->parser, buf, (size_t)got) != HPE_OK) {
        /* Closed or broken: a new connection for the next poll. */
        fd_close(fw, &fo->log_fd);
        if (fo->polling) {
            fw->st.poll_failures++;
        }
        fo->polling = 0;
        return;
    }
    if (!fo->complete) {
        return;
    }
    fo->polling = 0;
    fw->st.polls++;
    if (fo->parser.status_code == 200) {
        fw->st.polls_ok++;
        fw->st.poll_bytes += fo->body_bytes;
        fo->read_to = fo->asking_to;
    } else {
        fw->st.poll_status = fo->parser.status_code;
        fo->read_to = fo->asking_to; /* not asked again for the same bytes */
    }
    poll_log(fw, fo);
}

/* One event (or a position block) of @p fo's stream. */
static void on_block(struct nwb_bench_follow *fw, struct follower *fo,
                     const struct nwb_test_sse_block *b)
{
    char id[RUN_ID_MAX];
    uint64_t size = 0;

    if (b->event[0] == '\0') {
        if (b->has_id) {
            fo->last_id = b->id; /* the stream's position */
        }
        return;
    }
    fw->st.events++;
    if (b->id != fo->last_id + 1) {
        fw->st.id_gaps++;
    }
    fo->last_id = b->id;
    if (!nwb_test_sse_data_str(b->data, "id", id, sizeof(id))) {
        return;
    }
    if (strcmp(b->event, "run") == 0 && fo->run[0] == '\0' && fo->runs_seen++ == fo->index) {
        snprintf(fo->run, sizeof(fo->run), "%s", id);
        fw->st.followed++;
    } else if (strcmp(b->event, "log") == 0 && strcmp(id, fo->run) == 0 &&
               nwb_test_sse_data_u64(b->data, "size", &size)) {
        fw->st.log_events++;
        fo->want = size;
        poll_log(fw, fo);
    }
}

static void on_sse_readable(struct nwb_bench_follow *fw, struct follower *fo)
{
    struct nwb_test_sse_block b;
    size_t room;
    char *to = nwb_test_sse_parser_room(&fo->p, &room);
    const ssize_t got = read(fo->sse_fd, to, room);
    int rc;

    if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    if (got <= 0) {
        fd_close(fw, &fo->sse_fd);
        fw->st.streams_lost++;
        return;
    }
    nwb_test_sse_parser_wrote(&fo->p, (size_t)got);
    for (;;) {
        rc = nwb_test_sse_parser_next(&fo->p, &b);
        if (rc != 1) {
            break;
        }
        on_block(fw, fo, &b);
    }
    if (rc < 0) {
        fd_close(fw, &fo->sse_fd);
        fw->st.streams_lost++;
    }
}

static void *follow_main(void *arg)
{
    struct nwb_bench_follow *fw = arg;
    struct epoll_event evs[2 * NWB_BENCH_FOLLOWERS_MAX + 1];

    /* The stream heads were read in start(); blocks that came with them go first. */
    for (int i = 0; i < fw->n; i++) {
        struct nwb_test_sse_block b;

        while (nwb_test_sse_parser_next(&fw->f[i].p, &b) == 1) {
            on_block(fw, &fw->f[i], &b);
        }
    }
    for (;;) {
        const int n = epoll_wait(fw->ep, evs, (int)NWB_ARRAY_SIZE(evs), -1);

        for (int i = 0; i < n; i++) {
            const uint64_t tag = evs[i].data.u64;
            struct follower *fo;

            if (tag == WAKE_TAG) {
                return NULL;
            }
            fo = &fw->f[tag / 2];
            if (tag % 2 == 0 && fo->sse_fd >= 0) {
                on_sse_readable(fw, fo);
            } else if (tag % 2 == 1 && fo->log_fd >= 0) {
                on_log_readable(fw, fo);
            }
        }
        if (n < 0 && errno != EINTR) {
            return NULL;
        }
    }
}

static void follow_free(struct nwb_bench_follow *fw)
{
    for (int i = 0; i < fw->n; i++) {
        fd_close(fw, &fw->f[i].sse_fd);
        fd_close(fw, &fw->f[i].log_fd);
    }
    if (fw->wake_fd >= 0) {
        close(fw->wake_fd);
    }
    if (fw->ep >= 0) {
        close(fw->ep);
    }
    nwb_free(fw->f);
    nwb_free(fw);
}

int nwb_bench_follow_start(int port, int n, int timeout_ms, struct nwb_bench_follow **out,
                           char *err, size_t errlen)
{
    struct nwb_bench_follow *fw = nwb_calloc(1, sizeof(*fw));

    *out = NULL;
    if (fw == NULL || n < 1 || n > NWB_BENCH_FOLLOWERS_MAX) {
        nwb_free(fw);
        snprintf(err, errlen, "followers: 1..%d, memory", NWB_BENCH_FOLLOWERS_MAX);
        return -1;
    }
    fw->port = port;
    fw->wake_fd = -1;
    fw->ep = epoll_create1(EPOLL_CLOEXEC);
    fw->f = nwb_calloc((size_t)n, sizeof(*fw->f));
    if (fw->ep < 0 || fw->f == NULL) {
        follow_free(fw);
        snprintf(err, errlen, "followers: out of memory or descriptors");
        return -1;
    }
    llhttp_settings_init(&fw->settings);
    fw->settings.on_body = on_body;
    fw->settings.on_message_complete = on_message_complete;
    for (int i = 0; i < n; i++) {
        struct follower *fo = &fw->f[i];

        fo->fw = fw;
        fo->index = i;
        fo->sse_fd = fo->log_fd = -1;
        fw->n = i + 1;
        if (sse_open(fw, fo, timeout_ms, err, errlen) != 0) {
            follow_free(fw);
            return -1;
        }
    }
    fw->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fw->wake_fd < 0 || watch(fw, fw->wake_fd, WAKE_TAG) != 0) {
        follow_free(fw);
        snprintf(err, errlen, "followers: eventfd: %s", strerror(errno));
        return -1;
    }
    fw->t_start = nwb_bench_now_ns();
    if (pthread_create(&fw->thread, NULL, follow_main, fw) != 0) {
        follow_free(fw);
        snprintf(err, errlen, "followers: cannot start the thread");
        return -1;
    }
    *out = fw;
    return 0;
}

void nwb_bench_follow_stop(struct nwb_bench_follow *fw, struct nwb_bench_follow_stats *st)
{
    const uint64_t one = 1;

    memset(st, 0, sizeof(*st));
    if (fw == NULL) {
        return;
    }
    if (write(fw->wake_fd, &one, sizeof(one)) != (ssize_t)sizeof(one)) {
        fprintf(stderr, "bench_ingest: cannot wake the followers' thread: %s\n", strerror(errno));
    }
    pthread_join(fw->thread, NULL);
    *st = fw->st;
    st->seconds = (double)(nwb_bench_now_ns() - fw->t_start) / 1e9;
    follow_free(fw);
}
