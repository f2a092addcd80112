/* SPDX-License-Identifier: MIT */
/*
 * test_run_index.c - unit tests of run_index.c on a real temporary --out and a private libuv
 * loop: the scan at start (what is a run and what is not, newest first, sizes, counters and
 * telemetry from the files), the counters file format, log jobs and telemetry uploads
 * updating a run, the counters written within a second and found again after a restart (a
 * run made at run time gets its file's counts added in), live-ness ending --run-live-s after
 * the last batch, crash notices counted once and moved when a later one names another run,
 * the index's bound (the newest kept at start, the least recently active dropped at run
 * time, nothing dropped that is live or unwritten), and the JSON of a run.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "nwb/error.h"
#include "crash_int.h"
#include "json_check.h"
#include "read_int.h"
#include "server_int.h"
#include "test_support.h"

#define WAIT_MS 10000

struct fx {
    char dir[512];
    uv_loop_t loop;
    struct nwb__run_index *idx;
    int closed;
    unsigned changes; /* NWB__RUN_CHANGE_* bits seen by the watcher */
    unsigned change_calls;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    char path[600];

    if (f == NULL || nwb_test_tmpdir("runindex", f->dir, sizeof(f->dir)) != 0 ||
        uv_loop_init(&f->loop) != 0) {
        free(f);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/runs", f->dir);
    if (mkdir(path, 0755) != 0) {
        return -1;
    }
    *state = f;
    return 0;
}

static void on_closed(void *ctx)
{
    ((struct fx *)ctx)->closed = 1;
}

static void index_close(struct fx *f)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;

    if (f->idx == NULL) {
        return;
    }
    f->closed = 0;
    nwb__run_index_close(f->idx, on_closed, f);
    while (!f->closed && nwb_test_now_ms() < deadline) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        poll(NULL, 0, 1);
    }
    assert_true(f->closed);
    nwb__run_index_destroy(f->idx);
    f->idx = NULL;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    index_close(f);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

static void on_change(void *ctx, const struct nwb__run_info *info, unsigned what)
{
    struct fx *f = ctx;

    (void)info;
    f->changes |= what;
    f->change_calls++;
}

static void index_open(struct fx *f, unsigned live_s, size_t max)
{
    char err[256];

    assert_int_equal(
        nwb__run_index_create(&f->loop, f->dir, live_s, max, &f->idx, err, sizeof(err)), 0);
    nwb__run_index_watch(f->idx, on_change, f);
}

/* runs/@p id with @p log (NULL: no log.txt), a counters file and telemetry.json if given. */
static void make_run(struct fx *f, const char *id, const char *log, const char *counters,
                     int telemetry)
{
    char path[1200];

    snprintf(path, sizeof(path), "%s/runs/%s", f->dir, id);
    assert_int_equal(mkdir(path, 0755), 0);
    if (log != NULL) {
        snprintf(path, sizeof(path), "%s/runs/%s/log.txt", f->dir, id);
        assert_int_equal(nwb_test_write_file(path, log, strlen(log), 0644), 0);
    }
    if (counters != NULL) {
        snprintf(path, sizeof(path), "%s/runs/%s/" NWB__RUN_COUNTERS_FILE, f->dir, id);
        assert_int_equal(nwb_test_write_file(path, counters, strlen(counters), 0644), 0);
    }
    if (telemetry) {
        snprintf(path, sizeof(path), "%s/runs/%s/telemetry.json", f->dir, id);
        assert_int_equal(nwb_test_write_file(path, "{}", 2, 0644), 0);
    }
}

static const struct nwb__run_info *find(struct fx *f, const char *id)
{
    return nwb__run_index_find(f->idx, id, strlen(id));
}

