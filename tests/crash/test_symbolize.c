/* SPDX-License-Identifier: MIT */
/*
 * test_symbolize.c - nwb-symbolize (server/src/symbolize/): the frame line formats, then the
 * real tool on a real crash: crash_prog dies of a null dereference under a test tracer that
 * writes its threads.nwbc (capture_ptrace.c), and the tool must name the crashing function,
 * its file and line and unwind to main, from the binary under .build-id/, from a stripped
 * binary plus its .debug file the same, and from garbage or nothing without failing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "nwb/crash_capture.h"

#include "capture_ptrace.h"
#include "crash_frames.h"
#include "json_check.h"
#include "symbolize.h"
#include "symbolize_test_world.h"
#include "test_support.h"

/* ---- the frame line formats ---- */

static void test_symbolize_frame_lines(void **state)
{
    char line[2048];
    struct nwb_sym_frame f;
    char long_name[2000];

    (void)state;
    memset(&f, 0, sizeof(f));
    f.pc = 0x55d0c0de1234u;
    f.offset = 0x1234;
    f.module = "crash_prog";
    f.module_len = 10;
    f.build_id = "abcd";
    f.function = "crash_prog_null_deref";
    f.file = "tests/crash/crash_prog.c";
    f.line = 45;
    f.symbolized = 1;
    nwb_sym_format_frame(&f, 0, line, sizeof(line));
    assert_string_equal(line, "#0 0x000055d0c0de1234 crash_prog_null_deref "
                              "(tests/crash/crash_prog.c:45) crash_prog+0x1234");
    f.inlined = 1;
    nwb_sym_format_frame(&f, 1, line, sizeof(line));
    assert_string_equal(line, "#1 0x000055d0c0de1234 crash_prog_null_deref "
                              "(tests/crash/crash_prog.c:45) crash_prog+0x1234 (inlined)");
    f.inlined = 0;
    f.file = NULL;
    nwb_sym_format_frame(&f, 2, line, sizeof(line));
    assert_string_equal(line, "#2 0x000055d0c0de1234 crash_prog_null_deref crash_prog+0x1234");
    f.function = NULL;
    nwb_sym_format_frame(&f, 3, line, sizeof(line));
    assert_string_equal(line, "#3 0x000055d0c0de1234 ?? crash_prog+0x1234");
    f.symbolized = 0;
    f.why = "no symbols: build id abcd";
    f.module = "libc.so.6";
    f.module_len = 9;
    nwb_sym_format_frame(&f, 4, line, sizeof(line));
    assert_string_equal(line, "#4 0x000055d0c0de1234 libc.so.6+0x1234 (no symbols: build id abcd)");
    /* Control bytes never reach a line; names are cut at their bound. */
    f.symbolized = 1;
    f.why = NULL;
    f.function = "evil\tname\nwith\x01"
                 "bytes";
    nwb_sym_format_frame(&f, 5, line, sizeof(line));
    assert_string_equal(line, "#5 0x000055d0c0de1234 evil?name?with?bytes libc.so.6+0x1234");
    memset(long_name, 'x', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    f.function = long_name;
    assert_int_equal(nwb_sym_format_frame(&f, 6, line, sizeof(line)),
                     strlen("#6 0x000055d0c0de1234 ") + NWB_SYM_FUNCTION_MAX +
                         strlen(" libc.so.6+0x1234"));
    /* No module at all. */
    f.module = NULL;
    f.module_len = 0;
    f.function = NULL;
    f.symbolized = 0;
    f.why = "no module at this address";
    nwb_sym_format_frame(&f, 7, line, sizeof(line));
    assert_string_equal(line, "#7 0x000055d0c0de1234 ?+0x1234 (no module at this address)");
}

/* The three outputs of two threads, written to memory: stack.txt's blocks, stack.json strict,
 * and frames.tsv read back by the server's own reader (crash_frames.c) field for field. */
struct readback {
    unsigned threads, frames, missing;
    char functions[256];
};

static int rb_thread(void *ctx, uint32_t tid, int crashed, struct nwb_crash_str name)
{
    struct readback *r = ctx;

    assert_int_equal(tid, r->threads == 0 ? 4242 : 4243);
    assert_int_equal(crashed, r->threads == 0);
    assert_int_equal(name.len, r->threads == 0 ? 6 : 6);
    r->threads++;
    return 0;
}

static int rb_frame(void *ctx, const struct nwb_crash_frame_rec *f)
{
    struct readback *r = ctx;
    const size_t used = strlen(r->functions);

    snprintf(r->functions + used, sizeof(r->functions) - used, "%.*s:%u:%d:%d|",
             (int)f->function.len, f->function.s, f->line, f->inlined, f->symbolized);
    r->frames++;
    return 0;
}

static int rb_missing(void *ctx, struct nwb_crash_str build_id, struct nwb_crash_str module)
{
    struct readback *r = ctx;

    assert_int_equal(build_id.len, 4);
    assert_memory_equal(module.s, "libc.so.6", 9);
    r->missing++;
    return 0;
}

static void test_symbolize_outputs_read_back(void **state)
{
    static const char path[] = "/usr/lib/libc.so.6";
    const nwb_crash_module_view_t mod = {0x7f0000000000u, 0x7f0000200000u, 0, NULL, 0, path, 18};
    nwb_crash_thread_view_t tv[2];
    nwb_crash_capture_view_t cap;
    struct nwb_sym_frame f0[3], f1[1];
    struct nwb_sym_thread t0, t1;
    struct nwb_sym_missing miss;
    struct nwb_sym_out o;
    char *text = NULL, *tsv = NULL, *json = NULL;
    size_t text_len = 0, tsv_len = 0, json_len = 0;
    FILE *ft = open_memstream(&text, &text_len);
    FILE *fs = open_memstream(&tsv, &tsv_len);
    FILE *fj = open_memstream(&json, &json_len);
    struct readback rb;
    const struct nwb_crash_frames_cb cb = {rb_thread, rb_frame, rb_missing, &rb};
    char why[256];

    (void)state;
    memset(tv, 0, sizeof(tv));
    memset(&cap, 0, sizeof(cap));
    cap.arch = NWB_CRASH_ARCH_X86_64;
    cap.method = NWB_CRASH_CAPTURE_PTRACE;
    cap.pid = 4242;
    cap.crashed_tid = 4242;
    cap.note = "a note\twith a tab";
    cap.note_len = strlen(cap.note);
    cap.threads = tv;
    cap.nthreads = 2;
    cap.modules = (nwb_crash_module_view_t *)(uintptr_t)&mod;
    cap.nmodules = 1;
    memset(f0, 0, sizeof(f0));
    f0[0] = (struct nwb_sym_frame){0x5501,     0x1501, "game", 4, "abcd", "leaf",
                                   "/src/a.c", 12,     1,      1, NULL};
    f0[1] = (struct nwb_sym_frame){0x5501,     0x1501, "game", 4, "abcd", "outer",
                                   "/src/a.c", 40,     0,      1, NULL};
    f0[2] = (struct nwb_sym_frame){0x7f0000001234u,
                                   0x1234,
                                   "libc.so.6",
                                   9,
                                   "93ac",
                                   NULL,
                                   NULL,
                                   0,
                                   0,
                                   0,
                                   "no symbols: build id 93ac"};
    f1[0] = (struct nwb_sym_frame){0x7f0000002000u,
                                   0x2000,
                                   "libc.so.6",
                                   9,
                                   "93ac",
                                   NULL,
                                   NULL,
                                   0,
                                   0,
                                   0,
                                   "no symbols: build id 93ac"};
    t0 = (struct nwb_sym_thread){4242, "render", 1, f0, 3, 0, NULL};
    t1 = (struct nwb_sym_thread){4243, "worker", 0, f1, 1, 0, "No DWARF information found"};
    memset(&miss, 0, sizeof(miss));
    snprintf(miss.build_id, sizeof(miss.build_id), "93ac");
    snprintf(miss.module, sizeof(miss.module), "libc.so.6");
    snprintf(miss.why, sizeof(miss.why), "no symbols: build id 93ac");
    assert_non_null(ft);
    assert_non_null(fs);
    assert_non_null(fj);
    assert_int_equal(nwb_sym_out_begin(&o, &cap, ft, fs, fj), 0);
    nwb_sym_out_thread(&o, &t0);
    nwb_sym_out_thread(&o, &t1);
    assert_int_equal(nwb_sym_out_end(&o, &miss, 1), 0);
    fclose(ft);
    fclose(fs);
    fclose(fj);

    assert_string_equal(text,
                        "capture: ptrace, pid 4242, 2 threads, 1 module: a note?with a tab\n\n"
                        "thread 4242 [render] (crashed)\n"
                        "#0 0x0000000000005501 leaf (/src/a.c:12) game+0x1501 (inlined)\n"
                        "#1 0x0000000000005501 outer (/src/a.c:40) game+0x1501\n"
                        "#2 0x00007f0000001234 libc.so.6+0x1234 (no symbols: build id 93ac)\n"
                        "\n"
                        "thread 4243 [worker]\n"
                        "#0 0x00007f0000002000 libc.so.6+0x2000 (no symbols: build id 93ac)\n"
                        "   (unwinding stopped: No DWARF information found)\n"
                        "\n"
                        "missing symbols:\n"
                        "  libc.so.6: no symbols: build id 93ac\n");
    assert_int_equal(nwb_test_json_check(json, json_len, NULL), 0);
    assert_non_null(strstr(json,
                           "{\"pc\":\"0x5501\",\"module\":\"game\",\"buildId\":\"abcd\","
                           "\"offset\":\"0x1501\",\"function\":\"leaf\",\"file\":\"/src/a.c\","
                           "\"line\":12,\"inlined\":true,\"symbolized\":true}"));
    assert_non_null(strstr(json, "\"function\":null,\"file\":null,\"line\":null,\"inlined\":"
                                 "false,\"symbolized\":false,\"reason\":\"no symbols: build id "
                                 "93ac\"}"));
    assert_non_null(strstr(json, "\"stopped\":\"No DWARF information found\""));
    assert_non_null(strstr(json, "\"note\":\"a note\\twith a tab\""));
    memset(&rb, 0, sizeof(rb));
    assert_int_equal(nwb_crash_frames_parse(tsv, tsv_len, &cb, why, sizeof(why)), 0);
    assert_int_equal(rb.threads, 2);
    assert_int_equal(rb.frames, 4);
    assert_int_equal(rb.missing, 1);
    assert_string_equal(rb.functions, "leaf:12:1:1|outer:40:0:1|:0:0:0|:0:0:0|");
    free(text);
    free(tsv);
    free(json);
}

/* ---- the tool on a real crash ---- */

static struct sym_world w;

static int setup_world(void **state)
{
    (void)state;
    return sym_world_setup(&w, "symbolize");
}

static int teardown_world(void **state)
{
    (void)state;
    sym_world_teardown(&w);
    return 0;
}

static char *symbolize(int expect_rc)
{
    const char *const argv[] = {NWB_SYMBOLIZE_EXE, "--capture", w.capture, "--symbols-dir",
                                w.symbols,         "--out",     w.out,     NULL};
    char err[1024], path[700];
    size_t len;
    char *text;
    const int rc = sym_run(argv, err, sizeof(err));

    if (rc != expect_rc) {
        fprintf(stderr, "nwb-symbolize exited %d: %s\n", rc, err);
    }
    assert_int_equal(rc, expect_rc);
    if (expect_rc != 0) {
        return NULL;
    }
    /* stack.json is strict JSON. */
    snprintf(path, sizeof(path), "%s/stack.json", w.out);
    text = nwb_test_read_file(path, &len);
    assert_non_null(text);
    assert_int_equal(nwb_test_json_check(text, len, NULL), 0);
    assert_non_null(strstr(text, "\"threads\":["));
    free(text);
    snprintf(path, sizeof(path), "%s/" NWB_SYM_FRAMES_FILE, w.out);
    text = nwb_test_read_file(path, &len);
    assert_non_null(text);
    assert_true(strncmp(text, NWB_SYM_FRAMES_MAGIC "\n", sizeof(NWB_SYM_FRAMES_MAGIC)) == 0);
    free(text);
    snprintf(path, sizeof(path), "%s/stack.txt", w.out);
    text = nwb_test_read_file(path, &len);
    assert_non_null(text);
    return text;
}

/* Frame #0 names crash_prog_null_deref at its line and main is among the frames. */
static void assert_symbolised(const char *text)
{
    char want[256];
    const char *thread = strstr(text, "thread ");
    const char *f0 = strstr(text, "\n#0 ");

    assert_non_null(thread);
    assert_non_null(strstr(thread, "(crashed)\n"));
    assert_non_null(f0);
    snprintf(want, sizeof(want), "crash_prog_null_deref (%s:%u) crash_prog+0x",
             NWB_SOURCE_DIR "/tests/crash/crash_prog.c", w.crash_line);
    if (strstr(f0, want) == NULL || strstr(f0, want) > strchr(f0 + 1, '\n')) {
        /* DWARF may hold the path relative to the build folder: accept any path ending so. */
        snprintf(want, sizeof(want), "crash_prog.c:%u) crash_prog+0x", w.crash_line);
        assert_non_null(strstr(f0, " crash_prog_null_deref ("));
        assert_non_null(strstr(f0, want));
        assert_true(strstr(f0, want) < strchr(f0 + 1, '\n'));
    }
    assert_non_null(strstr(text, " main (")); /* unwound through CFI to main */
}

static void test_symbolize_crash_prog_from_its_binary(void **state)
{
    char path[800];
    char *text;

    (void)state;
    sym_world_reset(&w);
    sym_world_symbol_path(&w, "", path, sizeof(path));
    assert_int_equal(sym_copy_file(CRASH_PROG_EXE, path, 0755), 0);
    text = symbolize(0);
    if (getenv("NWB_TEST_VERBOSE") != NULL) {
        fputs(text, stderr);
    }
    assert_symbolised(text);
    free(text);
}

static void test_symbolize_uploaded_binary_as_debug_file(void **state)
{
    char path[800];
    char *text;

    (void)state;
    sym_world_reset(&w);
    /* POST /v1/symbols stores whatever ELF it gets as .build-id/xx/rest.debug. */
    sym_world_symbol_path(&w, ".debug", path, sizeof(path));
    assert_int_equal(sym_copy_file(CRASH_PROG_EXE, path, 0644), 0);
    text = symbolize(0);
    assert_symbolised(text);
    free(text);
}

static void test_symbolize_stripped_binary_and_debug_file(void **state)
{
    char exe[800], debug[800], err[512];
    char *text;

    (void)state;
    sym_world_reset(&w);
    sym_world_symbol_path(&w, "", exe, sizeof(exe));
    sym_world_symbol_path(&w, ".debug", debug, sizeof(debug));
    {
        const char *const keep[] = {"objcopy", "--only-keep-debug", CRASH_PROG_EXE, debug, NULL};
        const char *const strip[] = {"strip", "--strip-debug", "-o", exe, CRASH_PROG_EXE, NULL};

        assert_int_equal(sym_run(keep, err, sizeof(err)), 0);
        assert_int_equal(sym_run(strip, err, sizeof(err)), 0);
    }
    text = symbolize(0);
    assert_symbolised(text);
    free(text);
}

static void test_symbolize_without_symbols_names_the_build_id(void **state)
{
    char want[256];
    char *text;

    (void)state;
    sym_world_reset(&w);
    text = symbolize(0);
    snprintf(want, sizeof(want), "crash_prog+0x");
    assert_non_null(strstr(text, want));
    snprintf(want, sizeof(want), "(no symbols: build id %s)", w.build_id);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, "missing symbols:\n"));
    free(text);
}

