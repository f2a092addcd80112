/* SPDX-License-Identifier: MIT */
/*
 * capture_ptrace.c - capture_ptrace_run() (capture_ptrace.h): the program is its tracer's
 * child (PTRACE_TRACEME), its threads are traced as they are cloned, and at the first fatal
 * signal-delivery stop every thread is stopped and read out: registers (PTRACE_GETREGS),
 * stack (process_vm_readv, within the mapping that holds sp), names (/proc/PID/task/TID/comm)
 * and the ELF mappings of /proc/PID/maps with their build ids (libdwelf).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

#include "nwb/crash_capture.h"
#include "nwb/crash_capture_write.h"

#include "capture_ptrace.h"

#define TIDS_MAX    64
#define MODULES_MAX 256

struct module {
    uint64_t start, end, file_offset;
    uint8_t build_id[NWB_CRASH_CAPTURE_BUILD_ID_MAX];
    size_t build_id_len;
    char path[512];
};

struct thread {
    pid_t tid;
    uint64_t regs[NWB_CRASH_REGS_X86_64];
    uint64_t stack_start;
    uint8_t *stack;
    size_t stack_len;
    char name[16];
};

static int build_id_of(const char *path, uint8_t *out, size_t *len)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    Elf *elf;
    const void *id = NULL;
    ssize_t n = -1;

    if (fd < 0) {
        return -1;
    }
    elf_version(EV_CURRENT);
    elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (elf != NULL && elf_kind(elf) == ELF_K_ELF) {
        n = dwelf_elf_gnu_build_id(elf, &id);
    }
    if (n > 0 && (size_t)n <= NWB_CRASH_CAPTURE_BUILD_ID_MAX) {
        memcpy(out, id, (size_t)n);
        *len = (size_t)n;
    } else {
        n = -1;
    }
    elf_end(elf);
    close(fd);
    return n > 0 ? 0 : -1;
}

/* The ELF files mapped into @p pid, one module per run of consecutive mappings of a path. */
static size_t read_modules(pid_t pid, struct module *mods)
{
    char path[64], line[1024];
    size_t n = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long long start, end, off;
        char perms[8], file[512];
        int pos = 0;

        file[0] = '\0';
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s%n", &start, &end, perms, &off, &pos) < 4) {
            continue;
        }
        sscanf(line + pos, " %511[^\n]", file);
        if (file[0] != '/') {
            continue;
        }
        if (n > 0 && strcmp(mods[n - 1].path, file) == 0 && mods[n - 1].end == start) {
            mods[n - 1].end = end;
            continue;
        }
        if (n == MODULES_MAX) {
            continue;
        }
        memset(&mods[n], 0, sizeof(mods[n]));
        if (build_id_of(file, mods[n].build_id, &mods[n].build_id_len) != 0) {
            continue; /* not ELF (a font, a locale archive) */
        }
        /* A path seen before, not adjacent: keep the first run only (modules must not
         * overlap and be sorted). */
        int seen = 0;
        for (size_t i = 0; i < n; i++) {
            seen |= strcmp(mods[i].path, file) == 0;
        }
        if (seen) {
            continue;
        }
        mods[n].start = start;
        mods[n].end = end;
        mods[n].file_offset = off;
        snprintf(mods[n].path, sizeof(mods[n].path), "%s", file);
        n++;
    }
    fclose(f);
    return n;
}

