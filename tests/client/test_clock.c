/* SPDX-License-Identifier: MIT */
/*
 * test_clock.c - the call's stamp and its conversion (client_clock.h): a
 * converted stamp stays within NWB__CLOCK_ERROR_MAX_NS of CLOCK_REALTIME read
 * around it, before and after the worker-side re-anchoring and when it is
 * converted long after it was taken; CLOCK_REALTIME stamps pass unchanged.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "nwb/log_line.h"

#include "client_clock.h"

/* Busy-wait @p ns of CLOCK_MONOTONIC: lets time pass for the anchor cadence, synchronises nothing.
 */
static void spin_ns(uint64_t ns)
{
    const uint64_t until = nwb_time_mono_ns() + ns;

    while (nwb_time_mono_ns() < until) {
    }
}

/* CLOCK_REALTIME minus CLOCK_MONOTONIC now: it changes only when the wall clock is stepped or
 * slewed (a VM's time sync does both). */
static int64_t wall_offset_now(void)
{
    const uint64_t mono = nwb_time_mono_ns();

    return (int64_t)(nwb_time_now_ns() - mono);
}

/* A stamp bracketed by the wall clock, taken again while a wall-clock step falls inside the
 * bracket (the offset read before and after differ by over 1 us), so @p off is the offset the
 * stamp was taken at. Bounded: 64 tries. */
static void take_stamp(const struct nwb__clock *clk, int64_t *off, uint64_t *lo, uint64_t *st,
                       uint64_t *hi)
{
    for (int tries = 0; tries < 64; tries++) {
        int64_t after;

        *off = wall_offset_now();
        *lo = nwb_time_now_ns();
        *st = nwb__clock_stamp(clk);
        *hi = nwb_time_now_ns();
        after = wall_offset_now();
        if (after - *off < 1000 && *off - after < 1000) {
            return;
        }
    }
}

/* Assert @p conv lies in [lo - bound - moved, hi + bound + moved], where @p moved is how far
 * the wall clock moved against the monotonic one between the stamp (offset @p stamp_off) and
 * the anchor the conversion used (@p clk's last): a stamp follows the wall clock's steps to
 * the anchor it is converted with. Return its distance outside [lo, hi], less @p moved. */
static uint64_t check_within(const struct nwb__clock *clk, uint64_t conv, uint64_t lo, uint64_t hi,
                             int64_t stamp_off)
{
    const int64_t anchor_off = (int64_t)(clk->last.wall_ns - clk->last.mono_ns);
    const uint64_t moved =
        (uint64_t)(anchor_off > stamp_off ? anchor_off - stamp_off : stamp_off - anchor_off);
    uint64_t e = 0;

    if (conv < lo) {
        e = lo - conv;
    } else if (conv > hi) {
        e = conv - hi;
    }
    e = e > moved ? e - moved : 0;
    assert_true(e <= NWB__CLOCK_ERROR_MAX_NS);
    return e;
}

static void test_clock_realtime_stamps_convert_to_themselves(void **state)
{
    struct nwb__clock clk;
    uint64_t before;
    uint64_t stamp;
    uint64_t after;

    (void)state;
    nwb__clock_test_force_realtime = 1;
    nwb__clock_init(&clk);
    nwb__clock_test_force_realtime = 0;
    assert_int_equal(clk.tsc, 0);
    before = nwb_time_now_ns();
    stamp = nwb__clock_stamp(&clk);
    after = nwb_time_now_ns();
    assert_true(stamp >= before && stamp <= after);
    nwb__clock_anchor_refresh(&clk); /* a no-op */
    assert_true(nwb__clock_to_wall(&clk, stamp) == stamp);
    assert_true(atomic_load(&clk.anchors) == 0);
}

static void test_clock_tsc_stamps_stay_within_bound_across_reanchors(void **state)
{
    struct nwb__clock clk;
    uint64_t lo[64];
    uint64_t hi[64];
    uint64_t st[64];
    int64_t off[64];
    uint64_t worst = 0;

    (void)state;
    nwb__clock_init(&clk);
    if (!clk.tsc) {
        print_message("no invariant TSC the kernel keeps time with: CLOCK_REALTIME stamps\n");
        skip();
    }
    /* Stamps taken before the first anchor, converted after the calibration wait. */
    for (int i = 0; i < 8; i++) {
        take_stamp(&clk, &off[i], &lo[i], &st[i], &hi[i]);
    }
    nwb__clock_anchor_refresh(&clk);
    assert_true(clk.calibrated);
    assert_true(atomic_load(&clk.anchors) == 1);
    for (int i = 0; i < 8; i++) {
        const uint64_t e =
            check_within(&clk, nwb__clock_to_wall(&clk, st[i]), lo[i], hi[i], off[i]);

        worst = e > worst ? e : worst;
    }
    /* 64 stamps 1.5 ms apart, each converted right away and again after all the re-anchors. */
    for (int i = 0; i < 64; i++) {
        uint64_t e;

        spin_ns(NWB__CLOCK_ANCHOR_EVERY_NS + NWB__CLOCK_ANCHOR_EVERY_NS / 2u);
        take_stamp(&clk, &off[i], &lo[i], &st[i], &hi[i]);
        nwb__clock_anchor_refresh(&clk);
        e = check_within(&clk, nwb__clock_to_wall(&clk, st[i]), lo[i], hi[i], off[i]);
        worst = e > worst ? e : worst;
    }
    assert_true(atomic_load(&clk.anchors) >= 1u + 64u);
    for (int i = 0; i < 64; i++) {
        const uint64_t e =
            check_within(&clk, nwb__clock_to_wall(&clk, st[i]), lo[i], hi[i], off[i]);

        worst = e > worst ? e : worst;
    }
    print_message("worst distance outside the wall-clock bracket: %llu ns (bound %u ns)\n",
                  (unsigned long long)worst, NWB__CLOCK_ERROR_MAX_NS);
}

static void test_clock_anchor_waits_for_its_cadence(void **state)
{
    struct nwb__clock clk;
    uint64_t n;

    (void)state;
    nwb__clock_init(&clk);
    if (!clk.tsc) {
        skip();
    }
    nwb__clock_anchor_refresh(&clk);
    n = atomic_load(&clk.anchors);
    /* Right after an anchor another refresh keeps it (at most one per ANCHOR_EVERY_NS) ... */
    nwb__clock_anchor_refresh(&clk);
    assert_true(atomic_load(&clk.anchors) == n);
    /* ... and once the cadence passed it takes a new one. */
    spin_ns(NWB__CLOCK_ANCHOR_EVERY_NS + NWB__CLOCK_ANCHOR_EVERY_NS / 4u);
    nwb__clock_anchor_refresh(&clk);
    assert_true(atomic_load(&clk.anchors) == n + 1u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clock_realtime_stamps_convert_to_themselves),
        cmocka_unit_test(test_clock_tsc_stamps_stay_within_bound_across_reanchors),
        cmocka_unit_test(test_clock_anchor_waits_for_its_cadence),
    };

    return cmocka_run_group_tests_name("client.clock", tests, NULL, NULL);
}
