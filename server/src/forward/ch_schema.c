/* SPDX-License-Identifier: MIT */
/*
 * ch_schema.c - the forwarding schema's DDL (ch_schema.h). Why each engine and key: see
 * docs/operations.md, "Forwarding to ClickHouse". Every table is a ReplacingMergeTree keyed by
 * what identifies its row, so a row sent again (at-least-once delivery after a restart of
 * either side) collapses into one: read with FINAL for exactly-once counts. 18.16 has no
 * DateTime64 and no LowCardinality by default, so times are DateTime('UTC') + nanoseconds.
 */
#include <stdio.h>
#include <string.h>

#include "nwb/error.h"
#include "ch_schema.h"

struct table_ddl {
    const char *name;
    const char *body; /* after "CREATE TABLE IF NOT EXISTS db.name " */
};

static const struct table_ddl tables[] = {
    /* One row per log.txt line. (run, host, offset) is the line's identity: the server writes
     * each line once, at one byte offset of its run's log.txt, across kill -9 (a torn batch is
     * cut off before anything is appended after it). program leads the key: few values, so
     * "every run of this program" is a key range and a run lookup still skips granules. */
    {"nwb_logs", "(program String, run String, host String, run_dir String, offset UInt64, "
                 "time DateTime('UTC'), time_ns UInt32, "
                 "level Enum8('INFO' = 0, 'WARNING' = 1, 'ERROR' = 2, 'FATAL' = 3), "
                 "thread_id UInt64, thread_name String, file String, line UInt32, "
                 "message String) "
                 "ENGINE = ReplacingMergeTree() PARTITION BY toYYYYMM(time) "
                 "ORDER BY (program, run, host, offset)"},
    /* One row per run, sent again as it changes; updated_ns (the sender's clock) picks the
     * newest. started is fixed per run, so a run's rows share a partition. */
    {"nwb_runs", "(program String, run String, host String, run_dir String, "
                 "started DateTime('UTC'), last_activity DateTime('UTC'), records UInt64, "
                 "drops UInt64, log_bytes UInt64, frames UInt64, frame_p50_ms Float64, "
                 "frame_p99_ms Float64, crashes UInt32, updated_ns UInt64) "
                 "ENGINE = ReplacingMergeTree(updated_ns) PARTITION BY toYYYYMM(started) "
                 "ORDER BY (program, run, host)"},
    /* One row per crash archive id (its SHA-256 prefix), updated as it is extracted and
     * symbolised. */
    {"nwb_crashes", "(id String, received DateTime('UTC'), program String, run String, "
                    "host String, signal String, signature String, crash_group String, "
                    "status String, archive_bytes UInt64, package_bytes UInt64, "
                    "updated_ns UInt64) "
                    "ENGINE = ReplacingMergeTree(updated_ns) PARTITION BY toYYYYMM(received) "
                    "ORDER BY (id)"},
    /* One row per frame of a run's telemetry, for fleet-wide frame-time queries. */
    {"nwb_frames", "(program String, run String, host String, started DateTime('UTC'), "
                   "frame UInt64, duration_ms Float32) "
                   "ENGINE = ReplacingMergeTree() PARTITION BY toYYYYMM(started) "
                   "ORDER BY (program, run, host, frame)"},
    /* The schema versions servers created or used: max(version) is the database's. */
    {"nwb_schema", "(version UInt32, created DateTime('UTC')) "
                   "ENGINE = ReplacingMergeTree() ORDER BY (version)"},
};

#define TABLE_COUNT (sizeof(tables) / sizeof(tables[0]))

int nwb__ch_db_name_check(const char *db, char *err, size_t errlen)
{
    const size_t len = strlen(db);

    if (len == 0 || len > NWB__CH_DB_NAME_MAX) {
        snprintf(err, errlen, "database name must be 1..%u bytes, not %zu", NWB__CH_DB_NAME_MAX,
                 len);
        return NWB_ECONFIG;
    }
    if (db[0] >= '0' && db[0] <= '9') {
        snprintf(err, errlen, "database name '%s' starts with a digit", db);
        return NWB_ECONFIG;
    }
    for (size_t i = 0; i < len; i++) {
        const char c = db[i];

        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_')) {
            snprintf(err, errlen, "database name '%.64s' has a byte other than A-Z, a-z, 0-9 and _",
                     db);
            return NWB_ECONFIG;
        }
    }
    return 0;
}

size_t nwb__ch_schema_statement_count(void)
{
    return 1 + TABLE_COUNT;
}

int nwb__ch_schema_statement(size_t i, const char *db, nwb_buf_t *out)
{
    int err;

    if (i == 0) {
        return nwb_buf_appendf(out, "CREATE DATABASE IF NOT EXISTS %s", db);
    }
    if (i > TABLE_COUNT) {
        return NWB_ECONFIG;
    }
    err = nwb_buf_appendf(out, "CREATE TABLE IF NOT EXISTS %s.%s ", db, tables[i - 1].name);
    return err != 0 ? err : nwb_buf_append_str(out, tables[i - 1].body);
}

int nwb__ch_schema_version_insert(const char *db, nwb_buf_t *out)
{
    return nwb_buf_appendf(out, "INSERT INTO %s.nwb_schema (version, created) VALUES (%u, now())",
                           db, NWB__CH_SCHEMA_VERSION);
}

int nwb__ch_schema_version_query(const char *db, nwb_buf_t *out)
{
    return nwb_buf_appendf(out, "SELECT max(version) FROM %s.nwb_schema", db);
}
