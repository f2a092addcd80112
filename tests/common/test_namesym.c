/* SPDX-License-Identifier: MIT */
/*
 * test_namesym.c - the .namesym format: builder round trip, every rejection
 * of the strict reader with its own reason, UTF-8 re-sanitising, merging
 * with collisions, and the token decoder's edge cases.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/byte_order.h"
#include "nwb/error.h"
#include "nwb/namesym.h"

static uint8_t *build(const char *const *names, size_t n, size_t *len)
{
    nwb_namesym_builder_t b;
    uint8_t *out = NULL;
    char err[256];

    nwb_namesym_builder_init(&b);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(nwb_namesym_builder_add(&b, names[i], strlen(names[i])), 0);
    }
    assert_int_equal(nwb_namesym_builder_serialize(&b, "build-1234", &out, len, err, sizeof(err)),
                     0);
    nwb_namesym_builder_cleanup(&b);
    return out;
}

static const char *const names[] = {"arena/main", "render/shadow", "scope/update", "arena/main",
                                    "x"};

static void test_namesym_round_trip_sorted_and_searchable(void **state)
{
    size_t len;
    uint8_t *img = build(names, 5, &len);
    nwb_namesym_view_t v;
    const char *s;
    uint32_t slen;

    (void)state;
    assert_int_equal(nwb_namesym_view_open(&v, img, len, NULL, NULL), 0);
    assert_int_equal(v.count, 4); /* the duplicate is kept once */
    assert_int_equal(v.build_id_len, strlen("build-1234"));
    assert_memory_equal(v.build_id, "build-1234", v.build_id_len);
    for (uint32_t i = 1; i < v.count; i++) {
        nwb_name_t a, b;

        nwb_namesym_view_entry(&v, i - 1, &a, &s, &slen);
        nwb_namesym_view_entry(&v, i, &b, &s, &slen);
        assert_true(a < b);
    }
    assert_int_equal(nwb_namesym_view_find(&v, nwb_name_hash("render/shadow", 13), &s, &slen), 1);
    assert_int_equal(slen, 13);
    assert_memory_equal(s, "render/shadow", 13);
    assert_int_equal(nwb_namesym_view_find(&v, 42, &s, &slen), 0);
    nwb_free(img);
}

static void expect_reject(uint8_t *img, size_t len, int code, const char *reason_part)
{
    nwb_namesym_view_t v;
    const char *why = NULL;
    size_t bad = 0;

    assert_int_equal(nwb_namesym_view_open(&v, img, len, &why, &bad), code);
    assert_non_null(why);
    if (strstr(why, reason_part) == NULL) {
        fail_msg("reason \"%s\" does not mention \"%s\"", why, reason_part);
    }
}

static void test_namesym_reader_rejects_each_defect_with_its_reason(void **state)
{
    size_t len;
    uint8_t *img = build(names, 5, &len);
    uint8_t *copy = malloc(len);
    const size_t e0 = NWB_NAMESYM_HEADER_SIZE, e1 = e0 + NWB_NAMESYM_ENTRY_SIZE;

    (void)state;
#define RESET() memcpy(copy, img, len)
    RESET();
    copy[0] = 'X';
    expect_reject(copy, len, NWB_EMAGIC, "magic");
    RESET();
    nwb_le16_store(copy + 8, 2);
    expect_reject(copy, len, NWB_EVERSION, "version");
    RESET();
    expect_reject(copy, 40, NWB_ETRUNCATED, "truncated");
    expect_reject(copy, len - 1, NWB_ETRUNCATED, "truncated");
    RESET();
    nwb_le32_store(copy + e0 + 8, 1000000); /* string offset far out */
    expect_reject(copy, len, NWB_ERANGE, "out of range");
    RESET();
    nwb_le64_store(copy + 32, (uint64_t)len + 5); /* string area offset past the end */
    expect_reject(copy, len, NWB_ERANGE, "out of range");
    RESET();
    { /* swap two entries: unsorted */
        uint8_t tmp[NWB_NAMESYM_ENTRY_SIZE];

        memcpy(tmp, copy + e0, sizeof(tmp));
        memcpy(copy + e0, copy + e1, sizeof(tmp));
        memcpy(copy + e1, tmp, sizeof(tmp));
    }
    expect_reject(copy, len, NWB_EUNSORTED, "sorted");
    RESET();
    memcpy(copy + e1, copy + e0, NWB_NAMESYM_ENTRY_SIZE);
    expect_reject(copy, len, NWB_EDUPLICATE, "duplicate");
    RESET();
    nwb_le32_store(copy + 16, 0xffffffffu);
    expect_reject(copy, len, NWB_ERANGE, "bound");
    RESET();
    assert_int_equal(nwb_namesym_view_open(&(nwb_namesym_view_t){0}, copy, len, NULL, NULL), 0);
#undef RESET
    free(copy);
    nwb_free(img);
}

