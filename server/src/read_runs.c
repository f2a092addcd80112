/* SPDX-License-Identifier: MIT */
/*
 * read_runs.c - GET /v1/runs (the run index, newest first; ?program= filters, ?limit= bounds)
 * and GET /v1/runs/<id> (one run with its counters: from the index, or from its directory on
 * the thread pool when the index does not hold it), and the checks and JSON answer every read
 * endpoint shares. docs/protocol.md, "Reading".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"

#include "read_int.h"
#include "server_int.h"

/* GET /v1/runs answers of this size are built on the loop: bounded by the limit's max. */
#define RUNS_JSON_MAX (NWB__READ_RUNS_LIMIT_MAX * 2048u)
#define RUN_JSON_MAX  4096u

void nwb__run_info_json(nwb_json_t *j, const struct nwb__run_info *r, int live, int detail,
                        int listed)
{
    nwb_json_obj_begin(j);
    nwb_json_key(j, "id");
    nwb_json_cstr(j, r->id);
    nwb_json_key(j, "program");
    nwb_json_cstr(j, r->program);
    nwb_json_key(j, "run");
    nwb_json_cstr(j, r->run);
    nwb_json_key(j, "started");
    nwb__json_time(j, r->started_ns);
    nwb_json_key(j, "lastActivity");
    nwb__json_time(j, r->last_activity_ns);
    nwb_json_key(j, "live");
    nwb_json_bool(j, live);
    nwb_json_key(j, "logBytes");
    nwb_json_u64(j, r->log_bytes);
    nwb_json_key(j, "records");
    nwb_json_u64(j, r->records);
    nwb_json_key(j, "drops");
    nwb_json_u64(j, r->drops);
    nwb_json_key(j, "tokensUnknown");
    nwb_json_u64(j, r->tok_unknown);
    nwb_json_key(j, "telemetry");
    nwb_json_bool(j, r->telemetry);
    nwb_json_key(j, "crashes");
    nwb_json_u64(j, r->crashes);
    if (detail) {
        nwb_json_key(j, "counters");
        nwb_json_obj_begin(j);
        nwb_json_key(j, "records");
        nwb_json_u64(j, r->records);
        nwb_json_key(j, "drops");
        nwb_json_u64(j, r->drops);
        nwb_json_key(j, "tokensDecoded");
        nwb_json_u64(j, r->tok_decoded);
        nwb_json_key(j, "tokensUnknown");
        nwb_json_u64(j, r->tok_unknown);
        nwb_json_key(j, "telemetryUploads");
        nwb_json_u64(j, r->tel_uploads);
        nwb_json_obj_end(j);
        nwb_json_key(j, "listed");
        nwb_json_bool(j, listed);
    }
    nwb_json_obj_end(j);
}

int nwb__read_query_u64(struct nwb__conn *c, const struct nwb__target *t, const char *key,
                        uint64_t min, uint64_t max, uint64_t *out, int *present)
{
    char msg[160];

    if (nwb__query_check(t->query, t->query_len) != 0) {
        nwb__conn_respond_error(c, 400,
                                "malformed query string: a bad %XX escape, an escaped NUL, or a "
                                "value over 256 bytes");
        return -1;
    }
    if (nwb__query_u64(t->query, t->query_len, key, min, max, out, present) != 0) {
        snprintf(msg, sizeof(msg), "?%s must be a decimal number in %llu..%llu", key,
                 (unsigned long long)min, (unsigned long long)max);
        nwb__conn_respond_error(c, 400, msg);
        return -1;
    }
    return 0;
}

int nwb__read_budget_take(size_t *total, size_t *held, size_t bytes, size_t max)
{
    const size_t others = *total - *held;

    if (others > 0 && (bytes > max || others > max - bytes)) {
        return -1;
    }
    *total = others + bytes;
    *held = bytes;
    return 0;
}

int nwb__read_reserve(struct nwb__conn *c, size_t bytes)
{
    if (nwb__read_budget_take(&c->srv->read_bytes, &c->read_reserved, bytes,
                              NWB__READ_ANSWERS_MAX) != 0) {
        nwb__conn_respond_error(c, 503, "too many read answers in flight; retry");
        return -1;
    }
    return 0;
}

void nwb__read_release(struct nwb__conn *c)
{
    if (c != NULL && c->read_reserved > 0) {
        c->srv->read_bytes -= c->read_reserved;
        c->read_reserved = 0;
    }
}

void nwb__read_respond_json(struct nwb__conn *c, nwb_buf_t *b, int err)
{
    if (err == 0) {
        err = nwb_buf_append(b, "\n", 1);
    }
    if (err != 0) {
        nwb_buf_cleanup(b);
        nwb__conn_respond_error(c, 503, "out of memory building the answer");
        return;
    }
    if (nwb__read_reserve(c, b->len) != 0) {
        nwb_buf_cleanup(b);
        return;
    }
    /* The buffer's memory (nwb_realloc'd) goes to the connection, freed after the write. */
    nwb__conn_respond(c, 200, "application/json", (const char *)b->data, b->len, 1, NULL);
    nwb_buf_init(b, b->max);
}

