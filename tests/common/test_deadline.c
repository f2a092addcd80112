/* SPDX-License-Identifier: MIT */
/*
 * test_deadline.c - monotonic deadlines (nwb/deadline.h): milliseconds left rounded up, an
 * expired deadline, the far future without overflow, and condition variables that wait on
 * the monotonic clock until the deadline has passed (ETIMEDOUT) or they are signalled.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <time.h>

#include "nwb/deadline.h"

#define NS_PER_MS 1000000ull

static uint64_t ns_of(const struct timespec *ts)
{
    return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

static nwb_deadline_t deadline_at_ns(uint64_t ns)
{
    nwb_deadline_t d;

    d.at.tv_sec = (time_t)(ns / 1000000000ull);
    d.at.tv_nsec = (long)(ns % 1000000000ull);
    return d;
}

static void test_deadline_in_ms_is_that_far_on_the_monotonic_clock(void **state)
{
    const uint64_t before = nwb_monotonic_ns();
    const nwb_deadline_t d = nwb_deadline_in_ms(1500);
    const uint64_t after = nwb_monotonic_ns();

    (void)state;
    assert_true(d.at.tv_nsec >= 0 && d.at.tv_nsec < 1000000000L);
    assert_true(ns_of(&d.at) >= before + 1500 * NS_PER_MS);
    assert_true(ns_of(&d.at) <= after + 1500 * NS_PER_MS);
    /* A negative duration counts as none. */
    {
        const nwb_deadline_t past = nwb_deadline_in_ms(-5);

        assert_true(ns_of(&past.at) <= nwb_monotonic_ns());
        assert_true(nwb_deadline_expired(&past));
        assert_int_equal(nwb_deadline_left_ms(&past), 0);
    }
}

/*
 * left_ms rounds up: a deadline 1.5 ms away has 2 ms left, one 0.9 ms away 1 ms. The clock moves
 * while we look, so each check brackets the call between two clock readings and retries until
 * one bracket is narrow enough to leave one right answer (under load a bracket can be wide).
 */
static void expect_left_rounded_up(uint64_t ahead_ns, long long want)
{
    for (int attempt = 0; attempt < 1000; attempt++) {
        const uint64_t t0 = nwb_monotonic_ns();
        const nwb_deadline_t d = deadline_at_ns(t0 + ahead_ns);
        const long long left = nwb_deadline_left_ms(&d);
        const uint64_t t1 = nwb_monotonic_ns();
        /* What any reading inside [t0, t1] gives, at its two ends. */
        const long long hi = (long long)((ahead_ns + NS_PER_MS - 1) / NS_PER_MS);
        const long long lo = t1 - t0 >= ahead_ns
                                 ? 0
                                 : (long long)((ahead_ns - (t1 - t0) + NS_PER_MS - 1) / NS_PER_MS);

        assert_true(left >= lo && left <= hi);
        if (lo == hi) {
            assert_int_equal(left, want);
            return;
        }
    }
    fail_msg("the clock never stood still enough to check %llu ns ahead",
             (unsigned long long)ahead_ns);
}

static void test_deadline_left_ms_rounds_up(void **state)
{
    (void)state;
    expect_left_rounded_up(1500 * 1000, 2); /* 1.5 ms */
    expect_left_rounded_up(900 * 1000, 1);  /* 0.9 ms */
    expect_left_rounded_up(2200 * 1000, 3); /* 2.2 ms */
    expect_left_rounded_up(1000 * NS_PER_MS + 400 * 1000, 1001);
}

static void test_deadline_passed_is_zero_and_expired(void **state)
{
    const uint64_t now = nwb_monotonic_ns();
    const nwb_deadline_t gone = deadline_at_ns(now - 1);
    const nwb_deadline_t long_gone = deadline_at_ns(0); /* the clock's origin */
    const nwb_deadline_t zero = nwb_deadline_in_ms(0);
    const nwb_deadline_t later = nwb_deadline_in_ms(60000);

    (void)state;
    assert_int_equal(nwb_deadline_left_ms(&gone), 0);
    assert_true(nwb_deadline_expired(&gone));
    assert_int_equal(nwb_deadline_left_ms(&long_gone), 0);
    assert_true(nwb_deadline_expired(&long_gone));
    /* Zero from now has passed by the time it is looked at (0 left means expired). */
    assert_int_equal(nwb_deadline_left_ms(&zero), 0);
    assert_true(nwb_deadline_expired(&zero));
    assert_false(nwb_deadline_expired(&later));
    assert_true(nwb_deadline_left_ms(&later) > 59000);
    assert_true(nwb_deadline_left_ms(&later) <= 60000);
}

