/* SPDX-License-Identifier: MIT */
/*
 * test_nwb_log.c - the nwb-log tool as scripts use it: arguments or stdin
 * lines become records at a loopback responder, a server that is down means
 * spooled (exit 0) and the next run delivers, standalone writes a file, and
 * bad command lines or lost records give a non-zero exit with a message.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nwb/log.h"
#include "test_http_out_fixture.h"
#include "test_support.h"

#ifndef NWB_TEST_NWB_LOG_EXE
#define NWB_TEST_NWB_LOG_EXE "nwb-log"
#endif

struct fx {
    char dir[512];
    struct responder r;
    int dead_fd; /* a port nothing listens on, held until teardown (-1: none) */
};

struct run {
    int status;
    char out[4096];
    char err[4096];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("nwblog", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    unsetenv("NWB_LOGSERVER");
    unsetenv("NWB_LOG_DIR");
    unsetenv("NWB_LOGSERVER_TOKEN");
    f->dead_fd = -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    responder_stop(&f->r);
    if (f->dead_fd >= 0) {
        close(f->dead_fd);
    }
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* Run nwb-log with @p args (NULL-terminated), feeding @p input on stdin; 20 s at most. */
static void run_tool(const char *const *args, const char *input, struct run *res)
{
    int in[2], out[2], err[2];
    const char *argv[32];
    size_t used_out = 0, used_err = 0;
    const long long deadline = nwb_test_now_ms() + 20000;
    int argc = 0;
    pid_t pid;

    memset(res, 0, sizeof(*res));
    argv[argc++] = NWB_TEST_NWB_LOG_EXE;
    for (int i = 0; args[i] != NULL && argc < 31; i++) {
        argv[argc++] = args[i];
    }
    argv[argc] = NULL;
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    assert_int_equal(pipe2(err, O_CLOEXEC), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char *av[32];

        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        for (int i = 0; i <= argc; i++) {
            av[i] = (char *)(uintptr_t)argv[i];
        }
        execv(av[0], av);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    if (input != NULL) {
        size_t done = 0;

        while (done < strlen(input)) {
            const ssize_t n = write(in[1], input + done, strlen(input) - done);

            assert_true(n > 0);
            done += (size_t)n;
        }
    }
    close(in[1]);
    for (;;) {
        struct pollfd p[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
        const long long left = deadline - nwb_test_now_ms();

        if (left <= 0 || (p[0].fd < 0 && p[1].fd < 0)) {
            break;
        }
        if (poll(p, 2, (int)left) <= 0) {
            continue;
        }
        for (int k = 0; k < 2; k++) {
            char *buf = k == 0 ? res->out : res->err;
            size_t *used = k == 0 ? &used_out : &used_err;
            const size_t cap = k == 0 ? sizeof(res->out) : sizeof(res->err);
            char junk[512];
            ssize_t n;

            if (p[k].fd < 0 || p[k].revents == 0) {
                continue;
            }
            n = *used + 1 < cap ? read(p[k].fd, buf + *used, cap - 1 - *used)
                                : read(p[k].fd, junk, sizeof(junk));
            if (n <= 0) {
                close(p[k].fd);
                if (k == 0) {
                    out[0] = -1;
                } else {
                    err[0] = -1;
                }
                continue;
            }
            if (*used + 1 < cap) {
                *used += (size_t)n;
                buf[*used] = '\0';
            }
        }
        if (out[0] < 0 && err[0] < 0) {
            break;
        }
    }
    if (out[0] >= 0) {
        close(out[0]);
    }
    if (err[0] >= 0) {
        close(err[0]);
    }
    if (nwb_test_now_ms() >= deadline) {
        kill(pid, SIGKILL);
    }
    assert_int_equal(waitpid(pid, &res->status, 0), pid);
}

static int exit_code(const struct run *res)
{
    return WIFEXITED(res->status) ? WEXITSTATUS(res->status) : -1;
}

/* The records of request @p i: messages joined by '\n', levels into @p levels. */
static int request_records(struct responder *r, size_t i, char *msgs, size_t cap, int *levels)
{
    const struct resp_request q = responder_get(r, i);
    nwb_log_batch_reader_t rd;
    nwb_log_record_t rec;
    int n = 0;

    if (nwb_log_batch_reader_init(&rd, q.body, q.body_len) != 0) {
        return -1;
    }
    while (nwb_log_batch_reader_next(&rd, &rec) == 1) {
        if (levels != NULL && n < 16) {
            levels[n] = rec.level;
        }
        n++;
    }
    return fx_batch_messages(q.body, q.body_len, msgs, cap) == n ? n : -1;
}

static void test_nwb_log_sends_arguments_as_one_record(void **state)
{
    struct fx *f = *state;
    struct run res;
    char server[64], msgs[512];
    int levels[16];
    struct resp_request q;

    assert_int_equal(responder_start(&f->r, 0), 0);
    snprintf(server, sizeof(server), "--logserver=127.0.0.1:%d", f->r.port);
    {
        const char *args[] = {server,    "--program", "tooltest",  "--run", "0123456789abcdef",
                              "--level", "warning",   "--log-dir", f->dir,  "hello",
                              "world",   "100%",      NULL};

        run_tool(args, NULL, &res);
    }
    assert_int_equal(exit_code(&res), 0);
    assert_int_equal(responder_count(&f->r), 1);
    q = responder_get(&f->r, 0);
    assert_string_equal(q.program, "tooltest");
    assert_string_equal(q.run, "0123456789abcdef");
    assert_string_equal(q.seq, "1");
    assert_int_equal(request_records(&f->r, 0, msgs, sizeof(msgs), levels), 1);
    assert_string_equal(msgs, "hello world 100%");
    assert_int_equal(levels[0], NWB_LOG_WARNING);
}

static void test_nwb_log_sends_each_stdin_line(void **state)
{
    struct fx *f = *state;
    struct run res;
    char server[64], msgs[512];
    int levels[16];
    char all[2048] = "";
    int records = 0;

    assert_int_equal(responder_start(&f->r, 0), 0);
    snprintf(server, sizeof(server), "--logserver=127.0.0.1:%d", f->r.port);
    {
        const char *args[] = {server, "--level=error", "--log-dir", f->dir, NULL};

        run_tool(args, "first line\nsecond\r\n\nlast without newline", &res);
    }
    assert_int_equal(exit_code(&res), 0);
    for (size_t i = 0; i < responder_count(&f->r); i++) {
        const int n = request_records(&f->r, i, msgs, sizeof(msgs), levels);

        assert_true(n > 0);
        for (int k = 0; k < n && k < 16; k++) {
            assert_int_equal(levels[k], NWB_LOG_ERROR);
        }
        strncat(all, records > 0 ? "\n" : "", sizeof(all) - strlen(all) - 1);
        strncat(all, msgs, sizeof(all) - strlen(all) - 1);
        records += n;
    }
    assert_int_equal(records, 4);
    assert_string_equal(all, "first line\nsecond\n\nlast without newline");
}

static void test_nwb_log_spools_when_server_down_and_next_run_delivers(void **state)
{
    struct fx *f = *state;
    struct run res;
    char server[64], spool[600], msgs[256];
    int port;
    int found_old = 0;

    /* Down for the first run; the responder takes the held port for the second. */
    f->dead_fd = nwb_test_reserve_dead_port(&port);
    assert_true(f->dead_fd >= 0);
    snprintf(server, sizeof(server), "--logserver=127.0.0.1:%d", port);
    snprintf(spool, sizeof(spool), "%s/spool", f->dir);
    {
        const char *args[] = {server,      "--program", "spooltool",    "--run", "000000000000aaaa",
                              "--log-dir", f->dir,      "--timeout-ms", "300",   "kept for later",
                              NULL};

        run_tool(args, NULL, &res);
    }
    assert_int_equal(exit_code(&res), 0);
    assert_non_null(strstr(res.err, "spooled"));
    assert_int_equal(fx_count_files(spool, ".spool", NULL), 1);

    assert_int_equal(responder_start(&f->r, port), 0);
    {
        const char *args[] = {server,      "--program", "spooltool",  "--run", "000000000000bbbb",
                              "--log-dir", f->dir,      "second run", NULL};

        run_tool(args, NULL, &res);
    }
    assert_int_equal(exit_code(&res), 0);
    for (size_t i = 0; i < responder_count(&f->r); i++) {
        const struct resp_request q = responder_get(&f->r, i);

        if (strcmp(q.run, "000000000000aaaa") == 0) {
            assert_string_equal(q.seq, "1");
            assert_int_equal(request_records(&f->r, i, msgs, sizeof(msgs), NULL), 1);
            assert_string_equal(msgs, "kept for later");
            found_old++;
        }
    }
    assert_int_equal(found_old, 1);
    assert_int_equal(fx_count_files(spool, ".spool", NULL), 0);
}

static const char *ftw_needle;
static int ftw_hits;

static int ftw_look(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    char *text;

    (void)st;
    (void)ftw;
    if (flag != FTW_F) {
        return 0;
    }
    text = nwb_test_read_file(path, NULL);
    if (text != NULL && strstr(text, ftw_needle) != NULL) {
        ftw_hits++;
    }
    free(text);
    return 0;
}

static void test_nwb_log_standalone_writes_a_file(void **state)
{
    struct fx *f = *state;
    struct run res;
    const char *args[] = {"--no-logserver", "--log-dir", f->dir, "standalone", "line", NULL};

    run_tool(args, NULL, &res);
    assert_int_equal(exit_code(&res), 0);
    ftw_needle = "standalone line";
    ftw_hits = 0;
    nftw(f->dir, ftw_look, 16, FTW_PHYS);
    assert_int_equal(ftw_hits, 1);
}

static void test_nwb_log_bad_command_lines_exit_2(void **state)
{
    struct fx *f = *state;
    struct run res;

    (void)f;
    {
        const char *args[] = {"--help", NULL};

        run_tool(args, NULL, &res);
        assert_int_equal(exit_code(&res), 0);
        assert_non_null(strstr(res.out, "usage: nwb-log"));
    }
    {
        const char *args[] = {"--level", "loud", "x", NULL};

        run_tool(args, NULL, &res);
        assert_int_equal(exit_code(&res), 2);
        assert_non_null(strstr(res.err, "--level"));
    }
    {
        const char *args[] = {"--frobnicate", "x", NULL};

        run_tool(args, NULL, &res);
        assert_int_equal(exit_code(&res), 2);
        assert_non_null(strstr(res.err, "unknown option"));
    }
    {
        const char *args[] = {"--program", NULL};

        run_tool(args, NULL, &res);
        assert_int_equal(exit_code(&res), 2);
        assert_non_null(strstr(res.err, "needs a value"));
    }
    {
        const char *args[] = {"--timeout-ms", "soon", "x", NULL};

        run_tool(args, NULL, &res);
        assert_int_equal(exit_code(&res), 2);
    }
}

static void test_nwb_log_fails_when_records_are_neither_delivered_nor_spooled(void **state)
{
    struct fx *f = *state;
    struct run res;
    char server[64], bad[600];
    int port;

    /* The spool would live under a regular file: it cannot be created. */
    snprintf(bad, sizeof(bad), "%s/file", f->dir);
    {
        FILE *fp = fopen(bad, "w");

        assert_non_null(fp);
        fclose(fp);
    }
    f->dead_fd = nwb_test_reserve_dead_port(&port);
    assert_true(f->dead_fd >= 0);
    snprintf(server, sizeof(server), "--logserver=127.0.0.1:%d", port);
    {
        const char *args[] = {server, "--log-dir", bad, "--timeout-ms", "200", "lost", NULL};

        run_tool(args, NULL, &res);
    }
    assert_int_equal(exit_code(&res), 1);
    assert_non_null(strstr(res.err, "could not be delivered or spooled"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_nwb_log_sends_arguments_as_one_record, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_nwb_log_sends_each_stdin_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nwb_log_spools_when_server_down_and_next_run_delivers,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_nwb_log_standalone_writes_a_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nwb_log_bad_command_lines_exit_2, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_nwb_log_fails_when_records_are_neither_delivered_nor_spooled, setup, teardown),
    };

    return cmocka_run_group_tests_name("client.nwb_log", tests, NULL, NULL);
}
