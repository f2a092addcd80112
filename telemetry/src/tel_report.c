/* SPDX-License-Identifier: MIT */
/*
 * tel_report.c - builds telemetry.json from a run stream (docs/telemetry-report.md): decodes
 * every segment once to aggregate events, frames, scopes, memory, frame graphs and diagnostics
 * (duplicate segments by seq are skipped), a second time to collect the log lines of the worst
 * frames, then writes the JSON. Every table it keeps has an explicit bound.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/log.h"
#include "nwb/telemetry_report.h"
#include "tel_int.h"

/* ---- A small open-addressing index from (name, tag) to an entry number ----------------- */

struct nslot {
    uint64_t name;
    uint32_t tag;
    uint32_t idx1; /* entry index + 1; 0 = empty */
};

struct ntab {
    struct nslot *slots;
    size_t mask;
    uint32_t count;
};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static int ntab_grow(struct ntab *t)
{
    const size_t cap = t->slots == NULL ? 64 : (t->mask + 1) * 2;
    struct nslot *s = nwb_calloc(cap, sizeof(*s));

    if (s == NULL) {
        return -ENOMEM;
    }
    if (t->slots != NULL) {
        for (size_t i = 0; i <= t->mask; i++) {
            if (t->slots[i].idx1 != 0) {
                size_t j = mix(t->slots[i].name ^ ((uint64_t)t->slots[i].tag << 56)) & (cap - 1);

                while (s[j].idx1 != 0) {
                    j = (j + 1) & (cap - 1);
                }
                s[j] = t->slots[i];
            }
        }
        nwb_free(t->slots);
    }
    t->slots = s;
    t->mask = cap - 1;
    return 0;
}

/*
 * Find (name, tag); when absent and fewer than @p max entries exist, add it as entry number
 * t->count and set @p *created. Returns 0, NWB_EFULL (absent and full) or -ENOMEM.
 */
static int ntab_get(struct ntab *t, uint64_t name, uint32_t tag, uint32_t max, uint32_t *idx,
                    int *created)
{
    size_t j;

    *created = 0;
    if (t->slots == NULL || (size_t)(t->count + 1) * 2 > t->mask + 1) {
        const int err = ntab_grow(t);

        if (err != 0) {
            return err;
        }
    }
    j = mix(name ^ ((uint64_t)tag << 56)) & t->mask;
    while (t->slots[j].idx1 != 0) {
        if (t->slots[j].name == name && t->slots[j].tag == tag) {
            *idx = t->slots[j].idx1 - 1;
            return 0;
        }
        j = (j + 1) & t->mask;
    }
    if (t->count >= max) {
        return NWB_EFULL;
    }
    t->slots[j].name = name;
    t->slots[j].tag = tag;
    t->slots[j].idx1 = ++t->count;
    *idx = t->count - 1;
    *created = 1;
    return 0;
}

static void ntab_free(struct ntab *t)
{
    nwb_free(t->slots);
    t->slots = NULL;
    t->mask = 0;
    t->count = 0;
}

/* Grow @p *arr (elements of @p elem bytes) to hold at least @p need. */
static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    size_t n = *cap == 0 ? 16 : *cap;
    void *p;

    if (need <= *cap) {
        return 0;
    }
    while (n < need) {
        n *= 2;
    }
    p = nwb_realloc(*arr, n * elem);
    if (p == NULL) {
        return -ENOMEM;
    }
    *arr = p;
    *cap = n;
    return 0;
}

/* ---- Aggregates ------------------------------------------------------------------------- */

struct scope_acc {
    nwb_name_t name;
    int gpu;
    uint64_t samples;
    uint64_t min_ns, max_ns, total_ns; /* CPU */
    double total_ms, min_ms, max_ms;   /* GPU: over the windows seen */
    uint64_t windows;
    uint64_t reported_samples;
    double reported_total_ms;
    uint32_t published_windows;
    uint64_t first_frame, last_frame;
    struct nwb__hist hist;
};

struct mem_acc {
    nwb_name_t name;
    uint8_t source, basis;
    uint64_t reserved, used, peak, first_used, allocs, frees, samples;
    uint64_t first_frame, last_frame;
};

struct pass_acc {
    nwb_name_t name;
    nwb_name_t queue;
    uint64_t frames, barriers;
};

struct queue_acc {
    nwb_name_t name;
    uint8_t type;
    uint64_t frames, packets, passes, waits, signals;
};

struct log_ref {
    uint8_t level;
    uint32_t thread;
    uint16_t len;
    const char *msg;
};

struct worst {
    uint64_t frame, dur_ns, ts;
    uint32_t ntop, nlogs;
    uint64_t more_logs;
    nwb_tel_cpu_scope_t top[NWB_TEL_REPORT_TOP_SCOPES];
    struct log_ref logs[NWB_TEL_REPORT_FRAME_LOGS];
};

struct diag_ref {
    uint64_t ts, frame;
    nwb_tel_diag_view_t v;
};

struct rep {
    const nwb_tel_report_options_t *opt;
    int err; /* first aggregation failure (allocation) */
    int pass2;

    /* segments */
    uint32_t segments;
    uint32_t seg_index; /* during a pass */
    struct ntab seqs;
    uint8_t *dup;
    size_t dup_cap;
    uint64_t dup_segments, dup_events, untracked_segments;
    int have_header;
    nwb_tel_header_t first;
    uint64_t seq_min, seq_max, header_mismatches;
    uint64_t drop_events, drop_scopes, drop_uploads;

    /* events */
    uint64_t by_kind[NWB_TEL_KIND_COUNT + 1];
    uint64_t unknown;
    uint64_t logs_by_level[4];

    /* frames */
    uint64_t frames, frame_sum_ns, frame_max_ns;
    uint64_t *durs;
    size_t ndurs, durs_cap;
    struct worst worst[NWB_TEL_REPORT_WORST_FRAMES];
    unsigned nworst;

    /* scopes */
    struct ntab scope_ix;
    struct scope_acc *scopes;
    size_t scopes_cap;
    uint64_t scopes_omitted;

    /* memory */
    struct ntab mem_ix;
    struct mem_acc *mem;
    size_t mem_cap;
    uint64_t mem_frames, mem_omitted;
    uint64_t arena_used_first, arena_used_last, arena_used_max;
    uint64_t heap_used_first, heap_used_last, heap_used_max;

