/* SPDX-License-Identifier: MIT */
/*
 * crash_spawn.c - starts the uploader (nwb-crash submit) from the signal
 * handler or at start-up: a raw fork (glibc's fork() runs atfork handlers
 * and is not safe in a handler), a second fork so the uploader is re-parented
 * to init and never left a zombie, then execve with a clean signal mask.
 * Also the capture helper (nwb-crash capture), a direct child the handler waits for.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../capture_int.h"

/* Where the handed-over pending lock lives in the helper (nwb-crash --lock-fd 3). */
#define HELPER_LOCK_FD 3
#define PARK_FD        200

static pid_t raw_fork(void)
{
    /* clone(SIGCHLD) is fork on every Linux architecture (aarch64 has no SYS_fork). */
    return (pid_t)syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
}

static void close_from(int first)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)first, ~0u, 0u) == 0) {
        return;
    }
#endif
    for (int fd = first; fd < 4096; fd++) {
        close(fd);
    }
}

static void exec_helper(int lock_fd)
{
    struct nwb__crash_state *g = &nwb__crash_g;
    sigset_t none;
    int nul, log;

    setsid();
    /* Park the lock high so setting up 0..3 cannot clobber it. */
    if (lock_fd >= 0) {
        lock_fd = fcntl(lock_fd, F_DUPFD, PARK_FD);
    }
    nul = open("/dev/null", O_RDWR);
    log = open(g->upload_log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
    if (nul >= 0) {
        dup2(nul, STDIN_FILENO);
        dup2(nul, STDOUT_FILENO);
        dup2(log >= 0 ? log : nul, STDERR_FILENO);
    }
    if (lock_fd >= 0) {
        dup2(lock_fd, HELPER_LOCK_FD); /* dup2 clears FD_CLOEXEC on the copy */
    } else {
        dup2(nul >= 0 ? nul : STDIN_FILENO, HELPER_LOCK_FD);
    }
    close_from(HELPER_LOCK_FD + 1);
    /* The handler runs with the fatal signals blocked; execve would keep that mask. */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* This is the forked copy of the state: the parent's argv is untouched. */
    g->helper_argv[g->helper_lock_arg] =
        lock_fd >= 0 ? (char *)(uintptr_t) "3" : (char *)(uintptr_t) "-1";
    execve(g->helper_argv[0], g->helper_argv, environ);
}

int nwb__crash_spawn_helper(int lock_fd)
{
    struct nwb__crash_state *g = &nwb__crash_g;
    pid_t child;
    int status;

    if (!g->have_helper) {
        return -1;
    }
    child = raw_fork();
    if (child < 0) {
        return -1;
    }
    if (child == 0) {
        const pid_t grandchild = raw_fork();

        if (grandchild != 0) {
            _exit(grandchild < 0 ? 1 : 0);
        }
        exec_helper(lock_fd);
        _exit(127);
    }
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    return 0;
}

/* Decimal of @p v into @p out (at least 12 bytes). AS-safe. */
static void put_decimal(char *out, unsigned v)
{
    char tmp[12];
    int n = 0, i = 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0) {
        out[i++] = tmp[--n];
    }
    out[i] = '\0';
}

int nwb__crash_spawn_capture(const char *pkg_dir, int pid, int tid, int regs_fd, int status_fd)
{
    struct nwb__crash_state *g = &nwb__crash_g;
    static char pid_arg[16], tid_arg[16], timeout_arg[16];
    static char *argv[16];
    pid_t child;

    if (!g->have_helper) {
        return -1;
    }
    put_decimal(pid_arg, (unsigned)pid);
    put_decimal(tid_arg, (unsigned)tid);
    /* The helper stops a little before the handler gives up on it. */
    put_decimal(timeout_arg, NWB__CRASH_CAPTURE_TIMEOUT_MS * 3u / 4u);
    child = raw_fork();
    if (child != 0) {
        return child < 0 ? -1 : (int)child;
    }
    {
        sigset_t none;
        int nul, log, regs, status, argc = 0;

        /* Park the pipe ends high so setting up 0..4 cannot clobber them. */
        regs = fcntl(regs_fd, F_DUPFD, PARK_FD);
        status = fcntl(status_fd, F_DUPFD, PARK_FD);
        nul = open("/dev/null", O_RDWR);
        log = open(g->upload_log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
        if (nul >= 0) {
            dup2(nul, STDIN_FILENO);
            dup2(nul, STDOUT_FILENO);
            dup2(log >= 0 ? log : nul, STDERR_FILENO);
        }
        if (regs < 0 || status < 0 || dup2(regs, 3) != 3 || dup2(status, 4) != 4) {
            _exit(127);
        }
        close_from(5);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        argv[argc++] = g->helper_argv[0];
        argv[argc++] = (char *)(uintptr_t) "capture";
        argv[argc++] = (char *)(uintptr_t) "--pid";
        argv[argc++] = pid_arg;
        argv[argc++] = (char *)(uintptr_t) "--tid";
        argv[argc++] = tid_arg;
        argv[argc++] = (char *)(uintptr_t) "--dir";
        argv[argc++] = (char *)(uintptr_t)pkg_dir;
        argv[argc++] = (char *)(uintptr_t) "--regs-fd";
        argv[argc++] = (char *)(uintptr_t) "3";
        argv[argc++] = (char *)(uintptr_t) "--status-fd";
        argv[argc++] = (char *)(uintptr_t) "4";
        argv[argc++] = (char *)(uintptr_t) "--timeout-ms";
        argv[argc++] = timeout_arg;
        argv[argc] = NULL;
        execve(argv[0], argv, environ);
        _exit(127);
    }
}
