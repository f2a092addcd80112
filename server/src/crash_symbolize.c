/* SPDX-License-Identifier: MIT */
/*
 * crash_symbolize.c - running nwb-symbolize for one stored crash (crash_analysis.h): a child
 * process per crash, forked from the crash worker thread, with an address-space and a CPU
 * limit, killed at a wall-clock deadline, writing into crashes/analysis/<id>/.symbolize/.
 * Only a clean exit whose frames.tsv reads back strictly is published (stack.txt,
 * stack.json, frames.tsv renamed beside signature.txt); anything else leaves what is stored
 * untouched and records the reason in symbolize_failed.txt. The package is never changed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/crash_capture.h"
#include "nwb/deadline.h"
#include "nwb/error.h"
#include "nwb/file_io.h"

#include "crash_analysis.h"
#include "crash_frames.h"
#include "crash_ingest_int.h"

#define WORK_DIR      ".symbolize"
#define STDERR_MAX    1024u /* bytes of the child's stderr kept for the reason */
#define POLL_SLICE_MS 100   /* how often a stop of the server is noticed while a child runs */

static const char *const outputs[] = {"stack.txt", "stack.json", NWB_CRASH_FRAMES_FILE};

/* The child: descriptors 2..4 in place, limits set, then exec. Only async-signal-safe calls
 * (the parent is multithreaded). */
static void child_exec(const char *const *argv, int pkg_fd, int out_fd, int err_fd,
                       const struct nwb_crash_symbolize_cfg *cfg)
{
    const int a = fcntl(pkg_fd, F_DUPFD_CLOEXEC, 10);
    const int b = fcntl(out_fd, F_DUPFD_CLOEXEC, 10);
    const int e = fcntl(err_fd, F_DUPFD_CLOEXEC, 10);
    const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    struct rlimit lim;
    sigset_t none;

    if (a < 0 || b < 0 || e < 0 || null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0 ||
        dup2(e, 2) < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0) {
        _exit(125);
    }
    (void)syscall(SYS_close_range, 5u, ~0u, 0u);
    sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);
    lim.rlim_cur = 0;
    lim.rlim_max = 0;
    (void)setrlimit(RLIMIT_CORE, &lim);
    if (cfg->max_cpu_s > 0) {
        lim.rlim_cur = cfg->max_cpu_s;
        lim.rlim_max = (rlim_t)cfg->max_cpu_s + 1; /* SIGXCPU, then SIGKILL a second later */
        (void)setrlimit(RLIMIT_CPU, &lim);
    }
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    /* A sanitizer runtime reserves terabytes of shadow address space: under one the memory cap
     * cannot apply (docs/operations.md). */
    if (cfg->max_memory_bytes > 0) {
        lim.rlim_cur = cfg->max_memory_bytes;
        lim.rlim_max = cfg->max_memory_bytes;
        (void)setrlimit(RLIMIT_AS, &lim);
    }
#endif
    execv(argv[0], (char *const *)(uintptr_t)argv);
    _exit(126);
}