    /* frame graph */
    struct ntab pass_ix, queue_ix;
    struct pass_acc *passes;
    size_t passes_cap;
    struct queue_acc *queues;
    size_t queues_cap;
    uint64_t fg_frames, fg_passes, fg_packets, fg_barriers, fg_waits, fg_signals, fg_edges;
    uint64_t fg_emitted, fg_same_queue, fg_dup_merges, fg_inherited, fg_omitted;

    /* diagnostics */
    uint64_t diags, diag_by_sev[4];
    struct diag_ref diag_list[NWB_TEL_REPORT_DIAGNOSTICS];
    unsigned ndiag;
};

static void note_err(struct rep *r, int err)
{
    if (err != 0 && r->err == 0) {
        r->err = err;
    }
}

static int on_segment(void *ctx, const nwb_tel_header_t *h, size_t offset)
{
    struct rep *r = ctx;
    const uint32_t index = r->seg_index++;
    uint32_t idx;
    int created = 0;
    int dup = 0;
    int err;

    (void)offset;
    if (r->pass2) {
        return index < r->segments && r->dup[index];
    }
    err = grow((void **)&r->dup, &r->dup_cap, (size_t)index + 1, 1);
    if (err != 0) {
        note_err(r, err);
        return err;
    }
    err = ntab_get(&r->seqs, h->seq, 0, NWB_TEL_REPORT_SEGMENTS_MAX, &idx, &created);
    if (err == NWB_EFULL) {
        r->untracked_segments++;
    } else if (err != 0) {
        note_err(r, err);
        return err;
    } else if (!created) {
        dup = 1;
    }
    r->dup[index] = (uint8_t)dup;
    r->segments = index + 1;
    if (dup) {
        r->dup_segments++;
        return 1;
    }
    if (!r->have_header) {
        r->first = *h;
        r->have_header = 1;
        r->seq_min = h->seq;
        r->seq_max = h->seq;
    } else {
        if (h->program_len != r->first.program_len || h->run_len != r->first.run_len ||
            memcmp(h->program, r->first.program, h->program_len) != 0 ||
            memcmp(h->run, r->first.run, h->run_len) != 0) {
            r->header_mismatches++;
        }
        r->seq_min = h->seq < r->seq_min ? h->seq : r->seq_min;
        r->seq_max = h->seq > r->seq_max ? h->seq : r->seq_max;
    }
    /* Drop counters are cumulative in the client: the largest value is the run's total. */
    r->drop_events = h->dropped_events > r->drop_events ? h->dropped_events : r->drop_events;
    r->drop_scopes = h->dropped_scopes > r->drop_scopes ? h->dropped_scopes : r->drop_scopes;
    r->drop_uploads = h->dropped_uploads > r->drop_uploads ? h->dropped_uploads : r->drop_uploads;
    return 0;
}

static struct scope_acc *scope_get(struct rep *r, nwb_name_t name, int gpu)
{
    uint32_t idx;
    int created;
    int err;

    /* Room for a new entry first, so the index never names an entry that does not exist. */
    err = grow((void **)&r->scopes, &r->scopes_cap, (size_t)r->scope_ix.count + 1,
               sizeof(*r->scopes));
    if (err == 0) {
        err =
            ntab_get(&r->scope_ix, name, (uint32_t)gpu, NWB_TEL_REPORT_SCOPES_MAX, &idx, &created);
    }
    if (err == NWB_EFULL) {
        r->scopes_omitted++;
        return NULL;
    }
    if (err != 0) {
        note_err(r, err);
        return NULL;
    }
    if (created) {
        memset(&r->scopes[idx], 0, sizeof(r->scopes[idx]));
        r->scopes[idx].name = name;
        r->scopes[idx].gpu = gpu;
        r->scopes[idx].min_ns = UINT64_MAX;
    }
    return &r->scopes[idx];
}

static void worst_consider(struct rep *r, const nwb_tel_event_t *ev)
{
    const nwb_tel_perf_view_t *pv = &ev->u.perf;
    struct worst w;
    unsigned pos;

    if (r->nworst == NWB_TEL_REPORT_WORST_FRAMES &&
        pv->frame_duration_ns <= r->worst[r->nworst - 1].dur_ns) {
        return;
    }
    memset(&w, 0, sizeof(w));
    w.frame = ev->frame;
    w.dur_ns = pv->frame_duration_ns;
    w.ts = ev->timestamp_ns;
    for (uint32_t i = 0; i < pv->cpu_count; i++) {
        nwb_tel_cpu_scope_t s;
        uint64_t d;
        uint32_t k;

        nwb_tel_cpu_scope_at(pv, i, &s);
        d = s.end_ns - s.start_ns;
        k = w.ntop;
        while (k > 0 && d > w.top[k - 1].end_ns - w.top[k - 1].start_ns) {
            k--;
        }
        if (k >= NWB_TEL_REPORT_TOP_SCOPES) {
            continue;
        }
        {
            const uint32_t last =
                w.ntop < NWB_TEL_REPORT_TOP_SCOPES ? w.ntop : NWB_TEL_REPORT_TOP_SCOPES - 1;

            memmove(&w.top[k + 1], &w.top[k], (last - k) * sizeof(w.top[0]));
        }
        w.top[k] = s;
        if (w.ntop < NWB_TEL_REPORT_TOP_SCOPES) {
            w.ntop++;
        }
    }
    pos = r->nworst < NWB_TEL_REPORT_WORST_FRAMES ? r->nworst : NWB_TEL_REPORT_WORST_FRAMES - 1;
    while (pos > 0 && w.dur_ns > r->worst[pos - 1].dur_ns) {
        r->worst[pos] = r->worst[pos - 1];
        pos--;
    }
    r->worst[pos] = w;
    if (r->nworst < NWB_TEL_REPORT_WORST_FRAMES) {
        r->nworst++;
    }
}

