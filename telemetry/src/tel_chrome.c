/* SPDX-License-Identifier: MIT */
/*
 * tel_chrome.c - Chrome trace-event export (opens in Perfetto and chrome://tracing): one named
 * track per thread with its CPU scopes as nested complete events, frames on their own track,
 * text logs, marks and diagnostics as instant events, counters, GPU windows and memory as
 * counter events. Names come from the stream's string tables, then the sidecar. Streams to
 * the file; never builds the whole document.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/log.h"
#include "nwb/telemetry_report.h"
#include "tel_int.h"

#define CHROME_PID        1
#define CHROME_FRAMES_TID 0 /* the frame track; real thread ids start at 1 in practice */

/* A thread's track: its id and the name its last naming thread event gave (borrowed from the
 * stream). At most NWB_TEL_REPORT_THREADS_MAX tracks are named; later threads keep their
 * events, on a track the viewer names by its id. */
struct track {
    uint32_t thread;
    uint16_t name_len;
    const char *name;
};

struct chrome {
    nwb_json_t j;
    struct nwb__tel_strings strings; /* the stream's strings, gathered in the first pass */
    struct nwb__tel_names names;
    nwb_buf_t scratch;
    uint64_t base; /* earliest timestamp, ns */
    int have_base;
    int err;              /* first failure of the first pass (allocation) */
    struct track *tracks; /* sorted by thread id */
    size_t ntracks, tracks_cap;
};

static void base_note(struct chrome *c, uint64_t t)
{
    if (!c->have_base || t < c->base) {
        c->base = t;
        c->have_base = 1;
    }
}

/* The track of @p thread, added when new and there is room; NULL otherwise. */
static struct track *track_get(struct chrome *c, uint32_t thread)
{
    size_t lo = 0;
    size_t hi = c->ntracks;

    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;

        if (c->tracks[mid].thread == thread) {
            return &c->tracks[mid];
        }
        if (c->tracks[mid].thread < thread) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (c->ntracks >= NWB_TEL_REPORT_THREADS_MAX) {
        return NULL;
    }
    if (c->ntracks == c->tracks_cap) {
        const size_t cap = c->tracks_cap == 0 ? 16 : c->tracks_cap * 2;
        struct track *t = nwb_realloc(c->tracks, cap * sizeof(*t));

        if (t == NULL) {
            c->err = -ENOMEM;
            return NULL;
        }
        c->tracks = t;
        c->tracks_cap = cap;
    }
    memmove(&c->tracks[lo + 1], &c->tracks[lo], (c->ntracks - lo) * sizeof(*c->tracks));
    c->ntracks++;
    c->tracks[lo].thread = thread;
    c->tracks[lo].name_len = 0;
    c->tracks[lo].name = NULL;
    return &c->tracks[lo];
}

/* First pass: the earliest timestamp, the stream's strings and every thread's track. */
static int on_event_base(void *ctx, const nwb_tel_event_t *ev, size_t offset)
{
    struct chrome *c = ctx;

    (void)offset;
    if (!ev->known) {
        return 0;
    }
    base_note(c, ev->timestamp_ns);
    switch (ev->kind) {
    case NWB_TEL_KIND_PERF_FRAME:
        base_note(c, ev->u.perf.frame_start_ns);
        for (uint32_t i = 0; i < ev->u.perf.cpu_count; i++) {
            nwb_tel_cpu_scope_t s;

            nwb_tel_cpu_scope_at(&ev->u.perf, i, &s);
            base_note(c, s.start_ns);
            (void)track_get(c, s.thread);
        }
        break;
    case NWB_TEL_KIND_THREAD: {
        struct track *t = track_get(c, ev->u.thread.thread);

        if (t != NULL && ev->u.thread.name_len > 0) {
            t->name = ev->u.thread.name;
            t->name_len = ev->u.thread.name_len;
        }
        break;
    }
    case NWB_TEL_KIND_STRING_TABLE:
        if (nwb__tel_strings_add(&c->strings, &ev->u.strings) != 0) {
            c->err = -ENOMEM;
        }
        break;
    case NWB_TEL_KIND_COUNTER_FRAME:
        for (uint32_t i = 0; i < ev->u.counters.count; i++) {
            nwb_tel_counter_t s;

            nwb_tel_counter_at(&ev->u.counters, i, &s);
            base_note(c, s.ts_ns);
            (void)track_get(c, s.thread);
        }
        break;
    case NWB_TEL_KIND_MARK:
        (void)track_get(c, ev->u.mark.thread);
        break;
    case NWB_TEL_KIND_TEXT_LOG:
        (void)track_get(c, ev->u.text.thread);
        break;
    default:
        break;
    }
    return c->err;
}

