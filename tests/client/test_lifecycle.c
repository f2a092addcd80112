/* SPDX-License-Identifier: MIT */
/*
 * test_lifecycle.c - the client's life and death: destroy while threads
 * keep logging is memory safe and later calls go to stderr, every failed
 * allocation in create unwinds cleanly, FATAL flushes before abort(), and a
 * thread that logged to one client follows the next one.
 */
#define _GNU_SOURCE
#undef NWB_FINAL
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "nwb/alloc.h"
#include "nwb/client.h"
#include "nwb/log.h"
#include "nwb/log_line.h"

#include "test_core_capture.h"
#include "test_support.h"

struct fixture {
    char dir[512];
    char errpath[600];
    int saved_stderr;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("lifecycle", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->errpath, sizeof(f->errpath), "%s/stderr.txt", f->dir);
    f->saved_stderr = -1;
    *state = f;
    return 0;
}

static void stderr_capture(struct fixture *f)
{
    int fd = open(f->errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    assert_true(fd >= 0);
    fflush(stderr);
    f->saved_stderr = dup(STDERR_FILENO);
    assert_true(dup2(fd, STDERR_FILENO) >= 0);
    close(fd);
}

static void stderr_restore(struct fixture *f)
{
    if (f->saved_stderr >= 0) {
        fflush(stderr);
        dup2(f->saved_stderr, STDERR_FILENO);
        close(f->saved_stderr);
        f->saved_stderr = -1;
    }
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    stderr_restore(f);
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* ---- destroy while others log ---- */

struct racer {
    int index;
    atomic_int *destroyed;
    atomic_int after; /* calls made after destroy returned */
    atomic_int total;
};

static void *racer_main(void *arg)
{
    struct racer *r = arg;
    const uint64_t deadline = nwb_time_mono_ns() + 20ull * 1000000000u;

    for (int i = 0; nwb_time_mono_ns() < deadline; i++) {
        const int gone = atomic_load(r->destroyed);

        NWB_LOGGER_INFO("racer %d seq %d", r->index, i);
        if (i % 7 == 0) {
            NWB_LOGGER_WARNING("raw racer line");
        }
        atomic_fetch_add(&r->total, 1);
        if (gone && atomic_fetch_add(&r->after, 1) >= 200) {
            break;
        }
    }
    return NULL;
}

static void test_destroy_while_threads_log_is_safe_and_later_calls_reach_stderr(void **state)
{
    struct fixture *f = *state;
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *c;
    atomic_int destroyed = 0;
    struct racer racers[3];
    pthread_t threads[3];
    int last[3] = {-1, -1, -1};
    char *err_text;

    stderr_capture(f);
    cfg.ring_bytes = 16384; /* small: drops and drop notes happen too */
    c = cap_client(&cfg);
    assert_non_null(c);
    for (int k = 0; k < 3; k++) {
        racers[k].index = k;
        racers[k].destroyed = &destroyed;
        atomic_init(&racers[k].after, 0);
        atomic_init(&racers[k].total, 0);
        assert_int_equal(pthread_create(&threads[k], NULL, racer_main, &racers[k]), 0);
    }
    for (int k = 0; k < 3; k++) { /* everyone is logging before the destroy */
        while (atomic_load(&racers[k].total) < 1000) {
            sched_yield();
        }
    }
    nwb_client_destroy(c);
    atomic_store(&destroyed, 1);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(pthread_join(threads[k], NULL), 0);
    }
    stderr_restore(f);

    /* What the client took is intact and in per-thread order; gaps carry drop notes. */
    assert_true(cap_count() > 0);
    for (size_t i = 0; i < cap_count(); i++) {
        const struct cap_rec *r = cap_get(i);
        int k;
        int seq;

        if (r->rec.flags & NWB_LOG_RECORD_DROPNOTE) {
            assert_non_null(strstr(r->msg, "nwb: dropped "));
            continue;
        }
        if (strcmp(r->msg, "raw racer line") == 0) {
            continue;
        }
        assert_int_equal(sscanf(r->msg, "racer %d seq %d", &k, &seq), 2);
        assert_true(k >= 0 && k < 3);
        assert_true(seq > last[k]);
        last[k] = seq;
    }
    cap_free();
    /* Calls after destroy were not lost silently: the no-logger fallback printed them. */
    err_text = nwb_test_read_file(f->errpath, NULL);
    assert_non_null(err_text);
    assert_non_null(strstr(err_text, "INFO    "));
    assert_non_null(strstr(err_text, "test_lifecycle.c:"));
    assert_non_null(strstr(err_text, ": racer 0 seq "));
    assert_non_null(strstr(err_text, ": racer 2 seq "));
    free(err_text);
}

/* A logger registered on top of the client, so the client's unregister fails. */
static void other_write(void *self, nwb_log_site_t *site, va_list ap)
{
    (void)self;
    (void)site;
    (void)ap;
}

static void other_write_raw(void *self, nwb_log_site_t *site, const char *msg, size_t len)
{
    (void)self;
    (void)site;
    (void)msg;
    (void)len;
}

static void test_calls_after_destroy_go_to_stderr(void **state)
{
    struct fixture *f = *state;
    static const nwb_logger_ops_t other_ops = {other_write, other_write_raw, NULL, NULL};
    nwb_logger_t other = {&other_ops, NULL};
    nwb_logger_guard_t guard;
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *c;
    char *err_text;

    stderr_capture(f);
    c = cap_client(&cfg);
    assert_non_null(c);
    NWB_LOGGER_INFO("inside %d", 1);
    nwb_client_destroy(c);
    cap_free();
    NWB_LOGGER_INFO("after destroy %d", 2); /* nothing registered: common's fallback */

    /* Destroyed while another logger sat on top of it: its logger stays registered
     * underneath, and must print to stderr instead of touching the freed client. */
    c = cap_client(&cfg);
    assert_non_null(c);
    assert_int_equal(nwb_logger_register(&other, &guard), 0);
    nwb_client_destroy(c);
    assert_int_equal(nwb_logger_unregister(&guard), 0);
    NWB_LOGGER_ERROR("through the retired logger %s", "too");
    NWB_LOGGER_WARNING("raw through the retired logger");
    stderr_restore(f);

    err_text = nwb_test_read_file(f->errpath, NULL);
    assert_non_null(err_text);
    assert_null(strstr(err_text, "inside 1"));
    assert_non_null(strstr(err_text, ": after destroy 2\n"));
    assert_non_null(strstr(err_text, "ERROR   "));
    assert_non_null(strstr(err_text, ": through the retired logger too\n"));
    assert_non_null(strstr(err_text, ": raw through the retired logger\n"));
    free(err_text);
    cap_free();
    /* Leave the registration as other tests expect it: nothing current. */
    if (nwb_logger_current() != NULL) {
        nwb_logger_guard_t g2 = {nwb_logger_current(), NULL};

        assert_int_equal(nwb_logger_unregister(&g2), 0);
    }
}

/* ---- allocation failures ---- */

static void test_create_unwinds_cleanly_at_every_allocation_failure(void **state)
{
    struct fixture *f = *state;
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    int succeeded_at = -1;

    cfg.mode = NWB_CLIENT_MODE_STANDALONE;
    cfg.log_dir = f->dir;
    cfg.program = "allocfail";
    cfg.console = 0;
    for (int n = 0; n < 100; n++) {
        nwb_client_t *c = (nwb_client_t *)&cfg; /* must come back NULL on failure */
        char err[256] = "";
        int rc;

        nwb_alloc_fail_after(n);
        rc = nwb_client_create(&cfg, &c, err, sizeof(err));
        nwb_alloc_fail_after(-1);
        if (rc == 0) {
            NWB_LOGGER_INFO("made it after %d", n);
            assert_int_equal(nwb_client_flush(c, 10000), 0);
            nwb_client_destroy(c);
            succeeded_at = n;
            break;
        }
        assert_true(rc < 0);
        assert_null(c);
        assert_true(strlen(err) > 0);
    }
    assert_true(succeeded_at >= 5); /* client, output, its buffer, worker, its buffers */
}

static void *three_calls_main(void *arg)
{
    (void)arg;
    NWB_LOGGER_INFO("no ring %d", 1);
    NWB_LOGGER_INFO("no ring raw");
    NWB_LOGGER_INFO("%m no ring %d", 3);
    return NULL;
}

static void test_a_thread_whose_ring_cannot_be_allocated_drops_and_counts(void **state)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *c = cap_client(&cfg);
    nwb_client_stats_t st;
    pthread_t t;

    (void)state;
    assert_non_null(c);
    nwb_alloc_fail_after(0);
    assert_int_equal(pthread_create(&t, NULL, three_calls_main, NULL), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    nwb_alloc_fail_after(-1);
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    nwb_client_stats_get(c, &st);
    assert_int_equal(st.records_accepted, 0);
    assert_int_equal(st.records_dropped, 3);
    assert_int_equal(cap_count(), 0);
    nwb_client_destroy(c);
    cap_free();
}

/* ---- FATAL ---- */

static void test_fatal_flushes_then_aborts(void **state)
{
    struct fixture *f = *state;
    char path[1024];
    char *text;
    int status = 0;
    pid_t pid;
    long long deadline;

    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
        nwb_client_t *c = NULL;

        cfg.mode = NWB_CLIENT_MODE_STANDALONE;
        cfg.log_dir = f->dir;
        cfg.program = "fatalprog";
        cfg.run_id = "fatalrun";
        cfg.console = 0;
        if (nwb_client_create(&cfg, &c, NULL, 0) != 0) {
            _exit(3);
        }
        NWB_LOGGER_INFO("before the end %d", 1);
        NWB_LOGGER_FATAL("fatal %d", 42);
        _exit(4); /* not reached: FATAL aborts */
    }
    deadline = nwb_test_now_ms() + 15000;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (nwb_test_now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fail_msg("FATAL did not end the process");
        }
        poll(NULL, 0, 5);
    }
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    assert_int_equal(nwb_test_find_run_log(f->dir, "fatalprog", "fatalrun", path, sizeof(path)), 0);
    text = nwb_test_read_file(path, NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, ": before the end 1\n"));
    assert_non_null(strstr(text, "FATAL   "));
    assert_non_null(strstr(text, ": fatal 42\n"));
    free(text);
}

