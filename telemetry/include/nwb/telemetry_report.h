/* SPDX-License-Identifier: MIT */
/*
 * nwb/telemetry_report.h - what is made from a decoded stream: the run report
 * (telemetry.json, docs/telemetry-report.md) and the incremental state that keeps it up to date
 * one upload at a time, the frame queries of the read API, the upload outcome log the ingest
 * keeps beside the stream, reading stored streams (telemetry.nwbs, telemetry.nwbs.zst), the
 * one-line-per-event dump, the Chrome trace export, and the synthetic stream generator used by
 * tests and benchmarks.
 *
 * Everything here runs on the caller's thread and allocates only through nwb_malloc.
 */
#ifndef NWB_TELEMETRY_REPORT_H
#define NWB_TELEMETRY_REPORT_H

#include <stdio.h>

#include "nwb/json.h"
#include "nwb/namesym.h"
#include "nwb/telemetry_format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Report bounds ------------------------------------------------------------------------ */

#define NWB_TEL_REPORT_SCHEMA   "nwb-telemetry-report/1"
#define NWB_TEL_REPORT_JSON_MAX (64u * 1024u * 1024u) /* default cap of the JSON text */
/* Frames whose durations are kept exactly, for the percentiles and the frame queries: 9.7 hours
 * at 60 Hz (an 8-hour run is 1.73 M frames). Beyond it the percentiles come from a log-linear
 * histogram (NWB_TEL_REPORT_HIST_ERROR) and the frame queries cover the first this many. */
#define NWB_TEL_REPORT_FRAMES_MAX    (1u << 21)
#define NWB_TEL_REPORT_HIST_ERROR    0.03125    /* relative error of a histogram percentile */
#define NWB_TEL_REPORT_FRAME_RUNS    65536u     /* breaks in the frame numbering tracked */
#define NWB_TEL_REPORT_LONG_FRAMES   4096u      /* frames of 2^32 ns (4.3 s) or more kept exactly */
#define NWB_TEL_REPORT_SCOPES_MAX    4096u      /* distinct (name, cpu|gpu) scopes aggregated */
#define NWB_TEL_REPORT_MEMORY_MAX    4096u      /* distinct (name, source) memory owners */
#define NWB_TEL_REPORT_MEMORY_POINTS 128u       /* points of a memory series (min/max kept) */
#define NWB_TEL_REPORT_PASSES_MAX    4096u      /* distinct frame-graph pass names */
#define NWB_TEL_REPORT_QUEUES_MAX    256u       /* distinct frame-graph queue names */
#define NWB_TEL_REPORT_SEGMENTS_MAX  (1u << 20) /* segments whose seq is tracked for duplicates */
#define NWB_TEL_REPORT_WORST_FRAMES  10u
#define NWB_TEL_REPORT_TOP_SCOPES    5u  /* per worst frame */
#define NWB_TEL_REPORT_FRAME_LOGS    8u  /* log lines listed per worst frame */
#define NWB_TEL_REPORT_PENDING_LOGS  32u /* frames whose log lines wait for their perfFrame */
#define NWB_TEL_REPORT_DIAGNOSTICS   64u /* diagnostics listed; the rest are counted */
#define NWB_TEL_REPORT_REJECTIONS    16u /* most recent rejected uploads listed */
/* Format 1.1 (issue 15): the names a stream carries, threads, counters and marks. */
#define NWB_TEL_REPORT_STRINGS_MAX       65536u     /* stream strings kept (by hash) */
#define NWB_TEL_REPORT_STRING_BYTES_MAX  (4u << 20) /* bytes of those strings: 4 MiB */
#define NWB_TEL_REPORT_THREADS_MAX       256u       /* thread ids attributed */
#define NWB_TEL_REPORT_THREAD_SCOPES_MAX 4096u      /* (thread, CPU scope) rows */
#define NWB_TEL_REPORT_COUNTERS_MAX      1024u      /* distinct counter names */
#define NWB_TEL_REPORT_MARKS             1000u      /* marks listed; the rest counted */

