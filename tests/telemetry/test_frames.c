/* SPDX-License-Identifier: MIT */
/*
 * test_frames.c - the frame queries behind the read API: frame times over a range reduced to
 * at most P buckets with their min and max (a hitch is never averaged away), the range's
 * edges, bad arguments, gaps and restarts in the frame numbering, frames beyond the table,
 * long frames, the budget and percentiles beside them; and one frame in full from a demo-like
 * stream (scopes per thread, GPU windows, memory, its log lines). All JSON parsed strictly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/error.h"
#include "nwb/namesym.h"
#include "nwb/telemetry_report.h"
#include "tel_report_int.h"
#include "tel_test_util.h"
#include "test_support.h"

/* Frames [first, first + n) of duration @p ns_of(frame), in one segment of seq @p seq. */
static void feed_frames(nwb_tel_report_state_t *s, uint64_t seq, uint64_t first, uint64_t n,
                        uint64_t (*ns_of)(uint64_t))
{
    nwb_buf_t b;

    nwb_buf_init(&b, 64u << 20);
    tel_put_header(&b, seq);
    for (uint64_t f = first; f < first + n; f++) {
        nwb_tel_perf_frame_t pf = {f * 1000, ns_of(f), NULL, NULL, 0, 0};

        assert_int_equal(nwb_tel_encode_perf(&b, f, f, &pf), 0);
    }
    assert_int_equal(nwb_tel_report_state_feed(s, b.data, b.len, NWB_TEL_FEED_ATOMIC, NULL), 0);
    nwb_buf_cleanup(&b);
}

static uint64_t hitchy(uint64_t f)
{
    if (f == 4321) {
        return 200000000; /* a 200 ms hitch */
    }
    if (f == 777) {
        return 1000000; /* a 1 ms dip */
    }
    return 16000000 + (f * 7919) % 1500000;
}

static uint64_t flat(uint64_t f)
{
    return 16000000 + f % 3;
}

/* The document @p j was writing (call status @p rc) as a NUL-terminated string (malloc'd), or
 * NULL when the call failed (it must then have written nothing). */
static char *answer(nwb_buf_t *b, nwb_json_t *j, int rc)
{
    size_t bad = 0;
    char *out;

    if (rc != 0) {
        assert_int_equal(b->len, 0);
        nwb_buf_cleanup(b);
        return NULL;
    }
    assert_int_equal(nwb_json_finish(j), 0);
    out = tel_json_take(b, &bad);
    if (out == NULL) {
        fail_msg("answer is not valid JSON at %zu", bad);
    }
    return out;
}

/* The frames query as a string (malloc'd), or NULL with *@p rc set. */
static char *query(const nwb_tel_report_state_t *s, uint64_t from, uint64_t to, uint32_t points,
                   uint64_t budget, int *rc)
{
    nwb_buf_t b;
    nwb_json_t j;

    nwb_buf_init(&b, 64u << 20);
    nwb_json_init(&j, &b, NULL);
    *rc = nwb_tel_report_state_frames(s, from, to, points, budget, &j);
    return answer(&b, &j, *rc);
}

/* Sum of the buckets' "frames" (the answer's own "frames" comes before "buckets"). */
static uint64_t bucket_frames(const char *json)
{
    const char *p = strstr(json, "\"buckets\":[");
    uint64_t n = 0;

    assert_non_null(p);
    for (p = strstr(p, "\"frames\":"); p != NULL; p = strstr(p + 1, "\"frames\":")) {
        n += strtoull(p + 9, NULL, 10);
    }
    return n;
}

