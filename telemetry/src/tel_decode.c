/* SPDX-License-Identifier: MIT */
/*
 * tel_decode.c - the strict telemetry decoder: segment headers, events and every core payload
 * (docs/telemetry-format.md). It never allocates; every size is bounded and every offset sum is
 * checked before use. A failure names the first bad byte and a static reason.
 */
#include <math.h>
#include <string.h>

#include "nwb/error.h"
#include "nwb/telemetry_format.h"
#include "tel_int.h"

/* A failure inside a payload: status, offset relative to the payload start, reason. */
struct fail {
    int status;
    size_t off;
    const char *why;
};

static int set_fail(struct fail *f, int status, size_t off, const char *why)
{
    f->status = status;
    f->off = off;
    f->why = why;
    return status;
}

/* Offset of the payload_size field relative to the payload start (it precedes the payload). */
#define SIZE_FIELD    ((size_t)0 - (NWB_TEL_EVENT_HEADER - 4u))
#define VERSION_FIELD ((size_t)0 - (NWB_TEL_EVENT_HEADER - 2u))

static int all_zero(const uint8_t *p, size_t n, size_t *first)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != 0) {
            *first = i;
            return 0;
        }
    }
    return 1;
}

/*
 * Version rule shared by every payload: version 1 must be exactly @p need bytes; a newer
 * version may append fields, which an older reader skips.
 */
static int check_size(struct fail *f, size_t size, unsigned version, size_t need,
                      const char *what_short)
{
    if (size < need) {
        return set_fail(f, NWB_EPROTO, SIZE_FIELD, what_short);
    }
    if (version == 1 && size != need) {
        return set_fail(f, NWB_EPROTO, need, "trailing bytes after a version-1 payload");
    }
    return 0;
}

static int text_decode(const uint8_t *p, size_t size, unsigned version, nwb_tel_text_view_t *t,
                       struct fail *f)
{
    size_t z;

    if (size < NWB_TEL_TEXT_HEADER) {
        return set_fail(f, NWB_EPROTO, SIZE_FIELD, "text payload shorter than its header");
    }
    t->level = p[0];
    t->len = nwb_le16_load(p + 2);
    t->thread = nwb_le32_load(p + 4);
    t->msg = (const char *)(p + NWB_TEL_TEXT_HEADER);
    if (t->level > 3) {
        return set_fail(f, NWB_EPROTO, 0, "text level out of range");
    }
    if (version == 1 && !all_zero(p + 1, 1, &z)) {
        return set_fail(f, NWB_EPROTO, 1, "reserved text byte is not zero");
    }
    if (t->len > NWB_TEL_TEXT_MAX) {
        return set_fail(f, NWB_ETOOBIG, 2, "text message longer than 4096 bytes");
    }
    return check_size(f, size, version, NWB_TEL_TEXT_HEADER + (size_t)t->len,
                      "text message runs past the payload");
}

static int diag_decode(const uint8_t *p, size_t size, unsigned version, nwb_tel_diag_view_t *d,
                       struct fail *f)
{
    size_t pos = NWB_TEL_DIAG_HEADER;
    size_t z;

    if (size < NWB_TEL_DIAG_HEADER) {
        return set_fail(f, NWB_EPROTO, SIZE_FIELD, "diagnostic payload shorter than its header");
    }
    d->code = nwb_le64_load(p);
    d->severity = p[8];
    d->pair_count = nwb_le16_load(p + 10);
    d->pairs = p + NWB_TEL_DIAG_HEADER;
    if (d->severity > 3) {
        return set_fail(f, NWB_EPROTO, 8, "diagnostic severity out of range");
    }
    if (version == 1 && !all_zero(p + 9, 1, &z)) {
        return set_fail(f, NWB_EPROTO, 9, "reserved diagnostic byte is not zero");
    }
    if (d->pair_count > NWB_TEL_DIAG_PAIRS_MAX) {
        return set_fail(f, NWB_ETOOBIG, 10, "more than 64 diagnostic pairs");
    }
    if (version == 1 && !all_zero(p + 12, 4, &z)) {
        return set_fail(f, NWB_EPROTO, 12 + z, "reserved diagnostic bytes are not zero");
    }
    for (unsigned i = 0; i < d->pair_count; i++) {
        size_t klen;
        size_t vlen;

        if (size - pos < 4) {
            return set_fail(f, NWB_EPROTO, SIZE_FIELD, "diagnostic pair runs past the payload");
        }
        klen = nwb_le16_load(p + pos);
        vlen = nwb_le16_load(p + pos + 2);
        if (klen == 0) {
            return set_fail(f, NWB_EPROTO, pos, "empty diagnostic key");
        }
        if (klen > NWB_TEL_DIAG_KEY_MAX) {
            return set_fail(f, NWB_ETOOBIG, pos, "diagnostic key longer than 256 bytes");
        }
        if (vlen > NWB_TEL_DIAG_VALUE_MAX) {
            return set_fail(f, NWB_ETOOBIG, pos + 2, "diagnostic value longer than 1024 bytes");
        }
        if (size - pos - 4 < klen + vlen) {
            return set_fail(f, NWB_EPROTO, SIZE_FIELD, "diagnostic pair runs past the payload");
        }
        pos += 4 + klen + vlen;
    }
    return check_size(f, size, version, pos, "diagnostic pair runs past the payload");
}

