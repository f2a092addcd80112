/* SPDX-License-Identifier: MIT */
/* tel_json_check.h - a strict JSON checker for the telemetry tests and fuzz target. */
#ifndef NWB_TEL_JSON_CHECK_H
#define NWB_TEL_JSON_CHECK_H

#include <stddef.h>

/* 0 when @p len bytes at @p s are exactly one valid JSON value (surrounding whitespace
 * allowed, strings valid UTF-8, nesting at most 64 deep); else -1 and the offset. */
int tel_json_check(const char *s, size_t len, size_t *bad_offset);

#endif /* NWB_TEL_JSON_CHECK_H */
