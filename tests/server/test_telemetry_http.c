/* SPDX-License-Identifier: MIT */
/*
 * test_telemetry_http.c - POST /v1/telemetry through the real nwb-logserver:
 * real streams (the synthetic game of nwb_tel_synth(), zstd-compressed) land
 * in runs/<program>_<time>_<run>/telemetry.nwbs.zst beside log.txt with
 * telemetry.json rewritten, names decoded with the server's sidecars; a
 * malformed upload is 400 with the decoder's status and offset and leaves
 * the stream and the earlier report intact; a resent seq is stored and
 * counted once; bad encodings, seqs and sizes get their status; parallel
 * uploads to one run are all stored, whole; /metrics counts. telemetry.json is byte for byte
 * what `nwb-telemetry report` makes of the stored stream, also across a SIGTERM and a kill -9
 * in the middle of a run; one run whose upload is slow to ingest does not hold up another
 * run's uploads; --telemetry-run-max-bytes stops storing, not reporting. Every answer of the
 * ingest and every telemetry.json is parsed as strict JSON.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zstd.h>

#include "nwb/telemetry_report.h"
#include "namesym_test_util.h"
#include "tel_test_util.h"
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

/* The run's stored stream decompressed: every zstd frame of telemetry.nwbs.zst, in order
 * (malloc'd; NULL when there is none). */
static char *stored_raw(const char *dir, size_t *len)
{
    size_t zlen = 0;
    char *z = read_in(dir, "telemetry.nwbs.zst", &zlen);
    ZSTD_DStream *d = ZSTD_createDStream();
    ZSTD_inBuffer in = {z, zlen, 0};
    size_t cap = 1u << 20;
    char *out = malloc(cap);
    ZSTD_outBuffer ob = {out, cap, 0};

    assert_non_null(d);
    assert_non_null(out);
    if (z == NULL) {
        ZSTD_freeDStream(d);
        free(out);
        return NULL;
    }
    while (in.pos < in.size) {
        size_t r;

        if (ob.pos == ob.size) {
            cap *= 2;
            out = realloc(out, cap);
            assert_non_null(out);
            ob.dst = out;
            ob.size = cap;
        }
        r = ZSTD_decompressStream(d, &ob, &in);
        assert_false(ZSTD_isError(r));
    }
    ZSTD_freeDStream(d);
    free(z);
    *len = ob.pos;
    return out;
}

