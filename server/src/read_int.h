/* SPDX-License-Identifier: MIT */
/*
 * read_int.h - what the read API's endpoints share (GET /v1/runs..., GET /v1/crashes/...,
 * GET /v1/events; docs/protocol.md, "Reading"): the query string parser, the checks that turn
 * an id from a path into a directory under --out, path segments, the bounds of every answer,
 * the log range reader (read_log.c) and the run index (run_index.c). The parsers are pure (no
 * I/O) and bounded: a malformed query or id is an error the caller answers with 400 or 404,
 * never a crash or a path outside --out.
 */
#ifndef NWB_SERVER_READ_INT_H
#define NWB_SERVER_READ_INT_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "nwb/buf.h"
#include "nwb/json.h"
#include "nwb/log_batch.h"
#include "nwb/log_line.h"
#include "nwb/safe_name.h"

/* A query value longer than this is malformed (no query parameter needs more). */
#define NWB__QUERY_VALUE_MAX 256u
/* runs/<program>_<YYYYmmdd-HHMMSS>_<run>: the longest run id (a run directory's name). */
#define NWB__RUN_ID_MAX (NWB_SAFE_NAME_MAX + 1 + 15 + 1 + NWB_SAFE_NAME_MAX + 8)

/* ---- bounds of the answers (docs/protocol.md, "Reading"; docs/operations.md, "Bounds") ---- */

/* GET /v1/runs: runs listed without ?limit=, and the largest ?limit= accepted. */
#define NWB__READ_RUNS_LIMIT_DEFAULT 100u
#define NWB__READ_RUNS_LIMIT_MAX     1000u
/* GET /v1/runs/<id>/log: bytes answered without ?limit=, and the largest ?limit= accepted. */
#define NWB__READ_LOG_LIMIT_DEFAULT (256u * 1024u)
#define NWB__READ_LOG_LIMIT_MAX     (4u * 1024u * 1024u)
/* ?tail=N: the most lines, and the most bytes they may take (fewer lines beyond). */
#define NWB__READ_TAIL_LINES_MAX 10000u
#define NWB__READ_TAIL_BYTES_MAX NWB__READ_LOG_LIMIT_MAX
/* The longest line the server writes to log.txt: the fixed part, the program, the escaped file
 * name and the escaped message decoded up to 4 x NWB_LOG_RECORD_MSG_MAX (NWB__DECODE_MSG_MAX).
 * A longer run of bytes without a newline is never written by the server (a damaged file): the
 * log reader treats it as cut every NWB__LOG_LINE_LONGEST bytes. */
#define NWB__LOG_LINE_LONGEST                                                                      \
    (NWB_LOG_LINE_FIXED_MAX + NWB_SAFE_NAME_MAX + 4u * NWB_LOG_RECORD_FILE_MAX +                   \
     4u * 4u * NWB_LOG_RECORD_MSG_MAX)
/* GET /v1/runs/<id>/telemetry: the largest telemetry.json answered (beyond: 500). */
#define NWB__READ_TELEMETRY_MAX (64u * 1024u * 1024u)
/* GET /v1/crashes/<id>/files/<name>: the largest file answered (beyond: 413). */
#define NWB__READ_FILE_MAX (16u * 1024u * 1024u)
/* GET /v1/crashes/<id>/archive: the largest raw archive answered (beyond: 413); the default
 * --crash-max-archive-bytes, so every archive a default server took is answered. */
#define NWB__READ_ARCHIVE_MAX (64u * 1024u * 1024u)
/* Bytes of read answers being built or written at once (each request reserves its largest
 * answer first, then what it answers, until it is written); beyond: 503 + Retry-After. */
#define NWB__READ_ANSWERS_MAX (256u * 1024u * 1024u)
/* A crash file name: decoded bytes, and folders in it (the file included). */
#define NWB__READ_FILE_NAME_MAX  255u
#define NWB__READ_FILE_DEPTH_MAX 17u

/* ---- request targets (read_query.c) ---- */

/* The parts of a request target: path (no query) and query (after '?', may be empty). */
struct nwb__target {
    const char *path;
    size_t path_len;
    const char *query;
    size_t query_len;
};

