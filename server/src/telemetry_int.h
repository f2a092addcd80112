/* SPDX-License-Identifier: MIT */
/*
 * telemetry_int.h - the server's telemetry side (docs/protocol.md, "Telemetry"): the ingest of
 * one POST /v1/telemetry (telemetry_ingest.c: decompressed and decoded once, fed to the run's
 * report state, stored as received, telemetry.json rewritten), a run's storage
 * (tel_store.c: telemetry.nwbs.zst and telemetry.index, crash-consistent; tel_run_int.h) and
 * the bounded LRU cache of live runs' report states (tel_cache.c). The HTTP side is in
 * server_int.h. This header needs no telemetry library header (server_int.h includes it).
 *
 * Threading: everything here does blocking file I/O: call it from a worker thread, never the
 * loop thread. Calls for the same run must be serialised by the caller (the endpoint's per-run
 * lanes); calls for different runs run in parallel. The cache and the metrics are thread-safe.
 */
#ifndef NWB_SERVER_TELEMETRY_INT_H
#define NWB_SERVER_TELEMETRY_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "nwb/buf.h"
#include "nwb/namesym.h"

/* The run's files beside log.txt (NWB_TEL_STREAM_ZST_FILE, and an older server's
 * NWB_TEL_STREAM_FILE, come from nwb/telemetry_report.h: tel_run_int.h). */
#define NWB_TEL_REPORT_FILE "telemetry.json"
#define NWB_TEL_INDEX_FILE  "telemetry.index"

#define NWB__TEL_PATH_MAX 4096u
/* Uploads one run's index holds (64 bytes each on disk, 48 in memory); past it: 413. 2^20 is
 * 12 days of one upload a second. */
#define NWB__TEL_INDEX_MAX (1u << 20)
/* GET /v1/runs/<id>/frames: buckets without ?points= (at most NWB_TEL_FRAMES_POINTS_MAX). */
#define NWB__TEL_FRAMES_POINTS_DEFAULT 1024u
/* The largest frames or frame answer (a frame of 65,536 CPU scopes is about 8 MiB). */
#define NWB__TEL_FRAMES_ANSWER_MAX (32u * 1024u * 1024u)
/* GET .../frames/<frame>: stored uploads whose frame range includes it that are tried. */
#define NWB__TEL_FRAME_TRIES 8u
/* zstd level of what is stored for an identity upload (or one whose seq had to be set). */
#define NWB__TEL_STORE_ZSTD_LEVEL 1

/** "@p dir/@p name" into @p out; 0, or NWB_ETOOBIG when it does not fit. */
int nwb__tel_path(char out[NWB__TEL_PATH_MAX], const char *dir, const char *name);

/* Bounds (docs/operations.md, "Telemetry"). */
/* The defaults are the telemetry library's NWB_TEL_ZSTD_FRAME_MAX and NWB_TEL_ZSTD_WINDOW_LOG
 * (telemetry_ingest.c checks) and --telemetry-run-max-bytes' default. */
struct nwb__tel_ingest_limits {
    size_t decompressed_max;  /* one upload after decompression; beyond: 413 */
    unsigned window_log_max;  /* zstd window log accepted; larger frames: 413 */
    uint64_t run_stream_max;  /* telemetry.nwbs.zst of one run; past it: reported, not stored */
    uint32_t run_uploads_max; /* uploads one run's index holds (<= NWB__TEL_INDEX_MAX); 413 */
};

#define NWB__TEL_INGEST_LIMITS_INIT                                                                \
    {                                                                                              \
        64u << 20, 23u, 1ull << 30, NWB__TEL_INDEX_MAX                                             \
    }

struct nwb__tel_ingest_metrics {
    atomic_uint_fast64_t uploads;        /* requests seen */
    atomic_uint_fast64_t accepted;       /* fed to the report (stored or not) */
    atomic_uint_fast64_t unstored;       /* of which not stored: the run's stream limit */
    atomic_uint_fast64_t duplicates;     /* seq already acknowledged: not fed again */
    atomic_uint_fast64_t rejected;       /* 400: malformed stream or compression */
    atomic_uint_fast64_t too_large;      /* 413: a cap was hit */
    atomic_uint_fast64_t unsupported;    /* 415: unknown Content-Encoding */
    atomic_uint_fast64_t failures;       /* 500: storage or report failure */
    atomic_uint_fast64_t bytes_received; /* request bodies */
    atomic_uint_fast64_t bytes_stored;   /* appended to telemetry.nwbs.zst */
    atomic_uint_fast64_t events;         /* events in accepted uploads */
    atomic_uint_fast64_t rebuilds;       /* report states rebuilt from a stored stream */
    atomic_uint_fast64_t evictions;      /* report states dropped by the cache's caps */
    atomic_uint_fast64_t cached_runs;    /* gauge: runs in the cache */
    atomic_uint_fast64_t cached_bytes;   /* gauge: their memory */
};

void nwb__tel_ingest_metrics_init(struct nwb__tel_ingest_metrics *m);

/**
 * Append the metrics as Prometheus text (nwb_telemetry_* counters) to @p buf. Returns the
 * bytes written (truncated to @p cap - 1, always NUL-terminated when cap > 0).
 */
size_t nwb__tel_ingest_metrics_format(const struct nwb__tel_ingest_metrics *m, char *buf,
                                      size_t cap);

/* ---- tel_cache.c: the report states of live runs, bounded, LRU ---- */

struct nwb__tel_cache;

/* A run in use (tel_run_int.h). */
struct nwb__tel_run;

/*
 * A cache holding the report states of at most @p max_runs runs and about @p max_bytes of
 * their memory (the run in use is never evicted, so one larger run still works). @p m (may be
 * NULL) counts rebuilds and evictions and holds the gauges. Returns 0 or -ENOMEM.
 */
int nwb__tel_cache_create(unsigned max_runs, size_t max_bytes, struct nwb__tel_ingest_metrics *m,
                          struct nwb__tel_cache **out);

/** Free @p c and every run in it (none may be in use). NULL is a no-op. */
void nwb__tel_cache_destroy(struct nwb__tel_cache *c);

/*
 * The run of directory @p dir, for the caller alone until _release(): from the cache, or
 * opened and rebuilt from its stored stream (once; nwb__tel_store_open() with @p create).
 * Returns 0 with *@p out, -ENOENT (no telemetry and !create), or an error.
 */
int nwb__tel_cache_acquire(struct nwb__tel_cache *c, const char *dir, int create,
                           struct nwb__tel_run **out);

/** Give @p run back; evicts least recently used runs past the caps. */
void nwb__tel_cache_release(struct nwb__tel_cache *c, struct nwb__tel_run *run);

/* ---- telemetry_ingest.c: one POST /v1/telemetry ---- */

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
    int duplicate;   /* 200 for a seq already acknowledged */
    int stored;      /* 200: the upload is in the stored stream (0: the run's limit) */
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
 * Ingest one upload into @p req->run_dir through @p cache. Never crashes on any input; a
 * malformed upload changes neither the stored stream nor the report's data (it is recorded in
 * telemetry.ingest.log and the report's "uploads"). @p lim NULL = defaults; @p m may be NULL.
 * @p res is initialised here (whatever it held is not freed): release it with
 * nwb__tel_ingest_res_cleanup().
 */
void nwb__tel_ingest(struct nwb__tel_cache *cache, const struct nwb__tel_ingest_req *req,
                     const struct nwb__tel_ingest_limits *lim, struct nwb__tel_ingest_metrics *m,
                     struct nwb__tel_ingest_res *res);

#endif /* NWB_SERVER_TELEMETRY_INT_H */
