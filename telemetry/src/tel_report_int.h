/* SPDX-License-Identifier: MIT */
/*
 * tel_report_int.h - the incremental report state shared by its files: the aggregates fed by
 * tel_report.c, the frame-time store of tel_frames.c (exact order statistics, the frame table
 * for the frame queries) and the JSON writer of tel_report_write.c. Every table is bounded.
 */
#ifndef NWB_TEL_REPORT_INT_H
#define NWB_TEL_REPORT_INT_H

#include "nwb/telemetry_report.h"
#include "tel_int.h"

/* ---- A small open-addressing index from (name, tag) to an entry number ----------------- */

struct nwb__ntab {
    struct nwb__nslot *slots;
    size_t mask;
    uint32_t count;
};

/* ---- Frame times (tel_frames.c) ---------------------------------------------------------- */

#define NWB__PERCENTILE_EXACT                                                                      \
    "nearest-rank over the exact frame durations: the smallest duration with at least p% of "      \
    "frames at or below it"
#define NWB__PERCENTILE_HIST                                                                       \
    "nearest-rank over a log-linear histogram of every frame duration (32 sub-buckets per power "  \
    "of two, the bucket's upper bound clamped to the longest frame: at most 3.125% above the "     \
    "exact value), as the run has more frames than are kept exactly"

/* Values below UINT32_MAX ns (4.3 s) are kept as 32 bits; longer frames in side tables. */
#define NWB__FRAMES_CHUNK 65536u /* frame-table entries per allocation */

struct nwb__oblock; /* a sorted block of frame durations */

struct nwb__oref { /* a block, its count and largest value (searched without touching it) */
    uint32_t last;
    uint32_t n;
    struct nwb__oblock *b;
};

struct nwb__frun { /* frame numbers frame .. frame + len - 1 at table indexes idx .. */
    uint64_t frame;
    uint64_t idx;
    uint64_t len;
};

struct nwb__fbig {
    uint64_t idx; /* table index, or unused in the sorted list */
    uint64_t ns;
};

struct nwb__frames {
    uint64_t exact_max; /* NWB_TEL_REPORT_FRAMES_MAX (lowered by the tests) */
    uint64_t count;     /* every frame added */
    struct nwb__hist hist;

    /* Order statistics over the first exact_max frames: sorted blocks of 32-bit values and a
     * sorted list of the longer ones (they rank above every 32-bit value). */
    int exact; /* 0 once a frame beyond exact_max arrived (blocks freed) */
    struct nwb__oref *blocks;
    size_t nblocks, blocks_cap;
    uint64_t small; /* values in the blocks */
    uint64_t *big_sorted;
    size_t nbig_sorted, big_sorted_cap;

    /* The frame table, in arrival order, for the frame queries: durations (UINT32_MAX = in
     * big_at), and the frame numbers as runs of consecutive numbers. */
    uint32_t **chunks;
    size_t nchunks;
    size_t tail_cap; /* entries the last chunk has room for */
    uint64_t table;  /* entries */
    struct nwb__fbig *big_at;
    size_t nbig_at, big_at_cap;
    struct nwb__frun *runs;
    size_t nruns, runs_cap;
    int runs_sorted; /* each run starts after the previous one ends */
    uint64_t
        untracked; /* frames not in the table (beyond exact_max or NWB_TEL_REPORT_FRAME_RUNS) */
};

void nwb__frames_init(struct nwb__frames *f);
/* Returns 0 or -ENOMEM (the frame is then missing from the table and the exact ranks). */
int nwb__frames_add(struct nwb__frames *f, uint64_t frame, uint64_t ns);
/* Nearest rank @p p percent: exact while f->exact, else the histogram's value. 0 when empty. */
uint64_t nwb__frames_percentile(const struct nwb__frames *f, double p);
/* Write the frames query object (nwb_tel_report_state_frames()). */
int nwb__frames_query_write(const struct nwb__frames *f, uint64_t from, uint64_t to,
                            uint32_t points, uint64_t budget_ns, int have_range, uint64_t first,
                            uint64_t last, nwb_json_t *j);
size_t nwb__frames_memory(const struct nwb__frames *f);
void nwb__frames_cleanup(struct nwb__frames *f);

/* ---- The state ------------------------------------------------------------------------- */

