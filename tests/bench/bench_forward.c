/* SPDX-License-Identifier: MIT */
/*
 * bench_forward.c - the cost of --forward-clickhouse (issue 18, "Measured"), against Debian's
 * real clickhouse-server started here (tests/support/clickhouse_server.c):
 *   1. ingest rate without and with forwarding, paired in one run (4 KiB binary batches, 16
 *      connections, as bench_ingest), with ClickHouse at its normal priority and reniced to 19;
 *   2. forwarding throughput from a backlog of runs' log.txt (records/s into ClickHouse);
 *   3. the lag under a paced load of 100k records/s (sampled from /metrics every 250 ms);
 *   4. the forwarder thread's CPU (found by its name in /proc/PID/task) per forwarded record;
 *   5. the cost of a pass when thousands of finished runs are all forwarded and nothing is new.
 * Prints markdown tables and a "forward targets:" verdict line (scripts/bench --only forward).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "nwb/safe_name.h"

#include "bench_forward_load.h"
#include "bench_util.h"
#include "clickhouse_server.h"

#define MAX_PAIRS      9
#define BATCH_BYTES    4096u
#define CONNS          16
#define METRICS_MAX    (256u * 1024u) /* bytes of a /metrics answer kept */
#define LAG_SAMPLE_MS  250
#define LAG_SAMPLES    (4 * 120) /* 2 minutes of samples at most */
#define CATCH_UP_MS    120000    /* the longest a forwarder may take to drain what a case wrote */
#define IDLE_WINDOW_MS 2000
#define FWD_THREAD     "nwb-forward" /* NWB__FWD_THREAD_NAME (server/src/forward/forwarder.h) */
#define RENICE_CH      19

struct options {
    const char *server_exe;
    int pairs;
    double duration_s;
    uint64_t backlog_records;
    double lag_rate;
    double lag_s;
    int idle_runs;
};

struct bench {
    const struct options *o;
    struct nwb_test_clickhouse ch;
    struct nwb_bench_fwd_body body;  /* the 4 KiB batch */
    struct nwb_bench_fwd_body small; /* one small batch per idle run */
    int db_seq;                      /* a fresh database per forwarding server */
};

/* ---- /proc and /metrics ---- */

/* CPU time of thread @p comm of @p pid (schedstat: ns on a CPU), in seconds; -1 if none. */
static double thread_cpu_s(pid_t pid, const char *comm)
{
    char path[128];
    double total = -1;
    struct dirent *e;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    d = opendir(path);
    if (d == NULL) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        char p2[400], name[64] = "";
        unsigned long long ns = 0;
        FILE *f;

        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(p2, sizeof(p2), "%s/%s/comm", path, e->d_name);
        f = fopen(p2, "r");
        if (f == NULL) {
            continue;
        }
        if (fgets(name, sizeof(name), f) == NULL) {
            name[0] = '\0';
        }
        fclose(f);
        name[strcspn(name, "\n")] = '\0';
        if (strcmp(name, comm) != 0) {
            continue;
        }
        snprintf(p2, sizeof(p2), "%s/%s/schedstat", path, e->d_name);
        f = fopen(p2, "r");
        if (f != NULL && fscanf(f, "%llu", &ns) == 1) {
            total = (total < 0 ? 0 : total) + (double)ns / 1e9;
        }
        if (f != NULL) {
            fclose(f);
        }
    }
    closedir(d);
    return total;
}

/* Set the nice value of every thread of @p pid (Linux nice is per thread). */
static void renice_all(pid_t pid, int nice_value)
{
    char path[64];
    struct dirent *e;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    d = opendir(path);
    if (d == NULL) {
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.') {
            (void)setpriority(PRIO_PROCESS, (id_t)atoi(e->d_name), nice_value);
        }
    }
    closedir(d);
}

/* The value of metric @p name (a line "name value"), or -1. */
static double metric_of(const char *text, const char *name)
{
    const size_t n = strlen(name);

    for (const char *p = strstr(text, name); p != NULL; p = strstr(p + 1, name)) {
        if (p[-1] == '\n' && p[n] == ' ') {
            return strtod(p + n + 1, NULL);
        }
    }
    return -1;
}

