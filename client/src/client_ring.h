/* SPDX-License-Identifier: MIT */
/*
 * client_ring.h - the per-thread single-producer/single-consumer byte ring
 * and the record layout inside it. The producer side is inline because it
 * sits on the logging hot path; creation and release are in client_ring.c.
 */
#ifndef NWB_CLIENT_RING_H
#define NWB_CLIENT_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "nwb/common.h"
#include "nwb/log.h"
#include "nwb/log_batch.h"

/* Ring sizes (bytes, a power of two): smaller requests are rounded up, 0 means the default. */
#define NWB__RING_MIN     4096u
#define NWB__RING_MAX     (64u * 1024u * 1024u)
#define NWB__RING_DEFAULT (256u * 1024u)

/* Record types. */
#define NWB__REC_PAD      1u /* filler up to the end of the buffer: skip */
#define NWB__REC_ARGS     2u /* deferred: raw arguments, formatted by the worker */
#define NWB__REC_TEXT     3u /* a raw message or one pre-rendered on the calling thread */
#define NWB__REC_DROPNOTE 4u /* payload: uint64_t count of records dropped before this one */

/*
 * Every record starts with this header and is a multiple of 8 bytes. A PAD
 * record may be only 8 bytes long: only size and type are valid in it.
 */
struct nwb__rec {
    uint32_t size;        /* whole record: header, payload and tail padding */
    uint8_t type;         /* NWB__REC_* */
    uint8_t flags;        /* NWB_LOG_RECORD_* decided by the producer (TRUNCATED) */
    uint16_t aux;         /* ARGS: bytes of the slot area; TEXT: tail padding after the message */
    nwb_log_site_t *site; /* NULL for DROPNOTE */
    uint64_t time_ns;     /* the call's stamp: TSC ticks or CLOCK_REALTIME ns (client_clock.h) */
};

#define NWB__REC_HDR ((uint32_t)sizeof(struct nwb__rec))

struct nwb__ring {
    /* Producer side: written only by the owning thread. */
    _Alignas(64) atomic_uint_fast64_t head; /* published end of the data */
    uint64_t head_local;                    /* head including a reserved record */
    uint64_t tail_cache;                    /* last tail seen */
    uint64_t pending_drops;                 /* dropped since the last record that fit */
    atomic_uint_fast64_t accepted;          /* records taken (read by stats) */
    atomic_uint_fast64_t dropped;           /* records dropped (read by stats) */
    /* The producer's copies of buf, mask and rec_max below: a call touches this one line of
     * the ring's header (the worker reads its own copies, off the line the producer writes). */
    uint8_t *pbuf;
    uint32_t pmask;
    uint32_t prec_max;

    /* Consumer side: written only by the worker, read by a producer that needs room. Alone on
     * its line: the worker's private cursors below change on every record, tail only every
     * few records, so a producer spinning for room does not pull the line away each time. */
    _Alignas(64) atomic_uint_fast64_t tail;
    /* A BLOCK producer that found no room sleeps on wake_seq (a futex word) with waiting = 1;
     * the worker, after moving tail, bumps wake_seq and wakes it (only when waiting is set). */
    atomic_uint wake_seq;
    atomic_int waiting;

    /* Worker-private cursors. */
    _Alignas(64) uint64_t drain_head; /* head seen at the start of this round */
    uint64_t drain_tail;              /* next record to take */

    /* Fixed after creation, or rarely written. */
    _Alignas(64) uint8_t *buf;
    uint64_t cap;       /* power of two */
    uint64_t mask;      /* cap - 1 */
    uint32_t rec_max;   /* largest record accepted: min(cap / 2, header + 64 KiB + 8) */
    atomic_int closed;  /* its thread exited: free once drained */
    uint64_t thread_id; /* gettid() of the producer */
    /* The thread's name: set by the producer when it makes the ring (PR_GET_NAME), then
     * written by the worker only (names_refresh(), from /proc). Not NUL-terminated. */
    char thread_name[NWB_LOG_THREAD_NAME_MAX];
    uint8_t thread_name_len;
    uint64_t flush_mark;    /* worker-private: head to reach for the pending flush */
    void *alloc_base;       /* what nwb_malloc returned */
    struct nwb__ring *next; /* the client's list, under its ring lock */
};

/* Round @p want up to a power of two within [NWB__RING_MIN, NWB__RING_MAX]; 0 = default. */
uint64_t nwb__ring_size_round(size_t want);

/* Allocate a ring of @p cap bytes (already rounded). Returns NULL when out of memory. */
struct nwb__ring *nwb__ring_create(uint64_t cap, uint64_t thread_id);
void nwb__ring_destroy(struct nwb__ring *r);

/* Bytes published and not yet consumed (any thread; approximate while both sides run). */
static inline uint64_t nwb__ring_used(struct nwb__ring *r)
{
    return atomic_load_explicit(&r->head, memory_order_acquire) -
           atomic_load_explicit(&r->tail, memory_order_acquire);
}

/*
 * Producer: reserve @p size contiguous bytes (a multiple of 8, at most
 * rec_max). When the record would cross the end of the buffer, a PAD record
 * fills the rest and the record starts at offset 0. Returns NULL when there
 * is no room (nothing changes then); otherwise the caller writes the record
 * and must call nwb__ring_commit() with a size no larger than @p size.
 */
static inline uint8_t *nwb__ring_reserve(struct nwb__ring *r, uint32_t size)
{
    const uint64_t head = r->head_local;
    const uint64_t cap = (uint64_t)r->pmask + 1u;
    const uint64_t off = head & r->pmask;
    const uint64_t to_end = cap - off;
    const uint64_t need = size <= to_end ? size : size + to_end;

    if (NWB_UNLIKELY(cap - (head - r->tail_cache) < need)) {
        r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (cap - (head - r->tail_cache) < need) {
            return NULL;
        }
    }
    if (NWB_UNLIKELY(size > to_end)) {
        struct nwb__rec *pad = (struct nwb__rec *)(void *)(r->pbuf + off);

        pad->size = (uint32_t)to_end;
        pad->type = NWB__REC_PAD;
        r->head_local = head + to_end;
        return r->pbuf;
    }
    return r->pbuf + off;
}

/* Producer: publish the reserved record (and any PAD before it) with a release store. */
static inline void nwb__ring_commit(struct nwb__ring *r, uint32_t size)
{
    r->head_local += size;
    atomic_store_explicit(&r->head, r->head_local, memory_order_release);
}

#endif /* NWB_CLIENT_RING_H */
