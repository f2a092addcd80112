/* SPDX-License-Identifier: MIT */
/*
 * nwb/telemetry.h - the telemetry recorder a game creates once: capture switches, per-frame
 * recording of CPU scopes, GPU timing samples, memory sources, frame-graph contributors, text
 * logs and diagnostics; a read-only timing view; and upload through a sink (the logger client's
 * worker, the uploader thread below, or a file). The stream format is nwb/telemetry_format.h.
 *
 * Threading: a recorder belongs to one thread (the frame thread): every nwb_tel_recorder_*,
 * nwb_tel_frame_*, nwb_tel_scope_*, nwb_tel_gpu_*, nwb_tel_text_*, nwb_tel_diag_* and
 * nwb_tel_flush_upload() call happens there. Other threads hand their scopes to the frame
 * thread (the CPU-task profile model). The exceptions are stated where they apply: memory
 * source counters (any thread, atomics) and contributor unregistration (any thread).
 *
 * The recorder never aborts and never grows without bound: every per-frame table has a cap,
 * what does not fit is dropped and counted, and the counts travel in the stream's headers.
 * Once warm (tables grown to the frame's needs) recording allocates nothing per event.
 */
#ifndef NWB_TELEMETRY_H
#define NWB_TELEMETRY_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/common.h"
#include "nwb/name.h"
#include "nwb/telemetry_format.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nwb_tel_recorder nwb_tel_recorder_t; /* opaque */

/* ---- Capture switches ----------------------------------------------------------------------- */

#define NWB_TEL_CAPTURE_CPU         0x01u /* CPU scopes (perf frames) and their timing stats */
#define NWB_TEL_CAPTURE_GPU         0x02u /* GPU timing samples (perf frames) and stats */
#define NWB_TEL_CAPTURE_MEMORY      0x04u /* memory frames */
#define NWB_TEL_CAPTURE_FRAME_GRAPH 0x08u /* frame-graph frames from the contributors */
#define NWB_TEL_CAPTURE_LOGS        0x10u /* text logs and diagnostics */

/* The capture options (presets). */
#define NWB_TEL_CAPTURE_DISABLED         0x00u
#define NWB_TEL_CAPTURE_FRAME_GRAPH_ONLY NWB_TEL_CAPTURE_FRAME_GRAPH
#define NWB_TEL_CAPTURE_PERF_ONLY                                                                  \
    (NWB_TEL_CAPTURE_CPU | NWB_TEL_CAPTURE_GPU | NWB_TEL_CAPTURE_MEMORY)
#define NWB_TEL_CAPTURE_GPU_TIMING_ONLY NWB_TEL_CAPTURE_GPU
#define NWB_TEL_CAPTURE_ALL             0x1fu

/** Recorder settings. Strings are copied. Every cap is per frame unless stated. */
typedef struct nwb_tel_recorder_config {
    const char *program;      /* NULL: "unknown" (at most NWB_TEL_PROGRAM_MAX bytes kept) */
    const char *run_id;       /* NULL: 16 random hex digits */
    const char *build_id;     /* NULL: the executable's GNU build id */
    size_t frame_bytes_max;   /* encoded events one frame may add; beyond: dropped, counted */
    size_t pending_bytes_max; /* encoded frames held until the next upload; beyond: dropped */
    uint32_t cpu_scopes_max;  /* CPU scopes per frame (<= NWB_TEL_CPU_SCOPES_MAX) */
    uint32_t scopes_max;      /* registered scopes, CPU and GPU together */
    uint32_t memory_sources_max;
    uint32_t contributors_max;
    uint64_t start_wall_ns; /* 0: now (tests set both for reproducible streams) */
    uint64_t start_mono_ns; /* 0: now */
} nwb_tel_recorder_config_t;

#define NWB_TEL_RECORDER_CONFIG_INIT                                                               \
    {                                                                                              \
        NULL, NULL, NULL, 1u << 20, 16u << 20, 8192u, 4096u, 256u, 16u, 0, 0                       \
    }

