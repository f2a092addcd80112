/* SPDX-License-Identifier: MIT */
/*
 * test_options.c - unit tests of the nwb-logserver command line (options.c) and its one table
 * (NWB_SERVER_OPTIONS): the defaults, --help and docs/operations.md's flag table all say what
 * the table says. The crash caps' defaults are checked against the crash ingest's (crash_int.h),
 * the telemetry stream limit's against the ingest's (telemetry_int.h).
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
#include "nwb/server.h"
#include "crash_int.h"
#include "server_int.h"
#include "test_support.h"

static int parse(nwb_server_config_t *cfg, char *err, size_t errlen, ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;

    argv[argc++] = (char *)(uintptr_t) "nwb-logserver";
    va_start(ap, errlen);
    for (;;) {
        char *a = va_arg(ap, char *);

        if (a == NULL) {
            break;
        }
        argv[argc++] = a;
    }
    va_end(ap);
    err[0] = '\0';
    return nwb_server_config_parse(cfg, argc, argv, err, errlen);
}

#define A(s) ((char *)(uintptr_t)(s))

static void test_defaults_match_the_contract(void **state)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    char err[256];

    (void)state;
    assert_int_equal(parse(&cfg, err, sizeof(err), NULL), 0);
    assert_string_equal(cfg.bind_addr, "127.0.0.1");
    assert_int_equal(cfg.port, 7650);
    assert_string_equal(cfg.out_dir, "./nwb-logs");
    assert_int_equal(cfg.namesym_dir_count, 0);
    assert_int_equal(cfg.crash_retain_packages, 256);
    assert_int_equal(cfg.crash_retain_raw, 256);
    assert_int_equal(cfg.crash_retain_invalid, 64);
    assert_int_equal(cfg.max_header_bytes, 16384);
    assert_int_equal(cfg.max_headers, 64);
    assert_int_equal(cfg.max_body_bytes, 16u * 1024u * 1024u);
    assert_int_equal(cfg.request_timeout_ms, 10000);
    assert_int_equal(cfg.idle_timeout_ms, 60000);
    assert_int_equal(cfg.max_connections, 4096);
    assert_int_equal(cfg.queue_max_jobs, 1024);
    assert_int_equal(cfg.max_buffered_bytes, 256u * 1024u * 1024u);
    assert_int_equal(cfg.max_open_runs, 256);
}

static void test_crash_cap_defaults_are_the_ingest_defaults(void **state)
{
    const nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    const struct nwb_crash_caps caps = NWB_CRASH_CAPS_INIT;

    (void)state;
    assert_int_equal(cfg.crash_max_archive_bytes, caps.max_archive_bytes);
    assert_int_equal(cfg.crash_max_entries, caps.max_entries);
    assert_int_equal(cfg.crash_max_path_bytes, caps.max_path_bytes);
    assert_int_equal(cfg.crash_max_path_depth, caps.max_path_depth);
    assert_int_equal(cfg.crash_max_entry_bytes, caps.max_entry_bytes);
    assert_int_equal(cfg.crash_max_total_bytes, caps.max_total_bytes);
    assert_int_equal(cfg.crash_max_ratio, caps.max_ratio);
    assert_int_equal(cfg.crash_max_queue, caps.max_queue);
    assert_int_equal(cfg.crash_retain_packages, caps.retain_packages);
    assert_int_equal(cfg.crash_retain_raw, caps.retain_raw);
    assert_int_equal(cfg.crash_retain_invalid, caps.retain_invalid);
    {
        /* --telemetry-run-max-bytes' default is the ingest's own (telemetry_int.h). */
        const struct nwb__tel_ingest_limits tel = NWB__TEL_INGEST_LIMITS_INIT;

        assert_int_equal(cfg.telemetry_run_max_bytes, tel.run_stream_max);
    }
}