int nwb__read_target_run(struct nwb__conn *c, struct nwb__target *t, const char **id, size_t *len)
{
    struct nwb__run_name rn;

    nwb__target_split(c->req.url, c->req.url_len, t);
    if (!nwb__path_segment(t->path, t->path_len, "/v1/runs/", 0, id, len) ||
        !nwb__run_id_parse(*id, *len, &rn)) {
        nwb__conn_respond_error(c, 404, "no such run");
        return -1;
    }
    return 0;
}

void nwb__read_runs_handle(struct nwb__conn *c)
{
    const struct nwb__run_index *idx = c->srv->runs;
    nwb_buf_t b = NWB_BUF_INIT(RUNS_JSON_MAX);
    char program[NWB__QUERY_VALUE_MAX + 1];
    size_t program_len = 0;
    struct nwb__target t;
    uint64_t limit = NWB__READ_RUNS_LIMIT_DEFAULT;
    uint64_t listed = 0;
    int present, has_program;
    nwb_json_t j;

    nwb__target_split(c->req.url, c->req.url_len, &t);
    if (nwb__read_query_u64(c, &t, "limit", 1, NWB__READ_RUNS_LIMIT_MAX, &limit, &present) != 0) {
        return;
    }
    has_program = nwb__query_get(t.query, t.query_len, "program", program, &program_len) == 1;
    if (has_program &&
        (program_len > NWB_SAFE_NAME_MAX || !nwb__run_id_valid(program, program_len))) {
        nwb__conn_respond_error(c, 400,
                                "?program must be a program name as runs/ holds it: 1..64 bytes "
                                "of [A-Za-z0-9_.-], not starting with '.'");
        return;
    }
    nwb_json_init(&j, &b, NULL);
    nwb_json_obj_begin(&j);
    nwb_json_key(&j, "runs");
    nwb_json_arr_begin(&j);
    for (size_t i = 0; i < nwb__run_index_count(idx) && listed < limit; i++) {
        const struct nwb__run_info *r = nwb__run_index_newest(idx, i);

        if (!has_program || strcmp(r->program, program) == 0) {
            nwb__run_info_json(&j, r, nwb__run_index_live(idx, r), 0, 1);
            listed++;
        }
    }
    nwb_json_arr_end(&j);
    nwb_json_obj_end(&j);
    nwb__read_respond_json(c, &b, nwb_json_finish(&j));
}

/* ---- GET /v1/runs/<id> of a run the index does not hold: from its directory ---- */

struct run_view {
    char id[NWB__RUN_ID_MAX + 1];
    struct nwb__run_info info;
    int err;
};

static void run_view_run(struct nwb__conn *c)
{
    struct run_view *v = c->work.ctx;
    const int fd = nwb__read_run_dirfd(c->srv->out_dir, v->id, strlen(v->id));

    if (fd < 0) {
        v->err = fd;
        return;
    }
    v->err = nwb__run_info_load(fd, v->id, &v->info);
    close(fd);
}

static void respond_run(struct nwb__conn *c, const struct nwb__run_info *r, int live, int listed)
{
    nwb_buf_t b = NWB_BUF_INIT(RUN_JSON_MAX);
    nwb_json_t j;

    nwb_json_init(&j, &b, NULL);
    nwb__run_info_json(&j, r, live, 1, listed);
    nwb__read_respond_json(c, &b, nwb_json_finish(&j));
}

static void run_view_done(struct nwb__conn *c)
{
    struct run_view *v = c->work.ctx;

    c->work.ctx = NULL;
    if (c->state != NWB__CONN_CLOSED) {
        if (v->err == 0) {
            respond_run(c, &v->info, 0, 0);
        } else if (v->err == -ENOENT || v->err == NWB_EPROTO) {
            nwb__conn_respond_error(c, 404, "no such run");
        } else {
            char ebuf[96], msg[160];

            snprintf(msg, sizeof(msg), "cannot read the run's directory: %s",
                     nwb_strerror_r(v->err, ebuf, sizeof(ebuf)));
            nwb__conn_respond_error(c, 500, msg);
        }
    }
    nwb_free(v);
}

void nwb__read_run_handle(struct nwb__conn *c)
{
    const struct nwb__run_index *idx = c->srv->runs;
    struct nwb__target t;
    const struct nwb__run_info *r;
    const char *id;
    size_t id_len;
    struct run_view *v;

    if (nwb__read_target_run(c, &t, &id, &id_len) != 0) {
        return;
    }
    r = nwb__run_index_find(idx, id, id_len);
    if (r != NULL) {
        respond_run(c, r, nwb__run_index_live(idx, r), 1);
        return;
    }
    v = nwb_calloc(1, sizeof(*v));
    if (v == NULL) {
        nwb__conn_respond_error(c, 503, "out of memory");
        return;
    }
    memcpy(v->id, id, id_len);
    c->work.ctx = v;
    if (nwb__offload(c, run_view_run, run_view_done) != 0) {
        c->work.ctx = NULL;
        nwb_free(v);
        nwb__conn_respond_error(c, 500, "cannot queue the request");
    }
}