/**
 * Create a recorder (capture disabled, upload off). Returns 0 and the recorder in @p *out
 * (caller owns; nwb_tel_recorder_destroy()), or -ENOMEM / NWB_ECONFIG (a cap is 0 or above its
 * format bound) with @p *out NULL.
 */
NWB_API int nwb_tel_recorder_create(const nwb_tel_recorder_config_t *cfg, nwb_tel_recorder_t **out);

/** Free the recorder; pending events that were not flushed are dropped. NULL is a no-op. */
NWB_API void nwb_tel_recorder_destroy(nwb_tel_recorder_t *rec);

/**
 * Set the capture switches (NWB_TEL_CAPTURE_*). Takes effect at the next frame begin; a frame
 * in progress keeps the switches it began with.
 */
NWB_API void nwb_tel_recorder_set_capture(nwb_tel_recorder_t *rec, unsigned capture);
NWB_API unsigned nwb_tel_recorder_capture(const nwb_tel_recorder_t *rec);

/**
 * Release the event slots and payload capacity the recorder grew, the pending (unflushed)
 * events, and reset the timing statistics (registrations stay valid). Only while capture is
 * disabled and no frame is open: returns 0, or -EBUSY.
 */
NWB_API int nwb_tel_recorder_clear(nwb_tel_recorder_t *rec);

/* ---- Upload --------------------------------------------------------------------------------- */

/** One sealed upload: a complete segment (header + events). */
typedef struct nwb_tel_upload {
    uint8_t *data; /* nwb_malloc'd; ownership moves to the sink when submit() returns 0 */
    size_t len;
    uint64_t seq; /* also in the segment header; goes out as X-NWB-Seq */
} nwb_tel_upload_t;

/**
 * Where uploads go. submit() runs on the thread calling nwb_tel_flush_upload() and must not
 * block: it queues the bytes for its own worker (compression and delivery happen there). On 0
 * it owns up->data (free it with nwb_free); on failure (NWB_EFULL, ...) the recorder keeps
 * nothing: the upload is dropped and counted in dropped_uploads.
 */
typedef struct nwb_tel_sink {
    int (*submit)(void *ctx, nwb_tel_upload_t *up);
    void *ctx;
} nwb_tel_sink_t;

/**
 * Upload on or off, and the sink (borrowed; must outlive the recorder or the next call). With
 * upload off, frames are still captured for the timing view but nothing is encoded or kept.
 * Independent of the capture switches. Returns 0, or NWB_ECONFIG when @p on and @p sink is
 * NULL or has no submit function.
 */
NWB_API int nwb_tel_recorder_set_upload(nwb_tel_recorder_t *rec, int on,
                                        const nwb_tel_sink_t *sink);

/**
 * Seal the events recorded since the last flush into one segment and hand it to the sink.
 * Cheap on the calling thread: writes the header in place and moves the buffer (no copy, no
 * compression, no I/O). Returns 0 (also when there was nothing to send, or upload is off),
 * -EBUSY inside a frame, or the sink's error (the upload is then dropped and counted).
 */
NWB_API int nwb_tel_flush_upload(nwb_tel_recorder_t *rec);

/* The spelling of the same call. */
#define nwb_telemetry_flush_upload(rec) nwb_tel_flush_upload(rec)

/* ---- Frames --------------------------------------------------------------------------------- */

/**
 * Begin frame @p frame at @p start_ns (monotonic; 0 = now). Returns 0, or -EBUSY when a frame
 * is already open. With capture disabled this only notes that a frame is open.
 */
NWB_API int nwb_tel_frame_begin(nwb_tel_recorder_t *rec, uint64_t frame, uint64_t start_ns);

/**
 * End the open frame at @p end_ns (0 = now): publish the timing statistics and GPU windows,
 * sample the memory sources, call the frame-graph contributors, and (upload on) encode the
 * frame's events and append them to the pending upload. Returns 0 or -EINVAL (no frame open).
 */
NWB_API int nwb_tel_frame_end(nwb_tel_recorder_t *rec, uint64_t end_ns);

/* ---- Scopes: registered during setup, consumed by id in the frame loop ----------------------- */