static void on_perf(struct rep *r, const nwb_tel_event_t *ev)
{
    const nwb_tel_perf_view_t *pv = &ev->u.perf;

    r->frames++;
    r->frame_sum_ns += pv->frame_duration_ns;
    if (pv->frame_duration_ns > r->frame_max_ns) {
        r->frame_max_ns = pv->frame_duration_ns;
    }
    if (r->ndurs < NWB_TEL_REPORT_FRAMES_MAX) {
        const int err = grow((void **)&r->durs, &r->durs_cap, r->ndurs + 1, sizeof(*r->durs));

        if (err != 0) {
            note_err(r, err);
            return;
        }
        r->durs[r->ndurs++] = pv->frame_duration_ns;
    }
    worst_consider(r, ev);
    for (uint32_t i = 0; i < pv->cpu_count; i++) {
        nwb_tel_cpu_scope_t s;
        struct scope_acc *a;
        uint64_t d;

        nwb_tel_cpu_scope_at(pv, i, &s);
        a = scope_get(r, s.name, 0);
        if (a == NULL) {
            continue;
        }
        d = s.end_ns - s.start_ns;
        if (a->samples == 0) {
            a->first_frame = ev->frame;
            a->last_frame = ev->frame;
        }
        a->samples++;
        a->total_ns += d;
        a->min_ns = d < a->min_ns ? d : a->min_ns;
        a->max_ns = d > a->max_ns ? d : a->max_ns;
        a->first_frame = ev->frame < a->first_frame ? ev->frame : a->first_frame;
        a->last_frame = ev->frame > a->last_frame ? ev->frame : a->last_frame;
        note_err(r, nwb__hist_add(&a->hist, d));
    }
    for (uint32_t i = 0; i < pv->gpu_count; i++) {
        nwb_tel_gpu_scope_t g;
        struct scope_acc *a;

        nwb_tel_gpu_scope_at(pv, i, &g);
        a = scope_get(r, g.name, 1);
        if (a == NULL) {
            continue;
        }
        if (a->windows == 0) {
            a->min_ms = g.window_min_ms;
            a->max_ms = g.window_max_ms;
            a->first_frame = g.source_frame_min;
            a->last_frame = g.source_frame_max;
        }
        a->windows++;
        a->samples += g.window_samples;
        a->total_ms += g.window_avg_ms * (double)g.window_samples;
        a->min_ms = g.window_min_ms < a->min_ms ? g.window_min_ms : a->min_ms;
        a->max_ms = g.window_max_ms > a->max_ms ? g.window_max_ms : a->max_ms;
        a->first_frame = g.source_frame_min < a->first_frame ? g.source_frame_min : a->first_frame;
        a->last_frame = g.source_frame_max > a->last_frame ? g.source_frame_max : a->last_frame;
        if (g.gpu_samples > a->reported_samples) {
            a->reported_samples = g.gpu_samples;
            a->reported_total_ms = g.total_ms;
        }
        a->published_windows =
            g.published_windows > a->published_windows ? g.published_windows : a->published_windows;
        /* Window averages in ns; the decoder bounded them to finite, non-negative values. */
        note_err(r, nwb__hist_add(&a->hist, g.window_avg_ms >= 1.8e13
                                                ? UINT64_C(18000000000000000000)
                                                : (uint64_t)(g.window_avg_ms * 1e6 + 0.5)));
    }
}

static void on_memory(struct rep *r, const nwb_tel_event_t *ev)
{
    const nwb_tel_mem_view_t *mv = &ev->u.mem;

    if (r->mem_frames == 0) {
        r->arena_used_first = mv->arena_used_bytes;
        r->heap_used_first = mv->heap_used_bytes;
    }
    r->mem_frames++;
    r->arena_used_last = mv->arena_used_bytes;
    r->heap_used_last = mv->heap_used_bytes;
    r->arena_used_max =
        mv->arena_used_bytes > r->arena_used_max ? mv->arena_used_bytes : r->arena_used_max;
    r->heap_used_max =
        mv->heap_used_bytes > r->heap_used_max ? mv->heap_used_bytes : r->heap_used_max;
    for (uint32_t i = 0; i < mv->count; i++) {
        nwb_tel_mem_record_t rec;
        uint32_t idx;
        int created;
        int err;
        struct mem_acc *m;

        nwb_tel_mem_record_at(mv, i, &rec);
        err = grow((void **)&r->mem, &r->mem_cap, (size_t)r->mem_ix.count + 1, sizeof(*r->mem));
        if (err == 0) {
            err = ntab_get(&r->mem_ix, rec.name, rec.source, NWB_TEL_REPORT_MEMORY_MAX, &idx,
                           &created);
        }
        if (err == NWB_EFULL) {
            r->mem_omitted++;
            continue;
        }
        if (err != 0) {
            note_err(r, err);
            return;
        }
        if (created) {
            memset(&r->mem[idx], 0, sizeof(r->mem[idx]));
            r->mem[idx].name = rec.name;
            r->mem[idx].source = rec.source;
            r->mem[idx].first_used = rec.used_bytes;
            r->mem[idx].first_frame = ev->frame;
        }
        m = &r->mem[idx];
        m->basis = rec.peak_basis;
        m->reserved = rec.reserved_bytes;
        m->used = rec.used_bytes;
        m->peak = rec.peak_bytes > m->peak ? rec.peak_bytes : m->peak;
        m->allocs = rec.allocations;
        m->frees = rec.frees;
        m->samples++;
        m->last_frame = ev->frame;
    }
}

