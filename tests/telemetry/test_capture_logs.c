/* SPDX-License-Identifier: MIT */
/*
 * test_capture_logs.c (ctest telemetry.capture_logs) - lines logged with NWB_LOGGER_* become
 * textLog events through the logger client's worker (nwb_tel_client_capture_logs): rendered
 * once, with their level and the logging thread, below the minimum level left out, and each in
 * the frame its time falls in even when the recorder drains it frames later. A real standalone
 * client writing into a scratch directory; uploads decoded strictly.
 */
#define _GNU_SOURCE /* syscall */
#undef NWB_FINAL /* the INFO lines are needed in every config */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "nwb/alloc.h"
#include "nwb/client.h"
#include "nwb/log.h"
#include "nwb/telemetry_client.h"

struct texts {
    unsigned n, warnings;
    uint64_t frame_of_hello;
    uint32_t thread;
    int found_hello, found_skipped;
};

static int on_event(void *ctx, const nwb_tel_event_t *ev, size_t off)
{
    struct texts *t = ctx;
    (void)off;
    if (ev->kind != NWB_TEL_KIND_TEXT_LOG) {
        return 0;
    }
    t->n++;
    t->thread = ev->u.text.thread;
    if (ev->u.text.level == NWB_LOG_WARNING) {
        t->warnings++;
    }
    if (ev->u.text.len == 18 && memcmp(ev->u.text.msg, "hello 42 from f=3!", 18) == 0) {
        t->found_hello = 1;
        t->frame_of_hello = ev->frame;
    }
    if (ev->u.text.len >= 7 && memcmp(ev->u.text.msg, "skipped", 7) == 0) {
        t->found_skipped = 1;
    }
    return 0;
}

static int decode_upload(void *ctx, nwb_tel_upload_t *up)
{
    const nwb_tel_visitor_t v = {NULL, on_event};
    nwb_tel_decode_result_t res;

    assert_int_equal(nwb_tel_stream_decode(up->data, up->len, NWB_TEL_DECODE_SINGLE_SEGMENT, &v,
                                           ctx, &res),
                     0);
    nwb_free(up->data);
    return 0;
}

static void test_lines_become_text_logs(void **state)
{
    char dir[] = "/tmp/nwb_capture_logs_XXXXXX";
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *client;
    nwb_tel_recorder_t *rec;
    struct texts t;
    nwb_tel_sink_t sink = {decode_upload, &t};
    char err[256];
    char cmd[128];
    (void)state;

    memset(&t, 0, sizeof(t));
    assert_non_null(mkdtemp(dir));
    cfg.program = "capture-logs";
    cfg.mode = NWB_CLIENT_MODE_STANDALONE;
    cfg.log_dir = dir;
    cfg.console = 0;
    assert_int_equal(nwb_client_create(&cfg, &client, err, sizeof(err)), 0);
    assert_int_equal(nwb_tel_recorder_create(NULL, &rec), 0);
    nwb_tel_recorder_set_capture(rec, NWB_TEL_CAPTURE_ALL);
    assert_int_equal(nwb_tel_recorder_set_upload(rec, 1, &sink), 0);
    nwb_tel_client_capture_logs(client, NWB_LOG_INFO);
    for (uint64_t f = 0; f < 6; f++) {
        assert_int_equal(nwb_tel_frame_begin(rec, f, 0), 0);
        if (f == 3) {
            NWB_LOGGER_INFO("hello %d from f=%u!", 42, 3u);
            NWB_LOGGER_WARNING("a warning");
            /* the worker renders it; the recorder drains it at a later frame end */
            assert_int_equal(nwb_client_flush(client, 5000), 0);
        }
        assert_int_equal(nwb_tel_frame_end(rec, 0), 0);
    }
    nwb_tel_client_capture_logs(client, NWB_LOG_WARNING);
    NWB_LOGGER_INFO("skipped: below the minimum level");
    assert_int_equal(nwb_client_flush(client, 5000), 0);
    assert_int_equal(nwb_tel_frame_begin(rec, 6, 0), 0);
    assert_int_equal(nwb_tel_frame_end(rec, 0), 0);
    assert_int_equal(nwb_tel_flush_upload(rec), 0);
    assert_true(t.found_hello);
    assert_int_equal(t.frame_of_hello, 3);
    assert_int_equal(t.warnings, 1);
    assert_false(t.found_skipped);
    assert_int_equal(t.thread, (uint32_t)syscall(SYS_gettid));
    nwb_tel_client_capture_logs(client, NWB_LOG_FATAL + 1u);
    nwb_tel_recorder_destroy(rec);
    nwb_client_destroy(client);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_lines_become_text_logs)};

    return cmocka_run_group_tests(tests, NULL, NULL);
}
