/* SPDX-License-Identifier: MIT */
/*
 * test_forward_idle.c - forwarding costs nothing when nothing is new: the real nwb-logserver
 * with --forward-clickhouse to Debian's real clickhouse-server, 200 finished runs all
 * forwarded, stays under 2% of a core over a 2 s window (utime + stime from /proc/PID/stat;
 * the forwarder thread, found by its name, under 1%) while its passes go on without a full
 * scan of runs/; and with ClickHouse killed the retries back off instead of spinning.
 */
#define _GNU_SOURCE
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

#include "clickhouse_server.h"
#include "forward/forwarder.h"
#include "test_support.h"

#define RUNS      200
#define WAIT_MS   60000
#define WINDOW_MS 2000
/* Attempts a backoff of 250, 500, 1000 ms... allows in the window, with room for the first. */
#define FAILED_ATTEMPTS_MAX 6

struct fixture {
    struct nwb_test_clickhouse ch;
    struct nwb_test_server srv;
    char out[512];
    char url[128];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    const char *extra[3] = {"--forward-clickhouse", NULL, NULL};

    if (f == NULL) {
        return -1;
    }
    if (nwb_test_clickhouse_start(&f->ch) != 0 ||
        nwb_test_tmpdir("forward-idle", f->out, sizeof f->out) != 0) {
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

/* The value of metric @p name (an exact sample name), or -1. */
static long long metric(int port, const char *name)
{
    static char body[256 * 1024];
    const size_t n = strlen(name);

    if (nwb_test_http(port, "GET", "/metrics", NULL, NULL, 0, body, sizeof body) != 200) {
        return -1;
    }
    for (const char *p = body; p != NULL; p = strchr(p, '\n'), p = p != NULL ? p + 1 : NULL) {
        if (strncmp(p, name, n) == 0 && p[n] == ' ') {
            return strtoll(p + n + 1, NULL, 10);
        }
    }
    return -1;
}

/* Wait (bounded) until metric @p name reaches @p at_least; its value, or -1 on the timeout. */
static long long wait_metric(int port, const char *name, long long at_least)
{
    const long long t0 = nwb_test_now_ms();

    for (;;) {
        const long long v = metric(port, name);

        if (v >= at_least) {
            return v;
        }
        if (nwb_test_now_ms() - t0 > WAIT_MS) {
            fprintf(stderr, "%s stayed at %lld, below %lld\n", name, v, at_least);
            return -1;
        }
        poll(NULL, 0, 20);
    }
}

/* POST /v1/log of @p text (text/plain) to run @p run; the status. */
static int post_text(int port, const char *program, const char *run, const char *text)
{
    char headers[256];

    snprintf(headers, sizeof headers,
             "Content-Type: text/plain\r\nX-NWB-Program: %s\r\nX-NWB-Run: %s\r\n", program, run);
    return nwb_test_http(port, "POST", "/v1/log", headers, text, strlen(text), NULL, 0);
}

/* ns on a CPU of @p pid's thread named NWB__FWD_THREAD_NAME (schedstat), or -1. */
static long long forwarder_ns(pid_t pid)
{
    char path[64];
    long long ns = -1;
    struct dirent *e;
    DIR *d;

    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    d = opendir(path);
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        char p2[400], name[64] = "";
        FILE *fp;

        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(p2, sizeof p2, "%s/%s/comm", path, e->d_name);
        fp = fopen(p2, "r");
        if (fp == NULL) {
            continue;
        }
        if (fgets(name, sizeof name, fp) == NULL) {
            name[0] = '\0';
        }
        fclose(fp);
        name[strcspn(name, "\n")] = '\0';
        if (strcmp(name, NWB__FWD_THREAD_NAME) != 0) {
            continue;
        }
        snprintf(p2, sizeof p2, "%s/%s/schedstat", path, e->d_name);
        fp = fopen(p2, "r");
        if (fp != NULL) {
            if (fscanf(fp, "%lld", &ns) != 1) {
                ns = -1;
            }
            fclose(fp);
        }
    }
    closedir(d);
    return ns;
}

struct window {
    long long ms, ticks, fwd_ns, passes, full_passes, failed;
};

/* WINDOW_MS of nothing new, measured: wait on the server's stdout, which must stay quiet. */
static void measure(struct fixture *f, struct window *w)
{
    const long long p0 = metric(f->srv.port, "nwb_forward_passes_total");
    const long long fp0 = metric(f->srv.port, "nwb_forward_full_passes_total");
    const long long e0 = metric(f->srv.port, "nwb_forward_inserts_failed_total");
    const long long t0 = nwb_test_now_ms();
    const long long c0 = nwb_test_cpu_ticks(f->srv.pid);
    const long long n0 = forwarder_ns(f->srv.pid);
    struct pollfd pfd = {f->srv.stdout_fd, POLLIN, 0};

    assert_true(p0 >= 0 && fp0 >= 0 && e0 >= 0 && n0 >= 0 && c0 >= 0);
    assert_int_equal(poll(&pfd, 1, WINDOW_MS), 0);
    w->ticks = nwb_test_cpu_ticks(f->srv.pid) - c0;
    w->fwd_ns = forwarder_ns(f->srv.pid) - n0;
    w->ms = nwb_test_now_ms() - t0;
    w->passes = metric(f->srv.port, "nwb_forward_passes_total") - p0;
    w->full_passes = metric(f->srv.port, "nwb_forward_full_passes_total") - fp0;
    w->failed = metric(f->srv.port, "nwb_forward_inserts_failed_total") - e0;
    assert_true(w->ms >= WINDOW_MS - 100);
}

static void assert_idle(const struct window *w, const char *what)
{
    const long hz = sysconf(_SC_CLK_TCK);

    fprintf(stderr,
            "%s: %lld ticks (%ld/s), forwarder %lld us, %lld passes (%lld full), %lld failed "
            "requests in %lld ms\n",
            what, w->ticks, hz, w->fwd_ns / 1000, w->passes, w->full_passes, w->failed, w->ms);
    assert_true(w->ticks * 1000 * 50 < (long long)hz * w->ms); /* < 2% of one core */
    assert_true(w->fwd_ns * 100 < w->ms * 1000000);            /* forwarder < 1% of one core */
}

static void test_caught_up_forwarder_stays_idle_also_with_clickhouse_down(void **state)
{
    struct fixture *f = *state;
    struct window w;
    long long failed;

    for (int i = 0; i < RUNS; i++) {
        char run[32];

        snprintf(run, sizeof run, "idle%04d", i);
        assert_int_equal(post_text(f->srv.port, "fwdidle", run, "one\ntwo\n"), 200);
    }
    assert_true(wait_metric(f->srv.port, "nwb_forward_records_total", 2 * RUNS) == 2 * RUNS);
    /* Two passes more: the last nwb_runs rows are sent and nothing is left to do. */
    assert_true(wait_metric(f->srv.port, "nwb_forward_passes_total",
                            metric(f->srv.port, "nwb_forward_passes_total") + 2) > 0);
    measure(f, &w);
    assert_idle(&w, "caught up");
    assert_true(w.passes >= 3);         /* the forwarder is alive: a pass each 200 ms */
    assert_int_equal(w.full_passes, 0); /* and none of them scanned the finished runs */
    assert_int_equal(w.failed, 0);

    /* ClickHouse gone: the next line's insert fails, then the retries back off. */
    assert_int_equal(nwb_test_clickhouse_stop(&f->ch, SIGKILL, 10000), 0);
    assert_int_equal(post_text(f->srv.port, "fwdidle", "idle0000", "three\n"), 200);
    failed = wait_metric(f->srv.port, "nwb_forward_inserts_failed_total", 1);
    assert_true(failed >= 1);
    assert_int_equal(metric(f->srv.port, "nwb_forward_up"), 0);
    measure(f, &w);
    assert_idle(&w, "ClickHouse down");
    assert_true(w.failed <= FAILED_ATTEMPTS_MAX);
    /* The line waits in log.txt: the backlog gauge says so. */
    assert_true(metric(f->srv.port, "nwb_forward_bytes_behind") > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_caught_up_forwarder_stays_idle_also_with_clickhouse_down, setup, teardown),
    };

    char why[256];

    if (!nwb_test_clickhouse_available(why, sizeof why)) {
        printf("SKIP forward.forward_idle: %s\n", why);
        return NWB_TEST_CLICKHOUSE_SKIP;
    }
    return cmocka_run_group_tests_name("forward.forward_idle", tests, NULL, NULL);
}
