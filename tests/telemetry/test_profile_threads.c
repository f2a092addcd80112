/* SPDX-License-Identifier: MIT */
/*
 * test_profile_threads.c (ctest telemetry.profile_threads) - a program with three named threads
 * (profile_threads_prog.c) records nested scopes, counters and a mark through the real
 * nwb-logserver. The server's report and `nwb-telemetry chrome` of the stored stream must have
 * the named threads, the nesting, the counters and the mark; with no .namesym anywhere, the
 * scope names are readable in dbg and opt builds (string tables) and tokens in fin builds
 * (hashes only). Every JSON is checked strictly.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json_check.h"
#include "test_support.h"

#define RESP_CAP (4u << 20)

static void assert_json(const char *s, size_t len, const char *what)
{
    size_t bad = 0;

    if (nwb_test_json_check(s, len, &bad) != 0) {
        fail_msg("%s is not strict JSON at byte %zu", what, bad);
    }
}

/* Run @p argv with NWB_LOGSERVER=127.0.0.1:@p port; its exit status, waited up to 60 s. */
static int run_program(const char *exe, int port)
{
    char env[64];
    pid_t pid;
    long long end = nwb_test_now_ms() + 60000;

    snprintf(env, sizeof(env), "127.0.0.1:%d", port);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("NWB_LOGSERVER", env, 1);
        execl(exe, exe, (char *)NULL);
        _exit(127);
    }
    for (;;) {
        int status;
        const pid_t r = waitpid(pid, &status, WNOHANG);

        if (r == pid) {
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        if (nwb_test_now_ms() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fail_msg("%s did not exit in 60 s", exe);
        }
        usleep(10000); /* polling a child's exit: no event to wait on without a pidfd */
    }
}

#ifdef NWB_PROFILE_THREADS_BM_EXE
/*
 * fin: the BUILDMODE twin of the program (same source, the name registry linked in) sends the
 * same hash-only stream and writes <exe>.namesym at exit; `nwb-telemetry report` and `chrome`
 * of its run, given that sidecar, show the names the plain fin run showed as tokens.
 */
static void decode_with_sidecar(struct nwb_test_server *srv, const char *out, const char *first)
{
    char *resp = malloc(RESP_CAP);
    char path[1400];
    char sidecar[1100];
    char cmd[4200];
    char id[256];
    const char *p;
    char *doc;
    size_t len = 0;
    struct stat st;

    assert_non_null(resp);
    snprintf(sidecar, sizeof(sidecar), "%s.namesym", NWB_PROFILE_THREADS_BM_EXE);
    (void)unlink(sidecar);
    setenv("NWB_TEST_RUN_ID", "pt-bm", 1);
    assert_int_equal(run_program(NWB_PROFILE_THREADS_BM_EXE, srv->port), 0);
    unsetenv("NWB_TEST_RUN_ID");
    assert_int_equal(stat(sidecar, &st), 0);

    /* The newest run of the program that is not the first one. */
    assert_int_equal(nwb_test_http(srv->port, "GET", "/v1/runs?program=profile-threads", NULL, NULL,
                                   0, resp, RESP_CAP),
                     200);
    id[0] = '\0';
    for (p = strstr(resp, "\"id\":\""); p != NULL; p = strstr(p, "\"id\":\"")) {
        const char *q;

        p += 6;
        q = strchr(p, '"');
        assert_non_null(q);
        if ((size_t)(q - p) < sizeof(id) && strncmp(p, first, (size_t)(q - p)) != 0) {
            memcpy(id, p, (size_t)(q - p));
            id[q - p] = '\0';
        }
    }
    assert_true(id[0] != '\0');

    snprintf(path, sizeof(path), "%s/runs/%s/telemetry.nwbs.zst", out, id);
    if (stat(path, &st) != 0) {
        snprintf(path, sizeof(path), "%s/runs/%s/telemetry.nwbs", out, id);
    }
    /* Without the sidecar: tokens. */
    snprintf(cmd, sizeof(cmd), "'%s' report '%s' -o '%s/plain.json'", NWB_TELEMETRY_EXE, path, out);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "%s/plain.json", out);
    doc = nwb_test_read_file(cmd, &len);
    assert_non_null(doc);
    assert_json(doc, len, "the report without a sidecar");
    assert_null(strstr(doc, "render/shadows"));
    free(doc);
    /* With it: names. */
    snprintf(cmd, sizeof(cmd), "'%s' report '%s' -o '%s/named.json' --namesym '%s'",
             NWB_TELEMETRY_EXE, path, out, sidecar);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "%s/named.json", out);
    doc = nwb_test_read_file(cmd, &len);
    assert_non_null(doc);
    assert_json(doc, len, "the report with the sidecar");
    assert_non_null(strstr(doc, "\"render/shadows\""));
    assert_non_null(strstr(doc, "\"physics/contacts\""));
    assert_non_null(strstr(doc, "\"render.draw_calls\""));
    free(doc);
    snprintf(cmd, sizeof(cmd), "'%s' chrome '%s' -o '%s/named_trace.json' --namesym '%s'",
             NWB_TELEMETRY_EXE, path, out, sidecar);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "%s/named_trace.json", out);
    doc = nwb_test_read_file(cmd, &len);
    assert_non_null(doc);
    assert_json(doc, len, "the trace with the sidecar");
    assert_non_null(strstr(doc, "\"name\":\"physics/contacts\""));
    free(doc);
    (void)unlink(sidecar);
    free(resp);
}
#endif

