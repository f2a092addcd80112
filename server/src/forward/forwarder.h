/* SPDX-License-Identifier: MIT */
/*
 * forwarder.h - the ClickHouse forwarder (--forward-clickhouse): its own thread, never on the
 * ingest path, reads what the log worker appended to each run's log.txt under OUT/runs (only
 * complete lines), parses the lines back into columns and inserts them into nwb_logs in size-
 * and age-bounded batches; each run's cursor (.nwb-forward) moves only after a 200. ClickHouse
 * down, slow or refusing: the backlog is the local files, retries back off, ingest never
 * waits. docs/operations.md, "Forwarding to ClickHouse".
 */
#ifndef NWB_FORWARDER_H
#define NWB_FORWARDER_H

#include <stddef.h>
#include <stdint.h>

/** Bytes of log.txt read for one insert (at least the longest line, NWB__FWD_LINE_MAX). */
#define NWB__FWD_BATCH_BYTES (8u * 1024u * 1024u)
/** Lines of one insert. */
#define NWB__FWD_BATCH_ROWS 100000u
/** A pass over runs/ starts this often when nothing failed: a line waits about this long. */
#define NWB__FWD_PASS_MS 200u
/** Retry delay after a failed insert: doubles from the first to the last. */
#define NWB__FWD_BACKOFF_FIRST_MS 250u
#define NWB__FWD_BACKOFF_MAX_MS   30000u
/** A run's nwb_runs row is sent again while its files changed less than this long before the
 * last acknowledged pass began (file times lag the wall clock by up to a tick; rows sent
 * twice collapse). */
#define NWB__FWD_MTIME_SLACK_NS 1000000000ull
/** The crash store is scanned for nwb_crashes rows at most this often (a scan reads every
 * crash's manifest and signature). */
#define NWB__FWD_CRASH_SCAN_MS 1000u
/** Bytes of nwb_crashes rows in one insert (about 300 a crash plus its signature). */
#define NWB__FWD_CRASH_ROWS_MAX (8u * 1024u * 1024u)
/** Bytes of nwb_frames rows in one insert (about 60 a frame). */
#define NWB__FWD_FRAME_ROWS_MAX (8u * 1024u * 1024u)
/** telemetry.index records (uploads) of one run whose frames one pass forwards. */
#define NWB__FWD_FRAME_RECORDS_PER_PASS 64u

/** The forwarder thread's nice value (the rest of the server keeps its own). */
#define NWB__FWD_NICE 10
/* A full scan of runs/ at least this often (ms), beside the passes over the runs marked
 * written (nwb__forwarder_mark): the safety net for a change nobody marked. */
#define NWB__FWD_RESCAN_MS 60000u
/* The forwarder thread's name (/proc/PID/task/TID/comm), for per-thread CPU figures. */
#define NWB__FWD_THREAD_NAME "nwb-forward"

struct nwb__crash_ingest; /* crash_int.h */

struct nwb__fwd_config {
    const char *url;                   /* http[s]://HOST:PORT/?database=NAME */
    const char *user;                  /* NULL: none (ClickHouse's default user) */
    const char *password;              /* with user */
    const char *out_dir;               /* the server's --out; runs are OUT/runs/<dir> */
    const char *host;                  /* the host column; NULL: gethostname() */
    struct nwb__crash_ingest *crashes; /* nwb_crashes' source (borrowed, outlives the
                                        * forwarder); NULL: no crash rows */
    const char *ca_file;               /* https: only these PEM CAs, not the system's; NULL */
};

/** What /metrics shows (nwb_forward_*). */
struct nwb__fwd_stats {
    uint64_t records_total;     /* lines ClickHouse acknowledged */
    uint64_t bytes_total;       /* log.txt bytes they took */
    uint64_t inserts_total;     /* inserts answered 200 */
    uint64_t inserts_failed;    /* inserts refused or not answered */
    uint64_t tls_failures;      /* connections refused at TLS (handshake, certificate) */
    uint64_t lines_skipped;     /* lines the parser refused (never sent) */
    uint64_t frames_total;      /* nwb_frames rows acknowledged */
    uint64_t crash_rows_total;  /* nwb_crashes rows acknowledged (a crash once per change) */
    uint64_t bytes_behind;      /* log.txt bytes not yet acknowledged, at the last pass */
    uint64_t records_behind;    /* complete lines read but not yet acknowledged */
    double seconds_behind;      /* age of the oldest unacknowledged line, 0 when none */
    uint64_t passes_total;      /* passes done (busy or idle) */
    uint64_t full_passes_total; /* of which full scans of runs/ */
    int up;                     /* 1 when the last request was answered 200 */
};

struct nwb__forwarder;

/**
 * Check @p cfg (the URL's rules: ch_http.h) and start the thread. The schema is created at
 * its first contact with ClickHouse, not here: a server starts while ClickHouse is down.
 * Returns 0 with @p *out, or NWB_ECONFIG (reason in @p err) or a pthread error.
 */
int nwb__forwarder_start(const struct nwb__fwd_config *cfg, struct nwb__forwarder **out, char *err,
                         size_t errlen);

/** A snapshot of the counters; any thread. */
void nwb__forwarder_stats(struct nwb__forwarder *f, struct nwb__fwd_stats *out);

/**
 * Run directory @p run_dir (under runs/) was written (log lines, a telemetry upload): the
 * next pass visits it. Between full scans a pass visits only the marked runs. Loop thread
 * (any thread), cheap: a lock and a hash probe; NULL-safe.
 */
void nwb__forwarder_mark(struct nwb__forwarder *f, const char *run_dir);

/** Start a pass now (new lines were written); any thread, cheap, never blocks on I/O. */
void nwb__forwarder_wake(struct nwb__forwarder *f);

/**
 * Stop reading the crash store (before it is stopped): waits for a walk of it in progress
 * (and the inserts it makes) to end. NULL-safe; any thread.
 */
void nwb__forwarder_detach_crashes(struct nwb__forwarder *f);

/** Stop the thread (an insert in flight is finished or times out) and free. NULL-safe. */
void nwb__forwarder_stop(struct nwb__forwarder *f);

#endif /* NWB_FORWARDER_H */
