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
 * NWB_SERVER_OPTIONS below gives each field's default and range.
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
    const char *symbols_dir;        /* symbol files by build id; NULL: <out_dir>/symbols */
    size_t symbols_max_bytes;       /* POST /v1/symbols body; beyond: 413 */
    const char *symbolizer;         /* NULL: nwb-symbolize beside the server's executable */
    unsigned symbolize_timeout_ms;  /* one crash's symbolisation, wall clock; then killed */
    size_t symbolize_memory_bytes;  /* its address space (RLIMIT_AS); 0 = no cap */
    unsigned symbolize_cpu_s;       /* its CPU time (RLIMIT_CPU); 0 = no cap */
    const char *debuginfod_urls;    /* space-separated debuginfod servers; NULL: none */
    const char *debuginfod_cache;   /* their cache; NULL: <symbols_dir>/.debuginfod-cache */
    unsigned debuginfod_timeout_ms; /* all of one crash's lookups; at most half the timeout */
    size_t telemetry_run_max_bytes; /* one run's stored telemetry stream; past it: not stored */
    unsigned telemetry_cache_runs;  /* runs whose report state stays in memory */
    size_t telemetry_cache_bytes;   /* the memory of those states */
    size_t max_header_bytes;        /* request line + header lines; beyond: 431 */
    unsigned max_headers;           /* header fields per request; beyond: 431 */
    size_t max_body_bytes;          /* beyond: 413 */
    unsigned request_timeout_ms;    /* first byte to last body byte; beyond: 408 */
    unsigned idle_timeout_ms;       /* keep-alive connection with no request: closed */
    unsigned max_connections;       /* beyond: 503 and close */
    unsigned queue_max_jobs;        /* log jobs queued or being written; beyond: stop reading */
    size_t max_buffered_bytes;      /* request bodies held in memory; beyond: wait */
    unsigned max_open_runs;         /* run directories kept open by the log worker */
    unsigned run_live_s;            /* GET /v1/runs: live while the last batch or upload is newer */
    int handle_signals;             /* 1: SIGINT/SIGTERM shut down, SIGHUP reloads name symbols */
    const char *token_file;         /* NULL: no token; required for a non-loopback bind_addr */
    const char
        *forward_clickhouse; /* NULL: no forwarding; else http[s]://HOST:PORT/?database=NAME */
    const char *forward_credentials_file; /* USER:PASSWORD for it, --token-file's rules */
    const char *forward_ca_file;          /* https: PEM CAs trusted instead of the system's */
    unsigned events_max_streams;          /* GET /v1/events streams open at once; beyond: 429 */
    size_t events_max_unsent_bytes; /* one stream's bytes not yet taken by its reader: cut off */
    unsigned events_keepalive_ms;   /* a ": keepalive" comment on every stream this often */
} nwb_server_config_t;

/*
 * The command line, one row per option: the one source of the defaults
 * (NWB_SERVER_CONFIG_INIT), the parser, the ranges nwb_server_create()
 * checks, and --help (nwb_server_usage()); a test holds docs/operations.md
 * to it.
 *   X(flag, field, kind, default, min, max, value name, help)
 * kind: BIND, STR, TOKEN, NAMESYM (strings; default NULL: none) or INT,
 * UINT, SIZE (numbers in min..max, the field's type int, unsigned, size_t).
 */
