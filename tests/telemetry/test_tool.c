/* SPDX-License-Identifier: MIT */
/*
 * test_tool.c - the nwb-telemetry binary as a user runs it: every JSON document it writes (the
 * report to a file and to stdout, with an ingest log whose reasons hold quotes and bytes that
 * are not UTF-8, the report of a damaged stream, the Chrome trace of whole and damaged streams)
 * is parsed by the strict checker (tests/support/json_check.c); exit codes 0, 1 and 2 as
 * documented; a FIFO as input, or as the ingest log beside it, never hangs the tool; .nwbs.zst
 * streams are read and written (synth) like raw ones, a torn frame reported as such.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tel_test_util.h"
#include "test_support.h"

#ifndef NWB_TELEMETRY_EXE
#define NWB_TELEMETRY_EXE "nwb-telemetry"
#endif

struct fx {
    char dir[512];
    char stream[1024]; /* tests/data/telemetry/golden_run.nwbs */
    char names[1024];  /* its sidecar */
    char out[600];     /* the tool's stdout */
    char err[600];     /* its stderr */
    char json[600];    /* -o target */
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("tel-tool", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->out, sizeof(f->out), "%s/stdout", f->dir);
    snprintf(f->err, sizeof(f->err), "%s/stderr", f->dir);
    snprintf(f->json, sizeof(f->json), "%s/out.json", f->dir);
    /* tel_data_path() returns one static buffer: keep copies. */
    snprintf(f->stream, sizeof(f->stream), "%s", tel_data_path("golden_run.nwbs"));
    snprintf(f->names, sizeof(f->names), "%s", tel_data_path("golden_run.namesym"));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* Run nwb-telemetry with the NULL-terminated @p args, stdout and stderr into f->out and
 * f->err. Returns its exit status (-1 when it did not exit normally). */
