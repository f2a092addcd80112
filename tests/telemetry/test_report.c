/* SPDX-License-Identifier: MIT */
/*
 * test_report.c - telemetry.json: the events map lists every core kind (zero counts too) and
 * matches the kind table and the docs; duplicate segments by seq are not counted twice; client
 * drops, seq gaps, exact frame percentiles, the worst frames with their log lines, scope
 * statistics, heapBacking beside arenas, bounded diagnostics, the uploads section, names
 * decoded through .namesym, and the JSON cap.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/namesym.h"
#include "nwb/telemetry_report.h"
#include "tel_test_util.h"

static char *report(const nwb_buf_t *stream, const nwb_tel_report_options_t *ro)
{
    return tel_built_report(stream->data, stream->len, ro);
}

static void perf_frame(nwb_buf_t *b, uint64_t frame, uint64_t dur_ns,
                       const nwb_tel_cpu_scope_t *cpu, uint32_t ncpu)
{
    nwb_tel_perf_frame_t pf;

    memset(&pf, 0, sizeof(pf));
    pf.frame_start_ns = 1000 + frame * 100000000ull;
    pf.frame_duration_ns = dur_ns;
    pf.cpu = cpu;
    pf.cpu_count = ncpu;
    assert_int_equal(nwb_tel_encode_perf(b, pf.frame_start_ns + dur_ns, frame, &pf), 0);
}

static void test_report_events_map_lists_every_core_kind_with_zeros(void **state)
{
    nwb_buf_t b;
    char *json;
    char expected[512];
    size_t off = 0;

    (void)state;
    /* The kind table is contiguous from 1 to NWB_TEL_KIND_LAST. */
    assert_null(nwb_tel_kind_name(0));
    for (unsigned k = 1; k <= NWB_TEL_KIND_LAST; k++) {
        assert_non_null(nwb_tel_kind_name(k));
    }
    assert_null(nwb_tel_kind_name(NWB_TEL_KIND_LAST + 1));
    assert_int_equal(NWB_TEL_KIND_COUNT, NWB_TEL_KIND_LAST);
    nwb_buf_init(&b, 1 << 20);
    tel_put_header(&b, 1);
    assert_int_equal(nwb_tel_encode_text(&b, 1, 0, 0, 1, "only text", 9), 0);
    assert_int_equal(nwb_tel_encode_raw(&b, 77, 1, 2, 0, "x", 1), 0);
    json = report(&b, NULL);
    off += (size_t)snprintf(expected + off, sizeof(expected) - off, "\"events\":{");
    for (unsigned k = 1; k <= NWB_TEL_KIND_LAST; k++) {
        off += (size_t)snprintf(expected + off, sizeof(expected) - off, "\"%s\":%d,",
                                nwb_tel_kind_name(k), k == NWB_TEL_KIND_TEXT_LOG ? 1 : 0);
    }
    snprintf(expected + off, sizeof(expected) - off, "\"unknown\":1}");
    tel_expect(json, expected);
    free(json);
    nwb_buf_cleanup(&b);
}

static void test_report_kind_table_matches_docs(void **state)
{
    static const char *const docs[] = {"docs/telemetry-format.md", "docs/telemetry-report.md"};

    (void)state;
    /* Adding a kind without documenting it (or the other way round) fails here. */
    for (size_t d = 0; d < NWB_ARRAY_SIZE(docs); d++) {
        char path[1024];
        size_t len;
        char *text;

        snprintf(path, sizeof(path), "%s/%s", NWB_TEST_SOURCE_DIR, docs[d]);
        text = (char *)tel_read_file(path, &len);
        assert_non_null(text);
        for (unsigned k = 1; k <= NWB_TEL_KIND_LAST; k++) {
            char needle[64];

            if (d == 0) {
                snprintf(needle, sizeof(needle), "| %u | `%s` |", k, nwb_tel_kind_name(k));
            } else {
                snprintf(needle, sizeof(needle), "`%s`", nwb_tel_kind_name(k));
            }
            if (strstr(text, needle) == NULL) {
                fail_msg("%s does not document kind %s", docs[d], needle);
            }
        }
        {
            char needle[64];

            /* Rows of the kind table read "| <value> | `<name>` |". */
            snprintf(needle, sizeof(needle), "| %u | `", NWB_TEL_KIND_LAST + 1);
            if (d == 0 && strstr(text, needle) != NULL) {
                fail_msg("%s documents a kind %u the code does not know", docs[d],
                         NWB_TEL_KIND_LAST + 1);
            }
        }
        free(text);
    }
}