static void read_thread(pid_t pid, struct thread *t)
{
    struct user_regs_struct r;
    char path[96];
    uint64_t stack_end = 0;
    FILE *f;

    memset(&r, 0, sizeof(r));
    (void)ptrace(PTRACE_GETREGS, t->tid, NULL, &r);
    /* DWARF order: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip. */
    t->regs[0] = r.rax, t->regs[1] = r.rdx, t->regs[2] = r.rcx, t->regs[3] = r.rbx;
    t->regs[4] = r.rsi, t->regs[5] = r.rdi, t->regs[6] = r.rbp, t->regs[7] = r.rsp;
    t->regs[8] = r.r8, t->regs[9] = r.r9, t->regs[10] = r.r10, t->regs[11] = r.r11;
    t->regs[12] = r.r12, t->regs[13] = r.r13, t->regs[14] = r.r14, t->regs[15] = r.r15;
    t->regs[16] = r.rip;
    {
        /* The end of the mapping holding sp bounds the read. */
        char mpath[64], line[1024];
        FILE *m;

        snprintf(mpath, sizeof(mpath), "/proc/%d/maps", (int)pid);
        m = fopen(mpath, "r");
        while (m != NULL && fgets(line, sizeof(line), m) != NULL) {
            unsigned long long a, b;

            if (sscanf(line, "%llx-%llx", &a, &b) == 2 && r.rsp >= a && r.rsp < b) {
                stack_end = b;
            }
        }
        if (m != NULL) {
            fclose(m);
        }
    }
    t->stack_start = r.rsp;
    t->stack_len = stack_end > r.rsp ? (size_t)(stack_end - r.rsp) : 0;
    if (t->stack_len > CAPTURE_PTRACE_STACK_BYTES) {
        t->stack_len = CAPTURE_PTRACE_STACK_BYTES;
    }
    t->stack = malloc(t->stack_len + 1);
    if (t->stack != NULL && t->stack_len > 0) {
        struct iovec local = {t->stack, t->stack_len};
        struct iovec remote = {(void *)(uintptr_t)r.rsp, t->stack_len};
        const ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);

        t->stack_len = got > 0 ? (size_t)got : 0;
    }
    snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)t->tid);
    f = fopen(path, "r");
    t->name[0] = '\0';
    if (f != NULL) {
        if (fgets(t->name, sizeof(t->name), f) != NULL) {
            t->name[strcspn(t->name, "\n")] = '\0';
        }
        fclose(f);
    }
}

static int is_fatal(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT ||
           sig == SIGALRM;
}

static int write_capture(pid_t pid, pid_t crashed, const pid_t *tids, size_t ntids,
                         const char *out_path, char *why, size_t why_size)
{
    static struct module mods[MODULES_MAX];
    struct thread threads[TIDS_MAX];
    size_t nthreads = 0, nmods, cap;
    nwb_crash_capture_writer_t w;
    uint8_t *buf;
    long len;
    int rc = -1;
    FILE *f;

    /* The crashed thread first. */
    threads[nthreads++].tid = crashed;
    for (size_t i = 0; i < ntids && nthreads < TIDS_MAX; i++) {
        if (tids[i] != crashed) {
            threads[nthreads++].tid = tids[i];
        }
    }
    for (size_t i = 0; i < nthreads; i++) {
        read_thread(pid, &threads[i]);
    }
    nmods = read_modules(pid, mods);
    cap = 4096 + nthreads * (CAPTURE_PTRACE_STACK_BYTES + 256) + nmods * 1024;
    buf = malloc(cap);
    if (buf == NULL) {
        snprintf(why, why_size, "out of memory");
        goto out;
    }
    nwb_crash_capture_writer_init(&w, buf, cap);
    nwb_crash_capture_write_header(&w, NWB_CRASH_ARCH_X86_64, NWB_CRASH_CAPTURE_PTRACE,
                                   (uint32_t)pid, (uint32_t)crashed, (uint32_t)nthreads,
                                   (uint32_t)nmods, "test tracer", 11);
    for (size_t i = 0; i < nthreads; i++) {
        nwb_crash_capture_write_thread(
            &w, (uint32_t)threads[i].tid, i == 0 ? NWB_CRASH_THREAD_CRASHED : 0, threads[i].name,
            threads[i].regs, NWB_CRASH_REGS_X86_64, threads[i].stack_start, threads[i].stack,
            threads[i].stack_len);
    }
    for (size_t i = 0; i < nmods; i++) {
        nwb_crash_capture_write_module(&w, mods[i].start, mods[i].end, mods[i].file_offset,
                                       mods[i].build_id, mods[i].build_id_len, mods[i].path,
                                       strlen(mods[i].path));
    }
    len = nwb_crash_capture_writer_finish(&w);
    f = len > 0 ? fopen(out_path, "wb") : NULL;
    if (f == NULL || fwrite(buf, 1, (size_t)len, f) != (size_t)len) {
        snprintf(why, why_size, "cannot write %s", out_path);
    } else {
        rc = 0;
    }
    if (f != NULL && fclose(f) != 0) {
        rc = -1;
    }
out:
    for (size_t i = 0; i < nthreads; i++) {
        free(threads[i].stack);
    }
    free(buf);
    return rc;
}

