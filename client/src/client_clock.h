/* SPDX-License-Identifier: MIT */
/*
 * client_clock.h - the time stamp a log call takes, and its conversion to
 * wall-clock nanoseconds on the worker. Where the TSC is invariant and the
 * kernel keeps time with it, a call reads the TSC (one rdtsc, no vDSO call)
 * and the worker converts ticks to CLOCK_REALTIME ns with an anchor it
 * re-takes as it drains; elsewhere a call reads CLOCK_REALTIME itself and the
 * conversion is the identity. The wire, the line and the tail see wall ns only.
 */
#ifndef NWB_CLIENT_CLOCK_H
#define NWB_CLIENT_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "nwb/common.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#define NWB__CLOCK_HAVE_TSC 1
#else
#define NWB__CLOCK_HAVE_TSC 0
#endif

/*
 * The documented bound on a converted stamp's error against CLOCK_REALTIME
 * read at the call: tests check every stamp they log against the wall clock
 * read around the call, widened by this much. The conversion's typical error
 * is far smaller (docs/client.md, "Time stamps": tens of ns after the first
 * second); the bound leaves room for NTP slewing the clock while a record
 * waits in its ring, and for the first 2 ms of a client's life.
 */
#define NWB__CLOCK_ERROR_MAX_NS 100000u

/* The worker re-anchors at most this often (while it drains records) ... */
#define NWB__CLOCK_ANCHOR_EVERY_NS 1000000u
/* ... and converts nothing until the rate was measured over at least this long. */
#define NWB__CLOCK_CALIBRATE_MIN_NS 2000000u

/* One simultaneous reading of the TSC and both clocks. */
struct nwb__clock_anchor {
    uint64_t tsc;
    uint64_t wall_ns; /* CLOCK_REALTIME */
    uint64_t mono_ns; /* CLOCK_MONOTONIC: the rate, immune to steps of the wall clock */
};

struct nwb__clock {
    int tsc; /* 1: stamps are TSC ticks; 0: stamps are CLOCK_REALTIME ns. Fixed at init. */
    /* Worker-private from here on (init writes them before the worker starts), 64 bytes away
     * from tsc so the anchors' writes never take the callers' line (the client is heap memory
     * without 64-byte alignment, so padding rather than _Alignas). */
    char pad[64 - sizeof(int)];
    struct nwb__clock_anchor base;      /* the rate's baseline: 16-32 s back */
    struct nwb__clock_anchor next_base; /* becomes base 16 s after it was taken */
    struct nwb__clock_anchor last;      /* the latest anchor: conversions start from it */
    uint64_t mult;                      /* ns per tick, times 2^32 */
    uint64_t anchor_every_ticks;        /* NWB__CLOCK_ANCHOR_EVERY_NS in ticks (rough rate) */
    int calibrated;                     /* mult measured over >= NWB__CLOCK_CALIBRATE_MIN_NS */
    atomic_uint_fast64_t anchors;       /* anchors the worker took (tests read it, relaxed) */
};

/* Test hook: set before nwb_client_create() to use CLOCK_REALTIME stamps even with a TSC. */
extern int nwb__clock_test_force_realtime;

/* Decide the stamp kind (invariant TSC, kernel clocksource "tsc") and take the first anchor. */
void nwb__clock_init(struct nwb__clock *clk);

/*
 * Worker, before converting a round's stamps: re-anchor when the last anchor
 * is older than NWB__CLOCK_ANCHOR_EVERY_NS and refresh the rate; in the first
 * NWB__CLOCK_CALIBRATE_MIN_NS of the clock's life this waits out the rest of
 * that span once (the worker's thread, never a caller's).
 */
void nwb__clock_anchor_refresh(struct nwb__clock *clk);

/* Worker: wall-clock ns of @p stamp (a record's). */
static inline uint64_t nwb__clock_to_wall(const struct nwb__clock *clk, uint64_t stamp)
{
    __extension__ typedef __int128 i128;
    i128 delta;

    if (!clk->tsc) {
        return stamp;
    }
    delta = (i128)stamp - (i128)clk->last.tsc;
    delta = (delta * (i128)clk->mult) / ((i128)1 << 32);
    delta += (i128)clk->last.wall_ns;
    return delta < 0 ? 0u : (uint64_t)delta;
}

/* Caller thread: the stamp of a call, in the clock's unit. */
static inline uint64_t nwb__clock_stamp(const struct nwb__clock *clk)
{
    struct timespec ts;

#if NWB__CLOCK_HAVE_TSC
    if (NWB_LIKELY(clk->tsc)) {
        return __rdtsc();
    }
#else
    (void)clk;
#endif
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* NWB_CLIENT_CLOCK_H */
