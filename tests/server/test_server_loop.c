/* SPDX-License-Identifier: MIT */
/*
 * test_server_loop.c - the server library in-process: nwb_server_create() on
 * a private loop (port 0) run by a second thread, real sockets from the test
 * thread. Keep-alive, pipelining, Expect: 100-continue, chunked and large
 * bodies, the body budget, shutdown releasing every handle (uv_loop_close()
 * is 0), and a failed create unwinding cleanly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nwb/error.h"
#include "nwb/server.h"
#include "json_check.h"
#include "server_int.h"
#include "server_inproc.h"
#include "server_test_util.h"

struct fx {
    uv_loop_t loop;
    nwb_server_t *srv;
    pthread_t thread;
    char dir[512];
    int port;
};

static void *loop_main(void *arg)
{
    struct fx *f = arg;

    uv_run(&f->loop, UV_RUN_DEFAULT);
    return NULL;
}

static struct fx *start(nwb_server_config_t *cfg)
{
    struct fx *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    f->port = tu_inproc_create(&f->loop, "srvloop", cfg, f->dir, sizeof(f->dir), &f->srv);
    assert_int_equal(pthread_create(&f->thread, NULL, loop_main, f), 0);
    return f;
}

/* Stop (unless the test already asked), join, and check nothing leaked. */
static void stop_ex(struct fx *f, int ask)
{
    if (ask) {
        nwb_server_request_stop(f->srv);
    }
    tu_inproc_join(f->thread, f->srv, &f->loop, f->dir);
    free(f);
}

static void stop(struct fx *f)
{
    stop_ex(f, 1);
}

/* Poll /metrics until @p name reads @p value (5 s at most). */
static void wait_metric(int port, const char *name, long long value)
{
    long long deadline = nwb_test_now_ms() + 5000;

    while (tu_metric(port, name) != value) {
        if (nwb_test_now_ms() > deadline) {
            fail_msg("%s never reached %lld", name, value);
        }
        poll(NULL, 0, 2);
    }
}

static struct fx *start_default(void)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;

    return start(&cfg);
}

static int send_str(int fd, const char *s)
{
    return nwb_test_send_all(fd, s, strlen(s));
}

static const char post_head[] = "POST /v1/log HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
                                "X-NWB-Program: loop\r\nX-NWB-Run: ka\r\n";

static void test_keep_alive_connection_serves_many_requests(void **state)
{
    struct fx *f = start_default();
    int fd = nwb_test_connect(f->port);
    char req[512];
    char *text;

    (void)state;
    assert_true(fd >= 0);
    for (int i = 0; i < 200; i++) {
        char body[32];
        int status;
        int blen = snprintf(body, sizeof(body), "line %d\n", i);
        int n = snprintf(req, sizeof(req), "%sX-NWB-Seq: %d\r\nContent-Length: %d\r\n\r\n%s",
                         post_head, i + 1, blen, body);

        assert_int_equal(nwb_test_send_all(fd, req, (size_t)n), 0);
        assert_int_equal(nwb_test_read_response(fd, &status, NULL, 0), 0);
        assert_int_equal(status, 200);
    }
    close(fd);
    text = tu_run_log(f->dir, "loop", "ka");
    assert_non_null(text);
    assert_int_equal(tu_count(text, " loop line "), 200);
    assert_non_null(strstr(text, " loop line 199\n"));
    free(text);
    stop(f);
}

/* Everything the server sends until it closes (at most @p cap - 1 bytes, NUL-terminated). */
static size_t read_until_closed(int fd, char *buf, size_t cap)
{
    size_t used = 0;

    for (;;) {
        ssize_t n = recv(fd, buf + used, cap - 1 - used, 0);

        if (n <= 0) {
            break;
        }
        used += (size_t)n;
    }
    buf[used] = '\0';
    return used;
}

static void test_pipelined_requests_are_answered_in_order(void **state)
{
    static const char empty_ok[] =
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n" NWB__HTTP_SECURITY_HEADERS "\r\n";
    struct fx *f = start_default();
    int fd = nwb_test_connect(f->port);
    char resp[16384];
    char reqs[2048];
    const char *p;
    int n;

    (void)state;
    n = snprintf(reqs, sizeof(reqs),
                 "GET /v1/health HTTP/1.1\r\n\r\n"
                 "%sContent-Length: 4\r\n\r\npipe"
                 "GET /nope HTTP/1.1\r\n\r\n"
                 "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n",
                 post_head);
    assert_int_equal(nwb_test_send_all(fd, reqs, (size_t)n), 0);
    read_until_closed(fd, resp, sizeof(resp)); /* Connection: close honoured */
    close(fd);
    p = strstr(resp, "HTTP/1.1 200 OK\r\n");
    assert_ptr_equal(p, resp);
    assert_non_null(strstr(p, "\"status\":\"ok\""));
    p = strstr(p + 1, "HTTP/1.1 ");
    assert_non_null(p);
    assert_memory_equal(p, empty_ok, sizeof(empty_ok) - 1);
    p = strstr(p + 1, "HTTP/1.1 ");
    assert_non_null(p);
    assert_memory_equal(p, "HTTP/1.1 404 ", 13);
    p = strstr(p + 1, "HTTP/1.1 ");
    assert_non_null(p);
    assert_memory_equal(p, "HTTP/1.1 200 ", 13);
    assert_non_null(strstr(p, "Connection: close\r\n"));
    assert_non_null(strstr(p, "nwb_records_total 1\n"));
    assert_null(strstr(p + 1, "HTTP/1.1 "));
    stop(f);
}

