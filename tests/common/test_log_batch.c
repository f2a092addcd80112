/* SPDX-License-Identifier: MIT */
/* test_log_batch.c - the log-batch wire format: round trips and every rejection the reader makes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/byte_order.h"
#include "nwb/error.h"
#include "nwb/log_batch.h"

static size_t build_batch(uint8_t *buf, int count)
{
    size_t off = NWB_LOG_BATCH_HEADER_SIZE;

    nwb_log_batch_header_write(buf);
    for (int i = 0; i < count; i++) {
        char msg[64];
        nwb_log_record_t r;

        memset(&r, 0, sizeof(r));
        r.time_ns = 1700000000123456789ull + (uint64_t)i;
        r.thread_id = 4242;
        r.line = (uint32_t)(10 + i);
        r.level = (uint8_t)(i % 4);
        r.flags = i == 0 ? NWB_LOG_RECORD_ESSENTIAL : 0;
        r.file = "game/main.c";
        r.file_len = (uint16_t)strlen(r.file);
        snprintf(msg, sizeof(msg), "record %d", i);
        r.msg = msg;
        r.msg_len = (uint32_t)strlen(msg);
        off += nwb_log_record_encode(buf + off, &r);
    }
    nwb_log_batch_header_finish(buf, (uint32_t)count, (uint32_t)(off - NWB_LOG_BATCH_HEADER_SIZE));
    return off;
}

static void test_log_batch_round_trips_every_field(void **state)
{
    uint8_t buf[4096];
    const size_t len = build_batch(buf, 5);
    nwb_log_batch_reader_t r;
    nwb_log_record_t rec;
    int n = 0;

    (void)state;
    assert_int_equal(nwb_log_batch_reader_init(&r, buf, len), 0);
    assert_int_equal(r.count, 5);
    while (nwb_log_batch_reader_next(&r, &rec) == 1) {
        char want[64];

        snprintf(want, sizeof(want), "record %d", n);
        assert_int_equal(rec.time_ns, 1700000000123456789ull + (uint64_t)n);
        assert_int_equal(rec.thread_id, 4242);
        assert_int_equal(rec.line, 10 + n);
        assert_int_equal(rec.level, n % 4);
        assert_int_equal(rec.flags, n == 0 ? NWB_LOG_RECORD_ESSENTIAL : 0);
        assert_int_equal(rec.file_len, strlen("game/main.c"));
        assert_memory_equal(rec.file, "game/main.c", rec.file_len);
        assert_int_equal(rec.msg_len, strlen(want));
        assert_memory_equal(rec.msg, want, rec.msg_len);
        n++;
    }
    assert_int_equal(n, 5);
    assert_int_equal(nwb_log_batch_reader_next(&r, &rec), 0);
}

static void test_log_batch_empty_batch_is_valid(void **state)
{
    uint8_t buf[64];
    const size_t len = build_batch(buf, 0);

    (void)state;
    assert_int_equal(len, NWB_LOG_BATCH_HEADER_SIZE);
    assert_int_equal(nwb_log_batch_validate(buf, len, NULL, NULL), 0);
}

static void expect_reject(const uint8_t *buf, size_t len, int code)
{
    const char *why = NULL;
    size_t off = 0;

    assert_int_equal(nwb_log_batch_validate(buf, len, &why, &off), code);
    assert_non_null(why);
    assert_true(strlen(why) > 0);
    assert_true(off <= len);
}

static void test_log_batch_rejects_bad_magic_and_version(void **state)
{
    uint8_t buf[4096];
    const size_t len = build_batch(buf, 2);

    (void)state;
    buf[0] ^= 0xff;
    expect_reject(buf, len, NWB_EMAGIC);
    buf[0] ^= 0xff;
    nwb_le16_store(buf + 4, 2);
    expect_reject(buf, len, NWB_EVERSION);
}

static void test_log_batch_rejects_truncation_at_every_offset(void **state)
{
    uint8_t buf[4096];
    const size_t len = build_batch(buf, 3);

    (void)state;
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *copy = malloc(cut + 1);

        memcpy(copy, buf, cut);
        assert_true(nwb_log_batch_validate(copy, cut, NULL, NULL) < 0);
        free(copy);
    }
}

static void test_log_batch_rejects_lying_lengths(void **state)
{
    uint8_t buf[4096];
    const size_t len = build_batch(buf, 3);
    const size_t rec0 = NWB_LOG_BATCH_HEADER_SIZE;
    uint8_t saved[32];

    (void)state;
    /* record_count claims more records than the payload can hold */
    nwb_le32_store(buf + 8, 1000000);
    expect_reject(buf, len, NWB_ERANGE);
    nwb_le32_store(buf + 8, 3);
    /* record_count one more than present: the last read runs out */
    nwb_le32_store(buf + 8, 4);
    expect_reject(buf, len, NWB_ETRUNCATED);
    nwb_le32_store(buf + 8, 2);
    expect_reject(buf, len, NWB_EPROTO); /* bytes after the last record */
    nwb_le32_store(buf + 8, 3);
    /* payload_bytes disagrees with the body */
    nwb_le32_store(buf + 12, (uint32_t)(len - NWB_LOG_BATCH_HEADER_SIZE + 1));
    expect_reject(buf, len, NWB_ERANGE);
    nwb_le32_store(buf + 12, (uint32_t)(len - NWB_LOG_BATCH_HEADER_SIZE));
    memcpy(saved, buf + rec0, sizeof(saved));
    /* record_size past the end */
    nwb_le32_store(buf + rec0, 0xfffffff0u);
    expect_reject(buf, len, NWB_ETRUNCATED);
    /* record_size smaller than its own fields */
    nwb_le32_store(buf + rec0, 8);
    expect_reject(buf, len, NWB_ERANGE);
    memcpy(buf + rec0, saved, sizeof(saved));
    /* msg_len over the bound */
    nwb_le32_store(buf + rec0 + 28, NWB_LOG_RECORD_MSG_MAX + 1);
    expect_reject(buf, len, NWB_ERANGE);
    memcpy(buf + rec0, saved, sizeof(saved));
    /* file_len over the bound */
    nwb_le16_store(buf + rec0 + 6, NWB_LOG_RECORD_FILE_MAX + 1);
    expect_reject(buf, len, NWB_ERANGE);
    memcpy(buf + rec0, saved, sizeof(saved));
    /* unknown level */
    buf[rec0 + 4] = 9;
    expect_reject(buf, len, NWB_EPROTO);
    memcpy(buf + rec0, saved, sizeof(saved));
    assert_int_equal(nwb_log_batch_validate(buf, len, NULL, NULL), 0);
}