/* A log job of @p id as the worker returns it. */
static void job_done(struct fx *f, const char *id, const char *program, const char *run, int status,
                     uint64_t log_size, uint64_t records, uint64_t drops)
{
    struct nwb__log_job job;

    memset(&job, 0, sizeof(job));
    job.kind = NWB__JOB_TEXT;
    job.status = status;
    snprintf(job.dir, sizeof(job.dir), "%s", id);
    snprintf(job.program, sizeof(job.program), "%s", program);
    snprintf(job.run, sizeof(job.run), "%s", run);
    job.log_size = log_size;
    job.records = records;
    job.drops = drops;
    job.tok_decoded = 2 * records;
    job.tok_unknown = records;
    job.recv_time_ns = nwb_time_now_ns();
    nwb__run_index_log_job(f->idx, &job);
}

/* Run the loop until runs/@p id's counters file holds @p needle (the timer and the pool
 * write it), WAIT_MS at most. */
static void wait_counters(struct fx *f, const char *id, const char *needle)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;
    char path[1200];

    snprintf(path, sizeof(path), "%s/runs/%s/" NWB__RUN_COUNTERS_FILE, f->dir, id);
    for (;;) {
        char *text;

        uv_run(&f->loop, UV_RUN_NOWAIT);
        text = nwb_test_read_file(path, NULL);
        if (text != NULL && strstr(text, needle) != NULL) {
            free(text);
            break;
        }
        free(text);
        if (nwb_test_now_ms() > deadline) {
            fail_msg("runs/%s/" NWB__RUN_COUNTERS_FILE " never held \"%s\"", id, needle);
        }
        poll(NULL, 0, 5);
    }
    /* And the loop applied the write's result (the base read). */
    for (int i = 0; i < 50; i++) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        poll(NULL, 0, 1);
    }
}

static void set_mtime(struct fx *f, const char *id, const char *file, time_t sec)
{
    char path[1200];
    const struct timeval tv[2] = {{sec, 0}, {sec, 0}};

    snprintf(path, sizeof(path), "%s/runs/%s/%s", f->dir, id, file);
    assert_int_equal(utimes(path, tv), 0);
}

#define RUN_A "game_20240101-000000_a"
#define RUN_B "game_20240601-120000_b"
#define RUN_C "other_app_20250301-080000_c_d"

static void test_scan_lists_only_run_directories_newest_first(void **state)
{
    struct fx *f = *state;
    char path[1200];
    const struct nwb__run_info *r;

    (void)state;
    make_run(f, RUN_A, "one\ntwo\n", NULL, 0);
    make_run(f, RUN_B, "x\n", NULL, 1);
    make_run(f, RUN_C, NULL,
             "nwb-run-counters 1\nprogram=other_app\nrun=c_d\nrecords=42\ndrops=3\n"
             "tokens_decoded=7\ntokens_unknown=1\ntelemetry_uploads=5\n"
             "last_activity_ns=1740816000000000000\n",
             0);
    make_run(f, "not-a-run", "x\n", NULL, 0);
    make_run(f, "game_20240230-000000_bad-date", "x\n", NULL, 0);
    make_run(f, ".game_20240101-000000_hidden", "x\n", NULL, 0);
    snprintf(path, sizeof(path), "%s/runs/game_20240101-000000_link", f->dir);
    assert_int_equal(symlink(f->dir, path), 0);
    snprintf(path, sizeof(path), "%s/runs/game_20240101-000000_file", f->dir);
    assert_int_equal(nwb_test_write_file(path, "x", 1, 0644), 0);
    set_mtime(f, RUN_A, "log.txt", 1704067300);

    index_open(f, 30, NWB__RUN_INDEX_MAX);
    assert_int_equal(nwb__run_index_count(f->idx), 3);
    assert_string_equal(nwb__run_index_newest(f->idx, 0)->id, RUN_C);
    assert_string_equal(nwb__run_index_newest(f->idx, 1)->id, RUN_B);
    assert_string_equal(nwb__run_index_newest(f->idx, 2)->id, RUN_A);
    assert_null(nwb__run_index_newest(f->idx, 3));
    assert_null(find(f, "not-a-run"));
    assert_null(find(f, "game_20240101-000000_link"));
    assert_null(find(f, "game_20240101-000000_file"));

    r = find(f, RUN_A);
    assert_non_null(r);
    assert_string_equal(r->program, "game");
    assert_string_equal(r->run, "a");
    assert_true(r->started_ns == 1704067200ull * 1000000000ull);
    assert_int_equal(r->log_bytes, 8);
    assert_int_equal(r->records, 0); /* no counters file: counts start afresh */
    assert_int_equal(r->telemetry, 0);
    assert_true(r->last_activity_ns == 1704067300ull * 1000000000ull);
    assert_false(nwb__run_index_live(f->idx, r));

    assert_int_equal(find(f, RUN_B)->telemetry, 1);
    r = find(f, RUN_C);
    assert_string_equal(r->program, "other_app");
    assert_string_equal(r->run, "c_d");
    assert_int_equal(r->log_bytes, 0);
    assert_int_equal(r->records, 42);
    assert_int_equal(r->drops, 3);
    assert_int_equal(r->tok_decoded, 7);
    assert_int_equal(r->tok_unknown, 1);
    assert_int_equal(r->tel_uploads, 5);
    /* The directory's mtime is later than the file's time: the later one wins. */
    assert_true(r->last_activity_ns >= 1740816000000000000ull);
    assert_int_equal(f->change_calls, 0);
}

