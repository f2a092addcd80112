/* SPDX-License-Identifier: MIT */
/*
 * test_pipeline.c - the whole telemetry path in one process, without HTTP: a recorder driven
 * like a game, the uploader thread compressing each flush into one zstd frame, and the
 * server's real ingest (server/src/telemetry_ingest.c) storing it in a run directory. The
 * telemetry.json it writes must show exactly what was recorded (frames, percentiles, scope
 * totals from the recorder's own timing view, GPU windows, memory, drops), with a resent
 * upload stored once. A name whose string only the first upload carried, and its thread's
 * name, survive a server restart (the report state rebuilt from the stored stream), and the
 * live telemetry.json stays the offline report byte for byte.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/telemetry.h"
#include "nwb/telemetry_report.h"
#include "tel_test_util.h"
#include "telemetry_int.h"

#define FRAMES     100
#define PER_UPLOAD 20

struct server_side {
    char dir[64];
    struct nwb__tel_ingest_metrics m;
    struct nwb__tel_cache *cache;
    int statuses[16];
    unsigned n;
    uint8_t *last_body;
    size_t last_len;
    uint64_t last_seq;
};

static int deliver_to_ingest(void *ctx, const uint8_t *body, size_t len, const char *enc,
                             uint64_t seq)
{
    struct server_side *s = ctx;
    struct nwb__tel_ingest_req req;
    struct nwb__tel_ingest_res res;

    memset(&req, 0, sizeof(req));
    req.body = body;
    req.body_len = len;
    req.content_encoding = enc;
    req.program = "pipeline";
    req.run = "run";
    req.has_seq = 1;
    req.seq = seq;
    req.run_dir = s->dir;
    nwb__tel_ingest(s->cache, &req, NULL, &s->m, &res);
    if (s->n < 16) {
        s->statuses[s->n++] = res.http_status;
    }
    /* The answer the server would send: strict JSON. */
    assert_int_equal(nwb_test_json_check((const char *)res.body.data, res.body.len, NULL), 0);
    nwb__tel_ingest_res_cleanup(&res);
    {
        /* Copy before freeing: the resend passes last_body itself. */
        uint8_t *copy = malloc(len);

        memcpy(copy, body, len);
        free(s->last_body);
        s->last_body = copy;
    }
    s->last_len = len;
    s->last_seq = seq;
    return res.http_status == 200 ? 0 : NWB_EHTTP;
}

static double json_number(const char *json, const char *after, const char *key)
{
    const char *p = strstr(json, after);
    char k[64];

    assert_non_null(p);
    snprintf(k, sizeof(k), "\"%s\":", key);
    p = strstr(p, k);
    assert_non_null(p);
    return strtod(p + strlen(k), NULL);
}