static void test_namesym_reader_survives_every_truncation(void **state)
{
    size_t len;
    uint8_t *img = build(names, 5, &len);

    (void)state;
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *copy = malloc(cut + 1);
        nwb_namesym_view_t v;

        memcpy(copy, img, cut);
        assert_true(nwb_namesym_view_open(&v, copy, cut, NULL, NULL) < 0);
        free(copy);
    }
    nwb_free(img);
}

static void test_namesym_utf8_sanitize_replaces_invalid_sequences(void **state)
{
    char out[64];
    size_t n;

    (void)state;
    n = nwb_utf8_sanitize(out, "ok \xc3\xa9 \xff \xe2\x82 \xed\xa0\x80 \x01", 16);
    out[n] = '\0';
    assert_string_equal(out, "ok \xc3\xa9 \xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd "
                             "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd ?");
}

struct collisions {
    int n;
    char last[256];
};

static void on_collision(void *ctx, nwb_name_t h, const char *kept, const char *ks,
                         const char *dropped, const char *ds)
{
    struct collisions *c = ctx;

    (void)h;
    c->n++;
    snprintf(c->last, sizeof(c->last), "%s(%s) vs %s(%s)", kept, ks, dropped, ds);
}

/* A sidecar whose one entry claims hash @p h for @p s (bypasses the builder's own hashing). */
static uint8_t *forge(nwb_name_t h, const char *s, size_t *len)
{
    const char *one[] = {s};
    uint8_t *img = build(one, 1, len);

    nwb_le64_store(img + NWB_NAMESYM_HEADER_SIZE, h);
    return img;
}

static void test_namesym_table_merges_first_wins_and_reports_collisions(void **state)
{
    nwb_namesym_table_t *t;
    nwb_namesym_view_t v;
    struct collisions c = {0};
    size_t len;
    uint8_t *a = build(names, 5, &len);
    size_t slen;

    (void)state;
    assert_int_equal(nwb_namesym_table_create(&t), 0);
    assert_int_equal(nwb_namesym_view_open(&v, a, len, NULL, NULL), 0);
    assert_int_equal(nwb_namesym_table_add(t, &v, "a.namesym", on_collision, &c), 4);
    assert_int_equal(nwb_namesym_table_add(t, &v, "again.namesym", on_collision, &c), 0);
    assert_int_equal(c.n, 0); /* the same strings again are not collisions */
    nwb_free(a);
    /* A second sidecar maps render/shadow's hash to another string: first wins, reported. */
    a = forge(nwb_name_hash("render/shadow", 13), "other", &len);
    assert_int_equal(nwb_namesym_view_open(&v, a, len, NULL, NULL), 0);
    assert_int_equal(nwb_namesym_table_add(t, &v, "b.namesym", on_collision, &c), 0);
    assert_int_equal(c.n, 1);
    assert_string_equal(c.last, "render/shadow(a.namesym) vs other(b.namesym)");
    nwb_free(a);
    assert_string_equal(nwb_namesym_table_find(t, nwb_name_hash("render/shadow", 13), &slen),
                        "render/shadow");
    assert_int_equal(nwb_namesym_table_count(t), 4);
    nwb_namesym_table_destroy(t);
}

/* Enough names for the table to grow several times, for tags shared by neighbouring slots (a
 * lookup's slow path) and for long runs: every name is found, and no other. */
