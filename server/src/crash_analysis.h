/* SPDX-License-Identifier: MIT */
/*
 * crash_analysis.h - the server's analysis of stored crash packages, kept in
 * crashes/analysis/<id>/: the symbolised stack nwb-symbolize writes from the package's
 * threads.nwbc (crash_symbolize.c: stack.txt, stack.json, frames.tsv, or symbolize_failed.txt)
 * and the grouping signature, signature.txt (crash_analysis.c). Called on the crash worker
 * thread only (it is the one writer of analysis/ and of retention), except the re-run hook
 * nwb__crash_resymbolize_build_id(), which any thread may call.
 */
#ifndef NWB_SERVER_CRASH_ANALYSIS_H
#define NWB_SERVER_CRASH_ANALYSIS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "crash_signature.h"

struct nwb__crash_store;
struct nwb_server;

#define NWB_CRASH_SYMBOLIZE_PATH_MAX    4096u /* --symbolizer, --symbols-dir */
#define NWB_CRASH_SYMBOLIZE_FAILED_FILE "symbolize_failed.txt"

/* How the server runs nwb-symbolize (docs/operations.md, "Symbolisation"). */
struct nwb_crash_symbolize_cfg {
    char symbolizer[NWB_CRASH_SYMBOLIZE_PATH_MAX];       /* the executable; "" = never symbolise */
    char symbols_dir[NWB_CRASH_SYMBOLIZE_PATH_MAX];      /* holds .build-id/ */
    unsigned timeout_ms;                                 /* wall clock; killed beyond */
    uint64_t max_memory_bytes;                           /* RLIMIT_AS; 0 = none */
    unsigned max_cpu_s;                                  /* RLIMIT_CPU; 0 = none */
    char debuginfod_urls[NWB_CRASH_SYMBOLIZE_PATH_MAX];  /* "" = no debuginfod lookups */
    char debuginfod_cache[NWB_CRASH_SYMBOLIZE_PATH_MAX]; /* their cache folder */
    char debuginfod_timeout_ms[12];                      /* all lookups, decimal, for argv */
};

/* 1 when package @p id holds a threads.nwbc. */
int nwb__crash_has_capture(const struct nwb__crash_store *st, const char *id);

/*
 * Run nwb-symbolize for package @p id in a bounded child process and publish its stack.txt,
 * stack.json and frames.tsv in analysis/<id>/ (frames.tsv last), removing an older
 * symbolize_failed.txt. Returns 0; -ENOENT when there is nothing to do (no capture, or no
 * symboliser configured); NWB_ECLOSED when @p cancel was set meanwhile (nothing recorded);
 * any other negative code when it failed: what was stored is unchanged and the reason is in
 * analysis/<id>/symbolize_failed.txt.
 */
int nwb__crash_symbolize(struct nwb__crash_store *st, const char *id,
                         const struct nwb_crash_symbolize_cfg *cfg, const atomic_int *cancel);

/*
 * The symbols of build id @p build_id (lowercase hex, 2..128 digits) arrived (POST /v1/symbols
 * stored a new file): queue a re-run of the symbolisation of every stored crash whose
 * frames.tsv lists it as missing. Any thread, the loop's included: it only queues (the crash
 * worker does the work) and never blocks. Never fails: a malformed id, symbolisation off, a
 * stopping server or a full re-run queue (NWB__CRASH_RESYMBOLIZE_QUEUE) only means nothing is
 * re-run now (POST /v1/crashes/<id>/resymbolize still can). The same contract as the symbol
 * store's symbols_hook.h, whose do-nothing default this definition replaces.
 */
void nwb__crash_resymbolize_build_id(struct nwb_server *server, const char *build_id);

/*
 * The fallback signature of a crash from its manifest's @p signal and crash.txt @p text
 * (the in-process backtrace): into @p sig (@p cap bytes). Its length, or -EINVAL when the
 * backtrace is malformed.
 */
int nwb__crash_analysis_signature_from_text(const char *signal, const char *text, size_t len,
                                            const struct nwb_crash_skip *skip, char *sig,
                                            size_t cap);

/*
 * The signature from frames.tsv @p text (the crashing thread's symbolised frames; a thread
 * not marked crashed counts when it is the first), like the text fallback. Its length, or
 * -EINVAL when the file is malformed or names no thread.
 */
int nwb__crash_analysis_signature_from_frames(const char *signal, const char *text, size_t len,
                                              const struct nwb_crash_skip *skip, char *sig,
                                              size_t cap);

/*
 * Analyse published package @p id and store the result (atomic per file): symbolise it when
 * it has a capture and @p sym is not NULL, then its signature, from frames.tsv when there is
 * one, else from crash.txt. 0 or negative (a failed symbolisation is not an error here).
 */
int nwb__crash_analyse(struct nwb__crash_store *st, const char *id,
                       const struct nwb_crash_skip *skip, const struct nwb_crash_symbolize_cfg *sym,
                       const atomic_int *cancel);

/* nwb__crash_analyse() every package that has no signature yet (a store from before it), or
 * that has a capture but neither frames.tsv nor symbolize_failed.txt (a stop came between). */
void nwb__crash_analyse_missing(struct nwb__crash_store *st, const struct nwb_crash_skip *skip,
                                const struct nwb_crash_symbolize_cfg *sym,
                                const atomic_int *cancel);

/* 1 when analysis/<id>/ has a frames.tsv, 0 when not. */
int nwb__crash_has_frames(const struct nwb__crash_store *st, const char *id);

/* 1 when analysis/<id>/frames.tsv lists @p build_id as missing. */
int nwb__crash_frames_miss(const struct nwb__crash_store *st, const char *id, const char *build_id);

#endif /* NWB_SERVER_CRASH_ANALYSIS_H */
