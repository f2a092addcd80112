/* SPDX-License-Identifier: MIT */
/*
 * test_json.c - the streaming JSON writer (nwb/json.h): escaping, UTF-8 sanitising, commas
 * and nesting, the depth limit, numbers, streaming to a FILE, sticky errors, and misuse (an
 * abort in debug builds, a sticky NWB_EPROTO with NDEBUG). Every document written is parsed
 * by the strict checker (tests/support/json_check.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json_check.h"
#include "nwb/buf.h"
#include "nwb/error.h"
#include "nwb/json.h"

/* Assert that @p b holds exactly @p want, and that it is valid JSON. */
static void expect_doc(const nwb_buf_t *b, const char *want)
{
    size_t bad = 0;

    assert_int_equal(nwb_test_json_check((const char *)b->data, b->len, &bad), 0);
    assert_int_equal(b->len, strlen(want));
    assert_memory_equal(b->data, want, b->len);
}

/* One string value written as a whole document. */
static void expect_str(const char *in, size_t len, const char *want)
{
    nwb_buf_t b = NWB_BUF_INIT(1u << 16);
    nwb_json_t j;

    nwb_json_init(&j, &b, NULL);
    nwb_json_str(&j, in, len);
    assert_int_equal(nwb_json_finish(&j), 0);
    expect_doc(&b, want);
    nwb_buf_cleanup(&b);
}

static void test_json_escapes_quotes_backslash_and_controls(void **state)
{
    (void)state;
    expect_str("plain text", 10, "\"plain text\"");
    expect_str("", 0, "\"\"");
    expect_str("say \"hi\"", 8, "\"say \\\"hi\\\"\"");
    expect_str("C:\\dir\\", 7, "\"C:\\\\dir\\\\\"");
    expect_str("a\nb\tc\rd", 7, "\"a\\nb\\tc\\rd\"");
    expect_str("\x01\x08\x0c\x1f", 4, "\"\\u0001\\u0008\\u000c\\u001f\"");
    /* DEL and '/' need no escape. */
    expect_str("\x7f/", 2, "\"\x7f/\"");
}

static void test_json_escapes_nul_inside_a_string(void **state)
{
    (void)state;
    expect_str("a\0b", 3, "\"a\\u0000b\"");
    expect_str("\0", 1, "\"\\u0000\"");
}

