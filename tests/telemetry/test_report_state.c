/* SPDX-License-Identifier: MIT */
/*
 * test_report_state.c - the incremental report state: any split of a stream into whole
 * segments (fed plainly or atomically) gives the report nwb_tel_report_build() gives, byte for
 * byte; the feed result describes the bytes (segments, seqs, events, frames, duplicates,
 * decode status); an atomic feed of bad bytes changes nothing; percentiles are exact up to the
 * bound and from the histogram beyond it with the stated error; memory series keep their
 * extremes in a fixed number of points; the worst frames keep log lines that arrive before or
 * after their perfFrame; and the state's memory stays bounded over a long run.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/namesym.h"
#include "nwb/telemetry_report.h"
#include "tel_report_int.h"
#include "tel_test_util.h"

#define MAX_SEGMENTS 64

static nwb_namesym_table_t *load_names(const char *file)
{
    nwb_namesym_table_t *names = NULL;
    char err[256];

    assert_int_equal(nwb_namesym_table_create(&names), 0);
    assert_true(
        nwb_namesym_table_add_file(names, tel_data_path(file), NULL, NULL, err, sizeof(err)) > 0);
    return names;
}

/* The state's report as a strict-JSON string (malloc'd). */
static char *state_json(const nwb_tel_report_state_t *s, const nwb_tel_report_options_t *ro)
{
    nwb_buf_t json;
    char *out;

    nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
    assert_int_equal(nwb_tel_report_state_write(s, ro, &json), 0);
    out = tel_json_take(&json, NULL);
    assert_non_null(out);
    return out;
}

/* Equal reports, or both written out (state_got.json, state_want.json) and a failure. */
static void same_json(const char *got, const char *want)
{
    if (strcmp(got, want) != 0) {
        tel_write_file("state_got.json", got, strlen(got));
        tel_write_file("state_want.json", want, strlen(want));
        fail_msg("reports differ (state_got.json, state_want.json)");
    }
}

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void splits_equal_build(const char *stream_file, const char *names_file)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    nwb_namesym_table_t *names = load_names(names_file);
    size_t len;
    uint8_t *d = tel_read_file(tel_data_path(stream_file), &len);
    size_t seg[MAX_SEGMENTS];
    size_t nseg;
    uint64_t seed = 42;
    char *whole;

    assert_non_null(d);
    ro.names = names;
    whole = tel_built_report(d, len, &ro);
    nseg = tel_segment_offsets(d, len, seg, MAX_SEGMENTS);
    assert_true(nseg >= 3);
    /* Every split into whole segments: each subset of the boundaries (the first is 0), plain
     * and atomic feeds. */
    for (unsigned mask = 0; mask < (1u << (nseg - 1)) * 2; mask++) {
        const unsigned flags = (mask & 1) ? NWB_TEL_FEED_ATOMIC : 0;
        size_t cuts[MAX_SEGMENTS];
        size_t ncuts = 0;
        nwb_buf_t json;

        for (size_t i = 1; i < nseg; i++) {
            if ((mask >> i) & 1) {
                cuts[ncuts++] = seg[i];
            }
        }
        nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
        assert_int_equal(tel_report_in_pieces(d, len, cuts, ncuts, flags, &ro, &json), 0);
        if (json.len != strlen(whole) || memcmp(json.data, whole, json.len) != 0) {
            tel_write_file("state_mismatch.json", json.data, json.len);
            fail_msg("%s split %#x differs from the whole-stream report (state_mismatch.json)",
                     stream_file, mask);
        }
        nwb_buf_cleanup(&json);
    }
    /* Random splits, with empty pieces (a cut repeated). */
    for (unsigned t = 0; t < 20; t++) {
        size_t cuts[8];
        nwb_buf_t json;

        for (size_t i = 0; i < 8; i++) {
            cuts[i] = seg[rng(&seed) % nseg];
        }
        for (size_t i = 1; i < 8; i++) {
            for (size_t k = i; k > 0 && cuts[k - 1] > cuts[k]; k--) {
                const size_t x = cuts[k];

                cuts[k] = cuts[k - 1];
                cuts[k - 1] = x;
            }
        }
        nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
        assert_int_equal(tel_report_in_pieces(d, len, cuts, 8, 0, &ro, &json), 0);
        assert_int_equal(json.len, strlen(whole));
        assert_memory_equal(json.data, whole, json.len);
        nwb_buf_cleanup(&json);
    }
    free(whole);
    /* The stream fed twice over: the second copy is all duplicates, as in the doubled file. */
    {
        uint8_t *twice = malloc(2 * len);
        size_t cuts[2 * MAX_SEGMENTS];
        nwb_buf_t json;

        assert_non_null(twice);
        memcpy(twice, d, len);
        memcpy(twice + len, d, len);
        whole = tel_built_report(twice, 2 * len, &ro);
        for (size_t i = 0; i < nseg; i++) {
            cuts[i] = seg[i];
            cuts[nseg + i] = len + seg[i];
        }
        nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
        assert_int_equal(
            tel_report_in_pieces(twice, 2 * len, cuts, 2 * nseg, NWB_TEL_FEED_ATOMIC, &ro, &json),
            0);
        assert_int_equal(json.len, strlen(whole));
        assert_memory_equal(json.data, whole, json.len);
        nwb_buf_cleanup(&json);
        free(whole);
        free(twice);
    }
    free(d);
    nwb_namesym_table_destroy(names);
}