struct fwd_counts {
    double ingested;  /* nwb_records_total */
    double forwarded; /* nwb_forward_records_total */
    double seconds_behind;
    double passes;
    double full_passes; /* nwb_forward_full_passes_total (-1: a server without it) */
};

static int counts_get(int port, struct fwd_counts *c)
{
    static char buf[METRICS_MAX];

    if (nwb_bench_metrics_get(port, buf, sizeof(buf)) != 0) {
        return -1;
    }
    c->ingested = metric_of(buf, "nwb_records_total");
    c->forwarded = metric_of(buf, "nwb_forward_records_total");
    c->seconds_behind = metric_of(buf, "nwb_forward_seconds_behind");
    c->passes = metric_of(buf, "nwb_forward_passes_total");
    c->full_passes = metric_of(buf, "nwb_forward_full_passes_total");
    return c->ingested < 0 ? -1 : 0;
}

/* Wait (polling /metrics every 20 ms, bounded) until the forwarder has acknowledged
 * @p records. Returns the ms it took, or -1 on the timeout. */
static long long wait_forwarded(int port, double records, int timeout_ms)
{
    const uint64_t t0 = nwb_bench_now_ns();
    struct fwd_counts c;

    for (;;) {
        const long long ms = (long long)((nwb_bench_now_ns() - t0) / 1000000u);

        if (counts_get(port, &c) == 0 && c.forwarded >= records) {
            return ms;
        }
        if (ms > timeout_ms) {
            return -1;
        }
        poll(NULL, 0, 20);
    }
}

/* ---- servers ---- */

