/* SPDX-License-Identifier: MIT */
/*
 * bench_telemetry.c - telemetry hot paths, each beside a peer measured in the same run:
 * decode throughput (MB/s) next to memcpy of the same bytes; the recorder's cost per recorded
 * scope (ns) next to storing the same 32 bytes into a plain array; and the frame-thread cost
 * of 2,000 scopes per frame with upload on (an uploader thread compressing with zstd), next to
 * the same loop with telemetry off. Targets (docs/performance.md): decode >= 1 GB/s, < 20 ns
 * per scope, upload work off the frame thread.
 *
 * Usage: bench_telemetry [--quick]
 */
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "nwb/alloc.h"
#include "nwb/telemetry.h"
#include "nwb/telemetry_report.h"

static volatile uint64_t g_sink; /* keeps results alive */

/* CPU time of the calling thread: what the frame thread itself spent, preemption excluded. */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double mbps(size_t bytes, uint64_t ns)
{
    return ns == 0 ? 0.0 : (double)bytes / ((double)ns / 1e9) / 1e6;
}

struct scan {
    uint64_t scopes;
    uint64_t ns;
};

static int scan_event(void *ctx, const nwb_tel_event_t *ev, size_t off)
{
    struct scan *s = ctx;

    (void)off;
    if (ev->kind == NWB_TEL_KIND_PERF_FRAME) {
        for (uint32_t i = 0; i < ev->u.perf.cpu_count; i++) {
            nwb_tel_cpu_scope_t c;

            nwb_tel_cpu_scope_at(&ev->u.perf, i, &c);
            s->ns += c.end_ns - c.start_ns;
        }
        s->scopes += ev->u.perf.cpu_count;
    }
    return 0;
}

static void bench_decode(int quick)
{
    nwb_tel_synth_config_t cfg = NWB_TEL_SYNTH_CONFIG_INIT;
    const nwb_tel_visitor_t visit = {NULL, scan_event};
    const int reps = quick ? 3 : 7;
    nwb_buf_t stream;
    nwb_buf_t json;
    uint8_t *copy;
    uint64_t best_memcpy = UINT64_MAX;
    uint64_t best_decode = UINT64_MAX;
    uint64_t best_visit = UINT64_MAX;
    uint64_t best_report = UINT64_MAX;

    cfg.frames = quick ? 300 : 1500;
    cfg.scopes_per_frame = 2000;
    cfg.gpu_scopes = 8;
    cfg.arenas = 8;
    cfg.logs_per_frame = 4;
    cfg.frames_per_upload = 60;
    nwb_buf_init(&stream, 1u << 30);
    if (nwb_tel_synth(&cfg, &stream, NULL) != 0) {
        fprintf(stderr, "bench_telemetry: synth failed\n");
        exit(1);
    }
    copy = malloc(stream.len);
    nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
    for (int r = 0; r < reps; r++) {
        nwb_tel_decode_result_t res;
        struct scan sc = {0, 0};
        uint64_t t0 = nwb_bench_now_ns();

        memcpy(copy, stream.data, stream.len);
        g_sink += copy[stream.len / 2];
        t0 = nwb_bench_now_ns() - t0;
        best_memcpy = t0 < best_memcpy ? t0 : best_memcpy;

        t0 = nwb_bench_now_ns();
        nwb_tel_stream_decode(stream.data, stream.len, 0, NULL, NULL, &res);
        t0 = nwb_bench_now_ns() - t0;
        best_decode = t0 < best_decode ? t0 : best_decode;
        g_sink += res.events;

        t0 = nwb_bench_now_ns();
        nwb_tel_stream_decode(stream.data, stream.len, 0, &visit, &sc, &res);
        t0 = nwb_bench_now_ns() - t0;
        best_visit = t0 < best_visit ? t0 : best_visit;
        g_sink += sc.ns;

        json.len = 0;
        t0 = nwb_bench_now_ns();
        nwb_tel_report_build(stream.data, stream.len, NULL, &json, &res);
        t0 = nwb_bench_now_ns() - t0;
        best_report = t0 < best_report ? t0 : best_report;
    }
    printf("decode: stream %.1f MB (%u frames x %u scopes), best of %d\n", (double)stream.len / 1e6,
           cfg.frames, cfg.scopes_per_frame, reps);
    printf("  memcpy (peer)                  %8.0f MB/s\n", mbps(stream.len, best_memcpy));
    printf("  nwb_tel_stream_decode          %8.0f MB/s  (validate every byte)\n",
           mbps(stream.len, best_decode));
    printf("  decode + read every CPU scope  %8.0f MB/s\n", mbps(stream.len, best_visit));
    printf("  nwb_tel_report_build           %8.0f MB/s  (2 passes, aggregation, JSON)\n",
           mbps(stream.len, best_report));
    free(copy);
    nwb_buf_cleanup(&stream);
    nwb_buf_cleanup(&json);
}

static int free_submit(void *ctx, nwb_tel_upload_t *up)
{
    (void)ctx;
    nwb_free(up->data);
    return 0;
}