#define NWB_SERVER_OPTIONS(X)                                                                      \
    X("--bind", bind_addr, BIND, "127.0.0.1", 0, 0, "ADDR",                                        \
      "listen address, an IPv4 or IPv6 literal; one outside 127.0.0.0/8 and ::1 needs "            \
      "--token-file")                                                                              \
    X("--port", port, INT, 7650, 0, 65535, "N", "listen port; 0 picks a free one")                 \
    X("--out", out_dir, STR, "./nwb-logs", 0, 0, "DIR", "output root, created when missing")       \
    X("--token-file", token_file, TOKEN, NULL, 0, 0, "FILE",                                       \
      "every request needs Authorization: Bearer <token>, the token being FILE's content "         \
      "(16..255 visible ASCII bytes, one trailing newline ignored; FILE not accessible by "        \
      "group or others); else 401")                                                                \
    X("--namesym-dir", namesym_dirs, NAMESYM, NULL, 0, 0, "DIR",                                   \
      "load .namesym sidecars from DIR; repeatable, at most 16; replaces the default (the "        \
      "executable's folder)")                                                                      \
    X("--crash-retain-packages", crash_retain_packages, UINT, 256u, 0, 1000000, "N",               \
      "extracted crash packages kept; 0 = all")                                                    \
    X("--crash-retain-raw", crash_retain_raw, UINT, 256u, 0, 1000000, "N",                         \
      "raw crash archives kept; 0 = all")                                                          \
    X("--crash-retain-invalid", crash_retain_invalid, UINT, 64u, 0, 1000000, "N",                  \
      "invalid crash archives kept; 0 = all")                                                      \
    X("--crash-max-archive-bytes", crash_max_archive_bytes, SIZE, (size_t)64u << 20, 1,            \
      1073741824, "N", "POST /v1/crash body, bytes; beyond: 413")                                  \
    X("--crash-max-entries", crash_max_entries, UINT, 4096u, 1, 1000000, "N",                      \
      "entries read from one archive")                                                             \
    X("--crash-max-path-bytes", crash_max_path_bytes, UINT, 256u, 1, 4096, "N",                    \
      "bytes of one entry's path")                                                                 \
    X("--crash-max-path-depth", crash_max_path_depth, UINT, 8u, 1, 64, "N",                        \
      "folders in one entry's path, the file included")                                            \
    X("--crash-max-entry-bytes", crash_max_entry_bytes, SIZE, (size_t)64u << 20, 1, 1ull << 40,    \
      "N", "bytes extracted for one file")                                                         \
    X("--crash-max-total-bytes", crash_max_total_bytes, SIZE, (size_t)256u << 20, 1, 1ull << 40,   \
      "N", "bytes extracted for one package")                                                      \
    X("--crash-max-ratio", crash_max_ratio, UINT, 200u, 1, 1000000, "N",                           \
      "extracted / archive bytes, checked once 1 MiB is extracted")                                \
    X("--crash-max-queue", crash_max_queue, UINT, 256u, 1, 65536, "N",                             \
      "archives stored, not yet extracted; beyond: 503")                                           \
    X("--symbols-dir", symbols_dir, STR, NULL, 0, 0, "DIR",                                        \
      "symbol files by GNU build id, .build-id/ab/cdef...[.debug] (default OUT/symbols)")          \
    X("--symbols-max-bytes", symbols_max_bytes, SIZE, (size_t)512u << 20, 1, 1ull << 40, "N",      \
      "POST /v1/symbols body (one ELF file), bytes; beyond: 413")                                  \
    X("--symbolizer", symbolizer, STR, NULL, 0, 0, "FILE",                                         \
      "the nwb-symbolize executable run per crash; default the one beside nwb-logserver")          \
    X("--symbolize-timeout-ms", symbolize_timeout_ms, UINT, 60000u, 1, 3600000, "N",               \
      "one crash's symbolisation, wall clock; beyond it the symboliser is killed")                 \
    X("--symbolize-memory-bytes", symbolize_memory_bytes, SIZE, (size_t)1u << 30, 0, 1ull << 40,   \
      "N", "the symboliser's address space (RLIMIT_AS); 0 = no cap")                               \
    X("--symbolize-cpu-s", symbolize_cpu_s, UINT, 30u, 0, 3600, "N",                               \
      "the symboliser's CPU seconds (RLIMIT_CPU); 0 = no cap")                                     \
    X("--debuginfod-urls", debuginfod_urls, STR, NULL, 0, 0, "URLS",                               \
      "debuginfod servers asked for symbols --symbols-dir lacks, space separated (default none; "  \
      "DEBUGINFOD_URLS is not read)")                                                              \
    X("--debuginfod-cache", debuginfod_cache, STR, NULL, 0, 0, "DIR",                              \
      "their downloads' cache (default SYMBOLS/.debuginfod-cache, SYMBOLS being --symbols-dir)")   \
    X("--debuginfod-timeout-ms", debuginfod_timeout_ms, UINT, 20000u, 1, 3600000, "N",             \
      "one crash's debuginfod lookups in all, at most half of --symbolize-timeout-ms; 10 s per "   \
      "module at most")                                                                            \
    X("--telemetry-run-max-bytes", telemetry_run_max_bytes, SIZE, (size_t)1u << 30, 1, 1ull << 42, \
      "N",                                                                                         \
      "stored telemetry of one run (telemetry.nwbs.zst), bytes; past it the report keeps "         \
      "updating and the uploads are no longer stored")                                             \
    X("--telemetry-cache-runs", telemetry_cache_runs, UINT, 64u, 1, 65536, "N",                    \
      "runs whose telemetry report state is kept in memory between uploads")                       \
    X("--telemetry-cache-bytes", telemetry_cache_bytes, SIZE, (size_t)512u << 20, 1, 1ull << 40,   \
      "N", "memory for those report states, bytes; the run in use always stays")                   \
    X("--max-header-bytes", max_header_bytes, SIZE, (size_t)16u << 10, 256, 1048576, "N",          \
      "request line + headers, bytes; beyond: 431")                                                \
    X("--max-headers", max_headers, UINT, 64u, 1, 1024, "N",                                       \
      "header fields per request; beyond: 431")                                                    \
    X("--max-body-bytes", max_body_bytes, SIZE, (size_t)16u << 20, 1, 1073741824, "N",             \
      "request body, bytes; beyond: 413")                                                          \
    X("--request-timeout-ms", request_timeout_ms, UINT, 10000u, 1, 86400000, "N",                  \
      "a request's first byte to its last; beyond: 408")                                           \
    X("--idle-timeout-ms", idle_timeout_ms, UINT, 60000u, 1, 86400000, "N",                        \
      "a keep-alive connection without a request is closed")                                       \
    X("--max-connections", max_connections, UINT, 4096u, 1, 65536, "N",                            \
      "open connections; beyond: 503 and close")                                                   \
    X("--queue-max-jobs", queue_max_jobs, UINT, 1024u, 1, 65536, "N",                              \
      "log jobs queued or being written; beyond: reading pauses")                                  \
    X("--max-buffered-bytes", max_buffered_bytes, SIZE, (size_t)256u << 20, 1, 1ull << 40, "N",    \
      "request bodies held in memory, bytes, at least --max-body-bytes; beyond: requests wait")    \
    X("--max-open-runs", max_open_runs, UINT, 256u, 1, 65536, "N", "run logs kept open")           \
    X("--run-live-s", run_live_s, UINT, 30u, 1, 86400, "N",                                        \
      "a run is live (GET /v1/runs) while its last log batch or telemetry upload is at most N "    \
      "seconds old")                                                                               \
    X("--events-max-streams", events_max_streams, UINT, 64u, 1, 4096, "N",                         \
      "GET /v1/events streams open at once; beyond: 429")                                          \
    X("--events-max-unsent-bytes", events_max_unsent_bytes, SIZE, (size_t)1u << 20, 4096,          \
      1073741824, "N", "an event stream whose reader leaves more unsent bytes is cut off")         \
    X("--events-keepalive-ms", events_keepalive_ms, UINT, 20000u, 10, 3600000, "N",                \
      "a keep-alive comment on every event stream this often, in ms")                              \
    X("--forward-clickhouse", forward_clickhouse, STR, NULL, 0, 0, "URL",                          \
      "also insert every run's log lines into ClickHouse, http[s]://HOST:PORT/?database=NAME "     \
      "(schema created when missing; https verifies the server's certificate)")                    \
    X("--forward-credentials", forward_credentials_file, STR, NULL, 0, 0, "FILE",                  \
      "USER:PASSWORD for --forward-clickhouse (HTTP basic auth), with --token-file's rules")       \
    X("--forward-ca-file", forward_ca_file, STR, NULL, 0, 0, "FILE",                               \
      "PEM CA certificates an https --forward-clickhouse must chain to, instead of the system's")