/* ---- one thread, two clients ---- */

struct follower {
    pthread_barrier_t step;
};

static void *follower_main(void *arg)
{
    struct follower *fo = arg;

    pthread_barrier_wait(&fo->step);
    NWB_LOGGER_INFO("to the first client %d", 1);
    pthread_barrier_wait(&fo->step); /* logged */
    pthread_barrier_wait(&fo->step); /* the second client exists */
    NWB_LOGGER_INFO("to the second client %d", 2);
    pthread_barrier_wait(&fo->step); /* logged */
    pthread_barrier_wait(&fo->step); /* checked: may exit (its ring is then freed) */
    return NULL;
}

static void test_a_thread_follows_the_client_across_recreation(void **state)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    struct follower fo;
    nwb_client_t *c;
    pthread_t t;

    (void)state;
    assert_int_equal(pthread_barrier_init(&fo.step, NULL, 2), 0);
    assert_int_equal(pthread_create(&t, NULL, follower_main, &fo), 0);
    c = cap_client(&cfg);
    assert_non_null(c);
    pthread_barrier_wait(&fo.step);
    pthread_barrier_wait(&fo.step);
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    assert_int_equal(cap_count(), 1);
    assert_string_equal(cap_get(0)->msg, "to the first client 1");
    nwb_client_destroy(c);
    cap_free();

    c = cap_client(&cfg);
    assert_non_null(c);
    pthread_barrier_wait(&fo.step);
    pthread_barrier_wait(&fo.step);
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    assert_int_equal(cap_count(), 1);
    assert_string_equal(cap_get(0)->msg, "to the second client 2");
    assert_int_equal(nwb__client_ring_count(c), 1); /* a fresh ring for the new client */
    pthread_barrier_wait(&fo.step);
    nwb_client_destroy(c);
    cap_free();
    assert_int_equal(pthread_join(t, NULL), 0);
    pthread_barrier_destroy(&fo.step);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        T(test_destroy_while_threads_log_is_safe_and_later_calls_reach_stderr),
        T(test_calls_after_destroy_go_to_stderr),
        T(test_create_unwinds_cleanly_at_every_allocation_failure),
        T(test_a_thread_whose_ring_cannot_be_allocated_drops_and_counts),
        T(test_fatal_flushes_then_aborts),
        T(test_a_thread_follows_the_client_across_recreation),
#undef T
    };

    return cmocka_run_group_tests_name("client.lifecycle", tests, NULL, NULL);
}
