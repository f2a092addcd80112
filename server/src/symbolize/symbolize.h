/* SPDX-License-Identifier: MIT */
/*
 * symbolize.h - nwb-symbolize's parts (docs/crash.md, "Symbolisation"): finding a module's
 * files by GNU build id under a symbols folder (symbolize_lookup.c), unwinding and symbolising
 * every captured thread with elfutils libdwfl (symbolize_unwind.c), and writing the results as
 * stack.txt, stack.json and frames.tsv (symbolize_output.c). The tool runs in a bounded child
 * process of nwb-logserver, one per crash: everything here reads untrusted bytes.
 */
#ifndef NWB_SYMBOLIZE_H
#define NWB_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nwb/crash_capture.h"

/* Bounds (docs/crash.md, "Symbolisation"). */
#define NWB_SYM_FRAMES_MAX       256u  /* frames per thread, inlined ones included */
#define NWB_SYM_TOTAL_FRAMES_MAX 8192u /* frames of all threads; threads beyond get none */
#define NWB_SYM_FUNCTION_MAX     512u  /* bytes of a function name written */
#define NWB_SYM_FILE_MAX         1024u /* bytes of a source path written */
#define NWB_SYM_MODULE_MAX       255u  /* bytes of a module's file name written */
#define NWB_SYM_BUILD_ID_HEX     (2u * NWB_CRASH_CAPTURE_BUILD_ID_MAX)
#define NWB_SYM_PATH_MAX         4096u /* a symbols folder path with its .build-id part */
#define NWB_SYM_FRAMES_FILE      "frames.tsv"
#define NWB_SYM_FRAMES_MAGIC     "nwb-frames 1"

/* One frame, innermost first. Strings are borrowed (from the libdwfl session or the capture)
 * and may be NULL when unknown. */
struct nwb_sym_frame {
    uint64_t pc;          /* as unwound (return address for callers) */
    uint64_t offset;      /* pc's offset in its module's file mapping (pc - load bias) */
    const char *module;   /* the module's file name (last path component) or NULL */
    size_t module_len;    /* the path is not NUL-terminated in the capture */
    const char *build_id; /* lowercase hex, NUL-terminated; "" when the module has none */
    const char *function; /* NULL: no symbol */
    const char *file;     /* NULL: no line information */
    unsigned line;        /* 0 when file is NULL */
    int inlined;          /* 1: an inlined call inside the next frame's function */
    int symbolized;       /* 1: the module's symbols were found */
    const char *why;      /* when !symbolized: why ("no symbols: build id ...") */
};

/* One thread as written. */
struct nwb_sym_thread {
    uint32_t tid;
    const char *name; /* NUL-terminated, may be "" */
    int crashed;
    const struct nwb_sym_frame *frames;
    size_t nframes;
    int truncated;        /* stopped at NWB_SYM_FRAMES_MAX or the total bound */
    const char *stop_why; /* why unwinding stopped early, or NULL */
};

/* A module whose symbols were not found, or were refused. */
struct nwb_sym_missing {
    char build_id[NWB_SYM_BUILD_ID_HEX + 1];
    char module[NWB_SYM_MODULE_MAX + 1];
    char why[512];
};

/* ---- symbolize_lookup.c ---- */

/* @p len bytes of @p id as lowercase hex into @p out (2 * len + 1 bytes). */
void nwb_sym_hex(const uint8_t *id, size_t len, char *out);

/*
 * The files of build id @p id (@p len bytes, at least 2) under @p symbols_dir in the GDB /
 * debuginfod layout: .build-id/<first byte hex>/<rest hex> (the executable) and the same with
 * ".debug" (its debug file, or the whole binary as uploaded). Each one that exists, is a
 * regular ELF file whose GNU build id equals @p id is opened: @p *exe_fd / @p *debug_fd (-1
 * when not). Returns 0 when at least one was found, else -ENOENT with a reason in @p why
 * (missing, not ELF, build id mismatch).
 */
int nwb_sym_lookup(const char *symbols_dir, const uint8_t *id, size_t len, int *exe_fd,
                   int *debug_fd, char *why, size_t why_size);

/*
 * 0 when @p fd (borrowed) is a regular ELF file whose GNU build id note equals @p id (@p len
 * bytes); else -1 with "<label>: <reason>" in @p why (not a regular file, not an ELF file, no
 * GNU build id note, build id mismatch). Every symbol file passes this before it is used.
 */
int nwb_sym_check_fd(int fd, const char *label, const uint8_t *id, size_t len, char *why,
                     size_t why_size);

