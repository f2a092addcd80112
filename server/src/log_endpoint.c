/* SPDX-License-Identifier: MIT */
/*
 * log_endpoint.c - POST /v1/log: checks the content type and X-NWB-Seq from
 * the head, validates a binary batch once the body is in (400 with the
 * reason and byte offset, nothing written), builds the job with the
 * sanitised run identity, and answers once the log worker wrote it (200,
 * empty) or could not (503 with Retry-After).
 */
#include <stdio.h>
#include <string.h>

#include "nwb/error.h"
#include "events_int.h"
#include "server_int.h"

int nwb__log_on_head(struct nwb__conn *c)
{
    const struct nwb__http_req *r = &c->req;
    struct nwb__log_job *job = &c->job;

    if (nwb__http_req_ctype_is(r, NWB_LOG_BATCH_CONTENT_TYPE)) {
        job->kind = NWB__JOB_BATCH;
    } else if (nwb__http_req_ctype_is(r, "text/plain")) {
        job->kind = NWB__JOB_TEXT;
    } else {
        c->early_reason = "Content-Type must be " NWB_LOG_BATCH_CONTENT_TYPE " or text/plain";
        return 415;
    }
    if (nwb__http_req_seq(r, &job->has_seq, &job->seq) != 0) {
        c->early_reason = "X-NWB-Seq must be a decimal number below 2^64";
        return 400;
    }
    return 0;
}

void nwb__log_job_identity(struct nwb__conn *c)
{
    const struct nwb__http_req *r = &c->req;
    struct nwb__log_job *job = &c->job;

    job->program_len = nwb_safe_name(job->program, r->program, r->has_program ? r->program_len : 0,
                                     NWB__FALLBACK_PROGRAM);
    nwb_safe_name(job->run, r->run, r->has_run ? r->run_len : 0, c->srv->anon_run);
    job->recv_time_ns = nwb_time_now_ns();
}

void nwb__log_handle(struct nwb__conn *c)
{
    static const uint8_t empty[1];
    struct nwb__log_job *job = &c->job;

    if (job->kind == NWB__JOB_BATCH) {
        const char *why = "";
        size_t off = 0;

        if (nwb_log_batch_validate(c->body, c->body_len, &why, &off) != 0) {
            char msg[160];

            snprintf(msg, sizeof(msg), "malformed log batch: %s (byte offset %zu)", why, off);
            nwb__conn_respond_error(c, 400, msg);
            return;
        }
    }
    nwb__log_job_identity(c);
    job->body = c->body != NULL ? c->body : empty;
    job->body_len = c->body_len;
    nwb__flow_submit(c->srv, c);
}

void nwb__log_job_done(struct nwb__conn *c)
{
    struct nwb__metrics *m = &c->srv->metrics;
    const struct nwb__log_job *job = &c->job;
    char msg[160];
    char ebuf[96];

    switch (job->status) {
    case NWB__JOB_WRITTEN:
        m->records += job->records;
        m->drops += job->drops;
        m->tokens_decoded += job->tok_decoded;
        m->tokens_unknown += job->tok_unknown;
        m->bytes += job->body_len;
        m->batches++;
        nwb__events_log_written(c->srv->events, job);
        nwb__conn_respond(c, 200, NULL, NULL, 0, 0, NULL);
        break;
    case NWB__JOB_DUPLICATE:
        m->duplicates++;
        nwb__conn_respond(c, 200, NULL, NULL, 0, 0, NULL);
        break;
    default:
        m->write_errors++;
        snprintf(msg, sizeof(msg), "cannot write the run's log: %s\n",
                 nwb_strerror_r(job->err, ebuf, sizeof(ebuf)));
        nwb__conn_respond(c, 503, "text/plain; charset=utf-8", msg, strlen(msg), 0,
                          "Retry-After: 1\r\n");
        break;
    }
}
