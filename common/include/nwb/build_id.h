/* SPDX-License-Identifier: MIT */
/* nwb/build_id.h - the running executable's GNU build id, for sidecars and crash metadata. */
#ifndef NWB_BUILD_ID_H
#define NWB_BUILD_ID_H

#include <stddef.h>

#include "nwb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Write the main executable's NT_GNU_BUILD_ID as lowercase hex (NUL-terminated)
 * into @p out. When the executable has none, writes "none". Returns the length.
 * Not async-signal-safe (call it early and keep the result).
 */
NWB_API size_t nwb_build_id(char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* NWB_BUILD_ID_H */