/* The first line of @p text (@p len bytes) into @p out, control bytes as '?'. */
static void first_line(const char *text, size_t len, char *out, size_t cap)
{
    size_t n = 0;

    for (size_t i = 0; i < len && n + 1 < cap && text[i] != '\n'; i++) {
        const unsigned char c = (unsigned char)text[i];

        out[n++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    out[n] = '\0';
}

/*
 * Run the child over @p pkg_fd (the package folder) into @p out_fd; 0 when it exited 0, else
 * a negative code with the reason in @p why.
 */
static int run_child(const struct nwb_crash_symbolize_cfg *cfg, int pkg_fd, int out_fd,
                     const atomic_int *cancel, char *why, size_t why_size)
{
    const int debuginfod = cfg->debuginfod_urls[0] != '\0';
    const char *const argv[] = {cfg->symbolizer,
                                "--capture",
                                "/proc/self/fd/3/" NWB_CRASH_CAPTURE_FILE,
                                "--symbols-dir",
                                cfg->symbols_dir,
                                "--out",
                                "/proc/self/fd/4",
                                debuginfod ? "--debuginfod-urls" : NULL,
                                cfg->debuginfod_urls,
                                "--debuginfod-cache",
                                cfg->debuginfod_cache,
                                "--debuginfod-timeout-ms",
                                cfg->debuginfod_timeout_ms,
                                NULL};
    const nwb_deadline_t deadline = nwb_deadline_in_ms(cfg->timeout_ms);
    char err[STDERR_MAX + 1];
    size_t err_len = 0;
    int pipefd[2], pidfd, status = 0, timed_out = 0, cancelled = 0;
    pid_t pid;

    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        snprintf(why, why_size, "cannot start the symboliser: pipe: %s", strerror(errno));
        return -errno;
    }
    pid = fork();
    if (pid == 0) {
        child_exec(argv, pkg_fd, out_fd, pipefd[1], cfg);
    }
    close(pipefd[1]);
    if (pid < 0) {
        const int e = errno;

        close(pipefd[0]);
        snprintf(why, why_size, "cannot start the symboliser: fork: %s", strerror(e));
        return -e;
    }
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    for (;;) {
        struct pollfd p[2] = {{pipefd[0], POLLIN, 0}, {pidfd, POLLIN, 0}};
        const long left = nwb_deadline_left_ms(&deadline);
        int rc;

        if (left <= 0) {
            timed_out = 1;
            break;
        }
        if (cancel != NULL && atomic_load(cancel)) {
            cancelled = 1;
            break;
        }
        rc = poll(p, pidfd >= 0 ? 2 : 1, (int)(left < POLL_SLICE_MS ? left : POLL_SLICE_MS));
        if (rc < 0 && errno != EINTR) {
            timed_out = 1;
            break;
        }
        if (rc > 0 && (p[0].revents & (POLLIN | POLLHUP)) != 0) {
            char buf[512];
            const ssize_t n = read(pipefd[0], buf, sizeof(buf));

            if (n > 0 && err_len < STDERR_MAX) {
                const size_t take =
                    (size_t)n < STDERR_MAX - err_len ? (size_t)n : STDERR_MAX - err_len;

                memcpy(err + err_len, buf, take);
                err_len += take;
            }
            if (n == 0 && pidfd < 0) {
                break; /* no pidfd (an old kernel): stderr closing is the end */
            }
            if (n == 0) {
                p[0].fd = -1;
                pipefd[0] = (close(pipefd[0]), -1);
            }
        }
        if (pidfd >= 0 && rc > 0 && (p[1].revents & POLLIN) != 0) {
            break; /* exited */
        }
        if (pipefd[0] < 0 && pidfd < 0) {
            break;
        }
    }
    if (timed_out || cancelled) {
        kill(pid, SIGKILL);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (pidfd >= 0) {
        close(pidfd);
    }
    if (pipefd[0] >= 0) {
        close(pipefd[0]);
    }
    err[err_len] = '\0';
    if (cancelled) {
        snprintf(why, why_size, "the server stopped");
        return NWB_ECLOSED;
    }
    if (timed_out) {
        snprintf(why, why_size, "timed out after %u ms (--symbolize-timeout-ms)", cfg->timeout_ms);
        return NWB_ETIMEOUT;
    }
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);

        if (sig == SIGXCPU || (sig == SIGKILL && cfg->max_cpu_s > 0)) {
            snprintf(why, why_size, "killed by %s (CPU limit %u s, --symbolize-cpu-s)",
                     sig == SIGXCPU ? "SIGXCPU" : "SIGKILL", cfg->max_cpu_s);
        } else {
            snprintf(why, why_size, "the symboliser died of signal %d (%s)", sig, strsignal(sig));
        }
        return -ECHILD;
    }
    if (WEXITSTATUS(status) != 0) {
        char line[STDERR_MAX + 1];

        first_line(err, err_len, line, sizeof(line));
        if (WEXITSTATUS(status) == 126 || WEXITSTATUS(status) == 125) {
            snprintf(why, why_size, "cannot run the symboliser %s (exit %d)", cfg->symbolizer,
                     WEXITSTATUS(status));
        } else {
            snprintf(why, why_size, "the symboliser exited %d: %s", WEXITSTATUS(status),
                     line[0] != '\0' ? line : "(no reason given)");
        }
        return -ECHILD;
    }
    return 0;
}

