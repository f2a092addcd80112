/* SPDX-License-Identifier: MIT */
/*
 * test_ingest.c - the server's telemetry ingest (server/src/telemetry_ingest.c), called
 * directly on a real run directory: raw and zstd uploads appended and reported atomically,
 * duplicates by seq stored once, malformed uploads answered 400 with status and offset and
 * recorded while earlier data stays intact, decompression caps (output bytes, window size,
 * one frame), unsupported encodings, the run-stream cap, torn tails, and the metrics text.
 * Every answer, success or error, is parsed as strict JSON.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <zstd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/telemetry_report.h"
#include "tel_test_util.h"
#include "telemetry_int.h"

struct fx {
    char dir[64];
    char stream[128];
    char report[128];
    char log[128];
    struct nwb__tel_ingest_metrics m;
    struct nwb__tel_ingest_limits lim;
    char answer[4096]; /* the last answer's JSON body, NUL-terminated */
    int alloc_failing; /* an answer may be missing (nwb_alloc_fail_after is set) */
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    const struct nwb__tel_ingest_limits lim = NWB__TEL_INGEST_LIMITS_INIT;

    snprintf(f->dir, sizeof(f->dir), "/tmp/nwb_tel_ingest_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->stream, sizeof(f->stream), "%s/telemetry.nwbs", f->dir);
    snprintf(f->report, sizeof(f->report), "%s/telemetry.json", f->dir);
    snprintf(f->log, sizeof(f->log), "%s/telemetry.ingest.log", f->dir);
    nwb__tel_ingest_metrics_init(&f->m);
    f->lim = lim;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    DIR *d = opendir(f->dir);
    struct dirent *e;

    while (d != NULL && (e = readdir(d)) != NULL) {
        char p[512];

        if (e->d_name[0] != '.') {
            snprintf(p, sizeof(p), "%s/%s", f->dir, e->d_name);
            unlink(p);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

/* A one-segment upload with @p n text events and a perf frame. */
static void segment(nwb_buf_t *b, uint64_t seq, unsigned n)
{
    nwb_tel_cpu_scope_t s = {77, 10, 20, 1, 0};
    nwb_tel_perf_frame_t pf = {5, 16000000, &s, NULL, 1, 0};

    nwb_buf_init(b, 64u << 20);
    tel_put_header(b, seq);
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(nwb_tel_encode_text(b, i, seq, 0, 1, "hello", 5), 0);
    }
    assert_int_equal(nwb_tel_encode_perf(b, 9, seq, &pf), 0);
}

/* The answer must be one strict JSON object: keep a copy in f->answer, release the body. */
static void answer_check(struct fx *f, struct nwb__tel_ingest_res *res)
{
    const size_t len = res->body.len;
    size_t bad = 0;

    f->answer[0] = '\0';
    if (len == 0) {
        /* Only building the answer itself can fail this way (out of memory). */
        assert_true(f->alloc_failing);
        nwb__tel_ingest_res_cleanup(res);
        return;
    }
    assert_true(len < sizeof(f->answer));
    memcpy(f->answer, res->body.data, len);
    f->answer[len] = '\0';
    if (nwb_test_json_check(f->answer, len, &bad) != 0) {
        fail_msg("answer %d is not valid JSON at byte %zu: %s", res->http_status, bad, f->answer);
    }
    assert_int_equal(f->answer[0], '{');
    nwb__tel_ingest_res_cleanup(res);
}

static void ingest(struct fx *f, const void *body, size_t len, const char *enc, int has_seq,
                   uint64_t seq, struct nwb__tel_ingest_res *res)
{
    struct nwb__tel_ingest_req req;

    memset(&req, 0, sizeof(req));
    req.body = body;
    req.body_len = len;
    req.content_encoding = enc;
    req.program = "prog";
    req.run = "run";
    req.has_seq = has_seq;
    req.seq = seq;
    req.run_dir = f->dir;
    nwb__tel_ingest(&req, &f->lim, &f->m, res);
    answer_check(f, res);
}

static char *read_report(struct fx *f)
{
    size_t len;
    size_t bad = 0;
    char *s = (char *)tel_read_file(f->report, &len);

    assert_non_null(s);
    if (nwb_test_json_check(s, len, &bad) != 0) {
        fail_msg("telemetry.json is not valid JSON at %zu", bad);
    }
    return s;
}

static void expect(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL) {
        fail_msg("missing %s in %s", needle, hay);
    }
}

static void test_ingest_raw_upload_appended_and_reported(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    nwb_buf_t b;
    uint8_t *stored;
    size_t len;
    char *rep;
    char tmp[160];

    segment(&b, 1, 3);
    ingest(f, b.data, b.len, NULL, 1, 1, &res);
    assert_int_equal(res.http_status, 200);
    assert_int_equal(res.seq, 1);
    assert_false(res.duplicate);
    snprintf(tmp, sizeof(tmp), "{\"seq\":1,\"duplicate\":false,\"bytes\":%zu}", b.len);
    assert_string_equal(f->answer, tmp);
    stored = tel_read_file(f->stream, &len);
    assert_non_null(stored);
    assert_int_equal(len, b.len);
    assert_memory_equal(stored, b.data, len);
    rep = read_report(f);
    expect(rep, "\"textLog\":3,");
    expect(rep, "\"perfFrame\":1,");
    expect(rep, "\"uploads\":{\"log\":true,\"accepted\":1,");
    snprintf(tmp, sizeof(tmp), "%s.tmp", f->report);
    assert_int_not_equal(access(tmp, F_OK), 0); /* replaced by rename, nothing left over */
    assert_int_equal(atomic_load(&f->m.accepted), 1);
    assert_int_equal(atomic_load(&f->m.events), 4);
    free(rep);
    free(stored);
    nwb_buf_cleanup(&b);
}

static void test_ingest_zstd_uploads_accumulate(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    nwb_tel_decode_result_t dr;
    uint8_t *stored;
    size_t len;
    char *rep;

    for (uint64_t seq = 1; seq <= 3; seq++) {
        nwb_buf_t b;
        uint8_t z[65536];
        size_t zn;

        segment(&b, seq, (unsigned)(10 * seq));
        zn = ZSTD_compress(z, sizeof(z), b.data, b.len, 3);
        assert_false(ZSTD_isError(zn));
        ingest(f, z, zn, "zstd", 1, seq, &res);
        assert_int_equal(res.http_status, 200);
        nwb_buf_cleanup(&b);
    }
    stored = tel_read_file(f->stream, &len);
    assert_int_equal(nwb_tel_stream_decode(stored, len, 0, NULL, NULL, &dr), 0);
    assert_int_equal(dr.segments, 3);
    assert_int_equal(dr.events, 10 + 20 + 30 + 3);
    rep = read_report(f);
    expect(rep, "\"textLog\":60,");
    expect(rep, "\"segments\":3,");
    free(rep);
    free(stored);
}

static void test_ingest_resent_seq_is_not_counted_twice(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    nwb_buf_t b;
    uint8_t *before;
    uint8_t *after;
    size_t blen;
    size_t alen;
    char *rep;

    segment(&b, 1, 2);
    ingest(f, b.data, b.len, NULL, 1, 7, &res);
    assert_int_equal(res.http_status, 200);
    before = tel_read_file(f->stream, &blen);
    /* The stored header carries the acknowledged seq (X-NWB-Seq), not the writer's. */
    assert_int_equal(nwb_le64_load(before + 24), 7);
    ingest(f, b.data, b.len, NULL, 1, 7, &res);
    assert_int_equal(res.http_status, 200);
    assert_true(res.duplicate);
    assert_string_equal(f->answer, "{\"seq\":7,\"duplicate\":true}");
    after = tel_read_file(f->stream, &alen);
    assert_int_equal(alen, blen);
    assert_memory_equal(after, before, blen);
    rep = read_report(f);
    expect(rep, "\"textLog\":2,");
    expect(rep, "\"accepted\":1,\"duplicates\":1,");
    assert_int_equal(atomic_load(&f->m.duplicates), 1);
    /* Without X-NWB-Seq the segment's own seq is the key. */
    ingest(f, b.data, b.len, NULL, 0, 0, &res);
    assert_int_equal(res.http_status, 200);
    assert_int_equal(res.seq, 1);
    assert_false(res.duplicate);
    free(rep);
    free(before);
    free(after);
    nwb_buf_cleanup(&b);
}

static void test_ingest_malformed_gets_400_and_keeps_earlier_data(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    nwb_buf_t good;
    nwb_buf_t bad;
    uint8_t *before;
    uint8_t *after;
    size_t blen;
    size_t alen;
    char *rep;
    char want[128];

    segment(&good, 1, 2);
    ingest(f, good.data, good.len, NULL, 1, 1, &res);
    assert_int_equal(res.http_status, 200);
    before = tel_read_file(f->stream, &blen);
    /* Cut the second upload inside its perf event. */
    segment(&bad, 2, 2);
    ingest(f, bad.data, bad.len - 5, NULL, 1, 2, &res);
    assert_int_equal(res.http_status, 400);
    assert_int_equal(res.status, NWB_ETRUNCATED);
    assert_int_equal(res.offset, bad.len - (NWB_TEL_EVENT_HEADER + NWB_TEL_PERF_HEADER + 32));
    snprintf(want, sizeof(want), "\"status\":\"NWB_ETRUNCATED\",\"code\":%d,\"offset\":%llu",
             NWB_ETRUNCATED, (unsigned long long)res.offset);
    expect(f->answer, want);
    /* A bad level byte: NWB_EPROTO at that byte. */
    bad.data[NWB_TEL_HEADER_FIXED + 23 + 24] = 7;
    ingest(f, bad.data, bad.len, NULL, 1, 3, &res);
    assert_int_equal(res.http_status, 400);
    assert_int_equal(res.status, NWB_EPROTO);
    assert_int_equal(res.offset, NWB_TEL_HEADER_FIXED + 23 + 24);
    /* Not a telemetry stream at all. */
    ingest(f, "hello world", 11, NULL, 1, 4, &res);
    assert_int_equal(res.http_status, 400);
    assert_int_equal(res.status, NWB_EMAGIC);
    after = tel_read_file(f->stream, &alen);
    assert_int_equal(alen, blen);
    assert_memory_equal(after, before, blen);
    rep = read_report(f);
    expect(rep, "\"decode\":{\"bytes\":");
    expect(rep, "\"status\":\"ok\"");
    expect(rep, "\"accepted\":1,\"duplicates\":0,\"rejected\":3,");
    snprintf(want, sizeof(want), "{\"seq\":2,\"status\":\"NWB_ETRUNCATED\",\"offset\":%llu,",
             (unsigned long long)(bad.len - (NWB_TEL_EVENT_HEADER + NWB_TEL_PERF_HEADER + 32)));
    expect(rep, want);
    expect(rep, "{\"seq\":4,\"status\":\"NWB_EMAGIC\",\"offset\":0,");
    assert_int_equal(atomic_load(&f->m.rejected), 3);
    free(rep);
    free(before);
    free(after);
    nwb_buf_cleanup(&good);
    nwb_buf_cleanup(&bad);
}

static void test_ingest_decompression_output_cap(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    const size_t big = 4u << 20;
    uint8_t *zeros = calloc(1, big);
    size_t zcap = ZSTD_compressBound(big);
    uint8_t *z = malloc(zcap);
    size_t zn;

    /* 4 MiB of zeros compress to a few hundred bytes: a bomb for a 1 MiB cap. */
    zn = ZSTD_compress(z, zcap, zeros, big, 19);
    assert_false(ZSTD_isError(zn));
    assert_true(zn < 4096);
    f->lim.decompressed_max = 1u << 20;
    ingest(f, z, zn, "zstd", 1, 1, &res);
    assert_int_equal(res.http_status, 413);
    assert_int_equal(res.status, NWB_ETOOBIG);
    expect(f->answer, "{\"error\":\"telemetry upload too large\",\"status\":\"NWB_ETOOBIG\"");
    expect(f->answer, "\"reason\":\"decompressed upload exceeds the cap\"}");
    assert_int_not_equal(access(f->stream, F_OK), 0); /* nothing stored */
    assert_int_equal(atomic_load(&f->m.too_large), 1);
    /* The same bytes uncompressed are refused by the same cap. */
    ingest(f, zeros, (1u << 20) + 1, NULL, 1, 2, &res);
    assert_int_equal(res.http_status, 413);
    free(zeros);
    free(z);
}

static void test_ingest_zstd_window_and_frame_rules(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    nwb_buf_t b;
    ZSTD_CCtx *c = ZSTD_createCCtx();
    uint8_t z[65536];
    uint8_t two[131072];
    ZSTD_inBuffer in;
    ZSTD_outBuffer out;
    size_t zn;

    segment(&b, 1, 4);
    /* Streamed without a pledged size: no content size in the frame, and a declared window
     * of 2^25, above the 2^23 cap. */
    ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 25);
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
    in.src = b.data;
    in.size = b.len;
    in.pos = 0;
    out.dst = z;
    out.size = sizeof(z);
    out.pos = 0;
    /* Feeding with e_continue first keeps zstd from learning the size and shrinking the
     * window to it. */
    assert_false(ZSTD_isError(ZSTD_compressStream2(c, &out, &in, ZSTD_e_continue)));
    assert_int_equal(ZSTD_compressStream2(c, &out, &in, ZSTD_e_end), 0);
    assert_true(ZSTD_getFrameContentSize(z, out.pos) == ZSTD_CONTENTSIZE_UNKNOWN);
    ingest(f, z, out.pos, "zstd", 1, 1, &res);
    assert_int_equal(res.http_status, 413);
    assert_int_equal(res.status, NWB_ETOOBIG);
    /* With the window inside the cap and still no claimed size, it is accepted. */
    ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 20);
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
    in.pos = 0;
    out.pos = 0;
    assert_false(ZSTD_isError(ZSTD_compressStream2(c, &out, &in, ZSTD_e_continue)));
    assert_int_equal(ZSTD_compressStream2(c, &out, &in, ZSTD_e_end), 0);
    ingest(f, z, out.pos, "ZSTD", 1, 2, &res);
    assert_int_equal(res.http_status, 200);
    /* Two frames, or garbage after the frame: one frame per upload. */
    zn = ZSTD_compress(z, sizeof(z), b.data, b.len, 1);
    memcpy(two, z, zn);
    memcpy(two + zn, z, zn);
    ingest(f, two, 2 * zn, "zstd", 1, 3, &res);
    assert_int_equal(res.http_status, 400);
    assert_int_equal(res.status, NWB_ECOMPRESS);
    two[zn] = 'x';
    ingest(f, two, zn + 1, "zstd", 1, 4, &res);
    assert_int_equal(res.http_status, 400);
    /* A truncated frame, and corrupt data. */
    ingest(f, z, zn - 3, "zstd", 1, 5, &res);
    assert_int_equal(res.http_status, 400);
    assert_int_equal(res.status, NWB_ECOMPRESS);
    ingest(f, "\x28\xb5\x2f\xfd garbage", 12, "zstd", 1, 6, &res);
    assert_int_equal(res.http_status, 400);
    ZSTD_freeCCtx(c);
    nwb_buf_cleanup(&b);
}

