/* SPDX-License-Identifier: MIT */
/*
 * nwb/telemetry_format.h - the telemetry stream format (version 1, format revision 1.1 with the
 * thread, string-table, counter and mark kinds; docs/telemetry-format.md):
 * constants and bounds, the event kinds, the encoders that write events into a capped byte
 * buffer, and the strict decoder that validates a stream and hands out zero-copy views.
 *
 * Everything here is pure computation on caller memory: no threads, no I/O, no global state.
 */
#ifndef NWB_TELEMETRY_FORMAT_H
#define NWB_TELEMETRY_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/buf.h"
#include "nwb/byte_order.h"
#include "nwb/common.h"
#include "nwb/name.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Stream header ------------------------------------------------------------------------ */

#define NWB_TEL_MAGIC        "NWBTLM\r\n"
#define NWB_TEL_MAGIC_LEN    8u
#define NWB_TEL_VERSION      1u
#define NWB_TEL_HEADER_FIXED 72u  /* bytes before the header strings */
#define NWB_TEL_PROGRAM_MAX  128u /* header string bounds */
#define NWB_TEL_RUN_MAX      64u
#define NWB_TEL_BUILD_ID_MAX 256u
/* The first two magic bytes read as a little-endian event kind. That kind is never assigned:
 * an event boundary that starts with it starts the next segment's header. */
#define NWB_TEL_KIND_SEGMENT 0x574eu

/* ---- Events ------------------------------------------------------------------------------- */

#define NWB_TEL_EVENT_HEADER 24u
#define NWB_TEL_PAYLOAD_MAX  (16u * 1024u * 1024u) /* one event's payload */

/*
 * The core kinds: contiguous from 1, NWB_TEL_KIND_LAST is the last. The report's "events" map
 * is generated from this table. Adding a kind: append a row, bump NWB_TEL_KIND_LAST, document
 * it in docs/telemetry-format.md and docs/telemetry-report.md (a test checks both).
 * XX(enumerator suffix, value, report key)
 */
#define NWB_TEL_KIND_MAP(XX)                                                                       \
    XX(TEXT_LOG, 1, "textLog")                                                                     \
    XX(DIAGNOSTIC, 2, "diagnostic")                                                                \
    XX(FRAME_GRAPH, 3, "frameGraphFrame")                                                          \
    XX(PERF_FRAME, 4, "perfFrame")                                                                 \
    XX(MEMORY_FRAME, 5, "memoryFrame")                                                             \
    XX(THREAD, 6, "thread")                                                                        \
    XX(STRING_TABLE, 7, "stringTable")                                                             \
    XX(COUNTER_FRAME, 8, "counterFrame")                                                           \
    XX(MARK, 9, "mark")

typedef enum {
    NWB_TEL_KIND_INVALID = 0,
#define XX(sym, val, key) NWB_TEL_KIND_##sym = (val),
    NWB_TEL_KIND_MAP(XX)
#undef XX
} nwb_tel_kind_t;

#define NWB_TEL_KIND_LAST  NWB_TEL_KIND_MARK
#define NWB_TEL_KIND_COUNT 9u

/** The report key of core kind @p kind ("textLog", ...), or NULL for any other value. */
NWB_API const char *nwb_tel_kind_name(unsigned kind);

/* ---- Payload bounds (version 1) ----------------------------------------------------------- */