static void on_fg(struct rep *r, const nwb_tel_event_t *ev)
{
    const nwb_tel_fg_view_t *g = &ev->u.fg;
    uint32_t qmap[NWB_TEL_FG_QUEUES_MAX];

    r->fg_frames++;
    r->fg_passes += g->pass_count;
    r->fg_packets += g->packet_count;
    r->fg_edges += g->edge_count;
    r->fg_emitted += g->counters.emitted_waits;
    r->fg_same_queue += g->counters.same_queue_elisions;
    r->fg_dup_merges += g->counters.duplicate_merges;
    r->fg_inherited += g->counters.inherited_elisions;
    for (uint32_t i = 0; i < g->queue_count; i++) {
        nwb_tel_fg_queue_t q;
        int created;
        int err;

        nwb_tel_fg_queue_at(g, i, &q);
        err = grow((void **)&r->queues, &r->queues_cap, (size_t)r->queue_ix.count + 1,
                   sizeof(*r->queues));
        if (err == 0) {
            err = ntab_get(&r->queue_ix, q.name, 0, NWB_TEL_REPORT_QUEUES_MAX, &qmap[i], &created);
        }
        if (err == 0 && created) {
            memset(&r->queues[qmap[i]], 0, sizeof(r->queues[0]));
            r->queues[qmap[i]].name = q.name;
            r->queues[qmap[i]].type = q.type;
        }
        if (err == NWB_EFULL) {
            r->fg_omitted++;
            qmap[i] = UINT32_MAX;
        } else if (err != 0) {
            note_err(r, err);
            return;
        } else {
            r->queues[qmap[i]].frames++;
        }
    }
    for (uint32_t i = 0; i < g->packet_count; i++) {
        nwb_tel_fg_packet_t p;

        nwb_tel_fg_packet_at(g, i, &p);
        r->fg_waits += p.waits;
        r->fg_signals += p.signals;
        if (qmap[p.queue] != UINT32_MAX) {
            r->queues[qmap[p.queue]].packets++;
            r->queues[qmap[p.queue]].waits += p.waits;
            r->queues[qmap[p.queue]].signals += p.signals;
        }
    }
    for (uint32_t i = 0; i < g->pass_count; i++) {
        nwb_tel_fg_pass_t ps;
        nwb_tel_fg_packet_t pk;
        nwb_tel_fg_queue_t q;
        uint32_t idx;
        int created;
        int err;

        nwb_tel_fg_pass_at(g, i, &ps);
        nwb_tel_fg_packet_at(g, ps.packet, &pk);
        nwb_tel_fg_queue_at(g, pk.queue, &q);
        r->fg_barriers += ps.barriers;
        if (qmap[pk.queue] != UINT32_MAX) {
            r->queues[qmap[pk.queue]].passes++;
        }
        err = grow((void **)&r->passes, &r->passes_cap, (size_t)r->pass_ix.count + 1,
                   sizeof(*r->passes));
        if (err == 0) {
            err = ntab_get(&r->pass_ix, ps.name, 0, NWB_TEL_REPORT_PASSES_MAX, &idx, &created);
        }
        if (err == 0 && created) {
            memset(&r->passes[idx], 0, sizeof(r->passes[0]));
            r->passes[idx].name = ps.name;
        }
        if (err == NWB_EFULL) {
            r->fg_omitted++;
            continue;
        }
        if (err != 0) {
            note_err(r, err);
            return;
        }
        r->passes[idx].frames++;
        r->passes[idx].barriers += ps.barriers;
        r->passes[idx].queue = q.name;
    }
}

static void on_diag(struct rep *r, const nwb_tel_event_t *ev)
{
    r->diags++;
    r->diag_by_sev[ev->u.diag.severity & 3]++;
    if (r->ndiag < NWB_TEL_REPORT_DIAGNOSTICS) {
        r->diag_list[r->ndiag].ts = ev->timestamp_ns;
        r->diag_list[r->ndiag].frame = ev->frame;
        r->diag_list[r->ndiag].v = ev->u.diag;
        r->ndiag++;
    }
}

static int on_event(void *ctx, const nwb_tel_event_t *ev, size_t offset)
{
    struct rep *r = ctx;

    (void)offset;
    if (r->pass2) {
        if (ev->kind != NWB_TEL_KIND_TEXT_LOG) {
            return 0;
        }
        for (unsigned i = 0; i < r->nworst; i++) {
            struct worst *w = &r->worst[i];

            if (w->frame != ev->frame) {
                continue;
            }
            if (w->nlogs < NWB_TEL_REPORT_FRAME_LOGS) {
                w->logs[w->nlogs].level = ev->u.text.level;
                w->logs[w->nlogs].thread = ev->u.text.thread;
                w->logs[w->nlogs].len = ev->u.text.len;
                w->logs[w->nlogs].msg = ev->u.text.msg;
                w->nlogs++;
            } else {
                w->more_logs++;
            }
        }
        return 0;
    }
    if (!ev->known) {
        r->unknown++;
        return 0;
    }
    r->by_kind[ev->kind]++;
    switch (ev->kind) {
    case NWB_TEL_KIND_TEXT_LOG:
        r->logs_by_level[ev->u.text.level & 3]++;
        break;
    case NWB_TEL_KIND_DIAGNOSTIC:
        on_diag(r, ev);
        break;
    case NWB_TEL_KIND_FRAME_GRAPH:
        on_fg(r, ev);
        break;
    case NWB_TEL_KIND_PERF_FRAME:
        on_perf(r, ev);
        break;
    case NWB_TEL_KIND_MEMORY_FRAME:
        on_memory(r, ev);
        break;
    default:
        break;
    }
    /* An allocation failure stops the decode; the report then says so. */
    return r->err;
}

/* ---- Writing ---------------------------------------------------------------------------- */

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a;
    const uint64_t y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Nearest rank on sorted @p v: the smallest value with at least p% of the values at or below. */
static uint64_t nearest_rank(const uint64_t *v, size_t n, double p)
{
    size_t rank;

    if (n == 0) {
        return 0;
    }
    rank = (size_t)((p / 100.0) * (double)n);
    if ((double)rank < (p / 100.0) * (double)n) {
        rank++;
    }
    if (rank < 1) {
        rank = 1;
    }
    if (rank > n) {
        rank = n;
    }
    return v[rank - 1];
}

/* A stable merge sort of an index array: qsort() takes no context pointer and reports may be
 * built on several threads at once. Counts are bounded (<= 4096). */
static void merge_sort(uint32_t *v, uint32_t *tmp, size_t n, const struct rep *r,
                       int (*cmp)(const struct rep *, uint32_t, uint32_t))
{
    if (n < 2) {
        return;
    }
    {
        const size_t h = n / 2;
        size_t i = 0;
        size_t j = h;
        size_t k = 0;

        merge_sort(v, tmp, h, r, cmp);
        merge_sort(v + h, tmp, n - h, r, cmp);
        while (i < h && j < n) {
            tmp[k++] = cmp(r, v[j], v[i]) < 0 ? v[j++] : v[i++];
        }
        while (i < h) {
            tmp[k++] = v[i++];
        }
        while (j < n) {
            tmp[k++] = v[j++];
        }
        memcpy(v, tmp, n * sizeof(*v));
    }
}

static int rcmp_scope(const struct rep *r, uint32_t a, uint32_t b)
{
    const struct scope_acc *x = &r->scopes[a];
    const struct scope_acc *y = &r->scopes[b];
    const double tx = x->gpu ? x->total_ms : ms(x->total_ns);
    const double ty = y->gpu ? y->total_ms : ms(y->total_ns);

    if (tx != ty) {
        return tx > ty ? -1 : 1;
    }
    return x->name < y->name ? -1 : x->name > y->name;
}

