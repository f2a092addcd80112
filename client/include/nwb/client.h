/* SPDX-License-Identifier: MIT */
/*
 * nwb/client.h - the logger client a game or tool creates once at start-up.
 *
 * nwb_client_create() starts one worker thread and registers the client as
 * the current logger, so every NWB_LOGGER_* call (nwb/log.h) lands in it.
 * Producing threads copy raw arguments into their own bounded ring; the
 * worker formats, batches and either POSTs to nwb-logserver (server mode) or
 * writes a per-run file and the console (standalone mode).
 *
 * Threading: create/destroy/flush from any one thread; logging from any
 * thread. The client never aborts, never blocks a producing thread on the
 * network, and never grows without bound: when a ring is full it drops (or
 * blocks up to a timeout, if asked) and counts, and the count appears in the
 * log as its own line where the gap happened.
 */
#ifndef NWB_CLIENT_H
#define NWB_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/common.h"
#include "nwb/log.h"
#include "nwb/log_batch.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nwb_client nwb_client_t; /* opaque */

typedef enum {
    /* Server mode when a server is configured explicitly ($NWB_LOGSERVER or
     * --logserver=) or answers at the default address at start-up (or was
     * launched, see launch_server); standalone otherwise. */
    NWB_CLIENT_MODE_AUTO = 0,
    NWB_CLIENT_MODE_SERVER = 1,     /* always the server; keep and retry while it is down */
    NWB_CLIENT_MODE_STANDALONE = 2, /* never the network: file + console */
} nwb_client_mode_t;

typedef enum {
    NWB_CLIENT_FULL_DROP = 0,  /* a full ring drops the record and counts it */
    NWB_CLIENT_FULL_BLOCK = 1, /* wait up to block_timeout_us for space, then drop */
} nwb_client_full_policy_t;

/** Client settings. Strings are borrowed during nwb_client_create() only (copied). */
typedef struct nwb_client_config {
    const char *program;        /* NULL: the executable's file name */
    const char *run_id;         /* NULL: 16 random hex digits */
    int mode;                   /* nwb_client_mode_t */
    const char *server;         /* "HOST:PORT"; NULL: $NWB_LOGSERVER, else 127.0.0.1:7650 */
    const char *log_dir;        /* standalone output root; NULL: $NWB_LOG_DIR, else ./nwb-logs */
    const char *spool_dir;      /* unacknowledged batches; NULL: <log_dir>/spool */
    size_t ring_bytes;          /* per producing thread; rounded up to a power of two */
    int full_policy;            /* nwb_client_full_policy_t */
    unsigned block_timeout_us;  /* for NWB_CLIENT_FULL_BLOCK */
    int console;                /* standalone: also write lines to stderr */
    size_t memory_bytes;        /* unacknowledged batches kept in memory before the spool */
    size_t spool_bytes;         /* spool file cap; beyond it the oldest batches drop (counted) */
    size_t batch_bytes;         /* a batch is sent when it reaches this size ... */
    unsigned flush_interval_ms; /* ... or when its oldest record is this old */
    int launch_server;          /* start nwb-logserver when none answers (AUTO/SERVER) */
    int detach_server;          /* leave a launched server running at exit */
    const char *server_exe;     /* NULL: next to the executable, then $PATH */
    const char *token;          /* bearer token for the server; NULL: $NWB_LOGSERVER_TOKEN */
} nwb_client_config_t;

#define NWB_CLIENT_CONFIG_INIT                                                                     \
    {                                                                                              \
        NULL, NULL, NWB_CLIENT_MODE_AUTO, NULL, NULL, NULL, 256u * 1024u, NWB_CLIENT_FULL_DROP,    \
            1000u, 1, 8u * 1024u * 1024u, 64u * 1024u * 1024u, 64u * 1024u, 20u, 0, 0, NULL, NULL  \
    }

/**
 * Apply a tool's command line: removes "--no-logserver" (standalone) and
 * "--logserver=HOST:PORT" (server mode at that address) from @p argv, shifting
 * the rest down and updating @p *argc. @p cfg borrows strings from argv.
 * Returns 0, or NWB_ECONFIG with a message in @p errbuf for a malformed value.
 */
NWB_API int nwb_client_config_args(nwb_client_config_t *cfg, int *argc, char **argv, char *errbuf,
                                   size_t errlen);

/**
 * Create the client, start its worker and register it as the current logger.
 * On success stores it in @p *out and returns 0; the caller owns it and must
 * call nwb_client_destroy(). On failure returns a negative code, writes a
 * reason to @p errbuf (may be NULL), leaves @p *out NULL and nothing running.
 * At most one client is live per process: while one is, create fails with
 * NWB_ECONFIG. @p cfg may be NULL (NWB_CLIENT_CONFIG_INIT). docs/client.md
 * lists every field's bounds and the environment variables.
 */