/* ---- Upload outcome log (telemetry.ingest.log beside telemetry.nwbs) ----------------------- */

#define NWB_TEL_INGEST_LOG_NAME "telemetry.ingest.log"
#define NWB_TEL_REASON_MAX      160u

typedef struct nwb_tel_rejection {
    uint64_t seq;
    int status;      /* nwb error code */
    uint64_t offset; /* first bad byte in the (decompressed) upload */
    uint64_t bytes;  /* upload size as received */
    uint64_t time_ns;
    char reason[NWB_TEL_REASON_MAX];
} nwb_tel_rejection_t;

typedef struct nwb_tel_ingest_summary {
    int present; /* 0: no log was found (the report says so) */
    uint64_t accepted;
    uint64_t duplicates;
    uint64_t unstored; /* accepted into the report, not stored: the run's stream limit */
    uint64_t rejected;
    uint64_t bad_lines; /* lines that did not parse (ignored) */
    unsigned recent_count;
    nwb_tel_rejection_t recent[NWB_TEL_REPORT_REJECTIONS]; /* oldest first */
} nwb_tel_ingest_summary_t;

/**
 * Append one outcome line ("accepted", "duplicate", "unstored" or "rejected") to the log at @p path
 * (created 0644 when missing; O_APPEND, one write). @p reason may be NULL. Returns 0 or a
 * negated errno.
 */
NWB_API int nwb_tel_ingest_log_append(const char *path, const char *outcome, uint64_t seq,
                                      int status, uint64_t offset, uint64_t bytes,
                                      const char *reason);

/**
 * nwb_tel_ingest_log_append(), and when the line was written, that same line counted in @p s
 * (borrowed; NULL: not counted) as nwb_tel_ingest_log_load() would count it: a summary kept in
 * memory beside the log stays equal to a load of the file.
 */
NWB_API int nwb_tel_ingest_log_record(const char *path, nwb_tel_ingest_summary_t *s,
                                      const char *outcome, uint64_t seq, int status,
                                      uint64_t offset, uint64_t bytes, const char *reason);

/**
 * Read the log at @p path into @p out (streamed line by line, bounded memory). A missing file
 * gives present = 0 and returns 0; one that is not a regular file NWB_ENOTREG (never waited
 * on); other read errors return a negated errno.
 */
NWB_API int nwb_tel_ingest_log_load(const char *path, nwb_tel_ingest_summary_t *out);

/* ---- Report ------------------------------------------------------------------------------- */

typedef struct nwb_tel_report_options {
    const nwb_namesym_table_t *names;       /* borrowed; NULL: names stay "#" tokens */
    const nwb_tel_ingest_summary_t *ingest; /* borrowed; NULL: "uploads" says no log */
    size_t json_max;                        /* 0: NWB_TEL_REPORT_JSON_MAX */
} nwb_tel_report_options_t;

#define NWB_TEL_REPORT_OPTIONS_INIT                                                                \
    {                                                                                              \
        NULL, NULL, 0                                                                              \
    }

/**
 * Decode @p len bytes of a run stream (any number of segments) and append the report JSON to
 * @p out (borrowed; its cap is raised to json_max). Events before a decode failure are kept
 * and the failure is described in "decode". @p res (may be NULL) receives the decode result.
 * Returns 0 when a complete JSON document was written (whatever the decode status), or a
 * negative code (-ENOMEM, NWB_ETOOBIG for a report above json_max). It is exactly
 * nwb_tel_report_state_create() + _feed(stream, 0) + _write(): the offline report and the
 * server's incremental one are the same code.
 */
NWB_API int nwb_tel_report_build(const uint8_t *stream, size_t len,
                                 const nwb_tel_report_options_t *opt, nwb_buf_t *out,
                                 nwb_tel_decode_result_t *res);

