/* SPDX-License-Identifier: MIT */
/*
 * crash_endpoint.c - POST /v1/crash, GET /v1/crashes[?group=G], GET /v1/crashes/<id>,
 * GET /v1/crash-groups and POST /v1/crashes/<id>/resymbolize over the crash ingest
 * (crash_int.h, docs/crash.md), and the hook a symbols upload calls to re-run symbolisation.
 * Storing an archive fsyncs and the views scan the crash folders, so both run on the thread pool
 * (offload.c); the loop only answers.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/buf.h"
#include "nwb/error.h"
#include "nwb/json.h"

#include "crash_int.h"
#include "crash_signature.h"
#include "read_int.h"
#include "server_int.h"

struct crash_post {
    char program[NWB__HTTP_VALUE_MAX + 1];
    char run[NWB__HTTP_VALUE_MAX + 1];
    char id[NWB_CRASH_INGEST_ID_LEN + 1];
    int err;
};

struct crash_view {
    char id[NWB__URL_MAX + 1];              /* empty: the list */
    char group[NWB_CRASH_GROUP_ID_LEN + 1]; /* the list's ?group=, "" = every crash */
    int groups;                             /* GET /v1/crash-groups */
    char *json;
    size_t len;
    int err;
};

size_t nwb__crash_body_limit(const struct nwb_server *srv)
{
    return srv->cfg.crash_max_archive_bytes;
}

static void copy_value(char *dst, const char *src, size_t len, int has)
{
    if (!has) {
        len = 0;
    }
    memcpy(dst, src, len);
    dst[len] = '\0';
}

static void post_run(struct nwb__conn *c)
{
    struct crash_post *p = c->work.ctx;

    p->err = nwb__crash_ingest_submit(c->srv->crash, c->body != NULL ? (const void *)c->body : "",
                                      c->body_len, p->program, p->run, p->id);
}

/* 200 {"id":"<id>"}. */
static void respond_id(struct nwb__conn *c, const char *id)
{
    nwb_buf_t b = NWB_BUF_INIT(128);
    nwb_json_t j;

    nwb_json_init(&j, &b, NULL);
    nwb_json_obj_begin(&j);
    nwb_json_key(&j, "id");
    nwb_json_cstr(&j, id);
    nwb_json_obj_end(&j);
    nwb_json_space(&j, "\n", 1);
    if (nwb_json_finish(&j) != 0) {
        nwb__conn_respond_error(c, 503, "out of memory");
    } else {
        nwb__conn_respond(c, 200, "application/json", (const char *)b.data, b.len, 0, NULL);
    }
    nwb_buf_cleanup(&b);
}

static void post_done(struct nwb__conn *c)
{
    struct crash_post *p = c->work.ctx;
    char ebuf[96];
    char msg[160];

    c->work.ctx = NULL;
    if (c->state != NWB__CONN_CLOSED) {
        switch (p->err) {
        case 0:
            respond_id(c, p->id);
            break;
        case NWB_ETOOBIG:
            nwb__conn_respond_error(c, 413, "crash archive exceeds --crash-max-archive-bytes");
            break;
        case NWB_EFULL:
            nwb__conn_respond_error(c, 503, "crash queue full (--crash-max-queue); retry later");
            break;
        case NWB_ECLOSED:
            nwb__conn_respond_error(c, 503, "the server is stopping; retry later");
            break;
        default:
            snprintf(msg, sizeof(msg), "cannot store the crash archive: %s",
                     nwb_strerror_r(p->err, ebuf, sizeof(ebuf)));
            nwb__conn_respond_error(c, 500, msg);
            break;
        }
    }
    nwb_free(p);
}

void nwb__crash_post_handle(struct nwb__conn *c)
{
    const struct nwb__http_req *r = &c->req;
    struct crash_post *p = nwb_calloc(1, sizeof(*p));

    if (p == NULL) {
        nwb__conn_respond_error(c, 503, "out of memory");
        return;
    }
    copy_value(p->program, r->program, r->program_len, r->has_program);
    copy_value(p->run, r->run, r->run_len, r->has_run);
    c->work.ctx = p;
    if (nwb__offload(c, post_run, post_done) != 0) {
        c->work.ctx = NULL;
        nwb_free(p);
        nwb__conn_respond_error(c, 500, "cannot queue the crash archive");
    }
}

static void view_run(struct nwb__conn *c)
{
    struct crash_view *v = c->work.ctx;

    if (v->groups) {
        v->err = nwb__crash_ingest_groups_json(c->srv->crash, &v->json, &v->len);
    } else if (v->id[0] == '\0') {
        v->err = nwb__crash_ingest_list_json(c->srv->crash, v->group[0] != '\0' ? v->group : NULL,
                                             &v->json, &v->len);
    } else {
        v->err = nwb__crash_ingest_get_json(c->srv->crash, v->id, &v->json, &v->len);
    }
}

static void view_done(struct nwb__conn *c)
{
    struct crash_view *v = c->work.ctx;

    c->work.ctx = NULL;
    if (c->state != NWB__CONN_CLOSED) {
        if (v->err == -EINVAL || v->err == -ENOENT) {
            nwb__conn_respond_error(c, 404, "no such crash");
        } else if (v->err == -ENOMEM) {
            nwb__conn_respond_error(c, 503, "out of memory");
        } else if (v->err != 0) {
            char ebuf[96], msg[160];

            snprintf(msg, sizeof(msg), "cannot describe the crashes: %s",
                     nwb_strerror_r(v->err, ebuf, sizeof(ebuf)));
            nwb__conn_respond_error(c, 500, msg);
        } else {
            nwb__conn_respond(c, 200, "application/json", v->json, v->len, 1, NULL);
            v->json = NULL;
        }
    }
    nwb_free(v->json);
    nwb_free(v);
}

