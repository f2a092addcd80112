/* SPDX-License-Identifier: MIT */
/*
 * test_log_args.c - the C macros' capture by type (_Generic): every argument
 * type reaches the logger's write_args with its class and value, long double
 * and more than NWB_LOG_MAX_ARGS arguments take the va_list entry, and
 * nwb_log_format_args prints like snprintf, converts mismatched classes,
 * refuses %n and cuts at its bound.
 */
#undef NWB_FINAL /* INFO compiled in, in every config */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "nwb/log.h"

struct capture {
    int arg_calls;
    int va_calls;
    int raw_calls;
    uint64_t types;
    unsigned nargs;
    nwb_log_arg_t args[NWB_LOG_MAX_ARGS];
    char last[512];
};

static void cap_write(void *self, nwb_log_site_t *site, va_list ap)
{
    struct capture *c = self;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    vsnprintf(c->last, sizeof(c->last), site->fmt, ap);
#pragma GCC diagnostic pop
    c->va_calls++;
}

static void cap_write_raw(void *self, nwb_log_site_t *site, const char *msg, size_t len)
{
    struct capture *c = self;

    (void)site;
    snprintf(c->last, sizeof(c->last), "%.*s", (int)len, msg);
    c->raw_calls++;
}

static void cap_write_args(void *self, nwb_log_site_t *site, uint64_t types,
                           const nwb_log_arg_t *args, unsigned nargs)
{
    struct capture *c = self;

    assert_true(nargs <= NWB_LOG_MAX_ARGS);
    c->arg_calls++;
    c->types = types;
    c->nargs = nargs;
    memcpy(c->args, args, nargs * sizeof(*args));
    assert_true(nwb_log_format_args(c->last, sizeof(c->last), site->fmt, types, args, nargs) >= 0);
}

static const nwb_logger_ops_t cap_ops = {cap_write, cap_write_raw, NULL, cap_write_args};
static const nwb_logger_ops_t va_only_ops = {cap_write, cap_write_raw, NULL, NULL};

enum colour { RED = 1, GREEN = 2 };