/* A memory series: at most NWB_TEL_REPORT_MEMORY_POINTS points of `width` samples each (the
 * last may hold fewer); when full, neighbours merge pairwise and the width doubles, so min and
 * max survive any length. */
struct nwb__series_pt {
    uint64_t frame; /* first sample's frame */
    uint64_t lo, hi;
    uint32_t n;
};

struct nwb__series {
    struct nwb__series_pt *pt; /* NWB_TEL_REPORT_MEMORY_POINTS, on the first sample */
    uint32_t count;
    uint32_t width;
};

struct nwb__scope_acc {
    nwb_name_t name;
    int gpu;
    uint32_t thread;      /* a cpuByThread row's thread (0 in the scopes table) */
    uint32_t last_thread; /* the scopes table's row: the thread of its last sample ... */
    uint32_t last_row1;   /* ... and that thread's cpuByThread row + 1 (0: none yet) */
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

/* A thread (format 1.1): what the last thread events said, and its CPU scopes. Threads seen
 * only in perfFrame scopes have no name and zero counts. */
struct nwb__thread_acc {
    uint32_t thread;
    uint16_t name_len; /* 0: no thread event named it */
    char name[NWB_TEL_THREAD_NAME_MAX];
    uint64_t records, dropped, malformed; /* the last thread event's (cumulative) counts */
    uint64_t scopes;                      /* CPU scopes of the thread in perfFrame events */
    uint64_t depth0_ns;                   /* their total duration at depth 0 */
};

/* A counter series point: `frames` consecutive frames with samples (at most the series'
 * width; the last point may hold fewer), their extremes and sample-weighted sum. */
struct nwb__counter_pt {
    uint64_t frame; /* the first frame */
    double lo, hi, sum;
    uint64_t n; /* samples */
    uint32_t frames;
};

struct nwb__counter_acc {
    nwb_name_t name;
    uint64_t samples, frames;
    double min, max, sum, last;
    uint64_t cur_frame;         /* the frame of the last sample */
    struct nwb__counter_pt *pt; /* NWB_TEL_REPORT_MEMORY_POINTS, on the first sample */
    uint32_t count, width;      /* points used; frames per point (a power of two) */
};

/* A mark, copied out of the fed bytes. */
struct nwb__mark_copy {
    uint64_t frame, ts;
    uint32_t thread;
    uint16_t len;
    char text[NWB_TEL_MARK_MAX];
};

struct nwb__mem_acc {
    nwb_name_t name;
    uint8_t source, basis;
    uint64_t reserved, used, peak, first_used, allocs, frees, samples;
    uint64_t first_frame, last_frame;
    struct nwb__series series;
};

struct nwb__pass_acc {
    nwb_name_t name;
    nwb_name_t queue;
    uint64_t frames, barriers;
};

struct nwb__queue_acc {
    nwb_name_t name;
    uint8_t type;
    uint64_t frames, packets, passes, waits, signals;
};

/* Log lines copied out of the fed bytes (they are gone after the feed) into one text buffer
 * that is kept and reused, so a steady run allocates nothing per line. */
struct nwb__log_line {
    uint8_t level;
    uint16_t len;
    uint32_t thread;
    size_t off; /* in text */
};

struct nwb__frame_logs {
    uint32_t n;
    uint64_t more;
    struct nwb__log_line line[NWB_TEL_REPORT_FRAME_LOGS];
    char *text; /* nwb_malloc'd */
    size_t text_len, text_cap;
};

struct nwb__worst {
    uint64_t frame, dur_ns, ts;
    uint32_t ntop;
    nwb_tel_cpu_scope_t top[NWB_TEL_REPORT_TOP_SCOPES];
    struct nwb__frame_logs logs;
};

/* Log lines of a frame whose perfFrame has not arrived yet. */
struct nwb__pending {
    int used;
    uint64_t frame;
    struct nwb__frame_logs logs;
};

struct nwb__diag_copy {
    uint64_t ts, frame;
    nwb_tel_diag_view_t v; /* v.pairs points into pairs */
    uint8_t *pairs;        /* nwb_malloc'd */
    size_t pairs_len;
};

struct nwb__feed_item; /* a decoded structure held back by an atomic feed */

struct nwb_tel_report_state {
    int err; /* first aggregation failure (allocation): the state stops */

