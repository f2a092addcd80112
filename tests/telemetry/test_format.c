/* SPDX-License-Identifier: MIT */
/*
 * test_format.c - the telemetry stream format: a round trip for the header and every payload,
 * unknown kinds skipped by length, newer payload versions read by their known prefix, memory
 * version and header size enforced, lying lengths and counts rejected at the right byte, the
 * format-1.1 kinds (thread, stringTable, counterFrame, mark) round-tripped and each of their
 * rejections given with its status, byte and reason, and the encoders refusing what the
 * decoder would reject.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "nwb/error.h"
#include "nwb/telemetry_format.h"
#include "tel_test_util.h"

/* Decode the single event at @p off in @p b. */
static int decode_at(const nwb_buf_t *b, size_t off, nwb_tel_event_t *ev, size_t *used, size_t *bad)
{
    return nwb_tel_event_decode(b->data + off, b->len - off, ev, used, bad, NULL);
}

static void test_format_header_round_trip(void **state)
{
    nwb_buf_t b;
    nwb_tel_header_t h;
    nwb_tel_header_t in;
    size_t used;
    size_t bad;

    (void)state;
    nwb_buf_init(&b, 1 << 16);
    memset(&in, 0, sizeof(in));
    in.seq = 42;
    in.start_wall_ns = 11;
    in.start_mono_ns = 22;
    in.dropped_events = 3;
    in.dropped_scopes = 4;
    in.dropped_uploads = 5;
    in.program = "game";
    in.program_len = 4;
    in.run = "abcd";
    in.run_len = 4;
    in.build_id = "b1";
    in.build_id_len = 2;
    assert_int_equal(nwb_tel_encode_header(&b, &in), 0);
    assert_int_equal(b.len, NWB_TEL_HEADER_FIXED + 10);
    assert_int_equal(nwb_tel_header_decode(b.data, b.len, &h, &used, &bad, NULL), 0);
    assert_int_equal(used, b.len);
    assert_int_equal(h.version, NWB_TEL_VERSION);
    assert_int_equal(h.seq, 42);
    assert_int_equal(h.start_wall_ns, 11);
    assert_int_equal(h.start_mono_ns, 22);
    assert_int_equal(h.dropped_events, 3);
    assert_int_equal(h.dropped_scopes, 4);
    assert_int_equal(h.dropped_uploads, 5);
    assert_memory_equal(h.program, "game", 4);
    assert_memory_equal(h.run, "abcd", 4);
    assert_memory_equal(h.build_id, "b1", 2);
    nwb_buf_cleanup(&b);
}

static void test_format_text_round_trip(void **state)
{
    nwb_buf_t b;
    nwb_tel_event_t ev;
    size_t used;
    size_t bad;
    static const char msg[] = "frame 7 took #0123456789abcdef ms \xff raw";

    (void)state;
    nwb_buf_init(&b, 1 << 16);
    assert_int_equal(nwb_tel_encode_text(&b, 123, 7, 2, 9, msg, sizeof(msg) - 1), 0);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), 0);
    assert_int_equal(used, b.len);
    assert_int_equal(ev.kind, NWB_TEL_KIND_TEXT_LOG);
    assert_int_equal(ev.version, 1);
    assert_true(ev.known);
    assert_int_equal(ev.timestamp_ns, 123);
    assert_int_equal(ev.frame, 7);
    assert_int_equal(ev.u.text.level, 2);
    assert_int_equal(ev.u.text.thread, 9);
    assert_int_equal(ev.u.text.len, sizeof(msg) - 1);
    assert_memory_equal(ev.u.text.msg, msg, sizeof(msg) - 1);
    nwb_buf_cleanup(&b);
}

static void test_format_diagnostic_round_trip(void **state)
{
    const nwb_tel_kv_t kv[3] = {{"a", "1", 1, 1}, {"key", "", 3, 0}, {"k2", "value two", 2, 9}};
    nwb_buf_t b;
    nwb_tel_event_t ev;
    nwb_tel_kv_t got;
    size_t pos = 0;
    size_t used;
    size_t bad;

    (void)state;
    nwb_buf_init(&b, 1 << 16);
    assert_int_equal(nwb_tel_encode_diag(&b, 5, 6, 0x1122334455667788ull, 3, kv, 3), 0);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), 0);
    assert_int_equal(ev.kind, NWB_TEL_KIND_DIAGNOSTIC);
    assert_int_equal(ev.u.diag.code, 0x1122334455667788ull);
    assert_int_equal(ev.u.diag.severity, 3);
    assert_int_equal(ev.u.diag.pair_count, 3);
    for (int i = 0; i < 3; i++) {
        assert_true(nwb_tel_diag_pair_next(&ev.u.diag, &pos, &got));
        assert_int_equal(got.key_len, kv[i].key_len);
        assert_int_equal(got.value_len, kv[i].value_len);
        assert_memory_equal(got.key, kv[i].key, kv[i].key_len);
        assert_memory_equal(got.value, kv[i].value, kv[i].value_len);
    }
    assert_false(nwb_tel_diag_pair_next(&ev.u.diag, &pos, &got));
    nwb_buf_cleanup(&b);
}

