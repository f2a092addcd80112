/* SPDX-License-Identifier: MIT */
/*
 * test_http_out.c - the HTTP output (http_out.c) against a scripted loopback
 * responder: acknowledgement, retries with the same seq, outages, rejection,
 * timeouts, keep-alive, ordering, and the move to the spool under memory
 * pressure and at close.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/error.h"
#include "test_http_out_fixture.h"
#include "test_support.h"

struct fx {
    char dir[512];
    struct nwb__settings s;
    struct nwb__stats st;
    struct nwb__out *out;
    struct responder r;
    int dead_fd; /* holds the port of a responder that starts later (-1: none) */
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("httpout", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    f->dead_fd = -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    if (f->out != NULL) {
        f->out->ops->destroy(f->out);
    }
    responder_stop(&f->r);
    if (f->dead_fd >= 0) {
        close(f->dead_fd);
    }
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

#define DEF SIZE_MAX

/*
 * Start the responder (port 0: any; -1: no responder, a port nothing listens on, held until
 * teardown so that responder_start() can take it later) and an output aimed at it, with
 * batch/memory/spool bytes (DEF: the fixture's defaults).
 */
static void start_with(struct fx *f, int port, const char *run, size_t batch, size_t mem,
                       size_t spool)
{
    const struct nwb__http_tuning t = fx_tuning();
    char err[256];

    if (port >= 0) {
        assert_int_equal(responder_start(&f->r, port), 0);
        port = f->r.port;
    } else {
        f->dead_fd = nwb_test_reserve_dead_port(&port);
        assert_true(f->dead_fd >= 0);
    }
    fx_settings(&f->s, port, f->dir, "nettest", run);
    f->s.batch_bytes = batch != DEF ? batch : f->s.batch_bytes;
    f->s.memory_bytes = mem != DEF ? mem : f->s.memory_bytes;
    f->s.spool_bytes = spool != DEF ? spool : f->s.spool_bytes;
    assert_int_equal(nwb__http_out_create_tuned(&f->s, &f->st, &t, &f->out, err, sizeof(err)), 0);
}

static void start(struct fx *f, int port, const char *run)
{
    start_with(f, port, run, DEF, DEF, DEF);
}

static void flush(struct fx *f)
{
    f->out->ops->commit(f->out, nwb_time_mono_ns(), 1);
}

static void test_http_out_200_releases_batch(void **state)
{
    struct fx *f = *state;
    struct fx_wait w;
    struct resp_request q;
    struct nwb__http_out_info info;
    char msgs[256];
    char want_host[64];

    start(f, 0, "00000000000000a1");
    snprintf(f->s.token, sizeof(f->s.token), "s3cret");
    assert_int_equal(fx_append(f->out, "alpha", 1), 0);
    assert_int_equal(fx_append(f->out, "beta", 2), 0);
    assert_int_equal(fx_append(f->out, "gamma 100%", 3), 0);
    assert_false(f->out->ops->settled(f->out));
    flush(f);
    w.o = f->out;
    w.st = &f->st;
    w.n = 1;
    assert_true(fx_pump(f->out, fx_sent_at_least, &w, 5000));
    assert_true(f->out->ops->settled(f->out));
    assert_int_equal(responder_count(&f->r), 1);
    q = responder_get(&f->r, 0);
    assert_string_equal(q.method_line, "POST /v1/log HTTP/1.1");
    snprintf(want_host, sizeof(want_host), "127.0.0.1:%d", f->r.port);
    assert_string_equal(q.host, want_host);
    assert_string_equal(q.ctype, "application/x-nwb-log-batch");
    assert_string_equal(q.program, "nettest");
    assert_string_equal(q.run, "00000000000000a1");
    assert_string_equal(q.seq, "1");
    assert_string_equal(q.auth, "Bearer s3cret");
    assert_int_equal(fx_batch_messages(q.body, q.body_len, msgs, sizeof(msgs)), 3);
    assert_string_equal(msgs, "alpha\nbeta\ngamma 100%");
    assert_int_equal(atomic_load(&f->st.batches_sent), 1);
    assert_int_equal(atomic_load(&f->st.records_written), 3);
    assert_int_equal(atomic_load(&f->st.connects), 1);
    assert_int_equal(atomic_load(&f->st.batches_resent), 0);
    nwb__http_out_info_get(f->out, &info);
    assert_int_equal(info.mem_batches, 0);
    assert_int_equal(info.mem_bytes, 0);
}

static void test_http_out_no_token_sends_no_authorization(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};

    start(f, 0, "00000000000000a2");
    assert_int_equal(fx_append(f->out, "x", 1), 0);
    flush(f);
    w.st = &f->st;
    w.n = 1;
    assert_true(fx_pump(f->out, fx_sent_at_least, &w, 5000));
    assert_string_equal(responder_get(&f->r, 0).auth, "");
}