static int rcmp_mem(const struct rep *r, uint32_t a, uint32_t b)
{
    const struct mem_acc *x = &r->mem[a];
    const struct mem_acc *y = &r->mem[b];

    if (x->peak != y->peak) {
        return x->peak > y->peak ? -1 : 1;
    }
    return x->name < y->name ? -1 : x->name > y->name;
}

static int rcmp_pass(const struct rep *r, uint32_t a, uint32_t b)
{
    const struct pass_acc *x = &r->passes[a];
    const struct pass_acc *y = &r->passes[b];

    if (x->barriers != y->barriers) {
        return x->barriers > y->barriers ? -1 : 1;
    }
    return x->name < y->name ? -1 : x->name > y->name;
}

/* Sorted index array of @p n entries (returned-owned), or NULL on allocation failure. */
static uint32_t *sorted(const struct rep *r, size_t n,
                        int (*cmp)(const struct rep *, uint32_t, uint32_t))
{
    uint32_t *v = nwb_malloc((n ? n : 1) * 2 * sizeof(*v));

    if (v == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        v[i] = (uint32_t)i;
    }
    merge_sort(v, v + n, n, r, cmp);
    return v;
}

static void write_status(nwb_json_t *j, const char *key, int status)
{
    nwb_json_key(j, key);
    nwb_json_cstr(j, status == 0 ? "ok" : nwb_err_name(status));
}

static void write_run(nwb_json_t *j, const struct rep *r, const nwb_tel_decode_result_t *res)
{
    nwb_json_key(j, "run");
    nwb_json_obj_begin(j);
    if (r->have_header) {
        nwb_json_key(j, "program");
        nwb_json_str(j, r->first.program, r->first.program_len);
        nwb_json_key(j, "run");
        nwb_json_str(j, r->first.run, r->first.run_len);
        nwb_json_key(j, "buildId");
        nwb_json_str(j, r->first.build_id, r->first.build_id_len);
        nwb_json_key(j, "startWallNs");
        nwb_json_u64(j, r->first.start_wall_ns);
    } else {
        nwb_json_key(j, "program");
        nwb_json_null(j);
        nwb_json_key(j, "run");
        nwb_json_null(j);
        nwb_json_key(j, "buildId");
        nwb_json_null(j);
        nwb_json_key(j, "startWallNs");
        nwb_json_null(j);
    }
    nwb_json_key(j, "streamVersion");
    nwb_json_u64(j, res->max_version);
    nwb_json_key(j, "segments");
    nwb_json_u64(j, res->segments);
    nwb_json_key(j, "headerMismatches");
    nwb_json_u64(j, r->header_mismatches);
    nwb_json_obj_end(j);
}

static void write_decode(nwb_json_t *j, const struct rep *r, const nwb_tel_decode_result_t *res,
                         size_t len)
{
    uint64_t unique = r->segments - r->dup_segments - r->untracked_segments;
    uint64_t gaps = 0;

    if (r->have_header && r->untracked_segments == 0 && unique > 0 &&
        r->seq_max - r->seq_min + 1 > unique) {
        gaps = r->seq_max - r->seq_min + 1 - unique;
    }
    nwb_json_key(j, "decode");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "bytes");
    nwb_json_u64(j, len);
    nwb_json_key(j, "consumedBytes");
    nwb_json_u64(j, res->consumed);
    nwb_json_key(j, "events");
    nwb_json_u64(j, res->events);
    write_status(j, "status", res->status);
    nwb_json_key(j, "statusCode");
    nwb_json_i64(j, res->status);
    nwb_json_key(j, "errorOffset");
    if (res->status != 0) {
        nwb_json_u64(j, res->error_offset);
    } else {
        nwb_json_null(j);
    }
    nwb_json_key(j, "reason");
    if (res->status != 0 && res->reason != NULL) {
        nwb_json_cstr(j, res->reason);
    } else {
        nwb_json_null(j);
    }
    nwb_json_key(j, "duplicateSegments");
    nwb_json_u64(j, r->dup_segments);
    nwb_json_key(j, "duplicateEvents");
    nwb_json_u64(j, r->dup_events);
    nwb_json_key(j, "seqGaps");
    nwb_json_u64(j, gaps);
    nwb_json_key(j, "clientDrops");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "events");
    nwb_json_u64(j, r->drop_events);
    nwb_json_key(j, "scopes");
    nwb_json_u64(j, r->drop_scopes);
    nwb_json_key(j, "uploads");
    nwb_json_u64(j, r->drop_uploads);
    nwb_json_obj_end(j);
    write_status(j, "reportStatus", r->err);
    nwb_json_obj_end(j);
}

static void write_uploads(nwb_json_t *j, const nwb_tel_ingest_summary_t *in)
{
    nwb_json_key(j, "uploads");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "log");
    nwb_json_bool(j, in != NULL && in->present);
    nwb_json_key(j, "accepted");
    nwb_json_u64(j, in != NULL ? in->accepted : 0);
    nwb_json_key(j, "duplicates");
    nwb_json_u64(j, in != NULL ? in->duplicates : 0);
    nwb_json_key(j, "rejected");
    nwb_json_u64(j, in != NULL ? in->rejected : 0);
    nwb_json_key(j, "recentRejections");
    nwb_json_arr_begin(j);
    for (unsigned i = 0; in != NULL && i < in->recent_count; i++) {
        const nwb_tel_rejection_t *x = &in->recent[i];

        nwb_json_obj_begin(j);
        nwb_json_key(j, "seq");
        nwb_json_u64(j, x->seq);
        write_status(j, "status", x->status);
        nwb_json_key(j, "offset");
        nwb_json_u64(j, x->offset);
        nwb_json_key(j, "bytes");
        nwb_json_u64(j, x->bytes);
        nwb_json_key(j, "timeNs");
        nwb_json_u64(j, x->time_ns);
        nwb_json_key(j, "reason");
        nwb_json_cstr(j, x->reason);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_obj_end(j);
}