static void test_format_frame_graph_round_trip(void **state)
{
    const nwb_tel_fg_queue_t q[2] = {{101, NWB_TEL_QUEUE_GRAPHICS}, {102, NWB_TEL_QUEUE_TRANSFER}};
    const nwb_tel_fg_packet_t k[3] = {{0, 1, 2}, {1, 0, 1}, {0, 4, 0}};
    const nwb_tel_fg_pass_t p[4] = {{201, 0, 3}, {202, 1, 0}, {203, 2, 7}, {204, 2, 1}};
    const nwb_tel_fg_edge_t e[3] = {{0, 1}, {1, 2}, {0, 3}};
    nwb_tel_fg_frame_t fg;
    nwb_buf_t b;
    nwb_tel_event_t ev;
    size_t used;
    size_t bad;

    (void)state;
    memset(&fg, 0, sizeof(fg));
    fg.queues = q;
    fg.packets = k;
    fg.passes = p;
    fg.edges = e;
    fg.queue_count = 2;
    fg.packet_count = 3;
    fg.pass_count = 4;
    fg.edge_count = 3;
    fg.counters.emitted_waits = 5;
    fg.counters.same_queue_elisions = 6;
    fg.counters.duplicate_merges = 7;
    fg.counters.inherited_elisions = 8;
    nwb_buf_init(&b, 1 << 16);
    assert_int_equal(nwb_tel_encode_fg(&b, 1, 2, &fg), 0);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), 0);
    assert_int_equal(ev.kind, NWB_TEL_KIND_FRAME_GRAPH);
    assert_int_equal(ev.u.fg.queue_count, 2);
    assert_int_equal(ev.u.fg.packet_count, 3);
    assert_int_equal(ev.u.fg.pass_count, 4);
    assert_int_equal(ev.u.fg.edge_count, 3);
    assert_memory_equal(&ev.u.fg.counters, &fg.counters, sizeof(fg.counters));
    for (uint32_t i = 0; i < 2; i++) {
        nwb_tel_fg_queue_t g;

        nwb_tel_fg_queue_at(&ev.u.fg, i, &g);
        assert_int_equal(g.name, q[i].name);
        assert_int_equal(g.type, q[i].type);
    }
    for (uint32_t i = 0; i < 3; i++) {
        nwb_tel_fg_packet_t g;

        nwb_tel_fg_packet_at(&ev.u.fg, i, &g);
        assert_int_equal(g.queue, k[i].queue);
        assert_int_equal(g.waits, k[i].waits);
        assert_int_equal(g.signals, k[i].signals);
    }
    for (uint32_t i = 0; i < 4; i++) {
        nwb_tel_fg_pass_t g;

        nwb_tel_fg_pass_at(&ev.u.fg, i, &g);
        assert_int_equal(g.name, p[i].name);
        assert_int_equal(g.packet, p[i].packet);
        assert_int_equal(g.barriers, p[i].barriers);
    }
    for (uint32_t i = 0; i < 3; i++) {
        nwb_tel_fg_edge_t g;

        nwb_tel_fg_edge_at(&ev.u.fg, i, &g);
        assert_int_equal(g.from, e[i].from);
        assert_int_equal(g.to, e[i].to);
    }
    nwb_buf_cleanup(&b);
}

static void fill_perf(nwb_tel_cpu_scope_t *cpu, nwb_tel_gpu_scope_t *gpu)
{
    for (uint32_t i = 0; i < 3; i++) {
        cpu[i].name = 1000 + i;
        cpu[i].start_ns = 100 + i;
        cpu[i].end_ns = 200 + 10 * i;
        cpu[i].thread = 1 + i % 2;
        cpu[i].depth = (uint16_t)i;
    }
    memset(gpu, 0, 2 * sizeof(*gpu));
    for (uint32_t i = 0; i < 2; i++) {
        gpu[i].name = 2000 + i;
        gpu[i].source_frame_min = 50;
        gpu[i].source_frame_max = 51;
        gpu[i].gpu_samples = 10 + i;
        gpu[i].window_samples = 2;
        gpu[i].published_windows = 5;
        gpu[i].window_avg_ms = 1.25;
        gpu[i].window_min_ms = 1.0;
        gpu[i].window_max_ms = 1.5;
        gpu[i].total_ms = 12.5;
        gpu[i].sample_avg_ms = 12.5 / (10 + i);
    }
}

static void test_format_perf_round_trip(void **state)
{
    nwb_tel_cpu_scope_t cpu[3];
    nwb_tel_gpu_scope_t gpu[2];
    nwb_tel_perf_frame_t pf;
    nwb_buf_t b;
    nwb_tel_event_t ev;
    size_t used;
    size_t bad;

    (void)state;
    fill_perf(cpu, gpu);
    pf.frame_start_ns = 90;
    pf.frame_duration_ns = 16666667;
    pf.cpu = cpu;
    pf.cpu_count = 3;
    pf.gpu = gpu;
    pf.gpu_count = 2;
    nwb_buf_init(&b, 1 << 16);
    assert_int_equal(nwb_tel_encode_perf(&b, 3, 4, &pf), 0);
    assert_int_equal(b.len, NWB_TEL_EVENT_HEADER + NWB_TEL_PERF_HEADER + 3 * 32 + 2 * 80);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), 0);
    assert_int_equal(ev.u.perf.frame_start_ns, 90);
    assert_int_equal(ev.u.perf.frame_duration_ns, 16666667);
    assert_int_equal(ev.u.perf.cpu_count, 3);
    assert_int_equal(ev.u.perf.gpu_count, 2);
    for (uint32_t i = 0; i < 3; i++) {
        nwb_tel_cpu_scope_t s;

        nwb_tel_cpu_scope_at(&ev.u.perf, i, &s);
        assert_int_equal(s.name, cpu[i].name);
        assert_int_equal(s.start_ns, cpu[i].start_ns);
        assert_int_equal(s.end_ns, cpu[i].end_ns);
        assert_int_equal(s.thread, cpu[i].thread);
        assert_int_equal(s.depth, cpu[i].depth);
    }
    for (uint32_t i = 0; i < 2; i++) {
        nwb_tel_gpu_scope_t g;

        nwb_tel_gpu_scope_at(&ev.u.perf, i, &g);
        assert_int_equal(g.name, gpu[i].name);
        assert_int_equal(g.source_frame_min, 50);
        assert_int_equal(g.source_frame_max, 51);
        assert_int_equal(g.gpu_samples, gpu[i].gpu_samples);
        assert_int_equal(g.window_samples, 2);
        assert_int_equal(g.published_windows, 5);
        assert_true(g.window_avg_ms == 1.25 && g.window_min_ms == 1.0 && g.window_max_ms == 1.5);
        assert_true(g.total_ms == 12.5 && g.sample_avg_ms == gpu[i].sample_avg_ms);
    }
    nwb_buf_cleanup(&b);
}

