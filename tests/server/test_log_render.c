/* SPDX-License-Identifier: MIT */
/*
 * test_log_render.c - unit tests of log_render.c: the text/plain line rules,
 * long-line splitting at UTF-8 boundaries, batch records formatted like
 * nwb_log_line_format(), and filling a small buffer in several pieces.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "nwb/log.h"
#include "server_int.h"
#include "server_test_util.h"

#define T0 1764574440123456789ull

static int text_records(const char *body, size_t len, nwb_log_record_t *out, int max)
{
    struct nwb__rec_iter it;
    int n = 0;

    nwb__rec_iter_text(&it, body, len, T0);
    while (n < max && nwb__rec_iter_next(&it, &out[n]) == 1) {
        n++;
    }
    return n;
}

static void test_text_lines_follow_the_rules(void **state)
{
    static const char body[] = "first\nsecond\r\n\n\r\n  \nlast without newline";
    nwb_log_record_t recs[8];
    int n;

    (void)state;
    n = text_records(body, sizeof(body) - 1, recs, 8);
    assert_int_equal(n, 4);
    assert_int_equal(recs[0].msg_len, 5);
    assert_memory_equal(recs[0].msg, "first", 5);
    assert_int_equal(recs[1].msg_len, 6); /* the CR of CRLF is dropped */
    assert_memory_equal(recs[1].msg, "second", 6);
    assert_int_equal(recs[2].msg_len, 2); /* blanks are content, not an empty line */
    assert_memory_equal(recs[3].msg, "last without newline", 20);
    for (int i = 0; i < n; i++) {
        assert_int_equal(recs[i].level, NWB_LOG_INFO);
        assert_int_equal(recs[i].time_ns, T0);
        assert_int_equal(recs[i].thread_id, 0);
        assert_int_equal(recs[i].file_len, 0);
    }
    assert_int_equal(text_records("", 0, recs, 8), 0);
    assert_int_equal(text_records("\n\n\r\n", 4, recs, 8), 0);
}

static void test_long_text_line_is_split_at_a_utf8_boundary(void **state)
{
    const size_t max = NWB_LOG_RECORD_MSG_MAX;
    const size_t len = 2 * max + 10;
    char *body = malloc(len + 1);
    nwb_log_record_t recs[8];
    int n;

    (void)state;
    memset(body, 'x', len);
    /* A 3-byte UTF-8 character straddling the first cut. */
    memcpy(body + max - 1, "\xe2\x82\xac", 3);
    body[len] = '\n';
    n = text_records(body, len + 1, recs, 8);
    assert_int_equal(n, 3);
    assert_int_equal(recs[0].msg_len, max - 1);
    assert_int_equal(recs[1].msg_len, max);
    assert_memory_equal(recs[1].msg, "\xe2\x82\xac", 3);
    assert_int_equal((size_t)recs[0].msg_len + recs[1].msg_len + recs[2].msg_len, len);
    /* Exactly the bound: one record. */
    n = text_records(body + len - max, max, recs, 8);
    assert_int_equal(n, 1);
    free(body);
}

static void test_batch_records_render_like_log_line_format(void **state)
{
    static const char *const msgs[] = {"hello", "with\nnewline", "dropped 3 records"};
    uint8_t batch[1024];
    size_t blen;
    char out[8192];
    char expect[8192];
    size_t elen = 0;
    size_t len;
    int end;
    struct nwb__rec_iter it;
    struct nwb__render rd;
    nwb_log_batch_reader_t rdr;
    nwb_log_record_t rec;
    nwb_log_line_clock_t clock = NWB_LOG_LINE_CLOCK_INIT;

    (void)state;
    blen = tu_batch_build(batch, sizeof(batch), msgs, 3, 0);
    batch[NWB_LOG_BATCH_HEADER_SIZE + 5] = NWB_LOG_RECORD_DROPNOTE | 0x80; /* + an unknown flag */
    nwb_log_batch_reader_init(&rdr, batch, blen);
    while (nwb_log_batch_reader_next(&rdr, &rec) == 1) {
        elen += nwb_log_line_format(expect + elen, sizeof(expect) - elen, &clock, &rec, "game", 4);
    }
    nwb__rec_iter_batch(&it, batch, blen);
    nwb__render_init(&rd, "game", 4);
    assert_int_equal(nwb__render_fill(&rd, &it, out, sizeof(out), &len, &end), 0);
    assert_true(end);
    assert_int_equal(len, elen);
    assert_memory_equal(out, expect, elen);
    assert_int_equal(rd.records, 3);
    assert_int_equal(rd.drops, 1);
    assert_non_null(strstr(out, "WARNING 4242 game game.c:10: hello\n"));
    assert_non_null(strstr(out, "with\\nnewline\n"));
}

