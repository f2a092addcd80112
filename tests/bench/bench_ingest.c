/* SPDX-License-Identifier: MIT */
/*
 * bench_ingest.c - the server ingest benchmark. Starts the null server and
 * the real nwb-logserver in turn (127.0.0.1, port 0, fresh temp dirs) and
 * drives each with the same load: N keep-alive connections, one POST /v1/log
 * of a pre-built binary batch in flight per connection, for a fixed time.
 * Prints requests/s, MB/s of bodies, non-200 counts and the ratio to the
 * null server, with PASS/FAIL against the targets. With --tokens N, also
 * runs nwb-logserver on bodies whose messages hold N #name tokens, without
 * and with a sidecar (made with nwb-namesym build) naming them: the cost of
 * name decoding. With --followers N, also runs nwb-logserver without and with
 * N live followers (GET /v1/events and log range polls, bench_ingest_follow.c):
 * the cost of being watched.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <llhttp.h>

#include "nwb/alloc.h"
#include "nwb/log_batch.h"
#include "nwb/name.h"
#include "nwb/safe_name.h"

#include "bench_ingest_follow.h"
#include "bench_ingest_reclaim.h"
#include "bench_util.h"

#define MAX_CONNS      256
#define MAX_SIZES      4
#define MAX_LOADS      4
#define MAX_REPEAT     15
#define MAX_RECONNECTS 1000
#define RECV_BUF       4096
#define LAT_CAP        (4u * 1024u * 1024u) /* round-trip samples kept per run */
#define DRAIN_MS       10000                /* wait for in-flight answers after the end */
#define RECLAIM_MS     100                  /* count and punch the server's output this often */
#define MAX_TOKENS     8                    /* --tokens: #name tokens per message */
#define TOKEN_NAMES    4096                 /* distinct names the tokens cycle through */

enum { SRV_NULL = 0, SRV_NWB = 1, SRV_COUNT };
static const char *const srv_names[SRV_COUNT] = {"null server", "nwb-logserver"};

struct options {
    const char *exe[SRV_COUNT];
    double duration_s;
    double warmup_s;
    int conns[MAX_LOADS];
    int nconns;
    size_t sizes[MAX_SIZES];
    int nsizes;
    int repeat;
    uint64_t max_requests; /* per run, warm-up included */
    uint64_t max_bytes;    /* body bytes per run, warm-up included */
    int verify;
    uint64_t punch_mb;       /* punch the servers' output every this many MiB; 0 = never */
    int text;                /* also the text/plain load (--no-text: binary only) */
    int verify_disk;         /* read nwb-logserver's output back and count its lines */
    int tokens_only;         /* --tokens-only: only the name-decoding comparison */
    int tokens;              /* #name tokens per message in the decoding comparison; 0 = none */
    const char *namesym_exe; /* nwb-namesym, to build the sidecar */
    int followers;           /* live followers in the followers comparison; 0 = not run */
    int followers_only;      /* --followers-only: only that comparison */
};

/* nwb-logserver as one side of a paired comparison (tokens_section, followers_section). */
struct variant {
    const char *name;        /* in the tables and the progress lines */
    const char *namesym_dir; /* --namesym-dir, or NULL */
    int followers;           /* live followers during the run; 0 = none */
};

struct body {
    uint8_t *data;
    size_t len;
    uint32_t records;
    int text; /* text/plain lines instead of a binary batch */
};

/* What one run measured (inside the window after warm-up). */
struct run_result {
    int ok;
    char error[256];
    uint64_t requests;     /* 200 answers in the window */
    uint64_t non200;       /* other statuses in the window */
    uint64_t conn_errors;  /* connections lost or refused (whole run) */
    uint64_t total_ok;     /* 200 answers, whole run (for the on-disk check) */
    uint64_t total_non200; /* other statuses, whole run */
    uint64_t unanswered;   /* requests still in flight when the run gave up */
    double window_s;
    double req_s;
    double mb_s;  /* body MB/s (10^6 bytes) */
    double rec_s; /* records/s */
    double lat_p50_us;
    double lat_p99_us;
    double server_cpu; /* server CPU seconds / window seconds */
    double gen_cpu;    /* load generator CPU seconds / window seconds */
    double other_cpu;  /* every other process on the machine, CPU s / window s */
    long long lines;   /* lines the server wrote (-1: not checked) */
    uint64_t punched;  /* output bytes punched out during the run */
    int exit_status;
    int stopped_early;     /* a request or byte bound ended the run */
    long long tok_decoded; /* nwb_namesym_tokens_total{result="decoded"} (-1: not read) */
    struct nwb_bench_follow_stats fol; /* the followers' view (variant->followers > 0) */
};

struct conn {
    int fd;
    int idx;
    int sending;  /* 1 while the request is being written */
    int inflight; /* 1 from the first byte sent until the answer (or failure) */
    size_t hdr_len;
    size_t hdr_off;
    size_t body_off;
    uint64_t seq;
    uint64_t t_sent; /* when the request started */
    char run[17];
    char hdr[512];
    llhttp_t parser;
    int complete; /* the parser finished a response */
    int status;
};

struct load {
    const struct options *o;
    const struct body *body;
    int port;
    int nconns;
    pid_t server_pid;
    int ep;
    struct conn conns[MAX_CONNS];
    llhttp_settings_t settings;
    uint64_t t_warm;
    uint64_t t_end;
    int stopping;
    uint64_t issued;
    uint64_t issued_bytes;
    uint64_t reconnects;
    uint64_t *lat;
    size_t nlat;
    struct nwb_bench_reclaim *reclaim;
    struct run_result *r;
};

/* ---- the body: realistic ~80-byte messages ---- */

/* The name of token @p i and its "#<16 hex>" text. */
static void token_name(unsigned i, char name[64], char tok[NWB_NAME_TOKEN_SIZE])
{
    snprintf(name, 64, "asset/mesh/rock_%04u.nwbmesh", i % TOKEN_NAMES);
    nwb_name_token(nwb_name_make(name), tok);
}

/* A batch of about @p target bytes; each message ends with @p tokens " name=#<hex>" parts. */
static int body_build(struct body *b, size_t target, int tokens)
{
    static const char *const files[4] = {"engine/render/frame_graph.c", "engine/sim/physics_step.c",
                                         "game/ai/nav_query.c", "engine/io/stream_loader.c"};
    uint8_t *buf = nwb_malloc(target);
    size_t off = NWB_LOG_BATCH_HEADER_SIZE;
    uint32_t n = 0;
    const uint64_t t0 = 1767225600ull * 1000000000ull; /* 2026-01-01 */

    if (buf == NULL || target < NWB_LOG_BATCH_HEADER_SIZE + 256) {
        nwb_free(buf);
        return -1;
    }
    nwb_log_batch_header_write(buf);
    for (;;) {
        char msg[128 + MAX_TOKENS * 32];
        nwb_log_record_t rec;
        int len = snprintf(msg, sizeof(msg),
                           "frame %6u took %7.3f ms on render; draws=%4u tris=%7u culled=%5u ok",
                           1000 + n, 16.0 + (double)(n % 97) * 0.071, 1200 + n % 800,
                           850000 + n * 37 % 90000, 3000 + n % 4000);

        for (int t = 0; t < tokens; t++) {
            char name[64], tok[NWB_NAME_TOKEN_SIZE];

            token_name(n * (unsigned)tokens + (unsigned)t, name, tok);
            len += snprintf(msg + len, sizeof(msg) - (size_t)len, " mesh=%s", tok);
        }

        memset(&rec, 0, sizeof(rec));
        rec.time_ns = t0 + (uint64_t)n * 16666667u;
        rec.thread_id = 4242 + n % 4;
        rec.line = 100 + n % 900;
        rec.level = (uint8_t)(n % 50 == 49 ? 1 : 0);
        rec.file = files[n % 4];
        rec.file_len = (uint16_t)strlen(rec.file);
        rec.msg = msg;
        rec.msg_len = (uint32_t)len;
        if (off + nwb_log_record_wire_size(rec.file_len, rec.msg_len) > target) {
            break;
        }
        off += nwb_log_record_encode(buf + off, &rec);
        n++;
    }
    nwb_log_batch_header_finish(buf, n, (uint32_t)(off - NWB_LOG_BATCH_HEADER_SIZE));
    if (nwb_log_batch_validate(buf, off, NULL, NULL) != 0) {
        nwb_free(buf);
        return -1;
    }
    b->data = buf;
    b->len = off;
    b->records = n;
    b->text = 0;
    return 0;
}

