/* SPDX-License-Identifier: MIT */
/*
 * test_stream_file.c - stored streams: telemetry.nwbs.zst (one zstd frame per upload,
 * concatenated) and telemetry.nwbs read one piece at a time give the report of the raw bytes;
 * a damaged raw file gives the report a whole-file decode gives; corrupt, truncated, oversized
 * and wide-window zstd frames are clear errors at the frame's offset, with the frames before
 * them reported; the format is told by the magic; nwb_tel_unzstd() keeps its caps.
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

#include <zstd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/telemetry_report.h"
#include "tel_test_util.h"
#include "test_support.h"

#define MAX_SEGMENTS 64

struct fx {
    char dir[512];
    char path[600];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("tel-file", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof(f->path), "%s/telemetry.nwbs.zst", f->dir);
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

/* One zstd frame (with checksum) of @p len bytes appended to @p out. */
static void zframe(nwb_buf_t *out, const void *data, size_t len)
{
    const size_t bound = ZSTD_compressBound(len);
    ZSTD_CCtx *c = ZSTD_createCCtx();
    size_t n;

    assert_non_null(c);
    assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1)));
    assert_int_equal(nwb_buf_reserve(out, bound), 0);
    n = ZSTD_compress2(c, out->data + out->len, bound, data, len);
    assert_false(ZSTD_isError(n));
    out->len += n;
    ZSTD_freeCCtx(c);
}

/* The segments of @p d as concatenated frames; their offsets in @p at (when not NULL). */
static size_t zst_of(const uint8_t *d, size_t len, nwb_buf_t *out, size_t *at)
{
    size_t seg[MAX_SEGMENTS];
    const size_t n = tel_segment_offsets(d, len, seg, MAX_SEGMENTS);

    nwb_buf_init(out, 64u << 20);
    for (size_t i = 0; i < n; i++) {
        const size_t end = i + 1 < n ? seg[i + 1] : len;

        if (at != NULL) {
            at[i] = out->len;
        }
        zframe(out, d + seg[i], end - seg[i]);
    }
    return n;
}

/* The report of the file at @p path through the reader; its status in @p rc_out. */
static char *file_report(const char *path, int *rc_out, uint64_t *pieces)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    nwb_tel_report_state_t *s;
    nwb_tel_file_reader_t *r;
    nwb_buf_t json;
    char *out;

    assert_int_equal(nwb_tel_file_reader_open(path, &r), 0);
    assert_int_equal(nwb_tel_report_state_create(&s), 0);
    *rc_out = nwb_tel_report_state_feed_reader(s, r);
    if (pieces != NULL) {
        *pieces = nwb_tel_file_reader_pieces(r);
    }
    nwb_tel_file_reader_destroy(r);
    nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
    assert_int_equal(nwb_tel_report_state_write(s, &ro, &json), 0);
    nwb_tel_report_state_destroy(s);
    out = tel_json_take(&json, NULL);
    assert_non_null(out);
    return out;
}

