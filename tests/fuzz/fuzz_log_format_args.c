/* SPDX-License-Identifier: MIT */
/*
 * fuzz_log_format_args.c - fuzz target for nwb_log_format_args() (common/src/log_format_args.c),
 * the printf of the C macros' captured arguments. Input: byte 0 picks the output buffer size
 * (1..256), bytes 1-8 are the argument classes (2 bits each), the rest is the format. Every
 * pointer argument points at a buffer that is a valid narrow and wide string; integers and
 * doubles take fixed values. The result must be -1 or the message's length, the output
 * NUL-terminated at that length or the buffer's end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* "abc" as a narrow string, one wide character then L'\0' as a wide one */
    static const uint32_t safe_str[4] = {0x00636261u, 0, 0, 0};
    nwb_log_arg_t args[NWB_LOG_MAX_ARGS];
    char out[256];
    char *fmt;
    uint64_t types = 0;
    size_t cap;
    int n;

    if (size < 9) {
        return 0;
    }
    cap = 1u + data[0];
    if (cap > sizeof(out)) {
        cap = sizeof(out);
    }
    memcpy(&types, data + 1, 8);
    for (unsigned i = 0; i < NWB_LOG_MAX_ARGS; i++) {
        switch (NWB_LOG_ARG_CLASS(types, i)) {
        case NWB_LOG_ARG_DOUBLE:
            args[i].d = (double)i * -1.5e10;
            break;
        case NWB_LOG_ARG_POINTER:
            args[i].p = safe_str;
            break;
        default:
            args[i].i = (int64_t)i * -1000003;
            break;
        }
    }
    fmt = malloc(size - 9 + 1);
    if (fmt == NULL) {
        return 0;
    }
    memcpy(fmt, data + 9, size - 9);
    fmt[size - 9] = '\0';
    n = nwb_log_format_args(out, cap, fmt, types, args,
                            (unsigned)(data[0] % (NWB_LOG_MAX_ARGS + 1)));
    if (n != -1) {
        /* like snprintf: n is the whole length; the output ends at min(n, cap - 1) (a %c of 0
         * may put a NUL before that) */
        const size_t end = (size_t)n < cap ? (size_t)n : cap - 1u;

        if (out[end] != '\0' || strlen(out) > end) {
            abort();
        }
    }
    free(fmt);
    return 0;
}
