/* SPDX-License-Identifier: MIT */
/*
 * server_int.h - private declarations shared by the server's files: the
 * server and connection structs, the request parser, routes, flow control,
 * the log worker, the run store, record rendering, name symbols, thread-pool
 * offloading, the crash and telemetry endpoints, metrics and the console.
 *
 * Threads: everything runs on the loop thread except the log worker's thread
 * (the run store and the renderer: it meets the loop only in log_worker.c,
 * through a mutex-protected job queue and completion list), the libuv thread
 * pool (offload.c: a connection's blocking work, sidecar loading) and the
 * crash worker (crash_int.h).
 */
#ifndef NWB_SERVER_INT_H
#define NWB_SERVER_INT_H

#include <stddef.h>
#include <stdint.h>

#include <llhttp.h>
#include <uv.h>

#include "nwb/common.h"
#include "nwb/log_batch.h"
#include "nwb/log_line.h"
#include "nwb/namesym.h"
#include "nwb/safe_name.h"
#include "nwb/server.h"
#include "nwb/token.h"

#include "telemetry_int.h"

struct nwb__names;
struct nwb__crash_ingest;
struct nwb__events;       /* events_int.h: GET /v1/events */
struct nwb__event_stream; /* one open GET /v1/events answer */

/* ---- fixed internal bounds (docs/operations.md, "Bounds") ---- */
#define NWB__READ_BUF_SIZE (64u * 1024u) /* one socket read; also the pipelined-bytes stash cap */
/* After a body of NWB__BIG_BODY bytes or more, the next request's first read takes only
 * NWB__HEAD_READ_SIZE bytes, so its body is read into the body buffer instead of copied. */
#define NWB__BIG_BODY       (16u * 1024u)
#define NWB__HEAD_READ_SIZE (2u * 1024u)
/* Bodies above half of NWB__BODY_POOL_CAP up to it get a buffer of that size (at most twice
 * the bytes granted), and up to NWB__BODY_POOL_MAX freed ones are kept for the next requests
 * (at most 4 MiB, freed when the last connection closes): a fresh allocation would fault its
 * pages in on every request. */
#define NWB__BODY_POOL_CAP   (64u * 1024u)
#define NWB__BODY_POOL_MAX   64u
#define NWB__URL_MAX         256u  /* longer paths match no route (404) */
#define NWB__LINGER_MS       2000u /* wait for the peer's FIN after a closing response */
#define NWB__RENDER_BUF_SIZE (4u * 1024u * 1024u) /* worker's line buffer; one write per fill */
/* The inline path (flow.c): a log body up to NWB__INLINE_BODY_MAX bytes is rendered and
 * written by the loop thread itself when the log worker is idle and the run is open; at most
 * NWB__INLINE_TICK_BYTES of bodies per tick of the loop's clock (uv_now(), advanced only
 * between loop turns, so a tick spans one turn or more); past either, the body goes to the
 * worker as before. */
#define NWB__INLINE_BODY_MAX   (16u * 1024u)
#define NWB__INLINE_TICK_BYTES (4u * 1024u * 1024u)
#define NWB__FALLBACK_PROGRAM  "unknown"
/* runs/<program>_<YYYYmmdd-HHMMSS>_<run>: a run directory's name */
#define NWB__RUN_DIR_MAX (NWB_SAFE_NAME_MAX + 1 + 15 + 1 + NWB_SAFE_NAME_MAX + 8)
/* A message with its #tokens decoded; tokens that would pass it stay as they are. */
#define NWB__DECODE_MSG_MAX (4u * NWB_LOG_RECORD_MSG_MAX)
/* Name-symbol loading (startup and SIGHUP), per load. */
#define NWB__NAMESYM_FILES_MAX        1024u                /* sidecars; more are skipped */
#define NWB__NAMESYM_NAMES_MAX        (4u * 1024u * 1024u) /* a sidecar that would pass it: skipped */
#define NWB__NAMESYM_FILE_BYTES_MAX   (256u * 1024u * 1024u) /* a larger file is skipped */
#define NWB__NAMESYM_COLLISIONS_SHOWN 32u                    /* then only counted */
/* POST /v1/telemetry body: the ingest's decompressed cap bounds raw bodies too. */
#define NWB__TEL_BODY_MAX (64u * 1024u * 1024u)

/* ---- console.c: the server's own messages on stderr ---- */

/* One "nwb-logserver: ..." line on stderr, written with a single write(2). Any thread. */
void nwb__console(const char *fmt, ...) NWB_PRINTF_LIKE(1, 2);

/* "ENOSPC"-style name of @p err, or "errno N" when nwb_err_name() does not know it. */
const char *nwb__err_label(int err, char *buf, size_t len);

/* ---- http_request.c: one HTTP/1.x request head at a time, strict ---- */

struct nwb__http_limits {
    size_t max_header_bytes;
    unsigned max_headers;
};

enum {
    NWB__HTTP_MORE = 0,  /* every byte consumed; feed more */
    NWB__HTTP_HEAD = 1,  /* the head is complete; inspect it, then keep feeding */
    NWB__HTTP_DONE = 2,  /* the message is complete */
    NWB__HTTP_ERROR = -1 /* req->status / req->reason say why; close after answering */
};

/* Body bytes go to this sink; it returns 0 or an HTTP status to fail the request with. */
typedef int (*nwb__http_body_fn)(void *ctx, const char *at, size_t len);