/* A run directory and the server's report-state cache, as a fresh server has them. */
static void server_side_open(struct server_side *srv)
{
    memset(srv, 0, sizeof(*srv));
    snprintf(srv->dir, sizeof(srv->dir), "/tmp/nwb_tel_pipe_XXXXXX");
    assert_non_null(mkdtemp(srv->dir));
    nwb__tel_ingest_metrics_init(&srv->m);
    assert_int_equal(nwb__tel_cache_create(4, 64u << 20, &srv->m, &srv->cache), 0);
}

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    while (d != NULL && (e = readdir(d)) != NULL) {
        char p[256];

        if (e->d_name[0] != '.') {
            snprintf(p, sizeof(p), "%.63s/%.180s", dir, e->d_name);
            unlink(p);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    rmdir(dir);
}

static void test_pipeline_report_matches_what_was_recorded(void **state)
{
    nwb_tel_recorder_config_t rc = NWB_TEL_RECORDER_CONFIG_INIT;
    nwb_tel_uploader_config_t uc = NWB_TEL_UPLOADER_CONFIG_INIT;
    struct server_side srv;
    nwb_tel_recorder_t *rec;
    nwb_tel_uploader_t *up;
    nwb_tel_scope_id_t update, render, gpu;
    nwb_tel_mem_source_t *arena, *heap;
    nwb_tel_timing_entry_t te;
    const nwb_tel_timing_view_t *view;
    uint64_t durs[FRAMES];
    uint64_t sum = 0;
    char path[128];
    char *json;
    size_t len;
    uint64_t t = 1000000000ull;

    (void)state;
    server_side_open(&srv);
    uc.deliver = deliver_to_ingest;
    uc.ctx = &srv;
    assert_int_equal(nwb_tel_uploader_create(&uc, &up), 0);
    rc.program = "pipeline";
    rc.run_id = "0123456789abcdef";
    rc.build_id = "bid";
    assert_int_equal(nwb_tel_recorder_create(&rc, &rec), 0);
    view = nwb_tel_recorder_timing_view(rec);
    assert_int_equal(
        nwb_tel_scope_register(rec, nwb_name_hash("update", 6), NWB_TEL_SCOPE_CPU, &update), 0);
    assert_int_equal(
        nwb_tel_scope_register(rec, nwb_name_hash("render", 6), NWB_TEL_SCOPE_CPU, &render), 0);
    assert_int_equal(
        nwb_tel_scope_register(rec, nwb_name_hash("gpu.main", 8), NWB_TEL_SCOPE_GPU, &gpu), 0);
    assert_int_equal(
        nwb_tel_mem_source_register(rec, 11, NWB_TEL_MEM_ARENA, NWB_TEL_PEAK_LARGEST_ARENA, &arena),
        0);
    assert_int_equal(nwb_tel_mem_source_register(rec, 12, NWB_TEL_MEM_HEAP_BACKING,
                                                 NWB_TEL_PEAK_SAMPLED_HEAP, &heap),
                     0);
    assert_int_equal(nwb_tel_recorder_set_upload(rec, 1, nwb_tel_uploader_sink(up)), 0);
    nwb_tel_recorder_set_capture(rec, NWB_TEL_CAPTURE_ALL);
    for (uint64_t f = 0; f < FRAMES; f++) {
        const uint64_t dur = (10 + f % 7) * 1000000ull + (f == 63 ? 40000000ull : 0);

        durs[f] = dur;
        sum += dur;
        nwb_tel_frame_begin(rec, f, t);
        nwb_tel_scope_record(rec, update, 1, t, t + dur / 4, 0);
        nwb_tel_scope_record(rec, render, 2, t + dur / 4, t + dur / 2, 0);
        if (f >= 1) {
            nwb_tel_gpu_sample(rec, gpu, f - 1, 2000000 + f * 1000);
        }
        nwb_tel_mem_alloc(arena, 1000);
        nwb_tel_mem_alloc(heap, 5000);
        if (f == 63) {
            nwb_tel_text_record(rec, t + 1, 1, 1, "hitch in frame 63", 17);
        }
        nwb_tel_frame_end(rec, t + dur);
        t += dur;
        if ((f + 1) % PER_UPLOAD == 0) {
            assert_int_equal(nwb_tel_flush_upload(rec), 0);
        }
    }
    assert_int_equal(nwb_tel_uploader_flush(up, 30000), 0);
    /* The network lost the acknowledgment: the last upload is sent again. */
    assert_int_equal(deliver_to_ingest(&srv, srv.last_body, srv.last_len, "zstd", srv.last_seq), 0);
    assert_int_equal(srv.n, FRAMES / PER_UPLOAD + 1);
    for (unsigned i = 0; i < srv.n; i++) {
        assert_int_equal(srv.statuses[i], 200);
    }
    assert_int_equal(atomic_load(&srv.m.accepted), FRAMES / PER_UPLOAD);
    assert_int_equal(atomic_load(&srv.m.duplicates), 1);

    snprintf(path, sizeof(path), "%s/telemetry.json", srv.dir);
    json = (char *)tel_read_file(path, &len);
    assert_non_null(json);
    assert_int_equal(nwb_test_json_check(json, len, NULL), 0);
    /* Frames: count, mean, max, nearest-rank p50 of what was recorded. */
    {
        uint64_t sorted[FRAMES];

        memcpy(sorted, durs, sizeof(sorted));
        for (size_t i = 1; i < FRAMES; i++) {
            for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
                const uint64_t x = sorted[j];

                sorted[j] = sorted[j - 1];
                sorted[j - 1] = x;
            }
        }
        assert_int_equal(json_number(json, "\"frames\":{", "count"), FRAMES);
        assert_true(fabs(json_number(json, "\"frames\":{", "meanMs") - (double)sum / FRAMES / 1e6) <
                    1e-6);
        assert_true(json_number(json, "\"frames\":{", "p50Ms") == (double)sorted[49] / 1e6);
        assert_true(json_number(json, "\"frames\":{", "p99Ms") == (double)sorted[98] / 1e6);
        assert_true(json_number(json, "\"frames\":{", "maxMs") == (double)sorted[99] / 1e6);
        assert_true(json_number(json, "\"worst\":[", "frame") == 63);
        assert_non_null(strstr(json, "\"message\":\"hitch in frame 63\""));
    }
    /* Scopes: the report's totals are the recorder's own timing view. */
    assert_int_equal(nwb_tel_timing_view_get(view, update, &te), 0);
    {
        char tok[NWB_NAME_TOKEN_SIZE];
        char after[64];

        nwb_name_token(te.name, tok);
        snprintf(after, sizeof(after), "\"name\":\"%s\"", tok);
        assert_int_equal(json_number(json, after, "samples"), te.stats.samples);
        assert_true(json_number(json, after, "totalMs") == (double)te.stats.total_ns / 1e6);
        assert_true(json_number(json, after, "maxMs") == (double)te.stats.max_ns / 1e6);
        assert_int_equal(json_number(json, after, "firstSourceFrame"), 0);
        assert_int_equal(json_number(json, after, "lastSourceFrame"), FRAMES - 1);
    }
    assert_int_equal(nwb_tel_timing_view_get(view, gpu, &te), 0);
    {
        char tok[NWB_NAME_TOKEN_SIZE];
        char after[64];

        nwb_name_token(te.name, tok);
        snprintf(after, sizeof(after), "\"name\":\"%s\"", tok);
        assert_int_equal(json_number(json, after, "samples"), te.stats.samples);
        assert_int_equal(json_number(json, after, "firstSourceFrame"), te.stats.source_frame_min);
        assert_int_equal(json_number(json, after, "lastSourceFrame"), te.stats.source_frame_max);
        assert_int_equal(json_number(json, after, "windows"), FRAMES - 1);
        assert_true(fabs(json_number(json, after, "totalMs") - (double)te.stats.total_ns / 1e6) <
                    1e-5);
    }
    /* Memory: the arena alone in the arena totals, heapBacking beside it. */
    assert_int_equal(json_number(json, "\"arenaTotals\":{", "lastUsedBytes"), FRAMES * 1000);
    assert_int_equal(json_number(json, "\"heapBackingTotals\":{", "lastUsedBytes"), FRAMES * 5000);
    assert_int_equal(json_number(json, "\"uploads\":{", "accepted"), FRAMES / PER_UPLOAD);
    assert_int_equal(json_number(json, "\"uploads\":{", "duplicates"), 1);
    assert_int_equal(json_number(json, "\"events\":{", "perfFrame"), FRAMES);
    assert_int_equal(json_number(json, "\"clientDrops\":{", "events"), 0);
    free(json);

    nwb_tel_recorder_destroy(rec);
    nwb_tel_uploader_destroy(up);
    nwb__tel_cache_destroy(srv.cache);
    free(srv.last_body);
    rm_dir(srv.dir);
}

