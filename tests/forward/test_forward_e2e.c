/* SPDX-License-Identifier: MIT */
/*
 * test_forward_e2e.c - the real nwb-logserver with --forward-clickhouse, fed by nwb-log,
 * against Debian's real clickhouse-server: every line of each run's log.txt arrives in
 * nwb_logs exactly once (FINAL count = log.txt's lines, messages byte-equal), with ClickHouse
 * killed -9 and restarted in the middle (nwb-log is not held up), and with nwb-logserver
 * killed -9 in the middle and restarted on the same port and --out; two servers forwarding
 * to one ClickHouse, and an nwb-demo run.
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
#include "forward/ch_rows.h"
#include "forward/log_line_parse.h"
#include "nwb/file_io.h"
#include "test_support.h"

#ifndef NWB_TEST_NWB_LOG_EXE
#define NWB_TEST_NWB_LOG_EXE "nwb-log"
#endif

#define PROGRAM     "fwde2e"
#define WAIT_MS     60000
#define LINES       20000u  /* per restart phase */
#define FIRST_LINES 100000u /* the straight-through phase: the 100,000 records of the issue */

struct fixture {
    struct nwb_test_clickhouse ch;
    struct nwb_test_server srv;
    char out[512];
    char url[128];
    char client_dir[600];
    int port_fd, port;
};

static int start_server(struct fixture *f)
{
    const char *extra[] = {"--forward-clickhouse", f->url, NULL};

    return nwb_test_server_start(&f->srv, NULL, f->out, f->port, extra);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_clickhouse_start(&f->ch) != 0 ||
        nwb_test_tmpdir("forward-e2e", f->out, sizeof f->out) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d/?database=nwb", f->ch.http_port);
    snprintf(f->client_dir, sizeof f->client_dir, "%s/client", f->out);
    /* The port stays ours across the kill -9 and restart of the server. */
    f->port_fd = nwb_test_reserve_dead_port(&f->port);
    *state = f;
    return f->port_fd >= 0 && start_server(f) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    nwb_test_server_stop(&f->srv, SIGTERM, 10000);
    nwb_test_clickhouse_destroy(&f->ch);
    close(f->port_fd);
    nwb_test_rmtree(f->out);
    free(f);
    return 0;
}

struct nwb_log_proc {
    pid_t pid;
    int in_fd;
};