static void test_report_duplicate_segments_counted_once(void **state)
{
    nwb_buf_t b;
    char *json;

    (void)state;
    nwb_buf_init(&b, 1 << 20);
    tel_put_header(&b, 1);
    assert_int_equal(nwb_tel_encode_text(&b, 1, 0, 0, 1, "a", 1), 0);
    tel_put_header(&b, 2);
    assert_int_equal(nwb_tel_encode_text(&b, 2, 1, 0, 1, "b", 1), 0);
    tel_put_header(&b, 1); /* a resent upload */
    assert_int_equal(nwb_tel_encode_text(&b, 1, 0, 0, 1, "a", 1), 0);
    json = report(&b, NULL);
    tel_expect(json, "\"textLog\":2,");
    tel_expect(json, "\"duplicateSegments\":1,");
    tel_expect(json, "\"duplicateEvents\":1,");
    tel_expect(json, "\"segments\":3,");
    tel_expect(json, "\"seqGaps\":0,");
    free(json);
    nwb_buf_cleanup(&b);
}

static void test_report_client_drops_and_seq_gaps(void **state)
{
    nwb_tel_header_t h;
    nwb_buf_t b;
    char *json;

    (void)state;
    nwb_buf_init(&b, 1 << 20);
    memset(&h, 0, sizeof(h));
    h.program = "p";
    h.program_len = 1;
    for (uint64_t seq = 1; seq <= 4; seq++) {
        if (seq == 3) {
            continue; /* lost upload */
        }
        h.seq = seq;
        h.dropped_events = seq * 3; /* cumulative in the client */
        h.dropped_scopes = seq * 10;
        h.dropped_uploads = seq == 4 ? 1 : 0;
        assert_int_equal(nwb_tel_encode_header(&b, &h), 0);
    }
    json = report(&b, NULL);
    tel_expect(json, "\"seqGaps\":1,");
    tel_expect(json, "\"clientDrops\":{\"events\":12,\"scopes\":40,\"uploads\":1}");
    free(json);
    nwb_buf_cleanup(&b);
}

static void test_report_frame_percentiles_are_exact_nearest_rank(void **state)
{
    nwb_buf_t b;
    char *json;

    (void)state;
    nwb_buf_init(&b, 1 << 20);
    tel_put_header(&b, 1);
    /* 1 .. 100 ms in a scrambled order. */
    for (uint64_t i = 0; i < 100; i++) {
        const uint64_t ms = (i * 37) % 100 + 1;

        perf_frame(&b, i, ms * 1000000ull, NULL, 0);
    }
    json = report(&b, NULL);
    tel_expect(json, "\"count\":100,\"meanMs\":50.500000,\"p50Ms\":50.000000,\"p90Ms\":90.000000,"
                     "\"p95Ms\":95.000000,\"p99Ms\":99.000000,\"maxMs\":100.000000,");
    tel_expect(json, "\"percentileFrames\":100");
    /* The 10 worst, slowest first: 100 ms is frame 27 (27 * 37 % 100 = 99). */
    tel_expect(json, "\"worst\":[{\"frame\":27,\"ms\":100.000000");
    tel_expect(json, "\"ms\":91.000000");
    assert_null(strstr(json, "\"ms\":90.000000,\"timestampNs\""));
    free(json);
    nwb_buf_cleanup(&b);
}

static void test_report_worst_frames_carry_top_scopes_and_logs(void **state)
{
    const nwb_name_t big = nwb_name_hash("big.scope", 9);
    nwb_tel_cpu_scope_t cpu[7];
    nwb_buf_t b;
    char *json;

    (void)state;
    for (uint32_t i = 0; i < 7; i++) {
        cpu[i].name = i == 3 ? big : 100 + i;
        cpu[i].start_ns = 0;
        cpu[i].end_ns = i == 3 ? 9000000 : 1000 * (i + 1);
        cpu[i].thread = 1;
        cpu[i].depth = (uint16_t)(i % 3);
    }
    nwb_buf_init(&b, 1 << 20);
    tel_put_header(&b, 1);
    for (uint64_t f = 0; f < 12; f++) {
        perf_frame(&b, f, (f == 5 ? 40 : 10) * 1000000ull, cpu, 7);
    }
    for (unsigned i = 0; i < 11; i++) {
        char msg[32];
        const int n = snprintf(msg, sizeof(msg), "slow frame line %u", i);

        assert_int_equal(nwb_tel_encode_text(&b, 5, 5, 1, 1, msg, (size_t)n), 0);
    }
    json = report(&b, NULL);
    tel_expect(json, "\"worst\":[{\"frame\":5,\"ms\":40.000000");
    /* Its top scope is the 9 ms one, then the others by duration. */
    tel_expect(json, "\"topScopes\":[{\"name\":\"#");
    tel_expect(json, "\"depth\":0,\"ms\":9.000000},{\"name\"");
    tel_expect(json, "\"message\":\"slow frame line 0\"");
    tel_expect(json, "\"message\":\"slow frame line 7\"}],\"moreLogs\":3}");
    assert_null(strstr(json, "slow frame line 8"));
    free(json);
    nwb_buf_cleanup(&b);
}

