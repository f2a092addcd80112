/* SPDX-License-Identifier: MIT */
/*
 * test_ch_url.c - the --forward-clickhouse URL (server/src/forward/ch_http.c): what is
 * accepted, the defaults (8123 for http, 8443 for https), and each bound at its edge (port,
 * host length, database name).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "forward/ch_http.h"
#include "nwb/error.h"

static int init(const char *url, struct nwb__ch_http *h, char *err, size_t cap)
{
    err[0] = '\0';
    return nwb__ch_http_init(h, url, err, cap);
}

static void test_ch_url_accepts_and_defaults(void **state)
{
    struct nwb__ch_http h;
    char err[256];

    (void)state;
    assert_int_equal(init("http://127.0.0.1:8124/?database=fleet_1", &h, err, sizeof err), 0);
    assert_string_equal(h.host, "127.0.0.1");
    assert_int_equal(h.port, 8124);
    assert_string_equal(h.database, "fleet_1");
    assert_int_equal(h.fd, -1);
    assert_int_equal(init("http://ch.local", &h, err, sizeof err), 0);
    assert_int_equal(h.port, 8123);
    assert_string_equal(h.database, "nwb");
    assert_int_equal(init("http://[::1]:65535/", &h, err, sizeof err), 0);
    assert_string_equal(h.host, "::1");
    assert_int_equal(h.port, 65535);
    assert_int_equal(h.https, 0);
    assert_int_equal(init("https://ch.local/?database=fleet", &h, err, sizeof err), 0);
    assert_int_equal(h.https, 1);
    assert_int_equal(h.port, 8443);
    assert_string_equal(h.host, "ch.local");
    assert_string_equal(h.database, "fleet");
    assert_null(h.tls);
    assert_int_equal(init("https://[::1]:9440", &h, err, sizeof err), 0);
    assert_int_equal(h.port, 9440);
}

static void test_ch_url_edges_refused_with_reason(void **state)
{
    struct nwb__ch_http h;
    char err[256], url[400];
    char host[NWB__CH_HOST_MAX + 2];

    (void)state;
    assert_int_equal(init("http://h:65536/", &h, err, sizeof err), NWB_ECONFIG);
    assert_string_equal(err, "the URL's port must be a number in 1..65535");
    assert_int_equal(init("http://h:0/", &h, err, sizeof err), NWB_ECONFIG);
    assert_int_equal(init("ftp://h/", &h, err, sizeof err), NWB_ECONFIG);
    assert_string_equal(err, "the URL must start with http:// or https://");
    assert_int_equal(init("https:/h/", &h, err, sizeof err), NWB_ECONFIG);
    assert_int_equal(init("https://h:0/", &h, err, sizeof err), NWB_ECONFIG);
    assert_int_equal(init("http://h/x", &h, err, sizeof err), NWB_ECONFIG);
    assert_int_equal(init("http://h/?database=a&b=c", &h, err, sizeof err), NWB_ECONFIG);
    assert_int_equal(init("http://h/?database=a-b", &h, err, sizeof err), NWB_ECONFIG);
    assert_int_equal(init("http://u@h/", &h, err, sizeof err), NWB_ECONFIG);
    assert_int_equal(init("http:///", &h, err, sizeof err), NWB_ECONFIG);
    memset(host, 'a', NWB__CH_HOST_MAX);
    host[NWB__CH_HOST_MAX] = '\0';
    snprintf(url, sizeof url, "http://%s/", host);
    assert_int_equal(init(url, &h, err, sizeof err), 0);
    host[NWB__CH_HOST_MAX] = 'a';
    host[NWB__CH_HOST_MAX + 1] = '\0';
    snprintf(url, sizeof url, "http://%s/", host);
    assert_int_equal(init(url, &h, err, sizeof err), NWB_ECONFIG);
    assert_string_equal(err, "the URL's host must be 1..253 bytes");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ch_url_accepts_and_defaults),
        cmocka_unit_test(test_ch_url_edges_refused_with_reason),
    };

    return cmocka_run_group_tests_name("forward.ch_url", tests, NULL, NULL);
}
