/* SPDX-License-Identifier: MIT */
/*
 * crash_capture_step.c - the handler's part of the thread capture (threads.nwbc): start
 * "nwb-crash capture", allow it to ptrace this process (PR_SET_PTRACER), hand it the signal
 * context's registers through a socket pair, and wait for its status line (a pipe) at most
 * NWB__CRASH_CAPTURE_TIMEOUT_MS with poll(). When ptrace is unavailable, or the helper fails
 * or is late, write the in-process capture instead, with the reason in its note.
 * Async-signal-safe: socketpair, send, pipe2, prctl, read, poll, clock_gettime, kill, waitpid,
 * unlinkat.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "nwb/crash_capture.h"

#include "../capture_int.h"

#define PART_NAME ".threads.nwbc.part" /* what the helper writes before its rename */

unsigned nwb__crash_context_regs(const void *ucv, uint64_t *regs, unsigned *arch)
{
    const ucontext_t *uc = ucv;
#if defined(__x86_64__)
    /* DWARF order: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip. */
    static const int order[NWB_CRASH_REGS_X86_64] = {
        REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP, REG_R8,
        REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP,
    };

    for (unsigned i = 0; i < NWB_CRASH_REGS_X86_64; i++) {
        regs[i] = (uint64_t)uc->uc_mcontext.gregs[order[i]];
    }
    *arch = NWB_CRASH_ARCH_X86_64;
    return NWB_CRASH_REGS_X86_64;
#elif defined(__aarch64__)
    for (unsigned i = 0; i < 31; i++) {
        regs[i] = uc->uc_mcontext.regs[i];
    }
    regs[31] = uc->uc_mcontext.sp;
    regs[32] = uc->uc_mcontext.pc;
    *arch = NWB_CRASH_ARCH_AARCH64;
    return NWB_CRASH_REGS_AARCH64;
#else
    (void)uc;
    (void)regs;
    *arch = 0;
    return 0;
#endif
}

/* A bounded string builder for the note. */
struct line {
    char buf[NWB__CRASH_CAPTURE_REASON_MAX + 64];
    size_t len;
};

static void line_str(struct line *l, const char *s)
{
    while (*s != '\0' && l->len + 1 < sizeof(l->buf)) {
        l->buf[l->len++] = *s++;
    }
    l->buf[l->len] = '\0';
}

static void line_mem(struct line *l, const char *s, size_t n)
{
    for (size_t i = 0; i < n && l->len + 1 < sizeof(l->buf); i++) {
        l->buf[l->len++] = s[i];
    }
    l->buf[l->len] = '\0';
}

static void line_u64(struct line *l, uint64_t v)
{
    char tmp[21];
    int n = 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0 && l->len + 1 < sizeof(l->buf)) {
        l->buf[l->len++] = tmp[--n];
    }
    l->buf[l->len] = '\0';
}

static void line_errno(struct line *l, int err)
{
    switch (err) {
    case EPERM:
        line_str(l, "EPERM");
        break;
    case EACCES:
        line_str(l, "EACCES");
        break;
    case ESRCH:
        line_str(l, "ESRCH");
        break;
    case ENOSYS:
        line_str(l, "ENOSYS");
        break;
    case EMFILE:
        line_str(l, "EMFILE");
        break;
    case ENOMEM:
        line_str(l, "ENOMEM");
        break;
    default:
        line_str(l, "errno ");
        line_u64(l, (uint64_t)err);
        break;
    }
}

static uint64_t monotonic_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void reap(int child, int *status)
{
    while (waitpid(child, status, 0) < 0 && errno == EINTR) {
    }
}

/*
 * Read the helper's status line until it closes the pipe or the deadline passes.
 * Returns 1 when the pipe closed, 0 on the deadline.
 */
static int read_status(int fd, struct line *st, uint64_t deadline_ms)
{
    for (;;) {
        const uint64_t now = monotonic_ms();
        struct pollfd pfd = {.fd = fd, .events = POLLIN, .revents = 0};
        char chunk[128];
        ssize_t n;

        if (now >= deadline_ms) {
            return 0;
        }
        if (poll(&pfd, 1, (int)(deadline_ms - now)) <= 0) {
            continue; /* EINTR (the helper's ptrace stop ends our poll) or the deadline */
        }
        n = read(fd, chunk, sizeof(chunk));
        if (n == 0) {
            return 1;
        }
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            return 1;
        }
        line_mem(st, chunk, (size_t)n);
    }
}

