/* SPDX-License-Identifier: MIT */
/*
 * crash_ptrace.c - "nwb-crash capture", the helper the crash handler starts: it attaches to
 * every thread of the crashed process with PTRACE_SEIZE + PTRACE_INTERRUPT, reads each one's
 * registers (PTRACE_GETREGSET NT_PRSTATUS, in DWARF order), name and a bounded slice of its
 * stack, the code modules with build ids, detaches, and writes threads.nwbc (method 1) into
 * the package folder. The crashed thread's registers are the signal context's, which the
 * handler sends through a pipe. Every wait has a deadline (a one-shot SIGALRM timer).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/byte_order.h"
#include "nwb/crash.h"
#include "nwb/crash_capture.h"
#include "nwb/crash_capture_write.h"

#include "../capture_int.h"

#define TASK_ROUNDS 3 /* /proc/PID/task is listed again for threads started meanwhile */

struct thread {
    int tid;
    int seized;
    int stopped;
    uint32_t flags;
    char name[NWB_CRASH_CAPTURE_NAME_MAX + 1];
    uint64_t regs[NWB_CRASH_REGS_MAX];
    uint8_t *stack;
    size_t stack_len;
    uint64_t sp;
};

struct capture {
    const struct nwb__crash_capture_args *args;
    unsigned arch;
    unsigned nregs;
    uint64_t signal_regs[NWB_CRASH_REGS_MAX];
    struct thread *threads;
    size_t nthreads;
    struct nwb__crash_proc_module *modules;
    size_t nmodules;
    uint64_t deadline_ns;
    char *why;
    size_t why_cap;
};

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int fail(struct capture *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct capture *c, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->why, c->why_cap, fmt, ap);
    va_end(ap);
    return -1;
}

static void on_alarm(int sig)
{
    (void)sig; /* only to interrupt a blocking waitpid or read */
}

/* Arm a one-shot SIGALRM at the deadline, without SA_RESTART, so blocking calls end then. */
static int arm_deadline(uint64_t deadline_ns)
{
    const uint64_t now = now_ns();
    const uint64_t left = deadline_ns > now ? deadline_ns - now : 1000u;
    struct itimerval it;
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGALRM, &sa, NULL) != 0) {
        return -1;
    }
    memset(&it, 0, sizeof(it));
    it.it_value.tv_sec = (time_t)(left / 1000000000u);
    it.it_value.tv_usec = (suseconds_t)((left % 1000000000u) / 1000u);
    if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0) {
        it.it_value.tv_usec = 1;
    }
    return setitimer(ITIMER_REAL, &it, NULL);
}

static void disarm_deadline(void)
{
    struct itimerval it;

    memset(&it, 0, sizeof(it));
    (void)setitimer(ITIMER_REAL, &it, NULL);
}

/* The handler's message: arch u16, nregs u16, nregs u64 (little-endian). */
static int read_signal_regs(struct capture *c)
{
    uint8_t msg[4 + 8 * NWB_CRASH_REGS_MAX];
    size_t got = 0;

    while (got < sizeof(msg)) {
        const ssize_t n = read(c->args->regs_fd, msg + got, sizeof(msg) - got);

        if (n == 0) {
            break;
        }
        if (n < 0) {
            if (errno == EINTR && now_ns() < c->deadline_ns) {
                continue;
            }
            if (errno == EINTR) {
                return fail(c, "ptrace: no registers from the handler within %u ms",
                            c->args->timeout_ms);
            }
            return fail(c, "ptrace: no registers from the handler: %s", strerror(errno));
        }
        got += (size_t)n;
    }
    if (got < 4) {
        return fail(c, "ptrace: no registers from the handler (%zu bytes)", got);
    }
    c->arch = nwb_le16_load(msg);
    c->nregs = nwb_le16_load(msg + 2);
    if (!((c->arch == NWB_CRASH_ARCH_X86_64 && c->nregs == NWB_CRASH_REGS_X86_64) ||
          (c->arch == NWB_CRASH_ARCH_AARCH64 && c->nregs == NWB_CRASH_REGS_AARCH64)) ||
        got != 4 + 8u * c->nregs) {
        return fail(c, "ptrace: bad register message (arch %u, %u registers, %zu bytes)", c->arch,
                    c->nregs, got);
    }
    for (unsigned i = 0; i < c->nregs; i++) {
        c->signal_regs[i] = nwb_le64_load(msg + 4 + 8u * i);
    }
    return 0;
}

static int have_tid(const struct capture *c, int tid)
{
    for (size_t i = 0; i < c->nthreads; i++) {
        if (c->threads[i].tid == tid) {
            return 1;
        }
    }
    return 0;
}