/* Split @p url (@p len bytes) at the first '?'. */
void nwb__target_split(const char *url, size_t len, struct nwb__target *t);

/*
 * Percent-decode @p len bytes of @p s into @p out (at most @p cap bytes, not NUL-terminated);
 * @p form: '+' is a space (query values), else a '+' stays (paths). Returns the decoded
 * length, or -1 for a bad or truncated %XX escape, a decoded NUL, or more than @p cap bytes.
 */
long nwb__pct_decode(const char *s, size_t len, int form, char *out, size_t cap);

/* 0 when every value of the query decodes (nwb__query_get() would not fail for any key),
 * else -1. */
int nwb__query_check(const char *query, size_t len);

/*
 * Find @p key in the query string (pairs "k=v" joined by '&'; a key without '=' has an empty
 * value) and percent-decode its value into @p out (NWB__QUERY_VALUE_MAX + 1 bytes, NUL-
 * terminated; *out_len its length). The first occurrence wins. Returns 1 when found, 0 when
 * absent, -1 when the query is malformed: a bad or truncated %XX escape anywhere in the
 * query, a value longer than NWB__QUERY_VALUE_MAX, or a decoded value with a NUL byte.
 */
int nwb__query_get(const char *query, size_t len, const char *key, char *out, size_t *out_len);

/* @p len bytes of plain decimal digits (1..20, no sign, no blank) as a u64 in @p *out: 0, or
 * -1 for anything else or a value above UINT64_MAX. */
int nwb__parse_u64(const char *s, size_t len, uint64_t *out);

/*
 * A decimal parameter in [min, max]: 0 with *present 0 when absent (*out untouched), 0 with
 * *present 1 and *out set, or -1 when malformed (not plain decimal digits, a sign, empty,
 * out of range, or a malformed query).
 */
int nwb__query_u64(const char *query, size_t len, const char *key, uint64_t min, uint64_t max,
                   uint64_t *out, int *present);

/*
 * The @p index-th segment (0-based) of @p path after @p prefix ("/v1/runs/" ...): *seg and
 * *seg_len. Returns 1 when it exists, 0 when the path has fewer segments. A path that does not
 * start with @p prefix has none. Segments are split at '/', never percent-decoded (ids do not
 * need escapes, so an escape makes the id invalid).
 */
int nwb__path_segment(const char *path, size_t len, const char *prefix, unsigned index,
                      const char **seg, size_t *seg_len);

/* Number of segments of @p path after @p prefix (a trailing '/' adds an empty segment). */
unsigned nwb__path_segments(const char *path, size_t len, const char *prefix);

/*
 * 1 when @p id is a well-formed run id: 1..NWB__RUN_ID_MAX bytes of [A-Za-z0-9_.-], not
 * starting with '.', so it names one entry of runs/ and nothing else. Else 0.
 */
int nwb__run_id_valid(const char *id, size_t len);

/* @p n (at most 9) decimal digits at @p s as a number, or -1 when one is not a digit. */
int nwb__decimal_digits(const char *s, unsigned n);

/* A run id's parts: <program>_<YYYYmmdd-HHMMSS>_<run> (pointers into the id). */
struct nwb__run_name {
    const char *program;
    size_t program_len;
    const char *run;
    size_t run_len;
    uint64_t started_ns; /* the time in the name (UTC), in ns since the epoch */
};

/*
 * Split a valid run id (nwb__run_id_valid) into its parts: the first "_<8 digits>-<6 digits>_"
 * holding a real UTC date and time (what nwb_time_compact() writes) separates a non-empty
 * program from a non-empty run, each at most what nwb_safe_name() makes (NWB_SAFE_NAME_MAX;
 * the run NWB_SAFE_NAME_MAX + 7 for the fallback ids). Returns 1, or 0 when @p id is not of
 * that form (it names no run).
 */
int nwb__run_id_parse(const char *id, size_t len, struct nwb__run_name *out);

/*
 * Resolve a run id to its directory: when it is a run id (nwb__run_id_parse) and
 * <out>/runs/<id> is a directory (not a symlink), write "<out_dir>/runs/<id>" into @p dir
 * (@p cap bytes) and return 0; NWB_EPROTO for a malformed id, -ENOENT when no such run exists,
 * NWB_ETOOBIG when @p cap is too small.
 */