#define NWB__HTTP_VALUE_MAX    NWB_SAFE_NAME_MAX /* run identity values: more is never used */
#define NWB__IF_NONE_MATCH_MAX 256 /* If-None-Match bytes kept; longer matches nothing */
/* Authorization value kept ("Bearer " + the longest token + slack); longer: 401 (auth.c). */
#define NWB__AUTH_VALUE_MAX 320u

struct nwb__http_req {
    llhttp_t parser;
    const struct nwb__http_limits *limits;
    nwb__http_body_fn body_fn;
    void *body_ctx;
    char auth[NWB__AUTH_VALUE_MAX]; /* Authorization value (auth_len bytes); not cleared */
    int phase;                      /* internal: head, body or done */
    int last_cr;                    /* the previous head byte was CR (bare LF check across reads) */
    size_t head_bytes;              /* request line + headers so far */
    unsigned header_count;
    int cur_header; /* internal id of the header being parsed */
    char field[24]; /* lower-cased field name (only short names matter) */
    size_t field_len;
    unsigned seen;       /* bit per interesting header already taken (first one wins) */
    const char *buf_end; /* end of the buffer being fed */
    uint64_t chunk_left; /* data bytes left in the current chunk */
    int crlf_need;       /* bytes of the CRLF after chunk data still to check */
    /* the parsed head, valid from NWB__HTTP_HEAD until the next request starts */
    char url[NWB__URL_MAX];
    size_t url_len;
    int url_long;
    char program[NWB__HTTP_VALUE_MAX];
    size_t program_len;
    char run[NWB__HTTP_VALUE_MAX];
    size_t run_len;
    char seq[24];
    size_t seq_len;
    int seq_long;
    char ctype[64];
    size_t ctype_len;
    char expect[16];
    size_t expect_len;
    char cenc[32]; /* Content-Encoding */
    size_t cenc_len;
    int cenc_long;
    char te[16]; /* Transfer-Encoding: only "chunked" is accepted (else 501) */
    size_t te_len;
    int te_long;
    char last_event_id[24]; /* Last-Event-ID (GET /v1/events): a decimal event id */
    size_t last_event_id_len;
    int last_event_id_long;
    int has_last_event_id;
    char if_none_match[NWB__IF_NONE_MATCH_MAX]; /* If-None-Match (GET / and /assets/) */
    size_t if_none_match_len;
    int if_none_match_long; /* longer than the buffer: matches nothing (a 200) */
    int has_if_none_match;
    int has_program, has_run, has_seq, has_ctype, has_expect, has_cenc;
    size_t auth_len;
    int has_auth, auth_long; /* Authorization present; longer than NWB__AUTH_VALUE_MAX */
    unsigned method;         /* llhttp_method_t */
    unsigned http_major, http_minor;
    int has_length, chunked, upgrade, keep_alive;
    uint64_t content_length;
    /* the failure, for NWB__HTTP_ERROR */
    int status;
    const char *reason;
};

void nwb__http_req_init(struct nwb__http_req *r, const struct nwb__http_limits *limits,
                        nwb__http_body_fn body_fn, void *body_ctx);

/*
 * Parse up to @p len bytes; *used says how many were taken. Returns one of
 * the NWB__HTTP_* events. After NWB__HTTP_HEAD or _DONE, call again with the
 * rest (even when it is empty: a request without body completes on that
 * call). After _DONE the request's fields stay valid until the next call.
 * After _ERROR the parser is dead: answer req->status and close.
 */
int nwb__http_req_feed(struct nwb__http_req *r, const char *data, size_t len, size_t *used);

/* The request's media type (before ';', trimmed) equals @p type, case-insensitively. */
int nwb__http_req_ctype_is(const struct nwb__http_req *r, const char *type);

/* X-NWB-Seq: 0 with *has_seq 0 (absent) or 1 and *seq; -1 when present but not a decimal u64. */
int nwb__http_req_seq(const struct nwb__http_req *r, int *has_seq, uint64_t *seq);

/* Last-Event-ID, like X-NWB-Seq: 0 with *has_id 0 or 1 and *id; -1 when not a decimal u64. */
int nwb__http_req_last_event_id(const struct nwb__http_req *r, int *has_id, uint64_t *id);

/*
 * 1 when the request's If-None-Match names @p etag (a quoted entity tag) by the weak
 * comparison of RFC 9110 section 13.1.2: "*", or a comma-separated list holding it with or
 * without "W/". 0 when absent, too long, malformed or not matching (answer the full 200).
 */
int nwb__http_req_etag_matches(const struct nwb__http_req *r, const char *etag);

/* ---- http_response.c ---- */

/* Reason phrase of @p status ("OK", "Not Found", ...). */
const char *nwb__http_status_text(int status);

/*
 * Headers on every answer with a head from nwb__http_head_format(): the page may run only
 * the server's own files (no inline script or style, nothing from elsewhere), a browser
 * never guesses a type other than Content-Type, and no Referer leaves the page.
 */
#define NWB__HTTP_SECURITY_HEADERS                                                                 \
    "Content-Security-Policy: default-src 'self'\r\n"                                              \
    "X-Content-Type-Options: nosniff\r\n"                                                          \
    "Referrer-Policy: no-referrer\r\n"

/*
 * Write a response head into @p dst (@p cap bytes; 512 is plenty for the
 * server's own heads): status line, Content-Length, optional Content-Type,
 * NWB__HTTP_SECURITY_HEADERS, the caller's @p extra header lines (each ending
 * in CRLF, may be NULL), "Connection: close" when @p close, and the blank
 * line. Returns the length, or 0 if it does not fit.
 */
size_t nwb__http_head_format(char *dst, size_t cap, int status, const char *ctype,
                             size_t content_length, const char *extra, int close);

