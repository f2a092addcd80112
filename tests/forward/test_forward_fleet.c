/* SPDX-License-Identifier: MIT */
/*
 * test_forward_fleet.c - the fleet layout of docs/operations.md ("Forwarding to ClickHouse",
 * test layout): two real clickhouse-server processes as the two shards of one cluster
 * (remote_servers in their temporary configs), two real nwb-logservers each forwarding to
 * its own shard's tables, and Distributed tables over both shards: a query on either shard
 * returns every run of both servers, each run complete and on one shard only.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse_server.h"
#include "nwb/buf.h"
#include "test_support.h"

/* How long rows may take to arrive (a pass is 200 ms). */
#define WAIT_MS 60000
/* Lines each server's run gets: enough for several granules, quick to send. */
#define LINES  2000u
#define SHARDS 2u

struct fixture {
    struct nwb_test_clickhouse ch[SHARDS];
    struct nwb_test_server srv[SHARDS];
    char out[SHARDS][512];
    char url[SHARDS][128];
};

static int teardown(void **state);

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_clickhouse_start_shards(f->ch, SHARDS) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    for (unsigned i = 0; i < SHARDS; i++) {
        const char *extra[] = {"--forward-clickhouse", f->url[i], NULL};
        char tag[32];

        snprintf(tag, sizeof tag, "forward-fleet-%u", i);
        snprintf(f->url[i], sizeof f->url[i], "http://127.0.0.1:%d/?database=nwb",
                 f->ch[i].http_port);
        if (nwb_test_tmpdir(tag, f->out[i], sizeof f->out[i]) != 0 ||
            nwb_test_server_start(&f->srv[i], NULL, f->out[i], 0, extra) != 0) {
            teardown(state);
            return -1;
        }
    }
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    for (unsigned i = 0; i < SHARDS; i++) {
        if (f->srv[i].pid > 0) {
            nwb_test_server_stop(&f->srv[i], SIGTERM, 10000);
        }
        nwb_test_clickhouse_destroy(&f->ch[i]);
        if (f->out[i][0] != '\0') {
            nwb_test_rmtree(f->out[i]);
        }
    }
    free(f);
    return 0;
}

/* Wait until @p sql on shard @p ch answers exactly @p want. ClickHouse has no change
 * notification: polled in 50 ms slices up to WAIT_MS. */
static void wait_answer(const struct nwb_test_clickhouse *ch, const char *sql, const char *want)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;
    char got[4096] = "";

    while (nwb_test_now_ms() < deadline) {
        if (nwb_test_clickhouse_query(ch, sql, NULL, 0, got, sizeof got) == 200 &&
            strcmp(got, want) == 0) {
            return;
        }
        poll(NULL, 0, 50);
    }
    fail_msg("%s: '%s', expected '%s'", sql, got, want);
}

static void query_ok(const struct nwb_test_clickhouse *ch, const char *sql)
{
    char out[2048];

    if (nwb_test_clickhouse_query(ch, sql, NULL, 0, out, sizeof out) != 200) {
        fail_msg("%s: %s", sql, out);
    }
}

/* LINES text/plain lines into run @p run of server @p port, in one POST /v1/log. */
static void post_lines(int port, const char *run)
{
    nwb_buf_t b = NWB_BUF_INIT(1u << 20);
    char headers[256];
    char resp[256];

    for (unsigned i = 0; i < LINES; i++) {
        assert_int_equal(nwb_buf_appendf(&b, "%s line %u of the fleet\n", run, i), 0);
    }
    snprintf(headers, sizeof headers,
             "Content-Type: text/plain\r\nX-NWB-Program: fleet\r\nX-NWB-Run: %s\r\n", run);
    assert_int_equal(
        nwb_test_http(port, "POST", "/v1/log", headers, b.data, b.len, resp, sizeof resp), 200);
    nwb_buf_cleanup(&b);
}

static void test_forward_fleet_distributed_reads_every_run(void **state)
{
    struct fixture *f = *state;
    static const char *const runs[SHARDS] = {"shard0run", "shard1run"};
    char sql[512], want[256];

    for (unsigned i = 0; i < SHARDS; i++) {
        post_lines(f->srv[i].port, runs[i]);
    }
    /* Each server wrote its own shard's tables (the schema the forwarder creates). */
    for (unsigned i = 0; i < SHARDS; i++) {
        snprintf(want, sizeof want, "%s\t%u\n", runs[i], LINES);
        wait_answer(&f->ch[i],
                    "SELECT run, count() FROM nwb.nwb_logs FINAL WHERE program = 'fleet' GROUP "
                    "BY run",
                    want);
        snprintf(want, sizeof want, "%s\t%u\n", runs[i], LINES);
        wait_answer(&f->ch[i],
                    "SELECT run, records FROM nwb.nwb_runs FINAL WHERE program = 'fleet'", want);
    }
    /* The fleet's view: Distributed tables over both shards' tables, on every node. */
    for (unsigned i = 0; i < SHARDS; i++) {
        query_ok(&f->ch[i], "CREATE TABLE IF NOT EXISTS nwb.nwb_logs_all AS nwb.nwb_logs ENGINE = "
                            "Distributed(" NWB_TEST_CLICKHOUSE_CLUSTER ", nwb, nwb_logs)");
        query_ok(&f->ch[i], "CREATE TABLE IF NOT EXISTS nwb.nwb_runs_all AS nwb.nwb_runs ENGINE = "
                            "Distributed(" NWB_TEST_CLICKHOUSE_CLUSTER ", nwb, nwb_runs)");
    }
    snprintf(want, sizeof want, "%s\t%u\n%s\t%u\n", runs[0], LINES, runs[1], LINES);
    snprintf(sql, sizeof sql,
             "SELECT run, count() FROM nwb.nwb_logs_all FINAL WHERE program = 'fleet' GROUP BY "
             "run ORDER BY run");
    for (unsigned i = 0; i < SHARDS; i++) {
        wait_answer(&f->ch[i], sql, want);
        wait_answer(&f->ch[i],
                    "SELECT run, records FROM nwb.nwb_runs_all FINAL WHERE program = 'fleet' "
                    "ORDER BY run",
                    want);
    }
}

int main(void)
{
    char why[1024];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_forward_fleet_distributed_reads_every_run, setup,
                                        teardown),
    };

    if (!nwb_test_clickhouse_available(why, sizeof why)) {
        printf("SKIP forward.forward_fleet: %s\n", why);
        return NWB_TEST_CLICKHOUSE_SKIP;
    }
    return cmocka_run_group_tests_name("forward.forward_fleet", tests, NULL, NULL);
}
