/* SPDX-License-Identifier: MIT */
/*
 * nwb/json.h - the one streaming JSON writer of nwb: every answer, report, trace and file the
 * server and the tools emit as JSON is written through it.
 *
 * It appends to a capped nwb_buf_t; with a FILE set it writes the buffer out whenever it
 * passes 64 KiB (streaming a large report in bounded memory). Commas are inserted
 * automatically. Strings are escaped once, here, and re-sanitised to valid UTF-8 (an invalid
 * byte becomes U+FFFD), so text from clients can never break the document.
 *
 * Nesting is tracked: a key outside an object, a value in an object without its key, a close
 * that does not match its open, a second top-level value, or a document finished empty or
 * with levels still open is a bug in the caller. Debug builds stop on it (abort, with the
 * reason on stderr); NDEBUG builds turn it into the sticky error NWB_EPROTO. Nesting deeper
 * than NWB_JSON_DEPTH_MAX is NWB_ETOOBIG, the buffer's cap NWB_ETOOBIG, a failed write -EIO.
 * Errors are sticky: the first is kept in @c err and every later call does nothing.
 */
#ifndef NWB_JSON_H
#define NWB_JSON_H

#include <stdio.h>

#include "nwb/buf.h"

#define NWB_JSON_DEPTH_MAX 32

typedef struct nwb_json {
    nwb_buf_t *buf; /* borrowed */
    FILE *out;      /* borrowed, may be NULL */
    int err;
    int depth;
    int after_key;
    int top_done; /* the one top-level value has begun */
    uint8_t has_item[NWB_JSON_DEPTH_MAX];
    uint8_t is_object[NWB_JSON_DEPTH_MAX];
} nwb_json_t;

/** Start a document in @p buf (appended to), streamed to @p out when it is not NULL. Streaming,
 * a string longer than the buffer's cap is written out in pieces. */
NWB_API void nwb_json_init(nwb_json_t *j, nwb_buf_t *buf, FILE *out);
NWB_API void nwb_json_obj_begin(nwb_json_t *j);
NWB_API void nwb_json_obj_end(nwb_json_t *j);
NWB_API void nwb_json_arr_begin(nwb_json_t *j);
NWB_API void nwb_json_arr_end(nwb_json_t *j);
/** An object key (escaped like a string); the next call must write its value. */
NWB_API void nwb_json_key(nwb_json_t *j, const char *key);
NWB_API void nwb_json_str(nwb_json_t *j, const char *s, size_t len);
NWB_API void nwb_json_cstr(nwb_json_t *j, const char *s);
NWB_API void nwb_json_u64(nwb_json_t *j, uint64_t v);
NWB_API void nwb_json_i64(nwb_json_t *j, int64_t v);
/** A number with @p decimals fixed decimals (0..9); non-finite values are written as 0. */
NWB_API void nwb_json_dbl(nwb_json_t *j, double v, int decimals);
NWB_API void nwb_json_null(nwb_json_t *j);
NWB_API void nwb_json_bool(nwb_json_t *j, int v);
/** A number already formatted by the caller (@p len bytes of JSON number grammar). */
NWB_API void nwb_json_number_text(nwb_json_t *j, const char *s, size_t len);
/** Whitespace between or after values (a trailing newline); nothing else may be written. */
NWB_API void nwb_json_space(nwb_json_t *j, const char *s, size_t len);
/** Write out what is buffered (streaming mode). Returns j->err. */
NWB_API int nwb_json_flush(nwb_json_t *j);
/** End the document: every level must be closed. Flushes in streaming mode. Returns j->err. */
NWB_API int nwb_json_finish(nwb_json_t *j);

/** Append @p len bytes to @p b as a JSON string body (no quotes), escaped and UTF-8
 * sanitised. Returns 0 or a nwb_buf_append() error. */
NWB_API int nwb_json_escape_into(nwb_buf_t *b, const char *s, size_t len);

#endif /* NWB_JSON_H */