/* NWB_SERVER_CONFIG_INIT's part of a row: a designated initialiser of its field. */
#define NWB_SERVER_OPT_INIT_(flag, field, kind, def, min, max, meta, help)                         \
    NWB_SERVER_OPT_INIT_##kind(field, def)
#define NWB_SERVER_OPT_INIT_BIND(field, def)    .field = (def),
#define NWB_SERVER_OPT_INIT_STR(field, def)     .field = (def),
#define NWB_SERVER_OPT_INIT_TOKEN(field, def)   .field = (def),
#define NWB_SERVER_OPT_INIT_NAMESYM(field, def) /* the list starts empty */
#define NWB_SERVER_OPT_INIT_INT(field, def)     .field = (def),
#define NWB_SERVER_OPT_INIT_UINT(field, def)    .field = (def),
#define NWB_SERVER_OPT_INIT_SIZE(field, def)    .field = (def),

/* The defaults: `nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;` (every option's default,
 * no --namesym-dir, signals not handled). C only: the designators are not in field order. */
#define NWB_SERVER_CONFIG_INIT                                                                     \
    {                                                                                              \
        .handle_signals = 0, NWB_SERVER_OPTIONS(NWB_SERVER_OPT_INIT_)                              \
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

/** The --help text: every NWB_SERVER_OPTIONS row with its default and range. Built once, on
 * the first call (any thread); static storage. */
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