#define NWB_TEL_TEXT_HEADER     8u
#define NWB_TEL_TEXT_MAX        4096u /* message bytes */
#define NWB_TEL_DIAG_HEADER     16u
#define NWB_TEL_DIAG_PAIRS_MAX  64u
#define NWB_TEL_DIAG_KEY_MAX    256u
#define NWB_TEL_DIAG_VALUE_MAX  1024u
#define NWB_TEL_FG_HEADER       32u
#define NWB_TEL_FG_QUEUE_SIZE   16u
#define NWB_TEL_FG_PACKET_SIZE  16u
#define NWB_TEL_FG_PASS_SIZE    24u
#define NWB_TEL_FG_EDGE_SIZE    8u
#define NWB_TEL_FG_QUEUES_MAX   64u
#define NWB_TEL_FG_PACKETS_MAX  4096u
#define NWB_TEL_FG_PASSES_MAX   16384u
#define NWB_TEL_FG_EDGES_MAX    65536u
#define NWB_TEL_PERF_HEADER     24u
#define NWB_TEL_CPU_SCOPE_SIZE  32u
#define NWB_TEL_GPU_SCOPE_SIZE  80u
#define NWB_TEL_CPU_SCOPES_MAX  65536u
#define NWB_TEL_GPU_SCOPES_MAX  4096u
#define NWB_TEL_DEPTH_MAX       255u
#define NWB_TEL_MEM_VERSION     1u
#define NWB_TEL_MEM_HEADER      192u
#define NWB_TEL_MEM_RECORD_SIZE 56u
#define NWB_TEL_MEM_RECORDS_MAX 4096u
/* Format 1.1 (issue 15): threads, string tables, counters, marks. */
#define NWB_TEL_THREAD_HEADER   32u
#define NWB_TEL_THREAD_NAME_MAX 64u /* bytes of a thread's name */
#define NWB_TEL_STRINGS_HEADER  8u
#define NWB_TEL_STRING_ENTRY    10u   /* u64 name + u16 length, then the bytes */
#define NWB_TEL_STRINGS_MAX     1024u /* entries in one string-table event */
#define NWB_TEL_STRING_MAX      256u  /* bytes of one string */
#define NWB_TEL_COUNTER_HEADER  8u
#define NWB_TEL_COUNTER_SIZE    32u
#define NWB_TEL_COUNTERS_MAX    16384u /* samples in one counter frame */
#define NWB_TEL_MARK_HEADER     8u
#define NWB_TEL_MARK_MAX        256u /* bytes of a mark's text */

typedef enum {
    NWB_TEL_SEVERITY_INFO = 0,
    NWB_TEL_SEVERITY_WARNING = 1,
    NWB_TEL_SEVERITY_ERROR = 2,
    NWB_TEL_SEVERITY_FATAL = 3,
} nwb_tel_severity_t;

typedef enum {
    NWB_TEL_QUEUE_GRAPHICS = 0,
    NWB_TEL_QUEUE_COMPUTE = 1,
    NWB_TEL_QUEUE_TRANSFER = 2,
    NWB_TEL_QUEUE_OTHER = 3,
} nwb_tel_queue_type_t;

typedef enum {
    NWB_TEL_MEM_ARENA = 0,
    NWB_TEL_MEM_HEAP_BACKING = 1,
    NWB_TEL_MEM_EXPLICIT_SCOPE = 2,
} nwb_tel_mem_source_kind_t;

typedef enum {
    NWB_TEL_PEAK_LARGEST_ARENA = 0,
    NWB_TEL_PEAK_SAMPLED_HEAP = 1,
    NWB_TEL_PEAK_SCOPE = 2,
} nwb_tel_peak_basis_t;

/** Report spellings: "graphics", "arena", "heapBacking", "largestArena", ... ("?" if unknown). */
NWB_API const char *nwb_tel_queue_type_name(unsigned t);
NWB_API const char *nwb_tel_mem_source_name(unsigned s);
NWB_API const char *nwb_tel_peak_basis_name(unsigned b);
NWB_API const char *nwb_tel_severity_name(unsigned s);

/* ---- Plain records (encoder input, accessor output) ---------------------------------------- */

typedef struct nwb_tel_header {
    uint16_t version;
    uint16_t header_size;
    uint64_t seq;             /* upload sequence number (the ingest stamps X-NWB-Seq here) */
    uint64_t start_wall_ns;   /* CLOCK_REALTIME when the recorder started */
    uint64_t start_mono_ns;   /* CLOCK_MONOTONIC then; event timestamps use this clock */
    uint64_t dropped_events;  /* cumulative since the recorder started */
    uint64_t dropped_scopes;  /* cumulative: scopes, passes, records that did not fit */
    uint64_t dropped_uploads; /* cumulative: uploads the sink refused */
    const char *program;      /* borrowed, not NUL-terminated */
    const char *run;
    const char *build_id;
    uint16_t program_len;
    uint16_t run_len;
    uint16_t build_id_len;
} nwb_tel_header_t;

typedef struct nwb_tel_kv {
    const char *key; /* borrowed, not NUL-terminated */
    const char *value;
    uint16_t key_len;
    uint16_t value_len;
} nwb_tel_kv_t;

