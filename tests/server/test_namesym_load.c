/* SPDX-License-Identifier: MIT */
/*
 * test_namesym_load.c - loading .namesym sidecars at startup, through the
 * real nwb-logserver: every *.namesym of each --namesym-dir in order (other
 * files, hidden and invalid sidecars skipped, with a warning for the
 * invalid and for FIFOs and folders named *.namesym), the count per file and in total on stderr
 * while the listening line stays the first stdout line, the executable's own folder as the default
 * that --namesym-dir replaces, a collision reported with both strings and files (the first wins),
 * and an unreadable --namesym-dir failing the start.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "namesym_test_util.h"
#include "server_test_util.h"

extern char **environ;

struct fx {
    char dir[512];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("nsload", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    tu_reap(NULL);
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

static void sub(const struct fx *f, char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", f->dir, name);
}

static void write_file(const char *path, const void *data, size_t len)
{
    assert_int_equal(nwb_test_write_file(path, data, len, 0644), 0);
}

/* POST one text line and return the run's log (malloc'd). */
static char *post_line(int port, const char *out_dir, const char *run, const char *line)
{
    assert_int_equal(tu_post(port, "text/plain", "ns", run, 1, line, strlen(line), NULL, 0), 200);
    return tu_run_log(out_dir, "ns", run);
}

static void expect_in(const char *hay, const char *needle)
{
    if (hay == NULL || strstr(hay, needle) == NULL) {
        fail_msg("\"%s\" not in:\n%s", needle, hay != NULL ? hay : "(null)");
    }
}

static void test_namesym_load_given_folders_in_order_with_counts(void **state)
{
    struct fx *f = *state;
    char d1[600], d2[600], p[700], line[256], tok[NWB_NAME_TOKEN_SIZE];
    static const char *const a[] = {"alpha", "beta", NULL};
    static const char *const b[] = {"gamma", NULL};
    static const char *const c[] = {"delta", NULL};
    static const char *const hidden[] = {"hidden", NULL};
    struct nwb_test_server srv;
    struct nsu_stderr *err = calloc(1, sizeof(*err));
    char junk[64];
    char *log;

    assert_non_null(err);
    sub(f, d1, sizeof(d1), "syms1");
    sub(f, d2, sizeof(d2), "syms2");
    assert_int_equal(mkdir(d1, 0755), 0);
    assert_int_equal(mkdir(d2, 0755), 0);
    snprintf(p, sizeof(p), "%s/a.namesym", d1);
    assert_int_equal(nsu_sidecar(p, a), 0);
    snprintf(p, sizeof(p), "%s/b.namesym", d1);
    assert_int_equal(nsu_sidecar(p, b), 0);
    snprintf(p, sizeof(p), "%s/.hidden.namesym", d1);
    assert_int_equal(nsu_sidecar(p, hidden), 0);
    snprintf(p, sizeof(p), "%s/notes.txt", d1);
    write_file(p, "not a sidecar\n", 14);
    memset(junk, 'x', sizeof(junk));
    snprintf(p, sizeof(p), "%s/broken.namesym", d1);
    write_file(p, junk, sizeof(junk));
    /* Not regular files: skipped with a warning, and the FIFO never hangs the load. */
    snprintf(p, sizeof(p), "%s/fifo.namesym", d1);
    assert_int_equal(mkfifo(p, 0644), 0);
    snprintf(p, sizeof(p), "%s/dir.namesym", d1);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/c.namesym", d2);
    assert_int_equal(nsu_sidecar(p, c), 0);
    {
        const char *const extra[] = {"--namesym-dir", d1, "--namesym-dir", d2, NULL};

        assert_int_equal(tu_start(&srv, f->dir, 0, extra), 0);
    }
    snprintf(p, sizeof(p), "namesym: %s/a.namesym: 2 names", d1);
    assert_true(nsu_wait_stderr(&srv, err, p, 5000));
    snprintf(p, sizeof(p), "namesym: %s/b.namesym: 1 names", d1);
    expect_in(err->text, p);
    snprintf(p, sizeof(p), "namesym: %s/c.namesym: 1 names", d2);
    expect_in(err->text, p);
    snprintf(p, sizeof(p),
             "warning: namesym: skipped %s/broken.namesym: invalid sidecar: bad magic", d1);
    expect_in(err->text, p);
    snprintf(p, sizeof(p), "warning: namesym: skipped %s/fifo.namesym: not a regular file", d1);
    expect_in(err->text, p);
    snprintf(p, sizeof(p), "warning: namesym: skipped %s/dir.namesym: not a regular file", d1);
    expect_in(err->text, p);
    expect_in(err->text, "namesym: 4 names from 3 sidecars");
    assert_null(strstr(err->text, "hidden"));
    assert_null(strstr(err->text, "notes.txt"));
    /* Folders in command-line order, files in name order. */
    assert_true(strstr(err->text, "/a.namesym") < strstr(err->text, "/b.namesym"));
    assert_true(strstr(err->text, "/b.namesym") < strstr(err->text, "/c.namesym"));
    assert_int_equal(tu_metric(srv.port, "nwb_namesym_names"), 4);
    assert_int_equal(tu_metric(srv.port, "nwb_namesym_sidecars"), 3);
    snprintf(line, sizeof(line), "names %s", nsu_token("gamma", tok));
    snprintf(line + strlen(line), sizeof(line) - strlen(line), " %s", nsu_token("delta", tok));
    snprintf(line + strlen(line), sizeof(line) - strlen(line), " %s\n", nsu_token("hidden", tok));
    log = post_line(srv.port, f->dir, "r1", line);
    snprintf(p, sizeof(p), " ns names gamma delta %s\n", tok);
    expect_in(log, p);
    free(log);
    assert_true(WIFEXITED(tu_stop(&srv, SIGTERM, 10000)));
    free(err);
}

