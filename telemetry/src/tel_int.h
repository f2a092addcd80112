/* SPDX-License-Identifier: MIT */
/*
 * tel_int.h - private declarations shared by telemetry's files: the payload validator the
 * encoders reuse, the streaming JSON writer, the log-linear histogram behind the report's
 * scope percentiles, and name formatting.
 */
#ifndef NWB_TEL_INT_H
#define NWB_TEL_INT_H

#include <stdio.h>

#include "nwb/json.h"
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
int nwb__tel_encode_perf_trusted(nwb_buf_t *b, uint64_t ts, uint64_t frame,
                                 const nwb_tel_perf_frame_t *pf);

/* Store @p n CPU scopes in wire form at @p q (n * 32 bytes). tel_encode.c. */
void nwb__tel_cpu_scopes_store(uint8_t *q, const nwb_tel_cpu_scope_t *s, uint32_t n);

/* ---- JSON values of names and text (tel_json.c; the writer is nwb/json.h) ------------- */

/*
 * Write name @p n as a JSON string: its string from @p names when found, else its token.
 * Text messages go through nwb__tel_text_decode() first.
 */
void nwb__tel_json_name(nwb_json_t *j, const nwb_namesym_table_t *names, nwb_name_t n);

/*
 * Decode name tokens in @p msg with @p names (NULL = copy) into @p scratch, and write the
 * result as a JSON string.
 */
void nwb__tel_json_text(nwb_json_t *j, const nwb_namesym_table_t *names, const char *msg,
                        size_t len, nwb_buf_t *scratch);

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
