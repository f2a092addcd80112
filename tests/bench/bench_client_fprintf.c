/* SPDX-License-Identifier: MIT */
/*
 * bench_client_fprintf.c - the plainest peer: fprintf() of the benchmark
 * message to a stdio FILE* (default buffering) on the calling thread.
 */
#include <stdio.h>
#include <string.h>

#include "bench_client.h"
#include "bench_util.h"

static void log_fprintf(void *self, uint64_t i)
{
    fprintf((FILE *)self, NWB_BENCH_FMT "\n", nwb_bench_arg_frame(i), nwb_bench_arg_ms(i),
            nwb_bench_arg_name(i));
}

int nwb_bench_peer_fprintf(const struct nwb_bench_params *p, struct nwb_bench_result *r)
{
    char path[1024];
    uint64_t t0 = 0;
    FILE *f;
    int rc;

    snprintf(path, sizeof(path), "%s/fprintf.log", p->dir);
    f = fopen(path, "w");
    if (f == NULL) {
        snprintf(r->error, sizeof(r->error), "fopen %.200s failed", path);
        return -1;
    }
    snprintf(r->note, sizeof(r->note), "stdio FILE*, default buffer, message only (no prefix)");
    rc = nwb_bench_run_producers(p, log_fprintf, f, r, &t0);
    if (fclose(f) != 0) {
        snprintf(r->error, sizeof(r->error), "fclose %.200s failed", path);
        rc = -1;
    }
    r->wall_s = (double)(nwb_bench_now_ns() - t0) / 1e9;
    if (rc != 0) {
        return -1;
    }
    r->lines = nwb_bench_count_lines(p->dir, NWB_BENCH_MARKER);
    r->ok = 1;
    return 0;
}
