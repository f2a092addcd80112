/* SPDX-License-Identifier: MIT */
/*
 * test_uploader.c - the uploader sink: each upload becomes exactly one independent zstd frame
 * holding the segment; submit() never waits for delivery (the frame thread is not blocked
 * while the worker is stuck) and refuses past its bounds; destroy delivers what is queued; the
 * file deliverer appends raw segments that decode as one run stream.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/telemetry.h"
#include "tel_test_util.h"
#include "test_support.h"

struct got {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int gate_open;
    int entered;
    unsigned n;
    uint8_t *body[16];
    size_t len[16];
    uint64_t seq[16];
    char enc[16][8];
};

static int collect(void *ctx, const uint8_t *body, size_t len, const char *enc, uint64_t seq)
{
    struct got *g = ctx;

    pthread_mutex_lock(&g->lock);
    g->entered++;
    pthread_cond_broadcast(&g->cond);
    while (!g->gate_open) {
        pthread_cond_wait(&g->cond, &g->lock);
    }
    if (g->n < 16) {
        g->body[g->n] = malloc(len);
        memcpy(g->body[g->n], body, len);
        g->len[g->n] = len;
        g->seq[g->n] = seq;
        snprintf(g->enc[g->n], sizeof(g->enc[0]), "%s", enc != NULL ? enc : "raw");
        g->n++;
    }
    pthread_mutex_unlock(&g->lock);
    return 0;
}

static void got_init(struct got *g, int open)
{
    memset(g, 0, sizeof(*g));
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cond, NULL);
    g->gate_open = open;
}

static void got_cleanup(struct got *g)
{
    for (unsigned i = 0; i < g->n; i++) {
        free(g->body[i]);
    }
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
}

static nwb_tel_upload_t make_upload(uint64_t seq, size_t events)
{
    nwb_buf_t b;
    nwb_tel_upload_t up;

    nwb_buf_init(&b, 1 << 24);
    tel_put_header(&b, seq);
    for (size_t i = 0; i < events; i++) {
        char msg[64];
        const int n =
            snprintf(msg, sizeof(msg), "event %zu of upload %llu", i, (unsigned long long)seq);

        assert_int_equal(nwb_tel_encode_text(&b, i, i, 0, 1, msg, (size_t)n), 0);
    }
    up.data = b.data;
    up.len = b.len;
    up.seq = seq;
    return up;
}

static void test_uploader_one_independent_zstd_frame_per_upload(void **state)
{
    nwb_tel_uploader_config_t cfg = NWB_TEL_UPLOADER_CONFIG_INIT;
    nwb_tel_uploader_t *u;
    nwb_tel_uploader_stats_t st;
    nwb_tel_upload_t ups[3];
    uint8_t *orig[3];
    size_t orig_len[3];
    struct got g;

    (void)state;
    got_init(&g, 1);
    cfg.deliver = collect;
    cfg.ctx = &g;
    assert_int_equal(nwb_tel_uploader_create(&cfg, &u), 0);
    for (int i = 0; i < 3; i++) {
        ups[i] = make_upload(10 + (uint64_t)i, 200 * (size_t)(i + 1));
        orig[i] = malloc(ups[i].len);
        memcpy(orig[i], ups[i].data, ups[i].len);
        orig_len[i] = ups[i].len;
        assert_int_equal(nwb_tel_uploader_sink(u)->submit(nwb_tel_uploader_sink(u)->ctx, &ups[i]),
                         0);
    }
    assert_int_equal(nwb_tel_uploader_flush(u, 10000), 0);
    assert_int_equal(g.n, 3);
    for (unsigned i = 0; i < 3; i++) {
        uint8_t *out = malloc(orig_len[i]);
        size_t n;

        assert_string_equal(g.enc[i], "zstd");
        assert_int_equal(g.seq[i], 10 + i);
        /* Exactly one frame, and it is all of the body. */
        assert_int_equal(ZSTD_findFrameCompressedSize(g.body[i], g.len[i]), g.len[i]);
        assert_true(g.len[i] < orig_len[i]);
        n = ZSTD_decompress(out, orig_len[i], g.body[i], g.len[i]);
        assert_false(ZSTD_isError(n));
        assert_int_equal(n, orig_len[i]);
        assert_memory_equal(out, orig[i], n);
        free(out);
        free(orig[i]);
    }
    nwb_tel_uploader_stats_get(u, &st);
    assert_int_equal(st.submitted, 3);
    assert_int_equal(st.delivered, 3);
    assert_int_equal(st.failed, 0);
    assert_true(st.sent_bytes < st.raw_bytes);
    nwb_tel_uploader_destroy(u);
    got_cleanup(&g);
}