/* Start nwb-logserver on @p out, forwarding to a fresh database when @p forward. */
static int server_start(struct bench *b, const char *out, int forward, struct nwb_bench_proc *p,
                        char *db, size_t dbcap)
{
    char url[160], err[512];
    char *argv[10];
    int argc = 0;

    argv[argc++] = (char *)(uintptr_t)b->o->server_exe;
    argv[argc++] = (char *)(uintptr_t) "--port";
    argv[argc++] = (char *)(uintptr_t) "0";
    argv[argc++] = (char *)(uintptr_t) "--out";
    argv[argc++] = (char *)(uintptr_t)out;
    if (forward) {
        snprintf(db, dbcap, "nwb_bench_%d", ++b->db_seq);
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/?database=%s", b->ch.http_port, db);
        argv[argc++] = (char *)(uintptr_t) "--forward-clickhouse";
        argv[argc++] = url;
    }
    argv[argc] = NULL;
    if (nwb_bench_proc_start(p, argv, 10000, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_forward: %s\n", err);
        return -1;
    }
    return 0;
}

static void drop_database(struct bench *b, const char *db)
{
    char sql[128];

    snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s", db);
    (void)nwb_test_clickhouse_query(&b->ch, sql, NULL, 0, NULL, 0);
}

/* ---- 1. ingest without and with forwarding ---- */

enum { V_OFF, V_ON, V_ON_NICE, V_COUNT };
static const char *const variant_names[V_COUNT] = {"forwarding off", "forwarding on",
                                                   "forwarding on, ClickHouse nice 19"};

struct ingest_result {
    int ok;
    double rec_s;
    double server_cpu, fwd_cpu, ch_cpu, other_cpu; /* CPU s / window s */
    double forwarded;                              /* records acknowledged in the window */
};

static void ingest_one(struct bench *b, int variant, struct ingest_result *r)
{
    struct nwb_bench_fwd_load l = {0};
    struct nwb_bench_fwd_load_result lr;
    struct nwb_bench_proc p;
    struct fwd_counts c = {0};
    char out[1024], db[64] = "";
    double s0, m0, g0, c0, f0;

    memset(r, 0, sizeof(*r));
    if (nwb_bench_tmpdir("forward", out, sizeof(out)) != 0 ||
        server_start(b, out, variant != V_OFF, &p, db, sizeof(db)) != 0) {
        return;
    }
    renice_all(b->ch.pid, variant == V_ON_NICE ? RENICE_CH : 0);
    l.port = p.port;
    l.conns = CONNS;
    l.program = "bench-forward";
    l.body = &b->body;
    l.duration_s = b->o->duration_s;
    s0 = nwb_bench_proc_cpu_s(p.pid);
    c0 = nwb_bench_proc_cpu_s(b->ch.pid);
    f0 = thread_cpu_s(p.pid, FWD_THREAD);
    g0 = nwb_bench_self_cpu_s();
    m0 = nwb_bench_machine_busy_s();
    if (nwb_bench_fwd_load_run(&l, &lr) == 0 && lr.non200 == 0 && lr.window_s > 0) {
        const double server = nwb_bench_proc_cpu_s(p.pid) - s0;
        const double ch = nwb_bench_proc_cpu_s(b->ch.pid) - c0;
        const double gen = nwb_bench_self_cpu_s() - g0;
        const double busy = nwb_bench_machine_busy_s() - m0;

        r->ok = 1;
        r->rec_s = (double)lr.records / lr.window_s;
        r->server_cpu = server / lr.window_s;
        r->ch_cpu = ch / lr.window_s;
        r->fwd_cpu = variant == V_OFF ? 0 : (thread_cpu_s(p.pid, FWD_THREAD) - f0) / lr.window_s;
        r->other_cpu = (busy - server - ch - gen) / lr.window_s;
        if (r->other_cpu < 0) {
            r->other_cpu = 0;
        }
        if (variant != V_OFF && counts_get(p.port, &c) == 0) {
            r->forwarded = c.forwarded;
        }
    } else {
        fprintf(stderr, "bench_forward: %s: %llu non-200, %s\n", variant_names[variant],
                (unsigned long long)lr.non200, lr.error);
    }
    renice_all(b->ch.pid, 0);
    nwb_bench_proc_stop(&p, SIGTERM, 60000);
    nwb_bench_rmtree(out);
    if (db[0] != '\0') {
        drop_database(b, db);
    }
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Returns the paired median ratio of the target variant (ClickHouse reniced), or -1. */
static double ingest_section(struct bench *b, double *shared_ratio)
{
    static struct ingest_result res[MAX_PAIRS][V_COUNT];
    double ratio[V_COUNT][MAX_PAIRS];
    int n = 0;

    printf("#### Ingest without and with forwarding\n\n");
    printf("%d connections, %u-byte binary batches (%u records), %.1f s per run, %d rounds of "
           "off / on / on with ClickHouse reniced (order rotated each round); CPU columns are "
           "CPU seconds per second of the run.\n\n",
           CONNS, (unsigned)b->body.len, b->body.records, b->o->duration_s, b->o->pairs);
    printf("| round | variant | records/s | ratio to off | server CPU | forwarder thread CPU | "
           "ClickHouse CPU | other CPU | forwarded in the run |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < b->o->pairs; i++) {
        int clean = 1;

        for (int k = 0; k < V_COUNT; k++) {
            const int v = (k + i) % V_COUNT;

            fprintf(stderr, "bench_forward: round %d, %s\n", i + 1, variant_names[v]);
            ingest_one(b, v, &res[i][v]);
            clean &= res[i][v].ok;
        }
        for (int v = 0; v < V_COUNT; v++) {
            const struct ingest_result *r = &res[i][v];

            printf("| %d | %s | %.0f | %.3f | %.2f | %.3f | %.2f | %.2f | %.0f |\n", i + 1,
                   variant_names[v], r->rec_s,
                   res[i][V_OFF].rec_s > 0 ? r->rec_s / res[i][V_OFF].rec_s : 0, r->server_cpu,
                   r->fwd_cpu, r->ch_cpu, r->other_cpu, r->forwarded);
        }
        if (clean && res[i][V_OFF].rec_s > 0) {
            for (int v = 0; v < V_COUNT; v++) {
                ratio[v][n] = res[i][v].rec_s / res[i][V_OFF].rec_s;
            }
            n++;
        }
    }
    if (n == 0) {
        printf("\nno clean round\n\n");
        return -1;
    }
    *shared_ratio = median(ratio[V_ON], n);
    {
        const double nice_ratio = median(ratio[V_ON_NICE], n);

        printf("\nMedian of the per-round ratios over %d clean rounds: forwarding on %.3f of off "
               "with ClickHouse sharing the cores at its normal priority; %.3f with ClickHouse "
               "reniced to %d (the target figure: the forwarder's own cost, ClickHouse being "
               "another machine in production).\n\n",
               n, *shared_ratio, nice_ratio, RENICE_CH);
        return nice_ratio;
    }
}

/* ---- 2 and 4. a backlog forwarded ---- */

struct backlog_result {
    int ok;
    double records, seconds, rec_s, fwd_cpu_s, ch_cpu_s, ch_count;
};

static void backlog_section(struct bench *b, struct backlog_result *r)
{
    struct nwb_bench_fwd_load l = {0};
    struct nwb_bench_fwd_load_result lr;
    struct nwb_bench_proc p;
    struct fwd_counts c;
    char out[1024], db[64] = "", sql[160];
    double c0;
    uint64_t t0;
    long long ms;

    memset(r, 0, sizeof(*r));
    printf("#### Forwarding a backlog\n\n");
    if (nwb_bench_tmpdir("forward", out, sizeof(out)) != 0 ||
        server_start(b, out, 0, &p, db, sizeof(db)) != 0) {
        return;
    }
    l.port = p.port;
    l.conns = CONNS;
    l.program = "bench-backlog";
    l.body = &b->body;
    l.max_records = b->o->backlog_records;
    fprintf(stderr, "bench_forward: writing a backlog of %llu records\n",
            (unsigned long long)l.max_records);
    if (nwb_bench_fwd_load_run(&l, &lr) != 0 || lr.non200 != 0 || counts_get(p.port, &c) != 0) {
        fprintf(stderr, "bench_forward: the backlog load failed: %s\n", lr.error);
        nwb_bench_proc_stop(&p, SIGKILL, 10000);
        nwb_bench_rmtree(out);
        return;
    }
    r->records = c.ingested;
    nwb_bench_proc_stop(&p, SIGTERM, 60000);
    /* The same --out, now forwarding: everything is backlog. */
    c0 = nwb_bench_proc_cpu_s(b->ch.pid);
    t0 = nwb_bench_now_ns();
    if (server_start(b, out, 1, &p, db, sizeof(db)) != 0) {
        nwb_bench_rmtree(out);
        return;
    }
    ms = wait_forwarded(p.port, r->records, CATCH_UP_MS);
    r->seconds = (double)(nwb_bench_now_ns() - t0) / 1e9;
    r->fwd_cpu_s = thread_cpu_s(p.pid, FWD_THREAD);
    r->ch_cpu_s = nwb_bench_proc_cpu_s(b->ch.pid) - c0;
    nwb_bench_proc_stop(&p, SIGTERM, 60000);
    snprintf(sql, sizeof(sql), "SELECT count() FROM %s.nwb_logs FINAL", db);
    r->ch_count = (double)nwb_test_clickhouse_count(&b->ch, sql);
    drop_database(b, db);
    nwb_bench_rmtree(out);
    if (ms < 0) {
        printf("the backlog was not forwarded within %d s\n\n", CATCH_UP_MS / 1000);
        return;
    }
    r->ok = r->ch_count == r->records;
    r->rec_s = r->records / r->seconds;
    printf("%.0f records in %d runs' log.txt, written with forwarding off, then a server started "
           "on the same --out with forwarding on: start to the last acknowledged insert.\n\n",
           r->records, CONNS);
    printf("| records | seconds | records/s into ClickHouse | forwarder thread CPU s | CPU µs "
           "per record | ClickHouse CPU s | FINAL count in nwb_logs |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|\n");
    printf("| %.0f | %.2f | %.0f | %.2f | %.2f | %.2f | %.0f%s |\n\n", r->records, r->seconds,
           r->rec_s, r->fwd_cpu_s, r->fwd_cpu_s * 1e6 / r->records, r->ch_cpu_s, r->ch_count,
           r->ok ? "" : " (MISMATCH)");
}

/* ---- 3 and 4. the lag at a paced rate ---- */

struct lag_sampler {
    pthread_t thread;
    int port;
    volatile int stop;
    double rate;
    int n;
    double behind[LAG_SAMPLES];  /* records ingested, not acknowledged */
    double gauge_s[LAG_SAMPLES]; /* nwb_forward_seconds_behind */
};

static void *sampler_main(void *arg)
{
    struct lag_sampler *s = arg;
    const uint64_t t0 = nwb_bench_now_ns();

    for (int i = 0; !s->stop && s->n < LAG_SAMPLES; i++) {
        const uint64_t due = t0 + (uint64_t)i * LAG_SAMPLE_MS * 1000000u;
        struct timespec ts = {(time_t)(due / 1000000000u), (long)(due % 1000000000u)};
        struct fwd_counts c;

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
        }
        if (counts_get(s->port, &c) == 0) {
            s->behind[s->n] = c.ingested - c.forwarded;
            s->gauge_s[s->n] = c.seconds_behind;
            s->n++;
        }
    }
    return NULL;
}

struct lag_result {
    int ok;
    double rate, p50, p99, max, gauge_max, catch_up_ms, fwd_cpu_s, forwarded;
};

static void lag_section(struct bench *b, struct lag_result *r)
{
    static struct lag_sampler s;
    struct nwb_bench_fwd_load l = {0};
    struct nwb_bench_fwd_load_result lr;
    struct nwb_bench_proc p;
    struct fwd_counts c;
    char out[1024], db[64] = "";
    double f0;
    long long ms;

    memset(r, 0, sizeof(*r));
    memset(&s, 0, sizeof(s));
    printf("#### Lag at a paced rate\n\n");
    if (nwb_bench_tmpdir("forward", out, sizeof(out)) != 0 ||
        server_start(b, out, 1, &p, db, sizeof(db)) != 0) {
        return;
    }
    /* The schema first: the first pass creates it. */
    if (wait_forwarded(p.port, 0, 10000) < 0) {
        goto out;
    }
    l.port = p.port;
    l.conns = CONNS;
    l.program = "bench-lag";
    l.body = &b->body;
    l.duration_s = b->o->lag_s;
    l.records_per_s = b->o->lag_rate;
    s.port = p.port;
    f0 = thread_cpu_s(p.pid, FWD_THREAD);
    fprintf(stderr, "bench_forward: %.0f records/s for %.0f s\n", l.records_per_s, l.duration_s);
    pthread_create(&s.thread, NULL, sampler_main, &s);
    if (nwb_bench_fwd_load_run(&l, &lr) != 0 || lr.non200 != 0) {
        s.stop = 1;
        pthread_join(s.thread, NULL);
        fprintf(stderr, "bench_forward: the paced load failed: %s\n", lr.error);
        goto out;
    }
    s.stop = 1;
    pthread_join(s.thread, NULL);
    if (counts_get(p.port, &c) != 0) {
        goto out;
    }
    ms = wait_forwarded(p.port, c.ingested, CATCH_UP_MS);
    r->fwd_cpu_s = thread_cpu_s(p.pid, FWD_THREAD) - f0;
    r->forwarded = c.ingested;
    r->rate = (double)lr.records / lr.window_s;
    r->catch_up_ms = (double)ms;
    for (int i = 0; i < s.n; i++) {
        r->gauge_max = s.gauge_s[i] > r->gauge_max ? s.gauge_s[i] : r->gauge_max;
    }
    {
        const int n = s.n;

        qsort(s.behind, (size_t)n, sizeof(double), cmp_double);
        r->p50 = n > 0 ? s.behind[(n - 1) / 2] : 0;
        r->p99 = n > 0 ? s.behind[(int)((n - 1) * 0.99)] : 0;
        r->max = n > 0 ? s.behind[n - 1] : 0;
    }
    r->ok = ms >= 0 && s.n > 0;
    printf("%d connections paced to %.0f records/s for %.0f s (reached %.0f), /metrics sampled "
           "every %d ms (%d samples): records behind = nwb_records_total - "
           "nwb_forward_records_total; seconds = records behind / rate.\n\n",
           CONNS, b->o->lag_rate, b->o->lag_s, r->rate, LAG_SAMPLE_MS, s.n);
    printf("| lag | p50 | p99 | max |\n|---|---:|---:|---:|\n");
    printf("| records behind | %.0f | %.0f | %.0f |\n", r->p50, r->p99, r->max);
    printf("| seconds behind | %.3f | %.3f | %.3f |\n\n", r->p50 / r->rate, r->p99 / r->rate,
           r->max / r->rate);
    printf("Drained %.0f ms after the load stopped; nwb_forward_seconds_behind peaked at %.3f "
           "(it counts only a failed batch's lines); forwarder thread CPU %.2f s for %.0f "
           "records: %.2f µs per record, %.1f%% of a core.\n\n",
           r->catch_up_ms, r->gauge_max, r->fwd_cpu_s, r->forwarded,
           r->fwd_cpu_s * 1e6 / r->forwarded, 100 * r->fwd_cpu_s / lr.window_s);
out:
    nwb_bench_proc_stop(&p, SIGTERM, 60000);
    drop_database(b, db);
    nwb_bench_rmtree(out);
}

/* ---- 5. idle passes over many finished runs ---- */

struct idle_result {
    int ok;
    int runs;
    double passes_s, full_passes, cpu_per_pass_us, fwd_cpu_per_s, server_cpu_per_s;
};

static void idle_section(struct bench *b, struct idle_result *r)
{
    struct nwb_bench_proc p;
    struct fwd_counts c0, c1;
    char out[1024], db[64] = "";
    double f0, s0;
    uint64_t t0;
    int fd;

    memset(r, 0, sizeof(*r));
    r->runs = b->o->idle_runs;
    printf("#### Idle passes over many finished runs\n\n");
    if (nwb_bench_tmpdir("forward", out, sizeof(out)) != 0 ||
        server_start(b, out, 1, &p, db, sizeof(db)) != 0) {
        return;
    }
    fd = nwb_bench_connect(p.port, 30000);
    fprintf(stderr, "bench_forward: %d runs of one batch\n", r->runs);
    for (int i = 0; fd >= 0 && i < r->runs; i++) {
        char run[17];

        nwb_run_id_generate(run);
        if (nwb_bench_fwd_post(fd, p.port, "bench-idle", run, 1, &b->small) != 200) {
            close(fd);
            fd = -1;
        }
    }
    if (fd < 0) {
        fprintf(stderr, "bench_forward: writing the idle runs failed\n");
        goto out;
    }
    close(fd);
    if (counts_get(p.port, &c0) != 0 || wait_forwarded(p.port, c0.ingested, CATCH_UP_MS) < 0 ||
        counts_get(p.port, &c0) != 0) {
        goto out;
    }
    /* Two more passes: the nwb_runs rows of the last runs are sent, nothing is left. */
    for (double until = c0.passes + 2; c0.passes < until;) {
        poll(NULL, 0, 20);
        if (counts_get(p.port, &c0) != 0) {
            goto out;
        }
    }
    f0 = thread_cpu_s(p.pid, FWD_THREAD);
    s0 = nwb_bench_proc_cpu_s(p.pid);
    t0 = nwb_bench_now_ns();
    poll(NULL, 0, IDLE_WINDOW_MS); /* the measuring window */
    if (counts_get(p.port, &c1) == 0) {
        const double secs = (double)(nwb_bench_now_ns() - t0) / 1e9;
        const double fwd = thread_cpu_s(p.pid, FWD_THREAD) - f0;
        const double passes = c1.passes - c0.passes;

        r->ok = 1;
        r->passes_s = passes / secs;
        r->full_passes = c1.full_passes < 0 ? passes : c1.full_passes - c0.full_passes;
        r->cpu_per_pass_us = passes > 0 ? fwd * 1e6 / passes : 0;
        r->fwd_cpu_per_s = fwd / secs;
        r->server_cpu_per_s = (nwb_bench_proc_cpu_s(p.pid) - s0) / secs;
    }
    printf("%d finished runs, all forwarded; a %d ms window with nothing new.\n\n", r->runs,
           IDLE_WINDOW_MS);
    printf("| runs | passes/s | full scans in the window | forwarder CPU µs per pass | forwarder "
           "CPU per s | server CPU per s |\n|---:|---:|---:|---:|---:|---:|\n");
    printf("| %d | %.1f | %.0f | %.0f | %.4f | %.4f |\n\n", r->runs, r->passes_s, r->full_passes,
           r->cpu_per_pass_us, r->fwd_cpu_per_s, r->server_cpu_per_s);
out:
    nwb_bench_proc_stop(&p, SIGTERM, 60000);
    drop_database(b, db);
    nwb_bench_rmtree(out);
}

/* ---- main ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_forward [--quick] [--pairs N] [--duration-s S] [--backlog N]\n"
            "                     [--lag-rate R] [--lag-s S] [--idle-runs N] [--server-exe P]\n");
}

int main(int argc, char **argv)
{
    struct options o = {NWB_BENCH_SERVER_EXE, 3, 3.0, 1000000, 100000, 20, 2000};
    struct bench b;
    struct backlog_result bl;
    struct lag_result lag;
    struct idle_result idle;
    char why[256];
    double shared = -1, target;
    int fails = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--quick") == 0) {
            o.pairs = 1;
            o.duration_s = 1.5;
            o.backlog_records = 200000;
            o.lag_s = 5;
            o.idle_runs = 300;
        } else if (v != NULL && strcmp(a, "--pairs") == 0) {
            o.pairs = atoi(v), i++;
        } else if (v != NULL && strcmp(a, "--duration-s") == 0) {
            o.duration_s = atof(v), i++;
        } else if (v != NULL && strcmp(a, "--backlog") == 0) {
            o.backlog_records = strtoull(v, NULL, 10), i++;
        } else if (v != NULL && strcmp(a, "--lag-rate") == 0) {
            o.lag_rate = atof(v), i++;
        } else if (v != NULL && strcmp(a, "--lag-s") == 0) {
            o.lag_s = atof(v), i++;
        } else if (v != NULL && strcmp(a, "--idle-runs") == 0) {
            o.idle_runs = atoi(v), i++;
        } else if (v != NULL && strcmp(a, "--server-exe") == 0) {
            o.server_exe = v, i++;
        } else {
            usage(strcmp(a, "--help") == 0 ? stdout : stderr);
            return strcmp(a, "--help") == 0 ? 0 : 2;
        }
    }
    if (o.pairs < 1 || o.pairs > MAX_PAIRS || o.duration_s <= 0 || o.lag_s <= 0 ||
        o.lag_s * 1000 / LAG_SAMPLE_MS > LAG_SAMPLES || o.lag_rate <= 0 || o.idle_runs < 1 ||
        o.backlog_records < 1) {
        fprintf(stderr,
                "bench_forward: --pairs takes 1..%d, --lag-s at most %d, the others "
                "positive numbers\n",
                MAX_PAIRS, LAG_SAMPLES * LAG_SAMPLE_MS / 1000);
        return 2;
    }
    memset(&b, 0, sizeof(b));
    b.o = &o;
    if (!nwb_test_clickhouse_available(why, sizeof(why))) {
        fprintf(stderr, "bench_forward: %s\n", why);
        return 1;
    }
    if (nwb_bench_fwd_body_build(&b.body, BATCH_BYTES) != 0 ||
        nwb_bench_fwd_body_build(&b.small, 512) != 0 || nwb_test_clickhouse_start(&b.ch) != 0) {
        fprintf(stderr, "bench_forward: cannot start clickhouse-server\n");
        return 1;
    }
    target = ingest_section(&b, &shared);
    backlog_section(&b, &bl);
    lag_section(&b, &lag);
    idle_section(&b, &idle);
    nwb_test_clickhouse_destroy(&b.ch);
    nwb_bench_fwd_body_free(&b.body);
    nwb_bench_fwd_body_free(&b.small);

    fails += target < 0.90;
    fails += !bl.ok || !lag.ok || !idle.ok;
    printf("forward targets: ingest with forwarding %.3f of without (ClickHouse reniced; %.3f "
           "sharing) %s >= 0.90; backlog %.0f records/s%s; lag p99 %.3f s at %.0f records/s; "
           "%d idle runs %.0f µs per pass\n",
           target, shared, target >= 0.90 ? "PASS" : "FAIL", bl.rec_s, bl.ok ? "" : " (FAILED)",
           lag.rate > 0 ? lag.p99 / lag.rate : -1, lag.rate, idle.runs, idle.cpu_per_pass_us);
    return fails == 0 ? 0 : 1;
}