/* ---- router.c ---- */

struct nwb__conn;

#define NWB__METHOD_GET  0x1u
#define NWB__METHOD_POST 0x2u

struct nwb__route {
    const char *path;  /* '*' matches one non-empty segment (no '/') */
    int prefix;        /* 1: matches every longer path starting with it */
    unsigned methods;  /* NWB__METHOD_* */
    const char *allow; /* the Allow header for 405 */
    int wants_body;    /* keep the body (else it is discarded) */
    /* The body limit (NULL: --max-body-bytes) and the 413 reason naming it. */
    size_t (*body_limit)(const struct nwb_server *srv);
    const char *too_big;
    /* After the head: 0 to go on, or an HTTP status to answer once the body is skipped. */
    int (*on_head)(struct nwb__conn *c);
    /* The message is complete: answer now (nwb__conn_respond) or later. */
    void (*handle)(struct nwb__conn *c);
    /* A job this route queued was written (or failed) by the log worker. */
    void (*job_done)(struct nwb__conn *c);
};

/* The route for @p path (query string ignored), or NULL. */
const struct nwb__route *nwb__router_match(const char *path, size_t len);

/* 1 when @p route is answered without --token-file's bearer check (the viewer's page). */
int nwb__router_route_is_public(const struct nwb__route *route);

/* The route's method bit for llhttp @p method, or 0 when no route takes it. */
unsigned nwb__router_method_bit(unsigned method);

/* ---- the log job: one POST /v1/log body on its way to the worker ---- */

enum {
    NWB__JOB_BATCH = 1,   /* application/x-nwb-log-batch, already validated */
    NWB__JOB_TEXT = 2,    /* text/plain */
    NWB__JOB_RUN_DIR = 3, /* find or make the run's directory (telemetry): dir */
    NWB__JOB_NAMES = 4,   /* switch the renderer to names (SIGHUP); names comes back old */
};

enum {
    NWB__JOB_WRITTEN = 0,
    NWB__JOB_DUPLICATE = 1, /* seq <= the run's last seq: nothing written */
    NWB__JOB_FAILED = 2,    /* err says why; nothing of it is in the log */
};

struct nwb__log_job {
    struct nwb__log_job *next;
    /* input, set by the loop, read-only while queued */
    char program[NWB_SAFE_NAME_MAX + 1]; /* sanitised */
    char run[NWB_SAFE_NAME_MAX + 8];     /* sanitised (or the fallback id) */
    size_t program_len;
    int has_seq;
    uint64_t seq;
    int kind;
    const uint8_t *body;
    size_t body_len;
    uint64_t recv_time_ns;
    struct nwb__names *names; /* NWB__JOB_NAMES: the new table in, the previous one out */
    /* output, set by the worker */
    int status;
    int err;
    uint64_t records;
    uint64_t drops;
    uint64_t tok_decoded;           /* #tokens replaced by a name */
    uint64_t tok_unknown;           /* #tokens left as they were */
    uint64_t log_size;              /* log.txt bytes after the job (written or duplicate) */
    char dir[NWB__RUN_DIR_MAX + 1]; /* the run's directory under runs/ (every run job) */
};

/* ---- metrics.c ---- */

#define NWB__STATUS_SLOTS 17

struct nwb__metrics {
    uint64_t records;      /* records written */
    uint64_t bytes;        /* body bytes of batches written */
    uint64_t batches;      /* batches written */
    uint64_t inline_jobs;  /* log bodies written by the loop thread itself (flow.c) */
    uint64_t duplicates;   /* batches answered 200 without writing (seq already seen) */
    uint64_t errors;       /* requests answered >= 400 */
    uint64_t write_errors; /* batches that failed to reach the file */
    uint64_t drops;        /* DROPNOTE records written (client-reported drops) */
    uint64_t requests[NWB__STATUS_SLOTS];
    uint64_t connections_total;
    uint64_t connections_rejected; /* over --max-connections */
    uint64_t timeouts;             /* 408 answered */
    uint64_t read_pauses;          /* times the job queue filled and reading stopped */
    uint64_t budget_waits;         /* requests that waited for --max-buffered-bytes */
    uint64_t tokens_decoded;       /* #tokens in written log records replaced by a name */
    uint64_t tokens_unknown;       /* ... left as they were (no name known) */
    uint64_t namesym_reloads;      /* name tables switched to after SIGHUP */
    uint64_t namesym_reload_failures;
};

/* Count one answered request. */
void nwb__metrics_count_status(struct nwb__metrics *m, int status);

/* Route handlers for GET /metrics and GET /v1/health. */
void nwb__metrics_handle(struct nwb__conn *c);
void nwb__health_handle(struct nwb__conn *c);

/* ---- log_endpoint.c: POST /v1/log ---- */

int nwb__log_on_head(struct nwb__conn *c);
void nwb__log_handle(struct nwb__conn *c);
void nwb__log_job_done(struct nwb__conn *c);

/* Fill c->job's run identity (sanitised program and run) from the request headers. */
void nwb__log_job_identity(struct nwb__conn *c);

/* ---- crash_endpoint.c: POST /v1/crash, GET /v1/crashes, GET /v1/crashes/<id> ---- */

size_t nwb__crash_body_limit(const struct nwb_server *srv);
void nwb__crash_post_handle(struct nwb__conn *c);
void nwb__crash_get_handle(struct nwb__conn *c);
void nwb__crash_resymbolize_handle(struct nwb__conn *c);

/* ---- telemetry_endpoint.c: POST /v1/telemetry; tel_frames_endpoint.c: GET .../frames ---- */

