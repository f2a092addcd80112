/* SPDX-License-Identifier: MIT */
/*
 * nwb/safe_name.h - turning untrusted program and run names into file-name
 * parts, and making run ids. Output paths are built only from these.
 */
#ifndef NWB_SAFE_NAME_H
#define NWB_SAFE_NAME_H

#include <stddef.h>

#include "nwb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest sanitised name, not counting the NUL. */
#define NWB_SAFE_NAME_MAX 64u

/**
 * Copy @p src (@p len bytes, any content, may contain NUL) into @p dst as a
 * safe file-name part: bytes outside [A-Za-z0-9_.-] become '_', a leading
 * '.' becomes '_', at most NWB_SAFE_NAME_MAX bytes are kept. An empty result
 * becomes @p fallback (itself assumed safe). @p dst must hold
 * NWB_SAFE_NAME_MAX + 1 bytes. Returns the length written.
 */
NWB_API size_t nwb_safe_name(char *dst, const char *src, size_t len, const char *fallback);

/** Write a fresh random run id: 16 lowercase hex digits and a NUL. Never fails. */
NWB_API void nwb_run_id_generate(char out[17]);

#ifdef __cplusplus
}
#endif

#endif /* NWB_SAFE_NAME_H */
