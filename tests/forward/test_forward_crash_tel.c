/* SPDX-License-Identifier: MIT */
/*
 * test_forward_crash_tel.c - the real nwb-logserver with --forward-clickhouse against Debian's
 * real clickhouse-server: an uploaded crash package arrives in nwb_crashes with its signature,
 * group, status and sizes, and arrives again (one row with FINAL) when its signature changes;
 * an nwb-demo telemetry run arrives in nwb_runs with the frame count of its telemetry.json and
 * in nwb_frames with exactly that many frames.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clickhouse_server.h"
#include "crash_signature.h"
#include "crash_test_archive.h"
#include "test_support.h"

/* How long any one row may take to arrive (a pass is 200 ms, a crash scan 1 s). */
#define WAIT_MS 60000
/* Frames nwb-demo plays. */
#define DEMO_FRAMES "240"

struct fixture {
    struct nwb_test_clickhouse ch;
    struct nwb_test_server srv;
    char out[512];
    char url[128];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    const char *extra[] = {"--forward-clickhouse", NULL, NULL};

    if (f == NULL || nwb_test_clickhouse_start(&f->ch) != 0 ||
        nwb_test_tmpdir("forward-crash-tel", f->out, sizeof f->out) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d/?database=nwb", f->ch.http_port);
    extra[1] = f->url;
    *state = f;
    return nwb_test_server_start(&f->srv, NULL, f->out, 0, extra);
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    nwb_test_server_stop(&f->srv, SIGTERM, 10000);
    nwb_test_clickhouse_destroy(&f->ch);
    nwb_test_rmtree(f->out);
    free(f);
    return 0;
}

/* Wait until @p sql answers exactly @p want (TabSeparated, newline included). ClickHouse has no
 * change notification: the answer is polled in 50 ms slices up to WAIT_MS. */
static void wait_answer(struct fixture *f, const char *sql, const char *want)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;
    char got[4096] = "";

    while (nwb_test_now_ms() < deadline) {
        if (nwb_test_clickhouse_query(&f->ch, sql, NULL, 0, got, sizeof got) == 200 &&
            strcmp(got, want) == 0) {
            return;
        }
        poll(NULL, 0, 50);
    }
    fail_msg("%s: '%s', expected '%s'", sql, got, want);
}

/* The first line of @p path, once the file exists (the crash worker's analysis is written
 * after the upload's 200), into @p out. */
static void wait_first_line(const char *path, char *out, size_t cap)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;
    char *text = NULL;

    while ((text = nwb_test_read_file(path, NULL)) == NULL) {
        assert_true(nwb_test_now_ms() < deadline);
        poll(NULL, 0, 20);
    }
    text[strcspn(text, "\n")] = '\0';
    snprintf(out, cap, "%s", text);
    free(text);
}

/* An extracted crash: its row carries the signature and group the server derived, and a
 * changed signature (what a resymbolisation writes) replaces it: one row with FINAL. */
static void test_forward_crash_row_and_its_resymbolised_signature(void **state)
{
    struct fixture *f = *state;
    size_t len = 0;
    void *pkg = ta_package("tar.zst", "forwarded", &len);
    char resp[512], id[33], path[1024], sig[NWB_CRASH_SIG_MAX + 1];
    char group[NWB_CRASH_GROUP_ID_LEN + 1], sql[512], want[2048];
    const char *at;

    assert_non_null(pkg);
    assert_int_equal(
        nwb_test_http(f->srv.port, "POST", "/v1/crash", NULL, pkg, len, resp, sizeof resp), 200);
    at = strstr(resp, "\"id\":\"");
    assert_non_null(at);
    memcpy(id, at + 6, 32);
    id[32] = '\0';
    snprintf(path, sizeof path, "%s/crashes/analysis/%s/signature.txt", f->out, id);
    wait_first_line(path, sig, sizeof sig);
    assert_true(sig[0] != '\0');
    print_message("crash %s: signature '%s'\n", id, sig);
    nwb_crash_group_id(sig, strlen(sig), group);

    snprintf(sql, sizeof sql,
             "SELECT program, run, signal, status, signature, crash_group, archive_bytes, "
             "package_bytes > 0, count() FROM nwb.nwb_crashes FINAL WHERE id = '%s' GROUP BY "
             "program, run, signal, status, signature, crash_group, archive_bytes, package_bytes",
             id);
    snprintf(want, sizeof want,
             "ta_prog\t0123456789abcdef\tSIGSEGV\textracted\t%s\t%s\t%zu\t1\t1\n", sig, group, len);
    wait_answer(f, sql, want);

    /* The crash worker rewrites signature.txt when a package is symbolised again. */
    {
        static const char resym[] = "SIGSEGV | resymbolised_function\n";

        assert_int_equal(ta_write_file(path, resym, sizeof resym - 1), 0);
        nwb_crash_group_id(resym, sizeof resym - 2, group);
        snprintf(want, sizeof want,
                 "ta_prog\t0123456789abcdef\tSIGSEGV\textracted\tSIGSEGV | "
                 "resymbolised_function\t%s\t%zu\t1\t1\n",
                 group, len);
        wait_answer(f, sql, want);
    }
    free(pkg);
}

#ifdef NWB_DEMO_EXE
/* The counter @p name of the server's /metrics, or -1 when it is not there. */
static long long server_counter(const struct fixture *f, const char *name)
{
    char *body = malloc(1u << 16);
    long long v = -1;

    assert_non_null(body);
    if (nwb_test_http(f->srv.port, "GET", "/metrics", NULL, NULL, 0, body, 1u << 16) == 200) {
        for (const char *line = body; line != NULL && *line != '\0';) {
            const size_t n = strlen(name);

            if (strncmp(line, name, n) == 0 && line[n] == ' ') {
                v = atoll(line + n + 1);
                break;
            }
            line = strchr(line, '\n');
            line = line != NULL ? line + 1 : NULL;
        }
    }
    free(body);
    return v;
}