/* A text/plain body of about @p target bytes: lines like the ones log.txt holds (time, level,
 * thread, file:line, message), each line one record. */
static int body_build_text(struct body *b, size_t target)
{
    static const char *const files[4] = {"engine/render/frame_graph.c", "engine/sim/physics_step.c",
                                         "game/ai/nav_query.c", "engine/io/stream_loader.c"};
    char *buf = nwb_malloc(target);
    size_t off = 0;
    uint32_t n = 0;

    if (buf == NULL || target < 256) {
        nwb_free(buf);
        return -1;
    }
    for (;;) {
        char line[256];
        const unsigned ms = n * 16u;
        const int len = snprintf(
            line, sizeof(line),
            "2026-01-01 00:%02u:%02u.%03u %s [%u] %s:%u frame %6u took %7.3f ms on render; "
            "draws=%4u tris=%7u ok\n",
            ms / 60000u % 60u, ms / 1000u % 60u, ms % 1000u, n % 50 == 49 ? "WARN" : "INFO",
            4242 + n % 4, files[n % 4], 100 + n % 900, 1000 + n, 16.0 + (double)(n % 97) * 0.071,
            1200 + n % 800, 850000 + n * 37 % 90000);

        if (len <= 0 || off + (size_t)len > target) {
            break;
        }
        memcpy(buf + off, line, (size_t)len);
        off += (size_t)len;
        n++;
    }
    b->data = (uint8_t *)buf;
    b->len = off;
    b->records = n;
    b->text = 1;
    return 0;
}

/* ---- the load generator: one thread, epoll, edge-triggered ---- */

static int on_response_complete(llhttp_t *p)
{
    struct conn *c = p->data;

    c->complete = 1;
    c->status = p->status_code;
    return 0;
}

static void conn_prepare(struct load *l, struct conn *c)
{
    int n =
        snprintf(c->hdr, sizeof(c->hdr),
                 "POST /v1/log HTTP/1.1\r\n"
                 "Host: 127.0.0.1:%d\r\n"
                 "Content-Type: %s\r\n"
                 "Content-Length: %zu\r\n"
                 "X-NWB-Program: bench-ingest\r\n"
                 "X-NWB-Run: %s\r\n"
                 "X-NWB-Seq: %llu\r\n"
                 "\r\n",
                 l->port, l->body->text ? "text/plain; charset=utf-8" : NWB_LOG_BATCH_CONTENT_TYPE,
                 l->body->len, c->run, (unsigned long long)c->seq);

    c->hdr_len = (size_t)n;
    c->hdr_off = 0;
    c->body_off = 0;
    c->sending = 1;
    c->inflight = 1;
    c->complete = 0;
    c->seq++;
    l->issued++;
    l->issued_bytes += l->body->len;
}

static void conn_drop(struct load *l, struct conn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(l->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
}

static int conn_open(struct load *l, struct conn *c)
{
    struct sockaddr_in a;
    struct epoll_event ev;
    int one = 1;

    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        return -1;
    }
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)l->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* Blocking connect on loopback completes at once; then non-blocking. */
    if (connect(c->fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (fcntl(c->fd, F_SETFL, O_NONBLOCK) != 0) {
        conn_drop(l, c);
        return -1;
    }
    llhttp_init(&c->parser, HTTP_RESPONSE, &l->settings);
    c->parser.data = c;
    ev.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
    ev.data.ptr = c;
    if (epoll_ctl(l->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        conn_drop(l, c);
        return -1;
    }
    return 0;
}

static int limits_reached(const struct load *l)
{
    return l->issued >= l->o->max_requests || l->issued_bytes >= l->o->max_bytes;
}

/* Write until done or EAGAIN. Returns 0, or -1 when the connection failed. */
static int conn_send(struct load *l, struct conn *c)
{
    while (c->sending) {
        struct iovec iov[2];
        int n = 0;
        ssize_t w;

        if (c->hdr_off < c->hdr_len) {
            iov[n].iov_base = c->hdr + c->hdr_off;
            iov[n].iov_len = c->hdr_len - c->hdr_off;
            n++;
        }
        iov[n].iov_base = (void *)(uintptr_t)(l->body->data + c->body_off); /* iovec is not const */
        iov[n].iov_len = l->body->len - c->body_off;
        n++;
        w = writev(c->fd, iov, n);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno == EAGAIN ? 0 : -1;
        }
        if (c->hdr_off < c->hdr_len) {
            size_t h = c->hdr_len - c->hdr_off;

            if ((size_t)w < h) {
                c->hdr_off += (size_t)w;
                continue;
            }
            c->hdr_off = c->hdr_len;
            w -= (ssize_t)h;
        }
        c->body_off += (size_t)w;
        if (c->body_off == l->body->len) {
            c->sending = 0;
        }
    }
    return 0;
}

static void window_account(struct load *l, struct conn *c, uint64_t now)
{
    struct run_result *r = l->r;

    if (c->status == 200) {
        r->total_ok++;
    } else {
        r->total_non200++;
    }
    if (c->t_sent < l->t_warm || now > l->t_end) {
        return;
    }
    if (c->status == 200) {
        r->requests++;
    } else {
        r->non200++;
    }
    if (l->nlat < LAT_CAP) {
        l->lat[l->nlat++] = now - c->t_sent;
    }
}

static void conn_fail(struct load *l, struct conn *c, uint64_t now);

/* Start the next request on @p c, or leave it idle when the run is ending. */
static void conn_next(struct load *l, struct conn *c, uint64_t now)
{
    if (l->stopping || limits_reached(l)) {
        return;
    }
    c->t_sent = now;
    conn_prepare(l, c);
    if (conn_send(l, c) != 0) {
        conn_fail(l, c, now);
    }
}

/* Read until EAGAIN. Returns 0, or -1 when the connection closed or failed. */
static int conn_recv(struct load *l, struct conn *c, uint64_t now)
{
    char buf[RECV_BUF];
    const int fd = c->fd;

    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        llhttp_errno_t err;

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno == EAGAIN ? 0 : -1;
        }
        if (n == 0) {
            return -1;
        }
        err = llhttp_execute(&c->parser, buf, (size_t)n);
        if (err != HPE_OK) {
            return -1;
        }
        if (c->complete) {
            c->complete = 0;
            c->inflight = 0;
            c->sending = 0; /* an early answer (e.g. 413) ends the request */
            window_account(l, c, now);
            conn_next(l, c, now);
            if (c->fd != fd) {
                return 0; /* conn_next failed and replaced the connection */
            }
        }
    }
}

/* The connection failed: count it, and reconnect while the run goes on (bounded). */
static void conn_fail(struct load *l, struct conn *c, uint64_t now)
{
    l->r->conn_errors++;
    if (c->inflight) {
        l->r->unanswered++;
    }
    c->inflight = 0;
    c->sending = 0;
    conn_drop(l, c);
    if (l->stopping || l->reconnects >= MAX_RECONNECTS) {
        return;
    }
    l->reconnects++;
    if (conn_open(l, c) == 0) {
        conn_next(l, c, now);
    }
}

static int active_conns(const struct load *l)
{
    int n = 0;

    for (int i = 0; i < l->nconns; i++) {
        if (l->conns[i].fd >= 0 && l->conns[i].inflight) {
            n++;
        }
    }
    return n;
}

