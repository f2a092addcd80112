/* SPDX-License-Identifier: MIT */
/* ch_answer.c - numbers and one-line reasons from ClickHouse's HTTP answers (ch_answer.h). */
#include <stdio.h>
#include <string.h>

#include "nwb/error.h"
#include "ch_answer.h"

int nwb__ch_answer_u64(const char *body, size_t len, uint64_t *out)
{
    uint64_t v = 0;
    size_t n = len;

    if (n > 0 && body[n - 1] == '\n') {
        n--;
    }
    if (n == 0 || n > 20) {
        return NWB_EPROTO;
    }
    for (size_t i = 0; i < n; i++) {
        const unsigned d = (unsigned)(unsigned char)body[i] - '0';

        if (d > 9 || v > (UINT64_MAX - d) / 10) {
            return NWB_EPROTO;
        }
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

void nwb__ch_answer_reason(const char *body, size_t len, char *out, size_t cap)
{
    static const char what[] = ", e.what() = ";
    const size_t room = cap < NWB__CH_REASON_MAX ? cap : NWB__CH_REASON_MAX;
    const char *nl = len > 0 ? memchr(body, '\n', len) : NULL;
    size_t n = nl != NULL ? (size_t)(nl - body) : len;
    size_t o = 0;

    if (cap == 0) {
        return;
    }
    for (size_t i = 0; i + sizeof(what) - 1 <= n; i++) {
        if (memcmp(body + i, what, sizeof(what) - 1) == 0) {
            n = i;
            break;
        }
    }
    while (n > 0 && (body[n - 1] == ' ' || body[n - 1] == '\r' || body[n - 1] == '\t')) {
        n--;
    }
    if (n == 0) {
        snprintf(out, room, "(empty answer)");
        return;
    }
    for (size_t i = 0; i < n && o + 1 < room; i++) {
        const unsigned char c = (unsigned char)body[i];

        if (room >= 4 && n > room - 1 && o + 4 >= room) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        out[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    out[o] = '\0';
}