static void test_http_out_503_then_200_resends_same_seq(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    struct resp_action busy = {503, "Retry-After: 0\r\n", 0, 0};
    struct resp_action limited = {429, NULL, 0, 0};
    char m0[64], m1[64], m2[64];

    start(f, 0, "00000000000000a3");
    responder_push(&f->r, busy);
    responder_push(&f->r, limited);
    assert_int_equal(fx_append(f->out, "keep me", 1), 0);
    flush(f);
    w.st = &f->st;
    w.n = 1;
    assert_true(fx_pump(f->out, fx_sent_at_least, &w, 5000));
    assert_int_equal(responder_count(&f->r), 3);
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(responder_get(&f->r, i).seq, "1");
        assert_string_equal(responder_get(&f->r, i).run, "00000000000000a3");
    }
    fx_batch_messages(responder_get(&f->r, 0).body, responder_get(&f->r, 0).body_len, m0,
                      sizeof(m0));
    fx_batch_messages(responder_get(&f->r, 1).body, responder_get(&f->r, 1).body_len, m1,
                      sizeof(m1));
    fx_batch_messages(responder_get(&f->r, 2).body, responder_get(&f->r, 2).body_len, m2,
                      sizeof(m2));
    assert_string_equal(m0, "keep me");
    assert_string_equal(m1, "keep me");
    assert_string_equal(m2, "keep me");
    assert_int_equal(atomic_load(&f->st.batches_sent), 1);
    assert_int_equal(atomic_load(&f->st.batches_resent), 2);
    assert_int_equal(atomic_load(&f->st.batches_dropped), 0);
    assert_int_equal(atomic_load(&f->st.records_written), 1);
}

static void test_http_out_retry_after_is_honoured(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    struct resp_action busy = {503, "Retry-After: 1\r\n", 0, 0};
    long long t0;
    long long waited;

    start(f, 0, "00000000000000a4");
    responder_push(&f->r, busy);
    assert_int_equal(fx_append(f->out, "later", 1), 0);
    flush(f);
    w.r = &f->r;
    w.n = 1;
    assert_true(fx_pump(f->out, fx_requests_at_least, &w, 5000));
    t0 = nwb_test_now_ms();
    w.st = &f->st;
    w.n = 1;
    assert_true(fx_pump(f->out, fx_sent_at_least, &w, 5000));
    waited = nwb_test_now_ms() - t0;
    /* One second asked for (the backoff alone would be 5-40 ms). */
    assert_true(waited >= 900);
    assert_true(waited < 3000);
    assert_int_equal(responder_count(&f->r), 2);
}

static void test_http_out_refused_then_up_delivers(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    struct nwb__http_out_info info;
    char msgs[256];
    int port;

    start(f, -1, "00000000000000a5");
    port = atoi(f->s.port);
    assert_int_equal(fx_append(f->out, "before", 1), 0);
    flush(f);
    w.o = f->out;
    w.n = 3;
    /* Several refused attempts, with growing delays, and nothing lost meanwhile. */
    assert_true(fx_pump(f->out, fx_failures_at_least, &w, 5000));
    assert_int_equal(atomic_load(&f->st.connects), 0);
    assert_false(f->out->ops->settled(f->out));
    nwb__http_out_info_get(f->out, &info);
    assert_int_equal(info.mem_batches, 1);
    assert_int_equal(fx_append(f->out, "during", 2), 0);
    flush(f);

    assert_int_equal(responder_start(&f->r, port), 0);
    w.st = &f->st;
    w.n = 2;
    assert_true(fx_pump(f->out, fx_sent_at_least, &w, 5000));
    assert_int_equal(responder_count(&f->r), 2);
    assert_string_equal(responder_get(&f->r, 0).seq, "1");
    assert_string_equal(responder_get(&f->r, 1).seq, "2");
    fx_batch_messages(responder_get(&f->r, 0).body, responder_get(&f->r, 0).body_len, msgs,
                      sizeof(msgs));
    assert_string_equal(msgs, "before");
    assert_int_equal(atomic_load(&f->st.records_written), 2);
    assert_true(f->out->ops->settled(f->out));
}

static void test_http_out_response_split_into_single_bytes_is_parsed(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    struct resp_action a = {200, "X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n", 0, 0};

    start(f, 0, "00000000000000a6");
    f->r.split_bytes = 1;
    for (int i = 0; i < 4; i++) {
        responder_push(&f->r, a);
    }
    for (int i = 0; i < 4; i++) {
        char m[32];

        snprintf(m, sizeof(m), "split %d", i);
        assert_int_equal(fx_append(f->out, m, (uint32_t)i), 0);
        flush(f);
    }
    w.st = &f->st;
    w.n = 4;
    assert_true(fx_pump(f->out, fx_sent_at_least, &w, 5000));
    assert_int_equal(responder_count(&f->r), 4);
    assert_int_equal(atomic_load(&f->st.connects), 1);
    assert_int_equal(atomic_load(&f->st.batches_resent), 0);
}