/* A timestamp or duration in microseconds with nanosecond decimals. */
static void us_value(struct chrome *c, const char *key, uint64_t ns)
{
    char tmp[40];
    const int n =
        snprintf(tmp, sizeof(tmp), "%" PRIu64 ".%03u", ns / 1000u, (unsigned)(ns % 1000u));

    nwb_json_key(&c->j, key);
    nwb_json_number_text(&c->j, tmp, (size_t)n);
}

static void ts(struct chrome *c, uint64_t t)
{
    us_value(c, "ts", t >= c->base ? t - c->base : 0);
}

static void common(struct chrome *c, const char *ph, const char *cat, uint64_t tid)
{
    nwb_json_key(&c->j, "ph");
    nwb_json_cstr(&c->j, ph);
    nwb_json_key(&c->j, "cat");
    nwb_json_cstr(&c->j, cat);
    nwb_json_key(&c->j, "pid");
    nwb_json_u64(&c->j, CHROME_PID);
    nwb_json_key(&c->j, "tid");
    nwb_json_u64(&c->j, tid);
}

static void perf(struct chrome *c, const nwb_tel_event_t *ev)
{
    const nwb_tel_perf_view_t *pv = &ev->u.perf;
    char label[48];

    snprintf(label, sizeof(label), "frame %" PRIu64, ev->frame);
    nwb_json_obj_begin(&c->j);
    nwb_json_key(&c->j, "name");
    nwb_json_cstr(&c->j, label);
    common(c, "X", "frame", CHROME_FRAMES_TID);
    ts(c, pv->frame_start_ns);
    us_value(c, "dur", pv->frame_duration_ns);
    nwb_json_key(&c->j, "args");
    nwb_json_obj_begin(&c->j);
    nwb_json_key(&c->j, "frame");
    nwb_json_u64(&c->j, ev->frame);
    nwb_json_obj_end(&c->j);
    nwb_json_obj_end(&c->j);
    for (uint32_t i = 0; i < pv->cpu_count; i++) {
        nwb_tel_cpu_scope_t s;

        nwb_tel_cpu_scope_at(pv, i, &s);
        nwb_json_obj_begin(&c->j);
        nwb_json_key(&c->j, "name");
        nwb__tel_json_name(&c->j, &c->names, s.name);
        common(c, "X", "cpu", s.thread);
        ts(c, s.start_ns);
        us_value(c, "dur", s.end_ns - s.start_ns);
        nwb_json_key(&c->j, "args");
        nwb_json_obj_begin(&c->j);
        nwb_json_key(&c->j, "frame");
        nwb_json_u64(&c->j, ev->frame);
        nwb_json_key(&c->j, "depth");
        nwb_json_u64(&c->j, s.depth);
        nwb_json_obj_end(&c->j);
        nwb_json_obj_end(&c->j);
    }
    for (uint32_t i = 0; i < pv->gpu_count; i++) {
        nwb_tel_gpu_scope_t g;
        char tok[NWB_NAME_TOKEN_SIZE];
        size_t len = 0;
        const char *s;

        nwb_tel_gpu_scope_at(pv, i, &g);
        s = nwb__tel_name_find(&c->names, g.name, &len);
        if (s == NULL) {
            nwb_name_token(g.name, tok);
            s = tok;
            len = NWB_NAME_TOKEN_LEN;
        }
        c->scratch.len = 0;
        if (nwb_buf_append(&c->scratch, "gpu ", 4) != 0 ||
            nwb_buf_append(&c->scratch, s, len) != 0) {
            continue;
        }
        nwb_json_obj_begin(&c->j);
        nwb_json_key(&c->j, "name");
        nwb_json_str(&c->j, (const char *)c->scratch.data, c->scratch.len);
        common(c, "C", "gpu", CHROME_FRAMES_TID);
        ts(c, ev->timestamp_ns);
        nwb_json_key(&c->j, "args");
        nwb_json_obj_begin(&c->j);
        nwb_json_key(&c->j, "window_avg_ms");
        nwb_json_dbl(&c->j, g.window_avg_ms, 6);
        nwb_json_key(&c->j, "window_max_ms");
        nwb_json_dbl(&c->j, g.window_max_ms, 6);
        nwb_json_obj_end(&c->j);
        nwb_json_obj_end(&c->j);
    }
}

