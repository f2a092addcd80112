/* SPDX-License-Identifier: MIT */
/* alloc.c - the replaceable allocator and the fail-after-n hook used by tests. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"

static struct {
    nwb_malloc_fn m;
    nwb_realloc_fn r;
    nwb_calloc_fn c;
    nwb_free_fn f;
} allocator = {malloc, realloc, calloc, free};

/* -1: never fail; otherwise the number of allocations that still succeed. */
static atomic_long fail_countdown = -1;

int nwb_replace_allocator(nwb_malloc_fn m, nwb_realloc_fn r, nwb_calloc_fn c, nwb_free_fn f)
{
    if (m == NULL || r == NULL || c == NULL || f == NULL) {
        return NWB_ECONFIG;
    }
    allocator.m = m;
    allocator.r = r;
    allocator.c = c;
    allocator.f = f;
    return 0;
}

void nwb_alloc_fail_after(long n)
{
    atomic_store(&fail_countdown, n < 0 ? -1 : n);
}

/* True when this allocation must fail (fault injection). */
static int should_fail(void)
{
    long left = atomic_load_explicit(&fail_countdown, memory_order_relaxed);

    while (left >= 0) {
        if (left == 0) {
            return 1;
        }
        if (atomic_compare_exchange_weak(&fail_countdown, &left, left - 1)) {
            return 0;
        }
    }
    return 0;
}

void *nwb_malloc(size_t size)
{
    if (should_fail()) {
        return NULL;
    }
    return allocator.m(size);
}

void *nwb_calloc(size_t count, size_t size)
{
    if (should_fail()) {
        return NULL;
    }
    return allocator.c(count, size);
}

void *nwb_realloc(void *ptr, size_t size)
{
    if (should_fail()) {
        return NULL;
    }
    return allocator.r(ptr, size);
}

void nwb_free(void *ptr)
{
    if (ptr != NULL) {
        allocator.f(ptr);
    }
}

char *nwb_strdup(const char *s)
{
    const size_t n = strlen(s) + 1;
    char *p = nwb_malloc(n);

    if (p != NULL) {
        memcpy(p, s, n);
    }
    return p;
}