size_t nwb__tel_body_limit(const struct nwb_server *srv);
int nwb__tel_on_head(struct nwb__conn *c);
void nwb__tel_handle(struct nwb__conn *c);
void nwb__tel_job_done(struct nwb__conn *c);

/* GET /v1/runs/<id>/frames and GET /v1/runs/<id>/frames/<frame> (docs/protocol.md). */
void nwb__tel_frames_handle(struct nwb__conn *c);
void nwb__tel_frame_handle(struct nwb__conn *c);

/* ---- offload.c: a connection's blocking work on the libuv thread pool ---- */

/* Runs on a pool thread; may use the request (c->req, c->body) and c->work, nothing else. */
typedef void (*nwb__work_run_fn)(struct nwb__conn *c);
/* Runs on the loop thread afterwards, also when c closed meanwhile (then: clean up only). */
typedef void (*nwb__work_done_fn)(struct nwb__conn *c);

struct nwb__work {
    uv_work_t req;
    nwb__work_run_fn run;
    nwb__work_done_fn done;
    void *ctx; /* the endpoint's state for this request, owned by the endpoint */
};

/*
 * Run @p run for @p c on the thread pool, then @p done on the loop. The
 * connection stays allocated meanwhile (like a log job). Returns 0, or a
 * libuv error (nothing was started; answer the request yourself).
 */
int nwb__offload(struct nwb__conn *c, nwb__work_run_fn run, nwb__work_done_fn done);

/* ---- a request body streamed to a file instead of kept (http_conn.c; POST /v1/symbols) ---- */

/* Body bytes a streamed request holds in memory (and reserves of --max-buffered-bytes); when
 * fewer than NWB__READ_BUF_SIZE are free, they are written to the file on the thread pool
 * while the connection stops reading. */
#define NWB__SPILL_BUF (1024u * 1024u)

struct nwb__spill {
    int fd;           /* the file; -1 until the first write opens it */
    uint64_t written; /* body bytes in the file */
    int err;          /* the last nwb__spill_write()'s result */
    /* Open (create) the file into fd: pool thread, at the first write. 0 or a negative errno. */
    int (*open)(struct nwb__spill *sp);
    /* The request ended before its handler took the spill back (closed, refused, failed, the
     * server stopping): remove the file and free. Loop thread. */
    void (*abandon)(struct nwb__spill *sp);
};

/*
 * From a route's on_head: stream the current request's body (Content-Length only) through
 * @p sp: c->body holds at most NWB__SPILL_BUF bytes, the rest goes to the file. The route's
 * body limit bounds the whole body. The handler takes @p sp back with nwb__conn_spill_take()
 * and writes the last c->body_len bytes itself (nwb__spill_write on the pool).
 */
void nwb__conn_spill_begin(struct nwb__conn *c, struct nwb__spill *sp);
struct nwb__spill *nwb__conn_spill_take(struct nwb__conn *c);

/* Append @p len bytes to @p sp's file, opening it first when needed. Pool thread. 0 or a
 * negative errno. */
int nwb__spill_write(struct nwb__spill *sp, const void *data, size_t len);

/* ---- telemetry lanes (telemetry_endpoint.c): one run's requests in order, one at a time ---- */

struct nwb__tel_lane;

/* A connection's place in a lane. */
struct nwb__tel_task {
    struct nwb__tel_lane *lane; /* NULL when not in one */
    struct nwb__conn *next;     /* the lane's wait queue */
    nwb__work_run_fn run;
    nwb__work_done_fn done;
    int err; /* the work could not start (done runs without run): a libuv error */
};

/*
 * Run @p run for @p c on the thread pool once every earlier request of the lane @p key (a run
 * directory's name, @p key_len bytes) is done, then @p done on the loop (with c->tel.err set
 * when the work could not start). Requests of different lanes run at once. The connection is
 * held meanwhile. Returns 0, or NWB_ETOOBIG / -ENOMEM (nothing queued: answer yourself).
 */
int nwb__tel_lane_submit(struct nwb__conn *c, const char *key, size_t key_len, nwb__work_run_fn run,
                         nwb__work_done_fn done);

/* ---- the connection (http_conn.c) ---- */

enum {
    NWB__CONN_IDLE = 0,    /* between requests */
    NWB__CONN_HEAD,        /* receiving a head (request timer running) */
    NWB__CONN_BODY,        /* receiving a body */
    NWB__CONN_WAIT_BUDGET, /* head done, waiting for --max-buffered-bytes room */
    NWB__CONN_HANDLING,    /* message complete, its handler is running */
    NWB__CONN_WAIT_QUEUE,  /* job ready, waiting for room in the worker's queue */
    NWB__CONN_IN_WORKER,   /* job queued or being written */
    NWB__CONN_WRITING,     /* response being sent */
    NWB__CONN_STREAMING,   /* an event stream (GET /v1/events): open until a side closes */
    NWB__CONN_LINGER,      /* closing response sent, waiting for the peer's FIN */
    NWB__CONN_CLOSED,      /* handles closing; freed when they are and no job is out */
};