static int fg_decode(const uint8_t *p, size_t size, unsigned version, nwb_tel_fg_view_t *g,
                     struct fail *f)
{
    size_t need;
    size_t off;
    size_t z;
    int err;

    if (size < NWB_TEL_FG_HEADER) {
        return set_fail(f, NWB_EPROTO, SIZE_FIELD, "frame-graph payload shorter than its header");
    }
    g->queue_count = nwb_le32_load(p);
    g->packet_count = nwb_le32_load(p + 4);
    g->pass_count = nwb_le32_load(p + 8);
    g->edge_count = nwb_le32_load(p + 12);
    g->counters.emitted_waits = nwb_le32_load(p + 16);
    g->counters.same_queue_elisions = nwb_le32_load(p + 20);
    g->counters.duplicate_merges = nwb_le32_load(p + 24);
    g->counters.inherited_elisions = nwb_le32_load(p + 28);
    if (g->queue_count > NWB_TEL_FG_QUEUES_MAX) {
        return set_fail(f, NWB_ETOOBIG, 0, "more than 64 queues");
    }
    if (g->packet_count > NWB_TEL_FG_PACKETS_MAX) {
        return set_fail(f, NWB_ETOOBIG, 4, "more than 4096 packets");
    }
    if (g->pass_count > NWB_TEL_FG_PASSES_MAX) {
        return set_fail(f, NWB_ETOOBIG, 8, "more than 16384 passes");
    }
    if (g->edge_count > NWB_TEL_FG_EDGES_MAX) {
        return set_fail(f, NWB_ETOOBIG, 12, "more than 65536 edges");
    }
    /* The bounds above keep this sum far below SIZE_MAX. */
    need = NWB_TEL_FG_HEADER + (size_t)g->queue_count * NWB_TEL_FG_QUEUE_SIZE +
           (size_t)g->packet_count * NWB_TEL_FG_PACKET_SIZE +
           (size_t)g->pass_count * NWB_TEL_FG_PASS_SIZE +
           (size_t)g->edge_count * NWB_TEL_FG_EDGE_SIZE;
    err = check_size(f, size, version, need, "frame-graph tables run past the payload");
    if (err != 0) {
        return err;
    }
    off = NWB_TEL_FG_HEADER;
    g->queues = p + off;
    for (uint32_t i = 0; i < g->queue_count; i++, off += NWB_TEL_FG_QUEUE_SIZE) {
        if (p[off + 8] > NWB_TEL_QUEUE_OTHER) {
            return set_fail(f, NWB_EPROTO, off + 8, "queue type out of range");
        }
        if (version == 1 && !all_zero(p + off + 9, 7, &z)) {
            return set_fail(f, NWB_EPROTO, off + 9 + z, "reserved queue bytes are not zero");
        }
    }
    g->packets = p + off;
    for (uint32_t i = 0; i < g->packet_count; i++, off += NWB_TEL_FG_PACKET_SIZE) {
        if (nwb_le32_load(p + off) >= g->queue_count) {
            return set_fail(f, NWB_ERANGE, off, "packet queue index out of range");
        }
        if (version == 1 && !all_zero(p + off + 12, 4, &z)) {
            return set_fail(f, NWB_EPROTO, off + 12 + z, "reserved packet bytes are not zero");
        }
    }
    g->passes = p + off;
    for (uint32_t i = 0; i < g->pass_count; i++, off += NWB_TEL_FG_PASS_SIZE) {
        if (nwb_le32_load(p + off + 8) >= g->packet_count) {
            return set_fail(f, NWB_ERANGE, off + 8, "pass packet index out of range");
        }
        if (version == 1 && !all_zero(p + off + 16, 8, &z)) {
            return set_fail(f, NWB_EPROTO, off + 16 + z, "reserved pass bytes are not zero");
        }
    }
    g->edges = p + off;
    for (uint32_t i = 0; i < g->edge_count; i++, off += NWB_TEL_FG_EDGE_SIZE) {
        const uint32_t from = nwb_le32_load(p + off);
        const uint32_t to = nwb_le32_load(p + off + 4);

        if (from >= g->pass_count) {
            return set_fail(f, NWB_ERANGE, off, "edge source pass out of range");
        }
        if (to >= g->pass_count) {
            return set_fail(f, NWB_ERANGE, off + 4, "edge target pass out of range");
        }
        if (from == to) {
            return set_fail(f, NWB_EPROTO, off + 4, "edge from a pass to itself");
        }
    }
    return 0;
}

