/* SPDX-License-Identifier: MIT */
/*
 * test_auth_http.c - access control of the real nwb-logserver binary: with
 * --token-file every route answers 401 (WWW-Authenticate: Bearer, a reason,
 * connection closed, body never written) unless the request carries the
 * token; the right token is served; a non-loopback --bind without a token
 * and bad token files are refused with exit status 2 and a message.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server_test_util.h"

#define TOKEN "s3cret-token-0123456789-abcdef"
#define AUTH  "Authorization: Bearer " TOKEN "\r\n"

struct fixture {
    char dir[512]; /* holds out/ and the token file */
    char out[600];
    char token[600];
    struct nwb_test_server srv;
};

static void write_file(const char *path, const char *data, unsigned mode)
{
    assert_int_equal(nwb_test_write_file(path, data, strlen(data), mode), 0);
}

static int setup(void **state)
{
    static struct fixture f;
    const char *extra[] = {"--token-file", f.token, NULL};

    memset(&f, 0, sizeof(f));
    if (nwb_test_tmpdir("auth-http", f.dir, sizeof(f.dir)) != 0) {
        return -1;
    }
    snprintf(f.out, sizeof(f.out), "%s/out", f.dir);
    snprintf(f.token, sizeof(f.token), "%s/token", f.dir);
    write_file(f.token, TOKEN "\n", 0600);
    if (tu_start(&f.srv, f.out, 0, extra) != 0) {
        return -1;
    }
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    if (f != NULL) {
        assert_int_equal(tu_stop(&f->srv, SIGTERM, 10000), 0);
        nwb_test_rmtree(f->dir);
    }
    return tu_reap(state);
}

/*
 * Send @p req raw on a fresh connection and read the whole answer until the
 * server closes or @p until_close is 0 and one response's head and body are in.
 * Returns the status; the raw response goes to @p resp.
 */
static int raw(int port, const char *req, size_t len, char *resp, size_t cap, int *closed)
{
    int fd = nwb_test_connect(port);
    size_t got = 0;
    int status = -1;

    assert_true(fd >= 0);
    assert_int_equal(nwb_test_send_all(fd, req, len), 0);
    resp[0] = '\0';
    *closed = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t n;

        if (poll(&p, 1, 5000) <= 0) {
            break; /* no close within 5 s */
        }
        n = read(fd, resp + got, cap - 1 - got);
        if (n <= 0) {
            *closed = 1;
            break;
        }
        got += (size_t)n;
        resp[got] = '\0';
        if (got == cap - 1) {
            break;
        }
    }
    close(fd);
    sscanf(resp, "HTTP/1.1 %d", &status);
    return status;
}

static void expect_401(int port, const char *req, const char *reason)
{
    char resp[4096];
    int closed;

    assert_int_equal(raw(port, req, strlen(req), resp, sizeof(resp), &closed), 401);
    assert_non_null(strstr(resp, "\r\nWWW-Authenticate: Bearer"));
    assert_non_null(strstr(resp, "\r\nConnection: close\r\n"));
    assert_non_null(strstr(resp, reason));
    assert_true(closed);
}

static void test_every_route_needs_the_token(void **state)
{
    struct fixture *f = *state;
    static const char *const reqs[] = {
        "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /v1/crashes HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /v1/crashes/abc HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /no/such/endpoint HTTP/1.1\r\nHost: x\r\n\r\n",
        "DELETE /v1/log HTTP/1.1\r\nHost: x\r\n\r\n",
        "POST /v1/log HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
        "Content-Length: 5\r\n\r\nhello",
        "POST /v1/telemetry HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
        "POST /v1/crash HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
    };

    for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
        expect_401(f->srv.port, reqs[i], "missing Authorization: Bearer <token> header");
    }
}

