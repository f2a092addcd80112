/* SPDX-License-Identifier: MIT */
/*
 * bench_tel_ingest.c - the cost of one telemetry upload as a run grows: the same ~100 KB,
 * 60-frame segment (nwb_tel_synth) POSTed N times (default 3,000) to one run of a real
 * nwb-logserver on port 0, over one keep-alive connection, each with the next seq (the
 * segment header's seq patched to it, as the recorder does, then zstd-compressed like the
 * uploader). Prints the median cost of uploads 1-10, 1,000-1,010 and the last 11, the server's
 * RSS (VmRSS/VmHWM from /proc/<pid>/status) after the first 10 uploads and at the end, and
 * beside them the cost of just decompressing and decoding that segment in-process (the
 * limit), and of decompressing and feeding it into a report state. At the end the server's
 * telemetry.json must equal the offline report of the stored stream. Targets
 * (docs/performance.md, "Telemetry ingest"): last group <= 1.3x the first, RSS growth (VmHWM)
 * <= 16 MiB, the report equal.
 *
 * --synth-hours H instead ingests a whole synthetic run (nwb_tel_synth_run, 60 frames an
 * upload, H hours at 60 Hz) and prints its time, the server's RSS, the stored bytes and
 * whether its report equals the offline one.
 *
 * --repeat N runs the same-segment benchmark N times (a fresh server each) and judges the
 * targets by the median over the runs (the shared machine is noisy).
 *
 * usage: bench_tel_ingest [--server-exe P] [--uploads N | --synth-hours H] [--repeat N] [--keep]
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
#include <dirent.h>
#include <sys/stat.h>

#include <zstd.h>

#include "bench_util.h"
#include "nwb/alloc.h"
#include "nwb/byte_order.h"
#include "nwb/file_io.h"
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

#define SYNTH_HOURS_MAX 24u
#define REPEAT_MAX      9u
#define SYNTH_HZ        60u

struct options {
    const char *server_exe;
    unsigned uploads;
    unsigned synth_hours; /* 0: the same-segment benchmark */
    unsigned repeat;      /* runs of the same-segment benchmark; the targets take the median */
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

/* The limit: zstd-decompress and strictly decode the segment in-process; and decompress and
 * feed it into a fresh report state (what the ingest does with it). Median ns of each. */
static void limit_cost(const uint8_t *z, size_t zlen, size_t raw_len, uint64_t *decode_ns,
                       uint64_t *feed_ns)
{
    uint8_t *raw = malloc(raw_len);
    uint64_t v[LIMIT_REPS];
    uint64_t w[LIMIT_REPS];
    ZSTD_DCtx *d = ZSTD_createDCtx();

    *decode_ns = *feed_ns = 0;
    if (raw == NULL || d == NULL) {
        free(raw);
        ZSTD_freeDCtx(d);
        return;
    }
    for (unsigned i = 0; i < LIMIT_REPS; i++) {
        nwb_tel_report_state_t *st = NULL;
        nwb_tel_decode_result_t res;
        nwb_tel_feed_result_t fr;
        uint64_t t0 = nwb_bench_now_ns();
        size_t n = ZSTD_decompressDCtx(d, raw, raw_len, z, zlen);

        v[i] = w[i] = 0;
        if (ZSTD_isError(n) ||
            nwb_tel_stream_decode(raw, n, NWB_TEL_DECODE_SINGLE_SEGMENT, NULL, NULL, &res) != 0) {
            fprintf(stderr, "bench_tel_ingest: the segment does not decode\n");
            continue;
        }
        v[i] = nwb_bench_now_ns() - t0;
        if (nwb_tel_report_state_create(&st) != 0) {
            continue;
        }
        t0 = nwb_bench_now_ns();
        n = ZSTD_decompressDCtx(d, raw, raw_len, z, zlen);
        if (!ZSTD_isError(n)) {
            (void)nwb_tel_report_state_feed(
                st, raw, n, NWB_TEL_FEED_ATOMIC | NWB_TEL_DECODE_SINGLE_SEGMENT, &fr);
        }
        w[i] = nwb_bench_now_ns() - t0;
        nwb_tel_report_state_destroy(st);
    }
    ZSTD_freeDCtx(d);
    free(raw);
    nwb_bench_sort_u64(v, LIMIT_REPS);
    nwb_bench_sort_u64(w, LIMIT_REPS);
    *decode_ns = nwb_bench_quantile(v, LIMIT_REPS, 0.5);
    *feed_ns = nwb_bench_quantile(w, LIMIT_REPS, 0.5);
}