static void test_three_named_threads(void **state)
{
    struct nwb_test_server srv;
    char out[512];
    char *resp = malloc(RESP_CAP);
    char path[1400];
    char id[256];
    const char *p;
    const char *q;
    int status;
    long long end;
    (void)state;

    assert_non_null(resp);
    assert_int_equal(nwb_test_tmpdir("profile_threads", out, sizeof(out)), 0);
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, NULL), 0);
    assert_int_equal(run_program(NWB_PROFILE_THREADS_EXE, srv.port), 0);

    status = nwb_test_http(srv.port, "GET", "/v1/runs?program=profile-threads", NULL, NULL, 0, resp,
                           RESP_CAP);
    assert_int_equal(status, 200);
    assert_json(resp, strlen(resp), "the run list");
    p = strstr(resp, "\"id\":\"");
    assert_non_null(p);
    p += 6;
    q = strchr(p, '"');
    assert_non_null(q);
    assert_true((size_t)(q - p) < sizeof(id));
    memcpy(id, p, (size_t)(q - p));
    id[q - p] = '\0';

    /* The report, once the last upload is in (every upload was acknowledged before exit). */
    snprintf(path, sizeof(path), "/v1/runs/%s/telemetry", id);
    end = nwb_test_now_ms() + 10000;
    do {
        status = nwb_test_http(srv.port, "GET", path, NULL, NULL, 0, resp, RESP_CAP);
    } while ((status != 200 || strstr(resp, "\"count\":30") == NULL) && nwb_test_now_ms() < end);
    assert_int_equal(status, 200);
    assert_json(resp, strlen(resp), "telemetry.json");
    assert_non_null(strstr(resp, "\"count\":30"));
    /* Thread names are strings in every build. */
    assert_non_null(strstr(resp, "\"name\":\"render\""));
    assert_non_null(strstr(resp, "\"name\":\"audio\""));
    assert_non_null(strstr(resp, "\"name\":\"physics\""));
    assert_non_null(strstr(resp, "\"name\":\"main\""));
    assert_non_null(strstr(resp, "\"cpuByThread\""));
    assert_non_null(strstr(resp, "\"counters\""));
    assert_non_null(strstr(resp, "level loaded"));
#if defined(NWB_FINAL) && NWB_FINAL != 0
    /* fin: hashes only, no sidecar here, so tokens. */
    assert_null(strstr(resp, "render/shadows"));
    assert_null(strstr(resp, "render.draw_calls"));
#else
    assert_non_null(strstr(resp, "\"render/shadows\""));
    assert_non_null(strstr(resp, "\"physics/contacts\""));
    assert_non_null(strstr(resp, "\"audio/voices\""));
    assert_non_null(strstr(resp, "\"render.draw_calls\""));
#endif

    /* The trace of the stored stream: a named track per thread, slices, counters, the mark. */
    snprintf(path, sizeof(path), "%s/runs/%s/telemetry.nwbs.zst", out, id);
    {
        struct stat st;
        char cmd[3200];
        size_t len = 0;
        char *trace;

        if (stat(path, &st) != 0) {
            snprintf(path, sizeof(path), "%s/runs/%s/telemetry.nwbs", out, id);
        }
        snprintf(cmd, sizeof(cmd), "'%s' chrome '%s' -o '%s/trace.json'", NWB_TELEMETRY_EXE, path,
                 out);
        assert_int_equal(system(cmd), 0);
        snprintf(path, sizeof(path), "%s/trace.json", out);
        trace = nwb_test_read_file(path, &len);
        assert_non_null(trace);
        assert_json(trace, len, "the trace");
        assert_non_null(strstr(trace, "\"thread_name\""));
        assert_non_null(strstr(trace, "\"args\":{\"name\":\"render\"}"));
        assert_non_null(strstr(trace, "\"args\":{\"name\":\"audio\"}"));
        assert_non_null(strstr(trace, "\"args\":{\"name\":\"physics\"}"));
        assert_non_null(strstr(trace, "\"ph\":\"C\""));
        assert_non_null(strstr(trace, "\"name\":\"level loaded\""));
#if !defined(NWB_FINAL) || NWB_FINAL == 0
        assert_non_null(strstr(trace, "\"name\":\"physics/contacts\""));
#endif
        free(trace);
    }
#ifdef NWB_PROFILE_THREADS_BM_EXE
    decode_with_sidecar(&srv, out, id);
#endif
    assert_int_equal(nwb_test_server_stop(&srv, SIGTERM, 10000) == -1, 0);
    nwb_test_rmtree(out);
    free(resp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_three_named_threads)};

    return cmocka_run_group_tests(tests, NULL, NULL);
}