/* Run @p argv (argv[0] a path, NULL-terminated) to its exit; its exit code, or -1. */
static int run_exe(const char *const *argv)
{
    pid_t pid;
    int status;

    if (posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)(uintptr_t)argv, NULL) != 0 ||
        waitpid(pid, &status, 0) != pid) {
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* telemetry.json of the run in @p dir is byte for byte `nwb-telemetry report` of its stored
 * stream (which reads telemetry.ingest.log beside it), with the same sidecar. */
static void expect_report_is_the_tools(const struct fx *f, const char *dir)
{
    char in[1200], out[1200], sym[700];
    char *live, *tool;
    size_t live_len = 0, tool_len = 0;

    snprintf(in, sizeof(in), "%s/telemetry.nwbs.zst", dir);
    snprintf(out, sizeof(out), "%s/../tool-report.json", dir);
    snprintf(sym, sizeof(sym), "%s/synth.namesym", f->syms);
    {
        const char *const argv[] = {NWB_TELEMETRY_EXE, "report", in,  "-o", out,
                                    "--namesym",       sym,      NULL};

        assert_int_equal(run_exe(argv), 0);
    }
    live = read_in(dir, "telemetry.json", &live_len);
    tool = nwb_test_read_file(out, &tool_len);
    assert_non_null(live);
    assert_non_null(tool);
    if (live_len != tool_len || memcmp(live, tool, live_len) != 0) {
        fail_msg("telemetry.json (%zu bytes) is not the tool's report (%zu bytes):\n%.1200s\n"
                 "---\n%.1200s",
                 live_len, tool_len, live, tool);
    }
    unlink(out);
    free(live);
    free(tool);
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
    stream = stored_raw(dir, &len_before);
    assert_non_null(stream);
    /* Both segments, whole and in order; only the header's seq field (bytes 24..31) is set.
     * Seq 1 is stored as received (its header says 1), seq 2's frame was made again. */
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
    {
        size_t zlen = 0;
        char *z = read_in(dir, "telemetry.nwbs.zst", &zlen);

        assert_true(zlen > zla);
        assert_memory_equal(z, za, zla);
        free(z);
    }
    expect_report_is_the_tools(f, dir);

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
    stream2 = stored_raw(dir, &len_after);
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
    stream2 = stored_raw(dir, &len_after);
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
    {
        char zpath[1200];
        struct stat st;

        snprintf(zpath, sizeof(zpath), "%s/telemetry.nwbs.zst", dir);
        assert_int_equal(stat(zpath, &st), 0);
        assert_int_equal(tu_metric(f->srv.port, "nwb_telemetry_bytes_stored_total"),
                         (long long)st.st_size);
    }
    expect_report_is_the_tools(f, dir);
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
    expect_in(resp, "\"reason\":\"decompressed frame exceeds the cap\"}");
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
    stream = stored_raw(dir, &len);
    assert_non_null(stream);
    assert_int_equal(len, (size_t)PAR_THREADS * PAR_EACH * a.len);
    json = report(dir);
    snprintf(want, sizeof(want), "\"segments\":%d,", PAR_THREADS * PAR_EACH);
    expect_in(json, want);
    expect_in(json, "\"duplicateSegments\":0");
    expect_in(json, "\"seqGaps\":0");
    snprintf(want, sizeof(want), "\"accepted\":%d,\"duplicates\":0,", PAR_THREADS * PAR_EACH);
    expect_in(json, want);
    free(json);
    expect_report_is_the_tools(f, dir);
    free(stream);
    free(za);
    nwb_buf_cleanup(&a);
}

/* The segments of a synthetic run (nwb_tel_synth_run, seq 1..n), each zstd-compressed. */
struct run_uploads {
    unsigned n;
    uint8_t *z[64];
    size_t zlen[64];
};

static int collect_segment(void *ctx, const uint8_t *data, size_t len)
{
    struct run_uploads *u = ctx;
    const size_t cap = ZSTD_compressBound(len);

    if (u->n == 64) {
        return -1;
    }
    u->z[u->n] = malloc(cap);
    assert_non_null(u->z[u->n]);
    u->zlen[u->n] = ZSTD_compress(u->z[u->n], cap, data, len, 3);
    assert_false(ZSTD_isError(u->zlen[u->n]));
    u->n++;
    return 0;
}

static void run_uploads_make(struct run_uploads *u, uint64_t seed, uint32_t frames,
                             uint32_t per_upload)
{
    nwb_tel_synth_config_t cfg = NWB_TEL_SYNTH_CONFIG_INIT;

    memset(u, 0, sizeof(*u));
    cfg.seed = seed;
    cfg.frames = frames;
    cfg.frames_per_upload = per_upload;
    assert_int_equal(nwb_tel_synth_run(&cfg, collect_segment, u, NULL), 0);
}

static void run_uploads_free(struct run_uploads *u)
{
    for (unsigned i = 0; i < u->n; i++) {
        free(u->z[i]);
    }
}

/* Upload @p seq (1-based) of @p u to run @p run; returns the status. */
static int post_upload(const struct fx *f, const char *run, const struct run_uploads *u,
                       unsigned seq, char *resp, size_t cap)
{
    return post_json(f->srv.port, run, seq, "zstd", u->z[seq - 1], u->zlen[seq - 1], resp, cap);
}

static void restart_server(struct fx *f, int sig)
{
    const char *const extra[] = {"--namesym-dir", f->syms, NULL};

    tu_stop(&f->srv, sig, 10000);
    assert_int_equal(tu_start(&f->srv, f->dir, 0, extra), 0);
}

/* The server's report is the tool's after every step of a run cut by a SIGTERM and by two
 * kill -9 (one between uploads, one with an upload in flight): what was acknowledged is
 * stored once, and the state rebuilt from the stored stream gives the same bytes. */
static void test_telemetry_http_report_equals_the_tool_across_restarts(void **state)
{
    struct fx *f = *state;
    struct run_uploads u;
    char resp[1024], dir[1024];
    int fd;

    run_uploads_make(&u, 7, 360, 30); /* 12 uploads */
    assert_int_equal(u.n, 12);
    for (unsigned seq = 1; seq <= 4; seq++) {
        assert_int_equal(post_upload(f, "rr", &u, seq, resp, sizeof(resp)), 200);
    }
    run_dir(f, "rr", dir, sizeof(dir));
    expect_report_is_the_tools(f, dir);

    restart_server(f, SIGTERM);
    assert_int_equal(post_upload(f, "rr", &u, 3, resp, sizeof(resp)), 200);
    expect_in(resp, "\"duplicate\":true");
    for (unsigned seq = 5; seq <= 8; seq++) {
        assert_int_equal(post_upload(f, "rr", &u, seq, resp, sizeof(resp)), 200);
        expect_in(resp, "\"duplicate\":false");
    }
    expect_report_is_the_tools(f, dir);
    assert_int_equal(tu_metric(f->srv.port, "nwb_telemetry_state_rebuilds_total"), 1);

    restart_server(f, SIGKILL);
    expect_report_is_the_tools(f, dir); /* the report on disk is whole */
    for (unsigned seq = 7; seq <= 10; seq++) {
        assert_int_equal(post_upload(f, "rr", &u, seq, resp, sizeof(resp)), 200);
        expect_in(resp, seq <= 8 ? "\"duplicate\":true" : "\"duplicate\":false");
    }
    expect_report_is_the_tools(f, dir);

    /* Upload 11 sent whole, then kill -9 without waiting for its answer: stored or not,
     * after the restart its resend is answered 200 and the report is still the tool's. */
    {
        char head[512];
        const int n = snprintf(head, sizeof(head),
                               "POST /v1/telemetry HTTP/1.1\r\nHost: x\r\nX-NWB-Program: tgame\r\n"
                               "X-NWB-Run: rr\r\nX-NWB-Seq: 11\r\nContent-Encoding: zstd\r\n"
                               "Content-Length: %zu\r\n\r\n",
                               u.zlen[10]);

        fd = nwb_test_connect(f->srv.port);
        assert_true(fd >= 0);
        assert_int_equal(nwb_test_send_all(fd, head, (size_t)n), 0);
        assert_int_equal(nwb_test_send_all(fd, u.z[10], u.zlen[10]), 0);
    }
    restart_server(f, SIGKILL);
    close(fd);
    for (unsigned seq = 11; seq <= 12; seq++) {
        assert_int_equal(post_upload(f, "rr", &u, seq, resp, sizeof(resp)), 200);
    }
    assert_int_equal(post_upload(f, "rr", &u, 12, resp, sizeof(resp)), 200);
    expect_in(resp, "\"duplicate\":true");
    expect_report_is_the_tools(f, dir);
    {
        char *json = report(dir);

        expect_in(json, "\"segments\":12,");
        expect_in(json, "\"duplicateSegments\":0");
        free(json);
    }
    run_uploads_free(&u);
}

struct slow_post {
    pthread_t thread;
    int port;
    uint64_t seq;
    const uint8_t *body;
    size_t len;
    int status;
};

/* One big upload on its own connection. Its answer can take long (a 61 MB decode, twice over,
 * under valgrind), so it waits up to 10 minutes instead of nwb_test_http()'s 10 s. */
static void *slow_main(void *arg)
{
    const struct timeval patient = {600, 0};
    struct slow_post *p = arg;
    char head[512];
    char body[1024];
    const int fd = nwb_test_connect(p->port);
    int n;

    p->status = -1;
    if (fd < 0) {
        return NULL;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patient, sizeof(patient));
    n = snprintf(head, sizeof(head),
                 "POST /v1/telemetry HTTP/1.1\r\nHost: test\r\nX-NWB-Program: tgame\r\n"
                 "X-NWB-Run: slow\r\nX-NWB-Seq: %llu\r\nContent-Length: %zu\r\n\r\n",
                 (unsigned long long)p->seq, p->len);
    if (nwb_test_send_all(fd, head, (size_t)n) == 0 &&
        nwb_test_send_all(fd, p->body, p->len) == 0 &&
        nwb_test_read_response(fd, &p->status, body, sizeof(body)) < 0) {
        p->status = -1;
    }
    close(fd);
    return NULL;
}

/* Different runs ingest in parallel: while one run has two big uploads, sent at once, one
 * being ingested and the other waiting in its lane, another run's uploads are answered, each
 * before the slow run's second upload is done (serialised server-wide, they would wait behind
 * it). By the server's own counters, no sleeps. */
static void test_telemetry_http_a_slow_run_does_not_hold_up_the_others(void **state)
{
    struct fx *f = *state;
    nwb_tel_synth_config_t cfg = NWB_TEL_SYNTH_CONFIG_INIT;
    struct run_uploads u;
    struct slow_post p[2];
    nwb_buf_t big;
    char resp[1024];
    long long deadline;

    /* About 61 MB of one segment, sent raw: decoded, fed and compressed by the ingest. */
    cfg.frames = 36000;
    cfg.profiler = 0; /* the format 1.0 stream that size was measured with */
    cfg.frames_per_upload = 0;
    nwb_buf_init(&big, 64u << 20);
    assert_int_equal(nwb_tel_synth(&cfg, &big, NULL), 0);
    assert_true(big.len > (32u << 20) && big.len <= (64u << 20));
    run_uploads_make(&u, 9, 60, 20); /* 3 small uploads */
    for (int i = 0; i < 2; i++) {
        p[i].port = f->srv.port;
        p[i].seq = (uint64_t)i + 1;
        p[i].body = big.data;
        p[i].len = big.len;
        assert_int_equal(pthread_create(&p[i].thread, NULL, slow_main, &p[i]), 0);
    }
    /* A big upload is in the ingest once it is counted (its body arrived whole). */
    deadline = nwb_test_now_ms() + 60000;
    while (tu_metric(f->srv.port, "nwb_telemetry_uploads_total") < 1 &&
           nwb_test_now_ms() < deadline) {
        /* Each /metrics answer is the wait: no sleep. */
    }
    assert_int_equal(tu_metric(f->srv.port, "nwb_telemetry_uploads_total"), 1);
    for (unsigned seq = 1; seq <= u.n; seq++) {
        assert_int_equal(post_upload(f, "quick", &u, seq, resp, sizeof(resp)), 200);
        /* Accepted so far: the quick ones, and at most one slow one. */
        assert_true(tu_metric(f->srv.port, "nwb_telemetry_uploads_accepted_total") <= seq + 1);
    }
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pthread_join(p[i].thread, NULL), 0);
        assert_int_equal(p[i].status, 200);
    }
    assert_int_equal(tu_metric(f->srv.port, "nwb_telemetry_uploads_accepted_total"), u.n + 2);
    nwb_buf_cleanup(&big);
    run_uploads_free(&u);
}

