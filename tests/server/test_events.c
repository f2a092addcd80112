/* SPDX-License-Identifier: MIT */
/*
 * test_events.c - GET /v1/events against the server library in-process (nwb_server_create()
 * on a private loop run by a second thread, real sockets from the test thread): run, log,
 * telemetry and crash events in order and coalesced; resuming with Last-Event-ID (header and
 * query) loses and repeats nothing; reset for an id older than the backlog or from another
 * lifetime; the backlog's count bound; crash changes past their queue become a reset; 429
 * past --events-max-streams; a reader that never reads cut off at --events-max-unsent-bytes
 * while ingest goes on; keep-alive comments within --events-keepalive-ms; the token rule;
 * bad ids; streams closed at shutdown with every handle released. Every data line is parsed
 * strictly (sse_client.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/server.h"
#include "nwb/telemetry_report.h"
#include "crash_test_archive.h"
#include "events_int.h"
#include "server_inproc.h"
#include "server_int.h"
#include "server_test_util.h"
#include "sse_client.h"

#define WAIT_MS 10000 /* an event the test caused must arrive within this */

struct fx {
    uv_loop_t loop;
    nwb_server_t *srv;
    pthread_t thread;
    char dir[512];
    int port;
    /* blocking the loop thread on demand (hold_loop) */
    uv_async_t hold;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int held, release;
};

static void *loop_main(void *arg)
{
    struct fx *f = arg;

    uv_run(&f->loop, UV_RUN_DEFAULT);
    return NULL;
}

/* The loop thread parks here until the test sets release (hold_loop / release_loop). */
static void on_hold(uv_async_t *a)
{
    struct fx *f = a->data;

    pthread_mutex_lock(&f->lock);
    f->held = 1;
    pthread_cond_broadcast(&f->cond);
    while (!f->release) {
        pthread_cond_wait(&f->cond, &f->lock);
    }
    f->held = 0;
    pthread_mutex_unlock(&f->lock);
}

static void on_hold_closed(uv_handle_t *h)
{
    (void)h;
}

/* Stop the server from the loop thread: close the hold handle first. */
static void on_stop(uv_async_t *a)
{
    struct fx *f = a->data;

    uv_close((uv_handle_t *)&f->hold, on_hold_closed);
    uv_close((uv_handle_t *)a, on_hold_closed);
    nwb_server_shutdown(f->srv);
}

static uv_async_t stop_async;

static struct fx *start(nwb_server_config_t *cfg)
{
    struct fx *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    f->port = tu_inproc_create(&f->loop, "events", cfg, f->dir, sizeof(f->dir), &f->srv);
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->cond, NULL);
    assert_int_equal(uv_async_init(&f->loop, &f->hold, on_hold), 0);
    f->hold.data = f;
    assert_int_equal(uv_async_init(&f->loop, &stop_async, on_stop), 0);
    stop_async.data = f;
    assert_int_equal(pthread_create(&f->thread, NULL, loop_main, f), 0);
    return f;
}

static struct fx *start_default(void)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;

    return start(&cfg);
}

/* Stop, join, and check every handle was released (uv_loop_close() is 0). */
static void stop(struct fx *f)
{
    uv_async_send(&stop_async);
    tu_inproc_join(f->thread, f->srv, &f->loop, f->dir);
    pthread_cond_destroy(&f->cond);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

static void hold_loop(struct fx *f)
{
    f->release = 0;
    uv_async_send(&f->hold);
    pthread_mutex_lock(&f->lock);
    while (!f->held) {
        pthread_cond_wait(&f->cond, &f->lock);
    }
    pthread_mutex_unlock(&f->lock);
}

static void release_loop(struct fx *f)
{
    pthread_mutex_lock(&f->lock);
    f->release = 1;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
}

/* Poll /metrics until @p name reads at least @p value (WAIT_MS at most). */
static void wait_metric_at_least(int port, const char *name, long long value)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;

    while (tu_metric(port, name) < value) {
        if (nwb_test_now_ms() > deadline) {
            fail_msg("%s never reached %lld (is %lld)", name, value, tu_metric(port, name));
        }
        poll(NULL, 0, 2);
    }
}

/* ---- reading events ---- */

/* The string member @p key of an event's data; the test fails when it is missing. */
static void json_str(const char *data, const char *key, char *out, size_t cap)
{
    if (!nwb_test_sse_data_str(data, key, out, cap)) {
        fail_msg("no string %s in %s", key, data);
    }
}

static unsigned long long json_num(const char *data, const char *key)
{
    uint64_t v = 0;

    if (!nwb_test_sse_data_u64(data, key, &v)) {
        fail_msg("no number %s in %s", key, data);
    }
    return (unsigned long long)v;
}

/* Open a stream; it must be a 200 event stream. Returns its first position (the id of the
 * newest event when it opened, or the one resumed from). */
