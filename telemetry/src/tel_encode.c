/* SPDX-License-Identifier: MIT */
/*
 * tel_encode.c - the telemetry encoders: segment headers and each core payload, written into a
 * capped buffer. An encoder writes the bytes, then runs the decoder's own payload check on them
 * and rolls back if it fails, so nothing the decoder would reject can be produced.
 */
#include <string.h>

#include "nwb/error.h"
#include "nwb/telemetry_format.h"
#include "tel_int.h"

size_t nwb_tel_header_size(size_t program_len, size_t run_len, size_t build_id_len)
{
    return NWB_TEL_HEADER_FIXED + program_len + run_len + build_id_len;
}

int nwb_tel_encode_header(nwb_buf_t *b, const nwb_tel_header_t *h)
{
    size_t size;
    uint8_t *p;
    int err;

    if (h->program_len > NWB_TEL_PROGRAM_MAX || h->run_len > NWB_TEL_RUN_MAX ||
        h->build_id_len > NWB_TEL_BUILD_ID_MAX) {
        return NWB_ETOOBIG;
    }
    size = nwb_tel_header_size(h->program_len, h->run_len, h->build_id_len);
    err = nwb_buf_reserve(b, size);
    if (err != 0) {
        return err;
    }
    p = b->data + b->len;
    memset(p, 0, NWB_TEL_HEADER_FIXED);
    memcpy(p, NWB_TEL_MAGIC, NWB_TEL_MAGIC_LEN);
    nwb_le16_store(p + 8, NWB_TEL_VERSION);
    nwb_le16_store(p + 10, (uint16_t)size);
    nwb_le16_store(p + 12, h->program_len);
    nwb_le16_store(p + 14, h->run_len);
    nwb_le16_store(p + 16, h->build_id_len);
    nwb_le64_store(p + 24, h->seq);
    nwb_le64_store(p + 32, h->start_wall_ns);
    nwb_le64_store(p + 40, h->start_mono_ns);
    nwb_le64_store(p + 48, h->dropped_events);
    nwb_le64_store(p + 56, h->dropped_scopes);
    nwb_le64_store(p + 64, h->dropped_uploads);
    if (h->program_len > 0) {
        memcpy(p + NWB_TEL_HEADER_FIXED, h->program, h->program_len);
    }
    if (h->run_len > 0) {
        memcpy(p + NWB_TEL_HEADER_FIXED + h->program_len, h->run, h->run_len);
    }
    if (h->build_id_len > 0) {
        memcpy(p + NWB_TEL_HEADER_FIXED + h->program_len + h->run_len, h->build_id,
               h->build_id_len);
    }
    b->len += size;
    return 0;
}

/* Reserve an event of @p payload bytes and write its header; returns the payload pointer. */
static uint8_t *event_begin(nwb_buf_t *b, unsigned kind, unsigned version, uint64_t ts,
                            uint64_t frame, size_t payload, int *err)
{
    uint8_t *p;

    if (payload > NWB_TEL_PAYLOAD_MAX) {
        *err = NWB_ETOOBIG;
        return NULL;
    }
    *err = nwb_buf_reserve(b, NWB_TEL_EVENT_HEADER + payload);
    if (*err != 0) {
        return NULL;
    }
    p = b->data + b->len;
    nwb_le16_store(p, (uint16_t)kind);
    nwb_le16_store(p + 2, (uint16_t)version);
    nwb_le32_store(p + 4, (uint32_t)payload);
    nwb_le64_store(p + 8, ts);
    nwb_le64_store(p + 16, frame);
    return p + NWB_TEL_EVENT_HEADER;
}

/* Validate the payload just written and commit the event, or leave b->len untouched. */
static int event_commit(nwb_buf_t *b, unsigned kind, unsigned version, const uint8_t *payload,
                        size_t size)
{
    nwb_tel_event_t ev;
    size_t bad;
    const char *why;
    const int err = nwb__tel_payload_validate(kind, version, payload, size, &ev, &bad, &why);

    if (err != 0) {
        return err;
    }
    b->len += NWB_TEL_EVENT_HEADER + size;
    return 0;
}

