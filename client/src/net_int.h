/* SPDX-License-Identifier: MIT */
/*
 * net_int.h - private declarations of the client's network side: the HTTP
 * output's tuning and test hooks (http_out.c), the request/response codec
 * (net_http.c), the spool files (spool.c, docs/spool.md) and small helpers
 * (net_util.c). Everything here runs on the client's worker thread.
 */
#ifndef NWB_NET_INT_H
#define NWB_NET_INT_H

#include <stddef.h>
#include <stdint.h>

#include <llhttp.h>

#include "client_int.h"

/* ---- bounds (docs/spool.md lists them) ---- */

/* A sealed batch never exceeds this, whatever settings->batch_bytes says (one record may
 * still make a batch larger than batch_bytes, never larger than this). */
#define NWB_NET_BATCH_MAX (8u * 1024u * 1024u)
/* Smallest batch_bytes honoured; smaller values are raised to it. */
#define NWB_NET_BATCH_MIN 256u
/* The server counts as taking batches while its last 2xx is at most this old: a full memory
 * then pushes back onto the rings instead of filling the spool. */
#define NWB_NET_DELIVERING_NS (1000u * 1000u * 1000u)
/* The request head (request line and headers) never exceeds this. */
#define NWB_NET_HEAD_MAX 1024u

/* ---- one batch: the open one, a sealed one in memory, or one read back from a spool ---- */

struct nwb__batch {
    struct nwb__batch *next;
    uint64_t seq;
    uint32_t len;     /* bytes used in data (the whole wire batch) */
    uint32_t cap;     /* bytes allocated for data */
    uint32_t records; /* records in the batch */
    uint8_t data[];
};

/* Allocate a batch with room for @p cap bytes. NULL when out of memory. */
struct nwb__batch *nwb__batch_alloc(uint32_t cap);
/* Grow @p *b to at least @p cap bytes. Returns 0 or NWB_EFULL (out of memory; *b unchanged). */
int nwb__batch_reserve(struct nwb__batch **b, uint32_t cap);
/* What a batch costs against settings->memory_bytes. */
size_t nwb__batch_cost(const struct nwb__batch *b);

/* ---- HTTP output tuning (tests shorten the timeouts) ---- */

struct nwb__http_tuning {
    unsigned connect_timeout_ms;  /* a connect not finished by then fails */
    unsigned response_timeout_ms; /* from the first byte sent to the complete response */
    unsigned backoff_min_ms;      /* first retry delay after a failure ... */
    unsigned backoff_max_ms;      /* ... doubling up to this (each delay jittered to 50-100%) */
    unsigned retry_after_cap_ms;  /* a 503/429 Retry-After is honoured up to this */
    unsigned hard_fail_max;  /* other 5xx (and 3xx) answers to one batch before it is dropped */
    unsigned spool_retry_ms; /* after a spool write error, wait this long before trying again */
};

#define NWB__HTTP_TUNING_INIT                                                                      \
    {                                                                                              \
        5000u, 10000u, 50u, 2000u, 10000u, 5u, 1000u                                               \
    }

/* nwb__http_out_create() with explicit tuning (NULL: NWB__HTTP_TUNING_INIT). */
int nwb__http_out_create_tuned(const struct nwb__settings *s, struct nwb__stats *st,
                               const struct nwb__http_tuning *t, struct nwb__out **out,
                               char *errbuf, size_t errlen);

/* A snapshot of the output's state, for tests and diagnostics. */
struct nwb__http_out_info {
    int connected;              /* a TCP connection is open */
    uint64_t connect_failures;  /* failed connects, resets, timeouts, bad responses */
    uint64_t mem_batches;       /* sealed batches held in memory (including one in flight) */
    uint64_t mem_bytes;         /* what they cost against memory_bytes */
    uint64_t spool_batches;     /* this run's batches in its spool, not yet acknowledged */
    uint64_t spool_bytes;       /* this run's spool files on disk */
    uint64_t old_files_pending; /* earlier runs' spool files still to deliver */
    uint64_t next_seq;          /* seq the next sealed batch gets */
    uint64_t rejected;          /* batches the server refused (4xx) */
};

void nwb__http_out_info_get(struct nwb__out *o, struct nwb__http_out_info *info);

/* ---- HTTP/1.1 request head and response parser (net_http.c) ---- */