static void write_events(nwb_json_t *j, const struct rep *r)
{
    nwb_json_key(j, "events");
    nwb_json_obj_begin(j);
    for (unsigned k = 1; k <= NWB_TEL_KIND_LAST; k++) {
        nwb_json_key(j, nwb_tel_kind_name(k));
        nwb_json_u64(j, r->by_kind[k]);
    }
    nwb_json_key(j, "unknown");
    nwb_json_u64(j, r->unknown);
    nwb_json_obj_end(j);
}

static void write_frames(nwb_json_t *j, struct rep *r, nwb_buf_t *scratch)
{
    static const double pct[4] = {50, 90, 95, 99};
    static const char *const keys[4] = {"p50Ms", "p90Ms", "p95Ms", "p99Ms"};

    if (r->ndurs > 1) {
        qsort(r->durs, r->ndurs, sizeof(*r->durs), cmp_u64);
    }
    nwb_json_key(j, "frames");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "count");
    nwb_json_u64(j, r->frames);
    nwb_json_key(j, "meanMs");
    nwb_json_dbl(j, r->frames ? ms(r->frame_sum_ns) / (double)r->frames : 0.0, 6);
    for (unsigned i = 0; i < 4; i++) {
        nwb_json_key(j, keys[i]);
        nwb_json_dbl(j, ms(nearest_rank(r->durs, r->ndurs, pct[i])), 6);
    }
    nwb_json_key(j, "maxMs");
    nwb_json_dbl(j, ms(r->frame_max_ns), 6);
    nwb_json_key(j, "percentileMethod");
    nwb_json_cstr(j, "nearest-rank over the exact frame durations: the smallest duration with "
                     "at least p% of frames at or below it");
    nwb_json_key(j, "percentileFrames");
    nwb_json_u64(j, r->ndurs);
    nwb_json_key(j, "worst");
    nwb_json_arr_begin(j);
    for (unsigned i = 0; i < r->nworst; i++) {
        const struct worst *w = &r->worst[i];

        nwb_json_obj_begin(j);
        nwb_json_key(j, "frame");
        nwb_json_u64(j, w->frame);
        nwb_json_key(j, "ms");
        nwb_json_dbl(j, ms(w->dur_ns), 6);
        nwb_json_key(j, "timestampNs");
        nwb_json_u64(j, w->ts);
        nwb_json_key(j, "topScopes");
        nwb_json_arr_begin(j);
        for (uint32_t k = 0; k < w->ntop; k++) {
            nwb_json_obj_begin(j);
            nwb_json_key(j, "name");
            nwb__tel_json_name(j, r->opt->names, w->top[k].name);
            nwb_json_key(j, "thread");
            nwb_json_u64(j, w->top[k].thread);
            nwb_json_key(j, "depth");
            nwb_json_u64(j, w->top[k].depth);
            nwb_json_key(j, "ms");
            nwb_json_dbl(j, ms(w->top[k].end_ns - w->top[k].start_ns), 6);
            nwb_json_obj_end(j);
        }
        nwb_json_arr_end(j);
        nwb_json_key(j, "logs");
        nwb_json_arr_begin(j);
        for (uint32_t k = 0; k < w->nlogs; k++) {
            nwb_json_obj_begin(j);
            nwb_json_key(j, "level");
            nwb_json_cstr(j, nwb_log_level_name(w->logs[k].level));
            nwb_json_key(j, "thread");
            nwb_json_u64(j, w->logs[k].thread);
            nwb_json_key(j, "message");
            nwb__tel_json_text(j, r->opt->names, w->logs[k].msg, w->logs[k].len, scratch);
            nwb_json_obj_end(j);
        }
        nwb_json_arr_end(j);
        nwb_json_key(j, "moreLogs");
        nwb_json_u64(j, w->more_logs);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_obj_end(j);
}

static void write_scope(nwb_json_t *j, const struct rep *r, const struct scope_acc *a)
{
    nwb_json_obj_begin(j);
    nwb_json_key(j, "name");
    nwb__tel_json_name(j, r->opt->names, a->name);
    nwb_json_key(j, "samples");
    nwb_json_u64(j, a->samples);
    if (!a->gpu) {
        nwb_json_key(j, "totalMs");
        nwb_json_dbl(j, ms(a->total_ns), 6);
        nwb_json_key(j, "minMs");
        nwb_json_dbl(j, ms(a->samples ? a->min_ns : 0), 6);
        nwb_json_key(j, "maxMs");
        nwb_json_dbl(j, ms(a->max_ns), 6);
        nwb_json_key(j, "meanMs");
        nwb_json_dbl(j, a->samples ? ms(a->total_ns) / (double)a->samples : 0.0, 6);
    } else {
        nwb_json_key(j, "totalMs");
        nwb_json_dbl(j, a->total_ms, 6);
        nwb_json_key(j, "minMs");
        nwb_json_dbl(j, a->min_ms, 6);
        nwb_json_key(j, "maxMs");
        nwb_json_dbl(j, a->max_ms, 6);
        nwb_json_key(j, "meanMs");
        nwb_json_dbl(j, a->samples ? a->total_ms / (double)a->samples : 0.0, 6);
    }
    nwb_json_key(j, "p95Ms");
    nwb_json_dbl(j, ms(nwb__hist_quantile(&a->hist, 0.95)), 6);
    nwb_json_key(j, "firstSourceFrame");
    nwb_json_u64(j, a->first_frame);
    nwb_json_key(j, "lastSourceFrame");
    nwb_json_u64(j, a->last_frame);
    if (a->gpu) {
        nwb_json_key(j, "windows");
        nwb_json_u64(j, a->windows);
        nwb_json_key(j, "publishedWindows");
        nwb_json_u64(j, a->published_windows);
        nwb_json_key(j, "reportedGpuSamples");
        nwb_json_u64(j, a->reported_samples);
        nwb_json_key(j, "reportedTotalMs");
        nwb_json_dbl(j, a->reported_total_ms, 6);
        nwb_json_key(j, "sampleAvgMs");
        nwb_json_dbl(
            j, a->reported_samples ? a->reported_total_ms / (double)a->reported_samples : 0.0, 6);
    }
    nwb_json_obj_end(j);
}

