/* SPDX-License-Identifier: MIT */
/*
 * nwb/log_tail.h - the last log lines, kept in a fixed in-memory ring for
 * crash capture. The logger client's worker appends every record it takes
 * (one writer); the crash handler copies the ring out with async-signal-safe
 * calls only. Bounded: the ring is NWB_LOG_TAIL_BYTES and never grows.
 */
#ifndef NWB_LOG_TAIL_H
#define NWB_LOG_TAIL_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/common.h"
#include "nwb/log_batch.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NWB_LOG_TAIL_BYTES    (64u * 1024u)
#define NWB_LOG_TAIL_LINE_MAX 1024u /* longer messages are cut, marked with "..." */

/**
 * Turn the tail on or off (off by default). Crash capture turns it on when
 * it is installed, so programs without crash capture pay nothing for it.
 */
NWB_API void nwb_log_tail_enable(int on);

/** 1 when the tail is on. Cheap (one relaxed load). */
NWB_API int nwb_log_tail_enabled(void);

/**
 * Append @p rec as one line "<time_ns> <LEVEL> <thread> <file>:<line>: <message>\n".
 * One writer thread at a time (the client worker). Never allocates or blocks.
 */
NWB_API void nwb_log_tail_append(const nwb_log_record_t *rec);

/**
 * Write the tail, oldest line first, to @p fd. Async-signal-safe (only
 * write(2)); a line being appended at the moment of the crash may be torn.
 * Returns the bytes written, or -1.
 */
NWB_API long nwb_log_tail_write_fd(int fd);

/** Copy the tail into @p dst (at most @p cap bytes, oldest first). Returns the bytes copied. */
NWB_API size_t nwb_log_tail_copy(char *dst, size_t cap);

/** Forget everything (tests). */
NWB_API void nwb_log_tail_reset(void);

#ifdef __cplusplus
}
#endif

#endif /* NWB_LOG_TAIL_H */