static void test_ingest_unsupported_encoding_is_415(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    nwb_buf_t b;

    segment(&b, 1, 1);
    ingest(f, b.data, b.len, "gzip", 1, 1, &res);
    assert_int_equal(res.http_status, 415);
    assert_string_equal(f->answer, "{\"error\":\"unsupported Content-Encoding\","
                                   "\"status\":\"NWB_EPROTO\",\"code\":-20001,\"offset\":0,"
                                   "\"reason\":\"Content-Encoding \\\"gzip\\\": use zstd or "
                                   "identity\"}");
    /* The client's text is quoted back escaped: quotes, backslashes, control bytes, and
     * bytes that are not UTF-8 (U+FFFD) cannot break the answer (answer_check parses it). */
    ingest(f, b.data, b.len, "g\"z}\\\x01\xff", 1, 1, &res);
    assert_int_equal(res.http_status, 415);
    expect(f->answer, "Content-Encoding \\\"g\\\"z}\\\\\\u0001\xef\xbf\xbd\\\": use");
    ingest(f, b.data, b.len, "identity", 1, 1, &res);
    assert_int_equal(res.http_status, 200);
    nwb_buf_cleanup(&b);
}

static void test_ingest_answer_cleanup_is_null_safe_and_idempotent(void **state)
{
    struct nwb__tel_ingest_res res;

    (void)state;
    nwb__tel_ingest_res_cleanup(NULL);
    nwb__tel_ingest_res_init(&res);
    assert_int_equal(res.http_status, 500);
    assert_int_equal(res.body.len, 0);
    nwb__tel_ingest_res_error(&res, 503, -ENOMEM, "what \"quoted\"", NULL);
    assert_int_equal(res.http_status, 503);
    assert_int_equal(nwb_test_json_check((const char *)res.body.data, res.body.len, NULL), 0);
    nwb__tel_ingest_res_cleanup(&res);
    assert_null(res.body.data);
    nwb__tel_ingest_res_cleanup(&res);
}