/* GET @p path: the status, and the body (malloc'd, NUL-terminated) in *@p body. A 200 body
 * must be one strict JSON object. */
static int get_read(const struct fx *f, const char *path, char **body)
{
    const size_t cap = 4u << 20;
    char *b = malloc(cap);
    int status;

    assert_non_null(b);
    status = nwb_test_http(f->srv.port, "GET", path, NULL, NULL, 0, b, cap);
    if (status == 200) {
        size_t bad = 0;
        const size_t n = strlen(b);

        assert_true(n + 1 < cap);
        if (nwb_test_json_check(b, n, &bad) != 0 || b[0] != '{') {
            fail_msg("GET %s: not a strict JSON object (byte %zu): %.400s", path, bad, b);
        }
    }
    *body = b;
    return status;
}

static int get_status(const struct fx *f, const char *path)
{
    char *b = NULL;
    const int status = get_read(f, path, &b);

    free(b);
    return status;
}

/* --telemetry-run-max-bytes: past it an upload is acknowledged and reported, not stored.
 * --telemetry-cache-runs: one run's state in memory at a time. */
static void test_telemetry_http_run_limit_stops_storing_not_reporting(void **state)
{
    struct fx *f = *state;
    struct run_uploads u;
    char resp[1024], dir[1024], limit[32];
    char *json;

    run_uploads_make(&u, 11, 90, 30); /* 3 uploads */
    snprintf(limit, sizeof(limit), "%zu", u.zlen[0] + u.zlen[1]);
    {
        const char *const extra[] = {"--namesym-dir",
                                     f->syms,
                                     "--telemetry-run-max-bytes",
                                     limit,
                                     "--telemetry-cache-runs",
                                     "1",
                                     NULL};

        tu_stop(&f->srv, SIGTERM, 10000);
        assert_int_equal(tu_start(&f->srv, f->dir, 0, extra), 0);
    }
    assert_int_equal(post_upload(f, "lim", &u, 1, resp, sizeof(resp)), 200);
    expect_in(resp, "\"stored\":true");
    assert_int_equal(post_upload(f, "lim", &u, 2, resp, sizeof(resp)), 200);
    expect_in(resp, "\"stored\":true");
    assert_int_equal(post_upload(f, "lim", &u, 3, resp, sizeof(resp)), 200);
    expect_in(resp, "\"stored\":false");
    run_dir(f, "lim", dir, sizeof(dir));
    json = report(dir);
    expect_in(json, "\"perfFrame\":90,");
    expect_in(json, "\"unstored\":1");
    free(json);
    assert_int_equal(tu_metric(f->srv.port, "nwb_telemetry_uploads_unstored_total"), 1);
    {
        char path[1600];
        char *body = NULL;

        snprintf(path, sizeof(path), "/v1/runs/%s/frames/75", strrchr(dir, '/') + 1);
        assert_int_equal(get_read(f, path, &body), 404);
        expect_in(body, "not stored");
        free(body);
        snprintf(path, sizeof(path), "/v1/runs/%s/frames/15", strrchr(dir, '/') + 1);
        assert_int_equal(get_status(f, path), 200);
    }
    /* --telemetry-cache-runs 1: another run's upload evicts this one's state, which its
     * next upload rebuilds once. */
    assert_int_equal(tu_metric(f->srv.port, "nwb_telemetry_state_rebuilds_total"), 1);
    assert_int_equal(post_upload(f, "lim2", &u, 1, resp, sizeof(resp)), 200);
    assert_int_equal(post_upload(f, "lim", &u, 3, resp, sizeof(resp)), 200);
    expect_in(resp, "\"duplicate\":true");
    assert_int_equal(tu_metric(f->srv.port, "nwb_telemetry_state_rebuilds_total"), 3);
    assert_int_equal(tu_metric(f->srv.port, "nwb_telemetry_state_evictions_total"), 2);
    assert_int_equal(tu_metric(f->srv.port, "nwb_telemetry_cached_runs"), 1);
    run_uploads_free(&u);
}

