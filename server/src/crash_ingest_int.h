/* SPDX-License-Identifier: MIT */
/*
 * crash_ingest_int.h - the parts behind the crash ingest's face (crash_int.h), one concern
 * per file: content ids, the crashes/ store and its retention (crash_store.c); the
 * extraction of one archive under the caps (crash_extract.c); the JSON views (crash_list.c).
 * crash_ingest.c ties them together with the queue and the worker thread; the crash tests
 * and the fuzz target call the parts directly.
 *
 * Nothing here locks: crash_ingest.c makes every call that changes the store's folders with
 * its lock held; the views and the scans only read, and a file that moves meanwhile is
 * merely missed or seen twice (the views merge by id).
 */
#ifndef NWB_SERVER_CRASH_INGEST_INT_H
#define NWB_SERVER_CRASH_INGEST_INT_H

#include <dirent.h>
#include <stdatomic.h>

#include "nwb/json.h"
#include "nwb/safe_name.h"

#include "crash_int.h"

/* ---- content ids (crash_store.c) ---- */

/* SHA-256 of @p len bytes. */
void nwb__crash_sha256(const void *data, size_t len, uint8_t out[32]);
/* The id of @p body: the first 16 bytes of its SHA-256 as 32 lowercase hex digits. */
void nwb__crash_id_of(const void *body, size_t len, char id[NWB_CRASH_INGEST_ID_LEN + 1]);
/* 1 when @p s is a well-formed id. */
int nwb__crash_id_valid(const char *s);
/* The raw file extension from the leading bytes: "tar.zst", "tar.gz", "zip", "tar" or "bin". */
const char *nwb__crash_sniff_ext(const void *body, size_t len);

/* The archive kinds the store names raw/ and invalid/ files by ("<id>.<ext>"), with the media
 * type GET /v1/crashes/<id>/archive answers them as (read_files.c). */
struct nwb__crash_archive_kind {
    const char *ext;
    const char *type;
};
extern const struct nwb__crash_archive_kind nwb__crash_archive_kinds[];
extern const size_t nwb__crash_archive_kinds_count;

/* ---- the store: the crashes/ folder (crash_store.c) ---- */

/* The three visible categories under crashes/. */
enum nwb__crash_cat {
    NWB__CRASH_PACKAGES, /* packages/<id>/: extracted */
    NWB__CRASH_RAW,      /* raw/<id>.<ext>: stored uploads */
    NWB__CRASH_INVALID,  /* invalid/<id>.<ext> and <id>.reason.txt */
    NWB__CRASH_CATS
};

/* One stored archive: what its queue marker records. */
struct nwb__crash_job {
    char id[NWB_CRASH_INGEST_ID_LEN + 1];
    char ext[8];
    char program[NWB_SAFE_NAME_MAX + 1];
    char run[NWB_SAFE_NAME_MAX + 1];
    uint64_t received_ns; /* CLOCK_REALTIME: a date, shown as "received" */
};

/* Folder descriptors under <out>/crashes; -1 when closed. */
struct nwb__crash_store {
    int root_fd;                 /* crashes/ */
    int cat_fd[NWB__CRASH_CATS]; /* packages/, raw/, invalid/ */
    int tmp_fd;                  /* .tmp/: raw archives, markers, reasons being written */
    int stage_fd;                /* .staging/: packages being extracted */
    int queue_fd;                /* .queue/: one marker per stored, not yet settled archive */
    int analysis_fd;             /* analysis/<id>/: what the server derived (signature.txt) */
};

/* One entry of a category folder. */
struct nwb__crash_entry {
    char id[NWB_CRASH_INGEST_ID_LEN + 1];
    char ext[8]; /* "" for packages */
    uint64_t mtime_ns;
    uint64_t size;
};

/*
 * Create <out_dir> (mkdir -p), crashes/ and its folders, and empty .tmp/ and .staging/ (what
 * a previous process was writing is redone from the raw archive). 0, or a negated errno with
 * everything closed again.
 */
int nwb__crash_store_open(struct nwb__crash_store *st, const char *out_dir);
/* Close every folder. NULL-safe and idempotent. */
void nwb__crash_store_close(struct nwb__crash_store *st);

