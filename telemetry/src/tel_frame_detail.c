/* SPDX-License-Identifier: MIT */
/*
 * tel_frame_detail.c - one frame in full, from the decoded bytes of the upload that holds it
 * (the read API's /frames/{frame}, docs/telemetry-report.md): its duration, its CPU scopes per
 * thread with depth and start/end, the GPU windows published with it, its memory totals, its
 * frame graph (queues, packets, passes and dependency edges) and the log lines recorded in it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/log.h"
#include "tel_report_int.h"

struct detail {
    uint64_t frame;
    int found;
    int have_mem;
    int have_fg;
    nwb_tel_event_t perf; /* views borrow the bytes */
    nwb_tel_event_t mem;
    nwb_tel_event_t fg;
    nwb_tel_event_t *logs; /* NWB_TEL_FRAME_DETAIL_LOGS */
    uint32_t nlogs;
    uint64_t more_logs;
};

static int detail_event(void *ctx, const nwb_tel_event_t *ev, size_t offset)
{
    struct detail *d = ctx;

    (void)offset;
    if (!ev->known || ev->frame != d->frame) {
        return 0;
    }
    if (ev->kind == NWB_TEL_KIND_PERF_FRAME && !d->found) {
        d->perf = *ev;
        d->found = 1;
    } else if (ev->kind == NWB_TEL_KIND_MEMORY_FRAME && !d->have_mem) {
        d->mem = *ev;
        d->have_mem = 1;
    } else if (ev->kind == NWB_TEL_KIND_FRAME_GRAPH && !d->have_fg) {
        d->fg = *ev;
        d->have_fg = 1;
    } else if (ev->kind == NWB_TEL_KIND_TEXT_LOG) {
        if (d->nlogs < NWB_TEL_FRAME_DETAIL_LOGS) {
            d->logs[d->nlogs++] = *ev;
        } else {
            d->more_logs++;
        }
    }
    return 0;
}

/* Scopes grouped by thread, each thread's in start order (outer before inner). */
static int cmp_scope(const void *a, const void *b)
{
    const nwb_tel_cpu_scope_t *x = a;
    const nwb_tel_cpu_scope_t *y = b;

    if (x->thread != y->thread) {
        return x->thread < y->thread ? -1 : 1;
    }
    if (x->start_ns != y->start_ns) {
        return x->start_ns < y->start_ns ? -1 : 1;
    }
    if (x->depth != y->depth) {
        return x->depth < y->depth ? -1 : 1;
    }
    return x->end_ns > y->end_ns ? -1 : x->end_ns < y->end_ns;
}

static double ms_of(uint64_t ns)
{
    return (double)ns / 1e6;
}

