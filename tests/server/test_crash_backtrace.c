/* SPDX-License-Identifier: MIT */
/*
 * test_crash_backtrace.c - the strict parser of crash.txt's [backtrace] section
 * (server/src/crash_backtrace.c) at every rule and bound, and the fallback signature it feeds
 * (crash_analysis.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crash_analysis.h"
#include "crash_backtrace.h"

static int parse(const char *text, struct nwb_crash_bt_frame *f, char *why)
{
    return nwb_crash_bt_parse(text, strlen(text), f, NWB_CRASH_BT_FRAMES_MAX, why, 160);
}

static void test_frames_are_read(void **state)
{
    static const char text[] = "signal=SIGSEGV\n\n[backtrace]\n# a comment\n"
                               "#0 0x0000560000001000 /opt/game/demo+0x1000\n"
                               "#1 0x00007F0000029D90 /usr/lib/libc.so.6+0x29d90\r\n"
                               "#2 0x1 ?\n"
                               "#3 0x2 /path with+spaces/x+0x20\n"
                               "\n[registers]\n#9 not a frame\n";
    struct nwb_crash_bt_frame f[NWB_CRASH_BT_FRAMES_MAX];
    char why[160];
    (void)state;

    assert_int_equal(parse(text, f, why), 4);
    assert_int_equal(f[0].pc, 0x560000001000ull);
    assert_int_equal(f[0].offset, 0x1000);
    assert_int_equal(f[0].module_len, strlen("/opt/game/demo"));
    assert_memory_equal(f[0].module, "/opt/game/demo", f[0].module_len);
    assert_int_equal(f[1].pc, 0x7f0000029d90ull);
    assert_null(f[2].module);
    assert_int_equal(f[3].offset, 0x20);
    assert_memory_equal(f[3].module, "/path with+spaces/x", f[3].module_len);
    assert_int_equal(parse("no section\n", f, why), 0);
    assert_int_equal(parse("[backtrace]\n", f, why), 0);
}

static void test_malformed_frames_are_refused(void **state)
{
    static const char *const bad[] = {
        "[backtrace]\n#1 0x1 /a+0x1\n",                 /* not numbered from 0 */
        "[backtrace]\n#0 0x1 /a+0x1\n#0 0x1 /a+0x1\n",  /* repeated number */
        "[backtrace]\n#0 1 /a+0x1\n",                   /* pc without 0x */
        "[backtrace]\n#0 0xzz /a+0x1\n",                /* bad hex */
        "[backtrace]\n#0 0x11111111111111111 /a+0x1\n", /* 17 digits */
        "[backtrace]\n#0 0x1 /a\n",                     /* no +0x offset */
        "[backtrace]\n#0 0x1 +0x1\n",                   /* empty module */
        "[backtrace]\n#0 0x1 /a\tb+0x1\n",              /* control byte */
        "[backtrace]\n#0 0x1\n",                        /* nothing after the pc */
        "[backtrace]\nrip=1\n",                         /* not a frame line */
        "[backtrace]\n#x 0x1 /a+0x1\n",                 /* not a number */
    };
    struct nwb_crash_bt_frame f[NWB_CRASH_BT_FRAMES_MAX];
    char why[160];
    (void)state;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        if (parse(bad[i], f, why) != -1) {
            fail_msg("accepted: %s", bad[i]);
        }
        assert_true(why[0] != '\0');
    }
}