/* The largest frame duration of a run's uploads (decoded here, not by the server). */
struct frame_max {
    uint64_t max_ns;
    uint64_t frame;
    uint64_t count;
};

static int max_frame_event(void *ctx, const nwb_tel_event_t *ev, size_t off)
{
    struct frame_max *m = ctx;

    (void)off;
    if (ev->kind == NWB_TEL_KIND_PERF_FRAME) {
        m->count++;
        if (ev->u.perf.frame_duration_ns > m->max_ns) {
            m->max_ns = ev->u.perf.frame_duration_ns;
            m->frame = ev->frame;
        }
    }
    return 0;
}

/* The largest "maxMs" value of an answer, and how many buckets it has. */
static double answer_max_ms(const char *body, unsigned *buckets)
{
    double max = -1;
    const char *p = body;

    *buckets = 0;
    while ((p = strstr(p, "\"maxMs\":")) != NULL) {
        const double v = strtod(p + 8, NULL);

        max = v > max ? v : max;
        (*buckets)++;
        p += 8;
    }
    return max;
}

/* GET /v1/runs/<id>/frames: a window of frame times reduced to at most P buckets, min and max
 * kept (the worst frame is never averaged away); the bounds and malformed values. */
static void test_telemetry_http_frames_window_keeps_the_worst_frame(void **state)
{
    struct fx *f = *state;
    const nwb_tel_visitor_t v = {NULL, max_frame_event};
    struct frame_max m = {0, 0, 0};
    struct run_uploads u;
    char resp[1024], dir[1024], path[1600];
    const char *id;
    char *body;
    unsigned buckets = 0;
    double max_ms;

    run_uploads_make(&u, 21, 600, 60); /* 10 uploads */
    for (unsigned seq = 1; seq <= u.n; seq++) {
        nwb_tel_decode_result_t dr;
        size_t rlen = ZSTD_getFrameContentSize(u.z[seq - 1], u.zlen[seq - 1]);
        uint8_t *raw = malloc(rlen);

        assert_non_null(raw);
        assert_int_equal(ZSTD_decompress(raw, rlen, u.z[seq - 1], u.zlen[seq - 1]), rlen);
        assert_int_equal(nwb_tel_stream_decode(raw, rlen, 0, &v, &m, &dr), 0);
        free(raw);
        assert_int_equal(post_upload(f, "fr", &u, seq, resp, sizeof(resp)), 200);
    }
    assert_int_equal(m.count, 600);
    run_dir(f, "fr", dir, sizeof(dir));
    id = strrchr(dir, '/') + 1;

    /* The whole run in 7 buckets: the largest maximum is the worst frame. */
    snprintf(path, sizeof(path), "/v1/runs/%s/frames?points=7", id);
    assert_int_equal(get_read(f, path, &body), 200);
    max_ms = answer_max_ms(body, &buckets);
    assert_true(buckets >= 1 && buckets <= 7);
    assert_true(max_ms > (double)m.max_ns / 1e6 - 1e-6 && max_ms < (double)m.max_ns / 1e6 + 1e-6);
    {
        char want[64];

        snprintf(want, sizeof(want), "\"maxFrame\":%llu", (unsigned long long)m.frame);
        expect_in(body, want);
    }
    expect_in(body, "\"runFrames\":600,");
    free(body);
    /* Without ?points=: the default (1024) buckets, here one a frame. */
    snprintf(path, sizeof(path), "/v1/runs/%s/frames", id);
    assert_int_equal(get_read(f, path, &body), 200);
    expect_in(body, "\"points\":1024,");
    (void)answer_max_ms(body, &buckets);
    assert_int_equal(buckets, 600);
    free(body);
    /* One frame, and a window past the run's end (empty, not an error). */
    snprintf(path, sizeof(path), "/v1/runs/%s/frames?from=100&to=100", id);
    assert_int_equal(get_read(f, path, &body), 200);
    expect_in(body, "\"buckets\":[{\"from\":100,\"to\":100,\"frames\":1,");
    free(body);
    snprintf(path, sizeof(path), "/v1/runs/%s/frames?from=5000", id);
    assert_int_equal(get_read(f, path, &body), 200);
    expect_in(body, "\"buckets\":[]");
    free(body);
    snprintf(path, sizeof(path), "/v1/runs/%s/frames?points=4096&from=0&to=18446744073709551615",
             id);
    assert_int_equal(get_status(f, path), 200);

    /* Malformed values: 400. */
    {
        static const char *const bad[] = {
            "points=0",
            "points=4097",
            "points=",
            "from=abc",
            "from=-1",
            "to=1e3",
            "from=5&to=4",
            "from=%zz",
            "from=+1",
            "to=18446744073709551616",
            "points=99999999999999999999",
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            snprintf(path, sizeof(path), "/v1/runs/%s/frames?%s", id, bad[i]);
            if (get_status(f, path) != 400) {
                fail_msg("GET %s: not 400", path);
            }
        }
    }
    /* Unknown, malformed and traversing ids: 404; a run without telemetry: 404. */
    assert_int_equal(get_status(f, "/v1/runs/tgame_20260101-000000_nope/frames"), 404);
    assert_int_equal(get_status(f, "/v1/runs/../frames"), 404);
    assert_int_equal(get_status(f, "/v1/runs/..%2F..%2Fetc/frames"), 404);
    assert_int_equal(get_status(f, "/v1/runs/.hidden/frames"), 404);
    assert_int_equal(tu_post(f->srv.port, "text/plain", "tgame", "logonly", 1, "hi\n", 3, NULL, 0),
                     200);
    {
        char ldir[1024];

        run_dir(f, "logonly", ldir, sizeof(ldir));
        snprintf(path, sizeof(path), "/v1/runs/%s/frames", strrchr(ldir, '/') + 1);
        assert_int_equal(get_status(f, path), 404);
        snprintf(path, sizeof(path), "/v1/runs/%s/frames/1", strrchr(ldir, '/') + 1);
        assert_int_equal(get_status(f, path), 404);
        assert_true(access(ldir, F_OK) == 0);
        {
            char zpath[1200];

            /* A read never creates telemetry files. */
            snprintf(zpath, sizeof(zpath), "%s/telemetry.nwbs.zst", ldir);
            assert_int_not_equal(access(zpath, F_OK), 0);
        }
    }
    /* POST is 405 on the read routes. */
    snprintf(path, sizeof(path), "/v1/runs/%s/frames", id);
    assert_int_equal(nwb_test_http(f->srv.port, "POST", path, NULL, "x", 1, resp, sizeof(resp)),
                     405);
    run_uploads_free(&u);
}