static void test_every_argument_type_is_captured_by_its_class(void **state)
{
    struct capture c = {0};
    nwb_logger_t l = {&cap_ops, &c};
    nwb_logger_guard_t g;
    const char cs = 'x';
    const signed char sc = -3;
    const unsigned char uc = 250;
    const short sh = -30000;
    const unsigned short us = 60000;
    const unsigned u = 4000000000u;
    const long lo = -5000000000L;
    const unsigned long ul = 18446744073709551615UL;
    const _Bool b = 1;
    const enum colour e = GREEN;
    const float f = 1.5f;
    char arr[8] = "arr";
    int x = 0;
    const char *null_str = NULL;

    (void)state;
    assert_int_equal(nwb_logger_register(&l, &g), 0);
    NWB_LOGGER_INFO("%c %hhd %hhu %hd %hu %d %u", cs, sc, uc, sh, us, -7, u);
    assert_int_equal(c.arg_calls, 1);
    assert_int_equal(c.nargs, 7);
    assert_string_equal(c.last, "x -3 250 -30000 60000 -7 4000000000");
    assert_int_equal(NWB_LOG_ARG_CLASS(c.types, 0), NWB_LOG_ARG_SIGNED);
    assert_int_equal(NWB_LOG_ARG_CLASS(c.types, 1), NWB_LOG_ARG_SIGNED);
    assert_int_equal(NWB_LOG_ARG_CLASS(c.types, 2), NWB_LOG_ARG_UNSIGNED);
    assert_int_equal(NWB_LOG_ARG_CLASS(c.types, 3), NWB_LOG_ARG_SIGNED);
    assert_int_equal(NWB_LOG_ARG_CLASS(c.types, 4), NWB_LOG_ARG_UNSIGNED);
    assert_int_equal(NWB_LOG_ARG_CLASS(c.types, 6), NWB_LOG_ARG_UNSIGNED);
    assert_int_equal(c.args[1].i, -3);          /* sign-extended */
    assert_int_equal(c.args[6].u, 4000000000u); /* zero-extended */

    NWB_LOGGER_INFO("%ld %lu %lld %llu %d %d", lo, ul, -1LL, 2ULL, b, e);
    assert_string_equal(c.last, "-5000000000 18446744073709551615 -1 2 1 2");
    assert_int_equal(NWB_LOG_ARG_CLASS(c.types, 0), NWB_LOG_ARG_SIGNED);
    assert_int_equal(NWB_LOG_ARG_CLASS(c.types, 1), NWB_LOG_ARG_UNSIGNED);
    assert_int_equal(NWB_LOG_ARG_CLASS(c.types, 4), NWB_LOG_ARG_UNSIGNED); /* _Bool */
    assert_int_equal(c.args[0].i, lo);

    NWB_LOGGER_INFO("%f %g %s %s %s %p %p", f, 2.25, "lit", arr, null_str, (void *)&x,
                    (void *)NULL);
    assert_int_equal(NWB_LOG_ARG_CLASS(c.types, 0), NWB_LOG_ARG_DOUBLE);
    assert_true(c.args[0].d == 1.5);
    assert_int_equal(NWB_LOG_ARG_CLASS(c.types, 2), NWB_LOG_ARG_POINTER);
    assert_int_equal(NWB_LOG_ARG_CLASS(c.types, 3), NWB_LOG_ARG_POINTER); /* the array decays */
    assert_ptr_equal(c.args[3].p, arr);
    assert_ptr_equal(c.args[5].p, &x);
    {
        char want[128];

        snprintf(want, sizeof(want), "1.500000 2.25 lit arr (null) %p (nil)", (void *)&x);
        assert_string_equal(c.last, want);
    }
    /* '*' width and precision are int arguments like any other */
    NWB_LOGGER_INFO("[%*d|%-*d|%.*s|%.*f]", 5, 42, -4, 7, 2, "abcdef", -1, 0.5);
    assert_string_equal(c.last, "[   42|7   |ab|0.500000]");
    assert_int_equal(c.va_calls, 0);
    assert_int_equal(nwb_logger_unregister(&g), 0);
}

static void test_long_double_and_too_many_arguments_take_the_va_list_entry(void **state)
{
    struct capture c = {0};
    nwb_logger_t l = {&cap_ops, &c};
    nwb_logger_guard_t g;

    (void)state;
    assert_int_equal(nwb_logger_register(&l, &g), 0);
    NWB_LOGGER_INFO("%d %Lf", 1, 2.5L);
    assert_int_equal(c.va_calls, 1);
    assert_string_equal(c.last, "1 2.500000");
    /* NWB_LOG_MAX_ARGS (24) arguments: captured; 25: the va_list entry */
    NWB_LOGGER_INFO("%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d", 1, 2, 3, 4, 5, 6, 7, 8, 9,
                    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4);
    assert_int_equal(c.arg_calls, 1);
    assert_int_equal(c.nargs, 24);
    assert_string_equal(c.last, "123456789012345678901234");
    NWB_LOGGER_INFO("%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d", 1, 2, 3, 4, 5, 6, 7, 8, 9,
                    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5);
    assert_int_equal(c.va_calls, 2);
    assert_string_equal(c.last, "1234567890123456789012345");
    assert_int_equal(nwb_logger_unregister(&g), 0);
}

static void test_logger_without_write_args_gets_the_formatted_text(void **state)
{
    struct capture c = {0};
    nwb_logger_t l = {&va_only_ops, &c};
    nwb_logger_guard_t g;

    (void)state;
    assert_int_equal(nwb_logger_register(&l, &g), 0);
    NWB_LOGGER_INFO("x=%d s=%s", 5, "five");
    assert_int_equal(c.raw_calls, 1);
    assert_string_equal(c.last, "x=5 s=five");
    assert_int_equal(nwb_logger_unregister(&g), 0);
}

static int format(char *dst, size_t cap, const char *fmt, uint64_t types, const nwb_log_arg_t *args,
                  unsigned n)
{
    return nwb_log_format_args(dst, cap, fmt, types, args, n);
}

