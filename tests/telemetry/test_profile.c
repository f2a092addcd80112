/* SPDX-License-Identifier: MIT */
/*
 * test_profile.c (ctest telemetry.profile) - the profiling macros through a real recorder: nested
 * scopes with their depth and thread, BEGIN/END pairs, a malformed END and a BEGIN left open at
 * frame end counted, counters and marks, threads named and attributed, their rings released at
 * exit, string tables once per segment per name, and a full ring counted as drops. Every upload
 * is decoded by the strict decoder.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/profile.h"
#include "nwb/telemetry.h"

struct uploads {
    uint8_t *data[64];
    size_t len[64];
    unsigned n;
};

static int keep_upload(void *ctx, nwb_tel_upload_t *up)
{
    struct uploads *u = ctx;

    if (u->n == 64) {
        return NWB_EFULL;
    }
    u->data[u->n] = up->data;
    u->len[u->n] = up->len;
    u->n++;
    return 0;
}

/* What the decoded uploads held. */
struct seen {
    unsigned scopes, scopes_depth1, scopes_other_thread, counters, marks, strings_frame;
    unsigned thread_events, named_worker, malformed_max, dropped_max, segments;
    double counter_sum;
    uint32_t main_tid;
};

static int on_event(void *ctx, const nwb_tel_event_t *ev, size_t off)
{
    struct seen *s = ctx;
    (void)off;
    switch (ev->kind) {
    case NWB_TEL_KIND_PERF_FRAME:
        for (uint32_t i = 0; i < ev->u.perf.cpu_count; i++) {
            nwb_tel_cpu_scope_t c;

            nwb_tel_cpu_scope_at(&ev->u.perf, i, &c);
            s->scopes++;
            s->scopes_depth1 += c.depth == 1;
            s->scopes_other_thread += c.thread != s->main_tid;
        }
        break;
    case NWB_TEL_KIND_COUNTER_FRAME:
        for (uint32_t i = 0; i < ev->u.counters.count; i++) {
            nwb_tel_counter_t c;

            nwb_tel_counter_at(&ev->u.counters, i, &c);
            assert_int_equal(c.name, nwb_name_hash("draw_calls", 10));
            s->counters++;
            s->counter_sum += c.value;
        }
        break;
    case NWB_TEL_KIND_MARK:
        assert_int_equal(ev->u.mark.len, 12);
        assert_memory_equal(ev->u.mark.text, "level loaded", 12);
        s->marks++;
        break;
    case NWB_TEL_KIND_STRING_TABLE: {
        size_t pos = 0;
        nwb_tel_string_t str;

        while (nwb_tel_string_next(&ev->u.strings, &pos, &str)) {
            if (str.len == 5 && memcmp(str.str, "frame", 5) == 0) {
                s->strings_frame++;
            }
        }
        break;
    }
    case NWB_TEL_KIND_THREAD:
        s->thread_events++;
        if (ev->u.thread.name_len == 6 && memcmp(ev->u.thread.name, "worker", 6) == 0) {
            s->named_worker++;
        }
        if (ev->u.thread.malformed > s->malformed_max) {
            s->malformed_max = (unsigned)ev->u.thread.malformed;
        }
        if (ev->u.thread.dropped > s->dropped_max) {
            s->dropped_max = (unsigned)ev->u.thread.dropped;
        }
        break;
    default:
        break;
    }
    return 0;
}

static void decode_all(struct uploads *u, struct seen *s)
{
    const nwb_tel_visitor_t v = {NULL, on_event};

    for (unsigned i = 0; i < u->n; i++) {
        nwb_tel_decode_result_t res;

        assert_int_equal(nwb_tel_stream_decode(u->data[i], u->len[i],
                                               NWB_TEL_DECODE_SINGLE_SEGMENT, &v, s, &res),
                         0);
        s->segments++;
        nwb_free(u->data[i]);
    }
    u->n = 0;
}

static pthread_mutex_t step_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t step_cond = PTHREAD_COND_INITIALIZER;
static int worker_recorded;

static void *worker(void *arg)
{
    (void)arg;
    nwb_tel_thread_name("worker");
    for (int i = 0; i < 3; i++) {
        NWB_PROFILE_SCOPE("job");
        {
            NWB_PROFILE_SCOPE("job/inner");
        }
    }
    pthread_mutex_lock(&step_lock);
    worker_recorded = 1;
    pthread_cond_signal(&step_cond);
    pthread_mutex_unlock(&step_lock);
    return NULL;
}

