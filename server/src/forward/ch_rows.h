/* SPDX-License-Identifier: MIT */
/*
 * ch_rows.h - rows in ClickHouse's TabSeparated format: nwb_logs from parsed log.txt lines
 * (log_line_parse.h), nwb_runs, nwb_crashes and nwb_frames. Every field is escaped as TabSeparated
 * reads it back (backslash, tab, newline, carriage return, NUL, backspace, form feed, quote), so
 * any byte, invalid UTF-8 included, arrives as it was. Pure: appends to a capped buffer, any
 * thread.
 */
#ifndef NWB_CH_ROWS_H
#define NWB_CH_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/buf.h"

#include "log_line_parse.h"

/** Who a run's rows belong to: borrowed strings, the same for every line of the run. */
struct nwb__ch_run_ident {
    const char *program;
    const char *run;
    const char *host;
    const char *run_dir;
};

/** Append @p len bytes of @p s TabSeparated-escaped. Returns 0 or NWB_ETOOBIG (unchanged). */
int nwb__ch_tsv_str(nwb_buf_t *b, const char *s, size_t len);

/**
 * Append one nwb_logs row (NWB__CH_LOGS_COLUMNS, ending in '\n') for line @p l found at byte
 * @p offset of the run's log.txt. Returns 0, or NWB_ETOOBIG with @p b unchanged.
 */
int nwb__ch_log_row(nwb_buf_t *b, const struct nwb__ch_run_ident *run, uint64_t offset,
                    const struct nwb__fwd_line *l);

struct nwb__run_info;  /* read_int.h */
struct nwb__crash_row; /* crash_int.h */

/** A run's telemetry summary as its telemetry.json states it (all 0: no telemetry). */
struct nwb__ch_tel_summary {
    uint64_t frames;
    double p50_ms;
    double p99_ms;
};

/**
 * Append one nwb_runs row (NWB__CH_RUNS_COLUMNS, ending in '\n') for run @p info as the
 * server's files describe it, with telemetry summary @p tel, sent at @p updated_ns (the
 * version that keeps the newest). Returns 0, or NWB_ETOOBIG with @p b unchanged.
 */
int nwb__ch_run_row(nwb_buf_t *b, const struct nwb__ch_run_ident *run,
                    const struct nwb__run_info *info, const struct nwb__ch_tel_summary *tel,
                    uint64_t updated_ns);

/**
 * Append one nwb_crashes row (NWB__CH_CRASHES_COLUMNS, ending in '\n') for crash @p c held by
 * the server on @p host, sent at @p updated_ns. Returns 0, or NWB_ETOOBIG with @p b unchanged.
 */
int nwb__ch_crash_row(nwb_buf_t *b, const char *host, const struct nwb__crash_row *c,
                      uint64_t updated_ns);

/**
 * Append one nwb_frames row (NWB__CH_FRAMES_COLUMNS, ending in '\n'): frame @p frame of run
 * @p run (started at @p started_s, Unix seconds) took @p duration_ns. Returns 0, or NWB_ETOOBIG
 * with @p b unchanged.
 */
int nwb__ch_frame_row(nwb_buf_t *b, const struct nwb__ch_run_ident *run, uint64_t started_s,
                      uint64_t frame, uint64_t duration_ns);

#endif /* NWB_CH_ROWS_H */
