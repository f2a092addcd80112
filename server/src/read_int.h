/* SPDX-License-Identifier: MIT */
/*
 * read_int.h - what the read API's endpoints share (GET /v1/runs..., GET /v1/crashes/...,
 * GET /v1/events; docs/protocol.md, "Reading"): the query string parser, the checks that turn
 * an id from a path into a directory under --out, and path segments. Everything here is pure
 * (no I/O) except nwb__read_run_dir(), and bounded: a malformed query or id is an error the
 * caller answers with 400 or 404, never a crash or a path outside --out.
 */
#ifndef NWB_SERVER_READ_INT_H
#define NWB_SERVER_READ_INT_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/safe_name.h"

/* A query value longer than this is malformed (no query parameter needs more). */
#define NWB__QUERY_VALUE_MAX 256u
/* runs/<program>_<YYYYmmdd-HHMMSS>_<run>: the longest run id (a run directory's name). */
#define NWB__RUN_ID_MAX (NWB_SAFE_NAME_MAX + 1 + 15 + 1 + NWB_SAFE_NAME_MAX + 8)

/* The parts of a request target: path (no query) and query (after '?', may be empty). */
struct nwb__target {
    const char *path;
    size_t path_len;
    const char *query;
    size_t query_len;
};

/* Split @p url (@p len bytes) at the first '?'. */
void nwb__target_split(const char *url, size_t len, struct nwb__target *t);

/*
 * Find @p key in the query string (pairs "k=v" joined by '&'; a key without '=' has an empty
 * value) and percent-decode its value into @p out (NWB__QUERY_VALUE_MAX + 1 bytes, NUL-
 * terminated; *out_len its length). The first occurrence wins. Returns 1 when found, 0 when
 * absent, -1 when the query is malformed: a bad or truncated %XX escape anywhere in the
 * query, a value longer than NWB__QUERY_VALUE_MAX, or a decoded value with a NUL byte.
 */
int nwb__query_get(const char *query, size_t len, const char *key, char *out, size_t *out_len);

/*
 * A decimal parameter in [min, max]: 0 with *present 0 when absent (*out untouched), 0 with
 * *present 1 and *out set, or -1 when malformed (not plain decimal digits, a sign, empty,
 * out of range, or a malformed query).
 */
int nwb__query_u64(const char *query, size_t len, const char *key, uint64_t min, uint64_t max,
                   uint64_t *out, int *present);

/*
 * The @p index-th segment (0-based) of @p path after @p prefix ("/v1/runs/" ...): *seg and
 * *seg_len. Returns 1 when it exists, 0 when the path has fewer segments. A path that does not
 * start with @p prefix has none. Segments are split at '/', never percent-decoded (ids do not
 * need escapes, so an escape makes the id invalid).
 */
int nwb__path_segment(const char *path, size_t len, const char *prefix, unsigned index,
                      const char **seg, size_t *seg_len);

/* Number of segments of @p path after @p prefix (a trailing '/' adds an empty segment). */
unsigned nwb__path_segments(const char *path, size_t len, const char *prefix);

/*
 * 1 when @p id is a well-formed run id: 1..NWB__RUN_ID_MAX bytes of [A-Za-z0-9_.-], not
 * starting with '.', so it names one entry of runs/ and nothing else. Else 0.
 */
int nwb__run_id_valid(const char *id, size_t len);

/*
 * Resolve a run id to its directory: when it is valid and <out>/runs/<id> is a directory (not
 * a symlink), write "<out_dir>/runs/<id>" into @p dir (@p cap bytes) and return 0; NWB_EPROTO
 * for a malformed id, -ENOENT when no such run exists, NWB_ETOOBIG when @p cap is too small.
 */
int nwb__read_run_dir(const char *out_dir, const char *id, size_t len, char *dir, size_t cap);

#endif /* NWB_SERVER_READ_INT_H */
