/* SPDX-License-Identifier: MIT */
/*
 * symbolize_test_world.h - what the symbolisation tests share: crash_prog's null dereference
 * captured once as threads.nwbc by the test tracer (capture_ptrace.h), its build id and the
 * source line that faults, a symbols folder in the .build-id layout to fill, and running a
 * command with its stderr kept.
 */
#ifndef NWB_SYMBOLIZE_TEST_WORLD_H
#define NWB_SYMBOLIZE_TEST_WORLD_H

#include <stddef.h>

struct sym_world {
    char dir[512];       /* everything below; removed by sym_world_teardown() */
    char capture[600];   /* dir/threads.nwbc */
    char symbols[600];   /* dir/symbols */
    char out[600];       /* dir/out, for the tool's outputs */
    char build_id[129];  /* crash_prog's, lowercase hex */
    unsigned crash_line; /* the line of crash_prog.c that faults */
};

/* Capture crash_prog (CRASH_PROG_MODE=null) under a fresh folder tagged @p tag. 0 or -1. */
int sym_world_setup(struct sym_world *w, const char *tag);
void sym_world_teardown(struct sym_world *w);

/* Empty the symbols folder and recreate an empty out folder. */
void sym_world_reset(struct sym_world *w);

/* The path of crash_prog's symbols with @p suffix ("" or ".debug"), its folders made. */
void sym_world_symbol_path(const struct sym_world *w, const char *suffix, char *out, size_t cap);

/* Run @p argv (NULL-terminated, argv[0] looked up on PATH); its stderr into @p err, its stdout
 * to /dev/null. The exit status, 128 + the signal when killed, or -1. */
int sym_run(const char *const argv[], char *err, size_t cap);

/* The GNU build id of the ELF file @p path as lowercase hex into @p out (129 bytes). 0 or -1. */
int sym_build_id_hex(const char *path, char *out);

/* A tar.zst package of manifest.txt (program crash_prog, signal SIGSEGV), crash.txt (no
 * backtrace, holding @p tag so each archive gets its own id) and the captured threads.nwbc;
 * malloc'd (free()), or NULL. */
void *sym_world_package(const struct sym_world *w, const char *tag, size_t *len);

/* Copy @p from to @p to with @p mode. 0 or -1. */
int sym_copy_file(const char *from, const char *to, unsigned mode);

#endif /* NWB_SYMBOLIZE_TEST_WORLD_H */