static void test_crash_caps_are_applied_within_their_ranges(void **state)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    char err[256];

    (void)state;
    assert_int_equal(parse(&cfg, err, sizeof(err), A("--crash-max-archive-bytes=1073741824"),
                           A("--crash-max-entries"), A("1"), A("--crash-max-path-bytes=4096"),
                           A("--crash-max-path-depth"), A("64"),
                           A("--crash-max-entry-bytes=1099511627776"), A("--crash-max-total-bytes"),
                           A("1"), A("--crash-max-ratio=1"), A("--crash-max-queue"), A("65536"),
                           NULL),
                     0);
    assert_int_equal(cfg.crash_max_archive_bytes, 1073741824u);
    assert_int_equal(cfg.crash_max_entries, 1);
    assert_int_equal(cfg.crash_max_path_bytes, 4096);
    assert_int_equal(cfg.crash_max_path_depth, 64);
    assert_int_equal(cfg.crash_max_entry_bytes, 1ull << 40);
    assert_int_equal(cfg.crash_max_total_bytes, 1);
    assert_int_equal(cfg.crash_max_ratio, 1);
    assert_int_equal(cfg.crash_max_queue, 65536);
}

static void test_every_option_is_applied_in_both_spellings(void **state)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    char err[256];

    (void)state;
    assert_int_equal(parse(&cfg, err, sizeof(err), A("--bind"), A("::1"), A("--port=0"), A("--out"),
                           A("/tmp/x"), A("--namesym-dir"), A("/a"), A("--namesym-dir=/b"),
                           A("--crash-retain-packages"), A("0"), A("--crash-retain-raw=1"),
                           A("--crash-retain-invalid"), A("2"), A("--max-header-bytes=256"),
                           A("--max-headers"), A("1"), A("--max-body-bytes"), A("1"),
                           A("--request-timeout-ms"), A("300"), A("--idle-timeout-ms=400"),
                           A("--max-connections"), A("3"), A("--queue-max-jobs=4"),
                           A("--max-buffered-bytes"), A("5"), A("--max-open-runs"), A("6"), NULL),
                     0);
    assert_string_equal(cfg.bind_addr, "::1");
    assert_int_equal(cfg.port, 0);
    assert_string_equal(cfg.out_dir, "/tmp/x");
    assert_int_equal(cfg.namesym_dir_count, 2);
    assert_string_equal(cfg.namesym_dirs[0], "/a");
    assert_string_equal(cfg.namesym_dirs[1], "/b");
    assert_int_equal(cfg.crash_retain_packages, 0);
    assert_int_equal(cfg.crash_retain_raw, 1);
    assert_int_equal(cfg.crash_retain_invalid, 2);
    assert_int_equal(cfg.max_header_bytes, 256);
    assert_int_equal(cfg.max_headers, 1);
    assert_int_equal(cfg.max_body_bytes, 1);
    assert_int_equal(cfg.request_timeout_ms, 300);
    assert_int_equal(cfg.idle_timeout_ms, 400);
    assert_int_equal(cfg.max_connections, 3);
    assert_int_equal(cfg.queue_max_jobs, 4);
    assert_int_equal(cfg.max_buffered_bytes, 5);
    assert_int_equal(cfg.max_open_runs, 6);
    /* The event stream's rows, at their edges (both spellings). */
    assert_int_equal(parse(&cfg, err, sizeof(err), A("--events-max-streams"), A("4096"),
                           A("--events-max-unsent-bytes=4096"), A("--events-keepalive-ms"), A("10"),
                           NULL),
                     0);
    assert_int_equal(cfg.events_max_streams, 4096);
    assert_int_equal(cfg.events_max_unsent_bytes, 4096);
    assert_int_equal(cfg.events_keepalive_ms, 10);
}

