/* SPDX-License-Identifier: MIT */
/*
 * tel_run_int.h - one run's telemetry in the server: its storage (tel_store.c:
 * telemetry.nwbs.zst and telemetry.index, docs/protocol.md "Telemetry storage") and the run a
 * cache holder gets (tel_cache.c), with its report state from the telemetry library. Included
 * by the server's telemetry files only (it needs nwb/telemetry_report.h).
 *
 * Threading: blocking file I/O, pool threads; one caller per run at a time (the lanes).
 */
#ifndef NWB_SERVER_TEL_RUN_INT_H
#define NWB_SERVER_TEL_RUN_INT_H

#include "nwb/telemetry_report.h"
#include "telemetry_int.h"

/* ---- tel_store.c: one run's telemetry.nwbs.zst and telemetry.index ---- */

#define NWB__TEL_REC_STORED 0x1u /* the upload's frame is in the stream */
#define NWB__TEL_REC_FRAMES 0x2u /* frame_min/frame_max are set */

/* One acknowledged upload (a telemetry.index record). */
struct nwb__tel_rec {
    uint64_t seq;
    uint64_t offset;    /* of its zstd frame in telemetry.nwbs.zst */
    uint64_t frame_min; /* smallest and largest perfFrame number (NWB__TEL_REC_FRAMES) */
    uint64_t frame_max;
    uint64_t events;
    uint32_t length;  /* bytes of its zstd frame; 0 when not stored */
    uint32_t raw_len; /* decompressed bytes */
    uint32_t flags;   /* NWB__TEL_REC_* */
};

struct nwb__tel_store;

/*
 * Open the telemetry of the run directory @p dir (borrowed) and feed everything it holds into
 * @p state (new and empty): recover after a crash (docs/protocol.md, "Telemetry storage"),
 * convert an older server's telemetry.nwbs once, derive a missing index from the stream.
 * @p create: make empty files when there are none (an upload); else -ENOENT (a read).
 * Returns 0 with *@p out, or a negative code (then @p state must be discarded).
 */
int nwb__tel_store_open(const char *dir, int create, nwb_tel_report_state_t *state,
                        struct nwb__tel_store **out);

/** Close the files and free @p s. NULL is a no-op. */
void nwb__tel_store_close(struct nwb__tel_store *s);

/** 1 when an upload with @p seq was acknowledged (stored or not). */
int nwb__tel_store_has_seq(const struct nwb__tel_store *s, uint64_t seq);

/** Bytes of telemetry.nwbs.zst. */
uint64_t nwb__tel_store_bytes(const struct nwb__tel_store *s);

/** Acknowledged uploads (index records), and of them the ones not stored. */
uint32_t nwb__tel_store_uploads(const struct nwb__tel_store *s);
uint64_t nwb__tel_store_unstored(const struct nwb__tel_store *s);

/** 1 when opening cut something back, dropped records, derived or converted. */
int nwb__tel_store_recovered(const struct nwb__tel_store *s);

/** Bytes of memory @p s holds. */
size_t nwb__tel_store_memory(const struct nwb__tel_store *s);

/*
 * Acknowledge one upload: its zstd frame @p z (@p zlen bytes; NULL: not stored) is appended to
 * the stream and made durable, then its record @p rec (seq, raw_len, frames, events, flags;
 * offset, length and the stored flag are set here). On failure both files are as they were.
 * Returns 0, NWB_ETOOBIG (NWB__TEL_INDEX_MAX records), -ENOMEM or a write error.
 */
int nwb__tel_store_append(struct nwb__tel_store *s, const uint8_t *z, size_t zlen,
                          struct nwb__tel_rec *rec);

/*
 * The next record from index *@p from on whose frames include @p frame (uploads in the order
 * they were acknowledged), advancing *@p from past it; NULL when there is none.
 */
const struct nwb__tel_rec *nwb__tel_store_find_frame(const struct nwb__tel_store *s, uint64_t frame,
                                                     uint32_t *from);

/*
 * The decompressed bytes of the stored upload @p r in a nwb_malloc'd *@p raw (owned by the
 * caller). -ENOENT for an upload that was not stored; else nwb_tel_unzstd()'s codes or a read
 * error, with a static reason in *@p why.
 */
int nwb__tel_store_read(const struct nwb__tel_store *s, const struct nwb__tel_rec *r,
                        const struct nwb__tel_ingest_limits *lim, uint8_t **raw, size_t *len,
                        const char **why);

/*
 * Read-only access for a reader outside the run's lane (the ClickHouse forwarder), which
 * only ever reads what an acknowledged upload left: record @p i of the telemetry.index open
 * as @p index_fd into @p r. Returns 0; 1 when there is no whole, valid record @p i (past the
 * end, or torn or damaged: the next open of the store drops it); NWB_EPROTO when the header
 * is not one this server writes; or a negated errno.
 */
int nwb__tel_index_record_at(int index_fd, uint32_t i, struct nwb__tel_rec *r);

/* nwb__tel_store_read() of the telemetry.nwbs.zst open as @p stream_fd. */
int nwb__tel_upload_read(int stream_fd, const struct nwb__tel_rec *r,
                         const struct nwb__tel_ingest_limits *lim, uint8_t **raw, size_t *len,
                         const char **why);

/* A run in use: its storage, report state and upload outcomes. Fields are the holder's
 * between nwb__tel_cache_acquire() and _release(). */
struct nwb__tel_run {
    char dir[NWB__TEL_PATH_MAX]; /* the run's directory */
    struct nwb__tel_store *store;
    nwb_tel_report_state_t *state;
    nwb_tel_ingest_summary_t ingest; /* telemetry.ingest.log, kept as it is appended */
    int broken; /* the state no longer matches the files: rebuilt at the next acquire */
};

/**
 * Rewrite run->dir/telemetry.json from the run's state (temporary file, fsync, rename), names
 * decoded with @p names (may be NULL). Returns 0 or a negative code.
 */
int nwb__tel_report_write(const struct nwb__tel_run *run, const nwb_namesym_table_t *names);

#endif /* NWB_SERVER_TEL_RUN_INT_H */