static void write_threads(nwb_json_t *j, const nwb_tel_cpu_scope_t *s, uint32_t n,
                          const nwb_namesym_table_t *names)
{
    nwb_json_key(j, "threads");
    nwb_json_arr_begin(j);
    for (uint32_t i = 0; i < n; i++) {
        if (i == 0 || s[i].thread != s[i - 1].thread) {
            if (i != 0) {
                nwb_json_arr_end(j);
                nwb_json_obj_end(j);
            }
            nwb_json_obj_begin(j);
            nwb_json_key(j, "thread");
            nwb_json_u64(j, s[i].thread);
            nwb_json_key(j, "scopes");
            nwb_json_arr_begin(j);
        }
        nwb_json_obj_begin(j);
        nwb_json_key(j, "name");
        nwb__tel_json_name(j, names, s[i].name);
        nwb_json_key(j, "depth");
        nwb_json_u64(j, s[i].depth);
        nwb_json_key(j, "startNs");
        nwb_json_u64(j, s[i].start_ns);
        nwb_json_key(j, "endNs");
        nwb_json_u64(j, s[i].end_ns);
        nwb_json_key(j, "ms");
        nwb_json_dbl(j, ms_of(s[i].end_ns - s[i].start_ns), 6);
        nwb_json_obj_end(j);
    }
    if (n > 0) {
        nwb_json_arr_end(j);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
}

static void write_gpu(nwb_json_t *j, const nwb_tel_perf_view_t *pv,
                      const nwb_namesym_table_t *names)
{
    nwb_json_key(j, "gpu");
    nwb_json_arr_begin(j);
    for (uint32_t i = 0; i < pv->gpu_count; i++) {
        nwb_tel_gpu_scope_t g;

        nwb_tel_gpu_scope_at(pv, i, &g);
        nwb_json_obj_begin(j);
        nwb_json_key(j, "name");
        nwb__tel_json_name(j, names, g.name);
        nwb_json_key(j, "sourceFrameMin");
        nwb_json_u64(j, g.source_frame_min);
        nwb_json_key(j, "sourceFrameMax");
        nwb_json_u64(j, g.source_frame_max);
        nwb_json_key(j, "windowSamples");
        nwb_json_u64(j, g.window_samples);
        nwb_json_key(j, "windowAvgMs");
        nwb_json_dbl(j, g.window_avg_ms, 6);
        nwb_json_key(j, "windowMinMs");
        nwb_json_dbl(j, g.window_min_ms, 6);
        nwb_json_key(j, "windowMaxMs");
        nwb_json_dbl(j, g.window_max_ms, 6);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
}

static void write_memory(nwb_json_t *j, const struct detail *d)
{
    const nwb_tel_mem_view_t *mv = &d->mem.u.mem;

    nwb_json_key(j, "memory");
    if (!d->have_mem) {
        nwb_json_null(j);
        return;
    }
    nwb_json_obj_begin(j);
    nwb_json_key(j, "arenaUsedBytes");
    nwb_json_u64(j, mv->arena_used_bytes);
    nwb_json_key(j, "arenaReservedBytes");
    nwb_json_u64(j, mv->arena_reserved_bytes);
    nwb_json_key(j, "heapBackingUsedBytes");
    nwb_json_u64(j, mv->heap_used_bytes);
    nwb_json_key(j, "processRssBytes");
    nwb_json_u64(j, mv->process_rss_bytes);
    nwb_json_obj_end(j);
}

static void write_logs(nwb_json_t *j, const struct detail *d, const nwb_namesym_table_t *names,
                       nwb_buf_t *scratch)
{
    nwb_json_key(j, "logs");
    nwb_json_arr_begin(j);
    for (uint32_t i = 0; i < d->nlogs; i++) {
        const nwb_tel_text_view_t *t = &d->logs[i].u.text;

        nwb_json_obj_begin(j);
        nwb_json_key(j, "timestampNs");
        nwb_json_u64(j, d->logs[i].timestamp_ns);
        nwb_json_key(j, "level");
        nwb_json_cstr(j, nwb_log_level_name(t->level));
        nwb_json_key(j, "thread");
        nwb_json_u64(j, t->thread);
        nwb_json_key(j, "message");
        nwb__tel_json_text(j, names, t->msg, t->len, scratch);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_key(j, "moreLogs");
    nwb_json_u64(j, d->more_logs);
}

/* The frame's graph as recorded (the first frameGraphFrame event of the frame), or null. Indices
 * are the event's own: a packet's queue and a pass's packet index those arrays, an edge names
 * two passes. */
static void write_frame_graph(nwb_json_t *j, const struct detail *d,
                              const nwb_namesym_table_t *names)
{
    const nwb_tel_fg_view_t *g = &d->fg.u.fg;

    nwb_json_key(j, "frameGraph");
    if (!d->have_fg) {
        nwb_json_null(j);
        return;
    }
    nwb_json_obj_begin(j);
    nwb_json_key(j, "queues");
    nwb_json_arr_begin(j);
    for (uint32_t i = 0; i < g->queue_count; i++) {
        nwb_tel_fg_queue_t q;

        nwb_tel_fg_queue_at(g, i, &q);
        nwb_json_obj_begin(j);
        nwb_json_key(j, "name");
        nwb__tel_json_name(j, names, q.name);
        nwb_json_key(j, "type");
        nwb_json_cstr(j, nwb_tel_queue_type_name(q.type));
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_key(j, "packets");
    nwb_json_arr_begin(j);
    for (uint32_t i = 0; i < g->packet_count; i++) {
        nwb_tel_fg_packet_t p;

        nwb_tel_fg_packet_at(g, i, &p);
        nwb_json_obj_begin(j);
        nwb_json_key(j, "queue");
        nwb_json_u64(j, p.queue);
        nwb_json_key(j, "waits");
        nwb_json_u64(j, p.waits);
        nwb_json_key(j, "signals");
        nwb_json_u64(j, p.signals);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_key(j, "passes");
    nwb_json_arr_begin(j);
    for (uint32_t i = 0; i < g->pass_count; i++) {
        nwb_tel_fg_pass_t p;

        nwb_tel_fg_pass_at(g, i, &p);
        nwb_json_obj_begin(j);
        nwb_json_key(j, "name");
        nwb__tel_json_name(j, names, p.name);
        nwb_json_key(j, "packet");
        nwb_json_u64(j, p.packet);
        nwb_json_key(j, "barriers");
        nwb_json_u64(j, p.barriers);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_key(j, "edges");
    nwb_json_arr_begin(j);
    for (uint32_t i = 0; i < g->edge_count; i++) {
        nwb_tel_fg_edge_t e;

        nwb_tel_fg_edge_at(g, i, &e);
        nwb_json_arr_begin(j);
        nwb_json_u64(j, e.from);
        nwb_json_u64(j, e.to);
        nwb_json_arr_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_key(j, "counters");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "emittedWaits");
    nwb_json_u64(j, g->counters.emitted_waits);
    nwb_json_key(j, "sameQueueElisions");
    nwb_json_u64(j, g->counters.same_queue_elisions);
    nwb_json_key(j, "duplicateMerges");
    nwb_json_u64(j, g->counters.duplicate_merges);
    nwb_json_key(j, "inheritedElisions");
    nwb_json_u64(j, g->counters.inherited_elisions);
    nwb_json_obj_end(j);
    nwb_json_obj_end(j);
}

int nwb_tel_frame_detail_write(const uint8_t *bytes, size_t len, uint64_t frame,
                               const nwb_namesym_table_t *names, nwb_json_t *j)
{
    const nwb_tel_visitor_t v = {NULL, detail_event};
    const nwb_tel_perf_view_t *pv;
    nwb_tel_decode_result_t res;
    nwb_tel_cpu_scope_t *scopes;
    nwb_buf_t scratch;
    struct detail d;

    memset(&d, 0, sizeof(d));
    d.frame = frame;
    d.logs = nwb_malloc(NWB_TEL_FRAME_DETAIL_LOGS * sizeof(*d.logs));
    if (d.logs == NULL) {
        return -ENOMEM;
    }
    nwb_tel_stream_decode(bytes, len, 0, &v, &d, &res);
    if (!d.found) {
        nwb_free(d.logs);
        return res.status != 0 ? res.status : NWB_ERANGE;
    }
    pv = &d.perf.u.perf;
    scopes = nwb_malloc((pv->cpu_count != 0 ? pv->cpu_count : 1) * sizeof(*scopes));
    if (scopes == NULL) {
        nwb_free(d.logs);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < pv->cpu_count; i++) {
        nwb_tel_cpu_scope_at(pv, i, &scopes[i]);
    }
    qsort(scopes, pv->cpu_count, sizeof(*scopes), cmp_scope);
    nwb_buf_init(&scratch, 1u << 20);
    nwb_json_obj_begin(j);
    nwb_json_key(j, "frame");
    nwb_json_u64(j, frame);
    nwb_json_key(j, "timestampNs");
    nwb_json_u64(j, d.perf.timestamp_ns);
    nwb_json_key(j, "startNs");
    nwb_json_u64(j, pv->frame_start_ns);
    nwb_json_key(j, "durationMs");
    nwb_json_dbl(j, ms_of(pv->frame_duration_ns), 6);
    nwb_json_key(j, "cpuScopes");
    nwb_json_u64(j, pv->cpu_count);
    write_threads(j, scopes, pv->cpu_count, names);
    write_gpu(j, pv, names);
    write_memory(j, &d);
    write_frame_graph(j, &d, names);
    write_logs(j, &d, names, &scratch);
    nwb_json_obj_end(j);
    nwb_buf_cleanup(&scratch);
    nwb_free(scopes);
    nwb_free(d.logs);
    return j->err;
}