static uint64_t open_stream(struct nwb_test_sse *s, int port, const char *target,
                            const char *headers, int rcvbuf)
{
    struct nwb_test_sse_block b;
    char v[128];

    assert_int_equal(nwb_test_sse_open(s, port, target, headers, rcvbuf, WAIT_MS), 0);
    if (s->status != 200) {
        fail_msg("GET %s: %d %s", target, s->status, s->body);
    }
    assert_true(nwb_test_sse_header(s, "Content-Type", v, sizeof(v)));
    assert_string_equal(v, "text/event-stream; charset=utf-8");
    assert_true(nwb_test_sse_header(s, "Cache-Control", v, sizeof(v)));
    assert_string_equal(v, "no-store");
    assert_false(nwb_test_sse_header(s, "Content-Length", v, sizeof(v)));
    assert_false(nwb_test_sse_header(s, "Transfer-Encoding", v, sizeof(v)));
    /* The first block: the reconnection delay and the position (a reset is an event). */
    assert_int_equal(nwb_test_sse_next(s, &b, WAIT_MS), 1);
    assert_true(b.has_retry && b.has_id);
    assert_int_equal(b.retry_ms, NWB__EVENTS_RETRY_MS);
    if (b.event[0] != '\0') {
        assert_string_equal(b.event, "reset");
    }
    return b.id;
}

/* The next event; it must come within WAIT_MS and carry an id and a data line. */
static void next_event(struct nwb_test_sse *s, struct nwb_test_sse_block *b)
{
    const int rc = nwb_test_sse_next_event(s, b, WAIT_MS);

    if (rc != 1) {
        fail_msg("no event within %d ms (%d)", WAIT_MS, rc);
    }
    assert_true(b->has_id && b->has_data);
}

/* Nothing more arrives within @p ms (keep-alive comments aside). */
static void expect_quiet(struct nwb_test_sse *s, int ms)
{
    struct nwb_test_sse_block b;
    const int rc = nwb_test_sse_next_event(s, &b, ms);

    if (rc != 0) {
        fail_msg("expected no event, got %d: %s %s", rc, b.event, b.data);
    }
}

static int post_text(int port, const char *program, const char *run, const char *text)
{
    return tu_post(port, "text/plain", program, run, -1, text, strlen(text), NULL, 0);
}