/*
 * Write the head of `POST /v1/log` for a @p body_len byte batch into @p dst.
 * @p token may be NULL or empty (no Authorization header). Every string must
 * already be free of control characters (see nwb__http_header_safe()).
 * Returns the length, or NWB_ETOOBIG when it does not fit in @p cap.
 */
int nwb__http_request_head(char *dst, size_t cap, const char *host, const char *port,
                           const char *program, const char *run, uint64_t seq, size_t body_len,
                           const char *token);

/* 1 when @p s is non-empty printable ASCII without spaces (a header value we may send). */
int nwb__http_header_safe(const char *s, int allow_space);

/* Response parser: strict llhttp, one response at a time. Caller storage. */
struct nwb__http_resp {
    llhttp_t parser;
    int status;         /* of the last complete final response */
    int keep_alive;     /* 1 when the connection may carry the next request */
    long retry_after_s; /* Retry-After in seconds, -1 when absent or not a number */
    int complete;       /* a final (non-1xx) response is complete */
    uint64_t bytes;     /* bytes fed since the last reset */
    /* header matching across split reads */
    char field[16];
    size_t field_len;
    int field_long;
    int in_retry_after;
    char value[24];
    size_t value_len;
    int value_long;
};

/* Prepare for a fresh connection. */
void nwb__http_resp_init(struct nwb__http_resp *r);

/*
 * Feed @p len bytes. Stops after a complete final response (r->complete set)
 * and stores the bytes used in @p *used. Returns 0, or NWB_EPROTO for bytes
 * that are not a valid HTTP/1.x response.
 */
int nwb__http_resp_feed(struct nwb__http_resp *r, const char *data, size_t len, size_t *used);

/* The peer closed the connection. Returns 0 (r->complete may become set) or NWB_EPROTO. */
int nwb__http_resp_eof(struct nwb__http_resp *r);

/* After a complete response was handled: expect the next one. */
void nwb__http_resp_next(struct nwb__http_resp *r);

/* ---- spool files (spool.c; the byte layout is in docs/spool.md) ---- */

#define NWB_SPOOL_MAGIC        0x5342574Eu /* "NWBS" as bytes */
#define NWB_SPOOL_ENTRY_MAGIC  0x4542574Eu /* "NWBE" as bytes */
#define NWB_SPOOL_VERSION      1u
#define NWB_SPOOL_ENTRY_HEADER 24u
/* Largest entry payload a reader accepts. */
#define NWB_SPOOL_ENTRY_MAX (16u * 1024u * 1024u)
/* A run's spool is split into segment files of about cap / NWB_SPOOL_SEGMENTS bytes. */
#define NWB_SPOOL_SEGMENTS 8u
/* At most this many earlier spool files are considered per directory scan. */
#define NWB_SPOOL_SCAN_MAX 1024u
/* File name suffix of a spool segment. */
#define NWB_SPOOL_SUFFIX ".spool"

/* The identity a spool file header carries. */
struct nwb__spool_ident {
    char program[NWB_SAFE_NAME_MAX + 1];
    char run[17];
    uint64_t start_ns; /* the run's start, wall clock */
    uint32_t segno;
};

/* Header bytes for @p id (program and run lengths decide it). */
size_t nwb__spool_header_size(const struct nwb__spool_ident *id);
/* Encode a header into @p dst (nwb__spool_header_size() bytes). */
void nwb__spool_header_encode(uint8_t *dst, const struct nwb__spool_ident *id);
/*
 * Decode a header from the first @p len bytes of a file. Returns the header
 * size (> 0), or NWB_ETRUNCATED, NWB_EMAGIC, NWB_EVERSION, NWB_EPROTO with a
 * static reason in @p *why.
 */
int nwb__spool_header_decode(const uint8_t *src, size_t len, struct nwb__spool_ident *id,
                             const char **why);

/* The current run's spool: segment files it writes, holds locked, and reads back. */
struct nwb__spool;

/*
 * Prepare the spool of run @p id in @p dir with a cap of @p cap_bytes on disk.
 * No file is made until the first append. Returns 0 or NWB_EFULL (memory).
 */
int nwb__spool_create(const char *dir, const struct nwb__spool_ident *id, uint64_t cap_bytes,
                      struct nwb__spool **out);