static void memory(struct chrome *c, const nwb_tel_event_t *ev)
{
    const nwb_tel_mem_view_t *mv = &ev->u.mem;

    nwb_json_obj_begin(&c->j);
    nwb_json_key(&c->j, "name");
    nwb_json_cstr(&c->j, "memory");
    common(c, "C", "memory", CHROME_FRAMES_TID);
    ts(c, ev->timestamp_ns);
    nwb_json_key(&c->j, "args");
    nwb_json_obj_begin(&c->j);
    nwb_json_key(&c->j, "arena_used");
    nwb_json_u64(&c->j, mv->arena_used_bytes);
    nwb_json_key(&c->j, "heap_backing_used");
    nwb_json_u64(&c->j, mv->heap_used_bytes);
    nwb_json_obj_end(&c->j);
    nwb_json_obj_end(&c->j);
    for (uint32_t i = 0; i < mv->count; i++) {
        nwb_tel_mem_record_t r;
        char tok[NWB_NAME_TOKEN_SIZE];
        size_t len = 0;
        const char *s;

        nwb_tel_mem_record_at(mv, i, &r);
        s = nwb__tel_name_find(&c->names, r.name, &len);
        if (s == NULL) {
            nwb_name_token(r.name, tok);
            s = tok;
            len = NWB_NAME_TOKEN_LEN;
        }
        c->scratch.len = 0;
        if (nwb_buf_append(&c->scratch, "mem ", 4) != 0 ||
            nwb_buf_append(&c->scratch, s, len) != 0) {
            continue;
        }
        nwb_json_obj_begin(&c->j);
        nwb_json_key(&c->j, "name");
        nwb_json_str(&c->j, (const char *)c->scratch.data, c->scratch.len);
        common(c, "C", nwb_tel_mem_source_name(r.source), CHROME_FRAMES_TID);
        ts(c, ev->timestamp_ns);
        nwb_json_key(&c->j, "args");
        nwb_json_obj_begin(&c->j);
        nwb_json_key(&c->j, "used");
        nwb_json_u64(&c->j, r.used_bytes);
        nwb_json_key(&c->j, "reserved");
        nwb_json_u64(&c->j, r.reserved_bytes);
        nwb_json_obj_end(&c->j);
        nwb_json_obj_end(&c->j);
    }
}

static void instant_text(struct chrome *c, const nwb_tel_event_t *ev)
{
    nwb_json_obj_begin(&c->j);
    nwb_json_key(&c->j, "name");
    nwb__tel_json_text(&c->j, &c->names, ev->u.text.msg, ev->u.text.len > 80 ? 80 : ev->u.text.len,
                       &c->scratch);
    common(c, "i", "log", ev->u.text.thread);
    nwb_json_key(&c->j, "s");
    nwb_json_cstr(&c->j, "t");
    ts(c, ev->timestamp_ns);
    nwb_json_key(&c->j, "args");
    nwb_json_obj_begin(&c->j);
    nwb_json_key(&c->j, "level");
    nwb_json_cstr(&c->j, nwb_log_level_name(ev->u.text.level));
    nwb_json_key(&c->j, "message");
    nwb__tel_json_text(&c->j, &c->names, ev->u.text.msg, ev->u.text.len, &c->scratch);
    nwb_json_key(&c->j, "frame");
    nwb_json_u64(&c->j, ev->frame);
    nwb_json_obj_end(&c->j);
    nwb_json_obj_end(&c->j);
}

