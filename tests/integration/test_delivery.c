/* SPDX-License-Identifier: MIT */
/*
 * test_delivery.c - 100,000 numbered lines from 4 threads through the real
 * client to the real nwb-logserver: each arrives exactly once, in per-thread
 * order, in runs/<program>_<time>_<run>/log.txt.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "itest_common.h"
#include "nwb/client.h"
#include "nwb/log.h"
#include "test_support.h"

#define THREADS    4
#define PER_THREAD 25000

struct producer {
    pthread_t tid;
    int index;
};

static void *produce(void *arg)
{
    const struct producer *p = arg;

    for (int n = 0; n < PER_THREAD; n++) {
        NWB_LOGGER_ESSENTIAL_INFO("itest-num t%d n%d payload %s", p->index, n,
                                  "abcdefghijklmnopqrstuvwxyz");
    }
    return NULL;
}

static void test_delivery_100k_lines_from_4_threads_arrive_once_in_order(void **state)
{
    struct nwb_test_server srv;
    char out[512], addr[64], logpath[1024], err[256];
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *client = NULL;
    nwb_client_stats_t st;
    struct producer prod[THREADS];
    char run[17];
    char *text;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("delivery", out, sizeof(out)), 0);
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, NULL), 0);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", srv.port);
    cfg.program = "itest";
    cfg.mode = NWB_CLIENT_MODE_SERVER;
    cfg.server = addr;
    cfg.log_dir = out;
    cfg.full_policy = NWB_CLIENT_FULL_BLOCK;
    cfg.block_timeout_us = 10u * 1000u * 1000u;
    assert_int_equal(nwb_client_create(&cfg, &client, err, sizeof(err)), 0);
    snprintf(run, sizeof(run), "%s", nwb_client_run_id(client));
    for (int i = 0; i < THREADS; i++) {
        prod[i].index = i;
        assert_int_equal(pthread_create(&prod[i].tid, NULL, produce, &prod[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(prod[i].tid, NULL);
    }
    assert_int_equal(nwb_client_flush(client, 30000), 0);
    nwb_client_stats_get(client, &st);
    assert_int_equal(st.records_dropped, 0);
    assert_true(st.records_written >= (uint64_t)THREADS * PER_THREAD);
    nwb_client_destroy(client);

    assert_int_equal(nwb_test_find_run_log(out, "itest", run, logpath, sizeof(logpath)), 0);
    text = nwb_test_read_file(logpath, NULL);
    assert_non_null(text);
    assert_int_equal(itest_check_numbered(text, THREADS, PER_THREAD), 0);
    /* Each record is one line carrying level, thread, program, source and message. */
    assert_non_null(strstr(text, " INFO    "));
    assert_non_null(strstr(text, "test_delivery.c:"));
    free(text);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
    nwb_test_rmtree(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delivery_100k_lines_from_4_threads_arrive_once_in_order),
    };

    return cmocka_run_group_tests_name("integration.delivery", tests, NULL, NULL);
}