static void test_expect_continue_gets_100_before_the_body(void **state)
{
    struct fx *f = start_default();
    int fd = nwb_test_connect(f->port);
    char head[512];
    int status;
    char *text;

    (void)state;
    snprintf(head, sizeof(head), "%sExpect: 100-continue\r\nContent-Length: 9\r\n\r\n", post_head);
    assert_int_equal(send_str(fd, head), 0);
    assert_int_equal(nwb_test_read_response(fd, &status, NULL, 0), 0);
    assert_int_equal(status, 100);
    assert_int_equal(send_str(fd, "continued"), 0);
    assert_int_equal(nwb_test_read_response(fd, &status, NULL, 0), 0);
    assert_int_equal(status, 200);
    close(fd);
    text = tu_run_log(f->dir, "loop", "ka");
    assert_non_null(strstr(text, " loop continued\n"));
    free(text);
    stop(f);
}

static void test_chunked_and_large_bodies_land_whole(void **state)
{
    struct fx *f = start_default();
    int fd = nwb_test_connect(f->port);
    const size_t big = 3u * 1024u * 1024u;
    char *body = malloc(big + 1); /* + the last snprintf NUL */
    char head[512];
    int status;
    char *text;

    (void)state;
    assert_int_equal(send_str(fd, "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\n"
                                  "X-NWB-Program: loop\r\nX-NWB-Run: big\r\n"
                                  "Transfer-Encoding: chunked\r\n\r\n"
                                  "6\r\nchunk-\r\n7\r\none\ntwo\r\n0\r\n\r\n"),
                     0);
    assert_int_equal(nwb_test_read_response(fd, &status, NULL, 0), 0);
    assert_int_equal(status, 200);
    /* 3 MiB of numbered lines, sent in uneven pieces: read straight into the body buffer. */
    for (size_t i = 0; i < big; i += 16) {
        snprintf(body + i, 17, "%015zu\n", i / 16);
    }
    snprintf(head, sizeof(head),
             "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nX-NWB-Program: loop\r\n"
             "X-NWB-Run: big\r\nContent-Length: %zu\r\n\r\n",
             big);
    assert_int_equal(send_str(fd, head), 0);
    for (size_t off = 0; off < big;) {
        size_t piece = big - off < 77777 ? big - off : 77777;

        assert_int_equal(nwb_test_send_all(fd, body + off, piece), 0);
        off += piece;
    }
    assert_int_equal(nwb_test_read_response(fd, &status, NULL, 0), 0);
    assert_int_equal(status, 200);
    close(fd);
    text = tu_run_log(f->dir, "loop", "big");
    assert_non_null(text);
    assert_non_null(strstr(text, " loop chunk-one\n"));
    assert_non_null(strstr(text, " loop two\n"));
    assert_non_null(strstr(text, " loop 000000000000000\n"));
    assert_non_null(strstr(text, " loop 000000000196607\n"));
    assert_int_equal(tu_count(text, "\n"), 2 + (int)(big / 16));
    free(text);
    free(body);
    stop(f);
}

static void test_body_budget_makes_requests_wait_not_fail(void **state)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    struct fx *f;
    int a, b;
    char head[512];
    int status;
    char *text;

    (void)state;
    cfg.max_body_bytes = 1000;
    cfg.max_buffered_bytes = 1000;
    f = start(&cfg);
    a = nwb_test_connect(f->port);
    b = nwb_test_connect(f->port);
    snprintf(head, sizeof(head), "%sContent-Length: 600\r\n\r\n", post_head);
    /* a holds 600 of the 1000 bytes while its body trickles in ... */
    assert_int_equal(send_str(a, head), 0);
    assert_int_equal(send_str(a, "first-half "), 0);
    wait_metric(f->port, "nwb_buffered_bytes", 600);
    /* ... so b's 600 must wait for a. */
    assert_int_equal(send_str(b, head), 0);
    wait_metric(f->port, "nwb_budget_waits_total", 1);
    {
        char body[600];

        memset(body, 'b', sizeof(body));
        body[sizeof(body) - 1] = '\n';
        assert_int_equal(nwb_test_send_all(b, body, sizeof(body)), 0);
        memset(body, 'a', sizeof(body) - 11);
        assert_int_equal(nwb_test_send_all(a, body, sizeof(body) - 11), 0);
    }
    assert_int_equal(nwb_test_read_response(a, &status, NULL, 0), 0);
    assert_int_equal(status, 200);
    assert_int_equal(nwb_test_read_response(b, &status, NULL, 0), 0);
    assert_int_equal(status, 200);
    close(a);
    close(b);
    assert_int_equal(tu_metric(f->port, "nwb_budget_waits_total"), 1);
    assert_int_equal(tu_metric(f->port, "nwb_buffered_bytes"), 0);
    text = tu_run_log(f->dir, "loop", "ka");
    assert_int_equal(tu_count(text, " loop first-half aaa"), 1);
    assert_int_equal(tu_count(text, " loop bbbb"), 1);
    free(text);
    stop(f);
}

