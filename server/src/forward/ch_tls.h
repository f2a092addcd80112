/* SPDX-License-Identifier: MIT */
/*
 * ch_tls.h - TLS for the forwarder's ClickHouse connection (an https --forward-clickhouse URL)
 * with OpenSSL: the client context (TLS 1.2 at least, peer verification always on, the system
 * trust store or the PEM CA certificates of --forward-ca-file) and one blocking TLS session
 * over a connected socket whose send and receive timeouts bound every call. ch_tls.c is the
 * OpenSSL build; ch_tls_none.c refuses https with a reason when nwb is built without it.
 */
#ifndef NWB_CH_TLS_H
#define NWB_CH_TLS_H

#include <stddef.h>
#include <sys/types.h>

/** Bytes of a --forward-ca-file (Debian's whole ca-certificates bundle is about 220 KiB). */
#define NWB__CH_CA_FILE_MAX (4u * 1024u * 1024u)
/** Bytes of a TLS failure's reason (OpenSSL's verification or error text, with what failed). */
#define NWB__CH_TLS_REASON_MAX 256u

struct nwb__ch_tls;      /* the client context, shared by the connections of one forwarder */
struct nwb__ch_tls_conn; /* one TLS session over a socket */

/**
 * Make the context into @p *out (returned-owned, nwb__ch_tls_destroy()): verification of the
 * server's certificate against the system trust store, or, with @p ca_file (borrowed; may be
 * NULL), only against the PEM certificates in it (at most NWB__CH_CA_FILE_MAX bytes, at least
 * one certificate). Returns 0, or NWB_ECONFIG with a one-line reason in @p err.
 */
int nwb__ch_tls_create(const char *ca_file, struct nwb__ch_tls **out, char *err, size_t errlen);

/**
 * Add the PEM certificates of @p pem (@p len bytes, borrowed; any bytes) to @p t's trust
 * store. Returns the number added (at least 1), or NWB_ECONFIG with a one-line reason in
 * @p err (no certificate, a malformed one, too large). The parser --forward-ca-file goes
 * through (tests/fuzz/fuzz_ch_ca_pem.c).
 */
int nwb__ch_tls_add_ca_pem(struct nwb__ch_tls *t, const void *pem, size_t len, char *err,
                           size_t errlen);

/** Free the context (after every connection made from it). NULL-safe. */
void nwb__ch_tls_destroy(struct nwb__ch_tls *t);

/**
 * The TLS handshake over the connected socket @p fd (borrowed: closed by the caller after
 * nwb__ch_tls_close()) with the server named @p host (a name: sent as SNI and matched against
 * the certificate's names; an IP literal: matched against its IP addresses). Returns 0 with
 * @p *out, or a negative code with a one-line reason in @p reason (the certificate
 * verification's own words from OpenSSL, "certificate verify failed: ..."): UV_ETIMEDOUT when
 * the socket timed out, else NWB_EPROTO.
 */
int nwb__ch_tls_connect(struct nwb__ch_tls *t, int fd, const char *host,
                        struct nwb__ch_tls_conn **out, char *reason, size_t cap);

/** Send all @p len bytes. 0, or UV_ETIMEDOUT, UV_EPIPE or NWB_EPROTO. */
int nwb__ch_tls_send(struct nwb__ch_tls_conn *c, const void *data, size_t len);

/** Receive up to @p cap bytes: the count, 0 at the end of the stream, or a negative code. */
ssize_t nwb__ch_tls_recv(struct nwb__ch_tls_conn *c, void *buf, size_t cap);

/** End the session (no close_notify wait) and free it; the socket stays open. NULL-safe. */
void nwb__ch_tls_close(struct nwb__ch_tls_conn *c);

#endif /* NWB_CH_TLS_H */
