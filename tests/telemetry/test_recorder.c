/* SPDX-License-Identifier: MIT */
/*
 * test_recorder.c - the telemetry recorder: capture options, no allocation once warm, clear()
 * only while disabled (and what it releases), bounded frames with drops counted and carried in
 * the stream, timing statistics with out-of-order source frames, perf capture without upload
 * (read-only timing view), heapBacking beside arenas, frame-graph contributors that unregister
 * (from their own callback and from another thread mid-frame), and sink refusals.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nwb/alloc.h"
#include "nwb/deadline.h"
#include "nwb/error.h"
#include "nwb/telemetry.h"
#include "nwb/telemetry_report.h"
#include "tel_test_util.h"

/* ---- Counting allocator: proves "no allocation once warm" ------------------------------- */

static atomic_long g_allocs;

static void *count_malloc(size_t n)
{
    atomic_fetch_add(&g_allocs, 1);
    return malloc(n);
}

static void *count_realloc(void *p, size_t n)
{
    atomic_fetch_add(&g_allocs, 1);
    return realloc(p, n);
}

static void *count_calloc(size_t c, size_t n)
{
    atomic_fetch_add(&g_allocs, 1);
    return calloc(c, n);
}

/* ---- A sink that keeps every upload ----------------------------------------------------- */

struct capture {
    nwb_buf_t all;
    unsigned uploads;
    int refuse;
};

static int capture_submit(void *ctx, nwb_tel_upload_t *up)
{
    struct capture *c = ctx;

    if (c->refuse) {
        return NWB_EFULL;
    }
    assert_int_equal(nwb_buf_append(&c->all, up->data, up->len), 0);
    c->uploads++;
    nwb_free(up->data);
    return 0;
}

struct kinds {
    uint64_t n[NWB_TEL_KIND_LAST + 2];
    nwb_tel_header_t last;
    nwb_tel_event_t perf;
    nwb_tel_event_t mem;
};

static int k_segment(void *ctx, const nwb_tel_header_t *h, size_t off)
{
    (void)off;
    ((struct kinds *)ctx)->last = *h;
    return 0;
}

static int k_event(void *ctx, const nwb_tel_event_t *ev, size_t off)
{
    struct kinds *k = ctx;

    (void)off;
    k->n[ev->known ? ev->kind : NWB_TEL_KIND_LAST + 1]++;
    if (ev->kind == NWB_TEL_KIND_PERF_FRAME) {
        k->perf = *ev;
    }
    if (ev->kind == NWB_TEL_KIND_MEMORY_FRAME) {
        k->mem = *ev;
    }
    return 0;
}

static void decode_kinds(const struct capture *c, struct kinds *k)
{
    const nwb_tel_visitor_t v = {k_segment, k_event};
    nwb_tel_decode_result_t res;

    memset(k, 0, sizeof(*k));
    assert_int_equal(nwb_tel_stream_decode(c->all.data, c->all.len, 0, &v, k, &res), 0);
}

struct fixture {
    nwb_tel_recorder_t *rec;
    struct capture cap;
    nwb_tel_sink_t sink;
    nwb_tel_scope_id_t cpu, gpu;
    nwb_tel_mem_source_t *arena, *heap;
};

static void fg_simple(void *ctx, nwb_tel_fg_builder_t *b, uint64_t frame)
{
    uint32_t q;
    uint32_t p;

    (void)ctx;
    (void)frame;
    assert_int_equal(nwb_tel_fg_queue_add(b, 1, NWB_TEL_QUEUE_GRAPHICS, &q), 0);
    assert_int_equal(nwb_tel_fg_packet_add(b, q, 1, 1, &p), 0);
    assert_int_equal(nwb_tel_fg_pass_add(b, 2, p, 3, NULL), 0);
}

