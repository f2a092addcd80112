/* SPDX-License-Identifier: MIT */
/*
 * tel_recorder.c - the recorder's life cycle, capture and upload switches, frames, CPU scope
 * slots, text/diagnostic/raw events and nwb_tel_flush_upload(). Events are encoded straight
 * into the pending upload buffer, whose cap is lowered to the frame budget while a frame is
 * open: what does not fit is dropped and counted, never grown past its bound.
 */
#include <errno.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/build_id.h"
#include "nwb/error.h"
#include "nwb/log_line.h"
#include "nwb/safe_name.h"
#include "tel_int.h"
#include "tel_rec_int.h"

int nwb__tel_table_grow(void **arr, uint32_t *cap, uint32_t need, uint32_t max, size_t elem)
{
    uint32_t n;
    void *p;

    if (need <= *cap) {
        return 0;
    }
    if (need > max) {
        return NWB_EFULL;
    }
    n = *cap < 16 ? 16 : *cap;
    while (n < need) {
        n = n > max / 2 ? max : n * 2;
    }
    p = nwb_realloc(*arr, (size_t)n * elem);
    if (p == NULL) {
        return -ENOMEM;
    }
    *arr = p;
    *cap = n;
    return 0;
}

static uint16_t copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = src != NULL ? strlen(src) : 0;

    if (n > cap) {
        n = cap;
    }
    if (n > 0) {
        memcpy(dst, src, n);
    }
    dst[n] = '\0';
    return (uint16_t)n;
}

int nwb_tel_recorder_create(const nwb_tel_recorder_config_t *cfg, nwb_tel_recorder_t **out)
{
    static const nwb_tel_recorder_config_t defaults = NWB_TEL_RECORDER_CONFIG_INIT;
    nwb_tel_recorder_t *rec;
    char run[17];
    int err;

    *out = NULL;
    if (cfg == NULL) {
        cfg = &defaults;
    }
    if (cfg->frame_bytes_max == 0 || cfg->pending_bytes_max < cfg->frame_bytes_max ||
        cfg->cpu_scopes_max == 0 || cfg->cpu_scopes_max > NWB_TEL_CPU_SCOPES_MAX ||
        cfg->scopes_max == 0 || cfg->memory_sources_max > NWB_TEL_MEM_RECORDS_MAX ||
        cfg->contributors_max == 0) {
        return NWB_ECONFIG;
    }
    rec = nwb_calloc(1, sizeof(*rec));
    if (rec == NULL) {
        return -ENOMEM;
    }
    rec->frame_bytes_max = cfg->frame_bytes_max;
    rec->cpu_scopes_max = cfg->cpu_scopes_max;
    rec->scopes_max = cfg->scopes_max;
    rec->memory_sources_max = cfg->memory_sources_max;
    rec->contributors_max = cfg->contributors_max;
    rec->program_len = copy_str(rec->program, NWB_TEL_PROGRAM_MAX,
                                cfg->program != NULL ? cfg->program : "unknown");
    if (cfg->run_id != NULL) {
        rec->run_len = copy_str(rec->run, NWB_TEL_RUN_MAX, cfg->run_id);
    } else {
        nwb_run_id_generate(run);
        rec->run_len = copy_str(rec->run, NWB_TEL_RUN_MAX, run);
    }
    if (cfg->build_id != NULL) {
        rec->build_id_len = copy_str(rec->build_id, NWB_TEL_BUILD_ID_MAX, cfg->build_id);
    } else {
        rec->build_id_len = (uint16_t)nwb_build_id(rec->build_id, sizeof(rec->build_id));
    }
    rec->start_wall_ns = cfg->start_wall_ns != 0 ? cfg->start_wall_ns : nwb_time_now_ns();
    rec->start_mono_ns = cfg->start_mono_ns != 0 ? cfg->start_mono_ns : nwb_time_mono_ns();
    rec->header_size = nwb_tel_header_size(rec->program_len, rec->run_len, rec->build_id_len);
    rec->pending_bytes_max = cfg->pending_bytes_max + rec->header_size;
    nwb_buf_init(&rec->pending, rec->pending_bytes_max);
    rec->builder.rec = rec;
    rec->view.rec = rec;
    err = nwb__tel_contrib_init(rec);
    if (err != 0) {
        nwb_free(rec);
        return err;
    }
    nwb__tel_prof_init(rec);
    *out = rec;
    return 0;
}