static void test_bounds(void **state)
{
    struct nwb_crash_bt_frame f[NWB_CRASH_BT_FRAMES_MAX];
    char why[160];
    char *text = malloc(NWB_CRASH_BT_FRAMES_MAX * 64 + 2 * NWB_CRASH_BT_MODULE_MAX + 64);
    size_t len = 0;
    (void)state;

    assert_non_null(text);
    len += (size_t)sprintf(text, "[backtrace]\n");
    for (unsigned i = 0; i < NWB_CRASH_BT_FRAMES_MAX + 5; i++) {
        len += (size_t)sprintf(text + len, "#%u 0x%x /a+0x%x\n", i, i, i);
    }
    /* Frames beyond the bound are not read (and cannot fail the parse). */
    assert_int_equal(nwb_crash_bt_parse(text, len, f, NWB_CRASH_BT_FRAMES_MAX, why, sizeof(why)),
                     (int)NWB_CRASH_BT_FRAMES_MAX);
    assert_int_equal(nwb_crash_bt_parse(text, len, f, 3, why, sizeof(why)), 3);

    /* A module path of exactly the bound is read, one byte more refused. */
    len = (size_t)sprintf(text, "[backtrace]\n#0 0x1 ");
    memset(text + len, 'm', NWB_CRASH_BT_MODULE_MAX);
    len += NWB_CRASH_BT_MODULE_MAX;
    len += (size_t)sprintf(text + len, "+0x1\n");
    assert_int_equal(nwb_crash_bt_parse(text, len, f, NWB_CRASH_BT_FRAMES_MAX, why, sizeof(why)),
                     1);
    len = (size_t)sprintf(text, "[backtrace]\n#0 0x1 ");
    memset(text + len, 'm', NWB_CRASH_BT_MODULE_MAX + 1);
    len += NWB_CRASH_BT_MODULE_MAX + 1;
    len += (size_t)sprintf(text + len, "+0x1\n");
    assert_int_equal(nwb_crash_bt_parse(text, len, f, NWB_CRASH_BT_FRAMES_MAX, why, sizeof(why)),
                     -1);
    free(text);
}

static void test_text_beyond_the_bound_is_not_read(void **state)
{
    const size_t len = NWB_CRASH_BT_TEXT_MAX + 64;
    char *text = malloc(len);
    struct nwb_crash_bt_frame f[4];
    char why[160];
    (void)state;

    assert_non_null(text);
    memset(text, 'x', len);
    text[NWB_CRASH_BT_TEXT_MAX - 1] = '\n';
    memcpy(text + NWB_CRASH_BT_TEXT_MAX, "[backtrace]\n#0 0x1 /a+0x1\n", 26);
    assert_int_equal(nwb_crash_bt_parse(text, len, f, 4, why, sizeof(why)), 0);
    free(text);
}

static void test_fallback_signature(void **state)
{
    static const char text[] = "[backtrace]\n#0 0x7f01 /lib/x86_64-linux-gnu/libc.so.6+0x969fc\n"
                               "#1 0x7f02 /lib/x86_64-linux-gnu/libc.so.6+0x42476\n"
                               "#2 0x5601 /opt/game/nwb-demo+0x7097\n#3 0x5602 ?\n"
                               "#4 0x5603 /opt/game/nwb-demo+0x8123\n"
                               "#5 0x5604 /opt/game/nwb-demo+0x9000\n"
                               "#6 0x5605 /opt/game/nwb-demo+0xa000\n";
    struct nwb_crash_skip skip;
    char sig[NWB_CRASH_SIG_MAX + 1];
    (void)state;

    nwb_crash_skip_defaults(&skip);
    assert_int_equal(nwb__crash_analysis_signature_from_text("SIGABRT", text, sizeof(text) - 1,
                                                             &skip, sig, sizeof(sig)),
                     (int)strlen("SIGABRT | nwb-demo+0x7097 | nwb-demo+0x8123 | nwb-demo+0x9000"));
    assert_string_equal(sig, "SIGABRT | nwb-demo+0x7097 | nwb-demo+0x8123 | nwb-demo+0x9000");
    assert_int_equal(nwb__crash_analysis_signature_from_text("SIGABRT", "[backtrace]\n#1 0x1 ?\n",
                                                             21, &skip, sig, sizeof(sig)),
                     -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frames_are_read),
        cmocka_unit_test(test_malformed_frames_are_refused),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_text_beyond_the_bound_is_not_read),
        cmocka_unit_test(test_fallback_signature),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
