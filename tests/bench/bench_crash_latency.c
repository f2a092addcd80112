/* SPDX-License-Identifier: MIT */
/*
 * bench_crash_latency.c - how long a crash takes to be on the server and symbolised: crash_prog
 * (threads_null: three named threads, a NULL dereference on main) dies N times with the
 * uploader on, against the real nwb-logserver holding crash_prog's and libc's symbols. For
 * each crash: from the handler's crash_time_ns (manifest.txt) to the server's "received"
 * (the archive stored and fsynced) and to stack.txt written (unwound and symbolised), with
 * the ptrace capture and with the in-process fallback (ptrace denied by seccomp). The floor
 * beside it: the same archives POSTed by hand to a second server (HTTP and the store alone).
 * Not run by ctest; scripts/bench --only crash runs it.
 *
 *   bench_crash_latency [--runs N]
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "crash_test_run.h"
#include "symbolize_test_world.h"
#include "test_support.h"

#define WAIT_MS  60000
#define RUNS_MAX 200

struct sample {
    double to_server_ms;     /* crash_time_ns to the server's received time */
    double to_symbolised_ms; /* crash_time_ns to stack.txt's mtime */
};

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* "2026-12-03T12:33:37.017572968Z" (1..9 fraction digits) as Unix ns, or 0. */
static uint64_t iso_ns(const char *s)
{
    struct tm tm;
    char frac[16] = "";
    unsigned long ns = 0;
    size_t n;

    memset(&tm, 0, sizeof(tm));
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%9[0-9]Z", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, frac) != 7) {
        return 0;
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    n = strlen(frac);
    ns = strtoul(frac, NULL, 10);
    for (; n < 9; n++) {
        ns *= 10;
    }
    return (uint64_t)timegm(&tm) * 1000000000u + ns;
}

/* The value of "key=" in a manifest, as an unsigned number; 0 when missing. */
static uint64_t manifest_u64(const char *manifest, const char *key)
{
    const char *at = strstr(manifest, key);

    return at != NULL ? strtoull(at + strlen(key), NULL, 10) : 0;
}

/* Wait until GET /v1/crashes/<id> says symbolised; its JSON (free()), or NULL. */
static char *wait_symbolised(int port, const char *id)
{
    const double deadline = now_ms() + WAIT_MS;
    char path[80];
    int delay = 1;

    snprintf(path, sizeof(path), "/v1/crashes/%s", id);
    while (now_ms() < deadline) {
        char *json = malloc(1u << 20);

        if (json == NULL) {
            return NULL;
        }
        if (nwb_test_http(port, "GET", path, NULL, NULL, 0, json, 1u << 20) == 200 &&
            strstr(json, "\"symbolization\":{\"state\":\"done\"") != NULL &&
            strstr(json, "\"signature\":\"") != NULL) {
            return json;
        }
        free(json);
        poll(NULL, 0, delay); /* the server has no push for this: back off */
        delay = delay < 16 ? delay * 2 : 16;
    }
    return NULL;
}

/* One crash against @p srv; its figures into @p s. 0 or -1. */
static int one_crash(const struct nwb_test_server *srv, const char *root, const char *tag, int i,
                     const char *extra_env, struct sample *s)
{
    char crash_dir[700], server[64], path[1200], id[33];
    struct crash_run r;
    char *log, *last = NULL, *manifest, *json, *received;
    struct stat st;
    uint64_t crash_ns, received_ns, stack_ns;

    snprintf(crash_dir, sizeof(crash_dir), "%s/%s-%d", root, tag, i);
    snprintf(server, sizeof(server), "127.0.0.1:%d", srv->port);
    if (crash_run("threads_null", crash_dir, server, NWB_CRASH_HELPER_EXE, extra_env, &r) != 0) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/upload.log", crash_dir);
    if (!nwb_test_wait_file_contains(path, ": id ", WAIT_MS) ||
        (log = nwb_test_read_file(path, NULL)) == NULL) {
        fprintf(stderr, "bench_crash_latency: no upload in %s\n", path);
        return -1;
    }
    for (char *q = strstr(log, ": id "); q != NULL; q = strstr(q + 1, ": id ")) {
        last = q;
    }
    snprintf(id, sizeof(id), "%.32s", last + 5);
    free(log);
    json = wait_symbolised(srv->port, id);
    if (json == NULL) {
        fprintf(stderr, "bench_crash_latency: crash %s not symbolised\n", id);
        return -1;
    }
    received = strstr(json, "\"received\":\"");
    received_ns = received != NULL ? iso_ns(received + 12) : 0;
    free(json);
    snprintf(path, sizeof(path), "%s/crashes/packages/%s/manifest.txt", srv->out_dir, id);
    manifest = nwb_test_read_file(path, NULL);
    crash_ns = manifest != NULL ? manifest_u64(manifest, "\ncrash_time_ns=") : 0;
    free(manifest);
    snprintf(path, sizeof(path), "%s/crashes/analysis/%s/stack.txt", srv->out_dir, id);
    if (stat(path, &st) != 0 || crash_ns == 0 || received_ns < crash_ns) {
        fprintf(stderr, "bench_crash_latency: crash %s: no times\n", id);
        return -1;
    }
    stack_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
    s->to_server_ms = (double)(received_ns - crash_ns) / 1e6;
    s->to_symbolised_ms = (double)(stack_ns - crash_ns) / 1e6;
    /* Keep the archive's id for the floor: raw/<id>.tar.zst. */
    snprintf(path, sizeof(path), "%s/%s-%d.id", root, tag, i);
    return nwb_test_write_file(path, id, 32, 0644);
}

