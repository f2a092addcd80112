/* SPDX-License-Identifier: MIT */
/*
 * test_http_errors.c - the real nwb-logserver against bad and hostile HTTP:
 * every malformed request gets its status (and a close where the stream
 * cannot be trusted), each bound is tested one under and one over its edge
 * (431, 413, 408, the connection cap), and a normal client is served after.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server_test_util.h"

struct reply {
    int status;
    char head[8192];
    char body[8192];
};

/* Read one response (head and Content-Length body). Returns 0, or -1 on EOF/timeout. */
static int read_reply(int fd, struct reply *r)
{
    size_t used = 0;
    char *end = NULL;
    const char *cl;
    size_t clen = 0;
    size_t have;

    memset(r, 0, sizeof(*r));
    r->status = -1;
    while (end == NULL) {
        ssize_t n = recv(fd, r->head + used, 1, 0); /* byte by byte: never read past it */

        if (n <= 0 || used + 2 >= sizeof(r->head)) {
            return -1;
        }
        used += (size_t)n;
        r->head[used] = '\0';
        end = strstr(r->head, "\r\n\r\n");
    }
    if (sscanf(r->head, "HTTP/1.1 %d", &r->status) != 1) {
        return -1;
    }
    cl = strstr(r->head, "\r\nContent-Length: "); /* the server's own spelling */
    if (cl != NULL) {
        clen = (size_t)strtoul(cl + 18, NULL, 10);
    }
    for (have = 0; have < clen && have < sizeof(r->body) - 1;) {
        ssize_t n = recv(fd, r->body + have, clen - have, 0);

        if (n <= 0) {
            return -1;
        }
        have += (size_t)n;
    }
    return 0;
}

static int send_str(int fd, const char *s)
{
    return nwb_test_send_all(fd, s, strlen(s));
}

static void start(struct nwb_test_server *srv, char *dir, const char *const *extra)
{
    assert_int_equal(nwb_test_tmpdir("httperr", dir, 512), 0);
    assert_int_equal(tu_start(srv, dir, 0, extra), 0);
}

static void finish(struct nwb_test_server *srv, const char *dir)
{
    assert_int_equal(tu_stop(srv, SIGTERM, 10000), 0);
    nwb_test_rmtree(dir);
}

/* A normal client still gets served. */
static void still_serves(int port)
{
    assert_int_equal(nwb_test_http(port, "GET", "/v1/health", NULL, NULL, 0, NULL, 0), 200);
    assert_int_equal(tu_post(port, "text/plain", "ok", "ok", -1, "fine\n", 5, NULL, 0), 200);
}

/* Send @p req on a fresh connection; expect @p status and, when @p closes, the close. */
static void expect(int port, const char *req, size_t len, int status, int closes)
{
    struct reply r;
    int fd = nwb_test_connect(port);

    assert_true(fd >= 0);
    assert_int_equal(nwb_test_send_all(fd, req, len), 0);
    assert_int_equal(read_reply(fd, &r), 0);
    if (r.status != status) {
        fail_msg("expected %d, got %d for: %.60s", status, r.status, req);
    }
    if (closes) {
        assert_non_null(strstr(r.head, "\r\nConnection: close\r\n"));
        assert_true(nwb_test_wait_closed(fd, 5000));
    }
    close(fd);
}

#define EXPECT(port, lit, status, closes) expect(port, lit, sizeof(lit) - 1, status, closes)