void nwb__crash_get_handle(struct nwb__conn *c)
{
    static const char prefix[] = "/v1/crashes/";
    static const char groups_path[] = "/v1/crash-groups";
    const struct nwb__http_req *r = &c->req;
    const char *q = memchr(r->url, '?', r->url_len);
    const size_t len = q != NULL ? (size_t)(q - r->url) : r->url_len;
    struct crash_view *v = nwb_calloc(1, sizeof(*v));

    if (v == NULL) {
        nwb__conn_respond_error(c, 503, "out of memory");
        return;
    }
    if (len == sizeof(groups_path) - 1 && memcmp(r->url, groups_path, len) == 0) {
        v->groups = 1;
    } else if (q != NULL && len == sizeof("/v1/crashes") - 1) {
        char value[NWB__QUERY_VALUE_MAX + 1];
        size_t vlen = 0;
        const int found = nwb__query_get(q + 1, r->url_len - len - 1, "group", value, &vlen);

        if (found < 0 || (found == 1 && (vlen != NWB_CRASH_GROUP_ID_LEN ||
                                         strspn(value, "0123456789abcdef") != vlen))) {
            nwb_free(v);
            nwb__conn_respond_error(c, 400, "group must be 16 lowercase hex digits");
            return;
        }
        if (found == 1) {
            memcpy(v->group, value, vlen + 1);
        }
    }
    if (len > sizeof(prefix) - 1 && memcmp(r->url, prefix, sizeof(prefix) - 1) == 0) {
        /* The id is checked by the ingest (-EINVAL: 404); the URL bound keeps it short. */
        memcpy(v->id, r->url + sizeof(prefix) - 1, len - (sizeof(prefix) - 1));
        v->id[len - (sizeof(prefix) - 1)] = '\0';
    }
    c->work.ctx = v;
    if (nwb__offload(c, view_run, view_done) != 0) {
        c->work.ctx = NULL;
        nwb_free(v);
        nwb__conn_respond_error(c, 500, "cannot queue the request");
    }
}

/* ---- POST /v1/crashes/<id>/resymbolize ---- */

struct crash_resym {
    char id[NWB__URL_MAX + 1];
    int err;
};

static void resym_run(struct nwb__conn *c)
{
    struct crash_resym *r = c->work.ctx;

    r->err = nwb__crash_ingest_resymbolize(c->srv->crash, r->id);
}

static void resym_done(struct nwb__conn *c)
{
    struct crash_resym *r = c->work.ctx;

    c->work.ctx = NULL;
    if (c->state != NWB__CONN_CLOSED) {
        switch (r->err) {
        case 0: {
            nwb_buf_t b = NWB_BUF_INIT(256);
            nwb_json_t j;

            nwb_json_init(&j, &b, NULL);
            nwb_json_obj_begin(&j);
            nwb_json_key(&j, "id");
            nwb_json_cstr(&j, r->id);
            nwb_json_key(&j, "state");
            nwb_json_cstr(&j, "pending");
            nwb_json_obj_end(&j);
            nwb_json_space(&j, "\n", 1);
            if (nwb_json_finish(&j) != 0) {
                nwb__conn_respond_error(c, 503, "out of memory");
            } else {
                nwb__conn_respond(c, 202, "application/json", (const char *)b.data, b.len, 0, NULL);
            }
            nwb_buf_cleanup(&b);
            break;
        }
        case -EINVAL:
        case -ENOENT:
            nwb__conn_respond_error(c, 404, "no such extracted crash");
            break;
        case -ENODATA:
            nwb__conn_respond_error(c, 409, "the crash has no threads.nwbc to symbolise");
            break;
        case -ENOTSUP:
            nwb__conn_respond_error(c, 409, "symbolisation is off on this server");
            break;
        case NWB_EFULL:
            nwb__conn_respond_error(c, 503, "too many re-runs queued; retry later");
            break;
        default:
            nwb__conn_respond_error(c, 503, "the server is stopping; retry later");
            break;
        }
    }
    nwb_free(r);
}

void nwb__crash_resymbolize_handle(struct nwb__conn *c)
{
    static const char prefix[] = "/v1/crashes/";
    const struct nwb__http_req *req = &c->req;
    const char *q = memchr(req->url, '?', req->url_len);
    const size_t len = q != NULL ? (size_t)(q - req->url) : req->url_len;
    const size_t tail = sizeof("/resymbolize") - 1;
    struct crash_resym *r;

    if (len <= sizeof(prefix) - 1 + tail) {
        nwb__conn_respond_error(c, 404, "no such extracted crash");
        return;
    }
    r = nwb_calloc(1, sizeof(*r));
    if (r == NULL) {
        nwb__conn_respond_error(c, 503, "out of memory");
        return;
    }
    /* The router matched /v1/crashes/<one segment>/resymbolize; the id is checked by the
     * ingest (-EINVAL: 404). */
    memcpy(r->id, req->url + sizeof(prefix) - 1, len - (sizeof(prefix) - 1) - tail);
    r->id[len - (sizeof(prefix) - 1) - tail] = '\0';
    c->work.ctx = r;
    if (nwb__offload(c, resym_run, resym_done) != 0) {
        c->work.ctx = NULL;
        nwb_free(r);
        nwb__conn_respond_error(c, 500, "cannot queue the request");
    }
}

void nwb__crash_resymbolize_build_id(struct nwb_server *server, const char *build_id)
{
    if (server != NULL && server->crash != NULL) {
        (void)nwb__crash_ingest_resymbolize_build_id(server->crash, build_id);
    }
}
