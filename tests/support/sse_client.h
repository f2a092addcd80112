/* SPDX-License-Identifier: MIT */
/*
 * sse_client.h - a blocking GET /v1/events client for tests: open a stream (optionally with
 * a small receive buffer, for a reader that falls behind), read its answer head, then take
 * blocks one at a time with a timeout (poll, never a sleep). Every data line is checked with
 * the strict JSON checker before it is handed out.
 */
#ifndef NWB_TEST_SSE_CLIENT_H
#define NWB_TEST_SSE_CLIENT_H

#include "sse_parse.h"

struct nwb_test_sse {
    int fd;
    int status;      /* the answer's status code */
    char head[4096]; /* the answer's head (status line and fields), NUL-terminated */
    char body[1024]; /* a non-200 answer's body (by Content-Length), NUL-terminated */
    struct nwb_test_sse_parser p;
};

/*
 * Connect to 127.0.0.1:@p port (with SO_RCVBUF @p rcvbuf first when it is > 0), send
 * "GET @p target" with @p headers ("Name: value\r\n"..., may be NULL), and read the answer's
 * head within @p timeout_ms (and a non-200 answer's body). Returns 0 with s->status set, or
 * -1 (no answer).
 */
int nwb_test_sse_open(struct nwb_test_sse *s, int port, const char *target, const char *headers,
                      int rcvbuf, int timeout_ms);

/* The value of header @p name (case-insensitive) of the answer into @p out; 1 found, 0 not. */
int nwb_test_sse_header(const struct nwb_test_sse *s, const char *name, char *out, size_t cap);

/*
 * The next block within @p timeout_ms: 1 (a data line is strict JSON), 0 on timeout, -1 when
 * the server closed the stream or sent something malformed (said on stderr).
 */
int nwb_test_sse_next(struct nwb_test_sse *s, struct nwb_test_sse_block *b, int timeout_ms);

/* The next block that is an event (has an event line), skipping comments and position-only
 * blocks; like nwb_test_sse_next(). */
int nwb_test_sse_next_event(struct nwb_test_sse *s, struct nwb_test_sse_block *b, int timeout_ms);

/* 1 once the server closed the stream within @p timeout_ms (whatever it sent is read and
 * dropped), else 0. */
int nwb_test_sse_wait_closed(struct nwb_test_sse *s, int timeout_ms);

void nwb_test_sse_close(struct nwb_test_sse *s);

#endif /* NWB_TEST_SSE_CLIENT_H */