static void test_report_state_every_split_equals_the_whole_report(void **state)
{
    (void)state;
    splits_equal_build("golden_small.nwbs", "golden_small.namesym");
    splits_equal_build("golden_run.nwbs", "golden_run.namesym");
}

/* A segment of @p frames perfFrames numbered from @p first, with one scope and a log each. */
static void frames_segment(nwb_buf_t *b, uint64_t seq, uint64_t first, unsigned frames,
                           uint64_t dur_ns)
{
    tel_put_header(b, seq);
    for (uint64_t f = first; f < first + frames; f++) {
        const nwb_tel_cpu_scope_t s = {77, f * 100, f * 100 + 50, 1, 0};
        nwb_tel_perf_frame_t pf = {f * 1000, dur_ns + f % 7, &s, NULL, 1, 0};

        assert_int_equal(nwb_tel_encode_text(b, f * 1000 + 1, f, 0, 1, "line", 4), 0);
        assert_int_equal(nwb_tel_encode_perf(b, f * 1000 + 2, f, &pf), 0);
    }
}

static void test_report_state_feed_result_describes_the_bytes(void **state)
{
    nwb_tel_report_state_t *s;
    nwb_tel_feed_result_t fr;
    nwb_buf_t b;
    nwb_buf_t two;
    char *before;
    char *after;

    (void)state;
    assert_int_equal(nwb_tel_report_state_create(&s), 0);
    nwb_buf_init(&b, 1 << 20);
    frames_segment(&b, 7, 100, 5, 16000000);
    assert_int_equal(nwb_tel_report_state_feed(s, b.data, b.len, NWB_TEL_FEED_ATOMIC, &fr), 0);
    assert_int_equal(fr.status, 0);
    assert_int_equal(fr.applied, 1);
    assert_int_equal(fr.duplicate, 0);
    assert_int_equal(fr.segments, 1);
    assert_int_equal(fr.duplicate_segments, 0);
    assert_int_equal(fr.seq_first, 7);
    assert_int_equal(fr.seq_last, 7);
    assert_int_equal(fr.events, 10);
    assert_int_equal(fr.frames, 5);
    assert_int_equal(fr.frame_first, 100);
    assert_int_equal(fr.frame_last, 104);
    assert_int_equal(fr.frame_min, 100);
    assert_int_equal(fr.frame_max, 104);
    assert_int_equal(fr.stream_offset, 0);
    assert_int_equal(fr.consumed, b.len);
    assert_true(nwb_tel_report_state_has_seq(s, 7));
    assert_false(nwb_tel_report_state_has_seq(s, 8));
    before = state_json(s, NULL);

    /* The same segment again: a duplicate, validated and counted, not aggregated. */
    assert_int_equal(nwb_tel_report_state_feed(s, b.data, b.len, NWB_TEL_FEED_ATOMIC, &fr), 0);
    assert_int_equal(fr.status, 0);
    assert_int_equal(fr.duplicate, 1);
    assert_int_equal(fr.duplicate_segments, 1);
    assert_int_equal(fr.frames, 0);
    assert_int_equal(fr.events, 10);
    assert_int_equal(fr.stream_offset, b.len);
    after = state_json(s, NULL);
    tel_expect(after, "\"duplicateSegments\":1,\"duplicateEvents\":10,");
    tel_expect(after, "\"count\":5,");
    free(after);

    /* Two segments in one feed, frames going backwards: first/last follow stream order. */
    nwb_buf_init(&two, 1 << 20);
    frames_segment(&two, 9, 50, 2, 16000000);
    frames_segment(&two, 8, 10, 3, 16000000);
    assert_int_equal(nwb_tel_report_state_feed(s, two.data, two.len, 0, &fr), 0);
    assert_int_equal(fr.segments, 2);
    assert_int_equal(fr.seq_first, 9);
    assert_int_equal(fr.seq_last, 8);
    assert_int_equal(fr.frame_first, 50);
    assert_int_equal(fr.frame_last, 12);
    assert_int_equal(fr.frame_min, 10);
    assert_int_equal(fr.frame_max, 51);
    assert_int_equal(fr.stream_offset, 2 * b.len);
    {
        uint64_t lo = 0;
        uint64_t hi = 0;

        assert_int_equal(nwb_tel_report_state_frame_range(s, &lo, &hi), 0);
        assert_int_equal(lo, 10);
        assert_int_equal(hi, 104);
    }
    free(before);
    nwb_buf_cleanup(&two);
    nwb_buf_cleanup(&b);
    nwb_tel_report_state_destroy(s);
    nwb_tel_report_state_destroy(NULL);
}

