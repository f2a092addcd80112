/* SPDX-License-Identifier: MIT */
/*
 * tel_timing.c - the recorder's scope registry (register at setup, find by name, record by id),
 * timing statistics with inclusive source-frame bounds, GPU publication windows, and the
 * read-only timing view.
 */
#include <errno.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "tel_rec_int.h"

void nwb_tel_timing_stats_add(nwb_tel_timing_stats_t *s, uint64_t duration_ns,
                              uint64_t source_frame)
{
    s->samples++;
    s->total_ns += duration_ns;
    if (duration_ns < s->min_ns) {
        s->min_ns = duration_ns;
    }
    if (duration_ns > s->max_ns) {
        s->max_ns = duration_ns;
    }
    s->last_ns = duration_ns;
    /* Asynchronous results arrive out of frame order: the bounds are the extremes seen, never
     * the first and last arrivals. */
    if (source_frame < s->source_frame_min) {
        s->source_frame_min = source_frame;
    }
    if (source_frame > s->source_frame_max) {
        s->source_frame_max = source_frame;
    }
}

static uint32_t slot_of(nwb_name_t name, int type, uint32_t mask)
{
    uint64_t x = name ^ ((uint64_t)(unsigned)type << 62);

    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (uint32_t)x & mask;
}

nwb_tel_scope_id_t nwb_tel_scope_find(const nwb_tel_recorder_t *rec, nwb_name_t name, int type)
{
    uint32_t j;

    if (rec->scope_index == NULL) {
        return NWB_TEL_SCOPE_INVALID;
    }
    j = slot_of(name, type, rec->scope_index_mask);
    while (rec->scope_index[j] != 0) {
        const struct nwb__tel_scope *s = &rec->scopes[rec->scope_index[j] - 1];

        if (s->name == name && s->type == type) {
            return rec->scope_index[j] - 1;
        }
        j = (j + 1) & rec->scope_index_mask;
    }
    return NWB_TEL_SCOPE_INVALID;
}

static void scope_reset(struct nwb__tel_scope *s)
{
    const nwb_tel_timing_stats_t init = NWB_TEL_TIMING_STATS_INIT;
    const nwb_name_t name = s->name;
    const int type = s->type;

    memset(s, 0, sizeof(*s));
    s->name = name;
    s->type = type;
    s->stats = init;
}

int nwb_tel_scope_register(nwb_tel_recorder_t *rec, nwb_name_t name, int type,
                           nwb_tel_scope_id_t *id)
{
    nwb_tel_scope_id_t found;
    uint32_t j;
    int err;

    *id = NWB_TEL_SCOPE_INVALID;
    if (type != NWB_TEL_SCOPE_CPU && type != NWB_TEL_SCOPE_GPU) {
        return NWB_ECONFIG;
    }
    found = nwb_tel_scope_find(rec, name, type);
    if (found != NWB_TEL_SCOPE_INVALID) {
        *id = found;
        return 0;
    }
    if (rec->nscopes >= rec->scopes_max) {
        return NWB_EFULL;
    }
    if (rec->scope_index == NULL) {
        uint32_t n = 16;

        /* At most half full when every allowed scope is registered. */
        while (n < rec->scopes_max * 2u && n < (1u << 30)) {
            n *= 2;
        }
        rec->scope_index = nwb_calloc(n, sizeof(*rec->scope_index));
        if (rec->scope_index == NULL) {
            return -ENOMEM;
        }
        rec->scope_index_mask = n - 1;
    }
    err = nwb__tel_table_grow((void **)&rec->scopes, &rec->scopes_cap, rec->nscopes + 1,
                              rec->scopes_max, sizeof(*rec->scopes));
    if (err != 0) {
        return err;
    }
    rec->scopes[rec->nscopes].name = name;
    rec->scopes[rec->nscopes].type = type;
    scope_reset(&rec->scopes[rec->nscopes]);
    j = slot_of(name, type, rec->scope_index_mask);
    while (rec->scope_index[j] != 0) {
        j = (j + 1) & rec->scope_index_mask;
    }
    rec->scope_index[j] = ++rec->nscopes;
    *id = rec->nscopes - 1;
    return 0;
}

void nwb__tel_scopes_free(struct nwb_tel_recorder *rec)
{
    if (rec == NULL) {
        return;
    }
    nwb_free(rec->scopes);
    nwb_free(rec->scope_index);
    rec->scopes = NULL;
    rec->scope_index = NULL;
    rec->nscopes = 0;
    rec->scopes_cap = 0;
}

void nwb__tel_scopes_reset_stats(struct nwb_tel_recorder *rec)
{
    for (uint32_t i = 0; i < rec->nscopes; i++) {
        scope_reset(&rec->scopes[i]);
    }
}

