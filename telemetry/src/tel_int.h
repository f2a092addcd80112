/* SPDX-License-Identifier: MIT */
/*
 * tel_int.h - private declarations shared by telemetry's files: the payload validator the
 * encoders reuse, the streaming JSON writer, the log-linear histogram behind the report's
 * scope percentiles, and name formatting.
 */
#ifndef NWB_TEL_INT_H
#define NWB_TEL_INT_H

#include <stdio.h>

#include "nwb/namesym.h"
#include "nwb/telemetry_format.h"

/* Validate a core payload (kinds above NWB_TEL_KIND_LAST pass); fills ev->u. tel_decode.c. */
int nwb__tel_payload_validate(unsigned kind, unsigned version, const uint8_t *p, size_t size,
                              nwb_tel_event_t *ev, size_t *bad, const char **why);

/*
 * nwb_tel_encode_perf() without the decoder pass, for the recorder: it admits only scopes with
 * end >= start and depth <= 255, and builds GPU windows from integers (finite, min <= max),
 * which is everything the perf check looks at. The recorder tests decode what it writes.
 */
int nwb__tel_encode_perf_trusted(nwb_tel_buf_t *b, uint64_t ts, uint64_t frame,
                                 const nwb_tel_perf_frame_t *pf);

/* Store @p n CPU scopes in wire form at @p q (n * 32 bytes). tel_encode.c. */
void nwb__tel_cpu_scopes_store(uint8_t *q, const nwb_tel_cpu_scope_t *s, uint32_t n);

/* ---- JSON writer (tel_json.c) ------------------------------------------------------------- */

#define NWB__JSON_DEPTH_MAX 32

/*
 * Appends JSON to a capped buffer; with @p out set, the buffer is written to the file whenever
 * it passes 64 KiB (streaming). Commas are inserted automatically. Errors are sticky: the first
 * one is kept in err and later calls do nothing. Strings are re-sanitised to valid UTF-8.
 */
struct nwb__json {
    nwb_tel_buf_t *buf; /* borrowed */
    FILE *out;          /* borrowed, may be NULL */
    int err;
    int depth;
    int after_key;
    uint8_t has_item[NWB__JSON_DEPTH_MAX];
};

void nwb__json_init(struct nwb__json *j, nwb_tel_buf_t *buf, FILE *out);
void nwb__json_obj_begin(struct nwb__json *j);
void nwb__json_obj_end(struct nwb__json *j);
void nwb__json_arr_begin(struct nwb__json *j);
void nwb__json_arr_end(struct nwb__json *j);
void nwb__json_key(struct nwb__json *j, const char *key);
void nwb__json_str(struct nwb__json *j, const char *s, size_t len);
void nwb__json_cstr(struct nwb__json *j, const char *s);
void nwb__json_u64(struct nwb__json *j, uint64_t v);
void nwb__json_i64(struct nwb__json *j, int64_t v);
/* A number with @p decimals fixed decimals; non-finite values are written as 0. */
void nwb__json_dbl(struct nwb__json *j, double v, int decimals);
void nwb__json_null(struct nwb__json *j);
void nwb__json_bool(struct nwb__json *j, int v);
/* Raw bytes (a pre-formatted value, separators); the caller keeps the document valid. */
void nwb__json_raw(struct nwb__json *j, const char *s, size_t len);
/* Comma bookkeeping for a raw value written with nwb__json_raw(). */
void nwb__json_value_sep(struct nwb__json *j);
/* Write out what is buffered (streaming mode). Returns j->err. */
int nwb__json_flush(struct nwb__json *j);

/* Append @p len bytes as a JSON string body (no quotes), escaped and UTF-8 sanitised. */
int nwb__json_escape_into(nwb_tel_buf_t *b, const char *s, size_t len);

/*
 * Write name @p n as a JSON string: its string from @p names when found, else its token.
 * Text messages go through nwb__tel_text_decode() first.
 */
void nwb__tel_json_name(struct nwb__json *j, const nwb_namesym_table_t *names, nwb_name_t n);

/*
 * Decode name tokens in @p msg with @p names (NULL = copy) into @p scratch, and write the
 * result as a JSON string.
 */
void nwb__tel_json_text(struct nwb__json *j, const nwb_namesym_table_t *names, const char *msg,
                        size_t len, nwb_tel_buf_t *scratch);

/* ---- Log-linear histogram (tel_hist.c) ---------------------------------------------------- */

/* 32 exact buckets below 32, then 32 sub-buckets per power of two up to 2^40 (larger values
 * land in the last bucket; the exact maximum is kept beside). */
#define NWB__HIST_SUB     32u
#define NWB__HIST_BUCKETS (32u + 35u * 32u)

struct nwb__hist {
    uint32_t *counts; /* NWB__HIST_BUCKETS, allocated on the first sample; NULL = empty */
    uint64_t n;
    uint64_t max;
};

/* Returns 0 or -ENOMEM (the sample is then not counted). */
int nwb__hist_add(struct nwb__hist *h, uint64_t v);
/* Nearest-rank quantile @p q in (0, 1]: the upper bound of the bucket holding that rank,
 * clamped to the maximum seen (at most 1/32 above the true value). 0 when empty. */
uint64_t nwb__hist_quantile(const struct nwb__hist *h, double q);
void nwb__hist_cleanup(struct nwb__hist *h);

/* Bucket index of @p v and that bucket's largest value (exposed for the tests). */
unsigned nwb__hist_index(uint64_t v);
uint64_t nwb__hist_upper(unsigned idx);

#endif /* NWB_TEL_INT_H */
