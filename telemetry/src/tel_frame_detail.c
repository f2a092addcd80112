/* SPDX-License-Identifier: MIT */
/*
 * tel_frame_detail.c - one frame in full, from the decoded bytes of the upload that holds it
 * (the read API's /frames/{frame}, docs/telemetry-report.md): its duration, its CPU scopes per
 * thread (named by the bytes' thread events) with depth and start/end, the GPU windows
 * published with it, its memory totals, its frame graph (queues, packets, passes and dependency
 * edges), its counter samples and marks, and the log lines recorded in it. Names come from the
 * bytes' string tables, then the sidecar.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/log.h"
#include "tel_report_int.h"

/* A counter sample or a mark of the frame, with the start of the segment it came in. */
struct timed {
    uint64_t start_mono_ns;
    nwb_tel_counter_t c; /* counters */
    nwb_tel_event_t ev;  /* marks (the view borrows the bytes) */
};

/* A thread's name from the bytes' thread events (the last that named it; borrowed). */
struct thread_name {
    uint32_t thread;
    uint16_t len;
    const char *name;
};

struct detail {
    uint64_t frame;
    int found;
    int have_mem;
    int have_fg;
    int err;                /* allocation failure while collecting */
    uint64_t start_mono_ns; /* of the segment being decoded */
    nwb_tel_event_t perf;   /* views borrow the bytes */
    nwb_tel_event_t mem;
    nwb_tel_event_t fg;
    nwb_tel_event_t *logs; /* NWB_TEL_FRAME_DETAIL_LOGS */
    uint32_t nlogs;
    uint64_t more_logs;
    struct timed *counters; /* at most NWB_TEL_FRAME_DETAIL_COUNTERS */
    size_t ncounters, counters_cap;
    uint64_t more_counters;
    struct timed *marks; /* at most NWB_TEL_FRAME_DETAIL_MARKS */
    size_t nmarks, marks_cap;
    uint64_t more_marks;
    struct thread_name *threads; /* at most NWB_TEL_REPORT_THREADS_MAX, in arrival order */
    size_t nthreads, threads_cap;
    struct nwb__tel_strings strings;
    struct nwb__tel_names names;
};

/* Room for one more element of @p elem bytes in @p *arr. 0, or -ENOMEM noted in @p d. */
static int room(struct detail *d, void **arr, size_t *cap, size_t n, size_t elem)
{
    const int err = nwb__tel_grow(arr, cap, n + 1, elem);

    if (err != 0 && d->err == 0) {
        d->err = err;
    }
    return err;
}

static void thread_named(struct detail *d, const nwb_tel_thread_view_t *t)
{
    size_t i = 0;

    while (i < d->nthreads && d->threads[i].thread != t->thread) {
        i++;
    }
    if (i == d->nthreads) {
        if (d->nthreads >= NWB_TEL_REPORT_THREADS_MAX ||
            room(d, (void **)&d->threads, &d->threads_cap, d->nthreads, sizeof(*d->threads)) != 0) {
            return;
        }
        d->nthreads++;
        d->threads[i].thread = t->thread;
        d->threads[i].len = 0;
        d->threads[i].name = NULL;
    }
    if (t->name_len > 0) {
        d->threads[i].len = t->name_len;
        d->threads[i].name = t->name;
    }
}

static void frame_counters(struct detail *d, const nwb_tel_counter_view_t *cv)
{
    for (uint32_t i = 0; i < cv->count; i++) {
        if (d->ncounters >= NWB_TEL_FRAME_DETAIL_COUNTERS ||
            room(d, (void **)&d->counters, &d->counters_cap, d->ncounters, sizeof(*d->counters)) !=
                0) {
            d->more_counters += cv->count - i;
            return;
        }
        d->counters[d->ncounters].start_mono_ns = d->start_mono_ns;
        nwb_tel_counter_at(cv, i, &d->counters[d->ncounters].c);
        d->ncounters++;
    }
}

static void frame_mark(struct detail *d, const nwb_tel_event_t *ev)
{
    if (d->nmarks >= NWB_TEL_FRAME_DETAIL_MARKS ||
        room(d, (void **)&d->marks, &d->marks_cap, d->nmarks, sizeof(*d->marks)) != 0) {
        d->more_marks++;
        return;
    }
    d->marks[d->nmarks].start_mono_ns = d->start_mono_ns;
    d->marks[d->nmarks].ev = *ev;
    d->nmarks++;
}

static int detail_segment(void *ctx, const nwb_tel_header_t *h, size_t offset)
{
    struct detail *d = ctx;

    (void)offset;
    d->start_mono_ns = h->start_mono_ns;
    return 0;
}