static int ms_ok(const uint8_t *p)
{
    double d;
    const uint64_t bits = nwb_le64_load(p);

    memcpy(&d, &bits, sizeof(d));
    return isfinite(d) && d >= 0.0;
}

static double ms_load(const uint8_t *p)
{
    double d;
    const uint64_t bits = nwb_le64_load(p);

    memcpy(&d, &bits, sizeof(d));
    return d;
}

static int perf_decode(const uint8_t *p, size_t size, unsigned version, nwb_tel_perf_view_t *v,
                       struct fail *f)
{
    size_t need;
    size_t off;
    int err;

    if (size < NWB_TEL_PERF_HEADER) {
        return set_fail(f, NWB_EPROTO, SIZE_FIELD, "perf payload shorter than its header");
    }
    v->frame_start_ns = nwb_le64_load(p);
    v->frame_duration_ns = nwb_le64_load(p + 8);
    v->cpu_count = nwb_le32_load(p + 16);
    v->gpu_count = nwb_le32_load(p + 20);
    if (v->cpu_count > NWB_TEL_CPU_SCOPES_MAX) {
        return set_fail(f, NWB_ETOOBIG, 16, "more than 65536 CPU scopes");
    }
    if (v->gpu_count > NWB_TEL_GPU_SCOPES_MAX) {
        return set_fail(f, NWB_ETOOBIG, 20, "more than 4096 GPU scopes");
    }
    need = NWB_TEL_PERF_HEADER + (size_t)v->cpu_count * NWB_TEL_CPU_SCOPE_SIZE +
           (size_t)v->gpu_count * NWB_TEL_GPU_SCOPE_SIZE;
    err = check_size(f, size, version, need, "perf scopes run past the payload");
    if (err != 0) {
        return err;
    }
    off = NWB_TEL_PERF_HEADER;
    v->cpu = p + off;
    for (uint32_t i = 0; i < v->cpu_count; i++, off += NWB_TEL_CPU_SCOPE_SIZE) {
        const uint8_t *s = p + off;

        if (nwb_le64_load(s + 16) < nwb_le64_load(s + 8)) {
            return set_fail(f, NWB_EPROTO, off + 16, "CPU scope ends before it starts");
        }
        if (nwb_le16_load(s + 28) > NWB_TEL_DEPTH_MAX) {
            return set_fail(f, NWB_EPROTO, off + 28, "CPU scope depth above 255");
        }
        if (version == 1 && nwb_le16_load(s + 30) != 0) {
            return set_fail(f, NWB_EPROTO, off + 30, "reserved CPU scope bytes are not zero");
        }
    }
    v->gpu = p + off;
    for (uint32_t i = 0; i < v->gpu_count; i++, off += NWB_TEL_GPU_SCOPE_SIZE) {
        const uint8_t *s = p + off;

        if (nwb_le64_load(s + 16) < nwb_le64_load(s + 8)) {
            return set_fail(f, NWB_EPROTO, off + 16, "GPU source-frame bounds are reversed");
        }
        if (nwb_le32_load(s + 32) == 0) {
            return set_fail(f, NWB_EPROTO, off + 32, "GPU window without samples");
        }
        if (nwb_le64_load(s + 24) < nwb_le32_load(s + 32)) {
            return set_fail(f, NWB_EPROTO, off + 24, "GPU sample total below the window's");
        }
        if (nwb_le32_load(s + 36) == 0) {
            return set_fail(f, NWB_EPROTO, off + 36, "GPU published window count is zero");
        }
        for (size_t k = 40; k < NWB_TEL_GPU_SCOPE_SIZE; k += 8) {
            if (!ms_ok(s + k)) {
                return set_fail(f, NWB_EPROTO, off + k, "GPU time is negative or not finite");
            }
        }
        if (ms_load(s + 48) > ms_load(s + 56)) {
            return set_fail(f, NWB_EPROTO, off + 56, "GPU window minimum above its maximum");
        }
    }
    return 0;
}

