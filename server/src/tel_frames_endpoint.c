/* SPDX-License-Identifier: MIT */
/*
 * tel_frames_endpoint.c - GET /v1/runs/<id>/frames?from=F&to=F&points=P (frame times of a
 * window reduced server-side, min and max per bucket) and GET /v1/runs/<id>/frames/<frame>
 * (one frame: duration, CPU scopes per thread, GPU samples, log lines), from the run's report
 * state and its stored uploads (docs/protocol.md, "Reading"). The request is checked on the
 * loop; the work runs on the pool in the run's telemetry lane, so it sees the state between
 * two uploads and never blocks the loop.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/json.h"
#include "read_int.h"
#include "server_int.h"
#include "tel_run_int.h"

static const char runs_prefix[] = "/v1/runs/";

struct frames_ctx {
    char id[NWB__RUN_ID_MAX + 1];
    size_t id_len;
    int detail; /* /frames/<frame> */
    uint64_t frame;
    uint64_t from, to;
    int has_from, has_to;
    uint64_t points;
    struct nwb__names *names; /* a reference for the call */
    /* the answer */
    int status;
    char reason[160];
    nwb_buf_t body;
};

static void answer_error(struct frames_ctx *f, int status, const char *reason)
{
    f->status = status;
    snprintf(f->reason, sizeof(f->reason), "%s", reason);
}

/* The run's state and storage, or an error answer. */
static int frames_acquire(struct nwb__conn *c, struct frames_ctx *f, struct nwb__tel_run **run)
{
    char dir[NWB__TEL_PATH_MAX];
    int err = nwb__read_run_dir(c->srv->out_dir, f->id, f->id_len, dir, sizeof(dir));

    if (err == 0) {
        err = nwb__tel_cache_acquire(c->srv->tel_cache, dir, 0, run);
        if (err == -ENOENT) {
            answer_error(f, 404, "the run has no telemetry");
            return err;
        }
    } else if (err == -ENOENT || err == NWB_EPROTO) {
        answer_error(f, 404, "no such run");
        return err;
    }
    if (err != 0) {
        char ebuf[96];
        char msg[160];

        snprintf(msg, sizeof(msg), "cannot open the run's telemetry: %s",
                 nwb_strerror_r(err, ebuf, sizeof(ebuf)));
        answer_error(f, err == -ENOMEM ? 503 : 500, msg);
    }
    return err;
}

static void frames_write(struct nwb__tel_run *run, struct frames_ctx *f)
{
    nwb_json_t j;
    uint64_t first = 0;
    uint64_t last = 0;
    int err;

    if (nwb_tel_report_state_frame_range(run->state, &first, &last) != 0) {
        first = last = 0; /* no frames yet: an empty window */
    }
    if (!f->has_from) {
        f->from = first;
    }
    if (!f->has_to) {
        f->to = f->has_from && f->from > last ? f->from : last;
    }
    if (f->from > f->to) {
        answer_error(f, 400, "?from must not be above ?to");
        return;
    }
    nwb_json_init(&j, &f->body, NULL);
    err = nwb_tel_report_state_frames(run->state, f->from, f->to, (uint32_t)f->points, 0, &j);
    if (err == 0) {
        err = nwb_json_finish(&j);
    }
    if (err != 0) {
        answer_error(f, err == -ENOMEM || err == NWB_ETOOBIG ? 503 : 500,
                     "cannot build the frames answer");
        return;
    }
    f->status = 200;
}

/* The frame from the stored uploads whose frames include it (at most NWB__TEL_FRAME_TRIES). */
static void frame_write(struct nwb__tel_run *run, const struct nwb__tel_ingest_limits *lim,
                        struct frames_ctx *f)
{
    const struct nwb__tel_rec *r;
    uint32_t from = 0;
    int unstored = 0;

