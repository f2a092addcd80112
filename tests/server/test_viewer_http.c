/* SPDX-License-Identifier: MIT */
/*
 * test_viewer_http.c - the real nwb-logserver serving the embedded viewer: GET / and GET
 * /assets/<name> with their Content-Type, ETag and Cache-Control; an unknown asset is 404;
 * HEAD is 405 with Allow: GET (no route takes HEAD); the security headers
 * (Content-Security-Policy: default-src 'self', X-Content-Type-Options: nosniff,
 * Referrer-Policy: no-referrer) on every kind of answer, the bodiless 200 of POST /v1/log
 * and the 401 included; with --token-file the page loads without the token while every data
 * route still answers 401.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server_test_util.h"

#define TOKEN "viewer-token-0123456789-abcdef"

struct fixture {
    char dir[512];
    char out[600];
    char token[600];
    struct nwb_test_server open_srv;  /* no token */
    struct nwb_test_server token_srv; /* --token-file */
};

struct answer {
    int status;
    char head[4096]; /* NUL-terminated, up to the blank line */
    const char *body;
    size_t body_len;
    char raw[256 * 1024];
};

static int setup(void **state)
{
    static struct fixture f;
    const char *extra[] = {"--token-file", f.token, NULL};
    char token_out[700];

    memset(&f, 0, sizeof(f));
    if (nwb_test_tmpdir("viewer-http", f.dir, sizeof(f.dir)) != 0) {
        return -1;
    }
    snprintf(f.out, sizeof(f.out), "%s/out", f.dir);
    snprintf(token_out, sizeof(token_out), "%s/out-token", f.dir);
    snprintf(f.token, sizeof(f.token), "%s/token", f.dir);
    if (nwb_test_write_file(f.token, TOKEN "\n", strlen(TOKEN) + 1, 0600) != 0 ||
        tu_start(&f.open_srv, f.out, 0, NULL) != 0 ||
        tu_start(&f.token_srv, token_out, 0, extra) != 0) {
        return -1;
    }
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    if (f != NULL) {
        assert_int_equal(tu_stop(&f->open_srv, SIGTERM, 10000), 0);
        assert_int_equal(tu_stop(&f->token_srv, SIGTERM, 10000), 0);
        nwb_test_rmtree(f->dir);
    }
    return tu_reap(state);
}

/* Send @p req (it should say Connection: close) and read until the server closes. */
static void exchange(int port, const char *req, size_t len, struct answer *a)
{
    const int fd = nwb_test_connect(port);
    size_t got = 0;
    const char *end;

    assert_true(fd >= 0);
    assert_int_equal(nwb_test_send_all(fd, req, len), 0);
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t n;

        assert_true(poll(&p, 1, 10000) > 0); /* the answer and the close come within 10 s */
        n = read(fd, a->raw + got, sizeof(a->raw) - 1 - got);
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
        assert_true(got < sizeof(a->raw) - 1);
    }
    close(fd);
    a->raw[got] = '\0';
    end = strstr(a->raw, "\r\n\r\n");
    assert_non_null(end);
    assert_true((size_t)(end - a->raw) + 3 < sizeof(a->head));
    memcpy(a->head, a->raw, (size_t)(end - a->raw) + 2);
    a->head[end - a->raw + 2] = '\0';
    a->body = end + 4;
    a->body_len = got - (size_t)(a->body - a->raw);
    assert_int_equal(sscanf(a->raw, "HTTP/1.1 %d", &a->status), 1);
}

static struct answer *get(int port, const char *method, const char *path, const char *headers)
{
    static struct answer a;
    char req[1024];
    const int n =
        snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n",
                 method, path, headers != NULL ? headers : "");

    exchange(port, req, (size_t)n, &a);
    return &a;
}

/* The value of header @p name (with ": "), copied into a static buffer; NULL when absent. */
static const char *header(const struct answer *a, const char *name)
{
    static char value[256];
    char key[64];
    const char *p, *eol;

    snprintf(key, sizeof(key), "\r\n%s: ", name);
    p = strstr(a->head, key);
    if (p == NULL) {
        return NULL;
    }
    p += strlen(key);
    eol = strstr(p, "\r\n");
    assert_non_null(eol);
    assert_true((size_t)(eol - p) < sizeof(value));
    memcpy(value, p, (size_t)(eol - p));
    value[eol - p] = '\0';
    return value;
}

static void assert_security_headers(const struct answer *a)
{
    assert_non_null(header(a, "Content-Security-Policy"));
    assert_string_equal(header(a, "Content-Security-Policy"), "default-src 'self'");
    assert_non_null(header(a, "X-Content-Type-Options"));
    assert_string_equal(header(a, "X-Content-Type-Options"), "nosniff");
    assert_non_null(header(a, "Referrer-Policy"));
    assert_string_equal(header(a, "Referrer-Policy"), "no-referrer");
}

static void assert_asset(int port, const char *path, const char *ctype, const char *starts)
{
    struct answer *a = get(port, "GET", path, NULL);
    char etag[64];

    assert_int_equal(a->status, 200);
    assert_string_equal(header(a, "Content-Type"), ctype);
    assert_security_headers(a);
    assert_string_equal(header(a, "Cache-Control"), "no-cache");
    assert_non_null(header(a, "ETag"));
    snprintf(etag, sizeof(etag), "%s", header(a, "ETag"));
    assert_int_equal(strlen(etag), 18);
    assert_true(a->body_len > 0);
    assert_int_equal((size_t)atol(header(a, "Content-Length")), a->body_len);
    assert_memory_equal(a->body, starts, strlen(starts));
    /* The same bytes answer the same validator every time. */
    a = get(port, "GET", path, NULL);
    assert_string_equal(header(a, "ETag"), etag);
    /* Revalidation: the validator is a 304 without a body; another tag is the 200 again. */
    {
        char inm[96];

        snprintf(inm, sizeof(inm), "If-None-Match: W/\"other\", %s\r\n", etag);
        a = get(port, "GET", path, inm);
        assert_int_equal(a->status, 304);
        assert_int_equal(a->body_len, 0);
        assert_null(header(a, "Content-Length"));
        assert_string_equal(header(a, "ETag"), etag);
        assert_string_equal(header(a, "Cache-Control"), "no-cache");
        assert_security_headers(a);
        a = get(port, "GET", path, "If-None-Match: \"0000000000000000\"\r\n");
        assert_int_equal(a->status, 200);
        assert_int_equal((size_t)atol(header(a, "Content-Length")), a->body_len);
    }
}

