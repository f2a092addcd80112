/* SPDX-License-Identifier: MIT */
/*
 * names_reload.c - SIGHUP: the sidecars are loaded again on the thread pool
 * (the loop never reads them), then the new table reaches the log worker as
 * a job in its queue, so every batch queued before it is decoded with the
 * old table and every later one with the new: no line is lost, reordered or
 * decoded half one way. The old table is freed once the worker gave it back
 * and no telemetry ingest holds it. One reload at a time; a SIGHUP during
 * one asks for another afterwards.
 */
#include <string.h>

#include "nwb/error.h"
#include "server_int.h"

static void reload_run(uv_work_t *req)
{
    struct nwb_server *srv = req->data;
    struct nwb__reload *r = &srv->reload;

    r->errbuf[0] = '\0';
    r->err = nwb__names_load(srv->namesym_dirs, srv->namesym_dir_count, 0, &r->loaded, r->errbuf,
                             sizeof(r->errbuf));
}

static void reload_after(uv_work_t *req, int status)
{
    struct nwb_server *srv = req->data;
    struct nwb__reload *r = &srv->reload;
    struct nwb__names *loaded = r->loaded;

    (void)status;
    r->loaded = NULL;
    if (r->err != 0 || srv->stopping) {
        if (r->err != 0) {
            srv->metrics.namesym_reload_failures++;
            nwb__console("error: namesym: reload failed: %s; still using the previous table",
                         r->errbuf);
        }
        nwb__names_unref(loaded);
        r->state = 0;
        if (r->again && !srv->stopping) {
            r->again = 0;
            nwb__names_reload_start(srv);
        }
        nwb__server_maybe_finish(srv);
        return;
    }
    /* New telemetry ingests use it from now on; the log worker from its place in the queue. */
    nwb__names_unref(srv->names);
    srv->names = loaded;
    nwb__names_ref(loaded);
    memset(&r->job, 0, sizeof(r->job));
    r->job.kind = NWB__JOB_NAMES;
    r->job.names = loaded; /* with the worker's reference */
    r->pending = loaded;
    r->state = 2;
    nwb__log_worker_submit(srv->worker, &r->job);
}

void nwb__names_reload_start(struct nwb_server *srv)
{
    struct nwb__reload *r = &srv->reload;
    int err;

    if (srv->stopping || srv->worker_stopped) {
        return;
    }
    if (r->state != 0) {
        r->again = 1;
        return;
    }
    r->req.data = srv;
    err = uv_queue_work(srv->loop, &r->req, reload_run, reload_after);
    if (err != 0) {
        srv->metrics.namesym_reload_failures++;
        nwb__console("error: namesym: cannot start the reload: %s", uv_strerror(err));
        return;
    }
    r->state = 1;
    nwb__console("namesym: reloading the sidecars");
}

void nwb__names_reload_switched(struct nwb_server *srv, struct nwb__log_job *job)
{
    struct nwb__reload *r = &srv->reload;

    /* The worker gave back the table it rendered with before (and its reference). */
    nwb__names_unref(job->names);
    job->names = NULL;
    srv->worker_names = r->pending;
    r->pending = NULL;
    srv->metrics.namesym_reloads++;
    r->state = 0;
    nwb__console("namesym: reloaded: %zu names from %u sidecars; later lines use them",
                 srv->worker_names->count, srv->worker_names->files);
    if (r->again && !srv->stopping) {
        r->again = 0;
        nwb__names_reload_start(srv);
    }
}
