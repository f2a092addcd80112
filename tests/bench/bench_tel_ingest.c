/* SPDX-License-Identifier: MIT */
/*
 * bench_tel_ingest.c - the cost of one telemetry upload as a run grows: the same ~100 KB,
 * 60-frame segment (nwb_tel_synth) POSTed N times (default 3,000) to one run of a real
 * nwb-logserver on port 0, over one keep-alive connection, each with the next seq (the
 * segment header's seq patched to it, as the recorder does, then zstd-compressed like the
 * uploader). Prints the median cost of uploads 1-10, 1,000-1,010 and the last 11, the server's
 * RSS (VmRSS/VmHWM from /proc/<pid>/status) after the first 10 uploads and at the end, and
 * beside them the cost of just decompressing and decoding that segment in-process (the
 * limit). Targets (docs/performance.md, "Telemetry ingest"): last group <= 1.3x the first,
 * RSS growth (VmHWM) <= 16 MiB.
 *
 * usage: bench_tel_ingest [--server-exe P] [--uploads N] [--keep]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zstd.h>

#include "bench_util.h"
#include "nwb/byte_order.h"
#include "nwb/telemetry_report.h"

#ifndef NWB_BENCH_SERVER_EXE
#define NWB_BENCH_SERVER_EXE "nwb-logserver"
#endif

#define UPLOADS_DEFAULT   3000u
#define UPLOADS_MIN       1011u /* the middle group is 1,000-1,010 */
#define GROUP             11u   /* uploads per group, "1,000-1,010" inclusive */
#define FIRST_GROUP       10u   /* uploads 1-10 */
#define SEGMENT_FRAMES    60u
#define SEGMENT_SCOPES    24u /* CPU scopes per frame: a ~100 KB segment */
#define ZSTD_LEVEL        3   /* the uploader's default */
#define LIMIT_REPS        200u
#define RATIO_TARGET      1.3
#define RSS_GROWTH_TARGET (16.0 * 1024 * 1024)
#define RESP_MAX          4096u

struct options {
    const char *server_exe;
    unsigned uploads;
    int keep;
};

/* One keep-alive connection and its read buffer. */
struct http {
    int fd;
    char buf[RESP_MAX];
    size_t have;
};

/* Read until the buffer holds a whole response (head and Content-Length body); returns the
 * status and leaves the body at buf (NUL-terminated), or -1. */
static int http_response(struct http *h)
{
    for (;;) {
        char *end;

        h->buf[h->have] = '\0';
        end = strstr(h->buf, "\r\n\r\n");
        if (end != NULL) {
            const char *cl = strcasestr(h->buf, "\r\nContent-Length:");
            const size_t head = (size_t)(end + 4 - h->buf);
            const size_t body = cl != NULL ? strtoul(cl + 17, NULL, 10) : 0;
            int status = 0;

            if (head + body >= sizeof(h->buf) || sscanf(h->buf, "HTTP/1.1 %d", &status) != 1) {
                return -1;
            }
            if (h->have >= head + body) {
                memmove(h->buf, h->buf + head, body);
                h->buf[body] = '\0';
                h->have = 0; /* one request at a time: nothing follows */
                return status;
            }
        }
        if (h->have + 1 >= sizeof(h->buf)) {
            return -1;
        }
        {
            const ssize_t n = recv(h->fd, h->buf + h->have, sizeof(h->buf) - 1 - h->have, 0);

            if (n <= 0) {
                return -1;
            }
            h->have += (size_t)n;
        }
    }
}

static int send_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n > 0) {
        const ssize_t w = send(fd, c, n, MSG_NOSIGNAL);

        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int post_upload(struct http *h, uint64_t seq, const void *body, size_t len)
{
    char head[512];
    const int n = snprintf(head, sizeof(head),
                           "POST /v1/telemetry HTTP/1.1\r\nHost: bench\r\n"
                           "X-NWB-Program: benchgame\r\nX-NWB-Run: tel1\r\nX-NWB-Seq: %llu\r\n"
                           "Content-Encoding: zstd\r\nContent-Length: %zu\r\n\r\n",
                           (unsigned long long)seq, len);

    if (send_all(h->fd, head, (size_t)n) != 0 || send_all(h->fd, body, len) != 0) {
        return -1;
    }
    return http_response(h);
}

/* VmRSS and VmHWM of @p pid in bytes; 0 on error. */
static void proc_rss(pid_t pid, double *rss, double *hwm)
{
    char path[64], line[256];
    FILE *f;

    *rss = *hwm = 0;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long long kb;

        if (sscanf(line, "VmRSS: %llu kB", &kb) == 1) {
            *rss = (double)kb * 1024;
        } else if (sscanf(line, "VmHWM: %llu kB", &kb) == 1) {
            *hwm = (double)kb * 1024;
        }
    }
    fclose(f);
}

static double mib(double b)
{
    return b / (1024.0 * 1024.0);
}

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