static void test_stream_file_zst_and_raw_report_as_the_bytes(void **state)
{
    struct fx *f = *state;
    size_t len;
    uint8_t *d = tel_read_file(tel_data_path("golden_run.nwbs"), &len);
    char raw_path[700];
    nwb_tel_file_reader_t *r;
    uint64_t pieces = 0;
    nwb_buf_t z;
    size_t nseg;
    char *want;
    char *got;
    int rc;

    (void)state;
    assert_non_null(d);
    want = tel_built_report(d, len, NULL);
    nseg = zst_of(d, len, &z, NULL);
    assert_int_equal(tel_write_file(f->path, z.data, z.len), 0);
    assert_int_equal(nwb_tel_file_reader_open(f->path, &r), 0);
    assert_int_equal(nwb_tel_file_reader_format(r), NWB_TEL_FILE_ZSTD);
    nwb_tel_file_reader_destroy(r);
    got = file_report(f->path, &rc, &pieces);
    assert_int_equal(rc, 0);
    assert_int_equal(pieces, nseg);
    assert_string_equal(got, want);
    free(got);

    /* The raw file, named like a .zst one: the magic decides. */
    snprintf(raw_path, sizeof(raw_path), "%s/raw.nwbs.zst", f->dir);
    assert_int_equal(tel_write_file(raw_path, d, len), 0);
    assert_int_equal(nwb_tel_file_reader_open(raw_path, &r), 0);
    assert_int_equal(nwb_tel_file_reader_format(r), NWB_TEL_FILE_RAW);
    nwb_tel_file_reader_destroy(r);
    got = file_report(raw_path, &rc, &pieces);
    assert_int_equal(rc, 0);
    assert_int_equal(pieces, nseg);
    assert_string_equal(got, want);
    free(got);

    /* An empty file is an empty stream. */
    assert_int_equal(tel_write_file(raw_path, "", 0), 0);
    got = file_report(raw_path, &rc, &pieces);
    assert_int_equal(rc, 0);
    assert_int_equal(pieces, 0);
    tel_expect(got, "\"decode\":{\"bytes\":0,\"consumedBytes\":0,\"events\":0,\"status\":\"ok\"");
    free(got);
    free(want);
    nwb_buf_cleanup(&z);
    free(d);
}

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void test_stream_file_damaged_raw_file_reports_as_a_whole_decode(void **state)
{
    struct fx *f = *state;
    size_t len;
    uint8_t *d = tel_read_file(tel_data_path("golden_small.nwbs"), &len);
    uint8_t *work;
    uint64_t seed = 77;
    char path[700];

    assert_non_null(d);
    work = malloc(len);
    assert_non_null(work);
    snprintf(path, sizeof(path), "%s/damaged.nwbs", f->dir);
    /* Cut anywhere, or damaged anywhere (lying sizes, kind 0, a second magic): read one piece
     * at a time, the report is the one of the whole file's bytes. */
    for (unsigned i = 0; i < 400; i++) {
        size_t n = len;
        char *want;
        char *got;
        int rc;

        memcpy(work, d, len);
        if (i % 2 == 0) {
            n = (size_t)(rng(&seed) % len);
        } else {
            const size_t at = (size_t)(rng(&seed) % (len - 4));

            switch (i % 6) {
            case 1:
                nwb_le32_store(work + at, (uint32_t)rng(&seed));
                break;
            case 3:
                work[at] = 0;
                work[at + 1] = 0;
                break;
            default:
                memcpy(work + at, NWB_TEL_MAGIC, 2);
                break;
            }
        }
        assert_int_equal(tel_write_file(path, work, n), 0);
        want = tel_built_report(work, n, NULL);
        got = file_report(path, &rc, NULL);
        assert_int_equal(rc, 0);
        if (strcmp(got, want) != 0) {
            tel_write_file("stream_file_mismatch.nwbs", work, n);
            fail_msg("damage %u: the file's report differs from the bytes' report", i);
        }
        free(got);
        free(want);
    }
    free(work);
    free(d);
}

