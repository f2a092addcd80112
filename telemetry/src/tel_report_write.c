/* SPDX-License-Identifier: MIT */
/*
 * tel_report_write.c - writes telemetry.json (docs/telemetry-report.md) from the incremental
 * report state: every key always present, in a fixed order, through the one JSON writer. Its
 * cost is bounded by the state's bounded tables, never by the run's length.
 */
#include <errno.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/log.h"
#include "tel_report_int.h"

typedef nwb_tel_report_state_t rep_t;

/* ---- Writing ---------------------------------------------------------------------------- */

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

/* A stable merge sort of an index array: qsort() takes no context pointer and reports may be
 * built on several threads at once. Counts are bounded (<= 4096). */
typedef int (*cmp_fn)(const void *ctx, uint32_t a, uint32_t b);

static void merge_sort(uint32_t *v, uint32_t *tmp, size_t n, const void *ctx, cmp_fn cmp)
{
    if (n < 2) {
        return;
    }
    {
        const size_t h = n / 2;
        size_t i = 0;
        size_t j = h;
        size_t k = 0;

        merge_sort(v, tmp, h, ctx, cmp);
        merge_sort(v + h, tmp, n - h, ctx, cmp);
        while (i < h && j < n) {
            tmp[k++] = cmp(ctx, v[j], v[i]) < 0 ? v[j++] : v[i++];
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

static int scope_order(const struct nwb__scope_acc *x, const struct nwb__scope_acc *y)
{
    const double tx = x->gpu ? x->total_ms : ms(x->total_ns);
    const double ty = y->gpu ? y->total_ms : ms(y->total_ns);

    if (tx != ty) {
        return tx > ty ? -1 : 1;
    }
    return x->name < y->name ? -1 : x->name > y->name;
}

static int rcmp_scope(const void *ctx, uint32_t a, uint32_t b)
{
    const rep_t *r = ctx;

    return scope_order(&r->scopes[a], &r->scopes[b]);
}

/* cpuByThread: by thread, then as the scopes table. */
static int rcmp_tscope(const void *ctx, uint32_t a, uint32_t b)
{
    const rep_t *r = ctx;
    const struct nwb__scope_acc *x = &r->tscopes[a];
    const struct nwb__scope_acc *y = &r->tscopes[b];

    if (x->thread != y->thread) {
        return x->thread < y->thread ? -1 : 1;
    }
    return scope_order(x, y);
}

static int rcmp_thread(const void *ctx, uint32_t a, uint32_t b)
{
    const rep_t *r = ctx;

    return r->threads[a].thread < r->threads[b].thread
               ? -1
               : r->threads[a].thread > r->threads[b].thread;
}

static int rcmp_mem(const void *ctx, uint32_t a, uint32_t b)
{
    const rep_t *r = ctx;
    const struct nwb__mem_acc *x = &r->mem[a];
    const struct nwb__mem_acc *y = &r->mem[b];

    if (x->peak != y->peak) {
        return x->peak > y->peak ? -1 : 1;
    }
    return x->name < y->name ? -1 : x->name > y->name;
}

static int rcmp_pass(const void *ctx, uint32_t a, uint32_t b)
{
    const rep_t *r = ctx;
    const struct nwb__pass_acc *x = &r->passes[a];
    const struct nwb__pass_acc *y = &r->passes[b];

    if (x->barriers != y->barriers) {
        return x->barriers > y->barriers ? -1 : 1;
    }
    return x->name < y->name ? -1 : x->name > y->name;
}

/* Counters by the text of their names (as this report spells them), then by hash. */
struct counter_order {
    const rep_t *r;
    const struct nwb__tel_names *names;
};

static int rcmp_counter(const void *ctx, uint32_t a, uint32_t b)
{
    const struct counter_order *o = ctx;
    const nwb_name_t na = o->r->counters[a].name;
    const nwb_name_t nb = o->r->counters[b].name;
    char ta[NWB_NAME_TOKEN_SIZE];
    char tb[NWB_NAME_TOKEN_SIZE];
    size_t la = NWB_NAME_TOKEN_LEN;
    size_t lb = NWB_NAME_TOKEN_LEN;
    const char *sa = nwb__tel_name_find(o->names, na, &la);
    const char *sb = nwb__tel_name_find(o->names, nb, &lb);
    int c;

    if (sa == NULL) {
        nwb_name_token(na, ta);
        sa = ta;
        la = NWB_NAME_TOKEN_LEN;
    }
    if (sb == NULL) {
        nwb_name_token(nb, tb);
        sb = tb;
        lb = NWB_NAME_TOKEN_LEN;
    }
    c = memcmp(sa, sb, la < lb ? la : lb);
    if (c != 0) {
        return c;
    }
    if (la != lb) {
        return la < lb ? -1 : 1;
    }
    return na < nb ? -1 : na > nb;
}

/* Sorted index array of @p n entries (returned-owned), or NULL on allocation failure. */
static uint32_t *sorted(const void *ctx, size_t n, cmp_fn cmp)
{
    uint32_t *v = nwb_malloc((n ? n : 1) * 2 * sizeof(*v));

    if (v == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        v[i] = (uint32_t)i;
    }
    merge_sort(v, v + n, n, ctx, cmp);
    return v;
}

static void write_status(nwb_json_t *j, const char *key, int status)
{
    nwb_json_key(j, key);
    nwb_json_cstr(j, status == 0 ? "ok" : nwb_err_name(status));
}

static void write_run(nwb_json_t *j, const rep_t *r)
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
    nwb_json_u64(j, r->max_version);
    nwb_json_key(j, "segments");
    nwb_json_u64(j, r->dec_segments);
    nwb_json_key(j, "headerMismatches");
    nwb_json_u64(j, r->header_mismatches);
    nwb_json_obj_end(j);
}

static void write_decode(nwb_json_t *j, const rep_t *r)
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
    nwb_json_u64(j, r->bytes);
    nwb_json_key(j, "consumedBytes");
    nwb_json_u64(j, r->consumed);
    nwb_json_key(j, "events");
    nwb_json_u64(j, r->events);
    write_status(j, "status", r->status);
    nwb_json_key(j, "statusCode");
    nwb_json_i64(j, r->status);
    nwb_json_key(j, "errorOffset");
    if (r->status != 0) {
        nwb_json_u64(j, r->error_offset);
    } else {
        nwb_json_null(j);
    }
    nwb_json_key(j, "reason");
    if (r->status != 0 && r->reason != NULL) {
        nwb_json_cstr(j, r->reason);
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
    nwb_json_key(j, "unstored");
    nwb_json_u64(j, in != NULL ? in->unstored : 0);
    nwb_json_obj_end(j);
}

static void write_events(nwb_json_t *j, const rep_t *r)
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

static void write_frames(nwb_json_t *j, const rep_t *r, const struct nwb__tel_names *names,
                         nwb_buf_t *scratch)
{
    static const double pct[4] = {50, 90, 95, 99};
    static const char *const keys[4] = {"p50Ms", "p90Ms", "p95Ms", "p99Ms"};

    nwb_json_key(j, "frames");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "count");
    nwb_json_u64(j, r->frames);
    nwb_json_key(j, "meanMs");
    nwb_json_dbl(j, r->frames ? ms(r->frame_sum_ns) / (double)r->frames : 0.0, 6);
    for (unsigned i = 0; i < 4; i++) {
        nwb_json_key(j, keys[i]);
        nwb_json_dbl(j, ms(nwb__frames_percentile(&r->ft, pct[i])), 6);
    }
    nwb_json_key(j, "maxMs");
    nwb_json_dbl(j, ms(r->frame_max_ns), 6);
    nwb_json_key(j, "percentileMethod");
    nwb_json_cstr(j, r->ft.exact ? NWB__PERCENTILE_EXACT : NWB__PERCENTILE_HIST);
    nwb_json_key(j, "percentileFrames");
    nwb_json_u64(j, r->frames);
    nwb_json_key(j, "percentileRelativeError");
    nwb_json_dbl(j, r->ft.exact ? 0.0 : NWB_TEL_REPORT_HIST_ERROR, 6);
    nwb_json_key(j, "worst");
    nwb_json_arr_begin(j);
    for (unsigned i = 0; i < r->nworst; i++) {
        const struct nwb__worst *w = &r->worst[i];

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
            nwb__tel_json_name(j, names, w->top[k].name);
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
        for (uint32_t k = 0; k < w->logs.n; k++) {
            const struct nwb__log_line *l = &w->logs.line[k];

            nwb_json_obj_begin(j);
            nwb_json_key(j, "level");
            nwb_json_cstr(j, nwb_log_level_name(l->level));
            nwb_json_key(j, "thread");
            nwb_json_u64(j, l->thread);
            nwb_json_key(j, "message");
            /* Only empty lines so far leave the text buffer unallocated. */
            nwb__tel_json_text(j, names, l->len != 0 ? w->logs.text + l->off : "", l->len, scratch);
            nwb_json_obj_end(j);
        }
        nwb_json_arr_end(j);
        nwb_json_key(j, "moreLogs");
        nwb_json_u64(j, w->logs.more);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_obj_end(j);
}

static void write_scope(nwb_json_t *j, const struct nwb__tel_names *names,
                        const struct nwb__scope_acc *a)
{
    nwb_json_obj_begin(j);
    nwb_json_key(j, "name");
    nwb__tel_json_name(j, names, a->name);
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
    nwb_json_key(j, "p99Ms");
    nwb_json_dbl(j, ms(nwb__hist_quantile(&a->hist, 0.99)), 6);
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

/* The entry of thread @p id through @p by_id (the thread entries sorted by id), or NULL. */
static const struct nwb__thread_acc *thread_find(const rep_t *r, const uint32_t *by_id, uint32_t id)
{
    size_t lo = 0;
    size_t hi = r->thread_ix.count;

    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const struct nwb__thread_acc *t = &r->threads[by_id[mid]];

        if (t->thread == id) {
            return t;
        }
        if (t->thread < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* A thread's name as JSON: its string, or null when no thread event named it. */
static void write_thread_name(nwb_json_t *j, const struct nwb__thread_acc *t)
{
    if (t != NULL && t->name_len > 0) {
        nwb_json_str(j, t->name, t->name_len);
    } else {
        nwb_json_null(j);
    }
}

/* "cpuByThread": the CPU rows split per thread, threads by id, rows as in "cpu". */
static int write_cpu_by_thread(nwb_json_t *j, const rep_t *r, const struct nwb__tel_names *names,
                               const uint32_t *by_id)
{
    const size_t n = r->tscope_ix.count;
    uint32_t *ord = sorted(r, n, rcmp_tscope);

    if (ord == NULL) {
        return -ENOMEM;
    }
    nwb_json_key(j, "cpuByThread");
    nwb_json_arr_begin(j);
    for (size_t i = 0; i < n; i++) {
        const struct nwb__scope_acc *a = &r->tscopes[ord[i]];

        if (i == 0 || a->thread != r->tscopes[ord[i - 1]].thread) {
            if (i != 0) {
                nwb_json_arr_end(j);
                nwb_json_obj_end(j);
            }
            nwb_json_obj_begin(j);
            nwb_json_key(j, "thread");
            nwb_json_u64(j, a->thread);
            nwb_json_key(j, "name");
            write_thread_name(j, thread_find(r, by_id, a->thread));
            nwb_json_key(j, "cpu");
            nwb_json_arr_begin(j);
        }
        write_scope(j, names, a);
    }
    if (n > 0) {
        nwb_json_arr_end(j);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_free(ord);
    return 0;
}

static int write_scopes(nwb_json_t *j, const rep_t *r, const struct nwb__tel_names *names,
                        const uint32_t *by_id)
{
    const size_t n = r->scope_ix.count;
    uint32_t *ord = sorted(r, n, rcmp_scope);
    int err;

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
                write_scope(j, names, &r->scopes[ord[i]]);
            }
        }
        nwb_json_arr_end(j);
    }
    nwb_json_key(j, "omittedSamples");
    nwb_json_u64(j, r->scopes_omitted);
    nwb_free(ord);
    err = write_cpu_by_thread(j, r, names, by_id);
    nwb_json_obj_end(j);
    return err;
}

/* "series": {"samplesPerPoint": W, "points": [[firstFrame, minBytes, maxBytes], ...]}. */
static void write_series(nwb_json_t *j, const struct nwb__series *s)
{
    nwb_json_key(j, "series");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "samplesPerPoint");
    nwb_json_u64(j, s->pt != NULL ? s->width : 1);
    nwb_json_key(j, "points");
    nwb_json_arr_begin(j);
    for (uint32_t i = 0; s->pt != NULL && i < s->count; i++) {
        nwb_json_arr_begin(j);
        nwb_json_u64(j, s->pt[i].frame);
        nwb_json_u64(j, s->pt[i].lo);
        nwb_json_u64(j, s->pt[i].hi);
        nwb_json_arr_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_obj_end(j);
}

static void write_mem_entry(nwb_json_t *j, const struct nwb__tel_names *names,
                            const struct nwb__mem_acc *m)
{
    nwb_json_obj_begin(j);
    nwb_json_key(j, "name");
    nwb__tel_json_name(j, names, m->name);
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
    write_series(j, &m->series);
    nwb_json_obj_end(j);
}

static int write_memory(nwb_json_t *j, const rep_t *r, const struct nwb__tel_names *names)
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
    nwb_json_key(j, "seriesMaxPoints");
    nwb_json_u64(j, NWB_TEL_REPORT_MEMORY_POINTS);
    for (unsigned src = 0; src < 3; src++) {
        nwb_json_key(j, keys[src]);
        nwb_json_arr_begin(j);
        for (size_t i = 0; i < n; i++) {
            if (r->mem[ord[i]].source == src) {
                write_mem_entry(j, names, &r->mem[ord[i]]);
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
    write_series(j, &r->arena_series);
    nwb_json_obj_end(j);
    nwb_json_key(j, "heapBackingTotals");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "firstUsedBytes");
    nwb_json_u64(j, r->heap_used_first);
    nwb_json_key(j, "lastUsedBytes");
    nwb_json_u64(j, r->heap_used_last);
    nwb_json_key(j, "maxUsedBytes");
    nwb_json_u64(j, r->heap_used_max);
    write_series(j, &r->heap_series);
    nwb_json_obj_end(j);
    nwb_json_key(j, "omittedRecords");
    nwb_json_u64(j, r->mem_omitted);
    nwb_json_obj_end(j);
    nwb_free(ord);
    return 0;
}

static int write_fg(nwb_json_t *j, const rep_t *r, const struct nwb__tel_names *names)
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
        const struct nwb__queue_acc *q = &r->queues[i];

        nwb_json_obj_begin(j);
        nwb_json_key(j, "name");
        nwb__tel_json_name(j, names, q->name);
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
        const struct nwb__pass_acc *p = &r->passes[ord[i]];

        nwb_json_obj_begin(j);
        nwb_json_key(j, "name");
        nwb__tel_json_name(j, names, p->name);
        nwb_json_key(j, "queue");
        nwb__tel_json_name(j, names, p->queue);
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

static void write_diags(nwb_json_t *j, const rep_t *r, const struct nwb__tel_names *names)
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
        const struct nwb__diag_copy *d = &r->diag_list[i];
        nwb_tel_kv_t kv;
        size_t pos = 0;

        nwb_json_obj_begin(j);
        nwb_json_key(j, "frame");
        nwb_json_u64(j, d->frame);
        nwb_json_key(j, "timestampNs");
        nwb_json_u64(j, d->ts);
        nwb_json_key(j, "code");
        nwb__tel_json_name(j, names, d->v.code);
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

/* ---- Format 1.1: threads, counters, marks, the profiler's counts ------------------------- */

static void write_threads(nwb_json_t *j, const rep_t *r, const uint32_t *by_id)
{
    nwb_json_key(j, "threads");
    nwb_json_arr_begin(j);
    for (uint32_t i = 0; i < r->thread_ix.count; i++) {
        const struct nwb__thread_acc *t = &r->threads[by_id[i]];

        nwb_json_obj_begin(j);
        nwb_json_key(j, "thread");
        nwb_json_u64(j, t->thread);
        nwb_json_key(j, "name");
        write_thread_name(j, t);
        nwb_json_key(j, "records");
        nwb_json_u64(j, t->records);
        nwb_json_key(j, "dropped");
        nwb_json_u64(j, t->dropped);
        nwb_json_key(j, "malformed");
        nwb_json_u64(j, t->malformed);
        nwb_json_key(j, "scopes");
        nwb_json_u64(j, t->scopes);
        nwb_json_key(j, "cpuMs");
        nwb_json_dbl(j, ms(t->depth0_ns), 6);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
}

static int write_counters(nwb_json_t *j, const rep_t *r, const struct nwb__tel_names *names)
{
    const struct counter_order o = {r, names};
    const size_t n = r->counter_ix.count;
    uint32_t *ord = sorted(&o, n, rcmp_counter);

    if (ord == NULL) {
        return -ENOMEM;
    }
    nwb_json_key(j, "counters");
    nwb_json_arr_begin(j);
    for (size_t i = 0; i < n; i++) {
        const struct nwb__counter_acc *c = &r->counters[ord[i]];

        nwb_json_obj_begin(j);
        nwb_json_key(j, "name");
        nwb__tel_json_name(j, names, c->name);
        nwb_json_key(j, "samples");
        nwb_json_u64(j, c->samples);
        nwb_json_key(j, "frames");
        nwb_json_u64(j, c->frames);
        nwb_json_key(j, "min");
        nwb_json_dbl(j, c->min, 6);
        nwb_json_key(j, "max");
        nwb_json_dbl(j, c->max, 6);
        nwb_json_key(j, "mean");
        nwb_json_dbl(j, c->samples ? c->sum / (double)c->samples : 0.0, 6);
        nwb_json_key(j, "last");
        nwb_json_dbl(j, c->last, 6);
        nwb_json_key(j, "series");
        nwb_json_arr_begin(j);
        for (uint32_t k = 0; c->pt != NULL && k < c->count; k++) {
            const struct nwb__counter_pt *p = &c->pt[k];

            nwb_json_obj_begin(j);
            nwb_json_key(j, "frame");
            nwb_json_u64(j, p->frame);
            nwb_json_key(j, "min");
            nwb_json_dbl(j, p->lo, 6);
            nwb_json_key(j, "max");
            nwb_json_dbl(j, p->hi, 6);
            nwb_json_key(j, "mean");
            nwb_json_dbl(j, p->n ? p->sum / (double)p->n : 0.0, 6);
            nwb_json_obj_end(j);
        }
        nwb_json_arr_end(j);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_free(ord);
    return 0;
}

static void write_marks(nwb_json_t *j, const rep_t *r, const uint32_t *by_id)
{
    const uint64_t start = r->have_header ? r->first.start_mono_ns : 0;

    nwb_json_key(j, "marks");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "count");
    nwb_json_u64(j, r->marks_total);
    nwb_json_key(j, "listed");
    nwb_json_arr_begin(j);
    for (uint32_t i = 0; i < r->nmarks; i++) {
        const struct nwb__mark_copy *m = &r->marks[i];
        /* Monotonic ns since the stream's start; a mark before it (a clock the recorder did not
         * own) is negative rather than wrapped. */
        const double since = m->ts >= start ? (double)(m->ts - start) : -(double)(start - m->ts);

        nwb_json_obj_begin(j);
        nwb_json_key(j, "frame");
        nwb_json_u64(j, m->frame);
        nwb_json_key(j, "tsMs");
        nwb_json_dbl(j, since / 1e6, 6);
        nwb_json_key(j, "thread");
        nwb_json_u64(j, m->thread);
        nwb_json_key(j, "threadName");
        write_thread_name(j, thread_find(r, by_id, m->thread));
        nwb_json_key(j, "text");
        nwb_json_str(j, m->text, m->len);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_key(j, "notListed");
    nwb_json_u64(j, r->marks_total - r->nmarks);
    nwb_json_obj_end(j);
}

static void write_profiler(nwb_json_t *j, const rep_t *r)
{
    uint64_t dropped = 0;
    uint64_t malformed = 0;

    for (uint32_t i = 0; i < r->thread_ix.count; i++) {
        dropped += r->threads[i].dropped;
        malformed += r->threads[i].malformed;
    }
    nwb_json_key(j, "profiler");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "dropped");
    nwb_json_u64(j, dropped);
    nwb_json_key(j, "malformed");
    nwb_json_u64(j, malformed);
    nwb_json_key(j, "namesNotKept");
    nwb_json_u64(j, r->strings.not_kept);
    nwb_json_key(j, "countersNotKept");
    nwb_json_u64(j, r->counters_not_kept);
    nwb_json_key(j, "threadsNotKept");
    nwb_json_u64(j, r->threads_not_kept);
    nwb_json_key(j, "threadScopesNotKept");
    nwb_json_u64(j, r->tscopes_not_kept);
    nwb_json_obj_end(j);
}

int nwb_tel_report_state_write(const nwb_tel_report_state_t *r, const nwb_tel_report_options_t *opt,
                               nwb_buf_t *out)
{
    static const nwb_tel_report_options_t defaults = NWB_TEL_REPORT_OPTIONS_INIT;
    const size_t start = out->len;
    struct nwb__tel_names names;
    uint32_t *by_id;
    nwb_buf_t scratch;
    nwb_json_t j;
    int err;

    if (opt == NULL) {
        opt = &defaults;
    }
    names.strings = &r->strings;
    names.sym = opt->names;
    by_id = sorted(r, r->thread_ix.count, rcmp_thread);
    out->max = opt->json_max != 0 ? opt->json_max : NWB_TEL_REPORT_JSON_MAX;
    nwb_buf_init(&scratch, 1u << 20);
    nwb_json_init(&j, out, NULL);
    nwb_json_obj_begin(&j);
    nwb_json_key(&j, "schema");
    nwb_json_cstr(&j, NWB_TEL_REPORT_SCHEMA);
    write_run(&j, r);
    write_decode(&j, r);
    write_uploads(&j, opt->ingest);
    write_events(&j, r);
    write_frames(&j, r, &names, &scratch);
    err = by_id != NULL ? write_scopes(&j, r, &names, by_id) : -ENOMEM;
    if (err == 0) {
        err = write_memory(&j, r, &names);
    }
    if (err == 0) {
        err = write_fg(&j, r, &names);
    }
    if (err == 0) {
        write_diags(&j, r, &names);
        write_threads(&j, r, by_id);
        err = write_counters(&j, r, &names);
    }
    if (err == 0) {
        write_marks(&j, r, by_id);
        write_profiler(&j, r);
    }
    nwb_json_obj_end(&j);
    nwb_json_space(&j, "\n", 1);
    if (err == 0) {
        err = nwb_json_finish(&j);
    }
    if (err != 0) {
        out->len = start;
    }
    nwb_buf_cleanup(&scratch);
    nwb_free(by_id);
    return err;
}