int nwb_tel_encode_text(nwb_buf_t *b, uint64_t ts, uint64_t frame, unsigned level, uint32_t thread,
                        const char *msg, size_t len)
{
    uint8_t *p;
    int err;

    if (len > NWB_TEL_TEXT_MAX) {
        return NWB_ETOOBIG;
    }
    if (level > 3) {
        return NWB_EPROTO;
    }
    p = event_begin(b, NWB_TEL_KIND_TEXT_LOG, 1, ts, frame, NWB_TEL_TEXT_HEADER + len, &err);
    if (p == NULL) {
        return err;
    }
    p[0] = (uint8_t)level;
    p[1] = 0;
    nwb_le16_store(p + 2, (uint16_t)len);
    nwb_le32_store(p + 4, thread);
    if (len > 0) {
        memcpy(p + NWB_TEL_TEXT_HEADER, msg, len);
    }
    return event_commit(b, NWB_TEL_KIND_TEXT_LOG, 1, p, NWB_TEL_TEXT_HEADER + len);
}

int nwb_tel_encode_diag(nwb_buf_t *b, uint64_t ts, uint64_t frame, nwb_name_t code,
                        unsigned severity, const nwb_tel_kv_t *pairs, size_t n)
{
    size_t size = NWB_TEL_DIAG_HEADER;
    size_t pos;
    uint8_t *p;
    int err;

    if (n > NWB_TEL_DIAG_PAIRS_MAX) {
        return NWB_ETOOBIG;
    }
    for (size_t i = 0; i < n; i++) {
        if (pairs[i].key_len > NWB_TEL_DIAG_KEY_MAX ||
            pairs[i].value_len > NWB_TEL_DIAG_VALUE_MAX) {
            return NWB_ETOOBIG;
        }
        size += 4 + (size_t)pairs[i].key_len + pairs[i].value_len;
    }
    p = event_begin(b, NWB_TEL_KIND_DIAGNOSTIC, 1, ts, frame, size, &err);
    if (p == NULL) {
        return err;
    }
    memset(p, 0, NWB_TEL_DIAG_HEADER);
    nwb_le64_store(p, code);
    p[8] = (uint8_t)(severity > 255 ? 255 : severity);
    nwb_le16_store(p + 10, (uint16_t)n);
    pos = NWB_TEL_DIAG_HEADER;
    for (size_t i = 0; i < n; i++) {
        nwb_le16_store(p + pos, pairs[i].key_len);
        nwb_le16_store(p + pos + 2, pairs[i].value_len);
        if (pairs[i].key_len > 0) {
            memcpy(p + pos + 4, pairs[i].key, pairs[i].key_len);
        }
        if (pairs[i].value_len > 0) {
            memcpy(p + pos + 4 + pairs[i].key_len, pairs[i].value, pairs[i].value_len);
        }
        pos += 4 + (size_t)pairs[i].key_len + pairs[i].value_len;
    }
    return event_commit(b, NWB_TEL_KIND_DIAGNOSTIC, 1, p, size);
}