static void test_format_memory_round_trip_and_totals(void **state)
{
    const nwb_tel_mem_record_t r[4] = {
        {11, NWB_TEL_MEM_ARENA, NWB_TEL_PEAK_LARGEST_ARENA, 1000, 600, 700, 10, 4},
        {12, NWB_TEL_MEM_ARENA, NWB_TEL_PEAK_LARGEST_ARENA, 2000, 100, 900, 5, 5},
        {13, NWB_TEL_MEM_HEAP_BACKING, NWB_TEL_PEAK_SAMPLED_HEAP, 9000, 5000, 6000, 0, 0},
        {14, NWB_TEL_MEM_EXPLICIT_SCOPE, NWB_TEL_PEAK_SCOPE, 0, 77, 80, 1, 0}};
    nwb_buf_t b;
    nwb_tel_event_t ev;
    size_t used;
    size_t bad;

    (void)state;
    nwb_buf_init(&b, 1 << 16);
    assert_int_equal(nwb_tel_encode_memory(&b, 1, 2, r, 4, 123456, 999), 0);
    assert_int_equal(b.len, NWB_TEL_EVENT_HEADER + 192 + 4 * 56);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), 0);
    assert_int_equal(ev.version, 1);
    assert_int_equal(ev.u.mem.count, 4);
    /* heapBacking is beside the arenas, never in their totals. */
    assert_int_equal(ev.u.mem.arena_reserved_bytes, 3000);
    assert_int_equal(ev.u.mem.arena_used_bytes, 700);
    assert_int_equal(ev.u.mem.arena_peak_bytes, 900);
    assert_int_equal(ev.u.mem.heap_reserved_bytes, 9000);
    assert_int_equal(ev.u.mem.heap_used_bytes, 5000);
    assert_int_equal(ev.u.mem.heap_peak_bytes, 6000);
    assert_int_equal(ev.u.mem.scope_used_bytes, 77);
    assert_int_equal(ev.u.mem.allocations, 15);
    assert_int_equal(ev.u.mem.frees, 9);
    assert_int_equal(ev.u.mem.process_rss_bytes, 123456);
    assert_int_equal(ev.u.mem.sample_time_ns, 999);
    assert_int_equal(ev.u.mem.arena_count, 2);
    assert_int_equal(ev.u.mem.heap_count, 1);
    assert_int_equal(ev.u.mem.scope_count, 1);
    for (uint32_t i = 0; i < 4; i++) {
        nwb_tel_mem_record_t g;

        nwb_tel_mem_record_at(&ev.u.mem, i, &g);
        assert_memory_equal(&g.name, &r[i].name, sizeof(g.name));
        assert_int_equal(g.source, r[i].source);
        assert_int_equal(g.peak_basis, r[i].peak_basis);
        assert_int_equal(g.reserved_bytes, r[i].reserved_bytes);
        assert_int_equal(g.used_bytes, r[i].used_bytes);
        assert_int_equal(g.peak_bytes, r[i].peak_bytes);
        assert_int_equal(g.allocations, r[i].allocations);
        assert_int_equal(g.frees, r[i].frees);
    }
    nwb_buf_cleanup(&b);
}

static void test_format_unknown_kind_skipped_by_length(void **state)
{
    static const uint8_t blob[5] = {9, 9, 9, 9, 9};
    nwb_buf_t b;
    nwb_tel_decode_result_t res;

    (void)state;
    nwb_buf_init(&b, 1 << 16);
    tel_put_header(&b, 1);
    assert_int_equal(nwb_tel_encode_raw(&b, 0x1234, 7, 1, 1, blob, sizeof(blob)), 0);
    assert_int_equal(nwb_tel_encode_text(&b, 2, 2, 0, 1, "after", 5), 0);
    assert_int_equal(nwb_tel_stream_decode(b.data, b.len, 0, NULL, NULL, &res), 0);
    assert_int_equal(res.events, 2);
    assert_int_equal(res.unknown, 1);
    assert_int_equal(res.consumed, b.len);
    nwb_buf_cleanup(&b);
}

static void test_format_newer_payload_version_reads_known_prefix(void **state)
{
    uint8_t p[NWB_TEL_TEXT_HEADER + 3 + 6];
    nwb_buf_t b;
    nwb_tel_event_t ev;
    size_t used;
    size_t bad;

    (void)state;
    memset(p, 0, sizeof(p));
    p[0] = 1;
    p[1] = 0x55; /* a v2 flag byte: ignored by a v1 reader */
    p[2] = 3;
    memcpy(p + NWB_TEL_TEXT_HEADER, "new", 3);
    memset(p + NWB_TEL_TEXT_HEADER + 3, 0xee, 6); /* v2 trailing fields */
    nwb_buf_init(&b, 1 << 16);
    assert_int_equal(nwb_tel_encode_raw(&b, NWB_TEL_KIND_TEXT_LOG, 2, 1, 1, p, sizeof(p)), 0);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), 0);
    assert_true(ev.known);
    assert_int_equal(ev.u.text.len, 3);
    assert_memory_equal(ev.u.text.msg, "new", 3);
    assert_int_equal(used, b.len);
    /* The same bytes as version 1 are rejected: a v1 payload must be exact. */
    b.data[2] = 1;
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_EPROTO);
    nwb_buf_cleanup(&b);
}