static void instant_diag(struct chrome *c, const nwb_tel_event_t *ev)
{
    nwb_tel_kv_t kv;
    size_t pos = 0;

    nwb_json_obj_begin(&c->j);
    nwb_json_key(&c->j, "name");
    nwb__tel_json_name(&c->j, &c->names, ev->u.diag.code);
    common(c, "i", "diagnostic", CHROME_FRAMES_TID);
    nwb_json_key(&c->j, "s");
    nwb_json_cstr(&c->j, "p");
    ts(c, ev->timestamp_ns);
    nwb_json_key(&c->j, "args");
    nwb_json_obj_begin(&c->j);
    nwb_json_key(&c->j, "severity");
    nwb_json_cstr(&c->j, nwb_tel_severity_name(ev->u.diag.severity));
    nwb_json_key(&c->j, "pairs");
    nwb_json_arr_begin(&c->j);
    while (nwb_tel_diag_pair_next(&ev->u.diag, &pos, &kv)) {
        nwb_json_arr_begin(&c->j);
        nwb_json_str(&c->j, kv.key, kv.key_len);
        nwb_json_str(&c->j, kv.value, kv.value_len);
        nwb_json_arr_end(&c->j);
    }
    nwb_json_arr_end(&c->j);
    nwb_json_obj_end(&c->j);
    nwb_json_obj_end(&c->j);
}

static void instant_fg(struct chrome *c, const nwb_tel_event_t *ev)
{
    nwb_json_obj_begin(&c->j);
    nwb_json_key(&c->j, "name");
    nwb_json_cstr(&c->j, "frame graph");
    common(c, "i", "frameGraph", CHROME_FRAMES_TID);
    nwb_json_key(&c->j, "s");
    nwb_json_cstr(&c->j, "p");
    ts(c, ev->timestamp_ns);
    nwb_json_key(&c->j, "args");
    nwb_json_obj_begin(&c->j);
    nwb_json_key(&c->j, "frame");
    nwb_json_u64(&c->j, ev->frame);
    nwb_json_key(&c->j, "queues");
    nwb_json_u64(&c->j, ev->u.fg.queue_count);
    nwb_json_key(&c->j, "packets");
    nwb_json_u64(&c->j, ev->u.fg.packet_count);
    nwb_json_key(&c->j, "passes");
    nwb_json_u64(&c->j, ev->u.fg.pass_count);
    nwb_json_key(&c->j, "edges");
    nwb_json_u64(&c->j, ev->u.fg.edge_count);
    nwb_json_obj_end(&c->j);
    nwb_json_obj_end(&c->j);
}

/* One "C" event per counter sample, on the sample's thread. */
static void counters(struct chrome *c, const nwb_tel_event_t *ev)
{
    for (uint32_t i = 0; i < ev->u.counters.count; i++) {
        nwb_tel_counter_t s;

        nwb_tel_counter_at(&ev->u.counters, i, &s);
        nwb_json_obj_begin(&c->j);
        nwb_json_key(&c->j, "name");
        nwb__tel_json_name(&c->j, &c->names, s.name);
        common(c, "C", "counter", s.thread);
        ts(c, s.ts_ns);
        nwb_json_key(&c->j, "args");
        nwb_json_obj_begin(&c->j);
        nwb_json_key(&c->j, "value");
        nwb_json_dbl(&c->j, s.value, 6);
        nwb_json_obj_end(&c->j);
        nwb_json_obj_end(&c->j);
    }
}

static void instant_mark(struct chrome *c, const nwb_tel_event_t *ev)
{
    nwb_json_obj_begin(&c->j);
    nwb_json_key(&c->j, "name");
    nwb_json_str(&c->j, ev->u.mark.text, ev->u.mark.len);
    common(c, "i", "mark", ev->u.mark.thread);
    nwb_json_key(&c->j, "s");
    nwb_json_cstr(&c->j, "t");
    ts(c, ev->timestamp_ns);
    nwb_json_key(&c->j, "args");
    nwb_json_obj_begin(&c->j);
    nwb_json_key(&c->j, "frame");
    nwb_json_u64(&c->j, ev->frame);
    nwb_json_obj_end(&c->j);
    nwb_json_obj_end(&c->j);
}

static int on_event_write(void *ctx, const nwb_tel_event_t *ev, size_t offset)
{
    struct chrome *c = ctx;

    (void)offset;
    switch (ev->known ? ev->kind : 0) {
    case NWB_TEL_KIND_TEXT_LOG:
        instant_text(c, ev);
        break;
    case NWB_TEL_KIND_DIAGNOSTIC:
        instant_diag(c, ev);
        break;
    case NWB_TEL_KIND_FRAME_GRAPH:
        instant_fg(c, ev);
        break;
    case NWB_TEL_KIND_PERF_FRAME:
        perf(c, ev);
        break;
    case NWB_TEL_KIND_MEMORY_FRAME:
        memory(c, ev);
        break;
    case NWB_TEL_KIND_COUNTER_FRAME:
        counters(c, ev);
        break;
    case NWB_TEL_KIND_MARK:
        instant_mark(c, ev);
        break;
    default:
        break;
    }
    return c->j.err;
}

