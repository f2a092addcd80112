/* SPDX-License-Identifier: MIT */
/*
 * test_overload.c - producers log faster than the server acknowledges, with
 * the drop policy and a small memory bound: while the server is up the
 * client pushes back onto the rings instead of filling (and truncating) the
 * spool, so every call is either in log.txt or counted as dropped, and the
 * gap is noted in the log as its own line.
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
#include <sys/wait.h>

#include "nwb/client.h"
#include "nwb/log.h"
#include "test_support.h"

#define THREADS    2
#define PER_THREAD 150000

static void *produce(void *arg)
{
    const int t = (int)(intptr_t)arg;

    for (int n = 0; n < PER_THREAD; n++) {
        NWB_LOGGER_ESSENTIAL_INFO("ovl t%d n%d %s", t, n,
                                  "padding padding padding padding padding padding padding");
    }
    return NULL;
}

static void test_overload_every_call_is_written_or_counted_and_no_batch_is_dropped(void **state)
{
    struct nwb_test_server srv;
    char out[512], addr[64], logpath[1024], err[256], run[17];
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *client = NULL;
    nwb_client_stats_t st;
    pthread_t th[THREADS];
    char *text;
    size_t written;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("overload", out, sizeof(out)), 0);
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, NULL), 0);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", srv.port);
    cfg.program = "ovl";
    cfg.mode = NWB_CLIENT_MODE_SERVER;
    cfg.server = addr;
    cfg.log_dir = out;
    cfg.ring_bytes = 64u * 1024u;
    cfg.memory_bytes = 256u * 1024u;
    cfg.full_policy = NWB_CLIENT_FULL_DROP;
    assert_int_equal(nwb_client_create(&cfg, &client, err, sizeof(err)), 0);
    snprintf(run, sizeof(run), "%s", nwb_client_run_id(client));
    /* One acknowledged batch first: before the server's first answer the client cannot tell
     * a slow server from a hung one and may spool what it holds (delivered later, not lost),
     * and on a loaded machine a fresh server's first answer can take longer than the
     * producers need to fill the memory bound. */
    NWB_LOGGER_ESSENTIAL_INFO("ovl warm-up");
    assert_int_equal(nwb_client_flush(client, 10000), 0);
    for (intptr_t i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_create(&th[i], NULL, produce, (void *)i), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
    }
    assert_int_equal(nwb_client_flush(client, 60000), 0);
    nwb_client_stats_get(client, &st);
    nwb_client_destroy(client);

    /* Answers flow from the start: the client pushes back onto the rings instead of
     * spooling, so the spool never fills up and drops nothing (a few spooled batches are
     * tolerated: an answer slower than the client's patience on a loaded machine). */
    assert_int_equal(st.batches_dropped, 0);
    assert_true(st.batches_spooled < 16);
    assert_int_equal(nwb_test_find_run_log(out, "ovl", run, logpath, sizeof(logpath)), 0);
    text = nwb_test_read_file(logpath, NULL);
    assert_non_null(text);
    written = nwb_test_count(text, ": ovl t");
    print_message("overload: %zu written, %llu dropped of %d\n", written,
                  (unsigned long long)st.records_dropped, THREADS * PER_THREAD);
    assert_int_equal((uint64_t)written + st.records_dropped, (uint64_t)THREADS * PER_THREAD);
    if (st.records_dropped > 0) {
        assert_non_null(strstr(text, "dropped"));
    }
    free(text);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
    nwb_test_rmtree(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overload_every_call_is_written_or_counted_and_no_batch_is_dropped),
    };

    return cmocka_run_group_tests_name("integration.overload", tests, NULL, NULL);
}