static void test_format_newer_stream_version_accepted(void **state)
{
    nwb_buf_t b;
    nwb_tel_decode_result_t res;
    uint8_t hdr[256];
    size_t hlen;

    (void)state;
    nwb_buf_init(&b, 1 << 16);
    tel_put_header(&b, 1);
    /* A version-2 header with 4 extension bytes after its strings. */
    hlen = b.len;
    memcpy(hdr, b.data, hlen);
    nwb_le16_store(hdr + 8, 2);
    nwb_le16_store(hdr + 10, (uint16_t)(hlen + 4));
    nwb_le16_store(hdr + 18, 0x8000); /* flags a v1 reader ignores in a v2 stream */
    memset(hdr + hlen, 0xab, 4);
    b.len = 0;
    assert_int_equal(nwb_buf_append(&b, hdr, hlen + 4), 0);
    assert_int_equal(nwb_tel_encode_text(&b, 1, 1, 0, 1, "x", 1), 0);
    assert_int_equal(nwb_tel_stream_decode(b.data, b.len, 0, NULL, NULL, &res), 0);
    assert_int_equal(res.max_version, 2);
    assert_int_equal(res.events, 1);
    nwb_buf_cleanup(&b);
}

static void test_format_memory_version_and_header_size_enforced(void **state)
{
    const nwb_tel_mem_record_t r = {1, 0, 0, 10, 5, 6, 1, 0};
    nwb_buf_t b;
    nwb_tel_event_t ev;
    size_t used;
    size_t bad = 0;
    uint8_t saved[4];

    (void)state;
    nwb_buf_init(&b, 1 << 16);
    assert_int_equal(nwb_tel_encode_memory(&b, 1, 1, &r, 1, 0, 0), 0);
    /* version 2 */
    nwb_le16_store(b.data + 2, 2);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_EVERSION);
    assert_int_equal(bad, 2);
    nwb_le16_store(b.data + 2, 1);
    /* header size 160 or 200 */
    memcpy(saved, b.data + 24, 4);
    nwb_le32_store(b.data + 24, 160);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_EPROTO);
    assert_int_equal(bad, 24);
    nwb_le32_store(b.data + 24, 200);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_EPROTO);
    memcpy(b.data + 24, saved, 4);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), 0);
    /* The encoder can only write version 1. */
    {
        uint8_t payload[NWB_TEL_MEM_HEADER + NWB_TEL_MEM_RECORD_SIZE];

        assert_int_equal(b.len - NWB_TEL_EVENT_HEADER, sizeof(payload));
        memcpy(payload, b.data + NWB_TEL_EVENT_HEADER, sizeof(payload));
        assert_int_equal(
            nwb_tel_encode_raw(&b, NWB_TEL_KIND_MEMORY_FRAME, 2, 1, 1, payload, sizeof(payload)),
            NWB_EVERSION);
        assert_int_equal(
            nwb_tel_encode_raw(&b, NWB_TEL_KIND_MEMORY_FRAME, 1, 1, 1, payload, sizeof(payload)),
            0);
    }
    nwb_buf_cleanup(&b);
}

static void test_format_memory_totals_must_match_records(void **state)
{
    const nwb_tel_mem_record_t r[2] = {{1, NWB_TEL_MEM_ARENA, 0, 10, 5, 6, 1, 0},
                                       {2, NWB_TEL_MEM_HEAP_BACKING, 1, 50, 40, 45, 0, 0}};
    nwb_buf_t b;
    nwb_tel_event_t ev;
    size_t used;
    size_t bad = 0;

    (void)state;
    nwb_buf_init(&b, 1 << 16);
    assert_int_equal(nwb_tel_encode_memory(&b, 1, 1, r, 2, 0, 0), 0);
    /* Claim the heap was added into arena use: rejected at the arena-used field. */
    nwb_le64_store(b.data + 24 + 24, 45);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_EPROTO);
    assert_int_equal(bad, 24 + 24);
    nwb_buf_cleanup(&b);
}

static void test_format_lying_lengths_rejected(void **state)
{
    nwb_tel_cpu_scope_t cpu[3];
    nwb_tel_gpu_scope_t gpu[2];
    nwb_tel_perf_frame_t pf = {0, 10, cpu, gpu, 3, 2};
    nwb_buf_t b;
    nwb_tel_event_t ev;
    size_t used;
    size_t bad = 0;

    (void)state;
    fill_perf(cpu, gpu);
    nwb_buf_init(&b, 1 << 16);
    assert_int_equal(nwb_tel_encode_perf(&b, 1, 1, &pf), 0);
    /* payload size beyond the input: truncated at the event start */
    nwb_le32_store(b.data + 4, (uint32_t)(b.len - NWB_TEL_EVENT_HEADER + 1));
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_ETRUNCATED);
    /* payload size above 16 MiB: too big, at the size field */
    nwb_le32_store(b.data + 4, NWB_TEL_PAYLOAD_MAX + 1);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_ETOOBIG);
    assert_int_equal(bad, 4);
    /* payload size smaller than the scope count needs */
    nwb_le32_store(b.data + 4, (uint32_t)(b.len - NWB_TEL_EVENT_HEADER - 8));
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_EPROTO);
    assert_int_equal(bad, 4);
    nwb_le32_store(b.data + 4, (uint32_t)(b.len - NWB_TEL_EVENT_HEADER));
    /* a CPU scope count that would overflow 32-bit arithmetic */
    nwb_le32_store(b.data + 24 + 16, 0xffffffffu);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_ETOOBIG);
    assert_int_equal(bad, 24 + 16);
    nwb_le32_store(b.data + 24 + 16, 4);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_EPROTO);
    nwb_le32_store(b.data + 24 + 16, 3);
    /* a scope that ends before it starts: offset of its end field */
    nwb_le64_store(b.data + 24 + 24 + 32 + 16, 0);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_EPROTO);
    assert_int_equal(bad, 24 + 24 + 32 + 16);
    nwb_buf_cleanup(&b);
}