#define T2(a, b) ((uint64_t)(a) | ((uint64_t)(b) << 2))

static void test_mismatched_classes_are_converted_never_dereferenced(void **state)
{
    char out[128];
    nwb_log_arg_t a[3];

    (void)state;
    a[0].d = 2.75; /* %d given a double: converted, 2 */
    a[1].i = 3;    /* %f given an int: 3.0 */
    assert_int_equal(
        format(out, sizeof(out), "%d %f", T2(NWB_LOG_ARG_DOUBLE, NWB_LOG_ARG_SIGNED), a, 2),
        (int)strlen("2 3.000000"));
    assert_string_equal(out, "2 3.000000");
    a[0].i = 42; /* %s given an integer: never read as a pointer */
    a[1].u = 0;  /* %p given 0 */
    format(out, sizeof(out), "%s|%p", T2(NWB_LOG_ARG_SIGNED, NWB_LOG_ARG_UNSIGNED), a, 2);
    assert_string_equal(out, "(null)|(nil)");
    a[0].d = 1e300; /* out of range and NaN: clamped, 0 */
    a[1].d = __builtin_nan("");
    format(out, sizeof(out), "%lld %d", T2(NWB_LOG_ARG_DOUBLE, NWB_LOG_ARG_DOUBLE), a, 2);
    assert_string_equal(out, "9223372036854775807 0");
    a[0].i = 1; /* a missing argument is 0 */
    format(out, sizeof(out), "%d %d %s", T2(NWB_LOG_ARG_SIGNED, 0), a, 1);
    assert_string_equal(out, "1 0 (null)");
}

static void test_format_args_refuses_percent_n_and_cuts_at_its_bound(void **state)
{
    char out[16];
    nwb_log_arg_t a[1] = {{.i = 5}};

    (void)state;
    assert_int_equal(format(out, sizeof(out), "x%n", NWB_LOG_ARG_POINTER, a, 1), -1);
    assert_int_equal(format(out, sizeof(out), "%5n", NWB_LOG_ARG_POINTER, a, 1), -1);
    assert_int_equal(format(out, 0, "x", 0, a, 0), -1);
    assert_int_equal(format(out, 1, "abc", 0, a, 0), 3);
    assert_string_equal(out, "");
    /* 15 bytes fit exactly; 16 are cut and end in "..." */
    assert_int_equal(format(out, sizeof(out), "%015d", 0, a, 1), 15);
    assert_string_equal(out, "000000000000005");
    assert_int_equal(format(out, sizeof(out), "%016d", 0, a, 1), 16); /* like snprintf */
    assert_string_equal(out, "000000000000...");
    assert_int_equal(format(out, sizeof(out), "0123456789abcdefg", 0, a, 0), 17);
    assert_string_equal(out, "0123456789ab...");
    /* %% and text printf does not know are kept as text; %m needs no argument */
    format(out, sizeof(out), "%% %y %d", 0, a, 1);
    assert_string_equal(out, "% %y 5");
    /* positional arguments, "*N$" widths included */
    {
        char big[64];
        nwb_log_arg_t b[3] = {{.p = "world"}, {.p = "hello"}, {.i = 6}};
        const uint64_t t = NWB_LOG_ARG_POINTER | (NWB_LOG_ARG_POINTER << 2);

        format(big, sizeof(big), "%2$s %1$s|%2$*3$s|", t, b, 3);
        assert_string_equal(big, "hello world| hello|");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_argument_type_is_captured_by_its_class),
        cmocka_unit_test(test_long_double_and_too_many_arguments_take_the_va_list_entry),
        cmocka_unit_test(test_logger_without_write_args_gets_the_formatted_text),
        cmocka_unit_test(test_mismatched_classes_are_converted_never_dereferenced),
        cmocka_unit_test(test_format_args_refuses_percent_n_and_cuts_at_its_bound),
    };

    return cmocka_run_group_tests_name("common.log_args", tests, NULL, NULL);
}
