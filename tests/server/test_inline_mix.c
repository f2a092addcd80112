/* SPDX-License-Identifier: MIT */
/*
 * test_inline_mix.c - the inline path and the log worker on one run: several
 * keep-alive connections post to the same run, small text bodies (written by
 * the loop thread when the worker is idle) between bodies above
 * NWB__INLINE_BODY_MAX (always the worker's). log.txt must hold every line
 * exactly once and each connection's lines in the order it sent them, and
 * both paths must really have been taken (nwb_inline_batches_total). And a
 * kill -9 between inline writes still leaves each seq's lines once after the
 * client resends what it is unsure of.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server_test_util.h"

#define CLIENTS     6
#define REQUESTS    30
#define SMALL_LINES 20   /* ~0.6 KiB: inline when the worker is idle */
#define LARGE_LINES 2400 /* ~72 KiB: above the 16 KiB inline bound, so the worker's */
#define LARGE_EVERY 3    /* every third request of a connection is large */
#define LINE_LEN    30   /* "conn 00 req 000 line 0000 ok\n" is 29 bytes */
#define BODY_CAP    (LARGE_LINES * LINE_LEN + 64)

struct client {
    int port;
    int id;
    int ok;
};

static int lines_of(int req)
{
    return req % LARGE_EVERY == LARGE_EVERY - 1 ? LARGE_LINES : SMALL_LINES;
}

static void *client_main(void *arg)
{
    struct client *c = arg;
    int fd = nwb_test_connect(c->port);
    char *body = malloc(BODY_CAP);

    for (int i = 0; fd >= 0 && body != NULL && i < REQUESTS; i++) {
        char head[256];
        size_t blen = 0;
        int n;

        for (int k = 0; k < lines_of(i); k++) {
            blen += (size_t)snprintf(body + blen, BODY_CAP - blen,
                                     "conn %02d req %03d line %04d ok\n", c->id, i, k);
        }
        /* No X-NWB-Seq: the connections share the run, a seq would make them duplicates. */
        n = snprintf(head, sizeof(head),
                     "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nX-NWB-Program: mix\r\n"
                     "X-NWB-Run: shared\r\nContent-Length: %zu\r\n\r\n",
                     blen);
        if (!tu_post_on(fd, head, (size_t)n, body, blen)) {
            break;
        }
        c->ok++;
    }
    if (fd >= 0) {
        close(fd);
    }
    free(body);
    return NULL;
}

/* Every "conn C req R line L ok" line of @p text: each connection's (R, L) strictly rising,
 * and the count of each connection's lines in @p seen. Line by line with memchr and a copy:
 * the sanitizers' strstr and sscanf measure the whole 6 MB text on every call. */
static void check_order(const char *text, long long seen[CLIENTS])
{
    const char *p = text;
    const char *const end = text + strlen(text);
    long long last[CLIENTS];

    for (int i = 0; i < CLIENTS; i++) {
        last[i] = -1;
        seen[i] = 0;
    }
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const size_t len = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
        char line[256];
        const char *hit;
        int conn, req, k;

        assert_true(len < sizeof(line));
        memcpy(line, p, len);
        line[len] = '\0';
        hit = strstr(line, " conn ");
        assert_non_null(hit);
        assert_int_equal(sscanf(hit, " conn %d req %d line %d ok", &conn, &req, &k), 3);
        assert_true(conn >= 0 && conn < CLIENTS);
        assert_true((long long)req * 10000 + k > last[conn]);
        last[conn] = (long long)req * 10000 + k;
        seen[conn]++;
        p = nl != NULL ? nl + 1 : end;
    }
}

static void test_inline_and_worker_bodies_keep_every_line_once_in_order(void **state)
{
    struct nwb_test_server srv;
    struct client clients[CLIENTS];
    pthread_t threads[CLIENTS];
    long long seen[CLIENTS];
    long long want = 0;
    long long inline_n;
    char dir[512];
    char *text;

    (void)state;
    for (int i = 0; i < REQUESTS; i++) {
        want += lines_of(i);
    }
    assert_int_equal(nwb_test_tmpdir("mix", dir, sizeof(dir)), 0);
    assert_int_equal(tu_start(&srv, dir, 0, NULL), 0);
    for (int i = 0; i < CLIENTS; i++) {
        clients[i] = (struct client){srv.port, i, 0};
        assert_int_equal(pthread_create(&threads[i], NULL, client_main, &clients[i]), 0);
    }
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(clients[i].ok, REQUESTS);
    }
    text = tu_run_log(dir, "mix", "shared");
    assert_non_null(text);
    assert_int_equal(tu_count(text, "\n"), CLIENTS * want);
    check_order(text, seen);
    for (int i = 0; i < CLIENTS; i++) {
        assert_int_equal(seen[i], want);
    }
    free(text);
    assert_int_equal(tu_metric(srv.port, "nwb_batches_total"), CLIENTS * REQUESTS);
    /* Both paths ran: the large bodies never inline, and the small ones after the run opened
     * found the worker idle at least once. */
    inline_n = tu_metric(srv.port, "nwb_inline_batches_total");
    assert_true(inline_n > 0);
    assert_true(inline_n <= CLIENTS * (REQUESTS - REQUESTS / LARGE_EVERY));
    assert_int_equal(tu_metric(srv.port, "nwb_queue_jobs"), 0);
    assert_int_equal(tu_stop(&srv, SIGTERM, 10000), 0);
    nwb_test_rmtree(dir);
}

