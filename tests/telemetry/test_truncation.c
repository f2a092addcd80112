/* SPDX-License-Identifier: MIT */
/*
 * test_truncation.c - the small golden stream cut at every byte offset: a cut on a structure
 * boundary decodes cleanly; any other cut reports NWB_ETRUNCATED at the start of the segment
 * header or event it falls in, with every event before it delivered and nothing read past the
 * cut (each cut is an exact-size heap copy, so AddressSanitizer sees an over-read).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "nwb/error.h"
#include "nwb/telemetry_format.h"
#include "tel_test_util.h"

#define MAX_PARTS 4096

struct parts {
    size_t start[MAX_PARTS]; /* segment headers and events, in order */
    int is_event[MAX_PARTS];
    size_t n;
    size_t visited; /* events seen by a visitor */
};

static int on_segment(void *ctx, const nwb_tel_header_t *h, size_t offset)
{
    struct parts *p = ctx;

    (void)h;
    assert_true(p->n < MAX_PARTS);
    p->start[p->n] = offset;
    p->is_event[p->n++] = 0;
    return 0;
}

static int on_event(void *ctx, const nwb_tel_event_t *ev, size_t offset)
{
    struct parts *p = ctx;

    (void)ev;
    assert_true(p->n < MAX_PARTS);
    p->start[p->n] = offset;
    p->is_event[p->n++] = 1;
    return 0;
}

static int count_event(void *ctx, const nwb_tel_event_t *ev, size_t offset)
{
    (void)ev;
    (void)offset;
    ((struct parts *)ctx)->visited++;
    return 0;
}

static void test_truncation_every_offset_reports_the_right_offset(void **state)
{
    const nwb_tel_visitor_t map = {on_segment, on_event};
    const nwb_tel_visitor_t counter = {NULL, count_event};
    struct parts *p = calloc(1, sizeof(*p));
    nwb_tel_decode_result_t res;
    size_t len;
    uint8_t *data = tel_read_file(tel_data_path("golden_small.nwbs"), &len);
    size_t part = 0;
    size_t checked_truncated = 0;

    (void)state;
    assert_non_null(p);
    assert_non_null(data);
    assert_int_equal(nwb_tel_stream_decode(data, len, 0, &map, p, &res), 0);
    assert_true(res.segments >= 3);
    assert_true(p->n > 20);
    for (size_t cut = 0; cut <= len; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);
        size_t events_before = 0;
        struct parts seen;

        assert_non_null(copy);
        memcpy(copy, data, cut);
        /* The part the cut falls in: the last one starting at or before it. */
        while (part + 1 < p->n && p->start[part + 1] <= cut) {
            part++;
        }
        for (size_t i = 0; i < p->n && p->start[i] < cut && i < part; i++) {
            events_before += p->is_event[i] ? 1 : 0;
        }
        seen.visited = 0;
        nwb_tel_stream_decode(copy, cut, 0, &counter, &seen, &res);
        if (cut == 0 || cut == len || (part < p->n && p->start[part] == cut)) {
            /* On a boundary: everything before decodes, nothing is missing. */
            if (res.status != 0) {
                fail_msg("cut %zu on a boundary: status %d at %zu", cut, res.status,
                         res.error_offset);
            }
            assert_int_equal(res.consumed, cut);
        } else {
            if (res.status != NWB_ETRUNCATED || res.error_offset != p->start[part]) {
                fail_msg("cut %zu: status %d offset %zu, want NWB_ETRUNCATED at %zu", cut,
                         res.status, res.error_offset, p->start[part]);
            }
            assert_int_equal(res.consumed, p->start[part]);
            assert_int_equal(seen.visited, events_before);
            checked_truncated++;
        }
        free(copy);
    }
    assert_int_equal(checked_truncated, len - p->n); /* every cut not on a boundary */
    free(data);
    free(p);
}

static void test_truncation_of_an_upload_is_rejected_at_every_offset(void **state)
{
    nwb_tel_decode_result_t res;
    nwb_tel_header_t h;
    size_t len;
    size_t hlen;
    size_t first_seg_end;
    uint8_t *data = tel_read_file(tel_data_path("golden_small.nwbs"), &len);

    (void)state;
    assert_non_null(data);
    assert_int_equal(nwb_tel_header_decode(data, len, &h, &hlen, NULL, NULL), 0);
    /* The first segment alone is a valid upload. */
    for (first_seg_end = hlen; first_seg_end + 1 < len; first_seg_end++) {
        if (nwb_le16_load(data + first_seg_end) == NWB_TEL_KIND_SEGMENT) {
            break;
        }
        {
            nwb_tel_event_t ev;
            size_t used;

            assert_int_equal(nwb_tel_event_decode(data + first_seg_end, len - first_seg_end, &ev,
                                                  &used, NULL, NULL),
                             0);
            first_seg_end += used - 1;
        }
    }
    assert_int_equal(
        nwb_tel_stream_decode(data, first_seg_end, NWB_TEL_DECODE_SINGLE_SEGMENT, NULL, NULL, &res),
        0);
    /* Any cut inside the header is truncated at 0; an empty upload too. */
    for (size_t cut = 0; cut < hlen; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);

        memcpy(copy, data, cut);
        assert_int_equal(
            nwb_tel_stream_decode(copy, cut, NWB_TEL_DECODE_SINGLE_SEGMENT, NULL, NULL, &res),
            NWB_ETRUNCATED);
        assert_int_equal(res.error_offset, 0);
        free(copy);
    }
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncation_every_offset_reports_the_right_offset),
        cmocka_unit_test(test_truncation_of_an_upload_is_rejected_at_every_offset),
    };

    return cmocka_run_group_tests_name("telemetry.truncation", tests, NULL, NULL);
}
