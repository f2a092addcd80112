/* SPDX-License-Identifier: MIT */
/*
 * test_forwarder.c - the forwarder thread (server/src/forward/forwarder.c) in-process against
 * Debian's real clickhouse-server: lines of a run's log.txt arrive once with their exact
 * message bytes, an incomplete last line waits for its end, a ClickHouse killed and restarted
 * in the middle loses and doubles nothing, and a refused insert is counted, not looped on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clickhouse_server.h"
#include "forward/forwarder.h"
#include "forward/fwd_cursor.h"
#include "nwb/file_io.h"
#include "nwb/log_line.h"
#include "test_support.h"

#define RUN_DIR "mygame_20261201-073400_r1"
#define WAIT_MS 30000

struct fixture {
    struct nwb_test_clickhouse ch;
    char out[512];
    char log[700];
    char url[128];
    int log_fd;
    unsigned lines;
    nwb_log_line_clock_t clock;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    char dir[600];

    if (f == NULL || nwb_test_clickhouse_start(&f->ch) != 0 ||
        nwb_test_tmpdir("forwarder", f->out, sizeof f->out) != 0) {
        free(f);
        return -1;
    }
    snprintf(dir, sizeof dir, "%s/runs", f->out);
    mkdir(dir, 0755);
    snprintf(dir, sizeof dir, "%s/runs/" RUN_DIR, f->out);
    mkdir(dir, 0755);
    snprintf(f->log, sizeof f->log, "%s/log.txt", dir);
    f->log_fd = open(f->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d/?database=fwd", f->ch.http_port);
    f->clock = (nwb_log_line_clock_t)NWB_LOG_LINE_CLOCK_INIT;
    *state = f;
    return f->log_fd >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    close(f->log_fd);
    nwb_test_clickhouse_destroy(&f->ch);
    nwb_test_rmtree(f->out);
    free(f);
    return 0;
}

/* The message of line @p i: every 8th holds quotes, a backslash, a tab and invalid UTF-8. */
static void message_of(unsigned i, char *buf, size_t cap)
{
    if (i % 8 == 3) {
        snprintf(buf, cap, "odd %u: q'\"\\ \t\xff\xfe end", i);
    } else {
        snprintf(buf, cap, "line %u of the run", i);
    }
}

/* Line f->lines as the server writes it, at @p dst (400 bytes: nwb_log_line_max() of it). */
static size_t format_line(struct fixture *f, char *dst)
{
    char msg[128];
    nwb_log_record_t rec;

    message_of(f->lines, msg, sizeof msg);
    memset(&rec, 0, sizeof rec);
    rec.time_ns = 1796110452000000000ull + (uint64_t)f->lines * 1000u;
    rec.thread_id = 77;
    rec.level = (uint8_t)(f->lines % 4);
    rec.file = "game.c";
    rec.file_len = 6;
    rec.line = f->lines;
    rec.msg = msg;
    rec.msg_len = (uint32_t)strlen(msg);
    return nwb_log_line_format(dst, 400, &f->clock, &rec, "mygame", 6);
}

/* Append @p n lines as the server writes them. */
static void append_lines(struct fixture *f, unsigned n)
{
    char *buf = malloc((size_t)n * 400 + 1);
    size_t used = 0;

    assert_non_null(buf);
    for (unsigned k = 0; k < n; k++, f->lines++) {
        used += format_line(f, buf + used);
    }
    assert_int_equal(nwb_write_all(f->log_fd, buf, used), 0);
    free(buf);
}

static long long final_count(struct fixture *f)
{
    return nwb_test_clickhouse_count(&f->ch,
                                     "SELECT count() FROM fwd.nwb_logs FINAL WHERE run = 'r1'");
}

/* Wait (at most WAIT_MS) until ClickHouse holds exactly @p n rows of the run. */
static void wait_rows(struct fixture *f, long long n)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;
    long long got = -1;

    while (nwb_test_now_ms() < deadline) {
        got = final_count(f);
        if (got == n) {
            return;
        }
        assert_true(got < n);
        /* ClickHouse has no change notification; the count is polled in 50 ms slices. */
        poll(NULL, 0, 50);
    }
    fail_msg("ClickHouse holds %lld rows of the run, expected %lld", got, n);
}

