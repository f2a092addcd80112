/* SPDX-License-Identifier: MIT */
/*
 * bench_symbolize.c - symbolisation time per crash: crash_prog's null dereference captured once
 * by the test tracer (tests/crash/capture_ptrace.c), then nwb-symbolize run on it as the server
 * runs it (a fresh process per crash): the first run over freshly copied symbol files ("cold")
 * and the median of the next N ("warm"), beside addr2line -f -i and eu-addr2line -f -i on the
 * same module offsets (the crashing thread's symbolised frames). Not run by ctest.
 *
 *   bench_symbolize [--runs N]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symbolize_test_world.h"
#include "test_support.h"

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* CPU time (user + system) of the children reaped so far, in ms. */
static double children_cpu_ms(void)
{
    struct rusage ru;

    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static double cpu_total_ms; /* CPU of the runs timed() made, summed */

/* Time one run of @p argv in ms (wall clock; its CPU time is added to cpu_total_ms), or -1
 * when it failed. The machine is shared: CPU time is the steadier figure. */
static double timed(const char *const argv[])
{
    char err[512];
    const double c0 = children_cpu_ms();
    const double t0 = now_ms();
    const int rc = sym_run(argv, err, sizeof(err));
    const double t = now_ms() - t0;

    cpu_total_ms += children_cpu_ms() - c0;
    return rc == 0 ? t : -1.0;
}

static double median_of(const char *const argv[], int runs)
{
    double *t = calloc((size_t)runs, sizeof(*t));
    double m;

    if (t == NULL) {
        return -1;
    }
    for (int i = 0; i < runs; i++) {
        t[i] = timed(argv);
        if (t[i] < 0) {
            free(t);
            return -1;
        }
    }
    qsort(t, (size_t)runs, sizeof(*t), cmp_double);
    m = t[runs / 2];
    free(t);
    return m;
}

int main(int argc, char **argv)
{
    static struct sym_world w;
    int runs = 20;
    char path[1700], out[700], *tsv;
    char offsets[16][32];
    const char *a2l[24], *eu[24];
    int noff = 0;

    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0) {
            runs = atoi(argv[++i]);
        }
    }
    if (runs < 1 || sym_world_setup(&w, "bench_symbolize") != 0) {
        fprintf(stderr, "bench_symbolize: cannot capture crash_prog\n");
        return 1;
    }
    sym_world_reset(&w);
    sym_world_symbol_path(&w, "", path, sizeof(path));
    if (sym_copy_file(CRASH_PROG_EXE, path, 0755) != 0) {
        return 1;
    }
    snprintf(out, sizeof(out), "%s", w.out);
    {
        const char *const tool[] = {NWB_SYMBOLIZE_EXE, "--capture", w.capture, "--symbols-dir",
                                    w.symbols,         "--out",     out,       NULL};
        const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
        char libc_id[129], first[256] = "";
        double cold, cold_cpu, warm;
        char *txt;

        cpu_total_ms = 0;
        cold = timed(tool);
        cold_cpu = cpu_total_ms;
        cpu_total_ms = 0;
        warm = median_of(tool, runs);
        snprintf(path, sizeof(path), "%s/stack.txt", w.out);
        txt = nwb_test_read_file(path, NULL);
        if (txt != NULL) {
            snprintf(first, sizeof(first), "%.*s", (int)strcspn(txt, "\n"), txt);
        }
        free(txt);
        printf("%s\n", first);
        printf("nwb-symbolize, the program's symbols: cold %.2f ms wall %.2f ms CPU; warm median "
               "%.2f ms wall, %.2f ms CPU mean (%d runs)\n",
               cold, cold_cpu, warm, cpu_total_ms / runs, runs);
        /* libc's file too (2 MB, its CFI and .dynsym): the unwinder goes on to libc's frames. */
        if (sym_build_id_hex(libc, libc_id) == 0) {
            char dir[800];

            snprintf(dir, sizeof(dir), "%s/.build-id/%.2s", w.symbols, libc_id);
            (void)mkdir(dir, 0755);
            snprintf(path, sizeof(path), "%s/%s", dir, libc_id + 2);
            if (sym_copy_file(libc, path, 0755) == 0) {
                cpu_total_ms = 0;
                cold = timed(tool);
                cold_cpu = cpu_total_ms;
                cpu_total_ms = 0;
                warm = median_of(tool, runs);
                printf("nwb-symbolize, + libc's file: cold %.2f ms wall %.2f ms CPU; warm median "
                       "%.2f ms wall, %.2f ms CPU mean (%d runs)\n",
                       cold, cold_cpu, warm, cpu_total_ms / runs, runs);
            }
        }
    }
    /* The crashing thread's symbolised offsets, from frames.tsv. */
    snprintf(path, sizeof(path), "%s/frames.tsv", w.out);
    tsv = nwb_test_read_file(path, NULL);
    for (char *line = tsv != NULL ? strtok(tsv, "\n") : NULL; line != NULL && noff < 16;
         line = strtok(NULL, "\n")) {
        char module[256], offset[24];

        if (strncmp(line, "thread\t", 7) == 0 && noff > 0) {
            break;
        }
        if (sscanf(line, "frame\t%*[^\t]\t%255[^\t]\t%*[^\t]\t%23[^\t]", module, offset) == 2 &&
            strcmp(module, "crash_prog") == 0) {
            snprintf(offsets[noff++], sizeof(offsets[0]), "0x%s", offset);
        }
    }
    free(tsv);
    a2l[0] = "addr2line";
    a2l[1] = "-f";
    a2l[2] = "-i";
    a2l[3] = "-e";
    a2l[4] = CRASH_PROG_EXE;
    eu[0] = "eu-addr2line";
    eu[1] = "-f";
    eu[2] = "-i";
    eu[3] = "-e";
    eu[4] = CRASH_PROG_EXE;
    for (int i = 0; i < noff; i++) {
        a2l[5 + i] = offsets[i];
        eu[5 + i] = offsets[i];
    }
    a2l[5 + noff] = NULL;
    eu[5 + noff] = NULL;
    cpu_total_ms = 0;
    {
        const double m = median_of(a2l, runs);

        printf("addr2line -f -i (%d addresses): median %.2f ms wall, %.2f ms CPU mean\n", noff, m,
               cpu_total_ms / runs);
    }
    cpu_total_ms = 0;
    {
        const double m = median_of(eu, runs);

        printf("eu-addr2line -f -i (%d addresses): median %.2f ms wall, %.2f ms CPU mean\n", noff,
               m, cpu_total_ms / runs);
    }
    sym_world_teardown(&w);
    return 0;
}