/* Upload @p seq: frame seq with the scope "render/shadows" on thread 4; the first upload also
 * carries the name's string and the thread's name, and every upload a counter and a mark. */
static void profile_upload(struct server_side *srv, uint64_t seq)
{
    const nwb_tel_string_t str = {nwb_name_hash("render/shadows", 14), "render/shadows", 14};
    const nwb_tel_thread_info_t ti = {4, 6, "render", 2 * seq, 0, 0};
    const nwb_tel_counter_t cnt = {nwb_name_hash("render/shadows", 14), 20, (double)seq, 4};
    const nwb_tel_cpu_scope_t cpu = {str.name, 10, 20 + seq, 4, 0};
    const nwb_tel_perf_frame_t pf = {5, 16000000, &cpu, NULL, 1, 0};
    nwb_buf_t b;

    nwb_buf_init(&b, 1 << 20);
    tel_put_header(&b, seq);
    if (seq == 1) {
        assert_int_equal(nwb_tel_encode_strings(&b, 1, seq, &str, 1), 0);
        assert_int_equal(nwb_tel_encode_thread(&b, 2, seq, &ti), 0);
    }
    assert_int_equal(nwb_tel_encode_counters(&b, 20, seq, &cnt, 1), 0);
    assert_int_equal(nwb_tel_encode_mark(&b, 21, seq, 4, "shadow pass", 11), 0);
    assert_int_equal(nwb_tel_encode_perf(&b, 30, seq, &pf), 0);
    assert_int_equal(deliver_to_ingest(srv, b.data, b.len, NULL, seq), 0);
    nwb_buf_cleanup(&b);
}