struct nwb__conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_write_t wreq;
    uv_write_t continue_req;
    uv_shutdown_t shutdown_req;
    struct nwb_server *srv;
    struct nwb__conn *prev, *next;           /* srv->conns */
    struct nwb__conn *wait_prev, *wait_next; /* one flow-control wait list */
    int wait_list;                           /* 0, or which list holds it */
    int state;
    int handles_open; /* tcp + timer until their close callbacks ran */
    int job_out;      /* the job is with the worker */
    int reading;      /* uv_read_start is in effect */
    int close_after;  /* close once the current response is sent */
    int peer_eof;     /* the peer half-closed: answer what is complete, then close */
    int in_process;   /* inside the parse loop (no re-entry) */
    int discard_body; /* early answer decided: skip the body */
    int early_status; /* answer to give once the body is skipped */
    const char *early_reason;
    const struct nwb__route *route;
    struct nwb__http_req req;
    /* body of the current request (route->wants_body) */
    uint8_t *body;
    size_t body_len, body_cap;
    size_t reserved; /* bytes of --max-buffered-bytes this request holds */
    /* bytes read while the connection could not parse (pipelining), bounded */
    char *pend;
    size_t pend_off, pend_len;
    /* the response being written */
    char head[512];
    char *resp_body; /* owned, freed after the write; or NULL */
    size_t body_max; /* this request's body limit (its route's) */
    size_t
        last_body_len; /* the previous request's body: a big one makes the next head read small */
    struct nwb__log_job job;
    struct nwb__work work;
    struct nwb__tel_task tel; /* a telemetry request's lane */
    size_t read_reserved;     /* bytes of NWB__READ_ANSWERS_MAX its answer holds (read_int.h) */
    struct nwb__event_stream *stream; /* NWB__CONN_STREAMING: the events' side (events.c) */
    struct nwb__spill *spill;         /* the body streams to a file (nwb__conn_spill_begin) */
};

/* Accept one connection from the listener (or refuse it over the cap). */
void nwb__conn_accept(struct nwb_server *srv);

/*
 * Answer the current request. @p body (may be NULL) is copied unless
 * @p take_body, in which case it must be nwb_malloc'd and is freed after the
 * write. @p extra: header lines ending in CRLF, or NULL.
 */
void nwb__conn_respond(struct nwb__conn *c, int status, const char *ctype, const char *body,
                       size_t body_len, int take_body, const char *extra);

/* Short text/plain error answer ("reason\n"). */
void nwb__conn_respond_error(struct nwb__conn *c, int status, const char *reason);

/* Flow control moved the connection on (budget granted: read the body). */
void nwb__conn_budget_granted(struct nwb__conn *c);

/*
 * Turn the current request's connection into a stream (GET /v1/events) owned by @p stream
 * (events.c writes the answer, head included, on c->tcp): counts a 200, stops the timers,
 * discards whatever the client pipelines and keeps reading only to see it close. The
 * connection ends when either side closes (nwb__conn_stream_close()); its close detaches
 * the stream (nwb__events_stream_detach) and its free frees it (nwb__events_stream_free).
 */
void nwb__conn_stream_begin(struct nwb__conn *c, struct nwb__event_stream *stream);

/* End a stream now (cut off, write failure, server stopping); unsent bytes are dropped. */
void nwb__conn_stream_close(struct nwb__conn *c);

/* The worker finished the connection's job (result in c->job). */
void nwb__conn_job_finished(struct nwb__conn *c);

/* Offloaded work of @p c came back: run @p done, then free @p c if it closed meanwhile. */
void nwb__conn_work_finished(struct nwb__conn *c, nwb__work_done_fn done);

/* Server stopping: close it now, or after its in-flight answer. */
void nwb__conn_shutdown(struct nwb__conn *c);

/* Flow control paused or resumed reading: re-evaluate uv_read_start/stop. */
void nwb__conn_update_reading(struct nwb__conn *c);

/* ---- flow.c: memory budget, job queue bound, read pausing ---- */

/*
 * Reserve @p bytes of the body budget for @p c. Returns 1 when granted, 0
 * when @p c now waits (nwb__conn_budget_granted() follows later). A request
 * is always granted when nothing else holds budget, so one request can always
 * proceed.
 */
int nwb__flow_reserve(struct nwb_server *srv, struct nwb__conn *c, size_t bytes);

/* Give back what @p c reserved (body freed) and grant waiters. */
void nwb__flow_release(struct nwb_server *srv, struct nwb__conn *c);

/* Hand c->job to the worker, or park it while the queue is full (reading stops). */
void nwb__flow_submit(struct nwb_server *srv, struct nwb__conn *c);

/* A job came back: take it off the count, resume reading below the low mark. */
void nwb__flow_job_returned(struct nwb_server *srv);

/* @p c is closing: drop it from any wait list. */
void nwb__flow_forget(struct nwb_server *srv, struct nwb__conn *c);

/* ---- log_worker.c: the writer thread, its bounded queue and completions ---- */

struct nwb__log_worker;

/* Called on the loop thread for each finished job. */
typedef void (*nwb__job_done_fn)(void *ctx, struct nwb__log_job *job);

/* @p names: the table records are decoded with until a NWB__JOB_NAMES job switches it
 * (borrowed: the caller keeps it alive until the job returns or the worker stopped). */
int nwb__log_worker_create(uv_loop_t *loop, const char *out_dir, unsigned max_open_runs,
                           struct nwb__names *names, nwb__job_done_fn done, void *ctx,
                           struct nwb__log_worker **out, char *errbuf, size_t errlen);

/* Queue @p job (the caller bounds how many are out). Handed over at the end of the loop turn. */
void nwb__log_worker_submit(struct nwb__log_worker *w, struct nwb__log_job *job);

/* Jobs submitted and not yet returned through the done callback. */
unsigned nwb__log_worker_outstanding(const struct nwb__log_worker *w);
/* Loop thread: process a log body job at once, on this thread, and hand it to the done
 * callback; 1 if it did, 0 (nothing touched) when the worker has a job queued or in flight
 * (it owns the run store and its buffer until every job came back), the job is no log body,
 * or its run is not open yet (opening scans runs/: the worker's work). */
