/* SPDX-License-Identifier: MIT */
/*
 * test_crash_signature.c - crash grouping signatures (server/src/crash_signature.c): the
 * skip list and its text form at every bound, function-name normalisation, the fallback to
 * module+offset, the all-skipped case, and group ids.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "crash_signature.h"

#define FN(s)                                                                                      \
    {                                                                                              \
        s, sizeof(s) - 1, "/opt/game/bin/nwb-demo", 22, 0x1234                                     \
    }
#define UNSYM(m, off)                                                                              \
    {                                                                                              \
        NULL, 0, m, sizeof(m) - 1, off                                                             \
    }

static size_t sig_of(const struct nwb_crash_sig_frame *f, size_t n, char *out)
{
    struct nwb_crash_skip skip;

    nwb_crash_skip_defaults(&skip);
    return nwb_crash_signature("SIGABRT", f, n, &skip, out, NWB_CRASH_SIG_MAX + 1);
}

static void test_runtime_frames_are_skipped(void **state)
{
    const struct nwb_crash_sig_frame f[] = {FN("__pthread_kill_implementation"),
                                            FN("raise"),
                                            FN("abort"),
                                            FN("demo_abort"),
                                            FN("demo_frame"),
                                            FN("main"),
                                            FN("__libc_start_call_main")};
    char sig[NWB_CRASH_SIG_MAX + 1];
    const size_t len = sig_of(f, 7, sig);
    (void)state;

    assert_string_equal(sig, "SIGABRT | demo_abort | demo_frame | main");
    assert_int_equal(len, strlen(sig));
}

static void test_names_are_normalised(void **state)
{
    const struct nwb_crash_sig_frame f[] = {FN("leaf.isra.0"), FN("mid.cold"),
                                            FN("ns::Thing::run(int, char const*)")};
    char sig[NWB_CRASH_SIG_MAX + 1];
    char out[NWB_CRASH_SIG_FRAME_MAX + 1];
    (void)state;

    sig_of(f, 3, sig);
    assert_string_equal(sig, "SIGABRT | leaf | mid | ns::Thing::run");
    assert_int_equal(nwb_crash_sig_normalise("f.part.2.constprop.0", 20, out, sizeof(out)), 1);
    assert_string_equal(out, "f");
    assert_int_equal(nwb_crash_sig_normalise("g+0x1f", 6, out, sizeof(out)), 1);
    assert_string_equal(out, "g");
    /* Control bytes and the separator never reach the signature. */
    assert_int_equal(nwb_crash_sig_normalise("a|b\nc\xff", 6, out, sizeof(out)), 6);
    assert_string_equal(out, "a?b?c?");
    /* Not clone suffixes. */
    nwb_crash_sig_normalise("v2", 2, out, sizeof(out));
    assert_string_equal(out, "v2");
    nwb_crash_sig_normalise("x.9", 3, out, sizeof(out));
    assert_string_equal(out, "x.9");
}

static void test_unsymbolised_frames_read_as_module_and_offset(void **state)
{
    const struct nwb_crash_sig_frame f[] = {UNSYM("/usr/lib/libgame.so.1", 0x7097), FN("main")};
    char sig[NWB_CRASH_SIG_MAX + 1];
    (void)state;

    sig_of(f, 2, sig);
    assert_string_equal(sig, "SIGABRT | libgame.so.1+0x7097 | main");
}

/* An unsymbolised abort: libc's frames go by their module's file name. */
static void test_unsymbolised_system_libraries_are_skipped(void **state)
{
    const struct nwb_crash_sig_frame f[] = {
        UNSYM("/usr/lib/x86_64-linux-gnu/libc.so.6", 0x8aebc),
        UNSYM("/usr/lib/x86_64-linux-gnu/libc.so.6", 0x3cfb2), UNSYM("/opt/game/nwb-demo", 0x7097),
        UNSYM("/opt/game/nwb-demo", 0x8123), UNSYM("/usr/lib/x86_64-linux-gnu/libc.so.6", 0x2724a)};
    char sig[NWB_CRASH_SIG_MAX + 1];
    (void)state;

    sig_of(f, 5, sig);
    assert_string_equal(sig, "SIGABRT | nwb-demo+0x7097 | nwb-demo+0x8123");
}

static void test_all_skipped_still_names_frames(void **state)
{
    const struct nwb_crash_sig_frame f[] = {FN("raise"), FN("abort")};
    char sig[NWB_CRASH_SIG_MAX + 1];
    (void)state;

    sig_of(f, 2, sig);
    assert_string_equal(sig, "SIGABRT | raise | abort");
    sig_of(f, 0, sig);
    assert_string_equal(sig, "SIGABRT");
}

static void test_long_frames_stay_within_the_bound(void **state)
{
    static char longname[4096];
    struct nwb_crash_sig_frame f[3];
    char sig[NWB_CRASH_SIG_MAX + 1];
    size_t len;
    (void)state;

    memset(longname, 'a', sizeof(longname));
    for (int i = 0; i < 3; i++) {
        f[i] = (struct nwb_crash_sig_frame){longname, sizeof(longname), NULL, 0, 0};
    }
    len = sig_of(f, 3, sig);
    assert_true(len <= NWB_CRASH_SIG_MAX);
    assert_int_equal(len, strlen(sig));
    /* Each frame is cut to NWB_CRASH_SIG_FRAME_MAX bytes. */
    assert_int_equal(len, 7 + 3 * (3 + NWB_CRASH_SIG_FRAME_MAX));
}