static void log_start(struct fixture *f, const char *run, struct nwb_log_proc *p)
{
    char logserver[64];
    int fds[2];

    snprintf(logserver, sizeof logserver, "--logserver=127.0.0.1:%d", f->port);
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    p->pid = fork();
    assert_true(p->pid >= 0);
    if (p->pid == 0) {
        dup2(fds[0], STDIN_FILENO);
        execl(NWB_TEST_NWB_LOG_EXE, "nwb-log", logserver, "--program", PROGRAM, "--run", run,
              "--log-dir", f->client_dir, "--timeout-ms", "30000", (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    p->in_fd = fds[1];
}

/* Lines @p from..@p to of @p run: quotes, backslashes and tabs in every 7th. */
static void log_lines(struct nwb_log_proc *p, const char *run, unsigned from, unsigned to)
{
    nwb_buf_t b = NWB_BUF_INIT(64u << 20);

    for (unsigned i = from; i < to; i++) {
        if (i % 7 == 0) {
            assert_int_equal(
                nwb_buf_appendf(&b, "%s line %u: q'\"\\ \tx \\n not a newline\n", run, i), 0);
        } else {
            assert_int_equal(nwb_buf_appendf(&b, "%s line %u of the fleet\n", run, i), 0);
        }
    }
    assert_int_equal(nwb_write_all(p->in_fd, b.data, b.len), 0);
    nwb_buf_cleanup(&b);
}

static void log_finish(struct nwb_log_proc *p)
{
    int status = 0;

    close(p->in_fd);
    assert_int_equal(waitpid(p->pid, &status, 0), p->pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static long long ch_count(struct fixture *f, const char *run)
{
    char sql[256];

    snprintf(sql, sizeof sql,
             "SELECT count() FROM nwb.nwb_logs FINAL WHERE program = '" PROGRAM "' AND run = '%s'",
             run);
    return nwb_test_clickhouse_count(&f->ch, sql);
}

/* The run's log.txt as nwb_logs would hold its messages, one TabSeparated value a line. */
static char *expected_messages(struct fixture *f, const char *run, size_t *lines)
{
    char path[1024];
    size_t len = 0;
    char *text;
    nwb_buf_t out = NWB_BUF_INIT(256u << 20);

    assert_int_equal(nwb_test_find_run_log(f->out, PROGRAM, run, path, sizeof path), 0);
    text = nwb_test_read_file(path, &len);
    assert_non_null(text);
    *lines = 0;
    for (char *p = text; p < text + len;) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p));
        struct nwb__fwd_line l;
        const char *why = NULL;

        assert_non_null(nl);
        assert_int_equal(nwb__fwd_line_parse(p, (size_t)(nl - p), &l, &why), 0);
        assert_int_equal(nwb__ch_tsv_str(&out, l.msg, l.msg_len), 0);
        assert_int_equal(nwb_buf_append(&out, "\n", 1), 0);
        (*lines)++;
        p = nl + 1;
    }
    assert_int_equal(nwb_buf_append(&out, "", 1), 0);
    free(text);
    return (char *)out.data;
}

/* Wait until ClickHouse holds exactly log.txt's lines of @p run, then compare every message. */
static void wait_run_complete(struct fixture *f, const char *run, size_t want_lines)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;
    size_t lines = 0;
    char *expect = expected_messages(f, run, &lines);
    const size_t cap = strlen(expect) + 4096;
    char *got = malloc(cap);
    char sql[256];
    long long n = -1;

    assert_int_equal(lines, want_lines);
    while (nwb_test_now_ms() < deadline) {
        n = ch_count(f, run);
        if (n == (long long)lines) {
            break;
        }
        assert_true(n < (long long)lines);
        /* ClickHouse has no change notification; the count is polled in 50 ms slices. */
        poll(NULL, 0, 50);
    }
    if (n != (long long)lines) {
        fail_msg("run %s: ClickHouse holds %lld rows, log.txt %zu lines", run, n, lines);
    }
    assert_non_null(got);
    snprintf(sql, sizeof sql,
             "SELECT message FROM nwb.nwb_logs FINAL WHERE program = '" PROGRAM
             "' AND run = '%s' ORDER BY offset FORMAT TabSeparated",
             run);
    assert_int_equal(nwb_test_clickhouse_query(&f->ch, sql, NULL, 0, got, cap), 200);
    if (strcmp(got, expect) != 0) {
        fail_msg("run %s: the messages in ClickHouse differ from log.txt", run);
    }
    free(got);
    free(expect);
}

/* Wait until nwb_runs holds @p run's row with @p records records and log.txt's size. */
static void wait_run_row(struct fixture *f, const char *run, unsigned long long records)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;
    char path[1024], sql[256], want[128], got[256] = "";
    size_t len = 0;
    char *text;

    assert_int_equal(nwb_test_find_run_log(f->out, PROGRAM, run, path, sizeof path), 0);
    text = nwb_test_read_file(path, &len);
    assert_non_null(text);
    free(text);
    snprintf(want, sizeof want, "%llu\t%zu\t1\n", records, len);
    snprintf(sql, sizeof sql,
             "SELECT records, log_bytes, count() FROM nwb.nwb_runs FINAL WHERE program = '" PROGRAM
             "' AND run = '%s' GROUP BY records, log_bytes",
             run);
    while (nwb_test_now_ms() < deadline) {
        if (nwb_test_clickhouse_query(&f->ch, sql, NULL, 0, got, sizeof got) == 200 &&
            strcmp(got, want) == 0) {
            return;
        }
        poll(NULL, 0, 50);
    }
    fail_msg("nwb_runs for %s: '%s', expected '%s'", run, got, want);
}

static long long metric_value(struct fixture *f, const char *name)
{
    return nwb_test_metric(f->port, name);
}

static void wait_metric(struct fixture *f, const char *name, long long at_least)
{
    if (!nwb_test_wait_metric(f->port, name, at_least, WAIT_MS)) {
        fail_msg("%s stayed below %lld", name, at_least);
    }
}

static void test_forward_e2e_exactly_once_across_restarts(void **state)
{
    struct fixture *f = *state;
    struct nwb_log_proc p;

    /* 1. Straight through. */
    log_start(f, "phase1", &p);
    log_lines(&p, "phase1", 0, FIRST_LINES);
    log_finish(&p);
    wait_run_complete(f, "phase1", FIRST_LINES);
    assert_int_equal(metric_value(f, "nwb_forward_up"), 1);
    /* The run's row follows its counters (written within a second of its last batch). */
    wait_run_row(f, "phase1", FIRST_LINES);

    /* 2. ClickHouse killed: ingest goes on (nwb-log delivers, exit 0), the backlog waits in
     * log.txt and shows in /metrics; after the restart it arrives once. */
    assert_int_equal(nwb_test_clickhouse_stop(&f->ch, SIGKILL, 10000), 0);
    log_start(f, "phase2", &p);
    log_lines(&p, "phase2", 0, LINES);
    log_finish(&p);
    wait_metric(f, "nwb_forward_inserts_failed_total", 1);
    wait_metric(f, "nwb_forward_bytes_behind", 1);
    assert_int_equal(metric_value(f, "nwb_forward_up"), 0);
    assert_int_equal(nwb_test_clickhouse_restart(&f->ch), 0);
    wait_run_complete(f, "phase2", LINES);

    /* 3. nwb-logserver killed -9 with part of a run forwarded; restarted on the same port and
     * --out, it resumes from the cursors while nwb-log resends what was not acknowledged. */
    log_start(f, "phase3", &p);
    log_lines(&p, "phase3", 0, LINES / 2);
    {
        const long long deadline = nwb_test_now_ms() + WAIT_MS;

        while (ch_count(f, "phase3") <= 0) {
            assert_true(nwb_test_now_ms() < deadline);
            poll(NULL, 0, 20);
        }
    }
    nwb_test_server_stop(&f->srv, SIGKILL, 10000);
    assert_int_equal(start_server(f), 0);
    log_lines(&p, "phase3", LINES / 2, LINES);
    log_finish(&p);
    wait_run_complete(f, "phase3", LINES);
    wait_run_complete(f, "phase1", FIRST_LINES);
}

