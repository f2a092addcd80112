/* SPDX-License-Identifier: MIT */
/*
 * bench_client_harness.c - the producer threads every client peer shares: the
 * same loop, the same pacing and the same per-call timer around one call
 * through a function pointer, so only the logger differs between peers.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nwb/alloc.h"

#include "bench_client.h"
#include "bench_util.h"

/* Releases every producer at once (or tells them to quit when a thread failed to start). */
struct start_gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int state; /* 0 wait, 1 go, -1 quit */
};

struct producer {
    pthread_t thread;
    const struct nwb_bench_params *p;
    nwb_bench_log_fn log_one;
    void *self;
    struct start_gate *gate;
    uint64_t base;     /* first message number of this thread */
    uint64_t *samples; /* latency: p->calls ticks */
};

static void pause_us(unsigned us)
{
    struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};

    while (nanosleep(&ts, &ts) != 0) {
    }
}

static void *producer_main(void *arg)
{
    struct producer *pr = arg;
    const struct nwb_bench_params *p = pr->p;
    const nwb_bench_log_fn log_one = pr->log_one;
    void *const self = pr->self;
    const unsigned burst = p->burst;
    uint64_t i = pr->base;

    pthread_mutex_lock(&pr->gate->lock);
    while (pr->gate->state == 0) {
        pthread_cond_wait(&pr->gate->cond, &pr->gate->lock);
    }
    if (pr->gate->state < 0) {
        pthread_mutex_unlock(&pr->gate->lock);
        return NULL;
    }
    pthread_mutex_unlock(&pr->gate->lock);
    if (p->kind == NWB_BENCH_THROUGHPUT) {
        for (uint64_t k = 0; k < p->calls; k++) {
            log_one(self, i++);
        }
        return NULL;
    }
    for (uint64_t k = 0; k < p->warmup; k++) {
        log_one(self, i++);
        if (burst != 0 && (k + 1) % burst == 0) {
            pause_us(p->pause_us);
        }
    }
    for (uint64_t k = 0; k < p->calls; k++) {
        const uint64_t t0 = nwb_bench_ticks_begin();

        log_one(self, i++);
        pr->samples[k] = nwb_bench_ticks_end() - t0;
        if (burst != 0 && (k + 1) % burst == 0) {
            pause_us(p->pause_us);
        }
    }
    return NULL;
}

static void fill_percentiles(const struct nwb_bench_params *p, struct producer *prs,
                             struct nwb_bench_result *r, uint64_t *all)
{
    const size_t n = (size_t)p->calls * (size_t)p->threads;
    double sum = 0.0;
    size_t k = 0;

    for (int t = 0; t < p->threads; t++) {
        for (uint64_t c = 0; c < p->calls; c++) {
            uint64_t v = prs[t].samples[c];

            all[k++] = v > p->overhead_ticks ? v - p->overhead_ticks : 0;
        }
    }
    nwb_bench_sort_u64(all, n);
    for (size_t j = 0; j < n; j++) {
        sum += (double)all[j];
    }
    r->samples = n;
    r->p50_ns = (double)nwb_bench_quantile(all, n, 0.50) / p->ticks_per_ns;
    r->p99_ns = (double)nwb_bench_quantile(all, n, 0.99) / p->ticks_per_ns;
    r->p999_ns = (double)nwb_bench_quantile(all, n, 0.999) / p->ticks_per_ns;
    r->max_ns = (double)(n > 0 ? all[n - 1] : 0) / p->ticks_per_ns;
    r->mean_ns = n > 0 ? sum / (double)n / p->ticks_per_ns : 0.0;
}

int nwb_bench_run_producers(const struct nwb_bench_params *p, nwb_bench_log_fn log_one, void *self,
                            struct nwb_bench_result *r, uint64_t *t_start)
{
    struct producer prs[NWB_BENCH_MAX_THREADS];
    struct start_gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    uint64_t *all = NULL;
    int started = 0;
    int rc = -1;

    memset(prs, 0, sizeof(prs));
    if (p->threads < 1 || p->threads > NWB_BENCH_MAX_THREADS) {
        snprintf(r->error, sizeof(r->error), "threads must be 1..%d", NWB_BENCH_MAX_THREADS);
        return -1;
    }
    if (p->kind == NWB_BENCH_LATENCY) {
        /* Allocate (and touch) every sample buffer before the clock starts. */
        all = nwb_calloc((size_t)p->calls * (size_t)p->threads, sizeof(*all));
        if (all == NULL) {
            snprintf(r->error, sizeof(r->error), "out of memory for samples");
            return -1;
        }
        for (int t = 0; t < p->threads; t++) {
            prs[t].samples = nwb_calloc((size_t)p->calls, sizeof(uint64_t));
            if (prs[t].samples == NULL) {
                snprintf(r->error, sizeof(r->error), "out of memory for samples");
                goto out;
            }
        }
    }
    for (int t = 0; t < p->threads; t++) {
        prs[t].p = p;
        prs[t].log_one = log_one;
        prs[t].self = self;
        prs[t].gate = &gate;
        prs[t].base = (uint64_t)t * 1000000000u;
        if (pthread_create(&prs[t].thread, NULL, producer_main, &prs[t]) != 0) {
            snprintf(r->error, sizeof(r->error), "pthread_create failed");
            break;
        }
        started++;
    }
    pthread_mutex_lock(&gate.lock);
    gate.state = started == p->threads ? 1 : -1;
    *t_start = nwb_bench_now_ns();
    pthread_cond_broadcast(&gate.cond);
    pthread_mutex_unlock(&gate.lock);
    for (int t = 0; t < started; t++) {
        pthread_join(prs[t].thread, NULL);
    }
    if (started == p->threads) {
        const uint64_t warm = p->kind == NWB_BENCH_LATENCY ? p->warmup : 0;

        r->logged = (uint64_t)p->threads * (p->calls + warm);
        if (p->kind == NWB_BENCH_LATENCY) {
            fill_percentiles(p, prs, r, all);
        }
        rc = 0;
    }

out:
    for (int t = 0; t < p->threads; t++) {
        nwb_free(prs[t].samples);
    }
    nwb_free(all);
    return rc;
}

static __attribute__((noinline)) void empty_call(void *self, uint64_t i)
{
    (void)self;
    (void)i;
    __asm__ __volatile__("" : : : "memory");
}

uint64_t nwb_bench_timer_overhead(uint64_t *step)
{
    enum { N = 200000 };
    uint64_t *v = nwb_malloc(N * sizeof(*v));
    volatile nwb_bench_log_fn fn = empty_call;
    uint64_t med;

    *step = 0;
    if (v == NULL) {
        return 0;
    }
    for (int k = 0; k < N; k++) {
        const nwb_bench_log_fn f = fn;
        const uint64_t t0 = nwb_bench_ticks_begin();

        f(NULL, (uint64_t)k);
        v[k] = nwb_bench_ticks_end() - t0;
    }
    nwb_bench_sort_u64(v, N);
    med = nwb_bench_quantile(v, N, 0.5);
    *step = 0;
    for (int k = 1; k < N; k++) {
        if (v[k] > v[0]) {
            *step = v[k] - v[0];
            break;
        }
    }
    nwb_free(v);
    return med;
}