static void run_load(struct load *l)
{
    struct run_result *r = l->r;
    struct epoll_event evs[MAX_CONNS];
    uint64_t t_begin = nwb_bench_now_ns();
    uint64_t deadline;
    double srv_cpu0 = 0;
    double gen_cpu0 = 0;
    double all_cpu0 = 0;
    uint64_t next_reclaim = t_begin + (uint64_t)RECLAIM_MS * 1000000u;
    int warm_marked = 0;
    int end_marked = 0;

    l->t_warm = t_begin + (uint64_t)(l->o->warmup_s * 1e9);
    l->t_end = l->t_warm + (uint64_t)(l->o->duration_s * 1e9);
    deadline = l->t_end + (uint64_t)DRAIN_MS * 1000000u;
    for (int i = 0; i < l->nconns; i++) {
        struct conn *c = &l->conns[i];

        c->idx = i;
        c->seq = 1;
        nwb_run_id_generate(c->run);
        if (conn_open(l, c) != 0) {
            r->conn_errors++;
            continue;
        }
        conn_next(l, c, nwb_bench_now_ns());
    }
    for (;;) {
        uint64_t now = nwb_bench_now_ns();
        int timeout;
        int n;

        if (now >= next_reclaim) {
            nwb_bench_reclaim_step(l->reclaim, 0);
            now = nwb_bench_now_ns();
            next_reclaim = now + (uint64_t)RECLAIM_MS * 1000000u;
        }

        if (!warm_marked && now >= l->t_warm) {
            warm_marked = 1;
            srv_cpu0 = nwb_bench_proc_cpu_s(l->server_pid);
            gen_cpu0 = nwb_bench_self_cpu_s();
            all_cpu0 = nwb_bench_machine_busy_s();
        }
        if (!end_marked && (now >= l->t_end || (limits_reached(l) && warm_marked))) {
            end_marked = 1;
            if (now < l->t_end) {
                r->stopped_early = 1;
                l->t_end = now;
            }
            l->stopping = 1;
            r->window_s = (double)(l->t_end - l->t_warm) / 1e9;
            r->server_cpu = (nwb_bench_proc_cpu_s(l->server_pid) - srv_cpu0) / r->window_s;
            r->gen_cpu = (nwb_bench_self_cpu_s() - gen_cpu0) / r->window_s;
            r->other_cpu =
                (nwb_bench_machine_busy_s() - all_cpu0) / r->window_s - r->server_cpu - r->gen_cpu;
            if (r->other_cpu < 0) {
                r->other_cpu = 0; /* the counters tick at different moments */
            }
        }
        if (end_marked && active_conns(l) == 0) {
            break;
        }
        if (now >= deadline) {
            for (int i = 0; i < l->nconns; i++) {
                if (l->conns[i].fd >= 0 && l->conns[i].inflight) {
                    r->unanswered++;
                }
            }
            break;
        }
        timeout = !warm_marked  ? (int)((l->t_warm - now) / 1000000u) + 1
                  : !end_marked ? (int)((l->t_end - now) / 1000000u) + 1
                                : (int)((deadline - now) / 1000000u) + 1;
        if (timeout > RECLAIM_MS) {
            timeout = RECLAIM_MS;
        }
        n = epoll_wait(l->ep, evs, MAX_CONNS, timeout);
        if (n < 0 && errno != EINTR) {
            snprintf(r->error, sizeof(r->error), "epoll_wait: %s", strerror(errno));
            break;
        }
        now = nwb_bench_now_ns();
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            const uint32_t e = evs[i].events;

            if (c->fd < 0) {
                continue;
            }
            if ((e & EPOLLOUT) && c->sending && conn_send(l, c) != 0) {
                conn_fail(l, c, now);
                continue;
            }
            if ((e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && conn_recv(l, c, now) != 0) {
                conn_fail(l, c, now);
                continue;
            }
        }
    }
    for (int i = 0; i < l->nconns; i++) {
        conn_drop(l, &l->conns[i]);
    }
    if (r->window_s > 0) {
        r->req_s = (double)r->requests / r->window_s;
        r->mb_s = r->req_s * (double)l->body->len / 1e6;
        r->rec_s = r->req_s * (double)l->body->records;
    }
    if (l->nlat > 0) {
        nwb_bench_sort_u64(l->lat, l->nlat);
        r->lat_p50_us = (double)nwb_bench_quantile(l->lat, l->nlat, 0.5) / 1e3;
        r->lat_p99_us = (double)nwb_bench_quantile(l->lat, l->nlat, 0.99) / 1e3;
    }
}

/* ---- the server's own count ---- */

/* The value after @p key (a line start, e.g. "\nnwb_records_total ") in @p text, or -1. */
static long long metric_value(const char *text, const char *key)
{
    const char *hit = strstr(text, key);

    return hit != NULL ? strtoll(hit + strlen(key), NULL, 10) : -1;
}

/*
 * GET /metrics on a fresh connection: nwb_records_total, or -1, and in
 * @p decoded the decoded-token count (or -1). Blocking, with 5 s timeouts;
 * the answer is read until the peer closes (Connection: close).
 */
static long long metrics_records(int port, long long *decoded)
{
    char buf[64 * 1024];

    *decoded = -1;
    if (nwb_bench_metrics_get(port, buf, sizeof(buf)) != 0) {
        return -1;
    }
    *decoded = metric_value(buf, "\nnwb_namesym_tokens_total{result=\"decoded\"} ");
    return metric_value(buf, "\nnwb_records_total ");
}

/* ---- one server under one load ---- */

