/* SPDX-License-Identifier: MIT */
/*
 * crash_int.h - the server's crash ingest as the rest of the server calls it (server.c,
 * the crash endpoints, /metrics, the options' defaults): create it over --out, submit an
 * uploaded archive, the JSON views and counts, pause, wait and stop. All of it is
 * implemented in crash_ingest.c, over the parts in crash_ingest_int.h (the store, the
 * extraction, the listing).
 *
 * Threading: every function may be called from any thread; submit does file I/O and fsync
 * and the views scan folders, so call them off the loop thread (uv_queue_work). The crash
 * worker thread owns extraction and retention. docs/crash.md lists the caps and the layout.
 */
#ifndef NWB_SERVER_CRASH_INT_H
#define NWB_SERVER_CRASH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/common.h"

#include "crash_analysis.h"

#define NWB_CRASH_INGEST_ID_LEN 32u /* lowercase hex: the first 128 bits of SHA-256(body) */

/* Largest max_path_depth accepted (caps beyond are NWB_ECONFIG). */
#define NWB__CRASH_DEPTH_LIMIT 64u

/* Largest JSON view (GET /v1/crashes[/<id>]); beyond: NWB_ETOOBIG (500). */
#define NWB__CRASH_JSON_MAX (64u << 20)

/* Caps; every one is counted on bytes or entries actually seen, never on what an archive claims. */
struct nwb_crash_caps {
    uint64_t max_archive_bytes; /* body of POST /v1/crash; beyond: NWB_ETOOBIG (413) */
    uint32_t max_entries;       /* archive entries (headers read), files and folders alike */
    uint32_t max_path_bytes;    /* one entry's path */
    uint32_t max_path_depth;    /* folders in one entry's path, the file included */
    uint64_t max_entry_bytes;   /* bytes written for one file */
    uint64_t max_total_bytes;   /* bytes written for the whole package */
    uint32_t max_ratio;         /* written bytes / archive bytes, checked once written > floor */
    uint64_t ratio_floor_bytes;
    uint32_t max_queue;       /* archives stored but not yet extracted; beyond: NWB_EFULL (503) */
    unsigned retain_packages; /* crashes/packages kept; 0 = never prune */
    unsigned retain_raw;      /* crashes/raw kept; 0 = never prune */
    unsigned retain_invalid;  /* crashes/invalid archives kept; 0 = never prune */
    /* How packages with a threads.nwbc are symbolised; symbolizer "" (the default) = never. */
    struct nwb_crash_symbolize_cfg symbolize;
};

/* Re-runs of the symbolisation waiting for the crash worker (by crash id or by build id). */
#define NWB__CRASH_RESYMBOLIZE_QUEUE 64u

/* Defaults (docs/crash.md). */
#define NWB_CRASH_CAPS_INIT                                                                        \
    {                                                                                              \
        .max_archive_bytes = 64ull << 20, .max_entries = 4096u, .max_path_bytes = 256u,            \
        .max_path_depth = 8u, .max_entry_bytes = 64ull << 20, .max_total_bytes = 256ull << 20,     \
        .max_ratio = 200u, .ratio_floor_bytes = 1ull << 20, .max_queue = 256u,                     \
        .retain_packages = 256u, .retain_raw = 256u, .retain_invalid = 64u,                        \
    }

/* Category counts and totals for /metrics. */
struct nwb_crash_counts {
    uint64_t packages;         /* crashes/packages/<id> now */
    uint64_t raw;              /* crashes/raw/<id>.<ext> now */
    uint64_t invalid;          /* crashes/invalid/<id>.<ext> now */
    uint64_t queued;           /* stored, waiting for the worker */
    uint64_t uploads_total;    /* archives stored (first time) */
    uint64_t duplicates_total; /* uploads whose bytes were already known */
    uint64_t extracted_total;  /* packages extracted */
    uint64_t invalid_total;    /* archives moved to invalid/ */
    uint64_t pruned_packages_total;
    uint64_t pruned_raw_total;
    uint64_t pruned_invalid_total;
};

