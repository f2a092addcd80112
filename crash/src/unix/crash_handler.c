/* SPDX-License-Identifier: MIT */
/*
 * crash_handler.c - the fatal-signal handler. Only the first fatal signal is
 * handled; it writes the package (manifest, crash data, memory map, log tail,
 * the application's app.txt, threads.nwbc) with async-signal-safe calls, starts the
 * uploader, restores the default dispositions and re-raises, so the exit
 * status and core dump are what they would have been without it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "nwb/error.h"

#include "../capture_int.h"

static const int fatal_signals[NWB__CRASH_SIGNALS] = {SIGSEGV, SIGBUS,  SIGILL, SIGFPE,
                                                      SIGABRT, SIGTRAP, SIGSYS};
static struct sigaction previous_actions[NWB__CRASH_SIGNALS];
static int handlers_set;
static atomic_int handling;

/* Static so the handler's frame on the alternate stack stays small. */
static struct nwb__sw out;

static int current_tid(void)
{
    return (int)syscall(SYS_gettid);
}

static void say(const char *a, const char *b)
{
    /* One line on stderr; best effort. */
    static struct nwb__sw err;

    nwb__sw_init(&err, STDERR_FILENO, 1024);
    nwb__sw_str(&err, "nwb-crash: ");
    nwb__sw_str(&err, a);
    nwb__sw_str(&err, b);
    nwb__sw_chr(&err, '\n');
    (void)nwb__sw_flush(&err);
}

static uintptr_t context_pc(const ucontext_t *uc)
{
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
    (void)uc;
    return 0;
#endif
}

static void write_registers(struct nwb__sw *w, const ucontext_t *uc)
{
#if defined(__x86_64__)
    static const struct {
        const char *name;
        int reg;
    } regs[] = {
        {"rax", REG_RAX}, {"rbx", REG_RBX},         {"rcx", REG_RCX},       {"rdx", REG_RDX},
        {"rsi", REG_RSI}, {"rdi", REG_RDI},         {"rbp", REG_RBP},       {"rsp", REG_RSP},
        {"r8", REG_R8},   {"r9", REG_R9},           {"r10", REG_R10},       {"r11", REG_R11},
        {"r12", REG_R12}, {"r13", REG_R13},         {"r14", REG_R14},       {"r15", REG_R15},
        {"rip", REG_RIP}, {"eflags", REG_EFL},      {"err", REG_ERR},       {"trapno", REG_TRAPNO},
        {"cr2", REG_CR2}, {"oldmask", REG_OLDMASK}, {"csgsfs", REG_CSGSFS},
    };

    nwb__sw_str(w, "arch=x86_64\n");
    for (size_t i = 0; i < NWB_ARRAY_SIZE(regs); i++) {
        nwb__sw_str(w, regs[i].name);
        nwb__sw_chr(w, '=');
        nwb__sw_hex(w, (uint64_t)uc->uc_mcontext.gregs[regs[i].reg], 16);
        nwb__sw_chr(w, '\n');
    }
#elif defined(__aarch64__)
    nwb__sw_str(w, "arch=aarch64\n");
    for (int i = 0; i < 31; i++) {
        nwb__sw_chr(w, 'x');
        nwb__sw_u64(w, (uint64_t)i);
        nwb__sw_chr(w, '=');
        nwb__sw_hex(w, uc->uc_mcontext.regs[i], 16);
        nwb__sw_chr(w, '\n');
    }
    nwb__sw_str(w, "sp=");
    nwb__sw_hex(w, uc->uc_mcontext.sp, 16);
    nwb__sw_str(w, "\npc=");
    nwb__sw_hex(w, uc->uc_mcontext.pc, 16);
    nwb__sw_str(w, "\npstate=");
    nwb__sw_hex(w, uc->uc_mcontext.pstate, 16);
    nwb__sw_str(w, "\nfault_address=");
    nwb__sw_hex(w, uc->uc_mcontext.fault_address, 16);
    nwb__sw_chr(w, '\n');
#else
    (void)uc;
    nwb__sw_str(w, "arch=unknown\n");
#endif
}

