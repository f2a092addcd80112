/* SPDX-License-Identifier: MIT */
/*
 * test_ch_rows.c - nwb_logs rows (server/src/forward/ch_rows.c) and answer reading
 * (ch_answer.c) against Debian's real clickhouse-server: a message holding every byte value
 * 0..255, quotes and backslashes arrives byte for byte; a refused insert's answer becomes a
 * one-line reason; the buffer cap is kept at its edge; an nwb_crashes row with a hostile
 * signature arrives intact and a newer version of it replaces it; nwb_frames rows collapse.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "clickhouse_server.h"
#include "forward/ch_answer.h"
#include "forward/ch_rows.h"
#include "forward/ch_schema.h"
#include "crash_int.h"
#include "nwb/error.h"
#include "test_support.h"

static struct nwb_test_clickhouse ch;

static int group_setup(void **state)
{
    char out[2048];

    (void)state;
    if (nwb_test_clickhouse_start(&ch) != 0) {
        return -1;
    }
    for (size_t i = 0; i < nwb__ch_schema_statement_count(); i++) {
        nwb_buf_t sql = NWB_BUF_INIT(1 << 16);

        if (nwb__ch_schema_statement(i, "nwb", &sql) != 0 || nwb_buf_append(&sql, "", 1) != 0 ||
            nwb_test_clickhouse_query(&ch, (const char *)sql.data, NULL, 0, out, sizeof out) !=
                200) {
            nwb_buf_cleanup(&sql);
            return -1;
        }
        nwb_buf_cleanup(&sql);
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    nwb_test_clickhouse_destroy(&ch);
    return 0;
}

static const struct nwb__ch_run_ident ident = {"my'game", "r\\1", "host\ta", "dir\n"};

static void test_ch_rows_every_byte_arrives(void **state)
{
    char msg[256 + 8];
    char name[] = "a\\x20b";
    char expect[2 * sizeof(msg) + 2];
    char out[4096];
    struct nwb__fwd_line l;
    nwb_buf_t rows = NWB_BUF_INIT(1 << 20);
    static const char insert[] =
        "INSERT INTO nwb.nwb_logs (" NWB__CH_LOGS_COLUMNS ") FORMAT TabSeparated";

    (void)state;
    for (int i = 0; i < 256; i++) {
        msg[i] = (char)i;
    }
    memcpy(msg + 256, "'\"\\\\\\t\\", 8);
    memset(&l, 0, sizeof l);
    l.time_s = 1796110452;
    l.time_ns = 999999999;
    l.level = 3;
    l.thread_id = UINT64_MAX;
    l.thread_name = name;
    l.thread_name_len = strlen(name);
    l.program = "my'game";
    l.program_len = 7;
    l.file = "a\tb.c";
    l.file_len = 5;
    l.line = UINT32_MAX;
    l.msg = msg;
    l.msg_len = sizeof msg;
    assert_int_equal(nwb__ch_log_row(&rows, &ident, 12345, &l), 0);
    assert_int_equal(nwb__ch_log_row(&rows, &ident, 12345, &l), 0); /* resent: collapses */
    if (nwb_test_clickhouse_query(&ch, insert, rows.data, rows.len, out, sizeof out) != 200) {
        fail_msg("insert refused: %s", out);
    }
    assert_int_equal(nwb_test_clickhouse_count(&ch, "SELECT count() FROM nwb.nwb_logs FINAL "
                                                    "WHERE run = 'r\\\\1' AND host = 'host\\ta'"),
                     1);
    for (size_t i = 0; i < sizeof msg; i++) {
        snprintf(expect + 2 * i, 3, "%02X", (unsigned char)msg[i]);
    }
    assert_int_equal(
        nwb_test_clickhouse_query(&ch,
                                  "SELECT hex(message), program, file, thread_name, line, "
                                  "thread_id, toUnixTimestamp(time), time_ns, level, offset "
                                  "FROM nwb.nwb_logs FINAL FORMAT TabSeparated",
                                  NULL, 0, out, sizeof out),
        200);
    assert_memory_equal(out, expect, 2 * sizeof msg);
    assert_string_equal(out + 2 * sizeof msg,
                        "\tmy\\'game\ta\\tb.c\ta\\\\x20b\t4294967295\t18446744073709551615\t"
                        "1796110452\t999999999\tFATAL\t12345\n");
    nwb_buf_cleanup(&rows);
}

static void test_ch_rows_buffer_cap_edge(void **state)
{
    struct nwb__fwd_line l;
    nwb_buf_t b;
    size_t need;

    (void)state;
    memset(&l, 0, sizeof l);
    l.program = "p";
    l.program_len = 1;
    l.msg = "x\\";
    l.msg_len = 2;
    nwb_buf_init(&b, 1 << 16);
    assert_int_equal(nwb__ch_log_row(&b, &ident, 0, &l), 0);
    need = b.len;
    nwb_buf_cleanup(&b);
    nwb_buf_init(&b, need);
    assert_int_equal(nwb__ch_log_row(&b, &ident, 0, &l), 0);
    assert_int_equal(b.len, need);
    nwb_buf_cleanup(&b);
    nwb_buf_init(&b, need - 1);
    assert_int_equal(nwb__ch_log_row(&b, &ident, 0, &l), NWB_ETOOBIG);
    assert_int_equal(b.len, 0);
    nwb_buf_cleanup(&b);
}

/* A crash row's signature with a quote, a tab, a backslash and a newline arrives as it was;
 * the row sent again with a newer updated_ns (a resymbolised signature) is the one FINAL
 * reads. Frame rows sent twice are one. */
