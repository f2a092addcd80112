/* SPDX-License-Identifier: MIT */
/*
 * bench_util.h - shared helpers for the benchmarks under tests/bench: a
 * calibrated cycle timer, percentiles, temporary directories, counting log
 * lines on disk, starting/stopping a server process that prints
 * "listening on http://HOST:PORT", loopback connections to it and its
 * GET /metrics. Usable from C and C++.
 */
#ifndef NWB_BENCH_UTIL_H
#define NWB_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- time ---- */

/** Monotonic time in ns (CLOCK_MONOTONIC). */
uint64_t nwb_bench_now_ns(void);

#if defined(__x86_64__) || defined(__i386__)
#define NWB_BENCH_HAVE_TSC 1
/* Start stamp: the lfence keeps earlier instructions from drifting past it. */
static inline uint64_t nwb_bench_ticks_begin(void)
{
    uint32_t lo;
    uint32_t hi;

    __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
    return ((uint64_t)hi << 32) | lo;
}
/* End stamp: rdtscp waits for the measured code; the lfence stops later code moving up. */
static inline uint64_t nwb_bench_ticks_end(void)
{
    uint32_t lo;
    uint32_t hi;
    uint32_t aux;

    __asm__ __volatile__("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
    (void)aux;
    return ((uint64_t)hi << 32) | lo;
}
#else
#define NWB_BENCH_HAVE_TSC 0
static inline uint64_t nwb_bench_ticks_begin(void)
{
    return nwb_bench_now_ns();
}
static inline uint64_t nwb_bench_ticks_end(void)
{
    return nwb_bench_now_ns();
}
#endif

/**
 * Ticks per ns of nwb_bench_ticks_*(), measured against CLOCK_MONOTONIC over
 * about @p ms milliseconds (busy wait). 1.0 when there is no TSC.
 */
double nwb_bench_ticks_per_ns(unsigned ms);

/** Sort @p v ascending in place. */
void nwb_bench_sort_u64(uint64_t *v, size_t n);

/** The @p q quantile (0..1, nearest rank) of sorted @p v; 0 for an empty array. */
uint64_t nwb_bench_quantile(const uint64_t *v, size_t n, double q);

/* ---- files ---- */

/**
 * A fresh directory "<base>/nwb-bench-<tag>-XXXXXX" (base: $NWB_BENCH_TMP, else $TMPDIR, else
 * /tmp). 0 or -1.
 */
int nwb_bench_tmpdir(const char *tag, char *out, size_t outlen);

/** rm -rf @p path (best effort; refuses "" and "/"). */
void nwb_bench_rmtree(const char *path);

/**
 * Count, over every regular file under @p dir (recursively), the lines that
 * contain @p needle. Lines longer than 64 KiB are counted once per 64 KiB
 * piece that contains the needle. Returns the count, or -1 when @p dir
 * cannot be read.
 */
long long nwb_bench_count_lines(const char *dir, const char *needle);

/** Total size in bytes of the regular files under @p dir, or -1. */
long long nwb_bench_dir_bytes(const char *dir);

/* ---- server processes ---- */

struct nwb_bench_proc {
    pid_t pid;
    int pidfd;              /* pidfd_open() of pid, for waiting with a timeout; -1 if unavailable */
    int port;               /* from the listening line */
    void *drain;            /* internal: the thread that drains stdout/stderr */
    char last_output[1024]; /* after nwb_bench_proc_stop(): the last output bytes */
};

/**
 * Start @p argv (argv[0] is the executable path, NULL-terminated) and wait up
 * to @p timeout_ms for "listening on http://HOST:PORT" on its stdout. After
 * that line, a thread keeps draining its stdout and stderr so the child never
 * blocks on a full pipe; the last bytes are kept for error reports. Returns 0
 * with @p p filled, or -1 with a reason in @p errbuf (the child is reaped).
 */
int nwb_bench_proc_start(struct nwb_bench_proc *p, char *const argv[], int timeout_ms, char *errbuf,
                         size_t errlen);

/**
 * Send @p sig, wait up to @p timeout_ms for the exit (SIGKILL after that),
 * reap it, join the drain thread and keep its last output in
 * p->last_output. Returns the wait status, or -1.
 */
int nwb_bench_proc_stop(struct nwb_bench_proc *p, int sig, int timeout_ms);

/** Copy the last output the process wrote (stdout and stderr, NUL-terminated); also after stop. */
void nwb_bench_proc_output(struct nwb_bench_proc *p, char *buf, size_t cap);

/** CPU time (user + system) the process has used so far, in seconds; -1 on error. */
double nwb_bench_proc_cpu_s(pid_t pid);

/** This process's CPU time (user + system, all threads), in seconds. */
double nwb_bench_self_cpu_s(void);

/** CPU time of this process's waited-for children (and theirs), in seconds. */
double nwb_bench_children_cpu_s(void);

/**
 * CPU time the whole machine has been busy (every core, every process:
 * /proc/stat user + nice + system + irq + softirq + steal), in seconds; -1 on
 * error. Its growth minus the benchmark's own CPU is what other processes used.
 */
double nwb_bench_machine_busy_s(void);

/* ---- sockets ---- */

/** A blocking TCP connection to 127.0.0.1:@p port with @p timeout_ms send and receive
 * timeouts and TCP_NODELAY: the socket, or -1. */
int nwb_bench_connect(int port, int timeout_ms);

/**
 * GET /metrics from 127.0.0.1:@p port on a fresh connection (Connection: close, 5 s
 * timeouts), read to EOF into @p buf (NUL-terminated, cut at @p cap - 1 bytes). 0 on a 200,
 * else -1.
 */
int nwb_bench_metrics_get(int port, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* NWB_BENCH_UTIL_H */