static void test_http_out_4xx_drops_batch_once_and_goes_on(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    struct resp_action bad = {400, NULL, 0, 0};
    struct nwb__http_out_info info;

    start(f, 0, "00000000000000a7");
    responder_push(&f->r, bad);
    assert_int_equal(fx_append(f->out, "rejected", 1), 0);
    flush(f);
    assert_int_equal(fx_append(f->out, "accepted", 2), 0);
    flush(f);
    w.st = &f->st;
    w.n = 1;
    assert_true(fx_pump(f->out, fx_sent_at_least, &w, 5000));
    /* Exactly one attempt for the rejected batch: never an infinite loop. */
    assert_int_equal(responder_count(&f->r), 2);
    assert_string_equal(responder_get(&f->r, 0).seq, "1");
    assert_string_equal(responder_get(&f->r, 1).seq, "2");
    assert_int_equal(atomic_load(&f->st.batches_dropped), 1);
    assert_int_equal(atomic_load(&f->st.batches_resent), 0);
    assert_int_equal(atomic_load(&f->st.records_written), 1);
    nwb__http_out_info_get(f->out, &info);
    assert_int_equal(info.rejected, 1);
    assert_true(f->out->ops->settled(f->out));
}

static void test_http_out_5xx_gives_up_after_limit(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    struct resp_action err = {500, NULL, 0, 0};

    start(f, 0, "00000000000000a8");
    for (int i = 0; i < 3; i++) {
        responder_push(&f->r, err); /* fx_tuning: hard_fail_max 3 */
    }
    assert_int_equal(fx_append(f->out, "poison", 1), 0);
    flush(f);
    assert_int_equal(fx_append(f->out, "fine", 2), 0);
    flush(f);
    w.st = &f->st;
    w.n = 1;
    assert_true(fx_pump(f->out, fx_sent_at_least, &w, 5000));
    assert_int_equal(responder_count(&f->r), 4);
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(responder_get(&f->r, i).seq, "1");
    }
    assert_string_equal(responder_get(&f->r, 3).seq, "2");
    assert_int_equal(atomic_load(&f->st.batches_dropped), 1);
    assert_int_equal(atomic_load(&f->st.batches_resent), 2);
}

static void test_http_out_no_response_times_out_and_resends(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    struct resp_action hang = {0, NULL, 1, 0};
    long long t0 = nwb_test_now_ms();

    start(f, 0, "00000000000000a9");
    responder_push(&f->r, hang);
    assert_int_equal(fx_append(f->out, "slow", 1), 0);
    flush(f);
    w.st = &f->st;
    w.n = 1;
    assert_true(fx_pump(f->out, fx_sent_at_least, &w, 8000));
    /* fx_tuning: 2 s response timeout, then a fresh connection. */
    assert_true(nwb_test_now_ms() - t0 >= 1900);
    assert_int_equal(responder_count(&f->r), 2);
    assert_string_equal(responder_get(&f->r, 1).seq, "1");
    assert_int_equal(atomic_load(&f->st.connects), 2);
    assert_int_equal(atomic_load(&f->st.batches_resent), 1);
}

static void test_http_out_close_without_answer_resends(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    struct resp_action drop = {0, NULL, 0, 1};

    start(f, 0, "00000000000000b1");
    responder_push(&f->r, drop);
    assert_int_equal(fx_append(f->out, "again", 1), 0);
    flush(f);
    w.st = &f->st;
    w.n = 1;
    assert_true(fx_pump(f->out, fx_sent_at_least, &w, 5000));
    assert_int_equal(responder_count(&f->r), 2);
    assert_string_equal(responder_get(&f->r, 0).seq, "1");
    assert_string_equal(responder_get(&f->r, 1).seq, "1");
    assert_int_equal(atomic_load(&f->st.batches_sent), 1);
}

static void test_http_out_keepalive_reuses_one_connection(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};

    start(f, 0, "00000000000000b2");
    for (int i = 0; i < 5; i++) {
        assert_int_equal(fx_append(f->out, "ka", (uint32_t)i), 0);
        flush(f);
        w.st = &f->st;
        w.n = (uint64_t)i + 1;
        assert_true(fx_pump(f->out, fx_sent_at_least, &w, 5000));
    }
    assert_int_equal(atomic_load(&f->st.connects), 1);
}

static void test_http_out_connection_close_reconnects_per_batch(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};

    start(f, 0, "00000000000000b3");
    f->r.close_always = 1;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(fx_append(f->out, "cc", (uint32_t)i), 0);
        flush(f);
    }
    w.st = &f->st;
    w.n = 3;
    assert_true(fx_pump(f->out, fx_sent_at_least, &w, 5000));
    assert_int_equal(atomic_load(&f->st.connects), 3);
    assert_int_equal(atomic_load(&f->st.batches_resent), 0);
}

