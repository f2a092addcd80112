/* SPDX-License-Identifier: MIT */
/*
 * tel_frames.c - the report state's frame times: exact order statistics for the percentiles
 * (sorted blocks: O(block) to add a frame, O(blocks) to rank, whatever the run's length), the
 * histogram they fall back to past their bound, and the frame table in arrival order behind
 * the frames query (min/max buckets over a frame range, docs/telemetry-report.md).
 */
#include <errno.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "tel_report_int.h"

#define OBLOCK_CAP 1024u /* values per sorted block; full blocks split in halves */
#define LONG_NS    UINT32_MAX

struct nwb__oblock {
    uint32_t v[OBLOCK_CAP];
};

void nwb__frames_init(struct nwb__frames *f)
{
    memset(f, 0, sizeof(*f));
    f->exact_max = NWB_TEL_REPORT_FRAMES_MAX;
    f->exact = 1;
    f->runs_sorted = 1;
}

static void exact_release(struct nwb__frames *f)
{
    for (size_t i = 0; i < f->nblocks; i++) {
        nwb_free(f->blocks[i].b);
    }
    nwb_free(f->blocks);
    nwb_free(f->big_sorted);
    f->blocks = NULL;
    f->nblocks = f->blocks_cap = 0;
    f->big_sorted = NULL;
    f->nbig_sorted = f->big_sorted_cap = 0;
    f->small = 0;
}

void nwb__frames_cleanup(struct nwb__frames *f)
{
    exact_release(f);
    for (size_t i = 0; i < f->nchunks; i++) {
        nwb_free(f->chunks[i]);
    }
    nwb_free(f->chunks);
    nwb_free(f->big_at);
    nwb_free(f->runs);
    nwb__hist_cleanup(&f->hist);
    nwb__frames_init(f);
}

/* ---- Exact order statistics -------------------------------------------------------------- */

/* First index in sorted @p v[0..n) whose value is above @p x. */
static uint32_t upper_bound32(const uint32_t *v, uint32_t n, uint32_t x)
{
    uint32_t lo = 0;
    uint32_t hi = n;

    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;

        if (v[mid] > x) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return lo;
}

static int block_insert_at(struct nwb__frames *f, size_t at)
{
    struct nwb__oblock *b = nwb_malloc(sizeof(*b));
    int err;

    if (b == NULL) {
        return -ENOMEM;
    }
    err = nwb__tel_grow((void **)&f->blocks, &f->blocks_cap, f->nblocks + 1, sizeof(*f->blocks));
    if (err != 0) {
        nwb_free(b);
        return err;
    }
    memmove(&f->blocks[at + 1], &f->blocks[at], (f->nblocks - at) * sizeof(*f->blocks));
    f->blocks[at].b = b;
    f->blocks[at].n = 0;
    f->blocks[at].last = 0;
    f->nblocks++;
    return 0;
}

static int exact_add_small(struct nwb__frames *f, uint32_t v)
{
    struct nwb__oref *ref;
    size_t lo = 0;
    size_t hi = f->nblocks;
    uint32_t pos;

    if (f->nblocks == 0 && block_insert_at(f, 0) != 0) {
        return -ENOMEM;
    }
    /* The first block whose largest value is above v (else the last) keeps the order. The
     * search reads only the contiguous refs: one block is touched per frame. */
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;

        if (f->blocks[mid].n > 0 && f->blocks[mid].last > v) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    if (lo == f->nblocks) {
        lo = f->nblocks - 1;
    }
    ref = &f->blocks[lo];
    if (ref->n == OBLOCK_CAP && lo + 1 == f->nblocks && v >= ref->last) {
        /* Past the largest value: a new last block keeps full ones full (rising runs). */
        if (block_insert_at(f, f->nblocks) != 0) {
            return -ENOMEM;
        }
        lo = f->nblocks - 1;
    } else if (ref->n == OBLOCK_CAP) {
        struct nwb__oref *left;
        struct nwb__oref *right;

        if (block_insert_at(f, lo + 1) != 0) {
            return -ENOMEM;
        }
        left = &f->blocks[lo];
        right = &f->blocks[lo + 1];
        memcpy(right->b->v, left->b->v + OBLOCK_CAP / 2, (OBLOCK_CAP / 2) * sizeof(right->b->v[0]));
        right->n = OBLOCK_CAP / 2;
        right->last = left->last;
        left->n = OBLOCK_CAP / 2;
        left->last = left->b->v[left->n - 1];
        if (v >= right->b->v[0]) {
            lo++;
        }
    }
    ref = &f->blocks[lo];
    pos = upper_bound32(ref->b->v, ref->n, v);
    memmove(&ref->b->v[pos + 1], &ref->b->v[pos], (ref->n - pos) * sizeof(ref->b->v[0]));
    ref->b->v[pos] = v;
    ref->n++;
    ref->last = ref->b->v[ref->n - 1];
    f->small++;
    return 0;
}

