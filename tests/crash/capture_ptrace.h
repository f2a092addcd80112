/* SPDX-License-Identifier: MIT */
/*
 * capture_ptrace.h - a test stand-in for the ptrace capture step of nwb-crash: runs a program
 * under ptrace until one of its threads takes a fatal signal, stops every thread, and writes
 * what the real capture would (docs/crash-capture-format.md): each thread's registers in
 * DWARF order and up to 64 KiB of stack from sp, and the module list with GNU build ids, as
 * threads.nwbc through the format's writer. x86_64 only. The program is killed afterwards.
 */
#ifndef NWB_CAPTURE_PTRACE_H
#define NWB_CAPTURE_PTRACE_H

#include <stddef.h>

/* Stack bytes taken per thread, from sp up (the capture's bound). */
#define CAPTURE_PTRACE_STACK_BYTES (64u * 1024u)

/*
 * Run @p argv (argv[0] a path; the environment is the caller's, plus @p env_add, a
 * NULL-terminated list of "NAME=value" or NULL) under ptrace; at its first fatal signal
 * (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) write the capture to @p out_path. The program
 * gets SIGALRM after 60 s, so a program that never crashes ends the capture too. Returns 0,
 * or -1 with a reason in @p why.
 */
int capture_ptrace_run(char *const argv[], const char *const *env_add, const char *out_path,
                       char *why, size_t why_size);

#endif /* NWB_CAPTURE_PTRACE_H */