static void test_malformed_requests_are_refused_and_service_continues(void **state)
{
    struct nwb_test_server srv;
    char dir[512];
    const int p = (start(&srv, dir, NULL), srv.port);

    (void)state;
    EXPECT(p,
           "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
           "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
           400, 1);
    EXPECT(p,
           "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
           "Content-Length: 3\r\n\r\nabc",
           400, 1);
    EXPECT(p,
           "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
           "Content-Length: 4\r\n\r\nabcd",
           400, 1);
    EXPECT(p, "GET /v1/health HTTP/1.1\nHost: x\n\n", 400, 1);
    EXPECT(p, "GET /v1/health HTTP/1.1\r\nHost: x\r\n\n", 400, 1);
    EXPECT(p,
           "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\n"
           "Transfer-Encoding: chunked\r\n\r\nnot-hex\r\nabc\r\n0\r\n\r\n",
           400, 1);
    EXPECT(p,
           "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\n"
           "Transfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n",
           400, 1);
    EXPECT(p, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 garbage\r\n\r\n", 400, 1);
    EXPECT(p, "GET /v1/health HTTP/1.1\r\nBad Header: x\r\n\r\n", 400, 1);
    EXPECT(p, "GET /v1/health HTTP/2.0\r\n\r\n", 505, 1);
    /* Upgrade is not offered: answered, then closed. */
    EXPECT(p, "GET /v1/health HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", 200,
           1);
    still_serves(p);
    assert_true(tu_metric(p, "nwb_requests_total{code=\"400\"}") >= 9);
    finish(&srv, dir);
}

/*
 * RFC 9112 section 6.1: a transfer coding the server does not implement is 501 and the
 * connection closes; only one "chunked" is implemented. Before, "gzip, chunked" was accepted
 * and the gzip bytes written to the run's log as text.
 */
static void test_transfer_codings_other_than_one_chunked_are_501_and_close(void **state)
{
    static const char *const codings[] = {
        "Transfer-Encoding: gzip, chunked\r\n",
        "Transfer-Encoding: identity\r\n",
        "Transfer-Encoding: chunked, chunked\r\n",
        "Transfer-Encoding: x-nwb-unknown\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
    };
    struct nwb_test_server srv;
    char dir[512];
    char req[512];
    char log[1024];
    struct reply r;

    (void)state;
    start(&srv, dir, NULL);
    for (size_t i = 0; i < NWB_ARRAY_SIZE(codings); i++) {
        const int n = snprintf(req, sizeof(req),
                               "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\n"
                               "X-NWB-Program: te\r\nX-NWB-Run: r%zu\r\n%s\r\n"
                               "6\r\ngzip?\n\r\n0\r\n\r\n",
                               i, codings[i]);
        char run[8];
        int fd = nwb_test_connect(srv.port);

        assert_true(fd >= 0);
        assert_int_equal(nwb_test_send_all(fd, req, (size_t)n), 0);
        assert_int_equal(read_reply(fd, &r), 0);
        if (r.status != 501) {
            fail_msg("expected 501, got %d for %s", r.status, codings[i]);
        }
        assert_non_null(strstr(r.head, "HTTP/1.1 501 Not Implemented\r\n"));
        assert_non_null(strstr(r.head, "\r\nConnection: close\r\n"));
        assert_non_null(strstr(r.body, "Transfer-Encoding"));
        assert_true(nwb_test_wait_closed(fd, 5000));
        close(fd);
        /* Nothing of the body reached a log. */
        snprintf(run, sizeof(run), "r%zu", i);
        assert_int_equal(nwb_test_find_run_log(dir, "te", run, log, sizeof(log)), -1);
    }
    /* One chunked, in any case, is still served. */
    EXPECT(srv.port,
           "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nTransfer-Encoding: Chunked\r\n"
           "\r\n3\r\nok\n\r\n0\r\n\r\n",
           200, 0);
    assert_int_equal(tu_metric(srv.port, "nwb_requests_total{code=\"501\"}"),
                     (long long)NWB_ARRAY_SIZE(codings));
    still_serves(srv.port);
    finish(&srv, dir);
}

static void test_routing_errors_keep_the_connection(void **state)
{
    struct nwb_test_server srv;
    char dir[512];
    struct reply r;
    int fd;

    (void)state;
    start(&srv, dir, NULL);
    fd = nwb_test_connect(srv.port);
    assert_int_equal(send_str(fd, "GET /nope HTTP/1.1\r\n\r\n"), 0);
    assert_int_equal(read_reply(fd, &r), 0);
    assert_int_equal(r.status, 404);
    assert_int_equal(send_str(fd, "GET /v1/log HTTP/1.1\r\n\r\n"), 0);
    assert_int_equal(read_reply(fd, &r), 0);
    assert_int_equal(r.status, 405);
    assert_non_null(strstr(r.head, "\r\nAllow: POST\r\n"));
    assert_int_equal(send_str(fd, "POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"), 0);
    assert_int_equal(read_reply(fd, &r), 0);
    assert_int_equal(r.status, 405);
    assert_non_null(strstr(r.head, "\r\nAllow: GET\r\n"));
    /* 415: the body is skipped, the connection stays usable. */
    assert_int_equal(send_str(fd, "POST /v1/log HTTP/1.1\r\nContent-Type: application/json\r\n"
                                  "Content-Length: 9\r\n\r\n{\"a\": 1}\n"),
                     0);
    assert_int_equal(read_reply(fd, &r), 0);
    assert_int_equal(r.status, 415);
    assert_non_null(strstr(r.body, "Content-Type must be"));
    assert_int_equal(send_str(fd, "POST /v1/log HTTP/1.1\r\nContent-Length: 2\r\n\r\nx\n"), 0);
    assert_int_equal(read_reply(fd, &r), 0);
    assert_int_equal(r.status, 415);
    assert_int_equal(send_str(fd, "GET /v1/health?verbose=1 HTTP/1.1\r\n\r\n"), 0);
    assert_int_equal(read_reply(fd, &r), 0);
    assert_int_equal(r.status, 200);
    assert_null(strstr(r.head, "Connection: close"));
    close(fd);
    finish(&srv, dir);
}

/* Everything the server sends until it closes (at most @p cap - 1 bytes), NUL-terminated. */
static size_t read_until_closed(int fd, char *buf, size_t cap)
{
    size_t used = 0;

    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t n;

        if (poll(&p, 1, 5000) <= 0) {
            break; /* the caller's asserts say what was missing */
        }
        n = recv(fd, buf + used, cap - 1 - used, 0);
        if (n <= 0) {
            break;
        }
        used += (size_t)n;
        if (used == cap - 1) {
            break;
        }
    }
    buf[used] = '\0';
    return used;
}