static void expect_error(const char *needle, ...)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    char err[256];
    char *argv[8];
    int argc = 0;
    va_list ap;

    argv[argc++] = A("nwb-logserver");
    va_start(ap, needle);
    for (;;) {
        char *a = va_arg(ap, char *);

        if (a == NULL) {
            break;
        }
        argv[argc++] = a;
    }
    va_end(ap);
    err[0] = '\0';
    assert_int_equal(nwb_server_config_parse(&cfg, argc, argv, err, sizeof(err)), NWB_ECONFIG);
    if (strstr(err, needle) == NULL) {
        fail_msg("message '%s' does not mention '%s'", err, needle);
    }
}

static void test_bad_input_is_refused_with_a_reason(void **state)
{
    (void)state;
    expect_error("unknown option '--nope'", A("--nope"), NULL);
    expect_error("unknown argument 'stray'", A("stray"), NULL);
    expect_error("--port needs a value", A("--port"), NULL);
    expect_error("--port: 'abc'", A("--port"), A("abc"), NULL);
    expect_error("--port: '65536'", A("--port=65536"), NULL);
    expect_error("--port: '-1'", A("--port=-1"), NULL);
    expect_error("--port: ''", A("--port="), NULL);
    expect_error("--bind: 'localhost'", A("--bind"), A("localhost"), NULL);
    expect_error("--bind: '1.2.3'", A("--bind"), A("1.2.3"), NULL);
    expect_error("--out: the value is empty", A("--out="), NULL);
    expect_error("--max-headers: '0'", A("--max-headers=0"), NULL);
    expect_error("--max-header-bytes: '255'", A("--max-header-bytes=255"), NULL);
    expect_error("--max-body-bytes: '1073741825'", A("--max-body-bytes=1073741825"), NULL);
    expect_error("--request-timeout-ms: '0'", A("--request-timeout-ms=0"), NULL);
    expect_error("--crash-retain-raw: '99999999999999999999'",
                 A("--crash-retain-raw=99999999999999999999"), NULL);
    expect_error("must not exceed --max-buffered-bytes", A("--max-body-bytes=100"),
                 A("--max-buffered-bytes=99"), NULL);
    expect_error("--crash-max-archive-bytes: '1073741825'",
                 A("--crash-max-archive-bytes=1073741825"), NULL);
    expect_error("--crash-max-archive-bytes: '0'", A("--crash-max-archive-bytes=0"), NULL);
    expect_error("--crash-max-path-depth: '65'", A("--crash-max-path-depth=65"), NULL);
    expect_error("--crash-max-path-bytes: '4097'", A("--crash-max-path-bytes=4097"), NULL);
    expect_error("--crash-max-queue: '0'", A("--crash-max-queue=0"), NULL);
    expect_error("--crash-max-queue: '65537'", A("--crash-max-queue=65537"), NULL);
    expect_error("--crash-max-entries: '0'", A("--crash-max-entries=0"), NULL);
    expect_error("--symbols-max-bytes: '0'", A("--symbols-max-bytes=0"), NULL);
    expect_error("--symbols-max-bytes: '1099511627777'", A("--symbols-max-bytes=1099511627777"),
                 NULL);
    expect_error("--symbols-dir: the value is empty", A("--symbols-dir="), NULL);
    expect_error("--crash-max-ratio: '0'", A("--crash-max-ratio=0"), NULL);
    expect_error("--crash-max-entry-bytes: '1099511627777'",
                 A("--crash-max-entry-bytes=1099511627777"), NULL);
    expect_error("--crash-max-total-bytes: '0'", A("--crash-max-total-bytes=0"), NULL);
    expect_error("--events-max-streams: '0'", A("--events-max-streams=0"), NULL);
    expect_error("--events-max-streams: '4097'", A("--events-max-streams=4097"), NULL);
    expect_error("--events-max-unsent-bytes: '4095'", A("--events-max-unsent-bytes=4095"), NULL);
    expect_error("--events-keepalive-ms: '9'", A("--events-keepalive-ms=9"), NULL);
    expect_error("--events-keepalive-ms: '3600001'", A("--events-keepalive-ms=3600001"), NULL);
}