static void test_report_scope_statistics_and_gpu_bounds(void **state)
{
    nwb_tel_cpu_scope_t cpu[1];
    nwb_tel_gpu_scope_t g;
    nwb_tel_perf_frame_t pf;
    nwb_buf_t b;
    char *json;

    (void)state;
    nwb_buf_init(&b, 1 << 20);
    tel_put_header(&b, 1);
    for (uint64_t f = 0; f < 100; f++) {
        cpu[0].name = 42;
        cpu[0].start_ns = 0;
        cpu[0].end_ns = (f + 1) * 1000000ull; /* 1 .. 100 ms */
        cpu[0].thread = 1;
        cpu[0].depth = 0;
        perf_frame(&b, f, 200000000ull, cpu, 1);
    }
    /* GPU windows published out of source-frame order: 51 before 50. */
    memset(&g, 0, sizeof(g));
    memset(&pf, 0, sizeof(pf));
    g.name = 43;
    g.window_samples = 1;
    g.published_windows = 1;
    g.gpu_samples = 1;
    g.source_frame_min = g.source_frame_max = 51;
    g.window_avg_ms = g.window_min_ms = g.window_max_ms = 2.0;
    g.total_ms = 2.0;
    g.sample_avg_ms = 2.0;
    pf.gpu = &g;
    pf.gpu_count = 1;
    assert_int_equal(nwb_tel_encode_perf(&b, 1, 101, &pf), 0);
    g.source_frame_min = g.source_frame_max = 50;
    g.window_avg_ms = g.window_min_ms = g.window_max_ms = 4.0;
    g.published_windows = 2;
    g.gpu_samples = 2;
    g.total_ms = 6.0;
    g.sample_avg_ms = 3.0;
    assert_int_equal(nwb_tel_encode_perf(&b, 2, 102, &pf), 0);
    json = report(&b, NULL);
    /* CPU: exact min, max, mean; p95 from the histogram: 95 ms, at most 1/32 high. */
    tel_expect(json, "\"samples\":100,\"totalMs\":5050.000000,\"minMs\":1.000000,"
                     "\"maxMs\":100.000000,\"meanMs\":50.500000,\"p95Ms\":");
    {
        const char *p = strstr(strstr(json, "\"cpu\":["), "\"p95Ms\":");
        const double p95 = strtod(p + 8, NULL);

        assert_true(p95 >= 95.0 && p95 <= 95.0 * (1.0 + 1.0 / 32));
    }
    tel_expect(json, "\"firstSourceFrame\":0,\"lastSourceFrame\":99}");
    /* GPU: bounds are the extremes whatever the arrival order; totals over the windows. */
    tel_expect(json, "\"samples\":2,\"totalMs\":6.000000,\"minMs\":2.000000,\"maxMs\":4.000000,"
                     "\"meanMs\":3.000000");
    tel_expect(json,
               "\"firstSourceFrame\":50,\"lastSourceFrame\":51,\"windows\":2,"
               "\"publishedWindows\":2,\"reportedGpuSamples\":2,\"reportedTotalMs\":6.000000");
    free(json);
    nwb_buf_cleanup(&b);
}

