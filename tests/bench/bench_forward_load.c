/* SPDX-License-Identifier: MIT */
/*
 * bench_forward_load.c - bench_forward's load generator (bench_forward_load.h): one thread per
 * keep-alive connection, a blocking POST /v1/log and its answer at a time, paced by absolute
 * deadlines when a record rate is asked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/log_batch.h"
#include "nwb/safe_name.h"

#include "bench_forward_load.h"
#include "bench_util.h"

/* Bytes of one answer's head and body kept (the server answers a few hundred). */
#define ANSWER_MAX 8192
/* Send and receive timeout of each connection, ms. */
#define IO_TIMEOUT_MS 30000

int nwb_bench_fwd_body_build(struct nwb_bench_fwd_body *b, size_t target)
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
        char msg[160];
        nwb_log_record_t rec;
        const int len = snprintf(
            msg, sizeof(msg), "frame %6u took %7.3f ms on render; draws=%4u tris=%7u culled=%5u ok",
            1000 + n, 16.0 + (double)(n % 97) * 0.071, 1200 + n % 800, 850000 + n * 37 % 90000,
            3000 + n % 4000);

        memset(&rec, 0, sizeof(rec));
        rec.time_ns = t0 + (uint64_t)n * 16666667u;
        rec.thread_id = 4242 + n % 4;
        rec.line = 100 + n % 900;
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
    return 0;
}

void nwb_bench_fwd_body_free(struct nwb_bench_fwd_body *b)
{
    nwb_free(b->data);
    b->data = NULL;
}

struct worker {
    pthread_t thread;
    const struct nwb_bench_fwd_load *l;
    uint64_t start_ns, end_ns; /* end_ns 0: no time bound */
    uint64_t budget;           /* requests this connection sends; 0: no bound */
    uint64_t interval_ns;      /* between this connection's requests; 0: unpaced */
    uint64_t ok, non200, errors, last_ns;
    char error[160];
};

/* Read one answer: its status, or -1. */
static int read_answer(int fd)
{
    char buf[ANSWER_MAX + 1];
    size_t used = 0;
    const char *end = NULL;
    long long length = 0;
    int status = -1;

    while (end == NULL) {
        const ssize_t n = read(fd, buf + used, ANSWER_MAX - used);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        used += (size_t)n;
        buf[used] = '\0';
        end = strstr(buf, "\r\n\r\n");
        if (end == NULL && used == ANSWER_MAX) {
            return -1;
        }
    }
    if (sscanf(buf, "HTTP/1.%*c %d", &status) != 1) {
        return -1;
    }
    for (const char *p = strstr(buf, "\r\n"); p != NULL && p < end; p = strstr(p + 2, "\r\n")) {
        if (strncasecmp(p + 2, "Content-Length:", 15) == 0) {
            length = strtoll(p + 17, NULL, 10);
        }
    }
    {
        size_t have = used - (size_t)(end + 4 - buf);

        while ((long long)have < length) {
            char sink[ANSWER_MAX];
            const ssize_t n = read(fd, sink, sizeof(sink));

            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                return -1;
            }
            have += (size_t)n;
        }
    }
    return status;
}