/* Every message, in offset order, equals what was written; every row once. */
static void check_messages(struct fixture *f)
{
    const size_t cap = (size_t)f->lines * 160 + 64;
    char *out = malloc(cap);
    char *p;

    assert_non_null(out);
    /* hex() per row: RawBLOB output is newer than 18.16. */
    assert_int_equal(nwb_test_clickhouse_query(&f->ch,
                                               "SELECT hex(message) FROM fwd.nwb_logs FINAL "
                                               "WHERE run = 'r1' ORDER BY offset",
                                               NULL, 0, out, cap),
                     200);
    p = out;
    for (unsigned i = 0; i < f->lines; i++) {
        char msg[128], hex[260];
        char *nl = strchr(p, '\n');
        size_t n;

        message_of(i, msg, sizeof msg);
        n = strlen(msg);
        for (size_t k = 0; k < n; k++) {
            snprintf(hex + 2 * k, 3, "%02X", (unsigned char)msg[k]);
        }
        assert_non_null(nl);
        *nl = '\0';
        if (strcmp(p, hex) != 0) {
            fail_msg("row %u: %s, expected %s", i, p, hex);
        }
        p = nl + 1;
    }
    assert_int_equal(*p, '\0');
    free(out);
}

static void wait_stats(struct nwb__forwarder *fw, int want_up, uint64_t min_failed)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;
    struct nwb__fwd_stats st;

    for (;;) {
        nwb__forwarder_stats(fw, &st);
        /* Down: also until a pass has published the backlog (a failure is counted first). */
        if (st.up == want_up && st.inserts_failed >= min_failed &&
            (want_up || st.bytes_behind > 0)) {
            return;
        }
        if (nwb_test_now_ms() >= deadline) {
            fail_msg("forwarder up=%d failed=%llu, waited for up=%d failed>=%llu", st.up,
                     (unsigned long long)st.inserts_failed, want_up,
                     (unsigned long long)min_failed);
        }
        poll(NULL, 0, 20);
    }
}

static void test_forwarder_delivers_once_across_clickhouse_restart(void **state)
{
    struct fixture *f = *state;
    struct nwb__fwd_config cfg = {f->url, NULL, NULL, f->out, "test-host", NULL, NULL};
    struct nwb__forwarder *fw = NULL;
    char err[256];
    struct nwb__fwd_stats st;
    char dir[600];
    uint64_t cursor = 0;
    struct stat sb;

    append_lines(f, 1000);
    assert_int_equal(nwb__forwarder_start(&cfg, &fw, err, sizeof err), 0);
    wait_rows(f, 1000);

    /* An incomplete last line waits for its '\n'. */
    assert_int_equal(nwb_write_all(f->log_fd, "2026-12-01T07:34:", 17), 0);
    nwb__forwarder_wake(fw);
    {
        /* Complete it as a real line: the rest of the formatter's text. */
        char line[512];
        const size_t n = format_line(f, line);

        assert_int_equal(nwb_write_all(f->log_fd, line + 17, n - 17), 0);
        f->lines++;
    }
    nwb__forwarder_wake(fw);
    wait_rows(f, 1001);

    /* ClickHouse killed: lines keep coming, the forwarder backs off and counts. */
    assert_int_equal(nwb_test_clickhouse_stop(&f->ch, SIGKILL, 10000), 0);
    append_lines(f, 2000);
    nwb__forwarder_wake(fw);
    wait_stats(fw, 0, 1);
    nwb__forwarder_stats(fw, &st);
    assert_true(st.bytes_behind > 0);
    assert_true(st.records_behind > 0);
    assert_true(st.seconds_behind > 0);
    assert_int_equal(nwb_test_clickhouse_restart(&f->ch), 0);
    wait_rows(f, 3001);
    wait_stats(fw, 1, 1);
    check_messages(f);

    nwb__forwarder_stop(fw);
    snprintf(dir, sizeof dir, "%s/runs/" RUN_DIR, f->out);
    assert_int_equal(nwb__fwd_cursor_read(dir, &cursor), 0);
    assert_int_equal(stat(f->log, &sb), 0);
    assert_true(cursor == (uint64_t)sb.st_size);
}

/* Wait until @p fw counted @p n failures; returns when the n-th was seen (monotonic ms). */
static long long wait_failures(struct nwb__forwarder *fw, uint64_t n)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;
    struct nwb__fwd_stats st;

    for (;;) {
        nwb__forwarder_stats(fw, &st);
        if (st.inserts_failed >= n) {
            return nwb_test_now_ms();
        }
        if (nwb_test_now_ms() >= deadline) {
            fail_msg("forwarder counted %llu failures, waited for %llu",
                     (unsigned long long)st.inserts_failed, (unsigned long long)n);
        }
        poll(NULL, 0, 5);
    }
}

