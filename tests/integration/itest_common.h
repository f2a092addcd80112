/* SPDX-License-Identifier: MIT */
/*
 * itest_common.h - shared pieces of the client-to-server integration tests:
 * numbered lines ("itest-num t<T> n<N>") and the check that each landed exactly
 * once and in per-thread order.
 */
#ifndef NWB_ITEST_COMMON_H
#define NWB_ITEST_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Scan @p text for "itest-num t<T> n<N>" and check that, for every thread
 * T < threads, the numbers 0..per_thread-1 each appear exactly once and in
 * increasing order. Returns 0, or -1 with a reason printed.
 */
static inline int itest_check_numbered(const char *text, int threads, int per_thread)
{
    static const char marker[] = "itest-num t";
    int *next = calloc((size_t)threads, sizeof(int));
    const char *line = text;
    int rc = 0;

    /* One pass over the lines: strstr over the whole rest of a large file per
     * line would be quadratic (and very slow under ASan's interceptors). */
    while (*line != '\0' && rc == 0) {
        const char *eol = strchr(line, '\n');
        const size_t len = eol != NULL ? (size_t)(eol - line) : strlen(line);
        const char *p = NULL;

        for (const char *q = line; q + sizeof(marker) - 1 <= line + len; q++) {
            if (*q == 'i' && memcmp(q, marker, sizeof(marker) - 1) == 0) {
                p = q;
                break;
            }
        }

        if (p != NULL) {
            int t = -1, n = -1;

            if (sscanf(p, "itest-num t%d n%d", &t, &n) != 2 || t < 0 || t >= threads) {
                fprintf(stderr, "unparsable line: %.*s\n", (int)len, line);
                rc = -1;
            } else if (n != next[t]) {
                fprintf(stderr, "thread %d: expected n%d, found n%d (%s)\n", t, next[t], n,
                        n < next[t] ? "duplicate or reordered" : "missing");
                rc = -1;
            } else {
                next[t]++;
            }
        }
        line += len + (eol != NULL ? 1 : 0);
    }
    for (int t = 0; rc == 0 && t < threads; t++) {
        if (next[t] != per_thread) {
            fprintf(stderr, "thread %d: %d of %d lines arrived\n", t, next[t], per_thread);
            rc = -1;
        }
    }
    free(next);
    return rc;
}

#endif /* NWB_ITEST_COMMON_H */
