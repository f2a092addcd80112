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

/* Assert @p conv lies in [lo - bound, hi + bound]; return its distance outside [lo, hi]. */
static uint64_t check_within(uint64_t conv, uint64_t lo, uint64_t hi)
{
    if (conv < lo) {
        assert_true(lo - conv <= NWB__CLOCK_ERROR_MAX_NS);
        return lo - conv;
    }
    if (conv > hi) {
        assert_true(conv - hi <= NWB__CLOCK_ERROR_MAX_NS);
        return conv - hi;
    }
    return 0;
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
    uint64_t worst = 0;

    (void)state;
    nwb__clock_init(&clk);
    if (!clk.tsc) {
        print_message("no invariant TSC the kernel keeps time with: CLOCK_REALTIME stamps\n");
        skip();
    }
    /* Stamps taken before the first anchor, converted after the calibration wait. */
    for (int i = 0; i < 8; i++) {
        lo[i] = nwb_time_now_ns();
        st[i] = nwb__clock_stamp(&clk);
        hi[i] = nwb_time_now_ns();
    }
    nwb__clock_anchor_refresh(&clk);
    assert_true(clk.calibrated);
    assert_true(atomic_load(&clk.anchors) == 1);
    for (int i = 0; i < 8; i++) {
        const uint64_t e = check_within(nwb__clock_to_wall(&clk, st[i]), lo[i], hi[i]);

        worst = e > worst ? e : worst;
    }
    /* 64 stamps 1.5 ms apart, each converted right away and again after all the re-anchors. */
    for (int i = 0; i < 64; i++) {
        uint64_t e;

        spin_ns(NWB__CLOCK_ANCHOR_EVERY_NS + NWB__CLOCK_ANCHOR_EVERY_NS / 2u);
        lo[i] = nwb_time_now_ns();
        st[i] = nwb__clock_stamp(&clk);
        hi[i] = nwb_time_now_ns();
        nwb__clock_anchor_refresh(&clk);
        e = check_within(nwb__clock_to_wall(&clk, st[i]), lo[i], hi[i]);
        worst = e > worst ? e : worst;
    }
    assert_true(atomic_load(&clk.anchors) >= 1u + 64u);
    for (int i = 0; i < 64; i++) {
        const uint64_t e = check_within(nwb__clock_to_wall(&clk, st[i]), lo[i], hi[i]);

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