/* Add the tids of /proc/PID/task not seen yet. Returns how many were added, or -1. */
static long list_tasks(struct capture *c)
{
    char path[64];
    struct dirent *d;
    long added = 0;
    DIR *dir;

    snprintf(path, sizeof(path), "/proc/%d/task", c->args->pid);
    dir = opendir(path);
    if (dir == NULL) {
        return fail(c, "ptrace: %s: %s", path, strerror(errno));
    }
    while ((d = readdir(dir)) != NULL) {
        const int tid = atoi(d->d_name);

        if (tid <= 0 || have_tid(c, tid)) {
            continue;
        }
        if (c->nthreads == NWB_CRASH_CAPTURE_THREADS_MAX) {
            break;
        }
        memset(&c->threads[c->nthreads], 0, sizeof(c->threads[0]));
        c->threads[c->nthreads++].tid = tid;
        added++;
    }
    closedir(dir);
    return added;
}

static const char *yama_scope(char *buf, size_t cap)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
    int scope;

    if (f == NULL) {
        return "no Yama; seccomp, a container or missing rights";
    }
    if (fscanf(f, "%d", &scope) != 1) {
        scope = -1;
    }
    fclose(f);
    snprintf(buf, cap, "Yama ptrace_scope %d", scope);
    return buf;
}

static int seize_new(struct capture *c, size_t from)
{
    for (size_t i = from; i < c->nthreads; i++) {
        struct thread *t = &c->threads[i];

        if (ptrace(PTRACE_SEIZE, t->tid, NULL, NULL) != 0) {
            const int err = errno;
            char scope[64];

            if (err == ESRCH) {
                continue; /* the thread ended meanwhile */
            }
            return fail(c, "ptrace: %s (%s)", err == EPERM ? "EPERM" : strerror(err),
                        yama_scope(scope, sizeof(scope)));
        }
        t->seized = 1;
        (void)ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
    }
    return 0;
}

/* Wait for every seized thread's stop, until the deadline. */
static void wait_stops(struct capture *c, size_t from)
{
    if (arm_deadline(c->deadline_ns) != 0) {
        return;
    }
    for (size_t i = from; i < c->nthreads; i++) {
        struct thread *t = &c->threads[i];
        int status;

        if (!t->seized || t->stopped) {
            continue;
        }
        if (waitpid(t->tid, &status, __WALL) == t->tid) {
            t->stopped = WIFSTOPPED(status);
            if (WIFEXITED(status) || WIFSIGNALED(status)) {
                t->seized = 0;
            }
        } else if (errno == EINTR) {
            break; /* the deadline */
        }
    }
    disarm_deadline();
}

static void read_regs(struct capture *c, struct thread *t)
{
    struct user_regs_struct r;
    struct iovec io = {.iov_base = &r, .iov_len = sizeof(r)};

    if (t->tid == c->args->tid) {
        memcpy(t->regs, c->signal_regs, sizeof(t->regs));
        t->flags = NWB_CRASH_THREAD_CRASHED | NWB_CRASH_THREAD_SIGNAL_REGS;
    } else if (ptrace(PTRACE_GETREGSET, t->tid, (void *)(uintptr_t)NT_PRSTATUS, &io) == 0) {
#if defined(__x86_64__)
        const uint64_t v[NWB_CRASH_REGS_X86_64] = {
            r.rax, r.rdx, r.rcx, r.rbx, r.rsi, r.rdi, r.rbp, r.rsp, r.r8,
            r.r9,  r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rip,
        };

        memcpy(t->regs, v, sizeof(v));
#elif defined(__aarch64__)
        for (unsigned i = 0; i < 31; i++) {
            t->regs[i] = r.regs[i];
        }
        t->regs[31] = r.sp;
        t->regs[32] = r.pc;
#endif
    }
    t->sp = t->regs[c->arch == NWB_CRASH_ARCH_X86_64 ? 7 : 31];
}

static void read_name(const struct capture *c, struct thread *t)
{
    char path[96];
    int fd;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", c->args->pid, t->tid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return;
    }
    n = read(fd, t->name, NWB_CRASH_CAPTURE_NAME_MAX);
    close(fd);
    if (n <= 0) {
        t->name[0] = '\0';
        return;
    }
    t->name[n] = '\0';
    t->name[strcspn(t->name, "\n")] = '\0';
}