int nwb_tel_encode_fg(nwb_buf_t *b, uint64_t ts, uint64_t frame, const nwb_tel_fg_frame_t *fg)
{
    size_t size;
    uint8_t *p;
    uint8_t *q;
    int err;

    if (fg->queue_count > NWB_TEL_FG_QUEUES_MAX || fg->packet_count > NWB_TEL_FG_PACKETS_MAX ||
        fg->pass_count > NWB_TEL_FG_PASSES_MAX || fg->edge_count > NWB_TEL_FG_EDGES_MAX) {
        return NWB_ETOOBIG;
    }
    size = NWB_TEL_FG_HEADER + (size_t)fg->queue_count * NWB_TEL_FG_QUEUE_SIZE +
           (size_t)fg->packet_count * NWB_TEL_FG_PACKET_SIZE +
           (size_t)fg->pass_count * NWB_TEL_FG_PASS_SIZE +
           (size_t)fg->edge_count * NWB_TEL_FG_EDGE_SIZE;
    p = event_begin(b, NWB_TEL_KIND_FRAME_GRAPH, 1, ts, frame, size, &err);
    if (p == NULL) {
        return err;
    }
    memset(p, 0, size);
    nwb_le32_store(p, fg->queue_count);
    nwb_le32_store(p + 4, fg->packet_count);
    nwb_le32_store(p + 8, fg->pass_count);
    nwb_le32_store(p + 12, fg->edge_count);
    nwb_le32_store(p + 16, fg->counters.emitted_waits);
    nwb_le32_store(p + 20, fg->counters.same_queue_elisions);
    nwb_le32_store(p + 24, fg->counters.duplicate_merges);
    nwb_le32_store(p + 28, fg->counters.inherited_elisions);
    q = p + NWB_TEL_FG_HEADER;
    for (uint32_t i = 0; i < fg->queue_count; i++, q += NWB_TEL_FG_QUEUE_SIZE) {
        nwb_le64_store(q, fg->queues[i].name);
        q[8] = fg->queues[i].type;
    }
    for (uint32_t i = 0; i < fg->packet_count; i++, q += NWB_TEL_FG_PACKET_SIZE) {
        nwb_le32_store(q, fg->packets[i].queue);
        nwb_le32_store(q + 4, fg->packets[i].waits);
        nwb_le32_store(q + 8, fg->packets[i].signals);
    }
    for (uint32_t i = 0; i < fg->pass_count; i++, q += NWB_TEL_FG_PASS_SIZE) {
        nwb_le64_store(q, fg->passes[i].name);
        nwb_le32_store(q + 8, fg->passes[i].packet);
        nwb_le32_store(q + 12, fg->passes[i].barriers);
    }
    for (uint32_t i = 0; i < fg->edge_count; i++, q += NWB_TEL_FG_EDGE_SIZE) {
        nwb_le32_store(q, fg->edges[i].from);
        nwb_le32_store(q + 4, fg->edges[i].to);
    }
    return event_commit(b, NWB_TEL_KIND_FRAME_GRAPH, 1, p, size);
}

static void ms_store(uint8_t *p, double d)
{
    uint64_t bits;

    memcpy(&bits, &d, sizeof(bits));
    nwb_le64_store(p, bits);
}

void nwb__tel_cpu_scopes_store(uint8_t *q, const nwb_tel_cpu_scope_t *s, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++, q += NWB_TEL_CPU_SCOPE_SIZE) {
        nwb_le64_store(q, s[i].name);
        nwb_le64_store(q + 8, s[i].start_ns);
        nwb_le64_store(q + 16, s[i].end_ns);
        nwb_le32_store(q + 24, s[i].thread);
        nwb_le16_store(q + 28, s[i].depth);
        nwb_le16_store(q + 30, 0);
    }
}

/* Write a perf event; @p check 0 skips the decoder pass (the recorder's own, pre-checked
 * input only). */
