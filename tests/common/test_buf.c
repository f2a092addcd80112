/* SPDX-License-Identifier: MIT */
/*
 * test_buf.c - the capped byte buffer (nwb/buf.h) at its edges: the cap reached exactly, one
 * byte over it, printf output longer than the stack copy and at the cap, allocation failure.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/buf.h"
#include "nwb/error.h"

/* @p n bytes of a recognisable pattern. */
static void pattern(char *p, size_t n, char seed)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (char)('a' + (seed + i) % 26);
    }
}

static void test_buf_starts_empty_and_allocates_on_first_append(void **state)
{
    nwb_buf_t b = NWB_BUF_INIT(64);
    nwb_buf_t c;

    (void)state;
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.max, 64);
    nwb_buf_init(&c, 7);
    assert_null(c.data);
    assert_int_equal(c.max, 7);
    /* Nothing to append: no allocation either. */
    assert_int_equal(nwb_buf_append(&b, NULL, 0), 0);
    assert_null(b.data);
    assert_int_equal(nwb_buf_append_str(&b, "abc"), 0);
    assert_non_null(b.data);
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.data, "abc", 3);
    /* A cap below the first allocation's size: the capacity never passes the cap. */
    assert_true(b.cap <= b.max);
    nwb_buf_cleanup(&b);
}

static void test_buf_cap_reached_exactly_then_one_byte_over_fails(void **state)
{
    char big[1000];
    nwb_buf_t b = NWB_BUF_INIT(1000);

    (void)state;
    pattern(big, sizeof(big), 0);
    assert_int_equal(nwb_buf_append(&b, big, 999), 0);
    assert_int_equal(nwb_buf_append(&b, big + 999, 1), 0);
    assert_int_equal(b.len, 1000);
    assert_int_equal(b.cap, 1000); /* grown to the cap, not past it */
    assert_memory_equal(b.data, big, 1000);
    /* One byte over: refused, nothing changed. */
    assert_int_equal(nwb_buf_append(&b, "x", 1), NWB_ETOOBIG);
    assert_int_equal(nwb_buf_reserve(&b, 1), NWB_ETOOBIG);
    assert_int_equal(b.len, 1000);
    assert_memory_equal(b.data, big, 1000);
    /* Nothing more is always fine. */
    assert_int_equal(nwb_buf_append(&b, "x", 0), 0);
    assert_int_equal(nwb_buf_reserve(&b, 0), 0);
    nwb_buf_cleanup(&b);
}

static void test_buf_too_big_in_one_step_leaves_len_unchanged(void **state)
{
    char big[300];
    nwb_buf_t b = NWB_BUF_INIT(256);

    (void)state;
    pattern(big, sizeof(big), 3);
    assert_int_equal(nwb_buf_append(&b, big, 10), 0);
    assert_int_equal(nwb_buf_append(&b, big, 247), NWB_ETOOBIG);
    assert_int_equal(b.len, 10);
    assert_int_equal(nwb_buf_append(&b, big, 246), 0);
    assert_int_equal(b.len, 256);
    /* An extra so large that len + extra would wrap around SIZE_MAX. */
    assert_int_equal(nwb_buf_reserve(&b, SIZE_MAX), NWB_ETOOBIG);
    assert_int_equal(nwb_buf_reserve(&b, SIZE_MAX - 100), NWB_ETOOBIG);
    assert_int_equal(b.len, 256);
    nwb_buf_cleanup(&b);
}

static void test_buf_zero_cap_takes_nothing(void **state)
{
    nwb_buf_t b = NWB_BUF_INIT(0);

    (void)state;
    assert_int_equal(nwb_buf_append(&b, "", 0), 0);
    assert_int_equal(nwb_buf_append(&b, "a", 1), NWB_ETOOBIG);
    assert_int_equal(nwb_buf_appendf(&b, "%d", 1), NWB_ETOOBIG);
    assert_int_equal(b.len, 0);
    nwb_buf_cleanup(&b);
}