static void test_http_out_batches_follow_seq_and_record_order(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    char *msgs = malloc(1u << 20);
    int next = 0;
    size_t nreq;

    assert_non_null(msgs);
    start_with(f, 0, "00000000000000b4", 1024, DEF, DEF); /* about 16 records a batch */
    for (int i = 0; i < 2000; i++) {
        char m[48];

        snprintf(m, sizeof(m), "ordered record number %06d", i);
        assert_int_equal(fx_append(f->out, m, (uint32_t)i), 0);
    }
    flush(f);
    w.o = f->out;
    assert_true(fx_pump(f->out, fx_settled, &w, 10000));
    nreq = responder_count(&f->r);
    assert_true(nreq > 50);
    for (size_t i = 0; i < nreq; i++) {
        const struct resp_request q = responder_get(&f->r, i);
        char want[32];
        const char *p;
        int n;

        snprintf(want, sizeof(want), "%zu", i + 1);
        assert_string_equal(q.seq, want);
        assert_true(q.body_len <= 1024);
        n = fx_batch_messages(q.body, q.body_len, msgs, 1u << 20);
        assert_true(n > 0);
        for (p = msgs; p != NULL; p = strchr(p, '\n') != NULL ? strchr(p, '\n') + 1 : NULL) {
            int got = -1;

            assert_int_equal(sscanf(p, "ordered record number %d", &got), 1);
            assert_int_equal(got, next);
            next++;
        }
    }
    assert_int_equal(next, 2000);
    assert_int_equal(atomic_load(&f->st.records_written), 2000);
    free(msgs);
}

static void test_http_out_flush_interval_seals_old_records(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};

    start(f, 0, "00000000000000b5");
    /* No forced commit: the 20 ms flush interval alone must get it out. */
    assert_int_equal(fx_append(f->out, "aged", 1), 0);
    w.st = &f->st;
    w.n = 1;
    assert_true(fx_pump(f->out, fx_sent_at_least, &w, 5000));
    assert_int_equal(responder_count(&f->r), 1);
}

static void test_http_out_memory_cap_moves_batches_to_spool(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    struct nwb__http_out_info info;
    char spool[600];
    int port;
    int next = 0;

    start_with(f, -1, "00000000000000b6", 512, 4096, DEF);
    port = atoi(f->s.port);
    for (int i = 0; i < 400; i++) {
        char m[48];

        snprintf(m, sizeof(m), "spilled record %05d", i);
        assert_int_equal(fx_append(f->out, m, (uint32_t)i), 0);
        if (i % 50 == 0) {
            flush(f);
            f->out->ops->service(f->out, 0, nwb_time_mono_ns());
        }
    }
    flush(f);
    nwb__http_out_info_get(f->out, &info);
    assert_true(info.mem_bytes <= f->s.memory_bytes);
    assert_true(info.spool_batches > 0);
    assert_true(atomic_load(&f->st.batches_spooled) >= info.spool_batches);
    snprintf(spool, sizeof(spool), "%s/spool", f->dir);
    assert_true(fx_count_files(spool, ".spool", NULL) >= 1);

    assert_int_equal(responder_start(&f->r, port), 0);
    w.o = f->out;
    assert_true(fx_pump(f->out, fx_nothing_pending, &w, 10000));
    /* Spool first, then memory: one stream in seq and record order. */
    for (size_t i = 0; i < responder_count(&f->r); i++) {
        const struct resp_request q = responder_get(&f->r, i);
        char *msgs = malloc(65536);
        char want[32];

        assert_non_null(msgs);
        snprintf(want, sizeof(want), "%zu", i + 1);
        assert_string_equal(q.seq, want);
        assert_true(fx_batch_messages(q.body, q.body_len, msgs, 65536) > 0);
        for (const char *p = msgs; p != NULL;
             p = strchr(p, '\n') != NULL ? strchr(p, '\n') + 1 : NULL) {
            int got = -1;

            assert_int_equal(sscanf(p, "spilled record %d", &got), 1);
            assert_int_equal(got, next);
            next++;
        }
        free(msgs);
    }
    assert_int_equal(next, 400);
    /* Acknowledged spool files are deleted. */
    assert_int_equal(fx_count_files(spool, ".spool", NULL), 0);
}

static void test_http_out_append_full_without_spool_backpressures(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    int port;
    int full_at = -1;

    start_with(f, -1, "00000000000000b7", 512, 4096, 0); /* no spool at all */
    port = atoi(f->s.port);
    for (int i = 0; i < 1000 && full_at < 0; i++) {
        if (fx_append(f->out, "backpressure record with some text in it", (uint32_t)i) ==
            NWB_EFULL) {
            full_at = i;
        }
    }
    assert_true(full_at > 0);
    assert_true(full_at < 1000);
    assert_int_equal(atomic_load(&f->st.batches_dropped), 0);
    assert_int_equal(responder_start(&f->r, port), 0);
    flush(f);
    w.o = f->out;
    assert_true(fx_pump(f->out, fx_settled, &w, 10000));
    /* Room again once delivered. */
    assert_int_equal(fx_append(f->out, "after", 1), 0);
    assert_int_equal(atomic_load(&f->st.records_written), (uint64_t)full_at);
}