static void test_frames_buckets_keep_the_hitch_and_the_dip(void **state)
{
    nwb_tel_report_state_t *s;
    char *json;
    int rc;

    (void)state;
    assert_int_equal(nwb_tel_report_state_create(&s), 0);
    for (uint64_t seg = 0; seg < 100; seg++) {
        feed_frames(s, seg, seg * 100, 100, hitchy);
    }
    json = query(s, 0, 9999, 100, 0, &rc);
    assert_int_equal(rc, 0);
    tel_expect(json,
               "{\"from\":0,\"to\":9999,\"points\":100,\"bucketFrames\":100,\"frames\":10000,"
               "\"firstFrame\":0,\"lastFrame\":9999,\"runFrames\":10000,\"untrackedFrames\":0,"
               "\"budgetMs\":16.666667,");
    assert_int_equal(nwb_test_count(json, "\"minMs\""), 100);
    assert_int_equal(bucket_frames(json), 10000);
    /* The one-frame hitch is its bucket's max, the dip its bucket's min, exactly. */
    tel_expect(json, "{\"from\":4300,\"to\":4399,\"frames\":100,");
    tel_expect(json, "\"maxMs\":200.000000,\"maxFrame\":4321}");
    tel_expect(json,
               "{\"from\":700,\"to\":799,\"frames\":100,\"minMs\":1.000000,\"minFrame\":777,");
    free(json);

    /* An uneven range: the last bucket ends at `to`; never more buckets than asked. */
    json = query(s, 10, 1009, 3, 0, &rc);
    assert_int_equal(rc, 0);
    tel_expect(json, "\"bucketFrames\":334,\"frames\":1000,");
    tel_expect(json, "{\"from\":678,\"to\":1009,\"frames\":332,");
    assert_int_equal(nwb_test_count(json, "\"minMs\""), 3);
    free(json);

    /* The budget as asked, and the run's percentiles beside it (as in the report). */
    json = query(s, 0, 0, 1, 33333333, &rc);
    assert_int_equal(rc, 0);
    tel_expect(json, "\"budgetMs\":33.333333,\"p50Ms\":");
    tel_expect(json, "\"percentileRelativeError\":0.000000,\"buckets\":[{\"from\":0,\"to\":0,"
                     "\"frames\":1,");
    {
        nwb_buf_t rep;
        const char *p50 = strstr(json, "\"p50Ms\":");
        char needle[64];

        nwb_buf_init(&rep, NWB_TEL_REPORT_JSON_MAX);
        assert_int_equal(nwb_tel_report_state_write(s, NULL, &rep), 0);
        assert_int_equal(nwb_buf_append(&rep, "", 1), 0);
        assert_non_null(p50);
        snprintf(needle, sizeof(needle), "%.*s", (int)(strchr(p50, ',') - p50), p50);
        tel_expect((const char *)rep.data, needle);
        nwb_buf_cleanup(&rep);
    }
    free(json);
    nwb_tel_report_state_destroy(s);
}

static void test_frames_edges_and_bad_arguments(void **state)
{
    nwb_tel_report_state_t *s;
    char *json;
    int rc;

    (void)state;
    assert_int_equal(nwb_tel_report_state_create(&s), 0);
    /* An empty run: no range, no buckets. */
    json = query(s, 0, UINT64_MAX, 10, 0, &rc);
    assert_int_equal(rc, 0);
    tel_expect(json, "\"frames\":0,\"firstFrame\":null,\"lastFrame\":null,\"runFrames\":0,");
    tel_expect(json, "\"buckets\":[]}");
    free(json);
    {
        uint64_t lo, hi;

        assert_int_equal(nwb_tel_report_state_frame_range(s, &lo, &hi), NWB_ERANGE);
    }
    feed_frames(s, 1, 0, 500, flat);
    /* from > to, no points, too many points: refused, nothing written. */
    assert_null(query(s, 10, 9, 10, 0, &rc));
    assert_int_equal(rc, NWB_ERANGE);
    assert_null(query(s, 0, 10, 0, 0, &rc));
    assert_int_equal(rc, NWB_ERANGE);
    assert_null(query(s, 0, 10, NWB_TEL_FRAMES_POINTS_MAX + 1, 0, &rc));
    assert_int_equal(rc, NWB_ERANGE);
    /* The most points: one frame each. */
    json = query(s, 0, 499, NWB_TEL_FRAMES_POINTS_MAX, 0, &rc);
    assert_int_equal(rc, 0);
    tel_expect(json, "\"bucketFrames\":1,\"frames\":500,");
    assert_int_equal(nwb_test_count(json, "\"minMs\""), 500);
    free(json);
    /* The whole number range in one bucket (no overflow), and a range past the frames. */
    json = query(s, 0, UINT64_MAX, 1, 0, &rc);
    assert_int_equal(rc, 0);
    tel_expect(json, "\"bucketFrames\":18446744073709551615,\"frames\":500,");
    tel_expect(json, "{\"from\":0,\"to\":18446744073709551615,\"frames\":500,");
    free(json);
    json = query(s, 1000, 2000, 5, 0, &rc);
    assert_int_equal(rc, 0);
    tel_expect(json, "\"frames\":0,\"firstFrame\":0,\"lastFrame\":499,");
    tel_expect(json, "\"buckets\":[]}");
    free(json);
    json = query(s, UINT64_MAX, UINT64_MAX, 1, 0, &rc);
    assert_int_equal(rc, 0);
    tel_expect(json, "\"buckets\":[]}");
    free(json);
    nwb_tel_report_state_destroy(s);
}