struct nwb__crash_ingest; /* opaque (crash_ingest.c) */

/**
 * Create <out_dir>/crashes/{packages,raw,invalid} (and hidden work folders; @p out_dir
 * itself with its parents when missing), clean up what a previous process left half done,
 * re-queue archives that were stored but not extracted, and start the crash worker. @p caps
 * may be NULL (defaults; borrowed, copied). Returns 0 with @p *out set (returned-owned:
 * nwb__crash_ingest_stop), or a negated errno / NWB_ECONFIG.
 */
int nwb__crash_ingest_create(const char *out_dir, const struct nwb_crash_caps *caps,
                             struct nwb__crash_ingest **out);

/**
 * Store @p body (temporary file, fsync, rename to crashes/raw/<id>.<ext>) and queue it for
 * extraction; @p program / @p run (the X-NWB-* headers, may be NULL) are sanitised. The same
 * bytes always get the same id and are stored once: a repeated upload returns 0 and the same
 * id without writing. Returns 0 with the id in @p id_out; NWB_ETOOBIG (413), NWB_EFULL
 * (queue full: 503 + Retry-After), NWB_ECLOSED (stopping: 503), or a negated errno (500).
 */
int nwb__crash_ingest_submit(struct nwb__crash_ingest *ci, const void *body, size_t len,
                             const char *program, const char *run,
                             char id_out[NWB_CRASH_INGEST_ID_LEN + 1]);

/**
 * GET /v1/crashes[?group=G]: {"crashes":[...]} oldest first (of group G, 16 hex digits,
 * when given) and a newline, into a nwb_malloc'd,
 * NUL-terminated @p *json (returned-owned) of @p *len bytes (the NUL not counted).
 * Returns 0, -ENOMEM, NWB_ETOOBIG (beyond NWB__CRASH_JSON_MAX) or the negated errno of a
 * folder scan.
 */
int nwb__crash_ingest_list_json(struct nwb__crash_ingest *ci, const char *group, char **json,
                                size_t *len);

/** GET /v1/crash-groups (docs/crash.md, "Grouping"); errors as the list's. */
int nwb__crash_ingest_groups_json(struct nwb__crash_ingest *ci, char **json, size_t *len);

/**
 * GET /v1/crashes/<id>: one crash with its files (extracted) or reason (invalid), like the
 * list. Returns 0, -EINVAL for a malformed id (404), -ENOENT (404), or a list error.
 */
int nwb__crash_ingest_get_json(struct nwb__crash_ingest *ci, const char *id, char **json,
                               size_t *len);

/* One crash as GET /v1/crashes lists it, for the ClickHouse forwarder (nwb_crashes). The
 * strings are valid for the call only; signature and group are "" until the server analysed
 * the package. */
struct nwb__crash_row {
    const char *id;       /* 32 lowercase hex digits */
    uint64_t received_ns; /* CLOCK_REALTIME */
    const char *program;  /* "" when nothing names it yet */
    const char *run;
    const char *signal;
    const char *status;    /* "queued", "extracted", "invalid" or "stored" */
    const char *signature; /* sig_len bytes */
    size_t sig_len;
    const char *group;      /* 16 hex digits, or "" */
    uint64_t archive_bytes; /* the stored archive's, 0 when it is gone */
    uint64_t package_bytes; /* the extracted files', 0 when not extracted */
};

/* Told about one crash; returns 0 to go on, anything else stops the walk (and is returned). */
typedef int (*nwb__crash_row_fn)(void *ctx, const struct nwb__crash_row *r);

/**
 * Call @p fn for every crash the store holds now, oldest first, with the fields GET
 * /v1/crashes shows (scans the folders: any thread but the loop's). Returns 0, the first
 * nonzero return of @p fn, or a folder scan's error.
 */
int nwb__crash_ingest_each_row(struct nwb__crash_ingest *ci, nwb__crash_row_fn fn, void *ctx);

/* An archive the crash worker settled (extracted into a package, or found invalid), or, with
 * queued set, one a submit just stored (neither yet). */