static void test_http_out_close_spools_and_next_run_delivers(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    struct nwb__settings s2;
    struct nwb__stats st2;
    struct nwb__out *o2 = NULL;
    const struct nwb__http_tuning t = fx_tuning();
    char spool[600];
    uint64_t t0;
    int port;
    int got_old = 0;
    int got_new = 0;

    memset(&st2, 0, sizeof(st2));
    start(f, -1, "00000000000000c1");
    port = atoi(f->s.port);
    for (int i = 0; i < 3; i++) {
        char m[32];

        snprintf(m, sizeof(m), "old run %d", i);
        assert_int_equal(fx_append(f->out, m, (uint32_t)i), 0);
        flush(f);
    }
    t0 = nwb_time_mono_ns();
    f->out->ops->close(f->out, t0 + 5000ull * 1000000u);
    /* The server is down: close spools at the first failure instead of waiting 5 s. */
    assert_true(nwb_time_mono_ns() - t0 < 2000ull * 1000000u);
    assert_true(f->out->ops->settled(f->out));
    assert_int_equal(atomic_load(&f->st.batches_spooled), 3);
    assert_int_equal(atomic_load(&f->st.batches_dropped), 0);
    f->out->ops->destroy(f->out);
    f->out = NULL;
    snprintf(spool, sizeof(spool), "%s/spool", f->dir);
    assert_int_equal(fx_count_files(spool, ".spool", NULL), 1);

    /* The next run of the same program, with the server up. */
    assert_int_equal(responder_start(&f->r, port), 0);
    fx_settings(&s2, port, f->dir, "nettest", "00000000000000c2");
    assert_int_equal(nwb__http_out_create_tuned(&s2, &st2, &t, &o2, NULL, 0), 0);
    assert_int_equal(fx_append(o2, "new run", 1), 0);
    o2->ops->commit(o2, nwb_time_mono_ns(), 1);
    w.o = o2;
    assert_true(fx_pump(o2, fx_nothing_pending, &w, 10000));
    for (size_t i = 0; i < responder_count(&f->r); i++) {
        const struct resp_request q = responder_get(&f->r, i);

        assert_string_equal(q.program, "nettest");
        if (strcmp(q.run, "00000000000000c1") == 0) {
            char want[16];

            /* Original headers: the old run id and its seqs, in order. */
            snprintf(want, sizeof(want), "%d", ++got_old);
            assert_string_equal(q.seq, want);
        } else {
            assert_string_equal(q.run, "00000000000000c2");
            assert_string_equal(q.seq, "1");
            got_new++;
        }
    }
    assert_int_equal(got_old, 3);
    assert_int_equal(got_new, 1);
    assert_int_equal(fx_count_files(spool, ".spool", NULL), 0);
    assert_int_equal(atomic_load(&st2.batches_sent), 4);
    assert_int_equal(atomic_load(&st2.records_written), 1); /* only this run's records */
    o2->ops->destroy(o2);
}

static void test_http_out_live_spool_is_not_taken_by_another_run(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    struct nwb__settings s2;
    struct nwb__stats st2;
    struct nwb__out *o2 = NULL;
    const struct nwb__http_tuning t = fx_tuning();
    struct nwb__http_out_info info;
    int port;

    memset(&st2, 0, sizeof(st2));
    /* memory_bytes 0: every sealed batch goes to the spool at once. */
    start_with(f, -1, "00000000000000d1", DEF, 0, DEF);
    port = atoi(f->s.port);
    assert_int_equal(fx_append(f->out, "owned by a live run", 1), 0);
    flush(f);
    nwb__http_out_info_get(f->out, &info);
    assert_int_equal(info.spool_batches, 1);

    assert_int_equal(responder_start(&f->r, port), 0);
    fx_settings(&s2, port, f->dir, "nettest", "00000000000000d2");
    assert_int_equal(nwb__http_out_create_tuned(&s2, &st2, &t, &o2, NULL, 0), 0);
    assert_int_equal(fx_append(o2, "second run", 1), 0);
    o2->ops->commit(o2, nwb_time_mono_ns(), 1);
    w.o = o2;
    assert_true(fx_pump(o2, fx_nothing_pending, &w, 5000));
    /* The first run holds its spool file's lock: the second run sent only its own batch. */
    assert_int_equal(responder_count(&f->r), 1);
    assert_string_equal(responder_get(&f->r, 0).run, "00000000000000d2");
    o2->ops->destroy(o2);

    /* The first run delivers its own spooled batch once the server answers. */
    w.o = f->out;
    assert_true(fx_pump(f->out, fx_nothing_pending, &w, 5000));
    assert_int_equal(responder_count(&f->r), 2);
    assert_string_equal(responder_get(&f->r, 1).run, "00000000000000d1");
}

