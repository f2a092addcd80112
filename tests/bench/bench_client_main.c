/* SPDX-License-Identifier: MIT */
/*
 * bench_client_main.c - the client benchmark driver: runs every peer (nwb
 * standalone, nwb server mode, spdlog async and sync, fprintf) for 1 and 2
 * producer threads, each case in its own forked process and temp dir, then
 * prints latency and throughput tables and PASS/FAIL against the targets.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_client.h"
#include "bench_util.h"

typedef int (*peer_fn)(const struct nwb_bench_params *p, struct nwb_bench_result *r);

struct peer {
    const char *name;
    const char *key; /* for --peers */
    peer_fn run;
    int enabled;
};

enum { PEER_NWB, PEER_NWB_SERVER, PEER_SPDLOG_ASYNC, PEER_SPDLOG_SYNC, PEER_FPRINTF, PEER_COUNT };

static struct peer peers[PEER_COUNT] = {
    {"nwb standalone", "nwb", nwb_bench_peer_nwb_standalone, 1},
    {"nwb server mode", "nwb-server", nwb_bench_peer_nwb_server, 0},
#ifdef NWB_BENCH_HAVE_SPDLOG
    {"spdlog async", "spdlog-async", nwb_bench_peer_spdlog_async, 1},
    {"spdlog sync", "spdlog-sync", nwb_bench_peer_spdlog_sync, 1},
#else
    {"spdlog async", "spdlog-async", NULL, 0},
    {"spdlog sync", "spdlog-sync", NULL, 0},
#endif
    {"fprintf", "fprintf", nwb_bench_peer_fprintf, 1},
};

/* Scenarios: paced latency, optional unpaced latency, throughput. */
enum { SC_PACED, SC_UNPACED, SC_THROUGHPUT, SC_COUNT };

struct options {
    uint64_t calls;
    uint64_t warmup;
    unsigned burst;
    unsigned pause_us;
    uint64_t tp_records;
    int threads[2];
    int nthreads;
    int unpaced;
    int paced;
    int throughput;
    int timeout_s;
    int repeat;
    const char *server_exe;
};

static struct nwb_bench_result results[SC_COUNT][PEER_COUNT][2];

/* Every repetition's result, for the paired target ratios (--repeat above 1). */
#define REPEAT_MAX 9
static struct nwb_bench_result reps[SC_COUNT][PEER_COUNT][2][REPEAT_MAX];

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_client [options]\n"
            "  --calls N        timed calls per thread in latency runs (default 1000000)\n"
            "  --warmup N       untimed calls per thread first (default 100000)\n"
            "  --burst N        paced latency: calls per burst (default 100)\n"
            "  --pause-us N     paced latency: pause after each burst (default 500)\n"
            "  --unpaced        also run an unpaced latency pass (one tight loop)\n"
            "  --records N      throughput: records per thread (default 1000000)\n"
            "  --threads LIST   1, 2 or 1,2 (default 1,2)\n"
            "  --server-exe P   also run nwb in server mode against this nwb-logserver\n"
            "  --no-spdlog      skip the spdlog peers\n"
            "  --peers LIST     only these: nwb,nwb-server,spdlog-async,spdlog-sync,fprintf\n"
            "                   (nwb-server needs --server-exe)\n"
            "  --scenarios LIST only these: paced,unpaced,throughput (default paced,throughput)\n"
            "  --timeout-s N    per case (default 300)\n"
            "  --repeat N       run each case N times (1..9), report the least disturbed run;\n"
            "                   peers alternate within a repetition (ABBA) and the latency\n"
            "                   targets take the median of the per-repetition ratios\n"
            "                   (lowest other CPU; the first one on a tie)\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0') {
        return -1;
    }
    *out = v;
    return 0;
}

/* 1 when the comma-separated @p list contains @p word. */
static int list_has(const char *list, const char *word)
{
    const size_t wl = strlen(word);
    const char *s = list;

    while (*s != '\0') {
        size_t n = strcspn(s, ",");

        if (n == wl && strncmp(s, word, n) == 0) {
            return 1;
        }
        s += n;
        if (*s == ',') {
            s++;
        }
    }
    return 0;
}