/* One run; @p v: nwb-logserver's variant (NULL: plain). */
static void run_one(const struct options *o, int srv_kind, const struct body *b, int nconns,
                    const struct variant *v, struct run_result *r, uint64_t *lat)
{
    static struct load l;
    const char *const namesym_dir = v != NULL ? v->namesym_dir : NULL;
    struct nwb_bench_follow *fol = NULL;
    struct nwb_bench_reclaim *reclaim = NULL;
    struct nwb_bench_proc proc;
    int punch_failed = 0;
    char dir[1024];
    char err[512] = "";
    char *argv[12];
    char cap_mb[32];
    int argc = 0;

    memset(r, 0, sizeof(*r));
    r->lines = -1;
    r->tok_decoded = -1;
    if (nwb_bench_tmpdir("ingest", dir, sizeof(dir)) != 0) {
        snprintf(r->error, sizeof(r->error), "cannot create a temp dir");
        return;
    }
    argv[argc++] = (char *)(uintptr_t)o->exe[srv_kind]; /* execv predates const */
    argv[argc++] = (char *)(uintptr_t) "--port";
    argv[argc++] = (char *)(uintptr_t) "0";
    argv[argc++] = (char *)(uintptr_t) "--out";
    argv[argc++] = dir;
    if (srv_kind == SRV_NULL) {
        /* No rewinding: both servers append, and the load generator punches out what they wrote. */
        snprintf(cap_mb, sizeof(cap_mb), "%llu",
                 (unsigned long long)(o->max_bytes / 1000000u) + 64);
        argv[argc++] = (char *)(uintptr_t) "--max-file-mb";
        argv[argc++] = cap_mb;
    }
    if (namesym_dir != NULL) {
        argv[argc++] = (char *)(uintptr_t) "--namesym-dir";
        argv[argc++] = (char *)(uintptr_t)namesym_dir;
    }
    argv[argc] = NULL;
    if (nwb_bench_proc_start(&proc, argv, 10000, err, sizeof(err)) != 0) {
        snprintf(r->error, sizeof(r->error), "%.250s", err);
        nwb_bench_rmtree(dir);
        return;
    }
    /* Followers watch from before the first request, like a viewer already open. */
    if (v != NULL && v->followers > 0 &&
        nwb_bench_follow_start(proc.port, v->followers, 10000, &fol, err, sizeof(err)) != 0) {
        snprintf(r->error, sizeof(r->error), "%.250s", err);
        nwb_bench_proc_stop(&proc, SIGKILL, 10000);
        nwb_bench_rmtree(dir);
        return;
    }
    if (nwb_bench_reclaim_create(dir, srv_kind == SRV_NULL ? "null-bodies.bin" : "log.txt",
                                 o->punch_mb * 1024u * 1024u, srv_kind == SRV_NWB && o->verify_disk,
                                 &reclaim) != 0) {
        snprintf(r->error, sizeof(r->error), "out of memory");
        nwb_bench_follow_stop(fol, &r->fol);
        nwb_bench_proc_stop(&proc, SIGKILL, 10000);
        nwb_bench_rmtree(dir);
        return;
    }
    memset(&l, 0, sizeof(l));
    l.reclaim = reclaim;
    l.o = o;
    l.body = b;
    l.port = proc.port;
    l.nconns = nconns;
    l.server_pid = proc.pid;
    l.r = r;
    l.lat = lat;
    llhttp_settings_init(&l.settings);
    l.settings.on_message_complete = on_response_complete;
    for (int i = 0; i < MAX_CONNS; i++) {
        l.conns[i].fd = -1;
    }
    l.ep = epoll_create1(EPOLL_CLOEXEC);
    if (l.ep < 0) {
        snprintf(r->error, sizeof(r->error), "epoll_create1: %s", strerror(errno));
    } else {
        run_load(&l);
        close(l.ep);
    }
    nwb_bench_follow_stop(fol, &r->fol);
    if (srv_kind == SRV_NWB) {
        /* Every request was answered: the server says how many records it wrote. */
        const long long lines = metrics_records(proc.port, &r->tok_decoded);

        if (o->verify && !o->verify_disk) {
            r->lines = lines;
        }
    }
    r->exit_status = nwb_bench_proc_stop(&proc, SIGTERM, 60000);
    if (r->exit_status != 0 && r->error[0] == '\0') {
        char out[512];

        nwb_bench_proc_output(&proc, out, sizeof(out));
        snprintf(r->error, sizeof(r->error), "exit status %d: %.200s", r->exit_status, out);
    }
    /* The server has exited: count what it wrote last. */
    nwb_bench_reclaim_step(reclaim, 1);
    if (o->verify && o->verify_disk && srv_kind == SRV_NWB) {
        r->lines = nwb_bench_reclaim_lines(reclaim);
    }
    r->punched = nwb_bench_reclaim_punched(reclaim, &punch_failed);
    if (punch_failed) {
        fprintf(stderr, "bench_ingest: cannot punch holes under %s: output stays in memory\n", dir);
    }
    nwb_bench_reclaim_destroy(reclaim);
    nwb_bench_rmtree(dir);
    if (r->error[0] == '\0') {
        r->ok = 1;
    }
}

/* The least disturbed successful run (lowest CPU used by other processes; the first on a tie). */
static const struct run_result *pick_run(const struct run_result *runs, int n)
{
    const struct run_result *best = &runs[0];

    for (int i = 1; i < n; i++) {
        if ((runs[i].ok && !best->ok) ||
            (runs[i].ok == best->ok && runs[i].other_cpu < best->other_cpu)) {
            best = &runs[i];
        }
    }
    return best;
}

/* A run's rate, and the server CPU it spent per request (us; 0 when nothing was answered). */
static double rate_of(const struct run_result *r)
{
    return r->req_s;
}

static double cpu_per_request_us(const struct run_result *r)
{
    return r->req_s > 0 ? 1e6 * r->server_cpu / r->req_s : 0.0;
}

/*
 * The target ratio of a case run @p n times: the median, over the runs where both succeeded,
 * of @p a's @p metric (its rate: rate_of) / @p b's within one repetition (the two ran back to
 * back, so they saw the same machine). One repetition's pair is the unit, which keeps a lucky
 * run of one server from meeting an unlucky run of the other. Returns -1 when no pair
 * succeeded; @p list gets every pair's ratio ("68.1, 71.5, 74.0") when there is more than one.
 */
static double paired_ratio(const struct run_result *a, const struct run_result *b, int n,
                           double (*metric)(const struct run_result *), char *list, size_t cap)
{
    double r[MAX_REPEAT];
    int m = 0;
    size_t used = 0;

    list[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (a[i].ok && b[i].ok && metric(&b[i]) > 0) {
            r[m++] = metric(&a[i]) / metric(&b[i]);
        }
    }
    if (m == 0) {
        return -1.0;
    }
    for (int i = 1; i < m; i++) { /* insertion sort: m <= MAX_REPEAT */
        const double x = r[i];
        int j = i - 1;

        for (; j >= 0 && r[j] > x; j--) {
            r[j + 1] = r[j];
        }
        r[j + 1] = x;
    }
    for (int i = 0; m > 1 && i < m && used < cap; i++) {
        const int w = snprintf(list + used, cap - used, "%s%.1f", i > 0 ? ", " : "", 100.0 * r[i]);

        if (w < 0) {
            break;
        }
        used += (size_t)w;
    }
    return m % 2 == 1 ? r[m / 2] : (r[m / 2 - 1] + r[m / 2]) / 2.0;
}

/* ---- command line and report ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_ingest [options]\n"
            "  --server-exe P   nwb-logserver (default: the one built with this benchmark)\n"
            "  --null-exe P     null_server (default: the one built with this benchmark)\n"
            "  --duration-s S   measured seconds per run (default 5)\n"
            "  --warmup-s S     seconds before measuring (default 1)\n"
            "  --conns LIST     connection counts, e.g. 16,64 (default; each 1..%d)\n"
            "  --sizes LIST     body sizes in bytes, e.g. 4096,65536 (default)\n"
            "  --repeat N       runs per case: tables show the least disturbed, targets the\n"
            "                   median of the per-repetition ratios (default 1)\n"
            "  --max-requests N bound per run (default 20000000)\n"
            "  --max-mb N       bound on body MB per run (default 8000)\n"
            "  --punch-mb N     punch out the servers' counted output every N MiB\n"
            "                   (default 16; 0 = never, output then stays in memory/page cache)\n"
            "  --no-text        only binary batches (default: binary, then text/plain bodies of\n"
            "                   log lines, both against the null server)\n"
            "  --no-verify      skip comparing the records nwb-logserver wrote with the 200s\n"
            "  --verify-disk    count the lines in runs/*/log.txt (read back during the run,\n"
            "                   costs load-generator CPU) instead of asking GET /metrics\n"
            "  --tokens N       also measure name decoding: messages with N #name tokens\n"
            "                   (1..%d; about one per 100 bytes with 1), nwb-logserver without\n"
            "                   and with a sidecar naming them (default 0: not run)\n"
            "  --tokens-only    only that comparison, not the null-server one (needs --tokens)\n"
            "  --namesym-exe P  nwb-namesym, to build that sidecar (default: the one built\n"
            "                   with this benchmark)\n"
            "  --followers N    also measure live followers: nwb-logserver without and with N\n"
            "                   clients (1..%d) each following GET /v1/events and reading the\n"
            "                   newest part of one run's log on every log event of it\n"
            "                   (default 0: not run)\n"
            "  --followers-only only that comparison (needs --followers)\n",
            MAX_CONNS, MAX_TOKENS, NWB_BENCH_FOLLOWERS_MAX);
}