static void test_buf_grows_keeping_contents(void **state)
{
    static char chunk[4096];
    nwb_buf_t b = NWB_BUF_INIT(1u << 20);

    (void)state;
    for (int i = 0; i < 100; i++) {
        pattern(chunk, sizeof(chunk), (char)i);
        assert_int_equal(nwb_buf_append(&b, chunk, sizeof(chunk)), 0);
    }
    assert_int_equal(b.len, 100u * sizeof(chunk));
    assert_true(b.cap >= b.len && b.cap <= b.max);
    for (int i = 0; i < 100; i++) {
        pattern(chunk, sizeof(chunk), (char)i);
        assert_memory_equal(b.data + (size_t)i * sizeof(chunk), chunk, sizeof(chunk));
    }
    nwb_buf_cleanup(&b);
}

static void test_buf_appendf_short_and_longer_than_the_stack_copy(void **state)
{
    char want[2000];
    char arg[1500];
    nwb_buf_t b = NWB_BUF_INIT(1u << 16);

    (void)state;
    assert_int_equal(nwb_buf_appendf(&b, "n=%d s=%s", 42, "ok"), 0);
    assert_int_equal(b.len, strlen("n=42 s=ok"));
    assert_memory_equal(b.data, "n=42 s=ok", b.len);
    /* 255, 256 and 257 bytes of output: the stack copy holds 255 and its NUL. */
    for (size_t n = 255; n <= 257; n++) {
        nwb_buf_reset(&b);
        pattern(arg, n, 1);
        arg[n] = '\0';
        assert_int_equal(nwb_buf_appendf(&b, "%s", arg), 0);
        assert_int_equal(b.len, n);
        assert_memory_equal(b.data, arg, n);
    }
    /* Much longer, after earlier contents. */
    nwb_buf_reset(&b);
    assert_int_equal(nwb_buf_append_str(&b, "head:"), 0);
    pattern(arg, 1400, 2);
    arg[1400] = '\0';
    assert_int_equal(nwb_buf_appendf(&b, "[%s|%05d]", arg, 7), 0);
    snprintf(want, sizeof(want), "head:[%s|%05d]", arg, 7);
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    nwb_buf_cleanup(&b);
}

static void test_buf_appendf_at_the_cap_edge(void **state)
{
    char arg[600];
    nwb_buf_t b = NWB_BUF_INIT(512);

    (void)state;
    /* Short output that ends exactly at the cap (no room left for a NUL). */
    pattern(arg, 500, 4);
    assert_int_equal(nwb_buf_append(&b, arg, 500), 0);
    assert_int_equal(nwb_buf_appendf(&b, "%s", "0123456789ab"), 0);
    assert_int_equal(b.len, 512);
    assert_memory_equal(b.data + 500, "0123456789ab", 12);
    /* One byte more is refused with len unchanged. */
    nwb_buf_reset(&b);
    assert_int_equal(nwb_buf_append(&b, arg, 500), 0);
    assert_int_equal(nwb_buf_appendf(&b, "%s", "0123456789abc"), NWB_ETOOBIG);
    assert_int_equal(b.len, 500);

    /* Long output (past the 256-byte stack copy) that ends exactly at the cap. */
    nwb_buf_reset(&b);
    assert_int_equal(nwb_buf_append(&b, "xy", 2), 0);
    pattern(arg, 510, 5);
    arg[510] = '\0';
    assert_int_equal(nwb_buf_appendf(&b, "%s", arg), 0);
    assert_int_equal(b.len, 512);
    assert_memory_equal(b.data, "xy", 2);
    assert_memory_equal(b.data + 2, arg, 510);
    /* ... and one byte past it. */
    nwb_buf_reset(&b);
    assert_int_equal(nwb_buf_append(&b, "xyz", 3), 0);
    assert_int_equal(nwb_buf_appendf(&b, "%s", arg), NWB_ETOOBIG);
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.data, "xyz", 3);
    nwb_buf_cleanup(&b);
}