/* Every name in @p list must be one of @p names (@p count of them). */
static int list_check(const char *opt, const char *list, const char *const *names, int count)
{
    const char *s = list;

    while (*s != '\0') {
        size_t n = strcspn(s, ",");
        int found = 0;

        for (int i = 0; i < count; i++) {
            if (strlen(names[i]) == n && strncmp(s, names[i], n) == 0) {
                found = 1;
            }
        }
        if (!found) {
            fprintf(stderr, "bench_client: unknown name in %s: %.*s\n", opt, (int)n, s);
            return -1;
        }
        s += n;
        if (*s == ',') {
            s++;
        }
    }
    return 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
    const char *peer_list = NULL;
    int no_spdlog = 0;

    o->calls = 1000000;
    o->warmup = 100000;
    o->burst = 100;
    o->pause_us = 500;
    o->tp_records = 1000000;
    o->threads[0] = 1;
    o->threads[1] = 2;
    o->nthreads = 2;
    o->unpaced = 0;
    o->paced = 1;
    o->throughput = 1;
    o->timeout_s = 300;
    o->repeat = 1;
    o->server_exe = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t n = 0;

        if (strcmp(a, "--unpaced") == 0) {
            o->unpaced = 1;
            continue;
        }
        if (strcmp(a, "--no-spdlog") == 0) {
            no_spdlog = 1;
            continue;
        }
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        }
        if (v == NULL) {
            fprintf(stderr, "bench_client: %s needs a value\n", a);
            return -1;
        }
        i++;
        if (strcmp(a, "--server-exe") == 0) {
            o->server_exe = v;
            continue;
        }
        if (strcmp(a, "--peers") == 0) {
            const char *keys[PEER_COUNT];

            for (int k = 0; k < PEER_COUNT; k++) {
                keys[k] = peers[k].key;
            }
            if (list_check(a, v, keys, PEER_COUNT) != 0) {
                return -1;
            }
            peer_list = v;
            continue;
        }
        if (strcmp(a, "--scenarios") == 0) {
            static const char *const names[3] = {"paced", "unpaced", "throughput"};

            if (list_check(a, v, names, 3) != 0) {
                return -1;
            }
            o->paced = list_has(v, "paced");
            o->unpaced = list_has(v, "unpaced");
            o->throughput = list_has(v, "throughput");
            continue;
        }
        if (strcmp(a, "--threads") == 0) {
            if (strcmp(v, "1") == 0 || strcmp(v, "2") == 0) {
                o->threads[0] = atoi(v);
                o->nthreads = 1;
            } else if (strcmp(v, "1,2") != 0) {
                fprintf(stderr, "bench_client: --threads takes 1, 2 or 1,2\n");
                return -1;
            }
            continue;
        }
        if (parse_u64(v, &n) != 0) {
            fprintf(stderr, "bench_client: %s: not a number: %s\n", a, v);
            return -1;
        }
        if (strcmp(a, "--calls") == 0 && n >= 1000 && n <= 100000000) {
            o->calls = n;
        } else if (strcmp(a, "--warmup") == 0 && n <= 100000000) {
            o->warmup = n;
        } else if (strcmp(a, "--burst") == 0 && n >= 1 && n <= 1000000) {
            o->burst = (unsigned)n;
        } else if (strcmp(a, "--pause-us") == 0 && n <= 1000000) {
            o->pause_us = (unsigned)n;
        } else if (strcmp(a, "--records") == 0 && n >= 1000 && n <= 1000000000) {
            o->tp_records = n;
        } else if (strcmp(a, "--timeout-s") == 0 && n >= 1 && n <= 3600) {
            o->timeout_s = (int)n;
        } else if (strcmp(a, "--repeat") == 0 && n >= 1 && n <= REPEAT_MAX) {
            o->repeat = (int)n;
        } else {
            fprintf(stderr, "bench_client: bad option or value out of range: %s %s\n", a, v);
            return -1;
        }
    }
    if (!o->paced && !o->unpaced && !o->throughput) {
        fprintf(stderr, "bench_client: no scenario selected\n");
        return -1;
    }
    peers[PEER_NWB_SERVER].enabled = o->server_exe != NULL;
    for (int k = 0; k < PEER_COUNT; k++) {
        if (peer_list != NULL && !list_has(peer_list, peers[k].key)) {
            peers[k].enabled = 0;
        }
        if (no_spdlog && (k == PEER_SPDLOG_ASYNC || k == PEER_SPDLOG_SYNC)) {
            peers[k].enabled = 0;
        }
        if (peers[k].enabled && peers[k].run == NULL) {
            peers[k].enabled = 0;
            if (peer_list != NULL) {
                fprintf(stderr, "bench_client: peer %s was not built\n", peers[k].key);
                return -1;
            }
        }
    }
    if (peer_list != NULL && list_has(peer_list, "nwb-server") && o->server_exe == NULL) {
        fprintf(stderr, "bench_client: peer nwb-server needs --server-exe\n");
        return -1;
    }
    return 0;
}

