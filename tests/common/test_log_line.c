/* SPDX-License-Identifier: MIT */
/* test_log_line.c - the one-line text form of a record and the time helpers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/log.h"
#include "nwb/log_line.h"

static size_t format(char *out, size_t cap, const nwb_log_record_t *r, const char *program)
{
    nwb_log_line_clock_t clock = NWB_LOG_LINE_CLOCK_INIT;
    size_t n;

    assert_true(nwb_log_line_max(r, strlen(program)) <= cap);
    n = nwb_log_line_format(out, cap, &clock, r, program, strlen(program));
    out[n] = '\0';
    return n;
}

static void test_log_line_formats_time_level_thread_program_source_message(void **state)
{
    char out[512];
    nwb_log_record_t r;

    (void)state;
    memset(&r, 0, sizeof(r));
    /* 2023-11-14T22:13:20.000000042Z */
    r.time_ns = 1700000000000000042ull;
    r.level = NWB_LOG_WARNING;
    r.thread_id = 77;
    r.file = "src/main.c";
    r.file_len = 10;
    r.line = 42;
    r.msg = "hello 100%";
    r.msg_len = 10;
    format(out, sizeof(out), &r, "mygame");
    assert_string_equal(
        out, "2023-11-14T22:13:20.000000042Z WARNING 77 mygame src/main.c:42: hello 100%\n");
}

static void test_log_line_omits_source_when_absent(void **state)
{
    char out[512];
    nwb_log_record_t r;

    (void)state;
    memset(&r, 0, sizeof(r));
    r.time_ns = 0;
    r.msg = "plain";
    r.msg_len = 5;
    format(out, sizeof(out), &r, "p");
    assert_string_equal(out, "1970-01-01T00:00:00.000000000Z INFO    0 p plain\n");
}

static void test_log_line_escapes_control_bytes_to_stay_one_line(void **state)
{
    char out[512];
    nwb_log_record_t r;
    const char msg[] = "a\nb\rc\x01"
                       "d\te\x7f";

    (void)state;
    memset(&r, 0, sizeof(r));
    r.msg = msg;
    r.msg_len = sizeof(msg) - 1;
    format(out, sizeof(out), &r, "p");
    assert_non_null(strstr(out, " p a\\nb\\rc\\x01d\te\\x7f\n"));
    assert_int_equal(strchr(out, '\n') - out, (long)strlen(out) - 1);
}

static void test_log_line_escapes_at_every_word_position(void **state)
{
    (void)state;
    for (size_t len = 1; len <= 40; len++) {
        for (size_t at = 0; at < len; at++) {
            char msg[48], want[256], out[512], *w = want;
            nwb_log_record_t r;

            memset(msg, 'a', sizeof(msg));
            msg[at] = (char)(at % 2 == 0 ? 0x01 : 0x7f);
            for (size_t i = 0; i < len; i++) {
                if (i == at) {
                    w += sprintf(w, "\\x%02x", (unsigned char)msg[i]);
                } else {
                    *w++ = msg[i];
                }
            }
            *w = '\0';
            memset(&r, 0, sizeof(r));
            r.msg = msg;
            r.msg_len = (uint32_t)len;
            format(out, sizeof(out), &r, "p");
            assert_non_null(strstr(out, want));
            assert_int_equal(strlen(strstr(out, " p ") + 3), strlen(want) + 1);
        }
    }
}

static void test_log_line_worst_case_fits_the_announced_maximum(void **state)
{
    nwb_log_record_t r;
    char *msg = malloc(NWB_LOG_RECORD_MSG_MAX);
    char file[NWB_LOG_RECORD_FILE_MAX];
    char program[64];
    size_t cap, n;
    char *out;
    nwb_log_line_clock_t clock = NWB_LOG_LINE_CLOCK_INIT;

    (void)state;
    memset(msg, 0x01, NWB_LOG_RECORD_MSG_MAX);
    memset(file, 'f', sizeof(file));
    memset(program, 'p', sizeof(program));
    memset(&r, 0, sizeof(r));
    r.time_ns = UINT64_MAX / 2;
    r.thread_id = UINT64_MAX;
    r.line = UINT32_MAX;
    r.level = NWB_LOG_WARNING;
    r.msg = msg;
    r.msg_len = NWB_LOG_RECORD_MSG_MAX;
    r.file = file;
    r.file_len = sizeof(file);
    cap = nwb_log_line_max(&r, sizeof(program));
    out = malloc(cap);
    n = nwb_log_line_format(out, cap, &clock, &r, program, sizeof(program));
    assert_true(n <= cap);
    assert_int_equal(out[n - 1], '\n');
    free(out);
    free(msg);
}

static void test_log_line_compact_time_is_utc(void **state)
{
    char out[16];

    (void)state;
    nwb_time_compact(1700000000000000000ull, out);
    assert_string_equal(out, "20231114-221320");
    assert_true(nwb_time_now_ns() > 1700000000000000000ull);
    assert_true(nwb_time_mono_ns() > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_line_formats_time_level_thread_program_source_message),
        cmocka_unit_test(test_log_line_omits_source_when_absent),
        cmocka_unit_test(test_log_line_escapes_control_bytes_to_stay_one_line),
        cmocka_unit_test(test_log_line_escapes_at_every_word_position),
        cmocka_unit_test(test_log_line_worst_case_fits_the_announced_maximum),
        cmocka_unit_test(test_log_line_compact_time_is_utc),
    };

    return cmocka_run_group_tests_name("common.log_line", tests, NULL, NULL);
}
