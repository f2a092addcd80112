/* SPDX-License-Identifier: MIT */
/*
 * bench_ingest_follow.h - bench_ingest --followers: N clients that follow a server the way
 * a live viewer does while the ingest load runs. Each holds a GET /v1/events stream and
 * follows one run (the N-th it hears of): on every log event of that run it reads the newest
 * part of the run's log with GET /v1/runs/{id}/log?offset=..&limit=.. on its own keep-alive
 * connection, one request at a time. One thread, epoll; it counts what it saw.
 */
#ifndef NWB_BENCH_INGEST_FOLLOW_H
#define NWB_BENCH_INGEST_FOLLOW_H

#include <stddef.h>
#include <stdint.h>

#define NWB_BENCH_FOLLOWERS_MAX 64
#define NWB_BENCH_FOLLOW_TAIL   65536u /* bytes a follower asks for per log event, at most */

struct nwb_bench_follow;

struct nwb_bench_follow_stats {
    double seconds;         /* from start to stop */
    int followed;           /* followers that found a run to follow */
    uint64_t events;        /* events received, every stream */
    uint64_t log_events;    /* log events of the followed runs */
    uint64_t polls;         /* log range answers */
    uint64_t polls_ok;      /* ... with status 200 */
    int poll_status;        /* the last other status (0: none) */
    uint64_t poll_bytes;    /* body bytes of the 200 answers */
    uint64_t id_gaps;       /* events a stream missed or saw twice (ids not consecutive) */
    uint64_t streams_lost;  /* streams the server closed, or that were malformed */
    uint64_t poll_failures; /* log connections that failed */
};

/*
 * Open @p n (1..NWB_BENCH_FOLLOWERS_MAX) event streams to 127.0.0.1:@p port (each answered
 * 200 within @p timeout_ms) and start the thread. 0 with @p *out, or -1 with a reason.
 */
int nwb_bench_follow_start(int port, int n, int timeout_ms, struct nwb_bench_follow **out,
                           char *err, size_t errlen);

/* Stop the thread, close everything, and report. NULL is a no-op (zero stats). */
void nwb_bench_follow_stop(struct nwb_bench_follow *fw, struct nwb_bench_follow_stats *st);

#endif /* NWB_BENCH_INGEST_FOLLOW_H */