static int parse_list(const char *s, long long *out, int cap)
{
    int n = 0;

    while (*s != '\0') {
        char *end;
        long long v;

        if (n == cap) {
            return -1;
        }
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno != 0 || end == s || (*end != ',' && *end != '\0')) {
            return -1;
        }
        out[n++] = v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

static int parse_args(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof(*o)); /* every option not set below is off (0) */
    o->exe[SRV_NULL] = NWB_BENCH_NULL_EXE;
    o->exe[SRV_NWB] = NWB_BENCH_SERVER_EXE;
    o->duration_s = 5.0;
    o->warmup_s = 1.0;
    o->conns[0] = 16;
    o->conns[1] = 64;
    o->nconns = 2;
    o->sizes[0] = 4096;
    o->sizes[1] = 65536;
    o->nsizes = 2;
    o->repeat = 1;
    o->max_requests = 20000000;
    o->max_bytes = 8000ull * 1000000ull;
    o->verify = 1;
    o->text = 1;
    o->punch_mb = 16;
    o->namesym_exe = NWB_BENCH_NAMESYM_EXE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long list[MAX_LOADS];
        int n;

        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(a, "--no-text") == 0) {
            o->text = 0;
            continue;
        }
        if (strcmp(a, "--no-verify") == 0) {
            o->verify = 0;
            continue;
        }
        if (strcmp(a, "--verify-disk") == 0) {
            o->verify_disk = 1;
            continue;
        }
        if (strcmp(a, "--tokens-only") == 0) {
            o->tokens_only = 1;
            continue;
        }
        if (strcmp(a, "--followers-only") == 0) {
            o->followers_only = 1;
            continue;
        }
        if (v == NULL) {
            fprintf(stderr, "bench_ingest: %s needs a value\n", a);
            return -1;
        }
        i++;
        if (strcmp(a, "--server-exe") == 0) {
            o->exe[SRV_NWB] = v;
        } else if (strcmp(a, "--null-exe") == 0) {
            o->exe[SRV_NULL] = v;
        } else if (strcmp(a, "--namesym-exe") == 0) {
            o->namesym_exe = v;
        } else if (strcmp(a, "--tokens") == 0) {
            o->tokens = atoi(v);
            if (o->tokens < 1 || o->tokens > MAX_TOKENS) {
                fprintf(stderr, "bench_ingest: --tokens must be 1..%d\n", MAX_TOKENS);
                return -1;
            }
        } else if (strcmp(a, "--followers") == 0) {
            o->followers = atoi(v);
            if (o->followers < 1 || o->followers > NWB_BENCH_FOLLOWERS_MAX) {
                fprintf(stderr, "bench_ingest: --followers must be 1..%d\n",
                        NWB_BENCH_FOLLOWERS_MAX);
                return -1;
            }
        } else if (strcmp(a, "--duration-s") == 0) {
            o->duration_s = strtod(v, NULL);
            if (!(o->duration_s >= 0.1 && o->duration_s <= 600)) {
                fprintf(stderr, "bench_ingest: --duration-s must be 0.1..600\n");
                return -1;
            }
        } else if (strcmp(a, "--warmup-s") == 0) {
            o->warmup_s = strtod(v, NULL);
            if (!(o->warmup_s >= 0 && o->warmup_s <= 60)) {
                fprintf(stderr, "bench_ingest: --warmup-s must be 0..60\n");
                return -1;
            }
        } else if (strcmp(a, "--conns") == 0) {
            n = parse_list(v, list, MAX_LOADS);
            if (n <= 0) {
                fprintf(stderr, "bench_ingest: --conns: up to %d numbers\n", MAX_LOADS);
                return -1;
            }
            for (int k = 0; k < n; k++) {
                if (list[k] < 1 || list[k] > MAX_CONNS) {
                    fprintf(stderr, "bench_ingest: --conns values must be 1..%d\n", MAX_CONNS);
                    return -1;
                }
                o->conns[k] = (int)list[k];
            }
            o->nconns = n;
        } else if (strcmp(a, "--sizes") == 0) {
            n = parse_list(v, list, MAX_SIZES);
            if (n <= 0) {
                fprintf(stderr, "bench_ingest: --sizes: up to %d numbers\n", MAX_SIZES);
                return -1;
            }
            for (int k = 0; k < n; k++) {
                if (list[k] < 512 || list[k] > 8 * 1024 * 1024) {
                    fprintf(stderr, "bench_ingest: --sizes values must be 512..8388608\n");
                    return -1;
                }
                o->sizes[k] = (size_t)list[k];
            }
            o->nsizes = n;
        } else if (strcmp(a, "--repeat") == 0) {
            o->repeat = atoi(v);
            if (o->repeat < 1 || o->repeat > MAX_REPEAT) {
                fprintf(stderr, "bench_ingest: --repeat must be 1..%d\n", MAX_REPEAT);
                return -1;
            }
        } else if (strcmp(a, "--max-requests") == 0) {
            o->max_requests = strtoull(v, NULL, 10);
            if (o->max_requests < 1) {
                fprintf(stderr, "bench_ingest: --max-requests must be >= 1\n");
                return -1;
            }
        } else if (strcmp(a, "--punch-mb") == 0) {
            o->punch_mb = strtoull(v, NULL, 10);
            if (o->punch_mb > 1024 * 1024) {
                fprintf(stderr, "bench_ingest: --punch-mb must be 0..1048576\n");
                return -1;
            }
        } else if (strcmp(a, "--max-mb") == 0) {
            o->max_bytes = strtoull(v, NULL, 10) * 1000000ull;
            if (o->max_bytes < 1000000ull) {
                fprintf(stderr, "bench_ingest: --max-mb must be >= 1\n");
                return -1;
            }
        } else {
            fprintf(stderr, "bench_ingest: unknown option %s\n", a);
            return -1;
        }
    }
    if (o->tokens_only && o->tokens == 0) {
        fprintf(stderr, "bench_ingest: --tokens-only needs --tokens N\n");
        return -1;
    }
    if (o->followers_only && o->followers == 0) {
        fprintf(stderr, "bench_ingest: --followers-only needs --followers N\n");
        return -1;
    }
    if (o->followers_only && o->tokens_only) {
        fprintf(stderr, "bench_ingest: --followers-only and --tokens-only exclude each other\n");
        return -1;
    }
    return 0;
}

/*
 * One row of a results table: run @p r of @p name, its ratio to @p ref (NULL: none), and
 * @p extra (a comparison's own cells before the ratio, " | " between them; NULL: none).
 */
static void print_row(const char *name, size_t size, int nconns, const struct run_result *r,
                      const struct run_result *ref, uint32_t records, int verify, const char *extra)
{
    char ratio[32] = "-";
    char disk[64] = "-";

    if (!r->ok) {
        printf("| %s | %zu | %d | ERROR: %s |\n", name, size, nconns, r->error);
        return;
    }
    if (ref != NULL && ref->ok && ref->req_s > 0) {
        snprintf(ratio, sizeof(ratio), "%.1f%%", 100.0 * r->req_s / ref->req_s);
    }
    if (verify && r->lines >= 0) {
        const long long want = (long long)(r->total_ok * records);

        snprintf(disk, sizeof(disk), r->lines == want ? "%lld ok" : "%lld of %lld", r->lines, want);
    }
    printf("| %s | %zu | %d | %.0f | %.1f | %.0f | %.0f | %.0f | %llu | %llu | %.0f%% / %.0f%% / "
           "%.0f%% | %.2f | %s | %s%s%s%s |\n",
           name, size, nconns, r->req_s, r->mb_s, r->rec_s, r->lat_p50_us, r->lat_p99_us,
           (unsigned long long)r->non200, (unsigned long long)(r->conn_errors + r->unanswered),
           100.0 * r->server_cpu, 100.0 * r->gen_cpu, 100.0 * r->other_cpu, cpu_per_request_us(r),
           disk, extra != NULL ? extra : "", extra != NULL ? " | " : "", ratio,
           r->stopped_early ? " (bound hit)" : "");
}

/* The "Body N: B bytes, R records." lines under a section's description. */
static void print_bodies(const struct options *o, const struct body *bodies)
{
    for (int s = 0; s < o->nsizes; s++) {
        printf("Body %zu: %zu bytes, %u records.\n", o->sizes[s], bodies[s].len, bodies[s].records);
    }
}

