/* SPDX-License-Identifier: MIT */
/*
 * test_ingest.c - the server's crash ingest through its own API on real
 * archives built with libarchive: every accepted format, idempotent ids,
 * every kind of bad archive (each ends in invalid/ with a reason, nothing is
 * written outside --out, and a valid archive still goes through after it),
 * the caps at their edges, the queue bound, restart recovery, the JSON views
 * (strict JSON in every status) and metrics.
 */
#define _GNU_SOURCE
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

#include "nwb/alloc.h"
#include "nwb/error.h"

#include "crash_ingest_int.h"
#include "crash_test_archive.h"
#include "json_check.h"
#include "test_support.h"

#define WAIT_MS 30000u

struct fixture {
    char base[512];
    char out[600];
    char sentinel[600];
    struct nwb__crash_ingest *ci;
    struct nwb_crash_caps caps;
};

static const char sentinel_text[] = "sentinel: must never change\n";

static int setup(void **state)
{
    static const struct nwb_crash_caps defaults = NWB_CRASH_CAPS_INIT;
    struct fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("ingest", f->base, sizeof(f->base)) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->out, sizeof(f->out), "%s/out", f->base);
    snprintf(f->sentinel, sizeof(f->sentinel), "%s/sentinel.txt", f->base);
    if (ta_write_file(f->sentinel, sentinel_text, sizeof(sentinel_text) - 1) != 0) {
        free(f);
        return -1;
    }
    f->caps = defaults;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    nwb__crash_ingest_stop(f->ci);
    nwb_test_rmtree(f->base);
    free(f);
    return 0;
}

static void start(struct fixture *f)
{
    assert_int_equal(nwb__crash_ingest_create(f->out, &f->caps, &f->ci), 0);
}

static void restart(struct fixture *f)
{
    nwb__crash_ingest_stop(f->ci);
    f->ci = NULL;
    start(f);
}