struct nwb__crash_settled {
    const char *id;      /* 32 lowercase hex digits */
    int extracted;       /* 1: crashes/packages/<id>/; 0: crashes/invalid/<id>.<ext> */
    const char *program; /* the manifest's, when the package names one; else the upload's */
    const char *run;     /* X-NWB-Program / X-NWB-Run (sanitised, "unknown" when missing) */
    int queued;          /* 1: stored, waiting for the worker (extracted is 0) */
};

/* Told about settled archives; the pointers are valid for the call only. */
typedef void (*nwb__crash_settled_fn)(void *ctx, const struct nwb__crash_settled *s);

/**
 * Call @p fn(@p ctx) after each archive a submit stores (queued: on the submitting thread,
 * the ingest's lock held, so it comes before that archive's settle notice) and each one the
 * crash worker settles (on its thread, no lock held), from now on; NULL stops. Keep it short:
 * submits and extraction wait meanwhile; it must not call the ingest.
 */
void nwb__crash_ingest_on_settled(struct nwb__crash_ingest *ci, nwb__crash_settled_fn fn,
                                  void *ctx);

/**
 * Call @p fn for every extracted package and invalid archive held now, with the program and
 * run GET /v1/crashes shows (scans the folders: off the loop thread, or at start). Returns 0
 * or a folder scan's error.
 */
int nwb__crash_ingest_each(struct nwb__crash_ingest *ci, nwb__crash_settled_fn fn, void *ctx);

/**
 * POST /v1/crashes/<id>/resymbolize: queue a re-run of package @p id's symbolisation (and
 * then its signature) on the crash worker; a re-run already queued is not queued twice.
 * Returns 0; -EINVAL for a malformed id, -ENOENT when no extracted package has it, -ENODATA
 * when it has no threads.nwbc, -ENOTSUP when symbolisation is off, NWB_EFULL past
 * NWB__CRASH_RESYMBOLIZE_QUEUE, NWB_ECLOSED while stopping. Any thread (it scans nothing).
 */
int nwb__crash_ingest_resymbolize(struct nwb__crash_ingest *ci, const char *id);

/**
 * Queue a re-run for every package whose frames.tsv lists build id @p build_id (lowercase hex,
 * 2..128 digits) as missing; the worker finds them. Errors as nwb__crash_ingest_resymbolize().
 */
int nwb__crash_ingest_resymbolize_build_id(struct nwb__crash_ingest *ci, const char *build_id);

/** Current counts (scans the category folders). */
void nwb__crash_ingest_counts(struct nwb__crash_ingest *ci, struct nwb_crash_counts *out);

/**
 * Append the counts as Prometheus text to @p buf (NUL-terminated). Returns the length the
 * text needs, like snprintf; nothing past @p cap is written.
 */
size_t nwb__crash_ingest_metrics_write(struct nwb__crash_ingest *ci, char *buf, size_t cap);

/**
 * Hold the worker before its next archive (@p paused 1) or let it go on (0). Stored
 * archives wait in the queue meanwhile (tests of the queue bound; an operator pause under
 * disk pressure).
 */
void nwb__crash_ingest_pause(struct nwb__crash_ingest *ci, int paused);

/**
 * Wait until the queue is empty and the worker idle, at most @p timeout_ms (measured on the
 * monotonic clock). 0 or NWB_ETIMEOUT.
 */
int nwb__crash_ingest_wait_idle(struct nwb__crash_ingest *ci, unsigned timeout_ms);

/**
 * Stop the worker: the archive being extracted is abandoned at its next block (its partial
 * output removed, the raw archive kept and re-queued at the next start), the thread is
 * joined and everything freed. Submits racing with this get NWB_ECLOSED. NULL is a no-op.
 * The server calls it before the log worker is joined (docs/architecture.md, "Shutdown order").
 */
void nwb__crash_ingest_stop(struct nwb__crash_ingest *ci);

#endif /* NWB_SERVER_CRASH_INT_H */