static void test_report_state_atomic_feed_of_bad_bytes_changes_nothing(void **state)
{
    nwb_tel_report_state_t *s;
    nwb_tel_feed_result_t fr;
    nwb_tel_decode_result_t dr;
    nwb_buf_t good;
    nwb_buf_t bad;
    nwb_buf_t all;
    char *before;
    char *after;
    char *whole;

    (void)state;
    nwb_buf_init(&good, 1 << 20);
    nwb_buf_init(&bad, 1 << 20);
    nwb_buf_init(&all, 1 << 20);
    frames_segment(&good, 1, 0, 4, 16000000);
    frames_segment(&bad, 2, 4, 4, 30000000);
    bad.len -= 3; /* cut inside its last event */
    assert_int_equal(nwb_tel_report_state_create(&s), 0);
    assert_int_equal(nwb_tel_report_state_feed(s, good.data, good.len, NWB_TEL_FEED_ATOMIC, &fr),
                     0);
    before = state_json(s, NULL);
    assert_int_equal(nwb_tel_report_state_feed(s, bad.data, bad.len,
                                               NWB_TEL_FEED_ATOMIC | NWB_TEL_DECODE_SINGLE_SEGMENT,
                                               &fr),
                     0);
    assert_int_equal(fr.status, NWB_ETRUNCATED);
    assert_int_equal(fr.applied, 0);
    assert_non_null(fr.reason);
    assert_true(fr.error_offset < bad.len);
    assert_false(nwb_tel_report_state_has_seq(s, 2));
    after = state_json(s, NULL);
    same_json(after, before);
    free(after);

    /* Fed plainly, the events before the failure count and the state stops there, exactly as
     * a whole-stream decode of the concatenation does. */
    assert_int_equal(nwb_tel_report_state_feed(s, bad.data, bad.len, 0, &fr), 0);
    assert_int_equal(fr.status, NWB_ETRUNCATED);
    assert_int_equal(fr.applied, 1);
    assert_int_equal(nwb_buf_append(&all, good.data, good.len), 0);
    assert_int_equal(nwb_buf_append(&all, bad.data, bad.len), 0);
    whole = tel_built_report(all.data, all.len, NULL);
    after = state_json(s, NULL);
    same_json(after, whole);
    nwb_tel_report_state_decode_result(s, &dr);
    assert_int_equal(dr.status, NWB_ETRUNCATED);
    assert_true(dr.error_offset > good.len);
    tel_expect(after, "\"status\":\"NWB_ETRUNCATED\"");
    free(after);
    free(whole);
    /* Stopped: later bytes are not decoded, only counted. */
    assert_int_equal(nwb_tel_report_state_feed(s, good.data, good.len, 0, &fr), 0);
    assert_int_equal(fr.applied, 0);
    assert_int_equal(fr.status, NWB_ETRUNCATED);
    after = state_json(s, NULL);
    {
        char want[64];

        snprintf(want, sizeof(want), "\"decode\":{\"bytes\":%zu,", 2 * good.len + bad.len);
        tel_expect(after, want);
    }
    tel_expect(after, "\"count\":7,");
    free(after);
    free(before);

    /* A failure from outside the decoder (a corrupt zstd frame) stops it the same way. */
    nwb_tel_report_state_destroy(s);
    assert_int_equal(nwb_tel_report_state_create(&s), 0);
    assert_int_equal(nwb_tel_report_state_feed(s, good.data, good.len, 0, &fr), 0);
    nwb_tel_report_state_fail(s, NWB_ECOMPRESS, "corrupt zstd data");
    after = state_json(s, NULL);
    tel_expect(after, "\"status\":\"NWB_ECOMPRESS\"");
    tel_expect(after, "\"reason\":\"corrupt zstd data\"");
    free(after);
    nwb_tel_report_state_destroy(s);
    nwb_buf_cleanup(&good);
    nwb_buf_cleanup(&bad);
    nwb_buf_cleanup(&all);
}

