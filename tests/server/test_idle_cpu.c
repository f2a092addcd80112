/* SPDX-License-Identifier: MIT */
/*
 * test_idle_cpu.c - idle means idle: after some traffic, a server with no
 * connections uses < 1% CPU over 5 s (utime + stime from /proc/<pid>/stat)
 * and its threads barely wake (context switches from /proc/<pid>/task/); so
 * does one with GET /v1/events streams open and nothing happening.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server_test_util.h"
#include "sse_client.h"

/* Voluntary + involuntary context switches of every thread of @p pid. */
static long long ctx_switches(pid_t pid)
{
    char path[64];
    long long total = 0;
    struct dirent *e;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    d = opendir(path);
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        char spath[400];
        char line[256];
        FILE *f;

        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(spath, sizeof(spath), "%s/%s/status", path, e->d_name);
        f = fopen(spath, "r");
        if (f == NULL) {
            continue;
        }
        while (fgets(line, sizeof(line), f) != NULL) {
            long long v;

            if (sscanf(line, "voluntary_ctxt_switches: %lld", &v) == 1 ||
                sscanf(line, "nonvoluntary_ctxt_switches: %lld", &v) == 1) {
                total += v;
            }
        }
        fclose(f);
    }
    closedir(d);
    return total;
}

/* Traffic, then @p streams event streams opened, then 5 s of nothing: measured. */
static void idle_window(int streams)
{
    static struct nwb_test_sse es[4];
    struct nwb_test_server srv;
    char dir[512];
    const long hz = sysconf(_SC_CLK_TCK);
    struct pollfd pfd;
    long long t0, c0, s0, ticks, switches, ms;

    assert_true(streams <= 4);
    assert_int_equal(nwb_test_tmpdir("idle", dir, sizeof(dir)), 0);
    assert_int_equal(tu_start(&srv, dir, 0, NULL), 0);
    /* Some traffic first, so the worker, the run store and timers have all been used. */
    for (int i = 0; i < 50; i++) {
        assert_int_equal(
            tu_post(srv.port, "text/plain", "idle", "r", i + 1, "warm up\n", 8, NULL, 0), 200);
    }
    assert_int_equal(nwb_test_http(srv.port, "GET", "/metrics", NULL, NULL, 0, NULL, 0), 200);
    /* Wait until the last connection is gone (closed slots are freed asynchronously). */
    t0 = nwb_test_now_ms();
    while (tu_metric(srv.port, "nwb_connections_open") != 1 && nwb_test_now_ms() - t0 < 5000) {
        poll(NULL, 0, 5);
    }
    /* The run index writes the run's counters a second after its last change: wait for that
     * write (50 records), so the window measures idleness, not the tail of the warm-up. */
    {
        char counters[1024];
        char *slash;

        assert_int_equal(nwb_test_find_run_log(dir, "idle", "r", counters, sizeof(counters)), 0);
        slash = strrchr(counters, '/');
        assert_non_null(slash);
        snprintf(slash + 1, sizeof(counters) - (size_t)(slash + 1 - counters), "%s",
                 ".nwb-counters");
        assert_int_equal(nwb_test_wait_file_contains(counters, "\nrecords=50\n", 10000), 1);
    }
    for (int i = 0; i < streams; i++) {
        struct nwb_test_sse_block b;

        assert_int_equal(nwb_test_sse_open(&es[i], srv.port, "/v1/events", NULL, 0, 5000), 0);
        assert_int_equal(es[i].status, 200);
        assert_int_equal(nwb_test_sse_next(&es[i], &b, 5000), 1); /* its position */
    }
    t0 = nwb_test_now_ms();
    c0 = nwb_test_cpu_ticks(srv.pid);
    assert_true(c0 >= 0);
    s0 = ctx_switches(srv.pid);
    /* The 5 s measuring window: wait on the server's stdout, which must stay quiet. */
    pfd.fd = srv.stdout_fd;
    pfd.events = POLLIN;
    pfd.revents = 0;
    assert_int_equal(poll(&pfd, 1, 5000), 0);
    ticks = nwb_test_cpu_ticks(srv.pid) - c0;
    switches = ctx_switches(srv.pid) - s0;
    ms = nwb_test_now_ms() - t0;
    fprintf(stderr,
            "idle, %d event streams: %lld ticks (%ld/s) and %lld context switches in %lld ms\n",
            streams, ticks, hz, switches, ms);
    assert_true(ms >= 4900);
    assert_true(ticks * 1000 * 100 < (long long)hz * ms); /* < 1% of one core */
    assert_true(switches < 10);                           /* no timers, no polling */
    for (int i = 0; i < streams; i++) {
        nwb_test_sse_close(&es[i]);
    }
    assert_int_equal(tu_stop(&srv, SIGTERM, 10000), 0);
    nwb_test_rmtree(dir);
}

static void test_idle_server_uses_under_one_percent_cpu(void **state)
{
    (void)state;
    idle_window(0);
}

/* Open streams with nothing to say cost nothing: one shared keep-alive timer, every
 * --events-keepalive-ms (20 s), longer than the window. */
static void test_idle_event_streams_use_under_one_percent_cpu(void **state)
{
    (void)state;
    idle_window(4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_idle_server_uses_under_one_percent_cpu, tu_reap),
        cmocka_unit_test_teardown(test_idle_event_streams_use_under_one_percent_cpu, tu_reap),
    };

    return cmocka_run_group_tests_name("server.idle_cpu", tests, NULL, NULL);
}