/* ---- symbolize_debuginfod.c ---- */

/* Bounds of the debuginfod lookups (docs/crash.md, "Symbolisation"). */
#define NWB_SYM_DEBUGINFOD_URLS_MAX     4096u        /* bytes of --debuginfod-urls */
#define NWB_SYM_DEBUGINFOD_MODULE_MS    10000u       /* one module's lookups, at most */
#define NWB_SYM_DEBUGINFOD_TOTAL_MS     20000u       /* all modules' lookups, by default */
#define NWB_SYM_DEBUGINFOD_TOTAL_MS_MAX 3600000u     /* --debuginfod-timeout-ms, at most */
#define NWB_SYM_DEBUGINFOD_MAX_BYTES    (512u << 20) /* one downloaded file */

struct nwb_sym_debuginfod; /* a libdebuginfod client with its deadlines */

/*
 * A client for the space-separated server URLs @p urls (borrowed; copied into the process's
 * DEBUGINFOD_URLS, which nwb-symbolize owns) caching under @p cache_dir, all lookups together
 * bounded by @p total_ms. Every other DEBUGINFOD_* variable of the environment is cleared, so
 * only what is passed here applies. 0 with the client in @p *out, or -1 with a reason.
 */
int nwb_sym_debuginfod_create(const char *urls, const char *cache_dir, unsigned total_ms,
                              struct nwb_sym_debuginfod **out, char *why, size_t why_size);

/*
 * Ask the servers for build id @p id's debug file and executable, at most
 * NWB_SYM_DEBUGINFOD_MODULE_MS and what is left of the total. Each file received must pass
 * nwb_sym_check_fd(); the ones that do are returned open in @p *exe_fd / @p *debug_fd (-1
 * when not). 0 when at least one was, else -1 with "debuginfod: <reason>" in @p why (not
 * found (404), timed out, connection refused, refused (build id mismatch), ...).
 */
int nwb_sym_debuginfod_find(struct nwb_sym_debuginfod *d, const uint8_t *id, size_t len,
                            int *exe_fd, int *debug_fd, char *why, size_t why_size);

/* End the client; NULL is a no-op. */
void nwb_sym_debuginfod_destroy(struct nwb_sym_debuginfod *d);

/* ---- symbolize_unwind.c ---- */

/* Called once per thread, crashing thread first; the pointers are valid for the call. */
typedef int (*nwb_sym_thread_fn)(void *ctx, const struct nwb_sym_thread *t);

/*
 * Unwind and symbolise every thread of @p cap with modules found under @p symbols_dir, or, for
 * a module not found there, from @p debuginfod (borrowed; NULL: none); call @p fn per thread. The
 * modules that had no usable symbols go to @p missing (at most
 * @p missing_cap; their count in @p *nmissing). Returns 0, or -1 with a reason in @p why when
 * libdwfl could not be set up at all (a thread that cannot be unwound still gets its first
 * frame and a stop reason).
 */
int nwb_sym_unwind(const nwb_crash_capture_view_t *cap, const char *symbols_dir,
                   struct nwb_sym_debuginfod *debuginfod, nwb_sym_thread_fn fn, void *ctx,
                   struct nwb_sym_missing *missing, size_t missing_cap, size_t *nmissing, char *why,
                   size_t why_size);

/* ---- symbolize_output.c ---- */

/* The three outputs being written; open with nwb_sym_out_begin, one call per thread, end. */
struct nwb_sym_out {
    FILE *text;   /* stack.txt */
    FILE *tsv;    /* frames.tsv */
    FILE *json;   /* stack.json */
    void *json_w; /* the JSON writer's state (symbolize_output.c) */
};

/* Start the outputs (each FILE may be NULL to skip it; borrowed). 0 or -ENOMEM. */
int nwb_sym_out_begin(struct nwb_sym_out *o, const nwb_crash_capture_view_t *cap, FILE *text,
                      FILE *tsv, FILE *json);
/* One thread's block, line and object. */
void nwb_sym_out_thread(struct nwb_sym_out *o, const struct nwb_sym_thread *t);
/* The missing build ids, and the end of each document. 0, or -EIO when a write failed. */
int nwb_sym_out_end(struct nwb_sym_out *o, const struct nwb_sym_missing *missing, size_t n);

/* One frame as its stack.txt line (without the newline) into @p out. Returns the length. */
size_t nwb_sym_format_frame(const struct nwb_sym_frame *f, unsigned index, char *out, size_t cap);

#endif /* NWB_SYMBOLIZE_H */