static int exact_add_long(struct nwb__frames *f, uint64_t v)
{
    size_t pos = f->nbig_sorted;
    const int err = nwb__tel_grow((void **)&f->big_sorted, &f->big_sorted_cap, f->nbig_sorted + 1,
                                  sizeof(*f->big_sorted));

    if (err != 0) {
        return err;
    }
    while (pos > 0 && f->big_sorted[pos - 1] > v) {
        f->big_sorted[pos] = f->big_sorted[pos - 1];
        pos--;
    }
    f->big_sorted[pos] = v;
    f->nbig_sorted++;
    return 0;
}

/* The @p k-th smallest (1-based) of the exactly kept values. */
static uint64_t exact_rank(const struct nwb__frames *f, uint64_t k)
{
    if (k > f->small) {
        return f->big_sorted[k - f->small - 1];
    }
    for (size_t i = 0; i < f->nblocks; i++) {
        if (k <= f->blocks[i].n) {
            return f->blocks[i].b->v[k - 1];
        }
        k -= f->blocks[i].n;
    }
    return 0;
}

/* ---- The frame table --------------------------------------------------------------------- */

static uint64_t run_end(const struct nwb__frun *r)
{
    return r->frame + (r->len - 1);
}

/* Whether @p frame can be added to the table; 0 = it stays untracked. */
static int table_add(struct nwb__frames *f, uint64_t frame, uint64_t ns)
{
    const size_t chunk = (size_t)(f->table / NWB__FRAMES_CHUNK);
    struct nwb__frun *last = f->nruns > 0 ? &f->runs[f->nruns - 1] : NULL;
    const int extends = last != NULL && last->frame + last->len == frame && frame != 0;
    int err;

    if (f->table >= f->exact_max || (!extends && f->nruns >= NWB_TEL_REPORT_FRAME_RUNS) ||
        (ns >= LONG_NS && f->nbig_at >= NWB_TEL_REPORT_LONG_FRAMES)) {
        return 0;
    }
    if (chunk == f->nchunks) {
        uint32_t **c = nwb_realloc(f->chunks, (f->nchunks + 1) * sizeof(*c));

        if (c == NULL) {
            return -ENOMEM;
        }
        f->chunks = c;
        c[f->nchunks] = NULL;
        f->nchunks++;
        f->tail_cap = 0;
    }
    if (f->table % NWB__FRAMES_CHUNK == f->tail_cap) {
        /* The first chunk grows from 4,096 entries (a short run stays small); the others
         * start full, as the run is long by then. */
        const size_t cap = chunk == 0 && f->tail_cap < NWB__FRAMES_CHUNK
                               ? (f->tail_cap == 0 ? 4096 : f->tail_cap * 2)
                               : NWB__FRAMES_CHUNK;
        uint32_t *p = nwb_realloc(f->chunks[chunk], cap * sizeof(uint32_t));

        if (p == NULL) {
            return -ENOMEM;
        }
        f->chunks[chunk] = p;
        f->tail_cap = cap;
    }
    if (ns >= LONG_NS) {
        err =
            nwb__tel_grow((void **)&f->big_at, &f->big_at_cap, f->nbig_at + 1, sizeof(*f->big_at));
        if (err != 0) {
            return err;
        }
        f->big_at[f->nbig_at].idx = f->table;
        f->big_at[f->nbig_at].ns = ns;
        f->nbig_at++;
    }
    if (extends) {
        last->len++;
    } else {
        const int backwards = last != NULL && frame <= run_end(last);

        /* (last is stale once the table grows.) */
        err = nwb__tel_grow((void **)&f->runs, &f->runs_cap, f->nruns + 1, sizeof(*f->runs));
        if (err != 0) {
            return err;
        }
        if (backwards) {
            f->runs_sorted = 0;
        }
        f->runs[f->nruns].frame = frame;
        f->runs[f->nruns].idx = f->table;
        f->runs[f->nruns].len = 1;
        f->nruns++;
    }
    f->chunks[chunk][f->table % NWB__FRAMES_CHUNK] = ns >= LONG_NS ? LONG_NS : (uint32_t)ns;
    f->table++;
    return 1;
}

