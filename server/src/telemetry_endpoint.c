/* SPDX-License-Identifier: MIT */
/*
 * telemetry_endpoint.c - POST /v1/telemetry: X-NWB-Seq and Content-Encoding
 * from the head, the run's directory from the log worker (it owns the run
 * store, so runs/<program>_<time>_<run>/ is the one log.txt is in), then
 * nwb__tel_ingest() (telemetry_ingest.c) on the thread pool, one upload at a
 * time in arrival order, with the current name table. Answers with the
 * ingest's status and JSON body.
 */
#include <stdio.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "read_int.h"
#include "server_int.h"

struct tel_ctx {
    struct nwb__tel_ingest_req req;
    struct nwb__tel_ingest_res res;
    struct nwb__names *names; /* a reference for the call */
    char cenc[sizeof(((struct nwb__http_req *)0)->cenc) + 1];
    char run_dir[4096 + 6 + NWB__RUN_DIR_MAX + 1];
};

size_t nwb__tel_body_limit(const struct nwb_server *srv)
{
    (void)srv;
    return NWB__TEL_BODY_MAX;
}

int nwb__tel_on_head(struct nwb__conn *c)
{
    const struct nwb__http_req *r = &c->req;

    if (nwb__http_req_seq(r, &c->job.has_seq, &c->job.seq) != 0) {
        c->early_reason = "X-NWB-Seq must be a decimal number below 2^64";
        return 400;
    }
    if (r->cenc_long) {
        c->early_reason = "unsupported Content-Encoding: use zstd or identity";
        return 415;
    }
    return 0;
}

void nwb__tel_handle(struct nwb__conn *c)
{
    struct nwb__log_job *job = &c->job;

    nwb__log_job_identity(c);
    job->kind = NWB__JOB_RUN_DIR;
    job->body = NULL;
    job->body_len = 0;
    nwb__flow_submit(c->srv, c);
}

static void tel_run(struct nwb__conn *c)
{
    struct tel_ctx *t = c->work.ctx;

    nwb__tel_ingest(&t->req, NULL, &c->srv->tel_metrics, &t->res);
}

static void tel_pump(struct nwb_server *srv);

static void tel_done(struct nwb__conn *c)
{
    struct nwb_server *srv = c->srv;
    struct tel_ctx *t = c->work.ctx;

    c->work.ctx = NULL;
    nwb__names_unref(t->names);
    if (t->res.http_status == 200 && !t->res.duplicate) {
        nwb__run_index_telemetry(srv->runs, c->job.dir, c->job.program, c->job.run);
    }
    if (c->state != NWB__CONN_CLOSED && t->res.body.len == 0) {
        nwb__conn_respond_error(c, 500, "out of memory building the telemetry answer");
    } else if (c->state != NWB__CONN_CLOSED) {
        /* The answer's memory goes to the connection, which frees it after the write. */
        nwb__conn_respond(c, t->res.http_status, "application/json", (const char *)t->res.body.data,
                          t->res.body.len, 1, NULL);
        nwb_buf_init(&t->res.body, 0);
    }
    nwb__tel_ingest_res_cleanup(&t->res);
    nwb_free(t);
    srv->tel_busy = 0;
    tel_pump(srv);
}

/* Start the next waiting upload unless one is being ingested. */
static void tel_pump(struct nwb_server *srv)
{
    int err;

    while (!srv->tel_busy && srv->tel_head != NULL) {
        struct nwb__conn *c = srv->tel_head;

        srv->tel_head = c->tel_next;
        if (srv->tel_head == NULL) {
            srv->tel_tail = NULL;
        }
        c->tel_next = NULL;
        srv->tel_busy = 1;
        err = nwb__offload(c, tel_run, tel_done);
        if (err != 0) {
            struct tel_ctx *t = c->work.ctx;

            nwb__tel_ingest_res_error(&t->res, 500, err, "cannot start the telemetry ingest",
                                      "the server's thread pool refused the work");
            srv->tel_busy = 0;
            c->job_out = 1;
            nwb__conn_work_finished(c, tel_done);
        }
    }
}

static void tel_queue(struct nwb__conn *c)
{
    static const uint8_t empty[1];
    struct nwb_server *srv = c->srv;
    struct tel_ctx *t = nwb_calloc(1, sizeof(*t));
    const struct nwb__http_req *r = &c->req;

    if (t == NULL) {
        nwb__conn_respond_error(c, 503, "out of memory");
        return;
    }
    if (r->has_cenc) {
        memcpy(t->cenc, r->cenc, r->cenc_len);
        t->cenc[r->cenc_len] = '\0';
    }
    snprintf(t->run_dir, sizeof(t->run_dir), "%s/runs/%s", srv->out_dir, c->job.dir);
    t->names = srv->names;
    nwb__names_ref(t->names);
    t->req.body = c->body != NULL ? c->body : empty;
    t->req.body_len = c->body_len;
    t->req.content_encoding = r->has_cenc ? t->cenc : NULL;
    t->req.program = c->job.program;
    t->req.run = c->job.run;
    t->req.has_seq = c->job.has_seq;
    t->req.seq = c->job.seq;
    t->req.run_dir = t->run_dir;
    t->req.names = t->names->table;
    nwb__tel_ingest_res_init(&t->res);
    c->work.ctx = t;
    /* Held (like a job) while it waits its turn. */
    c->state = NWB__CONN_IN_WORKER;
    c->job_out = 1;
    c->tel_next = NULL;
    if (srv->tel_tail != NULL) {
        srv->tel_tail->tel_next = c;
    } else {
        srv->tel_head = c;
    }
    srv->tel_tail = c;
    tel_pump(srv);
}

void nwb__tel_job_done(struct nwb__conn *c)
{
    char msg[160];
    char ebuf[96];

    if (c->job.status == NWB__JOB_FAILED) {
        snprintf(msg, sizeof(msg), "cannot open the run's directory: %s",
                 nwb_strerror_r(c->job.err, ebuf, sizeof(ebuf)));
        nwb__conn_respond_error(c, 503, msg);
        return;
    }
    tel_queue(c);
}