static void test_symbolize_garbage_elf_is_refused_with_a_reason(void **state)
{
    char path[800];
    char *text;
    static const char junk[] = "\x7f"
                               "ELF this is not an ELF file at all";

    (void)state;
    sym_world_reset(&w);
    sym_world_symbol_path(&w, ".debug", path, sizeof(path));
    assert_int_equal(nwb_test_write_file(path, junk, sizeof(junk) - 1, 0644), 0);
    sym_world_symbol_path(&w, "", path, sizeof(path));
    /* A different binary under this build id: its own build id does not match. */
    assert_int_equal(sym_copy_file(NWB_SYMBOLIZE_EXE, path, 0755), 0);
    text = symbolize(0);
    assert_non_null(strstr(text, "(symbols refused ("));
    assert_null(strstr(text, " crash_prog_null_deref ("));
    free(text);
}

/* Copy each module of the capture @p path whose file is readable here under its build id in
 * the symbols folder. The number copied. */
static int store_every_module(const char *path)
{
    size_t len;
    char *data = nwb_test_read_file(path, &len);
    nwb_crash_capture_view_t v;
    char why[256];
    int n = 0;

    assert_non_null(data);
    assert_int_equal(nwb_crash_capture_parse(data, len, &v, why, sizeof(why)), 0);
    for (size_t i = 0; i < v.nmodules; i++) {
        const nwb_crash_module_view_t *m = &v.modules[i];
        char file[4097], hex[129], dir[800], to[1000];

        if (m->build_id_len < 2 || m->path_len >= sizeof(file)) {
            continue;
        }
        memcpy(file, m->path, m->path_len);
        file[m->path_len] = '\0';
        nwb_sym_hex(m->build_id, m->build_id_len, hex);
        snprintf(dir, sizeof(dir), "%s/.build-id", w.symbols);
        (void)mkdir(w.symbols, 0755);
        (void)mkdir(dir, 0755);
        snprintf(dir, sizeof(dir), "%s/.build-id/%.2s", w.symbols, hex);
        (void)mkdir(dir, 0755);
        snprintf(to, sizeof(to), "%s/%s", dir, hex + 2);
        n += sym_copy_file(file, to, 0755) == 0;
    }
    nwb_crash_capture_view_free(&v);
    free(data);
    return n;
}

