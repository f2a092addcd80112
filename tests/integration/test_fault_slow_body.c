/* SPDX-License-Identifier: MIT */
/*
 * test_fault_slow_body.c - a POST /v1/log whose body arrives slower than
 * --request-timeout-ms (Content-Length or chunked, complete lines already
 * sent) gets 408 and a closed connection, and nothing of it is written; the
 * run's seq state is unaffected: after a SIGKILL and restart the same seq is
 * written once, and its resend is a duplicate.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "itest_common.h"

#define LINES      20
#define TIMEOUT_MS 400

/* The text body of batch @p seq: LINES lines "itest-num t<seq-1> n<i> ...". */
static size_t make_body(char *buf, size_t cap, int seq)
{
    size_t n = 0;

    for (int i = 0; i < LINES; i++) {
        n +=
            (size_t)snprintf(buf + n, cap - n, "itest-num t%d n%d slow-body-padding\n", seq - 1, i);
    }
    return n;
}

static int send_head(int fd, int seq, size_t clen, int chunked)
{
    char head[512];
    int n;

    if (chunked) {
        n = snprintf(head, sizeof(head),
                     "POST /v1/log HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                     "X-NWB-Program: slowbody\r\nX-NWB-Run: slow-run\r\nX-NWB-Seq: %d\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n",
                     seq);
    } else {
        n = snprintf(head, sizeof(head),
                     "POST /v1/log HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                     "X-NWB-Program: slowbody\r\nX-NWB-Run: slow-run\r\nX-NWB-Seq: %d\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     seq, clen);
    }
    return nwb_test_send_all(fd, head, (size_t)n);
}

/* Batch @p seq sent at once on a fresh connection. Returns the status or -1. */
static int post_fast(int port, int seq)
{
    char body[4096];
    const size_t blen = make_body(body, sizeof(body), seq);
    const int fd = nwb_test_connect(port);
    int status = -1;

    if (fd < 0) {
        return -1;
    }
    if (send_head(fd, seq, blen, 0) == 0 && nwb_test_send_all(fd, body, blen) == 0) {
        (void)nwb_test_read_response(fd, &status, NULL, 0);
    }
    close(fd);
    return status;
}

/*
 * Batch @p seq with its first half (whole lines) sent at once and the rest one
 * byte per 50 ms, until the server answers. Returns the status; @p *elapsed_ms
 * is the time from the first body byte to the answer, @p *closed whether the
 * server closed the connection after it.
 */
static int post_slow(int port, int seq, int chunked, long long *elapsed_ms, int *closed)
{
    char body[4096], wire[8192];
    const size_t blen = make_body(body, sizeof(body), seq);
    const char *half = strchr(body + blen / 2, '\n') + 1;
    const size_t first = (size_t)(half - body);
    const int fd = nwb_test_connect(port);
    size_t wlen = 0, sent = 0;
    long long start;
    int status = -1;

    *closed = 0;
    if (fd < 0) {
        return -1;
    }
    if (chunked) {
        /* A complete chunk with the first half's lines, then a chunk that never finishes. */
        wlen = (size_t)snprintf(wire, sizeof(wire), "%zx\r\n", first);
        memcpy(wire + wlen, body, first);
        wlen += first;
        wlen += (size_t)snprintf(wire + wlen, sizeof(wire) - wlen, "\r\n%zx\r\n", blen - first);
        sent = wlen; /* up to the second chunk's data */
        memcpy(wire + wlen, half, blen - first);
        wlen += blen - first;
        wlen += (size_t)snprintf(wire + wlen, sizeof(wire) - wlen, "\r\n0\r\n\r\n");
    } else {
        memcpy(wire, body, blen);
        wlen = blen;
        sent = first;
    }
    assert_int_equal(send_head(fd, seq, blen, chunked), 0);
    start = nwb_test_now_ms();
    assert_int_equal(nwb_test_send_all(fd, wire, sent), 0);
    while (nwb_test_now_ms() - start < 10000) {
        struct pollfd p = {.fd = fd, .events = POLLIN};

        /* Wait for the answer for 50 ms; if none, the next byte (never the last one). */
        if (poll(&p, 1, 50) == 1) {
            *elapsed_ms = nwb_test_now_ms() - start;
            (void)nwb_test_read_response(fd, &status, NULL, 0);
            *closed = nwb_test_wait_closed(fd, 5000);
            break;
        }
        if (sent + 1 < wlen && send(fd, wire + sent, 1, MSG_NOSIGNAL) == 1) {
            sent++;
        }
    }
    close(fd);
    return status;
}

static void test_fault_slow_body_gets_408_writes_nothing_and_keeps_seq_state(void **state)
{
    const char *const extra[] = {"--request-timeout-ms", "400", NULL};
    struct nwb_test_server srv;
    char out[512], path[1024];
    long long elapsed = 0;
    char *text;
    int closed = 0;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("fslow", out, sizeof(out)), 0);
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, extra), 0);
    assert_int_equal(post_fast(srv.port, 1), 200);

    /* Seq 2, Content-Length, then seq 3, chunked: both too slow. */
    for (int chunked = 0; chunked <= 1; chunked++) {
        assert_int_equal(post_slow(srv.port, 2 + chunked, chunked, &elapsed, &closed), 408);
        fprintf(stderr, "fault_slow_body: %s: 408 after %lld ms (timeout %d ms)\n",
                chunked ? "chunked" : "content-length", elapsed, TIMEOUT_MS);
        assert_true(elapsed >= TIMEOUT_MS - 50);
        assert_true(elapsed < 5000);
        assert_true(closed);
    }
    assert_int_equal(itest_metric(srv.port, "nwb_request_timeouts_total"), 2);
    assert_int_equal(nwb_test_find_run_log(out, "slowbody", "slow-run", path, sizeof(path)), 0);
    text = nwb_test_read_file(path, NULL);
    assert_non_null(text);
    assert_int_equal(itest_check_numbered(text, 1, LINES), 0); /* seq 1 only, none of t1, t2 */
    assert_null(strstr(text, "itest-num t1 "));
    assert_null(strstr(text, "itest-num t2 "));
    free(text);

    /* The timeouts left no trace in the run's seq state, in memory or on disk. */
    assert_true(WIFSIGNALED(nwb_test_server_stop(&srv, SIGKILL, 5000)));
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, extra), 0);
    for (int seq = 2; seq <= 3; seq++) {
        assert_int_equal(post_fast(srv.port, seq), 200);
        assert_int_equal(post_fast(srv.port, seq), 200); /* the resend: a duplicate */
    }
    assert_int_equal(itest_metric(srv.port, "nwb_duplicate_batches_total"), 2);
    assert_int_equal(itest_check_log(out, "slowbody", "slow-run", 3, LINES), 0);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
    nwb_test_rmtree(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_slow_body_gets_408_writes_nothing_and_keeps_seq_state),
    };

    return cmocka_run_group_tests_name("integration.fault_slow_body", tests, NULL, NULL);
}