static int thread_decode(const uint8_t *p, size_t size, unsigned version, nwb_tel_thread_view_t *t,
                         struct fail *f)
{
    size_t z;

    if (size < NWB_TEL_THREAD_HEADER) {
        return set_fail(f, NWB_EPROTO, SIZE_FIELD, "thread payload shorter than its header");
    }
    t->thread = nwb_le32_load(p);
    t->name_len = nwb_le16_load(p + 4);
    t->records = nwb_le64_load(p + 8);
    t->dropped = nwb_le64_load(p + 16);
    t->malformed = nwb_le64_load(p + 24);
    t->name = (const char *)(p + NWB_TEL_THREAD_HEADER);
    if (version == 1 && !all_zero(p + 6, 2, &z)) {
        return set_fail(f, NWB_EPROTO, 6 + z, "reserved thread bytes are not zero");
    }
    if (t->name_len > NWB_TEL_THREAD_NAME_MAX) {
        return set_fail(f, NWB_ETOOBIG, 4, "thread name longer than 64 bytes");
    }
    if (t->dropped > t->records) {
        return set_fail(f, NWB_EPROTO, 16, "thread dropped more records than it recorded");
    }
    return check_size(f, size, version, NWB_TEL_THREAD_HEADER + (size_t)t->name_len,
                      "thread name runs past the payload");
}

static int strings_decode(const uint8_t *p, size_t size, unsigned version,
                          nwb_tel_strings_view_t *v, struct fail *f)
{
    size_t pos = NWB_TEL_STRINGS_HEADER;
    size_t z;

    if (size < NWB_TEL_STRINGS_HEADER) {
        return set_fail(f, NWB_EPROTO, SIZE_FIELD, "string table shorter than its header");
    }
    v->count = nwb_le32_load(p);
    v->entries = p + NWB_TEL_STRINGS_HEADER;
    if (v->count == 0) {
        return set_fail(f, NWB_EPROTO, 0, "empty string table");
    }
    if (v->count > NWB_TEL_STRINGS_MAX) {
        return set_fail(f, NWB_ETOOBIG, 0, "more than 1024 strings in one table");
    }
    if (version == 1 && !all_zero(p + 4, 4, &z)) {
        return set_fail(f, NWB_EPROTO, 4 + z, "reserved string-table bytes are not zero");
    }
    for (uint32_t i = 0; i < v->count; i++) {
        size_t len;

        if (size - pos < NWB_TEL_STRING_ENTRY) {
            return set_fail(f, NWB_EPROTO, SIZE_FIELD, "string entry runs past the payload");
        }
        len = nwb_le16_load(p + pos + 8);
        if (len == 0) {
            return set_fail(f, NWB_EPROTO, pos + 8, "empty string in a string table");
        }
        if (len > NWB_TEL_STRING_MAX) {
            return set_fail(f, NWB_ETOOBIG, pos + 8, "string longer than 256 bytes");
        }
        if (size - pos - NWB_TEL_STRING_ENTRY < len) {
            return set_fail(f, NWB_EPROTO, SIZE_FIELD, "string entry runs past the payload");
        }
        if (nwb_name_hash(p + pos + NWB_TEL_STRING_ENTRY, len) != nwb_le64_load(p + pos)) {
            return set_fail(f, NWB_EPROTO, pos, "string-table name is not its string's hash");
        }
        pos += NWB_TEL_STRING_ENTRY + len;
    }
    return check_size(f, size, version, pos, "string entry runs past the payload");
}

static int counters_decode(const uint8_t *p, size_t size, unsigned version,
                           nwb_tel_counter_view_t *v, struct fail *f)
{
    size_t z;
    int err;

    if (size < NWB_TEL_COUNTER_HEADER) {
        return set_fail(f, NWB_EPROTO, SIZE_FIELD, "counter frame shorter than its header");
    }
    v->count = nwb_le32_load(p);
    v->records = p + NWB_TEL_COUNTER_HEADER;
    if (v->count == 0) {
        return set_fail(f, NWB_EPROTO, 0, "counter frame without samples");
    }
    if (v->count > NWB_TEL_COUNTERS_MAX) {
        return set_fail(f, NWB_ETOOBIG, 0, "more than 16384 counter samples in one frame");
    }
    if (version == 1 && !all_zero(p + 4, 4, &z)) {
        return set_fail(f, NWB_EPROTO, 4 + z, "reserved counter-frame bytes are not zero");
    }
    err = check_size(f, size, version,
                     NWB_TEL_COUNTER_HEADER + (size_t)v->count * NWB_TEL_COUNTER_SIZE,
                     "counter samples run past the payload");
    if (err != 0) {
        return err;
    }
    for (uint32_t i = 0; i < v->count; i++) {
        const size_t off = NWB_TEL_COUNTER_HEADER + (size_t)i * NWB_TEL_COUNTER_SIZE;
        double d;
        const uint64_t bits = nwb_le64_load(p + off + 16);

        memcpy(&d, &bits, sizeof(d));
        if (!isfinite(d)) {
            return set_fail(f, NWB_EPROTO, off + 16, "counter value is not finite");
        }
        if (version == 1 && !all_zero(p + off + 28, 4, &z)) {
            return set_fail(f, NWB_EPROTO, off + 28 + z, "reserved counter bytes are not zero");
        }
    }
    return 0;
}

