/* SPDX-License-Identifier: MIT */
/*
 * crash_int.h - the server's crash ingest, as a small module the router,
 * /metrics and shutdown call: store an uploaded archive durably and answer
 * with its content id (crash_store.c), extract it on the crash worker
 * thread under explicit caps (crash_ingest.c), keep crashes/packages, raw
 * and invalid within their retention caps, and describe them as JSON.
 *
 * Threading: every function may be called from any thread; submit does file
 * I/O and fsync, so call it off the loop thread (uv_queue_work). The worker
 * owns extraction and retention. docs/crash.md lists the caps and layout.
 */
#ifndef NWB_SERVER_CRASH_INT_H
#define NWB_SERVER_CRASH_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "nwb/common.h"

#define NWB_CRASH_INGEST_ID_LEN 32u /* lowercase hex: the first 128 bits of SHA-256(body) */

/* The package's required manifest, as crash/ writes it (nwb/crash.h, docs/crash.md). The
 * server may not include crash/'s header, so the contract is repeated here. */
#define NWB__CRASH_MANIFEST_NAME  "manifest.txt"
#define NWB__CRASH_MANIFEST_MAGIC "nwb-crash-manifest 1"

/* Largest max_path_depth accepted (caps beyond are NWB_ECONFIG). */
#define NWB__CRASH_DEPTH_LIMIT 64u

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
};