/* The size of runs/<id>/log.txt. */
static long long log_size(const struct fx *f, const char *id)
{
    char path[1200];
    struct stat st;

    snprintf(path, sizeof(path), "%s/runs/%s/log.txt", f->dir, id);
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* What one stream saw of one run. */
struct seen_run {
    char id[NWB__RUN_DIR_MAX + 1];
    int active_at;  /* index of its run "active" event, or -1 */
    int log_events; /* log events */
    int first_log_at;
    unsigned long long size; /* the last log size */
};

/*
 * Read events until every run of @p runs (n of them, by the X-NWB-Run value @p names[i]) has
 * a log event whose size is its log.txt's size. Checks: ids consecutive from @p pos + 1, the
 * run event before any log event of the run, sizes growing.
 */
static uint64_t read_until_logs_match(const struct fx *f, struct nwb_test_sse *s, uint64_t pos,
                                      const char *const *names, struct seen_run *runs, int n)
{
    int index = 0;

    for (int i = 0; i < n; i++) {
        runs[i].id[0] = '\0';
        runs[i].active_at = runs[i].first_log_at = -1;
        runs[i].log_events = 0;
        runs[i].size = 0;
    }
    for (;;) {
        struct nwb_test_sse_block b;
        char id[NWB__RUN_DIR_MAX + 1];
        int done = 1;
        int r = -1;

        for (int i = 0; i < n; i++) {
            done =
                done && runs[i].id[0] != '\0' && (long long)runs[i].size == log_size(f, runs[i].id);
        }
        if (done) {
            return pos;
        }
        next_event(s, &b);
        if (b.id != pos + 1) {
            fail_msg("event id %llu after %llu: lost or repeated", (unsigned long long)b.id,
                     (unsigned long long)pos);
        }
        pos = b.id;
        if (strcmp(b.event, "run") != 0 && strcmp(b.event, "log") != 0) {
            continue;
        }
        json_str(b.data, "id", id, sizeof(id));
        for (int i = 0; i < n; i++) {
            char want[128];

            snprintf(want, sizeof(want), "_%s", names[i]);
            if (strlen(id) > strlen(want) && strcmp(id + strlen(id) - strlen(want), want) == 0) {
                r = i;
            }
        }
        if (r < 0) {
            continue;
        }
        if (strcmp(b.event, "run") == 0) {
            char change[32];

            json_str(b.data, "change", change, sizeof(change));
            assert_string_equal(change, "active");
            assert_int_equal(runs[r].active_at, -1);
            snprintf(runs[r].id, sizeof(runs[r].id), "%s", id);
            runs[r].active_at = index++;
        } else {
            const unsigned long long size = json_num(b.data, "size");

            if (runs[r].active_at < 0) {
                fail_msg("log event of %s before its run event", id);
            }
            assert_true(size > runs[r].size);
            runs[r].size = size;
            if (runs[r].first_log_at < 0) {
                runs[r].first_log_at = index;
            }
            index++;
            runs[r].log_events++;
        }
    }
}

/* ---- tests ---- */

static void test_events_run_and_log_arrive_in_order_and_match_the_log(void **state)
{
    struct fx *f = start_default();
    static struct nwb_test_sse s;
    const char *const names[2] = {"a", "b"};
    struct seen_run runs[2];
    uint64_t pos;

    (void)state;
    pos = open_stream(&s, f->port, "/v1/events", NULL, 0);
    for (int i = 0; i < 6; i++) {
        char line[64];

        snprintf(line, sizeof(line), "line %d of %s\n", i, names[i % 2]);
        assert_int_equal(post_text(f->port, "evt", names[i % 2], line), 200);
    }
    pos = read_until_logs_match(f, &s, pos, names, runs, 2);
    for (int i = 0; i < 2; i++) {
        assert_true(runs[i].log_events >= 1 && runs[i].log_events <= 3);
        assert_true(runs[i].active_at < runs[i].first_log_at);
    }
    /* More lines: log events only (the runs are known), ids still consecutive. */
    assert_int_equal(post_text(f->port, "evt", "a", "one more\n"), 200);
    {
        struct nwb_test_sse_block b;
        char id[NWB__RUN_DIR_MAX + 1];

        next_event(&s, &b);
        assert_int_equal(b.id, pos + 1);
        assert_string_equal(b.event, "log");
        json_str(b.data, "id", id, sizeof(id));
        assert_string_equal(id, runs[0].id);
        assert_int_equal((long long)json_num(b.data, "size"), log_size(f, id));
    }
    expect_quiet(&s, 300);
    nwb_test_sse_close(&s);
    stop(f);
}

static void test_events_log_growth_is_coalesced_per_run(void **state)
{
    struct fx *f = start_default();
    static struct nwb_test_sse s;
    const char *const names[1] = {"burst"};
    struct seen_run run;
    const long long t0 = nwb_test_now_ms();
    long long elapsed;
    uint64_t pos;

    (void)state;
    pos = open_stream(&s, f->port, "/v1/events", NULL, 0);
    for (int i = 0; i < 300; i++) {
        assert_int_equal(post_text(f->port, "evt", "burst", "a line of the burst\n"), 200);
    }
    (void)read_until_logs_match(f, &s, pos, names, &run, 1);
    elapsed = nwb_test_now_ms() - t0;
    /* At most one log event per run per NWB__EVENTS_COALESCE_MS, whatever the batch rate. */
    if (run.log_events > elapsed / NWB__EVENTS_COALESCE_MS + 1) {
        fail_msg("%d log events in %lld ms for 300 batches", run.log_events, elapsed);
    }
    nwb_test_sse_close(&s);
    stop(f);
}

static void test_events_telemetry_upload_gives_run_and_telemetry_events(void **state)
{
    struct fx *f = start_default();
    static struct nwb_test_sse s;
    nwb_tel_synth_config_t cfg = NWB_TEL_SYNTH_CONFIG_INIT;
    struct nwb_test_sse_block b;
    char id[NWB__RUN_DIR_MAX + 1], change[32], resp[512];
    const char *headers = "X-NWB-Program: tgame\r\nX-NWB-Run: tel\r\nX-NWB-Seq: 1\r\n";
    nwb_buf_t seg;
    uint64_t pos;

    (void)state;
    cfg.frames = 20;
    cfg.frames_per_upload = 0;
    nwb_buf_init(&seg, 16u << 20);
    assert_int_equal(nwb_tel_synth(&cfg, &seg, NULL), 0);
    pos = open_stream(&s, f->port, "/v1/events", NULL, 0);
    assert_int_equal(nwb_test_http(f->port, "POST", "/v1/telemetry", headers, seg.data, seg.len,
                                   resp, sizeof(resp)),
                     200);
    next_event(&s, &b);
    assert_int_equal(b.id, pos + 1);
    assert_string_equal(b.event, "run");
    json_str(b.data, "change", change, sizeof(change));
    assert_string_equal(change, "active");
    json_str(b.data, "id", id, sizeof(id));
    assert_non_null(strstr(id, "tgame_"));
    next_event(&s, &b);
    assert_int_equal(b.id, pos + 2);
    assert_string_equal(b.event, "run");
    json_str(b.data, "change", change, sizeof(change));
    assert_string_equal(change, "telemetry");
    next_event(&s, &b);
    assert_int_equal(b.id, pos + 3);
    assert_string_equal(b.event, "telemetry");
    {
        char tid[NWB__RUN_DIR_MAX + 1];

        json_str(b.data, "id", tid, sizeof(tid));
        assert_string_equal(tid, id);
    }
    assert_int_equal(json_num(b.data, "uploads"), 1);
    /* The same seq again: a duplicate, the report does not change, no event. */
    assert_int_equal(nwb_test_http(f->port, "POST", "/v1/telemetry", headers, seg.data, seg.len,
                                   resp, sizeof(resp)),
                     200);
    expect_quiet(&s, 300);
    nwb_buf_cleanup(&seg);
    nwb_test_sse_close(&s);
    stop(f);
}

/* POST /v1/crash; the answer's id into @p id. */
static void post_crash(int port, const void *body, size_t len, char *id, size_t cap)
{
    char resp[512];

    assert_int_equal(nwb_test_http(port, "POST", "/v1/crash",
                                   "X-NWB-Program: crashy\r\nX-NWB-Run: c1\r\n", body, len, resp,
                                   sizeof(resp)),
                     200);
    json_str(resp, "id", id, cap);
}

/* @p b is event pos + 1, crash @p id in @p status, for program crashy, run c1 (the upload's),
 * or the package's manifest's (ta_package: ta_prog, 0123456789abcdef) once extracted. */
static uint64_t expect_crash_block(const struct nwb_test_sse_block *b, uint64_t pos, const char *id,
                                   const char *status)
{
    const int manifest = strcmp(status, "extracted") == 0;
    char v[128];

    assert_int_equal(b->id, pos + 1);
    assert_string_equal(b->event, "crash");
    json_str(b->data, "id", v, sizeof(v));
    assert_string_equal(v, id);
    json_str(b->data, "status", v, sizeof(v));
    assert_string_equal(v, status);
    json_str(b->data, "program", v, sizeof(v));
    assert_string_equal(v, manifest ? "ta_prog" : "crashy");
    json_str(b->data, "run", v, sizeof(v));
    assert_string_equal(v, manifest ? "0123456789abcdef" : "c1");
    return b->id;
}

/* The next event is that crash. */
static uint64_t expect_crash(struct nwb_test_sse *s, uint64_t pos, const char *id,
                             const char *status)
{
    struct nwb_test_sse_block b;

    next_event(s, &b);
    return expect_crash_block(&b, pos, id, status);
}

static void test_events_crash_archives_queued_then_settled(void **state)
{
    struct fx *f = start_default();
    static struct nwb_test_sse s;
    char good[64], bad[64];
    size_t len = 0;
    void *pkg = ta_package("tar.gz", "events", &len);
    uint64_t pos;

    (void)state;
    assert_non_null(pkg);
    pos = open_stream(&s, f->port, "/v1/events", NULL, 0);
    /* The run the package's manifest names (ta_prog, 0123456789abcdef), active first. */
    assert_int_equal(post_text(f->port, "ta_prog", "0123456789abcdef", "before the crash\n"), 200);
    {
        struct nwb_test_sse_block b;

        next_event(&s, &b);
        assert_string_equal(b.event, "run");
        next_event(&s, &b);
        assert_string_equal(b.event, "log");
        pos = b.id;
    }
    post_crash(f->port, pkg, len, good, sizeof(good));
    pos = expect_crash(&s, pos, good, "queued");
    /* Then, in either order (two threads report them): the package extracted, and the run
     * event of its run's crash count. */
    for (int i = 0, crash = 0, run = 0; i < 2; i++) {
        struct nwb_test_sse_block b;
        char v[128];

        next_event(&s, &b);
        if (strcmp(b.event, "run") == 0) {
            assert_int_equal(b.id, pos + 1);
            assert_int_equal(run++, 0);
            json_str(b.data, "change", v, sizeof(v));
            assert_string_equal(v, "crash");
            json_str(b.data, "run", v, sizeof(v));
            assert_string_equal(v, "0123456789abcdef");
            pos = b.id;
        } else {
            assert_int_equal(crash++, 0);
            pos = expect_crash_block(&b, pos, good, "extracted");
        }
    }
    /* The same bytes again: already known, no change, no event. */
    post_crash(f->port, pkg, len, good, sizeof(good));
    post_crash(f->port, "not an archive at all", 21, bad, sizeof(bad));
    pos = expect_crash(&s, pos, bad, "queued");
    (void)expect_crash(&s, pos, bad, "invalid");
    free(pkg);
    nwb_test_sse_close(&s);
    stop(f);
}

/* Events of one stream, in order. */
struct recorded {
    uint64_t id[64];
    char event[64][sizeof(((struct nwb_test_sse_block *)0)->event)];
    char data[64][NWB_TEST_SSE_DATA_MAX + 1];
    int n;
};

static void record(struct nwb_test_sse *s, struct recorded *r, int count)
{
    for (int i = 0; i < count; i++) {
        struct nwb_test_sse_block b;

        next_event(s, &b);
        assert_true(r->n < 64);
        r->id[r->n] = b.id;
        snprintf(r->event[r->n], sizeof(r->event[0]), "%s", b.event);
        snprintf(r->data[r->n], sizeof(r->data[0]), "%s", b.data);
        r->n++;
    }
}

/* @p s (resumed after @p from) sees exactly @p all's events after @p from, then nothing. */
static void expect_replay(struct nwb_test_sse *s, const struct recorded *all, uint64_t from)
{
    struct recorded got;
    int first = 0;

    memset(&got, 0, sizeof(got));
    while (first < all->n && all->id[first] <= from) {
        first++;
    }
    record(s, &got, all->n - first);
    for (int i = 0; i < got.n; i++) {
        assert_int_equal(got.id[i], all->id[first + i]);
        assert_string_equal(got.event[i], all->event[first + i]);
        assert_string_equal(got.data[i], all->data[first + i]);
    }
    expect_quiet(s, 300);
}

static void test_events_resumed_stream_loses_and_repeats_nothing(void **state)
{
    struct fx *f = start_default();
    static struct nwb_test_sse all, early, r1, r2, r3;
    static struct recorded seen, first;
    char hdr[64], target[96];
    uint64_t pos, mid;

    (void)state;
    memset(&seen, 0, sizeof(seen));
    memset(&first, 0, sizeof(first));
    pos = open_stream(&all, f->port, "/v1/events", NULL, 0);
    assert_int_equal(open_stream(&early, f->port, "/v1/events", NULL, 0), pos);
    /* Two runs, one batch each: run, log, run, log (4 events) seen by both streams. */
    assert_int_equal(post_text(f->port, "evt", "r1", "first\n"), 200);
    assert_int_equal(post_text(f->port, "evt", "r2", "first\n"), 200);
    record(&early, &first, 3);
    mid = first.id[2];
    nwb_test_sse_close(&early); /* gone after its third event */
    /* While it is away: three more runs (6 events). */
    for (int i = 3; i <= 5; i++) {
        char run[8];

        snprintf(run, sizeof(run), "r%d", i);
        assert_int_equal(post_text(f->port, "evt", run, "later\n"), 200);
    }
    record(&all, &seen, 10);
    for (int i = 0; i < seen.n; i++) {
        assert_int_equal(seen.id[i], pos + 1 + (uint64_t)i);
    }
    /* Last-Event-ID: the events after it, each once. */
    snprintf(hdr, sizeof(hdr), "Last-Event-ID: %llu\r\n", (unsigned long long)mid);
    assert_int_equal(open_stream(&r1, f->port, "/v1/events", hdr, 0), mid);
    expect_replay(&r1, &seen, mid);
    /* The query form, for clients that cannot set the header. */
    snprintf(target, sizeof(target), "/v1/events?lastEventId=%llu", (unsigned long long)mid);
    assert_int_equal(open_stream(&r2, f->port, target, NULL, 0), mid);
    expect_replay(&r2, &seen, mid);
    /* Both: the header wins (a reconnecting EventSource keeps its first URL). */
    snprintf(target, sizeof(target), "/v1/events?lastEventId=%llu", (unsigned long long)pos);
    assert_int_equal(open_stream(&r3, f->port, target, hdr, 0), mid);
    expect_replay(&r3, &seen, mid);
    /* Resuming at the newest id replays nothing; live events follow on every stream. */
    nwb_test_sse_close(&r1);
    snprintf(hdr, sizeof(hdr), "Last-Event-ID: %llu\r\n", (unsigned long long)seen.id[9]);
    assert_int_equal(open_stream(&r1, f->port, "/v1/events", hdr, 0), seen.id[9]);
    expect_quiet(&r1, 200);
    assert_int_equal(post_text(f->port, "evt", "r6", "live\n"), 200);
    {
        struct recorded a, b;

        memset(&a, 0, sizeof(a));
        memset(&b, 0, sizeof(b));
        record(&r1, &a, 2);
        record(&all, &b, 2);
        assert_int_equal(a.id[0], seen.id[9] + 1);
        assert_int_equal(b.id[0], a.id[0]);
        assert_string_equal(a.data[1], b.data[1]);
    }
    nwb_test_sse_close(&all);
    nwb_test_sse_close(&r1);
    nwb_test_sse_close(&r2);
    nwb_test_sse_close(&r3);
    stop(f);
}

/* The first block of @p s must be a reset at @p newest; returns it. */
static void expect_reset(struct nwb_test_sse *s, int port, const char *headers, uint64_t newest)
{
    struct nwb_test_sse_block b;
    char reason[128];

    assert_int_equal(nwb_test_sse_open(s, port, "/v1/events", headers, 0, WAIT_MS), 0);
    assert_int_equal(s->status, 200);
    assert_int_equal(nwb_test_sse_next(s, &b, WAIT_MS), 1);
    assert_string_equal(b.event, "reset");
    assert_true(b.has_id && b.has_data && b.has_retry);
    assert_int_equal(b.id, newest);
    assert_int_equal(json_num(b.data, "lastEventId"), newest);
    json_str(b.data, "reason", reason, sizeof(reason));
}

static void test_events_unknown_or_too_old_id_gets_reset(void **state)
{
    struct fx *f = start_default();
    static struct nwb_test_sse s, live;
    struct nwb_test_sse_block b;
    char hdr[64];
    uint64_t pos;

    (void)state;
    pos = open_stream(&live, f->port, "/v1/events", NULL, 0);
    assert_int_equal(post_text(f->port, "evt", "x", "x\n"), 200);
    next_event(&live, &b);
    next_event(&live, &b);
    assert_int_equal(b.id, pos + 2);
    /* An id of an earlier lifetime (ids start at the start time in microseconds). */
    expect_reset(&s, f->port, "Last-Event-ID: 1\r\n", pos + 2);
    /* The reset's id is the position: live events follow it. */
    assert_int_equal(post_text(f->port, "evt", "y", "y\n"), 200);
    next_event(&s, &b);
    assert_int_equal(b.id, pos + 3);
    assert_string_equal(b.event, "run");
    next_event(&s, &b);
    assert_int_equal(b.id, pos + 4);
    assert_string_equal(b.event, "log");
    nwb_test_sse_close(&s);
    /* An id this lifetime has not reached. */
    snprintf(hdr, sizeof(hdr), "Last-Event-ID: %llu\r\n", (unsigned long long)(pos + 1000));
    expect_reset(&s, f->port, hdr, pos + 4);
    nwb_test_sse_close(&s);
    wait_metric_at_least(f->port, "nwb_event_resets_total", 2);
    nwb_test_sse_close(&live);
    stop(f);
}

/* Crash changes straight into the bus from this thread (nwb__events_crash_note is for any
 * thread); waits until the loop published them. */
static void crash_notes(struct fx *f, unsigned n, long long *published)
{
    struct nwb__events *ev = ((struct nwb_server *)f->srv)->events;

    for (unsigned i = 0; i < n; i++) {
        char id[40];

        snprintf(id, sizeof(id), "%032u", i);
        nwb__events_crash_note(ev, id, "queued", "notes", "n1");
    }
    *published += n;
    wait_metric_at_least(f->port, "nwb_events_total", *published);
}

static void test_events_backlog_keeps_the_newest_4096(void **state)
{
    struct fx *f = start_default();
    static struct nwb_test_sse s;
    struct nwb_test_sse_block b;
    long long published = 0;
    uint64_t start_pos, newest, oldest;
    char hdr[64];

    (void)state;
    start_pos = open_stream(&s, f->port, "/v1/events", NULL, 0);
    nwb_test_sse_close(&s);
    for (int i = 0; i < 21; i++) {
        crash_notes(f, 200, &published); /* 4200 events */
    }
    assert_int_equal(tu_metric(f->port, "nwb_events_backlog"), NWB__EVENTS_BACKLOG_MAX);
    newest = open_stream(&s, f->port, "/v1/events", NULL, 0);
    nwb_test_sse_close(&s);
    assert_int_equal(newest, start_pos + 4200);
    oldest = newest - NWB__EVENTS_BACKLOG_MAX + 1;
    /* The oldest kept: a stream that saw the one before it resumes with every later one. */
    snprintf(hdr, sizeof(hdr), "Last-Event-ID: %llu\r\n", (unsigned long long)(oldest - 1));
    assert_int_equal(open_stream(&s, f->port, "/v1/events", hdr, 0), oldest - 1);
    for (uint64_t want = oldest; want <= newest; want++) {
        next_event(&s, &b);
        assert_int_equal(b.id, want);
        assert_string_equal(b.event, "crash");
    }
    expect_quiet(&s, 200);
    nwb_test_sse_close(&s);
    /* One before that is gone: reset. So is the first position. */
    snprintf(hdr, sizeof(hdr), "Last-Event-ID: %llu\r\n", (unsigned long long)(oldest - 2));
    expect_reset(&s, f->port, hdr, newest);
    nwb_test_sse_close(&s);
    snprintf(hdr, sizeof(hdr), "Last-Event-ID: %llu\r\n", (unsigned long long)start_pos);
    expect_reset(&s, f->port, hdr, newest);
    nwb_test_sse_close(&s);
    stop(f);
}

static void test_events_crash_notes_past_their_queue_become_a_reset(void **state)
{
    struct fx *f = start_default();
    struct nwb__events *ev = ((struct nwb_server *)f->srv)->events;
    static struct nwb_test_sse s;
    struct nwb_test_sse_block b;
    uint64_t pos;

    (void)state;
    pos = open_stream(&s, f->port, "/v1/events", NULL, 0);
    /* With the loop held nothing is taken: the queue's NWB__EVENTS_CRASH_NOTES fit, the rest
     * are dropped. */
    hold_loop(f);
    for (unsigned i = 0; i < NWB__EVENTS_CRASH_NOTES + 10; i++) {
        char id[40];

        snprintf(id, sizeof(id), "%032u", i);
        nwb__events_crash_note(ev, id, "queued", "notes", "n1");
    }
    release_loop(f);
    for (unsigned i = 0; i < NWB__EVENTS_CRASH_NOTES; i++) {
        char id[40], got[40];

        next_event(&s, &b);
        assert_int_equal(b.id, pos + 1 + i);
        assert_string_equal(b.event, "crash");
        snprintf(id, sizeof(id), "%032u", i);
        json_str(b.data, "id", got, sizeof(got));
        assert_string_equal(got, id);
    }
    next_event(&s, &b);
    assert_string_equal(b.event, "reset");
    assert_int_equal(b.id, pos + NWB__EVENTS_CRASH_NOTES + 1);
    assert_int_equal(tu_metric(f->port, "nwb_events_crash_dropped_total"), 10);
    nwb_test_sse_close(&s);
    stop(f);
}

static void test_events_streams_past_the_cap_get_429(void **state)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    struct fx *f;
    static struct nwb_test_sse a, b, c;
    char v[32];

    (void)state;
    cfg.events_max_streams = 2;
    f = start(&cfg);
    (void)open_stream(&a, f->port, "/v1/events", NULL, 0);
    (void)open_stream(&b, f->port, "/v1/events", NULL, 0);
    assert_int_equal(nwb_test_sse_open(&c, f->port, "/v1/events", NULL, 0, WAIT_MS), 0);
    assert_int_equal(c.status, 429);
    assert_non_null(strstr(c.body, "--events-max-streams"));
    assert_true(nwb_test_sse_header(&c, "Retry-After", v, sizeof(v)));
    nwb_test_sse_close(&c);
    assert_int_equal(tu_metric(f->port, "nwb_event_streams_rejected_total"), 1);
    /* One closes: room for one again. */
    nwb_test_sse_close(&a);
    {
        const long long deadline = nwb_test_now_ms() + WAIT_MS;

        while (tu_metric(f->port, "nwb_event_streams") != 1) {
            assert_true(nwb_test_now_ms() < deadline);
            poll(NULL, 0, 2);
        }
    }
    (void)open_stream(&c, f->port, "/v1/events", NULL, 0);
    nwb_test_sse_close(&b);
    nwb_test_sse_close(&c);
    stop(f);
}

