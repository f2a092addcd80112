/* SPDX-License-Identifier: MIT */
/*
 * test_server_restart.c - the server is killed with SIGKILL mid-stream and
 * restarted on the same port; after the client finishes, every number is
 * present exactly once (the client resends what was not acknowledged, the
 * server drops what it had already written).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itest_common.h"
#include "nwb/client.h"
#include "nwb/log.h"
#include "test_support.h"

#define THREADS    2
#define PER_THREAD 40000

static atomic_int progress[THREADS];

struct producer {
    pthread_t tid;
    int index;
};

static void *produce(void *arg)
{
    const struct producer *p = arg;

    for (int n = 0; n < PER_THREAD; n++) {
        NWB_LOGGER_ESSENTIAL_INFO("itest-num t%d n%d", p->index, n);
        atomic_store(&progress[p->index], n);
    }
    return NULL;
}

static int min_progress(void)
{
    int m = PER_THREAD;

    for (int i = 0; i < THREADS; i++) {
        const int v = atomic_load(&progress[i]);

        m = v < m ? v : m;
    }
    return m;
}

/* Wait until the producers got at least @p n lines in, or the timeout passes. */
static int wait_progress(int n, int timeout_ms)
{
    const long long deadline = nwb_test_now_ms() + timeout_ms;

    while (min_progress() < n) {
        if (nwb_test_now_ms() > deadline) {
            return 0;
        }
        sched_yield();
    }
    return 1;
}

static void test_server_restart_sigkill_midstream_loses_and_duplicates_nothing(void **state)
{
    struct nwb_test_server srv;
    char out[512], addr[64], logpath[1024], err[256];
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *client = NULL;
    nwb_client_stats_t st;
    struct producer prod[THREADS];
    char run[17];
    char *text;
    int port, status;
    /* The port stays held between a kill and the restart, so no parallel test takes it. */
    const int hold = nwb_test_reserve_dead_port(&port);

    (void)state;
    assert_true(hold >= 0);
    assert_int_equal(nwb_test_tmpdir("restart", out, sizeof(out)), 0);
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, port, NULL), 0);
    assert_int_equal(srv.port, port);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    cfg.program = "itest";
    cfg.mode = NWB_CLIENT_MODE_SERVER;
    cfg.server = addr;
    cfg.log_dir = out;
    cfg.full_policy = NWB_CLIENT_FULL_BLOCK;
    cfg.block_timeout_us = 20u * 1000u * 1000u;
    cfg.batch_bytes = 8u * 1024u; /* many small batches: the kill lands between and inside them */
    assert_int_equal(nwb_client_create(&cfg, &client, err, sizeof(err)), 0);
    snprintf(run, sizeof(run), "%s", nwb_client_run_id(client));
    for (int i = 0; i < THREADS; i++) {
        prod[i].index = i;
        assert_int_equal(pthread_create(&prod[i].tid, NULL, produce, &prod[i]), 0);
    }

    for (int round = 1; round <= 2; round++) {
        assert_true(wait_progress(PER_THREAD * round / 3, 30000));
        status = nwb_test_server_stop(&srv, SIGKILL, 5000);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        assert_int_equal(nwb_test_server_start(&srv, NULL, out, port, NULL), 0);
        assert_int_equal(srv.port, port);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(prod[i].tid, NULL);
    }
    assert_int_equal(nwb_client_flush(client, 60000), 0);
    nwb_client_stats_get(client, &st);
    assert_int_equal(st.records_dropped, 0);
    nwb_client_destroy(client);

    assert_int_equal(nwb_test_find_run_log(out, "itest", run, logpath, sizeof(logpath)), 0);
    text = nwb_test_read_file(logpath, NULL);
    assert_non_null(text);
    assert_int_equal(itest_check_numbered(text, THREADS, PER_THREAD), 0);
    free(text);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
    close(hold);
    nwb_test_rmtree(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_restart_sigkill_midstream_loses_and_duplicates_nothing),
    };

    return cmocka_run_group_tests_name("integration.server_restart", tests, NULL, NULL);
}