static void test_counters_file_format_round_trips_and_rejects(void **state)
{
    struct nwb__run_info r, back;
    nwb_buf_t b = NWB_BUF_INIT(NWB__RUN_COUNTERS_READ_MAX);

    (void)state;
    memset(&r, 0, sizeof(r));
    snprintf(r.id, sizeof(r.id), "my_game_20240101-000000_x_y");
    snprintf(r.program, sizeof(r.program), "my_game");
    snprintf(r.run, sizeof(r.run), "x_y");
    r.records = UINT64_MAX;
    r.drops = 1;
    r.tok_decoded = 2;
    r.tok_unknown = 3;
    r.tel_uploads = 4;
    r.last_activity_ns = 5;
    assert_int_equal(nwb__run_counters_format(&r, &b), 0);
    assert_true(b.len < NWB__RUN_COUNTERS_READ_MAX);
    memset(&back, 0, sizeof(back));
    snprintf(back.id, sizeof(back.id), "%s", r.id);
    snprintf(back.program, sizeof(back.program), "my");
    snprintf(back.run, sizeof(back.run), "game_x_y");
    assert_int_equal(nwb__run_counters_parse((const char *)b.data, b.len, &back), 0);
    /* The file's program and run fix an ambiguous split of the id. */
    assert_string_equal(back.program, "my_game");
    assert_string_equal(back.run, "x_y");
    assert_true(back.records == UINT64_MAX);
    assert_int_equal(back.drops, 1);
    assert_int_equal(back.tok_decoded, 2);
    assert_int_equal(back.tok_unknown, 3);
    assert_int_equal(back.tel_uploads, 4);
    assert_int_equal(back.last_activity_ns, 5);
    nwb_buf_cleanup(&b);

    assert_int_equal(nwb__run_counters_parse("nwb-run-counters 2\nrecords=1\n", 29, &back),
                     NWB_EVERSION);
    assert_int_equal(nwb__run_counters_parse("nwb-run-counters x\n", 19, &back), NWB_EPROTO);
    assert_int_equal(nwb__run_counters_parse("nwb-state 1\n", 12, &back), NWB_EPROTO);
    assert_int_equal(nwb__run_counters_parse("nwb-run-counters 1", 18, &back), NWB_EPROTO);
    assert_int_equal(nwb__run_counters_parse("", 0, &back), NWB_EPROTO);
    /* Malformed or missing numbers are 0; a program and run that do not make the id are not
     * taken. */
    snprintf(back.program, sizeof(back.program), "my_game");
    {
        static const char bad[] = "nwb-run-counters 1\nrecords=-4\ndrops=999999999999999999999"
                                  "99\nprogram=evil\nrun=x_y\n";

        assert_int_equal(nwb__run_counters_parse(bad, sizeof(bad) - 1, &back), 0);
    }
    assert_int_equal(back.records, 0);
    assert_int_equal(back.drops, 0);
    assert_int_equal(back.tel_uploads, 0);
    assert_string_equal(back.program, "my_game");
}