static void write_frame(struct nwb__sw *w, unsigned index, uintptr_t pc)
{
    const char *path;
    uintptr_t rel;

    nwb__sw_chr(w, '#');
    nwb__sw_u64(w, index);
    nwb__sw_chr(w, ' ');
    nwb__sw_hex(w, pc, 16);
    if (nwb__crash_module_find(pc, &path, &rel) == 0) {
        nwb__sw_chr(w, ' ');
        nwb__sw_str(w, path);
        nwb__sw_chr(w, '+');
        nwb__sw_hex(w, rel, 1);
    } else {
        nwb__sw_str(w, " ?");
    }
    nwb__sw_chr(w, '\n');
}

/*
 * The unwinder (libgcc, through glibc's backtrace(), loaded at install) starts
 * in this handler and crosses the signal frame; the interrupted pc shows up
 * as one entry, and the crash's stack starts there.
 */
static void write_backtrace(struct nwb__sw *w, const ucontext_t *uc)
{
    static void *frames[NWB_CRASH_FRAMES_MAX + 16];
    const uintptr_t pc = context_pc(uc);
    const int n = backtrace(frames, (int)NWB_ARRAY_SIZE(frames));
    int start = -1;
    unsigned index = 0;

    for (int i = 0; i < n; i++) {
        if ((uintptr_t)frames[i] == pc) {
            start = i;
            break;
        }
    }
    nwb__sw_str(w, "# frame 0 is the interrupted pc; later frames are return addresses\n");
    if (start < 0) {
        /* The unwinder did not cross the signal frame: the pc, then what it found. */
        nwb__sw_str(w, "# unwinder did not reach the interrupted frame\n");
        write_frame(w, index++, pc);
        start = 0;
    }
    for (int i = start; i < n && index < NWB_CRASH_FRAMES_MAX; i++) {
        write_frame(w, index++, (uintptr_t)frames[i]);
    }
}

static void write_signal_keys(struct nwb__sw *w, int sig, const siginfo_t *si, int tid,
                              const char *tname)
{
    const char *name = nwb__crash_signal_name(sig);
    const char *code = nwb__crash_sigcode_name(sig, si->si_code);

    nwb__sw_kv(w, "signal", name != NULL ? name : "?");
    nwb__sw_str(w, "signal_number=");
    nwb__sw_u64(w, (uint64_t)sig);
    nwb__sw_chr(w, '\n');
    nwb__sw_kv(w, "code", code != NULL ? code : "?");
    nwb__sw_str(w, "code_number=");
    nwb__sw_i64(w, si->si_code);
    nwb__sw_str(w, "\naddress=");
    nwb__sw_hex(w, (uint64_t)(uintptr_t)si->si_addr, 16);
    nwb__sw_chr(w, '\n');
    if (si->si_code <= 0) {
        nwb__sw_str(w, "sender_pid=");
        nwb__sw_i64(w, si->si_pid);
        nwb__sw_chr(w, '\n');
    }
    nwb__sw_str(w, "thread_id=");
    nwb__sw_u64(w, (uint64_t)tid);
    nwb__sw_chr(w, '\n');
    nwb__sw_kv(w, "thread_name", tname);
    nwb__sw_str(w, tid == nwb__crash_g.main_tid ? "main_thread=1\n" : "main_thread=0\n");
}

static void write_app(struct nwb__crash_pkg *pkg)
{
    struct nwb__crash_state *g = &nwb__crash_g;
    int fd;
    off_t size;

    if (g->on_crash == NULL) {
        return;
    }
    fd = nwb__crash_pkg_open(pkg, "app.txt");
    if (fd < 0) {
        return;
    }
    g->on_crash(fd, g->on_crash_arg);
    size = lseek(fd, 0, SEEK_END);
    if (size > (off_t)NWB_CRASH_APP_MAX) {
        (void)ftruncate(fd, (off_t)NWB_CRASH_APP_MAX);
    }
    close(fd);
}

