/* SPDX-License-Identifier: MIT */
/*
 * fuzz_telemetry.c - any byte string through the telemetry decoder (as a run file and as one
 * upload), the report, the Chrome export and the dump. Rejection is fine; crashing, reading
 * out of bounds, leaking, inconsistent results, or writing invalid JSON is not (abort()).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "nwb/telemetry_report.h"
#include "../support/json_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