/* Start @p exe (with @p args), read its first stdout line, stop it. */
static void first_stdout_line(const char *exe, const char *const *args, char *line, size_t cap)
{
    const char *argv[16];
    int outp[2];
    int argc = 0;
    size_t used = 0;
    const long long deadline = nwb_test_now_ms() + 10000;
    int status;
    pid_t pid;

    argv[argc++] = exe;
    while (*args != NULL && argc < 15) {
        argv[argc++] = *args++;
    }
    argv[argc] = NULL;
    assert_int_equal(pipe(outp), 0);
    /* posix_spawn, not fork: a forked child of this threaded test (the stderr readers) can
     * block forever in a sanitizer's interceptor before its exec, where SIGTERM never lands. */
    {
        posix_spawn_file_actions_t fa;

        assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
        assert_int_equal(posix_spawn_file_actions_adddup2(&fa, outp[1], STDOUT_FILENO), 0);
        assert_int_equal(
            posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0), 0);
        assert_int_equal(posix_spawn_file_actions_addclose(&fa, outp[0]), 0);
        assert_int_equal(
            posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)(uintptr_t)argv, environ), 0);
        posix_spawn_file_actions_destroy(&fa);
    }
    close(outp[1]);
    line[0] = '\0';
    while (used + 1 < cap && strchr(line, '\n') == NULL && nwb_test_now_ms() < deadline) {
        struct pollfd p = {outp[0], POLLIN, 0};
        ssize_t n;

        if (poll(&p, 1, 1000) <= 0) {
            continue;
        }
        n = read(outp[0], line + used, cap - 1 - used);
        if (n <= 0) {
            break;
        }
        used += (size_t)n;
        line[used] = '\0';
    }
    kill(pid, SIGTERM);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    close(outp[0]);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void copy_exe(const char *from, const char *to)
{
    size_t len = 0;
    char *data = nwb_test_read_file(from, &len);

    assert_non_null(data);
    write_file(to, data, len);
    free(data);
    assert_int_equal(chmod(to, 0755), 0);
}

