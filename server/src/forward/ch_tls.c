/* SPDX-License-Identifier: MIT */
/*
 * ch_tls.c - the OpenSSL build of ch_tls.h: the verifying client context, --forward-ca-file's
 * PEM certificates read with a bound, and blocking TLS sessions whose writes never raise
 * SIGPIPE in an embedding process that did not ignore it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <uv.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/file_io.h"

#include "ch_tls.h"

struct nwb__ch_tls {
    SSL_CTX *ctx;
};

struct nwb__ch_tls_conn {
    SSL *ssl;
    int broken; /* a fatal error happened: no close_notify */
};

/* OpenSSL writes with write(2), not send(MSG_NOSIGNAL): a ClickHouse that closed the
 * connection would be a SIGPIPE. The signal is blocked for the call and one it raised is
 * taken before the old mask comes back (the way curl's sigpipe guard does it). */
struct sigpipe_guard {
    sigset_t old;
    int was_pending;
};

static void sigpipe_block(struct sigpipe_guard *g)
{
    sigset_t pipe_set, pending;

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &g->old);
}

static void sigpipe_restore(const struct sigpipe_guard *g)
{
    sigset_t pipe_set, pending;

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    if (!g->was_pending && sigismember(&pending, SIGPIPE)) {
        const struct timespec now = {0, 0};

        (void)sigtimedwait(&pipe_set, NULL, &now);
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* The first queued OpenSSL error as text, or @p fallback; the queue is emptied. */
static const char *ssl_error_text(char *buf, size_t cap, const char *fallback)
{
    const unsigned long e = ERR_get_error();

    ERR_clear_error();
    if (e == 0) {
        snprintf(buf, cap, "%s", fallback);
    } else {
        const char *why = ERR_reason_error_string(e);

        snprintf(buf, cap, "%s", why != NULL ? why : fallback);
    }
    return buf;
}

int nwb__ch_tls_add_ca_pem(struct nwb__ch_tls *t, const void *pem, size_t len, char *err,
                           size_t errlen)
{
    X509_STORE *store = SSL_CTX_get_cert_store(t->ctx);
    BIO *bio;
    int added = 0;
    unsigned long last;

    if (len > NWB__CH_CA_FILE_MAX) {
        snprintf(err, errlen, "more than %u bytes of CA certificates", NWB__CH_CA_FILE_MAX);
        return NWB_ECONFIG;
    }
    ERR_clear_error();
    bio = BIO_new_mem_buf(pem, (int)len);
    if (bio == NULL) {
        snprintf(err, errlen, "out of memory reading the CA certificates");
        return NWB_ECONFIG;
    }
    for (;;) {
        X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);

        if (x == NULL) {
            break;
        }
        if (X509_STORE_add_cert(store, x) != 1) {
            char why[128];

            X509_free(x);
            BIO_free(bio);
            snprintf(err, errlen, "a CA certificate cannot be used: %s",
                     ssl_error_text(why, sizeof(why), "refused by OpenSSL"));
            return NWB_ECONFIG;
        }
        X509_free(x);
        added++;
    }
    BIO_free(bio);
    /* The loop ends at the first block that is not a whole certificate: past the last one
     * OpenSSL says "no start line", anything else is a malformed certificate. */
    last = ERR_peek_last_error();
    if (last != 0 &&
        !(ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE)) {
        char why[128];

        snprintf(err, errlen, "certificate %d is malformed: %s", added + 1,
                 ssl_error_text(why, sizeof(why), "unreadable PEM"));
        return NWB_ECONFIG;
    }
    ERR_clear_error();
    if (added == 0) {
        snprintf(err, errlen, "no PEM certificate (-----BEGIN CERTIFICATE-----) in it");
        return NWB_ECONFIG;
    }
    return added;
}

/* Read @p path (at most NWB__CH_CA_FILE_MAX bytes, a regular file) into its trust store. */
static int load_ca_file(struct nwb__ch_tls *t, const char *path, char *err, size_t errlen)
{
    uint8_t *data = NULL;
    size_t len = 0;
    char reason[160];
    int rc = nwb_file_read(path, NWB__CH_CA_FILE_MAX, &data, &len);

    if (rc == NWB_ENOTREG) {
        snprintf(err, errlen, "--forward-ca-file %.200s: not a regular file", path);
        return NWB_ECONFIG;
    }
    if (rc == NWB_ETOOBIG) {
        snprintf(err, errlen, "--forward-ca-file %.200s: more than %u bytes", path,
                 NWB__CH_CA_FILE_MAX);
        return NWB_ECONFIG;
    }
    if (rc == -ENOMEM) {
        return UV_ENOMEM;
    }
    if (rc != 0) {
        snprintf(err, errlen, "--forward-ca-file %.200s: %s", path, strerror(-rc));
        return NWB_ECONFIG;
    }
    rc = nwb__ch_tls_add_ca_pem(t, data, len, reason, sizeof(reason));
    nwb_free(data);
    if (rc < 0) {
        snprintf(err, errlen, "--forward-ca-file %.200s: %s", path, reason);
        return rc;
    }
    return 0;
}

int nwb__ch_tls_create(const char *ca_file, struct nwb__ch_tls **out, char *err, size_t errlen)
{
    struct nwb__ch_tls *t;
    int rc;

    *out = NULL;
    t = nwb_calloc(1, sizeof(*t));
    if (t == NULL) {
        return UV_ENOMEM;
    }
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (t->ctx == NULL || SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION) != 1) {
        char why[128];

        snprintf(err, errlen, "cannot make a TLS context: %s",
                 ssl_error_text(why, sizeof(why), "OpenSSL refused"));
        nwb__ch_tls_destroy(t);
        return NWB_ECONFIG;
    }
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(t->ctx, SSL_MODE_AUTO_RETRY);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    /* ClickHouse may close an idle kept-alive connection without close_notify; the answer's
     * own framing (Content-Length or chunked, checked by llhttp) tells a cut answer. */
    SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
    if (ca_file != NULL) {
        rc = load_ca_file(t, ca_file, err, errlen);
    } else {
        /* Debian: /etc/ssl/certs (ca-certificates), read when a certificate is checked. */
        rc = SSL_CTX_set_default_verify_paths(t->ctx) == 1 ? 0 : NWB_ECONFIG;
        if (rc != 0) {
            snprintf(err, errlen, "cannot use the system's CA certificates");
        }
    }
    if (rc != 0) {
        nwb__ch_tls_destroy(t);
        return rc;
    }
    *out = t;
    return 0;
}