static void test_small_buffer_fills_in_pieces_without_losing_a_record(void **state)
{
    const char *msgs[40];
    char texts[40][32];
    uint8_t batch[8192];
    size_t blen;
    char whole[16384];
    size_t wlen;
    char pieces[16384];
    size_t plen = 0;
    char *buf;
    size_t cap;
    int end = 0;
    int fills = 0;
    struct nwb__rec_iter it;
    struct nwb__render rd;

    (void)state;
    for (int i = 0; i < 40; i++) {
        snprintf(texts[i], sizeof(texts[i]), "message number %d", i);
        msgs[i] = texts[i];
    }
    blen = tu_batch_build(batch, sizeof(batch), msgs, 40, 0);
    nwb__rec_iter_batch(&it, batch, blen);
    nwb__render_init(&rd, "game", 4);
    assert_int_equal(nwb__render_fill(&rd, &it, whole, sizeof(whole), &wlen, &end), 0);
    assert_true(end);

    /* Room for the largest line of these records and a little more. */
    cap = NWB_LOG_LINE_FIXED_MAX + 4 + 6 + 4 * 20 + 50;
    buf = malloc(cap);
    nwb__rec_iter_batch(&it, batch, blen);
    nwb__render_init(&rd, "game", 4);
    end = 0;
    while (!end) {
        size_t len;

        assert_int_equal(nwb__render_fill(&rd, &it, buf, cap, &len, &end), 0);
        assert_true(len > 0 || end);
        memcpy(pieces + plen, buf, len);
        plen += len;
        fills++;
    }
    free(buf);
    assert_true(fills > 5);
    assert_int_equal(rd.records, 40);
    assert_int_equal(plen, wlen);
    assert_memory_equal(pieces, whole, wlen);
}

static void test_malformed_batch_is_an_error_not_a_crash(void **state)
{
    static const char *const msgs[] = {"one", "two"};
    uint8_t batch[512];
    size_t blen;
    char out[4096];
    size_t len;
    int end;
    struct nwb__rec_iter it;
    struct nwb__render rd;

    (void)state;
    blen = tu_batch_build(batch, sizeof(batch), msgs, 2, 0);
    batch[NWB_LOG_BATCH_HEADER_SIZE + 4] = 9; /* the first record: level out of range */
    nwb__rec_iter_batch(&it, batch, blen);
    nwb__render_init(&rd, "game", 4);
    assert_true(nwb__render_fill(&rd, &it, out, sizeof(out), &len, &end) < 0);
    nwb__rec_iter_batch(&it, batch, 7); /* shorter than its header */
    assert_true(nwb__render_fill(&rd, &it, out, sizeof(out), &len, &end) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_lines_follow_the_rules),
        cmocka_unit_test(test_long_text_line_is_split_at_a_utf8_boundary),
        cmocka_unit_test(test_batch_records_render_like_log_line_format),
        cmocka_unit_test(test_small_buffer_fills_in_pieces_without_losing_a_record),
        cmocka_unit_test(test_malformed_batch_is_an_error_not_a_crash),
    };

    return cmocka_run_group_tests_name("server.log_render", tests, NULL, NULL);
}