static void test_events_bad_ids_and_methods_are_refused(void **state)
{
    struct fx *f = start_default();
    static struct nwb_test_sse s;
    static const char *const bad_targets[] = {
        "/v1/events?lastEventId=-1", "/v1/events?lastEventId=abc",
        "/v1/events?lastEventId=99999999999999999999999", "/v1/events?lastEventId=%zz"};
    static const char *const bad_headers[] = {"Last-Event-ID: abc\r\n", "Last-Event-ID: -5\r\n",
                                              "Last-Event-ID: 18446744073709551616\r\n",
                                              "Last-Event-ID: \r\n"};

    (void)state;
    for (size_t i = 0; i < NWB_ARRAY_SIZE(bad_targets); i++) {
        assert_int_equal(nwb_test_sse_open(&s, f->port, bad_targets[i], NULL, 0, WAIT_MS), 0);
        assert_int_equal(s.status, 400);
        nwb_test_sse_close(&s);
    }
    for (size_t i = 0; i < NWB_ARRAY_SIZE(bad_headers); i++) {
        assert_int_equal(nwb_test_sse_open(&s, f->port, "/v1/events", bad_headers[i], 0, WAIT_MS),
                         0);
        assert_int_equal(s.status, 400);
        nwb_test_sse_close(&s);
    }
    assert_int_equal(nwb_test_http(f->port, "POST", "/v1/events", NULL, "x", 1, NULL, 0), 405);
    assert_int_equal(nwb_test_http(f->port, "GET", "/v1/events/x", NULL, NULL, 0, NULL, 0), 404);
    assert_int_equal(tu_metric(f->port, "nwb_event_streams_total"), 0);
    stop(f);
}