/* Median of @p n costs starting at upload @p first (1-based). */
static uint64_t group_median(const uint64_t *cost, unsigned first, unsigned n)
{
    uint64_t v[GROUP];

    memcpy(v, cost + first - 1, sizeof(v[0]) * n);
    nwb_bench_sort_u64(v, n);
    return nwb_bench_quantile(v, n, 0.5);
}

/* The limit: zstd-decompress and strictly decode the segment in-process; median ns. */
static uint64_t limit_cost(const uint8_t *z, size_t zlen, size_t raw_len)
{
    uint8_t *raw = malloc(raw_len);
    uint64_t v[LIMIT_REPS];
    ZSTD_DCtx *d = ZSTD_createDCtx();

    if (raw == NULL || d == NULL) {
        free(raw);
        ZSTD_freeDCtx(d);
        return 0;
    }
    for (unsigned i = 0; i < LIMIT_REPS; i++) {
        const uint64_t t0 = nwb_bench_now_ns();
        const size_t n = ZSTD_decompressDCtx(d, raw, raw_len, z, zlen);
        nwb_tel_decode_result_t res;

        if (ZSTD_isError(n) ||
            nwb_tel_stream_decode(raw, n, NWB_TEL_DECODE_SINGLE_SEGMENT, NULL, NULL, &res) != 0) {
            fprintf(stderr, "bench_tel_ingest: the segment does not decode\n");
            v[i] = 0;
            continue;
        }
        v[i] = nwb_bench_now_ns() - t0;
    }
    ZSTD_freeDCtx(d);
    free(raw);
    nwb_bench_sort_u64(v, LIMIT_REPS);
    return nwb_bench_quantile(v, LIMIT_REPS, 0.5);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_tel_ingest [--server-exe P] [--uploads N] [--keep]\n"
            "  --uploads N  uploads of the same segment to one run (%u..1000000; default %u)\n"
            "  --keep       keep the output directory (its path is printed)\n",
            UPLOADS_MIN, UPLOADS_DEFAULT);
}