static int detail_event(void *ctx, const nwb_tel_event_t *ev, size_t offset)
{
    struct detail *d = ctx;

    (void)offset;
    if (!ev->known) {
        return 0;
    }
    /* Names and thread names from anywhere in the bytes, whatever frame they came with. */
    if (ev->kind == NWB_TEL_KIND_STRING_TABLE) {
        if (nwb__tel_strings_add(&d->strings, &ev->u.strings) != 0 && d->err == 0) {
            d->err = -ENOMEM;
        }
        return 0;
    }
    if (ev->kind == NWB_TEL_KIND_THREAD) {
        thread_named(d, &ev->u.thread);
        return 0;
    }
    if (ev->frame != d->frame) {
        return 0;
    }
    if (ev->kind == NWB_TEL_KIND_COUNTER_FRAME) {
        frame_counters(d, &ev->u.counters);
        return 0;
    }
    if (ev->kind == NWB_TEL_KIND_MARK) {
        frame_mark(d, ev);
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

static void write_thread_name(nwb_json_t *j, const struct detail *d, uint32_t thread)
{
    for (size_t i = 0; i < d->nthreads; i++) {
        if (d->threads[i].thread == thread && d->threads[i].len > 0) {
            nwb_json_str(j, d->threads[i].name, d->threads[i].len);
            return;
        }
    }
    nwb_json_null(j);
}

static void write_threads(nwb_json_t *j, const nwb_tel_cpu_scope_t *s, uint32_t n,
                          const struct detail *d)
{
    const struct nwb__tel_names *names = &d->names;

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
            nwb_json_key(j, "name");
            write_thread_name(j, d, s[i].thread);
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
                      const struct nwb__tel_names *names)
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

static void write_logs(nwb_json_t *j, const struct detail *d, nwb_buf_t *scratch)
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
        nwb__tel_json_text(j, &d->names, t->msg, t->len, scratch);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_key(j, "moreLogs");
    nwb_json_u64(j, d->more_logs);
}

/* The frame's graph as recorded (the first frameGraphFrame event of the frame), or null. Indices
 * are the event's own: a packet's queue and a pass's packet index those arrays, an edge names
 * two passes. */
static void write_frame_graph(nwb_json_t *j, const struct detail *d)
{
    const struct nwb__tel_names *names = &d->names;
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

/* Milliseconds since @p start (negative before it). */
static double ms_since(uint64_t ts, uint64_t start)
{
    return ts >= start ? ms_of(ts - start) : -ms_of(start - ts);
}

static void write_counters(nwb_json_t *j, const struct detail *d)
{
    nwb_json_key(j, "counters");
    nwb_json_arr_begin(j);
    for (size_t i = 0; i < d->ncounters; i++) {
        const struct timed *t = &d->counters[i];

        nwb_json_obj_begin(j);
        nwb_json_key(j, "name");
        nwb__tel_json_name(j, &d->names, t->c.name);
        nwb_json_key(j, "value");
        nwb_json_dbl(j, t->c.value, 6);
        nwb_json_key(j, "thread");
        nwb_json_u64(j, t->c.thread);
        nwb_json_key(j, "tsMs");
        nwb_json_dbl(j, ms_since(t->c.ts_ns, t->start_mono_ns), 6);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_key(j, "moreCounters");
    nwb_json_u64(j, d->more_counters);
}

static void write_marks(nwb_json_t *j, const struct detail *d)
{
    nwb_json_key(j, "marks");
    nwb_json_arr_begin(j);
    for (size_t i = 0; i < d->nmarks; i++) {
        const struct timed *t = &d->marks[i];

        nwb_json_obj_begin(j);
        nwb_json_key(j, "thread");
        nwb_json_u64(j, t->ev.u.mark.thread);
        nwb_json_key(j, "tsMs");
        nwb_json_dbl(j, ms_since(t->ev.timestamp_ns, t->start_mono_ns), 6);
        nwb_json_key(j, "text");
        nwb_json_str(j, t->ev.u.mark.text, t->ev.u.mark.len);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_key(j, "moreMarks");
    nwb_json_u64(j, d->more_marks);
}

static void detail_cleanup(struct detail *d)
{
    nwb_free(d->logs);
    nwb_free(d->counters);
    nwb_free(d->marks);
    nwb_free(d->threads);
    nwb__tel_strings_cleanup(&d->strings);
}

int nwb_tel_frame_detail_write(const uint8_t *bytes, size_t len, uint64_t frame,
                               const nwb_namesym_table_t *names, nwb_json_t *j)
{
    const nwb_tel_visitor_t v = {detail_segment, detail_event};
    const nwb_tel_perf_view_t *pv;
    nwb_tel_decode_result_t res;
    nwb_tel_cpu_scope_t *scopes;
    nwb_buf_t scratch;
    struct detail d;

    memset(&d, 0, sizeof(d));
    nwb__tel_strings_init(&d.strings);
    d.names.strings = &d.strings;
    d.names.sym = names;
    d.frame = frame;
    d.logs = nwb_malloc(NWB_TEL_FRAME_DETAIL_LOGS * sizeof(*d.logs));
    if (d.logs == NULL) {
        return -ENOMEM;
    }
    nwb_tel_stream_decode(bytes, len, 0, &v, &d, &res);
    if (d.err != 0) {
        detail_cleanup(&d);
        return d.err;
    }
    if (!d.found) {
        detail_cleanup(&d);
        return res.status != 0 ? res.status : NWB_ERANGE;
    }
    pv = &d.perf.u.perf;
    scopes = nwb_malloc((pv->cpu_count != 0 ? pv->cpu_count : 1) * sizeof(*scopes));
    if (scopes == NULL) {
        detail_cleanup(&d);
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
    write_threads(j, scopes, pv->cpu_count, &d);
    write_gpu(j, pv, &d.names);
    write_memory(j, &d);
    write_frame_graph(j, &d);
    write_counters(j, &d);
    write_marks(j, &d);
    write_logs(j, &d, &scratch);
    nwb_json_obj_end(j);
    nwb_buf_cleanup(&scratch);
    nwb_free(scopes);
    detail_cleanup(&d);
    return j->err;
}