/* 1 when @p job's id is in any category or has a queue marker. */
int nwb__crash_store_known(const struct nwb__crash_store *st, const struct nwb__crash_job *job);
/*
 * Store @p job durably: its queue marker, then the raw archive (@p len bytes of @p body),
 * each written in .tmp/, fsynced, renamed and the folder fsynced. A marker without its raw
 * archive is dropped at the next open, never the reverse. 0 or a negated errno (nothing kept).
 */
int nwb__crash_store_put(struct nwb__crash_store *st, const struct nwb__crash_job *job,
                         const void *body, size_t len);
/* 1 while @p id has a queue marker: stored and not yet settled. */
int nwb__crash_store_is_queued(const struct nwb__crash_store *st, const char *id);
/* The job of the queue marker @p id. 0, or -1 when it is missing or not one this store wrote. */
int nwb__crash_store_marker_read(const struct nwb__crash_store *st, const char *id,
                                 struct nwb__crash_job *job);
/*
 * Offer @p take every marker whose raw archive exists (markers without one are removed).
 * Stops at the first nonzero return of @p take and returns it; 0 once every marker was offered.
 */
int nwb__crash_store_requeue(struct nwb__crash_store *st,
                             int (*take)(void *arg, const struct nwb__crash_job *job), void *arg);

/* Open @p job's raw archive for reading; its size in @p *len. The fd, or a negated errno. */
int nwb__crash_store_raw_open(const struct nwb__crash_store *st, const struct nwb__crash_job *job,
                              uint64_t *len);
/* A fresh, empty .staging/<id>/ for an extraction. Its fd, or a negated errno. */
int nwb__crash_store_stage_open(struct nwb__crash_store *st, const char *id);
/* Remove .staging/<id>/ and whatever was extracted into it. */
void nwb__crash_store_stage_drop(struct nwb__crash_store *st, const char *id);
/*
 * Settle @p job after its extraction returned @p rc: first retention for the three categories
 * (never @p job itself, counting the move about to happen, so no category is ever seen above
 * its cap), then rc 0 publishes .staging/<id> as packages/<id>, NWB_EARCHIVE moves the raw
 * archive to invalid/ with <id>.reason.txt (@p reason first), -ENOENT (raw archive gone) only
 * drops the marker; any other rc changes nothing and leaves the marker for the next start.
 * What it did is added to @p totals.
 */
void nwb__crash_store_settle(struct nwb__crash_store *st, const struct nwb_crash_caps *caps,
                             const struct nwb__crash_job *job, int rc, const char *reason,
                             struct nwb_crash_counts *totals);

/* The entries of @p cat (nwb_malloc'd @p *out, returned-owned). 0, -ENOMEM or a negated errno. */
int nwb__crash_store_scan(const struct nwb__crash_store *st, enum nwb__crash_cat cat,
                          struct nwb__crash_entry **out, size_t *count);
/*
 * The grouping signature the server derived for package @p id (analysis/<id>/signature.txt,
 * one line, at most NWB_CRASH_SIG_MAX bytes) into @p sig (@p cap bytes, NUL-terminated).
 * Returns its length, or -ENOENT when the package has none yet, or another negative code.
 */
int nwb__crash_analysis_signature(const struct nwb__crash_store *st, const char *id, char *sig,
                                  size_t cap);
/*
 * Write @p len bytes as @p tmp_name in .tmp/ (unique per writer), fsync, rename it to @p name
 * under @p dir_fd and fsync that folder: a reader sees the whole file or none. 0 or -errno.
 */
int nwb__crash_store_file_as(struct nwb__crash_store *st, const char *tmp_name, int dir_fd,
                             const char *name, const void *data, size_t len);
/* How many entries @p cat holds (0 when it cannot be read). */
uint64_t nwb__crash_store_count(const struct nwb__crash_store *st, enum nwb__crash_cat cat);
/* invalid/<id>.reason.txt as nwb_malloc'd NUL-terminated text (returned-owned). 0 or an error
 * of nwb_file_read_at(). */