static int encode_perf(nwb_buf_t *b, uint64_t ts, uint64_t frame, const nwb_tel_perf_frame_t *pf,
                       int check)
{
    size_t size;
    uint8_t *p;
    uint8_t *q;
    int err;

    if (pf->cpu_count > NWB_TEL_CPU_SCOPES_MAX || pf->gpu_count > NWB_TEL_GPU_SCOPES_MAX) {
        return NWB_ETOOBIG;
    }
    size = NWB_TEL_PERF_HEADER + (size_t)pf->cpu_count * NWB_TEL_CPU_SCOPE_SIZE +
           (size_t)pf->gpu_count * NWB_TEL_GPU_SCOPE_SIZE;
    p = event_begin(b, NWB_TEL_KIND_PERF_FRAME, 1, ts, frame, size, &err);
    if (p == NULL) {
        return err;
    }
    nwb_le64_store(p, pf->frame_start_ns);
    nwb_le64_store(p + 8, pf->frame_duration_ns);
    nwb_le32_store(p + 16, pf->cpu_count);
    nwb_le32_store(p + 20, pf->gpu_count);
    q = p + NWB_TEL_PERF_HEADER;
    nwb__tel_cpu_scopes_store(q, pf->cpu, pf->cpu_count);
    q += (size_t)pf->cpu_count * NWB_TEL_CPU_SCOPE_SIZE;
    for (uint32_t i = 0; i < pf->gpu_count; i++, q += NWB_TEL_GPU_SCOPE_SIZE) {
        const nwb_tel_gpu_scope_t *g = &pf->gpu[i];

        nwb_le64_store(q, g->name);
        nwb_le64_store(q + 8, g->source_frame_min);
        nwb_le64_store(q + 16, g->source_frame_max);
        nwb_le64_store(q + 24, g->gpu_samples);
        nwb_le32_store(q + 32, g->window_samples);
        nwb_le32_store(q + 36, g->published_windows);
        ms_store(q + 40, g->window_avg_ms);
        ms_store(q + 48, g->window_min_ms);
        ms_store(q + 56, g->window_max_ms);
        ms_store(q + 64, g->total_ms);
        ms_store(q + 72, g->sample_avg_ms);
    }
    if (!check) {
        b->len += NWB_TEL_EVENT_HEADER + size;
        return 0;
    }
    return event_commit(b, NWB_TEL_KIND_PERF_FRAME, 1, p, size);
}

int nwb_tel_encode_perf(nwb_buf_t *b, uint64_t ts, uint64_t frame, const nwb_tel_perf_frame_t *pf)
{
    return encode_perf(b, ts, frame, pf, 1);
}

int nwb__tel_encode_perf_trusted(nwb_buf_t *b, uint64_t ts, uint64_t frame,
                                 const nwb_tel_perf_frame_t *pf)
{
    return encode_perf(b, ts, frame, pf, 0);
}

int nwb_tel_encode_memory(nwb_buf_t *b, uint64_t ts, uint64_t frame,
                          const nwb_tel_mem_record_t *recs, uint32_t n, uint64_t process_rss_bytes,
                          uint64_t sample_time_ns)
{
    uint64_t sum[7] = {0};
    uint64_t allocs = 0;
    uint64_t frees = 0;
    uint32_t counts[3] = {0, 0, 0};
    size_t size;
    uint8_t *p;
    uint8_t *q;
    int err;

    if (n > NWB_TEL_MEM_RECORDS_MAX) {
        return NWB_ETOOBIG;
    }
    for (uint32_t i = 0; i < n; i++) {
        const nwb_tel_mem_record_t *r = &recs[i];

        if (r->source > NWB_TEL_MEM_EXPLICIT_SCOPE) {
            return NWB_EPROTO;
        }
        counts[r->source]++;
        /* Overflowing sums are caught by the decoder check in event_commit(). */
        if (r->source == NWB_TEL_MEM_ARENA) {
            sum[0] += r->reserved_bytes;
            sum[1] += r->used_bytes;
            sum[2] = r->peak_bytes > sum[2] ? r->peak_bytes : sum[2];
            allocs += r->allocations;
            frees += r->frees;
        } else if (r->source == NWB_TEL_MEM_HEAP_BACKING) {
            sum[3] += r->reserved_bytes;
            sum[4] += r->used_bytes;
            sum[5] = r->peak_bytes > sum[5] ? r->peak_bytes : sum[5];
        } else {
            sum[6] += r->used_bytes;
        }
    }
    size = NWB_TEL_MEM_HEADER + (size_t)n * NWB_TEL_MEM_RECORD_SIZE;
    p = event_begin(b, NWB_TEL_KIND_MEMORY_FRAME, NWB_TEL_MEM_VERSION, ts, frame, size, &err);
    if (p == NULL) {
        return err;
    }
    memset(p, 0, size);
    nwb_le32_store(p, NWB_TEL_MEM_HEADER);
    nwb_le32_store(p + 4, n);
    nwb_le32_store(p + 8, NWB_TEL_MEM_RECORD_SIZE);
    for (unsigned k = 0; k < 7; k++) {
        nwb_le64_store(p + 16 + 8 * k, sum[k]);
    }
    nwb_le64_store(p + 72, allocs);
    nwb_le64_store(p + 80, frees);
    nwb_le64_store(p + 88, process_rss_bytes);
    nwb_le64_store(p + 96, sample_time_ns);
    nwb_le32_store(p + 104, counts[0]);
    nwb_le32_store(p + 108, counts[1]);
    nwb_le32_store(p + 112, counts[2]);
    q = p + NWB_TEL_MEM_HEADER;
    for (uint32_t i = 0; i < n; i++, q += NWB_TEL_MEM_RECORD_SIZE) {
        nwb_le64_store(q, recs[i].name);
        q[8] = recs[i].source;
        q[9] = recs[i].peak_basis;
        nwb_le64_store(q + 16, recs[i].reserved_bytes);
        nwb_le64_store(q + 24, recs[i].used_bytes);
        nwb_le64_store(q + 32, recs[i].peak_bytes);
        nwb_le64_store(q + 40, recs[i].allocations);
        nwb_le64_store(q + 48, recs[i].frees);
    }
    return event_commit(b, NWB_TEL_KIND_MEMORY_FRAME, NWB_TEL_MEM_VERSION, p, size);
}