/* GET /v1/runs/<id>/frames/<frame>: one frame from the stored upload that holds it, names
 * decoded; unknown and malformed frames; and the same after a restart (rebuilt for a read). */
static void test_telemetry_http_frame_detail_from_the_stored_upload(void **state)
{
    struct fx *f = *state;
    struct run_uploads u;
    char resp[1024], dir[1024], path[1600];
    const char *id;
    char *body;

    run_uploads_make(&u, 23, 240, 60); /* 4 uploads */
    for (unsigned seq = 1; seq <= u.n; seq++) {
        assert_int_equal(post_upload(f, "fd", &u, seq, resp, sizeof(resp)), 200);
    }
    run_dir(f, "fd", dir, sizeof(dir));
    id = strrchr(dir, '/') + 1;
    for (int pass = 0; pass < 2; pass++) {
        snprintf(path, sizeof(path), "/v1/runs/%s/frames/123", id);
        assert_int_equal(get_read(f, path, &body), 200);
        expect_in(body, "{\"frame\":123,");
        expect_in(body, "\"durationMs\":");
        expect_in(body, "\"threads\":[{\"thread\":");
        expect_in(body, "\"depth\":");
        expect_in(body, "\"gpu\":[");
        expect_in(body, "\"logs\":[");
        expect_in(body, "\"render.shadow\""); /* names from the server's sidecar */
        free(body);
        snprintf(path, sizeof(path), "/v1/runs/%s/frames/0", id);
        assert_int_equal(get_status(f, path), 200);
        snprintf(path, sizeof(path), "/v1/runs/%s/frames/239", id);
        assert_int_equal(get_status(f, path), 200);
        snprintf(path, sizeof(path), "/v1/runs/%s/frames/240", id);
        assert_int_equal(get_status(f, path), 404);
        snprintf(path, sizeof(path), "/v1/runs/%s/frames/18446744073709551615", id);
        assert_int_equal(get_status(f, path), 404);
        {
            static const char *const bad[] = {"abc", "-1",  "18446744073709551616",
                                              "1x",  "%31", "+1"};

            for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                snprintf(path, sizeof(path), "/v1/runs/%s/frames/%s", id, bad[i]);
                if (get_status(f, path) != 400) {
                    fail_msg("GET %s: not 400", path);
                }
            }
        }
        snprintf(path, sizeof(path), "/v1/runs/%s/frames/1/x", id);
        assert_int_equal(get_status(f, path), 404);
        assert_int_equal(get_status(f, "/v1/runs/../frames/1"), 404);
        restart_server(f, SIGTERM);
    }
    assert_int_equal(tu_metric(f->srv.port, "nwb_telemetry_state_rebuilds_total"), 0);
    snprintf(path, sizeof(path), "/v1/runs/%s/frames?points=2", id);
    assert_int_equal(get_status(f, path), 200);
    assert_int_equal(tu_metric(f->srv.port, "nwb_telemetry_state_rebuilds_total"), 1);
    run_uploads_free(&u);
}