/* Post @p from..@p to (seq numbers) to run "k9", one small text body each, on one
 * connection; returns how many were answered 200. */
static int post_seqs(int port, int from, int to)
{
    int fd = nwb_test_connect(port);
    int ok = 0;

    for (int seq = from; fd >= 0 && seq <= to; seq++) {
        char head[256], body[512];
        size_t blen = 0;
        int n;

        for (int k = 0; k < 8; k++) {
            blen +=
                (size_t)snprintf(body + blen, sizeof(body) - blen, "seq %03d line %d\n", seq, k);
        }
        n = snprintf(head, sizeof(head),
                     "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nX-NWB-Program: mix\r\n"
                     "X-NWB-Run: k9\r\nX-NWB-Seq: %d\r\nContent-Length: %zu\r\n\r\n",
                     seq, blen);
        if (!tu_post_on(fd, head, (size_t)n, body, blen)) {
            break;
        }
        ok++;
    }
    if (fd >= 0) {
        close(fd);
    }
    return ok;
}

static void test_kill9_after_inline_writes_keeps_each_seq_once(void **state)
{
    struct nwb_test_server srv;
    char dir[512];
    char *text;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("mix9", dir, sizeof(dir)), 0);
    assert_int_equal(tu_start(&srv, dir, 0, NULL), 0);
    assert_int_equal(post_seqs(srv.port, 1, 20), 20);
    /* Seqs 2..20 went inline (the run was open, the worker idle). */
    assert_true(tu_metric(srv.port, "nwb_inline_batches_total") > 0);
    (void)tu_stop(&srv, SIGKILL, 10000); /* its status: killed by the signal */
    assert_int_equal(tu_start(&srv, dir, 0, NULL), 0);
    /* The client resends from 15: 15..20 are duplicates, 21..30 new. */
    assert_int_equal(post_seqs(srv.port, 15, 30), 16);
    assert_int_equal(tu_metric(srv.port, "nwb_duplicate_batches_total"), 6);
    assert_int_equal(tu_stop(&srv, SIGTERM, 10000), 0);
    text = tu_run_log(dir, "mix", "k9");
    assert_non_null(text);
    assert_int_equal(tu_count(text, "\n"), 30 * 8);
    for (int seq = 1; seq <= 30; seq++) {
        char line[32];

        snprintf(line, sizeof(line), " seq %03d line 7\n", seq);
        assert_int_equal(tu_count(text, line), 1);
    }
    free(text);
    nwb_test_rmtree(dir);
}

/* NWB__INLINE_BODY_MAX (server_int.h): a body of exactly this many bytes goes inline, one more
 * byte goes to the worker. */
#define INLINE_BODY_MAX 16384

/* A text body of exactly @p len bytes (lines of 64, the last one shorter) posted to run "edge". */
static void post_len(int port, size_t len)
{
    static char body[INLINE_BODY_MAX + 1];

    memset(body, 'x', len);
    for (size_t i = 63; i < len; i += 64) {
        body[i] = '\n';
    }
    body[len - 1] = '\n';
    assert_int_equal(tu_post(port, "text/plain", "mix", "edge", -1, body, len, NULL, 0), 200);
}

static void test_inline_bound_is_exact(void **state)
{
    struct nwb_test_server srv;
    char dir[512];

    (void)state;
    assert_int_equal(nwb_test_tmpdir("mixedge", dir, sizeof(dir)), 0);
    assert_int_equal(tu_start(&srv, dir, 0, NULL), 0);
    post_len(srv.port, 100); /* opens the run: the worker's */
    assert_int_equal(tu_metric(srv.port, "nwb_inline_batches_total"), 0);
    post_len(srv.port, INLINE_BODY_MAX);
    assert_int_equal(tu_metric(srv.port, "nwb_inline_batches_total"), 1);
    post_len(srv.port, INLINE_BODY_MAX + 1);
    assert_int_equal(tu_metric(srv.port, "nwb_inline_batches_total"), 1);
    post_len(srv.port, INLINE_BODY_MAX);
    assert_int_equal(tu_metric(srv.port, "nwb_inline_batches_total"), 2);
    assert_int_equal(tu_metric(srv.port, "nwb_batches_total"), 4);
    assert_int_equal(tu_stop(&srv, SIGTERM, 10000), 0);
    nwb_test_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_inline_and_worker_bodies_keep_every_line_once_in_order,
                                  tu_reap),
        cmocka_unit_test_teardown(test_kill9_after_inline_writes_keeps_each_seq_once, tu_reap),
        cmocka_unit_test_teardown(test_inline_bound_is_exact, tu_reap),
    };

    return cmocka_run_group_tests_name("server.inline_mix", tests, NULL, NULL);
}