int nwb_tel_encode_raw(nwb_buf_t *b, unsigned kind, unsigned version, uint64_t ts, uint64_t frame,
                       const void *payload, size_t len)
{
    uint8_t *p;
    int err;

    if (kind == NWB_TEL_KIND_INVALID || kind == NWB_TEL_KIND_SEGMENT || kind > 0xffffu ||
        version > 0xffffu) {
        return NWB_EPROTO;
    }
    if (kind <= NWB_TEL_KIND_LAST && version == 0) {
        return NWB_EVERSION;
    }
    p = event_begin(b, kind, version, ts, frame, len, &err);
    if (p == NULL) {
        return err;
    }
    if (len > 0) {
        memcpy(p, payload, len);
    }
    return event_commit(b, kind, version, p, len);
}

static double ms_at(const uint8_t *p);

/* ---- Format 1.1: threads, string tables, counters, marks ------------------------------- */

int nwb_tel_encode_thread(nwb_buf_t *b, uint64_t ts, uint64_t frame, const nwb_tel_thread_info_t *t)
{
    const size_t size = NWB_TEL_THREAD_HEADER + (size_t)t->name_len;
    uint8_t *p;
    int err;

    if (t->name_len > NWB_TEL_THREAD_NAME_MAX) {
        return NWB_ETOOBIG;
    }
    p = event_begin(b, NWB_TEL_KIND_THREAD, 1, ts, frame, size, &err);
    if (p == NULL) {
        return err;
    }
    nwb_le32_store(p, t->thread);
    nwb_le16_store(p + 4, t->name_len);
    nwb_le16_store(p + 6, 0);
    nwb_le64_store(p + 8, t->records);
    nwb_le64_store(p + 16, t->dropped);
    nwb_le64_store(p + 24, t->malformed);
    if (t->name_len > 0) {
        memcpy(p + NWB_TEL_THREAD_HEADER, t->name, t->name_len);
    }
    return event_commit(b, NWB_TEL_KIND_THREAD, 1, p, size);
}

int nwb_tel_encode_strings(nwb_buf_t *b, uint64_t ts, uint64_t frame, const nwb_tel_string_t *s,
                           uint32_t n)
{
    size_t size = NWB_TEL_STRINGS_HEADER;
    size_t pos;
    uint8_t *p;
    int err;

    if (n == 0) {
        return NWB_EPROTO;
    }
    if (n > NWB_TEL_STRINGS_MAX) {
        return NWB_ETOOBIG;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (s[i].len == 0 || s[i].len > NWB_TEL_STRING_MAX) {
            return s[i].len == 0 ? NWB_EPROTO : NWB_ETOOBIG;
        }
        size += NWB_TEL_STRING_ENTRY + s[i].len;
    }
    p = event_begin(b, NWB_TEL_KIND_STRING_TABLE, 1, ts, frame, size, &err);
    if (p == NULL) {
        return err;
    }
    nwb_le32_store(p, n);
    nwb_le32_store(p + 4, 0);
    pos = NWB_TEL_STRINGS_HEADER;
    for (uint32_t i = 0; i < n; i++) {
        nwb_le64_store(p + pos, s[i].name);
        nwb_le16_store(p + pos + 8, s[i].len);
        memcpy(p + pos + NWB_TEL_STRING_ENTRY, s[i].str, s[i].len);
        pos += NWB_TEL_STRING_ENTRY + s[i].len;
    }
    return event_commit(b, NWB_TEL_KIND_STRING_TABLE, 1, p, size);
}

