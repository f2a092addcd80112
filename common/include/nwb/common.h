/* SPDX-License-Identifier: MIT */
/*
 * nwb/common.h - basic macros shared by every nwb module: symbol visibility,
 * container_of, branch hints and the project version.
 */
#ifndef NWB_COMMON_H
#define NWB_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define NWB_VERSION_MAJOR  0
#define NWB_VERSION_MINOR  1
#define NWB_VERSION_PATCH  0
#define NWB_VERSION_STRING "0.1.0"

#if defined(__GNUC__)
#define NWB_API             __attribute__((visibility("default")))
#define NWB_LIKELY(x)       __builtin_expect(!!(x), 1)
#define NWB_UNLIKELY(x)     __builtin_expect(!!(x), 0)
#define NWB_PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#define NWB_NOINLINE        __attribute__((noinline))
#define NWB_ALWAYS_INLINE   __attribute__((always_inline)) /* after `static inline` */
#define NWB_COLD            __attribute__((cold))
#else
#define NWB_API
#define NWB_LIKELY(x)   (x)
#define NWB_UNLIKELY(x) (x)
#define NWB_PRINTF_LIKE(f, a)
#define NWB_NOINLINE
#define NWB_ALWAYS_INLINE
#define NWB_COLD
#endif

/* Statics that unit tests reach: static unless NWB_UNIT_TESTS (curl UNITTEST). */
#ifdef NWB_UNIT_TESTS
#define NWB_TESTABLE
#else
#define NWB_TESTABLE static
#endif

/* The (void *) hop keeps clang's -Wcast-align quiet; the result is correctly
 * aligned because ptr points into a real 'type'. */
#define NWB_CONTAINER_OF(ptr, type, member)                                                        \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#define NWB_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif /* NWB_COMMON_H */