int nwb__log_worker_try_inline(struct nwb__log_worker *w, struct nwb__log_job *job);

/* The worker's run store, for nwb__run_store_tokens_each() from other threads. */
struct nwb__run_store *nwb__log_worker_store(struct nwb__log_worker *w);

/*
 * Write what is queued, deliver its completions, join the thread, close the
 * run store and the worker's handles; the memory goes in their close
 * callback. Loop thread.
 */
void nwb__log_worker_stop(struct nwb__log_worker *w);

/* ---- run_store.c: per-run directories, files, durable duplicate state (worker thread) ---- */

struct nwb__run_store;
struct nwb__run;

int nwb__run_store_open(const char *out_dir, unsigned max_open_runs, struct nwb__run_store **out,
                        char *errbuf, size_t errlen);
void nwb__run_store_close(struct nwb__run_store *s);

/*
 * The run (program, run) - both already sanitised - opened: from the cache,
 * an existing runs/<program>_*_<run> directory (recovering its state), or a
 * new directory named after @p now_ns. Returns 0 or a negative errno.
 */
int nwb__run_store_get(struct nwb__run_store *s, const char *program, const char *run,
                       uint64_t now_ns, struct nwb__run **out);
/* 1 when (program, run) is open in the cache and usable: nwb__run_store_get() then neither
 * opens nor recovers anything. Changes nothing. */
int nwb__run_store_is_open(const struct nwb__run_store *s, const char *program, const char *run);

/* 1 when a batch with this seq already landed (seq <= the run's last seq). */
int nwb__run_seq_seen(const struct nwb__run *r, int has_seq, uint64_t seq);

/* Start a batch at the end of the log. */
void nwb__run_batch_begin(struct nwb__run *r, int has_seq, uint64_t seq);

/*
 * How much of a log.txt of @p size bytes holds whole batches, by its run's .nwb-state (@p n
 * bytes at @p b, as read; any bytes): the end of the last batch that landed, or where the
 * batch being written (or cut short by a crash) began. Read the state before measuring the
 * file: then a batch started in between cannot be counted. A missing or damaged state gives
 * @p size. Pure; any thread (the ClickHouse forwarder reads only up to it).
 */
uint64_t nwb__run_state_durable_end(const uint8_t *b, size_t n, uint64_t size);

/** The run state file's name and size (docs/protocol.md, "Duplicate suppression"). */
#define NWB__RUN_STATE_FILE ".nwb-state"
#define NWB__RUN_STATE_SIZE 48u

/*
 * Append @p len bytes of the current batch (@p final: its last piece):
 * records the state (one pwrite), then writes them. On failure the log is
 * truncated back to the batch's start, the failure is reported on the
 * console once per kind, and a negative errno is returned.
 */
int nwb__run_batch_append(struct nwb__run_store *s, struct nwb__run *r, const char *buf, size_t len,
                          int final);

/* Give up on the current batch: log.txt is cut back to where it began. */
void nwb__run_batch_abort(struct nwb__run *r);

/* The batch's last piece is written: its seq is now the run's last. */
void nwb__run_batch_commit(struct nwb__run *r);

/* The run's directory name under runs/ (for messages and tests). */
const char *nwb__run_dir_name(const struct nwb__run *r);

/* log.txt's size in bytes: what has been committed (and a batch being written, while it is). */
uint64_t nwb__run_log_size(const struct nwb__run *r);
/* The run's thread-name map (thread_names.h), made on first use while the run is open (an
 * evicted run forgets it); NULL when out of memory. Log worker thread only. */
struct nwb__thread_names *nwb__run_thread_names(struct nwb__run *r);

/* Test support: the last seq the store holds for @p r (has: 0 when none). */
uint64_t nwb__run_last_seq(const struct nwb__run *r, int *has);

/* Count @p decoded and @p unknown #tokens written to @p r's log (worker thread). */
void nwb__run_tokens_add(struct nwb__run_store *s, struct nwb__run *r, uint64_t decoded,
                         uint64_t unknown);

typedef void (*nwb__run_tokens_fn)(void *ctx, const char *program, const char *run,
                                   uint64_t decoded, uint64_t unknown);

/*
 * Call @p fn for every open run (most recent first) with its token counts.
 * Any thread: it holds the store's stats lock, which the worker takes only
 * briefly. The store must stay open meanwhile.
 */
void nwb__run_store_tokens_each(struct nwb__run_store *s, nwb__run_tokens_fn fn, void *ctx);

/* ---- log_render.c: records of a body, formatted as log lines (worker thread) ---- */

struct nwb__rec_iter {
    int kind;
    nwb_log_batch_reader_t reader;
    const char *cur, *end; /* text */
    uint64_t time_ns;      /* text: the receive time */
};

void nwb__rec_iter_batch(struct nwb__rec_iter *it, const void *body, size_t len);
void nwb__rec_iter_text(struct nwb__rec_iter *it, const void *body, size_t len, uint64_t time_ns);

/*
 * Next record: 1, 0 at the end, or a negative code for a malformed batch.
 * Text: one INFO record per line ('\n'; a final line without one counts),
 * one trailing '\r' dropped, empty lines skipped, lines longer than
 * NWB_LOG_RECORD_MSG_MAX split into several records (at a UTF-8 boundary).
 */
int nwb__rec_iter_next(struct nwb__rec_iter *it, nwb_log_record_t *rec);