static int parse_args(int argc, char **argv, struct options *o)
{
    o->server_exe = NWB_BENCH_SERVER_EXE;
    o->uploads = UPLOADS_DEFAULT;
    o->keep = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--server-exe") == 0 && v != NULL) {
            o->server_exe = v;
            i++;
        } else if (strcmp(a, "--uploads") == 0 && v != NULL) {
            const unsigned long n = strtoul(v, NULL, 10);

            if (n < UPLOADS_MIN || n > 1000000) {
                usage(stderr);
                return -1;
            }
            o->uploads = (unsigned)n;
            i++;
        } else if (strcmp(a, "--keep") == 0) {
            o->keep = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else {
            usage(stderr);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    nwb_tel_synth_config_t sc = NWB_TEL_SYNTH_CONFIG_INIT;
    struct options o;
    struct nwb_bench_proc proc;
    struct http h = {-1, {0}, 0};
    char dir[512], errbuf[512];
    nwb_buf_t seg;
    uint8_t *z;
    size_t zcap, zlen = 0, zsum = 0;
    uint64_t *cost;
    double rss10 = 0, hwm10 = 0, rss_end = 0, hwm_end = 0;
    uint64_t t_first, t_mid, t_last, t_limit;
    const uint64_t wall0 = nwb_bench_now_ns();
    unsigned refused = 0; /* the first upload not answered 200, or 0 */
    unsigned done;
    int failed = 0;

    if (parse_args(argc, argv, &o) != 0) {
        return 2;
    }
    sc.frames = SEGMENT_FRAMES;
    sc.frames_per_upload = 0; /* one segment */
    sc.scopes_per_frame = SEGMENT_SCOPES;
    nwb_buf_init(&seg, 64u << 20);
    if (nwb_tel_synth(&sc, &seg, NULL) != 0) {
        fprintf(stderr, "bench_tel_ingest: nwb_tel_synth failed\n");
        return 1;
    }
    zcap = ZSTD_compressBound(seg.len);
    z = malloc(zcap);
    cost = calloc(o.uploads, sizeof(*cost));
    if (z == NULL || cost == NULL || nwb_bench_tmpdir("telingest", dir, sizeof(dir)) != 0) {
        fprintf(stderr, "bench_tel_ingest: setup failed\n");
        return 1;
    }
    {
        static char a_port[] = "--port", a_zero[] = "0", a_out[] = "--out";
        char *const args[] = {(char *)(uintptr_t)o.server_exe, a_port, a_zero, a_out, dir, NULL};

        if (nwb_bench_proc_start(&proc, args, 10000, errbuf, sizeof(errbuf)) != 0) {
            fprintf(stderr, "bench_tel_ingest: %s\n", errbuf);
            return 1;
        }
    }
    h.fd = nwb_bench_connect_loopback(proc.port);
    if (h.fd < 0) {
        fprintf(stderr, "bench_tel_ingest: cannot connect to port %d\n", proc.port);
        nwb_bench_proc_stop(&proc, SIGTERM, 10000);
        return 1;
    }
    for (unsigned i = 1; i <= o.uploads; i++) {
        uint64_t t0;
        int status;

        /* What the recorder does: the header carries the upload's seq. Not timed. */
        nwb_le64_store(seg.data + 24, i);
        zlen = ZSTD_compress(z, zcap, seg.data, seg.len, ZSTD_LEVEL);
        if (ZSTD_isError(zlen)) {
            fprintf(stderr, "bench_tel_ingest: ZSTD_compress failed\n");
            failed = 1;
            break;
        }
        zsum += zlen;
        t0 = nwb_bench_now_ns();
        status = post_upload(&h, i, z, zlen);
        cost[i - 1] = nwb_bench_now_ns() - t0;
        if (status != 200) {
            /* The landed tree's cliff: report the groups reached, the refusal, and fail. */
            fprintf(stderr, "bench_tel_ingest: upload %u: status %d: %s\n", i, status, h.buf);
            refused = i;
            break;
        }
        if (i == FIRST_GROUP) {
            proc_rss(proc.pid, &rss10, &hwm10);
        }
    }
    proc_rss(proc.pid, &rss_end, &hwm_end);
    close(h.fd);
    if (failed) {
        nwb_bench_proc_stop(&proc, SIGTERM, 10000);
        return 1;
    }
    done = refused != 0 ? refused - 1 : o.uploads;
    if (done < UPLOADS_MIN) {
        nwb_bench_proc_stop(&proc, SIGTERM, 10000);
        return 1;
    }
    t_first = group_median(cost, 1, FIRST_GROUP);
    t_mid = group_median(cost, 1000, GROUP);
    t_last = group_median(cost, done - GROUP + 1, GROUP);
    t_limit = limit_cost(z, zlen, seg.len);

    printf("#### Telemetry ingest as a run grows (`bench_tel_ingest`)\n\n");
    printf("One run, %u uploads of the same %zu-byte segment (%u frames, %u CPU scopes a frame; "
           "%zu bytes zstd level %d on average), one keep-alive connection, seq 1..%u.\n\n",
           o.uploads, seg.len, SEGMENT_FRAMES, SEGMENT_SCOPES, zsum / o.uploads, ZSTD_LEVEL,
           o.uploads);
    printf("| uploads | median cost | vs uploads 1-10 |\n|---|---:|---:|\n");
    printf("| 1-%u | %.3f ms | 1.00x |\n", FIRST_GROUP, ms(t_first));
    printf("| 1,000-1,010 | %.3f ms | %.2fx |\n", ms(t_mid), (double)t_mid / (double)t_first);
    printf("| %u-%u | %.3f ms | %.2fx |\n", done - GROUP + 1, done, ms(t_last),
           (double)t_last / (double)t_first);
    printf("| the limit: decompress + decode the segment in-process | %.3f ms | %.2fx |\n\n",
           ms(t_limit), (double)t_limit / (double)t_first);
    printf("| server memory | after upload %u | after upload %u | growth |\n|---|---:|---:|---:|\n",
           FIRST_GROUP, done);
    printf("| VmRSS | %.1f MiB | %.1f MiB | %+.1f MiB |\n", mib(rss10), mib(rss_end),
           mib(rss_end - rss10));
    printf("| VmHWM (peak) | %.1f MiB | %.1f MiB | %+.1f MiB |\n\n", mib(hwm10), mib(hwm_end),
           mib(hwm_end - hwm10));
    printf("- wall time %.1f s, server CPU %.1f s\n", (double)(nwb_bench_now_ns() - wall0) / 1e9,
           nwb_bench_proc_cpu_s(proc.pid));
    {
        const double ratio = (double)t_last / (double)t_first;
        const double growth = hwm_end - hwm10;
        const int bad = (ratio > RATIO_TARGET) + (growth > RSS_GROWTH_TARGET) + (refused != 0);

        printf("- last group / first: %.2fx (target <= %.1fx): %s\n", ratio, RATIO_TARGET,
               ratio <= RATIO_TARGET ? "PASS" : "FAIL");
        printf("- peak RSS growth: %.1f MiB (target <= 16 MiB): %s\n", mib(growth),
               growth <= RSS_GROWTH_TARGET ? "PASS" : "FAIL");
        if (refused != 0) {
            printf("- upload %u was refused: %s: FAIL\n", refused, h.buf);
        }
        printf("\ntel_ingest targets: %s (%d failed)\n", bad == 0 ? "PASS" : "FAIL", bad);
    }
    nwb_bench_proc_stop(&proc, SIGTERM, 30000);
    if (o.keep) {
        printf("- output kept in %s\n", dir);
    } else {
        nwb_bench_rmtree(dir);
    }
    nwb_buf_cleanup(&seg);
    free(z);
    free(cost);
    return 0;
}