static void release_tables(nwb_tel_recorder_t *rec)
{
    nwb_free(rec->cpu);
    rec->cpu = NULL;
    rec->cpu_cap = 0;
    rec->ncpu = 0;
    nwb_free(rec->gpu_dirty);
    rec->gpu_dirty = NULL;
    rec->gpu_dirty_cap = 0;
    rec->ngpu_dirty = 0;
    nwb_free(rec->gpu_out);
    rec->gpu_out = NULL;
    rec->gpu_out_cap = 0;
    nwb_free(rec->mem_out);
    rec->mem_out = NULL;
    rec->mem_out_cap = 0;
    nwb__tel_fg_tables_free(rec);
    nwb_buf_cleanup(&rec->pending);
    rec->pending_events = 0;
}

void nwb_tel_recorder_destroy(nwb_tel_recorder_t *rec)
{
    if (rec == NULL) {
        return;
    }
    nwb__tel_prof_destroy(rec);
    release_tables(rec);
    nwb__tel_scopes_free(rec);
    nwb__tel_mem_free_all(rec);
    nwb__tel_contrib_destroy(rec);
    nwb_free(rec);
}

void nwb_tel_recorder_set_capture(nwb_tel_recorder_t *rec, unsigned capture)
{
    rec->capture = capture & NWB_TEL_CAPTURE_ALL;
    nwb__tel_prof_capture(rec, rec->capture);
}

unsigned nwb_tel_recorder_capture(const nwb_tel_recorder_t *rec)
{
    return rec->capture;
}

int nwb_tel_recorder_clear(nwb_tel_recorder_t *rec)
{
    if (rec->capture != NWB_TEL_CAPTURE_DISABLED || rec->in_frame) {
        return -EBUSY;
    }
    /* Scopes waiting in a GPU window are part of what is released. */
    for (uint32_t i = 0; i < rec->ngpu_dirty; i++) {
        rec->scopes[rec->gpu_dirty[i]].win_listed = 0;
    }
    release_tables(rec);
    nwb__tel_scopes_reset_stats(rec);
    return 0;
}

int nwb_tel_recorder_set_upload(nwb_tel_recorder_t *rec, int on, const nwb_tel_sink_t *sink)
{
    if (on && (sink == NULL || sink->submit == NULL)) {
        return NWB_ECONFIG;
    }
    rec->upload = on ? 1 : 0;
    nwb__tel_prof_capture(rec, rec->capture);
    if (sink != NULL) {
        rec->sink = *sink;
    }
    return 0;
}

/* Make sure the pending buffer starts with room for the segment header. */
static int pending_prepare(nwb_tel_recorder_t *rec)
{
    int err;

    if (rec->pending.len != 0) {
        return 0;
    }
    err = nwb_buf_reserve(&rec->pending, rec->header_size);
    if (err != 0) {
        return err;
    }
    memset(rec->pending.data, 0, rec->header_size);
    rec->pending.len = rec->header_size;
    if (rec->in_frame) {
        rec->frame_mark = rec->pending.len;
        rec->pending.max = rec->frame_mark + rec->frame_bytes_max < rec->pending_bytes_max
                               ? rec->frame_mark + rec->frame_bytes_max
                               : rec->pending_bytes_max;
    }
    return 0;
}

int nwb__tel_pending_prepare(nwb_tel_recorder_t *rec)
{
    return pending_prepare(rec);
}