static void test_stream_file_bad_zstd_frames_are_clear_errors(void **state)
{
    struct fx *f = *state;
    size_t len;
    uint8_t *d = tel_read_file(tel_data_path("golden_run.nwbs"), &len);
    size_t seg[MAX_SEGMENTS];
    size_t at[MAX_SEGMENTS];
    const size_t nseg = tel_segment_offsets(d, len, seg, MAX_SEGMENTS);
    nwb_tel_file_reader_t *r;
    const uint8_t *piece;
    size_t plen;
    char *want;
    char *got;
    nwb_buf_t z;
    int rc;

    assert_true(nseg >= 3);
    zst_of(d, len, &z, at);
    /* The frames before a broken one are reported, then the error is the report's. */
    want = tel_built_report(d, seg[nseg - 1], NULL);

    /* A torn tail: the last frame cut short. */
    assert_int_equal(tel_write_file(f->path, z.data, z.len - 5), 0);
    assert_int_equal(nwb_tel_file_reader_open(f->path, &r), 0);
    for (size_t i = 0; i + 1 < nseg; i++) {
        assert_int_equal(nwb_tel_file_reader_next(r, &piece, &plen), 1);
        assert_int_equal(plen, seg[i + 1] - seg[i]);
        assert_memory_equal(piece, d + seg[i], plen);
    }
    assert_int_equal(nwb_tel_file_reader_next(r, &piece, &plen), NWB_ECOMPRESS);
    assert_int_equal(nwb_tel_file_reader_offset(r), at[nseg - 1]);
    assert_non_null(strstr(nwb_tel_file_reader_reason(r), "truncated"));
    /* Sticky. */
    assert_int_equal(nwb_tel_file_reader_next(r, &piece, &plen), NWB_ECOMPRESS);
    nwb_tel_file_reader_destroy(r);
    got = file_report(f->path, &rc, NULL);
    assert_int_equal(rc, NWB_ECOMPRESS);
    tel_expect(got, "\"status\":\"NWB_ECOMPRESS\"");
    tel_expect(got, "\"reason\":\"zstd frame is truncated (a torn tail)\"");
    /* Everything before the torn frame is in it, as in a report of those bytes. */
    assert_non_null(strstr(want, "\"frames\":{\"count\":60,"));
    tel_expect(got, "\"frames\":{\"count\":60,");
    free(got);

    /* A corrupt byte inside the middle frame: its checksum (or its blocks) fail. */
    z.data[at[1] + (at[2] - at[1]) / 2] ^= 0x55;
    assert_int_equal(tel_write_file(f->path, z.data, z.len), 0);
    assert_int_equal(nwb_tel_file_reader_open(f->path, &r), 0);
    assert_int_equal(nwb_tel_file_reader_next(r, &piece, &plen), 1);
    assert_int_equal(nwb_tel_file_reader_next(r, &piece, &plen), NWB_ECOMPRESS);
    assert_int_equal(nwb_tel_file_reader_offset(r), at[1]);
    assert_string_equal(nwb_tel_file_reader_reason(r), "corrupt zstd data");
    nwb_tel_file_reader_destroy(r);

    /* Bytes after the frames that are no zstd frame. */
    z.data[at[1] + (at[2] - at[1]) / 2] ^= 0x55;
    assert_int_equal(nwb_buf_append(&z, "garbage!", 8), 0);
    assert_int_equal(tel_write_file(f->path, z.data, z.len), 0);
    got = file_report(f->path, &rc, NULL);
    assert_int_equal(rc, NWB_ECOMPRESS);
    tel_expect(got, "\"status\":\"NWB_ECOMPRESS\"");
    free(got);
    free(want);
    nwb_buf_cleanup(&z);
    free(d);
}

static void test_stream_file_oversized_and_wide_window_frames_are_refused(void **state)
{
    struct fx *f = *state;
    const size_t big = (size_t)NWB_TEL_ZSTD_FRAME_MAX + 1;
    uint8_t *zeros = calloc(1, big);
    nwb_tel_file_reader_t *r;
    const uint8_t *piece;
    size_t plen;
    nwb_buf_t z;

    (void)state;
    assert_non_null(zeros);
    /* One byte above the 64 MiB cap of a frame's output. */
    nwb_buf_init(&z, 128u << 20);
    zframe(&z, zeros, big);
    assert_int_equal(tel_write_file(f->path, z.data, z.len), 0);
    assert_int_equal(nwb_tel_file_reader_open(f->path, &r), 0);
    assert_int_equal(nwb_tel_file_reader_next(r, &piece, &plen), NWB_ETOOBIG);
    assert_int_equal(nwb_tel_file_reader_offset(r), 0);
    nwb_tel_file_reader_destroy(r);
    /* Exactly the cap is fine (a piece the decoder then rejects). */
    nwb_buf_reset(&z);
    zframe(&z, zeros, big - 1);
    assert_int_equal(tel_write_file(f->path, z.data, z.len), 0);
    assert_int_equal(nwb_tel_file_reader_open(f->path, &r), 0);
    assert_int_equal(nwb_tel_file_reader_next(r, &piece, &plen), 1);
    assert_int_equal(plen, big - 1);
    assert_int_equal(nwb_tel_file_reader_next(r, &piece, &plen), 0);
    nwb_tel_file_reader_destroy(r);

    /* A frame that declares a 16 MiB window (no content size: streamed): refused by the
     * 2^23 limit before anything is allocated for it. */
    {
        ZSTD_CCtx *c = ZSTD_createCCtx();
        ZSTD_inBuffer in = {zeros, 4096, 0};
        ZSTD_outBuffer out;

        assert_non_null(c);
        assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 24)));
        nwb_buf_reset(&z);
        assert_int_equal(nwb_buf_reserve(&z, 65536), 0);
        out.dst = z.data;
        out.size = 65536;
        out.pos = 0;
        assert_false(ZSTD_isError(ZSTD_compressStream2(c, &out, &in, ZSTD_e_continue)));
        assert_int_equal(ZSTD_compressStream2(c, &out, &in, ZSTD_e_end), 0);
        z.len = out.pos;
        ZSTD_freeCCtx(c);
    }
    assert_int_equal(tel_write_file(f->path, z.data, z.len), 0);
    assert_int_equal(nwb_tel_file_reader_open(f->path, &r), 0);
    assert_int_equal(nwb_tel_file_reader_next(r, &piece, &plen), NWB_ETOOBIG);
    assert_string_equal(nwb_tel_file_reader_reason(r), "zstd window larger than the cap");
    nwb_tel_file_reader_destroy(r);
    nwb_buf_cleanup(&z);
    free(zeros);
}

