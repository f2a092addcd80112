/* SPDX-License-Identifier: MIT */
/*
 * test_log_thread_names.c - unit tests of thread names in the log: the per-run
 * tid -> name map (thread_names.c: 15-byte names, longer ones cut, a full
 * map refusing new threads and counting them), the reader of a record's
 * tagged fields (15 and 16-byte names, unknown tags skipped, truncated
 * fields and empty names rejected with a reason) and the renderer writing
 * `tid[name]`, with the name escaped so a line cannot be forged, also on
 * later batches that carry no name.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "nwb/byte_order.h"
#include "nwb/error.h"
#include "nwb/log.h"
#include "server_int.h"
#include "thread_names.h"

/* ---- the map ---- */

static void test_map_keeps_names_up_to_15_bytes(void **state)
{
    struct nwb__thread_names *m = nwb__thread_names_create();
    uint8_t len = 0;
    const char *name;

    (void)state;
    assert_non_null(m);
    assert_null(nwb__thread_names_get(m, 7, &len));
    assert_int_equal(len, 0);
    assert_int_equal(nwb__thread_names_set(m, 7, "render-worker15", 15), 0);
    name = nwb__thread_names_get(m, 7, &len);
    assert_int_equal(len, 15);
    assert_memory_equal(name, "render-worker15", 15);
    /* 16 bytes: cut to the kernel's 15 */
    assert_int_equal(nwb__thread_names_set(m, 8, "render-worker16x", 16), 0);
    name = nwb__thread_names_get(m, 8, &len);
    assert_int_equal(len, 15);
    assert_memory_equal(name, "render-worker16", 15);
    /* a new name replaces the old one */
    assert_int_equal(nwb__thread_names_set(m, 7, "io", 2), 0);
    name = nwb__thread_names_get(m, 7, &len);
    assert_int_equal(len, 2);
    assert_memory_equal(name, "io", 2);
    assert_int_equal(nwb__thread_names_count(m), 2);
    nwb__thread_names_destroy(m);
}

static void test_full_map_refuses_new_threads_and_counts_them(void **state)
{
    struct nwb__thread_names *m = nwb__thread_names_create();
    uint8_t len = 0;

    (void)state;
    assert_non_null(m);
    for (uint64_t tid = 0; tid < NWB__THREAD_NAMES_MAX; tid++) {
        assert_int_equal(nwb__thread_names_set(m, tid * 4096u + 1u, "t", 1), 0);
    }
    assert_int_equal(nwb__thread_names_count(m), NWB__THREAD_NAMES_MAX);
    assert_int_equal(nwb__thread_names_set(m, 5, "late", 4), NWB_EFULL);
    assert_int_equal(nwb__thread_names_refused(m), 1);
    assert_null(nwb__thread_names_get(m, 5, &len));
    /* a thread already known can still be renamed */
    assert_int_equal(nwb__thread_names_set(m, 1, "again", 5), 0);
    assert_memory_equal(nwb__thread_names_get(m, 1, &len), "again", 5);
    assert_int_equal(nwb__thread_names_count(m), NWB__THREAD_NAMES_MAX);
    nwb__thread_names_destroy(m);
}

/* ---- the tagged fields ---- */

/* A one-record batch for thread @p tid, message "m", with @p tags appended (TAGGED when
 * @p tagged). Returns its size. */
static size_t tagged_batch(uint8_t *buf, uint64_t tid, const void *tags, size_t tags_len,
                           int tagged)
{
    nwb_log_record_t rec;
    size_t off = NWB_LOG_BATCH_HEADER_SIZE;

    nwb_log_batch_header_write(buf);
    memset(&rec, 0, sizeof(rec));
    rec.time_ns = 1764576000123456789ull;
    rec.thread_id = tid;
    rec.msg = "m";
    rec.msg_len = 1;
    off += nwb_log_record_encode(buf + off, &rec);
    memcpy(buf + off, tags, tags_len);
    off += tags_len;
    nwb_le32_store(buf + NWB_LOG_BATCH_HEADER_SIZE, (uint32_t)(off - NWB_LOG_BATCH_HEADER_SIZE));
    if (tagged) {
        buf[NWB_LOG_BATCH_HEADER_SIZE + 5] |= NWB_LOG_RECORD_TAGGED;
    }
    nwb_log_batch_header_finish(buf, 1, (uint32_t)(off - NWB_LOG_BATCH_HEADER_SIZE));
    return off;
}

/* Reads the one record of @p buf; returns the reader's code for it. */
static int read_one(const uint8_t *buf, size_t len, nwb_log_record_t *rec, const char **why)
{
    nwb_log_batch_reader_t r;
    int rc = nwb_log_batch_reader_init(&r, buf, len);

    if (rc == 0) {
        rc = nwb_log_batch_reader_next(&r, rec);
    }
    *why = r.why;
    return rc;
}