static int setup(void **state)
{
    nwb_tel_recorder_config_t cfg = NWB_TEL_RECORDER_CONFIG_INIT;
    struct fixture *f = calloc(1, sizeof(*f));
    nwb_tel_contributor_id_t id;

    cfg.program = "test";
    cfg.run_id = "run1";
    cfg.build_id = "b";
    assert_int_equal(nwb_tel_recorder_create(&cfg, &f->rec), 0);
    nwb_buf_init(&f->cap.all, 64u << 20);
    f->sink.submit = capture_submit;
    f->sink.ctx = &f->cap;
    assert_int_equal(nwb_tel_scope_register(f->rec, 100, NWB_TEL_SCOPE_CPU, &f->cpu), 0);
    assert_int_equal(nwb_tel_scope_register(f->rec, 200, NWB_TEL_SCOPE_GPU, &f->gpu), 0);
    assert_int_equal(nwb_tel_mem_source_register(f->rec, 300, NWB_TEL_MEM_ARENA,
                                                 NWB_TEL_PEAK_LARGEST_ARENA, &f->arena),
                     0);
    assert_int_equal(nwb_tel_mem_source_register(f->rec, 301, NWB_TEL_MEM_HEAP_BACKING,
                                                 NWB_TEL_PEAK_SAMPLED_HEAP, &f->heap),
                     0);
    assert_int_equal(nwb_tel_fg_contributor_register(f->rec, fg_simple, NULL, &id), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    nwb_tel_recorder_destroy(f->rec);
    nwb_buf_cleanup(&f->cap.all);
    free(f);
    return 0;
}

/* One frame of everything: n CPU scopes, a GPU sample, a log line, memory activity. */
static void frame(struct fixture *f, uint64_t i, uint32_t n)
{
    const uint64_t t = 1000000 + i * 16000000;

    assert_int_equal(nwb_tel_frame_begin(f->rec, i, t), 0);
    for (uint32_t k = 0; k < n; k++) {
        nwb_tel_scope_record(f->rec, f->cpu, 1, t + k, t + k + 10, 0);
    }
    nwb_tel_gpu_sample(f->rec, f->gpu, i > 0 ? i - 1 : 0, 500000);
    nwb_tel_text_record(f->rec, t + 5, 0, 1, "log line", 8);
    nwb_tel_mem_alloc(f->arena, 64);
    nwb_tel_mem_alloc(f->heap, 128);
    assert_int_equal(nwb_tel_frame_end(f->rec, t + 16000000), 0);
}

static void test_recorder_capture_options_select_event_kinds(void **state)
{
    static const struct {
        unsigned capture;
        int text, fg, perf, mem;
    } cases[] = {
        {NWB_TEL_CAPTURE_DISABLED, 0, 0, 0, 0},
        {NWB_TEL_CAPTURE_FRAME_GRAPH_ONLY, 0, 1, 0, 0},
        {NWB_TEL_CAPTURE_PERF_ONLY, 0, 0, 1, 1},
        {NWB_TEL_CAPTURE_ALL, 1, 1, 1, 1},
    };
    struct fixture *f = *state;

    assert_int_equal(nwb_tel_recorder_set_upload(f->rec, 1, &f->sink), 0);
    for (size_t c = 0; c < NWB_ARRAY_SIZE(cases); c++) {
        struct kinds k;

        f->cap.all.len = 0;
        nwb_tel_recorder_set_capture(f->rec, cases[c].capture);
        assert_int_equal(nwb_tel_recorder_capture(f->rec), cases[c].capture);
        frame(f, c, 3);
        assert_int_equal(nwb_tel_flush_upload(f->rec), 0);
        if (cases[c].capture == NWB_TEL_CAPTURE_DISABLED) {
            assert_int_equal(f->cap.all.len, 0); /* nothing, not even a header */
            continue;
        }
        decode_kinds(&f->cap, &k);
        assert_int_equal(k.n[NWB_TEL_KIND_TEXT_LOG], cases[c].text);
        assert_int_equal(k.n[NWB_TEL_KIND_FRAME_GRAPH], cases[c].fg);
        assert_int_equal(k.n[NWB_TEL_KIND_PERF_FRAME], cases[c].perf);
        assert_int_equal(k.n[NWB_TEL_KIND_MEMORY_FRAME], cases[c].mem);
        if (cases[c].perf) {
            assert_int_equal(k.perf.u.perf.cpu_count, 3);
            assert_int_equal(k.perf.u.perf.gpu_count, 1);
            assert_int_equal(k.perf.u.perf.frame_duration_ns, 16000000);
        }
    }
}

static void test_recorder_no_allocation_once_warm(void **state)
{
    struct fixture *f = *state;
    nwb_tel_recorder_stats_t st;
    long before;

    nwb_tel_recorder_set_upload(f->rec, 1, &f->sink);
    nwb_tel_recorder_set_capture(f->rec, NWB_TEL_CAPTURE_ALL);
    /* Warm up: two flush cycles of 10 frames of 500 scopes. */
    for (int cycle = 0; cycle < 2; cycle++) {
        for (uint64_t i = 0; i < 10; i++) {
            frame(f, i, 500);
        }
        assert_int_equal(nwb_tel_flush_upload(f->rec), 0);
    }
    before = atomic_load(&g_allocs);
    for (uint64_t i = 0; i < 10; i++) {
        frame(f, 100 + i, 500);
    }
    assert_int_equal(atomic_load(&g_allocs), before);
    nwb_tel_recorder_stats_get(f->rec, &st);
    assert_int_equal(st.dropped_scopes, 0);
    assert_int_equal(st.dropped_events, 0);
    /* A flush costs one allocation (the next buffer, at the size this one needed); the test
     * sink's own buffer already has room. */
    f->cap.all.len = 0;
    assert_int_equal(nwb_tel_flush_upload(f->rec), 0);
    assert_int_equal(atomic_load(&g_allocs), before + 1);
}

static void test_recorder_clear_only_while_disabled_releases_capacity(void **state)
{
    struct fixture *f = *state;
    nwb_tel_recorder_stats_t st;
    nwb_tel_timing_entry_t e;
    const nwb_tel_timing_view_t *v = nwb_tel_recorder_timing_view(f->rec);

    nwb_tel_recorder_set_upload(f->rec, 1, &f->sink);
    nwb_tel_recorder_set_capture(f->rec, NWB_TEL_CAPTURE_ALL);
    for (uint64_t i = 0; i < 4; i++) {
        frame(f, i, 200);
    }
    nwb_tel_recorder_stats_get(f->rec, &st);
    assert_true(st.capacity_bytes > 200 * sizeof(nwb_tel_cpu_scope_t));
    assert_true(st.pending_bytes > 0);
    assert_int_equal(nwb_tel_recorder_clear(f->rec), -EBUSY);
    nwb_tel_recorder_set_capture(f->rec, NWB_TEL_CAPTURE_DISABLED);
    assert_int_equal(nwb_tel_frame_begin(f->rec, 9, 1), 0);
    assert_int_equal(nwb_tel_recorder_clear(f->rec), -EBUSY); /* a frame is open */
    assert_int_equal(nwb_tel_frame_end(f->rec, 2), 0);
    assert_int_equal(nwb_tel_recorder_clear(f->rec), 0);
    nwb_tel_recorder_stats_get(f->rec, &st);
    assert_int_equal(st.capacity_bytes, 0);
    assert_int_equal(st.pending_bytes, 0);
    /* Registrations survive; statistics are reset. */
    assert_int_equal(nwb_tel_scope_find(f->rec, 100, NWB_TEL_SCOPE_CPU), f->cpu);
    assert_int_equal(nwb_tel_timing_view_get(v, f->cpu, &e), 0);
    assert_int_equal(e.stats.samples, 0);
    /* Nothing pending: the flush sends nothing. */
    assert_int_equal(nwb_tel_flush_upload(f->rec), 0);
    assert_int_equal(f->cap.uploads, 0);
    /* And capture works again afterwards. */
    nwb_tel_recorder_set_capture(f->rec, NWB_TEL_CAPTURE_ALL);
    frame(f, 10, 5);
    assert_int_equal(nwb_tel_flush_upload(f->rec), 0);
    assert_int_equal(f->cap.uploads, 1);
}

static void test_recorder_frame_budget_drops_and_counts_in_stream(void **state)
{
    nwb_tel_recorder_config_t cfg = NWB_TEL_RECORDER_CONFIG_INIT;
    struct fixture *f = *state;
    nwb_tel_recorder_t *rec;
    nwb_tel_scope_id_t id;
    nwb_tel_recorder_stats_t st;
    struct kinds k;

    cfg.run_id = "r";
    cfg.build_id = "b";
    cfg.frame_bytes_max = 4096; /* a perf frame of 200 scopes (6.4 KB) does not fit */
    cfg.cpu_scopes_max = 300;
    assert_int_equal(nwb_tel_recorder_create(&cfg, &rec), 0);
    assert_int_equal(nwb_tel_scope_register(rec, 1, NWB_TEL_SCOPE_CPU, &id), 0);
    nwb_tel_recorder_set_upload(rec, 1, &f->sink);
    nwb_tel_recorder_set_capture(rec, NWB_TEL_CAPTURE_ALL);
    /* Frame 0: 200 scopes, too big for the frame budget: the perf frame is dropped. */
    nwb_tel_frame_begin(rec, 0, 10);
    for (int i = 0; i < 200; i++) {
        nwb_tel_scope_record(rec, id, 1, 10, 20, 0);
    }
    nwb_tel_text_record(rec, 11, 0, 1, "kept", 4);
    nwb_tel_frame_end(rec, 100);
    /* Frame 1: 310 scopes against a table of 300: 10 dropped, the frame itself fits. */
    nwb_tel_frame_begin(rec, 1, 200);
    for (int i = 0; i < 310; i++) {
        nwb_tel_scope_record(rec, i < 100 ? id : id, 1, 200, 210, 0);
    }
    nwb_tel_frame_end(rec, 300);
    nwb_tel_recorder_stats_get(rec, &st);
    assert_int_equal(st.dropped_events, 2); /* frame 0's perf, frame 1's perf (> 4096 B) */
    assert_int_equal(st.dropped_scopes, 200 + 10 + 300);
    /* Frame 2: 100 scopes fit (24 + 24 + 3200 bytes). */
    nwb_tel_frame_begin(rec, 2, 400);
    for (int i = 0; i < 100; i++) {
        nwb_tel_scope_record(rec, id, 1, 400, 410, 0);
    }
    nwb_tel_frame_end(rec, 500);
    assert_int_equal(nwb_tel_flush_upload(rec), 0);
    decode_kinds(&f->cap, &k);
    assert_int_equal(k.n[NWB_TEL_KIND_PERF_FRAME], 1);
    assert_int_equal(k.perf.u.perf.cpu_count, 100);
    assert_int_equal(k.n[NWB_TEL_KIND_TEXT_LOG], 1);
    /* The drops travel in the segment header. */
    assert_int_equal(k.last.dropped_events, 2);
    assert_int_equal(k.last.dropped_scopes, 510);
    nwb_tel_recorder_destroy(rec);
}

static void test_recorder_pending_cap_drops_whole_frames(void **state)
{
    nwb_tel_recorder_config_t cfg = NWB_TEL_RECORDER_CONFIG_INIT;
    struct fixture *f = *state;
    nwb_tel_recorder_t *rec;
    nwb_tel_scope_id_t id;
    nwb_tel_recorder_stats_t st;
    struct kinds k;

    cfg.run_id = "r";
    cfg.build_id = "b";
    cfg.frame_bytes_max = 2048;
    cfg.pending_bytes_max = 2048; /* room for a few frames of 10 scopes (368 B each) */
    assert_int_equal(nwb_tel_recorder_create(&cfg, &rec), 0);
    assert_int_equal(nwb_tel_scope_register(rec, 1, NWB_TEL_SCOPE_CPU, &id), 0);
    nwb_tel_recorder_set_upload(rec, 1, &f->sink);
    nwb_tel_recorder_set_capture(rec, NWB_TEL_CAPTURE_CPU);
    for (uint64_t i = 0; i < 20; i++) {
        nwb_tel_frame_begin(rec, i, 10 + i * 100);
        for (int s = 0; s < 10; s++) {
            nwb_tel_scope_record(rec, id, 1, 10 + i * 100, 20 + i * 100, 0);
        }
        nwb_tel_frame_end(rec, 90 + i * 100);
    }
    nwb_tel_recorder_stats_get(rec, &st);
    assert_int_equal(st.dropped_events, 20 - 5); /* 5 * 368 <= 2048 < 6 * 368 */
    assert_true(st.pending_bytes <= 2048 + 200);
    assert_int_equal(nwb_tel_flush_upload(rec), 0);
    decode_kinds(&f->cap, &k);
    assert_int_equal(k.n[NWB_TEL_KIND_PERF_FRAME], 5);
    assert_int_equal(k.last.dropped_events, 15);
    nwb_tel_recorder_destroy(rec);
}

static void test_recorder_timing_stats_keep_source_frame_extremes(void **state)
{
    struct fixture *f = *state;
    const nwb_tel_timing_view_t *v = nwb_tel_recorder_timing_view(f->rec);
    nwb_tel_timing_stats_t s = NWB_TEL_TIMING_STATS_INIT;
    nwb_tel_timing_entry_t e;

    /* The pure accumulator. */
    nwb_tel_timing_stats_add(&s, 30, 51);
    nwb_tel_timing_stats_add(&s, 10, 50);
    nwb_tel_timing_stats_add(&s, 20, 49);
    nwb_tel_timing_stats_add(&s, 40, 52);
    assert_int_equal(s.samples, 4);
    assert_int_equal(s.total_ns, 100);
    assert_int_equal(s.min_ns, 10);
    assert_int_equal(s.max_ns, 40);
    assert_int_equal(s.last_ns, 40);
    assert_int_equal(s.source_frame_min, 49);
    assert_int_equal(s.source_frame_max, 52);
    /* Through the recorder: reused GPU query slots publish 51 before 50 in one batch. */
    nwb_tel_recorder_set_capture(f->rec, NWB_TEL_CAPTURE_GPU_TIMING_ONLY);
    nwb_tel_frame_begin(f->rec, 53, 1);
    nwb_tel_gpu_sample(f->rec, f->gpu, 51, 2000);
    nwb_tel_gpu_sample(f->rec, f->gpu, 50, 1000);
    nwb_tel_frame_end(f->rec, 2);
    nwb_tel_frame_begin(f->rec, 54, 3);
    nwb_tel_gpu_sample(f->rec, f->gpu, 52, 1500);
    nwb_tel_frame_end(f->rec, 4);
    assert_int_equal(nwb_tel_timing_view_get(v, f->gpu, &e), 0);
    assert_int_equal(e.name, 200);
    assert_int_equal(e.type, NWB_TEL_SCOPE_GPU);
    assert_int_equal(e.stats.samples, 3);
    assert_int_equal(e.stats.source_frame_min, 50);
    assert_int_equal(e.stats.source_frame_max, 52);
    assert_int_equal(e.stats.min_ns, 1000);
    assert_int_equal(e.stats.max_ns, 2000);
    assert_int_equal(e.stats.last_ns, 1500);
    assert_int_equal(e.stats.total_ns, 4500);
    assert_int_equal(e.stats.publication_index, nwb_tel_timing_view_publications(v));
    assert_int_equal(nwb_tel_timing_view_publications(v), 2);
    assert_int_equal(nwb_tel_timing_view_count(v), 2);
    assert_int_equal(nwb_tel_timing_view_get(v, 2, &e), -EINVAL);
}

static void test_recorder_perf_capture_without_upload_sends_nothing(void **state)
{
    struct fixture *f = *state;
    const nwb_tel_timing_view_t *v = nwb_tel_recorder_timing_view(f->rec);
    nwb_tel_recorder_stats_t st;
    nwb_tel_timing_entry_t e;

    assert_int_equal(nwb_tel_recorder_set_upload(f->rec, 1, NULL), NWB_ECONFIG);
    assert_int_equal(nwb_tel_recorder_set_upload(f->rec, 0, &f->sink), 0);
    nwb_tel_recorder_set_capture(f->rec, NWB_TEL_CAPTURE_ALL);
    for (uint64_t i = 0; i < 5; i++) {
        frame(f, i, 50);
    }
    assert_int_equal(nwb_tel_flush_upload(f->rec), 0);
    assert_int_equal(f->cap.uploads, 0);
    nwb_tel_recorder_stats_get(f->rec, &st);
    assert_int_equal(st.pending_bytes, 0);
    assert_int_equal(st.uploads, 0);
    /* ... while the local timing view has everything. */
    assert_int_equal(nwb_tel_timing_view_get(v, f->cpu, &e), 0);
    assert_int_equal(e.stats.samples, 250);
    assert_int_equal(nwb_tel_timing_view_get(v, f->gpu, &e), 0);
    assert_int_equal(e.stats.samples, 5);
    /* Upload on, capture off: still nothing to send. */
    nwb_tel_recorder_set_upload(f->rec, 1, &f->sink);
    nwb_tel_recorder_set_capture(f->rec, NWB_TEL_CAPTURE_DISABLED);
    frame(f, 6, 50);
    assert_int_equal(nwb_tel_flush_upload(f->rec), 0);
    assert_int_equal(f->cap.uploads, 0);
}

static void test_recorder_heap_backing_beside_arenas(void **state)
{
    struct fixture *f = *state;
    nwb_tel_mem_source_t *again = NULL;
    struct kinds k;

    /* Owners aggregate by name (and kind). */
    assert_int_equal(nwb_tel_mem_source_register(f->rec, 300, NWB_TEL_MEM_ARENA,
                                                 NWB_TEL_PEAK_LARGEST_ARENA, &again),
                     0);
    assert_ptr_equal(again, f->arena);
    assert_int_equal(nwb_tel_mem_source_register(f->rec, 1, 7, 0, &again), NWB_EPROTO);
    nwb_tel_mem_alloc(f->arena, 1000);
    nwb_tel_mem_free(f->arena, 400);
    nwb_tel_mem_set_reserved(f->arena, 4096);
    nwb_tel_mem_alloc(f->heap, 50000);
    nwb_tel_recorder_set_upload(f->rec, 1, &f->sink);
    nwb_tel_recorder_set_capture(f->rec, NWB_TEL_CAPTURE_MEMORY);
    nwb_tel_frame_begin(f->rec, 0, 1);
    nwb_tel_frame_end(f->rec, 2);
    assert_int_equal(nwb_tel_flush_upload(f->rec), 0);
    decode_kinds(&f->cap, &k);
    assert_int_equal(k.n[NWB_TEL_KIND_MEMORY_FRAME], 1);
    assert_int_equal(k.mem.u.mem.arena_used_bytes, 600);
    assert_int_equal(k.mem.u.mem.arena_peak_bytes, 1000);
    assert_int_equal(k.mem.u.mem.arena_reserved_bytes, 4096);
    assert_int_equal(k.mem.u.mem.heap_used_bytes, 50000);
    assert_int_equal(k.mem.u.mem.allocations, 1);
    assert_int_equal(k.mem.u.mem.frees, 1);
    assert_int_equal(k.mem.u.mem.arena_count, 1);
    assert_int_equal(k.mem.u.mem.heap_count, 1);
    /* A free larger than the use saturates at zero instead of wrapping. */
    nwb_tel_mem_free(f->arena, 1u << 30);
    f->cap.all.len = 0;
    nwb_tel_frame_begin(f->rec, 1, 3);
    nwb_tel_frame_end(f->rec, 4);
    assert_int_equal(nwb_tel_flush_upload(f->rec), 0);
    decode_kinds(&f->cap, &k);
    assert_int_equal(k.mem.u.mem.arena_used_bytes, 0);
}

/* ---- Contributors --------------------------------------------------------------------- */

struct contrib {
    nwb_tel_recorder_t *rec;
    nwb_tel_contributor_id_t self, other;
    int calls;
    int unregister_other, unregister_self;
};

static void contrib_fn(void *ctx, nwb_tel_fg_builder_t *b, uint64_t frame)
{
    struct contrib *c = ctx;
    uint32_t q;

    (void)frame;
    c->calls++;
    nwb_tel_fg_queue_add(b, 9, NWB_TEL_QUEUE_COMPUTE, &q);
    /* Indices are checked: a pass on a packet that does not exist is refused and counted. */
    assert_int_equal(nwb_tel_fg_pass_add(b, 5, 99, 1, NULL), NWB_ERANGE);
    if (c->unregister_other) {
        assert_int_equal(nwb_tel_fg_contributor_unregister(c->rec, c->other), 0);
        c->unregister_other = 0;
    }
    if (c->unregister_self) {
        assert_int_equal(nwb_tel_fg_contributor_unregister(c->rec, c->self), 0);
        c->unregister_self = 0;
    }
}

static void test_recorder_contributor_unregistered_in_frame_is_not_called(void **state)
{
    struct fixture *f = *state;
    struct contrib a = {f->rec, 0, 0, 0, 1, 0};
    struct contrib b = {f->rec, 0, 0, 0, 0, 0};

    assert_int_equal(nwb_tel_fg_contributor_register(f->rec, contrib_fn, &a, &a.self), 0);
    assert_int_equal(nwb_tel_fg_contributor_register(f->rec, contrib_fn, &b, &b.self), 0);
    a.other = b.self;
    nwb_tel_recorder_set_capture(f->rec, NWB_TEL_CAPTURE_FRAME_GRAPH_ONLY);
    nwb_tel_recorder_set_upload(f->rec, 1, &f->sink);
    /* Frame 0: a unregisters b before b's turn: b is never called. */
    nwb_tel_frame_begin(f->rec, 0, 1);
    nwb_tel_frame_end(f->rec, 2);
    assert_int_equal(a.calls, 1);
    assert_int_equal(b.calls, 0);
    /* Frame 1: a unregisters itself: that call is its last. */
    a.unregister_self = 1;
    nwb_tel_frame_begin(f->rec, 1, 3);
    nwb_tel_frame_end(f->rec, 4);
    nwb_tel_frame_begin(f->rec, 2, 5);
    nwb_tel_frame_end(f->rec, 6);
    assert_int_equal(a.calls, 2);
    assert_int_equal(nwb_tel_fg_contributor_unregister(f->rec, a.self), -ENOENT);
    assert_int_equal(nwb_tel_fg_contributor_unregister(f->rec, b.self), -ENOENT);
}

struct blocking {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int in_callback;
    int unregister_returned;
    int calls;
    int returned_while_running; /* the bug this test catches */
    nwb_tel_recorder_t *rec;
    nwb_tel_contributor_id_t id;
};

static void timed_wait(struct blocking *b, int *flag, int ms)
{
    const nwb_deadline_t deadline = nwb_deadline_in_ms(ms);

    while (!*flag) {
        if (nwb_cond_wait_until(&b->cond, &b->lock, &deadline) == ETIMEDOUT) {
            break;
        }
    }
}

static void blocking_fn(void *ctx, nwb_tel_fg_builder_t *bld, uint64_t frame)
{
    struct blocking *b = ctx;

    (void)bld;
    (void)frame;
    pthread_mutex_lock(&b->lock);
    b->calls++;
    b->in_callback = 1;
    pthread_cond_broadcast(&b->cond);
    /* Give the other thread every chance to return from unregister while we run: it must
     * not (it waits for this call to finish). The wait ends by timeout in a correct build. */
    timed_wait(b, &b->unregister_returned, 200);
    b->returned_while_running = b->unregister_returned;
    pthread_mutex_unlock(&b->lock);
}

static void *unregister_thread(void *arg)
{
    struct blocking *b = arg;

    pthread_mutex_lock(&b->lock);
    timed_wait(b, &b->in_callback, 10000);
    pthread_mutex_unlock(&b->lock);
    assert_int_equal(nwb_tel_fg_contributor_unregister(b->rec, b->id), 0);
    pthread_mutex_lock(&b->lock);
    b->unregister_returned = 1;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

static void test_recorder_unregister_from_other_thread_waits_for_frame(void **state)
{
    struct fixture *f = *state;
    struct blocking b;
    pthread_t t;

    memset(&b, 0, sizeof(b));
    pthread_mutex_init(&b.lock, NULL);
    assert_int_equal(nwb_cond_init_monotonic(&b.cond), 0);
    b.rec = f->rec;
    assert_int_equal(nwb_tel_fg_contributor_register(f->rec, blocking_fn, &b, &b.id), 0);
    nwb_tel_recorder_set_capture(f->rec, NWB_TEL_CAPTURE_FRAME_GRAPH_ONLY);
    nwb_tel_recorder_set_upload(f->rec, 1, &f->sink);
    assert_int_equal(pthread_create(&t, NULL, unregister_thread, &b), 0);
    nwb_tel_frame_begin(f->rec, 0, 1);
    nwb_tel_frame_end(f->rec, 2);
    pthread_join(t, NULL);
    assert_int_equal(b.calls, 1);
    assert_false(b.returned_while_running);
    assert_true(b.unregister_returned);
    /* Never called again: its owner may now be destroyed. */
    nwb_tel_frame_begin(f->rec, 1, 3);
    nwb_tel_frame_end(f->rec, 4);
    assert_int_equal(b.calls, 1);
    pthread_cond_destroy(&b.cond);
    pthread_mutex_destroy(&b.lock);
}

static void test_recorder_sink_refusal_counted_and_reported(void **state)
{
    struct fixture *f = *state;
    nwb_tel_recorder_stats_t st;
    struct kinds k;

    nwb_tel_recorder_set_upload(f->rec, 1, &f->sink);
    nwb_tel_recorder_set_capture(f->rec, NWB_TEL_CAPTURE_ALL);
    frame(f, 0, 4);
    f->cap.refuse = 1;
    assert_int_equal(nwb_tel_flush_upload(f->rec), NWB_EFULL);
    f->cap.refuse = 0;
    nwb_tel_recorder_stats_get(f->rec, &st);
    assert_int_equal(st.dropped_uploads, 1);
    assert_int_equal(st.dropped_events, 4); /* text, perf, memory, frame graph */
    frame(f, 1, 4);
    assert_int_equal(nwb_tel_flush_upload(f->rec), 0);
    decode_kinds(&f->cap, &k);
    assert_int_equal(k.last.seq, 2); /* seq 1 was the refused upload */
    assert_int_equal(k.last.dropped_uploads, 1);
    assert_int_equal(k.last.dropped_events, 4);
    /* Inside a frame a flush is refused. */
    nwb_tel_frame_begin(f->rec, 2, 1);
    assert_int_equal(nwb_tel_flush_upload(f->rec), -EBUSY);
    assert_int_equal(nwb_tel_frame_begin(f->rec, 3, 1), -EBUSY);
    nwb_tel_frame_end(f->rec, 2);
    assert_int_equal(nwb_tel_frame_end(f->rec, 3), -EINVAL);
}

static void test_recorder_bad_ids_and_calls_outside_frames_are_counted(void **state)
{
    struct fixture *f = *state;
    nwb_tel_recorder_stats_t st;
    char big[NWB_TEL_TEXT_MAX + 100];
    struct kinds k;

    memset(big, 'x', sizeof(big));
    assert_int_equal(nwb_tel_scope_find(f->rec, 12345, NWB_TEL_SCOPE_CPU), NWB_TEL_SCOPE_INVALID);
    assert_int_equal(nwb_tel_scope_find(f->rec, 100, NWB_TEL_SCOPE_GPU), NWB_TEL_SCOPE_INVALID);
    nwb_tel_recorder_set_upload(f->rec, 1, &f->sink);
    nwb_tel_recorder_set_capture(f->rec, NWB_TEL_CAPTURE_ALL);
    nwb_tel_scope_record(f->rec, f->cpu, 1, 1, 2, 0); /* outside a frame */
    nwb_tel_frame_begin(f->rec, 0, 1);
    nwb_tel_scope_record(f->rec, NWB_TEL_SCOPE_INVALID, 1, 1, 2, 0);
    nwb_tel_scope_record(f->rec, f->gpu, 1, 1, 2, 0);   /* a GPU id as CPU scope */
    nwb_tel_scope_record(f->rec, f->cpu, 1, 5, 2, 0);   /* reversed */
    nwb_tel_scope_record(f->rec, f->cpu, 1, 1, 2, 300); /* too deep */
    nwb_tel_gpu_sample(f->rec, f->cpu, 0, 5);           /* a CPU id as GPU scope */
    nwb_tel_text_record(f->rec, 1, 0, 1, big, sizeof(big));
    nwb_tel_frame_end(f->rec, 10);
    nwb_tel_recorder_stats_get(f->rec, &st);
    assert_int_equal(st.dropped_scopes, 6);
    assert_int_equal(nwb_tel_flush_upload(f->rec), 0);
    decode_kinds(&f->cap, &k);
    assert_int_equal(k.n[NWB_TEL_KIND_TEXT_LOG], 1); /* cut to 4096 bytes, kept */
    assert_int_equal(k.perf.u.perf.cpu_count, 0);
}

static void test_recorder_allocation_failures_drop_and_count(void **state)
{
    nwb_tel_synth_config_t cfg = NWB_TEL_SYNTH_CONFIG_INIT;
    long clean_at = -1;

    (void)state;
    cfg.frames = 8;
    cfg.scopes_per_frame = 12;
    cfg.frames_per_upload = 3;
    cfg.frame_graph_every = 2;
    cfg.diagnostics_every = 3;
    cfg.unknown_kinds = 1;
    /* The synthetic game drives every recorder path. With the n-th allocation failing it must
     * never crash or leak: setup fails cleanly, or recording drops and counts, and whatever
     * it wrote decodes. */
    for (long n = 0; n < 3000 && clean_at < 0; n++) {
        nwb_tel_decode_result_t res;
        nwb_buf_t out;
        int rc;

        nwb_buf_init(&out, 64u << 20);
        nwb_alloc_fail_after(n);
        rc = nwb_tel_synth(&cfg, &out, NULL);
        nwb_alloc_fail_after(-1);
        assert_true(rc == 0 || rc == -ENOMEM || rc == NWB_ETOOBIG);
        assert_int_equal(nwb_tel_stream_decode(out.data, out.len, 0, NULL, NULL, &res), 0);
        if (rc == 0 && res.events > 0) {
            struct kinds k;
            struct capture c;

            c.all = out;
            decode_kinds(&c, &k);
            if (k.last.dropped_events == 0 && k.last.dropped_scopes == 0 &&
                k.last.dropped_uploads == 0 && res.segments == 3) {
                clean_at = n;
            }
        }
        nwb_buf_cleanup(&out);
    }
    print_message("synth records without drops from allocation %ld on\n", clean_at);
    assert_true(clean_at > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_recorder_capture_options_select_event_kinds, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_recorder_no_allocation_once_warm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recorder_clear_only_while_disabled_releases_capacity,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_recorder_frame_budget_drops_and_counts_in_stream,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_recorder_pending_cap_drops_whole_frames, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_recorder_timing_stats_keep_source_frame_extremes,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_recorder_perf_capture_without_upload_sends_nothing,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_recorder_heap_backing_beside_arenas, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_recorder_contributor_unregistered_in_frame_is_not_called, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recorder_unregister_from_other_thread_waits_for_frame,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_recorder_sink_refusal_counted_and_reported, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_recorder_bad_ids_and_calls_outside_frames_are_counted,
                                        setup, teardown),
        cmocka_unit_test(test_recorder_allocation_failures_drop_and_count),
    };

    nwb_replace_allocator(count_malloc, count_realloc, count_calloc, free);
    return cmocka_run_group_tests_name("telemetry.recorder", tests, NULL, NULL);
}