static void test_stream_file_only_regular_files_are_opened(void **state)
{
    struct fx *f = *state;
    nwb_tel_file_reader_t *r = NULL;
    char fifo[700];

    snprintf(fifo, sizeof(fifo), "%s/fifo", f->dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    /* Never waited on (nobody writes to it). */
    assert_int_equal(nwb_tel_file_reader_open(fifo, &r), NWB_ENOTREG);
    assert_null(r);
    assert_int_equal(nwb_tel_file_reader_open(f->dir, &r), NWB_ENOTREG);
    assert_int_equal(nwb_tel_file_reader_open("/nonexistent/telemetry.nwbs", &r), -ENOENT);
    nwb_tel_file_reader_destroy(NULL);
}

static void test_stream_file_unzstd_keeps_its_caps(void **state)
{
    static const char text[] = "one upload, one frame";
    nwb_buf_t z;
    uint8_t *out = NULL;
    size_t out_len = 0;
    const char *why = NULL;

    (void)state;
    nwb_buf_init(&z, 1 << 20);
    zframe(&z, text, sizeof(text));
    assert_int_equal(nwb_tel_unzstd(z.data, z.len, sizeof(text), 23, &out, &out_len, &why), 0);
    assert_int_equal(out_len, sizeof(text));
    assert_memory_equal(out, text, sizeof(text));
    nwb_free(out);
    /* One byte above the cap, a cut frame, a second frame, a window limit of 0. */
    assert_int_equal(nwb_tel_unzstd(z.data, z.len, sizeof(text) - 1, 23, &out, &out_len, &why),
                     NWB_ETOOBIG);
    assert_null(out);
    assert_int_equal(nwb_tel_unzstd(z.data, z.len - 1, 1024, 23, &out, &out_len, &why),
                     NWB_ECOMPRESS);
    assert_string_equal(why, "zstd frame is truncated");
    zframe(&z, text, sizeof(text));
    assert_int_equal(nwb_tel_unzstd(z.data, z.len, 1024, 23, &out, &out_len, &why), NWB_ECOMPRESS);
    assert_non_null(strstr(why, "data after the zstd frame"));
    assert_int_equal(nwb_tel_unzstd(z.data, z.len, 1024, 0, &out, &out_len, &why), NWB_ECONFIG);
    assert_int_equal(nwb_tel_unzstd(z.data, 0, 1024, 23, &out, &out_len, &why), NWB_ECOMPRESS);
    nwb_buf_cleanup(&z);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_stream_file_zst_and_raw_report_as_the_bytes),
        T(test_stream_file_damaged_raw_file_reports_as_a_whole_decode),
        T(test_stream_file_bad_zstd_frames_are_clear_errors),
        T(test_stream_file_oversized_and_wide_window_frames_are_refused),
        T(test_stream_file_only_regular_files_are_opened),
        cmocka_unit_test(test_stream_file_unzstd_keeps_its_caps),
    };
#undef T

    return cmocka_run_group_tests_name("telemetry.stream_file", tests, NULL, NULL);
}
