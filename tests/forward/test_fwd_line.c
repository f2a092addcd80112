/* SPDX-License-Identifier: MIT */
/*
 * test_fwd_line.c - the forwarder's log.txt line parser (server/src/forward/log_line_parse.c):
 * lines nwb_log_line_format() writes come back as their columns; every edge (time range,
 * line number range, the longest line) and every malformed part is refused with its reason.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "forward/log_line_parse.h"
#include "nwb/error.h"
#include "nwb/log_line.h"

static int parse(const char *s, struct nwb__fwd_line *l, const char **why)
{
    return nwb__fwd_line_parse(s, strlen(s), l, why);
}

static void test_fwd_line_formatted_records_come_back(void **state)
{
    static const char *const msgs[] = {"", "plain", "a\nb\rc\x01\x7f", "q\"\\ \t[x] f.c:1: z",
                                       "\xff\xfe invalid"};
    nwb_log_line_clock_t clock = NWB_LOG_LINE_CLOCK_INIT;
    char buf[4096];

    (void)state;
    for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
        nwb_log_record_t rec;
        struct nwb__fwd_line l;
        const char *why = NULL;
        size_t n;

        memset(&rec, 0, sizeof rec);
        rec.time_ns = 1796110452123456789ull + i;
        rec.thread_id = 4242;
        rec.level = (uint8_t)(i % 4);
        rec.file = i % 2 ? "src/main.c" : "";
        rec.file_len = (uint16_t)strlen(rec.file);
        rec.line = 42;
        rec.msg = msgs[i];
        rec.msg_len = (uint32_t)strlen(msgs[i]);
        rec.thread_name = "ren der";
        rec.thread_name_len = i % 3 == 0 ? 7 : 0;
        n = nwb_log_line_format(buf, sizeof buf, &clock, &rec, "mygame", 6);
        assert_int_equal(buf[n - 1], '\n');
        assert_int_equal(nwb__fwd_line_parse(buf, n - 1, &l, &why), 0);
        assert_true(l.time_s * 1000000000ull + l.time_ns == rec.time_ns);
        assert_int_equal(l.level, rec.level);
        assert_true(l.thread_id == 4242);
        assert_int_equal(l.program_len, 6);
        assert_memory_equal(l.program, "mygame", 6);
        assert_int_equal(l.file_len, rec.file_len);
        assert_int_equal(l.line, rec.file_len > 0 ? 42 : 0);
        if (rec.thread_name_len > 0) {
            assert_int_equal(l.thread_name_len, strlen("ren\\x20der"));
            assert_memory_equal(l.thread_name, "ren\\x20der", l.thread_name_len);
        } else {
            assert_int_equal(l.thread_name_len, 0);
        }
        if (i == 2) {
            assert_int_equal(l.msg_len, strlen("a\\nb\\rc\\x01\\x7f"));
            assert_memory_equal(l.msg, "a\\nb\\rc\\x01\\x7f", l.msg_len);
        } else {
            assert_int_equal(l.msg_len, rec.msg_len);
            assert_memory_equal(l.msg, msgs[i], l.msg_len);
        }
    }
}

static void test_fwd_line_edges(void **state)
{
    struct nwb__fwd_line l;
    const char *why = NULL;

    (void)state;
    assert_int_equal(
        parse("2554-07-21T23:34:33.709551615Z FATAL   18446744073709551615 p m", &l, &why), 0);
    assert_true(l.time_s * 1000000000ull + l.time_ns == UINT64_MAX);
    assert_true(l.thread_id == UINT64_MAX);
    assert_int_equal(parse("2554-07-21T23:34:33.709551616Z FATAL   1 p m", &l, &why), NWB_EPROTO);
    assert_string_equal(why, "no UTC time (YYYY-mm-ddTHH:MM:SS.nnnnnnnnnZ) at the start");
    assert_int_equal(
        parse("2026-12-01T07:34:00.000000000Z INFO    18446744073709551616 p m", &l, &why),
        NWB_EPROTO);
    assert_string_equal(why, "thread id past 2^64");
    assert_int_equal(
        parse("1970-01-01T00:00:00.000000000Z INFO    1 p x.c:4294967295: m", &l, &why), 0);
    assert_true(l.time_s == 0 && l.line == UINT32_MAX && l.file_len == 3);
    /* One past: not a file word, so it is message text. */
    assert_int_equal(
        parse("1970-01-01T00:00:00.000000000Z INFO    1 p x.c:4294967296: m", &l, &why), 0);
    assert_int_equal(l.file_len, 0);
    assert_int_equal(l.msg_len, strlen("x.c:4294967296: m"));
    assert_int_equal(parse("2024-02-29T23:59:59.000000000Z INFO    1 p leap", &l, &why), 0);
    assert_int_equal(parse("2023-02-29T23:59:59.000000000Z INFO    1 p no", &l, &why), NWB_EPROTO);
    assert_int_equal(parse("2026-12-01T07:34:00.000000000Z DEBUG   1 p m", &l, &why), NWB_EPROTO);
    assert_string_equal(why, "no level (INFO, WARNING, ERROR, FATAL) after the time");
    assert_int_equal(parse("2026-12-01T07:34:00.000000000Z INFO    1[x p m", &l, &why), NWB_EPROTO);
    assert_int_equal(parse("2026-12-01T07:34:00.000000000Z INFO    1 p", &l, &why), NWB_EPROTO);
    assert_string_equal(why, "no program after the thread");
    assert_int_equal(parse("2026-12-01T07:34:00.000000000Z INFO    1 p a\x01", &l, &why),
                     NWB_EPROTO);
    assert_string_equal(why, "unescaped control byte in the line");
    assert_int_equal(parse("", &l, &why), NWB_EPROTO);
}

static void test_fwd_line_longest_line_bound(void **state)
{
    static const char head[] = "2026-12-01T07:34:00.000000000Z INFO    1 p ";
    char *line = malloc(NWB__FWD_LINE_MAX + 1);
    struct nwb__fwd_line l;
    const char *why = NULL;

    (void)state;
    assert_non_null(line);
    memset(line, 'm', NWB__FWD_LINE_MAX + 1);
    memcpy(line, head, sizeof(head) - 1);
    assert_int_equal(nwb__fwd_line_parse(line, NWB__FWD_LINE_MAX, &l, &why), 0);
    assert_int_equal(l.msg_len, NWB__FWD_LINE_MAX - (sizeof(head) - 1));
    assert_int_equal(nwb__fwd_line_parse(line, NWB__FWD_LINE_MAX + 1, &l, &why), NWB_EPROTO);
    assert_string_equal(why, "line longer than 1052832 bytes");
    free(line);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fwd_line_formatted_records_come_back),
        cmocka_unit_test(test_fwd_line_edges),
        cmocka_unit_test(test_fwd_line_longest_line_bound),
    };

    return cmocka_run_group_tests_name("forward.fwd_line", tests, NULL, NULL);
}
