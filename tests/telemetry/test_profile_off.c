/* SPDX-License-Identifier: MIT */
/*
 * test_profile_off.c (ctest telemetry.profile_off, and telemetry.profile_stats) - the profiling
 * macros at a lower compile-time level: built with NWB_TELEMETRY_LEVEL=0 (OFF) no macro
 * evaluates its arguments (a counter that must stay 0) and nothing is recorded; at 1 (STATS)
 * counters are recorded and evaluated once, scopes compile out.
 */
/* The level this variant tests, whatever the build's (tests/telemetry/CMakeLists.txt). */
#undef NWB_TELEMETRY_LEVEL
#define NWB_TELEMETRY_LEVEL NWB_TEST_TELEMETRY_LEVEL

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nwb/alloc.h"
#include "nwb/profile.h"
#include "nwb/telemetry.h"


static int evaluations;

static int side_effect(void)
{
    return ++evaluations;
}

static int counters_seen;

static int count_counters(void *ctx, const nwb_tel_event_t *ev, size_t off)
{
    (void)ctx;
    (void)off;
    if (ev->kind == NWB_TEL_KIND_COUNTER_FRAME) {
        counters_seen += (int)ev->u.counters.count;
    }
    if (ev->kind == NWB_TEL_KIND_PERF_FRAME) {
        assert_int_equal(ev->u.perf.cpu_count, 0); /* no scope below FULL */
    }
    return 0;
}

static int decode_upload(void *ctx, nwb_tel_upload_t *up)
{
    const nwb_tel_visitor_t v = {NULL, count_counters};
    nwb_tel_decode_result_t res;

    (void)ctx;
    assert_int_equal(nwb_tel_stream_decode(up->data, up->len, NWB_TEL_DECODE_SINGLE_SEGMENT, &v,
                                           NULL, &res),
                     0);
    nwb_free(up->data);
    return 0;
}

static void test_level(void **state)
{
    nwb_tel_recorder_t *rec;
    nwb_tel_sink_t sink = {decode_upload, NULL};
    (void)state;

    assert_int_equal(nwb_tel_recorder_create(NULL, &rec), 0);
    nwb_tel_recorder_set_capture(rec, NWB_TEL_CAPTURE_ALL);
    assert_int_equal(nwb_tel_recorder_set_upload(rec, 1, &sink), 0);
    assert_int_equal(nwb_tel_frame_begin(rec, 0, 0), 0);
    {
        NWB_PROFILE_SCOPE("off/scope");
        NWB_PROFILE_BEGIN("off/begin");
        NWB_PROFILE_COUNTER("off/counter", side_effect());
        NWB_PROFILE_END();
    }
    assert_int_equal(nwb_tel_frame_end(rec, 0), 0);
    assert_int_equal(nwb_tel_flush_upload(rec), 0);
#if NWB_TELEMETRY_LEVEL == NWB_TELEMETRY_OFF
    assert_int_equal(evaluations, 0);
    assert_int_equal(counters_seen, 0);
#else
    assert_int_equal(evaluations, 1);
    assert_int_equal(counters_seen, 1);
#endif
    nwb_tel_recorder_destroy(rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_level)};

    return cmocka_run_group_tests(tests, NULL, NULL);
}