/* Nearest rank over @p v (sorted in place). */
static uint64_t exact_rank(uint64_t *v, size_t n, double p)
{
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);

    for (size_t i = 1; i < n; i++) {
        for (size_t k = i; k > 0 && v[k - 1] > v[k]; k--) {
            const uint64_t x = v[k];

            v[k] = v[k - 1];
            v[k - 1] = x;
        }
    }
    rank = rank < 1 ? 1 : rank > n ? n : rank;
    return v[rank - 1];
}

static double json_number_after(const char *json, const char *key)
{
    const char *p = strstr(json, key);

    assert_non_null(p);
    return strtod(p + strlen(key), NULL);
}

static void test_report_state_percentiles_exact_to_the_bound_then_histogram(void **state)
{
    enum { BOUND = 999 };
    static const double pct[4] = {50, 90, 95, 99};
    static const char *const keys[4] = {"\"p50Ms\":", "\"p90Ms\":", "\"p95Ms\":", "\"p99Ms\":"};
    uint64_t *durs = malloc((BOUND + 1) * sizeof(*durs));
    nwb_tel_report_state_t *s;
    uint64_t seed = 9;
    nwb_buf_t b;
    char *json;

    (void)state;
    assert_non_null(durs);
    assert_int_equal(nwb_tel_report_state_create(&s), 0);
    nwb__tel_report_state_limit_frames(s, BOUND);
    nwb_buf_init(&b, 8 << 20);
    tel_put_header(&b, 1);
    for (unsigned i = 0; i <= BOUND; i++) {
        nwb_tel_perf_frame_t pf = {0, 0, NULL, NULL, 0, 0};

        /* 1 ms .. 40 ms, a few frames above 4.3 s (kept beside the 32-bit values). */
        durs[i] = i % 250 == 3 ? 5000000000ull + i : 1000000 + rng(&seed) % 39000000;
        pf.frame_duration_ns = durs[i];
        assert_int_equal(nwb_tel_encode_perf(&b, i, i, &pf), 0);
    }
    /* Exactly the bound: exact nearest rank. Feed all but the last frame. */
    {
        nwb_buf_t head;
        uint64_t *copy = malloc(BOUND * sizeof(*copy));
        size_t cut = 0;

        assert_non_null(copy);
        nwb_buf_init(&head, 8 << 20);
        tel_put_header(&head, 1);
        for (unsigned i = 0; i < BOUND; i++) {
            nwb_tel_perf_frame_t pf = {0, durs[i], NULL, NULL, 0, 0};

            assert_int_equal(nwb_tel_encode_perf(&head, i, i, &pf), 0);
        }
        cut = head.len;
        assert_int_equal(nwb_tel_report_state_feed(s, head.data, head.len, 0, NULL), 0);
        json = state_json(s, NULL);
        memcpy(copy, durs, BOUND * sizeof(*copy));
        for (unsigned k = 0; k < 4; k++) {
            const uint64_t want = exact_rank(copy, BOUND, pct[k]);

            assert_true(fabs(json_number_after(json, keys[k]) - (double)want / 1e6) < 1e-6);
        }
        tel_expect(json, "\"percentileRelativeError\":0.000000,");
        tel_expect(json, "nearest-rank over the exact frame durations");
        free(json);
        free(copy);
        (void)cut;
        nwb_buf_cleanup(&head);
    }
    /* One frame more (its own segment): every percentile from the histogram, at most 1/32
     * above the exact value over all frames, never below it. */
    {
        nwb_buf_t tail;
        nwb_tel_perf_frame_t pf = {0, durs[BOUND], NULL, NULL, 0, 0};

        nwb_buf_init(&tail, 1 << 20);
        tel_put_header(&tail, 2);
        assert_int_equal(nwb_tel_encode_perf(&tail, BOUND, BOUND, &pf), 0);
        assert_int_equal(nwb_tel_report_state_feed(s, tail.data, tail.len, 0, NULL), 0);
        nwb_buf_cleanup(&tail);
    }
    json = state_json(s, NULL);
    tel_expect(json, "\"percentileFrames\":1000,\"percentileRelativeError\":0.031250,");
    tel_expect(json, "log-linear histogram");
    for (unsigned k = 0; k < 4; k++) {
        const double want = (double)exact_rank(durs, BOUND + 1, pct[k]) / 1e6;
        const double got = json_number_after(json, keys[k]);

        assert_true(got >= want - 1e-6);
        assert_true(got <= want * (1.0 + NWB_TEL_REPORT_HIST_ERROR) + 1e-6);
    }
    free(json);
    nwb_buf_cleanup(&b);
    nwb_tel_report_state_destroy(s);
    free(durs);
}