static void test_wrong_short_long_and_malformed_tokens_get_401(void **state)
{
    struct fixture *f = *state;
    char req[2048];
    char big[1200];

    expect_401(f->srv.port,
               "GET /v1/health HTTP/1.1\r\nAuthorization: Bearer s3cret-token-0123456789-abcdeF"
               "\r\n\r\n",
               "wrong bearer token");
    expect_401(f->srv.port,
               "GET /v1/health HTTP/1.1\r\nAuthorization: Bearer s3cret-token-0123456789-abcde"
               "\r\n\r\n",
               "wrong bearer token");
    expect_401(f->srv.port, "GET /v1/health HTTP/1.1\r\nAuthorization: Bearer s\r\n\r\n",
               "wrong bearer token");
    expect_401(f->srv.port, "GET /v1/health HTTP/1.1\r\nAuthorization: Bearer " TOKEN "0\r\n\r\n",
               "wrong bearer token");
    expect_401(f->srv.port, "GET /v1/health HTTP/1.1\r\nAuthorization: " TOKEN "\r\n\r\n",
               "not Bearer");
    expect_401(f->srv.port, "GET /v1/health HTTP/1.1\r\nAuthorization: Basic dXNlcjpwdw==\r\n\r\n",
               "not Bearer");
    /* Far longer than any token (1 KiB): 401, the server keeps serving. */
    memset(big, 'z', sizeof(big));
    snprintf(req, sizeof(req), "GET /v1/health HTTP/1.1\r\nAuthorization: Bearer %.*s\r\n\r\n",
             1024, big);
    expect_401(f->srv.port, req, "too long");
    /* The right token still works afterwards. */
    assert_int_equal(nwb_test_http(f->srv.port, "GET", "/v1/health", AUTH, NULL, 0, NULL, 0), 200);
}

static void test_right_token_is_served_on_every_route(void **state)
{
    struct fixture *f = *state;
    char resp[8192];
    char *log;

    assert_int_equal(
        nwb_test_http(f->srv.port, "GET", "/v1/health", AUTH, NULL, 0, resp, sizeof(resp)), 200);
    assert_non_null(strstr(resp, "\"status\":\"ok\""));
    assert_int_equal(
        nwb_test_http(f->srv.port, "GET", "/metrics", AUTH, NULL, 0, resp, sizeof(resp)), 200);
    assert_int_equal(nwb_test_http(f->srv.port, "GET", "/v1/crashes", AUTH, NULL, 0, NULL, 0), 200);
    /* A lower-case scheme with extra spaces is the same credential. */
    assert_int_equal(nwb_test_http(f->srv.port, "POST", "/v1/log",
                                   "authorization: bearer   " TOKEN "\r\n"
                                   "Content-Type: text/plain\r\nX-NWB-Program: authok\r\n"
                                   "X-NWB-Run: r1\r\n",
                                   "line with the right token\n", 26, NULL, 0),
                     200);
    log = tu_run_log(f->out, "authok", "r1");
    assert_non_null(log);
    assert_non_null(strstr(log, "line with the right token"));
    free(log);
    /* The routing answers are unchanged behind the token. */
    assert_int_equal(nwb_test_http(f->srv.port, "GET", "/nope", AUTH, NULL, 0, NULL, 0), 404);
}