static uint64_t table_at(const struct nwb__frames *f, uint64_t idx)
{
    const uint32_t v = f->chunks[idx / NWB__FRAMES_CHUNK][idx % NWB__FRAMES_CHUNK];
    size_t lo = 0;
    size_t hi = f->nbig_at;

    if (v != LONG_NS) {
        return v;
    }
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;

        if (f->big_at[mid].idx < idx) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < f->nbig_at ? f->big_at[lo].ns : v;
}

/* ---- Adding and ranking ------------------------------------------------------------------ */

int nwb__frames_add(struct nwb__frames *f, uint64_t frame, uint64_t ns)
{
    int err = nwb__hist_add(&f->hist, ns);
    int added;

    f->count++;
    if (err != 0) {
        return err;
    }
    if (f->exact) {
        if (f->count > f->exact_max ||
            (ns >= LONG_NS && f->nbig_sorted >= NWB_TEL_REPORT_LONG_FRAMES)) {
            /* Past the bound: every percentile comes from the histogram from now on. */
            f->exact = 0;
            exact_release(f);
        } else {
            err = ns >= LONG_NS ? exact_add_long(f, ns) : exact_add_small(f, (uint32_t)ns);
            if (err != 0) {
                return err;
            }
        }
    }
    added = table_add(f, frame, ns);
    if (added < 0) {
        return added;
    }
    if (added == 0) {
        f->untracked++;
    }
    return 0;
}

uint64_t nwb__frames_percentile(const struct nwb__frames *f, double p)
{
    const uint64_t n = f->small + f->nbig_sorted;
    uint64_t rank;

    if (!f->exact) {
        return nwb__hist_quantile(&f->hist, p / 100.0);
    }
    if (n == 0) {
        return 0;
    }
    /* Nearest rank: the smallest value with at least p% of the values at or below it. */
    rank = (uint64_t)((p / 100.0) * (double)n);
    if ((double)rank < (p / 100.0) * (double)n) {
        rank++;
    }
    rank = rank < 1 ? 1 : rank;
    rank = rank > n ? n : rank;
    return exact_rank(f, rank);
}

size_t nwb__frames_memory(const struct nwb__frames *f)
{
    return f->nblocks * sizeof(struct nwb__oblock) + f->blocks_cap * sizeof(*f->blocks) +
           f->big_sorted_cap * sizeof(*f->big_sorted) +
           (f->nchunks > 0 ? (f->nchunks - 1) * NWB__FRAMES_CHUNK + f->tail_cap : 0) *
               sizeof(uint32_t) +
           f->nchunks * sizeof(*f->chunks) + f->big_at_cap * sizeof(*f->big_at) +
           f->runs_cap * sizeof(*f->runs) +
           (f->hist.counts != NULL ? NWB__HIST_BUCKETS * sizeof(uint32_t) : 0);
}

/* ---- The frames query -------------------------------------------------------------------- */

struct fbucket {
    uint64_t frames;
    uint64_t min_ns, min_frame;
    uint64_t max_ns, max_frame;
};

static void bucket_add(struct fbucket *b, uint64_t frame, uint64_t ns)
{
    if (b->frames == 0 || ns < b->min_ns || (ns == b->min_ns && frame < b->min_frame)) {
        b->min_ns = ns;
        b->min_frame = frame;
    }
    if (b->frames == 0 || ns > b->max_ns || (ns == b->max_ns && frame < b->max_frame)) {
        b->max_ns = ns;
        b->max_frame = frame;
    }
    b->frames++;
}