static void test_events_reader_that_never_reads_is_cut_off_ingest_goes_on(void **state)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    struct fx *f;
    static struct nwb_test_sse stuck, reader;
    uint64_t pos, last;
    int posts = 0;

    (void)state;
    cfg.events_max_unsent_bytes = 4096; /* the option's minimum */
    f = start(&cfg);
    /* A tiny receive window: what the server sends it soon stays in the server's queue. */
    (void)open_stream(&stuck, f->port, "/v1/events", NULL, 1024);
    pos = open_stream(&reader, f->port, "/v1/events", NULL, 0);
    last = pos;
    /* New runs (a run event each, and a log event): until the stuck reader is cut off. Every
     * upload is answered 200 meanwhile; the other stream reads along and misses nothing. */
    while (tu_metric(f->port, "nwb_event_streams_cut_total") < 1) {
        char run[64];
        struct nwb_test_sse_block b;

        assert_true(posts < 2000);
        snprintf(run, sizeof(run), "slow-%04d-with-a-long-run-name-to-fill-events", posts++);
        assert_int_equal(post_text(f->port, "evt", run, "x\n"), 200);
        while (nwb_test_sse_next_event(&reader, &b, 0) == 1) {
            assert_int_equal(b.id, last + 1);
            last = b.id;
        }
    }
    print_message("the stuck reader was cut off after %d uploads\n", posts);
    assert_int_equal(tu_metric(f->port, "nwb_event_streams_cut_total"), 1);
    assert_true(nwb_test_sse_wait_closed(&stuck, WAIT_MS));
    nwb_test_sse_close(&stuck);
    assert_int_equal(tu_metric(f->port, "nwb_event_streams"), 1);
    /* Ingest goes on; the reader that reads gets everything, in order. */
    for (int i = 0; i < 20; i++) {
        assert_int_equal(post_text(f->port, "evt", "after", "more\n"), 200);
    }
    for (;;) {
        struct nwb_test_sse_block b;

        next_event(&reader, &b);
        assert_int_equal(b.id, last + 1);
        last = b.id;
        if (strcmp(b.event, "log") == 0 && strstr(b.data, "_after\"") != NULL) {
            char id[NWB__RUN_DIR_MAX + 1];

            json_str(b.data, "id", id, sizeof(id));
            if ((long long)json_num(b.data, "size") == log_size(f, id)) {
                break;
            }
        }
    }
    assert_int_equal(tu_metric(f->port, "nwb_event_streams_cut_total"), 1);
    nwb_test_sse_close(&reader);
    stop(f);
}