static void test_log_jobs_count_and_survive_a_restart(void **state)
{
    struct fx *f = *state;
    const char *id = "game_20240101-000000_live";
    const struct nwb__run_info *r;
    char log[501];

    index_open(f, 30, NWB__RUN_INDEX_MAX);
    assert_int_equal(nwb__run_index_count(f->idx), 0);
    /* Made after the scan (as the log worker would), with counts from an earlier lifetime. */
    memset(log, 'x', 500);
    log[499] = '\n';
    log[500] = '\0';
    make_run(f, id, log, "nwb-run-counters 1\nrecords=100\ndrops=1\ntelemetry_uploads=2\n", 1);

    job_done(f, id, "game", "live", NWB__JOB_WRITTEN, 500, 5, 1);
    r = find(f, id);
    assert_non_null(r);
    assert_int_equal(f->changes, NWB__RUN_CHANGE_NEW | NWB__RUN_CHANGE_LOG);
    assert_int_equal(r->log_bytes, 500);
    assert_int_equal(r->records, 5);
    assert_true(nwb__run_index_live(f->idx, r));
    /* The first write adds the file's counts in. */
    wait_counters(f, id, "records=105\n");
    r = find(f, id);
    assert_int_equal(r->records, 105);
    assert_int_equal(r->drops, 2);
    assert_int_equal(r->tok_decoded, 10);
    assert_int_equal(r->tel_uploads, 2);
    assert_int_equal(r->telemetry, 1);

    /* A duplicate and a failure count nothing; a written job does. */
    f->changes = 0;
    job_done(f, id, "game", "live", NWB__JOB_DUPLICATE, 500, 9, 9);
    job_done(f, id, "game", "live", NWB__JOB_FAILED, 900, 9, 9);
    assert_int_equal(find(f, id)->records, 105);
    assert_int_equal(find(f, id)->log_bytes, 500);
    assert_int_equal(f->changes, 0);
    job_done(f, id, "game", "live", NWB__JOB_WRITTEN, 560, 1, 0);
    assert_int_equal(f->changes, NWB__RUN_CHANGE_LOG);
    nwb__run_index_telemetry(f->idx, id, "game", "live");
    assert_int_equal(f->changes, NWB__RUN_CHANGE_LOG | NWB__RUN_CHANGE_TELEMETRY);
    wait_counters(f, id, "records=106\n");

    /* A restart: the counts come back from the file, the size from log.txt. */
    index_close(f);
    index_open(f, 30, NWB__RUN_INDEX_MAX);
    r = find(f, id);
    assert_non_null(r);
    assert_int_equal(r->records, 106);
    assert_int_equal(r->drops, 2);
    assert_int_equal(r->tel_uploads, 3);
    assert_int_equal(r->log_bytes, 500);
    assert_false(nwb__run_index_live(f->idx, r));
}

/* Closing writes what changed since the last write at once. */
static void test_close_writes_the_changed_counters(void **state)
{
    struct fx *f = *state;
    const char *id = "game_20240101-000000_close";
    char path[1200];
    char *text;

    make_run(f, id, "a\n", NULL, 0);
    index_open(f, 30, NWB__RUN_INDEX_MAX);
    job_done(f, id, "game", "close", NWB__JOB_WRITTEN, 2, 7, 0);
    index_close(f);
    snprintf(path, sizeof(path), "%s/runs/%s/" NWB__RUN_COUNTERS_FILE, f->dir, id);
    text = nwb_test_read_file(path, NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, "nwb-run-counters 1\nprogram=game\nrun=close\nrecords=7\n"));
    free(text);
}

