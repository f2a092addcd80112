/* SPDX-License-Identifier: MIT */
/*
 * test_spool.c - the spool files (spool.c, docs/spool.md): round trip,
 * truncated and corrupt files handled cleanly, the cap dropping the oldest
 * segments, locking against a second reader, header validation, scanning.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/byte_order.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "test_http_out_fixture.h"
#include "test_support.h"

struct fx {
    char dir[512];
    char spool[600];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("spool", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->spool, sizeof(f->spool), "%s/spool", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

static struct nwb__spool_ident ident(const char *program, const char *run, uint64_t start)
{
    struct nwb__spool_ident id;

    memset(&id, 0, sizeof(id));
    snprintf(id.program, sizeof(id.program), "%s", program);
    snprintf(id.run, sizeof(id.run), "%s", run);
    id.start_ns = start;
    return id;
}

/* A valid one-record batch saying @p text, in @p buf; returns its length. */
static uint32_t make_batch(uint8_t *buf, const char *text)
{
    nwb_log_record_t r;
    size_t len;

    memset(&r, 0, sizeof(r));
    r.msg = text;
    r.msg_len = (uint32_t)strlen(text);
    r.file = "s.c";
    r.file_len = 3;
    nwb_log_batch_header_write(buf);
    len = NWB_LOG_BATCH_HEADER_SIZE + nwb_log_record_encode(buf + NWB_LOG_BATCH_HEADER_SIZE, &r);
    nwb_log_batch_header_finish(buf, 1, (uint32_t)(len - NWB_LOG_BATCH_HEADER_SIZE));
    return (uint32_t)len;
}

static void append_n(struct nwb__spool *sp, int first, int n, uint64_t *dropped_total)
{
    for (int i = first; i < first + n; i++) {
        uint8_t buf[256];
        char text[64];
        uint64_t dropped = 0;
        int lost = 0;

        snprintf(text, sizeof(text), "spooled batch %d", i);
        assert_int_equal(
            nwb__spool_append(sp, (uint64_t)i, buf, make_batch(buf, text), &dropped, &lost), 0);
        if (dropped_total != NULL) {
            *dropped_total += dropped;
        }
    }
}

/* The single spool file's name in @p dir. */
static void only_file(const char *dir, char *name, size_t cap)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;

    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        if (strstr(de->d_name, ".spool") != NULL) {
            snprintf(name, cap, "%s", de->d_name);
            n++;
        }
    }
    closedir(d);
    assert_int_equal(n, 1);
}

static void expect_batch(struct nwb__batch *b, uint64_t seq, const char *text)
{
    char msgs[128];

    assert_non_null(b);
    assert_int_equal(b->seq, seq);
    assert_int_equal(b->records, 1);
    assert_int_equal(fx_batch_messages(b->data, b->len, msgs, sizeof(msgs)), 1);
    assert_string_equal(msgs, text);
}