    /* the stream as a whole decode would see it */
    uint64_t bytes;
    uint64_t consumed;
    uint64_t events;
    uint64_t dec_unknown;
    uint32_t dec_segments;
    uint16_t max_version;
    int status; /* first decode failure: the state stops there */
    uint64_t error_offset;
    const char *reason;

    nwb_tel_feed_result_t *cur; /* the feed in progress */
    int skipping;               /* inside a duplicate segment */
    struct nwb__feed_item *items;
    size_t nitems, items_cap;
    int items_overflow;

    /* segments */
    uint32_t segments;
    struct nwb__ntab seqs;
    uint64_t dup_segments, dup_events, untracked_segments;
    int have_header;
    nwb_tel_header_t first; /* strings point into the arrays below */
    char program[NWB_TEL_PROGRAM_MAX];
    char run[NWB_TEL_RUN_MAX];
    char build_id[NWB_TEL_BUILD_ID_MAX];
    uint64_t seq_min, seq_max, header_mismatches;
    uint64_t drop_events, drop_scopes, drop_uploads;

    /* events */
    uint64_t by_kind[NWB_TEL_KIND_COUNT + 1];
    uint64_t unknown;
    uint64_t logs_by_level[4];

    /* frames */
    uint64_t frames, frame_sum_ns, frame_max_ns;
    uint64_t frame_min, frame_max; /* frame numbers */
    struct nwb__frames ft;
    struct nwb__worst worst[NWB_TEL_REPORT_WORST_FRAMES];
    unsigned nworst;
    struct nwb__pending pending[NWB_TEL_REPORT_PENDING_LOGS];
    uint64_t pending_order;

    /* scopes */
    struct nwb__ntab scope_ix;
    struct nwb__scope_acc *scopes;
    size_t scopes_cap;
    uint64_t scopes_omitted;

    /* memory */
    struct nwb__ntab mem_ix;
    struct nwb__mem_acc *mem;
    size_t mem_cap;
    uint64_t mem_frames, mem_omitted;
    uint64_t arena_used_first, arena_used_last, arena_used_max;
    uint64_t heap_used_first, heap_used_last, heap_used_max;
    struct nwb__series arena_series, heap_series;

    /* frame graph */
    struct nwb__ntab pass_ix, queue_ix;
    struct nwb__pass_acc *passes;
    size_t passes_cap;
    struct nwb__queue_acc *queues;
    size_t queues_cap;
    uint64_t fg_frames, fg_passes, fg_packets, fg_barriers, fg_waits, fg_signals, fg_edges;
    uint64_t fg_emitted, fg_same_queue, fg_dup_merges, fg_inherited, fg_omitted;

    /* diagnostics */
    uint64_t diags, diag_by_sev[4];
    struct nwb__diag_copy diag_list[NWB_TEL_REPORT_DIAGNOSTICS];
    unsigned ndiag;

    /* format 1.1: the names the stream carried, threads, counters, marks */
    struct nwb__tel_strings strings;
    struct nwb__ntab thread_ix;
    struct nwb__thread_acc *threads;
    size_t threads_cap;
    uint64_t threads_not_kept;  /* thread events and CPU scopes of threads beyond the bound */
    uint32_t last_thread;       /* the thread looked up last ... */
    uint32_t last_thread_row1;  /* ... and its entry + 1 (0: none) */
    struct nwb__ntab tscope_ix; /* (name, thread) -> cpuByThread row */
    struct nwb__scope_acc *tscopes;
    size_t tscopes_cap;
    uint64_t tscopes_not_kept; /* CPU scopes beyond NWB_TEL_REPORT_THREAD_SCOPES_MAX rows */
    struct nwb__ntab counter_ix;
    struct nwb__counter_acc *counters;
    size_t counters_cap;
    uint64_t counters_not_kept; /* samples of counter names beyond the bound */
    struct nwb__mark_copy *marks;
    size_t marks_cap;
    uint32_t nmarks;
    uint64_t marks_total;
};

/* Grow @p *arr (elements of @p elem bytes) to hold at least @p need (doubling). 0 or -ENOMEM. */
int nwb__tel_grow(void **arr, size_t *cap, size_t need, size_t elem);

/* Lower the exact-frames bound of a fresh state (tests reach the bound with few frames). */
void nwb__tel_report_state_limit_frames(nwb_tel_report_state_t *s, uint64_t exact_max);

#endif /* NWB_TEL_REPORT_INT_H */