static void test_ingest_run_stream_cap_refuses_and_keeps_data(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    nwb_buf_t b;
    size_t len;
    uint8_t *stored;

    segment(&b, 1, 10);
    f->lim.run_stream_max = b.len * 2; /* exactly two uploads fit */
    ingest(f, b.data, b.len, NULL, 1, 1, &res);
    assert_int_equal(res.http_status, 200);
    ingest(f, b.data, b.len, NULL, 1, 2, &res);
    assert_int_equal(res.http_status, 200);
    ingest(f, b.data, b.len, NULL, 1, 3, &res);
    assert_int_equal(res.http_status, 413);
    stored = tel_read_file(f->stream, &len);
    assert_int_equal(len, 2 * b.len);
    free(stored);
    nwb_buf_cleanup(&b);
}

static void test_ingest_torn_tail_is_cut_before_append(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    nwb_tel_decode_result_t dr;
    nwb_buf_t b;
    size_t len;
    uint8_t *stored;
    FILE *fp;

    segment(&b, 1, 2);
    ingest(f, b.data, b.len, NULL, 1, 1, &res);
    assert_int_equal(res.http_status, 200);
    /* A crash mid-append left half a segment behind. */
    fp = fopen(f->stream, "ab");
    assert_non_null(fp);
    fwrite(b.data, 1, b.len / 2, fp);
    fclose(fp);
    ingest(f, b.data, b.len, NULL, 1, 2, &res);
    assert_int_equal(res.http_status, 200);
    stored = tel_read_file(f->stream, &len);
    assert_int_equal(len, 2 * b.len);
    assert_int_equal(nwb_tel_stream_decode(stored, len, 0, NULL, NULL, &dr), 0);
    assert_int_equal(dr.segments, 2);
    free(stored);
    nwb_buf_cleanup(&b);
}