static void test_namesym_dir_bound_is_enforced_at_its_edge(void **state)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    char err[256];
    char *argv[2 * NWB_SERVER_NAMESYM_DIRS_MAX + 3];
    int argc = 0;

    (void)state;
    argv[argc++] = A("nwb-logserver");
    for (unsigned i = 0; i < NWB_SERVER_NAMESYM_DIRS_MAX; i++) {
        argv[argc++] = A("--namesym-dir");
        argv[argc++] = A("/d");
    }
    assert_int_equal(nwb_server_config_parse(&cfg, argc, argv, err, sizeof(err)), 0);
    assert_int_equal(cfg.namesym_dir_count, NWB_SERVER_NAMESYM_DIRS_MAX);
    argv[argc++] = A("--namesym-dir=/one-too-many");
    cfg.namesym_dir_count = 0;
    assert_int_equal(nwb_server_config_parse(&cfg, argc, argv, err, sizeof(err)), NWB_ECONFIG);
    assert_non_null(strstr(err, "more than 16"));
}

static void test_help_and_version_are_reported(void **state)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    char err[256];

    (void)state;
    assert_int_equal(parse(&cfg, err, sizeof(err), A("--help"), NULL), NWB_SERVER_ARGS_HELP);
    assert_int_equal(parse(&cfg, err, sizeof(err), A("--port=1"), A("--version"), NULL),
                     NWB_SERVER_ARGS_VERSION);
    /* --help lists every option. */
    assert_non_null(strstr(nwb_server_usage(), "--max-open-runs"));
    assert_non_null(strstr(nwb_server_usage(), "--crash-retain-invalid"));
    assert_non_null(strstr(nwb_server_usage(), "--request-timeout-ms"));
    assert_non_null(strstr(nwb_server_usage(), "--crash-max-archive-bytes"));
    assert_non_null(strstr(nwb_server_usage(), "--crash-max-queue"));
}

static int is_number(const struct nwb__opt *o)
{
    return o->kind == NWB__OPT_INT || o->kind == NWB__OPT_UINT || o->kind == NWB__OPT_SIZE;
}

/* The config's defaults are the table's, each number inside its own range. */
static void test_config_defaults_are_the_table_defaults(void **state)
{
    const nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    size_t n;
    const struct nwb__opt *opts = nwb__server_options(&n);
    char err[256];

    (void)state;
    assert_int_equal(n, 44);
    for (size_t i = 0; i < n; i++) {
        const struct nwb__opt *o = &opts[i];
        const char *field = (const char *)&cfg + o->offset;
        const char *text;
        int negative;

        if (is_number(o)) {
            const unsigned long long v = nwb__server_option_number(&cfg, o, &negative);

            if (negative || v != o->def_num || v < o->min || v > o->max) {
                fail_msg("%s: config default %llu, table default %llu in %llu..%llu", o->name, v,
                         o->def_num, o->min, o->max);
            }
            continue;
        }
        memcpy(&text, field, sizeof(text)); /* namesym_dirs: its first entry */
        if (o->def_str == NULL ? text != NULL : text == NULL || strcmp(text, o->def_str) != 0) {
            fail_msg("%s: config default '%s', table default '%s'", o->name,
                     text != NULL ? text : "(none)", o->def_str != NULL ? o->def_str : "(none)");
        }
    }
    assert_int_equal(cfg.namesym_dir_count, 0);
    assert_int_equal(cfg.handle_signals, 0);
    /* And the defaults pass the check nwb_server_create() applies. */
    assert_int_equal(nwb__server_config_check(&cfg, err, sizeof(err)), 0);
}

