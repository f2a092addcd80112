/* SPDX-License-Identifier: MIT */
/*
 * test_read_query.c - unit tests of read_query.c, the read API's request-target parsing, at
 * every edge: target split, percent-decoding (bad, truncated and NUL escapes, '+'), query
 * values at and one past NWB__QUERY_VALUE_MAX, decimals at 0, UINT64_MAX and one past, signs
 * and blanks, path segments, run ids (length, bytes, a leading dot, their parts and dates),
 * crash file names (".", "..", depth, length, control bytes), run directory resolution
 * (symlinks and files are no run), and the RFC 3339 times.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/error.h"
#include "read_int.h"
#include "test_support.h"

static int get(const char *q, const char *key, char *out)
{
    size_t len = 0;
    const int rc = nwb__query_get(q, strlen(q), key, out, &len);

    if (rc == 1) {
        assert_int_equal(len, strlen(out));
    }
    return rc;
}

static int u64(const char *q, const char *key, uint64_t min, uint64_t max, uint64_t *out)
{
    int present = -1;
    const int rc = nwb__query_u64(q, strlen(q), key, min, max, out, &present);

    if (rc != 0) {
        assert_int_equal(present, 0);
        return -1;
    }
    return present;
}

static void test_target_split_at_the_first_question_mark(void **state)
{
    struct nwb__target t;

    (void)state;
    nwb__target_split("/v1/runs?limit=1?x", 18, &t);
    assert_int_equal(t.path_len, 8);
    assert_memory_equal(t.path, "/v1/runs", 8);
    assert_int_equal(t.query_len, 9);
    assert_memory_equal(t.query, "limit=1?x", 9);
    nwb__target_split("/v1/runs", 8, &t);
    assert_int_equal(t.path_len, 8);
    assert_int_equal(t.query_len, 0);
    nwb__target_split("/v1/runs?", 9, &t);
    assert_int_equal(t.path_len, 8);
    assert_int_equal(t.query_len, 0);
}

static void test_pct_decode_edges(void **state)
{
    char out[8];

    (void)state;
    assert_int_equal(nwb__pct_decode("a%41+b", 6, 1, out, sizeof(out)), 4);
    assert_memory_equal(out, "aA b", 4);
    assert_int_equal(nwb__pct_decode("a%41+b", 6, 0, out, sizeof(out)), 4);
    assert_memory_equal(out, "aA+b", 4);
    assert_int_equal(nwb__pct_decode("%2f%2F", 6, 0, out, sizeof(out)), 2);
    assert_memory_equal(out, "//", 2);
    assert_int_equal(nwb__pct_decode("%", 1, 1, out, sizeof(out)), -1);
    assert_int_equal(nwb__pct_decode("%4", 2, 1, out, sizeof(out)), -1);
    assert_int_equal(nwb__pct_decode("%4g", 3, 1, out, sizeof(out)), -1);
    assert_int_equal(nwb__pct_decode("%00", 3, 1, out, sizeof(out)), -1);
    assert_int_equal(nwb__pct_decode("12345678", 8, 1, out, sizeof(out)), 8);
    assert_int_equal(nwb__pct_decode("123456789", 9, 1, out, sizeof(out)), -1);
    assert_int_equal(nwb__pct_decode("", 0, 1, out, sizeof(out)), 0);
}

static void test_query_get_finds_the_first_and_decodes(void **state)
{
    char v[NWB__QUERY_VALUE_MAX + 1];

    (void)state;
    assert_int_equal(get("a=1&b=x%20y&a=2", "a", v), 1);
    assert_string_equal(v, "1");
    assert_int_equal(get("a=1&b=x%20y&a=2", "b", v), 1);
    assert_string_equal(v, "x y");
    assert_int_equal(get("a=1&flag&c=", "flag", v), 1);
    assert_string_equal(v, "");
    assert_int_equal(get("a=1&flag&c=", "c", v), 1);
    assert_string_equal(v, "");
    assert_int_equal(get("a=1", "b", v), 0);
    assert_int_equal(get("", "a", v), 0);
    assert_int_equal(get("&&a=3&", "a", v), 1);
    assert_string_equal(v, "3");
    /* The key is compared raw: an escaped key is another key. */
    assert_int_equal(get("%61=1", "a", v), 0);
    /* A prefix of a key is not the key. */
    assert_int_equal(get("ab=1", "a", v), 0);
    assert_int_equal(get("a=b=c", "a", v), 1);
    assert_string_equal(v, "b=c");
}