static void test_spool_round_trip_keeps_every_batch_and_identity(void **state)
{
    struct fx *f = *state;
    const struct nwb__spool_ident id = ident("game", "00000000000000a1", 1234567);
    struct nwb__spool *sp = NULL;
    struct nwb__spool_found *found = NULL;
    struct nwb__spool_reader rd;
    struct nwb__batch *b = NULL;
    size_t n = 0;

    assert_int_equal(nwb__spool_create(f->spool, &id, 1u << 20, &sp), 0);
    assert_int_equal(nwb__spool_live(sp), 0);
    assert_int_equal(fx_count_files(f->spool, ".spool", NULL), 0); /* nothing until used */
    append_n(sp, 1, 5, NULL);
    assert_int_equal(nwb__spool_live(sp), 5);
    nwb__spool_destroy(sp); /* files with live batches stay */

    assert_int_equal(nwb__spool_scan(f->spool, "game", &found, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(found[0].id.program, "game");
    assert_string_equal(found[0].id.run, "00000000000000a1");
    assert_int_equal(found[0].id.start_ns, 1234567);
    assert_int_equal(nwb__spool_reader_open(&rd, f->spool, found[0].name), 0);
    for (int i = 1; i <= 5; i++) {
        char text[64];

        snprintf(text, sizeof(text), "spooled batch %d", i);
        assert_int_equal(nwb__spool_reader_next(&rd, &b), 1);
        expect_batch(b, (uint64_t)i, text);
        nwb_free(b);
        nwb__spool_reader_ack(&rd);
    }
    assert_int_equal(nwb__spool_reader_next(&rd, &b), 0);
    assert_null(b);
    nwb__spool_reader_close(&rd, 1);
    assert_int_equal(fx_count_files(f->spool, ".spool", NULL), 0);
    nwb_free(found);
}

static void test_spool_peek_pop_deletes_acknowledged_files(void **state)
{
    struct fx *f = *state;
    const struct nwb__spool_ident id = ident("game", "00000000000000a2", 1);
    struct nwb__spool *sp = NULL;
    struct nwb__batch *b = NULL;
    uint64_t dropped = 0;

    assert_int_equal(nwb__spool_create(f->spool, &id, 1u << 20, &sp), 0);
    append_n(sp, 1, 2, NULL);
    assert_int_equal(fx_count_files(f->spool, ".spool", NULL), 1);
    assert_int_equal(nwb__spool_peek(sp, &b, &dropped), 1);
    expect_batch(b, 1, "spooled batch 1");
    nwb_free(b);
    /* Not acknowledged: the same batch comes back. */
    nwb__spool_unpeek(sp);
    assert_int_equal(nwb__spool_peek(sp, &b, &dropped), 1);
    expect_batch(b, 1, "spooled batch 1");
    nwb_free(b);
    nwb__spool_pop(sp);
    assert_int_equal(nwb__spool_peek(sp, &b, &dropped), 1);
    expect_batch(b, 2, "spooled batch 2");
    nwb_free(b);
    nwb__spool_pop(sp);
    assert_int_equal(nwb__spool_live(sp), 0);
    assert_int_equal(nwb__spool_peek(sp, &b, &dropped), 0);
    assert_int_equal(fx_count_files(f->spool, ".spool", NULL), 0);
    assert_int_equal(nwb__spool_disk_bytes(sp), 0);
    nwb__spool_destroy(sp);
}

static void write_spool_file(struct fx *f, const char *run, int n, char *name, size_t cap)
{
    const struct nwb__spool_ident id = ident("game", run, 7);
    struct nwb__spool *sp = NULL;

    assert_int_equal(nwb__spool_create(f->spool, &id, 1u << 20, &sp), 0);
    append_n(sp, 1, n, NULL);
    nwb__spool_destroy(sp);
    only_file(f->spool, name, cap);
}

static void test_spool_truncated_tail_is_skipped_cleanly(void **state)
{
    struct fx *f = *state;
    struct nwb__spool_reader rd;
    struct nwb__batch *b = NULL;
    char name[256], path[900];
    struct stat st;

    write_spool_file(f, "00000000000000a3", 3, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", f->spool, name);
    assert_int_equal(stat(path, &st), 0);
    /* A crash in the middle of the last write. */
    assert_int_equal(truncate(path, st.st_size - 10), 0);
    assert_int_equal(nwb__spool_reader_open(&rd, f->spool, name), 0);
    for (int i = 1; i <= 2; i++) {
        assert_int_equal(nwb__spool_reader_next(&rd, &b), 1);
        assert_int_equal(b->seq, (uint64_t)i);
        nwb_free(b);
        nwb__spool_reader_ack(&rd);
    }
    assert_int_equal(nwb__spool_reader_next(&rd, &b), NWB_ETRUNCATED);
    assert_null(b);
    assert_non_null(strstr(rd.why, "truncated"));
    /* Asking again gives the same answer, never a crash or a loop. */
    assert_int_equal(nwb__spool_reader_next(&rd, &b), NWB_ETRUNCATED);
    nwb__spool_reader_close(&rd, 0);
    /* Cut inside an entry header too. */
    assert_int_equal(truncate(path, st.st_size - (off_t)(st.st_size / 3)), 0);
    assert_int_equal(nwb__spool_reader_open(&rd, f->spool, name), 0);
    while (nwb__spool_reader_next(&rd, &b) == 1) {
        nwb_free(b);
        nwb__spool_reader_ack(&rd);
    }
    assert_null(b);
    nwb__spool_reader_close(&rd, 0);
}

static void test_spool_corrupt_byte_is_detected(void **state)
{
    struct fx *f = *state;
    struct nwb__spool_reader rd;
    struct nwb__batch *b = NULL;
    char name[256], path[900];
    struct stat st;
    int fd;
    uint8_t c;

    write_spool_file(f, "00000000000000a4", 3, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", f->spool, name);
    assert_int_equal(stat(path, &st), 0);
    fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    /* Flip a byte of the last message. */
    assert_int_equal(pread(fd, &c, 1, st.st_size - 2), 1);
    c ^= 0x20;
    assert_int_equal(pwrite(fd, &c, 1, st.st_size - 2), 1);
    close(fd);
    assert_int_equal(nwb__spool_reader_open(&rd, f->spool, name), 0);
    for (int i = 1; i <= 2; i++) {
        assert_int_equal(nwb__spool_reader_next(&rd, &b), 1);
        nwb_free(b);
        nwb__spool_reader_ack(&rd);
    }
    assert_int_equal(nwb__spool_reader_next(&rd, &b), NWB_EPROTO);
    assert_non_null(strstr(rd.why, "checksum"));
    nwb__spool_reader_close(&rd, 0);

    /* A wrong entry magic and an absurd length are refused the same way. */
    fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    {
        uint8_t hdr[128];
        const ssize_t hn = pread(fd, hdr, sizeof(hdr), 0);
        const uint16_t hs = nwb_le16_load(hdr + 6);
        uint8_t len4[4];

        assert_true(hn > (ssize_t)hs);
        nwb_le32_store(len4, 0x7FFFFFFFu);
        assert_int_equal(pwrite(fd, len4, 4, hs + 4), 4);
    }
    close(fd);
    assert_int_equal(nwb__spool_reader_open(&rd, f->spool, name), 0);
    assert_int_equal(nwb__spool_reader_next(&rd, &b), NWB_ERANGE);
    assert_null(b);
    nwb__spool_reader_close(&rd, 0);
}

static void test_spool_bad_header_is_reported_and_renamed(void **state)
{
    struct fx *f = *state;
    struct nwb__spool_found *found = NULL;
    char path[900];
    size_t n = 7;
    int fd;

    assert_int_equal(nwb_mkdir_p(f->spool, 0700), 0);
    snprintf(path, sizeof(path), "%s/game_garbage.000000.spool", f->spool);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "definitely not a spool file", 27), 27);
    close(fd);
    snprintf(path, sizeof(path), "%s/game_empty.000000.spool", f->spool);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(nwb__spool_scan(f->spool, "game", &found, &n), 0);
    assert_int_equal(n, 0);
    assert_null(found);
    assert_int_equal(fx_count_files(f->spool, ".spool", NULL), 0);
    assert_int_equal(fx_count_files(f->spool, ".spool.bad", NULL), 2);
    /* Reported once: the second scan does not see them. */
    assert_int_equal(nwb__spool_scan(f->spool, "game", &found, &n), 0);
    assert_int_equal(n, 0);
}

static void test_spool_header_decode_rejects_each_defect(void **state)
{
    const struct nwb__spool_ident id = ident("game", "0123456789abcdef", 99);
    struct nwb__spool_ident out;
    uint8_t h[256];
    uint8_t bad[256];
    const size_t size = nwb__spool_header_size(&id);
    const char *why = NULL;

    (void)state;
    nwb__spool_header_encode(h, &id);
    assert_int_equal(nwb__spool_header_decode(h, size, &out, &why), (int)size);
    assert_string_equal(out.program, "game");
    assert_string_equal(out.run, "0123456789abcdef");
    assert_int_equal(out.start_ns, 99);
    assert_int_equal(nwb__spool_header_decode(h, size - 1, &out, &why), NWB_ETRUNCATED);
    assert_int_equal(nwb__spool_header_decode(h, 3, &out, &why), NWB_ETRUNCATED);
    memcpy(bad, h, size);
    bad[0] ^= 1;
    assert_int_equal(nwb__spool_header_decode(bad, size, &out, &why), NWB_EMAGIC);
    memcpy(bad, h, size);
    bad[4] = 2;
    assert_int_equal(nwb__spool_header_decode(bad, size, &out, &why), NWB_EVERSION);
    memcpy(bad, h, size);
    bad[30] ^= 1; /* inside the run id: the CRC catches it */
    assert_int_equal(nwb__spool_header_decode(bad, size, &out, &why), NWB_EPROTO);
    assert_non_null(strstr(why, "checksum"));
    /* A name with a '/' is refused even with a correct CRC. */
    memcpy(bad, h, size);
    bad[40] = '/';
    nwb_le32_store(bad + size - 4, nwb__crc32c(0, bad, size - 4));
    assert_int_equal(nwb__spool_header_decode(bad, size, &out, &why), NWB_EPROTO);
    /* header_size beyond the bound. */
    memcpy(bad, h, size);
    nwb_le16_store(bad + 6, 4000);
    assert_int_equal(nwb__spool_header_decode(bad, size, &out, &why), NWB_ERANGE);
}

static void test_spool_cap_drops_oldest_segments_and_counts(void **state)
{
    struct fx *f = *state;
    const struct nwb__spool_ident id = ident("game", "00000000000000a5", 1);
    const uint64_t cap = 4096;
    struct nwb__spool *sp = NULL;
    struct nwb__batch *b = NULL;
    uint64_t dropped_total = 0;
    uint64_t prev = 0;
    uint64_t seen = 0;
    long long bytes = 0;
    uint64_t dropped = 0;

    assert_int_equal(nwb__spool_create(f->spool, &id, cap, &sp), 0);
    for (int i = 1; i <= 200; i++) {
        append_n(sp, i, 1, &dropped_total);
        fx_count_files(f->spool, ".spool", &bytes);
        assert_true(bytes <= (long long)cap);
        assert_int_equal(bytes, (long long)nwb__spool_disk_bytes(sp));
        assert_int_equal(nwb__spool_live(sp) + dropped_total, (uint64_t)i);
    }
    assert_true(dropped_total > 100);
    /* The survivors are the newest, oldest first, ending with the last one. */
    while (nwb__spool_peek(sp, &b, &dropped) == 1) {
        assert_true(b->seq > prev);
        assert_int_equal(b->seq, dropped_total + 1 + seen);
        prev = b->seq;
        seen++;
        nwb_free(b);
        nwb__spool_pop(sp);
    }
    assert_int_equal(prev, 200);
    nwb__spool_destroy(sp);
}

static void test_spool_batch_larger_than_cap_is_refused(void **state)
{
    struct fx *f = *state;
    const struct nwb__spool_ident id = ident("game", "00000000000000a6", 1);
    struct nwb__spool *sp = NULL;
    uint8_t buf[256];
    uint64_t dropped = 0;
    int lost = 0;

    assert_int_equal(nwb__spool_create(f->spool, &id, 100, &sp), 0);
    assert_int_equal(nwb__spool_append(sp, 1, buf,
                                       make_batch(buf, "far too big for a 100-byte spool"),
                                       &dropped, &lost),
                     NWB_ETOOBIG);
    assert_int_equal(nwb__spool_live(sp), 0);
    nwb__spool_destroy(sp);
}

static void test_spool_locked_file_is_refused_to_a_second_reader(void **state)
{
    struct fx *f = *state;
    const struct nwb__spool_ident id = ident("game", "00000000000000a7", 1);
    struct nwb__spool *sp = NULL;
    struct nwb__spool_reader rd;
    struct nwb__spool_reader rd2;
    char name[256];

    assert_int_equal(nwb__spool_create(f->spool, &id, 1u << 20, &sp), 0);
    append_n(sp, 1, 1, NULL);
    only_file(f->spool, name, sizeof(name));
    /* The writer holds the lock: nobody else may take the file. */
    assert_int_equal(nwb__spool_reader_open(&rd, f->spool, name), -EWOULDBLOCK);
    nwb__spool_destroy(sp);
    assert_int_equal(nwb__spool_reader_open(&rd, f->spool, name), 0);
    assert_int_equal(nwb__spool_reader_open(&rd2, f->spool, name), -EWOULDBLOCK);
    nwb__spool_reader_close(&rd, 1);
    assert_int_equal(nwb__spool_reader_open(&rd2, f->spool, name), -ENOENT);
}

static void test_spool_scan_lists_own_program_oldest_first(void **state)
{
    struct fx *f = *state;
    const struct nwb__spool_ident late = ident("game", "00000000000000b2", 2000);
    const struct nwb__spool_ident early = ident("game", "00000000000000b1", 1000);
    const struct nwb__spool_ident other = ident("game_editor", "00000000000000b3", 10);
    struct nwb__spool *sp = NULL;
    struct nwb__spool_found *found = NULL;
    size_t n = 0;

    assert_int_equal(nwb__spool_create(f->spool, &late, 1u << 20, &sp), 0);
    append_n(sp, 1, 1, NULL);
    nwb__spool_destroy(sp);
    assert_int_equal(nwb__spool_create(f->spool, &early, 1u << 20, &sp), 0);
    append_n(sp, 1, 1, NULL);
    nwb__spool_destroy(sp);
    assert_int_equal(nwb__spool_create(f->spool, &other, 1u << 20, &sp), 0);
    append_n(sp, 1, 1, NULL);
    nwb__spool_destroy(sp);
    assert_int_equal(nwb__spool_scan(f->spool, "game", &found, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(found[0].id.run, "00000000000000b1");
    assert_string_equal(found[1].id.run, "00000000000000b2");
    nwb_free(found);
    assert_int_equal(nwb__spool_scan(f->spool, "game_editor", &found, &n), 0);
    assert_int_equal(n, 1);
    nwb_free(found);
    assert_int_equal(nwb__spool_scan("/nonexistent/nwb/spool", "game", &found, &n), 0);
    assert_int_equal(n, 0);
}

static void test_spool_segments_roll_over_and_reuse_no_names(void **state)
{
    struct fx *f = *state;
    const struct nwb__spool_ident id = ident("game", "00000000000000a8", 1);
    struct nwb__spool *sp = NULL;
    struct nwb__spool *again = NULL;
    struct nwb__spool_found *found = NULL;
    size_t n = 0;

    /* cap/8 = 1 KiB segments: about 11 entries of ~90 bytes each. */
    assert_int_equal(nwb__spool_create(f->spool, &id, 8192, &sp), 0);
    append_n(sp, 1, 40, NULL);
    assert_true(fx_count_files(f->spool, ".spool", NULL) >= 3);
    nwb__spool_destroy(sp);
    /* A later process with the same run id never overwrites those files. */
    assert_int_equal(nwb__spool_create(f->spool, &id, 8192, &again), 0);
    append_n(again, 100, 1, NULL);
    nwb__spool_destroy(again);
    assert_int_equal(nwb__spool_scan(f->spool, "game", &found, &n), 0);
    assert_true(n >= 4);
    for (size_t i = 1; i < n; i++) {
        assert_true(found[i].id.segno > found[i - 1].id.segno);
    }
    nwb_free(found);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_spool_round_trip_keeps_every_batch_and_identity, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_spool_peek_pop_deletes_acknowledged_files, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_spool_truncated_tail_is_skipped_cleanly, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_spool_corrupt_byte_is_detected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spool_bad_header_is_reported_and_renamed, setup,
                                        teardown),
        cmocka_unit_test(test_spool_header_decode_rejects_each_defect),
        cmocka_unit_test_setup_teardown(test_spool_cap_drops_oldest_segments_and_counts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_spool_batch_larger_than_cap_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_spool_locked_file_is_refused_to_a_second_reader, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_spool_scan_lists_own_program_oldest_first, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_spool_segments_roll_over_and_reuse_no_names, setup,
                                        teardown),
    };

    return cmocka_run_group_tests_name("client.spool", tests, NULL, NULL);
}