struct nwb__render {
    nwb_log_line_clock_t clock;
    const char *program;
    size_t program_len;
    nwb_log_record_t held; /* read but did not fit the last buffer */
    int has_held;
    uint64_t records;
    uint64_t drops;
    /* name-symbol decoding (nwb__render_set_names) */
    const nwb_namesym_table_t *names;
    uint64_t decoded, unknown;
    /* the run's thread names (nwb__render_set_thread_names); NULL: lines show the tid alone */
    struct nwb__thread_names *thread_names;
};

void nwb__render_init(struct nwb__render *rd, const char *program, size_t program_len);

/*
 * Decode #tokens of each message with @p names (borrowed; NULL: no decoding)
 * as the lines are formatted (nwb_log_line_format_names(), bounded by
 * NWB__DECODE_MSG_MAX); file names are never changed.
 */
void nwb__render_set_names(struct nwb__render *rd, const nwb_namesym_table_t *names);

/*
 * Learn thread names from the records' tags into @p map (borrowed) and write
 * each line's thread as `tid[name]` when @p map knows the tid.
 */
void nwb__render_set_thread_names(struct nwb__render *rd, struct nwb__thread_names *map);

/*
 * Format records from @p it into @p buf (@p cap >= one largest line, with the
 * message decoded to NWB__DECODE_MSG_MAX when names are set) until
 * the next might not fit. Sets *len and *end (1 when @p it is exhausted).
 * Returns 0 or the iterator's error.
 */
int nwb__render_fill(struct nwb__render *rd, struct nwb__rec_iter *it, char *buf, size_t cap,
                     size_t *len, int *end);

/* ---- names_load.c: name-symbol tables from .namesym sidecars ---- */

/* A loaded table, shared by reference count (loop thread only) with the log worker and
 * telemetry ingests in flight. */
struct nwb__names {
    nwb_namesym_table_t *table; /* owned; read-only once loaded */
    size_t count;               /* names in it */
    unsigned files;             /* sidecars it came from */
    unsigned refs;
};

/*
 * Load every *.namesym in each of @p dirs (command-line order, files in
 * byte order of their names; first string wins), reporting per file, each
 * collision (with both strings and files) and skipped files on the console.
 * @p strict: a folder that cannot be read is an error (else a warning).
 * Any thread. Returns 0 with @p *out (refs 1), or a negative code with a
 * reason in @p errbuf.
 */
int nwb__names_load(char *const *dirs, unsigned ndirs, int strict, struct nwb__names **out,
                    char *errbuf, size_t errlen);

/* The folder of the running executable (/proc/self/exe) in @p buf. 0 or a negative errno. */
int nwb__names_exe_dir(char *buf, size_t len);

void nwb__names_ref(struct nwb__names *n);
/* Drop a reference; the last one frees the table. NULL is a no-op. */
void nwb__names_unref(struct nwb__names *n);

/* ---- names_reload.c: SIGHUP - load again off the loop, switch at a batch boundary ---- */

struct nwb__reload {
    uv_work_t req;
    int state; /* 0 idle, 1 loading on the pool, 2 switch job with the worker */
    int again; /* another reload was asked for meanwhile */
    int err;   /* the load's result */
    char errbuf[256];
    struct nwb__names *loaded;  /* the pool thread's result */
    struct nwb__names *pending; /* handed to the worker, not switched to yet */
    struct nwb__log_job job;    /* NWB__JOB_NAMES */
};

/* Start a reload (or note that another one is wanted). Loop thread. */
void nwb__names_reload_start(struct nwb_server *srv);

/* The worker switched tables (@p job is srv->reload.job). */
void nwb__names_reload_switched(struct nwb_server *srv, struct nwb__log_job *job);

/* ---- auth.c: --token-file and the bearer check (docs/operations.md, "Access control") ---- */

/* The longest token is NWB_TOKEN_MAX (nwb/token.h), the clients' limit too. */
#define NWB__TOKEN_MIN       16u  /* bytes; shorter token files are refused */
#define NWB__TOKEN_FILE_MODE 0077 /* permission bits the token file must not have */

struct nwb__auth {
    int required; /* 1: every request needs Authorization: Bearer <token> */
    size_t len;
    unsigned char token[NWB_TOKEN_MAX];
};

/*
 * Load the token from @p path into @p a with nwb_token_file_read() (a regular
 * file, visible ASCII bytes 0x21..0x7e, at most NWB_TOKEN_MAX, one trailing
 * newline dropped), adding the server's rules: the file is not accessible by
 * group or others, and the token has at least NWB__TOKEN_MIN bytes. Returns 0,
 * or NWB_ECONFIG with "the token file PATH: <reason>" in @p errbuf (the
 * errno's text and name when it cannot be read).
 */
int nwb__auth_load(struct nwb__auth *a, const char *path, char *errbuf, size_t errlen);

/* Zero @p n bytes at @p p in a way the compiler keeps (a token's copies). */
void nwb__auth_wipe(void *p, size_t n);

/*
 * 1 when @p given (@p given_len bytes) equals the token, else 0. Constant
 * time: it reads exactly a->len bytes of @p given whatever they hold, so
 * @p given must be readable for a->len bytes (pad it); no branch depends on
 * a byte's value, and a length difference costs nothing extra.
 */
int nwb__auth_token_equal(const struct nwb__auth *a, const unsigned char *given, size_t given_len);

/* 0 when @p r's Authorization header carries the token, else 401 with *reason set. */
int nwb__auth_check_request(const struct nwb__auth *a, const struct nwb__http_req *r,
                            const char **reason);

