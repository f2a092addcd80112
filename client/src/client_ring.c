/* SPDX-License-Identifier: MIT */
/*
 * client_ring.c - creating and freeing the per-thread rings (client_ring.h).
 * One allocation holds the 64-byte aligned ring header and its buffer.
 */
#include <stddef.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/log_batch.h"

#include "client_ring.h"

/* Everything a call reads or writes in the header sits on its first cache line. */
_Static_assert(offsetof(struct nwb__ring, prec_max) + sizeof(uint32_t) <= 64,
               "the producer's fields must fit one cache line");
_Static_assert(offsetof(struct nwb__ring, tail) == 64, "tail starts the second line");

uint64_t nwb__ring_size_round(size_t want)
{
    uint64_t cap = NWB__RING_MIN;

    if (want == 0) {
        return NWB__RING_DEFAULT;
    }
    while (cap < want && cap < NWB__RING_MAX) {
        cap <<= 1;
    }
    return cap;
}

struct nwb__ring *nwb__ring_create(uint64_t cap, uint64_t thread_id)
{
    const size_t hdr = (sizeof(struct nwb__ring) + 63u) & ~(size_t)63u;
    uint8_t *base = nwb_malloc(hdr + (size_t)cap + 64u);
    struct nwb__ring *r;
    uint8_t *aligned;
    uint64_t rec_max;

    if (base == NULL) {
        return NULL;
    }
    aligned = (uint8_t *)(((uintptr_t)base + 63u) & ~(uintptr_t)63u);
    r = (struct nwb__ring *)(void *)aligned;
    memset(r, 0, sizeof(*r));
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    atomic_init(&r->accepted, 0);
    atomic_init(&r->dropped, 0);
    atomic_init(&r->closed, 0);
    atomic_init(&r->wake_seq, 0u);
    atomic_init(&r->waiting, 0);
    r->buf = aligned + hdr;
    /* Touch every page now (the thread's first call may be slow), not on later calls. */
    memset(r->buf, 0, (size_t)cap);
    r->cap = cap;
    r->mask = cap - 1u;
    rec_max = cap / 2u;
    if (rec_max > NWB__REC_HDR + NWB_LOG_RECORD_MSG_MAX + 8u) {
        rec_max = NWB__REC_HDR + NWB_LOG_RECORD_MSG_MAX + 8u;
    }
    r->rec_max = (uint32_t)rec_max;
    r->pbuf = r->buf;
    r->pmask = (uint32_t)r->mask; /* NWB__RING_MAX fits 32 bits */
    r->prec_max = r->rec_max;
    r->thread_id = thread_id;
    r->alloc_base = base;
    return r;
}

void nwb__ring_destroy(struct nwb__ring *r)
{
    if (r != NULL) {
        nwb_free(r->alloc_base);
    }
}