/* A segment with perfFrames @p a and @p b (its index range is a..b). */
static void two_frames(nwb_buf_t *seg, uint64_t seq, uint64_t a, uint64_t b)
{
    const nwb_tel_cpu_scope_t sc = {77, 10, 20, 1, 0};
    const nwb_tel_perf_frame_t pf = {5, 16000000, &sc, NULL, 1, 0};

    nwb_buf_init(seg, 1u << 20);
    tel_put_header(seg, seq);
    assert_int_equal(nwb_tel_encode_perf(seg, 9, a, &pf), 0);
    if (b != a) {
        assert_int_equal(nwb_tel_encode_perf(seg, 9, b, &pf), 0);
    }
}

/* GET .../frames/<frame> tries at most 8 stored uploads whose frame range includes the frame:
 * with 7 decoys (frames 0 and 100, not 50) before the upload holding frame 50 it is found, with
 * 8 it is not. */
static void test_telemetry_http_frame_lookup_tries_eight_uploads(void **state)
{
    struct fx *f = *state;
    char resp[1024], dir[1024], path[1600];

    for (int decoys = 7; decoys <= 8; decoys++) {
        const char *run = decoys == 7 ? "tries7" : "tries8";
        nwb_buf_t seg;

        for (int i = 0; i <= decoys; i++) {
            const uint64_t seq = (uint64_t)i + 1;

            if (i < decoys) {
                two_frames(&seg, seq, 0, 100);
            } else {
                two_frames(&seg, seq, 50, 50);
            }
            assert_int_equal(post_json(f->srv.port, run, (long long)seq, NULL, seg.data, seg.len,
                                       resp, sizeof(resp)),
                             200);
            nwb_buf_cleanup(&seg);
        }
        run_dir(f, run, dir, sizeof(dir));
        snprintf(path, sizeof(path), "/v1/runs/%s/frames/50", strrchr(dir, '/') + 1);
        assert_int_equal(get_status(f, path), decoys == 7 ? 200 : 404);
        snprintf(path, sizeof(path), "/v1/runs/%s/frames/100", strrchr(dir, '/') + 1);
        assert_int_equal(get_status(f, path), 200);
    }
}

