/* SPDX-License-Identifier: MIT */
/*
 * test_golden.c - the golden streams in tests/data/telemetry/: the synthetic generator still
 * writes them byte for byte (format stability), and the report, the dump and the Chrome trace
 * made from them match the checked-in expectations or parse as strict JSON.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/namesym.h"
#include "nwb/telemetry_report.h"
#include "tel_test_util.h"
#include "test_support.h"

/* The configurations tests/data/telemetry/regenerate.sh uses. */
static nwb_tel_synth_config_t small_cfg(void)
{
    nwb_tel_synth_config_t c = NWB_TEL_SYNTH_CONFIG_INIT;

    c.seed = 7;
    c.frames = 6;
    c.scopes_per_frame = 12;
    c.gpu_scopes = 2;
    c.arenas = 2;
    c.logs_per_frame = 1;
    c.frames_per_upload = 2;
    c.frame_graph_every = 3;
    c.diagnostics_every = 4;
    c.unknown_kinds = 1;
    return c;
}

static nwb_tel_synth_config_t run_cfg(void)
{
    nwb_tel_synth_config_t c = NWB_TEL_SYNTH_CONFIG_INIT;

    c.seed = 1;
    c.frames = 90;
    c.scopes_per_frame = 24;
    c.gpu_scopes = 4;
    c.arenas = 3;
    c.logs_per_frame = 1;
    c.frames_per_upload = 30;
    c.frame_graph_every = 30;
    c.diagnostics_every = 45;
    c.unknown_kinds = 1;
    return c;
}

static nwb_namesym_table_t *load_names(const char *file)
{
    nwb_namesym_table_t *t = NULL;
    char err[256];

    assert_int_equal(nwb_namesym_table_create(&t), 0);
    assert_true(nwb_namesym_table_add_file(t, tel_data_path(file), NULL, NULL, err, sizeof(err)) >
                0);
    return t;
}

static void check_regenerates(const nwb_tel_synth_config_t *cfg, const char *file)
{
    nwb_buf_t out;
    size_t len;
    uint8_t *golden = tel_read_file(tel_data_path(file), &len);

    assert_non_null(golden);
    nwb_buf_init(&out, 64u << 20);
    assert_int_equal(nwb_tel_synth(cfg, &out, NULL), 0);
    assert_int_equal(out.len, len);
    assert_memory_equal(out.data, golden, len);
    nwb_buf_cleanup(&out);
    free(golden);
}

static void test_golden_synth_regenerates_small_stream(void **state)
{
    const nwb_tel_synth_config_t c = small_cfg();

    (void)state;
    check_regenerates(&c, "golden_small.nwbs");
}

static void test_golden_synth_regenerates_run_stream(void **state)
{
    const nwb_tel_synth_config_t c = run_cfg();

    (void)state;
    check_regenerates(&c, "golden_run.nwbs");
}

static void check_report(const char *stream, const char *names_file, const char *expected)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    nwb_tel_ingest_summary_t none;
    nwb_tel_decode_result_t res;
    nwb_namesym_table_t *names = names_file != NULL ? load_names(names_file) : NULL;
    nwb_buf_t json;
    size_t len;
    size_t elen;
    uint8_t *data = tel_read_file(tel_data_path(stream), &len);
    uint8_t *want = tel_read_file(tel_data_path(expected), &elen);

    assert_non_null(data);
    assert_non_null(want);
    memset(&none, 0, sizeof(none)); /* as the tool sees it: no ingest log beside the file */
    ro.names = names;
    ro.ingest = &none;
    nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
    assert_int_equal(nwb_tel_report_build(data, len, &ro, &json, &res), 0);
    assert_int_equal(res.status, 0);
    assert_int_equal(nwb_test_json_check((const char *)json.data, json.len, NULL), 0);
    if (json.len != elen || memcmp(json.data, want, elen) != 0) {
        tel_write_file("golden_mismatch.json", json.data, json.len);
        fail_msg("%s differs from the report built now (written to golden_mismatch.json)",
                 expected);
    }
    nwb_buf_cleanup(&json);
    nwb_namesym_table_destroy(names);
    free(data);
    free(want);
}

static void test_golden_small_report_matches(void **state)
{
    (void)state;
    check_report("golden_small.nwbs", "golden_small.namesym", "golden_small.report.json");
}