static void write_package(int sig, const siginfo_t *si, const ucontext_t *uc)
{
    struct nwb__crash_state *g = &nwb__crash_g;
    struct nwb__crash_pkg pkg;
    const uint64_t now = nwb__crash_now_ns();
    const int tid = current_tid();
    char tname[17] = {0};
    const char *signame = nwb__crash_signal_name(sig);
    int fd, rc;

    (void)prctl(PR_GET_NAME, tname, 0, 0, 0);
    rc = nwb__crash_pkg_begin(&pkg, "signal", now);
    if (rc != 0) {
        say(signame != NULL ? signame : "fatal signal",
            rc == NWB_EFULL ? ": pending folder full, no package written"
                            : ": cannot create the package folder");
        return;
    }
    say(signame != NULL ? signame : "fatal signal", ": writing crash package");

    /* The manifest first: a handler that dies later still leaves a recoverable package. */
    fd = nwb__crash_pkg_open(&pkg, NWB_CRASH_MANIFEST_NAME);
    nwb__sw_init(&out, fd, 64u * 1024u);
    nwb__crash_pkg_manifest_common(&out, "signal", now);
    write_signal_keys(&out, sig, si, tid, tname);
    (void)nwb__sw_flush(&out);
    if (fd >= 0) {
        close(fd);
    }

    fd = nwb__crash_pkg_open(&pkg, "maps.txt");
    nwb__crash_modules_load(fd);
    if (fd >= 0) {
        close(fd);
    }

    fd = nwb__crash_pkg_open(&pkg, "crash.txt");
    nwb__sw_init(&out, fd, NWB__CRASH_CRASHTXT_MAX);
    write_signal_keys(&out, sig, si, tid, tname);
    nwb__sw_str(&out, "\n[registers]\n");
    write_registers(&out, uc);
    nwb__sw_str(&out, "\n[backtrace]\n");
    write_backtrace(&out, uc);
    (void)nwb__sw_flush(&out);
    if (fd >= 0) {
        close(fd);
    }

    /* Every thread from outside (ptrace helper, at most NWB__CRASH_CAPTURE_TIMEOUT_MS), else
     * this thread from inside; after maps.txt, whose scan the fallback's module list uses. */
    nwb__crash_capture_threads(&pkg, uc, tid, tname);

    nwb__crash_pkg_write_tail(&pkg);
    write_app(&pkg);
    if (nwb__crash_pkg_finish(&pkg) != 0) {
        say("cannot finish the package folder ", pkg.tmp_path);
        return;
    }
    /* A busy lock means an uploader is running; it rescans before it exits. */
    if (g->have_helper && g->lock_fd >= 0 && flock(g->lock_fd, LOCK_EX | LOCK_NB) == 0) {
        (void)nwb__crash_spawn_helper(g->lock_fd);
    }
}

static void arm_watchdog(void)
{
    struct sigaction dfl;
    sigset_t alrm;

    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    (void)sigaction(SIGALRM, &dfl, NULL);
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    (void)pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
    alarm(nwb__crash_g.watchdog_s);
}

static void restore_defaults(void)
{
    struct sigaction dfl;

    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int i = 0; i < NWB__CRASH_SIGNALS; i++) {
        (void)sigaction(fatal_signals[i], &dfl, NULL);
    }
}

static void on_fatal_signal(int sig, siginfo_t *si, void *ucv)
{
    const int saved_errno = errno;
    int expected = 0;

    if (!atomic_compare_exchange_strong(&handling, &expected, 1)) {
        /* Another thread is writing the package and will re-raise: wait to die with it. A
         * fault inside the handler itself never gets here: the fatal signals are blocked
         * while it runs, so the kernel ends the process with the default action. */
        for (;;) {
            pause();
        }
    }
    arm_watchdog();
    write_package(sig, si, (const ucontext_t *)ucv);
    restore_defaults();
    alarm(0);
    /* Signals sent by kill/raise/abort, and traps that resume after the instruction, are
     * raised again (pending until this handler returns); a hardware fault re-executes the
     * faulting instruction under the default action when the handler returns. */
    if (si->si_code <= 0 || sig == SIGABRT || sig == SIGTRAP || sig == SIGSYS) {
        (void)syscall(SYS_tgkill, (long)getpid(), (long)current_tid(), (long)sig);
    }
    errno = saved_errno;
}

int nwb__crash_handlers_set(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NWB__CRASH_SIGNALS; i++) {
        sigaddset(&sa.sa_mask, fatal_signals[i]);
    }
    for (int i = 0; i < NWB__CRASH_SIGNALS; i++) {
        if (sigaction(fatal_signals[i], &sa, &previous_actions[i]) != 0) {
            const int err = -errno;

            while (--i >= 0) {
                (void)sigaction(fatal_signals[i], &previous_actions[i], NULL);
            }
            return err;
        }
    }
    atomic_store(&handling, 0);
    handlers_set = 1;
    return 0;
}

void nwb__crash_handlers_restore(void)
{
    if (!handlers_set) {
        return;
    }
    for (int i = 0; i < NWB__CRASH_SIGNALS; i++) {
        (void)sigaction(fatal_signals[i], &previous_actions[i], NULL);
    }
    handlers_set = 0;
}
