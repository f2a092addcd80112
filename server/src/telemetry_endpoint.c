/* SPDX-License-Identifier: MIT */
/*
 * telemetry_endpoint.c - POST /v1/telemetry, and the per-run lanes every telemetry request
 * goes through. An upload takes X-NWB-Seq and Content-Encoding from the head and the run's
 * directory from the log worker (it owns the run store, so runs/<program>_<time>_<run>/ is
 * the one log.txt is in), then runs nwb__tel_ingest() (telemetry_ingest.c) on the thread pool
 * with the current name table. A lane keeps one run's requests in arrival order, one at a
 * time; different runs' requests run on the pool at once, so a slow run never holds up the
 * others. Loop thread.
 */
#include <stdio.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "events_int.h"
#include "read_int.h"
#include "forward/forwarder.h"
#include "server_int.h"

/* A run's queue: the request on the pool (busy) and the ones waiting, oldest first. */
struct nwb__tel_lane {
    struct nwb__tel_lane *next; /* srv->tel_lanes */
    struct nwb__conn *head, *tail;
    int busy;
    char key[NWB__RUN_DIR_MAX + 1];
};

static void lane_pump(struct nwb_server *srv, struct nwb__tel_lane *l);

/* The request's work came back (or could not start: c->tel.err): its completion, then the
 * lane's next request. @p c may be freed once this returns. */
static void lane_done(struct nwb__conn *c)
{
    struct nwb_server *srv = c->srv;
    struct nwb__tel_lane *l = c->tel.lane;

    c->tel.lane = NULL;
    c->tel.done(c);
    l->busy = 0;
    lane_pump(srv, l);
}

/* A queued request whose work could not start: its completion only (the pump goes on). */
static void lane_start_failed(struct nwb__conn *c)
{
    c->tel.lane = NULL;
    c->tel.done(c);
}

static void lane_free(struct nwb_server *srv, struct nwb__tel_lane *l)
{
    for (struct nwb__tel_lane **p = &srv->tel_lanes; *p != NULL; p = &(*p)->next) {
        if (*p == l) {
            *p = l->next;
            break;
        }
    }
    nwb_free(l);
}

static void lane_pump(struct nwb_server *srv, struct nwb__tel_lane *l)
{
    while (!l->busy && l->head != NULL) {
        struct nwb__conn *c = l->head;
        int err;

        l->head = c->tel.next;
        if (l->head == NULL) {
            l->tail = NULL;
        }
        c->tel.next = NULL;
        l->busy = 1;
        err = nwb__offload(c, c->tel.run, lane_done);
        if (err != 0) {
            l->busy = 0;
            c->tel.err = err;
            c->job_out = 1;
            nwb__conn_work_finished(c, lane_start_failed);
        }
    }
    if (!l->busy && l->head == NULL) {
        lane_free(srv, l);
    }
}

int nwb__tel_lane_submit(struct nwb__conn *c, const char *key, size_t key_len, nwb__work_run_fn run,
                         nwb__work_done_fn done)
{
    struct nwb_server *srv = c->srv;
    struct nwb__tel_lane *l;

    if (key_len > NWB__RUN_DIR_MAX) {
        return NWB_ETOOBIG;
    }
    for (l = srv->tel_lanes; l != NULL; l = l->next) {
        if (strlen(l->key) == key_len && memcmp(l->key, key, key_len) == 0) {
            break;
        }
    }
    if (l == NULL) {
        l = nwb_calloc(1, sizeof(*l));
        if (l == NULL) {
            return -ENOMEM;
        }
        memcpy(l->key, key, key_len);
        l->next = srv->tel_lanes;
        srv->tel_lanes = l;
    }
    c->tel.lane = l;
    c->tel.next = NULL;
    c->tel.run = run;
    c->tel.done = done;
    c->tel.err = 0;
    /* Held (like a job) while it waits its turn. */
    c->state = NWB__CONN_IN_WORKER;
    c->job_out = 1;
    if (l->tail != NULL) {
        l->tail->tel.next = c;
    } else {
        l->head = c;
    }
    l->tail = c;
    lane_pump(srv, l);
    return 0;
}

/* ---- POST /v1/telemetry ---- */

struct tel_ctx {
    struct nwb__tel_ingest_req req;
    struct nwb__tel_ingest_res res;
    struct nwb__names *names; /* a reference for the call */
    char cenc[sizeof(((struct nwb__http_req *)0)->cenc) + 1];
    char run_dir[NWB__TEL_PATH_MAX];
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

    nwb__tel_ingest(c->srv->tel_cache, &t->req, &c->srv->tel_limits, &c->srv->tel_metrics, &t->res);
}

static void tel_done(struct nwb__conn *c)
{
    struct nwb_server *srv = c->srv;
    struct tel_ctx *t = c->work.ctx;

    c->work.ctx = NULL;
    nwb__names_unref(t->names);
    if (c->tel.err != 0) {
        nwb__tel_ingest_res_error(&t->res, 500, c->tel.err, "cannot start the telemetry ingest",
                                  "the server's thread pool refused the work");
    }
    if (t->res.http_status == 200 && !t->res.duplicate) {
        nwb__run_index_telemetry(srv->runs, c->job.dir, c->job.program, c->job.run);
    }
    /* The report is rewritten for a stored upload and for a refusal it records (400, 413). */
    nwb__forwarder_mark(srv->forwarder, c->job.dir);
    nwb__events_telemetry(srv->events, &c->job,
                          (t->res.http_status == 200 && !t->res.duplicate) ||
                              t->res.http_status == 400 || t->res.http_status == 413);
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
}

void nwb__tel_job_done(struct nwb__conn *c)
{
    static const uint8_t empty[1];
    const struct nwb__http_req *r = &c->req;
    struct nwb_server *srv = c->srv;
    struct tel_ctx *t;
    char msg[160];
    char ebuf[96];
    int n;
    int err;

    if (c->job.status == NWB__JOB_FAILED) {
        snprintf(msg, sizeof(msg), "cannot open the run's directory: %s",
                 nwb_strerror_r(c->job.err, ebuf, sizeof(ebuf)));
        nwb__conn_respond_error(c, 503, msg);
        return;
    }
    nwb__events_run_seen(srv->events, &c->job);
    t = nwb_calloc(1, sizeof(*t));
    if (t == NULL) {
        nwb__conn_respond_error(c, 503, "out of memory");
        return;
    }
    n = snprintf(t->run_dir, sizeof(t->run_dir), "%s/runs/%s", srv->out_dir, c->job.dir);
    if (n < 0 || (size_t)n >= sizeof(t->run_dir)) {
        nwb_free(t);
        nwb__conn_respond_error(c, 500, "the run's directory path is too long");
        return;
    }
    if (r->has_cenc) {
        memcpy(t->cenc, r->cenc, r->cenc_len);
        t->cenc[r->cenc_len] = '\0';
    }
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
    err = nwb__tel_lane_submit(c, c->job.dir, strlen(c->job.dir), tel_run, tel_done);
    if (err != 0) {
        c->work.ctx = NULL;
        nwb__names_unref(t->names);
        nwb__tel_ingest_res_cleanup(&t->res);
        nwb_free(t);
        nwb__conn_respond_error(c, 503, "out of memory");
    }
}
