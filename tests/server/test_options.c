/* SPDX-License-Identifier: MIT */
/* test_options.c - unit tests of the nwb-logserver command line (options.c). */
/* The crash caps' defaults are checked against the crash ingest's own (crash_int.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "nwb/error.h"
#include "nwb/server.h"
#include "crash_int.h"

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
    expect_error("--crash-max-ratio: '0'", A("--crash-max-ratio=0"), NULL);
    expect_error("--crash-max-entry-bytes: '1099511627777'",
                 A("--crash-max-entry-bytes=1099511627777"), NULL);
    expect_error("--crash-max-total-bytes: '0'", A("--crash-max-total-bytes=0"), NULL);
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
    };

    return cmocka_run_group_tests_name("server.options", tests, NULL, NULL);
}