static void test_skip_text_rules(void **state)
{
    struct nwb_crash_skip skip;
    char why[128];
    char pattern[NWB_CRASH_SKIP_PATTERN_MAX + 2];
    const char ok[] = "# engine frames\n  engine_assert*  \n\nlog_fatal\r\n";
    (void)state;

    nwb_crash_skip_defaults(&skip);
    const unsigned base = skip.count;
    assert_int_equal(nwb_crash_skip_add_text(&skip, ok, sizeof(ok) - 1, why, sizeof(why)), 0);
    assert_int_equal(skip.count, base + 2);
    assert_true(nwb_crash_skip_matches(&skip, "engine_assert_fail", 18));
    assert_true(nwb_crash_skip_matches(&skip, "log_fatal", 9));
    assert_false(nwb_crash_skip_matches(&skip, "log_fatal2", 10));
    assert_false(nwb_crash_skip_matches(&skip, "engine", 6));

    /* A pattern of exactly the bound is taken, one byte more is refused with its line. */
    memset(pattern, 'p', NWB_CRASH_SKIP_PATTERN_MAX);
    assert_int_equal(
        nwb_crash_skip_add_text(&skip, pattern, NWB_CRASH_SKIP_PATTERN_MAX, why, sizeof(why)), 0);
    memset(pattern, 'p', NWB_CRASH_SKIP_PATTERN_MAX + 1);
    assert_int_equal(
        nwb_crash_skip_add_text(&skip, pattern, NWB_CRASH_SKIP_PATTERN_MAX + 1, why, sizeof(why)),
        -EINVAL);
    assert_non_null(strstr(why, "line 1"));
    assert_int_equal(nwb_crash_skip_add_text(&skip, "a\nb*c\n", 6, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "line 2"));
    assert_int_equal(nwb_crash_skip_add_text(&skip, "a b\n", 4, why, sizeof(why)), -EINVAL);
    assert_int_equal(nwb_crash_skip_add_text(&skip, "a|b\n", 4, why, sizeof(why)), -EINVAL);
    assert_int_equal(nwb_crash_skip_add_text(&skip, "\x01\n", 2, why, sizeof(why)), -EINVAL);
    assert_int_equal(skip.count, base + 3); /* unchanged by the refusals */
}

static void test_skip_list_is_bounded(void **state)
{
    struct nwb_crash_skip skip;
    char why[128];
    char text[NWB_CRASH_SKIP_PATTERNS * 8];
    size_t len = 0;
    (void)state;

    skip.count = 0;
    for (unsigned i = 0; i < NWB_CRASH_SKIP_PATTERNS; i++) {
        len += (size_t)snprintf(text + len, sizeof(text) - len, "f%u\n", i);
    }
    assert_int_equal(nwb_crash_skip_add_text(&skip, text, len, why, sizeof(why)), 0);
    assert_int_equal(skip.count, NWB_CRASH_SKIP_PATTERNS);
    assert_int_equal(nwb_crash_skip_add_text(&skip, "one_more\n", 9, why, sizeof(why)), -E2BIG);
    assert_int_equal(skip.count, NWB_CRASH_SKIP_PATTERNS);
}

static void test_group_ids(void **state)
{
    char a[NWB_CRASH_GROUP_ID_LEN + 1], b[NWB_CRASH_GROUP_ID_LEN + 1];
    const char s1[] = "SIGSEGV | demo_segv | demo_frame | main";
    const char s2[] = "SIGSEGV | demo_segv | demo_frame | main2";
    (void)state;

    nwb_crash_group_id(s1, sizeof(s1) - 1, a);
    nwb_crash_group_id(s1, sizeof(s1) - 1, b);
    assert_string_equal(a, b);
    assert_int_equal(strlen(a), NWB_CRASH_GROUP_ID_LEN);
    assert_int_equal(strspn(a, "0123456789abcdef"), NWB_CRASH_GROUP_ID_LEN);
    nwb_crash_group_id(s2, sizeof(s2) - 1, b);
    assert_string_not_equal(a, b);
    /* SHA-256("abc") starts ba7816bf8f01cfea. */
    nwb_crash_group_id("abc", 3, a);
    assert_string_equal(a, "ba7816bf8f01cfea");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runtime_frames_are_skipped),
        cmocka_unit_test(test_names_are_normalised),
        cmocka_unit_test(test_unsymbolised_frames_read_as_module_and_offset),
        cmocka_unit_test(test_unsymbolised_system_libraries_are_skipped),
        cmocka_unit_test(test_all_skipped_still_names_frames),
        cmocka_unit_test(test_long_frames_stay_within_the_bound),
        cmocka_unit_test(test_skip_text_rules),
        cmocka_unit_test(test_skip_list_is_bounded),
        cmocka_unit_test(test_group_ids),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
