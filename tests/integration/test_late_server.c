/* SPDX-License-Identifier: MIT */
/*
 * test_late_server.c - the server is down when the client starts and comes
 * up later on the configured port: everything logged meanwhile arrives, once.
 * The port is held by nwb_test_reserve_dead_port() throughout, so it is never
 * free for another test to take.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itest_common.h"
#include "nwb/client.h"
#include "nwb/log.h"
#include "test_support.h"

#define LINES 20000

static void test_late_server_lines_logged_before_it_starts_all_arrive(void **state)
{
    struct nwb_test_server srv;
    char out[512], addr[64], logpath[1024], err[256];
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *client = NULL;
    nwb_client_stats_t st;
    char run[17];
    char *text;
    int port;
    /* Held from here to the end: nothing listens until the server takes it over, and no
     * parallel test can be given the port meanwhile. */
    const int dead = nwb_test_reserve_dead_port(&port);

    (void)state;
    assert_true(dead >= 0);
    assert_int_equal(nwb_test_tmpdir("late", out, sizeof(out)), 0);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    cfg.program = "itest";
    cfg.mode = NWB_CLIENT_MODE_SERVER;
    cfg.server = addr;
    cfg.log_dir = out;
    cfg.full_policy = NWB_CLIENT_FULL_BLOCK;
    cfg.block_timeout_us = 10u * 1000u * 1000u;
    assert_int_equal(nwb_client_create(&cfg, &client, err, sizeof(err)), 0);
    snprintf(run, sizeof(run), "%s", nwb_client_run_id(client));
    for (int n = 0; n < LINES / 2; n++) {
        NWB_LOGGER_ESSENTIAL_INFO("itest-num t0 n%d", n);
    }
    /* Nothing can be acknowledged yet: the flush times out instead of hanging. */
    assert_int_not_equal(nwb_client_flush(client, 300), 0);
    nwb_client_stats_get(client, &st);
    assert_int_equal(st.records_written, 0);

    assert_int_equal(nwb_test_server_start(&srv, NULL, out, port, NULL), 0);
    for (int n = LINES / 2; n < LINES; n++) {
        NWB_LOGGER_ESSENTIAL_INFO("itest-num t0 n%d", n);
    }
    assert_int_equal(nwb_client_flush(client, 30000), 0);
    nwb_client_stats_get(client, &st);
    assert_int_equal(st.records_dropped, 0);
    assert_true(st.records_written >= LINES);
    nwb_client_destroy(client);

    assert_int_equal(nwb_test_find_run_log(out, "itest", run, logpath, sizeof(logpath)), 0);
    text = nwb_test_read_file(logpath, NULL);
    assert_non_null(text);
    assert_int_equal(itest_check_numbered(text, 1, LINES), 0);
    free(text);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
    close(dead);
    nwb_test_rmtree(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_late_server_lines_logged_before_it_starts_all_arrive),
    };

    return cmocka_run_group_tests_name("integration.late_server", tests, NULL, NULL);
}
