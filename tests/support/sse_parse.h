/* SPDX-License-Identifier: MIT */
/*
 * sse_parse.h - an incremental parser of GET /v1/events (Server-Sent Events) for the tests
 * and bench_ingest's followers: bytes in (read straight into its buffer), blocks out. Strict
 * about what nwb-logserver sends (docs/protocol.md, "GET /v1/events"): LF line ends, the
 * fields id, event, data (one line), retry and comment lines; anything else is malformed.
 */
#ifndef NWB_TEST_SSE_PARSE_H
#define NWB_TEST_SSE_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define NWB_TEST_SSE_BUF      (256u * 1024u) /* bytes buffered (a block longer: malformed) */
#define NWB_TEST_SSE_DATA_MAX 2048u          /* one data line */

/* One block: the lines up to a blank line. */
struct nwb_test_sse_block {
    int has_id;
    uint64_t id;
    char event[32]; /* "" without an event line */
    int has_data;
    char data[NWB_TEST_SSE_DATA_MAX + 1]; /* NUL-terminated */
    size_t data_len;
    int has_retry;
    unsigned retry_ms;
    int comments; /* comment lines (": keepalive") */
};

struct nwb_test_sse_parser {
    char buf[NWB_TEST_SSE_BUF];
    size_t off, len; /* unparsed bytes: buf[off .. off + len) */
};

void nwb_test_sse_parser_init(struct nwb_test_sse_parser *p);

/* Where to read the next bytes to (*room of them, 0 when the buffer is full), after
 * nwb_test_sse_parser_wrote() says how many landed there. */
char *nwb_test_sse_parser_room(struct nwb_test_sse_parser *p, size_t *room);
void nwb_test_sse_parser_wrote(struct nwb_test_sse_parser *p, size_t n);

/* The next complete block into @p b: 1, 0 when none is complete yet, -1 when malformed. */
int nwb_test_sse_parser_next(struct nwb_test_sse_parser *p, struct nwb_test_sse_block *b);

/* The string member @p key of an event's data (a flat object whose ids and names need no
 * escapes) into @p out (@p cap bytes, NUL-terminated): 1, or 0 when absent or too long. */
int nwb_test_sse_data_str(const char *data, const char *key, char *out, size_t cap);

/* The unsigned number member @p key of an event's data into @p out: 1, or 0 when absent. */
int nwb_test_sse_data_u64(const char *data, const char *key, uint64_t *out);

#endif /* NWB_TEST_SSE_PARSE_H */