typedef uint32_t nwb_tel_scope_id_t;
#define NWB_TEL_SCOPE_INVALID UINT32_MAX
#define NWB_TEL_SCOPE_CPU     0
#define NWB_TEL_SCOPE_GPU     1

/**
 * Register scope @p name of @p type (NWB_TEL_SCOPE_CPU/GPU), or find it when already
 * registered. Setup-time (may allocate). Returns 0 with @p *id, NWB_EFULL past scopes_max, or
 * -ENOMEM.
 */
NWB_API int nwb_tel_scope_register(nwb_tel_recorder_t *rec, nwb_name_t name, int type,
                                   nwb_tel_scope_id_t *id);

/** The id of a registered scope, or NWB_TEL_SCOPE_INVALID (consume-only: never registers). */
NWB_API nwb_tel_scope_id_t nwb_tel_scope_find(const nwb_tel_recorder_t *rec, nwb_name_t name,
                                              int type);

/**
 * Record one CPU scope of the open frame: [start_ns, end_ns] on @p thread at nesting @p depth.
 * Never allocates once the frame's slot table is warm; a full table, an unknown id, a
 * reversed interval or a call outside a frame drops the scope and counts it.
 */
NWB_API void nwb_tel_scope_record(nwb_tel_recorder_t *rec, nwb_tel_scope_id_t id, uint32_t thread,
                                  uint64_t start_ns, uint64_t end_ns, uint16_t depth);

/**
 * Record one asynchronous GPU timing result of scope @p id measured in @p source_frame (which
 * may be any earlier frame, in any order). It is published with the current frame's window.
 */
NWB_API void nwb_tel_gpu_sample(nwb_tel_recorder_t *rec, nwb_tel_scope_id_t id,
                                uint64_t source_frame, uint64_t duration_ns);

/* ---- Timing statistics and the read-only view ------------------------------------------------ */

/**
 * Per-scope statistics. Source-frame bounds are the minimum and maximum source frame seen
 * (inclusive), whatever order the samples arrived in; last_ns is the most recent arrival;
 * publication_index is the recorder publication (frame end) that last included this scope.
 */
typedef struct nwb_tel_timing_stats {
    uint64_t samples;
    uint64_t total_ns;
    uint64_t min_ns; /* UINT64_MAX while samples == 0 */
    uint64_t max_ns;
    uint64_t last_ns;
    uint64_t source_frame_min;
    uint64_t source_frame_max;
    uint64_t publication_index; /* 0 = never published */
} nwb_tel_timing_stats_t;

#define NWB_TEL_TIMING_STATS_INIT                                                                  \
    {                                                                                              \
        0, 0, UINT64_MAX, 0, 0, UINT64_MAX, 0, 0                                                   \
    }

/** Accumulate one sample (pure; usable on caller storage). */
NWB_API void nwb_tel_timing_stats_add(nwb_tel_timing_stats_t *s, uint64_t duration_ns,
                                      uint64_t source_frame);

typedef struct nwb_tel_timing_view nwb_tel_timing_view_t; /* opaque, read-only */

typedef struct nwb_tel_timing_entry {
    nwb_name_t name;
    int type; /* NWB_TEL_SCOPE_CPU / _GPU */
    nwb_tel_timing_stats_t stats;
} nwb_tel_timing_entry_t;

/** The recorder's read-only timing view (borrowed; valid while the recorder lives). */
NWB_API const nwb_tel_timing_view_t *nwb_tel_recorder_timing_view(const nwb_tel_recorder_t *rec);
/** Registered scopes (ids are 0 .. count-1). */
NWB_API uint32_t nwb_tel_timing_view_count(const nwb_tel_timing_view_t *v);
/** Copy scope @p id's statistics. Returns 0 or -EINVAL. */
NWB_API int nwb_tel_timing_view_get(const nwb_tel_timing_view_t *v, nwb_tel_scope_id_t id,
                                    nwb_tel_timing_entry_t *out);
/** Number of publications (frame ends) so far. */
NWB_API uint64_t nwb_tel_timing_view_publications(const nwb_tel_timing_view_t *v);

/* ---- Memory sources ------------------------------------------------------------------------ */

