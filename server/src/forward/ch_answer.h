/* SPDX-License-Identifier: MIT */
/*
 * ch_answer.h - what the forwarder reads in ClickHouse's HTTP answers: a one-number result
 * (SELECT max(version) ...) and, for a refused query, the engine's reason cut to one safe line
 * for the server's stderr ("Code: 60, e.displayText() = DB::Exception: Table nwb.x doesn't
 * exist"). Strict, bounded, pure; any thread.
 */
#ifndef NWB_CH_ANSWER_H
#define NWB_CH_ANSWER_H

#include <stddef.h>
#include <stdint.h>

/** Bytes of a reason kept, the NUL included. */
#define NWB__CH_REASON_MAX 256u

/**
 * The answer @p body (@p len bytes) as one unsigned decimal number: digits (at most 20, the
 * value at most 2^64 - 1) then one optional '\n', nothing else. 0 with @p *out, or NWB_EPROTO.
 */
int nwb__ch_answer_u64(const char *body, size_t len, uint64_t *out);

/**
 * The first line of @p body as a reason in @p out (@p cap bytes, at most NWB__CH_REASON_MAX
 * are used): ", e.what() = ..." and trailing blanks dropped, bytes outside printable ASCII as
 * '?', cut with "..." when longer; "(empty answer)" when nothing is left. Always
 * NUL-terminated when @p cap > 0.
 */
void nwb__ch_answer_reason(const char *body, size_t len, char *out, size_t cap);

#endif /* NWB_CH_ANSWER_H */
