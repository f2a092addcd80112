/* SPDX-License-Identifier: MIT */
/*
 * nwb/buf.h - a growable byte buffer with a hard cap (curl's dynbuf): every encoder, JSON
 * writer and answer builder in nwb appends to one. Caller storage; grows with nwb_realloc.
 */
#ifndef NWB_BUF_H
#define NWB_BUF_H

#include "nwb/common.h"

/** A byte buffer that never holds more than @c max bytes. */
typedef struct nwb_buf {
    uint8_t *data; /* owned; NULL until the first append */
    size_t len;
    size_t cap;
    size_t max; /* len never exceeds this */
} nwb_buf_t;

/** An empty buffer capped at @p max bytes: `nwb_buf_t b = NWB_BUF_INIT(1 << 20);` */
#define NWB_BUF_INIT(max_bytes)                                                                    \
    {                                                                                              \
        NULL, 0, 0, (max_bytes)                                                                    \
    }

NWB_API void nwb_buf_init(nwb_buf_t *b, size_t max);
/** Make room for @p extra more bytes. Returns 0, NWB_ETOOBIG (beyond max) or -ENOMEM. */
NWB_API int nwb_buf_reserve(nwb_buf_t *b, size_t extra);
/** Append @p n bytes (reserve + copy). Returns 0 or a reserve error; on error len is unchanged. */
NWB_API int nwb_buf_append(nwb_buf_t *b, const void *p, size_t n);
/** Append a NUL-terminated string (without its NUL). */
NWB_API int nwb_buf_append_str(nwb_buf_t *b, const char *s);
/** Append printf output. Returns 0, NWB_ETOOBIG, -ENOMEM or NWB_EPROTO (bad format); on error
 * len is unchanged. */
NWB_API int nwb_buf_appendf(nwb_buf_t *b, const char *fmt, ...) NWB_PRINTF_LIKE(2, 3);
/** Keep the memory, forget the contents. NULL-safe. */
NWB_API void nwb_buf_reset(nwb_buf_t *b);
/** Release the memory; the buffer stays usable (empty, same max). NULL-safe, idempotent. */
NWB_API void nwb_buf_cleanup(nwb_buf_t *b);

#endif /* NWB_BUF_H */
