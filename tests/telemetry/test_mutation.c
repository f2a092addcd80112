/* SPDX-License-Identifier: MIT */
/*
 * test_mutation.c - 3,000 deterministic mutations of the small golden stream, which holds every
 * core kind (bit flips, byte and word overwrites with boundary values, truncations, insertions,
 * deletions, lying event sizes and kinds, and bytes of the format-1.1 payloads: thread,
 * stringTable, counterFrame, mark). Each must be rejected with a known status or decode; either
 * way the report built from it must be strict JSON, and the same fed to the incremental state
 * segment by segment; the Chrome trace and the frame detail of the first frame must be strict
 * JSON too. The reports are also written, one per line, to
 * mutation_reports.jsonl for telemetry.json_python to load with python3's json module.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/error.h"
#include "nwb/namesym.h"
#include "nwb/telemetry_report.h"
#include "tel_test_util.h"

#define MUTATIONS 3000

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int known_status(int s)
{
    return s == 0 || s == NWB_ETRUNCATED || s == NWB_EPROTO || s == NWB_EMAGIC ||
           s == NWB_EVERSION || s == NWB_ETOOBIG || s == NWB_ERANGE;
}

/* The events of the format-1.1 kinds: where their payloads start and how long they are. */
struct payloads {
    size_t at[256];
    size_t len[256];
    size_t n;
    unsigned kinds_seen; /* bit k: core kind k occurs */
};

/* Event starts of the golden stream, for mutations aimed at event headers, and the 1.1
 * payloads in @p pl. */
static size_t event_starts(const uint8_t *d, size_t len, size_t *out, size_t cap,
                           struct payloads *pl)
{
    size_t n = 0;
    size_t pos = 0;

    while (pos < len && n < cap) {
        size_t used;

        if (nwb_le16_load(d + pos) == NWB_TEL_KIND_SEGMENT) {
            nwb_tel_header_t h;

            if (nwb_tel_header_decode(d + pos, len - pos, &h, &used, NULL, NULL) != 0) {
                break;
            }
        } else {
            nwb_tel_event_t ev;

            if (nwb_tel_event_decode(d + pos, len - pos, &ev, &used, NULL, NULL) != 0) {
                break;
            }
            out[n++] = pos;
            if (ev.known) {
                pl->kinds_seen |= 1u << ev.kind;
            }
            if (ev.known && ev.kind >= NWB_TEL_KIND_THREAD && pl->n < NWB_ARRAY_SIZE(pl->at)) {
                pl->at[pl->n] = pos + NWB_TEL_EVENT_HEADER;
                pl->len[pl->n++] = ev.payload_size;
            }
        }
        pos += used;
    }
    return n;
}

