/* SPDX-License-Identifier: MIT */
/* test_safe_name.c - hostile program and run names become safe file-name parts. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "nwb/safe_name.h"

static void expect_safe(const char *in, size_t len, const char *want)
{
    char out[NWB_SAFE_NAME_MAX + 1];
    const size_t n = nwb_safe_name(out, in, len, "unknown");

    assert_int_equal(n, strlen(out));
    assert_string_equal(out, want);
}

static void test_safe_name_keeps_plain_names(void **state)
{
    (void)state;
    expect_safe("my-game_1.2", 11, "my-game_1.2");
}

static void test_safe_name_neutralises_paths_and_dots(void **state)
{
    (void)state;
    expect_safe("../../etc/passwd", 16, "_._.._etc_passwd");
    expect_safe("/abs", 4, "_abs");
    expect_safe("..", 2, "_.");
    expect_safe(".hidden", 7, "_hidden");
    expect_safe("a\0b", 3, "a_b");
    expect_safe("\xff\xfe", 2, "__");
    expect_safe("", 0, "unknown");
}

static void test_safe_name_caps_length(void **state)
{
    char big[300];
    char out[NWB_SAFE_NAME_MAX + 1];

    (void)state;
    memset(big, 'x', sizeof(big));
    assert_int_equal(nwb_safe_name(out, big, sizeof(big), "u"), NWB_SAFE_NAME_MAX);
    assert_int_equal(strlen(out), NWB_SAFE_NAME_MAX);
}

static void test_safe_name_run_ids_are_16_hex_and_differ(void **state)
{
    char a[17], b[17];

    (void)state;
    nwb_run_id_generate(a);
    nwb_run_id_generate(b);
    assert_int_equal(strlen(a), 16);
    assert_int_equal(strspn(a, "0123456789abcdef"), 16);
    assert_string_not_equal(a, b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_safe_name_keeps_plain_names),
        cmocka_unit_test(test_safe_name_neutralises_paths_and_dots),
        cmocka_unit_test(test_safe_name_caps_length),
        cmocka_unit_test(test_safe_name_run_ids_are_16_hex_and_differ),
    };

    return cmocka_run_group_tests_name("common.safe_name", tests, NULL, NULL);
}