static void test_format_text_and_diag_lengths_checked(void **state)
{
    const nwb_tel_kv_t kv = {"k", "v", 1, 1};
    nwb_buf_t b;
    nwb_tel_event_t ev;
    size_t used;
    size_t bad = 0;

    (void)state;
    nwb_buf_init(&b, 1 << 16);
    assert_int_equal(nwb_tel_encode_text(&b, 1, 1, 0, 1, "hello", 5), 0);
    nwb_le16_store(b.data + 24 + 2, 6); /* message length one past the payload */
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_EPROTO);
    nwb_le16_store(b.data + 24 + 2, 5000);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_ETOOBIG);
    assert_int_equal(bad, 24 + 2);
    b.len = 0;
    assert_int_equal(nwb_tel_encode_diag(&b, 1, 1, 7, 1, &kv, 1), 0);
    nwb_le16_store(b.data + 24 + 10, 2); /* two pairs claimed, one present */
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_EPROTO);
    nwb_le16_store(b.data + 24 + 10, 1);
    nwb_le16_store(b.data + 24 + 16 + 2, 2); /* value length past the payload */
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_EPROTO);
    nwb_buf_cleanup(&b);
}

static void test_format_frame_graph_indices_range_checked(void **state)
{
    const nwb_tel_fg_queue_t q = {1, 0};
    const nwb_tel_fg_packet_t k = {0, 0, 0};
    const nwb_tel_fg_pass_t p[2] = {{1, 0, 0}, {2, 0, 0}};
    const nwb_tel_fg_edge_t e = {0, 1};
    nwb_tel_fg_frame_t fg = {&q, &k, p, &e, 1, 1, 2, 1, {0, 0, 0, 0}};
    const size_t edge_off = 24 + 32 + 16 + 16 + 2 * 24;
    nwb_buf_t b;
    nwb_tel_event_t ev;
    size_t used;
    size_t bad = 0;

    (void)state;
    nwb_buf_init(&b, 1 << 16);
    assert_int_equal(nwb_tel_encode_fg(&b, 1, 1, &fg), 0);
    nwb_le32_store(b.data + edge_off + 4, 2);
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_ERANGE);
    assert_int_equal(bad, edge_off + 4);
    nwb_le32_store(b.data + edge_off + 4, 0); /* a self edge */
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_EPROTO);
    nwb_le32_store(b.data + edge_off + 4, 1);
    nwb_le32_store(b.data + 24 + 32 + 16, 1); /* packet on queue 1 of 1 */
    assert_int_equal(decode_at(&b, 0, &ev, &used, &bad), NWB_ERANGE);
    assert_int_equal(bad, 24 + 32 + 16);
    /* The encoder refuses the same. */
    {
        const nwb_tel_fg_edge_t bad_edge = {0, 5};

        fg.edges = &bad_edge;
        assert_int_equal(nwb_tel_encode_fg(&b, 1, 1, &fg), NWB_ERANGE);
    }
    nwb_buf_cleanup(&b);
}

static void test_format_gpu_floats_must_be_finite(void **state)
{
    nwb_tel_cpu_scope_t cpu[3];
    nwb_tel_gpu_scope_t gpu[2];
    nwb_tel_perf_frame_t pf = {0, 10, cpu, gpu, 0, 2};
    nwb_buf_t b;

    (void)state;
    fill_perf(cpu, gpu);
    nwb_buf_init(&b, 1 << 16);
    gpu[1].window_max_ms = NAN;
    assert_int_equal(nwb_tel_encode_perf(&b, 1, 1, &pf), NWB_EPROTO);
    assert_int_equal(b.len, 0); /* nothing half-written */
    gpu[1].window_max_ms = 1.5;
    gpu[1].total_ms = -1.0;
    assert_int_equal(nwb_tel_encode_perf(&b, 1, 1, &pf), NWB_EPROTO);
    gpu[1].total_ms = 3.0;
    gpu[1].window_min_ms = 2.0; /* above max */
    assert_int_equal(nwb_tel_encode_perf(&b, 1, 1, &pf), NWB_EPROTO);
    gpu[1].window_min_ms = 1.0;
    gpu[1].source_frame_min = 52; /* reversed bounds */
    assert_int_equal(nwb_tel_encode_perf(&b, 1, 1, &pf), NWB_EPROTO);
    gpu[1].source_frame_min = 50;
    assert_int_equal(nwb_tel_encode_perf(&b, 1, 1, &pf), 0);
    nwb_buf_cleanup(&b);
}