/* A HEAD answer carries no body, so the next pipelined answer starts right after its head. */
static void test_head_answer_has_no_body(void **state)
{
    struct nwb_test_server srv;
    char dir[512], all[8192];
    const char *next;
    int fd;

    (void)state;
    start(&srv, dir, NULL);
    fd = nwb_test_connect(srv.port);
    assert_int_equal(send_str(fd, "HEAD /v1/health HTTP/1.1\r\n\r\n"
                                  "GET /v1/health HTTP/1.1\r\nConnection: close\r\n\r\n"),
                     0);
    read_until_closed(fd, all, sizeof(all));
    close(fd);
    assert_int_equal(strncmp(all, "HTTP/1.1 405 ", 13), 0);
    assert_non_null(strstr(all, "\r\nContent-Length: "));
    next = strstr(all, "\r\n\r\n");
    assert_non_null(next);
    assert_int_equal(strncmp(next + 4, "HTTP/1.1 200 ", 13), 0);
    finish(&srv, dir);
}

/*
 * Requests pipelined behind one the worker writes, then a half-close: each complete request
 * is answered in order, then the connection closes; an incomplete tail is dropped.
 */
static void test_pipelined_requests_after_half_close_are_all_answered(void **state)
{
    static const char req[] = "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\n"
                              "X-NWB-Program: pipe\r\nX-NWB-Run: halfclose\r\n"
                              "Content-Length: 17\r\n\r\npipelined line 1\n"
                              "GET /v1/health HTTP/1.1\r\n\r\n"
                              "GET /metrics HTTP/1.1\r\n\r\n"
                              "GET /v1/health HTTP/1.1\r\nContent-Le"; /* incomplete */
    struct nwb_test_server srv;
    char dir[512], all[65536], log[1024];
    const char *p200;
    int fd;

    (void)state;
    start(&srv, dir, NULL);
    fd = nwb_test_connect(srv.port);
    assert_int_equal(send_str(fd, req), 0);
    assert_int_equal(shutdown(fd, SHUT_WR), 0);
    read_until_closed(fd, all, sizeof(all));
    close(fd);
    assert_int_equal(nwb_test_count(all, "HTTP/1.1 "), 3);
    p200 = strstr(all, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n");
    assert_true(p200 == all); /* the log write's answer first */
    assert_non_null(strstr(all, "\"status\":\"ok\""));
    assert_non_null(strstr(all, "nwb_requests_total"));
    assert_int_equal(nwb_test_find_run_log(dir, "pipe", "halfclose", log, sizeof(log)), 0);
    assert_true(nwb_test_wait_file_contains(log, "pipelined line 1", 5000));
    still_serves(srv.port);
    finish(&srv, dir);
}

static void test_post_without_length_is_411(void **state)
{
    struct nwb_test_server srv;
    char dir[512];

    (void)state;
    start(&srv, dir, NULL);
    EXPECT(srv.port, "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\n\r\nline\n", 411, 1);
    still_serves(srv.port);
    finish(&srv, dir);
}

static void test_seq_must_be_a_decimal_u64(void **state)
{
    struct nwb_test_server srv;
    char dir[512];
    static const char *const bad[] = {"abc", "-1", "1.5", "", "18446744073709551616", "0x10"};
    char headers[256];

    (void)state;
    start(&srv, dir, NULL);
    for (size_t i = 0; i < NWB_ARRAY_SIZE(bad); i++) {
        snprintf(headers, sizeof(headers), "Content-Type: text/plain\r\nX-NWB-Seq: %s\r\n", bad[i]);
        assert_int_equal(nwb_test_http(srv.port, "POST", "/v1/log", headers, "x\n", 2, NULL, 0),
                         400);
    }
    snprintf(headers, sizeof(headers),
             "Content-Type: text/plain\r\nX-NWB-Seq: 18446744073709551615\r\n");
    assert_int_equal(nwb_test_http(srv.port, "POST", "/v1/log", headers, "x\n", 2, NULL, 0), 200);
    finish(&srv, dir);
}

/* A request with exactly @p head_bytes of head (padding in one header) and a 2-byte body. */
static size_t padded_post(char *buf, size_t head_bytes)
{
    static const char pre[] = "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\n"
                              "Content-Length: 2\r\nX-Pad: ";
    const size_t fixed = sizeof(pre) - 1 + 4;
    const size_t pad = head_bytes - fixed;

    memcpy(buf, pre, sizeof(pre) - 1);
    memset(buf + sizeof(pre) - 1, 'p', pad);
    memcpy(buf + sizeof(pre) - 1 + pad, "\r\n\r\nx\n", 6);
    return head_bytes + 2;
}

static void test_header_bounds_at_their_edges(void **state)
{
    static const char *const extra[] = {"--max-header-bytes", "1024", "--max-headers", "8", NULL};
    struct nwb_test_server srv;
    char dir[512];
    char buf[2048];
    size_t n;

    (void)state;
    start(&srv, dir, extra);
    n = padded_post(buf, 1024);
    expect(srv.port, buf, n, 200, 0);
    n = padded_post(buf, 1025);
    expect(srv.port, buf, n, 431, 1);
    for (int count = 8; count <= 9; count++) {
        /* Request line + count fields (Content-Type, Content-Length and fillers). */
        n = (size_t)snprintf(buf, sizeof(buf),
                             "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\n"
                             "Content-Length: 2\r\n");
        for (int i = 2; i < count; i++) {
            n += (size_t)snprintf(buf + n, sizeof(buf) - n, "X-F%d: v\r\n", i);
        }
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\r\nx\n");
        expect(srv.port, buf, n, count == 8 ? 200 : 431, count != 8);
    }
    still_serves(srv.port);
    finish(&srv, dir);
}

static void test_body_bound_at_its_edge(void **state)
{
    static const char *const extra[] = {"--max-body-bytes", "1000", NULL};
    struct nwb_test_server srv;
    char dir[512];
    char body[1001];
    char head[256];
    struct reply r;
    int fd;

    (void)state;
    start(&srv, dir, extra);
    memset(body, 'b', sizeof(body));
    assert_int_equal(tu_post(srv.port, "text/plain", "edge", "e", -1, body, 1000, NULL, 0), 200);
    /* 1001 is refused from the head alone, before any body byte is sent. */
    fd = nwb_test_connect(srv.port);
    snprintf(head, sizeof(head),
             "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: 1001\r\n\r\n");
    assert_int_equal(send_str(fd, head), 0);
    assert_int_equal(read_reply(fd, &r), 0);
    assert_int_equal(r.status, 413);
    assert_true(nwb_test_wait_closed(fd, 5000));
    close(fd);
    /* Chunked: the cap applies to the accumulated body. */
    for (int total = 1000; total <= 1001; total++) {
        char req[2048];
        size_t n = (size_t)snprintf(req, sizeof(req),
                                    "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\n"
                                    "Transfer-Encoding: chunked\r\n\r\n1f4\r\n");

        memcpy(req + n, body, 500);
        n += 500;
        n += (size_t)snprintf(req + n, sizeof(req) - n, "\r\n%x\r\n", total - 500);
        memcpy(req + n, body, (size_t)total - 500);
        n += (size_t)total - 500;
        n += (size_t)snprintf(req + n, sizeof(req) - n, "\r\n0\r\n\r\n");
        expect(srv.port, req, n, total == 1000 ? 200 : 413, total != 1000);
    }
    still_serves(srv.port);
    finish(&srv, dir);
}

static void test_slow_requests_get_408_and_quiet_connections_close(void **state)
{
    static const char *const extra[] = {"--request-timeout-ms", "300", "--idle-timeout-ms", "400",
                                        NULL};
    static const char req[] = "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\n"
                              "Content-Length: 5\r\n\r\nslow\n";
    struct nwb_test_server srv;
    char dir[512];
    struct reply r;
    long long t0;
    long long dt;
    int fd;

    (void)state;
    start(&srv, dir, extra);
    /* Under the limit: the request arrives in three pieces over ~100 ms. */
    fd = nwb_test_connect(srv.port);
    for (size_t off = 0; off < sizeof(req) - 1; off += 30) {
        size_t n = sizeof(req) - 1 - off < 30 ? sizeof(req) - 1 - off : 30;

        assert_int_equal(nwb_test_send_all(fd, req + off, n), 0);
        poll(NULL, 0, 35); /* the slowness under test */
    }
    assert_int_equal(read_reply(fd, &r), 0);
    assert_int_equal(r.status, 200);
    close(fd);
    /* Over it: a head that stops half-way, and a body that stops half-way. */
    for (int body = 0; body <= 1; body++) {
        fd = nwb_test_connect(srv.port);
        t0 = nwb_test_now_ms();
        assert_int_equal(nwb_test_send_all(fd, req, body ? sizeof(req) - 3 : 20), 0);
        assert_int_equal(read_reply(fd, &r), 0);
        dt = nwb_test_now_ms() - t0;
        assert_int_equal(r.status, 408);
        assert_true(dt >= 280 && dt < 3000);
        assert_true(nwb_test_wait_closed(fd, 5000));
        close(fd);
    }
    /* A keep-alive connection with nothing to say is closed after the idle timeout. */
    fd = nwb_test_connect(srv.port);
    assert_int_equal(send_str(fd, "GET /v1/health HTTP/1.1\r\n\r\n"), 0);
    assert_int_equal(read_reply(fd, &r), 0);
    t0 = nwb_test_now_ms();
    assert_true(nwb_test_wait_closed(fd, 5000));
    dt = nwb_test_now_ms() - t0;
    assert_true(dt >= 380 && dt < 3000);
    close(fd);
    assert_int_equal(tu_metric(srv.port, "nwb_request_timeouts_total"), 2);
    still_serves(srv.port);
    finish(&srv, dir);
}

static void test_connection_cap_refuses_the_next_and_recovers(void **state)
{
    static const char *const extra[] = {"--max-connections", "3", NULL};
    struct nwb_test_server srv;
    char dir[512];
    struct reply r;
    int fds[3];
    int over;
    long long deadline;
    int status = -1;

    (void)state;
    start(&srv, dir, extra);
    for (int i = 0; i < 3; i++) {
        fds[i] = nwb_test_connect(srv.port);
        assert_int_equal(send_str(fds[i], "GET /v1/health HTTP/1.1\r\n\r\n"), 0);
        assert_int_equal(read_reply(fds[i], &r), 0); /* accepted and counted */
        assert_int_equal(r.status, 200);
    }
    over = nwb_test_connect(srv.port);
    assert_true(over >= 0);
    if (read_reply(over, &r) == 0) {
        assert_int_equal(r.status, 503);
        assert_non_null(strstr(r.head, "Retry-After: 1"));
    }
    assert_true(nwb_test_wait_closed(over, 5000));
    close(over);
    /* The open ones still work; once one closes, a newcomer is served. */
    assert_int_equal(send_str(fds[1], "GET /v1/health HTTP/1.1\r\n\r\n"), 0);
    assert_int_equal(read_reply(fds[1], &r), 0);
    assert_int_equal(r.status, 200);
    close(fds[0]);
    deadline = nwb_test_now_ms() + 5000;
    while (status != 200 && nwb_test_now_ms() < deadline) {
        status = nwb_test_http(srv.port, "GET", "/v1/health", NULL, NULL, 0, NULL, 0);
        if (status != 200) {
            poll(NULL, 0, 10); /* the server frees the closed slot asynchronously */
        }
    }
    assert_int_equal(status, 200);
    close(fds[1]);
    close(fds[2]);
    finish(&srv, dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_malformed_requests_are_refused_and_service_continues,
                                  tu_reap),
        cmocka_unit_test_teardown(test_transfer_codings_other_than_one_chunked_are_501_and_close,
                                  tu_reap),
        cmocka_unit_test_teardown(test_routing_errors_keep_the_connection, tu_reap),
        cmocka_unit_test_teardown(test_head_answer_has_no_body, tu_reap),
        cmocka_unit_test_teardown(test_pipelined_requests_after_half_close_are_all_answered,
                                  tu_reap),
        cmocka_unit_test_teardown(test_post_without_length_is_411, tu_reap),
        cmocka_unit_test_teardown(test_seq_must_be_a_decimal_u64, tu_reap),
        cmocka_unit_test_teardown(test_header_bounds_at_their_edges, tu_reap),
        cmocka_unit_test_teardown(test_body_bound_at_its_edge, tu_reap),
        cmocka_unit_test_teardown(test_slow_requests_get_408_and_quiet_connections_close, tu_reap),
        cmocka_unit_test_teardown(test_connection_cap_refuses_the_next_and_recovers, tu_reap),
    };

    return cmocka_run_group_tests_name("server.http_errors", tests, NULL, NULL);
}
