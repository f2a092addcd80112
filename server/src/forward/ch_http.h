/* SPDX-License-Identifier: MIT */
/*
 * ch_http.h - the forwarder's HTTP client for ClickHouse's HTTP interface: the URL it is given
 * (--forward-clickhouse), and one blocking POST at a time over a kept-alive connection, plain
 * or inside TLS for https (ch_tls.h), the answer read with llhttp (the parser the rest of nwb
 * uses). Owned by the forwarder thread.
 */
#ifndef NWB_CH_HTTP_H
#define NWB_CH_HTTP_H

#include <stddef.h>

#include "nwb/buf.h"

#include "ch_schema.h"
#include "ch_tls.h"

/** Bytes of an answer body kept (a reason or a number); the rest is read and dropped. */
#define NWB__CH_ANSWER_KEEP (64u * 1024u)

/** Send, connect and read timeout of one request, milliseconds. */
#define NWB__CH_HTTP_TIMEOUT_MS 30000

/** Bytes of the URL's host. */
#define NWB__CH_HOST_MAX 253u

struct nwb__ch_http {
    char host[NWB__CH_HOST_MAX + 1];
    int port;
    char database[NWB__CH_DB_NAME_MAX + 1];
    char auth[400];          /* "Authorization: Basic ...\r\n" or empty */
    int fd;                  /* -1: not connected */
    int https;               /* 1: the URL said https://; TLS with tls (nwb__ch_http_tls_setup()) */
    struct nwb__ch_tls *tls; /* owned; NULL until set up */
    struct nwb__ch_tls_conn *conn; /* the TLS session over fd; NULL: none */
    /* Why the last connection failed at TLS (handshake, certificate), empty when it did not:
     * the forwarder logs it and counts nwb_forward_tls_failures_total. */
    char tls_reason[NWB__CH_TLS_REASON_MAX];
};

/** The URL's default ports: ClickHouse's http_port and https_port. */
#define NWB__CH_HTTP_PORT  8123
#define NWB__CH_HTTPS_PORT 8443

/**
 * Parse @p url, "http[s]://HOST[:PORT][/][?database=NAME]" (HOST a name or IPv4 literal, or
 * [IPv6]; PORT default NWB__CH_HTTP_PORT, or NWB__CH_HTTPS_PORT for https; NAME default "nwb",
 * checked by nwb__ch_db_name_check()), into @p h (not connected; for https,
 * nwb__ch_http_tls_setup() next). Returns 0, or NWB_ECONFIG with a one-line reason in @p err.
 */
int nwb__ch_http_init(struct nwb__ch_http *h, const char *url, char *err, size_t errlen);

/**
 * For an https URL, make the TLS context (ch_tls.h: the system's trust store, or only the PEM
 * certificates of @p ca_file, borrowed, may be NULL). Returns 0, or NWB_ECONFIG with a one-line
 * reason in @p err (@p ca_file with an http URL, an unusable CA file, no OpenSSL in the build).
 */
int nwb__ch_http_tls_setup(struct nwb__ch_http *h, const char *ca_file, char *err, size_t errlen);

/**
 * Use HTTP basic authentication with @p user and @p password (borrowed for the call only).
 * Returns 0, or NWB_ECONFIG when they do not fit.
 */
int nwb__ch_http_set_credentials(struct nwb__ch_http *h, const char *user, const char *password);

/**
 * POST @p body (@p body_len bytes) to "/?query=" + @p query percent-encoded (@p query NULL:
 * the body is the query). The status goes to @p *status and the first NWB__CH_ANSWER_KEEP
 * bytes of the answer to @p answer (reset first). Returns 0 when an answer was read (any
 * status), else a negative code (connect, send, read, timeout, malformed answer) with the
 * connection closed.
 */
int nwb__ch_http_post(struct nwb__ch_http *h, const char *query, const void *body, size_t body_len,
                      int *status, nwb_buf_t *answer);

/** Close the connection (the next post reconnects). NULL-safe, idempotent. */
void nwb__ch_http_close(struct nwb__ch_http *h);

/** Close and free the TLS context: @p h can only be initialised again. NULL-safe. */
void nwb__ch_http_cleanup(struct nwb__ch_http *h);

#endif /* NWB_CH_HTTP_H */