static void test_http_out_spool_cap_drops_oldest_and_counts(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    struct nwb__http_out_info info;
    char spool[600];
    long long bytes = 0;
    uint64_t dropped;
    uint64_t prev = 0;
    int port;
    const int total = 300;

    start_with(f, -1, "00000000000000e1", 256, 0, 16384);
    port = atoi(f->s.port);
    snprintf(spool, sizeof(spool), "%s/spool", f->dir);
    for (int i = 0; i < total; i++) {
        char m[96];

        /* One record a batch: about 140 bytes, a second would pass the 256-byte batch. */
        snprintf(m, sizeof(m),
                 "capped batch %04d with enough text to make a second record "
                 "overflow",
                 i);
        assert_int_equal(fx_append(f->out, m, (uint32_t)i), 0);
        flush(f);
        fx_count_files(spool, ".spool", &bytes);
        assert_true(bytes <= 16384); /* the cap holds at every step */
    }
    dropped = atomic_load(&f->st.batches_dropped);
    assert_true(dropped > 0);
    nwb__http_out_info_get(f->out, &info);
    assert_true(info.spool_bytes <= 16384);
    assert_int_equal(info.spool_batches + dropped, (uint64_t)total);

    assert_int_equal(responder_start(&f->r, port), 0);
    w.o = f->out;
    assert_true(fx_pump(f->out, fx_nothing_pending, &w, 10000));
    /* What arrives is the newest part, still in seq order, ending with the last batch. */
    assert_int_equal(responder_count(&f->r), (size_t)info.spool_batches);
    for (size_t i = 0; i < responder_count(&f->r); i++) {
        const uint64_t seq = strtoull(responder_get(&f->r, i).seq, NULL, 10);

        assert_true(seq > prev);
        prev = seq;
    }
    assert_int_equal(prev, (uint64_t)total);
    assert_int_equal(strtoull(responder_get(&f->r, 0).seq, NULL, 10), dropped + 1);
}

static void test_http_out_damaged_old_spool_delivers_good_prefix(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    struct nwb__spool_ident id;
    struct nwb__spool *sp = NULL;
    char spool[600], name[300], path[1000];
    DIR *d;
    struct dirent *de;
    struct stat st;

    /* An earlier run left three batches; its process died while writing the third. */
    memset(&id, 0, sizeof(id));
    snprintf(id.program, sizeof(id.program), "nettest");
    snprintf(id.run, sizeof(id.run), "00000000000000c9");
    id.start_ns = 1;
    snprintf(spool, sizeof(spool), "%s/spool", f->dir);
    assert_int_equal(nwb__spool_create(spool, &id, 1u << 20, &sp), 0);
    for (uint64_t i = 1; i <= 3; i++) {
        uint8_t buf[128];
        nwb_log_record_t r;
        uint64_t dropped = 0;
        int lost = 0;
        size_t len;

        memset(&r, 0, sizeof(r));
        r.msg = "from a dead run";
        r.msg_len = 15;
        nwb_log_batch_header_write(buf);
        len = 16 + nwb_log_record_encode(buf + 16, &r);
        nwb_log_batch_header_finish(buf, 1, (uint32_t)(len - 16));
        assert_int_equal(nwb__spool_append(sp, i, buf, (uint32_t)len, &dropped, &lost), 0);
    }
    nwb__spool_destroy(sp);
    d = opendir(spool);
    assert_non_null(d);
    name[0] = '\0';
    while ((de = readdir(d)) != NULL) {
        if (strstr(de->d_name, ".spool") != NULL) {
            snprintf(name, sizeof(name), "%s", de->d_name);
        }
    }
    closedir(d);
    snprintf(path, sizeof(path), "%s/%s", spool, name);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size - 5), 0);

    start(f, 0, "00000000000000ca");
    w.o = f->out;
    assert_true(fx_pump(f->out, fx_nothing_pending, &w, 5000));
    assert_int_equal(responder_count(&f->r), 2);
    assert_string_equal(responder_get(&f->r, 0).run, "00000000000000c9");
    assert_string_equal(responder_get(&f->r, 0).seq, "1");
    assert_string_equal(responder_get(&f->r, 1).seq, "2");
    /* Delivered up to the damage, then deleted: the bad tail is never sent. */
    assert_int_equal(fx_count_files(spool, ".spool", NULL), 0);
}

