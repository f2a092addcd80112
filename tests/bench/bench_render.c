/* SPDX-License-Identifier: MIT */
/*
 * bench_render.c - the log worker's CPU cost per record, alone: POST /v1/log
 * bodies (binary batches like bench_ingest's) rendered into log.txt lines by
 * the server's own renderer (server/src/log_render.c, common/src/log_line.c),
 * without a name table and with one that decodes every #token, beside the
 * limit of copying the same output bytes with memcpy. No sockets, no files,
 * no threads: the figure the ingest benchmark cannot resolve on a noisy
 * two-core machine. The three peers alternate within every round, so a
 * machine that changes speed changes them alike; medians over the rounds are
 * printed. Run by scripts/bench (--only render); docs/performance.md.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nwb/alloc.h"
#include "nwb/log.h"
#include "nwb/log_batch.h"
#include "nwb/name.h"
#include "nwb/namesym.h"

#include "server_int.h"

#define BODIES     16 /* per size, rotated: more than fits in L2 at 64 KiB, like 16 connections */
#define MAX_ROUNDS 101
#define MAX_SIZES  4
#define PROGRAM    "bench-render"

enum { PEER_MEMCPY, PEER_PLAIN, PEER_NAMES, PEER_COUNT };

static const char *const peer_name[PEER_COUNT] = {"memcpy of the output", "render, no names",
                                                  "render + decode"};