int nwb__read_run_dir(const char *out_dir, const char *id, size_t len, char *dir, size_t cap);

/* nwb__read_run_dir() and open the directory (O_DIRECTORY | O_NOFOLLOW): the fd, or the same
 * errors (any other negated errno of open). Any thread. */
int nwb__read_run_dirfd(const char *out_dir, const char *id, size_t len);

/*
 * 1 when @p name (@p len decoded bytes) is a relative file path a crash package can hold and
 * a request may name: 1..NWB__READ_FILE_DEPTH_MAX components split at '/', each 1..
 * NWB__READ_FILE_NAME_MAX bytes, none "." or "..", no byte below 0x20, no 0x7f, no '\\'.
 */
int nwb__read_file_path_valid(const char *name, size_t len);

/* Write @p ns (wall clock, ns since the epoch) as an RFC 3339 UTC time with milliseconds,
 * "2026-12-01T07:34:00.123Z", as a JSON string value. */
void nwb__json_time(nwb_json_t *j, uint64_t ns);

/* ---- log ranges (read_log.c): whole lines of a log of any size, in bounded preads ---- */

/*
 * The whole lines of the first @p size bytes of the log @p fd from @p offset, at most about
 * @p limit bytes, appended to @p out (its cap at least @p limit + NWB__LOG_LINE_LONGEST):
 *   - the answer starts at the first line start at or after @p offset (@p offset itself when
 *     it is 0 or follows a '\n'), written to @p *start;
 *   - it ends after the last '\n' within [*start, *start + limit); when no line ends there (a
 *     line longer than @p limit) the one line is answered whole;
 *   - a last line without '\n' is not a whole line: never answered.
 * Reads at most @p limit + 2 x NWB__LOG_LINE_LONGEST bytes whatever the size. Returns 0 (an
 * empty answer at the end), NWB_ERANGE when @p offset > @p size, or a negated errno.
 */
int nwb__read_log_range(int fd, uint64_t size, uint64_t offset, uint64_t limit, nwb_buf_t *out,
                        uint64_t *start);

/*
 * The last @p lines whole lines of the first @p size bytes of @p fd, or fewer when they would
 * take more than @p max_bytes, appended to @p out (cap at least @p max_bytes); @p *start is
 * where they begin. Reads backwards in bounded blocks: at most about 2 x @p max_bytes +
 * NWB__LOG_LINE_LONGEST bytes. Returns 0 or a negated errno.
 */
int nwb__read_log_tail(int fd, uint64_t size, uint64_t lines, uint64_t max_bytes, nwb_buf_t *out,
                       uint64_t *start);

/* ---- the run index (run_index.c): the catalogue of runs/ behind GET /v1/runs ---- */

/* Runs the index holds; past it the least recently active run that is neither live nor
 * waiting for its counters to be written is dropped (docs/protocol.md, "Reading"). */
#define NWB__RUN_INDEX_MAX 65536u
/* Crash ids the index attributes to runs; later crashes are not counted. */
#define NWB__RUN_INDEX_CRASHES_MAX 65536u
/* The per-run counters file, and how often changed runs' files are written. */
#define NWB__RUN_COUNTERS_FILE      ".nwb-counters"
#define NWB__RUN_COUNTERS_VERSION   1u
#define NWB__RUN_COUNTERS_PERIOD_MS 1000u
#define NWB__RUN_LIVE_CHECK_MS      1000u /* how often live runs are checked for "ended" */
#define NWB__RUN_COUNTERS_READ_MAX  4096u

/* What the index knows of one run. */
struct nwb__run_info {
    char id[NWB__RUN_ID_MAX + 1];
    char program[NWB_SAFE_NAME_MAX + 1];
    char run[NWB_SAFE_NAME_MAX + 8];
    uint64_t started_ns;       /* from the id */
    uint64_t last_activity_ns; /* wall clock: the last batch or upload, else the files' mtime */
    uint64_t active_mono_ns;   /* monotonic time of the last batch or upload in this process;
                                * 0: none */
    uint64_t log_bytes;        /* log.txt: stat at start, then each written job's size */
    uint64_t records;          /* records written */
    uint64_t drops;            /* DROPNOTE records written: the gaps the clients noted */
    uint64_t tok_decoded;      /* #tokens decoded / left as they were in written records */
    uint64_t tok_unknown;
    int telemetry;        /* telemetry.json exists */
    uint64_t tel_uploads; /* telemetry uploads accepted (duplicates not counted) */
    uint64_t crashes;     /* crash packages (extracted or invalid) attributed to it */
};