static void test_http_out_in_flight_batch_dropped_by_cap_is_not_resent(void **state)
{
    struct fx *f = *state;
    struct fx_wait w = {0};
    struct resp_action hang = {0, NULL, 1, 0};
    uint64_t prev = 0;
    const int total = 301;

    start_with(f, 0, "00000000000000cb", 256, 0, 16384);
    responder_push(&f->r, hang);
    assert_int_equal(fx_append(f->out, "first, then hanging", 1), 0);
    flush(f);
    w.r = &f->r;
    w.n = 1;
    assert_true(fx_pump(f->out, fx_requests_at_least, &w, 5000));
    /* While seq 1 waits for its answer, the spool cap drops its segment. */
    for (int i = 2; i <= total; i++) {
        char m[96];

        snprintf(m, sizeof(m),
                 "pressure batch %04d with enough text to make a second record "
                 "overflow",
                 i);
        assert_int_equal(fx_append(f->out, m, (uint32_t)i), 0);
        flush(f);
    }
    assert_true(atomic_load(&f->st.batches_dropped) > 0);
    w.o = f->out;
    assert_true(fx_pump(f->out, fx_nothing_pending, &w, 10000));
    assert_string_equal(responder_get(&f->r, 0).seq, "1");
    for (size_t i = 1; i < responder_count(&f->r); i++) {
        const uint64_t seq = strtoull(responder_get(&f->r, i).seq, NULL, 10);

        /* Never seq 1 again, never out of order. */
        assert_true(seq > prev);
        assert_true(seq > 1);
        prev = seq;
    }
    assert_int_equal(prev, (uint64_t)total);
    assert_int_equal(atomic_load(&f->st.batches_sent) + atomic_load(&f->st.batches_dropped),
                     (uint64_t)total);
}

static void test_http_out_bad_settings_are_rejected(void **state)
{
    struct fx *f = *state;
    struct nwb__out *o = NULL;
    char err[256];

    fx_settings(&f->s, 7650, f->dir, "nettest", "00000000000000f1");
    snprintf(f->s.port, sizeof(f->s.port), "0");
    assert_int_equal(nwb__http_out_create(&f->s, &f->st, &o, err, sizeof(err)), NWB_ECONFIG);
    assert_null(o);
    assert_non_null(strstr(err, "port"));
    snprintf(f->s.port, sizeof(f->s.port), "65536");
    assert_int_equal(nwb__http_out_create(&f->s, &f->st, &o, err, sizeof(err)), NWB_ECONFIG);
    snprintf(f->s.port, sizeof(f->s.port), "7650");
    snprintf(f->s.token, sizeof(f->s.token), "bad\r\nX-Injected: 1");
    assert_int_equal(nwb__http_out_create(&f->s, &f->st, &o, err, sizeof(err)), NWB_ECONFIG);
    assert_non_null(strstr(err, "token"));
    f->s.token[0] = '\0';
    snprintf(f->s.run_id, sizeof(f->s.run_id), "a b");
    assert_int_equal(nwb__http_out_create(&f->s, &f->st, &o, err, sizeof(err)), NWB_ECONFIG);
    f->s.host[0] = '\0';
    snprintf(f->s.run_id, sizeof(f->s.run_id), "00000000000000f1");
    assert_int_equal(nwb__http_out_create(&f->s, &f->st, &o, err, sizeof(err)), NWB_ECONFIG);
    assert_null(o);
}

/* ---- the codec on its own ---- */

static void test_http_request_head_has_every_header(void **state)
{
    char head[NWB_NET_HEAD_MAX];
    int n;

    (void)state;
    n = nwb__http_request_head(head, sizeof(head), "::1", "7650", "game", "0123456789abcdef", 42,
                               1234, "tok");
    assert_true(n > 0);
    assert_int_equal((size_t)n, strlen(head));
    assert_non_null(strstr(head, "POST /v1/log HTTP/1.1\r\n"));
    assert_non_null(strstr(head, "\r\nHost: [::1]:7650\r\n"));
    assert_non_null(strstr(head, "\r\nContent-Type: application/x-nwb-log-batch\r\n"));
    assert_non_null(strstr(head, "\r\nContent-Length: 1234\r\n"));
    assert_non_null(strstr(head, "\r\nX-NWB-Program: game\r\n"));
    assert_non_null(strstr(head, "\r\nX-NWB-Run: 0123456789abcdef\r\n"));
    assert_non_null(strstr(head, "\r\nX-NWB-Seq: 42\r\n"));
    assert_non_null(strstr(head, "\r\nAuthorization: Bearer tok\r\n"));
    assert_int_equal(strcmp(head + n - 4, "\r\n\r\n"), 0);
    n = nwb__http_request_head(head, sizeof(head), "127.0.0.1", "1", "g", "r", 1, 0, "");
    assert_true(n > 0);
    assert_null(strstr(head, "Authorization"));
    assert_int_equal(nwb__http_request_head(head, 40, "127.0.0.1", "1", "g", "r", 1, 0, NULL),
                     NWB_ETOOBIG);
}

static void feed_bytewise(struct nwb__http_resp *r, const char *text, size_t *consumed)
{
    size_t total = 0;
    const size_t len = strlen(text);

    while (total < len && !r->complete) {
        size_t used = 0;

        assert_int_equal(nwb__http_resp_feed(r, text + total, 1, &used), 0);
        total += used;
    }
    *consumed = total;
}

