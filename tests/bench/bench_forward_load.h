/* SPDX-License-Identifier: MIT */
/*
 * bench_forward_load.h - the load bench_forward drives nwb-logserver with: N blocking
 * keep-alive connections on their own threads, each one POST /v1/log of the same binary
 * batch in flight (each connection its own run), unpaced or paced to a record rate, for a
 * time or a record budget.
 */
#ifndef NWB_BENCH_FORWARD_LOAD_H
#define NWB_BENCH_FORWARD_LOAD_H

#include <stddef.h>
#include <stdint.h>

/** Connections the load can open (one thread each). */
#define NWB_BENCH_FWD_CONNS_MAX 64

/** A pre-built binary batch (the same for every request). */
struct nwb_bench_fwd_body {
    uint8_t *data;
    size_t len;
    uint32_t records;
};

/** Build a batch of about @p target bytes of ~100-byte render messages. 0, or -1. */
int nwb_bench_fwd_body_build(struct nwb_bench_fwd_body *b, size_t target);
void nwb_bench_fwd_body_free(struct nwb_bench_fwd_body *b);

struct nwb_bench_fwd_load {
    int port;
    int conns;           /* 1..NWB_BENCH_FWD_CONNS_MAX */
    const char *program; /* X-NWB-Program */
    const struct nwb_bench_fwd_body *body;
    double duration_s;    /* stop after this long (0: only the record budget) */
    uint64_t max_records; /* stop after sending this many records (0: no budget) */
    double records_per_s; /* pace to this rate over all connections (0: unpaced) */
};

struct nwb_bench_fwd_load_result {
    uint64_t ok;      /* 200 answers */
    uint64_t non200;  /* other answers */
    uint64_t errors;  /* connections lost */
    uint64_t records; /* records in the 200 answers' batches */
    double window_s;  /* first request to the last answer */
    char error[160];  /* the first failure, "" when none */
};

/**
 * One POST /v1/log of @p b on the blocking connection @p fd and its answer read whole: the
 * HTTP status, or -1 when the connection failed.
 */
int nwb_bench_fwd_post(int fd, int port, const char *program, const char *run, uint64_t seq,
                       const struct nwb_bench_fwd_body *b);

/** Run the load to its end. 0, or -1 when no connection could be made. */
int nwb_bench_fwd_load_run(const struct nwb_bench_fwd_load *l, struct nwb_bench_fwd_load_result *r);

#endif /* NWB_BENCH_FORWARD_LOAD_H */