static void test_namesym_load_executable_folder_is_the_default(void **state)
{
    struct fx *f = *state;
    char bin[600], exe[700], p[700], other[600], out[600], line[512], tok[NWB_NAME_TOKEN_SIZE];
    static const char *const names[] = {"epsilon", NULL};
    static const char *const other_names[] = {"zeta", NULL};
    struct nwb_test_server srv;
    struct nsu_stderr *err = calloc(1, sizeof(*err));
    char *log;

    assert_non_null(err);
    sub(f, bin, sizeof(bin), "bin");
    sub(f, other, sizeof(other), "other");
    sub(f, out, sizeof(out), "out");
    assert_int_equal(mkdir(bin, 0755), 0);
    assert_int_equal(mkdir(other, 0755), 0);
    snprintf(exe, sizeof(exe), "%s/nwb-logserver", bin);
    copy_exe(NWB_TEST_SERVER_EXE, exe);
    snprintf(p, sizeof(p), "%s/game.namesym", bin);
    assert_int_equal(nsu_sidecar(p, names), 0);
    snprintf(p, sizeof(p), "%s/other.namesym", other);
    assert_int_equal(nsu_sidecar(p, other_names), 0);

    /* No --namesym-dir: the executable's folder. The listening line is still stdout's first. */
    {
        const char *const args[] = {"--port", "0", "--out", out, NULL};

        first_stdout_line(exe, args, line, sizeof(line));
        expect_in(line, "listening on http://127.0.0.1:");
    }
    assert_int_equal(nwb_test_server_start(&srv, exe, out, 0, NULL), 0);
    snprintf(p, sizeof(p), "namesym: %s/game.namesym: 1 names", bin);
    assert_true(nsu_wait_stderr(&srv, err, p, 5000));
    snprintf(line, sizeof(line), "default %s\n", nsu_token("epsilon", tok));
    log = post_line(srv.port, out, "exe1", line);
    expect_in(log, " ns default epsilon\n");
    free(log);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));

    /* A --namesym-dir replaces the default: the executable's folder is not read. */
    memset(err, 0, sizeof(*err));
    {
        const char *const extra[] = {"--namesym-dir", other, NULL};

        assert_int_equal(nwb_test_server_start(&srv, exe, out, 0, extra), 0);
    }
    assert_true(nsu_wait_stderr(&srv, err, "namesym: 1 names from 1 sidecars", 5000));
    assert_null(strstr(err->text, "game.namesym"));
    snprintf(line, sizeof(line), "replaced %s", nsu_token("epsilon", tok));
    snprintf(line + strlen(line), sizeof(line) - strlen(line), " %s\n", nsu_token("zeta", tok));
    log = post_line(srv.port, out, "exe2", line);
    snprintf(p, sizeof(p), " ns replaced %s zeta\n", nsu_token("epsilon", tok));
    expect_in(log, p);
    free(log);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
    free(err);
}

