/* SPDX-License-Identifier: MIT */
/*
 * nwb/alloc.h - the allocation hooks every nwb module allocates through.
 *
 * A program (or a test) may replace the allocator once, before any other nwb
 * call, like uv_replace_allocator(). Tests use nwb_alloc_fail_after() to make
 * the n-th allocation fail and prove every failure path unwinds cleanly.
 */
#ifndef NWB_ALLOC_H
#define NWB_ALLOC_H

#include "nwb/common.h"

typedef void *(*nwb_malloc_fn)(size_t size);
typedef void *(*nwb_realloc_fn)(void *ptr, size_t size);
typedef void *(*nwb_calloc_fn)(size_t count, size_t size);
typedef void (*nwb_free_fn)(void *ptr);

/**
 * Replace the allocator. All four functions must be given. Returns 0, or
 * NWB_ECONFIG when one is NULL. Not thread-safe: call before any other nwb call.
 */
NWB_API int nwb_replace_allocator(nwb_malloc_fn m, nwb_realloc_fn r, nwb_calloc_fn c,
                                  nwb_free_fn f);

NWB_API void *nwb_malloc(size_t size);
NWB_API void *nwb_calloc(size_t count, size_t size);
NWB_API void *nwb_realloc(void *ptr, size_t size);
/** NULL is a no-op. */
NWB_API void nwb_free(void *ptr);
/** A nwb_malloc'd copy of @p s (returned-owned), or NULL. */
NWB_API char *nwb_strdup(const char *s);

/**
 * Fault injection for tests: after @p n more successful allocations, every
 * allocation fails until called again with -1 (never fail). Thread-safe.
 */
NWB_API void nwb_alloc_fail_after(long n);

#endif /* NWB_ALLOC_H */