static void test_query_get_malformed_anywhere_fails(void **state)
{
    char v[NWB__QUERY_VALUE_MAX + 1];
    char q[NWB__QUERY_VALUE_MAX + 8];

    (void)state;
    assert_int_equal(get("a=1&b=%zz", "a", v), -1);
    assert_int_equal(get("a=1&b=%2", "a", v), -1);
    assert_int_equal(get("a=%00", "a", v), -1);
    /* At the value bound, and one past it. */
    memset(q, 'x', sizeof(q));
    memcpy(q, "a=", 2);
    q[2 + NWB__QUERY_VALUE_MAX] = '\0';
    assert_int_equal(get(q, "a", v), 1);
    assert_int_equal(strlen(v), NWB__QUERY_VALUE_MAX);
    assert_int_equal(nwb__query_check(q, strlen(q)), 0);
    q[2 + NWB__QUERY_VALUE_MAX] = 'x';
    q[3 + NWB__QUERY_VALUE_MAX] = '\0';
    assert_int_equal(get(q, "a", v), -1);
    assert_int_equal(nwb__query_check(q, strlen(q)), -1);
    /* %41 counts as one decoded byte. */
    memset(q, 'x', sizeof(q));
    memcpy(q, "a=%41", 5);
    q[5 + NWB__QUERY_VALUE_MAX - 1] = '\0';
    assert_int_equal(get(q, "a", v), 1);
    assert_int_equal(strlen(v), NWB__QUERY_VALUE_MAX);
}

static void test_query_check(void **state)
{
    (void)state;
    assert_int_equal(nwb__query_check("", 0), 0);
    assert_int_equal(nwb__query_check("a=1&b&c=%41", 11), 0);
    assert_int_equal(nwb__query_check("a=1&%zz=1", 9), -1);
    assert_int_equal(nwb__query_check("a=%00", 5), -1);
    assert_int_equal(nwb__query_check("%", 1), -1);
}

static void test_query_u64_ranges_and_malformed(void **state)
{
    uint64_t x = 7;

    (void)state;
    assert_int_equal(u64("n=0", "n", 0, 10, &x), 1);
    assert_int_equal(x, 0);
    assert_int_equal(u64("n=10", "n", 0, 10, &x), 1);
    assert_int_equal(x, 10);
    assert_int_equal(u64("n=11", "n", 0, 10, &x), -1);
    assert_int_equal(u64("n=0", "n", 1, 10, &x), -1);
    x = 7;
    assert_int_equal(u64("m=3", "n", 0, 10, &x), 0);
    assert_int_equal(x, 7);
    assert_int_equal(u64("n=18446744073709551615", "n", 0, UINT64_MAX, &x), 1);
    assert_true(x == UINT64_MAX);
    assert_int_equal(u64("n=18446744073709551616", "n", 0, UINT64_MAX, &x), -1);
    assert_int_equal(u64("n=99999999999999999999", "n", 0, UINT64_MAX, &x), -1);
    assert_int_equal(u64("n=000000000000000000001", "n", 0, UINT64_MAX, &x), -1);
    assert_int_equal(u64("n=00000000000000000001", "n", 0, UINT64_MAX, &x), 1);
    assert_int_equal(x, 1);
    assert_int_equal(u64("n=-1", "n", 0, 10, &x), -1);
    assert_int_equal(u64("n=+1", "n", 0, 10, &x), -1);
    assert_int_equal(u64("n=%2B1", "n", 0, 10, &x), -1);
    assert_int_equal(u64("n= 1", "n", 0, 10, &x), -1);
    assert_int_equal(u64("n=1+", "n", 0, 10, &x), -1);
    assert_int_equal(u64("n=", "n", 0, 10, &x), -1);
    assert_int_equal(u64("n", "n", 0, 10, &x), -1);
    assert_int_equal(u64("n=0x1", "n", 0, 10, &x), -1);
    assert_int_equal(u64("n=1e3", "n", 0, 10000, &x), -1);
    assert_int_equal(u64("n=%31", "n", 0, 10, &x), 1);
    assert_int_equal(x, 1);
    assert_int_equal(u64("n=1&z=%", "n", 0, 10, &x), -1);
}