int nwb_tel_frame_begin(nwb_tel_recorder_t *rec, uint64_t frame, uint64_t start_ns)
{
    if (rec->in_frame) {
        return -EBUSY;
    }
    rec->in_frame = 1;
    rec->frame = frame;
    rec->frame_start_ns = start_ns != 0 ? start_ns : nwb_time_mono_ns();
    rec->frame_capture = rec->capture;
    rec->ncpu = 0;
    nwb__tel_prof_capture(rec, rec->capture);
    rec->frame_hist[rec->frame_hist_n % 64].frame = frame;
    rec->frame_hist[rec->frame_hist_n % 64].start_ns = rec->frame_start_ns;
    rec->frame_hist_n++;
    /* The frame budget: while the frame is open the pending buffer may grow by at most
     * frame_bytes_max (and never past its own cap). */
    rec->frame_mark = rec->pending.len;
    if (rec->frame_mark + rec->frame_bytes_max < rec->pending_bytes_max) {
        rec->pending.max = rec->frame_mark + rec->frame_bytes_max;
    }
    return 0;
}

void nwb_tel_scope_record(nwb_tel_recorder_t *rec, nwb_tel_scope_id_t id, uint32_t thread,
                          uint64_t start_ns, uint64_t end_ns, uint16_t depth)
{
    struct nwb__tel_scope *s;
    nwb_tel_cpu_scope_t *slot;

    if (NWB_UNLIKELY(!(rec->frame_capture & NWB_TEL_CAPTURE_CPU))) {
        if (!rec->in_frame && (rec->capture & NWB_TEL_CAPTURE_CPU)) {
            rec->dropped_scopes++;
        }
        return;
    }
    if (NWB_UNLIKELY(id >= rec->nscopes || end_ns < start_ns || depth > NWB_TEL_DEPTH_MAX ||
                     rec->scopes[id].type != NWB_TEL_SCOPE_CPU)) {
        rec->dropped_scopes++;
        return;
    }
    if (NWB_UNLIKELY(rec->ncpu == rec->cpu_cap)) {
        if (nwb__tel_table_grow((void **)&rec->cpu, &rec->cpu_cap, rec->ncpu + 1,
                                rec->cpu_scopes_max, sizeof(*rec->cpu)) != 0) {
            rec->dropped_scopes++;
            return;
        }
    }
    s = &rec->scopes[id];
    slot = &rec->cpu[rec->ncpu++];
    slot->name = s->name;
    slot->start_ns = start_ns;
    slot->end_ns = end_ns;
    slot->thread = thread;
    slot->depth = depth;
    nwb_tel_timing_stats_add(&s->stats, end_ns - start_ns, rec->frame);
    s->stats.publication_index = rec->publications + 1;
}

/* Encode the frame's perf, memory and frame-graph events into the pending buffer. */
static void frame_encode(nwb_tel_recorder_t *rec, uint64_t end_ns, uint32_t ngpu)
{
    const unsigned cap = rec->frame_capture;
    const uint64_t ts = end_ns;
    int err;

    err = pending_prepare(rec);
    if (err != 0) {
        rec->dropped_events++;
        rec->dropped_scopes += rec->ncpu + ngpu;
        return;
    }
    /* CPU capture always gives a perf frame (its duration matters even without scopes);
     * GPU-only capture gives one when a window was published. */
    if ((cap & NWB_TEL_CAPTURE_CPU) || ngpu > 0) {
        nwb_tel_perf_frame_t pf;

        pf.frame_start_ns = rec->frame_start_ns;
        pf.frame_duration_ns = end_ns - rec->frame_start_ns;
        pf.cpu = rec->cpu;
        pf.cpu_count = rec->ncpu;
        pf.gpu = rec->gpu_out;
        pf.gpu_count = ngpu;
        err = nwb__tel_encode_perf_trusted(&rec->pending, ts, rec->frame, &pf);
        if (err != 0) {
            rec->dropped_events++;
            rec->dropped_scopes += rec->ncpu + ngpu;
        } else {
            rec->pending_events++;
        }
    }
    nwb__tel_prof_encode_counters(rec, ts);
    if ((cap & NWB_TEL_CAPTURE_MEMORY) && rec->nmem > 0) {
        const uint32_t n = nwb__tel_mem_snapshot(rec);

        for (uint32_t i = 0; i < n; i++) {
            nwb__tel_prof_want_name(rec, rec->mem_out[i].name, NULL, 0);
        }
        nwb__tel_prof_strings_flush(rec);

        err = n == 0 ? -ENOMEM
                     : nwb_tel_encode_memory(&rec->pending, ts, rec->frame, rec->mem_out, n, 0, ts);
        if (err != 0) {
            rec->dropped_events++;
        } else {
            rec->pending_events++;
        }
    }
    if ((cap & NWB_TEL_CAPTURE_FRAME_GRAPH) && nwb__tel_contrib_run(rec)) {
        nwb_tel_fg_frame_t fg;

        fg.queues = rec->fg_queues;
        fg.packets = rec->fg_packets;
        fg.passes = rec->fg_passes;
        fg.edges = rec->fg_edges;
        fg.queue_count = rec->fg_nqueues;
        fg.packet_count = rec->fg_npackets;
        fg.pass_count = rec->fg_npasses;
        fg.edge_count = rec->fg_nedges;
        fg.counters = rec->fg_counters;
        for (uint32_t i = 0; i < rec->fg_nqueues; i++) {
            nwb__tel_prof_want_name(rec, rec->fg_queues[i].name, NULL, 0);
        }
        for (uint32_t i = 0; i < rec->fg_npasses; i++) {
            nwb__tel_prof_want_name(rec, rec->fg_passes[i].name, NULL, 0);
        }
        nwb__tel_prof_strings_flush(rec);
        err = nwb_tel_encode_fg(&rec->pending, ts, rec->frame, &fg);
        if (err != 0) {
            rec->dropped_events++;
            rec->dropped_scopes += rec->fg_npasses;
        } else {
            rec->pending_events++;
        }
    }
}