/* Nothing of a 401'd body reaches a run log: no run directory for its program appears. */
static void test_rejected_post_body_is_never_written(void **state)
{
    struct fixture *f = *state;
    char req[1024];
    char resp[4096];
    char path[1024];
    char metrics[16384];
    char *log;
    int closed;
    int n;

    n = snprintf(req, sizeof(req),
                 "POST /v1/log HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong-token-value\r\n"
                 "Content-Type: text/plain\r\nX-NWB-Program: intruder\r\nX-NWB-Run: r1\r\n"
                 "Content-Length: 20\r\n\r\nSECRET-INTRUDER-LINE");
    assert_int_equal(raw(f->srv.port, req, (size_t)n, resp, sizeof(resp), &closed), 401);
    assert_true(closed);
    /* Expect: 100-continue: refused at once, no 100 Continue is sent. */
    n = snprintf(req, sizeof(req),
                 "POST /v1/log HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                 "Content-Type: text/plain\r\nX-NWB-Program: intruder\r\nX-NWB-Run: r2\r\n"
                 "Content-Length: 20\r\n\r\n");
    assert_int_equal(raw(f->srv.port, req, (size_t)n, resp, sizeof(resp), &closed), 401);
    assert_null(strstr(resp, "100 Continue"));
    assert_true(closed);
    /* A big Content-Length whose body never comes: the 401 is there at once (not after
     * --request-timeout-ms), so the server did not wait for, or read, the body. */
    {
        const long long t0 = nwb_test_now_ms();

        n = snprintf(req, sizeof(req),
                     "POST /v1/log HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
                     "X-NWB-Program: intruder\r\nContent-Length: 10000000\r\n\r\n");
        assert_int_equal(raw(f->srv.port, req, (size_t)n, resp, sizeof(resp), &closed), 401);
        assert_true(closed);
        assert_true(nwb_test_now_ms() - t0 < 5000);
    }
    /* A request that is served after them proves the worker had its turn. */
    assert_int_equal(nwb_test_http(f->srv.port, "POST", "/v1/log",
                                   AUTH "Content-Type: text/plain\r\nX-NWB-Program: after\r\n"
                                        "X-NWB-Run: r1\r\n",
                                   "served\n", 7, NULL, 0),
                     200);
    log = tu_run_log(f->out, "after", "r1");
    assert_non_null(log);
    free(log);
    assert_int_equal(nwb_test_find_run_log(f->out, "intruder", "r1", path, sizeof(path)), -1);
    assert_int_equal(nwb_test_find_run_log(f->out, "intruder", "r2", path, sizeof(path)), -1);
    /* Exactly the one served record was written. */
    assert_int_equal(
        nwb_test_http(f->srv.port, "GET", "/metrics", AUTH, NULL, 0, metrics, sizeof(metrics)),
        200);
    assert_non_null(strstr(metrics, "\nnwb_records_total 1\n"));
}

static void test_non_loopback_bind_without_token_exits_2(void **state)
{
    struct fixture *f = *state;
    struct tu_result r;

    TU_RUN(&r, "--bind", "0.0.0.0", "--port", "0", "--out", f->out);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--bind 0.0.0.0 is not a loopback address"));
    assert_non_null(strstr(r.err, "--token-file"));
    assert_null(strstr(r.out, "listening"));
    TU_RUN(&r, "--bind", "::", "--port", "0", "--out", f->out);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "not a loopback address"));
    TU_RUN(&r, "--bind", "192.0.2.1", "--port", "0", "--out", f->out);
    assert_int_equal(r.status, 2);
    /* With a token the address is accepted: the start then fails later, on purpose, at the
     * output root, before any socket is bound (tests only listen on loopback). */
    TU_RUN(&r, "--bind", "0.0.0.0", "--token-file", f->token, "--port", "0", "--out",
           "/proc/self/no-such-place");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "cannot create /proc/self/no-such-place"));
    assert_null(strstr(r.err, "loopback"));
}

static void test_bad_token_files_exit_2_with_a_reason(void **state)
{
    struct fixture *f = *state;
    char path[700];
    struct tu_result r;

    snprintf(path, sizeof(path), "%s/bad-token", f->dir);
    write_file(path, TOKEN "\n", 0644);
    TU_RUN(&r, "--token-file", path, "--port", "0", "--out", f->out);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "group or others (mode 0644)"));
    write_file(path, "\n", 0600);
    TU_RUN(&r, "--token-file", path, "--port", "0", "--out", f->out);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "the token is empty"));
    write_file(path, "short\n", 0600);
    TU_RUN(&r, "--token-file", path, "--port", "0", "--out", f->out);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "shorter than 16 bytes"));
    write_file(path, "two words are not one token\n", 0600);
    TU_RUN(&r, "--token-file", path, "--port", "0", "--out", f->out);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "not visible ASCII"));
    TU_RUN(&r, "--token-file", "/nonexistent/token", "--port", "0", "--out", f->out);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "the token file /nonexistent/token: cannot be read: "));
    TU_RUN(&r, "--token-file", f->dir, "--port", "0", "--out", f->out);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "not a regular file"));
    TU_RUN(&r, "--help");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "--token-file FILE"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_route_needs_the_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_short_long_and_malformed_tokens_get_401, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_right_token_is_served_on_every_route, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rejected_post_body_is_never_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_non_loopback_bind_without_token_exits_2, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_bad_token_files_exit_2_with_a_reason, setup, teardown),
    };

    return cmocka_run_group_tests_name("server.auth_http", tests, NULL, NULL);
}