int nwb__crash_store_reason_read(const struct nwb__crash_store *st, const char *id, char **text,
                                 size_t *len);

/* Remove the folder tree @p name under @p dirfd (regular files and folders). 0 or -errno. */
int nwb__crash_rmtree_at(int dirfd, const char *name);
/* A listing of the folder @p dir_fd (over a duplicate: closedir() leaves @p dir_fd open), or
 * NULL with errno set. */
DIR *nwb__crash_dir_open(int dir_fd);

/* ---- extraction (crash_extract.c) ---- */

/* The manifest keys the views show, sanitised (nwb_safe_name). */
struct nwb__crash_manifest {
    char program[NWB_SAFE_NAME_MAX + 1];
    char run[NWB_SAFE_NAME_MAX + 1];
    char signal[NWB_SAFE_NAME_MAX + 1];
    char build_id[NWB_SAFE_NAME_MAX + 1];
};

/*
 * Read the first NWB_CRASH_MANIFEST_READ_MAX bytes of the manifest @p path under @p dirfd
 * (never following a link) and its keys into @p m. Returns 0 when it starts with the magic
 * line, NWB_EARCHIVE when it does not, or the negated errno of opening it (-ENOENT: missing).
 */
int nwb__crash_manifest_read(int dirfd, const char *path, struct nwb__crash_manifest *m);

/* What one extraction found. */
struct nwb__crash_extract_info {
    uint64_t entries;
    uint64_t files;
    uint64_t bytes_written;
    struct nwb__crash_manifest manifest;
};

/*
 * Extract an archive (from @p data / @p len when @p data is not NULL, else from @p src_fd,
 * whose size is @p len) into the empty folder @p dst_dirfd, creating only regular files and
 * folders, under @p caps, and check that it holds the crash manifest. @p cancel (may be
 * NULL) is polled per block. Returns 0 (valid package), NWB_EARCHIVE (invalid: @p reason says
 * why; the caller removes what was written), NWB_ECLOSED (cancelled), or a negated errno for
 * a local failure (disk full...), also with a reason.
 */
int nwb__crash_extract(const void *data, int src_fd, uint64_t len, int dst_dirfd,
                       const struct nwb_crash_caps *caps, const atomic_int *cancel,
                       struct nwb__crash_extract_info *info, char *reason, size_t reason_cap);

/* ---- the JSON views (crash_list.c) ---- */

/*
 * With @p id NULL, every crash of @p st as {"crashes":[...]} oldest first (only those of
 * group @p group, 16 hex digits, when it is not NULL); else the crash
 * @p id alone with its files or reason. Written with nwb/json.h into a nwb_malloc'd,
 * NUL-terminated @p *json (returned-owned) ending in a newline. Returns what
 * nwb__crash_ingest_list_json() and nwb__crash_ingest_get_json() document.
 */
int nwb__crash_list_json(const struct nwb__crash_store *st, const char *id, const char *group,
                         char **json, size_t *len);

/*
 * GET /v1/crash-groups: {"groups":[...]} of the extracted crashes that have a signature, the
 * largest group first (ties: the most recently seen first). Same ownership and errors as
 * nwb__crash_list_json().
 */
int nwb__crash_groups_json(const struct nwb__crash_store *st, char **json, size_t *len);

/* nwb__crash_ingest_each_row() over the store @p st. */
int nwb__crash_list_rows(const struct nwb__crash_store *st, nwb__crash_row_fn fn, void *ctx);

/* nwb__crash_ingest_each() over the store @p st. */
int nwb__crash_list_each(const struct nwb__crash_store *st, nwb__crash_settled_fn fn, void *ctx);

/*
 * The files below the folder @p dir_fd as a JSON array of {"path","bytes"} (relative paths,
 * at most NWB__CRASH_SCAN_DEPTH folders deep) written to @p j. The fuzz target checks it.
 */
void nwb__crash_files_json(int dir_fd, nwb_json_t *j);

/* Folder levels the views walk below a package. */
#define NWB__CRASH_SCAN_DEPTH 16u

#endif /* NWB_SERVER_CRASH_INGEST_INT_H */