int capture_ptrace_run(char *const argv[], const char *const *env_add, const char *out_path,
                       char *why, size_t why_size)
{
    pid_t tids[TIDS_MAX];
    size_t ntids = 0;
    int status, rc = -1;
    const pid_t pid = fork();

    if (pid < 0) {
        snprintf(why, why_size, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        for (size_t i = 0; env_add != NULL && env_add[i] != NULL; i++) {
            putenv((char *)(uintptr_t)env_add[i]);
        }
        alarm(60);
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) {
            _exit(126);
        }
        raise(SIGSTOP);
        execv(argv[0], argv);
        _exit(127);
    }
    if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
        snprintf(why, why_size, "the child did not stop for the tracer");
        goto reap;
    }
    (void)ptrace(PTRACE_SETOPTIONS, pid, NULL,
                 (void *)(uintptr_t)(PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL));
    tids[ntids++] = pid;
    (void)ptrace(PTRACE_CONT, pid, NULL, NULL);
    for (;;) {
        const pid_t tid = waitpid(-1, &status, __WALL);
        int sig;

        if (tid < 0) {
            snprintf(why, why_size, "waitpid: %s", strerror(errno));
            goto reap;
        }
        if (tid == pid && (WIFEXITED(status) || WIFSIGNALED(status))) {
            snprintf(why, why_size, "the program ended without a fatal signal (status 0x%x)",
                     status);
            return -1;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            for (size_t i = 0; i < ntids; i++) {
                if (tids[i] == tid) {
                    tids[i] = tids[--ntids]; /* a thread that ended */
                    break;
                }
            }
            continue;
        }
        if (!WIFSTOPPED(status)) {
            continue;
        }
        sig = WSTOPSIG(status);
        if (status >> 16 == PTRACE_EVENT_CLONE) {
            unsigned long child = 0;

            (void)ptrace(PTRACE_GETEVENTMSG, tid, NULL, &child);
            if (ntids < TIDS_MAX) {
                tids[ntids++] = (pid_t)child;
            }
            (void)ptrace(PTRACE_CONT, tid, NULL, NULL);
            continue;
        }
        if (status >> 16 != 0 || sig == SIGSTOP) {
            /* The exec event, or a new thread's first stop. */
            (void)ptrace(PTRACE_CONT, tid, NULL, NULL);
            continue;
        }
        if (!is_fatal(sig)) {
            (void)ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)sig);
            continue;
        }
        /* Stop every other thread, then read them all. */
        for (size_t i = 0; i < ntids; i++) {
            if (tids[i] != tid && syscall(SYS_tgkill, pid, tids[i], SIGSTOP) == 0) {
                int st;

                while (waitpid(tids[i], &st, __WALL) == tids[i] && !WIFSTOPPED(st)) {
                }
            }
        }
        rc = write_capture(pid, tid, tids, ntids, out_path, why, why_size);
        break;
    }
reap:
    kill(pid, SIGKILL);
    /* Every other thread first: a traced leader is only reported once they are all reaped. */
    for (size_t i = 0; i < ntids; i++) {
        while (tids[i] != pid && waitpid(tids[i], &status, __WALL) == tids[i] &&
               !WIFEXITED(status) && !WIFSIGNALED(status)) {
        }
    }
    while (waitpid(pid, &status, __WALL) == pid && !WIFEXITED(status) && !WIFSIGNALED(status)) {
    }
    return rc;
}