static void test_live_ends_run_live_s_after_the_last_batch(void **state)
{
    struct fx *f = *state;
    const char *id = "game_20240101-000000_l";
    const long long t0 = nwb_test_now_ms();
    long long ended = 0;

    index_open(f, 1, NWB__RUN_INDEX_MAX);
    job_done(f, id, "game", "l", NWB__JOB_WRITTEN, 10, 1, 0);
    assert_true(nwb__run_index_live(f->idx, find(f, id)));
    while (nwb__run_index_live(f->idx, find(f, id))) {
        if (nwb_test_now_ms() - t0 > WAIT_MS) {
            fail_msg("still live after %d ms with --run-live-s 1", WAIT_MS);
        }
        poll(NULL, 0, 10);
    }
    ended = nwb_test_now_ms() - t0;
    assert_true(ended >= 990);
}

/* Run the loop until runs/@p id counts @p n crashes (WAIT_MS at most). */
static void wait_crashes(struct fx *f, const char *id, uint64_t n)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;

    while (find(f, id)->crashes < n && nwb_test_now_ms() < deadline) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        poll(NULL, 0, 1);
    }
}

/* Crash notices arrive from another thread; each id counts once, where its last notice says. */
static void test_crash_notices_count_once_per_id(void **state)
{
    struct fx *f = *state;
    const char *a = "game_20240101-000000_a1", *b = "game_20240101-000000_b1";
    const struct nwb__crash_settled s1 = {"0123456789abcdef0123456789abcdef", 1, "game", "a1", 0};
    const struct nwb__crash_settled s1b = {"0123456789abcdef0123456789abcdef", 1, "game", "b1", 0};
    const struct nwb__crash_settled s2 = {"ffffffffffffffffffffffffffffffff", 0, "game", "a1", 0};
    const struct nwb__crash_settled s3 = {"eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", 1, "game", "later",
                                          0};

    make_run(f, a, "x\n", NULL, 0);
    make_run(f, b, "x\n", NULL, 0);
    index_open(f, 30, NWB__RUN_INDEX_MAX);
    nwb__run_index_crash_settled(f->idx, &s1);
    nwb__run_index_crash_settled(f->idx, &s1);
    nwb__run_index_crash_settled(f->idx, &s2);
    nwb__run_index_crash_settled(f->idx, &s3);
    wait_crashes(f, a, 2);
    assert_int_equal(find(f, a)->crashes, 2);
    assert_int_equal(find(f, b)->crashes, 0);
    assert_true((f->changes & NWB__RUN_CHANGE_CRASH) != 0);
    /* The same id naming another run moves it. */
    nwb__run_index_crash_settled(f->idx, &s1b);
    wait_crashes(f, b, 1);
    assert_int_equal(find(f, a)->crashes, 1);
    assert_int_equal(find(f, b)->crashes, 1);
    /* A crash of a run not indexed yet counts once the run appears. */
    job_done(f, "game_20240102-000000_later", "game", "later", NWB__JOB_WRITTEN, 10, 1, 0);
    assert_int_equal(find(f, "game_20240102-000000_later")->crashes, 1);
}

/* At start the newest runs are kept; at run time the least recently active run that is
 * neither live nor waiting for its counters to be written makes room. */