static int mark_decode(const uint8_t *p, size_t size, unsigned version, nwb_tel_mark_view_t *m,
                       struct fail *f)
{
    size_t z;

    if (size < NWB_TEL_MARK_HEADER) {
        return set_fail(f, NWB_EPROTO, SIZE_FIELD, "mark payload shorter than its header");
    }
    m->thread = nwb_le32_load(p);
    m->len = nwb_le16_load(p + 4);
    m->text = (const char *)(p + NWB_TEL_MARK_HEADER);
    if (version == 1 && !all_zero(p + 6, 2, &z)) {
        return set_fail(f, NWB_EPROTO, 6 + z, "reserved mark bytes are not zero");
    }
    if (m->len == 0) {
        return set_fail(f, NWB_EPROTO, 4, "mark without text");
    }
    if (m->len > NWB_TEL_MARK_MAX) {
        return set_fail(f, NWB_ETOOBIG, 4, "mark text longer than 256 bytes");
    }
    return check_size(f, size, version, NWB_TEL_MARK_HEADER + (size_t)m->len,
                      "mark text runs past the payload");
}

/* a += b with overflow detection. */
static int add_ok(uint64_t *a, uint64_t b)
{
    if (*a > UINT64_MAX - b) {
        return 0;
    }
    *a += b;
    return 1;
}

static int mem_decode(const uint8_t *p, size_t size, unsigned version, nwb_tel_mem_view_t *m,
                      struct fail *f)
{
    uint64_t sum[7] = {0}; /* arena reserved, used, peak(max), heap reserved, used, peak, scope */
    uint64_t allocs = 0;
    uint64_t frees = 0;
    uint32_t counts[3] = {0, 0, 0};
    size_t off;
    size_t z;