static uint64_t long_frame(uint64_t f)
{
    return f == 5 ? 10000000000ull : 16000000; /* one 10 s frame, beside the 32-bit ones */
}

static void test_frames_gaps_restarts_bounds_and_long_frames(void **state)
{
    nwb_tel_report_state_t *s;
    char *json;
    int rc;

    (void)state;
    assert_int_equal(nwb_tel_report_state_create(&s), 0);
    /* 0..99, a gap, 500..599, then 50..59 again (a restarted count): all of them counted. */
    feed_frames(s, 1, 0, 100, flat);
    feed_frames(s, 2, 500, 100, flat);
    feed_frames(s, 3, 50, 10, long_frame);
    json = query(s, 0, 999, 10, 0, &rc);
    assert_int_equal(rc, 0);
    tel_expect(json, "\"frames\":210,");
    tel_expect(json, "{\"from\":0,\"to\":99,\"frames\":110,");
    tel_expect(json, "{\"from\":500,\"to\":599,\"frames\":100,");
    assert_int_equal(nwb_test_count(json, "\"minMs\""), 2);
    free(json);
    json = query(s, 55, 55, 1, 0, &rc);
    assert_int_equal(rc, 0);
    tel_expect(json, "\"frames\":2,");
    free(json);
    nwb_tel_report_state_destroy(s);

    /* A 10 s frame is kept exactly; frames beyond the table's bound are counted apart. */
    assert_int_equal(nwb_tel_report_state_create(&s), 0);
    nwb__tel_report_state_limit_frames(s, 1000);
    feed_frames(s, 1, 0, 1500, long_frame);
    json = query(s, 0, 1499, 1, 0, &rc);
    assert_int_equal(rc, 0);
    tel_expect(json, "\"frames\":1000,\"firstFrame\":0,\"lastFrame\":1499,\"runFrames\":1500,"
                     "\"untrackedFrames\":500,");
    tel_expect(json, "\"maxMs\":10000.000000,\"maxFrame\":5}");
    tel_expect(json, "\"percentileRelativeError\":0.031250,");
    free(json);
    nwb_tel_report_state_destroy(s);
}

/* The frame detail as a string (malloc'd), or NULL with *@p rc set. */
static char *detail(const uint8_t *d, size_t len, uint64_t frame, const nwb_namesym_table_t *n,
                    int *rc)
{
    nwb_buf_t b;
    nwb_json_t j;

    nwb_buf_init(&b, 64u << 20);
    nwb_json_init(&j, &b, NULL);
    *rc = nwb_tel_frame_detail_write(d, len, frame, n, &j);
    return answer(&b, &j, *rc);
}