/* Up to @p max bytes from sp, a page at a time (a read stops at the first unmapped page). */
static void read_stack(const struct capture *c, struct thread *t, size_t max, int mem_fd)
{
    size_t got = 0;

    t->stack = nwb_malloc(max > 0 ? max : 1);
    if (t->stack == NULL) {
        return;
    }
    while (got < max) {
        const uint64_t at = t->sp + got;
        size_t n = 4096u - (size_t)(at & 4095u);
        struct iovec local, remote;
        ssize_t r;

        if (n > max - got) {
            n = max - got;
        }
        local.iov_base = t->stack + got;
        local.iov_len = n;
        remote.iov_base = (void *)(uintptr_t)at;
        remote.iov_len = n;
        r = process_vm_readv(c->args->pid, &local, 1, &remote, 1, 0);
        if (r < 0 && mem_fd >= 0) {
            r = pread(mem_fd, t->stack + got, n, (off_t)at);
        }
        if (r <= 0) {
            break;
        }
        got += (size_t)r;
        if ((size_t)r < n) {
            break;
        }
    }
    t->stack_len = got;
}

size_t nwb__crash_capture_stack_budget(size_t nthreads, size_t nmodules)
{
    const size_t fixed =
        32u + NWB_CRASH_CAPTURE_NOTE_MAX + nthreads * (40u + 8u * NWB_CRASH_REGS_MAX) +
        nmodules * (32u + NWB_CRASH_CAPTURE_BUILD_ID_MAX + NWB_CRASH_CAPTURE_PATH_MAX);
    size_t per = NWB__CRASH_CAPTURE_STACK_BYTES;

    if (fixed >= NWB_CRASH_CAPTURE_FILE_MAX) {
        return 0;
    }
    if (nthreads > 0 && (NWB_CRASH_CAPTURE_FILE_MAX - fixed) / nthreads < per) {
        per = (NWB_CRASH_CAPTURE_FILE_MAX - fixed) / nthreads;
    }
    return per;
}

static int write_file(struct capture *c, const char *note, size_t note_len)
{
    char part[NWB_CRASH_PATH_MAX + 64], final[NWB_CRASH_PATH_MAX + 64];
    size_t cap = 32u + note_len;
    nwb_crash_capture_writer_t w;
    uint8_t *buf;
    long len;
    int fd, rc = 0;

    for (size_t i = 0; i < c->nthreads; i++) {
        cap += 40u + 8u * c->nregs + c->threads[i].stack_len;
    }
    for (size_t i = 0; i < c->nmodules; i++) {
        cap += 32u + c->modules[i].build_id_len + c->modules[i].path_len;
    }
    buf = nwb_malloc(cap);
    if (buf == NULL) {
        return fail(c, "ptrace: out of memory for a %zu-byte file", cap);
    }
    nwb_crash_capture_writer_init(&w, buf, cap);
    nwb_crash_capture_write_header(&w, c->arch, NWB_CRASH_CAPTURE_PTRACE, (uint32_t)c->args->pid,
                                   (uint32_t)c->args->tid, (uint32_t)c->nthreads,
                                   (uint32_t)c->nmodules, note, note_len);
    for (size_t i = 0; i < c->nthreads; i++) {
        const struct thread *t = &c->threads[i];

        nwb_crash_capture_write_thread(&w, (uint32_t)t->tid, t->flags, t->name, t->regs, c->nregs,
                                       t->sp, t->stack, t->stack_len);
    }
    for (size_t i = 0; i < c->nmodules; i++) {
        const struct nwb__crash_proc_module *m = &c->modules[i];

        nwb_crash_capture_write_module(&w, m->start, m->end, m->file_offset, m->build_id,
                                       m->build_id_len, m->path, m->path_len);
    }
    len = nwb_crash_capture_writer_finish(&w);
    snprintf(part, sizeof(part), "%s/.threads.nwbc.part", c->args->dir);
    snprintf(final, sizeof(final), "%s/%s", c->args->dir, NWB_CRASH_CAPTURE_FILE);
    fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (len < 0 || fd < 0) {
        rc = fail(c, "ptrace: cannot write %s: %s", part, len < 0 ? "overflow" : strerror(errno));
    } else if (nwb_write_all(fd, buf, (size_t)len) != 0) {
        rc = fail(c, "ptrace: cannot write %s: %s", part, strerror(errno));
    }
    if (fd >= 0) {
        close(fd);
    }
    if (rc == 0 && rename(part, final) != 0) {
        rc = fail(c, "ptrace: cannot rename %s: %s", part, strerror(errno));
    }
    if (rc != 0) {
        (void)unlink(part);
    }
    nwb_free(buf);
    return rc;
}

static void detach_all(struct capture *c)
{
    for (size_t i = 0; i < c->nthreads; i++) {
        if (c->threads[i].seized) {
            (void)ptrace(PTRACE_DETACH, c->threads[i].tid, NULL, NULL);
            c->threads[i].seized = 0;
        }
    }
}

/* Keep the threads that stopped, in order; the crashed thread (always record 0, listed first)
 * stays whether or not it stopped: its registers and stack need no stop. Returns how many
 * were dropped. */