/**
 * A memory owner sampled at every frame end with memory capture on. Counters are atomics:
 * any thread may update them (relaxed; no lock, no allocation, no formatting). heapBacking
 * sources are reported beside arenas and never added to arena totals.
 */
typedef struct nwb_tel_mem_source nwb_tel_mem_source_t; /* opaque */

/**
 * Register (or find, by name and kind: owners aggregate by name) a memory source. The
 * recorder owns it; it lives as long as the recorder. Setup-time. Returns 0 with @p *out,
 * NWB_EFULL past memory_sources_max, NWB_EPROTO for a bad kind/basis, or -ENOMEM.
 */
NWB_API int nwb_tel_mem_source_register(nwb_tel_recorder_t *rec, nwb_name_t name, unsigned source,
                                        unsigned peak_basis, nwb_tel_mem_source_t **out);
/** Any thread. A NULL @p s (a registration that failed) is a no-op, so the game goes on. */
NWB_API void nwb_tel_mem_alloc(nwb_tel_mem_source_t *s, uint64_t bytes);
NWB_API void nwb_tel_mem_free(nwb_tel_mem_source_t *s, uint64_t bytes);
NWB_API void nwb_tel_mem_set_reserved(nwb_tel_mem_source_t *s, uint64_t bytes);

/* ---- Frame-graph contributors -------------------------------------------------------------- */

typedef struct nwb_tel_fg_builder nwb_tel_fg_builder_t; /* opaque, valid during the callback */

/** Called at frame end (frame thread) to describe frame @p frame's graph. */
typedef void (*nwb_tel_fg_contribute_fn)(void *ctx, nwb_tel_fg_builder_t *b, uint64_t frame);

typedef uint32_t nwb_tel_contributor_id_t;

/** Register a contributor (frame thread). Returns 0 with @p *id, NWB_EFULL, or NWB_ECONFIG. */
NWB_API int nwb_tel_fg_contributor_register(nwb_tel_recorder_t *rec, nwb_tel_fg_contribute_fn fn,
                                            void *ctx, nwb_tel_contributor_id_t *id);

/**
 * Unregister (any thread). When this returns the recorder never calls the contributor again
 * and no call is in progress, so its owner may be destroyed; from inside a contributor
 * callback it returns at once and the current call is the last. Returns 0 or -ENOENT.
 */
NWB_API int nwb_tel_fg_contributor_unregister(nwb_tel_recorder_t *rec, nwb_tel_contributor_id_t id);

/* Builder calls: each returns 0 (with the new index where there is one) or NWB_EFULL /
 * NWB_ERANGE (the item is dropped and counted). */
NWB_API int nwb_tel_fg_queue_add(nwb_tel_fg_builder_t *b, nwb_name_t name, unsigned type,
                                 uint32_t *index);
NWB_API int nwb_tel_fg_packet_add(nwb_tel_fg_builder_t *b, uint32_t queue, uint32_t waits,
                                  uint32_t signals, uint32_t *index);
NWB_API int nwb_tel_fg_pass_add(nwb_tel_fg_builder_t *b, nwb_name_t name, uint32_t packet,
                                uint32_t barriers, uint32_t *index);
NWB_API int nwb_tel_fg_edge_add(nwb_tel_fg_builder_t *b, uint32_t from, uint32_t to);
NWB_API void nwb_tel_fg_counters_add(nwb_tel_fg_builder_t *b, const nwb_tel_fg_counters_t *c);

/* ---- Text logs, diagnostics, other events --------------------------------------------------- */

/** Record a text log line (LOGS capture, upload on). @p ts 0 = now; longer than 4096 bytes is cut.
 */
NWB_API void nwb_tel_text_record(nwb_tel_recorder_t *rec, uint64_t ts, unsigned level,
                                 uint32_t thread, const char *msg, size_t len);

/** Record a diagnostic (LOGS capture). Returns 0, or the encoder's error (dropped, counted). */
NWB_API int nwb_tel_diag_record(nwb_tel_recorder_t *rec, uint64_t ts, nwb_name_t code,
                                unsigned severity, const nwb_tel_kv_t *pairs, size_t n);