static void test_buf_allocation_failure_is_enomem_and_keeps_contents(void **state)
{
    char arg[400];
    nwb_buf_t b = NWB_BUF_INIT(1u << 20);

    (void)state;
    /* The first allocation fails. */
    nwb_alloc_fail_after(0);
    assert_int_equal(nwb_buf_append(&b, "abc", 3), -ENOMEM);
    nwb_alloc_fail_after(-1);
    assert_int_equal(b.len, 0);
    assert_null(b.data);

    /* A growth fails: the old contents stay. */
    assert_int_equal(nwb_buf_append(&b, "abc", 3), 0);
    pattern(arg, sizeof(arg), 6);
    nwb_alloc_fail_after(0);
    assert_int_equal(nwb_buf_append(&b, arg, sizeof(arg)), -ENOMEM);
    assert_int_equal(nwb_buf_reserve(&b, 10000), -ENOMEM);
    nwb_alloc_fail_after(-1);
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.data, "abc", 3);

    /* appendf longer than the stack copy, where the growth fails. */
    nwb_alloc_fail_after(0);
    arg[sizeof(arg) - 1] = '\0';
    assert_int_equal(nwb_buf_appendf(&b, "%s", arg), -ENOMEM);
    nwb_alloc_fail_after(-1);
    assert_int_equal(b.len, 3);
    nwb_buf_cleanup(&b);

    /* appendf at the cap's edge formats through a temporary copy: its allocation fails. */
    {
        nwb_buf_t e = NWB_BUF_INIT(300);

        assert_int_equal(nwb_buf_reserve(&e, 300), 0); /* room made first, at the cap */
        pattern(arg, 300, 7);
        arg[300] = '\0';
        nwb_alloc_fail_after(0);
        assert_int_equal(nwb_buf_appendf(&e, "%s", arg), -ENOMEM);
        nwb_alloc_fail_after(-1);
        assert_int_equal(e.len, 0);
        assert_int_equal(nwb_buf_appendf(&e, "%s", arg), 0);
        assert_int_equal(e.len, 300);
        assert_memory_equal(e.data, arg, 300);
        nwb_buf_cleanup(&e);
    }
}

static void test_buf_reset_keeps_memory_cleanup_releases_it(void **state)
{
    nwb_buf_t b = NWB_BUF_INIT(100);
    uint8_t *mem;

    (void)state;
    assert_int_equal(nwb_buf_append(&b, "hello", 5), 0);
    mem = b.data;
    nwb_buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_ptr_equal(b.data, mem);
    nwb_buf_cleanup(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 0);
    assert_int_equal(b.max, 100); /* usable again, same cap */
    nwb_buf_cleanup(&b);          /* idempotent */
    assert_int_equal(nwb_buf_append(&b, "again", 5), 0);
    assert_memory_equal(b.data, "again", 5);
    nwb_buf_cleanup(&b);
    nwb_buf_reset(NULL);
    nwb_buf_cleanup(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_starts_empty_and_allocates_on_first_append),
        cmocka_unit_test(test_buf_cap_reached_exactly_then_one_byte_over_fails),
        cmocka_unit_test(test_buf_too_big_in_one_step_leaves_len_unchanged),
        cmocka_unit_test(test_buf_zero_cap_takes_nothing),
        cmocka_unit_test(test_buf_grows_keeping_contents),
        cmocka_unit_test(test_buf_appendf_short_and_longer_than_the_stack_copy),
        cmocka_unit_test(test_buf_appendf_at_the_cap_edge),
        cmocka_unit_test(test_buf_allocation_failure_is_enomem_and_keeps_contents),
        cmocka_unit_test(test_buf_reset_keeps_memory_cleanup_releases_it),
    };

    return cmocka_run_group_tests_name("common.buf", tests, NULL, NULL);
}