int nwb_bench_fwd_post(int fd, int port, const char *program, const char *run, uint64_t seq,
                       const struct nwb_bench_fwd_body *b)
{
    char hdr[512];
    struct iovec iov[2];
    int status;

    iov[0].iov_base = hdr;
    iov[0].iov_len = (size_t)snprintf(hdr, sizeof(hdr),
                                      "POST /v1/log HTTP/1.1\r\n"
                                      "Host: 127.0.0.1:%d\r\n"
                                      "Content-Type: " NWB_LOG_BATCH_CONTENT_TYPE "\r\n"
                                      "Content-Length: %zu\r\n"
                                      "X-NWB-Program: %s\r\n"
                                      "X-NWB-Run: %s\r\n"
                                      "X-NWB-Seq: %llu\r\n"
                                      "\r\n",
                                      port, b->len, program, run, (unsigned long long)seq);
    iov[1].iov_base = b->data;
    iov[1].iov_len = b->len;
    {
        size_t left = iov[0].iov_len + iov[1].iov_len;
        int vi = 0;

        while (left > 0) {
            const ssize_t n = writev(fd, iov + vi, 2 - vi);

            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                break;
            }
            left -= (size_t)n;
            for (size_t done = (size_t)n; done > 0 && vi < 2;) {
                const size_t step = done < iov[vi].iov_len ? done : iov[vi].iov_len;

                iov[vi].iov_base = (char *)iov[vi].iov_base + step;
                iov[vi].iov_len -= step;
                done -= step;
                if (iov[vi].iov_len == 0) {
                    vi++;
                }
            }
        }
        status = left == 0 ? read_answer(fd) : -1;
    }
    return status;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    const struct nwb_bench_fwd_load *l = w->l;
    char run[17];
    uint64_t seq = 1;
    int fd = nwb_bench_connect(l->port, IO_TIMEOUT_MS);

    nwb_run_id_generate(run);
    for (uint64_t i = 0; fd >= 0 && (w->budget == 0 || i < w->budget); i++) {
        int status;
        const uint64_t now = nwb_bench_now_ns();

        if (w->end_ns != 0 && now >= w->end_ns) {
            break;
        }
        if (w->interval_ns != 0) {
            const uint64_t due = w->start_ns + i * w->interval_ns;
            struct timespec ts;

            if (w->end_ns != 0 && due >= w->end_ns) {
                break;
            }
            ts.tv_sec = (time_t)(due / 1000000000u);
            ts.tv_nsec = (long)(due % 1000000000u);
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
            }
        }
        status = nwb_bench_fwd_post(fd, l->port, l->program, run, seq++, l->body);
        if (status == 200) {
            w->ok++;
        } else if (status > 0) {
            w->non200++;
        } else {
            w->errors++;
            snprintf(w->error, sizeof(w->error), "connection lost: %s", strerror(errno));
            close(fd);
            fd = nwb_bench_connect(l->port, IO_TIMEOUT_MS);
        }
        w->last_ns = nwb_bench_now_ns();
    }
    if (fd >= 0) {
        close(fd);
    } else if (w->error[0] == '\0') {
        snprintf(w->error, sizeof(w->error), "cannot connect to 127.0.0.1:%d", l->port);
    }
    return NULL;
}

int nwb_bench_fwd_load_run(const struct nwb_bench_fwd_load *l, struct nwb_bench_fwd_load_result *r)
{
    struct worker w[NWB_BENCH_FWD_CONNS_MAX];
    const int n = l->conns < 1                         ? 1
                  : l->conns > NWB_BENCH_FWD_CONNS_MAX ? NWB_BENCH_FWD_CONNS_MAX
                                                       : l->conns;
    const uint64_t start = nwb_bench_now_ns();
    uint64_t last = start;
    int started = 0;

    memset(r, 0, sizeof(*r));
    memset(w, 0, sizeof(w));
    for (int i = 0; i < n; i++) {
        w[i].l = l;
        w[i].start_ns = start;
        w[i].end_ns = l->duration_s > 0 ? start + (uint64_t)(l->duration_s * 1e9) : 0;
        if (l->max_records > 0) {
            const uint64_t reqs = (l->max_records + l->body->records - 1) / l->body->records;

            w[i].budget = reqs / (uint64_t)n + ((uint64_t)i < reqs % (uint64_t)n);
            if (w[i].budget == 0) {
                continue;
            }
        }
        if (l->records_per_s > 0) {
            w[i].interval_ns =
                (uint64_t)(1e9 * (double)l->body->records * (double)n / l->records_per_s);
        }
        if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]) == 0) {
            started |= 1;
        } else {
            w[i].l = NULL;
        }
    }
    for (int i = 0; i < n; i++) {
        if (w[i].l == NULL || (l->max_records > 0 && w[i].budget == 0)) {
            continue;
        }
        pthread_join(w[i].thread, NULL);
        r->ok += w[i].ok;
        r->non200 += w[i].non200;
        r->errors += w[i].errors;
        if (w[i].last_ns > last) {
            last = w[i].last_ns;
        }
        if (r->error[0] == '\0' && w[i].error[0] != '\0') {
            snprintf(r->error, sizeof(r->error), "%s", w[i].error);
        }
    }
    r->records = r->ok * l->body->records;
    r->window_s = (double)(last - start) / 1e9;
    return started && r->ok > 0 ? 0 : -1;
}