    for (unsigned tries = 0; tries < NWB__TEL_FRAME_TRIES; tries++) {
        const char *why = NULL;
        uint8_t *raw = NULL;
        size_t len = 0;
        nwb_json_t j;
        int err;

        r = nwb__tel_store_find_frame(run->store, f->frame, &from);
        if (r == NULL) {
            break;
        }
        if ((r->flags & NWB__TEL_REC_STORED) == 0) {
            unstored = 1;
            continue;
        }
        err = nwb__tel_store_read(run->store, r, lim, &raw, &len, &why);
        if (err != 0) {
            char msg[160];

            snprintf(msg, sizeof(msg), "cannot read the frame's upload: %s", why);
            answer_error(f, err == -ENOMEM ? 503 : 500, msg);
            return;
        }
        nwb_buf_reset(&f->body);
        nwb_json_init(&j, &f->body, NULL);
        err = nwb_tel_frame_detail_write(raw, len, f->frame, f->names->table, &j);
        if (err == 0) {
            err = nwb_json_finish(&j);
        }
        nwb_free(raw);
        if (err == 0) {
            f->status = 200;
            return;
        }
        if (err != NWB_ERANGE) {
            answer_error(f, err == -ENOMEM || err == NWB_ETOOBIG ? 503 : 500,
                         "cannot build the frame answer");
            return;
        }
    }
    nwb_buf_reset(&f->body);
    answer_error(f, 404,
                 unstored ? "the frame's upload was not stored (the run's stream limit)"
                          : "no such frame");
}

static void frames_run(struct nwb__conn *c)
{
    struct frames_ctx *f = c->work.ctx;
    struct nwb__tel_run *run = NULL;

    if (frames_acquire(c, f, &run) != 0) {
        return;
    }
    if (f->detail) {
        frame_write(run, &c->srv->tel_limits, f);
    } else {
        frames_write(run, f);
    }
    nwb__tel_cache_release(c->srv->tel_cache, run);
}

static void frames_done(struct nwb__conn *c)
{
    struct frames_ctx *f = c->work.ctx;

    c->work.ctx = NULL;
    nwb__names_unref(f->names);
    if (c->tel.err != 0) {
        answer_error(f, 500, "cannot queue the request");
    }
    if (c->state != NWB__CONN_CLOSED) {
        if (f->status == 200) {
            nwb__read_respond_json(c, &f->body, 0);
        } else {
            nwb__conn_respond_error(c, f->status, f->reason);
        }
    }
    nwb_buf_cleanup(&f->body);
    nwb_free(f);
}

/* Both routes: the id (the read API's rule: 404 when malformed), the frame, the query; then
 * the run's lane. */
static void frames_start(struct nwb__conn *c, int detail)
{
    struct nwb__target t;
    struct frames_ctx *f;
    const char *id;
    const char *seg;
    size_t id_len;
    size_t seg_len;
    int present;

    if (nwb__read_target_run(c, &t, &id, &id_len) != 0) {
        return; /* answered 404 */
    }
    f = nwb_calloc(1, sizeof(*f));
    if (f == NULL) {
        nwb__conn_respond_error(c, 503, "out of memory");
        return;
    }
    memcpy(f->id, id, id_len);
    f->id_len = id_len;
    f->detail = detail;
    f->points = NWB__TEL_FRAMES_POINTS_DEFAULT;
    nwb_buf_init(&f->body, NWB__TEL_FRAMES_ANSWER_MAX);
    if (detail && (!nwb__path_segment(t.path, t.path_len, runs_prefix, 2, &seg, &seg_len) ||
                   nwb__parse_u64(seg, seg_len, &f->frame) != 0)) {
        nwb__conn_respond_error(c, 400, "the frame must be a decimal number below 2^64");
        goto fail;
    }
    if (!detail &&
        (nwb__read_query_u64(c, &t, "from", 0, UINT64_MAX, &f->from, &f->has_from) != 0 ||
         nwb__read_query_u64(c, &t, "to", 0, UINT64_MAX, &f->to, &f->has_to) != 0 ||
         nwb__read_query_u64(c, &t, "points", 1, NWB_TEL_FRAMES_POINTS_MAX, &f->points, &present) !=
             0)) {
        goto fail; /* answered 400 */
    }
    if (!detail && f->has_from && f->has_to && f->from > f->to) {
        nwb__conn_respond_error(c, 400, "?from must not be above ?to");
        goto fail;
    }
    f->names = c->srv->names;
    nwb__names_ref(f->names);
    c->work.ctx = f;
    if (nwb__tel_lane_submit(c, id, id_len, frames_run, frames_done) != 0) {
        c->work.ctx = NULL;
        nwb__names_unref(f->names);
        nwb__conn_respond_error(c, 503, "out of memory");
        goto fail;
    }
    return;
fail:
    nwb_buf_cleanup(&f->body);
    nwb_free(f);
}

void nwb__tel_frames_handle(struct nwb__conn *c)
{
    frames_start(c, 0);
}

void nwb__tel_frame_handle(struct nwb__conn *c)
{
    frames_start(c, 1);
}
