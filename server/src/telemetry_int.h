/* SPDX-License-Identifier: MIT */
/*
 * telemetry_int.h - the server's telemetry ingest (telemetry_ingest.c): POST /v1/telemetry
 * bodies are decompressed under explicit caps, validated, appended to the run's
 * telemetry.nwbs (once per seq), and the run's telemetry.json is rebuilt and replaced
 * atomically. docs/telemetry-report.md describes the files; docs/telemetry-format.md the bytes.
 *
 * Threading: nwb__tel_ingest() does blocking file I/O: call it from a worker thread, never the
 * loop thread. Calls for the same run directory must be serialised by the caller (one worker,
 * or a per-run lock); calls for different runs may run in parallel. Metrics are atomics.
 */
#ifndef NWB_SERVER_TELEMETRY_INT_H
#define NWB_SERVER_TELEMETRY_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "nwb/buf.h"
#include "nwb/namesym.h"

#define NWB_TEL_STREAM_FILE "telemetry.nwbs"
#define NWB_TEL_REPORT_FILE "telemetry.json"

/* Bounds (docs/telemetry-report.md, "Ingest bounds"). */
struct nwb__tel_ingest_limits {
    size_t decompressed_max; /* one upload after decompression; beyond: 413 */
    unsigned window_log_max; /* zstd window log accepted; larger frames: 413 */
    size_t run_stream_max;   /* telemetry.nwbs of one run; an upload past it: 413 */
};

#define NWB__TEL_INGEST_LIMITS_INIT                                                                \
    {                                                                                              \
        64u << 20, 23u, 256u << 20                                                                 \
    }

struct nwb__tel_ingest_metrics {
    atomic_uint_fast64_t uploads;        /* requests seen */
    atomic_uint_fast64_t accepted;       /* appended and reported */
    atomic_uint_fast64_t duplicates;     /* seq already stored: acknowledged, not appended */
    atomic_uint_fast64_t rejected;       /* 400: malformed stream or compression */
    atomic_uint_fast64_t too_large;      /* 413: a cap was hit */
    atomic_uint_fast64_t unsupported;    /* 415: unknown Content-Encoding */
    atomic_uint_fast64_t failures;       /* 500: storage or report failure */
    atomic_uint_fast64_t bytes_received; /* request bodies */
    atomic_uint_fast64_t bytes_stored;   /* appended to telemetry.nwbs */
    atomic_uint_fast64_t events;         /* events in accepted uploads */
};

void nwb__tel_ingest_metrics_init(struct nwb__tel_ingest_metrics *m);

/**
 * Append the metrics as Prometheus text (nwb_telemetry_* counters) to @p buf. Returns the
 * bytes written (truncated to @p cap - 1, always NUL-terminated when cap > 0).
 */
size_t nwb__tel_ingest_metrics_format(const struct nwb__tel_ingest_metrics *m, char *buf,
                                      size_t cap);

struct nwb__tel_ingest_req {
    const uint8_t *body; /* borrowed for the call */
    size_t body_len;
    const char *content_encoding; /* NULL, "", "identity" or "zstd" (case-insensitive) */
    const char *program;          /* X-NWB-Program (informational; the stream has its own) */
    const char *run;              /* X-NWB-Run */
    int has_seq;                  /* X-NWB-Seq present and numeric */
    uint64_t seq;
    const char *run_dir;              /* the run's existing directory */
    const nwb_namesym_table_t *names; /* borrowed; NULL = names stay tokens */
};

struct nwb__tel_ingest_res {
    int http_status; /* 200, 400, 413, 415 or 500 */
    int status;      /* 0 or the nwb error code behind the answer */
    uint64_t offset; /* 400 on a malformed stream: the first bad byte of the decompressed body */
    int duplicate;   /* 200 for a seq already stored */
    uint64_t seq;    /* the seq used (X-NWB-Seq, else the segment header's) */
    /* The JSON answer (application/json), written with nwb/json.h; owned. Empty only when
     * building it failed (out of memory): answer with a plain error then. */
    nwb_buf_t body;
};

/** An answer not built yet: 500, empty body. Call before nwb__tel_ingest_res_error(). */
void nwb__tel_ingest_res_init(struct nwb__tel_ingest_res *res);

/**
 * Make @p res the error answer @p http: {"error":@p what,"status":name of @p status,
 * "code":@p status,"offset":res->offset,"reason":@p reason}. Both texts are escaped (the
 * reason may quote what the client sent); @p reason NULL = "".
 */
void nwb__tel_ingest_res_error(struct nwb__tel_ingest_res *res, int http, int status,
                               const char *what, const char *reason);

/** Release the answer's body. NULL-safe and idempotent; @p res can then be reused. */
void nwb__tel_ingest_res_cleanup(struct nwb__tel_ingest_res *res);

/**
 * Decompress one zstd frame from @p in into a nwb_malloc'd buffer (*@p out, owned by the caller)
 * of at most @p max bytes (max < SIZE_MAX; the buffer never exceeds max + 1 bytes), with frames
 * needing a window above 2^@p wlog refused; the frame's claimed content size is never trusted.
 * Returns 0, or with *@p out NULL and a static reason in *@p why: NWB_ETOOBIG (a cap),
 * NWB_ECOMPRESS (corrupt, truncated, or data after the frame), NWB_ECONFIG (@p wlog out of
 * zstd's range), -ENOMEM. Any thread.
 */
int nwb__tel_unzstd(const uint8_t *in, size_t in_len, size_t max, unsigned wlog, uint8_t **out,
                    size_t *out_len, const char **why);

/**
 * Ingest one upload into @p req->run_dir. Never crashes on any input; a malformed upload
 * leaves telemetry.nwbs untouched and is recorded in telemetry.ingest.log and the report.
 * @p lim NULL = defaults; @p m may be NULL. @p res is initialised here (whatever it held is
 * not freed): release it with nwb__tel_ingest_res_cleanup().
 */
void nwb__tel_ingest(const struct nwb__tel_ingest_req *req,
                     const struct nwb__tel_ingest_limits *lim, struct nwb__tel_ingest_metrics *m,
                     struct nwb__tel_ingest_res *res);

#endif /* NWB_SERVER_TELEMETRY_INT_H */