static size_t mutate(uint64_t *s, unsigned kind, const uint8_t *src, size_t len, uint8_t *dst,
                     const size_t *events, size_t nevents, const struct payloads *pl)
{
    static const uint32_t words[] = {0,           1,       0x7fffffffu, 0x80000000u, 0xffffffffu,
                                     0x01000001u, 0x574eu, 5,           6,           0x10000u};
    const size_t at = (size_t)(rng(s) % len);
    size_t n = len;

    memcpy(dst, src, len);
    switch (kind) {
    case 0: /* one bit */
        dst[at] ^= (uint8_t)(1u << (rng(s) % 8));
        break;
    case 1: /* one byte */
        dst[at] = (uint8_t)rng(s);
        break;
    case 2: /* a boundary word anywhere */
        if (at + 4 <= len) {
            nwb_le32_store(dst + at, words[rng(s) % NWB_ARRAY_SIZE(words)]);
        }
        break;
    case 3: /* truncation */
        n = at;
        break;
    case 4: { /* insertion of a copied slice (grows by at most 64 bytes) */
        const size_t from = (size_t)(rng(s) % len);
        size_t k = 1 + (size_t)(rng(s) % 64);

        if (from + k > len) {
            k = len - from;
        }
        memcpy(dst, src, at);
        memcpy(dst + at, src + from, k);
        memcpy(dst + at + k, src + at, len - at);
        n = len + k;
        break;
    }
    case 5: { /* deletion */
        size_t k = 1 + (size_t)(rng(s) % 64);

        if (at + k > len) {
            k = len - at;
        }
        memmove(dst + at, dst + at + k, len - at - k);
        n = len - k;
        break;
    }
    case 7: { /* a byte or a boundary word inside a thread, string-table, counter or mark
               * payload: counts, lengths, reserved bytes, hashes, string bytes, float bits */
        const size_t e = (size_t)(rng(s) % pl->n);
        const size_t off = pl->at[e] + (size_t)(rng(s) % pl->len[e]);

        if (rng(s) % 2 == 0 || off + 4 > len) {
            dst[off] = (uint8_t)rng(s);
        } else {
            nwb_le32_store(dst + off, words[rng(s) % NWB_ARRAY_SIZE(words)]);
        }
        break;
    }
    default: { /* an event header field: kind, version, size */
        const size_t e = events[rng(s) % nevents];
        const unsigned field = (unsigned)(rng(s) % 3);

        if (field == 0) {
            nwb_le16_store(dst + e, (uint16_t)words[rng(s) % NWB_ARRAY_SIZE(words)]);
        } else if (field == 1) {
            nwb_le16_store(dst + e + 2, (uint16_t)(rng(s) % 4));
        } else {
            nwb_le32_store(dst + e + 4, nwb_le32_load(dst + e + 4) + (uint32_t)(rng(s) % 17) - 8u);
        }
        break;
    }
    }
    return n;
}

/* The Chrome trace and the first frame's detail of a mutated stream are strict JSON. */
static void check_trace_and_detail(const uint8_t *d, size_t n, const nwb_namesym_table_t *names,
                                   unsigned i)
{
    char *trace = NULL;
    size_t trace_len = 0;
    FILE *f = open_memstream(&trace, &trace_len);
    nwb_tel_report_state_t *s;
    uint64_t first;
    uint64_t last;
    size_t bad = 0;

    assert_non_null(f);
    assert_int_equal(nwb_tel_chrome_write(d, n, names, f, NULL), 0);
    assert_int_equal(fclose(f), 0);
    if (nwb_test_json_check(trace, trace_len, &bad) != 0) {
        tel_write_file("mutation_bad_input.nwbs", d, n);
        fail_msg("mutation %u: trace is not valid JSON at byte %zu", i, bad);
    }
    free(trace);
    assert_int_equal(nwb_tel_report_state_create(&s), 0);
    (void)nwb_tel_report_state_feed(s, d, n, 0, NULL);
    if (nwb_tel_report_state_frame_range(s, &first, &last) == 0) {
        nwb_buf_t out;
        nwb_json_t j;

        nwb_buf_init(&out, 64u << 20);
        nwb_json_init(&j, &out, NULL);
        if (nwb_tel_frame_detail_write(d, n, first, names, &j) == 0 &&
            (nwb_json_finish(&j) != 0 ||
             nwb_test_json_check((const char *)out.data, out.len, &bad) != 0)) {
            tel_write_file("mutation_bad_input.nwbs", d, n);
            fail_msg("mutation %u: frame detail is not valid JSON at byte %zu", i, bad);
        }
        nwb_buf_cleanup(&out);
    }
    nwb_tel_report_state_destroy(s);
}

