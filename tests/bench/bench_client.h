/* SPDX-License-Identifier: MIT */
/*
 * bench_client.h - the seam between the client benchmark driver
 * (bench_client_main.c), the shared producer harness (bench_client_harness.c)
 * and the peers: nwb (bench_client_nwb.c), fprintf (bench_client_fprintf.c)
 * and spdlog (bench_client_spdlog.cpp). Usable from C and C++.
 */
#ifndef NWB_BENCH_CLIENT_H
#define NWB_BENCH_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The benchmark message, in printf and in fmt syntax ({:f} prints like %f). */
#define NWB_BENCH_FMT        "frame %d took %f ms on %s"
#define NWB_BENCH_FMT_FMTLIB "frame {} took {:f} ms on {}"
/* Every written line of the benchmark contains this (used to count lines on disk). */
#define NWB_BENCH_MARKER " ms on "

#define NWB_BENCH_MAX_THREADS 8

/* A case during which other processes used more than this many cores is marked disturbed. */
#define NWB_BENCH_DISTURBED 0.25

/* The changing arguments of call @p i. */
static inline int nwb_bench_arg_frame(uint64_t i)
{
    return (int)(i & 0x7fffffff);
}
static inline double nwb_bench_arg_ms(uint64_t i)
{
    return 16.0 + (double)(i % 1000u) * 0.013;
}
static inline const char *nwb_bench_arg_name(uint64_t i)
{
    static const char *const names[4] = {"main", "render", "audio", "streaming"};

    return names[i & 3u];
}

enum nwb_bench_kind {
    NWB_BENCH_LATENCY = 0,    /* time every call on the calling thread */
    NWB_BENCH_THROUGHPUT = 1, /* log N records, then flush/destroy; total wall time */
};

struct nwb_bench_params {
    int kind;                /* enum nwb_bench_kind */
    int threads;             /* producer threads, 1..NWB_BENCH_MAX_THREADS */
    uint64_t calls;          /* timed (latency) or logged (throughput) calls per thread */
    uint64_t warmup;         /* latency only: untimed calls per thread first */
    unsigned burst;          /* latency only: calls per burst; 0 = one unpaced loop */
    unsigned pause_us;       /* latency only: pause after each burst */
    double ticks_per_ns;     /* timer calibration */
    uint64_t overhead_ticks; /* median cost of an empty timed call, subtracted */
    const char *dir;         /* a fresh temporary directory the peer writes into */
    const char *server_exe;  /* nwb-logserver, for the nwb server-mode peer */
};

struct nwb_bench_result {
    int ok;           /* 1 when the case ran */
    char error[256];  /* why not */
    char note[256];   /* peer settings worth printing (queue, policy) */
    uint64_t samples; /* timed calls */
    double p50_ns;
    double p99_ns;
    double p999_ns;
    double max_ns;
    double mean_ns;
    double wall_s;    /* throughput: first call to everything written */
    uint64_t logged;  /* calls made (warm-up included) */
    uint64_t dropped; /* calls the logger dropped (its own count) */
    long long lines;  /* benchmark lines found on disk afterwards */
    double other_cpu; /* driver: CPU other processes used during the case, in cores */
};

/** One producer call: log message number @p i. */
typedef void (*nwb_bench_log_fn)(void *self, uint64_t i);

/**
 * Run p->threads producers calling @p log_one (p->warmup + p->calls times
 * each for latency, p->calls for throughput). Latency runs fill the
 * percentile fields of @p r. Returns 0, or -1 with r->error set. @p t_start
 * receives nwb_bench_now_ns() at the moment the producers were released.
 */
int nwb_bench_run_producers(const struct nwb_bench_params *p, nwb_bench_log_fn log_one, void *self,
                            struct nwb_bench_result *r, uint64_t *t_start);

/**
 * Median ticks of an empty timed call through the same path (the timer
 * overhead, subtracted from samples). @p step receives the smallest
 * difference seen between two such measurements: the timer's granularity.
 */
uint64_t nwb_bench_timer_overhead(uint64_t *step);

/* The peers. Each sets up its logger in p->dir, runs, tears down, counts lines. */
int nwb_bench_peer_nwb_standalone(const struct nwb_bench_params *p, struct nwb_bench_result *r);
int nwb_bench_peer_nwb_server(const struct nwb_bench_params *p, struct nwb_bench_result *r);
int nwb_bench_peer_fprintf(const struct nwb_bench_params *p, struct nwb_bench_result *r);
int nwb_bench_peer_spdlog_async(const struct nwb_bench_params *p, struct nwb_bench_result *r);
int nwb_bench_peer_spdlog_sync(const struct nwb_bench_params *p, struct nwb_bench_result *r);

#ifdef __cplusplus
}
#endif

#endif /* NWB_BENCH_CLIENT_H */
