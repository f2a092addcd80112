/* SPDX-License-Identifier: MIT */
/*
 * test_crash_frames.c - frames.tsv, the symbolised stack nwb-symbolize writes and the server
 * reads back (crash_frames.c): records and fields, every bound at its edge and one past it,
 * malformed files refused with a one-line reason, and the signature built from the crashing
 * thread's frames (crash_analysis.c), which the server prefers to crash.txt's backtrace.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "nwb/buf.h"

#include "crash_analysis.h"
#include "crash_frames.h"
#include "crash_signature.h"

struct counts {
    unsigned threads, frames, missing;
    char first_function[64];
    unsigned first_line;
};

static int c_thread(void *ctx, uint32_t tid, int crashed, struct nwb_crash_str name)
{
    struct counts *c = ctx;

    (void)tid, (void)crashed, (void)name;
    c->threads++;
    return 0;
}

static int c_frame(void *ctx, const struct nwb_crash_frame_rec *f)
{
    struct counts *c = ctx;

    if (c->frames++ == 0) {
        snprintf(c->first_function, sizeof(c->first_function), "%.*s", (int)f->function.len,
                 f->function.s);
        c->first_line = f->line;
    }
    return 0;
}

static int c_missing(void *ctx, struct nwb_crash_str build_id, struct nwb_crash_str module)
{
    struct counts *c = ctx;

    (void)build_id, (void)module;
    c->missing++;
    return 0;
}

static int parse(const char *text, size_t len, struct counts *c, char *why)
{
    const struct nwb_crash_frames_cb cb = {c_thread, c_frame, c_missing, c};

    memset(c, 0, sizeof(*c));
    why[0] = '\0';
    return nwb_crash_frames_parse(text, len, &cb, why, 256);
}

static const char good[] =
    "nwb-frames 1\n"
    "thread\t4242\t1\trender\n"
    "frame\t55d0c0de1234\tcrash_prog\tabcd\t1234\tleaf\t/src/a.c\t45\t0\t1\n"
    "frame\t55d0c0de1300\tcrash_prog\tabcd\t1300\tabort\t\t0\t0\t1\n"
    "frame\t55d0c0de1400\tcrash_prog\tabcd\t1400\tmain\t/src/a.c\t271\t0\t1\n"
    "thread\t4243\t0\tworker\n"
    "frame\t7f0000002000\tlibc.so.6\t93ac\t3000\t\t\t0\t0\t0\n"
    "missing\t93ac\tlibc.so.6\n";

static void test_crash_frames_reads_every_record(void **state)
{
    struct counts c;
    char why[256];

    (void)state;
    assert_int_equal(parse(good, sizeof(good) - 1, &c, why), 0);
    assert_int_equal(c.threads, 2);
    assert_int_equal(c.frames, 4);
    assert_int_equal(c.missing, 1);
    assert_string_equal(c.first_function, "leaf");
    assert_int_equal(c.first_line, 45);
}

static void test_crash_frames_signature_uses_the_crashing_thread(void **state)
{
    struct nwb_crash_skip skip;
    char sig[NWB_CRASH_SIG_MAX + 2];

    (void)state;
    nwb_crash_skip_defaults(&skip);
    assert_int_equal(nwb__crash_analysis_signature_from_frames("SIGSEGV", good, sizeof(good) - 1,
                                                               &skip, sig, sizeof(sig)),
                     (int)strlen("SIGSEGV | leaf | main"));
    assert_string_equal(sig, "SIGSEGV | leaf | main"); /* abort skipped, worker not used */
    assert_int_equal(nwb__crash_analysis_signature_from_frames("SIGSEGV", "nwb-frames 1\n", 13,
                                                               &skip, sig, sizeof(sig)),
                     -EINVAL);
    /* Unsymbolised frames name module+offset, library modules skipped. */
    {
        static const char raw[] = "nwb-frames 1\nthread\t1\t1\tt\n"
                                  "frame\t7f01\tlibc.so.6\t\t2724a\t\t\t0\t0\t0\n"
                                  "frame\t5501\tgame\t\t1f00\t\t\t0\t0\t0\n";

        assert_true(nwb__crash_analysis_signature_from_frames("SIGABRT", raw, sizeof(raw) - 1,
                                                              &skip, sig, sizeof(sig)) > 0);
        assert_string_equal(sig, "SIGABRT | game+0x1f00");
    }
}

/* A file of one thread with @p frames frames whose function is @p fn_len bytes. */
static char *frames_file(unsigned threads, unsigned frames, size_t fn_len, size_t *len)
{
    nwb_buf_t b = NWB_BUF_INIT(64u << 20);
    char *fn = malloc(fn_len + 1);

    assert_non_null(fn);
    memset(fn, 'f', fn_len);
    fn[fn_len] = '\0';
    assert_int_equal(nwb_buf_append_str(&b, "nwb-frames 1\n"), 0);
    for (unsigned t = 0; t < threads; t++) {
        assert_int_equal(nwb_buf_appendf(&b, "thread\t%u\t%d\tt\n", t + 1, t == 0), 0);
        for (unsigned i = 0; i < frames; i++) {
            assert_int_equal(nwb_buf_appendf(&b, "frame\t1\tm\t\t1\t%s\t\t0\t0\t1\n", fn), 0);
        }
    }
    free(fn);
    assert_int_equal(nwb_buf_append(&b, "", 1), 0);
    *len = b.len - 1;
    return (char *)b.data;
}