static void test_events_keepalive_comment_within_the_interval(void **state)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    struct fx *f;
    static struct nwb_test_sse s;
    struct nwb_test_sse_block b;
    long long t0;

    (void)state;
    cfg.events_keepalive_ms = 200;
    f = start(&cfg);
    (void)open_stream(&s, f->port, "/v1/events", NULL, 0);
    for (int i = 0; i < 3; i++) {
        t0 = nwb_test_now_ms();
        /* Within the interval (and scheduling slack); a comment-only block, no event. */
        assert_int_equal(nwb_test_sse_next(&s, &b, 200 + 2000), 1);
        assert_int_equal(b.comments, 1);
        assert_false(b.has_id || b.has_data || b.event[0] != '\0');
        assert_true(nwb_test_now_ms() - t0 <= 200 + 2000);
    }
    nwb_test_sse_close(&s);
    stop(f);
}

static void test_events_need_the_token_when_one_is_set(void **state)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    static const char token[] = "events-token-0123456789abcdef";
    static struct nwb_test_sse s;
    char path[600], dir[512];
    struct fx *f;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("events-token", dir, sizeof(dir)), 0);
    snprintf(path, sizeof(path), "%s/token", dir);
    assert_int_equal(nwb_test_write_file(path, token, sizeof(token) - 1, 0600), 0);
    cfg.token_file = path;
    f = start(&cfg);
    assert_int_equal(nwb_test_sse_open(&s, f->port, "/v1/events", NULL, 0, WAIT_MS), 0);
    assert_int_equal(s.status, 401);
    nwb_test_sse_close(&s);
    assert_int_equal(nwb_test_sse_open(&s, f->port, "/v1/events",
                                       "Authorization: Bearer wrong-token-0123456789\r\n", 0,
                                       WAIT_MS),
                     0);
    assert_int_equal(s.status, 401);
    nwb_test_sse_close(&s);
    (void)open_stream(&s, f->port, "/v1/events",
                      "Authorization: Bearer events-token-0123456789abcdef\r\n", 0);
    nwb_test_sse_close(&s);
    stop(f);
    nwb_test_rmtree(dir);
}