/* ---- Incremental report state ------------------------------------------------------------- */

/*
 * The report of a run kept up to date one upload at a time: every feed decodes its bytes once
 * and costs O(its bytes), whatever the run's length; everything the state holds is bounded
 * (the bounds above, docs/telemetry-report.md). Feeding a stream in any split into whole
 * segments, in stream order, gives the same report, byte for byte, as feeding it whole.
 *
 * Threading: a state is used by one thread at a time; _write, _frames and _memory_bytes only
 * read it and may run concurrently with each other (not with a feed).
 */
typedef struct nwb_tel_report_state nwb_tel_report_state_t;

/* Feed flags (besides NWB_TEL_DECODE_SINGLE_SEGMENT, passed to the decoder). */
#define NWB_TEL_FEED_ATOMIC 0x100u /* bytes that do not decode completely change nothing */

typedef struct nwb_tel_feed_result {
    int status;          /* the bytes' decode status: 0 when all of them decoded */
    size_t consumed;     /* bytes of complete, valid structures */
    size_t error_offset; /* first bad byte, relative to the bytes fed (status != 0) */
    const char *reason;  /* static; NULL on success */
    int applied;         /* 1: the bytes are in the report; 0: refused (ATOMIC) or stopped */
    int duplicate;       /* segments > 0 and every one's seq had been fed before */
    uint32_t segments;   /* segment headers in the bytes */
    uint32_t duplicate_segments;
    uint64_t seq_first; /* seq of the first and the last segment header (segments > 0) */
    uint64_t seq_last;
    uint64_t events;      /* valid events, duplicates included */
    uint64_t frames;      /* perfFrame events added to the report */
    uint64_t frame_first; /* their frame numbers: first and last in stream order, */
    uint64_t frame_last;  /* smallest and largest (valid when frames > 0) */
    uint64_t frame_min;
    uint64_t frame_max;
    uint64_t stream_offset; /* where the bytes start in the run's stream (bytes fed before) */
} nwb_tel_feed_result_t;

/** A new, empty state in @p *out (free with nwb_tel_report_state_destroy()). 0 or -ENOMEM. */
NWB_API int nwb_tel_report_state_create(nwb_tel_report_state_t **out);

/** Free @p s. NULL is a no-op. */
NWB_API void nwb_tel_report_state_destroy(nwb_tel_report_state_t *s);

/**
 * Add @p len bytes (borrowed: one or more WHOLE segments, in stream order) to the report.
 * Segments whose seq was fed before are duplicates: validated, counted, not aggregated.
 * Without NWB_TEL_FEED_ATOMIC, events before a decode failure are kept and the state stops
 * there, as a whole-stream decode does: later feeds only count their bytes. With it, bytes
 * that fail to decode leave the state exactly as it was (applied = 0): the ingest's mode.
 * @p res (may be NULL) says what the bytes held. Returns 0, or -ENOMEM when aggregation had to
 * stop (the report then says so in decode.reportStatus; rebuild the state to recover).
 */
NWB_API int nwb_tel_report_state_feed(nwb_tel_report_state_t *s, const uint8_t *bytes, size_t len,
                                      unsigned flags, nwb_tel_feed_result_t *res);

/**
 * Stop the state as if the stream failed to decode at the current end with @p status and the
 * static @p reason: what could not be read (a corrupt zstd frame of a stored stream) is
 * reported like a decode failure. No-op when already stopped.
 */
NWB_API void nwb_tel_report_state_fail(nwb_tel_report_state_t *s, int status, const char *reason);

/** Whether a segment with @p seq has been fed (the duplicate index). */
NWB_API int nwb_tel_report_state_has_seq(const nwb_tel_report_state_t *s, uint64_t seq);

/** The decode result of everything fed so far, as nwb_tel_stream_decode() gives for the whole
 * stream. */