static void test_log_batch_skips_fields_a_newer_writer_appended(void **state)
{
    uint8_t buf[256];
    nwb_log_record_t r, out;
    nwb_log_batch_reader_t rd;
    size_t off = NWB_LOG_BATCH_HEADER_SIZE;

    (void)state;
    memset(&r, 0, sizeof(r));
    r.msg = "hi";
    r.msg_len = 2;
    nwb_log_batch_header_write(buf);
    off += nwb_log_record_encode(buf + off, &r);
    /* grow the record by 8 extension bytes */
    nwb_le32_store(buf + NWB_LOG_BATCH_HEADER_SIZE,
                   (uint32_t)(off - NWB_LOG_BATCH_HEADER_SIZE + 8));
    memset(buf + off, 0xee, 8);
    off += 8;
    /* a larger header_size is skipped too */
    nwb_log_batch_header_finish(buf, 1, (uint32_t)(off - NWB_LOG_BATCH_HEADER_SIZE));
    assert_int_equal(nwb_log_batch_reader_init(&rd, buf, off), 0);
    assert_int_equal(nwb_log_batch_reader_next(&rd, &out), 1);
    assert_memory_equal(out.msg, "hi", 2);
    assert_int_equal(nwb_log_batch_reader_next(&rd, &out), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_batch_round_trips_every_field),
        cmocka_unit_test(test_log_batch_empty_batch_is_valid),
        cmocka_unit_test(test_log_batch_rejects_bad_magic_and_version),
        cmocka_unit_test(test_log_batch_rejects_truncation_at_every_offset),
        cmocka_unit_test(test_log_batch_rejects_lying_lengths),
        cmocka_unit_test(test_log_batch_skips_fields_a_newer_writer_appended),
    };

    return cmocka_run_group_tests_name("common.log_batch", tests, NULL, NULL);
}
