/* SPDX-License-Identifier: MIT */
/*
 * nwb/name.h - names: 64-bit FNV-1a hashes of UTF-8 strings, printed as the
 * token "#" + 16 lowercase hex digits when their string is not known.
 *
 * With -DNWB_BUILDMODE=ON every name made through nwb_name_make() is recorded
 * in a process-wide registry (thread-safe; lookups take no global lock) and
 * the registry is written as <executable>.namesym at normal exit. Without
 * BUILDMODE there is no registry: nwb_name_str() always gives the token and
 * the server turns it back into the string from the sidecar.
 */
#ifndef NWB_NAME_H
#define NWB_NAME_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t nwb_name_t;

#define NWB_NAME_FNV_OFFSET 0xcbf29ce484222325ull
#define NWB_NAME_FNV_PRIME  0x00000100000001b3ull

/* "#" + 16 hex digits + NUL */
#define NWB_NAME_TOKEN_LEN  17u
#define NWB_NAME_TOKEN_SIZE 18u

/** FNV-1a (64-bit) of @p len bytes at @p s. Pure; usable anywhere, even in signal handlers. */
static inline nwb_name_t nwb_name_hash(const void *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    uint64_t h = NWB_NAME_FNV_OFFSET;

    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= NWB_NAME_FNV_PRIME;
    }
    return h;
}

/**
 * The name of the NUL-terminated UTF-8 string @p s. In BUILDMODE the string
 * is recorded in the registry (copied; later calls with the same string are
 * cheap lookups). Never fails: on allocation failure the name is still
 * returned, just not recorded.
 */
NWB_API nwb_name_t nwb_name_make(const char *s);

/** As nwb_name_make() for @p len bytes (need not be NUL-terminated). */
NWB_API nwb_name_t nwb_name_make_n(const char *s, size_t len);

/** Write the token of @p name ("#" + 16 lowercase hex digits + NUL) into @p out. */
NWB_API void nwb_name_token(nwb_name_t name, char out[NWB_NAME_TOKEN_SIZE]);

/**
 * The string of @p name when the registry holds it (borrowed, valid for the
 * process lifetime), otherwise its token written into @p buf, which is
 * returned. Thread-safe, lock-free.
 */
NWB_API const char *nwb_name_str(nwb_name_t name, char buf[NWB_NAME_TOKEN_SIZE]);

/** 1 when this build records names (NWB_BUILDMODE), else 0. */
NWB_API int nwb_name_registry_enabled(void);

/** Names currently recorded (0 without BUILDMODE). */
NWB_API size_t nwb_name_registry_count(void);

/**
 * Write the registry as a .namesym sidecar at @p path (temporary file, then
 * rename), with @p build_id recorded in it. Returns 0 or a negative code.
 * Without BUILDMODE writes an empty sidecar. BUILDMODE programs call this
 * automatically at normal exit for <executable>.namesym.
 */
NWB_API int nwb_name_registry_write(const char *path, const char *build_id);

#ifdef __cplusplus
}
#endif

#endif /* NWB_NAME_H */