static void test_mutation_3000_rejected_or_reported_as_valid_json(void **state)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    nwb_namesym_table_t *names = NULL;
    size_t len;
    uint8_t *golden = tel_read_file(tel_data_path("golden_small.nwbs"), &len);
    size_t events[1024];
    size_t nevents;
    struct payloads pl;
    uint64_t seed = 0x5eed5eedull;
    unsigned rejected = 0;
    unsigned decoded = 0;
    unsigned by_status[8] = {0};
    char err[256];
    FILE *jsonl = fopen("mutation_reports.jsonl", "w");
    nwb_buf_t json;

    (void)state;
    memset(&pl, 0, sizeof(pl));
    assert_non_null(golden);
    assert_non_null(jsonl);
    assert_int_equal(nwb_namesym_table_create(&names), 0);
    assert_true(nwb_namesym_table_add_file(names, tel_data_path("golden_small.namesym"), NULL, NULL,
                                           err, sizeof(err)) > 0);
    ro.names = names;
    nevents = event_starts(golden, len, events, NWB_ARRAY_SIZE(events), &pl);
    assert_true(nevents > 10);
    /* The stream holds every core kind, so every decoder and reader path gets mutated. */
    for (unsigned k = 1; k <= NWB_TEL_KIND_LAST; k++) {
        if (!(pl.kinds_seen & (1u << k))) {
            fail_msg("golden_small.nwbs has no %s event", nwb_tel_kind_name(k));
        }
    }
    assert_true(pl.n >= 4);
    nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
    for (unsigned i = 0; i < MUTATIONS; i++) {
        uint8_t *work = malloc(len + 64);
        nwb_tel_decode_result_t res;
        uint8_t *exact;
        size_t n;
        size_t bad = 0;

        assert_non_null(work);
        n = mutate(&seed, i % 8, golden, len, work, events, nevents, &pl);
        /* An exact-size copy: any read past the end is an AddressSanitizer error. */
        exact = malloc(n ? n : 1);
        assert_non_null(exact);
        memcpy(exact, work, n);
        json.len = 0;
        assert_int_equal(nwb_tel_report_build(exact, n, &ro, &json, &res), 0);
        if (!known_status(res.status)) {
            fail_msg("mutation %u: unexpected status %d", i, res.status);
        }
        if (res.status != 0) {
            rejected++;
            assert_true(res.error_offset <= n);
            assert_true(res.consumed <= res.error_offset);
            assert_non_null(res.reason);
        } else {
            decoded++;
        }
        by_status[-res.status % 8]++;
        if (nwb_test_json_check((const char *)json.data, json.len, &bad) != 0) {
            tel_write_file("mutation_bad_input.nwbs", exact, n);
            fail_msg("mutation %u: report is not valid JSON at byte %zu", i, bad);
        }
        assert_int_equal(fwrite(json.data, 1, json.len, jsonl), json.len);
        /* Fed to the incremental state cut at every segment the decoder reads, it is the
         * same report byte for byte. */
        {
            size_t cuts[64];
            const size_t ncuts = tel_segment_offsets(exact, n, cuts, NWB_ARRAY_SIZE(cuts));
            nwb_buf_t pieces;

            nwb_buf_init(&pieces, NWB_TEL_REPORT_JSON_MAX);
            assert_int_equal(tel_report_in_pieces(exact, n, cuts, ncuts, 0, &ro, &pieces), 0);
            if (pieces.len != json.len || memcmp(pieces.data, json.data, json.len) != 0) {
                tel_write_file("mutation_bad_input.nwbs", exact, n);
                fail_msg("mutation %u: the report fed in %zu pieces differs", i, ncuts + 1);
            }
            nwb_buf_cleanup(&pieces);
        }
        check_trace_and_detail(exact, n, names, i);
        free(exact);
        free(work);
    }
    assert_int_equal(fclose(jsonl), 0);
    print_message("mutations: %u rejected with a status, %u decoded\n", rejected, decoded);
    /* Both outcomes must occur: a test that only ever sees one of them proves little. */
    assert_true(rejected > MUTATIONS / 4);
    assert_true(decoded > MUTATIONS / 20);
    (void)by_status;
    nwb_buf_cleanup(&json);
    nwb_namesym_table_destroy(names);
    free(golden);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutation_3000_rejected_or_reported_as_valid_json),
    };

    return cmocka_run_group_tests_name("telemetry.mutation", tests, NULL, NULL);
}