static void test_scopes_threads_counters_marks(void **state)
{
    nwb_tel_recorder_t *rec;
    struct uploads u = {{0}, {0}, 0};
    struct seen s;
    nwb_tel_sink_t sink = {keep_upload, &u};
    pthread_t th;
    (void)state;

    memset(&s, 0, sizeof(s));
    s.main_tid = (uint32_t)nwb__prof_thread()->tid;
    assert_int_equal(nwb_tel_recorder_create(NULL, &rec), 0);
    nwb_tel_recorder_set_capture(rec, NWB_TEL_CAPTURE_ALL);
    assert_int_equal(nwb_tel_recorder_set_upload(rec, 1, &sink), 0);
    for (uint64_t f = 0; f < 2; f++) {
        assert_int_equal(nwb_tel_frame_begin(rec, f, 0), 0);
        {
            NWB_PROFILE_SCOPE("frame");
            {
                NWB_PROFILE_SCOPE("render/shadows");
                NWB_PROFILE_COUNTER("draw_calls", 10 + f);
            }
            NWB_PROFILE_BEGIN("update");
            NWB_PROFILE_END();
        }
        if (f == 0) {
            worker_recorded = 0;
            assert_int_equal(pthread_create(&th, NULL, worker, NULL), 0);
            pthread_mutex_lock(&step_lock);
            while (!worker_recorded) {
                pthread_cond_wait(&step_cond, &step_lock);
            }
            pthread_mutex_unlock(&step_lock);
            assert_int_equal(pthread_join(th, NULL), 0);
            nwb_tel_mark("level loaded");
            NWB_PROFILE_END(); /* no BEGIN: malformed */
            NWB_PROFILE_BEGIN("left open"); /* closed at frame end: malformed */
        }
        assert_int_equal(nwb_tel_frame_end(rec, 0), 0);
        assert_int_equal(nwb_tel_flush_upload(rec), 0);
    }
    decode_all(&u, &s);
    assert_int_equal(s.segments, 2);
    /* frame 0: frame, render/shadows, update, left open, 3 x (job, job/inner); frame 1: 3 */
    assert_int_equal(s.scopes, 4 + 6 + 3);
    assert_int_equal(s.scopes_other_thread, 6);
    assert_int_equal(s.scopes_depth1, 2 + 3 + 2);
    assert_int_equal(s.counters, 2);
    assert_true(s.counter_sum == 21.0);
    assert_int_equal(s.marks, 1);
#if NWB_IS_FINAL
    assert_int_equal(s.strings_frame, 0); /* fin: hashes only */
#else
    assert_int_equal(s.strings_frame, 2); /* once in each segment */
#endif
    assert_true(s.named_worker >= 1);
    assert_int_equal(s.malformed_max, 2);
    assert_int_equal(s.dropped_max, 0);
    nwb_tel_recorder_destroy(rec);
}

static void test_full_ring_counts_drops(void **state)
{
    nwb_tel_recorder_t *rec;
    struct uploads u = {{0}, {0}, 0};
    struct seen s;
    nwb_tel_sink_t sink = {keep_upload, &u};
    nwb_tel_recorder_config_t cfg = NWB_TEL_RECORDER_CONFIG_INIT;
    (void)state;

    memset(&s, 0, sizeof(s));
    s.main_tid = (uint32_t)nwb__prof_thread()->tid;
    cfg.cpu_scopes_max = NWB_TEL_CPU_SCOPES_MAX;
    cfg.frame_bytes_max = 8u << 20;
    assert_int_equal(nwb_tel_recorder_create(&cfg, &rec), 0);
    nwb_tel_recorder_set_capture(rec, NWB_TEL_CAPTURE_CPU);
    assert_int_equal(nwb_tel_recorder_set_upload(rec, 1, &sink), 0);
    assert_int_equal(nwb_tel_frame_begin(rec, 0, 0), 0);
    for (unsigned i = 0; i < NWB_TEL_PROFILE_RING_SLOTS + 100; i++) {
        NWB_PROFILE_SCOPE("tiny");
    }
    assert_int_equal(nwb_tel_frame_end(rec, 0), 0);
    assert_int_equal(nwb_tel_flush_upload(rec), 0);
    decode_all(&u, &s);
    assert_int_equal(s.scopes, NWB_TEL_PROFILE_RING_SLOTS);
    assert_int_equal(s.dropped_max, 100);
    nwb_tel_recorder_destroy(rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scopes_threads_counters_marks),
        cmocka_unit_test(test_full_ring_counts_drops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
