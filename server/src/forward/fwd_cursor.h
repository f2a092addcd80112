/* SPDX-License-Identifier: MIT */
/*
 * fwd_cursor.h - a run's forwarding cursor, runs/<dir>/.nwb-forward: how many bytes of its
 * log.txt ClickHouse has acknowledged. Text, version 1:
 *
 *   nwb-forward 1
 *   offset=123456
 *
 * Written to .nwb-forward.tmp and renamed over, only after a 200, so a kill -9 of the server
 * leaves the old or the new cursor, never half of one; no fsync: after a power cut the
 * cursor may be behind and the lines after it are sent again, which the ReplacingMergeTree
 * tables collapse.
 */
#ifndef NWB_FWD_CURSOR_H
#define NWB_FWD_CURSOR_H

#include <stddef.h>
#include <stdint.h>

/** The cursor's file name in a run directory. */
#define NWB__FWD_CURSOR_NAME ".nwb-forward"

/** The frames cursor beside it: how many telemetry.index records ClickHouse has the frames of
 * (the same text; "offset" counts records there). */
#define NWB__FWD_FRAMES_CURSOR_NAME ".nwb-forward-frames"

/** Bytes of a cursor file read; larger is damaged. */
#define NWB__FWD_CURSOR_MAX 64u

/**
 * Parse a cursor file's @p len bytes: exactly "nwb-forward 1\noffset=DIGITS\n" (1..20 digits,
 * at most 2^64 - 1). 0 with @p *offset, or NWB_EPROTO.
 */
int nwb__fwd_cursor_parse(const char *text, size_t len, uint64_t *offset);

/**
 * Read @p run_dir's cursor into @p *offset: 0 with 0 when there is none yet; NWB_EPROTO (with
 * @p *offset 0) when it is damaged; another negative code when it cannot be read.
 */
int nwb__fwd_cursor_read(const char *run_dir, uint64_t *offset);

/** Replace @p run_dir's cursor with @p offset (temporary file, rename). 0, or a negated errno. */
int nwb__fwd_cursor_write(const char *run_dir, uint64_t offset);

/** nwb__fwd_cursor_read() and _write() of the cursor file @p name (a name, no '/': at most
 * 255 bytes) in @p run_dir. */
int nwb__fwd_cursor_read_named(const char *run_dir, const char *name, uint64_t *offset);
int nwb__fwd_cursor_write_named(const char *run_dir, const char *name, uint64_t offset);

#endif /* NWB_FWD_CURSOR_H */
