/* SPDX-License-Identifier: MIT */
/*
 * test_tel_ingest.c - the server's telemetry ingest, storage and report-state cache
 * (server/src/telemetry_ingest.c, tel_store.c, tel_cache.c), called directly on a real run
 * directory: zstd uploads stored as received and identity ones compressed, duplicates told by
 * the index of acknowledged seqs, malformed uploads answered 400 with status and offset while
 * the stored stream and the report's data stay as they were, decompression caps, unsupported
 * encodings, the run's stream limit (reported, not stored), the crash rules of
 * telemetry.nwbs.zst and telemetry.index, an older server's telemetry.nwbs converted once, the
 * state rebuilt once per cache miss, and telemetry.json byte for byte what the offline report
 * of the stored stream gives, also after a restart. Every answer is parsed as strict JSON.
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
#include "tel_run_int.h"

struct fx {
    char dir[64];
    char stream[128];
    char index[128];
    char legacy[128];
    char report[128];
    char log[128];
    struct nwb__tel_ingest_metrics m;
    struct nwb__tel_ingest_limits lim;
    struct nwb__tel_cache *cache;
    char answer[4096]; /* the last answer's JSON body, NUL-terminated */
    int alloc_failing; /* an answer may be missing (nwb_alloc_fail_after is set) */
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    const struct nwb__tel_ingest_limits lim = NWB__TEL_INGEST_LIMITS_INIT;

    snprintf(f->dir, sizeof(f->dir), "/tmp/nwb_tel_ingest_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->stream, sizeof(f->stream), "%s/telemetry.nwbs.zst", f->dir);
    snprintf(f->index, sizeof(f->index), "%s/telemetry.index", f->dir);
    snprintf(f->legacy, sizeof(f->legacy), "%s/telemetry.nwbs", f->dir);
    snprintf(f->report, sizeof(f->report), "%s/telemetry.json", f->dir);
    snprintf(f->log, sizeof(f->log), "%s/telemetry.ingest.log", f->dir);
    nwb__tel_ingest_metrics_init(&f->m);
    f->lim = lim;
    assert_int_equal(nwb__tel_cache_create(8, 64u << 20, &f->m, &f->cache), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    DIR *d;
    struct dirent *e;

    nwb__tel_cache_destroy(f->cache);
    d = opendir(f->dir);
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
    nwb__tel_ingest(f->cache, &req, &f->lim, &f->m, res);
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

/* The stored stream decompressed: every zstd frame of telemetry.nwbs.zst, in order
 * (malloc'd; NULL when there is no file). */
static uint8_t *read_stored(struct fx *f, size_t *len)
{
    nwb_tel_file_reader_t *r;
    nwb_buf_t b;
    const uint8_t *data;
    size_t n;
    int rc;
    uint8_t *out;

    *len = 0;
    if (nwb_tel_file_reader_open(f->stream, &r) != 0) {
        return NULL;
    }
    nwb_buf_init(&b, 256u << 20);
    while ((rc = nwb_tel_file_reader_next(r, &data, &n)) == 1) {
        assert_true(nwb_tel_file_reader_format(r) == NWB_TEL_FILE_ZSTD);
        assert_int_equal(nwb_buf_append(&b, data, n), 0);
    }
    assert_int_equal(rc, 0);
    nwb_tel_file_reader_destroy(r);
    out = malloc(b.len + 1);
    assert_non_null(out);
    if (b.len > 0) {
        memcpy(out, b.data, b.len);
    }
    *len = b.len;
    nwb_buf_cleanup(&b);
    return out;
}

static uint64_t size_of(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void expect_stored_bytes(struct fx *f, uint64_t n)
{
    assert_int_equal(size_of(f->stream), n);
}

/* Records in telemetry.index (64-byte header, 64-byte records). */
static uint64_t index_records(struct fx *f)
{
    const uint64_t n = size_of(f->index);

    assert_true(n >= 64 && (n - 64) % 64 == 0);
    return (n - 64) / 64;
}

/* What `nwb-telemetry report` writes for the stored stream with the ingest log beside it. */
static char *offline_report(struct fx *f)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    nwb_tel_ingest_summary_t ingest;
    nwb_tel_report_state_t *s;
    nwb_buf_t json;
    char *out;

    assert_int_equal(nwb_tel_report_state_create(&s), 0);
    if (size_of(f->stream) > 0) {
        nwb_tel_file_reader_t *r;

        assert_int_equal(nwb_tel_file_reader_open(f->stream, &r), 0);
        assert_int_equal(nwb_tel_report_state_feed_reader(s, r), 0);
        nwb_tel_file_reader_destroy(r);
    }
    assert_int_equal(nwb_tel_ingest_log_load(f->log, &ingest), 0);
    ro.ingest = &ingest;
    nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
    assert_int_equal(nwb_tel_report_state_write(s, &ro, &json), 0);
    nwb_tel_report_state_destroy(s);
    out = malloc(json.len + 1);
    assert_non_null(out);
    memcpy(out, json.data, json.len);
    out[json.len] = '\0';
    nwb_buf_cleanup(&json);
    return out;
}

/* telemetry.json is, byte for byte, the offline report of what is stored. */
static void expect_report_equals_offline(struct fx *f)
{
    char *live = read_report(f);
    char *offline = offline_report(f);

    if (strcmp(live, offline) != 0) {
        fail_msg("telemetry.json differs from the offline report:\n%.1500s\n---\n%.1500s", live,
                 offline);
    }
    free(live);
    free(offline);
}

/* A server restart: the cache (every report state in memory) is gone. */
static void restart(struct fx *f)
{
    nwb__tel_cache_destroy(f->cache);
    assert_int_equal(nwb__tel_cache_create(8, 64u << 20, &f->m, &f->cache), 0);
}

static size_t zstd_of(const nwb_buf_t *b, uint8_t *z, size_t cap)
{
    const size_t zn = ZSTD_compress(z, cap, b->data, b->len, 3);

    assert_false(ZSTD_isError(zn));
    return zn;
}

static int append_file(const char *path, const void *p, size_t n)
{
    FILE *fp = fopen(path, "ab");
    int ok;

    assert_non_null(fp);
    ok = fwrite(p, 1, n, fp) == n;
    return fclose(fp) == 0 && ok ? 0 : -1;
}

static void test_ingest_identity_upload_is_stored_compressed_and_reported(void **state)
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
    assert_true(res.stored);
    snprintf(tmp, sizeof(tmp), "{\"seq\":1,\"duplicate\":false,\"bytes\":%zu,\"stored\":true}",
             b.len);
    assert_string_equal(f->answer, tmp);
    /* One zstd frame, decompressing to exactly the upload. */
    stored = read_stored(f, &len);
    assert_non_null(stored);
    assert_int_equal(len, b.len);
    assert_memory_equal(stored, b.data, len);
    assert_int_equal(index_records(f), 1);
    assert_int_not_equal(access(f->legacy, F_OK), 0);
    rep = read_report(f);
    expect(rep, "\"textLog\":3,");
    expect(rep, "\"perfFrame\":1,");
    expect(rep, "\"uploads\":{\"log\":true,\"accepted\":1,");
    snprintf(tmp, sizeof(tmp), "%s.tmp", f->report);
    assert_int_not_equal(access(tmp, F_OK), 0); /* replaced by rename, nothing left over */
    assert_int_equal(atomic_load(&f->m.accepted), 1);
    assert_int_equal(atomic_load(&f->m.events), 4);
    assert_int_equal(atomic_load(&f->m.bytes_stored), size_of(f->stream));
    expect_report_equals_offline(f);
    free(rep);
    free(stored);
    nwb_buf_cleanup(&b);
}

static void test_ingest_zstd_uploads_are_stored_as_received(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    nwb_tel_decode_result_t dr;
    nwb_buf_t bodies;
    uint8_t *stored;
    size_t len;
    char *rep;

    nwb_buf_init(&bodies, 1u << 20);
    for (uint64_t seq = 1; seq <= 3; seq++) {
        nwb_buf_t b;
        uint8_t z[65536];
        size_t zn;

        segment(&b, seq, (unsigned)(10 * seq));
        zn = zstd_of(&b, z, sizeof(z));
        ingest(f, z, zn, "zstd", 1, seq, &res);
        assert_int_equal(res.http_status, 200);
        assert_int_equal(nwb_buf_append(&bodies, z, zn), 0);
        nwb_buf_cleanup(&b);
    }
    /* The file is the three bodies back to back, byte for byte. */
    stored = tel_read_file(f->stream, &len);
    assert_int_equal(len, bodies.len);
    assert_memory_equal(stored, bodies.data, len);
    free(stored);
    stored = read_stored(f, &len);
    assert_int_equal(nwb_tel_stream_decode(stored, len, 0, NULL, NULL, &dr), 0);
    assert_int_equal(dr.segments, 3);
    assert_int_equal(dr.events, 10 + 20 + 30 + 3);
    assert_int_equal(index_records(f), 3);
    rep = read_report(f);
    expect(rep, "\"textLog\":60,");
    expect(rep, "\"segments\":3,");
    expect_report_equals_offline(f);
    free(rep);
    free(stored);
    nwb_buf_cleanup(&bodies);
}

static void test_ingest_resent_seq_is_told_by_the_index(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    nwb_buf_t b;
    uint8_t *before;
    uint8_t *after;
    uint8_t z[65536];
    size_t zn;
    size_t blen;
    size_t alen;
    char *rep;

    segment(&b, 1, 2);
    ingest(f, b.data, b.len, NULL, 1, 7, &res);
    assert_int_equal(res.http_status, 200);
    before = read_stored(f, &blen);
    /* The stored header carries the acknowledged seq (X-NWB-Seq), not the writer's. */
    assert_int_equal(nwb_le64_load(before + 24), 7);
    ingest(f, b.data, b.len, NULL, 1, 7, &res);
    assert_int_equal(res.http_status, 200);
    assert_true(res.duplicate);
    assert_string_equal(f->answer, "{\"seq\":7,\"duplicate\":true}");
    /* Known from the index: a resend is not even decompressed or decoded. */
    ingest(f, "not a stream", 12, "zstd", 1, 7, &res);
    assert_int_equal(res.http_status, 200);
    assert_true(res.duplicate);
    after = read_stored(f, &alen);
    assert_int_equal(alen, blen);
    assert_memory_equal(after, before, blen);
    assert_int_equal(index_records(f), 1);
    rep = read_report(f);
    expect(rep, "\"textLog\":2,");
    expect(rep, "\"accepted\":1,\"duplicates\":2,");
    assert_int_equal(atomic_load(&f->m.duplicates), 2);
    /* Without X-NWB-Seq the segment's own seq is the key: 1 is new. */
    ingest(f, b.data, b.len, NULL, 0, 0, &res);
    assert_int_equal(res.http_status, 200);
    assert_int_equal(res.seq, 1);
    assert_false(res.duplicate);
    ingest(f, b.data, b.len, NULL, 0, 0, &res);
    assert_true(res.duplicate);
    /* A zstd upload whose header says otherwise is stored with the seq set (recompressed). */
    zn = zstd_of(&b, z, sizeof(z));
    ingest(f, z, zn, "zstd", 1, 9, &res);
    assert_int_equal(res.http_status, 200);
    free(after);
    after = read_stored(f, &alen);
    assert_int_equal(alen, 3 * b.len);
    assert_int_equal(nwb_le64_load(after + 2 * b.len + 24), 9);
    assert_memory_equal(after + 2 * b.len + 32, b.data + 32, b.len - 32);
    expect_report_equals_offline(f);
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
    before = read_stored(f, &blen);
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
    after = read_stored(f, &alen);
    assert_int_equal(alen, blen);
    assert_memory_equal(after, before, blen);
    assert_int_equal(index_records(f), 1);
    rep = read_report(f);
    expect(rep, "\"decode\":{\"bytes\":");
    expect(rep, "\"status\":\"ok\"");
    expect(rep, "\"textLog\":2,");
    expect(rep, "\"accepted\":1,\"duplicates\":0,");
    expect(rep, "\"rejected\":3,");
    snprintf(want, sizeof(want), "{\"seq\":2,\"status\":\"NWB_ETRUNCATED\",\"offset\":%llu,",
             (unsigned long long)(bad.len - (NWB_TEL_EVENT_HEADER + NWB_TEL_PERF_HEADER + 32)));
    expect(rep, want);
    expect(rep, "{\"seq\":4,\"status\":\"NWB_EMAGIC\",\"offset\":0,");
    assert_int_equal(atomic_load(&f->m.rejected), 3);
    /* A refused seq is not acknowledged: sent again whole, it is stored. */
    nwb_buf_cleanup(&bad);
    segment(&bad, 2, 2);
    ingest(f, bad.data, bad.len, NULL, 1, 2, &res);
    assert_int_equal(res.http_status, 200);
    assert_false(res.duplicate);
    expect_report_equals_offline(f);
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
    expect(f->answer, "\"reason\":\"decompressed frame exceeds the cap\"}");
    expect_stored_bytes(f, 0); /* nothing stored */
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

static void test_ingest_run_stream_limit_reports_and_stops_storing(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    struct nwb__tel_run *run;
    const struct nwb__tel_rec *rec;
    uint8_t z[3][65536];
    size_t zn[3];
    uint32_t from = 0;
    const char *why = NULL;
    uint8_t *raw;
    size_t len;
    char *rep;

    for (int i = 0; i < 3; i++) {
        nwb_buf_t b;

        segment(&b, (uint64_t)i + 1, 10);
        zn[i] = zstd_of(&b, z[i], sizeof(z[i]));
        nwb_buf_cleanup(&b);
    }
    /* Exactly two uploads fit: the limit is inclusive. */
    f->lim.run_stream_max = zn[0] + zn[1];
    ingest(f, z[0], zn[0], "zstd", 1, 1, &res);
    assert_true(res.http_status == 200 && res.stored);
    ingest(f, z[1], zn[1], "zstd", 1, 2, &res);
    assert_true(res.http_status == 200 && res.stored);
    /* One byte past it: acknowledged and reported, not stored. */
    ingest(f, z[2], zn[2], "zstd", 1, 3, &res);
    assert_int_equal(res.http_status, 200);
    assert_false(res.stored);
    expect(f->answer, "\"stored\":false}");
    expect_stored_bytes(f, zn[0] + zn[1]);
    assert_int_equal(index_records(f), 3);
    assert_int_equal(atomic_load(&f->m.unstored), 1);
    rep = read_report(f);
    expect(rep, "\"textLog\":30,"); /* the report keeps updating */
    expect(rep, "\"unstored\":1");
    free(rep);
    /* Still acknowledged: a resend is a duplicate. */
    ingest(f, z[2], zn[2], "zstd", 1, 3, &res);
    assert_true(res.duplicate);
    /* Its frame is known and said to be not stored. */
    assert_int_equal(nwb__tel_cache_acquire(f->cache, f->dir, 0, &run), 0);
    rec = nwb__tel_store_find_frame(run->store, 3, &from);
    assert_non_null(rec);
    assert_int_equal(rec->seq, 3);
    assert_int_equal(rec->flags & NWB__TEL_REC_STORED, 0);
    assert_int_equal(nwb__tel_store_read(run->store, rec, &f->lim, &raw, &len, &why), -ENOENT);
    nwb__tel_cache_release(f->cache, run);
    /* After a restart the report is rebuilt from what is stored; the index still holds the
     * unstored upload (a resend stays a duplicate, the report still counts it). */
    restart(f);
    ingest(f, z[2], zn[2], "zstd", 1, 3, &res);
    assert_true(res.duplicate);
    rep = read_report(f);
    expect(rep, "\"textLog\":20,");
    expect(rep, "\"unstored\":1");
    free(rep);
    expect_report_equals_offline(f);
}

static void test_ingest_run_upload_cap_is_413_at_the_edge(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    nwb_buf_t b;

    f->lim.run_uploads_max = 3;
    for (uint64_t seq = 1; seq <= 4; seq++) {
        segment(&b, seq, 1);
        ingest(f, b.data, b.len, NULL, 1, seq, &res);
        nwb_buf_cleanup(&b);
        assert_int_equal(res.http_status, seq <= 3 ? 200 : 413);
    }
    expect(f->answer, "{\"error\":\"run telemetry index full\",\"status\":\"NWB_ETOOBIG\"");
    assert_int_equal(index_records(f), 3);
    /* What the index holds is still known. */
    segment(&b, 3, 1);
    ingest(f, b.data, b.len, NULL, 1, 3, &res);
    assert_true(res.duplicate);
    nwb_buf_cleanup(&b);
    expect_report_equals_offline(f);
}

static void test_ingest_crash_rules_on_reopen(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    uint8_t z[6][65536];
    size_t zn[6];
    uint64_t size;
    static const uint8_t junk[100] = {0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3};

    for (int i = 0; i < 6; i++) {
        nwb_buf_t b;

        segment(&b, (uint64_t)i + 1, 3 + (unsigned)i);
        zn[i] = zstd_of(&b, z[i], sizeof(z[i]));
        nwb_buf_cleanup(&b);
    }
    ingest(f, z[0], zn[0], "zstd", 1, 1, &res);
    ingest(f, z[1], zn[1], "zstd", 1, 2, &res);
    assert_int_equal(res.http_status, 200);

    /* Killed between the frame's write and its record's: the bytes are not in the index, so
     * the next open cuts them back (the upload was never acknowledged). */
    restart(f);
    assert_int_equal(append_file(f->stream, junk, sizeof(junk)), 0);
    ingest(f, z[2], zn[2], "zstd", 1, 3, &res);
    assert_int_equal(res.http_status, 200);
    expect_stored_bytes(f, zn[0] + zn[1] + zn[2]);
    assert_int_equal(index_records(f), 3);
    expect_report_equals_offline(f);

    /* Killed inside a record's write: the partial record is dropped. */
    restart(f);
    assert_int_equal(append_file(f->index, junk, 30), 0);
    ingest(f, z[3], zn[3], "zstd", 1, 4, &res);
    assert_int_equal(res.http_status, 200);
    assert_int_equal(index_records(f), 4);
    expect_report_equals_offline(f);

    /* A record whose bytes are not (wholly) in the stream is dropped, and with it its seq:
     * the upload can be stored again. */
    restart(f);
    size = size_of(f->stream);
    assert_int_equal(truncate(f->stream, (off_t)(size - 5)), 0);
    ingest(f, z[4], zn[4], "zstd", 1, 5, &res);
    assert_int_equal(res.http_status, 200);
    assert_int_equal(index_records(f), 4);
    expect_stored_bytes(f, zn[0] + zn[1] + zn[2] + zn[4]);
    ingest(f, z[3], zn[3], "zstd", 1, 4, &res);
    assert_int_equal(res.http_status, 200);
    assert_false(res.duplicate);
    expect_report_equals_offline(f);

    /* A damaged record ends the index there; the stream is cut back to match. */
    restart(f);
    {
        FILE *fp = fopen(f->index, "r+b");

        assert_non_null(fp);
        assert_int_equal(fseek(fp, 64 + 4 * 64 + 3, SEEK_SET), 0);
        assert_int_equal(fputc(0x5a, fp), 0x5a);
        assert_int_equal(fclose(fp), 0);
    }
    ingest(f, z[5], zn[5], "zstd", 1, 6, &res);
    assert_int_equal(res.http_status, 200);
    assert_int_equal(index_records(f), 5);
    expect_stored_bytes(f, zn[0] + zn[1] + zn[2] + zn[4] + zn[5]);
    expect_report_equals_offline(f);

    /* No index at all: derived from the stream, every seq still known. */
    restart(f);
    assert_int_equal(unlink(f->index), 0);
    ingest(f, z[0], zn[0], "zstd", 1, 1, &res);
    assert_true(res.duplicate);
    assert_int_equal(index_records(f), 5);
    ingest(f, z[5], zn[5], "zstd", 1, 6, &res);
    assert_true(res.duplicate);
    expect_report_equals_offline(f);
}

static void test_ingest_older_servers_stream_is_converted_once(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    nwb_buf_t s1, s2, s3, s4, all;
    uint8_t *stored;
    uint8_t z[65536];
    size_t zn;
    size_t len;

    segment(&s1, 1, 2);
    segment(&s2, 2, 3);
    segment(&s3, 3, 4);
    segment(&s4, 4, 5);
    nwb_buf_init(&all, 1u << 20);
    /* What an older server left: raw segments and a torn last one. */
    assert_int_equal(nwb_buf_append(&all, s1.data, s1.len), 0);
    assert_int_equal(nwb_buf_append(&all, s2.data, s2.len), 0);
    assert_int_equal(nwb_buf_append(&all, s3.data, s3.len / 2), 0);
    assert_int_equal(tel_write_file(f->legacy, all.data, all.len), 0);
    zn = zstd_of(&s4, z, sizeof(z));
    ingest(f, z, zn, "zstd", 1, 4, &res);
    assert_int_equal(res.http_status, 200);
    assert_int_not_equal(access(f->legacy, F_OK), 0); /* converted, then removed */
    assert_int_equal(index_records(f), 3);
    stored = read_stored(f, &len);
    assert_int_equal(len, s1.len + s2.len + s4.len);
    assert_memory_equal(stored, s1.data, s1.len);
    assert_memory_equal(stored + s1.len, s2.data, s2.len);
    assert_memory_equal(stored + s1.len + s2.len, s4.data, s4.len);
    free(stored);
    /* Its seqs are acknowledged; the torn one is not. */
    ingest(f, s2.data, s2.len, NULL, 1, 2, &res);
    assert_true(res.duplicate);
    ingest(f, s3.data, s3.len, NULL, 1, 3, &res);
    assert_false(res.duplicate);
    assert_int_equal(atomic_load(&f->m.rebuilds), 1);
    expect_report_equals_offline(f);
    restart(f);
    ingest(f, s1.data, s1.len, NULL, 1, 1, &res);
    assert_true(res.duplicate);
    expect_report_equals_offline(f);
    nwb_buf_cleanup(&s1);
    nwb_buf_cleanup(&s2);
    nwb_buf_cleanup(&s3);
    nwb_buf_cleanup(&s4);
    nwb_buf_cleanup(&all);
}

static void test_ingest_state_is_rebuilt_once_per_cache_miss(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    char other[128];
    nwb_buf_t b;

    /* Many uploads, one rebuild (the first: nothing in memory yet). */
    for (uint64_t seq = 1; seq <= 20; seq++) {
        segment(&b, seq, 2);
        ingest(f, b.data, b.len, NULL, 1, seq, &res);
        assert_int_equal(res.http_status, 200);
        nwb_buf_cleanup(&b);
    }
    assert_int_equal(atomic_load(&f->m.rebuilds), 1);
    assert_int_equal(atomic_load(&f->m.cached_runs), 1);
    assert_true(atomic_load(&f->m.cached_bytes) > 0);

    /* One run cached: switching runs evicts and rebuilds, once per switch. */
    nwb__tel_cache_destroy(f->cache);
    assert_int_equal(nwb__tel_cache_create(1, 64u << 20, &f->m, &f->cache), 0);
    snprintf(other, sizeof(other), "%s/other", f->dir);
    assert_int_equal(mkdir(other, 0755), 0);
    segment(&b, 21, 2);
    ingest(f, b.data, b.len, NULL, 1, 21, &res); /* rebuild 2 */
    ingest(f, b.data, b.len, NULL, 1, 22, &res);
    {
        struct nwb__tel_ingest_req req;

        memset(&req, 0, sizeof(req));
        req.body = b.data;
        req.body_len = b.len;
        req.has_seq = 1;
        req.seq = 1;
        req.run_dir = other;
        nwb__tel_ingest(f->cache, &req, &f->lim, &f->m, &res); /* rebuild 3, evicts */
        answer_check(f, &res);
    }
    ingest(f, b.data, b.len, NULL, 1, 23, &res); /* rebuild 4 */
    assert_int_equal(res.http_status, 200);
    assert_int_equal(atomic_load(&f->m.rebuilds), 4);
    assert_int_equal(atomic_load(&f->m.evictions), 2);
    assert_int_equal(atomic_load(&f->m.cached_runs), 1);
    expect_report_equals_offline(f);

    /* A byte cap below one run's state: the run in use stays between its uploads. */
    nwb__tel_cache_destroy(f->cache);
    assert_int_equal(nwb__tel_cache_create(8, 1, &f->m, &f->cache), 0);
    ingest(f, b.data, b.len, NULL, 1, 24, &res); /* rebuild 5 */
    ingest(f, b.data, b.len, NULL, 1, 25, &res);
    ingest(f, b.data, b.len, NULL, 1, 26, &res);
    assert_int_equal(atomic_load(&f->m.rebuilds), 5);
    expect_report_equals_offline(f);
    nwb_buf_cleanup(&b);
    {
        char p[256];

        snprintf(p, sizeof(p), "%s/telemetry.nwbs.zst", other);
        unlink(p);
        snprintf(p, sizeof(p), "%s/telemetry.index", other);
        unlink(p);
        snprintf(p, sizeof(p), "%s/telemetry.json", other);
        unlink(p);
        snprintf(p, sizeof(p), "%s/telemetry.ingest.log", other);
        unlink(p);
        rmdir(other);
    }
}

static void test_ingest_frame_lookup_finds_the_upload(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    struct nwb__tel_run *run;
    const struct nwb__tel_rec *rec;
    nwb_buf_t b[3];
    uint32_t from = 0;
    const char *why = NULL;
    uint8_t *raw;
    size_t len;

    for (int i = 0; i < 3; i++) {
        segment(&b[i], (uint64_t)i + 10, 1); /* its perfFrame is frame seq */
        ingest(f, b[i].data, b[i].len, NULL, 1, (uint64_t)i + 10, &res);
        assert_int_equal(res.http_status, 200);
    }
    restart(f);
    /* A read never creates telemetry where there is none. */
    assert_int_equal(nwb__tel_cache_acquire(f->cache, "/nonexistent-nwb-dir", 0, &run), -ENOENT);
    assert_int_equal(nwb__tel_cache_acquire(f->cache, f->dir, 0, &run), 0);
    assert_int_equal(nwb__tel_store_uploads(run->store), 3);
    rec = nwb__tel_store_find_frame(run->store, 11, &from);
    assert_non_null(rec);
    assert_int_equal(rec->seq, 11);
    assert_int_equal(rec->frame_min, 11);
    assert_int_equal(rec->frame_max, 11);
    assert_int_equal(nwb__tel_store_read(run->store, rec, &f->lim, &raw, &len, &why), 0);
    assert_int_equal(len, b[1].len);
    assert_memory_equal(raw, b[1].data, len);
    free(raw);
    assert_null(nwb__tel_store_find_frame(run->store, 11, &from));
    from = 0;
    assert_null(nwb__tel_store_find_frame(run->store, 99, &from));
    nwb__tel_cache_release(f->cache, run);
    for (int i = 0; i < 3; i++) {
        nwb_buf_cleanup(&b[i]);
    }
}

static void test_ingest_metrics_text_lists_counters(void **state)
{
    struct fx *f = *state;
    struct nwb__tel_ingest_res res;
    nwb_buf_t b;
    char text[4096];
    char tiny[16];

    segment(&b, 1, 1);
    ingest(f, b.data, b.len, NULL, 1, 1, &res);
    ingest(f, b.data, b.len, NULL, 1, 1, &res);
    ingest(f, "x", 1, NULL, 1, 2, &res);
    ingest(f, "x", 1, "br", 1, 3, &res);
    assert_true(nwb__tel_ingest_metrics_format(&f->m, text, sizeof(text)) > 0);
    expect(text, "nwb_telemetry_uploads_total 4\n");
    expect(text, "nwb_telemetry_uploads_accepted_total 1\n");
    expect(text, "nwb_telemetry_uploads_unstored_total 0\n");
    expect(text, "nwb_telemetry_uploads_duplicate_total 1\n");
    expect(text, "nwb_telemetry_uploads_rejected_total{reason=\"malformed\"} 1\n");
    expect(text, "nwb_telemetry_uploads_rejected_total{reason=\"unsupported_encoding\"} 1\n");
    expect(text, "nwb_telemetry_state_rebuilds_total 1\n");
    expect(text, "nwb_telemetry_state_evictions_total 0\n");
    expect(text, "nwb_telemetry_cached_runs 1\n");
    expect(text, "nwb_telemetry_cached_bytes ");
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
        nwb__tel_ingest(f->cache, &req, NULL, NULL, &res);
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

    /* Fail the n-th allocation inside each upload (a rebuild included, every few): the answer
     * is 200 or 500, the stored stream always decodes with one segment per 200, and the
     * report of the next good upload is the offline one (a broken state is rebuilt). */
    for (n = 0; n < 400 && accepted < 3; n++) {
        nwb_buf_t b;
        uint8_t z[65536];
        size_t zn;

        if (n % 7 == 0) {
            restart(f);
        }
        segment(&b, (uint64_t)n + 1, 5);
        zn = zstd_of(&b, z, sizeof(z));
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
            uint8_t *stored = read_stored(f, &len);

            if (stored != NULL) {
                assert_int_equal(nwb_tel_stream_decode(stored, len, 0, NULL, NULL, &dr), 0);
                assert_int_equal(dr.segments, index_records(f));
                free(stored);
            }
        }
    }
    assert_true(accepted >= 1);
    {
        nwb_buf_t b;

        segment(&b, 100000, 1);
        ingest(f, b.data, b.len, NULL, 1, 100000, &res);
        assert_int_equal(res.http_status, 200);
        nwb_buf_cleanup(&b);
    }
    expect_report_equals_offline(f);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_ingest_identity_upload_is_stored_compressed_and_reported),
        T(test_ingest_zstd_uploads_are_stored_as_received),
        T(test_ingest_resent_seq_is_told_by_the_index),
        T(test_ingest_malformed_gets_400_and_keeps_earlier_data),
        T(test_ingest_decompression_output_cap),
        T(test_ingest_zstd_window_and_frame_rules),
        T(test_ingest_unsupported_encoding_is_415),
        cmocka_unit_test(test_ingest_answer_cleanup_is_null_safe_and_idempotent),
        T(test_ingest_run_stream_limit_reports_and_stops_storing),
        T(test_ingest_run_upload_cap_is_413_at_the_edge),
        T(test_ingest_crash_rules_on_reopen),
        T(test_ingest_older_servers_stream_is_converted_once),
        T(test_ingest_state_is_rebuilt_once_per_cache_miss),
        T(test_ingest_frame_lookup_finds_the_upload),
        T(test_ingest_metrics_text_lists_counters),
        T(test_ingest_allocation_failures_never_corrupt_the_run),
    };
#undef T

    return cmocka_run_group_tests_name("server.tel_ingest", tests, NULL, NULL);
}
