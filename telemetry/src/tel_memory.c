/* SPDX-License-Identifier: MIT */
/*
 * tel_memory.c - memory sources: owners aggregated by name, updated from any thread with
 * relaxed atomics (no lock, no allocation), snapshotted into memory-frame records at frame end.
 */
#include <errno.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "tel_rec_int.h"

int nwb_tel_mem_source_register(nwb_tel_recorder_t *rec, nwb_name_t name, unsigned source,
                                unsigned peak_basis, nwb_tel_mem_source_t **out)
{
    nwb_tel_mem_source_t *s;
    nwb_tel_mem_source_t **arr;

    *out = NULL;
    if (source > NWB_TEL_MEM_EXPLICIT_SCOPE || peak_basis > NWB_TEL_PEAK_SCOPE) {
        return NWB_EPROTO;
    }
    for (uint32_t i = 0; i < rec->nmem; i++) {
        if (rec->mem[i]->name == name && rec->mem[i]->source == source) {
            *out = rec->mem[i];
            return 0;
        }
    }
    if (rec->nmem >= rec->memory_sources_max) {
        return NWB_EFULL;
    }
    s = nwb_calloc(1, sizeof(*s));
    if (s == NULL) {
        return -ENOMEM;
    }
    arr = nwb_realloc(rec->mem, (size_t)(rec->nmem + 1) * sizeof(*arr));
    if (arr == NULL) {
        nwb_free(s);
        return -ENOMEM;
    }
    rec->mem = arr;
    s->name = name;
    s->source = (uint8_t)source;
    s->peak_basis = (uint8_t)peak_basis;
    atomic_init(&s->reserved_bytes, 0);
    atomic_init(&s->used_bytes, 0);
    atomic_init(&s->peak_bytes, 0);
    atomic_init(&s->allocations, 0);
    atomic_init(&s->frees, 0);
    rec->mem[rec->nmem++] = s;
    *out = s;
    return 0;
}

void nwb_tel_mem_alloc(nwb_tel_mem_source_t *s, uint64_t bytes)
{
    uint64_t used;
    uint64_t peak;

    if (s == NULL) {
        return;
    }
    used = atomic_fetch_add_explicit(&s->used_bytes, bytes, memory_order_relaxed) + bytes;
    peak = atomic_load_explicit(&s->peak_bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->allocations, 1, memory_order_relaxed);
    while (used > peak &&
           !atomic_compare_exchange_weak_explicit(&s->peak_bytes, &peak, used, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

void nwb_tel_mem_free(nwb_tel_mem_source_t *s, uint64_t bytes)
{
    uint64_t cur;

    if (s == NULL) {
        return;
    }
    cur = atomic_load_explicit(&s->used_bytes, memory_order_relaxed);
    /* A free larger than what is in use (a caller bug) saturates at 0 instead of wrapping. */
    while (!atomic_compare_exchange_weak_explicit(&s->used_bytes, &cur,
                                                  cur > bytes ? cur - bytes : 0,
                                                  memory_order_relaxed, memory_order_relaxed)) {
    }
    atomic_fetch_add_explicit(&s->frees, 1, memory_order_relaxed);
}

void nwb_tel_mem_set_reserved(nwb_tel_mem_source_t *s, uint64_t bytes)
{
    if (s == NULL) {
        return;
    }
    atomic_store_explicit(&s->reserved_bytes, bytes, memory_order_relaxed);
}

void nwb__tel_mem_free_all(struct nwb_tel_recorder *rec)
{
    if (rec == NULL) {
        return;
    }
    for (uint32_t i = 0; i < rec->nmem; i++) {
        nwb_free(rec->mem[i]);
    }
    nwb_free(rec->mem);
    rec->mem = NULL;
    rec->nmem = 0;
}

uint32_t nwb__tel_mem_snapshot(struct nwb_tel_recorder *rec)
{
    if (nwb__tel_table_grow((void **)&rec->mem_out, &rec->mem_out_cap, rec->nmem,
                            NWB_TEL_MEM_RECORDS_MAX, sizeof(*rec->mem_out)) != 0) {
        return 0;
    }
    for (uint32_t i = 0; i < rec->nmem; i++) {
        nwb_tel_mem_source_t *s = rec->mem[i];
        nwb_tel_mem_record_t *r = &rec->mem_out[i];

        r->name = s->name;
        r->source = s->source;
        r->peak_basis = s->peak_basis;
        r->reserved_bytes = atomic_load_explicit(&s->reserved_bytes, memory_order_relaxed);
        r->frees = atomic_load_explicit(&s->frees, memory_order_relaxed);
        r->allocations = atomic_load_explicit(&s->allocations, memory_order_relaxed);
        r->used_bytes = atomic_load_explicit(&s->used_bytes, memory_order_relaxed);
        r->peak_bytes = atomic_load_explicit(&s->peak_bytes, memory_order_relaxed);
        /* The counters move independently while other threads allocate: keep the snapshot
         * self-consistent (the format requires peak >= used and frees <= allocations). */
        if (r->peak_bytes < r->used_bytes) {
            r->peak_bytes = r->used_bytes;
        }
        if (r->frees > r->allocations) {
            r->frees = r->allocations;
        }
    }
    return rec->nmem;
}