static void test_namesym_table_finds_every_name_of_many(void **state)
{
    enum { N = 20000 };
    char(*text)[16] = malloc(sizeof(*text) * N);
    const char **list = malloc(sizeof(*list) * N);
    nwb_namesym_table_t *t;
    nwb_namesym_view_t v;
    size_t len, slen;
    uint8_t *a;

    (void)state;
    assert_non_null(text);
    assert_non_null(list);
    for (unsigned i = 0; i < N; i++) {
        snprintf(text[i], sizeof(text[i]), "mesh/%05u", i);
        list[i] = text[i];
    }
    a = build(list, N, &len);
    assert_int_equal(nwb_namesym_table_create(&t), 0);
    assert_int_equal(nwb_namesym_view_open(&v, a, len, NULL, NULL), 0);
    assert_int_equal(nwb_namesym_table_add(t, &v, "many.namesym", NULL, NULL), N);
    for (unsigned i = 0; i < N; i++) {
        char other[16];
        const char *got = nwb_namesym_table_find(t, nwb_name_hash(text[i], 10), &slen);

        assert_non_null(got);
        assert_string_equal(got, text[i]);
        assert_int_equal(slen, 10);
        snprintf(other, sizeof(other), "mash/%05u", i);
        assert_null(nwb_namesym_table_find(t, nwb_name_hash(other, 10), NULL));
    }
    nwb_namesym_table_destroy(t);
    nwb_free(a);
    free(list);
    free(text);
}

static const char *decode(nwb_namesym_table_t *t, const char *in, uint64_t *dec, uint64_t *unk)
{
    static char out[1024];
    const size_t n = nwb_namesym_decode(t, in, strlen(in), out, dec, unk);

    assert_true(n <= nwb_namesym_decode_max(t, strlen(in)));
    out[n] = '\0';
    return out;
}

static void test_namesym_decode_token_edge_cases(void **state)
{
    nwb_namesym_table_t *t;
    nwb_namesym_view_t v;
    size_t len;
    uint8_t *img = build(names, 5, &len);
    char tok[NWB_NAME_TOKEN_SIZE], tok2[NWB_NAME_TOKEN_SIZE], in[256];
    uint64_t dec = 0, unk = 0;

    (void)state;
    assert_int_equal(nwb_namesym_table_create(&t), 0);
    assert_int_equal(nwb_namesym_view_open(&v, img, len, NULL, NULL), 0);
    assert_true(nwb_namesym_table_add(t, &v, "a", NULL, NULL) == 4);
    nwb_name_token(nwb_name_hash("arena/main", 10), tok);
    nwb_name_token(nwb_name_hash("x", 1), tok2);

    /* at the start and at the end of a line */
    snprintf(in, sizeof(in), "%s grew", tok);
    assert_string_equal(decode(t, in, &dec, &unk), "arena/main grew");
    snprintf(in, sizeof(in), "owner=%s", tok);
    assert_string_equal(decode(t, in, &dec, &unk), "owner=arena/main");
    /* adjacent tokens */
    snprintf(in, sizeof(in), "%s%s", tok, tok2);
    assert_string_equal(decode(t, in, &dec, &unk), "arena/mainx");
    assert_int_equal(dec, 4);
    /* '##' + hex: not a token */
    snprintf(in, sizeof(in), "#%s", tok);
    assert_string_equal(decode(t, in, &dec, &unk), in);
    /* 15 and 17 hex digits: not tokens */
    assert_string_equal(decode(t, "#0123456789abcde end", &dec, &unk), "#0123456789abcde end");
    snprintf(in, sizeof(in), "%s0", tok);
    assert_string_equal(decode(t, in, &dec, &unk), in);
    /* upper-case hex: not a token */
    assert_string_equal(decode(t, "#0123456789ABCDEF", &dec, &unk), "#0123456789ABCDEF");
    /* a token followed by upper-case hex is part of a longer hex run */
    snprintf(in, sizeof(in), "%sA", tok);
    assert_string_equal(decode(t, in, &dec, &unk), in);
    assert_int_equal(dec, 4);
    /* unknown tokens stay exactly as they were, and are counted */
    assert_string_equal(decode(t, "a #00000000000000ff b", &dec, &unk), "a #00000000000000ff b");
    assert_int_equal(unk, 1);
    /* no table at all: nothing changes */
    assert_string_equal(decode(NULL, tok, &dec, &unk), tok);
    nwb_namesym_table_destroy(t);
    nwb_free(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_namesym_round_trip_sorted_and_searchable),
        cmocka_unit_test(test_namesym_reader_rejects_each_defect_with_its_reason),
        cmocka_unit_test(test_namesym_reader_survives_every_truncation),
        cmocka_unit_test(test_namesym_utf8_sanitize_replaces_invalid_sequences),
        cmocka_unit_test(test_namesym_table_merges_first_wins_and_reports_collisions),
        cmocka_unit_test(test_namesym_table_finds_every_name_of_many),
        cmocka_unit_test(test_namesym_decode_token_edge_cases),
    };

    return cmocka_run_group_tests_name("common.namesym", tests, NULL, NULL);
}