static void test_parse_u64(void **state)
{
    uint64_t x = 0;

    (void)state;
    assert_int_equal(nwb__parse_u64("0", 1, &x), 0);
    assert_int_equal(x, 0);
    assert_int_equal(nwb__parse_u64("18446744073709551615", 20, &x), 0);
    assert_true(x == UINT64_MAX);
    assert_int_equal(nwb__parse_u64("18446744073709551616", 20, &x), -1);
    assert_int_equal(nwb__parse_u64("", 0, &x), -1);
    assert_int_equal(nwb__parse_u64("1 ", 2, &x), -1);
}

static void test_path_segments(void **state)
{
    static const char p[] = "/v1/runs/abc/log";
    const char *seg = NULL;
    size_t len = 0;

    (void)state;
    assert_int_equal(nwb__path_segment(p, strlen(p), "/v1/runs/", 0, &seg, &len), 1);
    assert_int_equal(len, 3);
    assert_memory_equal(seg, "abc", 3);
    assert_int_equal(nwb__path_segment(p, strlen(p), "/v1/runs/", 1, &seg, &len), 1);
    assert_int_equal(len, 3);
    assert_memory_equal(seg, "log", 3);
    assert_int_equal(nwb__path_segment(p, strlen(p), "/v1/runs/", 2, &seg, &len), 0);
    assert_int_equal(nwb__path_segment(p, strlen(p), "/v1/crashes/", 0, &seg, &len), 0);
    assert_int_equal(nwb__path_segments(p, strlen(p), "/v1/runs/"), 2);
    assert_int_equal(nwb__path_segments("/v1/runs/a/", 11, "/v1/runs/"), 2);
    assert_int_equal(nwb__path_segments("/v1/runs/", 9, "/v1/runs/"), 1);
    assert_int_equal(nwb__path_segment("/v1/runs/", 9, "/v1/runs/", 0, &seg, &len), 1);
    assert_int_equal(len, 0);
    assert_int_equal(nwb__path_segments("/v1/run", 7, "/v1/runs/"), 0);
    /* No decoding: %2f stays in the segment. */
    assert_int_equal(nwb__path_segment("/v1/runs/a%2fb", 14, "/v1/runs/", 0, &seg, &len), 1);
    assert_int_equal(len, 5);
}

static void test_run_id_valid_bytes_and_length(void **state)
{
    char id[NWB__RUN_ID_MAX + 2];

    (void)state;
    assert_true(nwb__run_id_valid("game_20261201-073400_r1", 23));
    assert_false(nwb__run_id_valid("", 0));
    assert_false(nwb__run_id_valid(".hidden", 7));
    assert_false(nwb__run_id_valid("..", 2));
    assert_false(nwb__run_id_valid("a/b", 3));
    assert_false(nwb__run_id_valid("a%2fb", 5));
    assert_false(nwb__run_id_valid("a b", 3));
    assert_false(nwb__run_id_valid("a\0b", 3));
    assert_false(nwb__run_id_valid("a\\b", 3));
    assert_false(nwb__run_id_valid("\xc3\xa9", 2));
    memset(id, 'a', sizeof(id));
    assert_true(nwb__run_id_valid(id, NWB__RUN_ID_MAX));
    assert_false(nwb__run_id_valid(id, NWB__RUN_ID_MAX + 1));
}

static int parse(const char *id, struct nwb__run_name *n)
{
    return nwb__run_id_parse(id, strlen(id), n);
}

