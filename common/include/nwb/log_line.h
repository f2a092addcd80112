/* SPDX-License-Identifier: MIT */
/*
 * nwb/log_line.h - the text form of one record, shared by the server's
 * per-run log.txt and the client's standalone log file, so both write the
 * same lines:
 *
 *   2026-12-01T07:34:00.123456789Z INFO    4242[render] mygame main.c:42: message
 *
 * Time is UTC with nanoseconds; the level is padded to 7 columns; then the
 * thread id with the thread's name in brackets when the record has one (a
 * control byte, DEL, space, '[' or ']' in the name written as \xNN, so the
 * field cannot end early or be forged), the program, "file:line:" when the record has a source
 * file, and the message. Control bytes in the message (and a CR or LF) are escaped
 * (\n, \r, \xNN) so every record is exactly one line.
 */
#ifndef NWB_LOG_LINE_H
#define NWB_LOG_LINE_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/common.h"
#include "nwb/log_batch.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes of "LEVEL   THREAD[NAME] PROGRAM " nwb_log_line_format() caches; longer ones are built. */
#define NWB_LOG_LINE_PREFIX_MAX 128u
/** Bytes a thread name takes in a line at most: '[', 4 per byte escaped, ']'. */
#define NWB_LOG_LINE_NAME_MAX (2u + 4u * NWB_LOG_THREAD_NAME_MAX)
/** Prefixes cached at once (direct-mapped by thread id and level). */
#define NWB_LOG_LINE_PREFIX_SLOTS 8u

/** One cached "LEVEL   THREAD[NAME] PROGRAM " text; len 0 when the slot is empty. */
struct nwb_log_line_prefix {
    uint64_t thread;
    uint32_t len;
    uint8_t level;
    uint8_t name_len; /* the raw thread name the text was made with */
    char name[NWB_LOG_THREAD_NAME_MAX];
    char text[NWB_LOG_LINE_PREFIX_MAX];
};

/**
 * What nwb_log_line_format() keeps between lines: the formatted date-time of
 * the last second seen and the "LEVEL   THREAD PROGRAM " texts of recent
 * (level, thread) pairs for one program. Caller storage, one per thread;
 * start it with NWB_LOG_LINE_CLOCK_INIT. The program is compared by pointer
 * and length, so its text must not change in place while the clock is used.
 */
typedef struct nwb_log_line_clock {
    int64_t sec;                /* -1 when empty */
    char text[24];              /* "YYYY-mm-ddTHH:MM:SS." */
    const char *prefix_program; /* the program the prefixes were made for */
    size_t prefix_program_len;
    struct nwb_log_line_prefix prefix[NWB_LOG_LINE_PREFIX_SLOTS];
} nwb_log_line_clock_t;

#define NWB_LOG_LINE_CLOCK_INIT                                                                    \
    {                                                                                              \
        -1, {0}, NULL, 0,                                                                          \
        {                                                                                          \
            {                                                                                      \
                0, 0, 0, 0, {0},                                                                   \
                {                                                                                  \
                    0                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

/** Fixed bytes a line can take besides program, file and the escaped message (name included). */
#define NWB_LOG_LINE_FIXED_MAX (96u + NWB_LOG_LINE_NAME_MAX)

/**
 * The largest line @p rec can produce with a program name of @p program_len
 * bytes. The file name and the message are escaped: each byte can take 4.
 */
static inline size_t nwb_log_line_max(const nwb_log_record_t *rec, size_t program_len)
{
    return NWB_LOG_LINE_FIXED_MAX + program_len + 4u * (size_t)rec->file_len +
           4u * (size_t)rec->msg_len;
}

/**
 * Format @p rec as one line ending in '\n' at @p dst. @p cap must be at least
 * nwb_log_line_max(). Returns the bytes written (no NUL is added).
 */
NWB_API size_t nwb_log_line_format(char *dst, size_t cap, nwb_log_line_clock_t *clock,
                                   const nwb_log_record_t *rec, const char *program,
                                   size_t program_len);

struct nwb_namesym_table; /* nwb/namesym.h */

/**
 * nwb_log_line_format() of @p rec with the #tokens of its message decoded
 * with @p names as nwb_namesym_decode() does, in the same pass as the
 * escaping: no decoded copy of the message is made, and a message without a
 * token costs about what nwb_log_line_format() does. A name goes in only
 * while the decoded message, with the rest of it raw, stays within
 * @p decoded_max bytes; from the first that would not, the rest stays as it
 * is. Returns the bytes written and adds the tokens decoded and unknown to
 * @p decoded and @p unknown; returns 0 and adds nothing when the line does
 * not fit in @p cap (never when @p cap is at least nwb_log_line_max() with
 * msg_len @p decoded_max).
 */
NWB_API size_t nwb_log_line_format_names(char *dst, size_t cap, nwb_log_line_clock_t *clock,
                                         const nwb_log_record_t *rec, const char *program,
                                         size_t program_len, const struct nwb_namesym_table *names,
                                         size_t decoded_max, uint64_t *decoded, uint64_t *unknown);

/** Write "YYYYmmdd-HHMMSS" (UTC) of @p time_ns and a NUL into @p out[16]. */
NWB_API void nwb_time_compact(uint64_t time_ns, char out[16]);

/** Wall-clock time in ns since the Unix epoch. */
NWB_API uint64_t nwb_time_now_ns(void);

/** Monotonic time in ns, for timeouts and durations. */
NWB_API uint64_t nwb_time_mono_ns(void);

#ifdef __cplusplus
}
#endif

#endif /* NWB_LOG_LINE_H */