    if (version != NWB_TEL_MEM_VERSION) {
        return set_fail(f, NWB_EVERSION, VERSION_FIELD, "memory payload version is not 1");
    }
    if (size < NWB_TEL_MEM_HEADER) {
        return set_fail(f, NWB_EPROTO, SIZE_FIELD, "memory payload shorter than its header");
    }
    if (nwb_le32_load(p) != NWB_TEL_MEM_HEADER) {
        return set_fail(f, NWB_EPROTO, 0, "memory header size is not 192");
    }
    m->count = nwb_le32_load(p + 4);
    if (m->count > NWB_TEL_MEM_RECORDS_MAX) {
        return set_fail(f, NWB_ETOOBIG, 4, "more than 4096 memory records");
    }
    if (nwb_le32_load(p + 8) != NWB_TEL_MEM_RECORD_SIZE) {
        return set_fail(f, NWB_EPROTO, 8, "memory record size is not 56");
    }
    if (nwb_le32_load(p + 12) != 0) {
        return set_fail(f, NWB_EPROTO, 12, "memory flags are not zero");
    }
    if (!all_zero(p + 116, NWB_TEL_MEM_HEADER - 116, &z)) {
        return set_fail(f, NWB_EPROTO, 116 + z, "reserved memory header bytes are not zero");
    }
    if (check_size(f, size, 1, NWB_TEL_MEM_HEADER + (size_t)m->count * NWB_TEL_MEM_RECORD_SIZE,
                   "memory records run past the payload") != 0) {
        return f->status;
    }
    m->arena_reserved_bytes = nwb_le64_load(p + 16);
    m->arena_used_bytes = nwb_le64_load(p + 24);
    m->arena_peak_bytes = nwb_le64_load(p + 32);
    m->heap_reserved_bytes = nwb_le64_load(p + 40);
    m->heap_used_bytes = nwb_le64_load(p + 48);
    m->heap_peak_bytes = nwb_le64_load(p + 56);
    m->scope_used_bytes = nwb_le64_load(p + 64);
    m->allocations = nwb_le64_load(p + 72);
    m->frees = nwb_le64_load(p + 80);
    m->process_rss_bytes = nwb_le64_load(p + 88);
    m->sample_time_ns = nwb_le64_load(p + 96);
    m->arena_count = nwb_le32_load(p + 104);
    m->heap_count = nwb_le32_load(p + 108);
    m->scope_count = nwb_le32_load(p + 112);
    m->records = p + NWB_TEL_MEM_HEADER;
    off = NWB_TEL_MEM_HEADER;
    for (uint32_t i = 0; i < m->count; i++, off += NWB_TEL_MEM_RECORD_SIZE) {
        const uint8_t *r = p + off;
        const uint64_t reserved = nwb_le64_load(r + 16);
        const uint64_t used = nwb_le64_load(r + 24);
        const uint64_t peak = nwb_le64_load(r + 32);
        const uint64_t a = nwb_le64_load(r + 40);
        const uint64_t fr = nwb_le64_load(r + 48);
        int ok = 1;

        if (r[8] > NWB_TEL_MEM_EXPLICIT_SCOPE) {
            return set_fail(f, NWB_EPROTO, off + 8, "memory source out of range");
        }
        if (r[9] > NWB_TEL_PEAK_SCOPE) {
            return set_fail(f, NWB_EPROTO, off + 9, "memory peak basis out of range");
        }
        if (!all_zero(r + 10, 6, &z)) {
            return set_fail(f, NWB_EPROTO, off + 10 + z, "reserved memory record bytes not zero");
        }
        if (peak < used) {
            return set_fail(f, NWB_EPROTO, off + 32, "memory peak below current use");
        }
        if (fr > a) {
            return set_fail(f, NWB_EPROTO, off + 48, "more frees than allocations");
        }
        counts[r[8]]++;
        switch (r[8]) {
        case NWB_TEL_MEM_ARENA:
            ok = add_ok(&sum[0], reserved) && add_ok(&sum[1], used) && add_ok(&allocs, a) &&
                 add_ok(&frees, fr);
            sum[2] = peak > sum[2] ? peak : sum[2];
            break;
        case NWB_TEL_MEM_HEAP_BACKING:
            ok = add_ok(&sum[3], reserved) && add_ok(&sum[4], used);
            sum[5] = peak > sum[5] ? peak : sum[5];
            break;
        default:
            ok = add_ok(&sum[6], used);
            break;
        }
        if (!ok) {
            return set_fail(f, NWB_EPROTO, off + 16, "memory totals overflow 64 bits");
        }
    }
    {
        static const char *const why[7] = {
            "arena reserved total does not match the records",
            "arena used total does not match the records",
            "largest arena peak does not match the records",
            "heap-backing reserved total does not match the records",
            "heap-backing used total does not match the records",
            "heap-backing peak does not match the records",
            "explicit-scope total does not match the records",
        };
        for (unsigned k = 0; k < 7; k++) {
            if (nwb_le64_load(p + 16 + 8 * k) != sum[k]) {
                return set_fail(f, NWB_EPROTO, 16 + 8 * k, why[k]);
            }
        }
    }
    if (m->allocations != allocs) {
        return set_fail(f, NWB_EPROTO, 72, "allocation total does not match the arena records");
    }
    if (m->frees != frees) {
        return set_fail(f, NWB_EPROTO, 80, "free total does not match the arena records");
    }
    for (unsigned k = 0; k < 3; k++) {
        if (nwb_le32_load(p + 104 + 4 * k) != counts[k]) {
            return set_fail(f, NWB_EPROTO, 104 + 4 * k, "memory record counts do not match");
        }
    }
    return 0;
}

int nwb__tel_payload_validate(unsigned kind, unsigned version, const uint8_t *p, size_t size,
                              nwb_tel_event_t *ev, size_t *bad, const char **why)
{
    struct fail f = {0, 0, NULL};
    int err;

    switch (kind) {
    case NWB_TEL_KIND_TEXT_LOG:
        err = text_decode(p, size, version, &ev->u.text, &f);
        break;
    case NWB_TEL_KIND_DIAGNOSTIC:
        err = diag_decode(p, size, version, &ev->u.diag, &f);
        break;
    case NWB_TEL_KIND_FRAME_GRAPH:
        err = fg_decode(p, size, version, &ev->u.fg, &f);
        break;
    case NWB_TEL_KIND_PERF_FRAME:
        err = perf_decode(p, size, version, &ev->u.perf, &f);
        break;
    case NWB_TEL_KIND_MEMORY_FRAME:
        err = mem_decode(p, size, version, &ev->u.mem, &f);
        break;
    case NWB_TEL_KIND_THREAD:
        err = thread_decode(p, size, version, &ev->u.thread, &f);
        break;
    case NWB_TEL_KIND_STRING_TABLE:
        err = strings_decode(p, size, version, &ev->u.strings, &f);
        break;
    case NWB_TEL_KIND_COUNTER_FRAME:
        err = counters_decode(p, size, version, &ev->u.counters, &f);
        break;
    case NWB_TEL_KIND_MARK:
        err = mark_decode(p, size, version, &ev->u.mark, &f);
        break;
    default:
        return 0;
    }
    if (err != 0) {
        /* Offsets before the payload (its size and version fields) wrap around: adding the
         * event header size brings them back to event-relative offsets. */
        *bad = NWB_TEL_EVENT_HEADER + f.off;
        *why = f.why;
    }
    return err;
}

