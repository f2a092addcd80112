/* SPDX-License-Identifier: MIT */
/*
 * test_ch_schema.c - the forwarding schema (server/src/forward/ch_schema.c) on Debian's real
 * clickhouse-server: it creates every table, a second run changes nothing, a row sent twice
 * reads once with FINAL, the version is recorded, and database names are checked at their
 * edges.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "clickhouse_server.h"
#include "forward/ch_schema.h"
#include "nwb/error.h"
#include "test_support.h"

static struct nwb_test_clickhouse ch;

static int group_setup(void **state)
{
    (void)state;
    return nwb_test_clickhouse_start(&ch);
}

static int group_teardown(void **state)
{
    (void)state;
    nwb_test_clickhouse_destroy(&ch);
    return 0;
}

static void run_schema(const char *db)
{
    char out[2048];

    for (size_t i = 0; i < nwb__ch_schema_statement_count(); i++) {
        nwb_buf_t sql = NWB_BUF_INIT(1 << 16);

        assert_int_equal(nwb__ch_schema_statement(i, db, &sql), 0);
        assert_int_equal(nwb_buf_append(&sql, "", 1), 0);
        if (nwb_test_clickhouse_query(&ch, (const char *)sql.data, NULL, 0, out, sizeof out) !=
            200) {
            fail_msg("statement %zu refused: %s\n%s", i, out, sql.data);
        }
        nwb_buf_cleanup(&sql);
    }
}

static long long count_of(const char *fmt_db, const char *db)
{
    char sql[512];

    snprintf(sql, sizeof sql, "SELECT count() FROM %s.%s FINAL", db, fmt_db);
    return nwb_test_clickhouse_count(&ch, sql);
}

static void test_ch_schema_creates_every_table_idempotently(void **state)
{
    static const char *const names[] = {"nwb_logs", "nwb_runs", "nwb_crashes", "nwb_frames",
                                        "nwb_schema"};

    (void)state;
    run_schema("nwb");
    run_schema("nwb"); /* IF NOT EXISTS: a second server start changes nothing */
    assert_int_equal(nwb__ch_schema_statement_count(), 6);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char sql[256];

        snprintf(sql, sizeof sql, "EXISTS TABLE nwb.%s", names[i]);
        assert_int_equal(nwb_test_clickhouse_count(&ch, sql), 1);
        assert_int_equal(count_of(names[i], "nwb"), 0);
    }
    {
        nwb_buf_t b = NWB_BUF_INIT(4096);

        assert_int_equal(nwb__ch_schema_statement(6, "nwb", &b), NWB_ECONFIG);
        nwb_buf_cleanup(&b);
    }
}

static void test_ch_schema_resent_log_row_reads_once_with_final(void **state)
{
    static const char row[] = "mygame\tr1\thost-a\tmygame_20261201-073400_r1\t0\t1796110452\t"
                              "123456789\tERROR\t4242\trender\tmain.c\t42\tq\"\\\\\\t\\0x\xff\n";
    char out[2048];
    const char *insert = "INSERT INTO nwb.nwb_logs (" NWB__CH_LOGS_COLUMNS ") FORMAT TabSeparated";

    (void)state;
    run_schema("nwb");
    for (int i = 0; i < 2; i++) {
        if (nwb_test_clickhouse_query(&ch, insert, row, sizeof(row) - 1, out, sizeof out) != 200) {
            fail_msg("insert refused: %s", out);
        }
    }
    assert_int_equal(count_of("nwb_logs", "nwb"), 1);
    assert_int_equal(nwb_test_clickhouse_query(&ch,
                                               "SELECT level, time_ns, hex(message) FROM "
                                               "nwb.nwb_logs FINAL WHERE run = 'r1'",
                                               NULL, 0, out, sizeof out),
                     200);
    /* q " \ <tab> NUL x 0xff: every byte as sent, invalid UTF-8 included. */
    assert_string_equal(out, "ERROR\t123456789\t71225C090078FF\n");
}

static void test_ch_schema_version_recorded(void **state)
{
    nwb_buf_t sql = NWB_BUF_INIT(4096);
    char out[1024];

    (void)state;
    run_schema("nwb");
    assert_int_equal(nwb__ch_schema_version_insert("nwb", &sql), 0);
    assert_int_equal(nwb_buf_append(&sql, "", 1), 0);
    assert_int_equal(
        nwb_test_clickhouse_query(&ch, (const char *)sql.data, NULL, 0, out, sizeof out), 200);
    nwb_buf_reset(&sql);
    assert_int_equal(nwb__ch_schema_version_query("nwb", &sql), 0);
    assert_int_equal(nwb_buf_append(&sql, "", 1), 0);
    assert_int_equal(nwb_test_clickhouse_count(&ch, (const char *)sql.data),
                     NWB__CH_SCHEMA_VERSION);
    nwb_buf_cleanup(&sql);
}

static void test_ch_schema_db_name_edges(void **state)
{
    char name[NWB__CH_DB_NAME_MAX + 2];
    char err[256];

    (void)state;
    memset(name, 'a', NWB__CH_DB_NAME_MAX);
    name[NWB__CH_DB_NAME_MAX] = '\0';
    assert_int_equal(nwb__ch_db_name_check(name, err, sizeof err), 0);
    name[NWB__CH_DB_NAME_MAX] = 'a';
    name[NWB__CH_DB_NAME_MAX + 1] = '\0';
    assert_int_equal(nwb__ch_db_name_check(name, err, sizeof err), NWB_ECONFIG);
    assert_non_null(strstr(err, "1..64 bytes, not 65"));
    assert_int_equal(nwb__ch_db_name_check("", err, sizeof err), NWB_ECONFIG);
    assert_int_equal(nwb__ch_db_name_check("9db", err, sizeof err), NWB_ECONFIG);
    assert_non_null(strstr(err, "starts with a digit"));
    assert_int_equal(nwb__ch_db_name_check("nwb-prod", err, sizeof err), NWB_ECONFIG);
    assert_non_null(strstr(err, "other than A-Z"));
    assert_int_equal(nwb__ch_db_name_check("nwb;DROP", err, sizeof err), NWB_ECONFIG);
    assert_int_equal(nwb__ch_db_name_check("Nwb_9", err, sizeof err), 0);
    /* A checked name in a statement on the real engine. */
    run_schema("Nwb_9");
    assert_int_equal(nwb_test_clickhouse_count(&ch, "EXISTS TABLE Nwb_9.nwb_logs"), 1);
}

int main(void)
{
    char why[1024];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ch_schema_creates_every_table_idempotently),
        cmocka_unit_test(test_ch_schema_resent_log_row_reads_once_with_final),
        cmocka_unit_test(test_ch_schema_version_recorded),
        cmocka_unit_test(test_ch_schema_db_name_edges),
    };

    if (!nwb_test_clickhouse_available(why, sizeof why)) {
        printf("SKIP forward.ch_schema: %s\n", why);
        return NWB_TEST_CLICKHOUSE_SKIP;
    }
    return cmocka_run_group_tests_name("forward.ch_schema", tests, group_setup, group_teardown);
}