int nwb_tel_frame_end(nwb_tel_recorder_t *rec, uint64_t end_ns)
{
    uint32_t ngpu = 0;

    if (!rec->in_frame) {
        return -EINVAL;
    }
    if (end_ns == 0) {
        end_ns = nwb_time_mono_ns();
    }
    if (end_ns < rec->frame_start_ns) {
        end_ns = rec->frame_start_ns;
    }
    nwb__tel_prof_frame_end(rec, end_ns);
    rec->publications++;
    if (rec->frame_capture & NWB_TEL_CAPTURE_GPU) {
        ngpu = nwb__tel_gpu_publish(rec);
    }
    if (rec->upload && rec->frame_capture != 0) {
        frame_encode(rec, end_ns, ngpu);
    }
    rec->frames++;
    rec->ncpu = 0;
    rec->ncounters = 0;
    rec->in_frame = 0;
    rec->frame_capture = 0;
    rec->pending.max = rec->pending_bytes_max;
    return 0;
}

/* Where an event recorded now goes: 1 when it should be encoded. */
static int logs_wanted(const nwb_tel_recorder_t *rec)
{
    const unsigned cap = rec->in_frame ? rec->frame_capture : rec->capture;

    return rec->upload && (cap & NWB_TEL_CAPTURE_LOGS);
}

void nwb_tel_text_record(nwb_tel_recorder_t *rec, uint64_t ts, unsigned level, uint32_t thread,
                         const char *msg, size_t len)
{
    int err;

    if (!logs_wanted(rec)) {
        return;
    }
    if (len > NWB_TEL_TEXT_MAX) {
        len = NWB_TEL_TEXT_MAX;
    }
    err = pending_prepare(rec);
    if (err == 0) {
        err = nwb_tel_encode_text(&rec->pending, ts != 0 ? ts : nwb_time_mono_ns(), rec->frame,
                                  level > 3 ? 3 : level, thread, msg, len);
    }
    if (err != 0) {
        rec->dropped_events++;
        return;
    }
    rec->pending_events++;
}

int nwb_tel_diag_record(nwb_tel_recorder_t *rec, uint64_t ts, nwb_name_t code, unsigned severity,
                        const nwb_tel_kv_t *pairs, size_t n)
{
    int err;

    if (!logs_wanted(rec)) {
        return 0;
    }
    nwb__tel_prof_want_name(rec, code, NULL, 0);
    nwb__tel_prof_strings_flush(rec);
    err = pending_prepare(rec);
    if (err == 0) {
        err = nwb_tel_encode_diag(&rec->pending, ts != 0 ? ts : nwb_time_mono_ns(), rec->frame,
                                  code, severity, pairs, n);
    }
    if (err != 0) {
        rec->dropped_events++;
        return err;
    }
    rec->pending_events++;
    return 0;
}

