/* SPDX-License-Identifier: MIT */
/*
 * test_worker.c - the worker end to end through the standalone file output:
 * 4 threads x 25,000 records arrive exactly once and in per-thread order,
 * destroy drains everything, flush makes records visible (and times out
 * when the output cannot take them), exited threads' rings are freed.
 */
#define _GNU_SOURCE
#undef NWB_FINAL
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "nwb/client.h"
#include "nwb/log.h"
#include "nwb/log_line.h"

#include "test_core_capture.h"
#include "test_support.h"

#define THREADS    4
#define PER_THREAD 25000

struct fixture {
    char dir[512];
    nwb_client_t *client;
    char run[17];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("worker", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    nwb_client_destroy(f->client);
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

static void start_standalone(struct fixture *f, const char *program)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    char err[256] = "";

    cfg.mode = NWB_CLIENT_MODE_STANDALONE;
    cfg.log_dir = f->dir;
    cfg.program = program;
    cfg.console = 0;
    cfg.full_policy = NWB_CLIENT_FULL_BLOCK; /* these tests count every record: never drop */
    cfg.block_timeout_us = 60u * 1000u * 1000u;
    assert_int_equal(nwb_client_create(&cfg, &f->client, err, sizeof(err)), 0);
    snprintf(f->run, sizeof(f->run), "%s", nwb_client_run_id(f->client));
}

static char *read_log(struct fixture *f, const char *program, size_t *len)
{
    char path[1024];

    assert_int_equal(nwb_test_find_run_log(f->dir, program, f->run, path, sizeof(path)), 0);
    return nwb_test_read_file(path, len);
}

struct producer_arg {
    int index;
};

static void *producer_main(void *arg)
{
    const struct producer_arg *pa = arg;

    for (int i = 0; i < PER_THREAD; i++) {
        NWB_LOGGER_INFO("t=%d i=%d", pa->index, i);
    }
    return NULL;
}

static void test_four_threads_arrive_exactly_once_in_thread_order(void **state)
{
    struct fixture *f = *state;
    struct producer_arg args[THREADS];
    pthread_t threads[THREADS];
    int next[THREADS] = {0};
    unsigned long long tid_of[THREADS] = {0};
    nwb_client_stats_t st;
    size_t len = 0;
    size_t lines = 0;
    char *text;
    char *save = NULL;

    start_standalone(f, "workertest");
    for (int k = 0; k < THREADS; k++) {
        args[k].index = k;
        assert_int_equal(pthread_create(&threads[k], NULL, producer_main, &args[k]), 0);
    }
    for (int k = 0; k < THREADS; k++) {
        assert_int_equal(pthread_join(threads[k], NULL), 0);
    }
    assert_int_equal(nwb_client_flush(f->client, 60000), 0);
    nwb_client_stats_get(f->client, &st);
    assert_int_equal(st.records_accepted, THREADS * PER_THREAD);
    assert_int_equal(st.records_dropped, 0);
    assert_int_equal(st.records_written, THREADS * PER_THREAD);
    assert_int_equal(st.write_errors, 0);

    text = read_log(f, "workertest", &len);
    assert_non_null(text);
    for (char *line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char level[16];
        unsigned long long tid;
        const char *msg = strstr(line, ": t=");
        int t = -1;
        int i = -1;

        lines++;
        assert_int_equal(sscanf(line, "%*s %15s %llu", level, &tid), 2);
        assert_string_equal(level, "INFO");
        assert_non_null(msg);
        assert_int_equal(sscanf(msg, ": t=%d i=%d", &t, &i), 2);
        assert_true(t >= 0 && t < THREADS);
        if (i != next[t]) {
            print_error("thread %d: got record %d, expected %d\n", t, i, next[t]);
        }
        assert_int_equal(i, next[t]); /* exactly once, in order */
        next[t]++;
        if (tid_of[t] == 0) {
            tid_of[t] = tid;
        }
        assert_int_equal(tid, tid_of[t]); /* one OS thread id per producer */
    }
    assert_int_equal(lines, THREADS * PER_THREAD);
    for (int k = 0; k < THREADS; k++) {
        assert_int_equal(next[k], PER_THREAD);
        for (int j = k + 1; j < THREADS; j++) {
            assert_true(tid_of[k] != tid_of[j]);
        }
    }
    free(text);
}

static void test_destroy_drains_everything_accepted(void **state)
{
    struct fixture *f = *state;
    size_t len = 0;
    size_t lines = 0;
    char *text;
    char want[64];

    start_standalone(f, "draintest");
    for (int i = 0; i < 20000; i++) {
        NWB_LOGGER_INFO("drain %d", i);
    }
    nwb_client_destroy(f->client); /* no flush first */
    f->client = NULL;
    text = read_log(f, "draintest", &len);
    assert_non_null(text);
    for (size_t i = 0; i < len; i++) {
        lines += text[i] == '\n';
    }
    assert_int_equal(lines, 20000);
    snprintf(want, sizeof(want), ": drain %d\n", 19999);
    assert_non_null(strstr(text, want));
    free(text);
}

static void test_flush_makes_records_visible_before_destroy(void **state)
{
    struct fixture *f = *state;
    char *text;
    char tname[16];

    test_thread_name(tname); /* this thread's lines show it beside the tid */
    start_standalone(f, "flushtest");
    for (int round = 0; round < 3; round++) {
        char want[64];

        NWB_LOGGER_WARNING("flushed %d", round);
        assert_int_equal(nwb_client_flush(f->client, 10000), 0);
        text = read_log(f, "flushtest", NULL);
        assert_non_null(text);
        snprintf(want, sizeof(want),
                 "WARNING %llu[%s] flushtest test_worker.c:", (unsigned long long)test_gettid(),
                 tname);
        assert_non_null(strstr(text, want));
        snprintf(want, sizeof(want), ": flushed %d\n", round);
        assert_non_null(strstr(text, want));
        free(text);
    }
}

static void test_flush_times_out_while_the_output_is_full(void **state)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *c = cap_client(&cfg);
    uint64_t t0;

