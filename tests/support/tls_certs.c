/* SPDX-License-Identifier: MIT */
/* tls_certs.c - a throw-away CA and server certificates for tests (tls_certs.h). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "tls_certs.h"

static long next_serial = 1;

static int fail(const char *what)
{
    const unsigned long e = ERR_get_error();
    char buf[256];

    ERR_error_string_n(e, buf, sizeof(buf));
    fprintf(stderr, "tls_certs: %s: %s\n", what, e != 0 ? buf : "failed");
    ERR_clear_error();
    return -1;
}

static int add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    int ok;

    if (ext == NULL) {
        return fail(value);
    }
    ok = X509_add_ext(x, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok ? 0 : fail("X509_add_ext");
}

/* A certificate for @p key named @p cn, signed by @p issuer / @p issuer_key (NULL: itself). */
static X509 *cert_make(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key,
                       const char *san)
{
    X509 *x = X509_new();
    X509_NAME *name;
    X509V3_CTX ctx;
    int bad;

    if (x == NULL) {
        fail("X509_new");
        return NULL;
    }
    name = X509_get_subject_name(x);
    bad = X509_set_version(x, 2) != 1 ||
          ASN1_INTEGER_set(X509_get_serialNumber(x), next_serial++) != 1 ||
          X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
          X509_gmtime_adj(X509_getm_notAfter(x), 2 * 86400) == NULL ||
          X509_set_pubkey(x, key) != 1 ||
          X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
                                     0) != 1 ||
          X509_set_issuer_name(x, issuer != NULL ? X509_get_subject_name(issuer) : name) != 1;
    if (!bad) {
        X509V3_set_ctx_nodb(&ctx);
        X509V3_set_ctx(&ctx, issuer != NULL ? issuer : x, x, NULL, NULL, 0);
        if (san == NULL) {
            bad = add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE") != 0 ||
                  add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") != 0 ||
                  add_ext(x, &ctx, NID_subject_key_identifier, "hash") != 0;
        } else {
            bad = add_ext(x, &ctx, NID_basic_constraints, "CA:FALSE") != 0 ||
                  add_ext(x, &ctx, NID_subject_alt_name, san) != 0 ||
                  add_ext(x, &ctx, NID_ext_key_usage, "serverAuth") != 0;
        }
    }
    if (bad || X509_sign(x, issuer_key != NULL ? issuer_key : key, EVP_sha256()) == 0) {
        fail("making a certificate");
        X509_free(x);
        return NULL;
    }
    return x;
}

static FILE *open_private(const char *path)
{
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    return fd < 0 ? NULL : fdopen(fd, "w");
}

int nwb_test_tls_ca_make(struct nwb_test_tls_ca *ca, const char *dir, const char *name)
{
    FILE *fp;
    int ok;

    memset(ca, 0, sizeof(*ca));
    ca->key = EVP_EC_gen("P-256");
    if (ca->key == NULL) {
        return fail("EVP_EC_gen");
    }
    ca->cert = cert_make(ca->key, name, NULL, NULL, NULL);
    if (ca->cert == NULL) {
        nwb_test_tls_ca_free(ca);
        return -1;
    }
    snprintf(ca->cert_path, sizeof(ca->cert_path), "%s/%s-ca.pem", dir, name);
    fp = open_private(ca->cert_path);
    ok = fp != NULL && PEM_write_X509(fp, ca->cert) == 1;
    if (fp != NULL && fclose(fp) != 0) {
        ok = 0;
    }
    if (!ok) {
        nwb_test_tls_ca_free(ca);
        return fail(ca->cert_path);
    }
    return 0;
}

int nwb_test_tls_server_make(const struct nwb_test_tls_ca *ca, const char *san,
                             const char *cert_path, const char *key_path)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *cert;
    FILE *fp;
    int ok;

    if (key == NULL) {
        return fail("EVP_EC_gen");
    }
    cert = cert_make(key, "nwb test server", ca->cert, ca->key, san);
    ok = cert != NULL;
    if (ok) {
        fp = open_private(cert_path);
        ok = fp != NULL && PEM_write_X509(fp, cert) == 1;
        ok = fp != NULL && fclose(fp) == 0 && ok;
    }
    if (ok) {
        fp = open_private(key_path);
        ok = fp != NULL && PEM_write_PrivateKey(fp, key, NULL, NULL, 0, NULL, NULL) == 1;
        ok = fp != NULL && fclose(fp) == 0 && ok;
    }
    X509_free(cert);
    EVP_PKEY_free(key);
    return ok ? 0 : fail(cert_path);
}

void nwb_test_tls_ca_free(struct nwb_test_tls_ca *ca)
{
    if (ca == NULL) {
        return;
    }
    X509_free(ca->cert);
    EVP_PKEY_free(ca->key);
    ca->cert = NULL;
    ca->key = NULL;
}
