/* SPDX-License-Identifier: MIT */
/*
 * nwb/crash_capture.h - the crash capture file (threads.nwbc in a crash
 * package), version 1: every thread's registers and a bounded slice of its
 * stack, and the module list with GNU build ids, read from outside the
 * crashed process (or, as a fallback, from inside it). The server unwinds
 * and symbolises it; the game never does.
 *
 * docs/crash-capture-format.md has the byte tables and bounds. This header
 * is the reader's view: nwb_crash_capture_parse() checks a whole file and
 * fills views whose pointers borrow the caller's buffer.
 */
#ifndef NWB_CRASH_CAPTURE_H
#define NWB_CRASH_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NWB_CRASH_CAPTURE_MAGIC   0x4342574Eu /* "NWBC" as bytes */
#define NWB_CRASH_CAPTURE_VERSION 1u
#define NWB_CRASH_CAPTURE_FILE    "threads.nwbc"

/* Architectures (the register set a thread record carries, in DWARF register order). */
#define NWB_CRASH_ARCH_X86_64  1u /* DWARF 0..16: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip */
#define NWB_CRASH_ARCH_AARCH64 2u /* DWARF 0..31: x0..x30 sp, then pc: 33 values */

#define NWB_CRASH_REGS_X86_64  17u
#define NWB_CRASH_REGS_AARCH64 33u
#define NWB_CRASH_REGS_MAX     33u

/* Bounds a reader enforces (the capture writes within them). */
#define NWB_CRASH_CAPTURE_THREADS_MAX  1024u
#define NWB_CRASH_CAPTURE_MODULES_MAX  1024u
#define NWB_CRASH_CAPTURE_STACK_MAX    (256u * 1024u) /* per thread; the capture takes 64 KiB */
#define NWB_CRASH_CAPTURE_PATH_MAX     4096u
#define NWB_CRASH_CAPTURE_BUILD_ID_MAX 64u
#define NWB_CRASH_CAPTURE_NAME_MAX     15u /* the kernel's thread name */
#define NWB_CRASH_CAPTURE_NOTE_MAX     1024u
#define NWB_CRASH_CAPTURE_FILE_MAX     (64u * 1024u * 1024u)

/* How the capture was taken (the header's method field). */
#define NWB_CRASH_CAPTURE_PTRACE     1u /* a helper process attached with ptrace */
#define NWB_CRASH_CAPTURE_IN_PROCESS 2u /* the fallback: the crashing thread only, from inside */

/* Thread flags. */
#define NWB_CRASH_THREAD_CRASHED     0x01u /* the thread that took the signal */
#define NWB_CRASH_THREAD_SIGNAL_REGS 0x02u /* registers from the signal context, not ptrace */

typedef struct nwb_crash_module_view {
    uint64_t start;          /* lowest mapped address of the module */
    uint64_t end;            /* one past its highest mapped address */
    uint64_t file_offset;    /* file offset mapped at start (0 for the first mapping) */
    const uint8_t *build_id; /* GNU build id bytes, build_id_len of them (0 = none found) */
    size_t build_id_len;
    const char *path; /* not NUL-terminated, path_len bytes */
    size_t path_len;
} nwb_crash_module_view_t;

typedef struct nwb_crash_thread_view {
    uint32_t tid;
    uint32_t flags;                            /* NWB_CRASH_THREAD_* */
    char name[NWB_CRASH_CAPTURE_NAME_MAX + 1]; /* NUL-terminated, may be "" */
    uint64_t regs[NWB_CRASH_REGS_MAX];         /* nregs of them, DWARF order */
    unsigned nregs;
    uint64_t stack_start; /* address of stack[0] (the captured sp, or below it) */
    const uint8_t *stack; /* stack_len bytes, may be 0 */
    size_t stack_len;
} nwb_crash_thread_view_t;

typedef struct nwb_crash_capture_view {
    unsigned arch;   /* NWB_CRASH_ARCH_* */
    unsigned method; /* NWB_CRASH_CAPTURE_* */
    uint32_t pid;
    uint32_t crashed_tid;
    const char *note; /* why the method ran (e.g. "ptrace: EPERM (ptrace_scope 3)") */
    size_t note_len;
    nwb_crash_thread_view_t *threads; /* nthreads, crashing thread first */
    size_t nthreads;
    nwb_crash_module_view_t *modules; /* nmodules, sorted by start, not overlapping */
    size_t nmodules;
} nwb_crash_capture_view_t;

/**
 * Check and read the whole capture file in @p buf. On success fills @p out
 * (its arrays allocated with nwb_malloc, released by
 * nwb_crash_capture_view_free(); the pointers inside borrow @p buf) and
 * returns 0. On malformed input returns a negated errno (-EINVAL, -E2BIG,
 * -ENOMEM) and writes a one-line reason into @p why (at most @p why_size
 * bytes with the NUL); @p out is left empty.
 */
NWB_API int nwb_crash_capture_parse(const void *buf, size_t len, nwb_crash_capture_view_t *out,
                                    char *why, size_t why_size);

NWB_API void nwb_crash_capture_view_free(nwb_crash_capture_view_t *view);

#ifdef __cplusplus
}
#endif

#endif /* NWB_CRASH_CAPTURE_H */