int nwb_tel_event_decode(const uint8_t *data, size_t len, nwb_tel_event_t *ev, size_t *consumed,
                         size_t *bad_offset, const char **reason)
{
    const char *why = NULL;
    size_t bad = 0;
    int err = 0;

    *consumed = 0;
    if (len < NWB_TEL_EVENT_HEADER) {
        err = NWB_ETRUNCATED;
        why = "input ends inside an event header";
        goto out;
    }
    ev->kind = nwb_le16_load(data);
    ev->version = nwb_le16_load(data + 2);
    ev->payload_size = nwb_le32_load(data + 4);
    ev->timestamp_ns = nwb_le64_load(data + 8);
    ev->frame = nwb_le64_load(data + 16);
    ev->payload = data + NWB_TEL_EVENT_HEADER;
    ev->known = 0;
    if (ev->kind == NWB_TEL_KIND_INVALID) {
        err = NWB_EPROTO;
        why = "event kind 0 is invalid";
        goto out;
    }
    if (ev->kind == NWB_TEL_KIND_SEGMENT) {
        err = NWB_EPROTO;
        why = "segment header where an event was expected";
        goto out;
    }
    if (ev->payload_size > NWB_TEL_PAYLOAD_MAX) {
        err = NWB_ETOOBIG;
        bad = 4;
        why = "event payload larger than 16 MiB";
        goto out;
    }
    if (len - NWB_TEL_EVENT_HEADER < ev->payload_size) {
        err = NWB_ETRUNCATED;
        why = "input ends inside an event payload";
        goto out;
    }
    if (ev->kind <= NWB_TEL_KIND_LAST) {
        if (ev->version == 0) {
            err = NWB_EVERSION;
            bad = 2;
            why = "payload version 0 is invalid";
            goto out;
        }
        err = nwb__tel_payload_validate(ev->kind, ev->version, ev->payload, ev->payload_size, ev,
                                        &bad, &why);
        if (err != 0) {
            goto out;
        }
        ev->known = 1;
    }
    *consumed = NWB_TEL_EVENT_HEADER + (size_t)ev->payload_size;
out:
    if (err != 0) {
        if (bad_offset != NULL) {
            *bad_offset = bad;
        }
        if (reason != NULL) {
            *reason = why;
        }
    }
    return err;
}

