/* SPDX-License-Identifier: MIT */
/*
 * log_line_parse.h - one line of a run's log.txt back into its columns, for the ClickHouse
 * forwarder. The server wrote the line (nwb_log_line_format(), nwb/log_line.h); the parser is
 * strict about that form and says in one line why it refuses anything else (a damaged file,
 * a line written by hand). Pure: no allocation, no I/O, any thread.
 */
#ifndef NWB_LOG_LINE_PARSE_H
#define NWB_LOG_LINE_PARSE_H

#include <stddef.h>
#include <stdint.h>

/** The longest line parsed, bytes without the '\n': the renderer's longest line. */
#define NWB__FWD_LINE_MAX 1052832u

/** Columns of one line; the pointers borrow from the parsed text. */
struct nwb__fwd_line {
    uint64_t time_s;  /* seconds since the Unix epoch, UTC */
    uint32_t time_ns; /* nanoseconds within that second */
    unsigned level;   /* 0 INFO, 1 WARNING, 2 ERROR, 3 FATAL */
    uint64_t thread_id;
    const char *thread_name; /* as written: escaped (\xNN), without the brackets; len 0: none */
    size_t thread_name_len;
    const char *program;
    size_t program_len;
    const char *file; /* len 0: the record had no source file */
    size_t file_len;
    uint32_t line;
    const char *msg; /* as written: names decoded, control bytes as \n, \r, \xNN */
    size_t msg_len;
};

/**
 * Parse @p len bytes at @p text, one line without its '\n'. Returns 0 with @p out filled, or
 * NWB_EPROTO with a static one-line reason in @p *why ("no level after the time", ...).
 *
 * "file:LINE: " is recognised when the word after the program (up to the next space) is
 * FILE:DIGITS: with a non-empty FILE; a source file name with a space in it therefore reads
 * as part of the message, and a message of a record without a file that starts with such a
 * word reads as a file (the line form cannot tell them apart).
 */
int nwb__fwd_line_parse(const char *text, size_t len, struct nwb__fwd_line *out, const char **why);

#endif /* NWB_LOG_LINE_PARSE_H */