int nwb_tel_encode_counters(nwb_buf_t *b, uint64_t ts, uint64_t frame, const nwb_tel_counter_t *c,
                            uint32_t n)
{
    size_t size;
    uint8_t *p;
    int err;

    if (n == 0) {
        return NWB_EPROTO;
    }
    if (n > NWB_TEL_COUNTERS_MAX) {
        return NWB_ETOOBIG;
    }
    size = NWB_TEL_COUNTER_HEADER + (size_t)n * NWB_TEL_COUNTER_SIZE;
    p = event_begin(b, NWB_TEL_KIND_COUNTER_FRAME, 1, ts, frame, size, &err);
    if (p == NULL) {
        return err;
    }
    nwb_le32_store(p, n);
    nwb_le32_store(p + 4, 0);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *q = p + NWB_TEL_COUNTER_HEADER + (size_t)i * NWB_TEL_COUNTER_SIZE;
        uint64_t bits;

        memcpy(&bits, &c[i].value, sizeof(bits));
        nwb_le64_store(q, c[i].name);
        nwb_le64_store(q + 8, c[i].ts_ns);
        nwb_le64_store(q + 16, bits);
        nwb_le32_store(q + 24, c[i].thread);
        nwb_le32_store(q + 28, 0);
    }
    return event_commit(b, NWB_TEL_KIND_COUNTER_FRAME, 1, p, size);
}

int nwb_tel_encode_mark(nwb_buf_t *b, uint64_t ts, uint64_t frame, uint32_t thread,
                        const char *text, size_t len)
{
    uint8_t *p;
    int err;

    if (len == 0) {
        return NWB_EPROTO;
    }
    if (len > NWB_TEL_MARK_MAX) {
        return NWB_ETOOBIG;
    }
    p = event_begin(b, NWB_TEL_KIND_MARK, 1, ts, frame, NWB_TEL_MARK_HEADER + len, &err);
    if (p == NULL) {
        return err;
    }
    nwb_le32_store(p, thread);
    nwb_le16_store(p + 4, (uint16_t)len);
    nwb_le16_store(p + 6, 0);
    memcpy(p + NWB_TEL_MARK_HEADER, text, len);
    return event_commit(b, NWB_TEL_KIND_MARK, 1, p, NWB_TEL_MARK_HEADER + len);
}

/* ---- Accessors for the larger records --------------------------------------------------- */

void nwb_tel_counter_at(const nwb_tel_counter_view_t *v, uint32_t i, nwb_tel_counter_t *out)
{
    const uint8_t *q = v->records + (size_t)i * NWB_TEL_COUNTER_SIZE;

    out->name = nwb_le64_load(q);
    out->ts_ns = nwb_le64_load(q + 8);
    out->value = ms_at(q + 16);
    out->thread = nwb_le32_load(q + 24);
}

int nwb_tel_string_next(const nwb_tel_strings_view_t *v, size_t *pos, nwb_tel_string_t *out)
{
    const uint8_t *p;
    size_t i;

    /* As nwb_tel_diag_pair_next(): entries produced in the low 16 bits, offset above. */
    i = *pos & 0xffffu;
    if (i >= v->count) {
        return 0;
    }
    p = v->entries + (*pos >> 16);
    out->name = nwb_le64_load(p);
    out->len = nwb_le16_load(p + 8);
    out->str = (const char *)(p + NWB_TEL_STRING_ENTRY);
    *pos = (((*pos >> 16) + NWB_TEL_STRING_ENTRY + out->len) << 16) | (i + 1);
    return 1;
}