/* NWB__TEL_FRAMES_ANSWER_MAX (server/src/telemetry_int.h): docs/protocol.md's 32 MiB. */
#define FRAMES_ANSWER_MAX (32u * 1024u * 1024u)

/* The largest frame the format allows: 65,536 CPU scopes (NWB_TEL_CPU_SCOPES_MAX), 4,096 GPU
 * scopes, 300 log lines of 4,096 control bytes (each escaped to six) of which 256 are answered,
 * and the largest frame graph (64 queues, 4,096 packets, 16,384 passes, 65,536 edges).
 * Its answer is strict JSON and well under the 32 MiB cap, so a
 * valid frame never meets the 503; the widest window (4,096 points) of /frames is too. */
static void test_telemetry_http_largest_frame_fits_the_answer_cap(void **state)
{
    struct fx *f = *state;
    const struct timeval patient = {600, 0};
    const size_t cap = FRAMES_ANSWER_MAX + 1024u;
    nwb_tel_cpu_scope_t *cpu = calloc(NWB_TEL_CPU_SCOPES_MAX, sizeof(*cpu));
    nwb_tel_gpu_scope_t *gpu = calloc(NWB_TEL_GPU_SCOPES_MAX, sizeof(*gpu));
    char *answer = malloc(cap);
    char msg[NWB_TEL_TEXT_MAX];
    char resp[1024], dir[1024], head[2048];
    nwb_tel_fg_queue_t *fg_queues;
    nwb_tel_fg_packet_t *fg_packets;
    nwb_tel_fg_pass_t *fg_passes;
    nwb_tel_fg_edge_t *fg_edges;
    nwb_tel_fg_frame_t fg;
    nwb_tel_perf_frame_t pf;
    nwb_buf_t seg;
    size_t bad = 0;
    long len;
    int status = 0;
    int fd;

    assert_non_null(cpu);
    assert_non_null(gpu);
    assert_non_null(answer);
    for (uint32_t i = 0; i < NWB_TEL_CPU_SCOPES_MAX; i++) {
        /* Unknown names (answered as tokens), 20-digit times, every depth. */
        cpu[i] = (nwb_tel_cpu_scope_t){0xfedcba9876543210ull + i, UINT64_MAX / 2 + i,
                                       UINT64_MAX / 2 + i + 1000, i % 64, (uint16_t)(i % 256)};
    }
    for (uint32_t i = 0; i < NWB_TEL_GPU_SCOPES_MAX; i++) {
        gpu[i] = (nwb_tel_gpu_scope_t){
            0xabcdef0123456789ull + i, 7, 7, 1, 1, 1, 0.5, 0.25, 0.75, 0.5, 0.5};
    }
    memset(msg, 0x01, sizeof(msg));
    /* The largest frame graph: every bound of the format at once, unknown names. */
    fg_queues = calloc(NWB_TEL_FG_QUEUES_MAX, sizeof(*fg_queues));
    fg_packets = calloc(NWB_TEL_FG_PACKETS_MAX, sizeof(*fg_packets));
    fg_passes = calloc(NWB_TEL_FG_PASSES_MAX, sizeof(*fg_passes));
    fg_edges = calloc(NWB_TEL_FG_EDGES_MAX, sizeof(*fg_edges));
    assert_true(fg_queues && fg_packets && fg_passes && fg_edges);
    for (uint32_t i = 0; i < NWB_TEL_FG_QUEUES_MAX; i++) {
        fg_queues[i] = (nwb_tel_fg_queue_t){0x1111111111111111ull + i, (uint8_t)(i % 3)};
    }
    for (uint32_t i = 0; i < NWB_TEL_FG_PACKETS_MAX; i++) {
        fg_packets[i] = (nwb_tel_fg_packet_t){i % NWB_TEL_FG_QUEUES_MAX, UINT32_MAX, UINT32_MAX};
    }
    for (uint32_t i = 0; i < NWB_TEL_FG_PASSES_MAX; i++) {
        fg_passes[i] =
            (nwb_tel_fg_pass_t){0x2222222222222222ull + i, i % NWB_TEL_FG_PACKETS_MAX, UINT32_MAX};
    }
    for (uint32_t i = 0; i < NWB_TEL_FG_EDGES_MAX; i++) {
        fg_edges[i] =
            (nwb_tel_fg_edge_t){i % (NWB_TEL_FG_PASSES_MAX - 1), NWB_TEL_FG_PASSES_MAX - 1 - i % 7};
        if (fg_edges[i].from == fg_edges[i].to) {
            fg_edges[i].to--;
        }
    }
    fg = (nwb_tel_fg_frame_t){fg_queues,
                              fg_packets,
                              fg_passes,
                              fg_edges,
                              NWB_TEL_FG_QUEUES_MAX,
                              NWB_TEL_FG_PACKETS_MAX,
                              NWB_TEL_FG_PASSES_MAX,
                              NWB_TEL_FG_EDGES_MAX,
                              {UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX}};
    pf = (nwb_tel_perf_frame_t){UINT64_MAX / 2,        16000000, cpu, gpu, NWB_TEL_CPU_SCOPES_MAX,
                                NWB_TEL_GPU_SCOPES_MAX};
    nwb_buf_init(&seg, 64u << 20);
    tel_put_header(&seg, 1);
    assert_int_equal(nwb_tel_encode_perf(&seg, 9, 7, &pf), 0);
    assert_int_equal(nwb_tel_encode_fg(&seg, 9, 7, &fg), 0);
    for (int i = 0; i < 300; i++) {
        assert_int_equal(nwb_tel_encode_text(&seg, 10, 7, 2, 1, msg, sizeof(msg)), 0);
    }
    assert_int_equal(post_json(f->srv.port, "huge", 1, NULL, seg.data, seg.len, resp, sizeof(resp)),
                     200);
    nwb_buf_cleanup(&seg);
    run_dir(f, "huge", dir, sizeof(dir));

    /* Its own connection: building it can take a while under valgrind. */
    fd = nwb_test_connect(f->srv.port);
    assert_true(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patient, sizeof(patient));
    snprintf(head, sizeof(head), "GET /v1/runs/%s/frames/7 HTTP/1.1\r\nHost: test\r\n\r\n",
             strrchr(dir, '/') + 1);
    assert_int_equal(nwb_test_send_all(fd, head, strlen(head)), 0);
    len = nwb_test_read_response(fd, &status, answer, cap);
    close(fd);
    assert_int_equal(status, 200);
    assert_true(len > 8 * 1024 * 1024); /* it is large: the test tests the edge it names */
    assert_true((size_t)len < FRAMES_ANSWER_MAX);
    if (nwb_test_json_check(answer, (size_t)len, &bad) != 0) {
        fail_msg("the largest frame: not strict JSON at byte %zu", bad);
    }
    expect_in(answer, "\"cpuScopes\":65536,");
    expect_in(answer, "\"moreLogs\":44}");
    expect_in(answer, "\"frameGraph\":{\"queues\":[");
    print_message("the largest frame answers %ld bytes (cap %u)\n", len, FRAMES_ANSWER_MAX);

    snprintf(head, sizeof(head), "/v1/runs/%s/frames?points=4096", strrchr(dir, '/') + 1);
    assert_int_equal(get_status(f, head), 200);
    free(answer);
    free(fg_edges);
    free(fg_passes);
    free(fg_packets);
    free(fg_queues);
    free(gpu);
    free(cpu);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_telemetry_http_streams_are_stored_reported_and_deduplicated),
        T(test_telemetry_http_bad_requests_get_their_status),
        T(test_telemetry_http_zstd_bomb_gets_a_json_413),
        T(test_telemetry_http_parallel_uploads_to_one_run_are_all_stored),
        T(test_telemetry_http_report_equals_the_tool_across_restarts),
        T(test_telemetry_http_a_slow_run_does_not_hold_up_the_others),
        T(test_telemetry_http_run_limit_stops_storing_not_reporting),
        T(test_telemetry_http_frames_window_keeps_the_worst_frame),
        T(test_telemetry_http_frame_detail_from_the_stored_upload),
        T(test_telemetry_http_frame_lookup_tries_eight_uploads),
        T(test_telemetry_http_largest_frame_fits_the_answer_cap),
    };
#undef T

    return cmocka_run_group_tests_name("server.telemetry_http", tests, NULL, tu_reap);
}