int nwb_tel_header_decode(const uint8_t *data, size_t len, nwb_tel_header_t *h, size_t *consumed,
                          size_t *bad_offset, const char **reason)
{
    const size_t magic_avail = len < NWB_TEL_MAGIC_LEN ? len : NWB_TEL_MAGIC_LEN;
    const char *why = NULL;
    size_t bad = 0;
    size_t strings;
    int err = 0;

    *consumed = 0;
    for (size_t i = 0; i < magic_avail; i++) {
        if (data[i] != (uint8_t)NWB_TEL_MAGIC[i]) {
            err = NWB_EMAGIC;
            bad = i;
            why = "bad telemetry magic";
            goto out;
        }
    }
    if (len < NWB_TEL_HEADER_FIXED) {
        err = NWB_ETRUNCATED;
        why = "input ends inside a segment header";
        goto out;
    }
    h->version = nwb_le16_load(data + 8);
    h->header_size = nwb_le16_load(data + 10);
    h->program_len = nwb_le16_load(data + 12);
    h->run_len = nwb_le16_load(data + 14);
    h->build_id_len = nwb_le16_load(data + 16);
    h->seq = nwb_le64_load(data + 24);
    h->start_wall_ns = nwb_le64_load(data + 32);
    h->start_mono_ns = nwb_le64_load(data + 40);
    h->dropped_events = nwb_le64_load(data + 48);
    h->dropped_scopes = nwb_le64_load(data + 56);
    h->dropped_uploads = nwb_le64_load(data + 64);
    if (h->version == 0) {
        err = NWB_EVERSION;
        bad = 8;
        why = "stream version 0 is invalid";
        goto out;
    }
    if (h->program_len > NWB_TEL_PROGRAM_MAX) {
        err = NWB_ETOOBIG;
        bad = 12;
        why = "program name longer than 128 bytes";
        goto out;
    }
    if (h->run_len > NWB_TEL_RUN_MAX) {
        err = NWB_ETOOBIG;
        bad = 14;
        why = "run id longer than 64 bytes";
        goto out;
    }
    if (h->build_id_len > NWB_TEL_BUILD_ID_MAX) {
        err = NWB_ETOOBIG;
        bad = 16;
        why = "build id longer than 256 bytes";
        goto out;
    }
    strings = (size_t)h->program_len + h->run_len + h->build_id_len;
    if (h->header_size < NWB_TEL_HEADER_FIXED + strings ||
        (h->version == 1 && h->header_size != NWB_TEL_HEADER_FIXED + strings)) {
        err = NWB_EPROTO;
        bad = 10;
        why = "segment header size does not match its strings";
        goto out;
    }
    if (h->version == 1) {
        if (nwb_le16_load(data + 18) != 0) {
            err = NWB_EPROTO;
            bad = 18;
            why = "segment flags are not zero";
            goto out;
        }
        if (nwb_le32_load(data + 20) != 0) {
            err = NWB_EPROTO;
            bad = 20;
            why = "reserved segment bytes are not zero";
            goto out;
        }
    }
    if (len < h->header_size) {
        err = NWB_ETRUNCATED;
        why = "input ends inside a segment header";
        goto out;
    }
    h->program = (const char *)data + NWB_TEL_HEADER_FIXED;
    h->run = h->program + h->program_len;
    h->build_id = h->run + h->run_len;
    *consumed = h->header_size;
out:
    if (err != 0) {
        if (bad_offset != NULL) {
            *bad_offset = bad;
        }
        if (reason != NULL) {
            *reason = why;
        }
    }
    return err;
}

int nwb_tel_stream_decode(const uint8_t *data, size_t len, unsigned flags,
                          const nwb_tel_visitor_t *v, void *ctx, nwb_tel_decode_result_t *res)
{
    size_t pos = 0;
    int in_segment = 0;
    int skip = 0;
    int err = 0;
    size_t bad = 0;
    const char *why = NULL;

    memset(res, 0, sizeof(*res));
    if (len == 0 && (flags & NWB_TEL_DECODE_SINGLE_SEGMENT)) {
        err = NWB_ETRUNCATED;
        why = "empty upload";
        goto out;
    }
    while (pos < len) {
        const size_t rem = len - pos;
        size_t used = 0;

        if (!in_segment || (rem >= 2 && nwb_le16_load(data + pos) == NWB_TEL_KIND_SEGMENT)) {
            nwb_tel_header_t h;

            if (in_segment && (flags & NWB_TEL_DECODE_SINGLE_SEGMENT)) {
                err = NWB_EPROTO;
                why = "a second segment header inside one upload";
                goto out;
            }
            err = nwb_tel_header_decode(data + pos, rem, &h, &used, &bad, &why);
            if (err != 0) {
                bad += pos;
                goto out;
            }
            res->segments++;
            if (h.version > res->max_version) {
                res->max_version = h.version;
            }
            skip = 0;
            if (v != NULL && v->segment != NULL) {
                const int r = v->segment(ctx, &h, pos);

                if (r < 0) {
                    err = r;
                    why = "stopped by the visitor";
                    goto out;
                }
                skip = r > 0;
            }
            in_segment = 1;
            pos += used;
            continue;
        }
        {
            nwb_tel_event_t ev;

            err = nwb_tel_event_decode(data + pos, rem, &ev, &used, &bad, &why);
            if (err != 0) {
                bad += pos;
                goto out;
            }
            res->events++;
            res->unknown += ev.known ? 0 : 1;
            if (!skip && v != NULL && v->event != NULL) {
                err = v->event(ctx, &ev, pos);
                if (err != 0) {
                    why = "stopped by the visitor";
                    goto out;
                }
            }
        }
        pos += used;
    }
out:
    res->consumed = pos;
    res->status = err;
    if (err != 0) {
        /* Decoder failures set bad (absolute); the others fail where pos stands. */
        res->error_offset = bad != 0 ? bad : pos;
        res->reason = why;
    }
    return err;
}
