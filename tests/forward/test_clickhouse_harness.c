/* SPDX-License-Identifier: MIT */
/*
 * test_clickhouse_harness.c - the tests/support ClickHouse helper against Debian's real
 * clickhouse-server: it starts on free loopback ports, answers queries, keeps its data across
 * a kill -9 and a restart on the same ports, and leaves no folder behind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "clickhouse_server.h"
#include "test_support.h"

static void test_clickhouse_harness_starts_queries_restarts_and_cleans_up(void **state)
{
    struct nwb_test_clickhouse ch;
    char out[4096];
    char dir[sizeof(ch.dir)];
    struct stat st;
    static const char rows[] = "1\ta\n2\tb\n3\tc\n";

    (void)state;
    assert_int_equal(nwb_test_clickhouse_start(&ch), 0);
    assert_true(ch.http_port > 0 && ch.tcp_port > 0 && ch.http_port != ch.tcp_port);
    assert_int_equal(nwb_test_clickhouse_query(&ch, "SELECT version()", NULL, 0, out, sizeof out),
                     200);
    assert_true(out[0] >= '1' && out[0] <= '9');

    assert_int_equal(nwb_test_clickhouse_query(&ch, "CREATE DATABASE IF NOT EXISTS harness", NULL,
                                               0, out, sizeof out),
                     200);
    assert_int_equal(nwb_test_clickhouse_query(&ch,
                                               "CREATE TABLE harness.t (n UInt32, s String) "
                                               "ENGINE = MergeTree ORDER BY n",
                                               NULL, 0, out, sizeof out),
                     200);
    assert_int_equal(nwb_test_clickhouse_query(&ch, "INSERT INTO harness.t FORMAT TabSeparated",
                                               rows, sizeof(rows) - 1, out, sizeof out),
                     200);
    assert_int_equal(nwb_test_clickhouse_count(&ch, "SELECT count() FROM harness.t"), 3);
    /* A bad query is an answer with the engine's reason, not a hang. */
    assert_int_equal(nwb_test_clickhouse_query(&ch, "SELEC 1", NULL, 0, out, sizeof out), 400);
    assert_non_null(strstr(out, "Syntax error"));

    /* kill -9 and a restart: same port, same data. */
    const int port = ch.http_port;
    assert_int_equal(nwb_test_clickhouse_stop(&ch, SIGKILL, 10000), 0);
    assert_int_equal(nwb_test_clickhouse_count(&ch, "SELECT 1"), -1);
    assert_int_equal(nwb_test_clickhouse_restart(&ch), 0);
    assert_int_equal(ch.http_port, port);
    assert_int_equal(nwb_test_clickhouse_count(&ch, "SELECT count() FROM harness.t"), 3);

    snprintf(dir, sizeof dir, "%s", ch.dir);
    nwb_test_clickhouse_destroy(&ch);
    assert_int_not_equal(stat(dir, &st), 0);
    nwb_test_clickhouse_destroy(&ch); /* idempotent */
}

int main(void)
{
    char why[1024];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clickhouse_harness_starts_queries_restarts_and_cleans_up),
    };

    if (!nwb_test_clickhouse_available(why, sizeof why)) {
        printf("SKIP forward.clickhouse_harness: %s\n", why);
        return NWB_TEST_CLICKHOUSE_SKIP;
    }
    return cmocka_run_group_tests_name("forward.clickhouse_harness", tests, NULL, NULL);
}
