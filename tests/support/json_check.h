/* SPDX-License-Identifier: MIT */
/*
 * json_check.h - a strict JSON checker: every JSON body or file the project writes is parsed
 * by it in a test or a fuzz oracle.
 */
#ifndef NWB_TEST_JSON_CHECK_H
#define NWB_TEST_JSON_CHECK_H

#include <stddef.h>

/* 0 when @p len bytes at @p s are exactly one valid JSON value (surrounding whitespace
 * allowed, strings valid UTF-8, nesting at most 64 deep); else -1 and the offset. */
int nwb_test_json_check(const char *s, size_t len, size_t *bad_offset);

#endif /* NWB_TEST_JSON_CHECK_H */
