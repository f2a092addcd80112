/* SPDX-License-Identifier: MIT */
/*
 * test_eval.c - how often the macros evaluate their arguments. Built twice
 * (core.cmake): as client.eval, and as client.eval_fin with NWB_FINAL, where
 * INFO/WARNING/ERROR compile out and must evaluate nothing, while ESSENTIAL
 * and FATAL-free paths evaluate each argument exactly once in both.
 */
#define _GNU_SOURCE
/* Each variant sets NWB_FINAL itself, whatever the build configuration passed in. */
#undef NWB_FINAL
#ifdef NWB_TEST_WANT_FINAL
#define NWB_FINAL 1
#endif
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "nwb/client.h"
#include "nwb/log.h"

#include "test_core_capture.h"

static int evaluations;

static int side(int v)
{
    evaluations++;
    return v;
}

static const char *side_str(const char *s)
{
    evaluations++;
    return s;
}

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

static void test_ordinary_macros_evaluate_once_or_never_in_fin(void **state)
{
#if NWB_IS_FINAL
    const int per_call = 0;
#else
    const int per_call = 1;
#endif
    evaluations = 0;
    NWB_LOGGER_INFO("i %d", side(1));
    NWB_LOGGER_WARNING("w %d %s", side(2), "x");
    NWB_LOGGER_ERROR("e %d %d", side(3), side(4));
    NWB_LOGGER_INFO(side_str("raw info"));
    NWB_LOGGER_WARNING(side_str("raw warning"));
    NWB_LOGGER_ERROR(side_str("raw error"));
    assert_int_equal(evaluations, 7 * per_call);
    assert_int_equal(nwb_client_flush(*state, 10000), 0);
    assert_int_equal(cap_count(), (size_t)(6 * per_call));
    if (per_call) {
        assert_string_equal(cap_get(2)->msg, "e 3 4");
        assert_string_equal(cap_get(5)->msg, "raw error");
    }
}

static void test_essential_macros_evaluate_once_in_every_config(void **state)
{
    evaluations = 0;
    NWB_LOGGER_ESSENTIAL_INFO("ei %d", side(1));
    NWB_LOGGER_ESSENTIAL_WARNING("ew %d %d", side(2), side(3));
    NWB_LOGGER_ESSENTIAL_ERROR(side_str("ee raw"));
    assert_int_equal(evaluations, 4);
    assert_int_equal(nwb_client_flush(*state, 10000), 0);
    assert_int_equal(cap_count(), 3);
    assert_string_equal(cap_get(0)->msg, "ei 1");
    assert_string_equal(cap_get(1)->msg, "ew 2 3");
    assert_string_equal(cap_get(2)->msg, "ee raw");
}

static void test_compiled_out_calls_still_type_check_but_do_not_run(void **state)
{
    int counter = 0;
    int other = 0;

    /* In fin these are if (0) blocks: the increments must not happen. */
    NWB_LOGGER_INFO("%d", counter++);
    NWB_LOGGER_WARNING("%d %d", counter++, other++);
#if NWB_IS_FINAL
    assert_int_equal(counter + other, 0);
#else
    assert_int_equal(counter + other, 3);
#endif
    (void)state;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ordinary_macros_evaluate_once_or_never_in_fin, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_essential_macros_evaluate_once_in_every_config, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_compiled_out_calls_still_type_check_but_do_not_run,
                                        setup, teardown),
    };

#if NWB_IS_FINAL
    return cmocka_run_group_tests_name("client.eval_fin", tests, NULL, NULL);
#else
    return cmocka_run_group_tests_name("client.eval", tests, NULL, NULL);
#endif
}
