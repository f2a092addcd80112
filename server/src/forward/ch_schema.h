/* SPDX-License-Identifier: MIT */
/*
 * ch_schema.h - the ClickHouse schema runs are forwarded into (issue 18): the DDL that creates
 * the database and the nwb_logs, nwb_runs, nwb_crashes, nwb_frames and nwb_schema tables when
 * they are missing, the schema version, and the column lists the forwarder inserts with. Only
 * SQL that ClickHouse 18.16 (Debian 12) and current releases both accept (docs/operations.md,
 * "Forwarding to ClickHouse").
 */
#ifndef NWB_CH_SCHEMA_H
#define NWB_CH_SCHEMA_H

#include <stddef.h>

#include "nwb/buf.h"

/** The schema this server writes; a database whose nwb_schema holds a higher one is refused. */
#define NWB__CH_SCHEMA_VERSION 1u

/** Bytes of a database name: [A-Za-z0-9_], not starting with a digit, 1..64. */
#define NWB__CH_DB_NAME_MAX 64u

/** The columns of one nwb_logs row, in the order the forwarder sends them (TabSeparated). */
#define NWB__CH_LOGS_COLUMNS                                                                       \
    "program, run, host, run_dir, offset, time, time_ns, level, thread_id, thread_name, file, "    \
    "line, message"

/** The columns of one nwb_runs row, in the order the forwarder sends them. */
#define NWB__CH_RUNS_COLUMNS                                                                       \
    "program, run, host, run_dir, started, last_activity, records, drops, log_bytes, frames, "     \
    "frame_p50_ms, frame_p99_ms, crashes, updated_ns"

/** The columns of one nwb_crashes row, in the order the forwarder sends them. */
#define NWB__CH_CRASHES_COLUMNS                                                                    \
    "id, received, program, run, host, signal, signature, crash_group, status, archive_bytes, "    \
    "package_bytes, updated_ns"

/** The columns of one nwb_frames row, in the order the forwarder sends them. */
#define NWB__CH_FRAMES_COLUMNS "program, run, host, started, frame, duration_ms"

/**
 * 0 when @p db is a database name the schema can use, else NWB_ECONFIG with a one-line reason
 * in @p err (e.g. "database name 'a-b' has a byte other than A-Z, a-z, 0-9 and _").
 */
int nwb__ch_db_name_check(const char *db, char *err, size_t errlen);

/** The DDL statements, run in order: CREATE DATABASE, then each table. */
size_t nwb__ch_schema_statement_count(void);

/**
 * Append statement @p i (< nwb__ch_schema_statement_count()) for database @p db (checked with
 * nwb__ch_db_name_check()) to @p out. Each is idempotent (IF NOT EXISTS). Returns 0, or the
 * buffer's error (NWB_ETOOBIG).
 */
int nwb__ch_schema_statement(size_t i, const char *db, nwb_buf_t *out);

/** Append the query that records this server's schema version in @p db.nwb_schema. */
int nwb__ch_schema_version_insert(const char *db, nwb_buf_t *out);

/** Append the query whose one-number answer is the highest schema version @p db holds. */
int nwb__ch_schema_version_query(const char *db, nwb_buf_t *out);

#endif /* NWB_CH_SCHEMA_H */