typedef struct nwb_tel_fg_counters {
    uint32_t emitted_waits;       /* timeline waits emitted */
    uint32_t same_queue_elisions; /* waits elided because producer and consumer share a queue */
    uint32_t duplicate_merges;    /* waits merged into an existing one */
    uint32_t inherited_elisions;  /* waits covered by a prior accepted wait */
} nwb_tel_fg_counters_t;

typedef struct nwb_tel_fg_queue {
    nwb_name_t name;
    uint8_t type; /* nwb_tel_queue_type_t */
} nwb_tel_fg_queue_t;

typedef struct nwb_tel_fg_packet {
    uint32_t queue; /* index into the frame's queues */
    uint32_t waits; /* accepted submission waits */
    uint32_t signals;
} nwb_tel_fg_packet_t;

typedef struct nwb_tel_fg_pass {
    nwb_name_t name;
    uint32_t packet; /* index into the frame's packets */
    uint32_t barriers;
} nwb_tel_fg_pass_t;

typedef struct nwb_tel_fg_edge {
    uint32_t from; /* pass indices, from != to */
    uint32_t to;
} nwb_tel_fg_edge_t;

typedef struct nwb_tel_cpu_scope {
    nwb_name_t name;
    uint64_t start_ns; /* monotonic */
    uint64_t end_ns;   /* >= start_ns */
    uint32_t thread;
    uint16_t depth; /* <= NWB_TEL_DEPTH_MAX */
} nwb_tel_cpu_scope_t;

/* One GPU scope's publication window: the samples that arrived since the previous one. */
typedef struct nwb_tel_gpu_scope {
    nwb_name_t name;
    uint64_t source_frame_min; /* inclusive bounds of the window's source frames */
    uint64_t source_frame_max;
    uint64_t gpu_samples;       /* cumulative samples, >= window_samples */
    uint32_t window_samples;    /* >= 1 */
    uint32_t published_windows; /* cumulative windows published for this scope, >= 1 */
    double window_avg_ms;       /* all finite and >= 0; min <= max */
    double window_min_ms;
    double window_max_ms;
    double total_ms;      /* cumulative */
    double sample_avg_ms; /* total_ms / gpu_samples */
} nwb_tel_gpu_scope_t;

typedef struct nwb_tel_mem_record {
    nwb_name_t name;
    uint8_t source;     /* nwb_tel_mem_source_kind_t */
    uint8_t peak_basis; /* nwb_tel_peak_basis_t */
    uint64_t reserved_bytes;
    uint64_t used_bytes;
    uint64_t peak_bytes;  /* >= used_bytes */
    uint64_t allocations; /* cumulative */
    uint64_t frees;       /* cumulative, <= allocations */
} nwb_tel_mem_record_t;

/* One recording thread, as the `thread` event carries it (counts cumulative since the
 * thread's first record). */
typedef struct nwb_tel_thread_info {
    uint32_t thread;    /* kernel thread id, as in log lines and CPU scopes */
    uint16_t name_len;  /* 0: unnamed; at most NWB_TEL_THREAD_NAME_MAX */
    const char *name;   /* borrowed, not NUL-terminated, any bytes */
    uint64_t records;   /* scopes, counter samples and marks the thread recorded */
    uint64_t dropped;   /* of which lost: its ring was full */
    uint64_t malformed; /* ends without a begin, scopes open at frame end, nesting too deep */
} nwb_tel_thread_info_t;

/* One string-table entry: @p name is nwb_name_hash(str, len) (the decoder checks it). */
typedef struct nwb_tel_string {
    nwb_name_t name;
    const char *str; /* borrowed, not NUL-terminated */
    uint16_t len;    /* 1 .. NWB_TEL_STRING_MAX */
} nwb_tel_string_t;

/* One counter sample (NWB_PROFILE_COUNTER). */
typedef struct nwb_tel_counter {
    nwb_name_t name;
    uint64_t ts_ns; /* monotonic */
    double value;   /* finite */
    uint32_t thread;
} nwb_tel_counter_t;

/* ---- Decoded views (borrow the input bytes) ----------------------------------------------- */

typedef nwb_tel_thread_info_t nwb_tel_thread_view_t;

