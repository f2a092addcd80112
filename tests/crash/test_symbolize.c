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
#include <gelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "capture_ptrace.h"
#include "json_check.h"
#include "symbolize.h"
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

/* ---- the tool on a real crash ---- */

struct world {
    char dir[512];
    char capture[600];
    char symbols[600];
    char out[600];
    char build_id[NWB_SYM_BUILD_ID_HEX + 1];
    unsigned crash_line; /* the line of crash_prog.c that faults */
};

static struct world w;

static int run(const char *const argv_c[], char *err, size_t cap)
{
    char *argv[16];
    int pipefd[2], status = -1;
    pid_t pid;
    size_t used = 0;

    for (size_t i = 0; i < 16; i++) {
        argv[i] = (char *)(uintptr_t)argv_c[i];
        if (argv_c[i] == NULL) {
            break;
        }
    }
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        dup2(pipefd[1], 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(pipefd[1]);
    for (;;) {
        const ssize_t n = read(pipefd[0], err + used, cap - 1 - used);

        if (n <= 0) {
            break;
        }
        used += (size_t)n;
        if (used == cap - 1) {
            break;
        }
    }
    err[used] = '\0';
    close(pipefd[0]);
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int build_id_hex(const char *path, char *out)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    const void *id = NULL;
    ssize_t n = -1;
    Elf *elf;

    if (fd < 0) {
        return -1;
    }
    elf_version(EV_CURRENT);
    elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (elf != NULL) {
        n = dwelf_elf_gnu_build_id(elf, &id);
    }
    if (n > 0) {
        nwb_sym_hex(id, (size_t)n, out);
    }
    elf_end(elf);
    close(fd);
    return n > 0 ? 0 : -1;
}

static unsigned line_of(const char *path, const char *needle)
{
    size_t len;
    char *text = nwb_test_read_file(path, &len);
    const char *at = text != NULL ? strstr(text, needle) : NULL;
    unsigned line = 1;

    for (const char *p = text; at != NULL && p < at; p++) {
        line += *p == '\n';
    }
    free(text);
    return at != NULL ? line : 0;
}

/* The path of @p name for the build id under the symbols folder, its xx/ folder made. */
static void symbol_path(const char *suffix, char *out, size_t cap)
{
    char sub[700];

    snprintf(sub, sizeof(sub), "%s/.build-id/%.2s", w.symbols, w.build_id);
    (void)mkdir(w.symbols, 0755);
    snprintf(out, cap, "%s/.build-id", w.symbols);
    (void)mkdir(out, 0755);
    (void)mkdir(sub, 0755);
    snprintf(out, cap, "%s/%s%s", sub, w.build_id + 2, suffix);
}

static void reset_symbols(void)
{
    nwb_test_rmtree(w.symbols);
    nwb_test_rmtree(w.out);
    assert_int_equal(mkdir(w.out, 0755), 0);
}

static int copy_file(const char *from, const char *to, unsigned mode)
{
    size_t len;
    char *data = nwb_test_read_file(from, &len);
    const int rc = data != NULL ? nwb_test_write_file(to, data, len, mode) : -1;

    free(data);
    return rc;
}

static int setup_world(void **state)
{
    char why[256];
    char *const argv[] = {(char *)(uintptr_t)CRASH_PROG_EXE, NULL};
    const char *const env[] = {"CRASH_PROG_MODE=null", "NWB_CRASH_HELPER=", NULL};
    char crash_dir[700];
    static char env_dir[800];
    const char *env2[4];

    (void)state;
    memset(&w, 0, sizeof(w));
    if (nwb_test_tmpdir("symbolize", w.dir, sizeof(w.dir)) != 0) {
        return -1;
    }
    snprintf(w.capture, sizeof(w.capture), "%s/threads.nwbc", w.dir);
    snprintf(w.symbols, sizeof(w.symbols), "%s/symbols", w.dir);
    snprintf(w.out, sizeof(w.out), "%s/out", w.dir);
    snprintf(crash_dir, sizeof(crash_dir), "%s/crashes", w.dir);
    snprintf(env_dir, sizeof(env_dir), "NWB_CRASH_DIR=%s", crash_dir);
    env2[0] = env[0];
    env2[1] = env[1];
    env2[2] = env_dir;
    env2[3] = NULL;
    if (capture_ptrace_run(argv, env2, w.capture, why, sizeof(why)) != 0) {
        fprintf(stderr, "capture failed: %s\n", why);
        return -1;
    }
    if (build_id_hex(CRASH_PROG_EXE, w.build_id) != 0) {
        return -1;
    }
    w.crash_line = line_of(NWB_SOURCE_DIR "/tests/crash/crash_prog.c", "*null_ptr = 42;");
    return w.crash_line > 0 ? 0 : -1;
}

static int teardown_world(void **state)
{
    (void)state;
    nwb_test_rmtree(w.dir);
    return 0;
}

static char *symbolize(int expect_rc)
{
    const char *const argv[] = {NWB_SYMBOLIZE_EXE, "--capture", w.capture, "--symbols-dir",
                                w.symbols,         "--out",     w.out,     NULL};
    char err[1024], path[700];
    size_t len;
    char *text;
    const int rc = run(argv, err, sizeof(err));

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
    reset_symbols();
    symbol_path("", path, sizeof(path));
    assert_int_equal(copy_file(CRASH_PROG_EXE, path, 0755), 0);
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
    reset_symbols();
    /* POST /v1/symbols stores whatever ELF it gets as .build-id/xx/rest.debug. */
    symbol_path(".debug", path, sizeof(path));
    assert_int_equal(copy_file(CRASH_PROG_EXE, path, 0644), 0);
    text = symbolize(0);
    assert_symbolised(text);
    free(text);
}

static void test_symbolize_stripped_binary_and_debug_file(void **state)
{
    char exe[800], debug[800], err[512];
    char *text;

    (void)state;
    reset_symbols();
    symbol_path("", exe, sizeof(exe));
    symbol_path(".debug", debug, sizeof(debug));
    {
        const char *const keep[] = {"objcopy", "--only-keep-debug", CRASH_PROG_EXE, debug, NULL};
        const char *const strip[] = {"strip", "--strip-debug", "-o", exe, CRASH_PROG_EXE, NULL};

        assert_int_equal(run(keep, err, sizeof(err)), 0);
        assert_int_equal(run(strip, err, sizeof(err)), 0);
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
    reset_symbols();
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
    reset_symbols();
    symbol_path(".debug", path, sizeof(path));
    assert_int_equal(nwb_test_write_file(path, junk, sizeof(junk) - 1, 0644), 0);
    symbol_path("", path, sizeof(path));
    /* A different binary under this build id: its own build id does not match. */
    assert_int_equal(copy_file(NWB_SYMBOLIZE_EXE, path, 0755), 0);
    text = symbolize(0);
    assert_non_null(strstr(text, "(symbols refused ("));
    assert_null(strstr(text, " crash_prog_null_deref ("));
    free(text);
}

static void test_symbolize_refuses_a_bad_capture(void **state)
{
    const char *const argv[] = {NWB_SYMBOLIZE_EXE, "--capture", w.out, "--symbols-dir",
                                w.symbols,         "--out",     w.out, NULL};
    const char *const usage[] = {NWB_SYMBOLIZE_EXE, "--capture", NULL};
    char err[1024], bad[700];

    (void)state;
    reset_symbols();
    snprintf(bad, sizeof(bad), "%s/bad.nwbc", w.out);
    assert_int_equal(nwb_test_write_file(bad, "NWBC\x02\x00", 6, 0644), 0);
    {
        const char *const argv2[] = {NWB_SYMBOLIZE_EXE, "--capture", bad,   "--symbols-dir",
                                     w.symbols,         "--out",     w.out, NULL};

        assert_int_equal(run(argv2, err, sizeof(err)), 1);
        assert_non_null(strstr(err, "nwb-symbolize: capture refused: "));
        assert_non_null(strchr(err, '\n'));
        assert_int_equal(strchr(err, '\n')[1], '\0'); /* one line */
    }
    assert_int_equal(run(argv, err, sizeof(err)), 1); /* a folder is no capture */
    assert_int_equal(run(usage, err, sizeof(err)), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symbolize_frame_lines),
        cmocka_unit_test(test_symbolize_crash_prog_from_its_binary),
        cmocka_unit_test(test_symbolize_uploaded_binary_as_debug_file),
        cmocka_unit_test(test_symbolize_stripped_binary_and_debug_file),
        cmocka_unit_test(test_symbolize_without_symbols_names_the_build_id),
        cmocka_unit_test(test_symbolize_garbage_elf_is_refused_with_a_reason),
        cmocka_unit_test(test_symbolize_refuses_a_bad_capture),
    };

    return cmocka_run_group_tests_name("crash.symbolize", tests, setup_world, teardown_world);
}