static void test_create_on_a_used_port_fails_and_unwinds(void **state)
{
    struct fx *f = start_default();
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    nwb_server_t *second = (nwb_server_t *)(uintptr_t)1; /* must come back NULL */
    uv_loop_t loop;
    char err[256];

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    cfg.port = f->port;
    cfg.out_dir = f->dir;
    cfg.handle_signals = 1;
    assert_int_equal(nwb_server_create(&loop, &cfg, &second, err, sizeof(err)), UV_EADDRINUSE);
    assert_null(second);
    assert_non_null(strstr(err, "cannot listen on 127.0.0.1"));
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    cfg.port = 0;
    cfg.max_body_bytes = cfg.max_buffered_bytes + 1;
    assert_int_equal(nwb_server_create(&loop, &cfg, &second, err, sizeof(err)), NWB_ECONFIG);
    stop(f);
}

static void test_shutdown_answers_inflight_and_closes_idle(void **state)
{
    struct fx *f = start_default();
    int idle = nwb_test_connect(f->port);
    int busy = nwb_test_connect(f->port);
    int status;

    (void)state;
    /* An idle keep-alive connection and one mid-head when the stop comes. */
    assert_int_equal(nwb_test_http(f->port, "GET", "/v1/health", NULL, NULL, 0, NULL, 0), 200);
    assert_int_equal(send_str(busy, "GET /v1/health HTTP/1.1\r\n"), 0);
    nwb_server_request_stop(f->srv);
    assert_true(nwb_test_wait_closed(idle, 5000));
    assert_true(nwb_test_wait_closed(busy, 5000));
    assert_int_equal(nwb_test_read_response(busy, &status, NULL, 0), -1);
    close(idle);
    close(busy);
    stop_ex(f, 0);
}

/* GET /v1/health is application/json that a strict parser accepts, with its three fields. */
static void test_health_answer_is_strict_json(void **state)
{
    static const char req[] = "GET /v1/health HTTP/1.1\r\nConnection: close\r\n\r\n";
    struct fx *f = start_default();
    char all[4096];
    const char *body;
    size_t bad = 0;
    int fd = nwb_test_connect(f->port);

    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(send_str(fd, req), 0);
    read_until_closed(fd, all, sizeof(all));
    close(fd);
    assert_int_equal(strncmp(all, "HTTP/1.1 200 OK\r\n", 17), 0);
    body = strstr(all, "\r\n\r\n");
    assert_non_null(body);
    body += 4;
    assert_non_null(strstr(all, "\r\nContent-Type: application/json\r\n"));
    if (nwb_test_json_check(body, strlen(body), &bad) != 0) {
        fail_msg("/v1/health is not JSON at byte %zu: %s", bad, body);
    }
    assert_int_equal(
        strncmp(body, "{\"status\":\"ok\",\"version\":\"" NWB_VERSION_STRING "\",\"uptime_s\":",
                strlen("{\"status\":\"ok\",\"version\":\"" NWB_VERSION_STRING "\",\"uptime_s\":")),
        0);
    stop(f);
}

/* STYLE.md: every destructor, cleanup and close accepts NULL. */
static void test_destroy_and_close_functions_accept_null(void **state)
{
    (void)state;
    assert_int_equal(nwb_server_destroy(NULL), 0);
    nwb_server_shutdown(NULL);
    nwb_server_request_stop(NULL);
    nwb__run_store_close(NULL);
    nwb__names_unref(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keep_alive_connection_serves_many_requests),
        cmocka_unit_test(test_pipelined_requests_are_answered_in_order),
        cmocka_unit_test(test_expect_continue_gets_100_before_the_body),
        cmocka_unit_test(test_chunked_and_large_bodies_land_whole),
        cmocka_unit_test(test_body_budget_makes_requests_wait_not_fail),
        cmocka_unit_test(test_create_on_a_used_port_fails_and_unwinds),
        cmocka_unit_test(test_shutdown_answers_inflight_and_closes_idle),
        cmocka_unit_test(test_health_answer_is_strict_json),
        cmocka_unit_test(test_destroy_and_close_functions_accept_null),
    };

    return cmocka_run_group_tests_name("server.server_loop", tests, NULL, NULL);
}