/* A comparison's verdict for one body and load: the paired ratio of @p a's runs to @p b's. */
struct verdict {
    int measured;
    double ratio; /* the median paired ratio (0 when not measured) */
    char pairs[160];
    char note[64]; /* " (disturbed: ...)" when other processes took much CPU */
};

static void verdict_of(const struct run_result *a_runs, const struct run_result *b_runs, int repeat,
                       const struct run_result *a, const struct run_result *b, struct verdict *v)
{
    const double paired = paired_ratio(a_runs, b_runs, repeat, rate_of, v->pairs, sizeof(v->pairs));
    const double other = a->other_cpu > b->other_cpu ? a->other_cpu : b->other_cpu;

    v->measured = a->ok && b->ok && b->req_s > 0 && paired >= 0;
    v->ratio = v->measured ? paired : 0.0;
    v->note[0] = '\0';
    if (other > 0.25) {
        snprintf(v->note, sizeof(v->note), " (disturbed: other CPU %.0f%%)", 100.0 * other);
    }
}

/* The heading of a comparison's targets table, with how its ratio is taken. */
static void print_targets_head(const struct options *o, const char *title, const char *with,
                               const char *without)
{
    printf("\n#### %s\n\n", title);
    if (o->repeat > 1) {
        printf("`ratio`: the median over the %d repetitions of the rate with %s / the rate with "
               "%s in the same repetition (back to back, the order swapped every "
               "repetition).\n\n",
               o->repeat, with, without);
    }
    printf("| target | body | conns | %s | %s | ratio | result |\n", with, without);
    printf("|---|---|---|---|---|---|---|\n");
}

/* Both sides of a comparison answered everything 200, and @p n wrote every record. */
static int pair_clean(const struct options *o, const struct run_result *n,
                      const struct run_result *z, uint32_t records)
{
    const long long want_lines = (long long)(n->total_ok * records);

    return n->total_non200 == 0 && n->conn_errors == 0 && n->unanswered == 0 &&
           z->total_non200 == 0 && (!o->verify || n->lines == want_lines);
}

/* One row of a targets table: @p target, @p a beside @p b, the ratio, @p result. */
static void print_target(const char *target, size_t size, int nconns, const struct run_result *a,
                         const struct run_result *b, const struct verdict *v, const char *result)
{
    printf("| %s | %zu | %d | %.0f req/s | %.0f req/s | %.1f%%%s%s%s | %s%s |\n", target, size,
           nconns, a->req_s, b->req_s, 100.0 * v->ratio,
           v->pairs[0] != '\0' ? " (median of pairs: " : "", v->pairs,
           v->pairs[0] != '\0' ? ")" : "", result, v->note);
}

/*
 * Write a sidecar naming every token the bodies use into @p dir with
 * "nwb-namesym build --out DIR/bench-ingest.namesym" (names on its stdin).
 */
static int sidecar_build(const char *exe, const char *dir)
{
    char cmd[2048];
    FILE *f;
    int n, st;

    if (strchr(exe, '\'') != NULL || strchr(dir, '\'') != NULL) {
        return -1;
    }
    n = snprintf(cmd, sizeof(cmd), "'%s' build --out '%s/bench-ingest.namesym' >/dev/null", exe,
                 dir);
    if (n < 0 || (size_t)n >= sizeof(cmd)) {
        return -1;
    }
    f = popen(cmd, "w");
    if (f == NULL) {
        return -1;
    }
    for (unsigned i = 0; i < TOKEN_NAMES; i++) {
        char name[64], tok[NWB_NAME_TOKEN_SIZE];

        token_name(i, name, tok);
        fprintf(f, "%s\n", name);
    }
    st = pclose(f);
    return st == 0 ? 0 : -1;
}

/*
 * nwb-logserver as @p vs[0] and @p vs[1] on every body and load, back to back in each
 * repetition with the order swapped every repetition (ABBA, as in main()): every run into
 * @p runs, the least disturbed of each into @p best.
 */
static void run_pairs(const struct options *o, const struct body *bodies,
                      const struct variant vs[2],
                      struct run_result runs[MAX_SIZES][MAX_LOADS][2][MAX_REPEAT],
                      struct run_result best[MAX_SIZES][MAX_LOADS][2], uint64_t *lat)
{
    for (int s = 0; s < o->nsizes; s++) {
        for (int k = 0; k < o->nconns; k++) {
            for (int rep = 0; rep < o->repeat; rep++) {
                for (int w = 0; w < 2; w++) {
                    const int v = rep % 2 ? 1 - w : w;

                    fprintf(stderr,
                            "bench_ingest: nwb-logserver, %s, %zu-byte bodies, %d connections, "
                            "run %d\n",
                            vs[v].name, bodies[s].len, o->conns[k], rep + 1);
                    run_one(o, SRV_NWB, &bodies[s], o->conns[k], &vs[v], &runs[s][k][v][rep], lat);
                }
            }
            for (int v = 0; v < 2; v++) {
                best[s][k][v] = *pick_run(runs[s][k][v], o->repeat);
            }
        }
    }
}

/*
 * The name-decoding comparison: nwb-logserver on token-bearing bodies without
 * a sidecar (tokens stay as they are) and with one naming every token. Prints
 * its tables and returns the number of failed targets (>= 90% of the rate
 * without, every answer 200, every record written, every token decoded).
 */
static int tokens_section(const struct options *o, uint64_t *lat)
{
    static struct run_result runs[MAX_SIZES][MAX_LOADS][2][MAX_REPEAT];
    static struct run_result best[MAX_SIZES][MAX_LOADS][2];
    static const char *const kind[2] = {"no sidecar", "sidecar"};
    struct body bodies[MAX_SIZES];
    char dir[1024];
    int fails = 0;

    if (nwb_bench_tmpdir("namesym", dir, sizeof(dir)) != 0 ||
        sidecar_build(o->namesym_exe, dir) != 0) {
        printf("\n#### Name decoding\n\nERROR: cannot build the sidecar with %s\n", o->namesym_exe);
        return 1;
    }
    for (int s = 0; s < o->nsizes; s++) {
        if (body_build(&bodies[s], o->sizes[s], o->tokens) != 0) {
            fprintf(stderr, "bench_ingest: cannot build a %zu-byte batch\n", o->sizes[s]);
            nwb_bench_rmtree(dir);
            return 1;
        }
    }
    {
        char names[2][64];
        const struct variant vs[2] = {{names[0], NULL, 0}, {names[1], dir, 0}};

        for (int v = 0; v < 2; v++) {
            snprintf(names[v], sizeof(names[v]), "%s, %d tokens/message", kind[v], o->tokens);
        }
        run_pairs(o, bodies, vs, runs, best, lat);
    }
    nwb_bench_rmtree(dir);

    printf("\n#### Name decoding in ingest\n\n");
    printf("The same load on nwb-logserver, every message ending in %d ` mesh=#<16 hex>` "
           "token%s (names cycle through %d, all in the sidecar), without any sidecar "
           "(tokens written as they are) and with `--namesym-dir` holding a sidecar made by "
           "`nwb-namesym build` (every token decoded).\n",
           o->tokens, o->tokens == 1 ? "" : "s", TOKEN_NAMES);
    print_bodies(o, bodies);
    printf("\n| sidecar | body | conns | req/s | body MB/s | records/s | p50 us | p99 us | "
           "non-200 | lost | CPU server / loadgen / other | server CPU us/req | records written | "
           "tokens decoded | vs no sidecar |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int s = 0; s < o->nsizes; s++) {
        for (int k = 0; k < o->nconns; k++) {
            for (int v = 0; v < 2; v++) {
                const struct run_result *r = &best[s][k][v];
                char toks[64] = "-";

                if (r->tok_decoded >= 0) {
                    snprintf(toks, sizeof(toks), "%lld", r->tok_decoded);
                }
                print_row(kind[v], bodies[s].len, o->conns[k], r, v == 1 ? &best[s][k][0] : NULL,
                          bodies[s].records, o->verify, toks);
            }
        }
    }
    print_targets_head(o, "Name decoding targets", "sidecar", "no sidecar");
    for (int s = 0; s < o->nsizes; s++) {
        for (int k = 0; k < o->nconns; k++) {
            const struct run_result *n = &best[s][k][1];
            const struct run_result *z = &best[s][k][0];
            /* Every token of every written record decoded (whole run, warm-up included). */
            const long long want_tok = (long long)(n->total_ok * bodies[s].records) * o->tokens;
            const int clean = pair_clean(o, n, z, bodies[s].records) &&
                              (!o->verify || o->verify_disk || n->tok_decoded == want_tok) &&
                              (z->tok_decoded <= 0);
            struct verdict v;
            int ok;

            verdict_of(runs[s][k][1], runs[s][k][0], o->repeat, n, z, &v);
            ok = v.measured && v.ratio >= 0.90 && clean;
            if (!ok) {
                fails++;
            }
            print_target(">= 90% of the rate without sidecars, all 200, all written and decoded",
                         bodies[s].len, o->conns[k], n, z, &v,
                         ok ? "PASS" : (v.measured && v.ratio >= 0.90 ? "FAIL (errors)" : "FAIL"));
        }
    }
    printf("\nname decoding targets: %s (%d failed)\n", fails == 0 ? "PASS" : "FAIL", fails);
    for (int s = 0; s < o->nsizes; s++) {
        nwb_free(bodies[s].data);
    }
    return fails;
}

