/* SPDX-License-Identifier: MIT */
/*
 * test_log_render.c - unit tests of log_render.c: the text/plain line rules,
 * long-line splitting at UTF-8 boundaries, batch records formatted like
 * nwb_log_line_format(), filling a small buffer in several pieces, and the
 * fast line formatter checked byte for byte against a plain reference
 * renderer on random records (never writing past the capacity it is given).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* The line form of docs/protocol.md, written the slow and obvious way. */
static size_t ref_escape(char *p, const char *s, size_t len)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)s[i];

        if (c == '\n') {
            n += (size_t)sprintf(p + n, "\\n");
        } else if (c == '\r') {
            n += (size_t)sprintf(p + n, "\\r");
        } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
            n += (size_t)sprintf(p + n, "\\x%02x", c);
        } else {
            p[n++] = (char)c;
        }
    }
    return n;
}

static size_t ref_line(char *out, const nwb_log_record_t *r, const char *program)
{
    static const char *const lv[] = {"INFO   ", "WARNING", "ERROR  ", "FATAL  "};
    const time_t t = (time_t)(r->time_ns / 1000000000u);
    struct tm tm;
    size_t n;

    gmtime_r(&t, &tm);
    n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    n +=
        (size_t)sprintf(out + n, ".%09uZ %s %llu %s ", (unsigned)(r->time_ns % 1000000000u),
                        lv[r->level < 4 ? r->level : 0], (unsigned long long)r->thread_id, program);
    if (r->file_len > 0) {
        n += ref_escape(out + n, r->file, r->file_len);
        n += (size_t)sprintf(out + n, ":%u: ", (unsigned)r->line);
    }
    n += ref_escape(out + n, r->msg, r->msg_len);
    out[n++] = '\n';
    return n;
}

/* Mostly printable text with, now and then, each kind of byte that is escaped or is not. */
static void random_text(char *s, size_t len, unsigned *seed)
{
    static const char special[] = {'\n', '\r', '\t',       0x7f,       0x01,       0x1f,      0x00,
                                   ' ',  '#',  (char)0xc3, (char)0xa9, (char)0x80, (char)0xff};

    for (size_t i = 0; i < len; i++) {
        const unsigned r = (unsigned)rand_r(seed);

        s[i] = (r % 16 == 0) ? special[(r >> 4) % sizeof(special)] : (char)(' ' + (r >> 8) % 95);
    }
}

static void test_fast_line_format_matches_the_reference_on_random_records(void **state)
{
    enum { CANARY = 64 };
    static char file[NWB_LOG_RECORD_FILE_MAX], msg[600], program[80];
    static char got[NWB_LOG_LINE_FIXED_MAX + 80 + 4 * NWB_LOG_RECORD_FILE_MAX + 4 * 600 + CANARY];
    static char want[sizeof(got)];
    static const uint64_t tids[] = {0, 7, 99, 100, 4242, 18446744073709551615ull};
    nwb_log_line_clock_t clock = NWB_LOG_LINE_CLOCK_INIT;
    unsigned seed = 12345;
    int escaped_lines = 0;

    (void)state;
    for (int iter = 0; iter < 20000; iter++) {
        nwb_log_record_t r;
        const unsigned k = (unsigned)rand_r(&seed);
        /* Program text changes in place only together with the clock (nwb/log_line.h). */
        const size_t plen = iter % 1000 == 999 ? 40u + k % 40u : 4u + (unsigned)(iter / 1000 % 3);
        size_t cap, n, wn;

        if (iter % 1000 == 0 || iter % 1000 == 999) {
            clock = (nwb_log_line_clock_t)NWB_LOG_LINE_CLOCK_INIT;
        }
        memset(program, 'p', sizeof(program));
        program[plen] = '\0';
        memset(&r, 0, sizeof(r));
        r.time_ns = 1764574440123456789ull + (uint64_t)(k % 7) * 999999937ull * (iter % 5);
        if (iter % 97 == 0) {
            r.time_ns = (uint64_t)iter; /* 1970, nanoseconds with leading zeros */
        }
        r.level = (uint8_t)(k >> 3) % 5; /* 4 is out of range: printed as INFO */
        r.thread_id = tids[(k >> 6) % 6];
        r.line = (k >> 9) % 3 == 0 ? 0 : (uint32_t)rand_r(&seed);
        r.file_len = (uint16_t)((k >> 12) % 4 == 0 ? 0 : (unsigned)rand_r(&seed) % 40);
        if (iter % 501 == 0) {
            r.file_len = NWB_LOG_RECORD_FILE_MAX;
        }
        r.msg_len = (uint32_t)((unsigned)rand_r(&seed) % (iter % 10 == 0 ? sizeof(msg) : 120u));
        random_text(file, r.file_len, &seed);
        if (iter % 3 == 0) {
            /* Clean text takes the block paths all the way. */
            for (size_t i = 0; i < sizeof(msg); i++) {
                msg[i] = (char)('a' + i % 26);
            }
        } else {
            random_text(msg, r.msg_len, &seed);
        }
        r.file = file;
        r.msg = msg;
        wn = ref_line(want, &r, program);
        cap = nwb_log_line_max(&r, plen);
        assert_true(cap + CANARY <= sizeof(got));
        memset(got, 0x5a, cap + CANARY);
        n = nwb_log_line_format(got, cap, &clock, &r, program, plen);
        assert_int_equal(n, wn);
        assert_memory_equal(got, want, wn);
        for (size_t i = cap; i < cap + CANARY; i++) {
            assert_int_equal(got[i], 0x5a); /* nothing stored past cap */
        }
        escaped_lines += memchr(want, '\\', wn) != NULL;
    }
    assert_true(escaped_lines > 1000); /* the escape paths were taken */
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
        cmocka_unit_test(test_fast_line_format_matches_the_reference_on_random_records),
    };

    return cmocka_run_group_tests_name("server.log_render", tests, NULL, NULL);
}