NWB_API void nwb_tel_report_state_decode_result(const nwb_tel_report_state_t *s,
                                                nwb_tel_decode_result_t *res);

/**
 * Append the report JSON (telemetry.json) to @p out (borrowed; its cap is raised to json_max).
 * Returns 0, -ENOMEM or NWB_ETOOBIG (nothing appended then). O(the state's bounded size).
 */
NWB_API int nwb_tel_report_state_write(const nwb_tel_report_state_t *s,
                                       const nwb_tel_report_options_t *opt, nwb_buf_t *out);

/** Bytes of memory the state holds (its allocations). */
NWB_API size_t nwb_tel_report_state_memory_bytes(const nwb_tel_report_state_t *s);

/* ---- Frame queries (the read API's /frames, docs/telemetry-report.md) --------------------- */

#define NWB_TEL_FRAMES_POINTS_MAX     4096u     /* buckets one frames query may ask for */
#define NWB_TEL_FRAME_BUDGET_NS       16666667u /* default frame budget: 60 Hz */
#define NWB_TEL_FRAME_DETAIL_LOGS     256u      /* log lines listed by a frame detail */
#define NWB_TEL_FRAME_DETAIL_COUNTERS 16384u    /* counter samples listed by a frame detail */
#define NWB_TEL_FRAME_DETAIL_MARKS    256u      /* marks listed by a frame detail */

/**
 * Write one JSON object to @p j (borrowed; a value position: top level, array item or after a
 * key) describing the frame times of frames [@p from, @p to] reduced to at most @p points
 * buckets, each with its min and max frame time and the frames they occur in (a hitch is never
 * averaged away), plus the frame budget (@p budget_ns, 0 = NWB_TEL_FRAME_BUDGET_NS) and the
 * run's p50/p90/p99. Returns 0, NWB_ERANGE (from > to, points 0 or above
 * NWB_TEL_FRAMES_POINTS_MAX: nothing written), -ENOMEM, or the writer's sticky error.
 */
NWB_API int nwb_tel_report_state_frames(const nwb_tel_report_state_t *s, uint64_t from, uint64_t to,
                                        uint32_t points, uint64_t budget_ns, nwb_json_t *j);

/** The smallest and largest frame number of the run's perfFrame events. Returns 0, or
 * NWB_ERANGE when there are none. */
NWB_API int nwb_tel_report_state_frame_range(const nwb_tel_report_state_t *s, uint64_t *first,
                                             uint64_t *last);

/**
 * Write one JSON object to @p j describing frame @p frame from @p len bytes of decoded stream
 * (the upload that holds it: one or more whole segments): its duration, its CPU scopes per
 * thread (named by the bytes' thread events) with depth and start/end, its GPU samples, memory
 * and frame graph, its counter samples and marks (the first NWB_TEL_FRAME_DETAIL_COUNTERS and
 * NWB_TEL_FRAME_DETAIL_MARKS), and the log lines recorded in it (the first
 * NWB_TEL_FRAME_DETAIL_LOGS); the rest counted. Names are read from the bytes' string tables,
 * then @p names (may be NULL). Returns 0; NWB_ERANGE when the bytes hold no perfFrame of that
 * number, or the decode status when they fail to decode before one is found (nothing written
 * then); -ENOMEM.
 */
NWB_API int nwb_tel_frame_detail_write(const uint8_t *bytes, size_t len, uint64_t frame,
                                       const nwb_namesym_table_t *names, nwb_json_t *j);

/* ---- Stored streams: telemetry.nwbs and telemetry.nwbs.zst -------------------------------- */

#define NWB_TEL_STREAM_FILE     "telemetry.nwbs"      /* segments back to back */
#define NWB_TEL_STREAM_ZST_FILE "telemetry.nwbs.zst"  /* the uploads' zstd frames concatenated */
#define NWB_TEL_ZSTD_FRAME_MAX  (64u * 1024u * 1024u) /* decompressed bytes of one frame */
#define NWB_TEL_ZSTD_WINDOW_LOG 23u                   /* largest window accepted: 8 MiB */
#define NWB_TEL_RAW_CHUNK_MAX   (1u << 30)            /* largest raw segment a reader returns */