static void test_index_bound_keeps_the_newest_and_drops_the_least_active(void **state)
{
    struct fx *f = *state;
    const char *oldest = "game_20240101-000000_r0";

    make_run(f, oldest, "x\n", NULL, 0);
    make_run(f, "game_20240102-000000_r1", "x\n", NULL, 0);
    make_run(f, "game_20240103-000000_r2", "x\n", NULL, 0);
    make_run(f, "game_20240104-000000_r3", "x\n", NULL, 0);
    set_mtime(f, "game_20240103-000000_r2", "log.txt", 1000); /* the least recently active */
    index_open(f, 30, 3);
    assert_int_equal(nwb__run_index_count(f->idx), 3);
    assert_null(find(f, oldest));
    assert_non_null(find(f, "game_20240103-000000_r2"));

    /* A new run at the bound: r2 (oldest activity, not live, nothing unwritten) goes. */
    job_done(f, "game_20240105-000000_r4", "game", "r4", NWB__JOB_WRITTEN, 2, 1, 0);
    assert_int_equal(nwb__run_index_count(f->idx), 3);
    assert_non_null(find(f, "game_20240105-000000_r4"));
    assert_null(find(f, "game_20240103-000000_r2"));
    assert_string_equal(nwb__run_index_newest(f->idx, 0)->id, "game_20240105-000000_r4");

    /* Every run live: a new one is not indexed (and nothing is dropped). */
    job_done(f, "game_20240102-000000_r1", "game", "r1", NWB__JOB_WRITTEN, 4, 1, 0);
    job_done(f, "game_20240104-000000_r3", "game", "r3", NWB__JOB_WRITTEN, 4, 1, 0);
    job_done(f, "game_20240106-000000_r5", "game", "r5", NWB__JOB_WRITTEN, 2, 1, 0);
    assert_int_equal(nwb__run_index_count(f->idx), 3);
    assert_null(find(f, "game_20240106-000000_r5"));
    assert_non_null(find(f, "game_20240102-000000_r1"));
}

static void test_run_json_is_strict_json_with_every_field(void **state)
{
    struct fx *f = *state;
    nwb_buf_t b = NWB_BUF_INIT(8192);
    nwb_json_t j;
    const char *text;
    size_t bad = 0;

    make_run(f, RUN_C, "l\n", NULL, 1);
    index_open(f, 30, NWB__RUN_INDEX_MAX);
    nwb_json_init(&j, &b, NULL);
    nwb__run_info_json(&j, find(f, RUN_C), 1, 1, 1);
    assert_int_equal(nwb_json_finish(&j), 0);
    text = (const char *)b.data;
    if (nwb_test_json_check(text, b.len, &bad) != 0) {
        fail_msg("bad JSON at %zu: %.*s", bad, (int)b.len, text);
    }
    assert_memory_equal(text,
                        "{\"id\":\"" RUN_C "\",\"program\":\"other_app\",\"run\":\"c_d\","
                        "\"started\":\"2025-03-01T08:00:00.000Z\",\"lastActivity\":\"",
                        strlen("{\"id\":\"" RUN_C "\",\"program\":\"other_app\",\"run\":\"c_d\","
                               "\"started\":\"2025-03-01T08:00:00.000Z\",\"lastActivity\":\""));
    assert_non_null(strstr(text, "\",\"live\":true,\"logBytes\":2,\"records\":0,\"drops\":0,"
                                 "\"tokensUnknown\":0,\"telemetry\":true,"
                                 "\"crashes\":0,\"counters\":{\"records\":0,\"drops\":0,"
                                 "\"tokensDecoded\":0,\"tokensUnknown\":0,"
                                 "\"telemetryUploads\":0},\"listed\":true}"));
    nwb_buf_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_scan_lists_only_run_directories_newest_first, setup,
                                        teardown),
        cmocka_unit_test(test_counters_file_format_round_trips_and_rejects),
        cmocka_unit_test_setup_teardown(test_log_jobs_count_and_survive_a_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_writes_the_changed_counters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_ends_run_live_s_after_the_last_batch, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_crash_notices_count_once_per_id, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_index_bound_keeps_the_newest_and_drops_the_least_active, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_json_is_strict_json_with_every_field, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