/* Every thread, crashing one first, with their names; with the modules' own files under their
 * build ids the worker unwinds through raise() to its function. */
static void test_symbolize_every_thread_worker_crash(void **state)
{
    char *const argv[] = {(char *)(uintptr_t)CRASH_PROG_EXE, NULL};
    char env_dir[700], capture[700], path[1700], why[256], out_dir[700];
    const char *env[4];
    const char *const tool[] = {NWB_SYMBOLIZE_EXE, "--capture", capture, "--symbols-dir",
                                w.symbols,         "--out",     out_dir, NULL};
    char err[1024];
    char *text, *worker, *main_block;

    (void)state;
    sym_world_reset(&w);
    snprintf(env_dir, sizeof(env_dir), "NWB_CRASH_DIR=%s/crashes2", w.dir);
    env[0] = "CRASH_PROG_MODE=thread_signal";
    env[1] = "NWB_CRASH_HELPER=";
    env[2] = env_dir;
    env[3] = NULL;
    snprintf(capture, sizeof(capture), "%s/threads2.nwbc", w.dir);
    snprintf(out_dir, sizeof(out_dir), "%s", w.out);
    assert_int_equal(capture_ptrace_run(argv, env, capture, why, sizeof(why)), 0);
    /* Every module's own file under its build id, libc's and a sanitizer runtime's included
     * (TSan intercepts raise()): the machine's symbols, as a studio would upload them. */
    assert_true(store_every_module(capture) > 1);
    assert_int_equal(sym_run(tool, err, sizeof(err)), 0);
    snprintf(path, sizeof(path), "%s/stack.txt", w.out);
    text = nwb_test_read_file(path, NULL);
    assert_non_null(text);
    if (getenv("NWB_TEST_VERBOSE") != NULL) {
        fputs(text, stderr);
    }
    worker = strstr(text, "\nthread ");
    assert_non_null(worker);
    assert_non_null(strstr(worker, " [nwb-worker] (crashed)\n"));
    assert_true(strstr(worker, " [nwb-worker] (crashed)\n") < strchr(worker + 1, '\n'));
    main_block = strstr(worker + 1, "\nthread ");
    assert_non_null(main_block);
    assert_non_null(strstr(main_block, " [crash_prog]\n"));
    assert_non_null(strstr(worker, " crash_prog_thread_raise ("));
    assert_true(strstr(worker, " crash_prog_thread_raise (") < main_block);
    /* The main thread was stopped wherever it was (in pthread_join, or still returning from
     * clone3, which has no CFI): it has at least its first frame. */
    assert_non_null(strstr(main_block, "\n#0 0x"));
    free(text);
}

