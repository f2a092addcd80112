/* SPDX-License-Identifier: MIT */
/*
 * test_ch_tls.c - the TLS set-up of an https --forward-clickhouse (server/src/forward/ch_tls.c)
 * without an engine: --forward-ca-file's reading and its bound at the edge, the one-line
 * reasons of an unusable file, the system trust store, and --forward-ca-file with http.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forward/ch_http.h"
#include "forward/ch_tls.h"
#include "nwb/error.h"
#include "test_support.h"
#include "tls_certs.h"

struct fixture {
    char dir[512];
    struct nwb_test_tls_ca ca, ca2;
    char *ca_pem;
    size_t ca_pem_len;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("ch-tls", f->dir, sizeof f->dir) != 0 ||
        nwb_test_tls_ca_make(&f->ca, f->dir, "one") != 0 ||
        nwb_test_tls_ca_make(&f->ca2, f->dir, "two") != 0) {
        free(f);
        return -1;
    }
    f->ca_pem = nwb_test_read_file(f->ca.cert_path, &f->ca_pem_len);
    *state = f;
    return f->ca_pem != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    nwb_test_tls_ca_free(&f->ca);
    nwb_test_tls_ca_free(&f->ca2);
    free(f->ca_pem);
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* nwb__ch_http_tls_setup() of @p url with @p ca_file; the reason in @p err. */
static int tls_setup(const char *url, const char *ca_file, char *err, size_t cap)
{
    struct nwb__ch_http h;
    int rc;

    err[0] = '\0';
    assert_int_equal(nwb__ch_http_init(&h, url, err, cap), 0);
    rc = nwb__ch_http_tls_setup(&h, ca_file, err, cap);
    assert_true(rc != 0 || (h.https ? h.tls != NULL : h.tls == NULL));
    nwb__ch_http_cleanup(&h);
    return rc;
}

static void write_file(const struct fixture *f, const char *name, const void *data, size_t len,
                       char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", f->dir, name);
    assert_int_equal(nwb_test_write_file(path, data, len, 0600), 0);
}

static void test_ch_tls_ca_file_accepted_and_system_store(void **state)
{
    struct fixture *f = *state;
    char err[512];

    assert_int_equal(tls_setup("https://127.0.0.1:9/", f->ca.cert_path, err, sizeof err), 0);
    /* No --forward-ca-file: the system's trust store. */
    assert_int_equal(tls_setup("https://ch.example/", NULL, err, sizeof err), 0);
    assert_int_equal(tls_setup("http://ch.example/", NULL, err, sizeof err), 0);
}

static void test_ch_tls_ca_file_refused_with_reason(void **state)
{
    struct fixture *f = *state;
    static const char bad_pem[] = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    char err[512], path[700], want[900];

    assert_int_equal(tls_setup("http://h/", f->ca.cert_path, err, sizeof err), NWB_ECONFIG);
    assert_string_equal(err, "--forward-ca-file is only for an https:// URL");

    snprintf(path, sizeof path, "%s/missing.pem", f->dir);
    assert_int_equal(tls_setup("https://h/", path, err, sizeof err), NWB_ECONFIG);
    snprintf(want, sizeof want, "--forward-ca-file %s: No such file or directory", path);
    assert_string_equal(err, want);

    assert_int_equal(tls_setup("https://h/", f->dir, err, sizeof err), NWB_ECONFIG);
    assert_non_null(strstr(err, ": not a regular file"));

    write_file(f, "empty.pem", "", 0, path, sizeof path);
    assert_int_equal(tls_setup("https://h/", path, err, sizeof err), NWB_ECONFIG);
    snprintf(want, sizeof want,
             "--forward-ca-file %s: no PEM certificate (-----BEGIN CERTIFICATE-----) in it", path);
    assert_string_equal(err, want);

    write_file(f, "bad.pem", bad_pem, sizeof bad_pem - 1, path, sizeof path);
    assert_int_equal(tls_setup("https://h/", path, err, sizeof err), NWB_ECONFIG);
    assert_non_null(strstr(err, ": certificate 1 is malformed: "));
    assert_null(strchr(err, '\n'));
}

/* NWB__CH_CA_FILE_MAX bytes (a certificate, then text OpenSSL skips) load; one more byte is
 * refused before anything is read. */
static void test_ch_tls_ca_file_bound_at_its_edge(void **state)
{
    struct fixture *f = *state;
    char *big = malloc(NWB__CH_CA_FILE_MAX + 1);
    char err[512], path[700], want[900];

    assert_non_null(big);
    memcpy(big, f->ca_pem, f->ca_pem_len);
    memset(big + f->ca_pem_len, 'x', NWB__CH_CA_FILE_MAX + 1 - f->ca_pem_len);
    for (size_t i = f->ca_pem_len + 63; i < NWB__CH_CA_FILE_MAX; i += 64) {
        big[i] = '\n';
    }
    big[NWB__CH_CA_FILE_MAX - 1] = '\n';
    write_file(f, "max.pem", big, NWB__CH_CA_FILE_MAX, path, sizeof path);
    assert_int_equal(tls_setup("https://h/", path, err, sizeof err), 0);
    big[NWB__CH_CA_FILE_MAX] = '\n';
    write_file(f, "past.pem", big, NWB__CH_CA_FILE_MAX + 1, path, sizeof path);
    assert_int_equal(tls_setup("https://h/", path, err, sizeof err), NWB_ECONFIG);
    snprintf(want, sizeof want, "--forward-ca-file %s: more than %u bytes", path,
             NWB__CH_CA_FILE_MAX);
    assert_string_equal(err, want);
    free(big);
}

/* Every certificate of a bundle counts; other PEM blocks (a key) are skipped. */
static void test_ch_tls_ca_pem_counts_certificates(void **state)
{
    struct fixture *f = *state;
    struct nwb__ch_tls *t = NULL;
    size_t len2 = 0;
    char *pem2 = nwb_test_read_file(f->ca2.cert_path, &len2);
    nwb_buf_t both = NWB_BUF_INIT(1u << 20);
    static const char key_block[] =
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
    char err[512];

    assert_non_null(pem2);
    assert_int_equal(nwb__ch_tls_create(NULL, &t, err, sizeof err), 0);
    assert_int_equal(nwb_buf_append(&both, f->ca_pem, f->ca_pem_len), 0);
    assert_int_equal(nwb_buf_append(&both, key_block, sizeof key_block - 1), 0);
    assert_int_equal(nwb_buf_append(&both, pem2, len2), 0);
    assert_int_equal(nwb__ch_tls_add_ca_pem(t, both.data, both.len, err, sizeof err), 2);
    assert_int_equal(nwb__ch_tls_add_ca_pem(t, key_block, sizeof key_block - 1, err, sizeof err),
                     NWB_ECONFIG);
    assert_string_equal(err, "no PEM certificate (-----BEGIN CERTIFICATE-----) in it");
    nwb__ch_tls_destroy(t);
    nwb_buf_cleanup(&both);
    free(pem2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ch_tls_ca_file_accepted_and_system_store),
        cmocka_unit_test(test_ch_tls_ca_file_refused_with_reason),
        cmocka_unit_test(test_ch_tls_ca_file_bound_at_its_edge),
        cmocka_unit_test(test_ch_tls_ca_pem_counts_certificates),
    };

    return cmocka_run_group_tests_name("forward.ch_tls", tests, setup, teardown);
}