static void test_ingest_metrics_text_lists_counters(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    nwb_buf_t b;
    char text[2048];
    char tiny[16];

    segment(&b, 1, 1);
    ingest(f, b.data, b.len, NULL, 1, 1, &res);
    ingest(f, b.data, b.len, NULL, 1, 1, &res);
    ingest(f, "x", 1, NULL, 1, 2, &res);
    ingest(f, "x", 1, "br", 1, 3, &res);
    assert_true(nwb__tel_ingest_metrics_format(&f->m, text, sizeof(text)) > 0);
    expect(text, "nwb_telemetry_uploads_total 4\n");
    expect(text, "nwb_telemetry_uploads_accepted_total 1\n");
    expect(text, "nwb_telemetry_uploads_duplicate_total 1\n");
    expect(text, "nwb_telemetry_uploads_rejected_total{reason=\"malformed\"} 1\n");
    expect(text, "nwb_telemetry_uploads_rejected_total{reason=\"unsupported_encoding\"} 1\n");
    assert_int_equal(nwb__tel_ingest_metrics_format(&f->m, tiny, sizeof(tiny)), sizeof(tiny) - 1);
    assert_int_equal(tiny[sizeof(tiny) - 1], '\0');
    /* No metrics object at all is fine too. */
    {
        struct nwb__tel_ingest_req req;

        memset(&req, 0, sizeof(req));
        req.body = b.data;
        req.body_len = b.len;
        req.has_seq = 1;
        req.seq = 9;
        req.run_dir = f->dir;
        nwb__tel_ingest(&req, NULL, NULL, &res);
        assert_int_equal(res.http_status, 200);
        answer_check(f, &res);
    }
    nwb_buf_cleanup(&b);
}