int nwb_tel_event_record_raw(nwb_tel_recorder_t *rec, unsigned kind, unsigned version, uint64_t ts,
                             const void *payload, size_t len)
{
    int err;

    if (!rec->upload) {
        return 0;
    }
    err = pending_prepare(rec);
    if (err == 0) {
        err = nwb_tel_encode_raw(&rec->pending, kind, version, ts != 0 ? ts : nwb_time_mono_ns(),
                                 rec->frame, payload, len);
    }
    if (err != 0) {
        rec->dropped_events++;
        return err;
    }
    rec->pending_events++;
    return 0;
}

int nwb_tel_flush_upload(nwb_tel_recorder_t *rec)
{
    nwb_buf_t tmp;
    nwb_tel_header_t h;
    nwb_tel_upload_t up;
    size_t hint;
    int err;

    if (rec->in_frame) {
        return -EBUSY;
    }
    if (rec->upload) {
        nwb__tel_prof_segment_end(rec);
    }
    if (!rec->upload || rec->pending_events == 0) {
        return 0;
    }
    memset(&h, 0, sizeof(h));
    h.seq = ++rec->seq;
    h.start_wall_ns = rec->start_wall_ns;
    h.start_mono_ns = rec->start_mono_ns;
    h.dropped_events = rec->dropped_events;
    h.dropped_scopes = rec->dropped_scopes;
    h.dropped_uploads = rec->dropped_uploads;
    h.program = rec->program;
    h.program_len = rec->program_len;
    h.run = rec->run;
    h.run_len = rec->run_len;
    h.build_id = rec->build_id;
    h.build_id_len = rec->build_id_len;
    /* Write the header into the space reserved at the front: encode into a view of it. */
    tmp.data = rec->pending.data;
    tmp.len = 0;
    tmp.cap = rec->header_size;
    tmp.max = rec->header_size;
    err = nwb_tel_encode_header(&tmp, &h);
    if (err != 0) {
        return err;
    }
    up.data = rec->pending.data;
    up.len = rec->pending.len;
    up.seq = h.seq;
    hint = rec->pending.len;
    err = rec->sink.submit(rec->sink.ctx, &up);
    if (err != 0) {
        rec->dropped_uploads++;
        rec->dropped_events += rec->pending_events;
        nwb_free(rec->pending.data);
    } else {
        rec->uploads++;
        rec->upload_bytes += up.len;
        rec->events += rec->pending_events;
    }
    /* The buffer moved to the sink (or was dropped). Start the next one at the size this one
     * needed, so steady recording does not regrow it: one allocation per flush. */
    rec->pending.data = NULL;
    rec->pending.len = 0;
    rec->pending.cap = 0;
    rec->pending_events = 0;
    (void)nwb_buf_reserve(&rec->pending, hint);
    return err;
}

void nwb_tel_recorder_stats_get(const nwb_tel_recorder_t *rec, nwb_tel_recorder_stats_t *out)
{
    out->frames = rec->frames;
    out->events = rec->events;
    out->uploads = rec->uploads;
    out->upload_bytes = rec->upload_bytes;
    out->dropped_events = rec->dropped_events;
    out->dropped_scopes = rec->dropped_scopes;
    out->dropped_uploads = rec->dropped_uploads;
    out->pending_bytes = rec->pending.len;
    out->capacity_bytes = rec->pending.cap + (size_t)rec->cpu_cap * sizeof(*rec->cpu) +
                          (size_t)rec->gpu_dirty_cap * sizeof(*rec->gpu_dirty) +
                          (size_t)rec->gpu_out_cap * sizeof(*rec->gpu_out) +
                          (size_t)rec->mem_out_cap * sizeof(*rec->mem_out) +
                          (size_t)rec->fg_cap_queues * sizeof(*rec->fg_queues) +
                          (size_t)rec->fg_cap_packets * sizeof(*rec->fg_packets) +
                          (size_t)rec->fg_cap_passes * sizeof(*rec->fg_passes) +
                          (size_t)rec->fg_cap_edges * sizeof(*rec->fg_edges);
}