static void test_run_id_parse_parts_and_dates(void **state)
{
    struct nwb__run_name n;
    char id[256];

    (void)state;
    assert_int_equal(parse("nwb-demo_20261201-073400_0123456789abcdef", &n), 1);
    assert_int_equal(n.program_len, 8);
    assert_memory_equal(n.program, "nwb-demo", 8);
    assert_int_equal(n.run_len, 16);
    assert_memory_equal(n.run, "0123456789abcdef", 16);
    assert_true(n.started_ns == 1796110440ull * 1000000000ull);
    /* Underscores in the program and the run: the first real time splits. */
    assert_int_equal(parse("my_game_20240229-235959_a_b", &n), 1);
    assert_int_equal(n.program_len, 7);
    assert_int_equal(n.run_len, 3);
    assert_int_equal(parse("p_19700101-000000_r", &n), 1);
    assert_true(n.started_ns == 0);
    /* Not dates: 30 February, 2023-02-29, month 13, hour 24, second 60, before 1970. */
    assert_int_equal(parse("p_20240230-000000_r", &n), 0);
    assert_int_equal(parse("p_20230229-000000_r", &n), 0);
    assert_int_equal(parse("p_20241301-000000_r", &n), 0);
    assert_int_equal(parse("p_20240101-240000_r", &n), 0);
    assert_int_equal(parse("p_20240101-000060_r", &n), 0);
    assert_int_equal(parse("p_19691231-235959_r", &n), 0);
    /* The last time whose ns fit a u64, and the second after it. */
    assert_int_equal(parse("p_25540721-233433_r", &n), 1);
    assert_true(n.started_ns == 18446744073ull * 1000000000ull);
    assert_int_equal(parse("p_25540721-233434_r", &n), 0);
    assert_int_equal(parse("p_40480920-000000_r", &n), 0);
    assert_int_equal(parse("p_20240101_000000_r", &n), 0);
    /* Missing parts. */
    assert_int_equal(parse("_20240101-000000_r", &n), 0);
    assert_int_equal(parse("p_20240101-000000_", &n), 0);
    assert_int_equal(parse("p_20240101-000000", &n), 0);
    assert_int_equal(parse("20240101-000000", &n), 0);
    assert_int_equal(parse("..", &n), 0);
    assert_int_equal(parse(".p_20240101-000000_r", &n), 0);
    /* A program of 64 bytes passes, 65 does not; a run of 71 passes, 72 does not. */
    memset(id, 'p', 64);
    snprintf(id + 64, sizeof(id) - 64, "_20240101-000000_r");
    assert_int_equal(parse(id, &n), 1);
    memset(id, 'p', 65);
    snprintf(id + 65, sizeof(id) - 65, "_20240101-000000_r");
    assert_int_equal(parse(id, &n), 0);
    snprintf(id, sizeof(id), "p_20240101-000000_");
    memset(id + 18, 'r', 71);
    id[18 + 71] = '\0';
    assert_int_equal(parse(id, &n), 1);
    assert_int_equal(n.run_len, 71);
    id[18 + 71] = 'r';
    id[18 + 72] = '\0';
    assert_int_equal(parse(id, &n), 0);
}

static void test_file_path_valid(void **state)
{
    char name[NWB__READ_FILE_NAME_MAX + 2];
    char deep[128] = "";

    (void)state;
    assert_true(nwb__read_file_path_valid("manifest.txt", 12));
    assert_true(nwb__read_file_path_valid("threads/0/stack.txt", 19));
    assert_true(
        nwb__read_file_path_valid("with space & ümlaut.txt", strlen("with space & ümlaut.txt")));
    assert_true(nwb__read_file_path_valid("...", 3));
    assert_false(nwb__read_file_path_valid("", 0));
    assert_false(nwb__read_file_path_valid(".", 1));
    assert_false(nwb__read_file_path_valid("..", 2));
    assert_false(nwb__read_file_path_valid("../x", 4));
    assert_false(nwb__read_file_path_valid("a/../x", 6));
    assert_false(nwb__read_file_path_valid("a/./x", 5));
    assert_false(nwb__read_file_path_valid("/etc/passwd", 11));
    assert_false(nwb__read_file_path_valid("a//b", 4));
    assert_false(nwb__read_file_path_valid("a/", 2));
    assert_false(nwb__read_file_path_valid("a\\b", 3));
    assert_false(nwb__read_file_path_valid("a\nb", 3));
    assert_false(nwb__read_file_path_valid("a\x7f", 2));
    assert_false(nwb__read_file_path_valid("a\0b", 3));
    memset(name, 'n', sizeof(name));
    assert_true(nwb__read_file_path_valid(name, NWB__READ_FILE_NAME_MAX));
    assert_false(nwb__read_file_path_valid(name, NWB__READ_FILE_NAME_MAX + 1));
    for (unsigned i = 0; i < NWB__READ_FILE_DEPTH_MAX; i++) {
        strcat(deep, i == 0 ? "d" : "/d");
    }
    assert_true(nwb__read_file_path_valid(deep, strlen(deep)));
    strcat(deep, "/d");
    assert_false(nwb__read_file_path_valid(deep, strlen(deep)));
}

