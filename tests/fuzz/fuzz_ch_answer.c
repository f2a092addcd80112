/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ch_answer.c - fuzz target for the forwarder's reading of ClickHouse answers
 * (server/src/forward/ch_answer.c). The first byte picks the reason buffer's size (0..255);
 * the rest is the answer body. The number must match an independent decimal reading; the
 * reason must be one NUL-terminated line of printable ASCII within the buffer.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward/ch_answer.h"

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_ch_answer: check failed at line %d: %s\n", __LINE__, #cond);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char reason[256 + 8];
    const size_t cap = size > 0 ? data[0] : 0;
    const char *body = size > 0 ? (const char *)data + 1 : "";
    const size_t len = size > 0 ? size - 1 : 0;
    uint64_t v = 0;
    const int rc = nwb__ch_answer_u64(body, len, &v);
    size_t digits = 0;

    while (digits < len && body[digits] >= '0' && body[digits] <= '9') {
        digits++;
    }
    const int shape = digits > 0 && digits <= 20 &&
                      (digits == len || (digits + 1 == len && body[digits] == '\n'));
    if (shape) {
        char copy[32];
        unsigned long long ref;

        memcpy(copy, body, digits);
        copy[digits] = '\0';
        errno = 0;
        ref = strtoull(copy, NULL, 10);
        FUZZ_CHECK((rc == 0) == (errno == 0));
        FUZZ_CHECK(rc != 0 || v == ref);
    } else {
        FUZZ_CHECK(rc != 0);
    }

    memset(reason, 'X', sizeof(reason));
    nwb__ch_answer_reason(body, len, reason, cap);
    FUZZ_CHECK(reason[cap] == 'X' || cap == 0);
    if (cap > 0) {
        const size_t n = strlen(reason);

        FUZZ_CHECK(n < cap && n < NWB__CH_REASON_MAX);
        for (size_t i = 0; i < n; i++) {
            FUZZ_CHECK(reason[i] >= 0x20 && reason[i] < 0x7f);
        }
    } else {
        FUZZ_CHECK(reason[0] == 'X');
    }
    return 0;
}