static void test_page_and_assets_are_served_with_their_types(void **state)
{
    struct fixture *f = *state;
    const int port = f->open_srv.port;
    char index_etag[64];

    (void)state;
    assert_asset(port, "/", "text/html; charset=utf-8", "<!doctype html>");
    snprintf(index_etag, sizeof(index_etag), "%s", header(get(port, "GET", "/", NULL), "ETag"));
    assert_asset(port, "/?from=bookmark", "text/html; charset=utf-8", "<!doctype html>");
    assert_asset(port, "/assets/main.js", "text/javascript; charset=utf-8", "//");
    assert_asset(port, "/assets/views/runs.js", "text/javascript; charset=utf-8", "//");
    assert_asset(port, "/assets/viewer.css", "text/css; charset=utf-8", "/*");
    assert_asset(port, "/assets/uPlot.esm.js", "text/javascript; charset=utf-8", "/**");
    assert_asset(port, "/assets/uPlot.min.css", "text/css; charset=utf-8", ".uplot");
    assert_asset(port, "/assets/favicon.svg", "image/svg+xml", "<svg");
    /* Different bytes, different validators. */
    assert_string_not_equal(header(get(port, "GET", "/assets/main.js", NULL), "ETag"), index_etag);
}

static void test_unknown_assets_are_404_and_head_is_405(void **state)
{
    struct fixture *f = *state;
    const int port = f->open_srv.port;
    static const char *const missing[] = {"/assets/nope.js",       "/assets/",
                                          "/assets/../index.html", "/assets/main.js/",
                                          "/index.html",           "/favicon.ico"};
    struct answer *a;

    for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++) {
        a = get(port, "GET", missing[i], NULL);
        assert_int_equal(a->status, 404);
        assert_security_headers(a);
        assert_null(header(a, "ETag"));
    }
    a = get(port, "HEAD", "/", NULL);
    assert_int_equal(a->status, 405);
    assert_string_equal(header(a, "Allow"), "GET");
    assert_int_equal(a->body_len, 0);
    assert_security_headers(a);
    a = get(port, "POST", "/assets/main.js", "Content-Length: 0\r\n");
    assert_int_equal(a->status, 405);
    assert_string_equal(header(a, "Allow"), "GET");
}

static void test_every_answer_has_the_security_headers(void **state)
{
    struct fixture *f = *state;
    const int port = f->open_srv.port;
    static const char body[] = "one line\n";
    static struct answer post;
    static const struct {
        const char *path;
        int status;
    } answers[] = {{"/v1/health", 200},
                   {"/metrics", 200},
                   {"/v1/crashes", 200},
                   {"/v1/crashes/0123", 404},
                   {"/no/such/endpoint", 404}};
    char req[512];
    int n;
    struct answer *a;

    for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
        a = get(port, "GET", answers[i].path, NULL);
        assert_int_equal(a->status, answers[i].status);
        assert_security_headers(a);
    }
    /* The fixed bodiless 200 of an accepted log batch. */
    n = snprintf(req, sizeof(req),
                 "POST /v1/log HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nX-NWB-Program: "
                 "viewer\r\nX-NWB-Run: sec\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                 sizeof(body) - 1, body);
    a = &post;
    exchange(port, req, (size_t)n, a);
    assert_int_equal(a->status, 200);
    assert_int_equal(a->body_len, 0);
    assert_security_headers(a);
}

static void test_page_loads_without_the_token_data_does_not(void **state)
{
    struct fixture *f = *state;
    const int port = f->token_srv.port;
    static const char *const data[] = {"/v1/health", "/metrics", "/v1/crashes", "/nope"};
    struct answer *a;

    a = get(port, "GET", "/", NULL);
    assert_int_equal(a->status, 200);
    assert_security_headers(a);
    assert_null(strstr(a->raw, TOKEN));
    a = get(port, "GET", "/assets/api.js", NULL);
    assert_int_equal(a->status, 200);
    a = get(port, "GET", "/assets/nope.js", NULL);
    assert_int_equal(a->status, 404);
    for (size_t i = 0; i < sizeof(data) / sizeof(data[0]); i++) {
        a = get(port, "GET", data[i], NULL);
        assert_int_equal(a->status, 401);
        assert_security_headers(a);
        assert_non_null(header(a, "WWW-Authenticate"));
    }
    a = get(port, "GET", "/v1/health", "Authorization: Bearer wrong-token-0123456789\r\n");
    assert_int_equal(a->status, 401);
    a = get(port, "GET", "/v1/health", "Authorization: Bearer " TOKEN "\r\n");
    assert_int_equal(a->status, 200);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page_and_assets_are_served_with_their_types),
        cmocka_unit_test(test_unknown_assets_are_404_and_head_is_405),
        cmocka_unit_test(test_every_answer_has_the_security_headers),
        cmocka_unit_test(test_page_loads_without_the_token_data_does_not),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