static void test_read_run_dir_resolves_only_run_directories(void **state)
{
    char dir[512], path[1024], got[1024];
    const char *id = "game_20261201-073400_r1";
    int fd;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("readquery", dir, sizeof(dir)), 0);
    snprintf(path, sizeof(path), "%s/runs", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(nwb__read_run_dir(dir, id, strlen(id), got, sizeof(got)), -ENOENT);
    snprintf(path, sizeof(path), "%s/runs/%s", dir, id);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(nwb__read_run_dir(dir, id, strlen(id), got, sizeof(got)), 0);
    assert_string_equal(got, path);
    assert_int_equal(nwb__read_run_dir(dir, id, strlen(id), got, 10), NWB_ETOOBIG);
    fd = nwb__read_run_dirfd(dir, id, strlen(id));
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(nwb__read_run_dir(dir, "..", 2, got, sizeof(got)), NWB_EPROTO);
    assert_int_equal(nwb__read_run_dirfd(dir, "../x", 4), NWB_EPROTO);
    assert_int_equal(nwb__read_run_dir(dir, "game", 4, got, sizeof(got)), NWB_EPROTO);
    /* A symlink or a file with a run's name is no run. */
    snprintf(path, sizeof(path), "%s/runs/game_20261201-073400_link", dir);
    assert_int_equal(symlink("/", path), 0);
    assert_int_equal(nwb__read_run_dir(dir, "game_20261201-073400_link", 25, got, sizeof(got)),
                     -ENOENT);
    assert_int_equal(nwb__read_run_dirfd(dir, "game_20261201-073400_link", 25), -ENOENT);
    snprintf(path, sizeof(path), "%s/runs/game_20261201-073400_file", dir);
    assert_int_equal(nwb_test_write_file(path, "x", 1, 0644), 0);
    assert_int_equal(nwb__read_run_dir(dir, "game_20261201-073400_file", 25, got, sizeof(got)),
                     -ENOENT);
    nwb_test_rmtree(dir);
}

/* The read answers' budget at its edge: what others hold plus the new share within the cap,
 * a lone request always, a share changed in place (a reservation shrunk to the answer). */
static void test_read_budget_at_its_edge(void **state)
{
    size_t total = 0, a = 0, b = 0;

    (void)state;
    assert_int_equal(nwb__read_budget_take(&total, &a, 300, 100), 0); /* alone: granted */
    assert_int_equal(total, 300);
    assert_int_equal(nwb__read_budget_take(&total, &b, 1, 100), -1);
    assert_int_equal(b, 0);
    assert_int_equal(nwb__read_budget_take(&total, &a, 60, 100), 0); /* shrunk in place */
    assert_int_equal(total, 60);
    assert_int_equal(nwb__read_budget_take(&total, &b, 41, 100), -1);
    assert_int_equal(nwb__read_budget_take(&total, &b, 40, 100), 0); /* exactly the cap */
    assert_int_equal(total, 100);
    assert_int_equal(nwb__read_budget_take(&total, &b, SIZE_MAX, 100), -1);
    total -= b; /* released */
    b = 0;
    assert_int_equal(total, 60);
    assert_int_equal(nwb__read_budget_take(&total, &b, 40, 100), 0);
}

static void test_json_time_is_rfc3339_utc_with_ms(void **state)
{
    nwb_buf_t b = NWB_BUF_INIT(256);
    nwb_json_t j;

    (void)state;
    nwb_json_init(&j, &b, NULL);
    nwb_json_arr_begin(&j);
    nwb__json_time(&j, 0);
    nwb__json_time(&j, 1796110440123999999ull);
    nwb__json_time(&j, 951868800000000000ull); /* 2000-03-01 */
    nwb_json_arr_end(&j);
    assert_int_equal(nwb_json_finish(&j), 0);
    assert_int_equal(b.len, strlen("[\"1970-01-01T00:00:00.000Z\",\"2026-12-01T07:34:00.123Z\","
                                   "\"2000-03-01T00:00:00.000Z\"]"));
    assert_memory_equal(b.data,
                        "[\"1970-01-01T00:00:00.000Z\",\"2026-12-01T07:34:00.123Z\","
                        "\"2000-03-01T00:00:00.000Z\"]",
                        b.len);
    nwb_buf_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target_split_at_the_first_question_mark),
        cmocka_unit_test(test_pct_decode_edges),
        cmocka_unit_test(test_query_get_finds_the_first_and_decodes),
        cmocka_unit_test(test_query_get_malformed_anywhere_fails),
        cmocka_unit_test(test_query_check),
        cmocka_unit_test(test_query_u64_ranges_and_malformed),
        cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_path_segments),
        cmocka_unit_test(test_run_id_valid_bytes_and_length),
        cmocka_unit_test(test_run_id_parse_parts_and_dates),
        cmocka_unit_test(test_file_path_valid),
        cmocka_unit_test(test_read_run_dir_resolves_only_run_directories),
        cmocka_unit_test(test_read_budget_at_its_edge),
        cmocka_unit_test(test_json_time_is_rfc3339_utc_with_ms),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