/*
 * Append one batch. When the cap would be exceeded, whole segments are
 * dropped, oldest first: @p *dropped receives how many unacknowledged batches
 * went, and @p *head_lost is set when that included the entry handed out by
 * nwb__spool_peek() (it is not counted in *dropped). Returns 0, NWB_ETOOBIG
 * when the batch alone is larger than the cap, or a negated errno after an
 * I/O error (the file is left as it was before the call).
 */
int nwb__spool_append(struct nwb__spool *sp, uint64_t seq, const uint8_t *data, uint32_t len,
                      uint64_t *dropped, int *head_lost);

/*
 * Read the oldest unacknowledged batch into a new batch (the caller frees it
 * with nwb_free) and mark it handed out. Returns 1, 0 when the spool is empty,
 * or a negative code (a damaged segment is reported, dropped and counted in
 * @p *dropped; call again).
 */
int nwb__spool_peek(struct nwb__spool *sp, struct nwb__batch **out, uint64_t *dropped);

/* Mark the oldest entry handed out without reading it (it was just appended from the slot). */
void nwb__spool_mark_head(struct nwb__spool *sp);

/* The handed-out entry was acknowledged (or rejected): forget it, delete emptied segments. */
void nwb__spool_pop(struct nwb__spool *sp);

/* The handed-out entry goes back to being unsent. */
void nwb__spool_unpeek(struct nwb__spool *sp);

/* Unacknowledged entries, and bytes on disk. */
uint64_t nwb__spool_live(const struct nwb__spool *sp);
uint64_t nwb__spool_disk_bytes(const struct nwb__spool *sp);

/* Close the files (releasing their locks); files with unacknowledged entries stay. NULL-safe. */
void nwb__spool_destroy(struct nwb__spool *sp);

/* A spool file of an earlier run, found by nwb__spool_scan(). */
struct nwb__spool_found {
    char name[128]; /* file name inside the directory */
    struct nwb__spool_ident id;
};

/*
 * List the spool files of @p program in @p dir (at most NWB_SPOOL_SCAN_MAX),
 * oldest run first, then by segment. Files locked by a live process are
 * skipped; files with a damaged header are reported once and renamed to
 * "<name>.bad". Stores a nwb_malloc'd array (or NULL) and its length. Returns
 * 0 (also when the directory does not exist) or NWB_EFULL.
 */
int nwb__spool_scan(const char *dir, const char *program, struct nwb__spool_found **out,
                    size_t *count);

/* Sequential reader over one earlier spool file, holding its lock. Caller storage. */
struct nwb__spool_reader {
    int fd;
    struct nwb__spool_ident id;
    uint64_t off;      /* next entry */
    uint64_t next_off; /* after the entry last returned */
    uint64_t size;
    const char *why; /* static reason after an error */
    char path[1200];
};

/*
 * Open and lock @p name in @p dir. Returns 0; -EWOULDBLOCK when a live
 * process holds it; -ENOENT when it is gone; a header error as
 * nwb__spool_header_decode() (r->why says which).
 */
int nwb__spool_reader_open(struct nwb__spool_reader *r, const char *dir, const char *name);

/*
 * Read the entry at the current position into a new batch (nwb_free it).
 * Returns 1, 0 at a clean end, or a negative code for a damaged tail (r->why;
 * nothing after it is readable).
 */
int nwb__spool_reader_next(struct nwb__spool_reader *r, struct nwb__batch **out);

/* Move past the entry last returned. */
void nwb__spool_reader_ack(struct nwb__spool_reader *r);

/* Close, deleting the file first when @p remove is set. */
void nwb__spool_reader_close(struct nwb__spool_reader *r, int remove);

/* ---- helpers (net_util.c) ---- */

/* CRC-32C (Castagnoli) of @p len bytes, continuing from @p crc (start with 0). */
uint32_t nwb__crc32c(uint32_t crc, const void *data, size_t len);

/* Write "nwb-client: <message>\n" to stderr with one write(2); never through the logger. */
void nwb__net_report(const char *fmt, ...) NWB_PRINTF_LIKE(1, 2);

/* snprintf that reports truncation: returns 0, or NWB_ETOOBIG when @p cap was too small. */
int nwb__fmt(char *dst, size_t cap, const char *fmt, ...) NWB_PRINTF_LIKE(3, 4);

#endif /* NWB_NET_INT_H */