static void test_frames_detail_of_a_demo_like_frame(void **state)
{
    nwb_namesym_table_t *names = NULL;
    size_t len;
    uint8_t *d = tel_read_file(tel_data_path("golden_run.nwbs"), &len);
    size_t seg[8];
    const size_t nseg = tel_segment_offsets(d, len, seg, 8);
    char err[256];
    char *json;
    char *rep;
    int rc;

    (void)state;
    assert_non_null(d);
    assert_int_equal(nseg, 3);
    assert_int_equal(nwb_namesym_table_create(&names), 0);
    assert_true(nwb_namesym_table_add_file(names, tel_data_path("golden_run.namesym"), NULL, NULL,
                                           err, sizeof(err)) > 0);
    /* Frame 36 is the first hitch of the synthetic game, in the second upload (30..59). */
    json = detail(d + seg[1], seg[2] - seg[1], 36, names, &rc);
    assert_int_equal(rc, 0);
    tel_expect(json, "{\"frame\":36,\"timestampNs\":");
    tel_expect(json, "\"threads\":[{\"thread\":1,\"name\":\"main\",\"scopes\":[{\"name\":\"");
    tel_expect(json, "{\"thread\":2,\"name\":\"worker\",\"scopes\":[");
    tel_expect(json, "{\"thread\":3,\"name\":\"audio\",\"scopes\":[{\"name\":\"audio.mix\"");
    tel_expect(json, "\"depth\":1,\"startNs\":");
    tel_expect(json, "\"gpu\":[{\"name\":\"");
    tel_expect(json, "\"sourceFrameMax\":34,");
    tel_expect(json, "\"memory\":{\"arenaUsedBytes\":");
    tel_expect(json, "\"logs\":[{\"timestampNs\":");
    tel_expect(json, "\"message\":\"frame 36: ");
    tel_expect(json, "\"message\":\"frame 36 over budget: ");
    tel_expect(json, "],\"moreLogs\":0}");
    /* A graph only every 30th frame; the frame's five counter samples and its hitch mark. */
    tel_expect(json, "\"frameGraph\":null,\"counters\":[{\"name\":\"render.drawCalls\",\"value\":");
    tel_expect(json, "{\"name\":\"audio.voices\",\"value\":");
    tel_expect(json, "\"thread\":2,\"tsMs\":");
    tel_expect(json, "],\"moreCounters\":0,\"marks\":[{\"thread\":2,\"tsMs\":");
    tel_expect(json, "\"text\":\"streaming stall\"}],\"moreMarks\":0,\"logs\":[");
    /* Its duration is the one the report lists among the worst frames. */
    {
        const char *ms = strstr(json, "\"durationMs\":");
        char needle[64];
        nwb_buf_t b;

        nwb_buf_init(&b, NWB_TEL_REPORT_JSON_MAX);
        assert_int_equal(nwb_tel_report_build(d, len, NULL, &b, NULL), 0);
        assert_int_equal(nwb_buf_append(&b, "", 1), 0);
        rep = (char *)b.data;
        assert_non_null(ms);
        snprintf(needle, sizeof(needle), "{\"frame\":36,\"ms\":%.*s",
                 (int)(strchr(ms, ',') - ms - 13), ms + 13);
        tel_expect(rep, needle);
        nwb_buf_cleanup(&b);
    }
    free(json);

    /* Frame 59 carries a frame graph: its queues, packets, passes, edges and counters. */
    json = detail(d + seg[1], seg[2] - seg[1], 59, names, &rc);
    assert_int_equal(rc, 0);
    tel_expect(json, "\"frameGraph\":{\"queues\":[{\"name\":\"");
    tel_expect(json, "\"packets\":[{\"queue\":");
    tel_expect(json, "\"passes\":[{\"name\":\"");
    tel_expect(json, "\"edges\":[[");
    tel_expect(json, "\"counters\":{\"emittedWaits\":");
    free(json);

    /* Scopes are grouped by thread, in start order within each. */
    json = detail(d, len, 3, NULL, &rc);
    assert_int_equal(rc, 0);
    {
        const char *t1 = strstr(json, "{\"thread\":1,");
        const char *t2 = strstr(json, "{\"thread\":2,");
        unsigned long long last = 0;

        assert_non_null(t1);
        assert_non_null(t2);
        for (const char *p = strstr(t1, "\"startNs\":"); p != NULL && p < t2;
             p = strstr(p + 1, "\"startNs\":")) {
            const unsigned long long v = strtoull(p + 10, NULL, 10);

            assert_true(v >= last);
            last = v;
        }
    }
    free(json);

    /* A frame the bytes do not hold, and bytes that break before it. */
    assert_null(detail(d + seg[1], seg[2] - seg[1], 5, NULL, &rc));
    assert_int_equal(rc, NWB_ERANGE);
    assert_null(detail(d, 100, 5, NULL, &rc));
    assert_int_equal(rc, NWB_ETRUNCATED);
    nwb_namesym_table_destroy(names);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frames_buckets_keep_the_hitch_and_the_dip),
        cmocka_unit_test(test_frames_edges_and_bad_arguments),
        cmocka_unit_test(test_frames_gaps_restarts_bounds_and_long_frames),
        cmocka_unit_test(test_frames_detail_of_a_demo_like_frame),
    };

    return cmocka_run_group_tests_name("telemetry.frames", tests, NULL, NULL);
}
