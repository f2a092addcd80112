/* SPDX-License-Identifier: MIT */
/*
 * tel_rec_int.h - the recorder's private state, shared by tel_recorder.c (frames, upload),
 * tel_timing.c (scope registry, statistics, the view), tel_contrib.c (frame-graph
 * contributors and builder) and tel_memory.c (memory sources).
 */
#ifndef NWB_TEL_REC_INT_H
#define NWB_TEL_REC_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "nwb/telemetry.h"

struct nwb__tel_scope {
    nwb_name_t name;
    int type;
    nwb_tel_timing_stats_t stats;
    /* GPU: the publication window being filled, and the cumulative figures. */
    uint32_t win_samples;
    uint8_t win_listed; /* already in rec->gpu_dirty */
    uint64_t win_sum_ns, win_min_ns, win_max_ns, win_sf_min, win_sf_max;
    uint64_t gpu_samples;
    uint64_t gpu_total_ns;
    uint32_t published_windows;
};

struct nwb_tel_mem_source {
    nwb_name_t name;
    uint8_t source;     /* nwb_tel_mem_source_kind_t */
    uint8_t peak_basis; /* nwb_tel_peak_basis_t */
    atomic_uint_fast64_t reserved_bytes;
    atomic_uint_fast64_t used_bytes;
    atomic_uint_fast64_t peak_bytes;
    atomic_uint_fast64_t allocations;
    atomic_uint_fast64_t frees;
};

struct nwb__tel_contributor {
    nwb_tel_fg_contribute_fn fn;
    void *ctx;
    nwb_tel_contributor_id_t id;
    int active;
};

struct nwb_tel_fg_builder {
    struct nwb_tel_recorder *rec;
};

struct nwb_tel_timing_view {
    const struct nwb_tel_recorder *rec;
};

/* A thread the profiling macros recorded on (tel_profile_drain.c). */
struct nwb__tel_prof_thread {
    uint32_t tid;
    uint16_t name_len;
    char name[NWB_TEL_THREAD_NAME_MAX];
    uint64_t records, dropped, malformed;
    uint64_t seg; /* segment (seq + 1) that last carried its thread event */
    int dirty;    /* counts or name changed since that event */
    int exited;
};

struct nwb_tel_recorder {
    /* settings */
    size_t frame_bytes_max;
    size_t pending_bytes_max;
    uint32_t cpu_scopes_max;
    uint32_t scopes_max;
    uint32_t memory_sources_max;
    uint32_t contributors_max;
    char program[NWB_TEL_PROGRAM_MAX + 1];
    char run[NWB_TEL_RUN_MAX + 1];
    char build_id[NWB_TEL_BUILD_ID_MAX + 1];
    uint16_t program_len, run_len, build_id_len;
    uint64_t start_wall_ns, start_mono_ns;
    size_t header_size;

    /* switches */
    unsigned capture;
    unsigned frame_capture; /* the switches of the open frame; 0 outside a frame */
    int upload;
    nwb_tel_sink_t sink;

    /* the open frame */
    int in_frame;
    uint64_t frame;
    uint64_t frame_start_ns;
    size_t frame_mark; /* pending.len when the frame began */
    uint64_t publications;

    nwb_tel_cpu_scope_t *cpu;
    uint32_t ncpu, cpu_cap;
    uint32_t *gpu_dirty; /* GPU scope ids with samples in the current window */
    uint32_t ngpu_dirty, gpu_dirty_cap;
    nwb_tel_gpu_scope_t *gpu_out;
    uint32_t gpu_out_cap;
    nwb_tel_mem_record_t *mem_out;
    uint32_t mem_out_cap;

    struct nwb_tel_timing_view view;

    /* frame-graph builder tables */
    struct nwb_tel_fg_builder builder;
    nwb_tel_fg_queue_t *fg_queues;
    nwb_tel_fg_packet_t *fg_packets;
    nwb_tel_fg_pass_t *fg_passes;
    nwb_tel_fg_edge_t *fg_edges;
    uint32_t fg_nqueues, fg_npackets, fg_npasses, fg_nedges;
    uint32_t fg_cap_queues, fg_cap_packets, fg_cap_passes, fg_cap_edges;
    nwb_tel_fg_counters_t fg_counters;