typedef struct nwb_tel_strings_view {
    uint32_t count;
    const uint8_t *entries; /* walk with nwb_tel_string_next() */
} nwb_tel_strings_view_t;

typedef struct nwb_tel_counter_view {
    uint32_t count;
    const uint8_t *records; /* read with nwb_tel_counter_at() */
} nwb_tel_counter_view_t;

typedef struct nwb_tel_mark_view {
    uint32_t thread;
    uint16_t len;     /* 1 .. NWB_TEL_MARK_MAX */
    const char *text; /* not NUL-terminated, any bytes */
} nwb_tel_mark_view_t;

typedef struct nwb_tel_text_view {
    uint8_t level; /* nwb_log_level_t */
    uint16_t len;
    uint32_t thread;
    const char *msg; /* not NUL-terminated, any bytes */
} nwb_tel_text_view_t;

typedef struct nwb_tel_diag_view {
    nwb_name_t code;
    uint8_t severity;
    uint16_t pair_count;
    const uint8_t *pairs; /* pair_count encoded pairs; walk with nwb_tel_diag_pair_next() */
} nwb_tel_diag_view_t;

typedef struct nwb_tel_fg_view {
    uint32_t queue_count, packet_count, pass_count, edge_count;
    nwb_tel_fg_counters_t counters;
    const uint8_t *queues, *packets, *passes, *edges;
} nwb_tel_fg_view_t;

typedef struct nwb_tel_perf_view {
    uint64_t frame_start_ns;
    uint64_t frame_duration_ns;
    uint32_t cpu_count;
    uint32_t gpu_count;
    const uint8_t *cpu;
    const uint8_t *gpu;
} nwb_tel_perf_view_t;

typedef struct nwb_tel_mem_view {
    uint64_t arena_reserved_bytes; /* sums over the arena records (checked) */
    uint64_t arena_used_bytes;
    uint64_t arena_peak_bytes; /* largest arena peak (checked) */
    uint64_t heap_reserved_bytes;
    uint64_t heap_used_bytes;
    uint64_t heap_peak_bytes;
    uint64_t scope_used_bytes;
    uint64_t allocations; /* over the arena records */
    uint64_t frees;
    uint64_t process_rss_bytes; /* 0 = unknown */
    uint64_t sample_time_ns;
    uint32_t arena_count, heap_count, scope_count;
    uint32_t count;
    const uint8_t *records;
} nwb_tel_mem_view_t;

typedef struct nwb_tel_event {
    uint16_t kind;
    uint16_t version; /* payload version */
    uint32_t payload_size;
    uint64_t timestamp_ns;
    uint64_t frame;
    const uint8_t *payload;
    int known; /* 1 for a core kind (the union is filled), 0 for an unknown kind (skipped) */
    union {
        nwb_tel_text_view_t text;
        nwb_tel_diag_view_t diag;
        nwb_tel_fg_view_t fg;
        nwb_tel_perf_view_t perf;
        nwb_tel_mem_view_t mem;
        nwb_tel_thread_view_t thread;
        nwb_tel_strings_view_t strings;
        nwb_tel_counter_view_t counters;
        nwb_tel_mark_view_t mark;
    } u;
} nwb_tel_event_t;

/* Element accessors: @p i must be below the view's count (the decoder validated the bytes). */
static inline void nwb_tel_cpu_scope_at(const nwb_tel_perf_view_t *v, uint32_t i,
                                        nwb_tel_cpu_scope_t *out)
{
    const uint8_t *p = v->cpu + (size_t)i * NWB_TEL_CPU_SCOPE_SIZE;

    out->name = nwb_le64_load(p);
    out->start_ns = nwb_le64_load(p + 8);
    out->end_ns = nwb_le64_load(p + 16);
    out->thread = nwb_le32_load(p + 24);
    out->depth = nwb_le16_load(p + 28);
}

NWB_API void nwb_tel_gpu_scope_at(const nwb_tel_perf_view_t *v, uint32_t i,
                                  nwb_tel_gpu_scope_t *out);