static int write_scopes(nwb_json_t *j, const struct rep *r)
{
    const size_t n = r->scope_ix.count;
    uint32_t *ord = sorted(r, n, rcmp_scope);

    if (ord == NULL) {
        return -ENOMEM;
    }
    nwb_json_key(j, "scopes");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "p95Method");
    nwb_json_cstr(j, "nearest-rank over a log-linear histogram with 32 sub-buckets per power of "
                     "two (bucket upper bound, at most 1/32 above the exact value); GPU scopes "
                     "rank their publication-window averages");
    for (int gpu = 0; gpu < 2; gpu++) {
        nwb_json_key(j, gpu ? "gpu" : "cpu");
        nwb_json_arr_begin(j);
        for (size_t i = 0; i < n; i++) {
            if (r->scopes[ord[i]].gpu == gpu) {
                write_scope(j, r, &r->scopes[ord[i]]);
            }
        }
        nwb_json_arr_end(j);
    }
    nwb_json_key(j, "omittedSamples");
    nwb_json_u64(j, r->scopes_omitted);
    nwb_json_obj_end(j);
    nwb_free(ord);
    return 0;
}

static void write_mem_entry(nwb_json_t *j, const struct rep *r, const struct mem_acc *m)
{
    nwb_json_obj_begin(j);
    nwb_json_key(j, "name");
    nwb__tel_json_name(j, r->opt->names, m->name);
    nwb_json_key(j, "source");
    nwb_json_cstr(j, nwb_tel_mem_source_name(m->source));
    nwb_json_key(j, "reservedBytes");
    nwb_json_u64(j, m->reserved);
    nwb_json_key(j, "usedBytes");
    nwb_json_u64(j, m->used);
    nwb_json_key(j, "peakBytes");
    nwb_json_u64(j, m->peak);
    nwb_json_key(j, "firstUsedBytes");
    nwb_json_u64(j, m->first_used);
    nwb_json_key(j, "growthBytes");
    nwb_json_i64(j, m->used >= m->first_used ? (int64_t)(m->used - m->first_used)
                                             : -(int64_t)(m->first_used - m->used));
    nwb_json_key(j, "allocations");
    nwb_json_u64(j, m->allocs);
    nwb_json_key(j, "frees");
    nwb_json_u64(j, m->frees);
    nwb_json_key(j, "peakBasis");
    nwb_json_cstr(j, nwb_tel_peak_basis_name(m->basis));
    nwb_json_key(j, "samples");
    nwb_json_u64(j, m->samples);
    nwb_json_key(j, "firstFrame");
    nwb_json_u64(j, m->first_frame);
    nwb_json_key(j, "lastFrame");
    nwb_json_u64(j, m->last_frame);
    nwb_json_obj_end(j);
}

static int write_memory(nwb_json_t *j, const struct rep *r)
{
    static const char *const keys[3] = {"arenas", "heapBacking", "explicitScopes"};
    const size_t n = r->mem_ix.count;
    uint32_t *ord = sorted(r, n, rcmp_mem);

    if (ord == NULL) {
        return -ENOMEM;
    }
    nwb_json_key(j, "memory");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "frames");
    nwb_json_u64(j, r->mem_frames);
    for (unsigned src = 0; src < 3; src++) {
        nwb_json_key(j, keys[src]);
        nwb_json_arr_begin(j);
        for (size_t i = 0; i < n; i++) {
            if (r->mem[ord[i]].source == src) {
                write_mem_entry(j, r, &r->mem[ord[i]]);
            }
        }
        nwb_json_arr_end(j);
    }
    nwb_json_key(j, "arenaTotals");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "firstUsedBytes");
    nwb_json_u64(j, r->arena_used_first);
    nwb_json_key(j, "lastUsedBytes");
    nwb_json_u64(j, r->arena_used_last);
    nwb_json_key(j, "maxUsedBytes");
    nwb_json_u64(j, r->arena_used_max);
    nwb_json_key(j, "growthBytes");
    nwb_json_i64(j, r->arena_used_last >= r->arena_used_first
                        ? (int64_t)(r->arena_used_last - r->arena_used_first)
                        : -(int64_t)(r->arena_used_first - r->arena_used_last));
    nwb_json_obj_end(j);
    nwb_json_key(j, "heapBackingTotals");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "firstUsedBytes");
    nwb_json_u64(j, r->heap_used_first);
    nwb_json_key(j, "lastUsedBytes");
    nwb_json_u64(j, r->heap_used_last);
    nwb_json_key(j, "maxUsedBytes");
    nwb_json_u64(j, r->heap_used_max);
    nwb_json_obj_end(j);
    nwb_json_key(j, "omittedRecords");
    nwb_json_u64(j, r->mem_omitted);
    nwb_json_obj_end(j);
    nwb_free(ord);
    return 0;
}

