/* SPDX-License-Identifier: MIT */
/*
 * nwb/telemetry_report.h - what is made from a decoded stream: the run report
 * (telemetry.json, docs/telemetry-report.md), the upload outcome log the ingest keeps beside the
 * stream, the one-line-per-event dump, the Chrome trace export, and the synthetic stream
 * generator used by tests and benchmarks.
 *
 * Everything here runs on the caller's thread and allocates only through nwb_malloc.
 */
#ifndef NWB_TELEMETRY_REPORT_H
#define NWB_TELEMETRY_REPORT_H

#include <stdio.h>

#include "nwb/namesym.h"
#include "nwb/telemetry_format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Report bounds ------------------------------------------------------------------------ */

#define NWB_TEL_REPORT_SCHEMA       "nwb-telemetry-report/1"
#define NWB_TEL_REPORT_JSON_MAX     (64u * 1024u * 1024u) /* default cap of the JSON text */
#define NWB_TEL_REPORT_FRAMES_MAX   (1u << 20)            /* frame times kept for percentiles */
#define NWB_TEL_REPORT_SCOPES_MAX   4096u      /* distinct (name, cpu|gpu) scopes aggregated */
#define NWB_TEL_REPORT_MEMORY_MAX   4096u      /* distinct (name, source) memory owners */
#define NWB_TEL_REPORT_PASSES_MAX   4096u      /* distinct frame-graph pass names */
#define NWB_TEL_REPORT_QUEUES_MAX   256u       /* distinct frame-graph queue names */
#define NWB_TEL_REPORT_SEGMENTS_MAX (1u << 20) /* segments whose seq is tracked for duplicates */
#define NWB_TEL_REPORT_WORST_FRAMES 10u
#define NWB_TEL_REPORT_TOP_SCOPES   5u  /* per worst frame */
#define NWB_TEL_REPORT_FRAME_LOGS   8u  /* log lines listed per worst frame */
#define NWB_TEL_REPORT_DIAGNOSTICS  64u /* diagnostics listed; the rest are counted */
#define NWB_TEL_REPORT_REJECTIONS   16u /* most recent rejected uploads listed */

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
    uint64_t rejected;
    uint64_t bad_lines; /* lines that did not parse (ignored) */
    unsigned recent_count;
    nwb_tel_rejection_t recent[NWB_TEL_REPORT_REJECTIONS]; /* oldest first */
} nwb_tel_ingest_summary_t;

/**
 * Append one outcome line ("accepted", "duplicate" or "rejected") to the log at @p path
 * (created 0644 when missing; O_APPEND, one write). @p reason may be NULL. Returns 0 or a
 * negated errno.
 */
NWB_API int nwb_tel_ingest_log_append(const char *path, const char *outcome, uint64_t seq,
                                      int status, uint64_t offset, uint64_t bytes,
                                      const char *reason);

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
 * negative code (-ENOMEM, NWB_ETOOBIG for a report above json_max).
 */
NWB_API int nwb_tel_report_build(const uint8_t *stream, size_t len,
                                 const nwb_tel_report_options_t *opt, nwb_buf_t *out,
                                 nwb_tel_decode_result_t *res);

/* ---- Dump and Chrome trace ---------------------------------------------------------------- */

/**
 * Write one line per segment and per event to @p out ("<offset> <kind> v<version> ..."), then
 * a final status line. Returns the decode status (0 when the whole input decoded).
 */
NWB_API int nwb_tel_dump(const uint8_t *stream, size_t len, const nwb_namesym_table_t *names,
                         FILE *out);

/**
 * Write a Chrome trace-event JSON document ({"traceEvents": [...]}) to @p out: CPU scopes and
 * frames as complete ("X") events per thread, text logs and diagnostics as instant ("i")
 * events, memory and GPU windows as counters ("C"). Timestamps are microseconds since the
 * earliest event. Streams; the events before a decode failure are exported. Returns 0 when the
 * document was written (even if the input failed to decode: see @p res), or a write error.
 */
NWB_API int nwb_tel_chrome_write(const uint8_t *stream, size_t len,
                                 const nwb_namesym_table_t *names, FILE *out,
                                 nwb_tel_decode_result_t *res);

/* ---- Synthetic streams -------------------------------------------------------------------- */

typedef struct nwb_tel_synth_config {
    uint64_t seed;
    uint32_t frames;
    uint32_t scopes_per_frame;  /* CPU scopes per frame across both threads (>= 4) */
    uint32_t gpu_scopes;        /* distinct GPU scopes, each published with a delay */
    uint32_t arenas;            /* growing arenas, plus one heapBacking and one explicit scope */
    uint32_t logs_per_frame;    /* text lines per frame (with name tokens) */
    uint32_t frames_per_upload; /* frames per segment; 0 = one segment */
    uint32_t frame_graph_every; /* a frame-graph frame every N frames; 0 = none */
    uint32_t diagnostics_every; /* a diagnostic every N frames; 0 = none */
    int unknown_kinds;          /* also write events of kinds a v1 reader does not know */
} nwb_tel_synth_config_t;

#define NWB_TEL_SYNTH_CONFIG_INIT                                                                  \
    {                                                                                              \
        1, 120, 24, 4, 3, 1, 60, 30, 50, 0                                                         \
    }

/**
 * Append a deterministic, realistic stream to @p out (a 60 Hz frame loop on two threads with
 * nested scopes, delayed out-of-order GPU publication, growing arenas, log lines with name
 * tokens, frame graphs and diagnostics). The same config always gives the same bytes. When
 * @p names is not NULL every name the stream uses is added to it (to write a .namesym).
 * Returns 0 or a buffer error.
 */
NWB_API int nwb_tel_synth(const nwb_tel_synth_config_t *cfg, nwb_buf_t *out,
                          nwb_namesym_builder_t *names);

#ifdef __cplusplus
}
#endif

#endif /* NWB_TELEMETRY_REPORT_H */
