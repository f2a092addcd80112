/* SPDX-License-Identifier: MIT */
/*
 * crash_test_run.h - runs crash_prog (the program that crashes on command)
 * for the capture and end-to-end tests, and reads its package back: the
 * exit status, the archive it left pending, and crash.txt's backtrace
 * symbolised with addr2line against the binary.
 */
#ifndef NWB_CRASH_TEST_RUN_H
#define NWB_CRASH_TEST_RUN_H

#include <stddef.h>

struct crash_run {
    int status; /* waitpid status */
    char stdout_text[4096];
    char run_id[64]; /* from its "run <id>" line, "" if it died before printing it */
};

/* When set, the next crash_run() runs in this folder with core dumps allowed (then resets). */
extern const char *crash_run_core_dir;

/*
 * Run crash_prog in @p mode with crash folder @p crash_dir, server @p server and
 * helper @p helper ("" disables uploads); @p extra_env is NULL or "NAME=value". Waits up to
 * 60 s for it to exit (then kills it). Returns 0 and fills @p r, or -1.
 */
int crash_run(const char *mode, const char *crash_dir, const char *server, const char *helper,
              const char *extra_env, struct crash_run *r);

/*
 * The single archive pending in @p crash_dir after waiting for its uploader: its path into
 * @p path. Returns 0, or -1 when there is not exactly one.
 */
int crash_pending_archive(const char *crash_dir, char *path, size_t cap);

/*
 * Symbolise the frames of @p crash_txt that lie in @p module with addr2line (return addresses
 * minus one past frame 0). Writes the function names, one per line, into @p out. Returns the
 * number of frames symbolised, or -1.
 */
int crash_symbolise(const char *crash_txt, const char *module, char *out, size_t cap);

/* A 127.0.0.1 port that refuses connections while @p *fd stays open. Returns the port or -1. */
int crash_closed_port(int *fd);

#endif /* NWB_CRASH_TEST_RUN_H */