/* What changed, for nwb__run_index_watch() listeners. */
#define NWB__RUN_CHANGE_NEW       0x1u  /* the run entered the index */
#define NWB__RUN_CHANGE_LOG       0x2u  /* log.txt grew (info->log_bytes) */
#define NWB__RUN_CHANGE_TELEMETRY 0x4u  /* an upload was accepted: the report changed */
#define NWB__RUN_CHANGE_CRASH     0x8u  /* a crash was attributed to it */
#define NWB__RUN_CHANGE_ENDED     0x10u /* it stopped being live (--run-live-s without activity) */
#define NWB__RUN_CHANGE_RESUMED   0x20u /* active again after it was reported ended */

typedef void (*nwb__run_change_fn)(void *ctx, const struct nwb__run_info *info, unsigned what);

struct nwb__run_index;
struct nwb__log_job;
struct nwb__crash_ingest;
struct nwb__crash_settled;

/*
 * Scan <out_dir>/runs once (every run directory's name, then the @p max_runs newest: log.txt's
 * size, the counters file, telemetry.json) and start the index's timer and crash notice
 * handles on @p loop. @p live_s: --run-live-s; @p max_runs: NWB__RUN_INDEX_MAX (tests use
 * less). Loop thread, at start (the scan does file I/O before the server answers anything).
 * Returns 0 with @p *out, or a negative code with a reason in @p errbuf.
 */
int nwb__run_index_create(uv_loop_t *loop, const char *out_dir, unsigned live_s, size_t max_runs,
                          struct nwb__run_index **out, char *errbuf, size_t errlen);

/*
 * Count the crashes @p ci holds now and those it settles from now on (its settle hook is set
 * to the index: the notices travel to the loop thread through an async handle). Loop thread.
 */
void nwb__run_index_attach_crashes(struct nwb__run_index *idx, struct nwb__crash_ingest *ci);

/* A log job came back (loop thread): written ones count (records, drops, #tokens, activity);
 * every one with a run directory updates logBytes. Failed jobs change nothing. */
void nwb__run_index_log_job(struct nwb__run_index *idx, const struct nwb__log_job *job);

/* A telemetry upload to runs/@p dir was accepted (not a duplicate). Loop thread. */
void nwb__run_index_telemetry(struct nwb__run_index *idx, const char *dir, const char *program,
                              const char *run);

/* Crash worker notice (any thread; the index applies it on the loop thread). */
void nwb__run_index_crash_settled(void *idx, const struct nwb__crash_settled *s);

/* Called on the loop thread with a run's directory once its counters file was written. */
typedef void (*nwb__run_saved_fn)(void *ctx, const char *dir);

/* Call @p fn after each run's counters file is written (one listener; NULL stops): the
 * ClickHouse forwarder's nwb_runs row follows it. */
void nwb__run_index_on_saved(struct nwb__run_index *idx, nwb__run_saved_fn fn, void *ctx);

/* Call @p fn on the loop thread after every change (one listener; NULL stops). */
void nwb__run_index_watch(struct nwb__run_index *idx, nwb__run_change_fn fn, void *ctx);

/* Runs held, and the @p i-th newest (by the time in the id, then the id), 0-based. */
size_t nwb__run_index_count(const struct nwb__run_index *idx);
const struct nwb__run_info *nwb__run_index_newest(const struct nwb__run_index *idx, size_t i);

/* The run @p id, or NULL when the index does not hold it. */
const struct nwb__run_info *nwb__run_index_find(const struct nwb__run_index *idx, const char *id,
                                                size_t len);

/* 1 when @p r had a batch or upload within --run-live-s seconds (monotonic clock). */
int nwb__run_index_live(const struct nwb__run_index *idx, const struct nwb__run_info *r);

