/* SPDX-License-Identifier: MIT */
/*
 * test_sigterm_load.c - SIGTERM while 4 connections keep posting batches:
 * the server exits with status 0 and every line it acknowledged with a 200
 * is in the run's log.txt.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"

#define CONNS       4
#define LINES_PER   50
#define MAX_BATCHES 100000

struct sender {
    pthread_t tid;
    int index;
    int port;
    int acked; /* batches answered 200, in order */
    int failed_status;
};

static atomic_int total_acked;

static void *send_batches(void *arg)
{
    struct sender *s = arg;
    int fd = nwb_test_connect(s->port);

    s->failed_status = 0;
    for (int b = 0; fd >= 0 && b < MAX_BATCHES; b++) {
        char body[LINES_PER * 48];
        char head[512];
        size_t blen = 0;
        int hlen, status = -1;

        for (int l = 0; l < LINES_PER; l++) {
            blen += (size_t)snprintf(body + blen, sizeof(body) - blen, "load c%d b%d l%d\n",
                                     s->index, b, l);
        }
        hlen = snprintf(head, sizeof(head),
                        "POST /v1/log HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
                        "X-NWB-Program: load\r\nX-NWB-Run: conn%d\r\nX-NWB-Seq: %d\r\n"
                        "Content-Length: %zu\r\n\r\n",
                        s->index, b + 1, blen);
        if (nwb_test_send_all(fd, head, (size_t)hlen) != 0 ||
            nwb_test_send_all(fd, body, blen) != 0 ||
            nwb_test_read_response(fd, &status, NULL, 0) < 0) {
            break; /* the server went away: what was acknowledged is what counts */
        }
        if (status != 200) {
            s->failed_status = status;
            break;
        }
        s->acked = b + 1;
        atomic_fetch_add(&total_acked, 1);
    }
    if (fd >= 0) {
        close(fd);
    }
    return NULL;
}

static void test_sigterm_load_exits_zero_and_keeps_every_acknowledged_line(void **state)
{
    struct nwb_test_server srv;
    struct sender snd[CONNS];
    char out[512];
    int status;
    const long long deadline = nwb_test_now_ms() + 20000;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("sigterm", out, sizeof(out)), 0);
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, NULL), 0);
    for (int i = 0; i < CONNS; i++) {
        snd[i].index = i;
        snd[i].port = srv.port;
        snd[i].acked = 0;
        assert_int_equal(pthread_create(&snd[i].tid, NULL, send_batches, &snd[i]), 0);
    }
    /* Under load: at least 200 batches acknowledged before the signal. */
    while (atomic_load(&total_acked) < 200 && nwb_test_now_ms() < deadline) {
        sched_yield();
    }
    assert_true(atomic_load(&total_acked) >= 200);
    status = nwb_test_server_stop(&srv, SIGTERM, 15000);
    for (int i = 0; i < CONNS; i++) {
        pthread_join(snd[i].tid, NULL);
    }
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);

    for (int i = 0; i < CONNS; i++) {
        char run[32], logpath[1024];
        unsigned char *seen = calloc(MAX_BATCHES, 1); /* bit 0: first line, bit 1: last line */
        const char *p;
        char *text;

        assert_int_equal(snd[i].failed_status, 0);
        snprintf(run, sizeof(run), "conn%d", i);
        assert_int_equal(nwb_test_find_run_log(out, "load", run, logpath, sizeof(logpath)), 0);
        text = nwb_test_read_file(logpath, NULL);
        assert_non_null(text);
        for (p = strstr(text, " load c"); p != NULL; p = strstr(p + 7, " load c")) {
            int c, b, l;

            if (sscanf(p, " load c%d b%d l%d", &c, &b, &l) == 3 && c == i && b >= 0 &&
                b < MAX_BATCHES) {
                seen[b] |= (unsigned char)(l == 0 ? 1 : l == LINES_PER - 1 ? 2 : 0);
            }
        }
        for (int b = 0; b < snd[i].acked; b++) {
            if (seen[b] != 3) {
                fail_msg("connection %d: acknowledged batch %d is not complete in log.txt", i, b);
            }
        }
        free(seen);
        free(text);
    }
    nwb_test_rmtree(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigterm_load_exits_zero_and_keeps_every_acknowledged_line),
    };

    return cmocka_run_group_tests_name("integration.sigterm_load", tests, NULL, NULL);
}