static void test_report_heap_backing_reported_beside_arenas(void **state)
{
    const nwb_tel_mem_record_t r1[3] = {
        {1, NWB_TEL_MEM_ARENA, NWB_TEL_PEAK_LARGEST_ARENA, 1000, 100, 100, 1, 0},
        {2, NWB_TEL_MEM_HEAP_BACKING, NWB_TEL_PEAK_SAMPLED_HEAP, 9000, 5000, 5000, 0, 0},
        {3, NWB_TEL_MEM_EXPLICIT_SCOPE, NWB_TEL_PEAK_SCOPE, 0, 7, 7, 1, 0}};
    nwb_tel_mem_record_t r2[3];
    nwb_buf_t b;
    char *json;

    (void)state;
    memcpy(r2, r1, sizeof(r2));
    r2[0].used_bytes = 400;
    r2[0].peak_bytes = 450;
    r2[0].allocations = 5;
    r2[0].frees = 2;
    r2[1].used_bytes = 6000;
    r2[1].peak_bytes = 6000;
    nwb_buf_init(&b, 1 << 20);
    tel_put_header(&b, 1);
    assert_int_equal(nwb_tel_encode_memory(&b, 1, 0, r1, 3, 0, 1), 0);
    assert_int_equal(nwb_tel_encode_memory(&b, 2, 1, r2, 3, 0, 2), 0);
    json = report(&b, NULL);
    tel_expect(json, "\"arenas\":[{\"name\":\"#0000000000000001\",\"source\":\"arena\","
                     "\"reservedBytes\":1000,\"usedBytes\":400,\"peakBytes\":450,"
                     "\"firstUsedBytes\":100,\"growthBytes\":300,\"allocations\":5,\"frees\":2,"
                     "\"peakBasis\":\"largestArena\"");
    tel_expect(json, "\"heapBacking\":[{\"name\":\"#0000000000000002\",\"source\":\"heapBacking\"");
    tel_expect(json, "\"explicitScopes\":[{\"name\":\"#0000000000000003\"");
    /* The arena totals are the arenas alone. */
    tel_expect(json, "\"arenaTotals\":{\"firstUsedBytes\":100,\"lastUsedBytes\":400,"
                     "\"maxUsedBytes\":400,\"growthBytes\":300,"
                     "\"series\":{\"samplesPerPoint\":1,\"points\":[[0,100,100],[1,400,400]]}}");
    tel_expect(json, "\"heapBackingTotals\":{\"firstUsedBytes\":5000,\"lastUsedBytes\":6000");
    free(json);
    nwb_buf_cleanup(&b);
}

static void test_report_diagnostics_bounded_with_count_of_rest(void **state)
{
    const nwb_tel_kv_t kv = {"k\"ey", "va\nl", 4, 4};
    nwb_buf_t b;
    char *json;
    char needle[64];

    (void)state;
    nwb_buf_init(&b, 1 << 20);
    tel_put_header(&b, 1);
    for (unsigned i = 0; i < NWB_TEL_REPORT_DIAGNOSTICS + 6; i++) {
        assert_int_equal(nwb_tel_encode_diag(&b, i, i, 5, i % 4, &kv, 1), 0);
    }
    json = report(&b, NULL);
    snprintf(needle, sizeof(needle), "\"diagnostics\":{\"count\":%u,",
             NWB_TEL_REPORT_DIAGNOSTICS + 6);
    tel_expect(json, needle);
    tel_expect(json, "\"omitted\":6}");
    tel_expect(json, "\"pairs\":[[\"k\\\"ey\",\"va\\nl\"]]");
    tel_expect(json, "\"bySeverity\":{\"info\":18,\"warning\":18,\"error\":17,\"fatal\":17}");
    free(json);
    nwb_buf_cleanup(&b);
}