static int write_fg(nwb_json_t *j, const struct rep *r)
{
    const size_t n = r->pass_ix.count;
    uint32_t *ord = sorted(r, n, rcmp_pass);

    if (ord == NULL) {
        return -ENOMEM;
    }
    nwb_json_key(j, "frameGraph");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "frames");
    nwb_json_u64(j, r->fg_frames);
    nwb_json_key(j, "totals");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "passes");
    nwb_json_u64(j, r->fg_passes);
    nwb_json_key(j, "packets");
    nwb_json_u64(j, r->fg_packets);
    nwb_json_key(j, "barriers");
    nwb_json_u64(j, r->fg_barriers);
    nwb_json_key(j, "waits");
    nwb_json_u64(j, r->fg_waits);
    nwb_json_key(j, "signals");
    nwb_json_u64(j, r->fg_signals);
    nwb_json_key(j, "edges");
    nwb_json_u64(j, r->fg_edges);
    nwb_json_key(j, "emittedWaits");
    nwb_json_u64(j, r->fg_emitted);
    nwb_json_key(j, "sameQueueElisions");
    nwb_json_u64(j, r->fg_same_queue);
    nwb_json_key(j, "duplicateMerges");
    nwb_json_u64(j, r->fg_dup_merges);
    nwb_json_key(j, "inheritedElisions");
    nwb_json_u64(j, r->fg_inherited);
    nwb_json_obj_end(j);
    nwb_json_key(j, "queues");
    nwb_json_arr_begin(j);
    for (uint32_t i = 0; i < r->queue_ix.count; i++) {
        const struct queue_acc *q = &r->queues[i];

        nwb_json_obj_begin(j);
        nwb_json_key(j, "name");
        nwb__tel_json_name(j, r->opt->names, q->name);
        nwb_json_key(j, "type");
        nwb_json_cstr(j, nwb_tel_queue_type_name(q->type));
        nwb_json_key(j, "frames");
        nwb_json_u64(j, q->frames);
        nwb_json_key(j, "packets");
        nwb_json_u64(j, q->packets);
        nwb_json_key(j, "passes");
        nwb_json_u64(j, q->passes);
        nwb_json_key(j, "waits");
        nwb_json_u64(j, q->waits);
        nwb_json_key(j, "signals");
        nwb_json_u64(j, q->signals);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_key(j, "passes");
    nwb_json_arr_begin(j);
    for (size_t i = 0; i < n; i++) {
        const struct pass_acc *p = &r->passes[ord[i]];

        nwb_json_obj_begin(j);
        nwb_json_key(j, "name");
        nwb__tel_json_name(j, r->opt->names, p->name);
        nwb_json_key(j, "queue");
        nwb__tel_json_name(j, r->opt->names, p->queue);
        nwb_json_key(j, "frames");
        nwb_json_u64(j, p->frames);
        nwb_json_key(j, "barriers");
        nwb_json_u64(j, p->barriers);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_key(j, "omitted");
    nwb_json_u64(j, r->fg_omitted);
    nwb_json_obj_end(j);
    nwb_free(ord);
    return 0;
}

static void write_diags(nwb_json_t *j, const struct rep *r)
{
    nwb_json_key(j, "diagnostics");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "count");
    nwb_json_u64(j, r->diags);
    nwb_json_key(j, "bySeverity");
    nwb_json_obj_begin(j);
    for (unsigned s = 0; s < 4; s++) {
        nwb_json_key(j, nwb_tel_severity_name(s));
        nwb_json_u64(j, r->diag_by_sev[s]);
    }
    nwb_json_obj_end(j);
    nwb_json_key(j, "listed");
    nwb_json_arr_begin(j);
    for (unsigned i = 0; i < r->ndiag; i++) {
        const struct diag_ref *d = &r->diag_list[i];
        nwb_tel_kv_t kv;
        size_t pos = 0;

        nwb_json_obj_begin(j);
        nwb_json_key(j, "frame");
        nwb_json_u64(j, d->frame);
        nwb_json_key(j, "timestampNs");
        nwb_json_u64(j, d->ts);
        nwb_json_key(j, "code");
        nwb__tel_json_name(j, r->opt->names, d->v.code);
        nwb_json_key(j, "severity");
        nwb_json_cstr(j, nwb_tel_severity_name(d->v.severity));
        nwb_json_key(j, "pairs");
        /* An array of pairs, not an object: keys may repeat. */
        nwb_json_arr_begin(j);
        while (nwb_tel_diag_pair_next(&d->v, &pos, &kv)) {
            nwb_json_arr_begin(j);
            nwb_json_str(j, kv.key, kv.key_len);
            nwb_json_str(j, kv.value, kv.value_len);
            nwb_json_arr_end(j);
        }
        nwb_json_arr_end(j);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_key(j, "omitted");
    nwb_json_u64(j, r->diags - r->ndiag);
    nwb_json_obj_end(j);
}

static void rep_cleanup(struct rep *r)
{
    for (size_t i = 0; i < r->scope_ix.count && r->scopes != NULL; i++) {
        nwb__hist_cleanup(&r->scopes[i].hist);
    }
    ntab_free(&r->seqs);
    ntab_free(&r->scope_ix);
    ntab_free(&r->mem_ix);
    ntab_free(&r->pass_ix);
    ntab_free(&r->queue_ix);
    nwb_free(r->dup);
    nwb_free(r->durs);
    nwb_free(r->scopes);
    nwb_free(r->mem);
    nwb_free(r->passes);
    nwb_free(r->queues);
}

int nwb_tel_report_build(const uint8_t *stream, size_t len, const nwb_tel_report_options_t *opt,
                         nwb_buf_t *out, nwb_tel_decode_result_t *res_out)
{
    static const nwb_tel_report_options_t defaults = NWB_TEL_REPORT_OPTIONS_INIT;
    const nwb_tel_visitor_t v1 = {on_segment, on_event};
    nwb_tel_decode_result_t res;
    nwb_tel_decode_result_t res2;
    nwb_buf_t scratch;
    nwb_json_t j;
    struct rep *r;
    const size_t start = out->len;
    int err;

    if (opt == NULL) {
        opt = &defaults;
    }
    r = nwb_calloc(1, sizeof(*r));
    if (r == NULL) {
        return -ENOMEM;
    }
    r->opt = opt;
    nwb_tel_stream_decode(stream, len, 0, &v1, r, &res);
    /* Events of duplicate segments were validated but not visited. */
    {
        uint64_t visited = r->unknown;

        for (unsigned k = 1; k <= NWB_TEL_KIND_LAST; k++) {
            visited += r->by_kind[k];
        }
        r->dup_events = res.events >= visited ? res.events - visited : 0;
    }
    if (r->nworst > 0 && r->by_kind[NWB_TEL_KIND_TEXT_LOG] > 0 && r->err == 0) {
        r->pass2 = 1;
        r->seg_index = 0;
        nwb_tel_stream_decode(stream, len, 0, &v1, r, &res2);
    }
    out->max = opt->json_max != 0 ? opt->json_max : NWB_TEL_REPORT_JSON_MAX;
    nwb_buf_init(&scratch, 1u << 20);
    nwb_json_init(&j, out, NULL);
    nwb_json_obj_begin(&j);
    nwb_json_key(&j, "schema");
    nwb_json_cstr(&j, NWB_TEL_REPORT_SCHEMA);
    write_run(&j, r, &res);
    write_decode(&j, r, &res, len);
    write_uploads(&j, opt->ingest);
    write_events(&j, r);
    write_frames(&j, r, &scratch);
    err = write_scopes(&j, r);
    if (err == 0) {
        err = write_memory(&j, r);
    }
    if (err == 0) {
        err = write_fg(&j, r);
    }
    if (err == 0) {
        write_diags(&j, r);
    }
    nwb_json_obj_end(&j);
    nwb_json_space(&j, "\n", 1);
    if (err == 0) {
        err = nwb_json_finish(&j);
    }
    if (err != 0) {
        out->len = start;
    }
    if (res_out != NULL) {
        *res_out = res;
    }
    nwb_buf_cleanup(&scratch);
    rep_cleanup(r);
    nwb_free(r);
    return err;
}