static void test_format_profile_kinds_round_trip(void **state)
{
    const nwb_tel_thread_info_t ti = {7, 4, "main", 10, 2, 1};
    const nwb_tel_string_t str[2] = {{nwb_name_hash("frame", 5), "frame", 5},
                                     {nwb_name_hash("render/shadows", 14), "render/shadows", 14}};
    const nwb_tel_counter_t cnt[2] = {{nwb_name_hash("draws", 5), 100, 1234.5, 7},
                                      {nwb_name_hash("voices", 6), 101, -3.0, 8}};
    nwb_tel_string_t got;
    nwb_tel_counter_t c;
    nwb_tel_event_t ev;
    nwb_buf_t b;
    size_t used;
    size_t bad = 0;
    size_t off = 0;
    size_t pos = 0;

    (void)state;
    nwb_buf_init(&b, 1 << 16);
    assert_int_equal(nwb_tel_encode_thread(&b, 1, 2, &ti), 0);
    assert_int_equal(nwb_tel_encode_strings(&b, 3, 4, str, 2), 0);
    assert_int_equal(nwb_tel_encode_counters(&b, 5, 6, cnt, 2), 0);
    assert_int_equal(nwb_tel_encode_mark(&b, 7, 8, 9, "level loaded", 12), 0);

    assert_int_equal(decode_at(&b, off, &ev, &used, &bad), 0);
    assert_int_equal(ev.kind, NWB_TEL_KIND_THREAD);
    assert_int_equal(ev.frame, 2);
    assert_int_equal(ev.u.thread.thread, 7);
    assert_int_equal(ev.u.thread.name_len, 4);
    assert_memory_equal(ev.u.thread.name, "main", 4);
    assert_int_equal(ev.u.thread.records, 10);
    assert_int_equal(ev.u.thread.dropped, 2);
    assert_int_equal(ev.u.thread.malformed, 1);
    off += used;
    assert_int_equal(decode_at(&b, off, &ev, &used, &bad), 0);
    assert_int_equal(ev.kind, NWB_TEL_KIND_STRING_TABLE);
    assert_int_equal(ev.u.strings.count, 2);
    for (int i = 0; i < 2; i++) {
        assert_true(nwb_tel_string_next(&ev.u.strings, &pos, &got));
        assert_true(got.name == str[i].name);
        assert_int_equal(got.len, str[i].len);
        assert_memory_equal(got.str, str[i].str, got.len);
    }
    assert_false(nwb_tel_string_next(&ev.u.strings, &pos, &got));
    off += used;
    assert_int_equal(decode_at(&b, off, &ev, &used, &bad), 0);
    assert_int_equal(ev.kind, NWB_TEL_KIND_COUNTER_FRAME);
    assert_int_equal(ev.u.counters.count, 2);
    nwb_tel_counter_at(&ev.u.counters, 1, &c);
    assert_true(c.name == cnt[1].name);
    assert_int_equal(c.ts_ns, 101);
    assert_true(c.value == -3.0);
    assert_int_equal(c.thread, 8);
    off += used;
    assert_int_equal(decode_at(&b, off, &ev, &used, &bad), 0);
    assert_int_equal(ev.kind, NWB_TEL_KIND_MARK);
    assert_int_equal(ev.timestamp_ns, 7);
    assert_int_equal(ev.u.mark.thread, 9);
    assert_int_equal(ev.u.mark.len, 12);
    assert_memory_equal(ev.u.mark.text, "level loaded", 12);
    assert_int_equal(off + used, b.len);
    nwb_buf_cleanup(&b);
}

/* One damaged event of the 1.1 kinds and what the decoder must say about it. */
struct profile_reject {
    unsigned kind;
    size_t at;      /* payload byte patched */
    unsigned width; /* 1, 2, 4 or 8 bytes stored there */
    uint64_t value;
    int status;
    size_t bad; /* the offset reported, from the event's start */
    const char *reason;
};

static void encode_profile_event(nwb_buf_t *b, unsigned kind)
{
    const nwb_tel_thread_info_t ti = {7, 4, "main", 10, 2, 1};
    const nwb_tel_string_t str = {nwb_name_hash("frame", 5), "frame", 5};
    const nwb_tel_counter_t cnt = {nwb_name_hash("draws", 5), 100, 1.5, 7};

    b->len = 0;
    switch (kind) {
    case NWB_TEL_KIND_THREAD:
        assert_int_equal(nwb_tel_encode_thread(b, 1, 1, &ti), 0);
        break;
    case NWB_TEL_KIND_STRING_TABLE:
        assert_int_equal(nwb_tel_encode_strings(b, 1, 1, &str, 1), 0);
        break;
    case NWB_TEL_KIND_COUNTER_FRAME:
        assert_int_equal(nwb_tel_encode_counters(b, 1, 1, &cnt, 1), 0);
        break;
    default:
        assert_int_equal(nwb_tel_encode_mark(b, 1, 1, 7, "level", 5), 0);
        break;
    }
}