/* The --help block of @p flag (its line up to the next option's), blanks collapsed to one. */
static void help_block(const char *flag, const char *meta, char *out, size_t cap)
{
    const char *usage = nwb_server_usage();
    char head[64];
    const char *p;
    const char *end;
    size_t n = 0;

    snprintf(head, sizeof(head), "\n  %s %s ", flag, meta);
    p = strstr(usage, head);
    if (p == NULL) {
        fail_msg("--help has no line for %s %s", flag, meta);
    }
    p += strlen(head);
    end = strstr(p, "\n  -");
    if (end == NULL) {
        end = p + strlen(p);
    }
    for (; p < end && n + 1 < cap; p++) {
        const int blank = *p == ' ' || *p == '\n';

        if (blank && (n == 0 || out[n - 1] == ' ')) {
            continue;
        }
        out[n++] = blank ? ' ' : *p;
    }
    out[n] = '\0';
}

static void test_help_lists_every_option_with_its_default_and_range(void **state)
{
    size_t n;
    const struct nwb__opt *opts = nwb__server_options(&n);
    char block[1024];
    char want[128];

    (void)state;
    for (size_t i = 0; i < n; i++) {
        const struct nwb__opt *o = &opts[i];

        help_block(o->name, o->meta, block, sizeof(block));
        if (is_number(o)) {
            snprintf(want, sizeof(want), "(default %llu; %llu..%llu)", o->def_num, o->min, o->max);
        } else if (o->def_str != NULL) {
            snprintf(want, sizeof(want), "(default %s)", o->def_str);
        } else {
            want[0] = '\0';
        }
        if (strstr(block, want) == NULL) {
            fail_msg("--help for %s says '%s', not '%s'", o->name, block, want);
        }
    }
    /* Every line fits 79 columns. */
    for (const char *line = nwb_server_usage(); *line != '\0';) {
        const char *nl = strchr(line, '\n');

        assert_non_null(nl);
        assert_true(nl - line <= 79);
        line = nl + 1;
    }
    assert_non_null(strstr(nwb_server_usage(), "\n  --help "));
    assert_non_null(strstr(nwb_server_usage(), "\n  --version "));
}

/* Cell @p col (0-based) of the markdown table row @p line, trimmed, into @p out. */
static int cell(const char *line, int col, char *out, size_t cap)
{
    const char *p = line;

    for (int c = 0; c <= col; c++) {
        p = strchr(p, '|');
        if (p == NULL) {
            return -1;
        }
        p++;
    }
    {
        const char *e = strchr(p, '|');
        size_t n;

        if (e == NULL) {
            return -1;
        }
        while (p < e && *p == ' ') {
            p++;
        }
        while (e > p && e[-1] == ' ') {
            e--;
        }
        n = (size_t)(e - p);
        if (n >= cap) {
            return -1;
        }
        memcpy(out, p, n);
        out[n] = '\0';
    }
    return 0;
}

/* docs/operations.md's flag table: one row per option, with the table's default and range,
 * and no row for an option the table does not have. */
