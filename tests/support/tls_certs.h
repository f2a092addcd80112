/* SPDX-License-Identifier: MIT */
/*
 * tls_certs.h - throw-away TLS certificates for the https forwarding tests, made with
 * OpenSSL's C API: a self-signed CA and a server certificate it signs for given
 * subjectAltNames, written as PEM files into a test's folder.
 */
#ifndef NWB_TEST_TLS_CERTS_H
#define NWB_TEST_TLS_CERTS_H

#include <stddef.h>

/** One CA in @p dir: "<name>-ca.pem" (its certificate) and the key kept in memory. */
struct nwb_test_tls_ca {
    void *key;  /* EVP_PKEY */
    void *cert; /* X509 */
    char cert_path[600];
};

/**
 * Make a CA named @p name (its CN) and write its certificate to @p dir/<name>-ca.pem.
 * Returns 0, or -1 with the reason on stderr.
 */
int nwb_test_tls_ca_make(struct nwb_test_tls_ca *ca, const char *dir, const char *name);

/**
 * Make a server key and a certificate @p ca signs for @p san (an OpenSSL subjectAltName value,
 * "IP:127.0.0.1" or "DNS:localhost"), written to @p cert_path and @p key_path (PEM, mode
 * 0600). Returns 0, or -1 with the reason on stderr.
 */
int nwb_test_tls_server_make(const struct nwb_test_tls_ca *ca, const char *san,
                             const char *cert_path, const char *key_path);

/** Free the CA's key and certificate (the file stays). NULL-safe. */
void nwb_test_tls_ca_free(struct nwb_test_tls_ca *ca);

#endif /* NWB_TEST_TLS_CERTS_H */