static void test_format_profile_kinds_rejections_have_reasons(void **state)
{
    const uint64_t nan_bits = 0x7ff8000000000000ull;
    const uint64_t inf_bits = 0x7ff0000000000000ull;
    static const struct profile_reject cases[] = {
        /* thread: thread u32, name_len u16, reserved u16, records, dropped, malformed, name */
        {NWB_TEL_KIND_THREAD, 6, 1, 1, NWB_EPROTO, 24 + 6, "reserved thread bytes are not zero"},
        {NWB_TEL_KIND_THREAD, 4, 2, 65, NWB_ETOOBIG, 24 + 4, "thread name longer than 64 bytes"},
        {NWB_TEL_KIND_THREAD, 16, 8, 11, NWB_EPROTO, 24 + 16,
         "thread dropped more records than it recorded"},
        {NWB_TEL_KIND_THREAD, 4, 2, 5, NWB_EPROTO, 4, "thread name runs past the payload"},
        /* stringTable: count u32, reserved u32, entries (u64 name, u16 len, bytes) */
        {NWB_TEL_KIND_STRING_TABLE, 0, 4, 0, NWB_EPROTO, 24, "empty string table"},
        {NWB_TEL_KIND_STRING_TABLE, 0, 4, 1025, NWB_ETOOBIG, 24,
         "more than 1024 strings in one table"},
        {NWB_TEL_KIND_STRING_TABLE, 5, 1, 1, NWB_EPROTO, 24 + 5,
         "reserved string-table bytes are not zero"},
        {NWB_TEL_KIND_STRING_TABLE, 18, 1, 'F', NWB_EPROTO, 24 + 8,
         "string-table name is not its string's hash"},
        {NWB_TEL_KIND_STRING_TABLE, 16, 2, 0, NWB_EPROTO, 24 + 16, "empty string in a string table"},
        {NWB_TEL_KIND_STRING_TABLE, 16, 2, 257, NWB_ETOOBIG, 24 + 16,
         "string longer than 256 bytes"},
        {NWB_TEL_KIND_STRING_TABLE, 16, 2, 6, NWB_EPROTO, 4, "string entry runs past the payload"},
        {NWB_TEL_KIND_STRING_TABLE, 0, 4, 2, NWB_EPROTO, 4, "string entry runs past the payload"},
        /* counterFrame: count u32, reserved u32, samples (name, ts, f64 value, thread, reserved) */
        {NWB_TEL_KIND_COUNTER_FRAME, 0, 4, 0, NWB_EPROTO, 24, "counter frame without samples"},
        {NWB_TEL_KIND_COUNTER_FRAME, 0, 4, 16385, NWB_ETOOBIG, 24,
         "more than 16384 counter samples in one frame"},
        {NWB_TEL_KIND_COUNTER_FRAME, 4, 1, 1, NWB_EPROTO, 24 + 4,
         "reserved counter-frame bytes are not zero"},
        {NWB_TEL_KIND_COUNTER_FRAME, 8 + 16, 8, nan_bits, NWB_EPROTO, 24 + 8 + 16,
         "counter value is not finite"},
        {NWB_TEL_KIND_COUNTER_FRAME, 8 + 16, 8, inf_bits, NWB_EPROTO, 24 + 8 + 16,
         "counter value is not finite"},
        {NWB_TEL_KIND_COUNTER_FRAME, 8 + 30, 1, 1, NWB_EPROTO, 24 + 8 + 30,
         "reserved counter bytes are not zero"},
        {NWB_TEL_KIND_COUNTER_FRAME, 0, 4, 2, NWB_EPROTO, 4, "counter samples run past the payload"},
        /* mark: thread u32, text_len u16, reserved u16, text */
        {NWB_TEL_KIND_MARK, 7, 1, 1, NWB_EPROTO, 24 + 7, "reserved mark bytes are not zero"},
        {NWB_TEL_KIND_MARK, 4, 2, 0, NWB_EPROTO, 24 + 4, "mark without text"},
        {NWB_TEL_KIND_MARK, 4, 2, 257, NWB_ETOOBIG, 24 + 4, "mark text longer than 256 bytes"},
        {NWB_TEL_KIND_MARK, 4, 2, 6, NWB_EPROTO, 4, "mark text runs past the payload"},
    };
    nwb_buf_t b;

    (void)state;
    nwb_buf_init(&b, 1 << 16);
    for (size_t i = 0; i < NWB_ARRAY_SIZE(cases); i++) {
        const struct profile_reject *c = &cases[i];
        uint8_t *q;
        nwb_tel_event_t ev;
        const char *why = NULL;
        size_t used = 0;
        size_t bad = 0;
        int rc;

        encode_profile_event(&b, c->kind);
        q = b.data + NWB_TEL_EVENT_HEADER + c->at;
        if (c->width == 1) {
            q[0] = (uint8_t)(q[0] + c->value); /* a byte changed (or set, from zero) */
        } else if (c->width == 2) {
            nwb_le16_store(q, (uint16_t)c->value);
        } else if (c->width == 4) {
            nwb_le32_store(q, (uint32_t)c->value);
        } else {
            nwb_le64_store(q, c->value);
        }
        rc = nwb_tel_event_decode(b.data, b.len, &ev, &used, &bad, &why);
        if (rc != c->status || bad != c->bad || why == NULL || strcmp(why, c->reason) != 0) {
            fail_msg("case %zu (kind %u, byte %zu): got %d at %zu \"%s\", want %d at %zu \"%s\"", i,
                     c->kind, c->at, rc, bad, why != NULL ? why : "", c->status, c->bad,
                     c->reason);
        }
    }
    nwb_buf_cleanup(&b);
}

static void test_format_profile_encoders_refuse_what_the_decoder_rejects(void **state)
{
    nwb_tel_thread_info_t ti = {7, 65, "0123456789012345678901234567890123456789012345678901234567890123x",
                                1, 0, 0};
    nwb_tel_string_t str = {nwb_name_hash("frame", 5), "Frame", 5};
    nwb_tel_counter_t cnt = {nwb_name_hash("draws", 5), 1, INFINITY, 7};
    char text[NWB_TEL_MARK_MAX + 1];
    nwb_buf_t b;

    (void)state;
    memset(text, 'm', sizeof(text));
    nwb_buf_init(&b, 1 << 16);
    assert_int_equal(nwb_tel_encode_thread(&b, 1, 1, &ti), NWB_ETOOBIG);
    ti.name_len = 64;
    ti.dropped = 2; /* more than the records */
    assert_int_equal(nwb_tel_encode_thread(&b, 1, 1, &ti), NWB_EPROTO);
    assert_int_equal(nwb_tel_encode_strings(&b, 1, 1, &str, 1), NWB_EPROTO); /* not its hash */
    assert_true(nwb_tel_encode_strings(&b, 1, 1, &str, 0) != 0);             /* empty */
    assert_int_equal(nwb_tel_encode_counters(&b, 1, 1, &cnt, 1), NWB_EPROTO);
    cnt.value = NAN;
    assert_int_equal(nwb_tel_encode_counters(&b, 1, 1, &cnt, 1), NWB_EPROTO);
    assert_true(nwb_tel_encode_counters(&b, 1, 1, &cnt, 0) != 0);
    assert_true(nwb_tel_encode_mark(&b, 1, 1, 7, text, 0) != 0);
    assert_int_equal(nwb_tel_encode_mark(&b, 1, 1, 7, text, sizeof(text)), NWB_ETOOBIG);
    assert_int_equal(b.len, 0); /* nothing half-written */
    nwb_buf_cleanup(&b);
}