/* The ptrace path. Returns 1 when the helper wrote threads.nwbc, else 0 with @p why set. */
static int capture_with_helper(struct nwb__crash_pkg *pkg, const uint64_t *regs, unsigned nregs,
                               unsigned arch, int tid, struct line *why)
{
    static uint8_t msg[4 + 8 * NWB_CRASH_REGS_MAX];
    static struct line st;
    int regs_sock[2], status_pipe[2]; /* [0] the helper's end of the registers, [1] ours */
    int child, status = 0, closed;
    size_t len = 0;

    if (!nwb__crash_g.have_helper) {
        line_str(why, "ptrace: no capture helper (helper_exe is empty)");
        return 0;
    }
    /* A socket, not a pipe, for what we send: send(MSG_NOSIGNAL) to a helper that already
     * died is EPIPE, where a pipe would kill this process with SIGPIPE. */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, regs_sock) != 0) {
        line_str(why, "ptrace: socketpair: ");
        line_errno(why, errno);
        return 0;
    }
    if (pipe2(status_pipe, O_CLOEXEC) != 0) {
        line_str(why, "ptrace: pipe: ");
        line_errno(why, errno);
        close(regs_sock[0]);
        close(regs_sock[1]);
        return 0;
    }
    child =
        nwb__crash_spawn_capture(pkg->tmp_path, (int)getpid(), tid, regs_sock[0], status_pipe[1]);
    close(regs_sock[0]);
    close(status_pipe[1]);
    if (child < 0) {
        line_str(why, "ptrace: cannot start nwb-crash capture");
        close(regs_sock[1]);
        close(status_pipe[0]);
        return 0;
    }
    /* Yama ptrace_scope 1 lets only an ancestor trace us, unless we name the tracer. EINVAL:
     * no Yama in this kernel, nothing to allow. */
    if (prctl(PR_SET_PTRACER, (unsigned long)child, 0, 0, 0) != 0 && errno != EINVAL) {
        line_str(why, "prctl(PR_SET_PTRACER): ");
        line_errno(why, errno);
        close(regs_sock[1]);
        close(status_pipe[0]);
        kill(child, SIGKILL);
        reap(child, &status);
        return 0;
    }
    /* arch u16, nregs u16, then the registers (u64, little-endian): 268 bytes at most, far
     * below the socket's buffer, so the send does not block. */
    msg[len++] = (uint8_t)arch;
    msg[len++] = (uint8_t)(arch >> 8);
    msg[len++] = (uint8_t)nregs;
    msg[len++] = (uint8_t)(nregs >> 8);
    for (unsigned i = 0; i < nregs; i++) {
        for (unsigned b = 0; b < 8; b++) {
            msg[len++] = (uint8_t)(regs[i] >> (8u * b));
        }
    }
    for (size_t sent = 0; sent < len;) {
        const ssize_t n = send(regs_sock[1], msg + sent, len - sent, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break; /* the helper is gone: its status (or its absence) says so below */
        }
        sent += (size_t)n;
    }
    close(regs_sock[1]);

    st.len = 0;
    st.buf[0] = '\0';
    closed = read_status(status_pipe[0], &st, monotonic_ms() + NWB__CRASH_CAPTURE_TIMEOUT_MS);
    close(status_pipe[0]);
    if (!closed) {
        kill(child, SIGKILL); /* the kernel detaches whatever it still traces */
    }
    reap(child, &status);
    while (st.len > 0 && (st.buf[st.len - 1] == '\n' || st.buf[st.len - 1] == '\r')) {
        st.buf[--st.len] = '\0';
    }
    if (!closed) {
        line_str(why, "ptrace: the capture helper took longer than ");
        line_u64(why, NWB__CRASH_CAPTURE_TIMEOUT_MS);
        line_str(why, " ms");
        return 0;
    }
    if (st.len >= 2 && st.buf[0] == 'o' && st.buf[1] == 'k') {
        return 1;
    }
    if (st.len > 5 && st.buf[0] == 'f' && st.buf[1] == 'a' && st.buf[2] == 'i' &&
        st.buf[3] == 'l' && st.buf[4] == ' ') {
        line_mem(why, st.buf + 5, st.len - 5);
        return 0;
    }
    line_str(why, "ptrace: the capture helper ended without a status (");
    if (WIFEXITED(status)) {
        line_str(why, "exit ");
        line_u64(why, (uint64_t)WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        line_str(why, "signal ");
        line_u64(why, (uint64_t)WTERMSIG(status));
    }
    line_str(why, ")");
    return 0;
}

void nwb__crash_capture_threads(struct nwb__crash_pkg *pkg, const void *ucontext, int tid,
                                const char *tname)
{
    static uint64_t regs[NWB_CRASH_REGS_MAX];
    static struct line why;
    unsigned arch = 0;
    const unsigned nregs = nwb__crash_context_regs(ucontext, regs, &arch);

    if (nregs == 0 || pkg->dir_fd < 0) {
        return; /* an architecture the format does not know: crash.txt only */
    }
    why.len = 0;
    why.buf[0] = '\0';
    if (capture_with_helper(pkg, regs, nregs, arch, tid, &why)) {
        return;
    }
    (void)unlinkat(pkg->dir_fd, PART_NAME, 0);
    line_str(&why, "; in-process fallback");
    (void)nwb__crash_inproc_capture(pkg->dir_fd, regs, nregs, arch, tid, tname, why.buf, why.len);
}