static void print_row(const char *what, double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    printf("| %s | %.1f | %.1f | %.1f |\n", what, v[n / 2],
           v[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1], v[n - 1]);
}

int main(int argc, char **argv)
{
    int runs = 10;
    char root[512], out[700], libc[600], err[4096], server[64];
    struct nwb_test_server srv, floor_srv;
    static struct sample ptrace_s[RUNS_MAX], fallback_s[RUNS_MAX];
    static double v[RUNS_MAX];
    double ptrace_p50, fallback_p50;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: bench_crash_latency [--runs N]   (1..%d)\n", RUNS_MAX);
            return 2;
        }
    }
    if (runs < 1 || runs > RUNS_MAX || nwb_test_tmpdir("bench-crash-latency", root, sizeof(root))) {
        fprintf(stderr, "usage: bench_crash_latency [--runs N]   (1..%d)\n", RUNS_MAX);
        return 2;
    }
    snprintf(out, sizeof(out), "%s/srv", root);
    if (nwb_test_server_start(&srv, NULL, out, 0, NULL) != 0) {
        fprintf(stderr, "bench_crash_latency: the server did not start\n");
        return 1;
    }
    /* The symbols a studio would have published: the program's binary and the C library. */
    {
        char *maps = nwb_test_read_file("/proc/self/maps", NULL);
        const char *hit = maps != NULL ? strstr(maps, "/libc.so.6\n") : NULL;

        while (hit != NULL && hit > maps && hit[-1] != ' ') {
            hit--;
        }
        snprintf(libc, sizeof(libc), "%.*s", hit != NULL ? (int)strcspn(hit, "\n") : 0,
                 hit != NULL ? hit : "");
        free(maps);
    }
    snprintf(server, sizeof(server), "127.0.0.1:%d", srv.port);
    {
        const char *up[] = {NWB_CRASH_HELPER_EXE, "symbols", "upload", "--server", server,
                            CRASH_PROG_EXE,       libc,      NULL};

        if (sym_run(up, err, sizeof(err)) != 0) {
            fprintf(stderr, "bench_crash_latency: symbols upload failed: %s\n", err);
            return 1;
        }
    }
    for (int i = 0; i < runs; i++) {
        if (one_crash(&srv, root, "ptrace", i, NULL, &ptrace_s[i]) != 0 ||
            one_crash(&srv, root, "fallback", i, "CRASH_PROG_DENY_PTRACE=1", &fallback_s[i]) != 0) {
            return 1;
        }
    }

    /* The floor: the same archives, POSTed by hand to a second server. */
    snprintf(out, sizeof(out), "%s/floor", root);
    if (nwb_test_server_start(&floor_srv, NULL, out, 0, NULL) != 0) {
        return 1;
    }
    printf("crash latency: %d crashes of crash_prog threads_null each way (3 threads), the real "
           "nwb-logserver on 127.0.0.1, ms\n\n",
           runs);
    printf("| from the crash (crash_time_ns) to | p50 | p90 | max |\n|---|---:|---:|---:|\n");
    for (int i = 0; i < runs; i++) {
        v[i] = ptrace_s[i].to_server_ms;
    }
    print_row("on the server, ptrace capture", v, runs);
    ptrace_p50 = v[runs / 2];
    for (int i = 0; i < runs; i++) {
        v[i] = fallback_s[i].to_server_ms;
    }
    print_row("on the server, in-process fallback", v, runs);
    fallback_p50 = v[runs / 2];
    for (int i = 0; i < runs; i++) {
        v[i] = ptrace_s[i].to_symbolised_ms;
    }
    print_row("symbolised (stack.txt), ptrace capture", v, runs);
    for (int i = 0; i < runs; i++) {
        v[i] = fallback_s[i].to_symbolised_ms;
    }
    print_row("symbolised (stack.txt), in-process fallback", v, runs);
    for (int i = 0; i < runs; i++) {
        char path[1200], id[40];
        char *idtext, *body;
        size_t len = 0;
        double t0;

        snprintf(path, sizeof(path), "%s/ptrace-%d.id", root, i);
        idtext = nwb_test_read_file(path, NULL);
        snprintf(id, sizeof(id), "%s", idtext != NULL ? idtext : "");
        free(idtext);
        snprintf(path, sizeof(path), "%s/crashes/raw/%s.tar.zst", srv.out_dir, id);
        body = nwb_test_read_file(path, &len);
        if (body == NULL) {
            fprintf(stderr, "bench_crash_latency: no %s\n", path);
            return 1;
        }
        t0 = now_ms();
        if (nwb_test_http(floor_srv.port, "POST", "/v1/crash", NULL, body, len, NULL, 0) != 200) {
            return 1;
        }
        v[i] = now_ms() - t0;
        free(body);
    }
    print_row("floor: the same archive POSTed by hand, answer received", v, runs);
    printf("\ncrash targets: on the server p50 %.1f ms (< 1000 ms: %s); ptrace / fallback p50 "
           "%.2fx; the floor's p50 %.1f ms\n\n",
           ptrace_p50, ptrace_p50 < 1000.0 ? "PASS" : "FAIL", ptrace_p50 / fallback_p50,
           v[runs / 2]);
    nwb_test_server_stop(&floor_srv, SIGTERM, 10000);
    nwb_test_server_stop(&srv, SIGTERM, 10000);
    nwb_test_rmtree(root);
    return 0;
}
