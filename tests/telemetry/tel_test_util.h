/* SPDX-License-Identifier: MIT */
/*
 * tel_test_util.h - helpers shared by the telemetry tests: a strict RFC 8259 JSON checker (the
 * in-process "real parser" for the mutation test; python3's json module checks the files the
 * tests leave behind), whole-file reads, and small stream builders.
 */
#ifndef NWB_TEL_TEST_UTIL_H
#define NWB_TEL_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/telemetry_format.h"

#include "json_check.h"

/* Read a file into a malloc'd buffer (NUL-terminated beyond len). NULL when missing. */
uint8_t *tel_read_file(const char *path, size_t *len);

/* Write @p len bytes to @p path (truncating). 0 or -1. */
int tel_write_file(const char *path, const void *data, size_t len);

/* Path of a file under tests/data/telemetry/ in the source tree (static buffer). */
const char *tel_data_path(const char *name);

/* A one-segment stream header with fixed test values, appended to @p b. */
void tel_put_header(nwb_buf_t *b, uint64_t seq);

#endif /* NWB_TEL_TEST_UTIL_H */