void nwb_tel_gpu_sample(nwb_tel_recorder_t *rec, nwb_tel_scope_id_t id, uint64_t source_frame,
                        uint64_t duration_ns)
{
    const unsigned cap = rec->in_frame ? rec->frame_capture : rec->capture;
    struct nwb__tel_scope *s;

    if (!(cap & NWB_TEL_CAPTURE_GPU)) {
        return;
    }
    if (id >= rec->nscopes || rec->scopes[id].type != NWB_TEL_SCOPE_GPU) {
        rec->dropped_scopes++;
        return;
    }
    s = &rec->scopes[id];
    if (!s->win_listed) {
        if (nwb__tel_table_grow((void **)&rec->gpu_dirty, &rec->gpu_dirty_cap, rec->ngpu_dirty + 1,
                                rec->scopes_max, sizeof(*rec->gpu_dirty)) != 0) {
            rec->dropped_scopes++;
            return;
        }
        rec->gpu_dirty[rec->ngpu_dirty++] = id;
        s->win_listed = 1;
        s->win_samples = 0;
        s->win_sum_ns = 0;
        s->win_min_ns = UINT64_MAX;
        s->win_max_ns = 0;
        s->win_sf_min = UINT64_MAX;
        s->win_sf_max = 0;
    }
    s->win_samples++;
    s->win_sum_ns += duration_ns;
    s->win_min_ns = duration_ns < s->win_min_ns ? duration_ns : s->win_min_ns;
    s->win_max_ns = duration_ns > s->win_max_ns ? duration_ns : s->win_max_ns;
    s->win_sf_min = source_frame < s->win_sf_min ? source_frame : s->win_sf_min;
    s->win_sf_max = source_frame > s->win_sf_max ? source_frame : s->win_sf_max;
    s->gpu_samples++;
    s->gpu_total_ns += duration_ns;
    nwb_tel_timing_stats_add(&s->stats, duration_ns, source_frame);
    s->stats.publication_index = rec->publications + 1;
}

uint32_t nwb__tel_gpu_publish(struct nwb_tel_recorder *rec)
{
    uint32_t n = rec->ngpu_dirty;
    uint32_t out = 0;
    int ok;

    if (n == 0) {
        return 0;
    }
    ok = nwb__tel_table_grow((void **)&rec->gpu_out, &rec->gpu_out_cap,
                             n < NWB_TEL_GPU_SCOPES_MAX ? n : NWB_TEL_GPU_SCOPES_MAX,
                             NWB_TEL_GPU_SCOPES_MAX, sizeof(*rec->gpu_out)) == 0;
    for (uint32_t i = 0; i < n; i++) {
        struct nwb__tel_scope *s = &rec->scopes[rec->gpu_dirty[i]];

        s->win_listed = 0;
        s->published_windows++;
        if (!ok || out >= NWB_TEL_GPU_SCOPES_MAX || s->win_samples == 0) {
            rec->dropped_scopes += s->win_samples;
            continue;
        }
        {
            nwb_tel_gpu_scope_t *g = &rec->gpu_out[out++];

            g->name = s->name;
            g->source_frame_min = s->win_sf_min;
            g->source_frame_max = s->win_sf_max;
            g->gpu_samples = s->gpu_samples;
            g->window_samples = s->win_samples;
            g->published_windows = s->published_windows;
            g->window_avg_ms = (double)s->win_sum_ns / (double)s->win_samples / 1e6;
            g->window_min_ms = (double)s->win_min_ns / 1e6;
            g->window_max_ms = (double)s->win_max_ns / 1e6;
            g->total_ms = (double)s->gpu_total_ns / 1e6;
            g->sample_avg_ms = (double)s->gpu_total_ns / (double)s->gpu_samples / 1e6;
        }
    }
    rec->ngpu_dirty = 0;
    return out;
}

const nwb_tel_timing_view_t *nwb_tel_recorder_timing_view(const nwb_tel_recorder_t *rec)
{
    return &rec->view;
}

uint32_t nwb_tel_timing_view_count(const nwb_tel_timing_view_t *v)
{
    return v->rec->nscopes;
}

int nwb_tel_timing_view_get(const nwb_tel_timing_view_t *v, nwb_tel_scope_id_t id,
                            nwb_tel_timing_entry_t *out)
{
    if (id >= v->rec->nscopes) {
        return -EINVAL;
    }
    out->name = v->rec->scopes[id].name;
    out->type = v->rec->scopes[id].type;
    out->stats = v->rec->scopes[id].stats;
    return 0;
}

uint64_t nwb_tel_timing_view_publications(const nwb_tel_timing_view_t *v)
{
    return v->rec->publications;
}