/* A metadata ("M") event: @p what is "process_name" or "thread_name" (args.name = the @p len
 * bytes at @p value), or "thread_sort_index" (args.sort_index = @p sort). */
static void metadata(struct chrome *c, const char *what, uint64_t tid, const char *value,
                     size_t len, uint64_t sort)
{
    nwb_json_obj_begin(&c->j);
    nwb_json_key(&c->j, "name");
    nwb_json_cstr(&c->j, what);
    nwb_json_key(&c->j, "ph");
    nwb_json_cstr(&c->j, "M");
    nwb_json_key(&c->j, "pid");
    nwb_json_u64(&c->j, CHROME_PID);
    nwb_json_key(&c->j, "tid");
    nwb_json_u64(&c->j, tid);
    nwb_json_key(&c->j, "args");
    nwb_json_obj_begin(&c->j);
    if (value != NULL) {
        nwb_json_key(&c->j, "name");
        nwb_json_str(&c->j, value, len);
    } else {
        nwb_json_key(&c->j, "sort_index");
        nwb_json_u64(&c->j, sort);
    }
    nwb_json_obj_end(&c->j);
    nwb_json_obj_end(&c->j);
}

/* The frames track first, then one named track per thread in thread-id order; a thread no
 * thread event named is "thread <id>". */
static void tracks_write(struct chrome *c)
{
    metadata(c, "process_name", CHROME_FRAMES_TID, "nwb telemetry", 13, 0);
    metadata(c, "thread_name", CHROME_FRAMES_TID, "frames", 6, 0);
    metadata(c, "thread_sort_index", CHROME_FRAMES_TID, NULL, 0, 0);
    for (size_t i = 0; i < c->ntracks; i++) {
        const struct track *t = &c->tracks[i];
        char label[32];

        if (t->name_len > 0) {
            metadata(c, "thread_name", t->thread, t->name, t->name_len, 0);
        } else {
            const int n = snprintf(label, sizeof(label), "thread %" PRIu32, t->thread);

            metadata(c, "thread_name", t->thread, label, (size_t)n, 0);
        }
        metadata(c, "thread_sort_index", t->thread, NULL, 0, i + 1);
    }
}

int nwb_tel_chrome_write(const uint8_t *stream, size_t len, const nwb_namesym_table_t *names,
                         FILE *out, nwb_tel_decode_result_t *res_out)
{
    const nwb_tel_visitor_t pass1 = {NULL, on_event_base};
    const nwb_tel_visitor_t pass2 = {NULL, on_event_write};
    nwb_tel_decode_result_t res;
    nwb_buf_t buf;
    struct chrome c;
    int err;

    memset(&c, 0, sizeof(c));
    nwb__tel_strings_init(&c.strings);
    c.names.strings = &c.strings;
    c.names.sym = names;
    nwb_buf_init(&buf, 1u << 20);
    nwb_buf_init(&c.scratch, 1u << 20);
    nwb_tel_stream_decode(stream, len, 0, &pass1, &c, &res);
    if (res_out != NULL) {
        *res_out = res;
    }
    if (c.err != 0) {
        /* Out of memory gathering names or tracks: write nothing rather than a trace that
         * silently lacks them. */
        err = c.err;
        goto out;
    }
    nwb_json_init(&c.j, &buf, out);
    nwb_json_obj_begin(&c.j);
    nwb_json_key(&c.j, "displayTimeUnit");
    nwb_json_cstr(&c.j, "ms");
    nwb_json_key(&c.j, "traceEvents");
    nwb_json_arr_begin(&c.j);
    tracks_write(&c);
    nwb_tel_stream_decode(stream, len, 0, &pass2, &c, &res);
    nwb_json_arr_end(&c.j);
    nwb_json_obj_end(&c.j);
    nwb_json_space(&c.j, "\n", 1);
    err = nwb_json_finish(&c.j);
    if (err == 0 && fflush(out) != 0) {
        err = -EIO;
    }
    if (res_out != NULL) {
        *res_out = res;
    }
out:
    nwb_buf_cleanup(&buf);
    nwb_buf_cleanup(&c.scratch);
    nwb__tel_strings_cleanup(&c.strings);
    nwb_free(c.tracks);
    return err;
}
