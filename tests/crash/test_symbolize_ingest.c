/* SPDX-License-Identifier: MIT */
/*
 * test_symbolize_ingest.c - the crash worker's side of symbolisation, in-process over the
 * real ingest (crash_int.h) and the real nwb-symbolize: a crash symbolised without symbols
 * lists its build id as missing; the re-run hook for that build id (what a symbols upload
 * calls) re-runs it once the binary is there; a symboliser that dies of a signal or writes a
 * bad frames.tsv leaves the crash failed with the reason; the re-run queue holds 64 at most.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "nwb/error.h"

#include "crash_analysis.h"
#include "crash_frames.h"
#include "crash_int.h"
#include "symbolize_test_world.h"
#include "test_support.h"

#define WAIT_MS 30000

static struct sym_world w;

static int setup_world(void **state)
{
    (void)state;
    return sym_world_setup(&w, "symbolize_ingest");
}

static int teardown_world(void **state)
{
    (void)state;
    sym_world_teardown(&w);
    return 0;
}

/* An ingest under dir/@p tag that runs @p symbolizer. */
static struct nwb__crash_ingest *ingest(const char *tag, const char *symbolizer, char *out,
                                        size_t cap)
{
    struct nwb_crash_caps caps = NWB_CRASH_CAPS_INIT;
    struct nwb__crash_ingest *ci = NULL;

    snprintf(out, cap, "%s/%s", w.dir, tag);
    snprintf(caps.symbolize.symbolizer, sizeof(caps.symbolize.symbolizer), "%s", symbolizer);
    snprintf(caps.symbolize.symbols_dir, sizeof(caps.symbolize.symbols_dir), "%s", w.symbols);
    caps.symbolize.timeout_ms = 20000;
    caps.symbolize.max_memory_bytes = 1u << 30;
    caps.symbolize.max_cpu_s = 30;
    assert_int_equal(nwb__crash_ingest_create(out, &caps, &ci), 0);
    return ci;
}

static void submit(struct nwb__crash_ingest *ci, const char *tag, char *id)
{
    size_t len;
    void *body = sym_world_package(&w, tag, &len);

    assert_non_null(body);
    assert_int_equal(nwb__crash_ingest_submit(ci, body, len, "crash_prog", "r", id), 0);
    free(body);
}

static char *analysis_file(const char *out, const char *id, const char *name)
{
    char path[1024];

    snprintf(path, sizeof(path), "%s/crashes/analysis/%s/%s", out, id, name);
    return nwb_test_read_file(path, NULL);
}

static void test_symbolize_ingest_build_id_hook_reruns_waiting_crashes(void **state)
{
    char out[700], id[NWB_CRASH_INGEST_ID_LEN + 1], want[256], path[800];
    struct nwb__crash_ingest *ci;
    char *text;

    (void)state;
    sym_world_reset(&w);
    ci = ingest("hook", NWB_SYMBOLIZE_EXE, out, sizeof(out));
    submit(ci, "hook", id);
    assert_int_equal(nwb__crash_ingest_wait_idle(ci, WAIT_MS), 0);
    text = analysis_file(out, id, NWB_CRASH_FRAMES_FILE);
    assert_non_null(text);
    snprintf(want, sizeof(want), "\nmissing\t%s\tcrash_prog\n", w.build_id);
    assert_non_null(strstr(text, want));
    free(text);
    text = analysis_file(out, id, "signature.txt");
    assert_non_null(text);
    assert_non_null(strstr(text, "SIGSEGV | crash_prog+0x"));
    free(text);

    /* Malformed build ids are refused; one no crash misses re-runs nothing. */
    assert_int_equal(nwb__crash_ingest_resymbolize_build_id(ci, "abc"), -EINVAL);
    assert_int_equal(nwb__crash_ingest_resymbolize_build_id(ci, "ABCD"), -EINVAL);
    assert_int_equal(nwb__crash_ingest_resymbolize_build_id(ci, ""), -EINVAL);
    assert_int_equal(nwb__crash_ingest_resymbolize_build_id(ci, "00ff"), 0);
    assert_int_equal(nwb__crash_ingest_wait_idle(ci, WAIT_MS), 0);

    /* The symbols arrive; the hook re-runs the crash that misses them. */
    sym_world_symbol_path(&w, ".debug", path, sizeof(path));
    assert_int_equal(sym_copy_file(CRASH_PROG_EXE, path, 0644), 0);
    assert_int_equal(nwb__crash_ingest_resymbolize_build_id(ci, w.build_id), 0);
    assert_int_equal(nwb__crash_ingest_wait_idle(ci, WAIT_MS), 0);
    text = analysis_file(out, id, "signature.txt");
    assert_non_null(text);
    assert_string_equal(text, "SIGSEGV | crash_prog_null_deref | main\n");
    free(text);
    text = analysis_file(out, id, NWB_CRASH_FRAMES_FILE);
    assert_non_null(text);
    snprintf(want, sizeof(want), "\nmissing\t%s\t", w.build_id);
    assert_null(strstr(text, want));
    free(text);

    /* Re-runs by id: errors first. */
    assert_int_equal(nwb__crash_ingest_resymbolize(ci, "nope"), -EINVAL);
    assert_int_equal(nwb__crash_ingest_resymbolize(ci, "00000000000000000000000000000000"),
                     -ENOENT);
    nwb__crash_ingest_stop(ci);
}