    (void)state;
    assert_non_null(c);
    cap_gate(1);
    NWB_LOGGER_INFO("held %d", 1);
    t0 = nwb_time_mono_ns();
    assert_int_equal(nwb_client_flush(c, 100), NWB_ETIMEOUT);
    assert_true(nwb_time_mono_ns() - t0 >= 100u * 1000u * 1000u);
    assert_int_equal(cap_count(), 0);
    cap_gate(0);
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    assert_int_equal(cap_count(), 1);
    nwb_client_destroy(c);
    cap_free();
}

static void *log_b1(void *arg)
{
    (void)arg;
    NWB_LOGGER_INFO("b1");
    return NULL;
}

static void test_a_round_merges_threads_by_time(void **state)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *c = cap_client(&cfg);
    pthread_t t;

    (void)state;
    assert_non_null(c);
    cap_gate(1); /* everything waits in the rings, then one round takes it */
    NWB_LOGGER_INFO("a1");
    assert_int_equal(pthread_create(&t, NULL, log_b1, NULL), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    NWB_LOGGER_INFO("a2");
    cap_gate(0);
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    assert_int_equal(cap_count(), 3);
    assert_string_equal(cap_get(0)->msg, "a1");
    assert_string_equal(cap_get(1)->msg, "b1");
    assert_string_equal(cap_get(2)->msg, "a2");
    assert_true(cap_get(0)->rec.time_ns <= cap_get(1)->rec.time_ns);
    assert_true(cap_get(1)->rec.time_ns <= cap_get(2)->rec.time_ns);
    nwb_client_destroy(c);
    cap_free();
}

static void *short_lived_main(void *arg)
{
    const int index = *(const int *)arg;

    for (int i = 0; i < 100; i++) {
        NWB_LOGGER_INFO("short %d %d", index, i);
    }
    return NULL;
}

static void test_exited_threads_rings_are_drained_then_freed(void **state)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *c = cap_client(&cfg);
    int index[40];
    nwb_client_stats_t st;

    (void)state;
    assert_non_null(c);
    NWB_LOGGER_INFO("main %d", 0); /* this thread's ring stays */
    for (int k = 0; k < 40; k++) {
        pthread_t t;

        index[k] = k;
        assert_int_equal(pthread_create(&t, NULL, short_lived_main, &index[k]), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
    }
    /* A round drains, then frees closed rings, then answers the flush. */
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    assert_int_equal(nwb__client_ring_count(c), 1);
    assert_int_equal(cap_count(), 1 + 40 * 100);
    nwb_client_stats_get(c, &st);
    assert_int_equal(st.records_accepted, 1 + 40 * 100); /* freed rings' counters are kept */
    assert_int_equal(st.records_dropped, 0);
    nwb_client_destroy(c);
    cap_free();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_four_threads_arrive_exactly_once_in_thread_order,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_drains_everything_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_makes_records_visible_before_destroy, setup,
                                        teardown),
        cmocka_unit_test(test_flush_times_out_while_the_output_is_full),
        cmocka_unit_test(test_a_round_merges_threads_by_time),
        cmocka_unit_test(test_exited_threads_rings_are_drained_then_freed),
    };

    return cmocka_run_group_tests_name("client.worker", tests, NULL, NULL);
}