static void test_report_state_memory_series_keep_extremes_in_fixed_points(void **state)
{
    const unsigned n = 1000;
    nwb_buf_t b;
    char *json;
    const char *p;
    unsigned points = 0;

    (void)state;
    nwb_buf_init(&b, 8 << 20);
    tel_put_header(&b, 1);
    for (unsigned f = 0; f < n; f++) {
        nwb_tel_mem_record_t rec = {
            5, NWB_TEL_MEM_ARENA, NWB_TEL_PEAK_LARGEST_ARENA, 1 << 30, 1000 + f, 1000 + f, 1, 0};

        /* A one-frame spike and a one-frame dip: both survive the downsampling. */
        rec.used_bytes = f == 500 ? 900000 : f == 701 ? 3 : rec.used_bytes;
        rec.peak_bytes = rec.used_bytes > rec.peak_bytes ? rec.used_bytes : rec.peak_bytes;
        assert_int_equal(nwb_tel_encode_memory(&b, f, f, &rec, 1, 0, f), 0);
    }
    json = tel_built_report(b.data, b.len, NULL);
    p = strstr(json, "\"arenas\":[{");
    assert_non_null(p);
    p = strstr(p, "\"series\":{\"samplesPerPoint\":8,\"points\":[");
    assert_non_null(p);
    /* 1000 samples at 8 per point: 125 points, within the bound of 128. */
    for (const char *q = p; *q != '}'; q++) {
        points += q[0] == '[' && q[1] >= '0' && q[1] <= '9';
    }
    assert_int_equal(points, 125);
    assert_true(points <= NWB_TEL_REPORT_MEMORY_POINTS);
    assert_non_null(strstr(p, "[496,1496,900000]"));
    assert_non_null(strstr(p, "[696,3,1703]"));
    tel_expect(json, "\"seriesMaxPoints\":128,");
    free(json);
    nwb_buf_cleanup(&b);
}