NWB_API void nwb_tel_fg_queue_at(const nwb_tel_fg_view_t *v, uint32_t i, nwb_tel_fg_queue_t *out);
NWB_API void nwb_tel_fg_packet_at(const nwb_tel_fg_view_t *v, uint32_t i, nwb_tel_fg_packet_t *out);
NWB_API void nwb_tel_fg_pass_at(const nwb_tel_fg_view_t *v, uint32_t i, nwb_tel_fg_pass_t *out);
NWB_API void nwb_tel_fg_edge_at(const nwb_tel_fg_view_t *v, uint32_t i, nwb_tel_fg_edge_t *out);
NWB_API void nwb_tel_mem_record_at(const nwb_tel_mem_view_t *v, uint32_t i,
                                   nwb_tel_mem_record_t *out);
NWB_API void nwb_tel_counter_at(const nwb_tel_counter_view_t *v, uint32_t i,
                                nwb_tel_counter_t *out);
/**
 * Walk a string table: start with @p *pos = 0; each call fills @p out and advances. Returns 1
 * while an entry was produced, 0 after the last.
 */
NWB_API int nwb_tel_string_next(const nwb_tel_strings_view_t *v, size_t *pos,
                                nwb_tel_string_t *out);
/**
 * Walk a diagnostic's pairs: start with @p *pos = 0; each call fills @p kv and advances.
 * Returns 1 while a pair was produced, 0 after the last.
 */
NWB_API int nwb_tel_diag_pair_next(const nwb_tel_diag_view_t *v, size_t *pos, nwb_tel_kv_t *kv);

/* ---- Encoders ----------------------------------------------------------------------------- */

/*
 * Each encoder appends one complete, valid structure to @p b, or nothing: on failure @p b->len
 * is unchanged. They check their input against the same rules the decoder enforces and return
 * NWB_EPROTO / NWB_ERANGE / NWB_ETOOBIG for input the decoder would reject, or a buffer error.
 */

/** The segment header. Fields version and header_size are ignored (computed). */
NWB_API int nwb_tel_encode_header(nwb_buf_t *b, const nwb_tel_header_t *h);

/** Size of the header nwb_tel_encode_header() writes for these string lengths. */
NWB_API size_t nwb_tel_header_size(size_t program_len, size_t run_len, size_t build_id_len);

NWB_API int nwb_tel_encode_text(nwb_buf_t *b, uint64_t ts, uint64_t frame, unsigned level,
                                uint32_t thread, const char *msg, size_t len);
NWB_API int nwb_tel_encode_diag(nwb_buf_t *b, uint64_t ts, uint64_t frame, nwb_name_t code,
                                unsigned severity, const nwb_tel_kv_t *pairs, size_t n);

typedef struct nwb_tel_fg_frame {
    const nwb_tel_fg_queue_t *queues;
    const nwb_tel_fg_packet_t *packets;
    const nwb_tel_fg_pass_t *passes;
    const nwb_tel_fg_edge_t *edges;
    uint32_t queue_count, packet_count, pass_count, edge_count;
    nwb_tel_fg_counters_t counters;
} nwb_tel_fg_frame_t;

NWB_API int nwb_tel_encode_fg(nwb_buf_t *b, uint64_t ts, uint64_t frame,
                              const nwb_tel_fg_frame_t *fg);

typedef struct nwb_tel_perf_frame {
    uint64_t frame_start_ns;
    uint64_t frame_duration_ns;
    const nwb_tel_cpu_scope_t *cpu;
    const nwb_tel_gpu_scope_t *gpu;
    uint32_t cpu_count;
    uint32_t gpu_count;
} nwb_tel_perf_frame_t;

NWB_API int nwb_tel_encode_perf(nwb_buf_t *b, uint64_t ts, uint64_t frame,
                                const nwb_tel_perf_frame_t *pf);

NWB_API int nwb_tel_encode_thread(nwb_buf_t *b, uint64_t ts, uint64_t frame,
                                  const nwb_tel_thread_info_t *t);
/** @p n (1 .. NWB_TEL_STRINGS_MAX) entries; each name must be the hash of its string. */
NWB_API int nwb_tel_encode_strings(nwb_buf_t *b, uint64_t ts, uint64_t frame,
                                   const nwb_tel_string_t *s, uint32_t n);
