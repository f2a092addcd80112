/* SPDX-License-Identifier: MIT */
/*
 * tel_summary.h - a run's telemetry summary for its nwb_runs row: the frame count, p50 and p99
 * of the "frames" object of the run's telemetry.json (docs/telemetry-report.md), read from
 * the file's first NWB__FWD_TEL_JSON_READ_MAX bytes (the report writes "frames" near its start:
 * after "schema", "run", "decode", "uploads" and "events"). Pure scanning plus one bounded
 * read; any thread.
 */
#ifndef NWB_FWD_TEL_SUMMARY_H
#define NWB_FWD_TEL_SUMMARY_H

#include <stddef.h>

#include "ch_rows.h"

/** Bytes of telemetry.json read for the summary; a "frames" object past them is not seen. */
#define NWB__FWD_TEL_JSON_READ_MAX (1024u * 1024u)

/**
 * Find the top-level "frames" object in @p len bytes of @p json (a report, possibly cut short
 * after its "frames" scalars) and its "count", "p50Ms" and "p99Ms" into @p out. Keys inside
 * strings or nested objects are never taken for it. Returns 0, or NWB_EPROTO with a static
 * one-line reason in @p *why ("no top-level \"frames\" object", "\"frames\" has no \"count\"")
 * and @p out zeroed.
 */
int nwb__tel_summary_parse(const char *json, size_t len, struct nwb__ch_tel_summary *out,
                           const char **why);

/**
 * The summary of the run folder @p run_dir_fd's telemetry.json. Returns 0; -ENOENT (all zeros)
 * when the run has no telemetry; NWB_EPROTO with @p *why as nwb__tel_summary_parse(); or the
 * negated errno of the read.
 */
int nwb__tel_summary_read(int run_dir_fd, struct nwb__ch_tel_summary *out, const char **why);

#endif /* NWB_FWD_TEL_SUMMARY_H */