    /* encoded events waiting for the next flush; starts with room for the segment header */
    nwb_buf_t pending;
    uint64_t pending_events;

    /* scope registry: dense ids, open-addressing index of (name, type) -> id + 1 */
    struct nwb__tel_scope *scopes;
    uint32_t nscopes, scopes_cap;
    uint32_t *scope_index;
    uint32_t scope_index_mask;

    /* memory sources (stable pointers) */
    nwb_tel_mem_source_t **mem;
    uint32_t nmem;

    /* contributors: frame_end holds the lock while it calls them */
    pthread_mutex_t contrib_lock;
    pthread_t contrib_owner;
    atomic_int contrib_calling;
    struct nwb__tel_contributor *contribs;
    uint32_t ncontribs;
    nwb_tel_contributor_id_t next_contrib_id;

    /* the profiling macros (tel_profile_drain.c) */
    int prof_attached;
    nwb_tel_counter_t *counters; /* this frame's counter samples */
    uint32_t ncounters, counters_cap;
    nwb_tel_string_t *strings; /* strings waiting for the next string-table event */
    uint32_t nstrings, strings_cap;
    uint64_t *seg_names; /* open addressing: names whose string this segment carries */
    uint32_t nseg_names;
    struct nwb__tel_prof_thread *threads;
    uint32_t nthreads, threads_cap;
    /* the last frames' starts, so a line drained late goes into the frame of its time */
    struct {
        uint64_t frame, start_ns;
    } frame_hist[64];
    uint32_t frame_hist_n;

    /* counters */
    uint64_t seq;
    uint64_t frames, events, uploads, upload_bytes;
    uint64_t dropped_events, dropped_scopes, dropped_uploads;
};

/* tel_timing.c */
void nwb__tel_scopes_free(struct nwb_tel_recorder *rec);
void nwb__tel_scopes_reset_stats(struct nwb_tel_recorder *rec);
/* Close the GPU windows into rec->gpu_out; returns how many (0 on allocation failure, with
 * the samples counted as dropped). */
uint32_t nwb__tel_gpu_publish(struct nwb_tel_recorder *rec);

/* tel_contrib.c */
int nwb__tel_contrib_init(struct nwb_tel_recorder *rec);
void nwb__tel_contrib_destroy(struct nwb_tel_recorder *rec);
/* Reset the builder, call every active contributor for rec->frame, return 1 when the frame
 * has a graph to encode. */
int nwb__tel_contrib_run(struct nwb_tel_recorder *rec);
void nwb__tel_fg_tables_free(struct nwb_tel_recorder *rec);

/* tel_memory.c */
void nwb__tel_mem_free_all(struct nwb_tel_recorder *rec);
/* Snapshot every source into rec->mem_out; returns the count (0 when none or on failure). */
uint32_t nwb__tel_mem_snapshot(struct nwb_tel_recorder *rec);

/* tel_profile_drain.c */
void nwb__tel_prof_init(struct nwb_tel_recorder *rec);
void nwb__tel_prof_destroy(struct nwb_tel_recorder *rec);
void nwb__tel_prof_capture(struct nwb_tel_recorder *rec, unsigned capture);
/* Frame end, before the frame is encoded: drain every thread's ring into the frame. */
void nwb__tel_prof_frame_end(struct nwb_tel_recorder *rec, uint64_t end_ns);
/* The frame's counter samples, after its perf event. */
void nwb__tel_prof_encode_counters(struct nwb_tel_recorder *rec, uint64_t ts);
/* Before a segment is sealed: the thread events still due; then a new segment begins. */
void nwb__tel_prof_segment_end(struct nwb_tel_recorder *rec);
/* Queue @p name's string (when known) for the segment's string table; encode what is queued. */
void nwb__tel_prof_want_name(struct nwb_tel_recorder *rec, nwb_name_t name, const char *s,
                             size_t len);
void nwb__tel_prof_strings_flush(struct nwb_tel_recorder *rec);
int nwb__tel_pending_prepare(struct nwb_tel_recorder *rec);

/* Grow a recorder table of @p elem-byte items to hold @p need (at most @p max). 0 or error. */
int nwb__tel_table_grow(void **arr, uint32_t *cap, uint32_t need, uint32_t max, size_t elem);

#endif /* NWB_TEL_REC_INT_H */
