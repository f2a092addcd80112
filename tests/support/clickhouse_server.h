/* SPDX-License-Identifier: MIT */
/*
 * clickhouse_server.h - a real clickhouse-server (Debian's binary) for the forwarding tests:
 * started on free 127.0.0.1 ports with a temporary config.xml, users.xml and data folder,
 * ready once GET /ping answers, stopped with a signal, restarted on the same ports and data,
 * and removed with its folder. Queries go over its HTTP interface (HTTP/1.0, read to EOF).
 */
#ifndef NWB_TEST_CLICKHOUSE_SERVER_H
#define NWB_TEST_CLICKHOUSE_SERVER_H

#include <stddef.h>
#include <sys/types.h>

/** The binary the tests run: $NWB_TEST_CLICKHOUSE_SERVER, else this (Debian 12's package). */
#define NWB_TEST_CLICKHOUSE_SERVER_EXE "/usr/sbin/clickhouse-server"

/** How long start waits for GET /ping to answer "Ok.", milliseconds. */
#define NWB_TEST_CLICKHOUSE_START_MS 30000

/** A second user of the test server, with a password (the default user has none). */
#define NWB_TEST_CLICKHOUSE_USER     "nwb_writer"
#define NWB_TEST_CLICKHOUSE_PASSWORD "test-password-0123"

/** ctest's skip code for the clickhouse tests (SKIP_RETURN_CODE in tests/forward). */
#define NWB_TEST_CLICKHOUSE_SKIP 77

struct nwb_test_clickhouse {
    pid_t pid;       /* 0 while stopped */
    int http_port;   /* the HTTP interface, http://127.0.0.1:PORT/ */
    int tcp_port;    /* the native protocol (clickhouse-client) */
    int https_port;  /* the HTTPS interface (nwb_test_clickhouse_start_tls()), else 0 */
    int hold_fds[3]; /* bound, never listening: keep the ports ours across restarts */
    char dir[512];   /* config.xml, users.xml, data/, server.log */
    char exe[512];   /* the clickhouse-server binary */
};

/**
 * 1 when a clickhouse-server binary can be run here, else 0 with the reason in @p why
 * ("clickhouse-server is not installed (/usr/sbin/clickhouse-server: No such file ...)").
 */
int nwb_test_clickhouse_available(char *why, size_t cap);

/**
 * Make a fresh folder with the configuration, take two free loopback ports and start the
 * server; return once GET /ping answers (at most NWB_TEST_CLICKHOUSE_START_MS). Returns 0, or
 * -1 with everything undone (the server's own output is copied to stderr first).
 */
int nwb_test_clickhouse_start(struct nwb_test_clickhouse *ch);

/**
 * nwb_test_clickhouse_start() with the HTTPS interface too, on a third free port
 * (https://127.0.0.1:https_port/), serving the PEM certificate @p cert_file (its chain) with
 * the key @p key_file (<openSSL><server>: certificateFile and privateKeyFile, the keys 18.16
 * needs; no dhParamsFile, clients verification off). Returns 0, or -1 with everything undone.
 */
int nwb_test_clickhouse_start_tls(struct nwb_test_clickhouse *ch, const char *cert_file,
                                  const char *key_file);

/** The cluster nwb_test_clickhouse_start_shards() defines (remote_servers), and its size. */
#define NWB_TEST_CLICKHOUSE_CLUSTER    "nwb_fleet"
#define NWB_TEST_CLICKHOUSE_SHARDS_MAX 4u

/**
 * Start @p n (1..NWB_TEST_CLICKHOUSE_SHARDS_MAX) servers as nwb_test_clickhouse_start() does,
 * each one's config naming all of them as the shards (one replica each, by native port, in
 * the order of @p ch) of the cluster NWB_TEST_CLICKHOUSE_CLUSTER, so a Distributed table on
 * any of them reads all. Returns 0, or -1 with every one of them undone.
 */
int nwb_test_clickhouse_start_shards(struct nwb_test_clickhouse *ch, size_t n);

/**
 * Stop the running server with @p sig (SIGKILL for a crash, SIGTERM for a clean stop) and
 * wait for it, SIGKILL after @p timeout_ms. The folder and ports stay for a restart.
 * Returns 0, or -1 when it was not running.
 */
int nwb_test_clickhouse_stop(struct nwb_test_clickhouse *ch, int sig, int timeout_ms);

/** Start the stopped server again on the same ports and data; 0 once /ping answers, or -1. */
int nwb_test_clickhouse_restart(struct nwb_test_clickhouse *ch);

/** Kill the server if it runs, release the ports and remove the folder. NULL-safe. */
void nwb_test_clickhouse_destroy(struct nwb_test_clickhouse *ch);

/**
 * Run @p sql over HTTP: with @p body NULL the query is the POST body, else @p sql goes in
 * ?query= (percent-encoded) and @p body_len bytes of @p body follow it (INSERT data). The
 * answer's body goes to @p out (NUL-terminated, truncated to @p cap; may be NULL). Returns the
 * HTTP status, or -1 when there was no answer within 30 s.
 */
int nwb_test_clickhouse_query(const struct nwb_test_clickhouse *ch, const char *sql,
                              const void *body, size_t body_len, char *out, size_t cap);

/** The number a one-value query answers (SELECT count() ...), or -1 on any failure. */
long long nwb_test_clickhouse_count(const struct nwb_test_clickhouse *ch, const char *sql);

#endif /* NWB_TEST_CLICKHOUSE_SERVER_H */
