/* SPDX-License-Identifier: MIT */
/*
 * fuzz_telemetry.c - any byte string through the telemetry decoder (as a run file and as one
 * upload), the report (whole, and fed to the incremental state one segment at a time, plainly
 * and atomically), the frame queries, the Chrome export and the dump. Rejection is fine;
 * crashing, reading out of bounds, leaking, inconsistent results, a report that depends on how
 * the stream was split, or invalid JSON is not (abort()).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/telemetry_report.h"
#include "../support/json_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CUTS 256

struct cuts {
    size_t at[FUZZ_CUTS];
    size_t n;
};

static int on_segment(void *ctx, const nwb_tel_header_t *h, size_t offset)
{
    struct cuts *c = ctx;

    (void)h;
    if (c->n < FUZZ_CUTS) {
        c->at[c->n++] = offset;
    }
    return 0;
}

/* The report fed segment by segment must be the whole-stream report, byte for byte; fed
 * atomically it must be valid JSON; so must the frame queries of the state. */
static void check_pieces(const uint8_t *data, size_t size, const nwb_buf_t *whole)
{
    const nwb_tel_visitor_t v = {on_segment, NULL};
    nwb_tel_decode_result_t res;
    struct cuts c = {{0}, 0};

    nwb_tel_stream_decode(data, size, 0, &v, &c, &res);
    for (unsigned flags = 0; flags <= NWB_TEL_FEED_ATOMIC; flags += NWB_TEL_FEED_ATOMIC) {
        nwb_tel_report_state_t *s;
        nwb_buf_t json;
        size_t at = 0;

        if (nwb_tel_report_state_create(&s) != 0) {
            abort();
        }
        for (size_t i = 0; i <= c.n; i++) {
            const size_t end = i < c.n ? c.at[i] : size;

            if (nwb_tel_report_state_feed(s, data + at, end - at, flags, NULL) != 0) {
                abort();
            }
            at = end;
        }
        nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
        if (nwb_tel_report_state_write(s, NULL, &json) != 0 ||
            nwb_test_json_check((const char *)json.data, json.len, NULL) != 0 ||
            (flags == 0 &&
             (json.len != whole->len || memcmp(json.data, whole->data, json.len) != 0))) {
            abort();
        }
        nwb_buf_reset(&json);
        {
            nwb_json_t j;
            uint64_t lo = 0;
            uint64_t hi = UINT64_MAX;

            const int have = nwb_tel_report_state_frame_range(s, &lo, &hi) == 0;

            nwb_json_init(&j, &json, NULL);
            if (nwb_tel_report_state_frames(s, lo, hi, 7, 0, &j) != 0 || nwb_json_finish(&j) != 0 ||
                nwb_test_json_check((const char *)json.data, json.len, NULL) != 0) {
                abort();
            }
            /* The first frame in full, from the same bytes. */
            nwb_buf_reset(&json);
            nwb_json_init(&j, &json, NULL);
            if (have && flags == 0 && nwb_tel_frame_detail_write(data, size, lo, NULL, &j) == 0 &&
                (nwb_json_finish(&j) != 0 ||
                 nwb_test_json_check((const char *)json.data, json.len, NULL) != 0)) {
                abort();
            }
        }
        nwb_buf_cleanup(&json);
        nwb_tel_report_state_destroy(s);
    }
}

static void check_result(const nwb_tel_decode_result_t *r, size_t size)
{
    if (r->consumed > size || (r->status == 0 && r->consumed != size) ||
        (r->status != 0 &&
         (r->error_offset > size || r->consumed > r->error_offset || r->reason == NULL)) ||
        r->unknown > r->events) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    nwb_tel_decode_result_t file_res;
    nwb_tel_decode_result_t up_res;
    nwb_tel_decode_result_t rep_res;
    nwb_buf_t json;
    char *trace = NULL;
    size_t trace_len = 0;
    FILE *f;

    nwb_tel_stream_decode(data, size, 0, NULL, NULL, &file_res);
    check_result(&file_res, size);
    nwb_tel_stream_decode(data, size, NWB_TEL_DECODE_SINGLE_SEGMENT, NULL, NULL, &up_res);
    check_result(&up_res, size);
    /* An upload that decodes is a file that decodes, with the same events. */
    if (up_res.status == 0 && (file_res.status != 0 || file_res.events != up_res.events)) {
        abort();
    }

    nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
    if (nwb_tel_report_build(data, size, &ro, &json, &rep_res) != 0 ||
        nwb_test_json_check((const char *)json.data, json.len, NULL) != 0 ||
        rep_res.status != file_res.status || rep_res.consumed != file_res.consumed) {
        abort();
    }
    check_pieces(data, size, &json);
    nwb_buf_cleanup(&json);

    f = open_memstream(&trace, &trace_len);
    if (f != NULL) {
        if (nwb_tel_chrome_write(data, size, NULL, f, NULL) != 0) {
            abort();
        }
        fclose(f);
        if (nwb_test_json_check(trace, trace_len, NULL) != 0) {
            abort();
        }
        free(trace);
    }
    f = fopen("/dev/null", "w");
    if (f != NULL) {
        nwb_tel_dump(data, size, NULL, f);
        fclose(f);
    }
    return 0;
}