static void test_operations_doc_flag_table_matches_the_options_table(void **state)
{
    size_t count;
    const struct nwb__opt *opts = nwb__server_options(&count);
    char path[1024];
    char *doc;
    const char *table;
    const char *table_end;
    unsigned doc_rows = 0;

    (void)state;
    snprintf(path, sizeof(path), "%s/docs/operations.md", NWB_TEST_SOURCE_DIR);
    doc = nwb_test_read_file(path, NULL);
    assert_non_null(doc);
    table = strstr(doc, "\n| option | default | range | meaning |\n");
    assert_non_null(table);
    for (size_t i = 0; i < count; i++) {
        const struct nwb__opt *o = &opts[i];
        char start[96], def[128], range[64], want[128];
        const char *line;

        snprintf(start, sizeof(start), "\n| `%s %s` |", o->name, o->meta);
        line = strstr(table, start);
        if (line == NULL) {
            fail_msg("docs/operations.md has no row for %s", o->name);
        }
        line++;
        assert_int_equal(cell(line, 1, def, sizeof(def)), 0);
        assert_int_equal(cell(line, 2, range, sizeof(range)), 0);
        if (is_number(o)) {
            snprintf(want, sizeof(want), "%llu", o->def_num);
            if (strcmp(def, want) != 0) {
                fail_msg("docs: %s default '%s', the table says %s", o->name, def, want);
            }
            snprintf(want, sizeof(want), "%llu..%llu", o->min, o->max);
            if (strcmp(range, want) != 0) {
                fail_msg("docs: %s range '%s', the table says %s", o->name, range, want);
            }
        } else {
            if (o->def_str != NULL) {
                snprintf(want, sizeof(want), "`%s`", o->def_str);
                if (strcmp(def, want) != 0) {
                    fail_msg("docs: %s default '%s', the table says %s", o->name, def, want);
                }
            }
            assert_string_equal(range, "-");
        }
    }
    /* The other way: every documented option is in the table (or is --help / --version). */
    table_end = strstr(table + 1, "\n\n");
    assert_non_null(table_end);
    for (const char *p = strstr(table, "\n| `--"); p != NULL && p < table_end;
         p = strstr(p + 1, "\n| `--")) {
        char flag[64];
        const size_t n = strcspn(p + 4, " `");
        int known = 0;

        assert_true(n < sizeof(flag));
        memcpy(flag, p + 4, n);
        flag[n] = '\0';
        for (size_t i = 0; i < count; i++) {
            known |= strcmp(opts[i].name, flag) == 0;
        }
        if (!known && strcmp(flag, "--help") != 0 && strcmp(flag, "--version") != 0) {
            fail_msg("docs/operations.md documents %s, which the table does not have", flag);
        }
        doc_rows++;
    }
    assert_int_equal(doc_rows, count + 2);
    free(doc);
}

/* A library caller's config is held to the table's ranges too (nwb_server_create()). */
static void test_library_configs_are_checked_against_the_table(void **state)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    char err[256];

    (void)state;
    cfg.max_headers = 0;
    assert_int_equal(nwb__server_config_check(&cfg, err, sizeof(err)), NWB_ECONFIG);
    assert_string_equal(err, "--max-headers: 0 is not in 1..1024");
    cfg = (nwb_server_config_t)NWB_SERVER_CONFIG_INIT;
    cfg.port = -1;
    assert_int_equal(nwb__server_config_check(&cfg, err, sizeof(err)), NWB_ECONFIG);
    assert_string_equal(err, "--port: a negative value is not in 0..65535");
    cfg = (nwb_server_config_t)NWB_SERVER_CONFIG_INIT;
    cfg.crash_max_path_depth = 65;
    assert_int_equal(nwb__server_config_check(&cfg, err, sizeof(err)), NWB_ECONFIG);
    assert_string_equal(err, "--crash-max-path-depth: 65 is not in 1..64");
    cfg = (nwb_server_config_t)NWB_SERVER_CONFIG_INIT;
    cfg.out_dir = NULL;
    assert_int_equal(nwb__server_config_check(&cfg, err, sizeof(err)), NWB_ECONFIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_match_the_contract),
        cmocka_unit_test(test_crash_cap_defaults_are_the_ingest_defaults),
        cmocka_unit_test(test_crash_caps_are_applied_within_their_ranges),
        cmocka_unit_test(test_every_option_is_applied_in_both_spellings),
        cmocka_unit_test(test_bad_input_is_refused_with_a_reason),
        cmocka_unit_test(test_namesym_dir_bound_is_enforced_at_its_edge),
        cmocka_unit_test(test_help_and_version_are_reported),
        cmocka_unit_test(test_config_defaults_are_the_table_defaults),
        cmocka_unit_test(test_help_lists_every_option_with_its_default_and_range),
        cmocka_unit_test(test_operations_doc_flag_table_matches_the_options_table),
        cmocka_unit_test(test_library_configs_are_checked_against_the_table),
    };

    return cmocka_run_group_tests_name("server.options", tests, NULL, NULL);
}
