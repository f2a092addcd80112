/* SPDX-License-Identifier: MIT */
/*
 * client_clock.c - choosing the call's stamp (TSC or CLOCK_REALTIME) once per
 * client, and the worker's anchors that turn TSC ticks into wall-clock ns
 * (client_clock.h; docs/client.md, "Time stamps").
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "client_clock.h"

int nwb__clock_test_force_realtime;

/* The rate's baseline moves forward this often, so it follows NTP's slewing of the clock. */
#define REBASE_EVERY_NS (16ull * 1000000000ull)
/* init measures a first, rough rate over this long (a busy wait in nwb_client_create). */
#define ROUGH_SPAN_NS 50000u
/* Plausible TSC rates; anything else means the TSC is not what CPUID says. */
#define TSC_HZ_MIN 100000000ull
#define TSC_HZ_MAX 20000000000ull

#if NWB__CLOCK_HAVE_TSC

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPUID.80000007H:EDX[8]: the TSC runs at a constant rate in every C-, P- and T-state. */
static int cpu_tsc_invariant(void)
{
    unsigned a, b, c, d;

    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u) {
        return 0;
    }
    if (__get_cpuid(0x80000007u, &a, &b, &c, &d) == 0) {
        return 0;
    }
    return (d >> 8) & 1u;
}

/*
 * The kernel keeps time with the TSC only when it found it synchronised
 * across CPUs (and, in a VM, stable): its verdict covers what CPUID cannot.
 * An unreadable file (no sysfs) leaves the CPUID answer standing.
 */
static int kernel_trusts_tsc(void)
{
    static const char path[] = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
    char name[32];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        return 1;
    }
    n = read(fd, name, sizeof(name) - 1u);
    close(fd);
    if (n <= 0) {
        return 1;
    }
    name[n] = '\0';
    return strcmp(name, "tsc\n") == 0 || strcmp(name, "tsc") == 0;
}

/* The narrowest of three brackets [rdtsc, both clocks, rdtsc]; the TSC at its middle. */
static void anchor_take(struct nwb__clock_anchor *a)
{
    uint64_t best = UINT64_MAX;

    for (int i = 0; i < 3; i++) {
        const uint64_t t0 = __rdtsc();
        const uint64_t wall = clock_ns(CLOCK_REALTIME);
        const uint64_t mono = clock_ns(CLOCK_MONOTONIC);
        const uint64_t t1 = __rdtsc();

        if (t1 >= t0 && t1 - t0 < best) {
            best = t1 - t0;
            a->tsc = t0 + (t1 - t0) / 2u;
            a->wall_ns = wall;
            a->mono_ns = mono;
        }
    }
}

/* ns per tick times 2^32 between two anchors; 0 when implausible. */
static uint64_t rate_between(const struct nwb__clock_anchor *from,
                             const struct nwb__clock_anchor *to)
{
    __extension__ typedef unsigned __int128 u128;
    const uint64_t dt = to->tsc - from->tsc;
    const uint64_t dns = to->mono_ns - from->mono_ns;

    if (to->tsc <= from->tsc || to->mono_ns <= from->mono_ns) {
        return 0;
    }
    /* hz = dt * 1e9 / dns must be plausible */
    if ((u128)dt * 1000000000u < (u128)TSC_HZ_MIN * dns ||
        (u128)dt * 1000000000u > (u128)TSC_HZ_MAX * dns) {
        return 0;
    }
    return (uint64_t)(((u128)dns << 32) / dt);
}

void nwb__clock_init(struct nwb__clock *clk)
{
    struct nwb__clock_anchor rough;
    uint64_t mult;

    memset(clk, 0, sizeof(*clk));
    if (nwb__clock_test_force_realtime || !cpu_tsc_invariant() || !kernel_trusts_tsc()) {
        return;
    }
    anchor_take(&clk->base);
    do {
        anchor_take(&rough);
    } while (rough.mono_ns - clk->base.mono_ns < ROUGH_SPAN_NS &&
             rough.mono_ns >= clk->base.mono_ns);
    mult = rate_between(&clk->base, &rough);
    if (mult == 0) {
        return; /* the TSC does not move with the clock: stay on CLOCK_REALTIME */
    }
    clk->mult = mult;
    clk->last = rough;
    clk->next_base = clk->base;
    clk->anchor_every_ticks = ((uint64_t)NWB__CLOCK_ANCHOR_EVERY_NS << 32) / mult;
    clk->tsc = 1;
}

void nwb__clock_anchor_refresh(struct nwb__clock *clk)
{
    uint64_t mult;

    if (!clk->tsc) {
        return;
    }
    if (NWB_UNLIKELY(!clk->calibrated)) {
        const uint64_t age = clock_ns(CLOCK_MONOTONIC) - clk->base.mono_ns;

        if (age < NWB__CLOCK_CALIBRATE_MIN_NS) {
            const uint64_t left = NWB__CLOCK_CALIBRATE_MIN_NS - age;
            struct timespec ts = {0, (long)left};

            while (nanosleep(&ts, &ts) != 0) {
            }
        }
        clk->calibrated = 1;
    } else if (__rdtsc() - clk->last.tsc < clk->anchor_every_ticks) {
        return;
    }
    anchor_take(&clk->last);
    atomic_store_explicit(&clk->anchors,
                          atomic_load_explicit(&clk->anchors, memory_order_relaxed) + 1u,
                          memory_order_relaxed);
    mult = rate_between(&clk->base, &clk->last);
    if (mult != 0) {
        clk->mult = mult;
    }
    if (clk->last.mono_ns - clk->next_base.mono_ns >= REBASE_EVERY_NS) {
        clk->base = clk->next_base;
        clk->next_base = clk->last;
    }
}

#else /* no TSC: stamps are CLOCK_REALTIME ns */

void nwb__clock_init(struct nwb__clock *clk)
{
    memset(clk, 0, sizeof(*clk));
}

void nwb__clock_anchor_refresh(struct nwb__clock *clk)
{
    (void)clk;
}

#endif