static void test_report_state_worst_frames_keep_lines_from_before_and_after(void **state)
{
    nwb_tel_report_state_t *s;
    nwb_buf_t b;
    char *json;

    (void)state;
    nwb_buf_init(&b, 1 << 20);
    tel_put_header(&b, 1);
    /* Frame 3's first line arrives three frames early, its second in another segment after
     * its perfFrame; frame 90's line arrives more than NWB_TEL_REPORT_PENDING_LOGS other
     * frames' lines before its perfFrame and is not kept. */
    assert_int_equal(nwb_tel_encode_text(&b, 1, 3, 2, 1, "early line", 10), 0);
    assert_int_equal(nwb_tel_encode_text(&b, 1, 90, 2, 1, "too early", 9), 0);
    for (uint64_t f = 0; f < 100; f++) {
        nwb_tel_perf_frame_t pf = {
            f, f == 3 ? 90000000 : f == 90 ? 80000000 : 10000000 + f, NULL, NULL, 0, 0};

        if (f != 3 && f != 90) {
            assert_int_equal(nwb_tel_encode_text(&b, 1, f, 0, 1, "filler", 6), 0);
        }
        assert_int_equal(nwb_tel_encode_perf(&b, f, f, &pf), 0);
    }
    assert_int_equal(nwb_tel_report_state_create(&s), 0);
    assert_int_equal(nwb_tel_report_state_feed(s, b.data, b.len, 0, NULL), 0);
    nwb_buf_reset(&b);
    tel_put_header(&b, 2);
    assert_int_equal(nwb_tel_encode_text(&b, 1, 3, 3, 1, "late line", 9), 0);
    assert_int_equal(nwb_tel_report_state_feed(s, b.data, b.len, 0, NULL), 0);
    json = state_json(s, NULL);
    tel_expect(json, "\"worst\":[{\"frame\":3,\"ms\":90.000000");
    tel_expect(json,
               "\"logs\":[{\"level\":\"ERROR\",\"thread\":1,\"message\":\"early line\"},"
               "{\"level\":\"FATAL\",\"thread\":1,\"message\":\"late line\"}],\"moreLogs\":0}");
    tel_expect(json, "{\"frame\":90,\"ms\":80.000000");
    assert_null(strstr(json, "too early"));
    free(json);
    nwb_buf_cleanup(&b);
    nwb_tel_report_state_destroy(s);
}

