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
#include "nwb/telemetry_report.h"

#include "json_check.h"

/* Read a file into a malloc'd buffer (NUL-terminated beyond len). NULL when missing. */
uint8_t *tel_read_file(const char *path, size_t *len);

/* Write @p len bytes to @p path (truncating). 0 or -1. */
int tel_write_file(const char *path, const void *data, size_t len);

/* Path of a file under tests/data/telemetry/ in the source tree (static buffer). */
const char *tel_data_path(const char *name);

/* A one-segment stream header with fixed test values, appended to @p b. */
void tel_put_header(nwb_buf_t *b, uint64_t seq);

/*
 * The bytes of @p json (released here) as a malloc'd NUL-terminated string, or NULL when they
 * are not exactly one strict JSON document (then *@p bad, when not NULL, is the first bad byte).
 */
char *tel_json_take(nwb_buf_t *json, size_t *bad);

/* nwb_tel_report_build() of @p d as a strict-JSON string (malloc'd); the test fails (cmocka)
 * when it cannot be built or is not strict JSON. */
char *tel_built_report(const uint8_t *d, size_t len, const nwb_tel_report_options_t *ro);

/* Fail the test (cmocka) unless @p needle is in @p json, showing the start of @p json. */
void tel_expect(const char *json, const char *needle);

/* Offsets of the segment headers the decoder reads in @p d (those before any failure), at
 * most @p cap of them. Returns their number. */
size_t tel_segment_offsets(const uint8_t *d, size_t len, size_t *out, size_t cap);

/*
 * The report of @p d fed to a fresh state in pieces cut at the segment offsets @p cuts (sorted,
 * @p ncuts of them; 0 and duplicates allowed), with @p flags, appended to @p out. Returns the
 * write's result.
 */
int tel_report_in_pieces(const uint8_t *d, size_t len, const size_t *cuts, size_t ncuts,
                         unsigned flags, const nwb_tel_report_options_t *ro, nwb_buf_t *out);

#endif /* NWB_TEL_TEST_UTIL_H */