static void test_crash_frames_bounds_at_the_edge(void **state)
{
    struct counts c;
    char why[256];
    size_t len;
    char *t;

    (void)state;
    t = frames_file(1, NWB_CRASH_FRAMES_PER_THREAD, 1, &len);
    assert_int_equal(parse(t, len, &c, why), 0);
    free(t);
    t = frames_file(1, NWB_CRASH_FRAMES_PER_THREAD + 1, 1, &len);
    assert_int_equal(parse(t, len, &c, why), -EINVAL);
    assert_non_null(strstr(why, "more than 256 frames"));
    free(t);
    t = frames_file(NWB_CRASH_FRAMES_TOTAL_MAX / 8, 8, 1, &len);
    assert_int_equal(parse(t, len, &c, why), 0);
    free(t);
    t = frames_file(NWB_CRASH_FRAMES_TOTAL_MAX / 8 + 1, 8, 1, &len);
    assert_int_equal(parse(t, len, &c, why), -EINVAL);
    free(t);
    t = frames_file(NWB_CRASH_FRAMES_THREADS_MAX, 0, 1, &len);
    assert_int_equal(parse(t, len, &c, why), 0);
    free(t);
    t = frames_file(NWB_CRASH_FRAMES_THREADS_MAX + 1, 0, 1, &len);
    assert_int_equal(parse(t, len, &c, why), -EINVAL);
    assert_non_null(strstr(why, "more than 1024 threads"));
    free(t);
    t = frames_file(1, 1, NWB_CRASH_FRAMES_FUNCTION_MAX, &len);
    assert_int_equal(parse(t, len, &c, why), 0);
    free(t);
    t = frames_file(1, 1, NWB_CRASH_FRAMES_FUNCTION_MAX + 1, &len);
    assert_int_equal(parse(t, len, &c, why), -EINVAL);
    assert_string_equal(why, "line 3: bad frame record");
    free(t);
    /* The whole file: the bound is checked before anything is read. */
    t = calloc(1, NWB_CRASH_FRAMES_TEXT_MAX + 1);
    assert_non_null(t);
    memcpy(t, "nwb-frames 1\n", 13);
    assert_int_equal(parse(t, NWB_CRASH_FRAMES_TEXT_MAX + 1, &c, why), -E2BIG);
    free(t);
}

static void test_crash_frames_refuses_malformed_files(void **state)
{
    static const char *const bad[] = {
        "",
        "nwb-frames 2\n",
        "nwb-frames 1",
        "nwb-frames 1\nframe\t1\tm\t\t1\tf\t\t0\t0\t1\n",                      /* before a thread */
        "nwb-frames 1\nthread\t1\t0\ta\nthread\t2\t1\tb\n",                    /* second crashed */
        "nwb-frames 1\nthread\t1\t1\tname_of_sixteen!\n",                      /* name too long */
        "nwb-frames 1\nthread\tx\t1\tn\n",                                     /* tid */
        "nwb-frames 1\nthread\t1\t2\tn\n",                                     /* flag */
        "nwb-frames 1\nthread\t1\t1\tn\textra\n",                              /* fields */
        "nwb-frames 1\nthread\t1\t1\tn\x01\n",                                 /* control byte */
        "nwb-frames 1\nthread\t1\t1\tn\nframe\t1\tm\tabc\t1\tf\t\t0\t0\t1\n",  /* odd build id */
        "nwb-frames 1\nthread\t1\t1\tn\nframe\t1\tm\tABCD\t1\tf\t\t0\t0\t1\n", /* uppercase */
        "nwb-frames 1\nthread\t1\t1\tn\nframe\t11111111111111111\tm\t\t1\tf\t\t0\t0\t1\n",
        "nwb-frames 1\nthread\t1\t1\tn\nframe\t\tm\t\t1\tf\t\t0\t0\t1\n", /* empty pc */
        "nwb-frames 1\nthread\t1\t1\tn\nframe\t1\tm\t\t1\tf\t\t99999999999\t0\t1\n",
        "nwb-frames 1\nthread\t1\t1\tn\nframe\t1\tm\t\t1\tf\t\t0\t0\n", /* nine fields */
        "nwb-frames 1\nmissing\t\tm\n",                                 /* empty build id */
        "nwb-frames 1\nunknown\n",
        "nwb-frames 1\nthread\t1\t1\tn", /* no newline */
    };
    struct counts c;
    char why[256];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const int rc = parse(bad[i], strlen(bad[i]), &c, why);

        if (rc != -EINVAL) {
            fail_msg("case %zu: %d", i, rc);
        }
        assert_true(why[0] != '\0' && strchr(why, '\n') == NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crash_frames_reads_every_record),
        cmocka_unit_test(test_crash_frames_signature_uses_the_crashing_thread),
        cmocka_unit_test(test_crash_frames_bounds_at_the_edge),
        cmocka_unit_test(test_crash_frames_refuses_malformed_files),
    };

    return cmocka_run_group_tests_name("server.crash_frames", tests, NULL, NULL);
}