/* Check the child's frames.tsv before anything is published. */
static int check_output(int out_fd, char *why, size_t why_size)
{
    const struct nwb_crash_frames_cb none = {NULL, NULL, NULL, NULL};
    char reason[256];
    uint8_t *text = NULL;
    size_t len = 0;
    int err;

    for (size_t i = 0; i < sizeof(outputs) / sizeof(outputs[0]); i++) {
        struct stat sb;

        if (fstatat(out_fd, outputs[i], &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode)) {
            snprintf(why, why_size, "the symboliser wrote no %s", outputs[i]);
            return -EINVAL;
        }
    }
    err = nwb_file_read_at(out_fd, NWB_CRASH_FRAMES_FILE, NWB_CRASH_FRAMES_TEXT_MAX, &text, &len);
    if (err != 0) {
        snprintf(why, why_size, "cannot read the symboliser's " NWB_CRASH_FRAMES_FILE);
        return err;
    }
    err = nwb_crash_frames_parse((const char *)text, len, &none, reason, sizeof(reason));
    nwb_free(text);
    if (err != 0) {
        snprintf(why, why_size, "the symboliser's " NWB_CRASH_FRAMES_FILE " refused: %s", reason);
    }
    return err;
}

int nwb__crash_has_capture(const struct nwb__crash_store *st, const char *id)
{
    char path[NWB_CRASH_INGEST_ID_LEN + sizeof("/" NWB_CRASH_CAPTURE_FILE)];
    struct stat sb;

    snprintf(path, sizeof(path), "%s/" NWB_CRASH_CAPTURE_FILE, id);
    return fstatat(st->cat_fd[NWB__CRASH_PACKAGES], path, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISREG(sb.st_mode);
}

int nwb__crash_symbolize(struct nwb__crash_store *st, const char *id,
                         const struct nwb_crash_symbolize_cfg *cfg, const atomic_int *cancel)
{
    char why[NWB_CRASH_SYMBOLIZE_PATH_MAX + 128];
    char tmp[NWB_CRASH_INGEST_ID_LEN + 32];
    int dir = -1, pkg = -1, out = -1, err;

    if (cfg->symbolizer[0] == '\0' || !nwb__crash_has_capture(st, id)) {
        return -ENOENT;
    }
    if (mkdirat(st->analysis_fd, id, 0755) != 0 && errno != EEXIST) {
        return -errno;
    }
    dir = openat(st->analysis_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    pkg = openat(st->cat_fd[NWB__CRASH_PACKAGES], id,
                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0 || pkg < 0) {
        err = -errno;
        goto out;
    }
    (void)nwb__crash_rmtree_at(dir, WORK_DIR);
    if (mkdirat(dir, WORK_DIR, 0755) != 0) {
        err = -errno;
        goto out;
    }
    out = openat(dir, WORK_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (out < 0) {
        err = -errno;
        goto out;
    }
    err = run_child(cfg, pkg, out, cancel, why, sizeof(why));
    if (err == NWB_ECLOSED) {
        goto out; /* redone at the next start: nothing recorded */
    }
    if (err == 0) {
        err = check_output(out, why, sizeof(why));
    }
    for (size_t i = 0; err == 0 && i < sizeof(outputs) / sizeof(outputs[0]); i++) {
        /* frames.tsv last: its presence is what "done" means. */
        if (renameat(out, outputs[i], dir, outputs[i]) != 0) {
            err = -errno;
            snprintf(why, sizeof(why), "cannot publish %s: %s", outputs[i], strerror(errno));
        }
    }
    if (err == 0) {
        (void)unlinkat(dir, NWB_CRASH_SYMBOLIZE_FAILED_FILE, 0);
    } else {
        const size_t len = strlen(why);

        why[len] = '\n';
        snprintf(tmp, sizeof(tmp), "%s.symbolize_failed", id);
        (void)nwb__crash_store_file_as(st, tmp, dir, NWB_CRASH_SYMBOLIZE_FAILED_FILE, why, len + 1);
        why[len] = '\0';
    }
out:
    if (out >= 0) {
        close(out);
    }
    if (dir >= 0) {
        (void)nwb__crash_rmtree_at(dir, WORK_DIR);
        close(dir);
    }
    if (pkg >= 0) {
        close(pkg);
    }
    return err;
}