static void test_events_pipelined_bytes_are_discarded(void **state)
{
    struct fx *f = start_default();
    static const char reqs[] = "GET /v1/events HTTP/1.1\r\nHost: x\r\n\r\n"
                               "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n";
    static struct nwb_test_sse s;
    struct nwb_test_sse_block b;
    char buf[4096] = "";
    size_t used = 0;
    int fd = nwb_test_connect(f->port);

    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(nwb_test_send_all(fd, reqs, sizeof(reqs) - 1), 0);
    /* The stream's head and first block, and never an answer to the second request. */
    while (strstr(buf, "\n\n") == NULL || strstr(buf, "\r\n\r\n") == NULL) {
        const ssize_t n = recv(fd, buf + used, sizeof(buf) - 1 - used, 0);

        assert_true(n > 0);
        used += (size_t)n;
        buf[used] = '\0';
    }
    assert_int_equal(strncmp(buf, "HTTP/1.1 200 OK\r\n", 17), 0);
    assert_int_equal(post_text(f->port, "evt", "pipe", "x\n"), 200);
    s.fd = fd;
    nwb_test_sse_parser_init(&s.p);
    next_event(&s, &b); /* the run event: the stream goes on, nothing malformed before it */
    assert_string_equal(b.event, "run");
    assert_null(strstr(buf, "\"status\""));
    nwb_test_sse_close(&s);
    stop(f);
}