/* First run that may hold frames >= @p from (runs sorted by frame number). */
static size_t runs_lower(const struct nwb__frames *f, uint64_t from)
{
    size_t lo = 0;
    size_t hi = f->nruns;

    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;

        if (run_end(&f->runs[mid]) < from) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static uint64_t fill_buckets(const struct nwb__frames *f, uint64_t from, uint64_t to,
                             uint64_t width, uint32_t points, struct fbucket *b)
{
    uint64_t n = 0;

    for (size_t i = f->runs_sorted ? runs_lower(f, from) : 0; i < f->nruns; i++) {
        const struct nwb__frun *r = &f->runs[i];
        uint64_t lo;
        uint64_t hi;

        if (r->frame > to) {
            if (f->runs_sorted) {
                break;
            }
            continue;
        }
        if (run_end(r) < from) {
            continue;
        }
        lo = r->frame > from ? r->frame : from;
        hi = run_end(r) < to ? run_end(r) : to;
        for (uint64_t fr = lo;; fr++) {
            uint64_t k = (fr - from) / width;

            k = k >= points ? points - 1 : k;
            bucket_add(&b[k], fr, table_at(f, r->idx + (fr - r->frame)));
            n++;
            if (fr == hi) {
                break;
            }
        }
    }
    return n;
}

static double ms_of(uint64_t ns)
{
    return (double)ns / 1e6;
}

int nwb__frames_query_write(const struct nwb__frames *f, uint64_t from, uint64_t to,
                            uint32_t points, uint64_t budget_ns, int have_range, uint64_t first,
                            uint64_t last, nwb_json_t *j)
{
    static const double pct[3] = {50, 90, 99};
    static const char *const keys[3] = {"p50Ms", "p90Ms", "p99Ms"};
    struct fbucket *b;
    uint64_t width;
    uint64_t n;

    if (from > to || points == 0 || points > NWB_TEL_FRAMES_POINTS_MAX) {
        return NWB_ERANGE;
    }
    /* (to - from) / width < points, so at most `points` buckets, without overflow. */
    width = (to - from) / points + 1;
    if (width == 0) {
        width = UINT64_MAX;
    }
    b = nwb_calloc(points, sizeof(*b));
    if (b == NULL) {
        return -ENOMEM;
    }
    n = fill_buckets(f, from, to, width, points, b);
    nwb_json_obj_begin(j);
    nwb_json_key(j, "from");
    nwb_json_u64(j, from);
    nwb_json_key(j, "to");
    nwb_json_u64(j, to);
    nwb_json_key(j, "points");
    nwb_json_u64(j, points);
    nwb_json_key(j, "bucketFrames");
    nwb_json_u64(j, width);
    nwb_json_key(j, "frames");
    nwb_json_u64(j, n);
    nwb_json_key(j, "firstFrame");
    if (have_range) {
        nwb_json_u64(j, first);
    } else {
        nwb_json_null(j);
    }
    nwb_json_key(j, "lastFrame");
    if (have_range) {
        nwb_json_u64(j, last);
    } else {
        nwb_json_null(j);
    }
    nwb_json_key(j, "runFrames");
    nwb_json_u64(j, f->count);
    nwb_json_key(j, "untrackedFrames");
    nwb_json_u64(j, f->untracked);
    nwb_json_key(j, "budgetMs");
    nwb_json_dbl(j, ms_of(budget_ns != 0 ? budget_ns : NWB_TEL_FRAME_BUDGET_NS), 6);
    for (unsigned i = 0; i < 3; i++) {
        nwb_json_key(j, keys[i]);
        nwb_json_dbl(j, ms_of(nwb__frames_percentile(f, pct[i])), 6);
    }
    nwb_json_key(j, "percentileRelativeError");
    nwb_json_dbl(j, f->exact ? 0.0 : NWB_TEL_REPORT_HIST_ERROR, 6);
    nwb_json_key(j, "buckets");
    nwb_json_arr_begin(j);
    for (uint32_t k = 0; k < points; k++) {
        const uint64_t bfrom = from + (uint64_t)k * width;

        if (b[k].frames == 0) {
            continue;
        }
        nwb_json_obj_begin(j);
        nwb_json_key(j, "from");
        nwb_json_u64(j, bfrom);
        nwb_json_key(j, "to");
        nwb_json_u64(j, k + 1 == points || to - bfrom < width ? to : bfrom + width - 1);
        nwb_json_key(j, "frames");
        nwb_json_u64(j, b[k].frames);
        nwb_json_key(j, "minMs");
        nwb_json_dbl(j, ms_of(b[k].min_ns), 6);
        nwb_json_key(j, "minFrame");
        nwb_json_u64(j, b[k].min_frame);
        nwb_json_key(j, "maxMs");
        nwb_json_dbl(j, ms_of(b[k].max_ns), 6);
        nwb_json_key(j, "maxFrame");
        nwb_json_u64(j, b[k].max_frame);
        nwb_json_obj_end(j);
    }
    nwb_json_arr_end(j);
    nwb_json_obj_end(j);
    nwb_free(b);
    return j->err;
}