static void test_reader_takes_names_and_skips_unknown_tags(void **state)
{
    static const uint8_t name15[] = {1,   15,  'a', 'b', 'c', 'd', 'e', 'f', 'g',
                                     'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o'};
    static const uint8_t unknown[] = {42, 3, 'x', 'y', 'z', 1, 4, 'm', 'a', 'i', 'n', 99, 0};
    uint8_t buf[256];
    nwb_log_record_t rec;
    const char *why;
    size_t len;

    (void)state;
    len = tagged_batch(buf, 7, name15, sizeof(name15), 1);
    assert_int_equal(read_one(buf, len, &rec, &why), 1);
    assert_int_equal(rec.thread_name_len, 15);
    assert_memory_equal(rec.thread_name, "abcdefghijklmno", 15);
    assert_int_equal(nwb_log_batch_validate(buf, len, NULL, NULL), 0);

    len = tagged_batch(buf, 7, unknown, sizeof(unknown), 1);
    assert_int_equal(read_one(buf, len, &rec, &why), 1);
    assert_int_equal(rec.thread_name_len, 4);
    assert_memory_equal(rec.thread_name, "main", 4);

    /* TAGGED with no field, and trailing bytes without TAGGED (an old-style extension) */
    len = tagged_batch(buf, 7, "", 0, 1);
    assert_int_equal(read_one(buf, len, &rec, &why), 1);
    assert_int_equal(rec.thread_name_len, 0);
    len = tagged_batch(buf, 7, name15, sizeof(name15), 0);
    assert_int_equal(read_one(buf, len, &rec, &why), 1);
    assert_int_equal(rec.thread_name_len, 0);
    assert_null(rec.thread_name);
}

static void test_reader_rejects_bad_tagged_fields_with_a_reason(void **state)
{
    static const uint8_t name16[] = {1,   16,  'a', 'b', 'c', 'd', 'e', 'f', 'g',
                                     'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p'};
    static const uint8_t empty[] = {1, 0};
    static const uint8_t past[] = {1, 9, 'a', 'b'};
    static const uint8_t half[] = {5};
    uint8_t buf[256];
    nwb_log_record_t rec;
    const char *why;
    size_t len;

    (void)state;
    len = tagged_batch(buf, 7, name16, sizeof(name16), 1);
    assert_int_equal(read_one(buf, len, &rec, &why), NWB_ERANGE);
    assert_string_equal(why, "thread name not 1 to 15 bytes");
    len = tagged_batch(buf, 7, empty, sizeof(empty), 1);
    assert_int_equal(read_one(buf, len, &rec, &why), NWB_ERANGE);
    len = tagged_batch(buf, 7, past, sizeof(past), 1);
    assert_int_equal(read_one(buf, len, &rec, &why), NWB_ETRUNCATED);
    assert_string_equal(why, "tagged field runs past record_size");
    len = tagged_batch(buf, 7, half, sizeof(half), 1);
    assert_int_equal(read_one(buf, len, &rec, &why), NWB_ETRUNCATED);
    assert_string_equal(why, "tagged field header runs past record_size");
    assert_int_not_equal(nwb_log_batch_validate(buf, len, NULL, NULL), 0);
}

/* ---- rendering ---- */

/* Renders @p body with the run map @p m into @p out (NUL-terminated). */
static void render(struct nwb__thread_names *m, const uint8_t *body, size_t len, char *out,
                   size_t cap)
{
    struct nwb__rec_iter it;
    struct nwb__render rd;
    size_t n = 0;
    int end = 0;

    nwb__rec_iter_batch(&it, body, len);
    nwb__render_init(&rd, "game", 4);
    nwb__render_set_thread_names(&rd, m);
    assert_int_equal(nwb__render_fill(&rd, &it, out, cap - 1, &n, &end), 0);
    assert_true(end);
    out[n] = '\0';
}

static void test_lines_show_tid_and_escaped_name_across_batches(void **state)
{
    static const uint8_t named[] = {1, 6, 'r', 'e', 'n', 'd', 'e', 'r'};
    static const uint8_t forged[] = {1, 7, ']', ' ', 'E', 'R', '[', '\n', 0x7f};
    struct nwb__thread_names *m = nwb__thread_names_create();
    uint8_t buf[256];
    char out[8192];
    size_t len;

    (void)state;
    assert_non_null(m);
    len = tagged_batch(buf, 4242, named, sizeof(named), 1);
    render(m, buf, len, out, sizeof(out));
    assert_non_null(strstr(out, " INFO    4242[render] game m\n"));
    /* a later batch without the tag: the run's map still knows the name */
    len = tagged_batch(buf, 4242, "", 0, 0);
    render(m, buf, len, out, sizeof(out));
    assert_non_null(strstr(out, " INFO    4242[render] game m\n"));
    /* another thread without a name: the tid alone */
    len = tagged_batch(buf, 99, "", 0, 0);
    render(m, buf, len, out, sizeof(out));
    assert_non_null(strstr(out, " INFO    99 game m\n"));
    /* bytes that could end the field or the line are escaped */
    len = tagged_batch(buf, 5, forged, sizeof(forged), 1);
    render(m, buf, len, out, sizeof(out));
    assert_non_null(strstr(out, " INFO    5[\\x5d\\x20ER\\x5b\\x0a\\x7f] game m\n"));
    assert_int_equal(strchr(out, '\n') - out + 1, (long)strlen(out)); /* one line */
    /* no map (out of memory): lines without names */
    len = tagged_batch(buf, 4242, named, sizeof(named), 1);
    render(NULL, buf, len, out, sizeof(out));
    assert_non_null(strstr(out, " INFO    4242 game m\n"));
    nwb__thread_names_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_keeps_names_up_to_15_bytes),
        cmocka_unit_test(test_full_map_refuses_new_threads_and_counts_them),
        cmocka_unit_test(test_reader_takes_names_and_skips_unknown_tags),
        cmocka_unit_test(test_reader_rejects_bad_tagged_fields_with_a_reason),
        cmocka_unit_test(test_lines_show_tid_and_escaped_name_across_batches),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