static void test_namesym_load_collision_is_reported_and_the_first_string_wins(void **state)
{
    struct fx *f = *state;
    char d[600], p[1600], line[256], tok[NWB_NAME_TOKEN_SIZE];
    const uint64_t h = 0x00c0ffee00c0ffeeull;
    const uint64_t h1[] = {h};
    const uint64_t h2[] = {0x0000000000000001ull, h};
    const char *const s1[] = {"first/string"};
    const char *const s2[] = {"one", "second/string"};
    const char *const same[] = {"first/string"};
    struct nwb_test_server srv;
    struct nsu_stderr *err = calloc(1, sizeof(*err));
    char *log;

    assert_non_null(err);
    sub(f, d, sizeof(d), "syms");
    assert_int_equal(mkdir(d, 0755), 0);
    snprintf(p, sizeof(p), "%s/a.namesym", d);
    assert_int_equal(nsu_sidecar_raw(p, h1, s1, 1), 0);
    snprintf(p, sizeof(p), "%s/b.namesym", d);
    assert_int_equal(nsu_sidecar_raw(p, h2, s2, 2), 0);
    /* The same string again is no collision, only a name already loaded. */
    snprintf(p, sizeof(p), "%s/c.namesym", d);
    assert_int_equal(nsu_sidecar_raw(p, h1, same, 1), 0);
    {
        const char *const extra[] = {"--namesym-dir", d, NULL};

        assert_int_equal(tu_start(&srv, f->dir, 0, extra), 0);
    }
    snprintf(p, sizeof(p),
             "warning: namesym: collision for #00c0ffee00c0ffee: kept \"first/string\" from "
             "%s/a.namesym, dropped \"second/string\" from %s/b.namesym",
             d, d);
    assert_true(nsu_wait_stderr(&srv, err, "namesym: 2 names from 3 sidecars", 5000));
    expect_in(err->text, p);
    snprintf(p, sizeof(p), "namesym: %s/b.namesym: 1 names (1 more already loaded or colliding)",
             d);
    expect_in(err->text, p);
    snprintf(p, sizeof(p), "namesym: %s/c.namesym: 0 names (1 more", d);
    expect_in(err->text, p);
    assert_int_equal(tu_count(err->text, "collision for"), 1);
    nwb_name_token(h, tok);
    snprintf(line, sizeof(line), "wins %s\n", tok);
    log = post_line(srv.port, f->dir, "col", line);
    expect_in(log, " ns wins first/string\n");
    free(log);
    assert_int_equal(tu_metric(srv.port, "nwb_namesym_names"), 2);
    assert_true(WIFEXITED(tu_stop(&srv, SIGTERM, 10000)));
    free(err);
}

/* Run the server to its exit with @p args; its stderr into @p err. Returns the exit status. */
static int run_to_exit(const char *const *args, char *err, size_t cap)
{
    const char *argv[16];
    int errp[2];
    int argc = 0;
    size_t used = 0;
    int status;
    pid_t pid;

    argv[argc++] = NWB_TEST_SERVER_EXE;
    while (*args != NULL && argc < 15) {
        argv[argc++] = *args++;
    }
    argv[argc] = NULL;
    assert_int_equal(pipe(errp), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const int devnull = open("/dev/null", O_WRONLY);

        dup2(devnull, STDOUT_FILENO);
        dup2(errp[1], STDERR_FILENO);
        execv(argv[0], (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    close(errp[1]);
    for (;;) {
        struct pollfd p = {errp[0], POLLIN, 0};
        ssize_t n;

        if (used + 1 >= cap || poll(&p, 1, 10000) <= 0) {
            break;
        }
        n = read(errp[0], err + used, cap - 1 - used);
        if (n <= 0) {
            break;
        }
        used += (size_t)n;
    }
    err[used] = '\0';
    close(errp[0]);
    kill(pid, SIGKILL); /* only if it did not exit by itself (the test then fails) */
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_namesym_load_unreadable_folder_fails_the_start(void **state)
{
    struct fx *f = *state;
    char missing[600], out[600], err[4096], want[800];

    sub(f, missing, sizeof(missing), "no-such-folder");
    sub(f, out, sizeof(out), "out");
    {
        const char *const args[] = {"--port", "0", "--out", out, "--namesym-dir", missing, NULL};

        assert_int_equal(run_to_exit(args, err, sizeof(err)), 1);
    }
    snprintf(want, sizeof(want), "--namesym-dir %s: cannot read the folder: ", missing);
    expect_in(err, want);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_namesym_load_given_folders_in_order_with_counts),
        T(test_namesym_load_executable_folder_is_the_default),
        T(test_namesym_load_collision_is_reported_and_the_first_string_wins),
        T(test_namesym_load_unreadable_folder_fails_the_start),
    };
#undef T

    return cmocka_run_group_tests_name("server.namesym_load", tests, NULL, tu_reap);
}
