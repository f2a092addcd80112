/* SPDX-License-Identifier: MIT */
/* test_log_tail.c - the crash tail keeps the newest whole lines in a fixed ring. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nwb/log.h"
#include "nwb/log_tail.h"

static void append(int i)
{
    char msg[64];
    nwb_log_record_t r;

    memset(&r, 0, sizeof(r));
    snprintf(msg, sizeof(msg), "tail line %06d", i);
    r.time_ns = 1000 + (uint64_t)i;
    r.level = NWB_LOG_ERROR;
    r.thread_id = 7;
    r.file = "f.c";
    r.file_len = 3;
    r.line = 9;
    r.msg = msg;
    r.msg_len = (uint32_t)strlen(msg);
    nwb_log_tail_append(&r);
}

static void test_log_tail_keeps_lines_in_order(void **state)
{
    char buf[4096];
    size_t n;

    (void)state;
    nwb_log_tail_reset();
    append(1);
    append(2);
    n = nwb_log_tail_copy(buf, sizeof(buf) - 1);
    buf[n] = '\0';
    assert_string_equal(
        buf, "1001 ERROR 7 f.c:9: tail line 000001\n1002 ERROR 7 f.c:9: tail line 000002\n");
}

static void test_log_tail_wraps_keeping_only_whole_newest_lines(void **state)
{
    char *buf = malloc(NWB_LOG_TAIL_BYTES + 1);
    char path[] = "/tmp/nwb-tail-XXXXXX";
    const int fd = mkstemp(path);
    long written;
    size_t n;
    char first[64];

    (void)state;
    nwb_log_tail_reset();
    for (int i = 0; i < 20000; i++) {
        append(i);
    }
    n = nwb_log_tail_copy(buf, NWB_LOG_TAIL_BYTES);
    buf[n] = '\0';
    assert_true(n > NWB_LOG_TAIL_BYTES - 100);
    assert_non_null(strstr(buf, "tail line 019999\n"));
    assert_int_equal(buf[n - 1], '\n');
    assert_int_equal(sscanf(buf, "%63[^\n]", first), 1);
    assert_non_null(strstr(first, " ERROR 7 f.c:9: tail line ")); /* starts on a whole line */
    written = nwb_log_tail_write_fd(fd);
    assert_int_equal(written, (long)n);
    close(fd);
    unlink(path);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_tail_keeps_lines_in_order),
        cmocka_unit_test(test_log_tail_wraps_keeping_only_whole_newest_lines),
    };

    return cmocka_run_group_tests_name("common.log_tail", tests, NULL, NULL);
}
