/* SPDX-License-Identifier: MIT */
/*
 * offload.c - runs a connection's blocking work (crash store fsyncs, crash
 * folder scans, telemetry ingest) on the libuv thread pool so the loop
 * thread never waits on the disk. The connection is held like a log job
 * (job_out) until the loop-side completion ran.
 */
#include "server_int.h"

static void work_run(uv_work_t *req)
{
    struct nwb__conn *c = NWB_CONTAINER_OF(req, struct nwb__conn, work.req);

    c->work.run(c);
}

static void work_after(uv_work_t *req, int status)
{
    struct nwb__conn *c = NWB_CONTAINER_OF(req, struct nwb__conn, work.req);

    (void)status; /* never cancelled: run() always ran */
    nwb__conn_work_finished(c, c->work.done);
}

int nwb__offload(struct nwb__conn *c, nwb__work_run_fn run, nwb__work_done_fn done)
{
    int err;

    c->work.run = run;
    c->work.done = done;
    c->work.req.data = c;
    err = uv_queue_work(c->srv->loop, &c->work.req, work_run, work_after);
    if (err != 0) {
        return err;
    }
    if (c->state != NWB__CONN_CLOSED) {
        c->state = NWB__CONN_IN_WORKER;
    }
    c->job_out = 1;
    return 0;
}
