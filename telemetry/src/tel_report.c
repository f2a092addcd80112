/* SPDX-License-Identifier: MIT */
/*
 * tel_report.c - the incremental report state (docs/telemetry-report.md): each feed decodes
 * its bytes once and adds them to bounded aggregates (events, frames, the worst frames with
 * their scopes and log lines, scopes, memory with its series, frame graphs, diagnostics,
 * duplicate seqs), so its cost is O(its bytes) whatever the run's length. The JSON is written
 * by tel_report_write.c; nwb_tel_report_build() is create + feed + write.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "tel_report_int.h"

/* Events an atomic feed holds back before it has seen the whole input decode; above it, the
 * input is validated first and decoded a second time (no upload comes near it). */
#define FEED_ITEMS_MAX 16384u

/* ---- A small open-addressing index from (name, tag) to an entry number ----------------- */

struct nwb__nslot {
    uint64_t name;
    uint32_t tag;
    uint32_t idx1; /* entry index + 1; 0 = empty */
};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* The slot hash of (name, tag): every bit of both (thread ids are tags of up to 32 bits). */
static uint64_t slot_hash(uint64_t name, uint32_t tag)
{
    return mix(name ^ ((uint64_t)tag << 56) ^ mix((uint64_t)tag + 1));
}

static int ntab_grow(struct nwb__ntab *t)
{
    const size_t cap = t->slots == NULL ? 64 : (t->mask + 1) * 2;
    struct nwb__nslot *s = nwb_calloc(cap, sizeof(*s));

    if (s == NULL) {
        return -ENOMEM;
    }
    if (t->slots != NULL) {
        for (size_t i = 0; i <= t->mask; i++) {
            if (t->slots[i].idx1 != 0) {
                size_t j = slot_hash(t->slots[i].name, t->slots[i].tag) & (cap - 1);

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

static const struct nwb__nslot *ntab_find(const struct nwb__ntab *t, uint64_t name, uint32_t tag)
{
    size_t j;

    if (t->slots == NULL) {
        return NULL;
    }
    j = slot_hash(name, tag) & t->mask;
    while (t->slots[j].idx1 != 0) {
        if (t->slots[j].name == name && t->slots[j].tag == tag) {
            return &t->slots[j];
        }
        j = (j + 1) & t->mask;
    }
    return NULL;
}

/*
 * Find (name, tag); when absent and fewer than @p max entries exist, add it as entry number
 * t->count and set @p *created. Returns 0, NWB_EFULL (absent and full) or -ENOMEM.
 */
static int ntab_get(struct nwb__ntab *t, uint64_t name, uint32_t tag, uint32_t max, uint32_t *idx,
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
    j = slot_hash(name, tag) & t->mask;
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

static void ntab_free(struct nwb__ntab *t)
{
    nwb_free(t->slots);
    t->slots = NULL;
    t->mask = 0;
    t->count = 0;
}

static size_t ntab_memory(const struct nwb__ntab *t)
{
    return t->slots != NULL ? (t->mask + 1) * sizeof(*t->slots) : 0;
}

int nwb__tel_grow(void **arr, size_t *cap, size_t need, size_t elem)
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

/* ---- Small helpers ----------------------------------------------------------------------- */

typedef nwb_tel_report_state_t rep_t;

static void note_err(rep_t *r, int err)
{
    if (err != 0 && r->err == 0) {
        r->err = err;
    }
}

/* Forget the lines, keep the text buffer. */
static void logs_clear(struct nwb__frame_logs *l)
{
    l->n = 0;
    l->more = 0;
    l->text_len = 0;
}

static void logs_free(struct nwb__frame_logs *l)
{
    nwb_free(l->text);
    memset(l, 0, sizeof(*l));
}

static void logs_add(rep_t *r, struct nwb__frame_logs *l, const nwb_tel_text_view_t *t)
{
    struct nwb__log_line *line;
    int err;

    if (l->n >= NWB_TEL_REPORT_FRAME_LOGS) {
        l->more++;
        return;
    }
    err = nwb__tel_grow((void **)&l->text, &l->text_cap, l->text_len + t->len, 1);
    if (err != 0) {
        note_err(r, err);
        return;
    }
    line = &l->line[l->n++];
    line->level = t->level;
    line->thread = t->thread;
    line->len = t->len;
    line->off = l->text_len;
    if (t->len != 0) { /* an empty first line has no buffer yet: memcpy(NULL, ..., 0) is UB */
        memcpy(l->text + l->text_len, t->msg, t->len);
    }
    l->text_len += t->len;
}

static void series_add(rep_t *r, struct nwb__series *s, uint64_t frame, uint64_t v)
{
    struct nwb__series_pt *last;

    if (s->pt == NULL) {
        s->pt = nwb_malloc(NWB_TEL_REPORT_MEMORY_POINTS * sizeof(*s->pt));
        if (s->pt == NULL) {
            note_err(r, -ENOMEM);
            return;
        }
        s->count = 0;
        s->width = 1;
    }
    last = s->count > 0 ? &s->pt[s->count - 1] : NULL;
    if (last != NULL && last->n < s->width) {
        last->lo = v < last->lo ? v : last->lo;
        last->hi = v > last->hi ? v : last->hi;
        last->n++;
        return;
    }
    if (s->count == NWB_TEL_REPORT_MEMORY_POINTS) {
        /* Full: merge neighbours pairwise. Min and max survive; the width doubles. */
        for (uint32_t i = 0; i < s->count / 2; i++) {
            const struct nwb__series_pt *a = &s->pt[2 * i];
            const struct nwb__series_pt *b = &s->pt[2 * i + 1];
            struct nwb__series_pt m;

            m.frame = a->frame;
            m.lo = a->lo < b->lo ? a->lo : b->lo;
            m.hi = a->hi > b->hi ? a->hi : b->hi;
            m.n = a->n + b->n;
            s->pt[i] = m;
        }
        s->count /= 2;
        s->width *= 2;
    }
    s->pt[s->count].frame = frame;
    s->pt[s->count].lo = v;
    s->pt[s->count].hi = v;
    s->pt[s->count].n = 1;
    s->count++;
}

static size_t series_memory(const struct nwb__series *s)
{
    return s->pt != NULL ? NWB_TEL_REPORT_MEMORY_POINTS * sizeof(*s->pt) : 0;
}

/* ---- Segments ---------------------------------------------------------------------------- */

static void copy_str(char *dst, size_t cap, const char **field, uint16_t *len)
{
    const size_t n = *len < cap ? *len : cap;

    memcpy(dst, *field, n);
    *field = dst;
    *len = (uint16_t)n;
}

static int on_segment(void *ctx, const nwb_tel_header_t *h, size_t offset)
{
    rep_t *r = ctx;
    nwb_tel_feed_result_t *fr = r->cur;
    uint32_t idx;
    int created = 0;
    int dup = 0;
    int err;

    (void)offset;
    err = ntab_get(&r->seqs, h->seq, 0, NWB_TEL_REPORT_SEGMENTS_MAX, &idx, &created);
    if (err == NWB_EFULL) {
        r->untracked_segments++;
    } else if (err != 0) {
        note_err(r, err);
        return err;
    } else if (!created) {
        dup = 1;
    }
    r->segments++;
    if (fr->segments == 0) {
        fr->seq_first = h->seq;
    }
    fr->segments++;
    fr->seq_last = h->seq;
    r->skipping = dup;
    if (dup) {
        r->dup_segments++;
        fr->duplicate_segments++;
        return 0;
    }
    if (!r->have_header) {
        r->first = *h;
        copy_str(r->program, sizeof(r->program), &r->first.program, &r->first.program_len);
        copy_str(r->run, sizeof(r->run), &r->first.run, &r->first.run_len);
        copy_str(r->build_id, sizeof(r->build_id), &r->first.build_id, &r->first.build_id_len);
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

/* ---- Frames: the worst ones keep their top scopes and log lines --------------------------- */

static struct nwb__pending *pending_find(rep_t *r, uint64_t frame)
{
    for (unsigned i = 0; i < NWB_TEL_REPORT_PENDING_LOGS; i++) {
        if (r->pending[i].used && r->pending[i].frame == frame) {
            return &r->pending[i];
        }
    }
    return NULL;
}

/* The lines of a frame wait in a ring: the slot of the NWB_TEL_REPORT_PENDING_LOGS-th frame
 * created after it takes them over, so a line waits a bounded time for its perfFrame. */
static struct nwb__pending *pending_get(rep_t *r, uint64_t frame)
{
    struct nwb__pending *p = pending_find(r, frame);

    if (p != NULL) {
        return p;
    }
    p = &r->pending[r->pending_order % NWB_TEL_REPORT_PENDING_LOGS];
    r->pending_order++;
    logs_clear(&p->logs);
    p->used = 1;
    p->frame = frame;
    return p;
}

static void on_text(rep_t *r, const nwb_tel_event_t *ev)
{
    int matched = 0;

    r->logs_by_level[ev->u.text.level & 3]++;
    for (unsigned i = 0; i < r->nworst; i++) {
        if (r->worst[i].frame == ev->frame) {
            logs_add(r, &r->worst[i].logs, &ev->u.text);
            matched = 1;
        }
    }
    if (!matched) {
        logs_add(r, &pending_get(r, ev->frame)->logs, &ev->u.text);
    }
}

static void worst_consider(rep_t *r, const nwb_tel_event_t *ev)
{
    const nwb_tel_perf_view_t *pv = &ev->u.perf;
    struct nwb__pending *pend = pending_find(r, ev->frame);
    struct nwb__worst w;
    unsigned pos;

    if (r->nworst == NWB_TEL_REPORT_WORST_FRAMES &&
        pv->frame_duration_ns <= r->worst[r->nworst - 1].dur_ns) {
        if (pend != NULL) {
            logs_clear(&pend->logs);
            pend->used = 0;
        }
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
    /* The lines that arrived before the frame's perfFrame move over with it; the buffer of a
     * frame leaving the list goes to the pending slot, or is freed. */
    if (pend != NULL) {
        w.logs = pend->logs;
        memset(&pend->logs, 0, sizeof(pend->logs));
        pend->used = 0;
    }
    if (r->nworst == NWB_TEL_REPORT_WORST_FRAMES) {
        struct nwb__frame_logs *gone = &r->worst[r->nworst - 1].logs;

        if (pend != NULL) {
            pend->logs = *gone;
            logs_clear(&pend->logs);
        } else {
            logs_free(gone);
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

static struct nwb__scope_acc *scope_get(rep_t *r, nwb_name_t name, int gpu)
{
    uint32_t idx;
    int created;
    int err;

    /* Room for a new entry first, so the index never names an entry that does not exist. */
    err = nwb__tel_grow((void **)&r->scopes, &r->scopes_cap, (size_t)r->scope_ix.count + 1,
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

static void cpu_acc_add(rep_t *r, struct nwb__scope_acc *a, uint64_t frame, uint64_t d)
{
    if (a->samples == 0) {
        a->first_frame = frame;
        a->last_frame = frame;
    }
    a->samples++;
    a->total_ns += d;
    a->min_ns = d < a->min_ns ? d : a->min_ns;
    a->max_ns = d > a->max_ns ? d : a->max_ns;
    a->first_frame = frame < a->first_frame ? frame : a->first_frame;
    a->last_frame = frame > a->last_frame ? frame : a->last_frame;
    note_err(r, nwb__hist_add(&a->hist, d));
}

/* The entry of @p thread, created (name unknown, counts 0) when absent and there is room;
 * NULL when the table is full (counted) or on allocation failure. */
static struct nwb__thread_acc *thread_get(rep_t *r, uint32_t thread)
{
    uint32_t idx;
    int created;
    int err;

    if (r->last_thread_row1 != 0 && r->last_thread == thread) {
        return &r->threads[r->last_thread_row1 - 1];
    }
    err = nwb__tel_grow((void **)&r->threads, &r->threads_cap, (size_t)r->thread_ix.count + 1,
                        sizeof(*r->threads));
    if (err == 0) {
        err = ntab_get(&r->thread_ix, thread, 0, NWB_TEL_REPORT_THREADS_MAX, &idx, &created);
    }
    if (err == NWB_EFULL) {
        r->threads_not_kept++;
        return NULL;
    }
    if (err != 0) {
        note_err(r, err);
        return NULL;
    }
    if (created) {
        memset(&r->threads[idx], 0, sizeof(r->threads[idx]));
        r->threads[idx].thread = thread;
    }
    r->last_thread = thread;
    r->last_thread_row1 = idx + 1;
    return &r->threads[idx];
}

/* The cpuByThread row of (@p name, @p thread); @p overall (may be NULL) is the scopes table's
 * row of the name, which remembers the thread it saw last (a scope mostly stays on one). */
static struct nwb__scope_acc *tscope_get(rep_t *r, struct nwb__scope_acc *overall, nwb_name_t name,
                                         uint32_t thread)
{
    uint32_t idx;
    int created;
    int err;

    if (overall != NULL && overall->last_row1 != 0 && overall->last_thread == thread) {
        return &r->tscopes[overall->last_row1 - 1];
    }
    err = nwb__tel_grow((void **)&r->tscopes, &r->tscopes_cap, (size_t)r->tscope_ix.count + 1,
                        sizeof(*r->tscopes));
    if (err == 0) {
        err =
            ntab_get(&r->tscope_ix, name, thread, NWB_TEL_REPORT_THREAD_SCOPES_MAX, &idx, &created);
    }
    if (err == NWB_EFULL) {
        r->tscopes_not_kept++;
        return NULL;
    }
    if (err != 0) {
        note_err(r, err);
        return NULL;
    }
    if (created) {
        memset(&r->tscopes[idx], 0, sizeof(r->tscopes[idx]));
        r->tscopes[idx].name = name;
        r->tscopes[idx].thread = thread;
        r->tscopes[idx].min_ns = UINT64_MAX;
    }
    if (overall != NULL) {
        overall->last_thread = thread;
        overall->last_row1 = idx + 1;
    }
    return &r->tscopes[idx];
}

static void on_cpu_scopes(rep_t *r, const nwb_tel_event_t *ev)
{
    const nwb_tel_perf_view_t *pv = &ev->u.perf;

    for (uint32_t i = 0; i < pv->cpu_count && r->err == 0; i++) {
        nwb_tel_cpu_scope_t s;
        struct nwb__scope_acc *a;
        struct nwb__scope_acc *row;
        struct nwb__thread_acc *t;
        uint64_t d;

        nwb_tel_cpu_scope_at(pv, i, &s);
        d = s.end_ns - s.start_ns;
        a = scope_get(r, s.name, 0);
        if (a != NULL) {
            cpu_acc_add(r, a, ev->frame, d);
        }
        t = thread_get(r, s.thread);
        if (t != NULL) {
            t->scopes++;
            t->depth0_ns += s.depth == 0 ? d : 0;
        }
        row = tscope_get(r, a, s.name, s.thread);
        if (row != NULL) {
            cpu_acc_add(r, row, ev->frame, d);
        }
    }
}

static void on_gpu_scopes(rep_t *r, const nwb_tel_perf_view_t *pv)
{
    for (uint32_t i = 0; i < pv->gpu_count; i++) {
        nwb_tel_gpu_scope_t g;
        struct nwb__scope_acc *a;

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

static void on_perf(rep_t *r, const nwb_tel_event_t *ev)
{
    const nwb_tel_perf_view_t *pv = &ev->u.perf;
    nwb_tel_feed_result_t *fr = r->cur;

    if (r->frames == 0) {
        r->frame_min = ev->frame;
        r->frame_max = ev->frame;
    }
    r->frames++;
    r->frame_sum_ns += pv->frame_duration_ns;
    r->frame_max_ns =
        pv->frame_duration_ns > r->frame_max_ns ? pv->frame_duration_ns : r->frame_max_ns;
    r->frame_min = ev->frame < r->frame_min ? ev->frame : r->frame_min;
    r->frame_max = ev->frame > r->frame_max ? ev->frame : r->frame_max;
    if (fr->frames == 0) {
        fr->frame_first = ev->frame;
        fr->frame_min = ev->frame;
        fr->frame_max = ev->frame;
    }
    fr->frames++;
    fr->frame_last = ev->frame;
    fr->frame_min = ev->frame < fr->frame_min ? ev->frame : fr->frame_min;
    fr->frame_max = ev->frame > fr->frame_max ? ev->frame : fr->frame_max;
    note_err(r, nwb__frames_add(&r->ft, ev->frame, pv->frame_duration_ns));
    worst_consider(r, ev);
    on_cpu_scopes(r, ev);
    on_gpu_scopes(r, pv);
}

/* ---- Memory, frame graphs, diagnostics --------------------------------------------------- */

static void on_memory(rep_t *r, const nwb_tel_event_t *ev)
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
    series_add(r, &r->arena_series, ev->frame, mv->arena_used_bytes);
    series_add(r, &r->heap_series, ev->frame, mv->heap_used_bytes);
    for (uint32_t i = 0; i < mv->count; i++) {
        nwb_tel_mem_record_t rec;
        uint32_t idx;
        int created;
        int err;
        struct nwb__mem_acc *m;

        nwb_tel_mem_record_at(mv, i, &rec);
        err = nwb__tel_grow((void **)&r->mem, &r->mem_cap, (size_t)r->mem_ix.count + 1,
                            sizeof(*r->mem));
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
        series_add(r, &m->series, ev->frame, rec.used_bytes);
    }
}

/* Index of frame-graph queue @p q in the report's table, or UINT32_MAX when it is full. */
static uint32_t fg_queue(rep_t *r, const nwb_tel_fg_queue_t *q)
{
    uint32_t idx = UINT32_MAX;
    int created = 0;
    int err = nwb__tel_grow((void **)&r->queues, &r->queues_cap, (size_t)r->queue_ix.count + 1,
                            sizeof(*r->queues));

    if (err == 0) {
        err = ntab_get(&r->queue_ix, q->name, 0, NWB_TEL_REPORT_QUEUES_MAX, &idx, &created);
    }
    if (err == NWB_EFULL) {
        r->fg_omitted++;
        return UINT32_MAX;
    }
    if (err != 0) {
        note_err(r, err);
        return UINT32_MAX;
    }
    if (created) {
        memset(&r->queues[idx], 0, sizeof(r->queues[0]));
        r->queues[idx].name = q->name;
        r->queues[idx].type = q->type;
    }
    r->queues[idx].frames++;
    return idx;
}

static void fg_pass(rep_t *r, const nwb_tel_fg_pass_t *ps, nwb_name_t queue_name)
{
    uint32_t idx;
    int created;
    int err = nwb__tel_grow((void **)&r->passes, &r->passes_cap, (size_t)r->pass_ix.count + 1,
                            sizeof(*r->passes));

    if (err == 0) {
        err = ntab_get(&r->pass_ix, ps->name, 0, NWB_TEL_REPORT_PASSES_MAX, &idx, &created);
    }
    if (err == NWB_EFULL) {
        r->fg_omitted++;
        return;
    }
    if (err != 0) {
        note_err(r, err);
        return;
    }
    if (created) {
        memset(&r->passes[idx], 0, sizeof(r->passes[0]));
        r->passes[idx].name = ps->name;
    }
    r->passes[idx].frames++;
    r->passes[idx].barriers += ps->barriers;
    r->passes[idx].queue = queue_name;
}

static void on_fg(rep_t *r, const nwb_tel_event_t *ev)
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

        nwb_tel_fg_queue_at(g, i, &q);
        qmap[i] = fg_queue(r, &q);
        if (r->err != 0) {
            return;
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
    for (uint32_t i = 0; i < g->pass_count && r->err == 0; i++) {
        nwb_tel_fg_pass_t ps;
        nwb_tel_fg_packet_t pk;
        nwb_tel_fg_queue_t q;

        nwb_tel_fg_pass_at(g, i, &ps);
        nwb_tel_fg_packet_at(g, ps.packet, &pk);
        nwb_tel_fg_queue_at(g, pk.queue, &q);
        r->fg_barriers += ps.barriers;
        if (qmap[pk.queue] != UINT32_MAX) {
            r->queues[qmap[pk.queue]].passes++;
        }
        fg_pass(r, &ps, q.name);
    }
}

static void on_diag(rep_t *r, const nwb_tel_event_t *ev)
{
    struct nwb__diag_copy *d;
    nwb_tel_kv_t kv;
    size_t pos = 0;

    r->diags++;
    r->diag_by_sev[ev->u.diag.severity & 3]++;
    if (r->ndiag >= NWB_TEL_REPORT_DIAGNOSTICS) {
        return;
    }
    /* The pairs are copied (the fed bytes go away): walk them once for their length (the
     * walk's position holds the byte offset above its low 16 bits). */
    while (nwb_tel_diag_pair_next(&ev->u.diag, &pos, &kv)) {
    }
    d = &r->diag_list[r->ndiag];
    d->pairs_len = pos >> 16;
    d->pairs = nwb_malloc(d->pairs_len != 0 ? d->pairs_len : 1);
    if (d->pairs == NULL) {
        note_err(r, -ENOMEM);
        return;
    }
    memcpy(d->pairs, ev->u.diag.pairs, d->pairs_len);
    d->ts = ev->timestamp_ns;
    d->frame = ev->frame;
    d->v = ev->u.diag;
    d->v.pairs = d->pairs;
    r->ndiag++;
}

/* ---- Format 1.1: threads, string tables, counters, marks ------------------------------- */

static void on_thread(rep_t *r, const nwb_tel_event_t *ev)
{
    const nwb_tel_thread_view_t *tv = &ev->u.thread;
    struct nwb__thread_acc *t = thread_get(r, tv->thread);

    if (t == NULL) {
        return;
    }
    /* The counts are cumulative: the last event has them all. A name, once given, stays. */
    t->records = tv->records;
    t->dropped = tv->dropped;
    t->malformed = tv->malformed;
    if (tv->name_len > 0) {
        memcpy(t->name, tv->name, tv->name_len);
        t->name_len = tv->name_len;
    }
}

static struct nwb__counter_acc *counter_get(rep_t *r, nwb_name_t name)
{
    uint32_t idx;
    int created;
    int err = nwb__tel_grow((void **)&r->counters, &r->counters_cap,
                            (size_t)r->counter_ix.count + 1, sizeof(*r->counters));

    if (err == 0) {
        err = ntab_get(&r->counter_ix, name, 0, NWB_TEL_REPORT_COUNTERS_MAX, &idx, &created);
    }
    if (err == NWB_EFULL) {
        r->counters_not_kept++;
        return NULL;
    }
    if (err != 0) {
        note_err(r, err);
        return NULL;
    }
    if (created) {
        memset(&r->counters[idx], 0, sizeof(r->counters[idx]));
        r->counters[idx].name = name;
    }
    return &r->counters[idx];
}

/* A sample of frame @p frame. The series holds at most NWB_TEL_REPORT_MEMORY_POINTS points of
 * `width` frames each; when full, neighbours merge pairwise and the width doubles, so a one-frame
 * spike survives in its point's max however long the run (as the memory series does). */
static void counter_add(rep_t *r, struct nwb__counter_acc *c, uint64_t frame, double v)
{
    struct nwb__counter_pt *p;

    if (c->pt == NULL) {
        c->pt = nwb_malloc(NWB_TEL_REPORT_MEMORY_POINTS * sizeof(*c->pt));
        if (c->pt == NULL) {
            note_err(r, -ENOMEM);
            return;
        }
        c->count = 0;
        c->width = 1;
    }
    if (c->samples == 0 || frame != c->cur_frame) {
        c->frames++;
        c->cur_frame = frame;
        if (c->count > 0 && c->pt[c->count - 1].frames < c->width) {
            c->pt[c->count - 1].frames++;
        } else {
            if (c->count == NWB_TEL_REPORT_MEMORY_POINTS) {
                for (uint32_t i = 0; i < c->count / 2; i++) {
                    const struct nwb__counter_pt *a = &c->pt[2 * i];
                    const struct nwb__counter_pt *b = &c->pt[2 * i + 1];
                    struct nwb__counter_pt m;

                    m.frame = a->frame;
                    m.lo = a->lo < b->lo ? a->lo : b->lo;
                    m.hi = a->hi > b->hi ? a->hi : b->hi;
                    m.sum = a->sum + b->sum;
                    m.n = a->n + b->n;
                    m.frames = a->frames + b->frames;
                    c->pt[i] = m;
                }
                c->count /= 2;
                c->width *= 2;
            }
            p = &c->pt[c->count++];
            p->frame = frame;
            p->lo = v;
            p->hi = v;
            p->sum = 0.0;
            p->n = 0;
            p->frames = 1;
        }
    }
    p = &c->pt[c->count - 1];
    p->lo = v < p->lo ? v : p->lo;
    p->hi = v > p->hi ? v : p->hi;
    p->sum += v;
    p->n++;
    if (c->samples == 0) {
        c->min = v;
        c->max = v;
    }
    c->samples++;
    c->min = v < c->min ? v : c->min;
    c->max = v > c->max ? v : c->max;
    c->sum += v;
    c->last = v;
}

static void on_counters(rep_t *r, const nwb_tel_event_t *ev)
{
    const nwb_tel_counter_view_t *cv = &ev->u.counters;

    for (uint32_t i = 0; i < cv->count && r->err == 0; i++) {
        nwb_tel_counter_t smp;
        struct nwb__counter_acc *c;

        nwb_tel_counter_at(cv, i, &smp);
        c = counter_get(r, smp.name);
        if (c != NULL) {
            counter_add(r, c, ev->frame, smp.value);
        }
    }
}

static void on_mark(rep_t *r, const nwb_tel_event_t *ev)
{
    struct nwb__mark_copy *m;
    int err;

    r->marks_total++;
    if (r->nmarks >= NWB_TEL_REPORT_MARKS) {
        return;
    }
    err =
        nwb__tel_grow((void **)&r->marks, &r->marks_cap, (size_t)r->nmarks + 1, sizeof(*r->marks));
    if (err != 0) {
        note_err(r, err);
        return;
    }
    m = &r->marks[r->nmarks++];
    m->frame = ev->frame;
    m->ts = ev->timestamp_ns;
    m->thread = ev->u.mark.thread;
    m->len = ev->u.mark.len;
    memcpy(m->text, ev->u.mark.text, ev->u.mark.len);
}

static int on_event(void *ctx, const nwb_tel_event_t *ev, size_t offset)
{
    rep_t *r = ctx;

    (void)offset;
    if (r->skipping) {
        r->dup_events++;
        return 0;
    }
    if (!ev->known) {
        r->unknown++;
        return 0;
    }
    r->by_kind[ev->kind]++;
    switch (ev->kind) {
    case NWB_TEL_KIND_TEXT_LOG:
        on_text(r, ev);
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
    case NWB_TEL_KIND_THREAD:
        on_thread(r, ev);
        break;
    case NWB_TEL_KIND_STRING_TABLE:
        note_err(r, nwb__tel_strings_add(&r->strings, &ev->u.strings));
        break;
    case NWB_TEL_KIND_COUNTER_FRAME:
        on_counters(r, ev);
        break;
    case NWB_TEL_KIND_MARK:
        on_mark(r, ev);
        break;
    default:
        break;
    }
    /* An allocation failure stops the decode; the report then says so. */
    return r->err;
}

/* ---- Atomic feeds: hold the decoded structures back until the whole input decoded -------- */

struct nwb__feed_item {
    int is_segment;
    size_t offset;
    union {
        nwb_tel_header_t h;
        nwb_tel_event_t ev;
    } u;
};

static struct nwb__feed_item *item_next(rep_t *r)
{
    if (r->items_overflow) {
        return NULL;
    }
    if (r->nitems >= FEED_ITEMS_MAX ||
        nwb__tel_grow((void **)&r->items, &r->items_cap, r->nitems + 1, sizeof(*r->items)) != 0) {
        /* Too many to hold (or no memory to hold them): validate only, decode again. */
        r->items_overflow = 1;
        return NULL;
    }
    return &r->items[r->nitems++];
}

static int hold_segment(void *ctx, const nwb_tel_header_t *h, size_t offset)
{
    struct nwb__feed_item *it = item_next(ctx);

    if (it != NULL) {
        it->is_segment = 1;
        it->offset = offset;
        it->u.h = *h;
    }
    return 0;
}

static int hold_event(void *ctx, const nwb_tel_event_t *ev, size_t offset)
{
    struct nwb__feed_item *it = item_next(ctx);

    if (it != NULL) {
        it->is_segment = 0;
        it->offset = offset;
        it->u.ev = *ev;
    }
    return 0;
}

static void items_release(rep_t *r)
{
    nwb_free(r->items);
    r->items = NULL;
    r->nitems = 0;
    r->items_cap = 0;
    r->items_overflow = 0;
}

/* ---- The state --------------------------------------------------------------------------- */

int nwb_tel_report_state_create(nwb_tel_report_state_t **out)
{
    rep_t *r = nwb_calloc(1, sizeof(*r));

    *out = NULL;
    if (r == NULL) {
        return -ENOMEM;
    }
    nwb__frames_init(&r->ft);
    nwb__tel_strings_init(&r->strings);
    *out = r;
    return 0;
}

void nwb__tel_report_state_limit_frames(nwb_tel_report_state_t *s, uint64_t exact_max)
{
    s->ft.exact_max = exact_max;
}

void nwb_tel_report_state_destroy(nwb_tel_report_state_t *r)
{
    if (r == NULL) {
        return;
    }
    for (size_t i = 0; i < r->scope_ix.count && r->scopes != NULL; i++) {
        nwb__hist_cleanup(&r->scopes[i].hist);
    }
    for (size_t i = 0; i < r->mem_ix.count && r->mem != NULL; i++) {
        nwb_free(r->mem[i].series.pt);
    }
    for (unsigned i = 0; i < r->nworst; i++) {
        logs_free(&r->worst[i].logs);
    }
    for (unsigned i = 0; i < NWB_TEL_REPORT_PENDING_LOGS; i++) {
        logs_free(&r->pending[i].logs);
    }
    for (unsigned i = 0; i < r->ndiag; i++) {
        nwb_free(r->diag_list[i].pairs);
    }
    for (size_t i = 0; i < r->tscope_ix.count && r->tscopes != NULL; i++) {
        nwb__hist_cleanup(&r->tscopes[i].hist);
    }
    for (size_t i = 0; i < r->counter_ix.count && r->counters != NULL; i++) {
        nwb_free(r->counters[i].pt);
    }
    nwb__tel_strings_cleanup(&r->strings);
    ntab_free(&r->thread_ix);
    ntab_free(&r->tscope_ix);
    ntab_free(&r->counter_ix);
    nwb_free(r->threads);
    nwb_free(r->tscopes);
    nwb_free(r->counters);
    nwb_free(r->marks);
    nwb__frames_cleanup(&r->ft);
    ntab_free(&r->seqs);
    ntab_free(&r->scope_ix);
    ntab_free(&r->mem_ix);
    ntab_free(&r->pass_ix);
    ntab_free(&r->queue_ix);
    nwb_free(r->arena_series.pt);
    nwb_free(r->heap_series.pt);
    nwb_free(r->scopes);
    nwb_free(r->mem);
    nwb_free(r->passes);
    nwb_free(r->queues);
    items_release(r);
    nwb_free(r);
}

static void stop(rep_t *r, int status, uint64_t offset, const char *reason)
{
    if (r->status == 0) {
        r->status = status;
        r->error_offset = offset;
        r->reason = reason;
    }
}

/* Fold one decode of @p len fed bytes into the stream's totals. */
static void account(rep_t *r, const nwb_tel_decode_result_t *dr, size_t len, uint64_t base)
{
    r->bytes += len;
    r->consumed += dr->consumed;
    r->events += dr->events;
    r->dec_unknown += dr->unknown;
    r->dec_segments += dr->segments;
    r->max_version = dr->max_version > r->max_version ? dr->max_version : r->max_version;
    if (dr->status != 0) {
        stop(r, dr->status, base + dr->error_offset, dr->reason);
    }
}

static void result_from(nwb_tel_feed_result_t *fr, const nwb_tel_decode_result_t *dr)
{
    fr->status = dr->status;
    fr->consumed = dr->consumed;
    fr->error_offset = dr->error_offset;
    fr->reason = dr->reason;
    fr->events = dr->events;
}

/* Replay what an atomic feed held back. Returns 0 or the aggregation error. */
static int apply_items(rep_t *r)
{
    for (size_t i = 0; i < r->nitems && r->err == 0; i++) {
        const struct nwb__feed_item *it = &r->items[i];

        if (it->is_segment) {
            (void)on_segment(r, &it->u.h, it->offset);
        } else {
            (void)on_event(r, &it->u.ev, it->offset);
        }
    }
    return r->err;
}

static int feed_atomic(rep_t *r, const uint8_t *bytes, size_t len, unsigned dflags,
                       nwb_tel_feed_result_t *fr)
{
    const nwb_tel_visitor_t hold = {hold_segment, hold_event};
    const nwb_tel_visitor_t direct = {on_segment, on_event};
    const uint64_t base = r->bytes;
    nwb_tel_decode_result_t dr;

    nwb_tel_stream_decode(bytes, len, dflags, &hold, r, &dr);
    result_from(fr, &dr);
    if (dr.status != 0) {
        items_release(r);
        return 0;
    }
    if (r->items_overflow) {
        /* Known to decode: a second, aggregating pass (only for inputs of huge event counts). */
        items_release(r);
        nwb_tel_stream_decode(bytes, len, dflags, &direct, r, &dr);
    } else {
        (void)apply_items(r);
        items_release(r);
        if (r->err != 0) {
            dr.status = r->err;
            dr.reason = "stopped by the visitor";
        }
    }
    fr->applied = 1;
    account(r, &dr, len, base);
    return r->err;
}

int nwb_tel_report_state_feed(nwb_tel_report_state_t *r, const uint8_t *bytes, size_t len,
                              unsigned flags, nwb_tel_feed_result_t *res)
{
    const unsigned dflags = flags & NWB_TEL_DECODE_SINGLE_SEGMENT;
    nwb_tel_feed_result_t local;
    nwb_tel_feed_result_t *fr = res != NULL ? res : &local;
    nwb_tel_decode_result_t dr;
    int err;

    memset(fr, 0, sizeof(*fr));
    fr->stream_offset = r->bytes;
    if (r->status != 0 || r->err != 0) {
        /* Stopped: a whole-stream decode would not read past the failure either. */
        fr->status = r->status != 0 ? r->status : r->err;
        fr->reason = "the stream stopped at an earlier failure";
        if (!(flags & NWB_TEL_FEED_ATOMIC)) {
            r->bytes += len;
        }
        return r->err;
    }
    r->cur = fr;
    if (flags & NWB_TEL_FEED_ATOMIC) {
        err = feed_atomic(r, bytes, len, dflags, fr);
    } else {
        const nwb_tel_visitor_t direct = {on_segment, on_event};
        const uint64_t base = r->bytes;

        nwb_tel_stream_decode(bytes, len, dflags, &direct, r, &dr);
        result_from(fr, &dr);
        fr->applied = 1;
        account(r, &dr, len, base);
        err = r->err;
    }
    r->skipping = 0;
    r->cur = NULL;
    fr->duplicate = fr->segments > 0 && fr->duplicate_segments == fr->segments;
    return err;
}

void nwb_tel_report_state_fail(nwb_tel_report_state_t *r, int status, const char *reason)
{
    stop(r, status, r->bytes, reason);
}

int nwb_tel_report_state_has_seq(const nwb_tel_report_state_t *r, uint64_t seq)
{
    return ntab_find(&r->seqs, seq, 0) != NULL;
}

void nwb_tel_report_state_decode_result(const nwb_tel_report_state_t *r,
                                        nwb_tel_decode_result_t *res)
{
    memset(res, 0, sizeof(*res));
    res->status = r->status;
    res->consumed = (size_t)r->consumed;
    res->error_offset = (size_t)r->error_offset;
    res->reason = r->reason;
    res->events = r->events;
    res->unknown = r->dec_unknown;
    res->segments = r->dec_segments;
    res->max_version = r->max_version;
}

int nwb_tel_report_state_frame_range(const nwb_tel_report_state_t *r, uint64_t *first,
                                     uint64_t *last)
{
    if (r->frames == 0) {
        return NWB_ERANGE;
    }
    *first = r->frame_min;
    *last = r->frame_max;
    return 0;
}

int nwb_tel_report_state_frames(const nwb_tel_report_state_t *r, uint64_t from, uint64_t to,
                                uint32_t points, uint64_t budget_ns, nwb_json_t *j)
{
    return nwb__frames_query_write(&r->ft, from, to, points, budget_ns, r->frames > 0, r->frame_min,
                                   r->frame_max, j);
}

static size_t logs_memory(const struct nwb__frame_logs *l)
{
    return l->text_cap;
}

size_t nwb_tel_report_state_memory_bytes(const nwb_tel_report_state_t *r)
{
    size_t n = sizeof(*r);

    n += ntab_memory(&r->seqs) + ntab_memory(&r->scope_ix) + ntab_memory(&r->mem_ix) +
         ntab_memory(&r->pass_ix) + ntab_memory(&r->queue_ix);
    n += r->scopes_cap * sizeof(*r->scopes) + r->mem_cap * sizeof(*r->mem) +
         r->passes_cap * sizeof(*r->passes) + r->queues_cap * sizeof(*r->queues);
    for (size_t i = 0; i < r->scope_ix.count; i++) {
        n += r->scopes[i].hist.counts != NULL ? NWB__HIST_BUCKETS * sizeof(uint32_t) : 0;
    }
    for (size_t i = 0; i < r->mem_ix.count; i++) {
        n += series_memory(&r->mem[i].series);
    }
    n += series_memory(&r->arena_series) + series_memory(&r->heap_series);
    for (unsigned i = 0; i < r->nworst; i++) {
        n += logs_memory(&r->worst[i].logs);
    }
    for (unsigned i = 0; i < NWB_TEL_REPORT_PENDING_LOGS; i++) {
        n += logs_memory(&r->pending[i].logs);
    }
    for (unsigned i = 0; i < r->ndiag; i++) {
        n += r->diag_list[i].pairs_len;
    }
    n += nwb__tel_strings_memory(&r->strings) + ntab_memory(&r->thread_ix) +
         ntab_memory(&r->tscope_ix) + ntab_memory(&r->counter_ix);
    n += r->threads_cap * sizeof(*r->threads) + r->tscopes_cap * sizeof(*r->tscopes) +
         r->counters_cap * sizeof(*r->counters) + r->marks_cap * sizeof(*r->marks);
    for (size_t i = 0; i < r->tscope_ix.count; i++) {
        n += r->tscopes[i].hist.counts != NULL ? NWB__HIST_BUCKETS * sizeof(uint32_t) : 0;
    }
    for (size_t i = 0; i < r->counter_ix.count; i++) {
        n += r->counters[i].pt != NULL ? NWB_TEL_REPORT_MEMORY_POINTS * sizeof(*r->counters[i].pt)
                                       : 0;
    }
    return n + nwb__frames_memory(&r->ft);
}

int nwb_tel_report_build(const uint8_t *stream, size_t len, const nwb_tel_report_options_t *opt,
                         nwb_buf_t *out, nwb_tel_decode_result_t *res_out)
{
    nwb_tel_report_state_t *s;
    int err = nwb_tel_report_state_create(&s);

    if (err != 0) {
        return err;
    }
    /* An aggregation failure is in the report (reportStatus), not a failure to write it. */
    (void)nwb_tel_report_state_feed(s, stream, len, 0, NULL);
    err = nwb_tel_report_state_write(s, opt, out);
    if (res_out != NULL) {
        nwb_tel_report_state_decode_result(s, res_out);
    }
    nwb_tel_report_state_destroy(s);
    return err;
}
