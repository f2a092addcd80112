/* SPDX-License-Identifier: MIT */
/* deadline.c - monotonic deadlines and the condition variables that wait on them. */
#include <errno.h>
#include <limits.h>

#include "nwb/deadline.h"
#include "nwb/log_line.h"

uint64_t nwb_monotonic_ns(void)
{
    return nwb_time_mono_ns(); /* one reading of the clock in nwb, in log_line.c */
}

nwb_deadline_t nwb_deadline_in_ms(long long ms)
{
    nwb_deadline_t d;

    if (ms < 0) {
        ms = 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &d.at);
    d.at.tv_sec += (time_t)(ms / 1000);
    d.at.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (d.at.tv_nsec >= 1000000000L) {
        d.at.tv_sec++;
        d.at.tv_nsec -= 1000000000L;
    }
    return d;
}

long long nwb_deadline_left_ms(const nwb_deadline_t *d)
{
    struct timespec now;
    long long sec;
    long long ns;
    long long ms;

    clock_gettime(CLOCK_MONOTONIC, &now);
    sec = (long long)(d->at.tv_sec - now.tv_sec);
    ns = d->at.tv_nsec - now.tv_nsec; /* -999999999 .. 999999999 */
    /* In milliseconds, rounded up: whole seconds never overflow as nanoseconds could (a
     * deadline of nwb_deadline_in_ms(LLONG_MAX) is ~9e15 s away). */
    if (sec > LLONG_MAX / 1000 - 1) {
        return LLONG_MAX;
    }
    ms = sec * 1000 + (ns > 0 ? (ns + 999999) / 1000000 : ns / 1000000);
    return ms > 0 ? ms : 0;
}

int nwb_deadline_expired(const nwb_deadline_t *d)
{
    return nwb_deadline_left_ms(d) == 0;
}

int nwb_cond_init_monotonic(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    int err = pthread_condattr_init(&attr);

    if (err != 0) {
        return err;
    }
    err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (err == 0) {
        err = pthread_cond_init(cond, &attr);
    }
    pthread_condattr_destroy(&attr);
    return err;
}

int nwb_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, const nwb_deadline_t *d)
{
    const int err = pthread_cond_timedwait(cond, mu, &d->at);

    return err == ETIMEDOUT ? ETIMEDOUT : 0;
}