static double ms_at(const uint8_t *p)
{
    double d;
    const uint64_t bits = nwb_le64_load(p);

    memcpy(&d, &bits, sizeof(d));
    return d;
}

void nwb_tel_gpu_scope_at(const nwb_tel_perf_view_t *v, uint32_t i, nwb_tel_gpu_scope_t *out)
{
    const uint8_t *q = v->gpu + (size_t)i * NWB_TEL_GPU_SCOPE_SIZE;

    out->name = nwb_le64_load(q);
    out->source_frame_min = nwb_le64_load(q + 8);
    out->source_frame_max = nwb_le64_load(q + 16);
    out->gpu_samples = nwb_le64_load(q + 24);
    out->window_samples = nwb_le32_load(q + 32);
    out->published_windows = nwb_le32_load(q + 36);
    out->window_avg_ms = ms_at(q + 40);
    out->window_min_ms = ms_at(q + 48);
    out->window_max_ms = ms_at(q + 56);
    out->total_ms = ms_at(q + 64);
    out->sample_avg_ms = ms_at(q + 72);
}

void nwb_tel_fg_queue_at(const nwb_tel_fg_view_t *v, uint32_t i, nwb_tel_fg_queue_t *out)
{
    const uint8_t *q = v->queues + (size_t)i * NWB_TEL_FG_QUEUE_SIZE;

    out->name = nwb_le64_load(q);
    out->type = q[8];
}

void nwb_tel_fg_packet_at(const nwb_tel_fg_view_t *v, uint32_t i, nwb_tel_fg_packet_t *out)
{
    const uint8_t *q = v->packets + (size_t)i * NWB_TEL_FG_PACKET_SIZE;

    out->queue = nwb_le32_load(q);
    out->waits = nwb_le32_load(q + 4);
    out->signals = nwb_le32_load(q + 8);
}

void nwb_tel_fg_pass_at(const nwb_tel_fg_view_t *v, uint32_t i, nwb_tel_fg_pass_t *out)
{
    const uint8_t *q = v->passes + (size_t)i * NWB_TEL_FG_PASS_SIZE;

    out->name = nwb_le64_load(q);
    out->packet = nwb_le32_load(q + 8);
    out->barriers = nwb_le32_load(q + 12);
}

void nwb_tel_fg_edge_at(const nwb_tel_fg_view_t *v, uint32_t i, nwb_tel_fg_edge_t *out)
{
    const uint8_t *q = v->edges + (size_t)i * NWB_TEL_FG_EDGE_SIZE;

    out->from = nwb_le32_load(q);
    out->to = nwb_le32_load(q + 4);
}

void nwb_tel_mem_record_at(const nwb_tel_mem_view_t *v, uint32_t i, nwb_tel_mem_record_t *out)
{
    const uint8_t *q = v->records + (size_t)i * NWB_TEL_MEM_RECORD_SIZE;

    out->name = nwb_le64_load(q);
    out->source = q[8];
    out->peak_basis = q[9];
    out->reserved_bytes = nwb_le64_load(q + 16);
    out->used_bytes = nwb_le64_load(q + 24);
    out->peak_bytes = nwb_le64_load(q + 32);
    out->allocations = nwb_le64_load(q + 40);
    out->frees = nwb_le64_load(q + 48);
}

int nwb_tel_diag_pair_next(const nwb_tel_diag_view_t *v, size_t *pos, nwb_tel_kv_t *kv)
{
    const uint8_t *p;
    size_t i;

    /* *pos counts pairs produced so far in its low 16 bits and the byte offset above them. */
    i = *pos & 0xffffu;
    if (i >= v->pair_count) {
        return 0;
    }
    p = v->pairs + (*pos >> 16);
    kv->key_len = nwb_le16_load(p);
    kv->value_len = nwb_le16_load(p + 2);
    kv->key = (const char *)(p + 4);
    kv->value = kv->key + kv->key_len;
    *pos = (((*pos >> 16) + 4 + kv->key_len + kv->value_len) << 16) | (i + 1);
    return 1;
}
