/* SPDX-License-Identifier: MIT */
/*
 * bench_client_nwb.c - the nwb peers: NWB_LOGGER_INFO through the public
 * client (nwb/client.h) in standalone mode (per-run file, console off) and
 * in server mode against a real nwb-logserver on 127.0.0.1 port 0.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "nwb/client.h"
#include "nwb/log.h"

#include "bench_client.h"
#include "bench_util.h"

/* Throughput runs must not drop: a full ring waits up to this long per call. */
#define BENCH_NWB_BLOCK_US 2000000u
#define BENCH_NWB_FLUSH_MS 300000u

static void log_nwb(void *self, uint64_t i)
{
    (void)self;
    NWB_LOGGER_INFO(NWB_BENCH_FMT, nwb_bench_arg_frame(i), nwb_bench_arg_ms(i),
                    nwb_bench_arg_name(i));
}

static int run_client(const struct nwb_bench_params *p, nwb_client_config_t *cfg,
                      struct nwb_bench_result *r, const char *mode_name)
{
    nwb_client_stats_t st;
    nwb_client_t *client = NULL;
    char err[256] = "";
    uint64_t t0 = 0;
    int rc;

    cfg->program = "bench";
    cfg->console = 0;
    if (p->kind == NWB_BENCH_THROUGHPUT) {
        cfg->full_policy = NWB_CLIENT_FULL_BLOCK;
        cfg->block_timeout_us = BENCH_NWB_BLOCK_US;
    }
    snprintf(r->note, sizeof(r->note), "%s, ring %zu KiB/thread, full policy %s%s", mode_name,
             cfg->ring_bytes / 1024u, cfg->full_policy == NWB_CLIENT_FULL_BLOCK ? "block" : "drop",
             cfg->full_policy == NWB_CLIENT_FULL_BLOCK ? " (2 s timeout)" : "");
    rc = nwb_client_create(cfg, &client, err, sizeof(err));
    if (rc != 0) {
        snprintf(r->error, sizeof(r->error), "nwb_client_create: %d %.200s", rc, err);
        return -1;
    }
    rc = nwb_bench_run_producers(p, log_nwb, client, r, &t0);
    if (nwb_client_flush(client, BENCH_NWB_FLUSH_MS) != 0 && rc == 0) {
        snprintf(r->error, sizeof(r->error), "nwb_client_flush timed out");
        rc = -1;
    }
    nwb_client_stats_get(client, &st);
    nwb_client_destroy(client);
    if (st.batches_spooled != 0 || st.batches_dropped != 0 || st.write_errors != 0) {
        size_t used = strlen(r->note);

        snprintf(r->note + used, sizeof(r->note) - used,
                 "; at flush: %llu batches spooled, %llu dropped, %llu write errors",
                 (unsigned long long)st.batches_spooled, (unsigned long long)st.batches_dropped,
                 (unsigned long long)st.write_errors);
    }
    r->wall_s = (double)(nwb_bench_now_ns() - t0) / 1e9;
    r->dropped = st.records_dropped;
    return rc;
}

int nwb_bench_peer_nwb_standalone(const struct nwb_bench_params *p, struct nwb_bench_result *r)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;

    cfg.mode = NWB_CLIENT_MODE_STANDALONE;
    cfg.log_dir = p->dir;
    if (run_client(p, &cfg, r, "standalone") != 0) {
        return -1;
    }
    r->lines = nwb_bench_count_lines(p->dir, NWB_BENCH_MARKER);
    r->ok = 1;
    return 0;
}

int nwb_bench_peer_nwb_server(const struct nwb_bench_params *p, struct nwb_bench_result *r)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    struct nwb_bench_proc srv;
    char out_dir[1024];
    char cli_dir[1024];
    char addr[64];
    char err[256] = "";
    char *argv[8];
    int rc;
    int status;

    if (p->server_exe == NULL) {
        snprintf(r->error, sizeof(r->error), "no nwb-logserver given");
        return -1;
    }
    snprintf(out_dir, sizeof(out_dir), "%s/server", p->dir);
    snprintf(cli_dir, sizeof(cli_dir), "%s/client", p->dir);
    if (mkdir(out_dir, 0700) != 0 || mkdir(cli_dir, 0700) != 0) {
        snprintf(r->error, sizeof(r->error), "mkdir under %.200s failed", p->dir);
        return -1;
    }
    argv[0] = (char *)(uintptr_t)p->server_exe; /* execv predates const */
    argv[1] = (char *)(uintptr_t) "--port";
    argv[2] = (char *)(uintptr_t) "0";
    argv[3] = (char *)(uintptr_t) "--out";
    argv[4] = out_dir;
    argv[5] = NULL;
    if (nwb_bench_proc_start(&srv, argv, 10000, err, sizeof(err)) != 0) {
        snprintf(r->error, sizeof(r->error), "server: %.240s", err);
        return -1;
    }
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", srv.port);
    cfg.mode = NWB_CLIENT_MODE_SERVER;
    cfg.server = addr;
    cfg.log_dir = cli_dir;
    rc = run_client(p, &cfg, r, "server mode");
    status = nwb_bench_proc_stop(&srv, SIGTERM, 30000);
    if (rc != 0) {
        return -1;
    }
    if (status != 0) {
        snprintf(r->error, sizeof(r->error), "nwb-logserver exit status %d", status);
        return -1;
    }
    r->lines = nwb_bench_count_lines(out_dir, NWB_BENCH_MARKER);
    r->ok = 1;
    return 0;
}