static void test_symbolize_refuses_a_bad_capture(void **state)
{
    const char *const argv[] = {NWB_SYMBOLIZE_EXE, "--capture", w.out, "--symbols-dir",
                                w.symbols,         "--out",     w.out, NULL};
    const char *const usage[] = {NWB_SYMBOLIZE_EXE, "--capture", NULL};
    char err[1024], bad[700];

    (void)state;
    sym_world_reset(&w);
    snprintf(bad, sizeof(bad), "%s/bad.nwbc", w.out);
    assert_int_equal(nwb_test_write_file(bad, "NWBC\x02\x00", 6, 0644), 0);
    {
        const char *const argv2[] = {NWB_SYMBOLIZE_EXE, "--capture", bad,   "--symbols-dir",
                                     w.symbols,         "--out",     w.out, NULL};

        assert_int_equal(sym_run(argv2, err, sizeof(err)), 1);
        assert_non_null(strstr(err, "nwb-symbolize: capture refused: "));
        assert_non_null(strchr(err, '\n'));
        assert_int_equal(strchr(err, '\n')[1], '\0'); /* one line */
    }
    assert_int_equal(sym_run(argv, err, sizeof(err)), 1); /* a folder is no capture */
    assert_int_equal(sym_run(usage, err, sizeof(err)), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symbolize_frame_lines),
        cmocka_unit_test(test_symbolize_outputs_read_back),
        cmocka_unit_test(test_symbolize_crash_prog_from_its_binary),
        cmocka_unit_test(test_symbolize_uploaded_binary_as_debug_file),
        cmocka_unit_test(test_symbolize_stripped_binary_and_debug_file),
        cmocka_unit_test(test_symbolize_without_symbols_names_the_build_id),
        cmocka_unit_test(test_symbolize_garbage_elf_is_refused_with_a_reason),
        cmocka_unit_test(test_symbolize_every_thread_worker_crash),
        cmocka_unit_test(test_symbolize_refuses_a_bad_capture),
    };

    return cmocka_run_group_tests_name("crash.symbolize", tests, setup_world, teardown_world);
}
