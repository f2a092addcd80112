/* SPDX-License-Identifier: MIT */
/*
 * fuzz_fwd_line.c - fuzz target for the forwarder's log.txt line parser
 * (server/src/forward/log_line_parse.c). Any bytes must parse or be refused with a reason;
 * a parsed line must format back to exactly the same bytes with nwb_log_line_format() (the
 * writer the parser reads), whenever its thread name is short enough to be a raw one.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/log_line.h"

#include "forward/log_line_parse.h"

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_fwd_line: check failed at line %d: %s\n", __LINE__, #cond);      \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct nwb__fwd_line l;
    const char *why = NULL;
    nwb_log_record_t rec;
    nwb_log_line_clock_t clock = NWB_LOG_LINE_CLOCK_INIT;
    char *out;
    size_t cap, n;

    if (nwb__fwd_line_parse(text, size, &l, &why) != 0) {
        FUZZ_CHECK(why != NULL && why[0] != '\0' && strchr(why, '\n') == NULL);
        return 0;
    }
    FUZZ_CHECK(l.level < 4 && l.time_ns < 1000000000u && l.program_len > 0);
    FUZZ_CHECK(l.msg >= text && l.msg + l.msg_len == text + size);
    if (l.thread_name_len > NWB_LOG_THREAD_NAME_MAX || l.file_len > UINT16_MAX) {
        return 0; /* an escaped name longer than a raw one can be: no record makes it */
    }
    memset(&rec, 0, sizeof(rec));
    rec.time_ns = l.time_s * 1000000000u + l.time_ns;
    rec.thread_id = l.thread_id;
    rec.level = (uint8_t)l.level;
    rec.line = l.line;
    rec.file = l.file;
    rec.file_len = (uint16_t)l.file_len;
    rec.msg = l.msg;
    rec.msg_len = (uint32_t)l.msg_len;
    rec.thread_name = l.thread_name;
    rec.thread_name_len = (uint8_t)l.thread_name_len;
    cap = nwb_log_line_max(&rec, l.program_len);
    out = malloc(cap);
    FUZZ_CHECK(out != NULL);
    n = nwb_log_line_format(out, cap, &clock, &rec, l.program, l.program_len);
    FUZZ_CHECK(n == size + 1 && memcmp(out, text, size) == 0 && out[size] == '\n');
    free(out);
    return 0;
}