static void test_uploader_submit_never_waits_for_a_stuck_delivery(void **state)
{
    nwb_tel_uploader_config_t cfg = NWB_TEL_UPLOADER_CONFIG_INIT;
    nwb_tel_uploader_t *u;
    nwb_tel_uploader_stats_t st;
    const nwb_tel_sink_t *sink;
    nwb_tel_upload_t up;
    struct got g;
    long long t0;

    (void)state;
    got_init(&g, 0); /* delivery blocks until the gate opens */
    cfg.deliver = collect;
    cfg.ctx = &g;
    cfg.queue_max = 2;
    assert_int_equal(nwb_tel_uploader_create(&cfg, &u), 0);
    sink = nwb_tel_uploader_sink(u);
    up = make_upload(1, 10);
    assert_int_equal(sink->submit(sink->ctx, &up), 0);
    /* Wait until the worker is inside deliver(), stuck. */
    pthread_mutex_lock(&g.lock);
    while (g.entered == 0) {
        pthread_cond_wait(&g.cond, &g.lock);
    }
    pthread_mutex_unlock(&g.lock);
    t0 = nwb_test_now_ms();
    up = make_upload(2, 10);
    assert_int_equal(sink->submit(sink->ctx, &up), 0);
    up = make_upload(3, 10);
    assert_int_equal(sink->submit(sink->ctx, &up), NWB_EFULL); /* the caller still owns it */
    nwb_free(up.data);
    assert_true(nwb_test_now_ms() - t0 < 1000);
    /* The flush waits its 50 ms, measured on the monotonic clock, then gives up. */
    t0 = nwb_test_now_ms();
    assert_int_equal(nwb_tel_uploader_flush(u, 50), NWB_ETIMEOUT);
    assert_true(nwb_test_now_ms() - t0 >= 50);
    assert_true(nwb_test_now_ms() - t0 < 5000);
    pthread_mutex_lock(&g.lock);
    g.gate_open = 1;
    pthread_cond_broadcast(&g.cond);
    pthread_mutex_unlock(&g.lock);
    assert_int_equal(nwb_tel_uploader_flush(u, 10000), 0);
    nwb_tel_uploader_stats_get(u, &st);
    assert_int_equal(st.submitted, 2);
    assert_int_equal(st.refused, 1);
    assert_int_equal(st.delivered, 2);
    nwb_tel_uploader_destroy(u);
    nwb_tel_uploader_destroy(NULL);
    got_cleanup(&g);
}

static void test_uploader_destroy_delivers_queued_uploads(void **state)
{
    nwb_tel_uploader_config_t cfg = NWB_TEL_UPLOADER_CONFIG_INIT;
    nwb_tel_uploader_t *u;
    const nwb_tel_sink_t *sink;
    struct got g;

    (void)state;
    got_init(&g, 1);
    cfg.deliver = collect;
    cfg.ctx = &g;
    cfg.compress = 0;
    assert_int_equal(nwb_tel_uploader_create(&cfg, &u), 0);
    sink = nwb_tel_uploader_sink(u);
    for (uint64_t i = 1; i <= 5; i++) {
        nwb_tel_upload_t up = make_upload(i, 3);

        assert_int_equal(sink->submit(sink->ctx, &up), 0);
    }
    nwb_tel_uploader_destroy(u);
    assert_int_equal(g.n, 5);
    assert_string_equal(g.enc[4], "raw");
    got_cleanup(&g);
}

static void test_uploader_recorder_to_file_gives_one_run_stream(void **state)
{
    nwb_tel_uploader_config_t ucfg = NWB_TEL_UPLOADER_CONFIG_INIT;
    nwb_tel_recorder_config_t rcfg = NWB_TEL_RECORDER_CONFIG_INIT;
    nwb_tel_decode_result_t res;
    nwb_tel_recorder_t *rec;
    nwb_tel_uploader_t *u;
    nwb_tel_scope_id_t id;
    char dir[] = "/tmp/nwb_tel_upl_XXXXXX";
    char path[256];
    uint8_t *data;
    size_t len;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/telemetry.nwbs", dir);
    ucfg.compress = 0;
    ucfg.deliver = nwb_tel_deliver_file;
    ucfg.ctx = path;
    assert_int_equal(nwb_tel_uploader_create(&ucfg, &u), 0);
    rcfg.run_id = "filerun";
    assert_int_equal(nwb_tel_recorder_create(&rcfg, &rec), 0);
    assert_int_equal(nwb_tel_scope_register(rec, 7, NWB_TEL_SCOPE_CPU, &id), 0);
    assert_int_equal(nwb_tel_recorder_set_upload(rec, 1, nwb_tel_uploader_sink(u)), 0);
    nwb_tel_recorder_set_capture(rec, NWB_TEL_CAPTURE_ALL);
    for (uint64_t f = 0; f < 30; f++) {
        nwb_tel_frame_begin(rec, f, 0);
        nwb_tel_scope_record(rec, id, 1, 100 + f, 200 + f, 0);
        nwb_tel_frame_end(rec, 0);
        if (f % 10 == 9) {
            assert_int_equal(nwb_tel_flush_upload(rec), 0);
        }
    }
    nwb_tel_recorder_destroy(rec);
    nwb_tel_uploader_destroy(u);
    data = tel_read_file(path, &len);
    assert_non_null(data);
    assert_int_equal(nwb_tel_stream_decode(data, len, 0, NULL, NULL, &res), 0);
    assert_int_equal(res.segments, 3);
    assert_int_equal(res.events, 30);
    free(data);
    /* The file deliverer takes raw bytes only, and reports I/O errors. */
    assert_int_equal(nwb_tel_deliver_file(path, (const uint8_t *)"x", 1, "zstd", 1), NWB_ECONFIG);
    {
        char missing[] = "/nonexistent-dir/x.nwbs";

        assert_int_equal(nwb_tel_deliver_file(missing, (const uint8_t *)"x", 1, NULL, 1), -ENOENT);
    }
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uploader_one_independent_zstd_frame_per_upload),
        cmocka_unit_test(test_uploader_submit_never_waits_for_a_stuck_delivery),
        cmocka_unit_test(test_uploader_destroy_delivers_queued_uploads),
        cmocka_unit_test(test_uploader_recorder_to_file_gives_one_run_stream),
    };

    return cmocka_run_group_tests_name("telemetry.uploader", tests, NULL, NULL);
}
