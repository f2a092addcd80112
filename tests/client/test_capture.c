/* SPDX-License-Identifier: MIT */
/*
 * test_capture.c - the C macros' capture by type through the real client:
 * every argument type renders like snprintf on the worker, and a site whose
 * format disagrees with its arguments' types (possible when the compile-time
 * check is silenced) is formatted on the kinds the format says, converting
 * each captured value; a non-pointer given to %s prints "(null)".
 */
#define _GNU_SOURCE
#undef NWB_FINAL /* INFO compiled in, in every config */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>

#include "nwb/client.h"
#include "nwb/log.h"

#include "test_core_capture.h"

static int setup(void **state)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;

    *state = cap_client(&cfg);
    return *state != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    nwb_client_destroy(*state);
    cap_free();
    return 0;
}

enum shade { DARK = 3 };

static void test_every_argument_type_renders_like_snprintf(void **state)
{
    const char cs = 'q';
    const signed char sc = -100;
    const unsigned char uc = 200;
    const short sh = -12345;
    const unsigned short us = 54321;
    const _Bool b = 1;
    const enum shade e = DARK;
    const float f = 0.25f;
    char arr[6] = "array";
    const char *null_str = NULL;
    int x = 0;
    char want[256];

    for (int i = 0; i < 2;
         i++) { /* the first call prepares the site, the second is the fast path */
        NWB_LOGGER_INFO("%c %hhd %hhu %hd %hu %d %d %u %ld %lu %lld %llu %zu %jd %td", cs, sc, uc,
                        sh, us, b, e, 4000000000u, -1L, 1UL, -2LL, 2ULL, (size_t)3, (intmax_t)-4,
                        (ptrdiff_t)-5);
        NWB_LOGGER_INFO("%f %.1f %s %s %s %p %5.2s|%-*d", f, 1.25, "lit", arr, null_str, (void *)&x,
                        "xyz", 4, 9);
        NWB_LOGGER_INFO("%s %s", null_str, "after");
    }
    assert_int_equal(nwb_client_flush(*state, 10000), 0);
    assert_int_equal(cap_count(), 6);
    for (size_t i = 0; i < 6; i += 3) {
        /* a NULL string before another string: the worker steps over its NUL */
        assert_string_equal(cap_get(i + 2)->msg, "(null) after");
        assert_string_equal(cap_get(i)->msg,
                            "q -100 200 -12345 54321 1 3 4000000000 -1 1 -2 2 3 -4 -5");
        snprintf(want, sizeof(want), "0.250000 1.2 lit array (null) %p    xy|9   ", (void *)&x);
        assert_string_equal(cap_get(i + 1)->msg, want);
    }
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat"
#pragma GCC diagnostic ignored "-Wformat-extra-args"
static void test_mismatched_site_formats_on_the_format_kinds(void **state)
{
    for (int i = 0; i < 2; i++) {
        NWB_LOGGER_INFO("%d|%f|%s|%ld", 2.75, 3, 42, -6);
        NWB_LOGGER_INFO("%p|%d", 0, 1, "extra");
    }
    assert_int_equal(nwb_client_flush(*state, 10000), 0);
    assert_int_equal(cap_count(), 4);
    for (size_t i = 0; i < 4; i += 2) {
        assert_string_equal(cap_get(i)->msg, "2|3.000000|(null)|-6");
        assert_string_equal(cap_get(i + 1)->msg, "(nil)|1");
    }
}
#pragma GCC diagnostic pop

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_every_argument_type_renders_like_snprintf),
        T(test_mismatched_site_formats_on_the_format_kinds),
    };
#undef T

    return cmocka_run_group_tests_name("client.capture", tests, NULL, NULL);
}
