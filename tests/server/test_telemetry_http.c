/* SPDX-License-Identifier: MIT */
/*
 * test_telemetry_http.c - POST /v1/telemetry through the real nwb-logserver:
 * real streams (the synthetic game of nwb_tel_synth(), zstd-compressed) land
 * in runs/<program>_<time>_<run>/telemetry.nwbs beside log.txt with
 * telemetry.json rebuilt, names decoded with the server's sidecars; a
 * malformed upload is 400 with the decoder's status and offset and leaves
 * the stream and the earlier report intact; a resent seq is stored and
 * counted once; bad encodings, seqs and sizes get their status; parallel
 * uploads to one run are all stored, whole; /metrics counts. Every answer of the ingest
 * (stored, duplicate, malformed, too large, unsupported encoding) and every telemetry.json
 * is parsed as strict JSON.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "nwb/telemetry_report.h"
#include "namesym_test_util.h"
#include "server_test_util.h"
#include "json_check.h"

struct fx {
    char dir[512];
    char syms[600];
    struct nwb_test_server srv;
};

/* A one-segment synthetic stream (seed @p seed) into @p b; its names into @p names (or NULL). */
static void synth(uint64_t seed, nwb_buf_t *b, nwb_namesym_builder_t *names)
{
    nwb_tel_synth_config_t cfg = NWB_TEL_SYNTH_CONFIG_INIT;

    cfg.seed = seed;
    cfg.frames = 40;
    cfg.frames_per_upload = 0;
    nwb_buf_init(b, 64u << 20);
    assert_int_equal(nwb_tel_synth(&cfg, b, names), 0);
    assert_true(b->len > 64);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    nwb_namesym_builder_t names;
    nwb_buf_t b;
    char path[700], err[256];

    if (f == NULL || nwb_test_tmpdir("telhttp", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    /* The sidecar of every name the synthetic streams use. */
    snprintf(f->syms, sizeof(f->syms), "%s/syms", f->dir);
    snprintf(path, sizeof(path), "%s/synth.namesym", f->syms);
    nwb_namesym_builder_init(&names);
    synth(1, &b, &names);
    nwb_buf_cleanup(&b);
    if (mkdir(f->syms, 0755) != 0 ||
        nwb_namesym_builder_write(&names, "synth", path, err, sizeof(err)) != 0) {
        nwb_namesym_builder_cleanup(&names);
        free(f);
        return -1;
    }
    nwb_namesym_builder_cleanup(&names);
    {
        const char *const extra[] = {"--namesym-dir", f->syms, NULL};

        if (tu_start(&f->srv, f->dir, 0, extra) != 0) {
            free(f);
            return -1;
        }
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    tu_stop(&f->srv, SIGTERM, 10000);
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* POST @p len bytes to /v1/telemetry; @p enc NULL for none; @p seq < 0 for no X-NWB-Seq. */
static int post_tel(int port, const char *run, long long seq, const char *enc, const void *body,
                    size_t len, char *resp, size_t cap)
{
    char headers[512];
    int n = snprintf(headers, sizeof(headers), "X-NWB-Program: tgame\r\nX-NWB-Run: %s\r\n", run);

    if (seq >= 0) {
        n += snprintf(headers + n, sizeof(headers) - (size_t)n, "X-NWB-Seq: %lld\r\n", seq);
    }
    if (enc != NULL) {
        snprintf(headers + n, sizeof(headers) - (size_t)n, "Content-Encoding: %s\r\n", enc);
    }
    return nwb_test_http(port, "POST", "/v1/telemetry", headers, body, len, resp, cap);
}

/* post_tel() for an answer of the ingest: its body must be one strict JSON object. */
static int post_json(int port, const char *run, long long seq, const char *enc, const void *body,
                     size_t len, char *resp, size_t cap)
{
    const int status = post_tel(port, run, seq, enc, body, len, resp, cap);
    const size_t n = strlen(resp);
    size_t bad = 0;

    assert_true(n + 1 < cap); /* not truncated */
    if (nwb_test_json_check(resp, n, &bad) != 0 || resp[0] != '{') {
        fail_msg("answer %d is not a strict JSON object (byte %zu): %s", status, bad, resp);
    }
    return status;
}

/* zstd-compress @p b into a malloc'd buffer. */
static uint8_t *compress(const nwb_buf_t *b, size_t *zlen)
{
    const size_t cap = ZSTD_compressBound(b->len);
    uint8_t *z = malloc(cap);

    assert_non_null(z);
    *zlen = ZSTD_compress(z, cap, b->data, b->len, 3);
    assert_false(ZSTD_isError(*zlen));
    return z;
}

/* The run's directory (where its log.txt is) into @p out. */
static void run_dir(const struct fx *f, const char *run, char *out, size_t cap)
{
    char log[1024];
    char *slash;

    assert_int_equal(nwb_test_find_run_log(f->dir, "tgame", run, log, sizeof(log)), 0);
    slash = strrchr(log, '/');
    *slash = '\0';
    snprintf(out, cap, "%s", log);
}

static char *read_in(const char *dir, const char *name, size_t *len)
{
    char p[1200];

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return nwb_test_read_file(p, len);
}

/* telemetry.json of @p dir, checked to be one valid JSON document (malloc'd). */
static char *report(const char *dir)
{
    size_t len = 0, bad = 0;
    char *json = read_in(dir, "telemetry.json", &len);

    assert_non_null(json);
    if (nwb_test_json_check(json, len, &bad) != 0) {
        fail_msg("telemetry.json is not valid JSON at byte %zu", bad);
    }
    return json;
}

static void expect_in(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL) {
        fail_msg("\"%s\" not in:\n%.2000s", needle, hay);
    }
}

static void test_telemetry_http_streams_are_stored_reported_and_deduplicated(void **state)
{
    struct fx *f = *state;
    nwb_buf_t a, b;
    uint8_t *za, *zb;
    size_t zla, zlb, len_before = 0, len_after = 0;
    char resp[1024], dir[1024], tok[NWB_NAME_TOKEN_SIZE];
    char *stream, *stream2, *json;
    const char *off;

    synth(1, &a, NULL);
    synth(2, &b, NULL);
    za = compress(&a, &zla);
    zb = compress(&b, &zlb);

    assert_int_equal(post_json(f->srv.port, "t1", 1, "zstd", za, zla, resp, sizeof(resp)), 200);
    expect_in(resp, "\"seq\":1,\"duplicate\":false");
    assert_int_equal(post_json(f->srv.port, "t1", 2, "zstd", zb, zlb, resp, sizeof(resp)), 200);
    expect_in(resp, "\"seq\":2,\"duplicate\":false");
    /* The log of the same run goes in the same directory. */
    assert_int_equal(tu_post(f->srv.port, "text/plain", "tgame", "t1", 1, "hello\n", 6, NULL, 0),
                     200);
    run_dir(f, "t1", dir, sizeof(dir));
    stream = read_in(dir, "telemetry.nwbs", &len_before);
    assert_non_null(stream);
    /* Both segments, whole and in order; only the header's seq field (bytes 24..31) is set. */
    assert_int_equal(len_before, a.len + b.len);
    assert_memory_equal(stream, a.data, 24);
    assert_memory_equal(stream + 32, a.data + 32, a.len - 32);
    assert_int_equal(nwb_le64_load(stream + 24), 1);
    assert_memory_equal(stream + a.len + 32, b.data + 32, b.len - 32);
    assert_int_equal(nwb_le64_load(stream + a.len + 24), 2);
    json = report(dir);
    expect_in(json, "\"schema\":\"nwb-telemetry-report/1\"");
    expect_in(json, "\"segments\":2");
    expect_in(json, "\"status\":\"ok\"");
    expect_in(json, "\"uploads\":{\"log\":true,\"accepted\":2,\"duplicates\":0,\"rejected\":0");
    /* Names decoded with the sidecar: the string, never its token. */
    expect_in(json, "\"render.shadow\"");
    assert_null(strstr(json, nsu_token("render.shadow", tok)));
    free(json);

    /* Malformed: a truncated raw segment. 400 with the status and offset; nothing changes. */
    assert_int_equal(post_json(f->srv.port, "t1", 3, NULL, a.data, a.len - 5, resp, sizeof(resp)),
                     400);
    expect_in(resp, "\"error\":\"malformed telemetry stream\"");
    expect_in(resp, "\"status\":\"NWB_ETRUNCATED\"");
    off = strstr(resp, "\"offset\":");
    assert_non_null(off);
    {
        const unsigned long long o = strtoull(off + 9, NULL, 10);

        assert_true(o > 0 && o <= a.len - 5);
    }
    stream2 = read_in(dir, "telemetry.nwbs", &len_after);
    assert_int_equal(len_after, len_before);
    assert_memory_equal(stream2, stream, len_before);
    free(stream2);
    json = report(dir);
    expect_in(json, "\"segments\":2");
    expect_in(json, "\"accepted\":2,\"duplicates\":0,\"rejected\":1");
    expect_in(json, "\"recentRejections\":[{\"seq\":3");
    free(json);

    /* A resend of seq 1: acknowledged as a duplicate, stored and counted once. */
    assert_int_equal(post_json(f->srv.port, "t1", 1, "zstd", za, zla, resp, sizeof(resp)), 200);
    assert_string_equal(resp, "{\"seq\":1,\"duplicate\":true}");
    stream2 = read_in(dir, "telemetry.nwbs", &len_after);
    assert_int_equal(len_after, len_before);
    assert_memory_equal(stream2, stream, len_before);
    free(stream2);
    json = report(dir);
    expect_in(json, "\"segments\":2");
    expect_in(json, "\"accepted\":2,\"duplicates\":1,\"rejected\":1");
    free(json);

    assert_int_equal(tu_metric(f->srv.port, "nwb_telemetry_uploads_total"), 4);
    assert_int_equal(tu_metric(f->srv.port, "nwb_telemetry_uploads_accepted_total"), 2);
    assert_int_equal(tu_metric(f->srv.port, "nwb_telemetry_uploads_duplicate_total"), 1);
    assert_int_equal(
        tu_metric(f->srv.port, "nwb_telemetry_uploads_rejected_total{reason=\"malformed\"}"), 1);
    assert_int_equal(tu_metric(f->srv.port, "nwb_telemetry_bytes_stored_total"),
                     (long long)(a.len + b.len));
    free(stream);
    free(za);
    free(zb);
    nwb_buf_cleanup(&a);
    nwb_buf_cleanup(&b);
}

static void test_telemetry_http_bad_requests_get_their_status(void **state)
{
    struct fx *f = *state;
    nwb_buf_t a;
    char resp[1024];
    char head[512];
    int fd, status = 0, n;
    static const uint8_t not_zstd[64] = {1, 2, 3};

    synth(3, &a, NULL);
    /* Unknown encoding: 415 from the ingest, in JSON; the value is quoted back escaped. A value
     * too long for any encoding: 415 early (text/plain, like every error decided from the
     * head). */
    assert_int_equal(post_json(f->srv.port, "bad", 1, "gzip", a.data, a.len, resp, sizeof(resp)),
                     415);
    expect_in(resp, "{\"error\":\"unsupported Content-Encoding\",\"status\":\"NWB_EPROTO\"");
    assert_int_equal(post_json(f->srv.port, "bad", 1, "x\"}\\y", a.data, a.len, resp, sizeof(resp)),
                     415);
    expect_in(resp, "\"reason\":\"Content-Encoding \\\"x\\\"}\\\\y\\\": use zstd or identity\"");
    assert_int_equal(post_tel(f->srv.port, "bad", 1, "zstd-but-much-longer-than-any-encoding-name",
                              a.data, a.len, resp, sizeof(resp)),
                     415);
    /* Corrupt zstd: 400. A bad X-NWB-Seq: 400 before the body is looked at. */
    assert_int_equal(
        post_json(f->srv.port, "bad", 1, "zstd", not_zstd, sizeof(not_zstd), resp, sizeof(resp)),
        400);
    expect_in(resp, "\"error\":\"bad zstd telemetry upload\",\"status\":\"NWB_ECOMPRESS\"");
    assert_int_equal(nwb_test_http(f->srv.port, "POST", "/v1/telemetry", "X-NWB-Seq: -1\r\n",
                                   a.data, a.len, resp, sizeof(resp)),
                     400);
    /* GET is 405; an empty body is a malformed stream. */
    assert_int_equal(
        nwb_test_http(f->srv.port, "GET", "/v1/telemetry", NULL, NULL, 0, resp, sizeof(resp)), 405);
    assert_int_equal(post_json(f->srv.port, "bad", 2, NULL, "", 0, resp, sizeof(resp)), 400);
    expect_in(resp, "\"error\":\"malformed telemetry stream\"");
    /* The body limit, 64 MiB, decided from the head: one byte over is 413. */
    fd = nwb_test_connect(f->srv.port);
    assert_true(fd >= 0);
    n = snprintf(head, sizeof(head),
                 "POST /v1/telemetry HTTP/1.1\r\nHost: x\r\nContent-Length: %u\r\n\r\n",
                 64u * 1024u * 1024u + 1u);
    assert_int_equal(nwb_test_send_all(fd, head, (size_t)n), 0);
    assert_true(nwb_test_read_response(fd, &status, resp, sizeof(resp)) >= 0);
    assert_int_equal(status, 413);
    expect_in(resp, "telemetry upload exceeds 67108864 bytes");
    close(fd);
    /* The server is fine afterwards. */
    assert_int_equal(post_json(f->srv.port, "bad", 5, NULL, a.data, a.len, resp, sizeof(resp)),
                     200);
    assert_int_equal(
        tu_metric(f->srv.port, "nwb_telemetry_uploads_rejected_total{reason=\"malformed\"}"), 2);
    assert_int_equal(
        tu_metric(f->srv.port,
                  "nwb_telemetry_uploads_rejected_total{reason=\"unsupported_encoding\"}"),
        2);
    nwb_buf_cleanup(&a);
}

/* A zstd bomb: a few KiB that decompress past the 64 MiB cap are refused by the ingest with a
 * JSON 413, and the refusal lands in the report. */
static void test_telemetry_http_zstd_bomb_gets_a_json_413(void **state)
{
    struct fx *f = *state;
    const size_t big = (64u << 20) + 4096u;
    uint8_t *zeros = calloc(1, big);
    const size_t zcap = ZSTD_compressBound(big);
    uint8_t *z = malloc(zcap);
    char resp[1024], dir[1024];
    size_t zn;
    char *json;

    assert_non_null(zeros);
    assert_non_null(z);
    zn = ZSTD_compress(z, zcap, zeros, big, 1);
    assert_false(ZSTD_isError(zn));
    assert_true(zn < 64u * 1024u);
    /* The run's directory exists once its log has a line. */
    assert_int_equal(tu_post(f->srv.port, "text/plain", "tgame", "bomb", 1, "hi\n", 3, NULL, 0),
                     200);
    assert_int_equal(post_json(f->srv.port, "bomb", 1, "zstd", z, zn, resp, sizeof(resp)), 413);
    expect_in(resp, "{\"error\":\"telemetry upload too large\",\"status\":\"NWB_ETOOBIG\"");
    expect_in(resp, "\"reason\":\"decompressed upload exceeds the cap\"}");
    run_dir(f, "bomb", dir, sizeof(dir));
    json = report(dir);
    expect_in(json, "\"accepted\":0,\"duplicates\":0,\"rejected\":1");
    free(json);
    assert_int_equal(
        tu_metric(f->srv.port, "nwb_telemetry_uploads_rejected_total{reason=\"too_large\"}"), 1);
    free(zeros);
    free(z);
}

#define PAR_THREADS 6
#define PAR_EACH    3

struct par {
    pthread_t thread;
    int port;
    int index;
    const uint8_t *body;
    size_t len;
    int status[PAR_EACH];
};

static void *par_main(void *arg)
{
    struct par *p = arg;

    for (int i = 0; i < PAR_EACH; i++) {
        p->status[i] =
            post_tel(p->port, "par", 1 + p->index * PAR_EACH + i, "zstd", p->body, p->len, NULL, 0);
    }
    return NULL;
}

static void test_telemetry_http_parallel_uploads_to_one_run_are_all_stored(void **state)
{
    struct fx *f = *state;
    struct par p[PAR_THREADS];
    nwb_buf_t a;
    uint8_t *za;
    size_t zla, len = 0;
    char dir[1024], want[128];
    char *json, *stream;

    synth(4, &a, NULL);
    za = compress(&a, &zla);
    for (int i = 0; i < PAR_THREADS; i++) {
        p[i].port = f->srv.port;
        p[i].index = i;
        p[i].body = za;
        p[i].len = zla;
        assert_int_equal(pthread_create(&p[i].thread, NULL, par_main, &p[i]), 0);
    }
    for (int i = 0; i < PAR_THREADS; i++) {
        assert_int_equal(pthread_join(p[i].thread, NULL), 0);
        for (int k = 0; k < PAR_EACH; k++) {
            assert_int_equal(p[i].status[k], 200);
        }
    }
    run_dir(f, "par", dir, sizeof(dir));
    stream = read_in(dir, "telemetry.nwbs", &len);
    assert_non_null(stream);
    assert_int_equal(len, (size_t)PAR_THREADS * PAR_EACH * a.len);
    json = report(dir);
    snprintf(want, sizeof(want), "\"segments\":%d,", PAR_THREADS * PAR_EACH);
    expect_in(json, want);
    expect_in(json, "\"duplicateSegments\":0");
    expect_in(json, "\"seqGaps\":0");
    snprintf(want, sizeof(want), "\"accepted\":%d,\"duplicates\":0,\"rejected\":0",
             PAR_THREADS * PAR_EACH);
    expect_in(json, want);
    free(json);
    free(stream);
    free(za);
    nwb_buf_cleanup(&a);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_telemetry_http_streams_are_stored_reported_and_deduplicated),
        T(test_telemetry_http_bad_requests_get_their_status),
        T(test_telemetry_http_zstd_bomb_gets_a_json_413),
        T(test_telemetry_http_parallel_uploads_to_one_run_are_all_stored),
    };
#undef T

    return cmocka_run_group_tests_name("server.telemetry_http", tests, NULL, tu_reap);
}