static void test_http_resp_parses_across_single_byte_reads(void **state)
{
    struct nwb__http_resp r;
    size_t used = 0;
    const char *text = "HTTP/1.1 100 Continue\r\n\r\n"
                       "HTTP/1.1 503 Service Unavailable\r\nretry-AFTER: 7\r\n"
                       "Content-Length: 5\r\n\r\nbusy!";

    (void)state;
    nwb__http_resp_init(&r);
    feed_bytewise(&r, text, &used);
    assert_true(r.complete);
    assert_int_equal(used, strlen(text));
    assert_int_equal(r.status, 503);
    assert_int_equal(r.retry_after_s, 7);
    assert_true(r.keep_alive);
}

static void test_http_resp_stops_after_one_response(void **state)
{
    struct nwb__http_resp r;
    size_t used = 0;
    const char *two =
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        "HTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno";
    const size_t first = strlen("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");

    (void)state;
    nwb__http_resp_init(&r);
    assert_int_equal(nwb__http_resp_feed(&r, two, strlen(two), &used), 0);
    assert_true(r.complete);
    assert_int_equal(r.status, 200);
    assert_int_equal(used, first);
    assert_int_equal(r.retry_after_s, -1);
    nwb__http_resp_next(&r);
    assert_int_equal(nwb__http_resp_feed(&r, two + first, strlen(two) - first, &used), 0);
    assert_true(r.complete);
    assert_int_equal(r.status, 400);
    assert_false(r.keep_alive);
}

static void test_http_resp_chunked_and_eof_bodies(void **state)
{
    struct nwb__http_resp r;
    size_t used = 0;
    const char *chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "3\r\nabc\r\n0\r\n\r\n";
    const char *eof = "HTTP/1.1 200 OK\r\n\r\nbody until the end";

    (void)state;
    nwb__http_resp_init(&r);
    feed_bytewise(&r, chunked, &used);
    assert_true(r.complete);
    assert_int_equal(used, strlen(chunked));
    nwb__http_resp_init(&r);
    assert_int_equal(nwb__http_resp_feed(&r, eof, strlen(eof), &used), 0);
    assert_false(r.complete);
    assert_int_equal(nwb__http_resp_eof(&r), 0);
    assert_true(r.complete);
    assert_int_equal(r.status, 200);
    assert_false(r.keep_alive);
}

static void test_http_resp_rejects_garbage_and_truncation(void **state)
{
    struct nwb__http_resp r;
    size_t used = 0;
    const char *junk = "SSH-2.0-OpenSSH\r\n";
    const char *cut = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
    const char *date = "HTTP/1.1 429 Too Many\r\nRetry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n"
                       "Content-Length: 0\r\n\r\n";

    (void)state;
    nwb__http_resp_init(&r);
    assert_int_equal(nwb__http_resp_feed(&r, junk, strlen(junk), &used), NWB_EPROTO);
    nwb__http_resp_init(&r);
    assert_int_equal(nwb__http_resp_eof(&r), NWB_EPROTO); /* closed before any byte */
    nwb__http_resp_init(&r);
    assert_int_equal(nwb__http_resp_feed(&r, cut, strlen(cut), &used), 0);
    assert_int_equal(nwb__http_resp_eof(&r), NWB_EPROTO);
    assert_false(r.complete);
    nwb__http_resp_init(&r);
    assert_int_equal(nwb__http_resp_feed(&r, date, strlen(date), &used), 0);
    assert_true(r.complete);
    assert_int_equal(r.retry_after_s, -1); /* an HTTP-date: our own backoff applies */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_http_out_200_releases_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_out_no_token_sends_no_authorization, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_out_503_then_200_resends_same_seq, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_out_retry_after_is_honoured, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_out_refused_then_up_delivers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_out_response_split_into_single_bytes_is_parsed,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_out_4xx_drops_batch_once_and_goes_on, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_out_5xx_gives_up_after_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_out_no_response_times_out_and_resends, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_out_close_without_answer_resends, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_out_keepalive_reuses_one_connection, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_out_connection_close_reconnects_per_batch, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_out_batches_follow_seq_and_record_order, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_out_flush_interval_seals_old_records, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_out_memory_cap_moves_batches_to_spool, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_out_append_full_without_spool_backpressures,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_out_close_spools_and_next_run_delivers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_out_live_spool_is_not_taken_by_another_run, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_out_spool_cap_drops_oldest_and_counts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_out_damaged_old_spool_delivers_good_prefix, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_out_in_flight_batch_dropped_by_cap_is_not_resent,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_out_bad_settings_are_rejected, setup, teardown),
        cmocka_unit_test(test_http_request_head_has_every_header),
        cmocka_unit_test(test_http_resp_parses_across_single_byte_reads),
        cmocka_unit_test(test_http_resp_stops_after_one_response),
        cmocka_unit_test(test_http_resp_chunked_and_eof_bodies),
        cmocka_unit_test(test_http_resp_rejects_garbage_and_truncation),
    };

    return cmocka_run_group_tests_name("client.http_out", tests, NULL, NULL);
}