/* Per-scope cost: nwb_tel_scope_record() against storing the same record in an array. */
static void bench_record(int quick)
{
    nwb_tel_recorder_config_t cfg = NWB_TEL_RECORDER_CONFIG_INIT;
    const nwb_tel_sink_t sink = {free_submit, NULL};
    const uint32_t per_frame = 2000;
    const unsigned frames = quick ? 200 : 2000;
    nwb_tel_cpu_scope_t *plain = malloc(per_frame * sizeof(*plain));
    nwb_tel_scope_id_t ids[64];
    nwb_tel_recorder_t *rec;
    uint64_t rec_ns = 0;
    uint64_t end_ns = 0;
    uint64_t peer_ns = 0;
    uint64_t off_ns = 0;

    cfg.run_id = "bench";
    cfg.build_id = "bench";
    nwb_tel_recorder_create(&cfg, &rec);
    for (unsigned i = 0; i < 64; i++) {
        nwb_tel_scope_register(rec, 1000 + i, NWB_TEL_SCOPE_CPU, &ids[i]);
    }
    nwb_tel_recorder_set_capture(rec, NWB_TEL_CAPTURE_CPU);
    for (int pass = 0; pass < 2; pass++) {
        nwb_tel_recorder_set_upload(rec, pass == 0, &sink);
        for (unsigned f = 0; f < frames; f++) {
            const uint64_t t = 1000000 + (uint64_t)f * 16666667u;
            uint64_t t0;
            uint64_t t1;

            nwb_tel_frame_begin(rec, f, t);
            t0 = nwb_bench_now_ns();
            for (uint32_t i = 0; i < per_frame; i++) {
                nwb_tel_scope_record(rec, ids[i & 63], 1 + (i & 1), t + i, t + i + 100,
                                     (uint16_t)(i & 7));
            }
            t1 = nwb_bench_now_ns();
            nwb_tel_frame_end(rec, t + 16666667u);
            if (pass == 0) {
                rec_ns += t1 - t0;
                end_ns += nwb_bench_now_ns() - t1;
                if (f % 60 == 59) {
                    nwb_tel_flush_upload(rec);
                }
            } else {
                off_ns += t1 - t0;
            }
            /* The peer: the same 32-byte records into a plain array. */
            t0 = nwb_bench_now_ns();
            for (uint32_t i = 0; i < per_frame; i++) {
                plain[i].name = 1000 + (i & 63);
                plain[i].start_ns = t + i;
                plain[i].end_ns = t + i + 100;
                plain[i].thread = 1 + (i & 1);
                plain[i].depth = (uint16_t)(i & 7);
            }
            g_sink += plain[f % per_frame].end_ns;
            peer_ns += nwb_bench_now_ns() - t0;
        }
    }
    printf("record: %u frames x %u scopes\n", frames, per_frame);
    printf("  array store (peer)             %8.2f ns/scope\n",
           (double)peer_ns / (2.0 * frames * per_frame));
    printf("  nwb_tel_scope_record           %8.2f ns/scope  (upload on; stats + slot)\n",
           (double)rec_ns / ((double)frames * per_frame));
    printf("  nwb_tel_scope_record           %8.2f ns/scope  (upload off: timing view only)\n",
           (double)off_ns / ((double)frames * per_frame));
    printf("  nwb_tel_frame_end encode       %8.2f ns/scope  (%.1f us/frame)\n",
           (double)end_ns / ((double)frames * per_frame), (double)end_ns / frames / 1e3);
    nwb_tel_recorder_destroy(rec);
    free(plain);
}

static atomic_uint_fast64_t g_delivered_bytes;

static int null_deliver(void *ctx, const uint8_t *body, size_t len, const char *enc, uint64_t seq)
{
    (void)ctx;
    (void)body;
    (void)enc;
    (void)seq;
    atomic_fetch_add(&g_delivered_bytes, len);
    return 0;
}

