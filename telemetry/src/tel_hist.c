/* SPDX-License-Identifier: MIT */
/*
 * tel_hist.c - a log-linear histogram (32 sub-buckets per power of two) giving the report's
 * per-scope p95 in bounded memory, at most 1/32 above the exact nearest-rank value.
 */
#include <errno.h>
#include <math.h>

#include "nwb/alloc.h"
#include "tel_int.h"

#define HIST_TOP_SHIFT 40u /* values >= 2^40 ns (about 18 minutes) share the last bucket */

unsigned nwb__hist_index(uint64_t v)
{
    unsigned e;

    if (v < NWB__HIST_SUB) {
        return (unsigned)v;
    }
    if (v >> HIST_TOP_SHIFT) {
        return NWB__HIST_BUCKETS - 1;
    }
    e = 63u - (unsigned)__builtin_clzll(v); /* 5 .. 39 */
    return NWB__HIST_SUB + (e - 5u) * NWB__HIST_SUB + (unsigned)((v >> (e - 5u)) - NWB__HIST_SUB);
}

uint64_t nwb__hist_upper(unsigned idx)
{
    unsigned e;
    unsigned sub;

    if (idx < NWB__HIST_SUB) {
        return idx;
    }
    if (idx >= NWB__HIST_BUCKETS - 1) {
        return UINT64_MAX;
    }
    e = (idx - NWB__HIST_SUB) / NWB__HIST_SUB + 5u;
    sub = (idx - NWB__HIST_SUB) % NWB__HIST_SUB;
    return (((uint64_t)(NWB__HIST_SUB + sub)) << (e - 5u)) + ((uint64_t)1 << (e - 5u)) - 1u;
}

int nwb__hist_add(struct nwb__hist *h, uint64_t v)
{
    if (h->counts == NULL) {
        h->counts = nwb_calloc(NWB__HIST_BUCKETS, sizeof(*h->counts));
        if (h->counts == NULL) {
            return -ENOMEM;
        }
    }
    /* A bucket saturates rather than wraps; 4 billion samples of one value is far beyond any
     * report this builds. */
    if (v > h->max) {
        h->max = v;
    }
    if (h->counts[nwb__hist_index(v)] != UINT32_MAX) {
        h->counts[nwb__hist_index(v)]++;
        h->n++;
    }
    return 0;
}

uint64_t nwb__hist_quantile(const struct nwb__hist *h, double q)
{
    uint64_t rank;
    uint64_t seen = 0;

    if (h->counts == NULL || h->n == 0) {
        return 0;
    }
    rank = (uint64_t)ceil(q * (double)h->n);
    if (rank < 1) {
        rank = 1;
    }
    if (rank > h->n) {
        rank = h->n;
    }
    for (unsigned i = 0; i < NWB__HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            const uint64_t up = nwb__hist_upper(i);

            return up < h->max ? up : h->max;
        }
    }
    return h->max;
}

void nwb__hist_cleanup(struct nwb__hist *h)
{
    if (h == NULL) {
        return;
    }
    nwb_free(h->counts);
    h->counts = NULL;
    h->n = 0;
    h->max = 0;
}