typedef enum {
    NWB_TEL_FILE_RAW = 1,  /* starts with the stream magic (or is anything else: the decoder
                            * then says what is wrong) */
    NWB_TEL_FILE_ZSTD = 2, /* starts with a zstd frame or skippable-frame magic */
} nwb_tel_file_format_t;

/**
 * Decompress the one zstd frame in @p in into a nwb_malloc'd buffer (*@p out, returned-owned)
 * of at most @p max bytes (max < SIZE_MAX; the buffer never exceeds max + 1 bytes), frames
 * needing a window above 2^@p wlog refused; the frame's claimed content size is never trusted.
 * Returns 0, or with *@p out NULL and a static reason in *@p why: NWB_ETOOBIG (a cap),
 * NWB_ECOMPRESS (corrupt, truncated, or data after the frame), NWB_ECONFIG (@p wlog out of
 * zstd's range), -ENOMEM. Any thread.
 */
NWB_API int nwb_tel_unzstd(const uint8_t *in, size_t in_len, size_t max, unsigned wlog,
                           uint8_t **out, size_t *out_len, const char **why);

/* Reads a stored stream one piece at a time in bounded memory: a raw file one whole segment at
 * a time, a .zst file one zstd frame at a time (each frame's output capped at
 * NWB_TEL_ZSTD_FRAME_MAX, window log NWB_TEL_ZSTD_WINDOW_LOG). The format is detected by the
 * magic, never by the name. */
typedef struct nwb_tel_file_reader nwb_tel_file_reader_t;

/** Open @p path (a regular file, else NWB_ENOTREG; negated errno). 0 or an error. */
NWB_API int nwb_tel_file_reader_open(const char *path, nwb_tel_file_reader_t **out);

/**
 * The next piece: @p *data (valid until the next call) and @p *len. Returns 1 for a piece, 0
 * at the end, or an error: NWB_ECOMPRESS (corrupt or truncated zstd frame), NWB_ETOOBIG (a
 * frame above the cap or a window above 2^23), a negated errno; see _error_offset/_reason.
 * A raw file whose structure breaks returns the rest as pieces the decoder will reject at the
 * same offset a whole-file decode does.
 */
NWB_API int nwb_tel_file_reader_next(nwb_tel_file_reader_t *r, const uint8_t **data, size_t *len);

NWB_API nwb_tel_file_format_t nwb_tel_file_reader_format(const nwb_tel_file_reader_t *r);
/** File offset where the last piece (or the failure's zstd frame) starts. */
NWB_API uint64_t nwb_tel_file_reader_offset(const nwb_tel_file_reader_t *r);
/** Static description of the last failure, or NULL. */
NWB_API const char *nwb_tel_file_reader_reason(const nwb_tel_file_reader_t *r);
/** Zstd frames (or raw segments) returned so far. */
NWB_API uint64_t nwb_tel_file_reader_pieces(const nwb_tel_file_reader_t *r);
/** Close and free @p r. NULL is a no-op. */
NWB_API void nwb_tel_file_reader_destroy(nwb_tel_file_reader_t *r);

/**
 * Feed everything @p r (borrowed, just opened) has left into @p s, one piece at a time (bounded
 * memory). A piece that cannot be read stops @p s with that error (nwb_tel_report_state_fail();
 * the reader's _offset says where). Returns 0 when the whole file was read (whatever it
 * decoded to), the reader's error, or -ENOMEM.
 */
NWB_API int nwb_tel_report_state_feed_reader(nwb_tel_report_state_t *s, nwb_tel_file_reader_t *r);

