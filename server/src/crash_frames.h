/* SPDX-License-Identifier: MIT */
/*
 * crash_frames.h - frames.tsv, the symbolised stack nwb-symbolize writes into
 * crashes/analysis/<id>/ (docs/crash.md, "Symbolisation"): one record per line, fields
 * separated by tabs. The server reads it back for the grouping signature and the crash's JSON.
 * It comes out of a process that parsed untrusted ELF files, so it is parsed as untrusted
 * input too: strictly, within the bounds below (fuzzed by fuzz.crash_frames).
 *
 *   nwb-frames 1
 *   thread <tid> <crashed 0|1> <name>
 *   frame <pc hex> <module> <build id hex> <offset hex> <function> <file> <line> <inlined 0|1>
 *         <symbolized 0|1>
 *   missing <build id hex> <module>
 */
#ifndef NWB_SERVER_CRASH_FRAMES_H
#define NWB_SERVER_CRASH_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#define NWB_CRASH_FRAMES_FILE         "frames.tsv"
#define NWB_CRASH_FRAMES_MAGIC        "nwb-frames 1"
#define NWB_CRASH_FRAMES_TEXT_MAX     (16u << 20) /* bytes of the file */
#define NWB_CRASH_FRAMES_THREADS_MAX  1024u       /* the capture's thread bound */
#define NWB_CRASH_FRAMES_PER_THREAD   256u        /* frames of one thread */
#define NWB_CRASH_FRAMES_TOTAL_MAX    8192u       /* frames of all threads */
#define NWB_CRASH_FRAMES_MISSING_MAX  1024u       /* the capture's module bound */
#define NWB_CRASH_FRAMES_FUNCTION_MAX 512u
#define NWB_CRASH_FRAMES_FILE_MAX     1024u
#define NWB_CRASH_FRAMES_MODULE_MAX   255u
#define NWB_CRASH_FRAMES_BUILD_ID_MAX 128u /* hex digits */
#define NWB_CRASH_FRAMES_NAME_MAX     15u

/* A string field: borrowed from the text, not NUL-terminated; len 0 when empty. */
struct nwb_crash_str {
    const char *s;
    size_t len;
};

struct nwb_crash_frame_rec {
    uint64_t pc;
    struct nwb_crash_str module;
    struct nwb_crash_str build_id;
    uint64_t offset;
    struct nwb_crash_str function;
    struct nwb_crash_str file;
    unsigned line; /* 0: unknown */
    int inlined;
    int symbolized;
};

/* What a parse calls, in file order; any callback may be NULL. A nonzero return stops the
 * parse, which then returns that value. */
struct nwb_crash_frames_cb {
    int (*thread)(void *ctx, uint32_t tid, int crashed, struct nwb_crash_str name);
    int (*frame)(void *ctx, const struct nwb_crash_frame_rec *f);
    int (*missing)(void *ctx, struct nwb_crash_str build_id, struct nwb_crash_str module);
    void *ctx;
};

/*
 * Parse @p len bytes of frames.tsv, calling @p cb. Returns 0; -EINVAL with a one-line reason
 * naming the line in @p why (bad magic, unknown record, wrong field count, a bad number or
 * flag, a field past its bound or holding a control byte, a frame before any thread, only
 * the first thread crashed, a count past its bound), -E2BIG past NWB_CRASH_FRAMES_TEXT_MAX,
 * or a callback's nonzero value. Callbacks may have been called before an error.
 */
int nwb_crash_frames_parse(const char *text, size_t len, const struct nwb_crash_frames_cb *cb,
                           char *why, size_t why_size);

#endif /* NWB_SERVER_CRASH_FRAMES_H */