/* Run one case in a child process so loggers, global registries and threads never mix. */
static void run_case(const struct peer *peer, const struct nwb_bench_params *p, int timeout_s,
                     struct nwb_bench_result *r)
{
    char dir[1024];
    int fds[2];
    pid_t pid;
    size_t got = 0;
    uint64_t deadline;
    int status = 0;

    double busy0;
    double kids0;
    uint64_t t0;

    memset(r, 0, sizeof(*r));
    if (nwb_bench_tmpdir("client", dir, sizeof(dir)) != 0) {
        snprintf(r->error, sizeof(r->error), "cannot create a temp dir");
        return;
    }
    if (pipe(fds) != 0) {
        snprintf(r->error, sizeof(r->error), "pipe failed");
        nwb_bench_rmtree(dir);
        return;
    }
    fflush(stdout);
    busy0 = nwb_bench_machine_busy_s();
    kids0 = nwb_bench_children_cpu_s();
    t0 = nwb_bench_now_ns();
    pid = fork();
    if (pid == 0) {
        struct nwb_bench_params cp = *p;
        struct nwb_bench_result cr;
        const char *b = (const char *)&cr;
        size_t off = 0;

        close(fds[0]);
        memset(&cr, 0, sizeof(cr));
        cp.dir = dir;
        if (peer->run(&cp, &cr) != 0 && cr.error[0] == '\0') {
            snprintf(cr.error, sizeof(cr.error), "failed");
        }
        while (off < sizeof(cr)) {
            ssize_t n = write(fds[1], b + off, sizeof(cr) - off);

            if (n <= 0) {
                _exit(2);
            }
            off += (size_t)n;
        }
        _exit(0);
    }
    close(fds[1]);
    if (pid < 0) {
        snprintf(r->error, sizeof(r->error), "fork failed");
        close(fds[0]);
        nwb_bench_rmtree(dir);
        return;
    }
    deadline = nwb_bench_now_ns() + (uint64_t)timeout_s * 1000000000u;
    while (got < sizeof(*r)) {
        uint64_t now = nwb_bench_now_ns();
        struct pollfd pfd = {fds[0], POLLIN, 0};
        ssize_t n;

        if (now >= deadline) {
            break;
        }
        if (poll(&pfd, 1, (int)((deadline - now) / 1000000u) + 1) <= 0) {
            continue;
        }
        n = read(fds[0], (char *)r + got, sizeof(*r) - got);
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
    }
    close(fds[0]);
    if (got < sizeof(*r)) {
        kill(pid, SIGKILL);
        memset(r, 0, sizeof(*r));
        snprintf(r->error, sizeof(r->error), "%s",
                 nwb_bench_now_ns() >= deadline ? "timed out (killed)"
                                                : "child died without a result");
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    {
        /* Everything the machine did minus the case's own processes (reaped, so counted). */
        const double wall = (double)(nwb_bench_now_ns() - t0) / 1e9;
        const double other =
            (nwb_bench_machine_busy_s() - busy0) - (nwb_bench_children_cpu_s() - kids0);

        r->other_cpu = wall > 0 && other > 0 ? other / wall : 0.0;
    }
    if (got == sizeof(*r) && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
        r->ok = 0;
        snprintf(r->error, sizeof(r->error), "child exit status %d", status);
    }
    nwb_bench_rmtree(dir);
}

static const char *lines_check(const struct nwb_bench_result *r, char *buf, size_t cap)
{
    const long long want = (long long)(r->logged - r->dropped);

    if (r->lines == want) {
        snprintf(buf, cap, "%lld ok", r->lines);
    } else {
        snprintf(buf, cap, "%lld MISSING %lld", r->lines, want - r->lines);
    }
    return buf;
}

static void print_latency(int sc, const struct options *o)
{
    char chk[64];

    for (int ti = 0; ti < o->nthreads; ti++) {
        for (int pi = 0; pi < PEER_COUNT; pi++) {
            const struct nwb_bench_result *r = &results[sc][pi][ti];

            if (!peers[pi].enabled) {
                continue;
            }
            if (!r->ok) {
                printf("| %-16s | %d | - | - | - | - | - | - | - | - | ERROR: %s |\n",
                       peers[pi].name, o->threads[ti], r->error);
                continue;
            }
            printf("| %-16s | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %llu | %s | %.2f | %s |\n",
                   peers[pi].name, o->threads[ti], r->p50_ns, r->p99_ns, r->p999_ns, r->max_ns,
                   r->mean_ns, (unsigned long long)r->dropped, lines_check(r, chk, sizeof(chk)),
                   r->other_cpu, r->note);
        }
    }
}

static void print_throughput(const struct options *o)
{
    char chk[64];

    for (int ti = 0; ti < o->nthreads; ti++) {
        for (int pi = 0; pi < PEER_COUNT; pi++) {
            const struct nwb_bench_result *r = &results[SC_THROUGHPUT][pi][ti];

            if (!peers[pi].enabled) {
                continue;
            }
            if (!r->ok) {
                printf("| %-16s | %d | - | - | - | - | - | - | ERROR: %s |\n", peers[pi].name,
                       o->threads[ti], r->error);
                continue;
            }
            printf("| %-16s | %d | %llu | %.3f | %.0f | %llu | %s | %.2f | %s |\n", peers[pi].name,
                   o->threads[ti], (unsigned long long)r->logged, r->wall_s,
                   r->wall_s > 0 ? (double)r->logged / r->wall_s : 0.0,
                   (unsigned long long)r->dropped, lines_check(r, chk, sizeof(chk)), r->other_cpu,
                   r->note);
        }
    }
}

static int scenario_on(const struct options *o, int sc)
{
    return sc == SC_PACED ? o->paced : sc == SC_UNPACED ? o->unpaced : o->throughput;
}

static int verdict(int ok, int *fails)
{
    if (!ok) {
        (*fails)++;
    }
    return ok;
}

/* " (disturbed ...)" when another process used the machine during either case, else "". */
static const char *disturbed(const struct nwb_bench_result *a, const struct nwb_bench_result *b,
                             char *buf, size_t cap)
{
    const double other = a->other_cpu > b->other_cpu ? a->other_cpu : b->other_cpu;

    buf[0] = '\0';
    if (other > NWB_BENCH_DISTURBED) {
        snprintf(buf, cap, " (disturbed: other CPU %.2f)", other);
    }
    return buf;
}

/* Ascending order, for the median of a few ratios. */
static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/*
 * The ratio a latency target is judged by: spdlog async's figure over nwb's.
 * With one repetition, that of the two rows shown; with more, the median of
 * the per-repetition ratios (the two peers ran back to back in each, ABBA),
 * listed into @p pairs. A repetition where either peer failed is left out.
 */
static double latency_ratio(const struct options *o, int sc, int ti, int p99, char *pairs,
                            size_t cap)
{
    double r[REPEAT_MAX];
    int n = 0;
    size_t used = 0;

    pairs[0] = '\0';
    for (int rep = 0; o->repeat > 1 && rep < o->repeat; rep++) {
        const struct nwb_bench_result *a = &reps[sc][PEER_NWB][ti][rep];
        const struct nwb_bench_result *b = &reps[sc][PEER_SPDLOG_ASYNC][ti][rep];
        const double av = p99 ? a->p99_ns : a->p50_ns;
        const double bv = p99 ? b->p99_ns : b->p50_ns;

        if (a->ok && b->ok && av > 0) {
            r[n++] = bv / av;
        }
    }
    if (n == 0) {
        const struct nwb_bench_result *a = &results[sc][PEER_NWB][ti];
        const struct nwb_bench_result *b = &results[sc][PEER_SPDLOG_ASYNC][ti];
        const double av = p99 ? a->p99_ns : a->p50_ns;

        return av > 0 ? (p99 ? b->p99_ns : b->p50_ns) / av : 0.0;
    }
    qsort(r, (size_t)n, sizeof(r[0]), cmp_double);
    for (int i = 0; i < n && used < cap; i++) {
        const int w = snprintf(pairs + used, cap - used, "%s1/%.2f", i > 0 ? ", " : "", r[i]);

        used += w > 0 ? (size_t)w : 0;
    }
    return n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2.0;
}

/* Paced rows are targets; unpaced rows are printed for information only (see below). */
static void print_latency_target(const struct options *o, const char *what, int sc, int ti, int p99,
                                 int *fails)
{
    /* Issue 17's targets: where NanoLog stands against spdlog async on the reference machine. */
    const struct nwb_bench_result *n = &results[sc][PEER_NWB][ti];
    const struct nwb_bench_result *s = &results[sc][PEER_SPDLOG_ASYNC][ti];
    const int paced = sc == SC_PACED;
    const double factor = p99 ? 20.0 : 15.0;
    const double nv = p99 ? n->p99_ns : n->p50_ns;
    const double sv = p99 ? s->p99_ns : s->p50_ns;
    char pairs[160];
    const double ratio = latency_ratio(o, sc, ti, p99, pairs, sizeof(pairs));
    const int met = ratio >= factor;
    char result[96];
    char note[64];

    if (paced) {
        snprintf(result, sizeof(result), "%s", verdict(met, fails) ? "PASS" : "FAIL");
    } else {
        /* A full ring drops in a few ns: unpaced nwb latency is mostly the drop path. */
        snprintf(result, sizeof(result), "info: %s; nwb dropped %llu of %llu",
                 met ? "met" : "not met", (unsigned long long)n->dropped,
                 (unsigned long long)n->logged);
    }
    printf("| %s <= 1/%.0f of spdlog async (%s) | %d | %.0f ns | %.0f ns | 1/%.2f%s%s%s | %s%s |\n",
           what, factor, paced ? "paced" : "unpaced", o->threads[ti], nv, sv, ratio,
           pairs[0] ? " (median of pairs: " : "", pairs, pairs[0] ? ")" : "", result,
           disturbed(n, s, note, sizeof(note)));
}

/* Returns the number of failed (or unmeasurable) targets. */
static int print_targets(const struct options *o)
{
    int fails = 0;

    if (!peers[PEER_SPDLOG_ASYNC].enabled || !peers[PEER_NWB].enabled) {
        printf("targets: not evaluated (needs nwb standalone and spdlog async)\n");
        return 1;
    }
    printf("| target | threads | nwb standalone | spdlog async | ratio | result |\n");
    printf("|---|---|---|---|---|---|\n");
    for (int sc = SC_PACED; sc <= SC_UNPACED; sc++) {
        const char *tag = sc == SC_PACED ? "paced" : "unpaced";

        if (!scenario_on(o, sc)) {
            continue;
        }
        for (int ti = 0; ti < o->nthreads; ti++) {
            const struct nwb_bench_result *n = &results[sc][PEER_NWB][ti];
            const struct nwb_bench_result *s = &results[sc][PEER_SPDLOG_ASYNC][ti];

            if (!n->ok || !s->ok) {
                printf("| latency (%s) | %d | - | - | - | %s |\n", tag, o->threads[ti],
                       sc == SC_PACED ? "FAIL (not measured)" : "info: not measured");
                fails += sc == SC_PACED ? 2 : 0;
                continue;
            }
            print_latency_target(o, "p50", sc, ti, 0, &fails);
            print_latency_target(o, "p99", sc, ti, 1, &fails);
        }
    }
    for (int ti = 0; o->throughput && ti < o->nthreads; ti++) {
        const struct nwb_bench_result *n = &results[SC_THROUGHPUT][PEER_NWB][ti];
        const struct nwb_bench_result *s = &results[SC_THROUGHPUT][PEER_SPDLOG_ASYNC][ti];
        char note[64];
        double nr;
        double sr;
        int ok;

        if (!n->ok || !s->ok || n->wall_s <= 0 || s->wall_s <= 0) {
            printf("| throughput > spdlog async | %d | - | - | - | FAIL (not measured) |\n",
                   o->threads[ti]);
            fails++;
            continue;
        }
        nr = (double)n->logged / n->wall_s;
        sr = (double)s->logged / s->wall_s;
        /* Records that were dropped or never reached the disk do not count. */
        ok = verdict(nr > sr && n->dropped == 0 && n->lines == (long long)n->logged, &fails);
        printf("| throughput > spdlog async, no drops | %d | %.0f rec/s | %.0f rec/s | %.2fx | "
               "%s%s |\n",
               o->threads[ti], nr, sr, sr > 0 ? nr / sr : 0.0, ok ? "PASS" : "FAIL",
               disturbed(n, s, note, sizeof(note)));
    }
    return fails;
}

/* The parameters of one case: scenario @p sc with @p threads producer threads. */
static void case_params(const struct options *o, int sc, int threads, struct nwb_bench_params *p)
{
    p->threads = threads;
    if (sc == SC_THROUGHPUT) {
        p->kind = NWB_BENCH_THROUGHPUT;
        p->calls = o->tp_records;
        p->warmup = 0;
        p->burst = 0;
    } else {
        p->kind = NWB_BENCH_LATENCY;
        p->calls = o->calls;
        p->warmup = o->warmup;
        p->burst = sc == SC_PACED ? o->burst : 0;
        p->pause_us = o->pause_us;
    }
}

int main(int argc, char **argv)
{
    struct options o;
    struct nwb_bench_params p;
    double tpn;
    uint64_t overhead;
    uint64_t step = 0;
    int fails;

    if (parse_args(argc, argv, &o) != 0) {
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    tpn = nwb_bench_ticks_per_ns(200);
    overhead = nwb_bench_timer_overhead(&step);
    memset(&p, 0, sizeof(p));
    p.ticks_per_ns = tpn;
    p.overhead_ticks = overhead;
    p.server_exe = o.server_exe;

    for (int sc = 0; sc < SC_COUNT; sc++) {
        if (!scenario_on(&o, sc)) {
            continue;
        }
        for (int ti = 0; ti < o.nthreads; ti++) {
            /* Repetition by repetition, the peers in turn, the order reversed every other
             * repetition (ABBA): a machine drifting over the minutes falls on every peer alike,
             * and each repetition pairs the peers' figures for the targets. */
            for (int rep = 0; rep < o.repeat; rep++) {
                for (int k = 0; k < PEER_COUNT; k++) {
                    const int pi = rep % 2 ? PEER_COUNT - 1 - k : k;
                    struct nwb_bench_result *best = &results[sc][pi][ti];
                    struct nwb_bench_result *r = &reps[sc][pi][ti][rep];

                    if (!peers[pi].enabled) {
                        continue;
                    }
                    case_params(&o, sc, o.threads[ti], &p);
                    fprintf(stderr, "bench_client: %s, %s, %d thread(s), run %d...\n",
                            peers[pi].name,
                            sc == SC_PACED     ? "paced latency"
                            : sc == SC_UNPACED ? "unpaced latency"
                                               : "throughput",
                            p.threads, rep + 1);
                    run_case(&peers[pi], &p, o.timeout_s, r);
                    /* Keep a successful run over a failed one, then the least disturbed. */
                    if (rep == 0 || (r->ok && !best->ok) ||
                        (r->ok == best->ok && r->other_cpu < best->other_cpu)) {
                        *best = *r;
                    }
                }
            }
        }
    }

    if (o.paced || o.unpaced) {
        printf("#### Client call latency\n\n");
        printf("Timer: %s at %.3f GHz, step %llu ticks (%.1f ns); median empty-call overhead "
               "%llu ticks (%.1f ns), subtracted from every sample.\n",
               NWB_BENCH_HAVE_TSC ? "rdtsc/rdtscp with lfence" : "clock_gettime", tpn,
               (unsigned long long)step, (double)step / tpn, (unsigned long long)overhead,
               (double)overhead / tpn);
        printf("Message `%s` with changing values; %llu timed calls per thread after "
               "%llu warm-up calls.\n",
               NWB_BENCH_FMT, (unsigned long long)o.calls, (unsigned long long)o.warmup);
    }
    for (int sc = SC_PACED; sc <= SC_UNPACED; sc++) {
        if (!scenario_on(&o, sc)) {
            continue;
        }
        if (sc == SC_PACED) {
            printf("\nPaced: bursts of %u calls per thread, then a %u us pause.\n\n", o.burst,
                   o.pause_us);
        } else {
            printf("\nUnpaced: one tight loop per thread (queues fill; drop or block per "
                   "policy).\n\n");
        }
        printf("| peer | threads | p50 ns | p99 ns | p99.9 ns | max ns | mean ns | dropped | "
               "lines on disk | other CPU | settings |\n");
        printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
        print_latency(sc, &o);
    }
    if (o.throughput) {
        printf("\n#### Client sustained throughput\n\n");
        printf("%llu records per thread, no pauses; wall time from the first call until the "
               "logger was flushed and destroyed (everything on disk).\n\n",
               (unsigned long long)o.tp_records);
        printf("| peer | threads | records | wall s | records/s | dropped | lines on disk | "
               "other CPU | settings |\n");
        printf("|---|---|---|---|---|---|---|---|---|\n");
        print_throughput(&o);
    }
    printf("\n`other CPU`: cores' worth of CPU that other processes used while the case ran "
           "(machine busy time from /proc/stat minus the case's own processes); above ~0.1 the "
           "row is disturbed.\n");
    printf("\n#### Client targets\n\n");
    fails = print_targets(&o);
    printf("\nclient targets: %s (%d failed)\n", fails == 0 ? "PASS" : "FAIL", fails);
    return fails == 0 ? 0 : 1;
}