/* Start a forwarder that every request will be refused to; return once it tried twice, after
 * checking the second try came after the first backoff at the earliest (no loop). */
static struct nwb__forwarder *start_refused(const struct nwb__fwd_config *cfg,
                                            struct nwb__fwd_stats *st)
{
    struct nwb__forwarder *fw = NULL;
    char err[256];
    const long long first = nwb_test_now_ms();

    assert_int_equal(nwb__forwarder_start(cfg, &fw, err, sizeof err), 0);
    (void)wait_failures(fw, 1);
    assert_true(wait_failures(fw, 2) - first >= NWB__FWD_BACKOFF_FIRST_MS);
    nwb__forwarder_stats(fw, st);
    return fw;
}

/* A table of another shape and a wrong password: refused, counted, retried with backoff (not
 * in a loop), nothing acknowledged; with the right password and the table fixed it delivers. */
static void test_forwarder_refused_inserts_back_off(void **state)
{
    struct fixture *f = *state;
    char out[2048], url[160];
    struct nwb__fwd_config cfg = {
        NULL, NWB_TEST_CLICKHOUSE_USER, "wrong-password", f->out, "h", NULL, NULL};
    struct nwb__forwarder *fw = NULL;
    struct nwb__fwd_stats st;

    /* The other shape: nwb_logs without most columns. */
    assert_int_equal(
        nwb_test_clickhouse_query(&f->ch, "CREATE DATABASE other", NULL, 0, out, sizeof out), 200);
    assert_int_equal(nwb_test_clickhouse_query(&f->ch,
                                               "CREATE TABLE other.nwb_logs (run String) ENGINE "
                                               "= MergeTree ORDER BY run",
                                               NULL, 0, out, sizeof out),
                     200);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/?database=other", f->ch.http_port);
    cfg.url = url;
    append_lines(f, 10);

    /* Wrong password: every request is refused (18.16 answers 401, code 193). */
    fw = start_refused(&cfg, &st);
    assert_int_equal(st.up, 0);
    assert_true(st.records_total == 0);
    nwb__forwarder_stop(fw);

    /* The right password, the table of another shape: the insert is refused. */
    cfg.password = NWB_TEST_CLICKHOUSE_PASSWORD;
    fw = start_refused(&cfg, &st);
    assert_true(st.records_total == 0 && st.records_behind == 10 && st.bytes_behind > 0);
    assert_int_equal(nwb_test_clickhouse_count(&f->ch, "SELECT count() FROM other.nwb_logs"), 0);

    /* The table replaced by the schema's own: the backlog arrives once. */
    assert_int_equal(
        nwb_test_clickhouse_query(&f->ch, "DROP TABLE other.nwb_logs", NULL, 0, out, sizeof out),
        200);
    {
        const long long deadline = nwb_test_now_ms() + WAIT_MS;

        while (nwb_test_clickhouse_count(
                   &f->ch, "SELECT count() FROM other.nwb_logs FINAL WHERE run = 'r1'") != 10) {
            assert_true(nwb_test_now_ms() < deadline);
            poll(NULL, 0, 50);
        }
    }
    nwb__forwarder_stop(fw);
}

/* Append @p n lines of exactly @p len bytes each (the '\n' included), all alike but the offset. */
static void append_sized_lines(struct fixture *f, unsigned n, size_t len)
{
    char msg[2048];
    char line[4096];
    nwb_log_record_t rec;
    size_t head, got;
    char *buf = malloc((size_t)n * len);

    assert_non_null(buf);
    memset(&rec, 0, sizeof rec);
    rec.time_ns = 1796110452000000000ull;
    rec.thread_id = 77;
    rec.msg = msg;
    rec.msg_len = 0;
    head = nwb_log_line_format(line, sizeof line, &f->clock, &rec, "mygame", 6);
    assert_true(len > head && len - head < sizeof msg);
    memset(msg, 'm', sizeof msg);
    rec.msg_len = (uint32_t)(len - head);
    got = nwb_log_line_format(line, sizeof line, &f->clock, &rec, "mygame", 6);
    assert_int_equal(got, len);
    for (unsigned i = 0; i < n; i++) {
        memcpy(buf + (size_t)i * len, line, len);
    }
    assert_int_equal(nwb_write_all(f->log_fd, buf, (size_t)n * len), 0);
    f->lines += n;
    free(buf);
}