static size_t keep_stopped(struct capture *c)
{
    size_t kept = 0, dropped = 0;

    for (size_t i = 0; i < c->nthreads; i++) {
        if (i > 0 && !c->threads[i].stopped) {
            nwb_free(c->threads[i].stack);
            dropped++;
            continue;
        }
        c->threads[kept++] = c->threads[i];
    }
    c->nthreads = kept;
    return dropped;
}

int nwb__crash_ptrace_capture(const struct nwb__crash_capture_args *args, char *note,
                              size_t note_cap)
{
    struct capture c;
    const uint64_t t0 = now_ns();
    size_t seized_from = 0, dropped, per_thread;
    char mem_path[64];
    int rc = -1, mem_fd;
    long mods;

    memset(&c, 0, sizeof(c));
    c.args = args;
    c.why = note;
    c.why_cap = note_cap;
    c.deadline_ns = t0 + (uint64_t)args->timeout_ms * 1000000u;
    c.threads = nwb_calloc(NWB_CRASH_CAPTURE_THREADS_MAX, sizeof(*c.threads));
    if (c.threads == NULL) {
        return fail(&c, "ptrace: out of memory");
    }
    if (arm_deadline(c.deadline_ns) != 0 || read_signal_regs(&c) != 0) {
        disarm_deadline();
        goto out;
    }
    disarm_deadline();
    /* The crashed thread first, so that a refusal is about it. */
    c.threads[c.nthreads++].tid = args->tid;
    for (int round = 0; round < TASK_ROUNDS; round++) {
        const long added = list_tasks(&c);

        if (added < 0) {
            goto out;
        }
        if (round > 0 && added == 0) {
            break;
        }
        if (seize_new(&c, seized_from) != 0) {
            goto out;
        }
        wait_stops(&c, seized_from);
        seized_from = c.nthreads;
    }
    if (!c.threads[0].seized) {
        fail(&c, "ptrace: the crashed thread %d could not be attached", args->tid);
        goto out;
    }
    mods = nwb__crash_proc_modules(args->pid, &c.modules);
    c.nmodules = mods > 0 ? (size_t)mods : 0;
    per_thread = nwb__crash_capture_stack_budget(c.nthreads, c.nmodules);
    snprintf(mem_path, sizeof(mem_path), "/proc/%d/mem", args->pid);
    mem_fd = open(mem_path, O_RDONLY | O_CLOEXEC);
    for (size_t i = 0; i < c.nthreads; i++) {
        struct thread *t = &c.threads[i];

        if (!t->stopped && t->tid != args->tid) {
            continue;
        }
        read_regs(&c, t);
        read_name(&c, t);
        read_stack(&c, t, per_thread, mem_fd);
    }
    if (mem_fd >= 0) {
        close(mem_fd);
    }
    detach_all(&c);
    dropped = keep_stopped(&c);
    {
        const uint64_t us = (now_ns() - t0) / 1000u;
        char text[160];
        int n;

        if (dropped > 0) {
            n = snprintf(text, sizeof(text),
                         "ptrace: attached %zu threads in %llu.%llu ms; %zu did not stop in time",
                         c.nthreads, (unsigned long long)(us / 1000u),
                         (unsigned long long)(us % 1000u / 100u), dropped);
        } else {
            n = snprintf(text, sizeof(text), "ptrace: attached %zu threads in %llu.%llu ms",
                         c.nthreads, (unsigned long long)(us / 1000u),
                         (unsigned long long)(us % 1000u / 100u));
        }
        if (n < 0 || (size_t)n >= sizeof(text)) {
            n = 0;
        }
        rc = write_file(&c, text, (size_t)n);
        if (rc == 0) {
            snprintf(note, note_cap, "%s", text);
        }
    }
out:
    detach_all(&c);
    for (size_t i = 0; i < c.nthreads; i++) {
        nwb_free(c.threads[i].stack);
    }
    nwb_free(c.threads);
    nwb__crash_proc_modules_free(c.modules, c.nmodules);
    return rc;
}

int nwb_crash_capture_process(int pid, int tid, const char *pkg_dir, int regs_fd,
                              unsigned timeout_ms, char *note, size_t note_cap)
{
    const struct nwb__crash_capture_args args = {
        .pid = pid,
        .tid = tid,
        .dir = pkg_dir,
        .regs_fd = regs_fd,
        .timeout_ms = timeout_ms,
    };

    if (pid <= 0 || tid <= 0 || pkg_dir == NULL || note == NULL || note_cap == 0) {
        if (note != NULL && note_cap > 0) {
            snprintf(note, note_cap, "ptrace: bad arguments");
        }
        return -1;
    }
    return nwb__crash_ptrace_capture(&args, note, note_cap);
}
