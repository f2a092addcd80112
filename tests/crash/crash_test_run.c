/* SPDX-License-Identifier: MIT */
/* crash_test_run.c - starting crash_prog and reading its package back (crash_test_run.h). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nwb/crash.h"

#include "crash_test_run.h"
#include "test_support.h"

#ifndef CRASH_PROG_EXE
#define CRASH_PROG_EXE "crash_prog"
#endif

/* The sanitizer runtimes must leave the fatal signals to the handler under test. */
#define CHILD_ASAN_OPTIONS                                                                         \
    "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0:"                \
    "detect_leaks=0:allow_user_segv_handler=1"

const char *crash_run_core_dir;

static void child(const char *mode, const char *crash_dir, const char *server, const char *helper,
                  const char *extra_env, int out_fd)
{
    const struct rlimit no_core = {0, 0};
    char *const argv[] = {(char *)(uintptr_t)CRASH_PROG_EXE, (char *)(uintptr_t) "arg one",
                          (char *)(uintptr_t) "--flag", NULL};

    if (crash_run_core_dir != NULL) {
        const struct rlimit cores = {RLIM_INFINITY, RLIM_INFINITY};

        if (chdir(crash_run_core_dir) != 0 || setrlimit(RLIMIT_CORE, &cores) != 0) {
            _exit(126);
        }
    } else {
        /* Crashing on purpose: no core files in the build tree. */
        setrlimit(RLIMIT_CORE, &no_core);
    }
    setenv("CRASH_PROG_MODE", mode, 1);
    setenv("NWB_CRASH_DIR", crash_dir, 1);
    setenv("NWB_LOGSERVER", server, 1);
    setenv("NWB_CRASH_HELPER", helper, 1);
    setenv("ASAN_OPTIONS", CHILD_ASAN_OPTIONS, 1);
    setenv("UBSAN_OPTIONS", "print_stacktrace=0", 1);
    if (extra_env != NULL) {
        putenv((char *)(uintptr_t)extra_env);
    }
    dup2(out_fd, STDOUT_FILENO);
    execv(CRASH_PROG_EXE, argv);
    _exit(127);
}

int crash_run(const char *mode, const char *crash_dir, const char *server, const char *helper,
              const char *extra_env, struct crash_run *r)
{
    const long long deadline = nwb_test_now_ms() + 60000;
    int pipefd[2];
    size_t used = 0;
    pid_t pid;
    const char *run;

    memset(r, 0, sizeof(*r));
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        return -1;
    }
    if (pid == 0) {
        child(mode, crash_dir, server, helper, extra_env, pipefd[1]);
    }
    close(pipefd[1]);
    crash_run_core_dir = NULL;
    /* EOF on its stdout: it has exited (the uploader it starts gets /dev/null). */
    for (;;) {
        struct pollfd pfd = {pipefd[0], POLLIN, 0};
        const long long left = deadline - nwb_test_now_ms();
        ssize_t n;

        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) {
            kill(pid, SIGKILL);
            break;
        }
        n = read(pipefd[0], r->stdout_text + used, sizeof(r->stdout_text) - 1 - used);
        if (n <= 0) {
            break;
        }
        used += (size_t)n;
        if (used == sizeof(r->stdout_text) - 1) {
            used = 0;
        }
    }
    close(pipefd[0]);
    r->stdout_text[used] = '\0';
    while (waitpid(pid, &r->status, 0) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    run = strstr(r->stdout_text, "run ");
    if (run != NULL) {
        sscanf(run + 4, "%63s", r->run_id);
    }
    return 0;
}

int crash_pending_archive(const char *crash_dir, char *path, size_t cap)
{
    nwb_crash_pending_entry_t e[8];
    size_t n = 0;

    if (nwb_crash_pending_list(crash_dir, 1, 30000, e, 8, &n) != 0 || n != 1 ||
        e[0].kind != NWB_CRASH_PENDING_ARCHIVE) {
        fprintf(stderr, "crash_pending_archive: %zu entries in %s/pending\n", n, crash_dir);
        return -1;
    }
    snprintf(path, cap, "%s/pending/%s", crash_dir, e[0].name);
    return 0;
}

int crash_symbolise(const char *crash_txt, const char *module, char *out, size_t cap)
{
    char *text = nwb_test_read_file(crash_txt, NULL);
    size_t used = 0;
    int frames = 0;
    const size_t mlen = strlen(module);

    out[0] = '\0';
    if (text == NULL) {
        return -1;
    }
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        unsigned idx;
        char pc[32], where[4096], cmd[4400], fn[512];
        const char *plus;
        unsigned long long rel;
        FILE *p;

        if (sscanf(line, "#%u %31s %4095[^\n]", &idx, pc, where) != 3) {
            continue;
        }
        plus = strrchr(where, '+');
        if (plus == NULL || (size_t)(plus - where) != mlen || strncmp(where, module, mlen) != 0) {
            continue;
        }
        rel = strtoull(plus + 1, NULL, 16);
        /* Past frame 0 these are return addresses: the call is one byte before. */
        snprintf(cmd, sizeof(cmd), "addr2line -f -e '%s' 0x%llx", module, idx > 0 ? rel - 1 : rel);
        p = popen(cmd, "r");
        if (p == NULL) {
            continue;
        }
        if (fgets(fn, sizeof(fn), p) != NULL && used + strlen(fn) + 1 < cap) {
            memcpy(out + used, fn, strlen(fn) + 1);
            used += strlen(fn);
            frames++;
        }
        pclose(p);
    }
    free(text);
    return frames;
}

int crash_closed_port(int *fd)
{
    int port = -1;

    *fd = nwb_test_reserve_dead_port(&port);
    return *fd < 0 ? -1 : port;
}
