/* SPDX-License-Identifier: MIT */
/*
 * fuzz_fwd_cursor.c - fuzz target for the forwarding cursor's parser
 * (server/src/forward/fwd_cursor.c): any bytes parse or are refused; a parsed offset printed
 * back in the file's form gives exactly the input.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward/fwd_cursor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t off = 0;
    char back[NWB__FWD_CURSOR_MAX + 8];
    int n;

    if (nwb__fwd_cursor_parse((const char *)data, size, &off) != 0) {
        return 0;
    }
    n = snprintf(back, sizeof(back), "nwb-forward 1\noffset=%" PRIu64 "\n", off);
    /* Leading zeros are the one way two texts name one offset. */
    if (!((size_t)n == size && memcmp(back, data, size) == 0) && !(size > 22 && data[21] == '0')) {
        fprintf(stderr, "fuzz_fwd_cursor: parsed %" PRIu64 " from another text\n", off);
        abort();
    }
    return 0;
}
