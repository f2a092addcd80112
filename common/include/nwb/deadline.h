/* SPDX-License-Identifier: MIT */
/*
 * nwb/deadline.h - durations as deadlines on the monotonic clock, and condition variables
 * that wait on it, so that a step of the wall clock never changes a timeout.
 */
#ifndef NWB_DEADLINE_H
#define NWB_DEADLINE_H

#include <pthread.h>
#include <time.h>

#include "nwb/common.h"

/** A point in time on CLOCK_MONOTONIC. */
typedef struct nwb_deadline {
    struct timespec at;
} nwb_deadline_t;

/** Nanoseconds on CLOCK_MONOTONIC: the same clock and value as nwb_time_mono_ns(). */
NWB_API uint64_t nwb_monotonic_ns(void);

/** The deadline @p ms milliseconds from now (negative counts as 0). */
NWB_API nwb_deadline_t nwb_deadline_in_ms(long long ms);

/** Milliseconds left until @p d, 0 once it has passed (rounded up, so 0 means expired). */
NWB_API long long nwb_deadline_left_ms(const nwb_deadline_t *d);

/** 1 once @p d has passed, else 0. */
NWB_API int nwb_deadline_expired(const nwb_deadline_t *d);

/**
 * pthread_cond_init() with the monotonic clock (pthread_condattr_setclock), so that
 * nwb_cond_wait_until() measures durations. Returns 0 or a positive pthread error.
 */
NWB_API int nwb_cond_init_monotonic(pthread_cond_t *cond);

/**
 * Wait on @p cond (made by nwb_cond_init_monotonic) with @p mu held until signalled or @p d
 * passes. Returns 0 when woken (spuriously too: re-check the predicate), ETIMEDOUT once the
 * deadline has passed.
 */
NWB_API int nwb_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, const nwb_deadline_t *d);

#endif /* NWB_DEADLINE_H */