/* Defaults (docs/crash.md). */
#define NWB_CRASH_CAPS_INIT                                                                        \
    {                                                                                              \
        64ull << 20, 4096u, 256u, 8u, 64ull << 20, 256ull << 20, 200u, 1ull << 20, 256u, 256u,     \
            256u, 64u                                                                              \
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

struct nwb__crash_ingest; /* opaque */

/**
 * Create <out_dir>/crashes/{packages,raw,invalid} (and hidden work folders),
 * clean up what a previous process left half done, re-queue archives that
 * were stored but not extracted, and start the crash worker. @p caps may be
 * NULL (defaults). Returns 0 with @p *out set, or a negated errno /
 * NWB_ECONFIG.
 */
int nwb__crash_ingest_create(const char *out_dir, const struct nwb_crash_caps *caps,
                             struct nwb__crash_ingest **out);

/**
 * Store @p body (temporary file, fsync, rename to crashes/raw/<id>.<ext>)
 * and queue it for extraction; @p program / @p run (the X-NWB-* headers,
 * may be NULL) are sanitised. The same bytes always get the same id and are
 * stored once: a repeated upload returns 0 and the same id without writing.
 * Returns 0 with the id in @p id_out; NWB_ETOOBIG (413), NWB_EFULL (queue
 * full: 503 + Retry-After), NWB_ECLOSED (stopping: 503), or a negated errno (500).
 */
int nwb__crash_ingest_submit(struct nwb__crash_ingest *ci, const void *body, size_t len,
                             const char *program, const char *run,
                             char id_out[NWB_CRASH_INGEST_ID_LEN + 1]);

/** GET /v1/crashes: {"crashes":[...]} oldest first, nwb_malloc'd into @p *json. 0 or -ENOMEM. */
int nwb__crash_ingest_list_json(struct nwb__crash_ingest *ci, char **json, size_t *len);

/**
 * GET /v1/crashes/<id>: one crash with its files (extracted) or reason
 * (invalid). Returns 0, -EINVAL for a malformed id (400), -ENOENT (404), or -ENOMEM.
 */
int nwb__crash_ingest_get_json(struct nwb__crash_ingest *ci, const char *id, char **json,
                               size_t *len);

/** Current counts (scans the category folders). */
void nwb__crash_ingest_counts(struct nwb__crash_ingest *ci, struct nwb_crash_counts *out);

/**
 * Append the counts as Prometheus text to @p buf (NUL-terminated). Returns
 * the length the text needs, like snprintf; nothing past @p cap is written.
 */
size_t nwb__crash_ingest_metrics_write(struct nwb__crash_ingest *ci, char *buf, size_t cap);

/**
 * Hold the worker before its next archive (@p paused 1) or let it go on (0).
 * Stored archives wait in the queue meanwhile (tests of the queue bound; an
 * operator pause under disk pressure).
 */
void nwb__crash_ingest_pause(struct nwb__crash_ingest *ci, int paused);

/** Wait until the queue is empty and the worker idle, at most @p timeout_ms. 0 or NWB_ETIMEOUT. */
int nwb__crash_ingest_wait_idle(struct nwb__crash_ingest *ci, unsigned timeout_ms);

/**
 * Stop the worker: the archive being extracted is abandoned at its next
 * block (its partial output removed, the raw archive kept and re-queued at
 * the next start), the thread is joined and everything freed. Submits
 * racing with this get NWB_ECLOSED. NULL is a no-op. Call before the log
 * worker is joined (docs/architecture.md, "Shutdown order").
 */
void nwb__crash_ingest_stop(struct nwb__crash_ingest *ci);

/* ---- extraction, shared by the worker and the fuzz target (crash_ingest.c) ---- */

/* What one extraction found. */
struct nwb__crash_extract_info {
    uint64_t entries;
    uint64_t files;
    uint64_t bytes_written;
    char program[65];
    char run[65];
    char signal[33];
};

/**
 * Extract an archive (from @p data / @p len when @p data is not NULL, else
 * from @p src_fd, whose size is @p len) into the empty folder @p dst_dirfd,
 * creating only regular files and folders, under @p caps, and check that it
 * holds the crash manifest. @p cancel (may be NULL) is polled per block.
 * Returns 0 (valid package), NWB_EARCHIVE (invalid: @p reason says why; the
 * caller removes what was written), NWB_ECLOSED (cancelled), or a negated
 * errno for a local failure (disk full...), also with a reason.
 */
int nwb__crash_extract(const void *data, int src_fd, uint64_t len, int dst_dirfd,
                       const struct nwb_crash_caps *caps, const atomic_int *cancel,
                       struct nwb__crash_extract_info *info, char *reason, size_t reason_cap);

/* Remove the folder tree @p name under @p dirfd (regular files and folders). 0 or -errno. */
int nwb__crash_rmtree_at(int dirfd, const char *name);

/* ---- shared by crash_store.c and crash_ingest.c only ---- */

/* One stored archive waiting for the worker. */
struct nwb__crash_job {
    char id[NWB_CRASH_INGEST_ID_LEN + 1];
    char ext[8];
    char program[65];
    char run[65];
    uint64_t received_ns;
};

struct nwb__crash_ingest {
    struct nwb_crash_caps caps;
    int root_fd;                  /* <out>/crashes */
    int pkg_fd;                   /* packages/ */
    int raw_fd;                   /* raw/ */
    int inv_fd;                   /* invalid/ */
    int tmp_fd;                   /* .tmp/: raw archives and reason files being written */
    int stage_fd;                 /* .staging/: packages being extracted */
    int queue_fd;                 /* .queue/: one marker per stored, not yet extracted archive */
    pthread_mutex_t lock;         /* the queue, the counters, and every change in the folders */
    pthread_cond_t wake;          /* the worker waits here */
    pthread_cond_t idle;          /* wait_idle waits here */
    struct nwb__crash_job *queue; /* ring of caps.max_queue */
    unsigned q_head, q_len;
    int busy;   /* the worker holds a job */
    int paused; /* nwb__crash_ingest_pause() */
    int rescan; /* markers exist beyond what the queue could take at start */
    atomic_int stopping;
    pthread_t worker;
    int worker_started;
    struct nwb_crash_counts totals; /* the *_total fields */
};

/* Start the worker thread (crash_ingest.c). 0 or a negated errno. */
int nwb__crash_worker_start(struct nwb__crash_ingest *ci);
/* Enqueue every marker in .queue/ that is not queued yet (store lock held). */
void nwb__crash_store_requeue(struct nwb__crash_ingest *ci);
/* 1 when @p id is in the in-memory queue or has a marker (store lock held). */
int nwb__crash_store_is_queued(struct nwb__crash_ingest *ci, const char *id);
/*
 * Settle @p job after extraction (store lock held): applies retention to the
 * three categories (never to @p job itself, and counting the move about to
 * happen), then rc 0 moves the staging folder to packages/, NWB_EARCHIVE
 * moves the raw archive to invalid/ with @p reason; any other rc keeps it
 * queued for the next start and changes nothing.
 */
void nwb__crash_store_settle(struct nwb__crash_ingest *ci, const struct nwb__crash_job *job, int rc,
                             const char *reason);

/* ---- content ids (crash_store.c) ---- */

/* SHA-256 of @p len bytes. */
void nwb__crash_sha256(const void *data, size_t len, uint8_t out[32]);
/* The id of @p body: the first 16 bytes of its SHA-256 as 32 lowercase hex digits. */
void nwb__crash_id_of(const void *body, size_t len, char id[NWB_CRASH_INGEST_ID_LEN + 1]);
/* 1 when @p s is a well-formed id. */
int nwb__crash_id_valid(const char *s);
/* The raw file extension from the leading bytes: "tar.zst", "tar.gz", "zip", "tar" or "bin". */
const char *nwb__crash_sniff_ext(const void *body, size_t len);

#endif /* NWB_SERVER_CRASH_INT_H */