/* A FIFO or a symlink where the ingest log belongs: refused at once, nothing written through. */
static void test_ingest_log_append_refuses_fifo_and_symlink(void **state)
{
    char dir[] = "/tmp/nwb_tel_ingest_log_XXXXXX";
    char path[256];
    char target[256];
    struct stat st;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/%s", dir, NWB_TEL_INGEST_LOG_NAME);
    snprintf(target, sizeof(target), "%s/elsewhere", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    /* Without O_NONBLOCK this open would wait for a reader forever. */
    assert_int_not_equal(nwb_tel_ingest_log_append(path, "accepted", 1, 0, 0, 100, NULL), 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(nwb_tel_ingest_log_append(path, "accepted", 1, 0, 0, 100, NULL), -ELOOP);
    assert_int_not_equal(lstat(target, &st), 0); /* nothing created through the link */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

static void test_report_uploads_section_from_ingest_log(void **state)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    nwb_tel_ingest_summary_t sum;
    char dir[] = "/tmp/nwb_tel_report_XXXXXX";
    char path[256];
    nwb_buf_t b;
    char *json;
    FILE *f;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/%s", dir, NWB_TEL_INGEST_LOG_NAME);
    assert_int_equal(nwb_tel_ingest_log_load(path, &sum), 0);
    assert_false(sum.present);
    assert_int_equal(nwb_tel_ingest_log_append(path, "accepted", 1, 0, 0, 100, NULL), 0);
    assert_int_equal(nwb_tel_ingest_log_append(path, "duplicate", 1, 0, 0, 100, NULL), 0);
    /* Past the run's stream limit: in the live report, not in the stored stream. */
    assert_int_equal(nwb_tel_ingest_log_append(path, "unstored", 2, 0, 0, 100, NULL), 0);
    for (unsigned i = 0; i < 20; i++) {
        assert_int_equal(nwb_tel_ingest_log_append(path, "rejected", 10 + i, NWB_ETRUNCATED, i, 50,
                                                   "input ends\ninside \"x\""),
                         0);
    }
    /* A garbage line is counted and ignored. */
    f = fopen(path, "a");
    assert_non_null(f);
    fputs("rejected seq=zz\n", f);
    fclose(f);
    assert_int_equal(nwb_tel_ingest_log_load(path, &sum), 0);
    assert_true(sum.present);
    assert_int_equal(sum.accepted, 1);
    assert_int_equal(sum.duplicates, 1);
    assert_int_equal(sum.unstored, 1);
    assert_int_equal(sum.rejected, 20);
    assert_int_equal(sum.bad_lines, 1);
    assert_int_equal(sum.recent_count, NWB_TEL_REPORT_REJECTIONS);
    assert_int_equal(sum.recent[0].seq, 10 + 20 - NWB_TEL_REPORT_REJECTIONS);
    assert_int_equal(sum.recent[NWB_TEL_REPORT_REJECTIONS - 1].seq, 29);
    assert_int_equal(sum.recent[0].status, NWB_ETRUNCATED);
    assert_string_equal(sum.recent[0].reason, "input ends inside \"x\"");
    nwb_buf_init(&b, 1 << 20);
    ro.ingest = &sum;
    json = report(&b, &ro);
    tel_expect(json, "\"uploads\":{\"log\":true,\"accepted\":1,\"duplicates\":1,\"rejected\":20,");
    tel_expect(json, "{\"seq\":29,\"status\":\"NWB_ETRUNCATED\",\"offset\":19,\"bytes\":50,");
    tel_expect(json, "\"reason\":\"input ends inside \\\"x\\\"\"}],\"unstored\":1}");
    /* An empty stream is a valid, empty report. */
    tel_expect(json, "\"decode\":{\"bytes\":0,\"consumedBytes\":0,\"events\":0,\"status\":\"ok\"");
    free(json);
    unlink(path);
    rmdir(dir);
}

static void test_report_names_decoded_through_namesym(void **state)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    nwb_namesym_builder_t nb;
    nwb_namesym_table_t *t = NULL;
    nwb_namesym_view_t v;
    nwb_tel_cpu_scope_t cpu;
    char tok[NWB_NAME_TOKEN_SIZE];
    char msg[64];
    uint8_t *img = NULL;
    size_t img_len = 0;
    char err[128];
    nwb_buf_t b;
    char *json;
    int n;

    (void)state;
    nwb_namesym_builder_init(&nb);
    assert_int_equal(nwb_namesym_builder_add(&nb, "render.shadow", 13), 0);
    assert_int_equal(nwb_namesym_builder_serialize(&nb, "b", &img, &img_len, err, sizeof(err)), 0);
    assert_int_equal(nwb_namesym_view_open(&v, img, img_len, NULL, NULL), 0);
    assert_int_equal(nwb_namesym_table_create(&t), 0);
    assert_int_equal(nwb_namesym_table_add(t, &v, "test", NULL, NULL), 1);
    nwb_buf_init(&b, 1 << 20);
    tel_put_header(&b, 1);
    cpu.name = nwb_name_hash("render.shadow", 13);
    cpu.start_ns = 0;
    cpu.end_ns = 5;
    cpu.thread = 1;
    cpu.depth = 0;
    perf_frame(&b, 0, 1000, &cpu, 1);
    nwb_name_token(cpu.name, tok);
    n = snprintf(msg, sizeof(msg), "pass %s took long", tok);
    assert_int_equal(nwb_tel_encode_text(&b, 1, 0, 1, 1, msg, (size_t)n), 0);
    ro.names = t;
    json = report(&b, &ro);
    tel_expect(json, "\"cpu\":[{\"name\":\"render.shadow\"");
    tel_expect(json, "\"message\":\"pass render.shadow took long\"");
    free(json);
    json = report(&b, NULL);
    snprintf(msg, sizeof(msg), "\"cpu\":[{\"name\":\"%s\"", tok);
    tel_expect(json, msg);
    free(json);
    nwb_buf_cleanup(&b);
    nwb_namesym_table_destroy(t);
    nwb_namesym_builder_cleanup(&nb);
    nwb_free(img);
}

static void test_report_json_cap_refuses_and_leaves_output(void **state)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    nwb_buf_t b;
    nwb_buf_t json;

    (void)state;
    nwb_buf_init(&b, 1 << 20);
    tel_put_header(&b, 1);
    nwb_buf_init(&json, 1 << 20);
    assert_int_equal(nwb_buf_append(&json, "keep", 4), 0);
    ro.json_max = 600;
    assert_int_equal(nwb_tel_report_build(b.data, b.len, &ro, &json, NULL), NWB_ETOOBIG);
    assert_int_equal(json.len, 4);
    nwb_buf_cleanup(&json);
    nwb_buf_cleanup(&b);
}