/* The run's directory under @p out (the only one in runs/), into @p dir. 0 or -1. */
static int find_run_dir(const char *out, char *dir, size_t cap)
{
    char runs[600];
    const size_t need = strlen(out) + 6 + 256 + 1;
    DIR *d;
    struct dirent *e;
    int rc = -1;

    snprintf(runs, sizeof(runs), "%s/runs", out);
    d = opendir(runs);
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.' && need <= cap) {
            memcpy(dir, runs, strlen(runs));
            dir[strlen(runs)] = '/';
            memcpy(dir + strlen(runs) + 1, e->d_name, strlen(e->d_name) + 1);
            rc = 0;
            break;
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return rc;
}

/*
 * 1 when the run's telemetry.json is byte for byte the offline report of its stored stream
 * with its ingest log (what `nwb-telemetry report` writes), 0 when not, -1 on error. The run
 * has no name sidecar on either side. @p stored receives the stored stream's size.
 */
static int report_is_offline(const char run[700], uint64_t *stored)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    nwb_tel_ingest_summary_t ingest;
    nwb_tel_report_state_t *st = NULL;
    nwb_tel_file_reader_t *r = NULL;
    nwb_buf_t json;
    char path[1024];
    uint8_t *live = NULL;
    size_t live_len = 0;
    struct stat sb;
    int rc = -1;

    snprintf(path, sizeof(path), "%s/telemetry.nwbs.zst", run);
    *stored = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
    if (nwb_tel_report_state_create(&st) != 0 || nwb_tel_file_reader_open(path, &r) != 0 ||
        nwb_tel_report_state_feed_reader(st, r) != 0) {
        goto out;
    }
    snprintf(path, sizeof(path), "%s/telemetry.ingest.log", run);
    if (nwb_tel_ingest_log_load(path, &ingest) != 0) {
        goto out;
    }
    ro.ingest = &ingest;
    snprintf(path, sizeof(path), "%s/telemetry.json", run);
    if (nwb_tel_report_state_write(st, &ro, &json) != 0 ||
        nwb_file_read(path, NWB_TEL_REPORT_JSON_MAX, &live, &live_len) != 0) {
        goto out;
    }
    rc = live_len == json.len && memcmp(live, json.data, json.len) == 0;
out:
    nwb_free(live);
    nwb_buf_cleanup(&json);
    nwb_tel_file_reader_destroy(r);
    nwb_tel_report_state_destroy(st);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: bench_tel_ingest [--server-exe P] [--uploads N | --synth-hours H] [--repeat N]\n"
        "                        [--keep]\n"
        "  --uploads N      uploads of the same segment to one run (%u..1000000; default %u)\n"
        "  --synth-hours H  ingest a whole synthetic run of H hours at 60 Hz, 60 frames an\n"
        "                   upload (1..%u)\n"
        "  --repeat N       runs of the same-segment benchmark, targets on the medians (1..%u)\n"
        "  --keep           keep the output directory (its path is printed)\n",
        UPLOADS_MIN, UPLOADS_DEFAULT, SYNTH_HOURS_MAX, REPEAT_MAX);
}