static void test_format_stream_failure_keeps_prefix_and_offset(void **state)
{
    nwb_buf_t b;
    nwb_tel_decode_result_t res;
    size_t second;

    (void)state;
    nwb_buf_init(&b, 1 << 16);
    tel_put_header(&b, 1);
    assert_int_equal(nwb_tel_encode_text(&b, 1, 1, 0, 1, "one", 3), 0);
    second = b.len;
    assert_int_equal(nwb_tel_encode_text(&b, 2, 2, 0, 1, "two", 3), 0);
    assert_int_equal(nwb_tel_encode_text(&b, 3, 3, 0, 1, "three", 5), 0);
    b.data[second + 24] = 9; /* level 9 in the second event */
    assert_int_equal(nwb_tel_stream_decode(b.data, b.len, 0, NULL, NULL, &res), NWB_EPROTO);
    assert_int_equal(res.events, 1);
    assert_int_equal(res.consumed, second);
    assert_int_equal(res.error_offset, second + 24);
    assert_non_null(res.reason);
    nwb_buf_cleanup(&b);
}

static void test_format_segments_and_upload_rules(void **state)
{
    nwb_buf_t b;
    nwb_tel_decode_result_t res;
    size_t second;

    (void)state;
    nwb_buf_init(&b, 1 << 16);
    /* An empty upload is truncated; an empty file is an empty stream. */
    assert_int_equal(
        nwb_tel_stream_decode(NULL, 0, NWB_TEL_DECODE_SINGLE_SEGMENT, NULL, NULL, &res),
        NWB_ETRUNCATED);
    assert_int_equal(nwb_tel_stream_decode(NULL, 0, 0, NULL, NULL, &res), 0);
    tel_put_header(&b, 1);
    assert_int_equal(nwb_tel_encode_text(&b, 1, 1, 0, 1, "a", 1), 0);
    second = b.len;
    tel_put_header(&b, 2);
    assert_int_equal(nwb_tel_encode_text(&b, 2, 2, 0, 1, "b", 1), 0);
    assert_int_equal(nwb_tel_stream_decode(b.data, b.len, 0, NULL, NULL, &res), 0);
    assert_int_equal(res.segments, 2);
    assert_int_equal(res.events, 2);
    /* One upload is exactly one segment. */
    assert_int_equal(
        nwb_tel_stream_decode(b.data, b.len, NWB_TEL_DECODE_SINGLE_SEGMENT, NULL, NULL, &res),
        NWB_EPROTO);
    assert_int_equal(res.error_offset, second);
    /* Bad magic at the first byte that differs. */
    b.data[3] ^= 0x20;
    assert_int_equal(nwb_tel_stream_decode(b.data, b.len, 0, NULL, NULL, &res), NWB_EMAGIC);
    assert_int_equal(res.error_offset, 3);
    b.data[3] ^= 0x20;
    /* Kind 0 is invalid. */
    nwb_le16_store(b.data + NWB_TEL_HEADER_FIXED + 23, 0);
    assert_int_equal(nwb_tel_stream_decode(b.data, b.len, 0, NULL, NULL, &res), NWB_EPROTO);
    assert_int_equal(res.error_offset, NWB_TEL_HEADER_FIXED + 23);
    nwb_buf_cleanup(&b);
}

static void test_format_buffer_cap_leaves_buffer_unchanged(void **state)
{
    nwb_buf_t b;

    (void)state;
    /* A text event is 24 + 8 + message bytes: 40 is the exact fit for 8 bytes. */
    nwb_buf_init(&b, 40);
    assert_int_equal(nwb_tel_encode_text(&b, 1, 1, 0, 1, "0123456789", 10), NWB_ETOOBIG);
    assert_int_equal(b.len, 0);
    assert_int_equal(nwb_tel_encode_text(&b, 1, 1, 0, 1, "01234567", 8), 0);
    assert_int_equal(b.len, 40);
    assert_int_equal(nwb_tel_encode_text(&b, 1, 1, 0, 1, "", 0), NWB_ETOOBIG);
    assert_int_equal(b.len, 40);
    nwb_buf_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_header_round_trip),
        cmocka_unit_test(test_format_text_round_trip),
        cmocka_unit_test(test_format_diagnostic_round_trip),
        cmocka_unit_test(test_format_frame_graph_round_trip),
        cmocka_unit_test(test_format_perf_round_trip),
        cmocka_unit_test(test_format_memory_round_trip_and_totals),
        cmocka_unit_test(test_format_unknown_kind_skipped_by_length),
        cmocka_unit_test(test_format_newer_payload_version_reads_known_prefix),
        cmocka_unit_test(test_format_newer_stream_version_accepted),
        cmocka_unit_test(test_format_memory_version_and_header_size_enforced),
        cmocka_unit_test(test_format_memory_totals_must_match_records),
        cmocka_unit_test(test_format_lying_lengths_rejected),
        cmocka_unit_test(test_format_text_and_diag_lengths_checked),
        cmocka_unit_test(test_format_frame_graph_indices_range_checked),
        cmocka_unit_test(test_format_gpu_floats_must_be_finite),
        cmocka_unit_test(test_format_profile_kinds_round_trip),
        cmocka_unit_test(test_format_profile_kinds_rejections_have_reasons),
        cmocka_unit_test(test_format_profile_encoders_refuse_what_the_decoder_rejects),
        cmocka_unit_test(test_format_stream_failure_keeps_prefix_and_offset),
        cmocka_unit_test(test_format_segments_and_upload_rules),
        cmocka_unit_test(test_format_buffer_cap_leaves_buffer_unchanged),
    };

    return cmocka_run_group_tests_name("telemetry.format", tests, NULL, NULL);
}