/** @p n (1 .. NWB_TEL_COUNTERS_MAX) samples with finite values. */
NWB_API int nwb_tel_encode_counters(nwb_buf_t *b, uint64_t ts, uint64_t frame,
                                    const nwb_tel_counter_t *c, uint32_t n);
/** A mark at @p ts: @p len is 1 .. NWB_TEL_MARK_MAX bytes. */
NWB_API int nwb_tel_encode_mark(nwb_buf_t *b, uint64_t ts, uint64_t frame, uint32_t thread,
                                const char *text, size_t len);

/** Memory frame version 1; the header's sums and counts are computed from @p recs. */
NWB_API int nwb_tel_encode_memory(nwb_buf_t *b, uint64_t ts, uint64_t frame,
                                  const nwb_tel_mem_record_t *recs, uint32_t n,
                                  uint64_t process_rss_bytes, uint64_t sample_time_ns);

/**
 * Any event, payload as given (for unknown kinds and tests). A core kind's payload is
 * validated like the decoder does; kinds 0 and NWB_TEL_KIND_SEGMENT are refused. @p payload
 * is borrowed and must not point into @p b (the buffer may move while it grows).
 */
NWB_API int nwb_tel_encode_raw(nwb_buf_t *b, unsigned kind, unsigned version, uint64_t ts,
                               uint64_t frame, const void *payload, size_t len);

/* ---- Strict decoder ----------------------------------------------------------------------- */

/*
 * Statuses: 0; NWB_ETRUNCATED (input ends inside a header or event: the offset is where that
 * structure starts); NWB_EMAGIC; NWB_EVERSION (stream version 0, payload version 0, memory
 * payload version other than 1); NWB_ETOOBIG (a size or count above its bound); NWB_ERANGE (an
 * index pointing outside its table); NWB_EPROTO (any other inconsistency). Every failure comes
 * with the offset of the first bad byte and a static reason. All length arithmetic is checked
 * before it is used; the decoder never allocates.
 */

/** Decode a segment header at @p data. On success sets @p *consumed (the header size). */
NWB_API int nwb_tel_header_decode(const uint8_t *data, size_t len, nwb_tel_header_t *h,
                                  size_t *consumed, size_t *bad_offset, const char **reason);

/**
 * Decode and validate one event at @p data (@p len bytes available). On success fills @p ev
 * (views borrow @p data) and @p *consumed; an unknown kind is skipped by its length with
 * ev->known = 0. On failure @p *bad_offset is relative to @p data. @p reason may be NULL.
 */
NWB_API int nwb_tel_event_decode(const uint8_t *data, size_t len, nwb_tel_event_t *ev,
                                 size_t *consumed, size_t *bad_offset, const char **reason);

/** Called by nwb_tel_stream_decode(); both members may be NULL. */
typedef struct nwb_tel_visitor {
    /* A segment header at @p offset. Return 0 to visit its events, 1 to skip them (they are
     * still validated), a negative code to stop (it becomes the status). */
    int (*segment)(void *ctx, const nwb_tel_header_t *h, size_t offset);
    /* One valid event at @p offset. Return 0, or a negative code to stop. */
    int (*event)(void *ctx, const nwb_tel_event_t *ev, size_t offset);
} nwb_tel_visitor_t;

#define NWB_TEL_DECODE_SINGLE_SEGMENT 0x1u /* an upload: exactly one segment, non-empty input */

typedef struct nwb_tel_decode_result {
    int status;          /* 0 or the first failure */
    size_t consumed;     /* bytes of complete, valid structures before the failure */
    size_t error_offset; /* first bad byte (valid when status != 0) */
    const char *reason;  /* static; NULL on success */
    uint64_t events;     /* valid events, every kind, including skipped segments */
    uint64_t unknown;    /* of which unknown kinds */
    uint32_t segments;
    uint16_t max_version; /* highest segment version seen */
} nwb_tel_decode_result_t;

/**
 * Decode a stream: one or more segments (header + events), back to back. Events before a
 * failure have already been given to @p v. Returns res->status.
 */
NWB_API int nwb_tel_stream_decode(const uint8_t *data, size_t len, unsigned flags,
                                  const nwb_tel_visitor_t *v, void *ctx,
                                  nwb_tel_decode_result_t *res);

#ifdef __cplusplus
}
#endif

#endif /* NWB_TELEMETRY_FORMAT_H */
