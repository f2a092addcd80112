/* SPDX-License-Identifier: MIT */
/*
 * crash_analysis.h - the server's analysis of stored crash packages (crash_analysis.c): the
 * grouping signature in crashes/analysis/<id>/signature.txt. Called on the crash worker
 * thread only (it is the one writer of analysis/ and of retention).
 */
#ifndef NWB_SERVER_CRASH_ANALYSIS_H
#define NWB_SERVER_CRASH_ANALYSIS_H

#include <stddef.h>

#include "crash_signature.h"

struct nwb__crash_store;

/*
 * The fallback signature of a crash from its manifest's @p signal and crash.txt @p text
 * (the in-process backtrace): into @p sig (@p cap bytes). Its length, or -EINVAL when the
 * backtrace is malformed.
 */
int nwb__crash_analysis_signature_from_text(const char *signal, const char *text, size_t len,
                                            const struct nwb_crash_skip *skip, char *sig,
                                            size_t cap);

/* Analyse published package @p id and store the result (atomic per file). 0 or negative. */
int nwb__crash_analyse(struct nwb__crash_store *st, const char *id,
                       const struct nwb_crash_skip *skip);

/* nwb__crash_analyse() every package that has no analysis yet (a store from before it). */
void nwb__crash_analyse_missing(struct nwb__crash_store *st, const struct nwb_crash_skip *skip);

#endif /* NWB_SERVER_CRASH_ANALYSIS_H */
