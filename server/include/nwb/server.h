/* SPDX-License-Identifier: MIT */
/*
 * nwb/server.h - nwb-logserver as a library: its settings, the command-line
 * parser, and a server that runs inside any libuv loop (log, telemetry and
 * crash ingest, name-symbol decoding).
 *
 * Threading: every function except nwb_server_request_stop() must be called
 * on the thread running the loop given to nwb_server_create().
 */
#ifndef NWB_SERVER_H
#define NWB_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "nwb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nwb_server nwb_server_t; /* opaque */

/* Most --namesym-dir options accepted. */
#define NWB_SERVER_NAMESYM_DIRS_MAX 16u

/**
 * Server settings; docs/operations.md lists each with its flag. Strings are
 * borrowed until nwb_server_create() returns (the server copies them).
 */
typedef struct nwb_server_config {
    const char *bind_addr; /* IPv4 or IPv6 literal */
    int port;              /* 0 lets the kernel choose */
    const char *out_dir;   /* output root; created when missing */
    const char *namesym_dirs[NWB_SERVER_NAMESYM_DIRS_MAX];
    unsigned namesym_dir_count;     /* 0: the executable's own folder; else only these */
    unsigned crash_retain_packages; /* 0 = never prune */
    unsigned crash_retain_raw;
    unsigned crash_retain_invalid;
    size_t crash_max_archive_bytes; /* POST /v1/crash body; beyond: 413 */
    unsigned crash_max_entries;     /* archive entries read */
    unsigned crash_max_path_bytes;  /* one entry's path */
    unsigned crash_max_path_depth;  /* folders in one path, the file included (at most 64) */
    size_t crash_max_entry_bytes;   /* written for one file */
    size_t crash_max_total_bytes;   /* written for one package */
    unsigned crash_max_ratio;       /* written / archive bytes, once past 1 MiB written */
    unsigned crash_max_queue;       /* stored, not yet extracted; beyond: 503 */
    size_t max_header_bytes;        /* request line + header lines; beyond: 431 */
    unsigned max_headers;           /* header fields per request; beyond: 431 */
    size_t max_body_bytes;          /* beyond: 413 */
    unsigned request_timeout_ms;    /* first byte to last body byte; beyond: 408 */
    unsigned idle_timeout_ms;       /* keep-alive connection with no request: closed */
    unsigned max_connections;       /* beyond: 503 and close */
    unsigned queue_max_jobs;        /* log jobs queued or being written; beyond: stop reading */
    size_t max_buffered_bytes;      /* request bodies held in memory; beyond: wait */
    unsigned max_open_runs;         /* run directories kept open by the log worker */
    int handle_signals;             /* 1: SIGINT/SIGTERM shut down, SIGHUP reloads name symbols */
    const char *token_file;         /* NULL: no token; required for a non-loopback bind_addr */
} nwb_server_config_t;

#define NWB_SERVER_CONFIG_INIT                                                                     \
    {                                                                                              \
        "127.0.0.1", 7650, "./nwb-logs", {NULL}, 0u, 256u, 256u, 64u, 64u << 20, 4096u, 256u, 8u,  \
            (size_t)64u << 20, (size_t)256u << 20, 200u, 256u, 16u * 1024u, 64u,                   \
            16u * 1024u * 1024u, 10000u, 60000u, 4096u, 1024u, 256u * 1024u * 1024u, 256u, 0, NULL \
    }

/* nwb_server_config_parse() results besides 0 and NWB_ECONFIG. */
#define NWB_SERVER_ARGS_HELP    1
#define NWB_SERVER_ARGS_VERSION 2

/**
 * Apply a command line (argv[0] is skipped) to @p cfg, which should start as
 * NWB_SERVER_CONFIG_INIT. Accepts "--opt value" and "--opt=value". Returns 0,
 * NWB_SERVER_ARGS_HELP / NWB_SERVER_ARGS_VERSION when asked for those, or
 * NWB_ECONFIG with a one-line reason in @p errbuf (unknown option, missing or
 * bad value). @p cfg borrows strings from @p argv.
 */
NWB_API int nwb_server_config_parse(nwb_server_config_t *cfg, int argc, char **argv, char *errbuf,
                                    size_t errlen);

/** The --help text (static). */
NWB_API const char *nwb_server_usage(void);

/**
 * Load the --token-file token, create the output root, start the log worker,
 * bind and listen. On success stores the server in @p *out and returns 0; the
 * caller owns it (see nwb_server_destroy()). On failure returns a negative
 * code with a reason in @p errbuf, leaves @p *out NULL and nothing running
 * (run the loop once more to let closed handles finish, as always with
 * libuv). A setting that cannot be used is NWB_ECONFIG, a token file
 * included whatever the cause: the reason then names the file and the cause
 * (the errno's text and name, the mode, the length).
 */
NWB_API int nwb_server_create(uv_loop_t *loop, const nwb_server_config_t *cfg, nwb_server_t **out,
                              char *errbuf, size_t errlen);

/** The bound port (the real one when the config asked for 0). */
NWB_API int nwb_server_port(const nwb_server_t *srv);

/**
 * Write "HOST:PORT" (IPv6 as "[::1]:PORT") into @p buf; returns @p buf. Used
 * for the "listening on http://HOST:PORT" line.
 */
NWB_API const char *nwb_server_address(const nwb_server_t *srv, char *buf, size_t len);

/**
 * Begin a graceful stop: stop accepting, close idle connections and those
 * still receiving a request, answer every request whose body is complete,
 * drain and join the log worker, close files and every handle. The loop's
 * uv_run() returns once all of that is done. Idempotent; NULL is a no-op.
 */
NWB_API void nwb_server_shutdown(nwb_server_t *srv);

/**
 * nwb_server_shutdown() from any thread (or a signal handler): wakes the
 * loop. Valid until the loop's uv_run() returns. NULL is a no-op.
 */
NWB_API void nwb_server_request_stop(nwb_server_t *srv);

/**
 * Load the .namesym sidecars again (what SIGHUP does when the server handles
 * signals): read on the thread pool, then switched to between two batches,
 * so records queued before decode with the old table and later ones with
 * the new. A reload asked for during one runs after it. Loop thread.
 */
NWB_API void nwb_server_namesym_reload(nwb_server_t *srv);

/**
 * Free the server after nwb_server_shutdown() completed and uv_run()
 * returned. Returns 0, or NWB_ECONFIG (and frees nothing) when the shutdown
 * has not finished. NULL is a no-op returning 0.
 */
NWB_API int nwb_server_destroy(nwb_server_t *srv);

#ifdef __cplusplus
}
#endif

#endif /* NWB_SERVER_H */
