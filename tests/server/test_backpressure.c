/* SPDX-License-Identifier: MIT */
/*
 * test_backpressure.c - many concurrent keep-alive clients against a server
 * whose log queue holds one job and whose body budget holds a few bodies:
 * reading pauses and requests wait, but every request is answered 200 and
 * every line lands exactly once. Nothing accepted is dropped.
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

#define CLIENTS  16
#define REQUESTS 40
#define LINES    60

struct client {
    int port;
    int id;
    int ok;
};

static void *client_main(void *arg)
{
    struct client *c = arg;
    int fd = nwb_test_connect(c->port);
    char body[4096];

    for (int i = 0; fd >= 0 && i < REQUESTS; i++) {
        char head[256];
        size_t blen = 0;
        int n;

        for (int k = 0; k < LINES; k++) {
            blen += (size_t)snprintf(body + blen, sizeof(body) - blen,
                                     "client %02d request %03d line %02d\n", c->id, i, k);
        }
        n = snprintf(head, sizeof(head),
                     "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nX-NWB-Program: bp\r\n"
                     "X-NWB-Run: c%02d\r\nX-NWB-Seq: %d\r\nContent-Length: %zu\r\n\r\n",
                     c->id, i + 1, blen);
        if (!tu_post_on(fd, head, (size_t)n, body, blen)) {
            break;
        }
        c->ok++;
    }
    if (fd >= 0) {
        close(fd);
    }
    return NULL;
}

/* Run every client against a server started with @p extra; check all lines; return its port. */
static void run_clients(struct nwb_test_server *srv, char *dir, const char *const *extra)
{
    struct client clients[CLIENTS];
    pthread_t threads[CLIENTS];

    assert_int_equal(nwb_test_tmpdir("bp", dir, 512), 0);
    assert_int_equal(tu_start(srv, dir, 0, extra), 0);
    for (int i = 0; i < CLIENTS; i++) {
        clients[i] = (struct client){srv->port, i, 0};
        assert_int_equal(pthread_create(&threads[i], NULL, client_main, &clients[i]), 0);
    }
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(clients[i].ok, REQUESTS);
    }
    for (int i = 0; i < CLIENTS; i++) {
        char run[8];
        char *text;

        snprintf(run, sizeof(run), "c%02d", i);
        text = tu_run_log(dir, "bp", run);
        assert_non_null(text);
        assert_int_equal(tu_count(text, "\n"), REQUESTS * LINES);
        for (int r = 0; r < REQUESTS; r++) {
            char line[64];

            snprintf(line, sizeof(line), " bp client %02d request %03d line %02d\n", i, r,
                     LINES - 1);
            assert_int_equal(tu_count(text, line), 1);
        }
        free(text);
    }
    assert_int_equal(tu_metric(srv->port, "nwb_batches_total"), CLIENTS * REQUESTS);
    assert_int_equal(tu_metric(srv->port, "nwb_queue_jobs"), 0);
    assert_int_equal(tu_metric(srv->port, "nwb_buffered_bytes"), 0);
}

static void test_full_queue_pauses_reading_and_loses_nothing(void **state)
{
    static const char *const extra[] = {"--queue-max-jobs", "1", NULL};
    struct nwb_test_server srv;
    char dir[512];

    (void)state;
    run_clients(&srv, dir, extra);
    /* The bound was really hit: 16 clients against a queue of one job. */
    assert_true(tu_metric(srv.port, "nwb_read_pauses_total") > 0);
    assert_int_equal(tu_stop(&srv, SIGTERM, 10000), 0);
    nwb_test_rmtree(dir);
}

static void test_body_budget_makes_requests_wait_and_loses_nothing(void **state)
{
    /* Room for two ~1.9 KiB bodies at a time, for 16 clients. */
    static const char *const extra[] = {"--max-buffered-bytes", "4096", "--max-body-bytes", "4096",
                                        NULL};
    struct nwb_test_server srv;
    char dir[512];

    (void)state;
    run_clients(&srv, dir, extra);
    assert_true(tu_metric(srv.port, "nwb_budget_waits_total") > 0);
    assert_int_equal(tu_stop(&srv, SIGTERM, 10000), 0);
    nwb_test_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_full_queue_pauses_reading_and_loses_nothing, tu_reap),
        cmocka_unit_test_teardown(test_body_budget_makes_requests_wait_and_loses_nothing, tu_reap),
    };

    return cmocka_run_group_tests_name("server.backpressure", tests, NULL, NULL);
}