struct body_set {
    uint8_t *body[BODIES];
    size_t len[BODIES];
    unsigned records; /* per body (the last body's count; all are within one) */
    unsigned long long total_records;
    size_t out_bytes; /* rendered bytes of all BODIES without names */
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Bodies of ~@p size bytes: bench_ingest's messages with @p tokens #tokens each. */
static int make_bodies(struct body_set *bs, size_t size, const nwb_name_t *hashes, unsigned names,
                       unsigned tokens)
{
    static const char *const files[] = {"engine/render/frame.c", "engine/audio/mixer.c",
                                        "game/ai/planner.c", "tools/asset/cook.c"};
    unsigned k = 0;

    memset(bs, 0, sizeof(*bs));
    for (int j = 0; j < BODIES; j++) {
        uint8_t *p = malloc(size);
        size_t off = NWB_LOG_BATCH_HEADER_SIZE;
        unsigned n = 0;

        if (p == NULL) {
            return -1;
        }
        nwb_log_batch_header_write(p);
        for (;;) {
            char msg[512];
            int ml = snprintf(msg, sizeof(msg), "frame %06u took %7.3f ms on render; draws=%u ok",
                              k, 16.071 + (k % 100) * 0.01, k % 977);
            nwb_log_record_t r;

            for (unsigned t = 0; t < tokens; t++) {
                char tok[NWB_NAME_TOKEN_SIZE];

                nwb_name_token(hashes[(k * 2654435761u + t) % names], tok);
                ml += snprintf(msg + ml, sizeof(msg) - (size_t)ml, " mesh=%s", tok);
            }
            memset(&r, 0, sizeof(r));
            r.time_ns = 1764590000000000000ull + (uint64_t)k * 1000u;
            r.level = (uint8_t)(k % 7 == 0 ? NWB_LOG_WARNING : NWB_LOG_INFO);
            r.thread_id = 1000u + (unsigned)j % 4u;
            r.file = files[k % 4];
            r.file_len = (uint32_t)strlen(r.file);
            r.line = 100u + k % 300u;
            r.msg = msg;
            r.msg_len = (uint32_t)ml;
            if (off + nwb_log_record_wire_size(r.file_len, r.msg_len) > size) {
                break;
            }
            off += nwb_log_record_encode(p + off, &r);
            n++;
            k++;
        }
        nwb_log_batch_header_finish(p, n, (uint32_t)(off - NWB_LOG_BATCH_HEADER_SIZE));
        if (nwb_log_batch_validate(p, off, NULL, NULL) != 0) {
            fprintf(stderr, "bench_render: built an invalid batch\n");
            free(p);
            return -1;
        }
        bs->body[j] = p;
        bs->len[j] = off;
        bs->records = n;
        bs->total_records += n;
    }
    return 0;
}

/* Render every body once; returns the output bytes, adds records and decoded tokens. */
static size_t render_all(const struct body_set *bs, const nwb_namesym_table_t *names, char *buf,
                         unsigned long long *records, unsigned long long *decoded)
{
    size_t total = 0;

    for (int j = 0; j < BODIES; j++) {
        struct nwb__rec_iter it;
        struct nwb__render rd;
        int end = 0;

        nwb__rec_iter_batch(&it, bs->body[j], bs->len[j]);
        nwb__render_init(&rd, PROGRAM, sizeof(PROGRAM) - 1);
        nwb__render_set_names(&rd, names);
        while (!end) {
            size_t len = 0;

            if (nwb__render_fill(&rd, &it, buf, NWB__RENDER_BUF_SIZE, &len, &end) != 0) {
                fprintf(stderr, "bench_render: a body failed to render\n");
                exit(1);
            }
            total += len;
        }
        *records += rd.records;
        *decoded += rd.decoded;
    }
    return total;
}

/* One timed measurement of @p peer for about @p seconds: nanoseconds per record. */
static double measure(int peer, const struct body_set *bs, const nwb_namesym_table_t *names,
                      char *buf, char *copy, double seconds, unsigned long long *decoded)
{
    unsigned long long records = 0;
    const double t0 = now_s();
    double t;

    do {
        if (peer == PEER_MEMCPY) {
            /* The output of one pass over the bodies, copied in body-sized pieces. */
            size_t left = bs->out_bytes;

            while (left > 0) {
                const size_t n = left < NWB__RENDER_BUF_SIZE ? left : NWB__RENDER_BUF_SIZE;

                memcpy(copy, buf, n);
                __asm__ __volatile__("" ::"r"(copy) : "memory");
                left -= n;
            }
            records += bs->total_records;
        } else {
            (void)render_all(bs, peer == PEER_NAMES ? names : NULL, buf, &records, decoded);
        }
        t = now_s() - t0;
    } while (t < seconds);
    return t * 1e9 / (double)records;
}

static int parse_list(const char *s, size_t *out, int max)
{
    int n = 0;

    while (*s != '\0' && n < max) {
        char *end;
        unsigned long v = strtoul(s, &end, 10);

        if (end == s || v < 512 || v > (8u << 20)) {
            return -1;
        }
        out[n++] = v;
        s = *end == ',' ? end + 1 : end;
    }
    return *s == '\0' ? n : -1;
}

static void usage(void)
{
    printf("usage: bench_render [options]\n"
           "  --sizes LIST   body sizes in bytes (default 4096,65536)\n"
           "  --names N      names in the table, cycled through (default 4096; 16..1000000)\n"
           "  --tokens N     #tokens per message (default 1; 1..8)\n"
           "  --rounds N     rounds, each measuring all three peers (default 21; 1..%d)\n"
           "  --ms N         milliseconds per peer per round (default 100)\n",
           MAX_ROUNDS);
}

int main(int argc, char **argv)
{
    size_t sizes[MAX_SIZES] = {4096, 65536};
    int nsizes = 2, rounds = 21;
    unsigned names = 4096, tokens = 1;
    double seconds = 0.1;
    nwb_namesym_builder_t b;
    nwb_namesym_table_t *table = NULL;
    nwb_namesym_view_t view;
    nwb_name_t *hashes;
    uint8_t *sidecar = NULL;
    size_t sidecar_len = 0;
    char err[256];
    char *buf, *copy;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage();
            return 0;
        }
        if (v == NULL) {
            fprintf(stderr, "bench_render: %s needs a value (see --help)\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--sizes") == 0) {
            nsizes = parse_list(v, sizes, MAX_SIZES);
            if (nsizes <= 0) {
                fprintf(stderr, "bench_render: --sizes: up to %d sizes of 512..8388608\n",
                        MAX_SIZES);
                return 2;
            }
        } else if (strcmp(a, "--names") == 0) {
            names = (unsigned)strtoul(v, NULL, 10);
            if (names < 16 || names > 1000000) {
                fprintf(stderr, "bench_render: --names must be 16..1000000\n");
                return 2;
            }
        } else if (strcmp(a, "--tokens") == 0) {
            tokens = (unsigned)strtoul(v, NULL, 10);
            if (tokens < 1 || tokens > 8) {
                fprintf(stderr, "bench_render: --tokens must be 1..8\n");
                return 2;
            }
        } else if (strcmp(a, "--rounds") == 0) {
            rounds = atoi(v);
            if (rounds < 1 || rounds > MAX_ROUNDS) {
                fprintf(stderr, "bench_render: --rounds must be 1..%d\n", MAX_ROUNDS);
                return 2;
            }
        } else if (strcmp(a, "--ms") == 0) {
            seconds = atof(v) / 1000.0;
            if (seconds < 0.001 || seconds > 10) {
                fprintf(stderr, "bench_render: --ms must be 1..10000\n");
                return 2;
            }
        } else {
            fprintf(stderr, "bench_render: unknown option %s (see --help)\n", a);
            return 2;
        }
    }

    /* The names: bench_ingest's, asset/mesh/rock_NNNN.nwbmesh, through a real sidecar. */
    hashes = malloc(names * sizeof(*hashes));
    if (hashes == NULL) {
        return 1;
    }
    nwb_namesym_builder_init(&b);
    for (unsigned i = 0; i < names; i++) {
        char s[64];
        const int n = snprintf(s, sizeof(s), "asset/mesh/rock_%04u.nwbmesh", i);

        hashes[i] = nwb_name_make_n(s, (size_t)n);
        if (nwb_namesym_builder_add(&b, s, (size_t)n) != 0) {
            fprintf(stderr, "bench_render: cannot add name %u\n", i);
            return 1;
        }
    }
    if (nwb_namesym_builder_serialize(&b, "bench-render", &sidecar, &sidecar_len, err,
                                      sizeof(err)) != 0 ||
        nwb_namesym_view_open(&view, sidecar, sidecar_len, NULL, NULL) != 0 ||
        nwb_namesym_table_create(&table) != 0 ||
        nwb_namesym_table_add(table, &view, "bench-render", NULL, NULL) != (long)names) {
        fprintf(stderr, "bench_render: cannot build the name table\n");
        return 1;
    }
    nwb_namesym_builder_cleanup(&b);

    buf = malloc(NWB__RENDER_BUF_SIZE);
    copy = malloc(NWB__RENDER_BUF_SIZE);
    if (buf == NULL || copy == NULL) {
        return 1;
    }

    printf("#### Render cost (the log worker's CPU per record)\n\n");
    printf("Bodies: %d binary batches per size, rotated, of ~100-byte messages with %u `#token` "
           "each, %u names in the table (every token known). %d rounds; in each, every peer runs "
           "%.0f ms over the bodies, the peers alternating. Medians over the rounds.\n\n",
           BODIES, tokens, names, rounds, seconds * 1000);
    printf("| body | records/body | peer | ns/record | output MB/s | vs render, no names |\n");
    printf("|---|---|---|---|---|---|\n");
    for (int si = 0; si < nsizes; si++) {
        struct body_set bs;
        double ns[PEER_COUNT][MAX_ROUNDS];
        double ratio[MAX_ROUNDS];
        double med[PEER_COUNT];
        unsigned long long recs = 0, dec = 0, decoded = 0;

        if (make_bodies(&bs, sizes[si], hashes, names, tokens) != 0) {
            return 1;
        }
        bs.out_bytes = render_all(&bs, NULL, buf, &recs, &dec);
        if (recs != bs.total_records || dec != 0) {
            fprintf(stderr, "bench_render: rendered %llu of %llu records\n", recs,
                    bs.total_records);
            return 1;
        }
        recs = 0;
        (void)render_all(&bs, table, buf, &recs, &dec);
        if (dec != bs.total_records * tokens) {
            fprintf(stderr, "bench_render: decoded %llu tokens, expected %llu\n", dec,
                    bs.total_records * tokens);
            return 1;
        }
        /* Warm-up: one unmeasured round. */
        for (int p = 0; p < PEER_COUNT; p++) {
            (void)measure(p, &bs, table, buf, copy, seconds, &decoded);
        }
        for (int r = 0; r < rounds; r++) {
            for (int p = 0; p < PEER_COUNT; p++) {
                /* Rotate the order, so no peer always follows the same one. */
                const int q = (p + r) % PEER_COUNT;

                ns[q][r] = measure(q, &bs, table, buf, copy, seconds, &decoded);
            }
            ratio[r] = ns[PEER_PLAIN][r] / ns[PEER_NAMES][r];
        }
        for (int p = 0; p < PEER_COUNT; p++) {
            med[p] = median(ns[p], rounds);
        }
        for (int p = 0; p < PEER_COUNT; p++) {
            const double bytes_per_record = (double)bs.out_bytes / (double)bs.total_records;

            printf("| %zu | %u | %s | %.1f | %.0f | ", sizes[si], bs.records, peer_name[p], med[p],
                   bytes_per_record / med[p] * 1e3);
            if (p == PEER_NAMES) {
                printf("%.1f%% (median of the per-round ratios)", 100.0 * median(ratio, rounds));
            } else if (p == PEER_MEMCPY) {
                printf("%.1f%%", 100.0 * med[PEER_PLAIN] / med[p]);
            } else {
                printf("-");
            }
            printf(" |\n");
        }
        for (int j = 0; j < BODIES; j++) {
            free(bs.body[j]);
        }
    }
    printf("\n`output MB/s`: bytes of log.txt lines (without names, for every peer) per second. "
           "`vs render, no names`: that peer's rate as a share of the plain render's; for "
           "`render + decode` it is what decoding leaves of the worker's rendering rate.\n");
    printf("\nrender targets: none (information: the worker's share of the name-decoding "
           "target)\n");
    free(buf);
    free(copy);
    free(hashes);
    nwb_free(sidecar);
    nwb_namesym_table_destroy(table);
    return 0;
}