/* What the followers saw in @p r, for the table: events/s per follower, polls/s, poll MB/s. */
static void follow_cells(const struct run_result *r, int followers, char *cells, size_t cap)
{
    const struct nwb_bench_follow_stats *f = &r->fol;

    if (followers == 0 || f->seconds <= 0) {
        snprintf(cells, cap, "- | - | -");
        return;
    }
    snprintf(cells, cap, "%.1f | %.1f (%llu of %llu answered 200) | %.2f",
             (double)f->events / followers / f->seconds, (double)f->polls / f->seconds,
             (unsigned long long)f->polls_ok, (unsigned long long)f->polls,
             (double)f->poll_bytes / 1e6 / f->seconds);
}

/* Followers that kept their stream whole and were answered: 1, or 0 with @p why. */
static int follow_clean(const struct run_result *r, int followers, char *why, size_t cap)
{
    const struct nwb_bench_follow_stats *f = &r->fol;

    why[0] = '\0';
    if (f->followed < followers) {
        snprintf(why, cap, "%d of %d followers found a run", f->followed, followers);
    } else if (f->id_gaps != 0 || f->streams_lost != 0) {
        snprintf(why, cap, "%llu id gaps, %llu streams lost", (unsigned long long)f->id_gaps,
                 (unsigned long long)f->streams_lost);
    } else if (f->polls == 0 || f->polls_ok != f->polls || f->poll_failures != 0) {
        snprintf(why, cap, "log polls: %llu of %llu answered 200 (other: %d), %llu failed",
                 (unsigned long long)f->polls_ok, (unsigned long long)f->polls, f->poll_status,
                 (unsigned long long)f->poll_failures);
    }
    return why[0] == '\0';
}

/*
 * The followers comparison: nwb-logserver under the same load without and with
 * o->followers live followers (bench_ingest_follow.h). Prints its tables and returns the
 * number of failed targets (>= 95% of the rate without, every answer 200, every record
 * written, every follower's stream whole and its log polls answered 200).
 */
static int followers_section(const struct options *o, uint64_t *lat)
{
    static struct run_result runs[MAX_SIZES][MAX_LOADS][2][MAX_REPEAT];
    static struct run_result best[MAX_SIZES][MAX_LOADS][2];
    char with[64];
    const struct variant vs[2] = {{"no followers", NULL, 0}, {with, NULL, o->followers}};
    struct body bodies[MAX_SIZES];
    int fails = 0;

    snprintf(with, sizeof(with), "%d followers", o->followers);
    for (int s = 0; s < o->nsizes; s++) {
        if (body_build(&bodies[s], o->sizes[s], 0) != 0) {
            fprintf(stderr, "bench_ingest: cannot build a %zu-byte batch\n", o->sizes[s]);
            return 1;
        }
    }
    run_pairs(o, bodies, vs, runs, best, lat);

    printf("\n#### Live followers\n\n");
    printf("The same load on nwb-logserver, without and with %d followers started before the "
           "first request: each holds `GET /v1/events` and follows one run (the n-th it hears "
           "of); on every `log` event of it, it asks for the newest part of that run's log "
           "(`GET /v1/runs/{id}/log?offset=..&limit=%u`, at most %u bytes, on its own "
           "keep-alive connection, one request at a time). The followers run on one thread "
           "of the load generator.\n",
           o->followers, NWB_BENCH_FOLLOW_TAIL, NWB_BENCH_FOLLOW_TAIL);
    print_bodies(o, bodies);
    printf("\n| followers | body | conns | req/s | body MB/s | records/s | p50 us | p99 us | "
           "non-200 | lost | CPU server / loadgen / other | server CPU us/req | records written "
           "| events/s per follower | log polls/s | poll MB/s | vs none |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int s = 0; s < o->nsizes; s++) {
        for (int k = 0; k < o->nconns; k++) {
            for (int v = 0; v < 2; v++) {
                char name[16], cells[160];

                snprintf(name, sizeof(name), "%d", vs[v].followers);
                follow_cells(&best[s][k][v], vs[v].followers, cells, sizeof(cells));
                print_row(name, bodies[s].len, o->conns[k], &best[s][k][v],
                          v == 1 ? &best[s][k][0] : NULL, bodies[s].records, o->verify, cells);
            }
        }
    }
    print_targets_head(o, "Live followers targets", "followers", "no followers");
    for (int s = 0; s < o->nsizes; s++) {
        for (int k = 0; k < o->nconns; k++) {
            const struct run_result *n = &best[s][k][1];
            const struct run_result *z = &best[s][k][0];
            int clean = pair_clean(o, n, z, bodies[s].records);
            char why[160] = "", result[200];
            struct verdict v;
            int ok;

            /* Every repetition's followers, not only the table's run. */
            for (int rep = 0; rep < o->repeat && clean; rep++) {
                clean = !runs[s][k][1][rep].ok ||
                        follow_clean(&runs[s][k][1][rep], o->followers, why, sizeof(why));
            }
            verdict_of(runs[s][k][1], runs[s][k][0], o->repeat, n, z, &v);
            ok = v.measured && v.ratio >= 0.95 && clean;
            if (!ok) {
                fails++;
            }
            snprintf(result, sizeof(result), "%s%s%s%s", ok ? "PASS" : "FAIL", clean ? "" : " (",
                     clean ? "" : (why[0] != '\0' ? why : "errors"), clean ? "" : ")");
            print_target(">= 95% of the rate without followers, all 200, all written, streams "
                         "whole, polls 200",
                         bodies[s].len, o->conns[k], n, z, &v, result);
        }
    }
    /* The server's own cost, less disturbed by other load than the rate: information only. */
    printf("\nServer CPU per request with followers / without, median of the paired ratios "
           "(information: what the followers cost the server itself, not the machine):");
    for (int s = 0; s < o->nsizes; s++) {
        for (int k = 0; k < o->nconns; k++) {
            char pairs[160];
            const double r = paired_ratio(runs[s][k][1], runs[s][k][0], o->repeat,
                                          cpu_per_request_us, pairs, sizeof(pairs));

            printf("%s %zu bytes x %d conns %.1f%%", s + k > 0 ? ";" : "", bodies[s].len,
                   o->conns[k], 100.0 * r);
        }
    }
    printf(".\n");
    printf("\nlive followers targets: %s (%d failed)\n", fails == 0 ? "PASS" : "FAIL", fails);
    for (int s = 0; s < o->nsizes; s++) {
        nwb_free(bodies[s].data);
    }
    return fails;
}