void nwb__ch_tls_destroy(struct nwb__ch_tls *t)
{
    if (t == NULL) {
        return;
    }
    SSL_CTX_free(t->ctx);
    nwb_free(t);
}

/* A failed SSL call @p r of @p c as a code, its reason in @p reason when that is not NULL. */
static int ssl_failure(struct nwb__ch_tls_conn *c, int r, const char *doing, char *reason,
                       size_t cap)
{
    const int e = SSL_get_error(c->ssl, r);
    const int saved_errno = errno;
    char why[128];
    char dummy[8];
    int rc;

    if (reason == NULL) {
        reason = dummy;
        cap = sizeof(dummy);
    }
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        snprintf(reason, cap, "TLS %s timed out", doing);
        ERR_clear_error();
        return UV_ETIMEDOUT;
    }
    c->broken = 1;
    if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
        if (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK) {
            snprintf(reason, cap, "TLS %s timed out", doing);
            rc = UV_ETIMEDOUT;
        } else if (saved_errno == 0) {
            snprintf(reason, cap, "TLS %s: the server closed the connection", doing);
            rc = UV_EOF;
        } else {
            snprintf(reason, cap, "TLS %s: %s", doing, strerror(saved_errno));
            rc = -saved_errno;
        }
        return rc;
    }
    snprintf(reason, cap, "TLS %s failed: %s", doing,
             ssl_error_text(why, sizeof(why), "protocol error"));
    return NWB_EPROTO;
}

int nwb__ch_tls_connect(struct nwb__ch_tls *t, int fd, const char *host,
                        struct nwb__ch_tls_conn **out, char *reason, size_t cap)
{
    struct nwb__ch_tls_conn *c;
    unsigned char ip[16];
    struct sigpipe_guard guard;
    int ok, r;