/* A decimal in [lo, hi] into @p out: 0, or -1. */
static int parse_count(const char *v, unsigned long lo, unsigned long hi, unsigned *out)
{
    char *end;
    const unsigned long n = strtoul(v, &end, 10);

    if (*v < '0' || *v > '9' || *end != '\0' || n < lo || n > hi) {
        return -1;
    }
    *out = (unsigned)n;
    return 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
    o->server_exe = NWB_BENCH_SERVER_EXE;
    o->uploads = UPLOADS_DEFAULT;
    o->synth_hours = 0;
    o->repeat = 1;
    o->keep = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--server-exe") == 0 && v != NULL) {
            o->server_exe = v;
            i++;
        } else if (strcmp(a, "--uploads") == 0 && v != NULL) {
            if (parse_count(v, UPLOADS_MIN, 1000000, &o->uploads) != 0) {
                usage(stderr);
                return -1;
            }
            i++;
        } else if (strcmp(a, "--synth-hours") == 0 && v != NULL) {
            if (parse_count(v, 1, SYNTH_HOURS_MAX, &o->synth_hours) != 0) {
                usage(stderr);
                return -1;
            }
            i++;
        } else if (strcmp(a, "--repeat") == 0 && v != NULL) {
            if (parse_count(v, 1, REPEAT_MAX, &o->repeat) != 0) {
                usage(stderr);
                return -1;
            }
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

/* The server under test, its output root and one keep-alive connection. */
struct bench {
    struct nwb_bench_proc proc;
    struct http h;
    char dir[512];
};

static int bench_start(struct bench *b, const struct options *o)
{
    static char a_port[] = "--port", a_zero[] = "0", a_out[] = "--out";
    char errbuf[512];
    char *const args[] = {(char *)(uintptr_t)o->server_exe, a_port, a_zero, a_out, b->dir, NULL};

    b->h.fd = -1;
    b->h.have = 0;
    if (nwb_bench_tmpdir("telingest", b->dir, sizeof(b->dir)) != 0) {
        fprintf(stderr, "bench_tel_ingest: no temporary directory\n");
        return -1;
    }
    if (nwb_bench_proc_start(&b->proc, args, 10000, errbuf, sizeof(errbuf)) != 0) {
        fprintf(stderr, "bench_tel_ingest: %s\n", errbuf);
        return -1;
    }
    b->h.fd = nwb_bench_connect(b->proc.port, 30000);
    if (b->h.fd < 0) {
        fprintf(stderr, "bench_tel_ingest: cannot connect to port %d\n", b->proc.port);
        nwb_bench_proc_stop(&b->proc, SIGTERM, 10000);
        return -1;
    }
    return 0;
}

/* Stop the server (the report is written before each answer: nothing is pending), check
 * the report, remove the output unless --keep. */
static int bench_finish(struct bench *b, const struct options *o, uint64_t *stored)
{
    char run[700];
    int equal = -1;

    close(b->h.fd);
    nwb_bench_proc_stop(&b->proc, SIGTERM, 60000);
    if (find_run_dir(b->dir, run, sizeof(run)) == 0) {
        equal = report_is_offline(run, stored);
    }
    if (o->keep) {
        printf("- output kept in %s\n", b->dir);
    } else {
        nwb_bench_rmtree(b->dir);
    }
    return equal;
}

struct synth_post {
    struct bench *b;
    ZSTD_CCtx *cctx;
    uint8_t *z;
    size_t zcap;
    uint64_t seq;
    uint64_t zbytes;
    uint64_t raw_bytes;
    uint64_t *cost;
    size_t cost_cap;
    int status;
};

/* One segment of the synthetic run: compressed (not timed) and POSTed (timed). */
static int synth_segment(void *ctx, const uint8_t *data, size_t len)
{
    struct synth_post *sp = ctx;
    size_t zlen;
    uint64_t t0;

    if (ZSTD_compressBound(len) > sp->zcap) {
        free(sp->z);
        sp->zcap = ZSTD_compressBound(len);
        sp->z = malloc(sp->zcap);
        if (sp->z == NULL) {
            return -1;
        }
    }
    zlen = ZSTD_compressCCtx(sp->cctx, sp->z, sp->zcap, data, len, ZSTD_LEVEL);
    if (ZSTD_isError(zlen)) {
        return -1;
    }
    sp->seq++;
    t0 = nwb_bench_now_ns();
    sp->status = post_upload(&sp->b->h, sp->seq, sp->z, zlen);
    if (sp->seq <= sp->cost_cap) {
        sp->cost[sp->seq - 1] = nwb_bench_now_ns() - t0;
    }
    sp->zbytes += zlen;
    sp->raw_bytes += len;
    if (sp->status != 200) {
        fprintf(stderr, "bench_tel_ingest: upload %llu: status %d: %s\n",
                (unsigned long long)sp->seq, sp->status, sp->b->h.buf);
        return -1;
    }
    return 0;
}

static int run_synth(const struct options *o)
{
    nwb_tel_synth_config_t sc = NWB_TEL_SYNTH_CONFIG_INIT;
    struct synth_post sp;
    struct bench b;
    double rss = 0, hwm = 0;
    uint64_t stored = 0;
    uint64_t t0, wall;
    int equal;
    int rc;

    memset(&sp, 0, sizeof(sp));
    sc.frames = o->synth_hours * 3600u * SYNTH_HZ;
    sc.frames_per_upload = SEGMENT_FRAMES;
    sc.scopes_per_frame = SEGMENT_SCOPES;
    sp.cost_cap = sc.frames / SEGMENT_FRAMES + 1;
    sp.cost = calloc(sp.cost_cap, sizeof(*sp.cost));
    sp.cctx = ZSTD_createCCtx();
    if (sp.cost == NULL || sp.cctx == NULL || bench_start(&b, o) != 0) {
        return 1;
    }
    sp.b = &b;
    t0 = nwb_bench_now_ns();
    rc = nwb_tel_synth_run(&sc, synth_segment, &sp, NULL);
    wall = nwb_bench_now_ns() - t0;
    proc_rss(b.proc.pid, &rss, &hwm);
    printf("#### A whole synthetic run (`bench_tel_ingest --synth-hours %u`)\n\n", o->synth_hours);
    printf("%u frames at 60 Hz (%u h), %llu uploads of %u frames (%u CPU scopes a frame), "
           "%.1f MB raw, %.1f MB zstd level %d as uploaded; one keep-alive connection.\n\n",
           sc.frames, o->synth_hours, (unsigned long long)sp.seq, SEGMENT_FRAMES, SEGMENT_SCOPES,
           (double)sp.raw_bytes / 1e6, (double)sp.zbytes / 1e6, ZSTD_LEVEL);
    if (rc == 0 && sp.seq > 2 * GROUP) {
        const unsigned n = (unsigned)sp.seq;

        printf("| measure | result |\n|---|---:|\n");
        printf("| wall time, generation and compression included | %.1f s |\n", (double)wall / 1e9);
        printf("| server CPU | %.1f s |\n", nwb_bench_proc_cpu_s(b.proc.pid));
        printf("| median upload cost, uploads 1-%u | %.3f ms |\n", FIRST_GROUP,
               ms(group_median(sp.cost, 1, FIRST_GROUP)));
        printf("| median upload cost, uploads %u-%u | %.3f ms |\n", n / 2, n / 2 + GROUP - 1,
               ms(group_median(sp.cost, n / 2, GROUP)));
        printf("| median upload cost, uploads %u-%u | %.3f ms |\n", n - GROUP + 1, n,
               ms(group_median(sp.cost, n - GROUP + 1, GROUP)));
        printf("| server VmRSS / VmHWM at the end | %.1f / %.1f MiB |\n", mib(rss), mib(hwm));
    }
    equal = bench_finish(&b, o, &stored);
    printf("| stored (telemetry.nwbs.zst) | %.1f MB |\n", (double)stored / 1e6);
    printf("| telemetry.json equals the offline report | %s |\n\n", equal == 1 ? "yes" : "NO");
    printf("tel_ingest synth targets: %s (%d failed)\n", rc == 0 && equal == 1 ? "PASS" : "FAIL",
           (rc != 0) + (equal != 1));
    ZSTD_freeCCtx(sp.cctx);
    free(sp.z);
    free(sp.cost);
    return rc == 0 && equal == 1 ? 0 : 1;
}

/* One run of the same-segment benchmark. */
struct same_result {
    uint64_t t_first, t_mid, t_last;
    double rss10, hwm10, rss_end, hwm_end;
    double cpu, wall_s;
    uint64_t stored;
    size_t zsum;
    unsigned done;
    unsigned refused; /* the first upload not answered 200, or 0 */
    int equal;
    char refusal[256];
};

static double same_ratio(const struct same_result *r)
{
    return (double)r->t_last / (double)r->t_first;
}

static int measure_same(const struct options *o, const nwb_buf_t *seg_in, uint8_t *z, size_t zcap,
                        uint64_t *cost, struct same_result *r)
{
    nwb_buf_t seg;
    struct bench b;
    const uint64_t wall0 = nwb_bench_now_ns();

    memset(r, 0, sizeof(*r));
    nwb_buf_init(&seg, 64u << 20);
    if (nwb_buf_append(&seg, seg_in->data, seg_in->len) != 0 || bench_start(&b, o) != 0) {
        nwb_buf_cleanup(&seg);
        return -1;
    }
    for (unsigned i = 1; i <= o->uploads; i++) {
        uint64_t t0;
        size_t zlen;
        int status;

        /* What the recorder does: the header carries the upload's seq. Not timed. */
        nwb_le64_store(seg.data + 24, i);
        zlen = ZSTD_compress(z, zcap, seg.data, seg.len, ZSTD_LEVEL);
        if (ZSTD_isError(zlen)) {
            fprintf(stderr, "bench_tel_ingest: ZSTD_compress failed\n");
            break;
        }
        r->zsum += zlen;
        t0 = nwb_bench_now_ns();
        status = post_upload(&b.h, i, z, zlen);
        cost[i - 1] = nwb_bench_now_ns() - t0;
        if (status != 200) {
            /* The landed tree's cliff: report the groups reached, the refusal, and fail. */
            snprintf(r->refusal, sizeof(r->refusal), "status %d: %.200s", status, b.h.buf);
            r->refused = i;
            break;
        }
        if (i == FIRST_GROUP) {
            proc_rss(b.proc.pid, &r->rss10, &r->hwm10);
        }
    }
    proc_rss(b.proc.pid, &r->rss_end, &r->hwm_end);
    r->cpu = nwb_bench_proc_cpu_s(b.proc.pid);
    r->done = r->refused != 0 ? r->refused - 1 : o->uploads;
    r->equal = bench_finish(&b, o, &r->stored);
    r->wall_s = (double)(nwb_bench_now_ns() - wall0) / 1e9;
    nwb_buf_cleanup(&seg);
    if (r->done < UPLOADS_MIN) {
        return -1;
    }
    r->t_first = group_median(cost, 1, FIRST_GROUP);
    r->t_mid = group_median(cost, 1000, GROUP);
    r->t_last = group_median(cost, r->done - GROUP + 1, GROUP);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a;
    const double y = *(const double *)b;

    return (x > y) - (x < y);
}

static int run_same_segment(const struct options *o)
{
    nwb_tel_synth_config_t sc = NWB_TEL_SYNTH_CONFIG_INIT;
    struct same_result runs[REPEAT_MAX];
    double ratios[REPEAT_MAX];
    double growths[REPEAT_MAX];
    const struct same_result *r = NULL;
    nwb_buf_t seg;
    uint8_t *z;
    size_t zcap, zlen;
    uint64_t *cost;
    uint64_t t_decode, t_feed;
    double ratio, growth;
    int equal = 1;
    unsigned refused = 0;
    int bad;

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
    cost = calloc(o->uploads, sizeof(*cost));
    if (z == NULL || cost == NULL) {
        return 1;
    }
    for (unsigned k = 0; k < o->repeat; k++) {
        if (measure_same(o, &seg, z, zcap, cost, &runs[k]) != 0) {
            return 1;
        }
        ratios[k] = same_ratio(&runs[k]);
        growths[k] = runs[k].hwm_end - runs[k].hwm10;
        equal &= runs[k].equal == 1;
        refused = refused != 0 ? refused : runs[k].refused;
    }
    /* The table shows the run whose ratio is the median; the targets take the medians. */
    {
        double sorted[REPEAT_MAX];

        memcpy(sorted, ratios, sizeof(ratios[0]) * o->repeat);
        qsort(sorted, o->repeat, sizeof(sorted[0]), cmp_double);
        ratio = sorted[o->repeat / 2];
        for (unsigned k = 0; k < o->repeat && r == NULL; k++) {
            r = ratios[k] == ratio ? &runs[k] : NULL;
        }
        memcpy(sorted, growths, sizeof(growths[0]) * o->repeat);
        qsort(sorted, o->repeat, sizeof(sorted[0]), cmp_double);
        growth = sorted[o->repeat / 2];
    }
    nwb_le64_store(seg.data + 24, 1);
    zlen = ZSTD_compress(z, zcap, seg.data, seg.len, ZSTD_LEVEL);
    limit_cost(z, zlen, seg.len, &t_decode, &t_feed);

    printf("#### Telemetry ingest as a run grows (`bench_tel_ingest`)\n\n");
    printf("One run, %u uploads of the same %zu-byte segment (%u frames, %u CPU scopes a frame; "
           "%zu bytes zstd level %d on average), one keep-alive connection, seq 1..%u",
           o->uploads, seg.len, SEGMENT_FRAMES, SEGMENT_SCOPES, r->zsum / o->uploads, ZSTD_LEVEL,
           o->uploads);
    if (o->repeat > 1) {
        printf("; %u runs, each with a fresh server, the one with the median ratio shown",
               o->repeat);
    }
    printf(".\n\n| uploads | median cost | vs uploads 1-10 |\n|---|---:|---:|\n");
    printf("| 1-%u | %.3f ms | 1.00x |\n", FIRST_GROUP, ms(r->t_first));
    printf("| 1,000-1,010 | %.3f ms | %.2fx |\n", ms(r->t_mid),
           (double)r->t_mid / (double)r->t_first);
    printf("| %u-%u | %.3f ms | %.2fx |\n", r->done - GROUP + 1, r->done, ms(r->t_last),
           same_ratio(r));
    printf("| the limit: decompress + decode the segment in-process | %.3f ms | %.2fx |\n",
           ms(t_decode), (double)t_decode / (double)r->t_first);
    printf("| decompress + feed a report state in-process | %.3f ms | %.2fx |\n\n", ms(t_feed),
           (double)t_feed / (double)r->t_first);
    printf("| server memory | after upload %u | after upload %u | growth |\n|---|---:|---:|---:|\n",
           FIRST_GROUP, r->done);
    printf("| VmRSS | %.1f MiB | %.1f MiB | %+.1f MiB |\n", mib(r->rss10), mib(r->rss_end),
           mib(r->rss_end - r->rss10));
    printf("| VmHWM (peak) | %.1f MiB | %.1f MiB | %+.1f MiB |\n\n", mib(r->hwm10), mib(r->hwm_end),
           mib(r->hwm_end - r->hwm10));
    printf("- wall time %.1f s, server CPU %.1f s, stored %.1f MB\n", r->wall_s, r->cpu,
           (double)r->stored / 1e6);
    if (o->repeat > 1) {
        printf("- per run, last group / first:");
        for (unsigned k = 0; k < o->repeat; k++) {
            printf(" %.2fx", ratios[k]);
        }
        printf("; peak RSS growth:");
        for (unsigned k = 0; k < o->repeat; k++) {
            printf(" %.1f", mib(growths[k]));
        }
        printf(" MiB\n");
    }
    bad = (ratio > RATIO_TARGET) + (growth > RSS_GROWTH_TARGET) + (refused != 0) + !equal;
    printf("- last group / first%s: %.2fx (target <= %.1fx): %s\n", o->repeat > 1 ? ", median" : "",
           ratio, RATIO_TARGET, ratio <= RATIO_TARGET ? "PASS" : "FAIL");
    printf("- peak RSS growth%s: %.1f MiB (target <= 16 MiB): %s\n",
           o->repeat > 1 ? ", median" : "", mib(growth),
           growth <= RSS_GROWTH_TARGET ? "PASS" : "FAIL");
    printf("- telemetry.json equals the offline report of the stored stream: %s\n",
           equal ? "PASS" : "FAIL");
    for (unsigned k = 0; k < o->repeat; k++) {
        if (runs[k].refused != 0) {
            printf("- run %u: upload %u was refused: %s: FAIL\n", k + 1, runs[k].refused,
                   runs[k].refusal);
        }
    }
    printf("\ntel_ingest targets: %s (%d failed)\n", bad == 0 ? "PASS" : "FAIL", bad);
    nwb_buf_cleanup(&seg);
    free(z);
    free(cost);
    return 0;
}

int main(int argc, char **argv)
{
    struct options o;

    if (parse_args(argc, argv, &o) != 0) {
        return 2;
    }
    return o.synth_hours > 0 ? run_synth(&o) : run_same_segment(&o);
}