/* The binary and the text/plain loads, each against both servers: the two tables and targets. */
static int ingest_section(const struct options *o, int text, uint64_t *lat)
{
    static struct run_result runs[MAX_SIZES][MAX_LOADS][SRV_COUNT][MAX_REPEAT];
    static struct run_result best[MAX_SIZES][MAX_LOADS][SRV_COUNT];
    struct body bodies[MAX_SIZES];
    const char *what = text ? "text/plain" : "binary";
    int fails = 0;

    for (int s = 0; s < o->nsizes; s++) {
        if ((text ? body_build_text(&bodies[s], o->sizes[s])
                  : body_build(&bodies[s], o->sizes[s], 0)) != 0) {
            fprintf(stderr, "bench_ingest: cannot build a %zu-byte %s body\n", o->sizes[s], what);
            for (int i = 0; i < s; i++) {
                nwb_free(bodies[i].data);
            }
            return 1;
        }
    }
    for (int s = 0; s < o->nsizes; s++) {
        for (int k = 0; k < o->nconns; k++) {
            for (int rep = 0; rep < o->repeat; rep++) {
                for (int w = 0; w < SRV_COUNT; w++) {
                    /* ABBA: the order swaps every repetition, so drift and whatever the second
                     * run of a pair inherits from the first fall on both servers alike. */
                    const int v = rep % 2 ? SRV_COUNT - 1 - w : w;

                    fprintf(stderr,
                            "bench_ingest: %s, %zu-byte %s bodies, %d connections, run %d\n",
                            srv_names[v], bodies[s].len, what, o->conns[k], rep + 1);
                    run_one(o, v, &bodies[s], o->conns[k], NULL, &runs[s][k][v][rep], lat);
                }
            }
            for (int v = 0; v < SRV_COUNT; v++) {
                best[s][k][v] = *pick_run(runs[s][k][v], o->repeat);
            }
        }
    }

    printf("%s#### Server ingest%s\n\n", text ? "\n" : "", text ? ", text/plain" : "");
    printf("POST /v1/log, %s, one request in flight per "
           "keep-alive connection, %.1f s measured after %.1f s warm-up%s; each server started "
           "fresh (--port 0, temp --out) per run.\n",
           text ? "text/plain bodies of ~130-byte log lines (time, level, thread, file:line, "
                  "message; one record per line), the same bodies to the null server"
                : "binary batches of ~80-byte messages",
           o->duration_s, o->warmup_s,
           o->repeat > 1 ? ", least disturbed of the runs per server and load" : "");
    print_bodies(o, bodies);
    printf("\n| server | body | conns | req/s | body MB/s | records/s | p50 us | p99 us | "
           "non-200 | lost | CPU server / loadgen / other | server CPU us/req | records written "
           "| vs null |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int s = 0; s < o->nsizes; s++) {
        for (int k = 0; k < o->nconns; k++) {
            for (int v = 0; v < SRV_COUNT; v++) {
                print_row(srv_names[v], bodies[s].len, o->conns[k], &best[s][k][v],
                          v == SRV_NWB ? &best[s][k][SRV_NULL] : NULL, bodies[s].records, o->verify,
                          NULL);
            }
        }
    }
    printf("\n`records written`: %s, against 200 answers x records per %s.\n",
           !o->verify       ? "not checked (--no-verify)"
           : o->verify_disk ? "lines in runs/*/log.txt, read back during and after the run"
                            : "nwb-logserver's own nwb_records_total from GET /metrics after the "
                              "last answer",
           text ? "body" : "batch");
    printf("\n`CPU`: share of one core during the window, for the server process, the load "
           "generator, and every other process on the machine (from /proc/stat); a large "
           "`other` means the row is disturbed. `server CPU us/req`: the server process's CPU "
           "time over the window (/proc/PID/stat, all its threads) / the requests answered "
           "in it.\n");
    printf("\n#### Server ingest targets%s\n\n", text ? ", text/plain" : "");
    if (o->repeat > 1) {
        printf("`ratio`: the median over the %d repetitions of nwb-logserver's rate / the null "
               "server's rate in the same repetition (the two ran back to back, the order swapped "
               "every repetition); the tables "
               "above show each server's least disturbed run.\n\n",
               o->repeat);
    }
    printf("| target | body | conns | nwb-logserver | null server | ratio | result |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (int s = 0; s < o->nsizes; s++) {
        /* Issue 17: binary 85% up to 16 KiB, 80% above; text/plain 70% and 60%. */
        const double want =
            text ? (o->sizes[s] <= 16384 ? 0.70 : 0.60) : (o->sizes[s] <= 16384 ? 0.85 : 0.80);
        char target[64];

        snprintf(target, sizeof(target), ">= %.0f%% of null req/s, all 200, all written",
                 100.0 * want);
        for (int k = 0; k < o->nconns; k++) {
            const struct run_result *n = &best[s][k][SRV_NWB];
            const struct run_result *z = &best[s][k][SRV_NULL];
            const long long want_lines = (long long)(n->total_ok * bodies[s].records);
            const int clean = n->total_non200 == 0 && n->conn_errors == 0 && n->unanswered == 0 &&
                              (!o->verify || n->lines == want_lines);
            struct verdict v;
            int ok;

            verdict_of(runs[s][k][SRV_NWB], runs[s][k][SRV_NULL], o->repeat, n, z, &v);
            ok = v.measured && v.ratio >= want && clean;
            if (!ok) {
                fails++;
            }
            print_target(target, bodies[s].len, o->conns[k], n, z, &v,
                         ok ? "PASS" : (v.measured && v.ratio >= want ? "FAIL (errors)" : "FAIL"));
        }
    }
    if (o->repeat > 1) {
        printf("\nserver CPU per request, nwb-logserver / null server (median of the paired "
               "repetitions):");
        for (int s = 0; s < o->nsizes; s++) {
            for (int k = 0; k < o->nconns; k++) {
                char pairs[256];
                const double r = paired_ratio(runs[s][k][SRV_NWB], runs[s][k][SRV_NULL], o->repeat,
                                              cpu_per_request_us, pairs, sizeof(pairs));

                printf("%s %zu bytes x %d conns %.2fx", s + k > 0 ? ";" : "", bodies[s].len,
                       o->conns[k], r);
            }
        }
        printf(".\n");
    }
    for (int s = 0; s < o->nsizes; s++) {
        nwb_free(bodies[s].data);
    }
    return fails;
}

int main(int argc, char **argv)
{
    struct options o;
    uint64_t *lat;
    int fails = 0;
    int ingest_fails;

    if (parse_args(argc, argv, &o) != 0) {
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    lat = nwb_malloc(LAT_CAP * sizeof(*lat));
    if (lat == NULL) {
        fprintf(stderr, "bench_ingest: out of memory\n");
        return 1;
    }
    if (o.tokens_only || o.followers_only) {
        fails = o.tokens_only ? tokens_section(&o, lat) : followers_section(&o, lat);
        nwb_free(lat);
        return fails == 0 ? 0 : 1;
    }
    ingest_fails = ingest_section(&o, 0, lat);
    if (o.text) {
        ingest_fails += ingest_section(&o, 1, lat);
    }
    fails += ingest_fails;
    printf("\ningest targets: %s (%d failed)\n", ingest_fails == 0 ? "PASS" : "FAIL", ingest_fails);
    if (o.tokens > 0) {
        fails += tokens_section(&o, lat);
    }
    if (o.followers > 0) {
        fails += followers_section(&o, lat);
    }
    nwb_free(lat);
    return fails == 0 ? 0 : 1;
}
