/* SPDX-License-Identifier: MIT */
/*
 * nwb/error.h - error codes shared by every nwb module.
 *
 * Functions that can fail return int: 0 on success, a negative code on
 * failure. System errors pass through unchanged as the negated errno (the
 * same values as libuv's UV_E* on Unix); nwb's own codes live in a range
 * libuv does not use. Codes are ABI: never renumber or reuse one, retire it.
 */
#ifndef NWB_ERROR_H
#define NWB_ERROR_H

#include "nwb/common.h"

#define NWB_ERRNO_MAP(XX)                                                                          \
    XX(PROTO, -20001, "malformed frame or request")                                                \
    XX(VERSION, -20002, "unsupported wire format version")                                         \
    XX(TOOBIG, -20003, "payload exceeds the configured limit")                                     \
    XX(COMPRESS, -20004, "zstd (de)compression failed")                                            \
    XX(ARCHIVE, -20005, "archive read or write failed")                                            \
    XX(CONFIG, -20006, "invalid configuration")                                                    \
    XX(TRUNCATED, -20007, "input ends before the structure it announces")                          \
    XX(MAGIC, -20008, "bad magic number")                                                          \
    XX(RANGE, -20009, "offset or length out of range")                                             \
    XX(FULL, -20010, "queue or buffer is full")                                                    \
    XX(CLOSED, -20011, "object is shut down")                                                      \
    XX(DUPLICATE, -20012, "duplicate entry")                                                       \
    XX(UNSORTED, -20013, "entries are not sorted")                                                 \
    XX(TIMEOUT, -20014, "operation timed out")                                                     \
    XX(HTTP, -20015, "unexpected HTTP response")                                                   \
    XX(NOTREG, -20016, "not a regular file")

typedef enum {
#define XX(name, code, msg) NWB_E##name = (code),
    NWB_ERRNO_MAP(XX)
#undef XX
        NWB_E_RESERVED_ = -20999 /* keeps the enum signed; do not use */
} nwb_errno_t;

/**
 * Describe @p err, an nwb code or a negated errno.
 *
 * Never allocates. Returns a static string or @p buf. Async-signal-safe for
 * nwb codes only.
 */
NWB_API const char *nwb_strerror_r(int err, char *buf, size_t buflen);

/** The symbolic name of @p err ("NWB_EPROTO", "ENOSPC", ...) or "UNKNOWN". Static string. */
NWB_API const char *nwb_err_name(int err);

#endif /* NWB_ERROR_H */