/* 1 for a loopback address literal: 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104. */
int nwb__auth_addr_is_loopback(const char *addr);

/*
 * The hook at the end of a request head (http_conn.c): when a token is
 * required and @p c's request does not carry it, answer 401 with
 * WWW-Authenticate: Bearer and close (the body is never read) and return 1.
 * Else 0.
 */
int nwb__auth_reject(struct nwb__conn *c);

/*
 * The access rule of a configuration: NWB_ECONFIG with the reason when
 * cfg->bind_addr is not loopback and there is no cfg->token_file, else 0.
 */
int nwb__server_check_access(const nwb_server_config_t *cfg, char *errbuf, size_t errlen);

/* ---- options.c: the command line (NWB_SERVER_OPTIONS) ---- */

enum {
    NWB__OPT_STR,
    NWB__OPT_BIND,
    NWB__OPT_TOKEN,
    NWB__OPT_NAMESYM,
    NWB__OPT_INT, /* the numbers: int, unsigned, size_t fields */
    NWB__OPT_UINT,
    NWB__OPT_SIZE,
};

/* One row of NWB_SERVER_OPTIONS. */
struct nwb__opt {
    const char *name; /* "--port" */
    int kind;         /* NWB__OPT_* */
    size_t offset;    /* of the field in nwb_server_config_t */
    unsigned long long def_num;
    const char *def_str; /* string kinds; NULL: none */
    unsigned long long min, max;
    const char *meta; /* the value's name in --help: "N", "DIR" */
    const char *help;
};

/* The rows, in table order; @p *count of them. */
const struct nwb__opt *nwb__server_options(size_t *count);

/* A number option's value in @p cfg; an int below 0 gives 0 with *negative set. */
unsigned long long nwb__server_option_number(const nwb_server_config_t *cfg,
                                             const struct nwb__opt *o, int *negative);

/*
 * Check any configuration, parsed or built by a library caller, against the
 * options table: the strings needed, each number in its option's range,
 * --max-body-bytes within --max-buffered-bytes, and the access rule.
 * Returns 0, or NWB_ECONFIG naming the option in @p errbuf.
 */
int nwb__server_config_check(const nwb_server_config_t *cfg, char *errbuf, size_t errlen);

/* ---- the server (server.c) ---- */

struct nwb_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_async_t stop_async;
    uv_signal_t sigint, sigterm, sighup;
    int handles_open; /* listener, stop_async, signals: until their close callbacks ran */
    /* settings */
    struct nwb__http_limits http_limits;
    size_t max_body_bytes;
    unsigned request_timeout_ms;
    unsigned idle_timeout_ms;
    unsigned max_connections;
    unsigned queue_max_jobs;
    size_t max_buffered_bytes;
    nwb_server_config_t cfg; /* the rest, strings pointing at the copies below */
    char *out_dir;
    char *bind_addr;
    char *namesym_dirs[NWB_SERVER_NAMESYM_DIRS_MAX]; /* the folders sidecars are loaded from */
    unsigned namesym_dir_count;                      /* the given ones, or the executable's */
    /* identity */
    int port;
    int ipv6;
    char anon_run[32]; /* run id for requests without X-NWB-Run */
    uint64_t start_mono_ns;
    /* connections */
    struct nwb__conn *conns;
    unsigned conn_count;
    char *read_buf; /* NWB__READ_BUF_SIZE, shared by every connection's reads */
    uint8_t *body_pool[NWB__BODY_POOL_MAX]; /* spare body buffers (http_conn.c) */
    unsigned body_pool_n;
    /* flow control (flow.c) */
    size_t budget_used;
    struct nwb__conn *budget_head, *budget_tail;
    struct nwb__conn *queue_head, *queue_tail;
    int reading_paused;
    int granting;
    uint64_t inline_tick; /* uv_now() of the tick inline_bytes counts */
    size_t inline_bytes;  /* body bytes written inline in that tick */
    /* the log worker */
    struct nwb__log_worker *worker;
    /* name symbols: the current table (new telemetry ingests and the next switch) and the
     * one the log worker renders with */
    struct nwb__names *names;
    struct nwb__names *worker_names;
    struct nwb__reload reload;
    /* crash ingest (crash_int.h) */
    struct nwb__crash_ingest *crash;
    struct nwb__forwarder *forwarder; /* --forward-clickhouse; NULL without it */
    /* the run index behind GET /v1/runs (read_int.h); it holds one of handles_open */
    struct nwb__run_index *runs;
    size_t read_bytes; /* read answers being built or written (NWB__READ_ANSWERS_MAX) */
    int failed;        /* create failed: the last handle closed frees the server */
    /* GET /v1/events: the event bus (events_int.h); counts as one of handles_open */
    struct nwb__events *events;
    /* telemetry: the live runs' report states, and a lane per run with requests out */
    struct nwb__tel_ingest_metrics tel_metrics;
    struct nwb__tel_ingest_limits tel_limits;
    struct nwb__tel_cache *tel_cache;
    struct nwb__tel_lane *tel_lanes;
    /* lifecycle */
    int stopping;
    int worker_stopped;
    int accept_err_reported;
    struct nwb__metrics metrics;
    struct nwb__auth auth; /* access control (auth.c) */
    /* the symbol store (symbols_int.h): --symbols-dir, and the next upload's temp file number */
    char *symbols_dir;
    uint64_t symbols_upload_seq;
};

/* A connection was freed or a job returned: finish a pending shutdown when nothing is left. */
void nwb__server_maybe_finish(struct nwb_server *srv);

#endif /* NWB_SERVER_INT_H */