/* ---- Dump and Chrome trace ---------------------------------------------------------------- */

/**
 * Write one line per segment and per event to @p out ("<offset> <kind> v<version> ..."), then
 * a final status line. Names are read from the stream's string tables, then @p names (may be
 * NULL). Returns the decode status (0 when the whole input decoded).
 */
NWB_API int nwb_tel_dump(const uint8_t *stream, size_t len, const nwb_namesym_table_t *names,
                         FILE *out);

/**
 * Write a Chrome trace-event JSON document ({"traceEvents": [...]}) to @p out: one named track
 * per thread ("M" thread_name and thread_sort_index events, at most NWB_TEL_REPORT_THREADS_MAX),
 * CPU scopes and frames as complete ("X") events on their tracks, text logs, marks and
 * diagnostics as instant ("i") events, counters, memory and GPU windows as counter ("C")
 * events. Names are read from the stream's string tables, then @p names (may be NULL).
 * Timestamps are microseconds since the earliest event. Streams; the events before a decode
 * failure are exported. Returns 0 when the document was written (even if the input failed to
 * decode: see @p res), -ENOMEM (nothing written) or a write error.
 */
NWB_API int nwb_tel_chrome_write(const uint8_t *stream, size_t len,
                                 const nwb_namesym_table_t *names, FILE *out,
                                 nwb_tel_decode_result_t *res);

/* ---- Synthetic streams -------------------------------------------------------------------- */

typedef struct nwb_tel_synth_config {
    uint64_t seed;
    uint32_t frames;
    uint32_t scopes_per_frame;  /* CPU scopes per frame across the threads (>= 4) */
    uint32_t gpu_scopes;        /* distinct GPU scopes, each published with a delay */
    uint32_t arenas;            /* growing arenas, plus one heapBacking and one explicit scope */
    uint32_t logs_per_frame;    /* text lines per frame (with name tokens) */
    uint32_t frames_per_upload; /* frames per segment; 0 = one segment */
    uint32_t frame_graph_every; /* a frame-graph frame every N frames; 0 = none */
    uint32_t diagnostics_every; /* a diagnostic every N frames; 0 = none */
    int unknown_kinds;          /* also write events of kinds a v1 reader does not know */
    int profiler;               /* format 1.1: an audio thread, thread events, string tables,
                                 * counters and marks (0: a format 1.0 stream, two threads) */
} nwb_tel_synth_config_t;

#define NWB_TEL_SYNTH_CONFIG_INIT                                                                  \
    {                                                                                              \
        1, 120, 24, 4, 3, 1, 60, 30, 50, 0, 1                                                      \
    }

/**
 * Append a deterministic, realistic stream to @p out (a 60 Hz frame loop on three named threads
 * with nested scopes, delayed out-of-order GPU publication, growing arenas, log lines with name
 * tokens, frame graphs, diagnostics, and with cfg->profiler the format-1.1 thread, string-table,
 * counter and mark events). The same config always gives the same bytes. When
 * @p names is not NULL every name the stream uses is added to it (to write a .namesym).
 * Returns 0 or a buffer error.
 */
NWB_API int nwb_tel_synth(const nwb_tel_synth_config_t *cfg, nwb_buf_t *out,
                          nwb_namesym_builder_t *names);

/**
 * The same stream as nwb_tel_synth(), handed to @p segment one upload (one whole segment) at a
 * time as it is made: @p data is borrowed for the call. Memory stays bounded by one upload,
 * so any length of run can be written. A non-zero return from @p segment stops and is
 * returned. Returns 0 or the first error.
 */
NWB_API int nwb_tel_synth_run(const nwb_tel_synth_config_t *cfg,
                              int (*segment)(void *ctx, const uint8_t *data, size_t len), void *ctx,
                              nwb_namesym_builder_t *names);

#ifdef __cplusplus
}
#endif

#endif /* NWB_TELEMETRY_REPORT_H */
