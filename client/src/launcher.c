/* SPDX-License-Identifier: MIT */
/*
 * launcher.c - starting an nwb-logserver for this run when none answers, and
 * stopping it at exit. The child gets its own process group, no inherited
 * descriptors but stdin (/dev/null), stdout (a pipe we read its listening line
 * from, then close) and stderr (ours); SIGPIPE is ignored in it, so its later
 * stdout writes fail with EPIPE instead of blocking on a full pipe or killing it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nwb/error.h"
#include "nwb/log_line.h"

#include "net_int.h"

#define SERVER_NAME    "nwb-logserver"
#define LISTEN_MARK    "listening on http://"
#define STOP_TERM_MS   5000u /* SIGTERM, then SIGKILL after this */
#define LINE_MAX_BYTES 1024u /* what we keep of the child's stdout while looking for the line */

static NWB_PRINTF_LIKE(3, 4) void set_err(char *errbuf, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (errbuf != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(errbuf, errlen, fmt, ap);
        va_end(ap);
    }
}

static int executable(const char *path)
{
    return access(path, X_OK) == 0;
}

/* Find @p name on $PATH. Returns 0 with the path in @p out. */
static int path_search(const char *name, char *out, size_t cap)
{
    const char *path = getenv("PATH");

    if (path == NULL || path[0] == '\0') {
        path = "/usr/local/bin:/usr/bin:/bin";
    }
    while (*path != '\0') {
        const char *end = strchr(path, ':');
        const size_t len = end != NULL ? (size_t)(end - path) : strlen(path);

        /* An empty entry means the current directory (POSIX). */
        if (nwb__fmt(out, cap, "%.*s%s%s", (int)len, path, len > 0 ? "/" : "./", name) == 0 &&
            executable(out)) {
            return 0;
        }
        if (end == NULL) {
            break;
        }
        path = end + 1;
    }
    return -ENOENT;
}

/* @p exe, else next to /proc/self/exe, else $PATH. */
static int find_server(const char *exe, char *out, size_t cap)
{
    char self[PATH_MAX];
    ssize_t n;

    if (exe != NULL && exe[0] != '\0') {
        if (strchr(exe, '/') == NULL) {
            return path_search(exe, out, cap);
        }
        if (nwb__fmt(out, cap, "%s", exe) != 0) {
            return -ENAMETOOLONG;
        }
        return executable(out) ? 0 : -errno;
    }
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        char *slash;

        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash != NULL) {
            *slash = '\0';
            if (nwb__fmt(out, cap, "%s/" SERVER_NAME, self) == 0 && executable(out)) {
                return 0;
            }
        }
    }
    return path_search(SERVER_NAME, out, cap);
}

/* Only async-signal-safe calls between fork() and exec. */
static void child_exec(const char *path, char *const argv[], int out_fd, int null_fd, int max_fd)
{
    sigset_t none;

    setpgid(0, 0);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    if (null_fd >= 0 && null_fd != STDIN_FILENO) {
        dup2(null_fd, STDIN_FILENO);
    }
    if (out_fd != STDOUT_FILENO) {
        dup2(out_fd, STDOUT_FILENO);
    } else {
        fcntl(out_fd, F_SETFD, 0);
    }
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
#endif
    {
        for (int fd = 3; fd < max_fd; fd++) {
            close(fd);
        }
    }
    execv(path, argv);
    _exit(127);
}

/*
 * Extract "HOST:PORT" following LISTEN_MARK in a complete line. Returns 0, or -1 when the
 * address is malformed.
 */
static int parse_listen(const char *mark, char *addr, size_t addrlen)
{
    const char *p = mark + strlen(LISTEN_MARK);
    const char *end = p;
    const char *colon;
    size_t len;

    while (*end != '\0' && *end != '/' && *end != ' ' && *end != '\r' && *end != '\n' &&
           *end != '\t') {
        end++;
    }
    len = (size_t)(end - p);
    if (len == 0 || len >= addrlen) {
        return -1;
    }
    colon = NULL;
    for (const char *c = p; c < end; c++) {
        if (*c == ':') {
            colon = c;
        }
    }
    if (colon == NULL || colon + 1 == end) {
        return -1;
    }
    for (const char *c = colon + 1; c < end; c++) {
        if (*c < '0' || *c > '9') {
            return -1;
        }
    }
    memcpy(addr, p, len);
    addr[len] = '\0';
    return 0;
}

static void reap(pid_t pid, int *status)
{
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
}