/**
 * Record an event of any kind with the payload given (validated like the decoder does for
 * core kinds). Recorded whenever upload is on, whatever the capture switches. For extensions
 * and for tests of readers. Returns 0 or the encoder's error.
 */
NWB_API int nwb_tel_event_record_raw(nwb_tel_recorder_t *rec, unsigned kind, unsigned version,
                                     uint64_t ts, const void *payload, size_t len);

/* ---- Counters ------------------------------------------------------------------------------- */

typedef struct nwb_tel_recorder_stats {
    uint64_t frames;  /* frames ended */
    uint64_t events;  /* events appended to pending uploads */
    uint64_t uploads; /* uploads handed to the sink */
    uint64_t upload_bytes;
    uint64_t dropped_events; /* as in the segment headers */
    uint64_t dropped_scopes;
    uint64_t dropped_uploads;
    size_t pending_bytes;  /* encoded bytes waiting for the next flush */
    size_t capacity_bytes; /* memory the recorder's tables and buffers hold now */
} nwb_tel_recorder_stats_t;

NWB_API void nwb_tel_recorder_stats_get(const nwb_tel_recorder_t *rec,
                                        nwb_tel_recorder_stats_t *out);

/* ---- The uploader: a worker thread that compresses and delivers ------------------------------ */

typedef struct nwb_tel_uploader nwb_tel_uploader_t; /* opaque */

/**
 * Deliver one upload body (worker thread; may block). @p content_encoding is "zstd" or NULL
 * (raw stream bytes). Returns 0 (delivered) or a negative code (counted as failed).
 */
typedef int (*nwb_tel_deliver_fn)(void *ctx, const uint8_t *body, size_t len,
                                  const char *content_encoding, uint64_t seq);

typedef struct nwb_tel_uploader_config {
    unsigned queue_max;     /* uploads waiting; beyond: submit() returns NWB_EFULL */
    size_t queue_max_bytes; /* bytes waiting; beyond: NWB_EFULL */
    int compress;           /* 1: one independent zstd frame per upload */
    int zstd_level;
    nwb_tel_deliver_fn deliver;
    void *ctx;
} nwb_tel_uploader_config_t;

#define NWB_TEL_UPLOADER_CONFIG_INIT                                                               \
    {                                                                                              \
        8u, 64u << 20, 1, 3, NULL, NULL                                                            \
    }

/** Start the worker. Returns 0 with @p *out, NWB_ECONFIG (no deliver), or a thread error. */
NWB_API int nwb_tel_uploader_create(const nwb_tel_uploader_config_t *cfg, nwb_tel_uploader_t **out);
/** The sink that feeds this uploader (valid while it lives). */
NWB_API const nwb_tel_sink_t *nwb_tel_uploader_sink(nwb_tel_uploader_t *u);
/** Wait until everything submitted so far was delivered (or failed), at most @p timeout_ms.
 * Returns 0 or NWB_ETIMEOUT. */
NWB_API int nwb_tel_uploader_flush(nwb_tel_uploader_t *u, unsigned timeout_ms);
/** Deliver what is queued, stop and join the worker, free. NULL is a no-op. */
NWB_API void nwb_tel_uploader_destroy(nwb_tel_uploader_t *u);

typedef struct nwb_tel_uploader_stats {
    uint64_t submitted, refused, delivered, failed;
    uint64_t raw_bytes, sent_bytes;
} nwb_tel_uploader_stats_t;

NWB_API void nwb_tel_uploader_stats_get(nwb_tel_uploader_t *u, nwb_tel_uploader_stats_t *out);

/**
 * A deliver function for standalone runs: appends raw stream bytes (use compress = 0) to the
 * file whose path is @p ctx (a NUL-terminated string, borrowed), e.g. the run's
 * telemetry.nwbs next to its log. Checked writes; returns 0 or a negated errno.
 */
NWB_API int nwb_tel_deliver_file(void *ctx, const uint8_t *body, size_t len,
                                 const char *content_encoding, uint64_t seq);

#ifdef __cplusplus
}
#endif

#endif /* NWB_TELEMETRY_H */