/* What `nwb-telemetry report` writes for the run directory's stored stream and ingest log. */
static char *offline_report(const char *dir)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    nwb_tel_ingest_summary_t ingest;
    nwb_tel_report_state_t *st;
    nwb_tel_file_reader_t *r;
    char path[160];
    nwb_buf_t json;
    char *s;

    assert_int_equal(nwb_tel_report_state_create(&st), 0);
    snprintf(path, sizeof(path), "%s/%s", dir, NWB_TEL_STREAM_ZST_FILE);
    assert_int_equal(nwb_tel_file_reader_open(path, &r), 0);
    assert_int_equal(nwb_tel_report_state_feed_reader(st, r), 0);
    nwb_tel_file_reader_destroy(r);
    snprintf(path, sizeof(path), "%s/%s", dir, NWB_TEL_INGEST_LOG_NAME);
    assert_int_equal(nwb_tel_ingest_log_load(path, &ingest), 0);
    ro.ingest = &ingest;
    nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
    assert_int_equal(nwb_tel_report_state_write(st, &ro, &json), 0);
    nwb_tel_report_state_destroy(st);
    s = tel_json_take(&json, NULL);
    assert_non_null(s);
    return s;
}

static void test_pipeline_stream_names_survive_a_server_restart(void **state)
{
    struct server_side srv;
    char path[160];
    char *live;
    char *offline;
    size_t len;

    (void)state;
    server_side_open(&srv);
    profile_upload(&srv, 1);
    profile_upload(&srv, 2);
    /* A restart: every report state in memory is gone; the next upload rebuilds the run's
     * from what is stored, where only the first upload named the scope and its thread. */
    nwb__tel_cache_destroy(srv.cache);
    assert_int_equal(nwb__tel_cache_create(4, 64u << 20, &srv.m, &srv.cache), 0);
    profile_upload(&srv, 3);
    assert_int_equal(srv.n, 3);
    snprintf(path, sizeof(path), "%s/telemetry.json", srv.dir);
    live = (char *)tel_read_file(path, &len);
    assert_non_null(live);
    assert_int_equal(nwb_test_json_check(live, len, NULL), 0);
    tel_expect(live, "\"cpu\":[{\"name\":\"render/shadows\",\"samples\":3,");
    tel_expect(live, "\"threads\":[{\"thread\":4,\"name\":\"render\",\"records\":2,");
    tel_expect(live, "\"counters\":[{\"name\":\"render/shadows\",\"samples\":3,\"frames\":3,");
    tel_expect(live, "\"marks\":{\"count\":3,");
    tel_expect(live, "\"threadName\":\"render\",\"text\":\"shadow pass\"}],\"notListed\":0}");
    offline = offline_report(srv.dir);
    assert_string_equal(live, offline);
    free(offline);
    free(live);
    nwb__tel_cache_destroy(srv.cache);
    free(srv.last_body);
    rm_dir(srv.dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_report_matches_what_was_recorded),
        cmocka_unit_test(test_pipeline_stream_names_survive_a_server_restart),
    };

    return cmocka_run_group_tests_name("telemetry.pipeline", tests, NULL, NULL);
}