static void test_ch_rows_crash_and_frame_rows(void **state)
{
    static const char sig[] = "SIGSEGV | f'\"\t\\g\nh";
    struct nwb__crash_row c = {"0123456789abcdef0123456789abcdef",
                               1796110452000000000ull,
                               "game",
                               "run1",
                               "SIGSEGV",
                               "extracted",
                               sig,
                               sizeof sig - 1,
                               "00112233aabbccdd",
                               4096,
                               UINT64_MAX};
    static const char crashes[] =
        "INSERT INTO nwb.nwb_crashes (" NWB__CH_CRASHES_COLUMNS ") FORMAT TabSeparated";
    static const char frames[] =
        "INSERT INTO nwb.nwb_frames (" NWB__CH_FRAMES_COLUMNS ") FORMAT TabSeparated";
    nwb_buf_t rows = NWB_BUF_INIT(1 << 16);
    char out[4096];

    (void)state;
    assert_int_equal(nwb__ch_crash_row(&rows, "h\t1", &c, 2), 0);
    c.signature = "SIGSEGV | newer";
    c.sig_len = strlen(c.signature);
    assert_int_equal(nwb__ch_crash_row(&rows, "h\t1", &c, 3), 0);
    assert_int_equal(nwb_test_clickhouse_query(&ch, crashes, rows.data, rows.len, out, sizeof out),
                     200);
    assert_int_equal(
        nwb_test_clickhouse_query(&ch,
                                  "SELECT count(), any(signature), any(host), any(package_bytes), "
                                  "any(toUnixTimestamp(received)) FROM nwb.nwb_crashes FINAL",
                                  NULL, 0, out, sizeof out),
        200);
    assert_string_equal(out, "1\tSIGSEGV | newer\th\\t1\t18446744073709551615\t1796110452\n");
    nwb_buf_reset(&rows);
    c.signature = sig;
    c.sig_len = sizeof sig - 1;
    c.id = "ffffffffffffffffffffffffffffffff";
    assert_int_equal(nwb__ch_crash_row(&rows, "h", &c, 1), 0);
    assert_int_equal(nwb_test_clickhouse_query(&ch, crashes, rows.data, rows.len, out, sizeof out),
                     200);
    assert_int_equal(nwb_test_clickhouse_query(&ch,
                                               "SELECT hex(signature) FROM nwb.nwb_crashes FINAL "
                                               "WHERE id = 'ffffffffffffffffffffffffffffffff'",
                                               NULL, 0, out, sizeof out),
                     200);
    {
        char expect[2 * sizeof sig + 2];

        for (size_t i = 0; i + 1 < sizeof sig; i++) {
            snprintf(expect + 2 * i, 3, "%02X", (unsigned char)sig[i]);
        }
        strcat(expect, "\n");
        assert_string_equal(out, expect);
    }
    nwb_buf_reset(&rows);
    assert_int_equal(nwb__ch_frame_row(&rows, &ident, 1796110452, 7, 16666667), 0);
    assert_int_equal(nwb__ch_frame_row(&rows, &ident, 1796110452, 7, 16666667), 0);
    assert_int_equal(nwb__ch_frame_row(&rows, &ident, 1796110452, UINT64_MAX, 0), 0);
    assert_int_equal(nwb_test_clickhouse_query(&ch, frames, rows.data, rows.len, out, sizeof out),
                     200);
    assert_int_equal(
        nwb_test_clickhouse_query(&ch,
                                  "SELECT count(), max(frame), round(sum(duration_ms), 3) FROM "
                                  "nwb.nwb_frames FINAL",
                                  NULL, 0, out, sizeof out),
        200);
    assert_string_equal(out, "2\t18446744073709551615\t16.667\n");
    nwb_buf_cleanup(&rows);
}

static void test_ch_rows_refused_insert_reads_as_one_line(void **state)
{
    char out[4096];
    char reason[NWB__CH_REASON_MAX];
    uint64_t v = 0;

    (void)state;
    assert_int_equal(nwb_test_clickhouse_query(&ch, "INSERT INTO nwb.nwb_logz FORMAT TabSeparated",
                                               "x\n", 2, out, sizeof out),
                     404);
    nwb__ch_answer_reason(out, strlen(out), reason, sizeof reason);
    assert_non_null(strstr(reason, "Table nwb.nwb_logz doesn't exist"));
    assert_null(strstr(reason, "e.what()"));
    assert_null(strchr(reason, '\n'));
    assert_int_equal(nwb_test_clickhouse_query(&ch, "SELECT toUInt64(18446744073709551615)", NULL,
                                               0, out, sizeof out),
                     200);
    assert_int_equal(nwb__ch_answer_u64(out, strlen(out), &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(nwb__ch_answer_u64("18446744073709551616\n", 21, &v), NWB_EPROTO);
    assert_int_equal(nwb__ch_answer_u64("1\n\n", 3, &v), NWB_EPROTO);
    nwb__ch_answer_reason("", 0, reason, sizeof reason);
    assert_string_equal(reason, "(empty answer)");
}

int main(void)
{
    char why[1024];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ch_rows_every_byte_arrives),
        cmocka_unit_test(test_ch_rows_buffer_cap_edge),
        cmocka_unit_test(test_ch_rows_refused_insert_reads_as_one_line),
        cmocka_unit_test(test_ch_rows_crash_and_frame_rows),
    };

    if (!nwb_test_clickhouse_available(why, sizeof why)) {
        printf("SKIP forward.ch_rows: %s\n", why);
        return NWB_TEST_CLICKHOUSE_SKIP;
    }
    return cmocka_run_group_tests_name("forward.ch_rows", tests, group_setup, group_teardown);
}