    *out = NULL;
    reason[0] = '\0';
    c = nwb_calloc(1, sizeof(*c));
    if (c == NULL) {
        snprintf(reason, cap, "out of memory for a TLS session");
        return UV_ENOMEM;
    }
    ERR_clear_error();
    c->ssl = SSL_new(t->ctx);
    if (c->ssl == NULL) {
        nwb_free(c);
        snprintf(reason, cap, "out of memory for a TLS session");
        return UV_ENOMEM;
    }
    if (inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1) {
        /* RFC 6066 gives SNI no IP addresses: an IP literal is only matched, against the
         * certificate's IP subjectAltNames. */
        ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host) == 1;
    } else {
        /* curl's choice too: "*" matches a whole label, never part of one ("f*.example"). */
        SSL_set_hostflags(c->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        ok = SSL_set_tlsext_host_name(c->ssl, host) == 1 && SSL_set1_host(c->ssl, host) == 1;
    }
    if (!ok || SSL_set_fd(c->ssl, fd) != 1) {
        char why[128];

        snprintf(reason, cap, "TLS setup for %.100s failed: %s", host,
                 ssl_error_text(why, sizeof(why), "refused by OpenSSL"));
        nwb__ch_tls_close(c);
        return NWB_EPROTO;
    }
    sigpipe_block(&guard);
    errno = 0;
    r = SSL_connect(c->ssl);
    sigpipe_restore(&guard);
    if (r != 1) {
        const long verify = SSL_get_verify_result(c->ssl);
        int rc;

        if (verify != X509_V_OK) {
            snprintf(reason, cap, "certificate verify failed: %s",
                     X509_verify_cert_error_string(verify));
            ERR_clear_error();
            c->broken = 1;
            rc = NWB_EPROTO;
        } else {
            rc = ssl_failure(c, r, "handshake", reason, cap);
            if (rc == UV_EOF) {
                rc = NWB_EPROTO; /* a server that hangs up at the handshake: not TLS there */
            }
        }
        nwb__ch_tls_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

int nwb__ch_tls_send(struct nwb__ch_tls_conn *c, const void *data, size_t len)
{
    const char *p = data;
    struct sigpipe_guard guard;
    int rc = 0;

    sigpipe_block(&guard);
    while (len > 0) {
        const int chunk = len > (size_t)INT_MAX ? INT_MAX : (int)len;
        int r;

        errno = 0;
        r = SSL_write(c->ssl, p, chunk);
        if (r <= 0) {
            rc = ssl_failure(c, r, "write", NULL, 0);
            rc = rc == UV_EOF ? UV_EPIPE : rc;
            break;
        }
        p += r;
        len -= (size_t)r;
    }
    sigpipe_restore(&guard);
    return rc;
}

ssize_t nwb__ch_tls_recv(struct nwb__ch_tls_conn *c, void *buf, size_t cap)
{
    const int want = cap > (size_t)INT_MAX ? INT_MAX : (int)cap;
    struct sigpipe_guard guard;
    int r;
    ssize_t rc;

    sigpipe_block(&guard);
    errno = 0;
    r = SSL_read(c->ssl, buf, want);
    if (r > 0) {
        rc = r;
    } else if (SSL_get_error(c->ssl, r) == SSL_ERROR_ZERO_RETURN) {
        rc = 0;
    } else {
        rc = ssl_failure(c, r, "read", NULL, 0);
        rc = rc == UV_EOF ? 0 : rc;
    }
    sigpipe_restore(&guard);
    return rc;
}

void nwb__ch_tls_close(struct nwb__ch_tls_conn *c)
{
    if (c == NULL) {
        return;
    }
    if (!c->broken && SSL_is_init_finished(c->ssl)) {
        struct sigpipe_guard guard;

        /* One close_notify, never waiting for the server's. */
        sigpipe_block(&guard);
        (void)SSL_shutdown(c->ssl);
        sigpipe_restore(&guard);
    }
    SSL_free(c->ssl);
    ERR_clear_error();
    nwb_free(c);
}