static void test_json_keeps_valid_utf8_and_replaces_invalid_bytes(void **state)
{
    (void)state;
    /* 2, 3 and 4 byte sequences, the last code point U+10FFFF. */
    expect_str("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf", 13,
               "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"");
    /* A stray continuation byte, and bytes that never start a sequence. */
    expect_str("a\x80z", 3, "\"a\xef\xbf\xbdz\"");
    expect_str("\xff\xfe", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"");
    /* An overlong '/' (C0 AF), a UTF-16 surrogate (ED A0 80), past U+10FFFF (F4 90 80 80). */
    expect_str("\xc0\xaf", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"");
    expect_str("\xed\xa0\x80", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
    expect_str("\xf4\x90\x80\x80", 4, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
    /* A sequence cut short by the end of the string. */
    expect_str("ok\xe2\x82", 4, "\"ok\xef\xbf\xbd\xef\xbf\xbd\"");
}

static void test_json_keys_are_escaped_like_strings(void **state)
{
    nwb_buf_t b = NWB_BUF_INIT(4096);
    nwb_json_t j;

    (void)state;
    nwb_json_init(&j, &b, NULL);
    nwb_json_obj_begin(&j);
    nwb_json_key(&j, "we\"ird\\key\n\xff");
    nwb_json_u64(&j, 1);
    nwb_json_obj_end(&j);
    assert_int_equal(nwb_json_finish(&j), 0);
    expect_doc(&b, "{\"we\\\"ird\\\\key\\n\xef\xbf\xbd\":1}");
    nwb_buf_cleanup(&b);
}

static void test_json_nesting_and_commas(void **state)
{
    nwb_buf_t b = NWB_BUF_INIT(4096);
    nwb_json_t j;

    (void)state;
    nwb_json_init(&j, &b, NULL);
    nwb_json_obj_begin(&j);
    nwb_json_key(&j, "a");
    nwb_json_arr_begin(&j);
    nwb_json_u64(&j, 1);
    nwb_json_i64(&j, -2);
    nwb_json_obj_begin(&j);
    nwb_json_key(&j, "b");
    nwb_json_null(&j);
    nwb_json_obj_end(&j);
    nwb_json_arr_begin(&j);
    nwb_json_arr_end(&j);
    nwb_json_arr_begin(&j);
    nwb_json_arr_begin(&j);
    nwb_json_arr_end(&j);
    nwb_json_arr_end(&j);
    nwb_json_arr_end(&j);
    nwb_json_key(&j, "c");
    nwb_json_bool(&j, 1);
    nwb_json_key(&j, "d");
    nwb_json_obj_begin(&j);
    nwb_json_obj_end(&j);
    nwb_json_key(&j, "e");
    nwb_json_bool(&j, 0);
    nwb_json_key(&j, "f");
    nwb_json_cstr(&j, "s");
    nwb_json_key(&j, "g");
    nwb_json_number_text(&j, "1.5e3", 5);
    nwb_json_obj_end(&j);
    nwb_json_space(&j, "\n", 1);
    assert_int_equal(nwb_json_finish(&j), 0);
    expect_doc(&b, "{\"a\":[1,-2,{\"b\":null},[],[[]]],\"c\":true,\"d\":{},\"e\":false,\"f\":\"s\","
                   "\"g\":1.5e3}\n");
    nwb_buf_cleanup(&b);
}

static void test_json_appends_after_existing_contents(void **state)
{
    nwb_buf_t b = NWB_BUF_INIT(4096);
    nwb_json_t j;

    (void)state;
    assert_int_equal(nwb_buf_append_str(&b, "prefix:"), 0);
    nwb_json_init(&j, &b, NULL);
    nwb_json_arr_begin(&j);
    nwb_json_arr_end(&j);
    assert_int_equal(nwb_json_finish(&j), 0);
    assert_int_equal(b.len, 9);
    assert_memory_equal(b.data, "prefix:[]", 9);
    nwb_buf_cleanup(&b);
}

static void test_json_numbers(void **state)
{
    nwb_buf_t b = NWB_BUF_INIT(4096);
    nwb_json_t j;

    (void)state;
    nwb_json_init(&j, &b, NULL);
    nwb_json_arr_begin(&j);
    nwb_json_u64(&j, 0);
    nwb_json_u64(&j, UINT64_MAX);
    nwb_json_i64(&j, INT64_MIN);
    nwb_json_i64(&j, INT64_MAX);
    nwb_json_dbl(&j, 1.25, 2);
    nwb_json_dbl(&j, -0.0001, 3); /* "-0.000" is written as "0.000" */
    nwb_json_dbl(&j, 2.5, 0);
    nwb_json_dbl(&j, NAN, 1);       /* non-finite: 0 */
    nwb_json_dbl(&j, -INFINITY, 1); /* non-finite: 0 */
    nwb_json_dbl(&j, 1e20, 3);      /* short exponent form */
    nwb_json_dbl(&j, -3.5, 99);     /* out of range decimals: 6 */
    nwb_json_arr_end(&j);
    assert_int_equal(nwb_json_finish(&j), 0);
    expect_doc(&b, "[0,18446744073709551615,-9223372036854775808,9223372036854775807,1.25,0.000,"
                   "2,0.0,0.0,1e+20,-3.500000]");
    nwb_buf_cleanup(&b);
}

static void test_json_depth_limit_is_a_sticky_toobig(void **state)
{
    nwb_buf_t b = NWB_BUF_INIT(4096);
    nwb_json_t j;
    char want[2 * NWB_JSON_DEPTH_MAX + 1];

    (void)state;
    /* Exactly the limit: fine. */
    nwb_json_init(&j, &b, NULL);
    for (int i = 0; i < NWB_JSON_DEPTH_MAX; i++) {
        nwb_json_arr_begin(&j);
    }
    for (int i = 0; i < NWB_JSON_DEPTH_MAX; i++) {
        nwb_json_arr_end(&j);
    }
    assert_int_equal(nwb_json_finish(&j), 0);
    memset(want, '[', NWB_JSON_DEPTH_MAX);
    memset(want + NWB_JSON_DEPTH_MAX, ']', NWB_JSON_DEPTH_MAX);
    want[2 * NWB_JSON_DEPTH_MAX] = '\0';
    expect_doc(&b, want);

    /* One deeper: NWB_ETOOBIG, and the balanced closes after it are no misuse (no abort in a
     * debug build): later calls do nothing. */
    nwb_buf_reset(&b);
    nwb_json_init(&j, &b, NULL);
    for (int i = 0; i <= NWB_JSON_DEPTH_MAX; i++) {
        nwb_json_obj_begin(&j);
        if (i < NWB_JSON_DEPTH_MAX) {
            nwb_json_key(&j, "k");
        }
    }
    assert_int_equal(j.err, NWB_ETOOBIG);
    {
        const size_t len = b.len;

        nwb_json_u64(&j, 1);
        for (int i = 0; i <= NWB_JSON_DEPTH_MAX; i++) {
            nwb_json_obj_end(&j);
        }
        assert_int_equal(b.len, len);
    }
    assert_int_equal(nwb_json_finish(&j), NWB_ETOOBIG);
    nwb_buf_cleanup(&b);
}

static void test_json_buffer_cap_is_a_sticky_toobig(void **state)
{
    nwb_buf_t b = NWB_BUF_INIT(16);
    nwb_json_t j;
    size_t len;

    (void)state;
    nwb_json_init(&j, &b, NULL);
    nwb_json_obj_begin(&j);
    nwb_json_key(&j, "key");
    nwb_json_cstr(&j, "a value far longer than sixteen bytes");
    assert_int_equal(j.err, NWB_ETOOBIG);
    len = b.len;
    assert_true(len <= 16);
    nwb_json_key(&j, "more");
    nwb_json_u64(&j, 5);
    nwb_json_obj_end(&j);
    assert_int_equal(b.len, len);
    assert_int_equal(nwb_json_finish(&j), NWB_ETOOBIG);
    nwb_buf_cleanup(&b);
}

/* Write a document of @p n strings of @p s (with one long string in the middle) into @p j. */
static void write_big(nwb_json_t *j, int n, const char *long_str, size_t long_len)
{
    nwb_json_obj_begin(j);
    nwb_json_key(j, "items");
    nwb_json_arr_begin(j);
    for (int i = 0; i < n; i++) {
        char item[64];

        snprintf(item, sizeof(item), "item %06d \"quoted\" \x01 \xc3\xa9", i);
        nwb_json_cstr(j, item);
        if (i == n / 2) {
            nwb_json_str(j, long_str, long_len);
        }
    }
    nwb_json_arr_end(j);
    nwb_json_key(j, "n");
    nwb_json_u64(j, (uint64_t)n);
    nwb_json_obj_end(j);
    nwb_json_space(j, "\n", 1);
}

static void test_json_streams_to_a_file_past_64_kib(void **state)
{
    /* 300 KB of text in multi-byte sequences, so the writer's pieces end inside them: a piece
     * cut in the wrong place would differ from the document written in one go. */
    const size_t long_len = 300000;
    char *long_str = malloc(long_len);
    nwb_buf_t whole = NWB_BUF_INIT(16u << 20);
    nwb_buf_t small = NWB_BUF_INIT(64u * 1024u);
    nwb_json_t j;
    FILE *f = tmpfile();
    char *text;
    long size;
    size_t bad = 0;

    (void)state;
    assert_non_null(long_str);
    assert_non_null(f);
    /* The first half in 7-byte units (U+1F600 U+20AC); the second in 5-byte units of U+1F600
     * and a stray continuation byte, which must stay a U+FFFD of its own. */
    for (size_t i = 0; i < long_len / 2; i += 7) {
        memcpy(long_str + i, "\xf0\x9f\x98\x80\xe2\x82\xac", 7);
    }
    for (size_t i = long_len / 2; i < long_len; i += 5) {
        memcpy(long_str + i, "\xf0\x9f\x98\x80\x80", i + 5 <= long_len ? 5 : long_len - i);
    }
    long_str[1000] = '\n';
    long_str[long_len - 1] = 'z';
    long_str[long_len - 2] = 'y';

    /* The reference: the whole document in memory. */
    nwb_json_init(&j, &whole, NULL);
    write_big(&j, 20000, long_str, long_len);
    assert_int_equal(nwb_json_finish(&j), 0);
    assert_true(whole.len > 5u * 64u * 1024u);
    assert_int_equal(nwb_test_json_check((const char *)whole.data, whole.len, &bad), 0);

    /* Streamed through a buffer capped at 64 KiB, smaller than the long string alone. */
    nwb_json_init(&j, &small, f);
    write_big(&j, 20000, long_str, long_len);
    assert_int_equal(nwb_json_finish(&j), 0);
    assert_int_equal(small.len, 0); /* all written out */
    assert_true(small.cap <= 64u * 1024u);
    assert_int_equal(fflush(f), 0);
    size = ftell(f);
    assert_int_equal((size_t)size, whole.len);
    text = malloc((size_t)size);
    assert_non_null(text);
    rewind(f);
    assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
    assert_memory_equal(text, whole.data, whole.len);
    assert_int_equal(nwb_test_json_check(text, (size_t)size, &bad), 0);
    free(text);
    fclose(f);
    free(long_str);
    nwb_buf_cleanup(&whole);
    nwb_buf_cleanup(&small);
}

static void test_json_failed_file_write_is_a_sticky_eio(void **state)
{
    nwb_buf_t b = NWB_BUF_INIT(1u << 20);
    nwb_json_t j;
    FILE *f = fopen("/dev/full", "w");

    (void)state;
    if (f == NULL) {
        fprintf(stderr, "SKIP: no /dev/full on this machine\n");
        skip();
    }
    setvbuf(f, NULL, _IONBF, 0);
    nwb_json_init(&j, &b, f);
    write_big(&j, 5000, "x", 1); /* passes 64 KiB: the first write-out fails */
    assert_int_equal(j.err, -EIO);
    assert_int_equal(nwb_json_finish(&j), -EIO);
    assert_int_equal(nwb_json_flush(&j), -EIO);
    fclose(f);
    nwb_buf_cleanup(&b);
}

static void test_json_escape_into_appends_body_only(void **state)
{
    nwb_buf_t b = NWB_BUF_INIT(8);

    (void)state;
    assert_int_equal(nwb_json_escape_into(&b, "a\"b", 3), 0);
    assert_int_equal(b.len, 4);
    assert_memory_equal(b.data, "a\\\"b", 4);
    /* Past the cap: the buffer's error. */
    assert_int_equal(nwb_json_escape_into(&b, "\x01", 1), NWB_ETOOBIG);
    nwb_buf_cleanup(&b);
}

/*
 * Misuse. Each case runs in a forked child, which exits 0 when the writer behaved as this
 * build promises: with NDEBUG the misuse is a sticky NWB_EPROTO and nothing more is written;
 * without it the child is stopped by abort() (the parent sees SIGABRT).
 */
enum misuse_case {
    MISUSE_KEY_OUTSIDE_OBJECT,
    MISUSE_KEY_IN_ARRAY,
    MISUSE_TWO_KEYS,
    MISUSE_VALUE_WITHOUT_KEY,
    MISUSE_CLOSE_MISMATCH,
    MISUSE_CLOSE_AFTER_KEY,
    MISUSE_CLOSE_NOTHING_OPEN,
    MISUSE_SECOND_TOP_VALUE,
    MISUSE_FINISH_OPEN,
    MISUSE_FINISH_AFTER_KEY,
    MISUSE_FINISH_EMPTY,
    MISUSE_SPACE_NOT_WHITESPACE,
    MISUSE_COUNT
};

static void do_misuse(nwb_json_t *j, enum misuse_case c)
{
    switch (c) {
    case MISUSE_KEY_OUTSIDE_OBJECT:
        nwb_json_key(j, "k");
        break;
    case MISUSE_KEY_IN_ARRAY:
        nwb_json_arr_begin(j);
        nwb_json_key(j, "k");
        break;
    case MISUSE_TWO_KEYS:
        nwb_json_obj_begin(j);
        nwb_json_key(j, "a");
        nwb_json_key(j, "b");
        break;
    case MISUSE_VALUE_WITHOUT_KEY:
        nwb_json_obj_begin(j);
        nwb_json_u64(j, 1);
        break;
    case MISUSE_CLOSE_MISMATCH:
        nwb_json_obj_begin(j);
        nwb_json_arr_end(j);
        break;
    case MISUSE_CLOSE_AFTER_KEY:
        nwb_json_obj_begin(j);
        nwb_json_key(j, "k");
        nwb_json_obj_end(j);
        break;
    case MISUSE_CLOSE_NOTHING_OPEN:
        nwb_json_arr_end(j);
        break;
    case MISUSE_SECOND_TOP_VALUE:
        nwb_json_u64(j, 1);
        nwb_json_u64(j, 2);
        break;
    case MISUSE_FINISH_OPEN:
        nwb_json_arr_begin(j);
        (void)nwb_json_finish(j);
        break;
    case MISUSE_FINISH_AFTER_KEY:
        nwb_json_obj_begin(j);
        nwb_json_key(j, "k");
        (void)nwb_json_finish(j);
        break;
    case MISUSE_FINISH_EMPTY:
        (void)nwb_json_finish(j);
        break;
    case MISUSE_SPACE_NOT_WHITESPACE:
        nwb_json_arr_begin(j);
        nwb_json_space(j, " x", 2);
        break;
    case MISUSE_COUNT:
        break;
    }
}

static int misuse_child(enum misuse_case c)
{
    nwb_buf_t b = NWB_BUF_INIT(4096);
    nwb_json_t j;
    size_t len;
    int ok;

    nwb_json_init(&j, &b, NULL);
    do_misuse(&j, c);
    /* Only reached with NDEBUG. */
    len = b.len;
    ok = j.err == NWB_EPROTO;
    nwb_json_cstr(&j, "after");
    nwb_json_arr_end(&j);
    nwb_json_obj_end(&j);
    ok = ok && b.len == len && nwb_json_finish(&j) == NWB_EPROTO && j.err == NWB_EPROTO;
    nwb_buf_cleanup(&b);
    return ok ? 0 : 1;
}

static void test_json_misuse_aborts_in_debug_and_is_sticky_eproto_with_ndebug(void **state)
{
    (void)state;
    for (int c = 0; c < MISUSE_COUNT; c++) {
        int status = 0;
        const pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
            const struct rlimit no_core = {0, 0};

            (void)setrlimit(RLIMIT_CORE, &no_core);
            _exit(misuse_child((enum misuse_case)c));
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
#ifdef NDEBUG
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fail_msg("misuse case %d: not a sticky NWB_EPROTO (status %#x)", c, status);
        }
#else
        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT) {
            fail_msg("misuse case %d: a debug build did not abort (status %#x)", c, status);
        }
#endif
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_escapes_quotes_backslash_and_controls),
        cmocka_unit_test(test_json_escapes_nul_inside_a_string),
        cmocka_unit_test(test_json_keeps_valid_utf8_and_replaces_invalid_bytes),
        cmocka_unit_test(test_json_keys_are_escaped_like_strings),
        cmocka_unit_test(test_json_nesting_and_commas),
        cmocka_unit_test(test_json_appends_after_existing_contents),
        cmocka_unit_test(test_json_numbers),
        cmocka_unit_test(test_json_depth_limit_is_a_sticky_toobig),
        cmocka_unit_test(test_json_buffer_cap_is_a_sticky_toobig),
        cmocka_unit_test(test_json_streams_to_a_file_past_64_kib),
        cmocka_unit_test(test_json_failed_file_write_is_a_sticky_eio),
        cmocka_unit_test(test_json_escape_into_appends_body_only),
        cmocka_unit_test(test_json_misuse_aborts_in_debug_and_is_sticky_eproto_with_ndebug),
    };

    return cmocka_run_group_tests_name("common.json", tests, NULL, NULL);
}