static void test_events_streams_end_when_the_server_stops(void **state)
{
    struct fx *f = start_default();
    static struct nwb_test_sse a, b;

    (void)state;
    (void)open_stream(&a, f->port, "/v1/events", NULL, 0);
    (void)open_stream(&b, f->port, "/v1/events", NULL, 0);
    stop(f); /* checks every handle was released */
    assert_true(nwb_test_sse_wait_closed(&a, WAIT_MS));
    assert_true(nwb_test_sse_wait_closed(&b, WAIT_MS));
    nwb_test_sse_close(&a);
    nwb_test_sse_close(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_run_and_log_arrive_in_order_and_match_the_log),
        cmocka_unit_test(test_events_log_growth_is_coalesced_per_run),
        cmocka_unit_test(test_events_telemetry_upload_gives_run_and_telemetry_events),
        cmocka_unit_test(test_events_crash_archives_queued_then_settled),
        cmocka_unit_test(test_events_resumed_stream_loses_and_repeats_nothing),
        cmocka_unit_test(test_events_unknown_or_too_old_id_gets_reset),
        cmocka_unit_test(test_events_backlog_keeps_the_newest_4096),
        cmocka_unit_test(test_events_crash_notes_past_their_queue_become_a_reset),
        cmocka_unit_test(test_events_streams_past_the_cap_get_429),
        cmocka_unit_test(test_events_bad_ids_and_methods_are_refused),
        cmocka_unit_test(test_events_reader_that_never_reads_is_cut_off_ingest_goes_on),
        cmocka_unit_test(test_events_keepalive_comment_within_the_interval),
        cmocka_unit_test(test_events_need_the_token_when_one_is_set),
        cmocka_unit_test(test_events_pipelined_bytes_are_discarded),
        cmocka_unit_test(test_events_streams_end_when_the_server_stops),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