static void test_ingest_allocation_failures_never_corrupt_the_run(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    nwb_tel_decode_result_t dr;
    unsigned accepted = 0;
    long n;

    /* Fail the n-th allocation inside each upload: the answer is 200 or 500 (or 413 for a
     * buffer cap), and the stored stream always decodes with one segment per 200. */
    for (n = 0; n < 400 && accepted < 3; n++) {
        nwb_buf_t b;
        uint8_t z[65536];
        size_t zn;

        segment(&b, (uint64_t)n + 1, 5);
        zn = ZSTD_compress(z, sizeof(z), b.data, b.len, 3);
        nwb_alloc_fail_after(n);
        f->alloc_failing = 1;
        ingest(f, z, zn, "zstd", 1, (uint64_t)n + 1, &res);
        f->alloc_failing = 0;
        nwb_alloc_fail_after(-1);
        assert_true(res.http_status == 200 || res.http_status == 500);
        accepted += res.http_status == 200;
        nwb_buf_cleanup(&b);
        {
            size_t len = 0;
            uint8_t *stored = tel_read_file(f->stream, &len);

            if (stored != NULL) {
                assert_int_equal(nwb_tel_stream_decode(stored, len, 0, NULL, NULL, &dr), 0);
                free(stored);
            }
        }
    }
    assert_true(accepted >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ingest_raw_upload_appended_and_reported, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ingest_zstd_uploads_accumulate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ingest_resent_seq_is_not_counted_twice, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ingest_malformed_gets_400_and_keeps_earlier_data,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_ingest_decompression_output_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ingest_zstd_window_and_frame_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ingest_unsupported_encoding_is_415, setup, teardown),
        cmocka_unit_test(test_ingest_answer_cleanup_is_null_safe_and_idempotent),
        cmocka_unit_test_setup_teardown(test_ingest_run_stream_cap_refuses_and_keeps_data, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ingest_torn_tail_is_cut_before_append, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ingest_metrics_text_lists_counters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ingest_allocation_failures_never_corrupt_the_run,
                                        setup, teardown),
    };

    return cmocka_run_group_tests_name("telemetry.ingest", tests, NULL, NULL);
}