static void test_symbolize_ingest_resymbolize_queue_bound(void **state)
{
    char out[700], id[NWB_CRASH_INGEST_ID_LEN + 1];
    struct nwb__crash_ingest *ci;

    (void)state;
    sym_world_reset(&w);
    ci = ingest("queue", NWB_SYMBOLIZE_EXE, out, sizeof(out));
    submit(ci, "queue", id);
    assert_int_equal(nwb__crash_ingest_wait_idle(ci, WAIT_MS), 0);
    nwb__crash_ingest_pause(ci, 1);
    /* The same request twice is queued once. */
    assert_int_equal(nwb__crash_ingest_resymbolize(ci, id), 0);
    assert_int_equal(nwb__crash_ingest_resymbolize(ci, id), 0);
    for (unsigned i = 1; i < NWB__CRASH_RESYMBOLIZE_QUEUE; i++) {
        char bid[16];

        snprintf(bid, sizeof(bid), "%08x", i);
        assert_int_equal(nwb__crash_ingest_resymbolize_build_id(ci, bid), 0);
    }
    assert_int_equal(nwb__crash_ingest_resymbolize_build_id(ci, "ffffffff"), NWB_EFULL);
    nwb__crash_ingest_pause(ci, 0);
    assert_int_equal(nwb__crash_ingest_wait_idle(ci, WAIT_MS), 0);
    assert_int_equal(nwb__crash_ingest_resymbolize_build_id(ci, "ffffffff"), 0);
    assert_int_equal(nwb__crash_ingest_wait_idle(ci, WAIT_MS), 0);
    nwb__crash_ingest_stop(ci);
}

/* A symboliser that dies of SIGSEGV, and one that writes a frames.tsv that does not read back:
 * the crash is kept, failed, with the reason; its signature falls back to crash.txt. */
static void test_symbolize_ingest_dying_or_lying_symboliser_marks_failed(void **state)
{
    static const char segv[] = "#!/bin/sh\nkill -SEGV $$\n";
    static const char liar[] =
        "#!/bin/sh\n"
        "printf 'nwb-frames 1\\nframe\\tzz\\n' > /proc/self/fd/4/frames.tsv\n"
        ": > /proc/self/fd/4/stack.txt\n"
        ": > /proc/self/fd/4/stack.json\n";
    char out[700], id[NWB_CRASH_INGEST_ID_LEN + 1], script[700];
    struct nwb__crash_ingest *ci;
    char *text;

    (void)state;
    sym_world_reset(&w);
    snprintf(script, sizeof(script), "%s/segv.sh", w.dir);
    assert_int_equal(nwb_test_write_file(script, segv, sizeof(segv) - 1, 0755), 0);
    ci = ingest("segv", script, out, sizeof(out));
    submit(ci, "segv", id);
    assert_int_equal(nwb__crash_ingest_wait_idle(ci, WAIT_MS), 0);
    text = analysis_file(out, id, NWB_CRASH_SYMBOLIZE_FAILED_FILE);
    assert_non_null(text);
    assert_non_null(strstr(text, "the symboliser died of signal 11"));
    free(text);
    text = analysis_file(out, id, "signature.txt");
    assert_non_null(text);
    assert_string_equal(text, "SIGSEGV\n");
    free(text);
    assert_null(analysis_file(out, id, NWB_CRASH_FRAMES_FILE));
    nwb__crash_ingest_stop(ci);

    snprintf(script, sizeof(script), "%s/liar.sh", w.dir);
    assert_int_equal(nwb_test_write_file(script, liar, sizeof(liar) - 1, 0755), 0);
    ci = ingest("liar", script, out, sizeof(out));
    submit(ci, "liar", id);
    assert_int_equal(nwb__crash_ingest_wait_idle(ci, WAIT_MS), 0);
    text = analysis_file(out, id, NWB_CRASH_SYMBOLIZE_FAILED_FILE);
    assert_non_null(text);
    assert_non_null(strstr(text, "frames.tsv refused: line 2: bad frame record"));
    free(text);
    assert_null(analysis_file(out, id, NWB_CRASH_FRAMES_FILE));
    assert_null(analysis_file(out, id, "stack.txt"));
    nwb__crash_ingest_stop(ci);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symbolize_ingest_build_id_hook_reruns_waiting_crashes),
        cmocka_unit_test(test_symbolize_ingest_resymbolize_queue_bound),
        cmocka_unit_test(test_symbolize_ingest_dying_or_lying_symboliser_marks_failed),
    };

    return cmocka_run_group_tests_name("crash.symbolize_ingest", tests, setup_world,
                                       teardown_world);
}