/* Run a forwarder until it sent what log.txt holds past the cursor and ClickHouse has @p rows
 * of the run; returns its inserts. */
static uint64_t forward_all(struct fixture *f, long long rows)
{
    struct nwb__fwd_config cfg = {f->url, NULL, NULL, f->out, "h", NULL, NULL};
    struct nwb__forwarder *fw = NULL;
    struct nwb__fwd_stats st;
    char err[256];

    assert_int_equal(nwb__forwarder_start(&cfg, &fw, err, sizeof err), 0);
    {
        /* Until this forwarder has sent every line after the cursor (rows sent before by
         * another one may already be there). */
        const long long deadline = nwb_test_now_ms() + WAIT_MS;
        uint64_t pending = 0, off = 0;
        char dir[600];
        struct stat sb;

        snprintf(dir, sizeof dir, "%s/runs/" RUN_DIR, f->out);
        assert_int_equal(nwb__fwd_cursor_read(dir, &off), 0);
        assert_int_equal(stat(f->log, &sb), 0);
        pending = (uint64_t)sb.st_size - off;
        for (;;) {
            nwb__forwarder_stats(fw, &st);
            if (st.bytes_total >= pending) {
                break;
            }
            assert_true(nwb_test_now_ms() < deadline);
            poll(NULL, 0, 20);
        }
    }
    wait_rows(f, rows);
    nwb__forwarder_stats(fw, &st);
    nwb__forwarder_stop(fw);
    assert_true(st.inserts_failed == 0);
    return st.inserts_total;
}

/* NWB__FWD_BATCH_BYTES and NWB__FWD_BATCH_ROWS at their edges: exactly the bound is one
 * insert, one line more is two. The log is complete before the forwarder starts, so the
 * batches are cut by the bounds alone. */
static void test_forwarder_batch_bounds_at_their_edges(void **state)
{
    struct fixture *f = *state;
    const unsigned per_batch = NWB__FWD_BATCH_BYTES / 1024u;

    /* 8 MiB of 1 KiB lines: one insert. */
    append_sized_lines(f, per_batch, 1024);
    assert_true(forward_all(f, per_batch) == 1);
    /* One more line: the next forwarder takes only it (the cursor kept the first 8 MiB)... */
    append_sized_lines(f, 1, 1024);
    assert_true(forward_all(f, per_batch + 1) == 1);
    /* ...and from byte 0, 8 MiB + one line is two inserts. */
    {
        char dir[600];

        snprintf(dir, sizeof dir, "%s/runs/" RUN_DIR, f->out);
        assert_int_equal(nwb__fwd_cursor_write(dir, 0), 0);
    }
    assert_true(forward_all(f, per_batch + 1) == 2);
}

static void test_forwarder_row_bound_at_its_edge(void **state)
{
    struct fixture *f = *state;

    /* 100,000 lines of 80 bytes (8,000,000 < 8 MiB): one insert; 100,001: two. */
    append_sized_lines(f, NWB__FWD_BATCH_ROWS, 80);
    assert_true(forward_all(f, NWB__FWD_BATCH_ROWS) == 1);
    {
        char dir[600];

        /* Start the run again from byte 0 with one line more: 100,001 lines in two inserts. */
        snprintf(dir, sizeof dir, "%s/runs/" RUN_DIR, f->out);
        assert_int_equal(nwb__fwd_cursor_write(dir, 0), 0);
    }
    append_sized_lines(f, 1, 80);
    assert_true(forward_all(f, NWB__FWD_BATCH_ROWS + 1) == 2);
}

int main(void)
{
    char why[1024];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_forwarder_delivers_once_across_clickhouse_restart,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_forwarder_refused_inserts_back_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forwarder_batch_bounds_at_their_edges, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_forwarder_row_bound_at_its_edge, setup, teardown),
    };

    if (!nwb_test_clickhouse_available(why, sizeof why)) {
        printf("SKIP forward.forwarder: %s\n", why);
        return NWB_TEST_CLICKHOUSE_SKIP;
    }
    return cmocka_run_group_tests_name("forward.forwarder", tests, NULL, NULL);
}