static void path_of(const struct fixture *f, char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void path_of(const struct fixture *f, char *buf, size_t cap, const char *fmt, ...)
{
    char rel[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(rel, sizeof(rel), fmt, ap);
    va_end(ap);
    if (snprintf(buf, cap, "%s/crashes/%s", f->out, rel) >= (int)cap) {
        fail_msg("test path too long");
    }
}

static long count(const struct fixture *f, const char *cat)
{
    char p[700];

    path_of(f, p, sizeof(p), "%s", cat);
    return ta_count_dir(p);
}

/* Submit, wait for the worker, and return the id (static buffer). */
static const char *submit(struct fixture *f, const void *body, size_t len)
{
    static char id[NWB_CRASH_INGEST_ID_LEN + 1];

    assert_int_equal(nwb__crash_ingest_submit(f->ci, body, len, "prog", "run1", id), 0);
    assert_int_equal(strlen(id), NWB_CRASH_INGEST_ID_LEN);
    assert_int_equal(nwb__crash_ingest_wait_idle(f->ci, WAIT_MS), 0);
    return id;
}

static void assert_extracted(struct fixture *f, const char *id)
{
    char p[700];
    char *text;

    path_of(f, p, sizeof(p), "packages/%s/manifest.txt", id);
    text = nwb_test_read_file(p, NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, "nwb-crash-manifest 1"));
    free(text);
}

/* The archive ended in invalid/ with a reason containing @p why; nothing else changed. */
static void assert_invalid(struct fixture *f, const char *id, const char *ext, const char *why)
{
    char p[700];
    char *text;

    path_of(f, p, sizeof(p), "invalid/%s.%s", id, ext);
    assert_true(ta_exists(p));
    path_of(f, p, sizeof(p), "invalid/%s.reason.txt", id);
    text = nwb_test_read_file(p, NULL);
    assert_non_null(text);
    if (strcasestr(text, why) == NULL) {
        fail_msg("reason \"%s\" does not mention \"%s\"", text, why);
    }
    free(text);
    path_of(f, p, sizeof(p), "packages/%s", id);
    assert_false(ta_exists(p));
    path_of(f, p, sizeof(p), "raw/%s.%s", id, ext);
    assert_false(ta_exists(p));
    assert_int_equal(count(f, ".staging"), 0);
    assert_int_equal(count(f, ".queue"), 0);
    text = nwb_test_read_file(f->sentinel, NULL);
    assert_non_null(text);
    assert_string_equal(text, sentinel_text);
    free(text);
    /* Only out/ and the sentinel exist beside each other. */
    assert_int_equal(ta_count_dir(f->base), 2);
}

/* After a bad archive the ingest still takes a good one. */
static void assert_still_serving(struct fixture *f, const char *tag)
{
    size_t len;
    void *pkg = ta_package("tar.zst", tag, &len);

    assert_non_null(pkg);
    assert_extracted(f, submit(f, pkg, len));
    free(pkg);
}

/* Build, submit and check one bad archive. */
static void bad_archive(struct fixture *f, const char *format, const struct ta_entry *e, size_t n,
                        const char *why)
{
    size_t len;
    void *a = ta_build(format, e, n, &len);
    char id[NWB_CRASH_INGEST_ID_LEN + 1];

    assert_non_null(a);
    snprintf(id, sizeof(id), "%s", submit(f, a, len));
    assert_invalid(f, id, nwb__crash_sniff_ext(a, len), why);
    free(a);
    assert_still_serving(f, why);
}

static const char manifest[] = "nwb-crash-manifest 1\nkind=signal\nprogram=p\nrun=r\n";

#define MANIFEST_ENTRY                                                                             \
    {                                                                                              \
        "manifest.txt", TA_FILE, manifest, sizeof(manifest) - 1, 0, 0, NULL                        \
    }

/* ---- ids ---- */

static void test_ingest_sha256_matches_fips_vectors(void **state)
{
    static const char *const expect[3] = {
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"};
    char *million = malloc(1000000);
    uint8_t d[32];
    char hex[65];

    (void)state;
    assert_non_null(million);
    memset(million, 'a', 1000000);
    for (int i = 0; i < 3; i++) {
        const char *in = i == 0 ? "" : i == 1 ? "abc" : million;

        nwb__crash_sha256(in, i == 2 ? 1000000u : strlen(in), d);
        for (int k = 0; k < 32; k++) {
            snprintf(hex + 2 * k, 3, "%02x", d[k]);
        }
        assert_string_equal(hex, expect[i]);
    }
    free(million);
    nwb__crash_id_of("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223");
    assert_true(nwb__crash_id_valid(hex));
    assert_false(nwb__crash_id_valid("BA7816BF8F01CFEA414140DE5DAE2223"));
    assert_false(nwb__crash_id_valid("ba7816bf8f01cfea414140de5dae222"));
    assert_false(nwb__crash_id_valid("../../../../etc/passwd0000000000"));
}

/* ---- good archives ---- */

static void test_ingest_every_format_is_extracted(void **state)
{
    static const char *const formats[] = {"tar", "ustar", "tar.gz", "tar.zst", "zip"};
    static const char *const exts[] = {"tar", "tar", "tar.gz", "tar.zst", "zip"};
    struct fixture *f = *state;

    start(f);
    for (size_t i = 0; i < NWB_ARRAY_SIZE(formats); i++) {
        size_t len;
        void *a = ta_package(formats[i], formats[i], &len);
        char p[700], *text;
        const char *id;

        assert_non_null(a);
        assert_string_equal(nwb__crash_sniff_ext(a, len), exts[i]);
        id = submit(f, a, len);
        assert_extracted(f, id);
        path_of(f, p, sizeof(p), "packages/%s/crash.txt", id);
        text = nwb_test_read_file(p, NULL);
        assert_non_null(text);
        assert_non_null(strstr(text, formats[i]));
        free(text);
        path_of(f, p, sizeof(p), "raw/%s.%s", id, exts[i]);
        assert_true(ta_exists(p));
        free(a);
    }
    assert_int_equal(count(f, "packages"), 5);
    assert_int_equal(count(f, "raw"), 5);
    assert_int_equal(count(f, "invalid"), 0);
}

static void test_ingest_same_bytes_get_same_id_and_are_stored_once(void **state)
{
    struct fixture *f = *state;
    char first[NWB_CRASH_INGEST_ID_LEN + 1], again[NWB_CRASH_INGEST_ID_LEN + 1];
    struct nwb_crash_counts c;
    size_t len;
    void *a = ta_package("tar.zst", "dup", &len);

    start(f);
    snprintf(first, sizeof(first), "%s", submit(f, a, len));
    /* Before and after extraction, and across a restart. */
    assert_int_equal(nwb__crash_ingest_submit(f->ci, a, len, "prog", "run1", again), 0);
    assert_string_equal(first, again);
    restart(f);
    assert_int_equal(nwb__crash_ingest_submit(f->ci, a, len, "other", "run2", again), 0);
    assert_string_equal(first, again);
    assert_int_equal(nwb__crash_ingest_wait_idle(f->ci, WAIT_MS), 0);
    assert_int_equal(count(f, "raw"), 1);
    assert_int_equal(count(f, "packages"), 1);
    nwb__crash_ingest_counts(f->ci, &c);
    assert_int_equal(c.uploads_total, 0); /* this instance stored nothing new */
    assert_int_equal(c.duplicates_total, 1);
    free(a);
}

/* ---- bad archives ---- */

static void test_ingest_path_traversal_is_invalid(void **state)
{
    struct fixture *f = *state;
    const struct ta_entry e[] = {MANIFEST_ENTRY,
                                 {"../../sentinel.txt", TA_FILE, "pwned", 5, 0, 0, NULL}};
    const struct ta_entry e2[] = {MANIFEST_ENTRY,
                                  {"a/b/../../../x.txt", TA_FILE, "pwned", 5, 0, 0, NULL}};

    start(f);
    bad_archive(f, "tar.zst", e, 2, "path traversal");
    bad_archive(f, "zip", e2, 2, "path traversal");
}

static void test_ingest_absolute_path_is_invalid(void **state)
{
    struct fixture *f = *state;
    char abs[700];
    struct ta_entry e[] = {MANIFEST_ENTRY, {NULL, TA_FILE, "pwned", 5, 0, 0, NULL}};

    snprintf(abs, sizeof(abs), "%s/abs_escape.txt", f->base);
    e[1].path = abs;
    start(f);
    bad_archive(f, "tar", e, 2, "absolute path");
    assert_false(ta_exists(abs));
}

static void test_ingest_symlink_escape_is_invalid(void **state)
{
    struct fixture *f = *state;
    const struct ta_entry e[] = {MANIFEST_ENTRY,
                                 {"escape", TA_SYMLINK, NULL, 0, 0, 0, "../../.."},
                                 {"escape/sentinel.txt", TA_FILE, "pwned", 5, 0, 0, NULL}};

    start(f);
    bad_archive(f, "tar.gz", e, 3, "symbolic link");
}

static void test_ingest_hard_link_escape_is_invalid(void **state)
{
    struct fixture *f = *state;
    char target[700];
    struct ta_entry e[] = {MANIFEST_ENTRY, {"hl", TA_HARDLINK, NULL, 0, 0, 0, NULL}};

    e[1].target = target;
    snprintf(target, sizeof(target), "%s", f->sentinel);
    start(f);
    bad_archive(f, "tar", e, 2, "hard link");
    e[1].target = "../../sentinel.txt";
    bad_archive(f, "tar.zst", e, 2, "hard link");
}

static void test_ingest_device_node_and_fifo_are_invalid(void **state)
{
    struct fixture *f = *state;
    const struct ta_entry dev[] = {MANIFEST_ENTRY, {"null", TA_CHARDEV, NULL, 0, 0, 0, NULL}};
    const struct ta_entry fifo[] = {MANIFEST_ENTRY, {"pipe", TA_FIFO, NULL, 0, 0, 0, NULL}};

    start(f);
    bad_archive(f, "tar", dev, 2, "character device");
    bad_archive(f, "tar.zst", fifo, 2, "FIFO");
}

static void test_ingest_decompression_bomb_is_invalid(void **state)
{
    struct fixture *f = *state;
    /* 1 GiB of zeros: zstd makes it a few tens of KiB. Stopped by the ratio long before. */
    const struct ta_entry e[] = {MANIFEST_ENTRY,
                                 {"zeros.bin", TA_FILE, NULL, 0, 1ull << 30, 0, NULL}};
    const long long t0 = nwb_test_now_ms();

    start(f);
    bad_archive(f, "tar.zst", e, 2, "decompression bomb");
    assert_true(nwb_test_now_ms() - t0 < 30000);
}

static void test_ingest_hundred_thousand_entries_are_invalid(void **state)
{
    struct fixture *f = *state;
    struct ta_entry *e = calloc(100000, sizeof(*e));
    char(*names)[16] = calloc(100000, 16);

    assert_non_null(e);
    assert_non_null(names);
    e[0] = (struct ta_entry)MANIFEST_ENTRY;
    for (int i = 1; i < 100000; i++) {
        snprintf(names[i], 16, "f%06d", i);
        e[i].path = names[i];
        e[i].kind = TA_FILE;
        e[i].data = "x";
        e[i].len = 1;
    }
    start(f);
    bad_archive(f, "tar.zst", e, 100000, "more than 4096 entries");
    free(names);
    free(e);
}

static void test_ingest_truncated_random_and_empty_bodies_are_invalid(void **state)
{
    struct fixture *f = *state;
    size_t len;
    unsigned char *a = ta_package("tar.zst", "truncate me", &len);
    unsigned char noise[4096];
    char id[NWB_CRASH_INGEST_ID_LEN + 1];
    uint32_t x = 12345;

    start(f);
    snprintf(id, sizeof(id), "%s", submit(f, a, len / 2));
    assert_invalid(f, id, "tar.zst", "truncated");
    free(a);
    for (size_t i = 0; i < sizeof(noise); i++) {
        x = x * 1103515245u + 12345u;
        noise[i] = (unsigned char)(x >> 16);
    }
    snprintf(id, sizeof(id), "%s", submit(f, noise, sizeof(noise)));
    assert_invalid(f, id, "bin", "not a tar or zip archive");
    snprintf(id, sizeof(id), "%s", submit(f, "", 0));
    assert_invalid(f, id, "bin", "empty archive");
    assert_still_serving(f, "after noise");
}

static void test_ingest_archive_inside_archive_is_invalid(void **state)
{
    struct fixture *f = *state;
    size_t inner_len;
    void *inner = ta_package("tar.zst", "inner", &inner_len);
    struct ta_entry e[] = {{"package.tar.zst", TA_FILE, NULL, 0, 0, 0, NULL}};

    assert_non_null(inner);
    e[0].data = inner;
    e[0].len = inner_len;
    start(f);
    /* Compressed twice, and a package wrapped as a file of another archive. */
    bad_archive(f, "gz.tar.zst", (const struct ta_entry[]){MANIFEST_ENTRY}, 1,
                "more than one compression layer");
    bad_archive(f, "tar", e, 1, "no crash manifest");
    free(inner);
}

static void test_ingest_long_and_non_utf8_names_are_invalid(void **state)
{
    struct fixture *f = *state;
    char longname[4100], longcomp[300];
    struct ta_entry e[] = {MANIFEST_ENTRY, {NULL, TA_FILE, "x", 1, 0, 0, NULL}};

    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    memset(longcomp, 'b', sizeof(longcomp) - 1);
    longcomp[sizeof(longcomp) - 1] = '\0';
    f->caps.max_path_bytes = 8192; /* so the component check itself is reached */
    start(f);
    e[1].path = "bad\xff\xfe-name.txt";
    bad_archive(f, "tar", e, 2, "not valid UTF-8");
    e[1].path = "overlong-\xc0\xaf.txt";
    bad_archive(f, "tar.zst", e, 2, "not valid UTF-8");
    e[1].path = longcomp;
    bad_archive(f, "tar.zst", e, 2, "longer than 255 bytes");
    restart(f);
    f->caps.max_path_bytes = 256;
    restart(f);
    e[1].path = longname;
    bad_archive(f, "tar.zst", e, 2, "longer than 256 bytes");
}

static void test_ingest_missing_or_bad_manifest_is_invalid(void **state)
{
    struct fixture *f = *state;
    const struct ta_entry none[] = {{"crash.txt", TA_FILE, "x", 1, 0, 0, NULL}};
    const struct ta_entry bad[] = {{"manifest.txt", TA_FILE, "hello\n", 6, 0, 0, NULL}};
    const struct ta_entry deep[] = {
        {"sub/manifest.txt", TA_FILE, manifest, sizeof(manifest) - 1, 0, 0, NULL}};

    start(f);
    bad_archive(f, "tar", none, 1, "no crash manifest");
    bad_archive(f, "zip", bad, 1, "bad crash manifest");
    bad_archive(f, "tar.gz", deep, 1, "no crash manifest");
}

static void test_ingest_duplicate_and_conflicting_entries_are_invalid(void **state)
{
    struct fixture *f = *state;
    const struct ta_entry dup[] = {MANIFEST_ENTRY, MANIFEST_ENTRY};
    const struct ta_entry clash[] = {
        MANIFEST_ENTRY, {"a", TA_FILE, "x", 1, 0, 0, NULL}, {"a/b", TA_FILE, "y", 1, 0, 0, NULL}};

    start(f);
    bad_archive(f, "tar", dup, 2, "conflicts with an earlier entry");
    bad_archive(f, "tar", clash, 3, "conflicts with an earlier entry");
}

/* ---- caps at their edges ---- */

static void test_ingest_caps_hold_at_their_edges(void **state)
{
    struct fixture *f = *state;
    char at[64], over[64];
    struct ta_entry e[5];
    size_t len;
    void *a;

    f->caps.max_entries = 4;
    f->caps.max_path_bytes = 20;
    f->caps.max_path_depth = 3;
    f->caps.max_entry_bytes = 1000;
    f->caps.max_total_bytes = 1500;
    f->caps.max_ratio = 1000000; /* out of the way here */
    start(f);
    memset(e, 0, sizeof(e));
    e[0] = (struct ta_entry)MANIFEST_ENTRY;

    /* Entries: 4 accepted, 5 refused. */
    for (int i = 1; i < 5; i++) {
        e[i].path = i == 1 ? "e1" : i == 2 ? "e2" : i == 3 ? "e3" : "e4";
        e[i].data = "z";
        e[i].len = 1;
    }
    a = ta_build("tar", e, 4, &len);
    assert_extracted(f, submit(f, a, len));
    free(a);
    bad_archive(f, "tar", e, 5, "more than 4 entries");

    /* Path bytes: 20 accepted, 21 refused. */
    memset(at, 'p', 20);
    at[20] = '\0';
    memset(over, 'q', 21);
    over[21] = '\0';
    e[1].path = at;
    a = ta_build("tar", e, 2, &len);
    assert_extracted(f, submit(f, a, len));
    free(a);
    e[1].path = over;
    bad_archive(f, "tar", e, 2, "longer than 20 bytes");

    /* Depth: 3 accepted, 4 refused ("./" and empty components do not count). */
    e[1].path = "./a//b/c";
    a = ta_build("tar", e, 2, &len);
    assert_extracted(f, submit(f, a, len));
    free(a);
    e[1].path = "a/b/c/d";
    bad_archive(f, "tar", e, 2, "deeper than 3 levels");

    /* Bytes per entry: 1000 accepted, 1001 refused; total: 1500 accepted, 1501 refused. */
    e[1].path = "big";
    e[1].data = NULL;
    e[1].fill_bytes = 1000;
    e[1].fill_byte = 'b';
    a = ta_build("tar", e, 2, &len);
    assert_extracted(f, submit(f, a, len));
    free(a);
    e[1].fill_bytes = 1001;
    bad_archive(f, "tar", e, 2, "exceeds 1000 bytes");
    e[1].fill_bytes = 1000;
    e[2] = e[1];
    e[2].path = "big2";
    e[2].fill_bytes = 1500 - 1000 - (sizeof(manifest) - 1);
    a = ta_build("tar", e, 3, &len);
    assert_extracted(f, submit(f, a, len));
    free(a);
    e[2].fill_bytes++;
    bad_archive(f, "tar", e, 3, "exceeds 1500 bytes in total");
}

static void test_ingest_ratio_cap_holds_at_its_edge(void **state)
{
    struct fixture *f = *state;
    const struct ta_entry e[] = {MANIFEST_ENTRY, {"z", TA_FILE, NULL, 0, 4u << 20, 0, NULL}};
    size_t len;
    void *a = ta_build("tar.zst", e, 2, &len);
    const uint64_t ratio = ((4u << 20) + sizeof(manifest) - 1) / len;

    assert_non_null(a);
    /* Just above the archive's real ratio it passes; at it, it is a bomb. */
    f->caps.ratio_floor_bytes = 1024;
    f->caps.max_ratio = (uint32_t)ratio + 1;
    start(f);
    assert_extracted(f, submit(f, a, len));
    f->caps.max_ratio = (uint32_t)ratio - 1;
    nwb__crash_ingest_stop(f->ci);
    f->ci = NULL;
    nwb_test_rmtree(f->out);
    start(f);
    {
        const char *id = submit(f, a, len);

        assert_invalid(f, id, "tar.zst", "decompression bomb");
    }
    free(a);
}

static void test_ingest_archive_size_and_queue_bounds_refuse(void **state)
{
    struct fixture *f = *state;
    char id[NWB_CRASH_INGEST_ID_LEN + 1];
    size_t l1, l2, l3;
    void *a1 = ta_package("tar", "one", &l1);
    void *a2 = ta_package("tar", "two", &l2);
    void *a3 = ta_package("tar", "three", &l3);

    f->caps.max_archive_bytes = l1;
    f->caps.max_queue = 2;
    start(f);
    nwb__crash_ingest_pause(f->ci, 1);
    assert_int_equal(nwb__crash_ingest_submit(f->ci, a1, l1, NULL, NULL, id), 0);
    assert_int_equal(nwb__crash_ingest_submit(f->ci, a2, l2, NULL, NULL, id), 0);
    /* The queue holds two; the third gets EFULL (503) and is not stored. */
    assert_int_equal(nwb__crash_ingest_submit(f->ci, a3, l3, NULL, NULL, id), NWB_EFULL);
    assert_int_equal(count(f, "raw"), 2);
    nwb__crash_ingest_pause(f->ci, 0);
    assert_int_equal(nwb__crash_ingest_wait_idle(f->ci, WAIT_MS), 0);
    assert_int_equal(nwb__crash_ingest_submit(f->ci, a3, l3, NULL, NULL, id), 0);
    /* One byte over the archive cap: NWB_ETOOBIG (413). */
    {
        char *big = calloc(1, l1 + 1);

        assert_int_equal(nwb__crash_ingest_submit(f->ci, big, l1 + 1, NULL, NULL, id), NWB_ETOOBIG);
        free(big);
    }
    assert_int_equal(nwb__crash_ingest_wait_idle(f->ci, WAIT_MS), 0);
    assert_int_equal(count(f, "packages"), 3);
    free(a1);
    free(a2);
    free(a3);
}

/* ---- retention ---- */

static void retention_run(struct fixture *f, int valid, int bad,
                          char ids[][NWB_CRASH_INGEST_ID_LEN + 1])
{
    const int total = valid + bad;

    for (int i = 0; i < total; i++) {
        char tag[32];
        size_t len;
        void *a;

        snprintf(tag, sizeof(tag), "retention-%d", i);
        if (i % 3 == 1 && bad > 0) {
            const struct ta_entry e[] = {{"crash.txt", TA_FILE, tag, strlen(tag), 0, 0, NULL}};

            a = ta_build("tar", e, 1, &len);
            bad--;
        } else {
            a = ta_package("tar.zst", tag, &len);
        }
        snprintf(ids[i], NWB_CRASH_INGEST_ID_LEN + 1, "%s", submit(f, a, len));
        free(a);
    }
}

static void test_ingest_retention_small_caps_keep_newest(void **state)
{
    struct fixture *f = *state;
    char ids[30][NWB_CRASH_INGEST_ID_LEN + 1];
    struct nwb_crash_counts c;
    char p[700];

    f->caps.retain_packages = 3;
    f->caps.retain_raw = 2;
    f->caps.retain_invalid = 1;
    start(f);
    retention_run(f, 20, 10, ids);
    assert_int_equal(count(f, "packages"), 3);
    assert_int_equal(count(f, "raw"), 2);
    assert_int_equal(count(f, "invalid"), 2); /* one archive and its reason file */
    /* The newest ones are kept: the last upload (id 29, valid) is always there. */
    path_of(f, p, sizeof(p), "packages/%s", ids[29]);
    assert_true(ta_exists(p));
    path_of(f, p, sizeof(p), "raw/%s.tar.zst", ids[29]);
    assert_true(ta_exists(p));
    path_of(f, p, sizeof(p), "invalid/%s.tar", ids[28]); /* the last invalid one */
    assert_true(ta_exists(p));
    path_of(f, p, sizeof(p), "packages/%s", ids[0]);
    assert_false(ta_exists(p));
    nwb__crash_ingest_counts(f->ci, &c);
    assert_int_equal(c.packages, 3);
    assert_int_equal(c.raw, 2);
    assert_int_equal(c.invalid, 1);
    assert_int_equal(c.extracted_total, 20);
    assert_int_equal(c.invalid_total, 10);
    assert_int_equal(c.pruned_packages_total, 17);
    assert_int_equal(c.pruned_invalid_total, 9);
}

static void test_ingest_retention_cap_one_never_prunes_the_new_one(void **state)
{
    struct fixture *f = *state;

    f->caps.retain_packages = 1;
    f->caps.retain_raw = 1;
    f->caps.retain_invalid = 1;
    start(f);
    for (int i = 0; i < 6; i++) {
        char tag[16], p[700];
        size_t len;
        void *a;
        const char *id;

        snprintf(tag, sizeof(tag), "one-%d", i);
        a = ta_package("tar.zst", tag, &len);
        id = submit(f, a, len);
        path_of(f, p, sizeof(p), "packages/%s", id);
        assert_true(ta_exists(p));
        assert_int_equal(count(f, "packages"), 1);
        assert_int_equal(count(f, "raw"), 1);
        free(a);
    }
}

static void test_ingest_retention_zero_never_prunes(void **state)
{
    struct fixture *f = *state;
    char ids[30][NWB_CRASH_INGEST_ID_LEN + 1];

    f->caps.retain_packages = 0;
    f->caps.retain_raw = 0;
    f->caps.retain_invalid = 0;
    start(f);
    retention_run(f, 20, 10, ids);
    assert_int_equal(count(f, "packages"), 20);
    assert_int_equal(count(f, "raw"), 20);
    assert_int_equal(count(f, "invalid"), 20);
}

/*
 * Give stored package @p id the signature @p sig in place of the one the server's analysis
 * derived (every test package has the same crash.txt, so they would all be one group); NULL
 * removes it (a package whose analysis failed).
 */
static void set_signature(const struct fixture *f, const char *id, const char *sig)
{
    char p[700];
    FILE *fp;

    path_of(f, p, sizeof(p), "analysis/%s/signature.txt", id);
    assert_true(ta_exists(p)); /* the server analysed it before the worker went idle */
    if (sig == NULL) {
        assert_int_equal(unlink(p), 0);
        return;
    }
    fp = fopen(p, "w");
    assert_non_null(fp);
    fprintf(fp, "%s\n", sig);
    assert_int_equal(fclose(fp), 0);
}

static int package_kept(const struct fixture *f, const char *id)
{
    char p[700];

    path_of(f, p, sizeof(p), "packages/%s", id);
    return ta_exists(p);
}

/* One upload; its id copied into @p id. @p sig: the signature given to it, or NULL. */
static void grouped_upload(struct fixture *f, const char *tag, const char *sig,
                           char id[NWB_CRASH_INGEST_ID_LEN + 1])
{
    size_t len;
    void *a = ta_package("tar.zst", tag, &len);

    snprintf(id, NWB_CRASH_INGEST_ID_LEN + 1, "%s", submit(f, a, len));
    free(a);
    set_signature(f, id, sig);
}

/*
 * The newest crash of every group outlives older crashes of busier groups and crashes with no
 * signature; when every package left is a group's newest, the cap still holds (the oldest
 * goes), and a pruned package's analysis goes with it.
 */
static void test_ingest_retention_keeps_the_newest_of_every_group(void **state)
{
    struct fixture *f = *state;
    char a0[33], b0[33], b1[33], b2[33], c0[33], d0[33], e0[33], g0[33];
    char p[700];

    f->caps.retain_packages = 3;
    start(f);
    grouped_upload(f, "a0", "SIGSEGV | rare_bug", a0);
    grouped_upload(f, "b0", "SIGABRT | busy_bug", b0);
    grouped_upload(f, "b1", "SIGABRT | busy_bug", b1);
    grouped_upload(f, "b2", "SIGABRT | busy_bug", b2);
    /* b0 went, not a0, the oldest: a0 is its group's only crash. */
    assert_true(package_kept(f, a0));
    assert_false(package_kept(f, b0));
    path_of(f, p, sizeof(p), "analysis/%s", b0);
    assert_false(ta_exists(p));
    assert_true(package_kept(f, b1));
    assert_true(package_kept(f, b2));

    grouped_upload(f, "c0", NULL, c0); /* b1 goes: b2 is newer in its group */
    assert_true(package_kept(f, a0));
    assert_false(package_kept(f, b1));
    assert_true(package_kept(f, c0));

    grouped_upload(f, "d0", "SIGFPE | other_bug", d0); /* c0, with no signature, goes */
    assert_false(package_kept(f, c0));
    assert_true(package_kept(f, a0));
    assert_true(package_kept(f, b2));
    assert_true(package_kept(f, d0));

    grouped_upload(f, "e0", "SIGBUS | fourth_bug", e0); /* all group-newest: a0, the oldest */
    assert_false(package_kept(f, a0));
    assert_true(package_kept(f, b2));
    assert_true(package_kept(f, d0));
    assert_true(package_kept(f, e0));
    grouped_upload(f, "g0", NULL, g0);
    assert_int_equal(count(f, "packages"), 3);
    assert_true(package_kept(f, g0));
}

/* ---- restart and shutdown ---- */

static void test_ingest_stored_but_unextracted_is_redone_at_start(void **state)
{
    struct fixture *f = *state;
    char id[NWB_CRASH_INGEST_ID_LEN + 1];
    size_t len;
    void *a = ta_package("tar.gz", "restart", &len);

    start(f);
    nwb__crash_ingest_pause(f->ci, 1);
    assert_int_equal(nwb__crash_ingest_submit(f->ci, a, len, "prog", "r", id), 0);
    /* Stop while it waits: the raw archive and its queue marker stay. */
    nwb__crash_ingest_stop(f->ci);
    f->ci = NULL;
    assert_int_equal(count(f, "raw"), 1);
    assert_int_equal(count(f, ".queue"), 1);
    assert_int_equal(count(f, "packages"), 0);
    start(f);
    assert_int_equal(nwb__crash_ingest_wait_idle(f->ci, WAIT_MS), 0);
    assert_extracted(f, id);
    assert_int_equal(count(f, ".queue"), 0);
    free(a);
}

static void test_ingest_stop_during_extraction_leaves_no_partial_output(void **state)
{
    struct fixture *f = *state;
    const struct ta_entry e[] = {MANIFEST_ENTRY,
                                 {"big.bin", TA_FILE, NULL, 0, 200u << 20, 0, NULL}};
    char id[NWB_CRASH_INGEST_ID_LEN + 1];
    size_t len;
    void *a = ta_build("tar.zst", e, 2, &len);
    char p[700];

    f->caps.max_ratio = 1u << 30;
    f->caps.max_entry_bytes = 1ull << 30;
    f->caps.max_total_bytes = 1ull << 30;
    start(f);
    assert_int_equal(nwb__crash_ingest_submit(f->ci, a, len, "prog", "r", id), 0);
    nwb__crash_ingest_stop(f->ci);
    f->ci = NULL;
    /* Either it finished or it was abandoned and re-queued; never half a package. */
    assert_int_equal(count(f, ".staging"), 0);
    path_of(f, p, sizeof(p), "packages/%s", id);
    if (!ta_exists(p)) {
        assert_int_equal(count(f, ".queue"), 1);
        start(f);
        assert_int_equal(nwb__crash_ingest_wait_idle(f->ci, WAIT_MS), 0);
    }
    assert_extracted(f, id);
    free(a);
}

/* wait_idle measures its timeout on the monotonic clock (nwb/deadline.h): with the worker
 * paused and one archive queued it returns NWB_ETIMEOUT after the timeout, not before. */
static void test_ingest_wait_idle_times_out_while_paused(void **state)
{
    struct fixture *f = *state;
    char id[NWB_CRASH_INGEST_ID_LEN + 1];
    size_t len;
    void *a = ta_package("tar", "paused", &len);
    long long t0, waited;

    assert_non_null(a);
    start(f);
    nwb__crash_ingest_pause(f->ci, 1);
    assert_int_equal(nwb__crash_ingest_submit(f->ci, a, len, NULL, NULL, id), 0);
    t0 = nwb_test_now_ms();
    assert_int_equal(nwb__crash_ingest_wait_idle(f->ci, 150), NWB_ETIMEOUT);
    waited = nwb_test_now_ms() - t0;
    assert_true(waited >= 150);
    assert_true(waited < 10000);
    nwb__crash_ingest_pause(f->ci, 0);
    assert_int_equal(nwb__crash_ingest_wait_idle(f->ci, WAIT_MS), 0);
    assert_extracted(f, id);
    free(a);
}

/* Every stop and close of the crash ingest accepts NULL, and closing a store twice is fine. */
static void test_ingest_stop_and_close_accept_null(void **state)
{
    struct fixture *f = *state;
    struct nwb__crash_store st;

    nwb__crash_ingest_stop(NULL);
    nwb__crash_store_close(NULL);
    assert_int_equal(nwb__crash_store_open(&st, f->out), 0);
    nwb__crash_store_close(&st);
    assert_int_equal(st.root_fd, -1);
    nwb__crash_store_close(&st);
}

/* ---- views ---- */

/* @p json (from a view) is one strict JSON value of strlen(json) == @p len bytes. */
static void expect_strict_json(const char *json, size_t len)
{
    size_t bad = 0;

    assert_int_equal(strlen(json), len);
    if (nwb_test_json_check(json, len, &bad) != 0) {
        fail_msg("not valid JSON at byte %zu: %.2000s", bad, json);
    }
}

static int occurrences(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

/* One crash per status (stored, extracted, invalid, queued), a file name with a quote and
 * non-ASCII: the list and each crash are strict JSON with the keys of docs/crash.md. */
static void test_ingest_views_are_strict_json_in_every_status(void **state)
{
    struct fixture *f = *state;
    static const char odd_name[] = "quo\"te \xc3\xbc.txt";
    const struct ta_entry odd[] = {MANIFEST_ENTRY, {odd_name, TA_FILE, "o", 1, 0, 0, NULL}};
    const struct ta_entry bad[] = {{"crash.txt", TA_FILE, "x", 1, 0, 0, NULL}};
    const struct {
        const struct ta_entry *e;
        size_t n;
        const char *status;
    } uploads[] = {{NULL, 0, "stored"}, {odd, 2, "extracted"}, {bad, 1, "invalid"}};
    char ids[4][NWB_CRASH_INGEST_ID_LEN + 1];
    char *json;
    size_t len, jlen;
    void *a;

    f->caps.retain_packages = 1; /* the first package is pruned: its raw archive is "stored" */
    start(f);
    for (size_t i = 0; i < NWB_ARRAY_SIZE(uploads); i++) {
        a = uploads[i].e != NULL ? ta_build("tar", uploads[i].e, uploads[i].n, &len)
                                 : ta_package("tar.zst", "stored", &len);
        assert_non_null(a);
        snprintf(ids[i], sizeof(ids[i]), "%s", submit(f, a, len));
        free(a);
    }
    nwb__crash_ingest_pause(f->ci, 1);
    a = ta_package("zip", "queued", &len);
    assert_int_equal(nwb__crash_ingest_submit(f->ci, a, len, "qprog", "qrun", ids[3]), 0);
    free(a);

    assert_int_equal(nwb__crash_ingest_list_json(f->ci, NULL, &json, &jlen), 0);
    expect_strict_json(json, jlen);
    assert_int_equal(occurrences(json, "{\"id\":\""), 4);
    assert_int_equal(occurrences(json, ",\"sizes\":{\"archive\":"), 4);
    for (size_t i = 0; i < NWB_ARRAY_SIZE(uploads); i++) {
        char want[96];

        snprintf(want, sizeof(want), "\"status\":\"%s\"", uploads[i].status);
        assert_int_equal(occurrences(json, want), 1);
    }
    assert_int_equal(occurrences(json, "\"status\":\"queued\""), 1);
    assert_non_null(strstr(json, "\"program\":\"qprog\",\"run\":\"qrun\""));
    nwb_free(json);

    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(nwb__crash_ingest_get_json(f->ci, ids[i], &json, &jlen), 0);
        expect_strict_json(json, jlen);
        assert_int_equal(occurrences(json, "{\"id\":\""), 1);
        assert_int_equal(occurrences(json, "\"files\":["), i == 1);
        assert_int_equal(occurrences(json, "\"reason\":\""), i == 2);
        if (i == 1) {
            assert_non_null(strstr(json, "{\"path\":\"quo\\\"te \xc3\xbc.txt\",\"bytes\":1}"));
        }
        if (i == 0) {
            assert_non_null(strstr(json, "\"extracted\":null"));
        }
        nwb_free(json);
    }
    nwb__crash_ingest_pause(f->ci, 0);
    assert_int_equal(nwb__crash_ingest_wait_idle(f->ci, WAIT_MS), 0);
}

static void test_ingest_json_and_metrics_describe_each_category(void **state)
{
    struct fixture *f = *state;
    char good[NWB_CRASH_INGEST_ID_LEN + 1], bad[NWB_CRASH_INGEST_ID_LEN + 1];
    const struct ta_entry e[] = {{"crash.txt", TA_FILE, "x", 1, 0, 0, NULL}};
    char *json, metrics[4096];
    size_t len, jlen;
    void *a = ta_package("tar.zst", "json", &len);

    start(f);
    snprintf(good, sizeof(good), "%s", submit(f, a, len));
    free(a);
    a = ta_build("tar", e, 1, &len);
    snprintf(bad, sizeof(bad), "%s", submit(f, a, len));
    free(a);

    assert_int_equal(nwb__crash_ingest_list_json(f->ci, NULL, &json, &jlen), 0);
    expect_strict_json(json, jlen);
    assert_non_null(strstr(json, good));
    assert_non_null(strstr(json, bad));
    assert_non_null(strstr(json, "\"status\":\"extracted\""));
    assert_non_null(strstr(json, "\"status\":\"invalid\""));
    assert_non_null(strstr(json, "\"program\":\"ta_prog\""));
    assert_non_null(strstr(json, "\"signal\":\"SIGSEGV\""));
    assert_non_null(strstr(json, "\"received\":\""));
    nwb_free(json);

    assert_int_equal(nwb__crash_ingest_get_json(f->ci, good, &json, &jlen), 0);
    expect_strict_json(json, jlen);
    assert_non_null(strstr(json, "\"files\":[{\"path\":\""));
    assert_non_null(strstr(json, "manifest.txt"));
    nwb_free(json);
    assert_int_equal(nwb__crash_ingest_get_json(f->ci, bad, &json, &jlen), 0);
    expect_strict_json(json, jlen);
    assert_non_null(strstr(json, "\"reason\":\"no crash manifest"));
    assert_non_null(strstr(json, "\"program\":\"prog\""));
    nwb_free(json);
    assert_int_equal(nwb__crash_ingest_get_json(f->ci, "../etc/passwd", &json, &jlen), -EINVAL);
    assert_int_equal(
        nwb__crash_ingest_get_json(f->ci, "00000000000000000000000000000000", &json, &jlen),
        -ENOENT);

    assert_true(nwb__crash_ingest_metrics_write(f->ci, metrics, sizeof(metrics)) < sizeof(metrics));
    assert_non_null(strstr(metrics, "nwb_crashes{category=\"packages\"} 1\n"));
    assert_non_null(strstr(metrics, "nwb_crashes{category=\"raw\"} 1\n"));
    assert_non_null(strstr(metrics, "nwb_crashes{category=\"invalid\"} 1\n"));
    assert_non_null(strstr(metrics, "nwb_crash_uploads_total 2\n"));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_ingest_sha256_matches_fips_vectors),
        T(test_ingest_every_format_is_extracted),
        T(test_ingest_same_bytes_get_same_id_and_are_stored_once),
        T(test_ingest_path_traversal_is_invalid),
        T(test_ingest_absolute_path_is_invalid),
        T(test_ingest_symlink_escape_is_invalid),
        T(test_ingest_hard_link_escape_is_invalid),
        T(test_ingest_device_node_and_fifo_are_invalid),
        T(test_ingest_decompression_bomb_is_invalid),
        T(test_ingest_hundred_thousand_entries_are_invalid),
        T(test_ingest_truncated_random_and_empty_bodies_are_invalid),
        T(test_ingest_archive_inside_archive_is_invalid),
        T(test_ingest_long_and_non_utf8_names_are_invalid),
        T(test_ingest_missing_or_bad_manifest_is_invalid),
        T(test_ingest_duplicate_and_conflicting_entries_are_invalid),
        T(test_ingest_caps_hold_at_their_edges),
        T(test_ingest_ratio_cap_holds_at_its_edge),
        T(test_ingest_archive_size_and_queue_bounds_refuse),
        T(test_ingest_retention_small_caps_keep_newest),
        T(test_ingest_retention_cap_one_never_prunes_the_new_one),
        T(test_ingest_retention_zero_never_prunes),
        T(test_ingest_retention_keeps_the_newest_of_every_group),
        T(test_ingest_stored_but_unextracted_is_redone_at_start),
        T(test_ingest_stop_during_extraction_leaves_no_partial_output),
        T(test_ingest_wait_idle_times_out_while_paused),
        T(test_ingest_stop_and_close_accept_null),
        T(test_ingest_json_and_metrics_describe_each_category),
        T(test_ingest_views_are_strict_json_in_every_status),
    };
#undef T

    return cmocka_run_group_tests_name("crash.ingest", tests, NULL, NULL);
}