static void test_deadline_far_future_does_not_overflow(void **state)
{
    const nwb_deadline_t d = nwb_deadline_in_ms(LLONG_MAX);
    const nwb_deadline_t year = nwb_deadline_in_ms(365ll * 24 * 3600 * 1000);

    (void)state;
    /* Undefined behaviour (signed overflow) would stop the sanitizer build here. */
    assert_true(nwb_deadline_left_ms(&d) > 0);
    assert_false(nwb_deadline_expired(&d));
    assert_true(nwb_deadline_left_ms(&year) > 364ll * 24 * 3600 * 1000);
}

static void test_cond_wait_until_times_out_after_the_deadline(void **state)
{
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond;
    nwb_deadline_t d;
    int rc = 0;
    int wakes = 0;

    (void)state;
    assert_int_equal(nwb_cond_init_monotonic(&cond), 0);
    pthread_mutex_lock(&mu);
    d = nwb_deadline_in_ms(80);
    /* Nobody signals: only spurious wake-ups (0) may come before ETIMEDOUT. A condition
     * variable on CLOCK_REALTIME would read this monotonic deadline as decades ago and time
     * out at once; the check below would then fail. */
    while (rc == 0 && wakes < 1000) {
        rc = nwb_cond_wait_until(&cond, &mu, &d);
        wakes++;
    }
    pthread_mutex_unlock(&mu);
    assert_int_equal(rc, ETIMEDOUT);
    assert_true(nwb_monotonic_ns() >= ns_of(&d.at));
    assert_true(nwb_deadline_expired(&d));
    /* An expired deadline times out at once. */
    pthread_mutex_lock(&mu);
    assert_int_equal(nwb_cond_wait_until(&cond, &mu, &d), ETIMEDOUT);
    pthread_mutex_unlock(&mu);
    pthread_cond_destroy(&cond);
}

struct signaller {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int ready;
};

static void *signal_main(void *arg)
{
    struct signaller *s = arg;

    pthread_mutex_lock(&s->mu);
    s->ready = 1;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void test_cond_wait_until_returns_zero_when_signalled(void **state)
{
    struct signaller s;
    const nwb_deadline_t d = nwb_deadline_in_ms(30000);
    pthread_t t;
    int rc = 0;

    (void)state;
    s.ready = 0;
    assert_int_equal(pthread_mutex_init(&s.mu, NULL), 0);
    assert_int_equal(nwb_cond_init_monotonic(&s.cond), 0);
    pthread_mutex_lock(&s.mu);
    assert_int_equal(pthread_create(&t, NULL, signal_main, &s), 0);
    while (!s.ready && rc == 0) {
        rc = nwb_cond_wait_until(&s.cond, &s.mu, &d);
    }
    pthread_mutex_unlock(&s.mu);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(rc, 0);
    assert_true(s.ready);
    assert_false(nwb_deadline_expired(&d)); /* woken, not timed out */
    pthread_cond_destroy(&s.cond);
    pthread_mutex_destroy(&s.mu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deadline_in_ms_is_that_far_on_the_monotonic_clock),
        cmocka_unit_test(test_deadline_left_ms_rounds_up),
        cmocka_unit_test(test_deadline_passed_is_zero_and_expired),
        cmocka_unit_test(test_deadline_far_future_does_not_overflow),
        cmocka_unit_test(test_cond_wait_until_times_out_after_the_deadline),
        cmocka_unit_test(test_cond_wait_until_returns_zero_when_signalled),
    };

    return cmocka_run_group_tests_name("common.deadline", tests, NULL, NULL);
}