static void test_golden_run_report_matches(void **state)
{
    (void)state;
    check_report("golden_run.nwbs", "golden_run.namesym", "golden_run.report.json");
}

static void test_golden_run_report_without_names_keeps_tokens(void **state)
{
    size_t len;
    char *want;

    (void)state;
    check_report("golden_run.nwbs", NULL, "golden_run.nonames.report.json");
    want = (char *)tel_read_file(tel_data_path("golden_run.nonames.report.json"), &len);
    assert_non_null(want);
    /* The scope and counter names travel in the stream's string tables: no sidecar needed. */
    assert_non_null(strstr(want, "{\"name\":\"render.shadow\",\"samples\":90,"));
    assert_non_null(strstr(want, "{\"name\":\"render.drawCalls\",\"samples\":90,"));
    assert_non_null(strstr(want, "\"message\":\"frame 36: job.")); /* log tokens too */
    /* GPU, memory, frame-graph and diagnostic names do not: they stay "#" + 16 hex digits. */
    assert_null(strstr(want, "\"gpu.lighting\""));
    assert_null(strstr(want, "\"arena/level\""));
    assert_non_null(strstr(want, "\"gpu\":[{\"name\":\"#"));
    free(want);
}

static void test_golden_small_dump_matches(void **state)
{
    nwb_namesym_table_t *names = load_names("golden_small.namesym");
    char *buf = NULL;
    size_t blen = 0;
    size_t len;
    size_t elen;
    uint8_t *data = tel_read_file(tel_data_path("golden_small.nwbs"), &len);
    uint8_t *want = tel_read_file(tel_data_path("golden_small.dump.txt"), &elen);
    FILE *f = open_memstream(&buf, &blen);

    (void)state;
    assert_non_null(data);
    assert_non_null(want);
    assert_non_null(f);
    assert_int_equal(nwb_tel_dump(data, len, names, f), 0);
    fclose(f);
    assert_int_equal(blen, elen);
    assert_memory_equal(buf, want, elen);
    free(buf);
    free(data);
    free(want);
    nwb_namesym_table_destroy(names);
}

static void test_golden_chrome_trace_is_strict_json_with_all_events(void **state)
{
    nwb_namesym_table_t *names = load_names("golden_run.namesym");
    nwb_tel_decode_result_t res;
    char *buf = NULL;
    size_t blen = 0;
    size_t len;
    size_t bad = 0;
    uint8_t *data = tel_read_file(tel_data_path("golden_run.nwbs"), &len);
    FILE *f = open_memstream(&buf, &blen);

    (void)state;
    assert_non_null(data);
    assert_int_equal(nwb_tel_chrome_write(data, len, names, f, &res), 0);
    fclose(f);
    assert_int_equal(res.status, 0);
    if (nwb_test_json_check(buf, blen, &bad) != 0) {
        fail_msg("chrome trace is not valid JSON at byte %zu", bad);
    }
    /* 90 frames of 24 CPU scopes plus the frame itself as complete events. */
    assert_int_equal(nwb_test_count(buf, "\"ph\":\"X\""), 90 * (24 + 1));
    assert_int_equal(nwb_test_count(buf, "\"cat\":\"frame\""), 90);
    /* 90 log lines, hitch warnings, a v2 log line every 10 frames, 2 diagnostics, 3 graphs. */
    assert_true(nwb_test_count(buf, "\"ph\":\"i\"") >= 90 + 9 + 2 + 3);
    assert_true(nwb_test_count(buf, "\"cat\":\"memory\"") == 90);
    assert_non_null(strstr(buf, "\"name\":\"render.shadow\""));
    assert_non_null(strstr(buf, "\"name\":\"gpu gpu.lighting\""));
    tel_write_file("golden_run.trace.json", buf, blen);
    free(buf);
    free(data);
    nwb_namesym_table_destroy(names);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_synth_regenerates_small_stream),
        cmocka_unit_test(test_golden_synth_regenerates_run_stream),
        cmocka_unit_test(test_golden_small_report_matches),
        cmocka_unit_test(test_golden_run_report_matches),
        cmocka_unit_test(test_golden_run_report_without_names_keeps_tokens),
        cmocka_unit_test(test_golden_small_dump_matches),
        cmocka_unit_test(test_golden_chrome_trace_is_strict_json_with_all_events),
    };

    return cmocka_run_group_tests_name("telemetry.golden", tests, NULL, NULL);
}