static int contains(const uint8_t *p, size_t n, const char *needle)
{
    const size_t k = strlen(needle);

    for (size_t i = 0; i + k <= n; i++) {
        if (memcmp(p + i, needle, k) == 0) {
            return 1;
        }
    }
    return 0;
}

static void test_report_allocation_failures_unwind_cleanly(void **state)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    nwb_namesym_table_t *names = NULL;
    size_t len;
    uint8_t *data = tel_read_file(tel_data_path("golden_small.nwbs"), &len);
    char err[128];
    long complete_at = -1;

    (void)state;
    assert_non_null(data);
    assert_int_equal(nwb_namesym_table_create(&names), 0);
    assert_true(nwb_namesym_table_add_file(names, tel_data_path("golden_small.namesym"), NULL, NULL,
                                           err, sizeof(err)) > 0);
    ro.names = names;
    /* Fail the n-th allocation for every n until a report completes: each run must unwind
     * (AddressSanitizer checks for leaks), return 0 or -ENOMEM, and never write bad JSON. */
    for (long n = 0; n < 2000 && complete_at < 0; n++) {
        nwb_buf_t json;
        int rc;

        nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
        nwb_alloc_fail_after(n);
        rc = nwb_tel_report_build(data, len, &ro, &json, NULL);
        nwb_alloc_fail_after(-1);
        assert_true(rc == 0 || rc == -ENOMEM);
        if (rc == 0) {
            assert_int_equal(nwb_test_json_check((const char *)json.data, json.len, NULL), 0);
            if (contains(json.data, json.len, "\"reportStatus\":\"ok\"")) {
                complete_at = n;
            }
        } else {
            assert_int_equal(json.len, 0);
        }
        nwb_buf_cleanup(&json);
    }
    print_message("report completes from allocation %ld on\n", complete_at);
    assert_true(complete_at > 0);
    nwb_namesym_table_destroy(names);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_events_map_lists_every_core_kind_with_zeros),
        cmocka_unit_test(test_report_kind_table_matches_docs),
        cmocka_unit_test(test_report_duplicate_segments_counted_once),
        cmocka_unit_test(test_report_client_drops_and_seq_gaps),
        cmocka_unit_test(test_report_frame_percentiles_are_exact_nearest_rank),
        cmocka_unit_test(test_report_worst_frames_carry_top_scopes_and_logs),
        cmocka_unit_test(test_report_scope_statistics_and_gpu_bounds),
        cmocka_unit_test(test_report_heap_backing_reported_beside_arenas),
        cmocka_unit_test(test_report_diagnostics_bounded_with_count_of_rest),
        cmocka_unit_test(test_report_uploads_section_from_ingest_log),
        cmocka_unit_test(test_ingest_log_append_refuses_fifo_and_symlink),
        cmocka_unit_test(test_report_names_decoded_through_namesym),
        cmocka_unit_test(test_report_json_cap_refuses_and_leaves_output),
        cmocka_unit_test(test_report_allocation_failures_unwind_cleanly),
    };

    return cmocka_run_group_tests_name("telemetry.report", tests, NULL, NULL);
}
