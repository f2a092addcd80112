/* SPDX-License-Identifier: MIT */
/*
 * tel_int.h - private declarations shared by telemetry's files: the payload validator the
 * encoders reuse, the streaming JSON writer, the log-linear histogram behind the report's
 * scope percentiles, and how names become text (the stream's strings, the sidecar, tokens).
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

/* ---- Names: the strings a stream carries (tel_names.c) ---------------------------------- */

/*
 * The strings of a stream's string-table events, kept by hash (the first string of a hash
 * wins; the decoder has checked that each is its hash's string). Bounded: at most
 * NWB_TEL_REPORT_STRINGS_MAX strings and NWB_TEL_REPORT_STRING_BYTES_MAX bytes of them
 * (nwb/telemetry_report.h); entries beyond are not kept and counted in not_kept.
 */
struct nwb__tel_str_slot;

struct nwb__tel_strings {
    struct nwb__tel_str_slot *slots; /* open addressing, NULL until the first string */
    size_t mask;
    uint32_t count;
    char *bytes; /* the strings back to back, as the stream carried them */
    size_t len, cap;
    uint64_t not_kept; /* entries of new names beyond the bounds */
};

void nwb__tel_strings_init(struct nwb__tel_strings *s);
/* Keep the strings of one string-table event. Returns 0 or -ENOMEM (the rest not kept). */
int nwb__tel_strings_add(struct nwb__tel_strings *s, const nwb_tel_strings_view_t *v);
/* The string of @p n (borrowed, not NUL-terminated, any bytes) and its length, or NULL. */
const char *nwb__tel_strings_find(const struct nwb__tel_strings *s, nwb_name_t n, size_t *len);
size_t nwb__tel_strings_memory(const struct nwb__tel_strings *s);
void nwb__tel_strings_cleanup(struct nwb__tel_strings *s);

/* How a reader turns a name into text: the stream's strings first, then the .namesym
 * sidecar, else the "#" token. Both members are borrowed and may be NULL. */
struct nwb__tel_names {
    const struct nwb__tel_strings *strings;
    const nwb_namesym_table_t *sym;
};

/* The string of @p n from @p nm (stream strings, then sidecar), or NULL. */
const char *nwb__tel_name_find(const struct nwb__tel_names *nm, nwb_name_t n, size_t *len);

/* ---- JSON values of names and text (tel_json.c; the writer is nwb/json.h) ------------- */

/* Write name @p n as a JSON string: its string from @p nm when found, else its token. */
void nwb__tel_json_name(nwb_json_t *j, const struct nwb__tel_names *nm, nwb_name_t n);

/*
 * Write @p msg as a JSON string with its "#" name tokens (the rule of nwb_namesym_decode())
 * replaced by their strings from @p nm, built in @p scratch; a message whose decoded text
 * does not fit the scratch cap keeps its tokens.
 */
void nwb__tel_json_text(nwb_json_t *j, const struct nwb__tel_names *nm, const char *msg, size_t len,
                        nwb_buf_t *scratch);

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