static void test_report_state_memory_is_bounded_over_a_long_run(void **state)
{
    enum { PER_SEGMENT = 60, SEGMENTS = 2000 };
    nwb_tel_report_state_t *s;
    size_t at_half = 0;
    size_t at_end;
    size_t after_bound = 0;
    nwb_buf_t b;

    (void)state;
    assert_int_equal(nwb_tel_report_state_create(&s), 0);
    nwb_buf_init(&b, 1 << 20);
    for (uint64_t seg = 0; seg < SEGMENTS; seg++) {
        nwb_buf_reset(&b);
        frames_segment(&b, seg, seg * PER_SEGMENT, PER_SEGMENT, 16000000);
        assert_int_equal(nwb_tel_report_state_feed(s, b.data, b.len, NWB_TEL_FEED_ATOMIC, NULL), 0);
        if (seg + 1 == SEGMENTS / 2) {
            at_half = nwb_tel_report_state_memory_bytes(s);
        }
    }
    at_end = nwb_tel_report_state_memory_bytes(s);
    print_message("state: %zu bytes after %u frames, %zu after %u\n", at_half,
                  SEGMENTS / 2 * PER_SEGMENT, at_end, SEGMENTS * PER_SEGMENT);
    /* 60,000 more frames cost their 4-byte table entries and about 5 bytes of sorted blocks
     * each, nothing else. */
    assert_true(at_end - at_half <= (size_t)(SEGMENTS / 2 * PER_SEGMENT) * 16 + 300000);
    nwb_tel_report_state_destroy(s);

    /* Past the exact bound the blocks go: the state shrinks and then stays put. */
    assert_int_equal(nwb_tel_report_state_create(&s), 0);
    nwb__tel_report_state_limit_frames(s, 6000);
    for (uint64_t seg = 0; seg < 200; seg++) {
        nwb_buf_reset(&b);
        frames_segment(&b, seg, seg * PER_SEGMENT, PER_SEGMENT, 16000000);
        assert_int_equal(nwb_tel_report_state_feed(s, b.data, b.len, 0, NULL), 0);
        if (seg == 130) { /* past the bound, and the seq index at its size up to 256 */
            after_bound = nwb_tel_report_state_memory_bytes(s);
        }
    }
    assert_int_equal(nwb_tel_report_state_memory_bytes(s), after_bound);
    nwb_tel_report_state_destroy(s);
    nwb_buf_cleanup(&b);
}

static void test_report_state_allocation_failures_unwind_cleanly(void **state)
{
    size_t len;
    uint8_t *d = tel_read_file(tel_data_path("golden_small.nwbs"), &len);
    size_t seg[MAX_SEGMENTS];
    const size_t nseg = tel_segment_offsets(d, len, seg, MAX_SEGMENTS);
    long complete_at = -1;

    (void)state;
    assert_true(nseg >= 2);
    /* Atomic feeds of one segment at a time with the n-th allocation failing: the feed
     * returns 0 or -ENOMEM, the state can always be written (or says -ENOMEM), never leaks. */
    for (long n = 0; n < 3000 && complete_at < 0; n++) {
        nwb_tel_report_state_t *s = NULL;
        int rc = 0;
        nwb_buf_t json;

        nwb_alloc_fail_after(n);
        if (nwb_tel_report_state_create(&s) == 0) {
            for (size_t i = 0; i < nseg && rc == 0; i++) {
                const size_t end = i + 1 < nseg ? seg[i + 1] : len;

                rc = nwb_tel_report_state_feed(s, d + seg[i], end - seg[i], NWB_TEL_FEED_ATOMIC,
                                               NULL);
                assert_true(rc == 0 || rc == -ENOMEM);
            }
            nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
            rc = nwb_tel_report_state_write(s, NULL, &json);
            nwb_alloc_fail_after(-1);
            assert_true(rc == 0 || rc == -ENOMEM);
            if (rc == 0) {
                assert_int_equal(nwb_test_json_check((const char *)json.data, json.len, NULL), 0);
                if (strstr((const char *)json.data, "\"reportStatus\":\"ok\"") != NULL) {
                    complete_at = n;
                }
            }
            nwb_buf_cleanup(&json);
        }
        nwb_alloc_fail_after(-1);
        nwb_tel_report_state_destroy(s);
    }
    assert_true(complete_at > 0);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_state_every_split_equals_the_whole_report),
        cmocka_unit_test(test_report_state_feed_result_describes_the_bytes),
        cmocka_unit_test(test_report_state_atomic_feed_of_bad_bytes_changes_nothing),
        cmocka_unit_test(test_report_state_percentiles_exact_to_the_bound_then_histogram),
        cmocka_unit_test(test_report_state_memory_series_keep_extremes_in_fixed_points),
        cmocka_unit_test(test_report_state_worst_frames_keep_lines_from_before_and_after),
        cmocka_unit_test(test_report_state_memory_is_bounded_over_a_long_run),
        cmocka_unit_test(test_report_state_allocation_failures_unwind_cleanly),
    };

    return cmocka_run_group_tests_name("telemetry.report_state", tests, NULL, NULL);
}