/* Lines of every runs/<program>_* log.txt under @p out. */
static size_t program_lines(const char *out, const char *program)
{
    char runs[600];
    size_t total = 0;
    const size_t plen = strlen(program);
    DIR *d;

    snprintf(runs, sizeof runs, "%s/runs", out);
    d = opendir(runs);
    assert_non_null(d);
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        char path[1200];
        size_t len = 0;
        char *text;

        if (strncmp(e->d_name, program, plen) != 0 || e->d_name[plen] != '_') {
            continue;
        }
        snprintf(path, sizeof path, "%s/%s/log.txt", runs, e->d_name);
        text = nwb_test_read_file(path, &len);
        assert_non_null(text);
        total += nwb_test_count(text, "\n");
        free(text);
    }
    closedir(d);
    return total;
}

static void wait_program_rows(struct fixture *f, const char *program, size_t lines)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;
    char sql[256];
    long long n = -1;

    snprintf(sql, sizeof sql, "SELECT count() FROM nwb.nwb_logs FINAL WHERE program = '%s'",
             program);
    while (nwb_test_now_ms() < deadline) {
        n = nwb_test_clickhouse_count(&f->ch, sql);
        if (n == (long long)lines) {
            return;
        }
        poll(NULL, 0, 50);
    }
    fail_msg("%s: ClickHouse holds %lld rows, the run logs %zu lines", program, n, lines);
}

/* Two nwb-logservers (other ports, other --out) forward to one ClickHouse: each run complete;
 * and nwb-demo's run (the client's own lines, a game's) arrives whole too. */
static void test_forward_e2e_two_servers_and_a_demo(void **state)
{
    struct fixture *f = *state;
    struct fixture second;
    struct nwb_log_proc p;

    memset(&second, 0, sizeof second);
    second.ch = f->ch; /* the same engine; only the first fixture removes it */
    assert_int_equal(nwb_test_tmpdir("forward-e2e-2", second.out, sizeof second.out), 0);
    snprintf(second.url, sizeof second.url, "%s", f->url);
    snprintf(second.client_dir, sizeof second.client_dir, "%s/client", second.out);
    second.port_fd = nwb_test_reserve_dead_port(&second.port);
    assert_true(second.port_fd >= 0);
    assert_int_equal(start_server(&second), 0);

    log_start(f, "serverA", &p);
    log_lines(&p, "serverA", 0, LINES);
    log_finish(&p);
    log_start(&second, "serverB", &p);
    log_lines(&p, "serverB", 0, LINES);
    log_finish(&p);
    wait_run_complete(f, "serverA", LINES);
    wait_run_complete(&second, "serverB", LINES);
    assert_int_equal(ch_count(f, "serverB"), LINES); /* not a row more from the other */

#ifdef NWB_DEMO_EXE
    {
        char server_arg[64], log_env[720], crash_env[720];
        const char *argv[] = {NWB_DEMO_EXE, "--frames", "240", "--fast", server_arg, NULL};
        const char *env[] = {log_env, crash_env, "NWB_CRASH_HELPER=", NULL};
        int status;

        snprintf(server_arg, sizeof server_arg, "--logserver=127.0.0.1:%d", f->port);
        snprintf(log_env, sizeof log_env, "NWB_LOG_DIR=%s/demo-logs", f->out);
        snprintf(crash_env, sizeof crash_env, "NWB_CRASH_DIR=%s/demo-logs", f->out);
        status = nwb_test_run(argv, env, NULL, 60000);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        const size_t lines = program_lines(f->out, "nwb-demo");

        assert_true(lines > 0);
        wait_program_rows(f, "nwb-demo", lines);
    }
#endif

    nwb_test_server_stop(&second.srv, SIGTERM, 10000);
    close(second.port_fd);
    nwb_test_rmtree(second.out);
}

int main(void)
{
    char why[1024];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_forward_e2e_exactly_once_across_restarts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_forward_e2e_two_servers_and_a_demo, setup, teardown),
    };

    if (!nwb_test_clickhouse_available(why, sizeof why)) {
        printf("SKIP forward.forward_e2e: %s\n", why);
        return NWB_TEST_CLICKHOUSE_SKIP;
    }
    return cmocka_run_group_tests_name("forward.forward_e2e", tests, NULL, NULL);
}