/* The frame thread's telemetry cost per frame with 2,000 scopes and upload on. */
static void bench_frame_upload(int quick)
{
    nwb_tel_recorder_config_t cfg = NWB_TEL_RECORDER_CONFIG_INIT;
    nwb_tel_uploader_config_t ucfg = NWB_TEL_UPLOADER_CONFIG_INIT;
    const unsigned frames = quick ? 300 : 1800;
    const uint32_t per_frame = 2000;
    uint64_t *cost = malloc(frames * sizeof(*cost));
    uint64_t *flush_cost = malloc(frames * sizeof(*flush_cost));
    uint64_t *cpu_cost = malloc(frames * sizeof(*cpu_cost));
    uint64_t *flush_cpu = malloc(frames * sizeof(*flush_cpu));
    nwb_tel_uploader_stats_t us;
    nwb_tel_recorder_stats_t rs;
    nwb_tel_scope_id_t ids[64];
    nwb_tel_recorder_t *rec;
    nwb_tel_uploader_t *up;
    size_t nflush = 0;
    uint64_t wall;

    cfg.run_id = "bench";
    cfg.build_id = "bench";
    ucfg.deliver = null_deliver;
    nwb_tel_uploader_create(&ucfg, &up);
    nwb_tel_recorder_create(&cfg, &rec);
    for (unsigned i = 0; i < 64; i++) {
        nwb_tel_scope_register(rec, 1000 + i, NWB_TEL_SCOPE_CPU, &ids[i]);
    }
    nwb_tel_recorder_set_capture(rec, NWB_TEL_CAPTURE_ALL);
    nwb_tel_recorder_set_upload(rec, 1, nwb_tel_uploader_sink(up));
    wall = nwb_bench_now_ns();
    for (unsigned f = 0; f < frames; f++) {
        const uint64_t t0 = nwb_bench_now_ns();
        const uint64_t c0 = thread_cpu_ns();

        nwb_tel_frame_begin(rec, f, 0);
        for (uint32_t i = 0; i < per_frame; i++) {
            const uint64_t t = t0 + i * 5u;

            nwb_tel_scope_record(rec, ids[i & 63], 1 + (i & 1), t, t + 4, (uint16_t)(i & 7));
        }
        nwb_tel_text_record(rec, 0, 0, 1, "frame done", 10);
        nwb_tel_frame_end(rec, 0);
        if (f % 60 == 59) {
            const uint64_t t1 = nwb_bench_now_ns();
            const uint64_t c1 = thread_cpu_ns();

            nwb_tel_flush_upload(rec);
            flush_cost[nflush] = nwb_bench_now_ns() - t1;
            flush_cpu[nflush++] = thread_cpu_ns() - c1;
        }
        cost[f] = nwb_bench_now_ns() - t0;
        cpu_cost[f] = thread_cpu_ns() - c0;
        /* The rest of the frame: 1 ms of simulated game work, so 60 frames take about 60 ms
         * and the uploader thread compresses beside a running game, as it would. */
        {
            const uint64_t until = nwb_bench_now_ns() + 1000000u;

            while (nwb_bench_now_ns() < until) {
                g_sink++;
            }
        }
    }
    wall = nwb_bench_now_ns() - wall;
    nwb_tel_uploader_flush(up, 60000);
    nwb_tel_uploader_stats_get(up, &us);
    nwb_tel_recorder_stats_get(rec, &rs);
    nwb_bench_sort_u64(cost, frames);
    nwb_bench_sort_u64(flush_cost, nflush);
    nwb_bench_sort_u64(cpu_cost, frames);
    nwb_bench_sort_u64(flush_cpu, nflush);
    printf("frame loop: %u frames x %u scopes + 1 ms simulated work, upload on (flush every 60 "
           "frames, zstd on the uploader thread)\n",
           frames, per_frame);
    printf("  telemetry per frame            p50 %6.1f us  p99 %6.1f us  max %6.1f us  "
           "(%.2f%% of a 16.7 ms frame at p50)\n",
           nwb_bench_quantile(cost, frames, 0.50) / 1e3,
           nwb_bench_quantile(cost, frames, 0.99) / 1e3, cost[frames - 1] / 1e3,
           100.0 * (double)nwb_bench_quantile(cost, frames, 0.50) / 16.6667e6);
    printf("  same, frame-thread CPU time    p50 %6.1f us  p99 %6.1f us  max %6.1f us  "
           "(wall minus preemption on this shared 2-core box)\n",
           nwb_bench_quantile(cpu_cost, frames, 0.50) / 1e3,
           nwb_bench_quantile(cpu_cost, frames, 0.99) / 1e3, cpu_cost[frames - 1] / 1e3);
    printf("  nwb_tel_flush_upload (frame)   p50 %6.1f us  max %6.1f us  CPU max %6.1f us  "
           "(%zu flushes, %.1f MB each)\n",
           nwb_bench_quantile(flush_cost, nflush, 0.50) / 1e3,
           nflush ? flush_cost[nflush - 1] / 1e3 : 0.0, nflush ? flush_cpu[nflush - 1] / 1e3 : 0.0,
           nflush, nflush ? (double)rs.upload_bytes / (double)nflush / 1e6 : 0.0);
    printf("  uploader thread                %llu uploads, %.1f MB -> %.1f MB zstd, %llu refused;"
           " loop wall %.0f ms\n",
           (unsigned long long)us.delivered, (double)us.raw_bytes / 1e6,
           (double)us.sent_bytes / 1e6, (unsigned long long)us.refused, (double)wall / 1e6);
    printf("  drops                          events %llu  scopes %llu  uploads %llu\n",
           (unsigned long long)rs.dropped_events, (unsigned long long)rs.dropped_scopes,
           (unsigned long long)rs.dropped_uploads);
    nwb_tel_recorder_destroy(rec);
    nwb_tel_uploader_destroy(up);
    free(cost);
    free(flush_cost);
    free(cpu_cost);
    free(flush_cpu);
}

int main(int argc, char **argv)
{
    const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;

    bench_decode(quick);
    bench_record(quick);
    bench_frame_upload(quick);
    return g_sink == 42 ? 1 : 0;
}
