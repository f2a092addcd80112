/* SPDX-License-Identifier: MIT */
/* tel_test_util.c - the telemetry tests' file helpers and stream builders. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/telemetry_format.h"
#include "tel_test_util.h"

uint8_t *tel_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long n;

    if (f == NULL) {
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return NULL;
    }
    buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    buf[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return buf;
}

int tel_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    int ok;

    if (f == NULL) {
        return -1;
    }
    ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    return ok ? 0 : -1;
}

const char *tel_data_path(const char *name)
{
    static char path[1024];

    snprintf(path, sizeof(path), "%s/tests/data/telemetry/%s", NWB_TEST_SOURCE_DIR, name);
    return path;
}

void tel_put_header(nwb_buf_t *b, uint64_t seq)
{
    nwb_tel_header_t h;

    memset(&h, 0, sizeof(h));
    h.seq = seq;
    h.start_wall_ns = 1700000000000000000ull;
    h.start_mono_ns = 1000;
    h.program = "prog";
    h.program_len = 4;
    h.run = "0123456789abcdef";
    h.run_len = 16;
    h.build_id = "bid";
    h.build_id_len = 3;
    if (nwb_tel_encode_header(b, &h) != 0) {
        abort();
    }
}

void tel_expect(const char *json, const char *needle)
{
    if (strstr(json, needle) == NULL) {
        fail_msg("no %s in:\n%.1500s", needle, json);
    }
}

char *tel_json_take(nwb_buf_t *json, size_t *bad)
{
    char *s = NULL;

    if (nwb_test_json_check((const char *)json->data, json->len, bad) == 0) {
        s = malloc(json->len + 1);
        if (s == NULL) {
            abort();
        }
        memcpy(s, json->data, json->len);
        s[json->len] = '\0';
    }
    nwb_buf_cleanup(json);
    return s;
}

char *tel_built_report(const uint8_t *d, size_t len, const nwb_tel_report_options_t *ro)
{
    nwb_buf_t json;
    size_t bad = 0;
    char *s;

    nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
    if (nwb_tel_report_build(d, len, ro, &json, NULL) != 0) {
        nwb_buf_cleanup(&json);
        fail_msg("the report could not be built");
    }
    s = tel_json_take(&json, &bad);
    if (s == NULL) {
        fail_msg("the report is not valid JSON at %zu", bad);
    }
    return s;
}

struct seg_offsets {
    size_t *out;
    size_t cap;
    size_t n;
};

static int seg_offset(void *ctx, const nwb_tel_header_t *h, size_t offset)
{
    struct seg_offsets *so = ctx;

    (void)h;
    if (so->n < so->cap) {
        so->out[so->n++] = offset;
    }
    return 0;
}

size_t tel_segment_offsets(const uint8_t *d, size_t len, size_t *out, size_t cap)
{
    const nwb_tel_visitor_t v = {seg_offset, NULL};
    struct seg_offsets so = {out, cap, 0};
    nwb_tel_decode_result_t res;

    nwb_tel_stream_decode(d, len, 0, &v, &so, &res);
    return so.n;
}

int tel_report_in_pieces(const uint8_t *d, size_t len, const size_t *cuts, size_t ncuts,
                         unsigned flags, const nwb_tel_report_options_t *ro, nwb_buf_t *out)
{
    nwb_tel_report_state_t *s;
    size_t at = 0;
    int err;

    if (nwb_tel_report_state_create(&s) != 0) {
        abort();
    }
    for (size_t i = 0; i <= ncuts; i++) {
        const size_t end = i < ncuts ? cuts[i] : len;

        if (end < at || end > len) {
            abort();
        }
        (void)nwb_tel_report_state_feed(s, d + at, end - at, flags, NULL);
        at = end;
    }
    err = nwb_tel_report_state_write(s, ro, out);
    nwb_tel_report_state_destroy(s);
    return err;
}