NWB_API int nwb_client_create(const nwb_client_config_t *cfg, nwb_client_t **out, char *errbuf,
                              size_t errlen);

/**
 * Wait until everything logged before this call is written (standalone),
 * acknowledged by the server, or spooled; at most @p timeout_ms. Returns 0, or
 * NWB_ETIMEOUT. Never call from a signal handler. NULL returns 0.
 */
NWB_API int nwb_client_flush(nwb_client_t *client, unsigned timeout_ms);

/**
 * Unregister, drain every ring, deliver (or spool) what is left, join the
 * worker, then close files and stop a server launched for this run (unless
 * detached). Nothing accepted before this call is lost. Threads may keep
 * logging meanwhile: their later calls go to stderr. NULL is a no-op.
 */
NWB_API void nwb_client_destroy(nwb_client_t *client);

/**
 * Tell the client that the program's start-up failed: a server it launched
 * for this run is then stopped by nwb_client_destroy() even if detach_server
 * was asked for. NULL is a no-op.
 */
NWB_API void nwb_client_startup_failed(nwb_client_t *client);

/** Counters; each is monotonic over the client's life. */
typedef struct nwb_client_stats {
    uint64_t records_accepted; /* taken into a ring */
    uint64_t records_dropped;  /* ring full (or blocked past the timeout) */
    uint64_t records_written;  /* standalone: written to the file; server: acknowledged */
    uint64_t batches_sent;     /* POSTs answered 200 */
    uint64_t batches_resent;   /* retries after a failure */
    uint64_t batches_spooled;  /* written to the spool file */
    uint64_t batches_dropped;  /* spool cap reached: oldest dropped */
    uint64_t write_errors;     /* file writes that failed */
    uint64_t connects;         /* TCP connections opened */
} nwb_client_stats_t;

NWB_API void nwb_client_stats_get(nwb_client_t *client, nwb_client_stats_t *out);

/** 1 when the client talks to a server, 0 when standalone. */
NWB_API int nwb_client_is_server_mode(const nwb_client_t *client);

/** The run id (16 hex digits) and program name in use. Borrowed; valid until destroy. */
NWB_API const char *nwb_client_run_id(const nwb_client_t *client);
NWB_API const char *nwb_client_program(const nwb_client_t *client);

/** The server address in use ("HOST:PORT"), or NULL in standalone mode. */
NWB_API const char *nwb_client_server(const nwb_client_t *client);

/**
 * POST @p len bytes of @p body (borrowed) to @p path on this client's server,
 * with the run's X-NWB-Program and X-NWB-Run headers, X-NWB-Seq @p seq, and
 * Content-Type / Content-Encoding when not NULL, on a connection of its own.
 * Blocking, on the calling thread, bounded by @p timeout_ms in all: for
 * uploader threads (telemetry), never a game thread. Returns the HTTP status
 * (> 0), a negated errno or NWB_ETIMEOUT when no answer came, or NWB_ECONFIG
 * in standalone mode or for a malformed path or header value.
 */
NWB_API int nwb_client_post(nwb_client_t *client, const char *path, const void *body, size_t len,
                            const char *content_type, const char *content_encoding, uint64_t seq,
                            unsigned timeout_ms);

/**
 * A rendered log line, handed to the tap on the client's worker thread after the line went to
 * its output (nwb_client_set_line_tap). @p rec and its strings are valid during the call only.
 * The tap must not block and must not log.
 */
typedef void (*nwb_client_line_tap_fn)(void *ctx, const nwb_log_record_t *rec);

/**
 * Give every rendered line to @p fn (NULL: stop). Set it before the lines it should see are
 * logged; after a change the worker may still call the previous tap for the line in hand, so
 * keep the old @p ctx alive until nwb_client_flush() returns. The telemetry recorder uses it
 * (nwb_tel_client_capture_logs) so lines become textLog events without formatting twice.
 */
NWB_API void nwb_client_set_line_tap(nwb_client_t *client, nwb_client_line_tap_fn fn, void *ctx);

/**
 * Standalone mode: the run's directory, <log_dir>/runs/<program>_<YYYYmmdd-HHMMSS>_<run>,
 * where log.txt (and telemetry.nwbs) go. NULL in server mode. Borrowed; valid until destroy.
 */
NWB_API const char *nwb_client_run_dir(const nwb_client_t *client);

#ifdef __cplusplus
}
#endif

#endif /* NWB_CLIENT_H */