/*
 * Describe the run directory @p name, open as @p dir_fd, as the scan does: the name parsed,
 * log.txt's size, the counters file, whether telemetry.json exists, the last activity (the
 * counters file's, or the files' latest mtime when later); active_mono_ns 0. Any thread.
 * Returns 0, or NWB_EPROTO when @p name is not a run id.
 */
int nwb__run_info_load(int dir_fd, const char *name, struct nwb__run_info *out);

/* The counters file text of @p r into @p b (its format: docs/operations.md, "Output layout").
 * Returns 0 or a nwb_buf error. */
int nwb__run_counters_format(const struct nwb__run_info *r, nwb_buf_t *b);

/* Read counters file text into @p r (only its counters, program, run and last activity).
 * Returns 0, or NWB_EVERSION / NWB_EPROTO for a file that is not one (nothing changed). */
int nwb__run_counters_parse(const char *text, size_t len, struct nwb__run_info *r);

/*
 * Stop: write every changed run's counters (after the write in flight, if one is), close the
 * handles, then call @p closed(@p ctx) on the loop thread. The memory stays until
 * nwb__run_index_destroy(). Loop thread; after the log worker and the crash worker stopped.
 */
void nwb__run_index_close(struct nwb__run_index *idx, void (*closed)(void *ctx), void *ctx);

/* Free a closed index (or one whose create failed). NULL is a no-op. */
void nwb__run_index_destroy(struct nwb__run_index *idx);

/* ---- the endpoints (read_runs.c, read_log.c, read_files.c) ---- */

struct nwb__conn;

void nwb__read_runs_handle(struct nwb__conn *c);          /* GET /v1/runs */
void nwb__read_run_handle(struct nwb__conn *c);           /* GET /v1/runs/<id> */
void nwb__read_log_handle(struct nwb__conn *c);           /* GET /v1/runs/<id>/log */
void nwb__read_telemetry_handle(struct nwb__conn *c);     /* GET /v1/runs/<id>/telemetry */
void nwb__read_crash_file_handle(struct nwb__conn *c);    /* GET /v1/crashes/<id>/files/<name> */
void nwb__read_crash_archive_handle(struct nwb__conn *c); /* GET /v1/crashes/<id>/archive */

/* A run as JSON (@p detail adds "counters" and "listed"): the object GET /v1/runs lists and
 * GET /v1/runs/<id> answers. */
void nwb__run_info_json(nwb_json_t *j, const struct nwb__run_info *r, int live, int detail,
                        int listed);

/*
 * The read endpoints' query checks (read_runs.c): the decimal @p key in [min, max] into
 * @p *out (untouched and *present 0 when absent). On a malformed query or value the request
 * is answered 400 with the reason (naming the key and its range) and -1 returned.
 */
int nwb__read_query_u64(struct nwb__conn *c, const struct nwb__target *t, const char *key,
                        uint64_t min, uint64_t max, uint64_t *out, int *present);

/* The request's target split into @p t and its run id (the first segment after /v1/runs/):
 * 0, or -1 after answering 404 when it is not a run id. */
int nwb__read_target_run(struct nwb__conn *c, struct nwb__target *t, const char **id, size_t *len);

/* Answer 200 with the JSON in @p b (its memory goes to the connection), or 503 when building
 * it failed (@p err, a nwb_json_finish() result) or the answer budget is spent. */
void nwb__read_respond_json(struct nwb__conn *c, nwb_buf_t *b, int err);

/*
 * Hold @p bytes of NWB__READ_ANSWERS_MAX for @p c's answer (what it holds already counts
 * toward it): 0, or -1 after answering 503 + Retry-After: 1 when they are not there. A request
 * always gets them when no other read answer holds any. Loop thread.
 */
int nwb__read_reserve(struct nwb__conn *c, size_t bytes);

/* The rule behind it: @p *held of @p *total becomes @p bytes when the others' share plus
 * @p bytes stays within @p max, or when the others hold nothing. 0, or -1 (nothing changed). */
int nwb__read_budget_take(size_t *total, size_t *held, size_t bytes, size_t max);

/* Give back what @p c holds (its answer was written, or it closed). NULL-safe, idempotent. */
void nwb__read_release(struct nwb__conn *c);

#endif /* NWB_SERVER_READ_INT_H */