static int tool(const struct fx *f, const char *const *args)
{
    const char *argv[16] = {NWB_TELEMETRY_EXE};
    posix_spawn_file_actions_t fa;
    size_t n = 1;
    pid_t pid;
    int status;

    while (*args != NULL && n < 15) {
        argv[n++] = *args++;
    }
    argv[n] = NULL;
    assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
    assert_int_equal(posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, f->out,
                                                      O_WRONLY | O_CREAT | O_TRUNC, 0644),
                     0);
    assert_int_equal(posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, f->err,
                                                      O_WRONLY | O_CREAT | O_TRUNC, 0644),
                     0);
    assert_int_equal(posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)(uintptr_t)argv, NULL),
                     0);
    posix_spawn_file_actions_destroy(&fa);
    while (waitpid(pid, &status, 0) < 0) {
        assert_int_equal(errno, EINTR);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The file @p path, checked to be exactly one strict JSON document (malloc'd, NUL-terminated). */
static char *strict_json(const char *path)
{
    size_t len = 0, bad = 0;
    char *s = (char *)tel_read_file(path, &len);

    if (s == NULL) {
        fail_msg("%s was not written", path);
    }
    if (nwb_test_json_check(s, len, &bad) != 0) {
        fail_msg("%s is not valid JSON at byte %zu: %.200s", path, bad, s + bad);
    }
    return s;
}

static void expect_in(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL) {
        fail_msg("\"%s\" not in:\n%.2000s", needle, hay);
    }
}

/* The golden stream at @p path: whole, or (@p half) its first half, a damaged run file. */
static void copy_stream(const struct fx *f, const char *path, int half)
{
    size_t len = 0;
    uint8_t *whole = tel_read_file(f->stream, &len);

    assert_non_null(whole);
    assert_int_equal(tel_write_file(path, whole, half ? len / 2 : len), 0);
    free(whole);
}

/* What the tool's last run wrote on stderr (malloc'd). */
static char *tool_stderr(const struct fx *f)
{
    size_t len = 0;
    char *err = (char *)tel_read_file(f->err, &len);

    assert_non_null(err);
    return err;
}

static void test_tool_report_is_strict_json_in_a_file_and_on_stdout(void **state)
{
    struct fx *f = *state;
    const char *const to_file[] = {"report", f->stream, "--namesym", f->names, "-o", f->json, NULL};
    char *a, *b;

    assert_int_equal(tool(f, to_file), 0);
    a = strict_json(f->json);
    expect_in(a, "\"schema\":\"nwb-telemetry-report/1\"");
    expect_in(a, "\"status\":\"ok\"");
    {
        const char *const to_stdout[] = {"report", f->stream, "--namesym", f->names, NULL};

        assert_int_equal(tool(f, to_stdout), 0);
    }
    b = strict_json(f->out);
    assert_string_equal(a, b);
    free(a);
    free(b);
}

/* Reasons in telemetry.ingest.log come from the decoder, but the file is on disk: whatever it
 * holds, the report quotes it as valid JSON. */
static void test_tool_report_with_a_hostile_ingest_log_is_strict_json(void **state)
{
    struct fx *f = *state;
    static const char log[] =
        "accepted seq=1 code=0 status=ok offset=0 bytes=10 time=1 reason=\n"
        "rejected seq=2 code=-20001 status=NWB_EPROTO offset=7 bytes=9 time=2 "
        "reason=a \"quoted\" \\ back\xff\xfe slash </script>\n"
        "rejected seq=3 code=-20007 status=NWB_ETRUNCATED offset=8 bytes=9 time=3 reason=\x01\n"
        "not a line the ingest writes\n";
    char stream[700], logpath[700];
    char *json;

    snprintf(stream, sizeof(stream), "%s/telemetry.nwbs", f->dir);
    snprintf(logpath, sizeof(logpath), "%s/telemetry.ingest.log", f->dir);
    copy_stream(f, stream, 0);
    assert_int_equal(tel_write_file(logpath, log, sizeof(log) - 1), 0);
    {
        const char *const args[] = {"report", stream, "-o", f->json, NULL};

        assert_int_equal(tool(f, args), 0);
    }
    json = strict_json(f->json);
    expect_in(json, "\"accepted\":1,\"duplicates\":0,\"rejected\":2");
    expect_in(json, "a \\\"quoted\\\" \\\\ back\xef\xbf\xbd\xef\xbf\xbd slash");
    free(json);
}

static void test_tool_report_of_a_damaged_stream_is_strict_json_and_exit_1(void **state)
{
    struct fx *f = *state;
    char cut[700];
    char *json;

    snprintf(cut, sizeof(cut), "%s/cut.nwbs", f->dir);
    copy_stream(f, cut, 1);
    {
        const char *const args[] = {"report", cut, "-o", f->json, NULL};

        assert_int_equal(tool(f, args), 1);
    }
    json = strict_json(f->json);
    expect_in(json, "\"status\":\"NWB_ETRUNCATED\"");
    free(json);
}

static void test_tool_chrome_trace_is_strict_json_whole_or_damaged(void **state)
{
    struct fx *f = *state;
    char cut[700];
    char *json;

    {
        const char *const args[] = {"chrome", f->stream, "--namesym", f->names,
                                    "-o",     f->json,   NULL};

        assert_int_equal(tool(f, args), 0);
    }
    json = strict_json(f->json);
    expect_in(json, "\"traceEvents\":[");
    free(json);
    snprintf(cut, sizeof(cut), "%s/cut.nwbs", f->dir);
    copy_stream(f, cut, 1);
    {
        const char *const args[] = {"chrome", cut, "-o", f->json, NULL};

        assert_int_equal(tool(f, args), 1);
    }
    json = strict_json(f->json);
    expect_in(json, "\"traceEvents\":[");
    free(json);
}

/* synth writes golden_run's stream one zstd frame per upload (by --zstd or by the name): report,
 * dump and chrome of the .zst give what they give for the raw file; a torn last frame gives the
 * report of the frames before it, the zstd error in it and on stderr, and exit 1. */
static void test_tool_reads_and_writes_nwbs_zst(void **state)
{
    struct fx *f = *state;
    char zst[700], zst2[700], raw_dump[700];
    const char *const synth[] = {"synth", "-o", zst, "--frames", "90", "--frames-per-upload",
                                 "30",    NULL};
    char *want;
    char *got;
    size_t len = 0;
    uint8_t *z;

    snprintf(zst, sizeof(zst), "%s/telemetry.nwbs.zst", f->dir);
    snprintf(zst2, sizeof(zst2), "%s/run.bin", f->dir);
    snprintf(raw_dump, sizeof(raw_dump), "%s/raw.dump", f->dir);
    assert_int_equal(tool(f, synth), 0);
    z = tel_read_file(zst, &len);
    assert_non_null(z);
    assert_true(len > 4 && z[0] == 0x28 && z[1] == 0xb5 && z[2] == 0x2f && z[3] == 0xfd);
    {
        /* --zstd without the suffix: the same bytes. */
        const char *const args[] = {
            "synth", "-o", zst2, "--zstd", "--frames", "90", "--frames-per-upload", "30", NULL};
        size_t len2 = 0;
        uint8_t *z2;

        assert_int_equal(tool(f, args), 0);
        z2 = tel_read_file(zst2, &len2);
        assert_non_null(z2);
        assert_int_equal(len2, len);
        assert_memory_equal(z2, z, len);
        free(z2);
    }
    {
        const char *const raw[] = {"synth", "-o", raw_dump, "--frames", "90", "--frames-per-upload",
                                   "30",    NULL};
        const char *const rep[] = {"report", raw_dump, "-o", f->json, NULL};

        assert_int_equal(tool(f, raw), 0);
        assert_int_equal(tool(f, rep), 0);
        want = strict_json(f->json);
    }
    {
        const char *const rep[] = {"report", zst, "-o", f->json, NULL};

        assert_int_equal(tool(f, rep), 0);
    }
    got = strict_json(f->json);
    assert_string_equal(got, want);
    free(got);
    free(want);
    {
        const char *const dump_raw[] = {"dump", raw_dump, NULL};
        const char *const dump_zst[] = {"dump", zst, NULL};
        size_t dump_len = 0;

        assert_int_equal(tool(f, dump_raw), 0);
        want = (char *)tel_read_file(f->out, &dump_len);
        assert_int_equal(tool(f, dump_zst), 0);
        got = (char *)tel_read_file(f->out, &dump_len);
        assert_non_null(want);
        assert_non_null(got);
        assert_string_equal(got, want);
        free(got);
        free(want);
    }
    {
        const char *const args[] = {"chrome", zst, "-o", f->json, NULL};

        assert_int_equal(tool(f, args), 0);
        free(strict_json(f->json));
    }
    /* The last frame torn. */
    assert_int_equal(tel_write_file(zst, z, len - 9), 0);
    {
        const char *const rep[] = {"report", zst, "-o", f->json, NULL};

        assert_int_equal(tool(f, rep), 1);
    }
    got = strict_json(f->json);
    expect_in(got, "\"status\":\"NWB_ECOMPRESS\"");
    expect_in(got, "\"frames\":{\"count\":60,");
    free(got);
    got = tool_stderr(f);
    expect_in(got, "NWB_ECOMPRESS at byte ");
    expect_in(got, "zstd frame is truncated");
    free(got);
    {
        const char *const args[] = {"dump", zst, NULL};

        assert_int_equal(tool(f, args), 1);
    }
    free(z);
}

/* Input that is not a regular file is refused (exit 2, the reason on stderr) and a FIFO
 * nobody writes to does not hang the tool; a missing file names its errno. */
static void test_tool_input_must_be_a_regular_file(void **state)
{
    struct fx *f = *state;
    char fifo[700];
    char *err;

    snprintf(fifo, sizeof(fifo), "%s/fifo.nwbs", f->dir);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    {
        const char *const args[] = {"report", fifo, "-o", f->json, NULL};

        assert_int_equal(tool(f, args), 2);
    }
    err = tool_stderr(f);
    expect_in(err, "fifo.nwbs: not a regular file");
    free(err);
    {
        /* A FIFO in place of the ingest log beside the stream: reported without it. */
        char stream[700], logpath[700];
        const char *const args[] = {"report", stream, "-o", f->json, NULL};

        snprintf(stream, sizeof(stream), "%s/telemetry.nwbs", f->dir);
        snprintf(logpath, sizeof(logpath), "%s/telemetry.ingest.log", f->dir);
        copy_stream(f, stream, 0);
        assert_int_equal(mkfifo(logpath, 0644), 0);
        assert_int_equal(tool(f, args), 0);
        free(strict_json(f->json));
        err = tool_stderr(f);
        expect_in(err, "telemetry.ingest.log: cannot read (not a regular file)");
        free(err);
    }
    {
        const char *const args[] = {"dump", f->dir, NULL};

        assert_int_equal(tool(f, args), 2);
    }
    err = tool_stderr(f);
    expect_in(err, "not a regular file");
    free(err);
    snprintf(fifo, sizeof(fifo), "%s/missing.nwbs", f->dir);
    {
        const char *const args[] = {"report", fifo, NULL};

        assert_int_equal(tool(f, args), 2);
    }
    err = tool_stderr(f);
    expect_in(err, "missing.nwbs: ");
    assert_null(strstr(err, "not a regular file"));
    free(err);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_tool_report_is_strict_json_in_a_file_and_on_stdout),
        T(test_tool_report_with_a_hostile_ingest_log_is_strict_json),
        T(test_tool_report_of_a_damaged_stream_is_strict_json_and_exit_1),
        T(test_tool_chrome_trace_is_strict_json_whole_or_damaged),
        T(test_tool_input_must_be_a_regular_file),
        T(test_tool_reads_and_writes_nwbs_zst),
    };
#undef T

    return cmocka_run_group_tests_name("telemetry.tool", tests, NULL, NULL);
}