/* The run folder of nwb-demo's run under @p out (the one with a telemetry.json). */
static void demo_run_dir(const char *out, char *name, size_t cap)
{
    char runs[600];
    DIR *d;

    name[0] = '\0';
    snprintf(runs, sizeof runs, "%s/runs", out);
    d = opendir(runs);
    assert_non_null(d);
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        char path[1200];

        snprintf(path, sizeof path, "%s/%s/telemetry.json", runs, e->d_name);
        if (strncmp(e->d_name, "nwb-demo_", 9) == 0 && access(path, F_OK) == 0) {
            snprintf(name, cap, "%s", e->d_name);
        }
    }
    closedir(d);
    assert_true(name[0] != '\0');
}

/* telemetry.json's "frames":{"count":N: N, read independently of the forwarder's scanner. */
static unsigned long long report_frames(const char *out, const char *dir)
{
    char path[1200];
    char *text;
    const char *at;
    unsigned long long n = 0;

    snprintf(path, sizeof path, "%s/runs/%s/telemetry.json", out, dir);
    text = nwb_test_read_file(path, NULL);
    assert_non_null(text);
    at = strstr(text, "\"frames\":{\"count\":");
    assert_non_null(at);
    assert_int_equal(sscanf(at + strlen("\"frames\":{\"count\":"), "%llu", &n), 1);
    free(text);
    return n;
}

/* An nwb-demo run's telemetry: nwb_runs has its frame count and percentiles, nwb_frames one
 * row per frame; after a kill -9 and a restart the frames cursor holds: a whole pass sends no
 * frame again. */
static void test_forward_demo_run_frames_and_summary(void **state)
{
    struct fixture *f = *state;
    char server_arg[64], env_dir[700], dir[512], sql[1024], want[256];
    const char *run;
    unsigned long long frames;
    char log_env[720], crash_env[720];
    const char *argv[] = {NWB_DEMO_EXE, "--frames", DEMO_FRAMES, "--fast", server_arg, NULL};
    const char *env[] = {log_env, crash_env, "NWB_CRASH_HELPER=", NULL};
    int status;

    snprintf(server_arg, sizeof server_arg, "--logserver=127.0.0.1:%d", f->srv.port);
    snprintf(env_dir, sizeof env_dir, "%s/demo-client", f->out);
    snprintf(log_env, sizeof log_env, "NWB_LOG_DIR=%s", env_dir);
    snprintf(crash_env, sizeof crash_env, "NWB_CRASH_DIR=%s", env_dir);
    status = nwb_test_run(argv, env, NULL, 60000);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    demo_run_dir(f->out, dir, sizeof dir);
    frames = report_frames(f->out, dir);
    assert_true(frames > 0);
    print_message("nwb-demo run %s: %llu frames in its telemetry.json\n", dir, frames);
    run = strrchr(dir, '_') + 1;

    snprintf(sql, sizeof sql,
             "SELECT frames, frame_p50_ms > 0, frame_p99_ms >= frame_p50_ms FROM nwb.nwb_runs "
             "FINAL WHERE run_dir = '%s'",
             dir);
    snprintf(want, sizeof want, "%llu\t1\t1\n", frames);
    wait_answer(f, sql, want);
    snprintf(sql, sizeof sql,
             "SELECT count(), uniqExact(frame), min(duration_ms) > 0 FROM nwb.nwb_frames FINAL "
             "WHERE program = 'nwb-demo' AND run = '%s'",
             run);
    snprintf(want, sizeof want, "%llu\t%llu\t1\n", frames, frames);
    wait_answer(f, sql, want);

    {
        /* A crash in the store: its row is sent at the end of the restarted server's first
         * pass, after every run's frames, so its counter marks that pass as done. */
        const char *extra[] = {"--forward-clickhouse", f->url, NULL};
        size_t len = 0;
        void *pkg = ta_package("tar.zst", "restart", &len);
        char resp[512];
        const long long deadline = nwb_test_now_ms() + WAIT_MS;

        assert_non_null(pkg);
        assert_int_equal(
            nwb_test_http(f->srv.port, "POST", "/v1/crash", NULL, pkg, len, resp, sizeof resp),
            200);
        free(pkg);
        nwb_test_server_stop(&f->srv, SIGKILL, 10000);
        assert_int_equal(nwb_test_server_start(&f->srv, NULL, f->out, 0, extra), 0);
        while (server_counter(f, "nwb_forward_crash_rows_total") < 1) {
            assert_true(nwb_test_now_ms() < deadline);
            poll(NULL, 0, 50);
        }
        assert_int_equal(server_counter(f, "nwb_forward_frames_total"), 0);
        snprintf(sql, sizeof sql,
                 "SELECT count() FROM nwb.nwb_frames WHERE program = 'nwb-demo' AND run = '%s'",
                 run);
        assert_int_equal(nwb_test_clickhouse_count(&f->ch, sql), (long long)frames);
    }
}
#endif

int main(void)
{
    char why[1024];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_forward_crash_row_and_its_resymbolised_signature,
                                        setup, teardown),
#ifdef NWB_DEMO_EXE
        cmocka_unit_test_setup_teardown(test_forward_demo_run_frames_and_summary, setup, teardown),
#endif
    };

    if (!nwb_test_clickhouse_available(why, sizeof why)) {
        printf("SKIP forward.forward_crash_tel: %s\n", why);
        return NWB_TEST_CLICKHOUSE_SKIP;
    }
    return cmocka_run_group_tests_name("forward.forward_crash_tel", tests, NULL, NULL);
}