int nwb__server_launch(const char *exe, const char *log_dir, unsigned timeout_ms,
                       struct nwb__launched *l, char *addr, size_t addrlen, char *errbuf,
                       size_t errlen)
{
    char path[PATH_MAX];
    char line[LINE_MAX_BYTES + 1];
    size_t used = 0;
    char *argv[8];
    int argc = 0;
    int pfd[2];
    int null_fd;
    long max_fd;
    pid_t pid;
    uint64_t deadline;
    int status = 0;
    int rc;

    l->pid = 0;
    if (addr != NULL && addrlen > 0) {
        addr[0] = '\0';
    }
    if (addr == NULL || addrlen < 8) {
        set_err(errbuf, errlen, "launching %s: no room for the address", SERVER_NAME);
        return NWB_ECONFIG;
    }
    rc = find_server(exe, path, sizeof(path));
    if (rc != 0) {
        set_err(errbuf, errlen,
                "cannot find an executable %s (given, next to this program, or on $PATH)",
                exe != NULL && exe[0] != '\0' ? exe : SERVER_NAME);
        return rc;
    }
    /* The child's argv points into writable copies: execv() predates const. */
    argv[argc++] = path;
    argv[argc++] = (char *)(uintptr_t) "--port";
    argv[argc++] = (char *)(uintptr_t) "0";
    if (log_dir != NULL && log_dir[0] != '\0') {
        argv[argc++] = (char *)(uintptr_t) "--out";
        argv[argc++] = (char *)(uintptr_t)log_dir;
    }
    argv[argc] = NULL;
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        rc = -errno;
        set_err(errbuf, errlen, "launching %s: pipe failed (errno %d)", path, -rc);
        return rc;
    }
    null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    max_fd = sysconf(_SC_OPEN_MAX);
    if (max_fd < 0 || max_fd > 65536) {
        max_fd = 65536;
    }
    pid = fork();
    if (pid == 0) {
        child_exec(path, argv, pfd[1], null_fd, (int)max_fd);
    }
    close(pfd[1]);
    if (null_fd >= 0) {
        close(null_fd);
    }
    if (pid < 0) {
        rc = -errno;
        close(pfd[0]);
        set_err(errbuf, errlen, "launching %s: fork failed (errno %d)", path, -rc);
        return rc;
    }
    /* Also set by the child; doing both closes the race with an early kill(-pid). */
    setpgid(pid, pid);
    deadline = nwb_time_mono_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        const uint64_t now = nwb_time_mono_ns();
        struct pollfd p = {pfd[0], POLLIN, 0};
        const char *mark;
        ssize_t n;

        if (now >= deadline) {
            rc = NWB_ETIMEOUT;
            set_err(errbuf, errlen, "%s printed no listening line within %u ms", path, timeout_ms);
            break;
        }
        n = poll(&p, 1, (int)((deadline - now + 999999u) / 1000000u));
        if (n < 0 && errno != EINTR) {
            rc = -errno;
            set_err(errbuf, errlen, "launching %s: poll failed (errno %d)", path, -rc);
            break;
        }
        if (n <= 0) {
            continue;
        }
        n = read(pfd[0], line + used, LINE_MAX_BYTES - used);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            rc = -errno;
            set_err(errbuf, errlen, "launching %s: read failed (errno %d)", path, -rc);
            break;
        }
        if (n == 0) {
            rc = NWB_ECLOSED;
            set_err(errbuf, errlen, "%s exited or closed its stdout before listening", path);
            break;
        }
        used += (size_t)n;
        line[used] = '\0';
        mark = strstr(line, LISTEN_MARK);
        if (mark != NULL && strchr(mark, '\n') != NULL) {
            if (parse_listen(mark, addr, addrlen) != 0) {
                rc = NWB_EPROTO;
                set_err(errbuf, errlen, "%s printed a listening line without HOST:PORT", path);
                break;
            }
            close(pfd[0]);
            l->pid = (int)pid;
            return 0;
        }
        if (used == LINE_MAX_BYTES) {
            /* Keep the unfinished last line (a mark may be split), drop the rest. */
            const char *nl = strrchr(line, '\n');
            const size_t keep = nl != NULL ? used - (size_t)(nl + 1 - line) : LINE_MAX_BYTES / 2;

            memmove(line, line + used - keep, keep);
            used = keep;
        }
    }
    close(pfd[0]);
    kill(pid, SIGKILL);
    reap(pid, &status);
    addr[0] = '\0';
    return rc;
}

/* Wait up to @p ms for @p pid to exit. Returns 1 once it is reaped (or already gone). */
static int wait_exit(pid_t pid, unsigned ms)
{
    const uint64_t deadline = nwb_time_mono_ns() + (uint64_t)ms * 1000000u;
    int status;
    int pidfd = -1;

#ifdef SYS_pidfd_open
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
    for (;;) {
        const pid_t r = waitpid(pid, &status, WNOHANG);
        uint64_t now;
        int wait_ms;

        if (r == pid || (r < 0 && errno == ECHILD)) {
            break;
        }
        now = nwb_time_mono_ns();
        if (now >= deadline) {
            if (pidfd >= 0) {
                close(pidfd);
            }
            return 0;
        }
        wait_ms = (int)((deadline - now + 999999u) / 1000000u);
        if (pidfd >= 0) {
            struct pollfd p = {pidfd, POLLIN, 0};

            /* Readable once the process exited: an event, not a guess. */
            poll(&p, 1, wait_ms);
        } else {
            /* No pidfd (old kernel): re-check in short, bounded steps. */
            poll(NULL, 0, wait_ms < 20 ? wait_ms : 20);
        }
    }
    if (pidfd >= 0) {
        close(pidfd);
    }
    return 1;
}

void nwb__server_stop(struct nwb__launched *l)
{
    pid_t pid;

    if (l == NULL || l->pid <= 0) {
        return;
    }
    pid = (pid_t)l->pid;
    l->pid = 0;
    if (l->detach) {
        return;
    }
    if (kill(pid, SIGTERM) != 0 && errno == ESRCH) {
        int status;

        waitpid(pid, &status, WNOHANG);
        return;
    }
    if (!wait_exit(pid, STOP_TERM_MS)) {
        int status;

        kill(pid, SIGKILL);
        reap(pid, &status);
    }
}
