/* SPDX-License-Identifier: MIT */
/*
 * symbols_endpoint.c - POST /v1/symbols (one ELF file as the raw body, Content-Length
 * required, at most --symbols-max-bytes, optional ?build_id=HEX) and GET /v1/symbols/<build
 * id> over the symbol store (symbols_int.h, docs/protocol.md). The body streams to a
 * temporary file in --symbols-dir (nwb__conn_spill_begin: never held whole in memory); the
 * check and the rename run on the thread pool; a new file is announced through
 * nwb__crash_resymbolize_build_id() (symbols_hook.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/buf.h"
#include "nwb/json.h"

#include "read_int.h"
#include "server_int.h"
#include "symbols_hook.h"
#include "symbols_int.h"

static const char bad_id_reason[] = "build id must be 4..128 lowercase hex digits, an even count";

/* One POST /v1/symbols, from its head to its answer. */
struct upload {
    struct nwb__spill spill;
    struct nwb_server *srv;
    uv_fs_t unlink_req;
    char want_id[NWB__ELF_BUILD_ID_HEX_MAX + 1]; /* ?build_id=, or "" */
    char tmp_path[NWB__SYMBOLS_PATH_MAX];
    struct nwb__symbols_result res;
};

/* One GET /v1/symbols/<build id>. */
struct lookup {
    char id[NWB__ELF_BUILD_ID_HEX_MAX + 1];
    uint64_t size;
    int has_debug_info;
    int err;
};

size_t nwb__symbols_body_limit(const struct nwb_server *srv)
{
    return srv->cfg.symbols_max_bytes;
}

/* Pool thread, at the first write. */
static int upload_open(struct nwb__spill *sp)
{
    struct upload *up = NWB_CONTAINER_OF(sp, struct upload, spill);

    sp->fd = open(up->tmp_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    return sp->fd >= 0 ? 0 : -errno;
}

static void on_abandoned_unlinked(uv_fs_t *req)
{
    struct upload *up = req->data;

    uv_fs_req_cleanup(req);
    nwb_free(up);
}

/* Loop thread: the request ended unfinished. The temporary file goes off the loop. */
static void upload_abandon(struct nwb__spill *sp)
{
    struct upload *up = NWB_CONTAINER_OF(sp, struct upload, spill);

    if (sp->fd >= 0) {
        close(sp->fd);
        sp->fd = -1;
        up->unlink_req.data = up;
        if (uv_fs_unlink(up->srv->loop, &up->unlink_req, up->tmp_path, on_abandoned_unlinked) ==
            0) {
            return;
        }
        (void)unlink(up->tmp_path);
    }
    nwb_free(up);
}

int nwb__symbols_on_head(struct nwb__conn *c)
{
    const struct nwb__http_req *r = &c->req;
    const char *q = memchr(r->url, '?', r->url_len);
    char value[NWB__QUERY_VALUE_MAX + 1];
    size_t vlen = 0;
    struct upload *up;
    int found = 0;

    if (r->chunked) {
        c->early_reason = "POST /v1/symbols needs Content-Length";
        return 411;
    }
    if (q != NULL) {
        found =
            nwb__query_get(q + 1, r->url_len - (size_t)(q + 1 - r->url), "build_id", value, &vlen);
        if (found < 0 || (found == 1 && !nwb__symbols_id_valid(value, vlen))) {
            c->early_reason = bad_id_reason;
            return 400;
        }
    }
    up = nwb_calloc(1, sizeof(*up));
    if (up == NULL) {
        c->early_reason = "out of memory";
        return 503;
    }
    up->srv = c->srv;
    up->spill.fd = -1;
    up->spill.open = upload_open;
    up->spill.abandon = upload_abandon;
    if (found == 1) {
        memcpy(up->want_id, value, vlen + 1);
    }
    /* The folder's length is bounded at start (NWB__SYMBOLS_DIR_MAX): this always fits. */
    snprintf(up->tmp_path, sizeof(up->tmp_path),
             "%s/" NWB__SYMBOLS_TMP_PREFIX "%ld-%llu" NWB__SYMBOLS_TMP_SUFFIX, c->srv->symbols_dir,
             (long)getpid(), (unsigned long long)c->srv->symbols_upload_seq++);
    nwb__conn_spill_begin(c, &up->spill);
    return 0;
}

static void post_run(struct nwb__conn *c)
{
    struct upload *up = c->work.ctx;
    struct nwb__spill *sp = &up->spill;
    const int err = nwb__spill_write(sp, c->body != NULL ? (const void *)c->body : "", c->body_len);

    if (err != 0) {
        char ebuf[48];

        up->res.status = 500;
        snprintf(up->res.error, sizeof(up->res.error), "cannot write the upload: %s",
                 nwb__err_label(err, ebuf, sizeof(ebuf)));
        (void)unlink(up->tmp_path);
    } else {
        nwb__symbols_store(up->srv->symbols_dir, up->tmp_path, sp->fd, sp->written, up->want_id,
                           &up->res);
    }
    if (sp->fd >= 0) {
        close(sp->fd);
        sp->fd = -1;
    }
}

/* Finish the object @p j writes into @p b and answer it with @p status; @p fallback (a text
 * answer of the same status, or 503 when NULL) when it could not be built. */
static void respond_json(struct nwb__conn *c, int status, nwb_json_t *j, nwb_buf_t *b,
                         const char *fallback)
{
    nwb_json_obj_end(j);
    nwb_json_space(j, "\n", 1);
    if (nwb_json_finish(j) != 0) {
        nwb__conn_respond_error(c, fallback != NULL ? status : 503,
                                fallback != NULL ? fallback : "out of memory");
    } else {
        nwb__conn_respond(c, status, "application/json", (const char *)b->data, b->len, 0, NULL);
    }
    nwb_buf_cleanup(b);
}

/* {"build_id":..,"size":..,"has_debug_info":..[,"stored":..]} (@p stored < 0: left out). */
static void respond_info(struct nwb__conn *c, int status, const char *hex, uint64_t size,
                         int has_debug_info, int stored)
{
    nwb_buf_t b = NWB_BUF_INIT(512);
    nwb_json_t j;

    nwb_json_init(&j, &b, NULL);
    nwb_json_obj_begin(&j);
    nwb_json_key(&j, "build_id");
    nwb_json_cstr(&j, hex);
    nwb_json_key(&j, "size");
    nwb_json_u64(&j, size);
    nwb_json_key(&j, "has_debug_info");
    nwb_json_bool(&j, has_debug_info);
    if (stored >= 0) {
        nwb_json_key(&j, "stored");
        nwb_json_bool(&j, stored);
    }
    respond_json(c, status, &j, &b, NULL);
}

/* 400 {"error":"<reason>"}. */
static void respond_refused(struct nwb__conn *c, const char *reason)
{
    nwb_buf_t b = NWB_BUF_INIT(256);
    nwb_json_t j;

    nwb_json_init(&j, &b, NULL);
    nwb_json_obj_begin(&j);
    nwb_json_key(&j, "error");
    nwb_json_cstr(&j, reason);
    respond_json(c, 400, &j, &b, reason);
}

static void post_done(struct nwb__conn *c)
{
    struct upload *up = c->work.ctx;
    const struct nwb__symbols_result *res = &up->res;

    c->work.ctx = NULL;
    if (c->state != NWB__CONN_CLOSED) {
        if (res->status == 200 || res->status == 201) {
            respond_info(c, res->status, res->info.build_id_hex, res->size,
                         res->info.has_debug_info, res->stored);
        } else if (res->status == 400) {
            respond_refused(c, res->reason);
        } else {
            nwb__conn_respond_error(c, 500, res->error);
        }
    }
    if (res->stored) {
        /* Stored whether or not the client is still there to hear it. */
        nwb__crash_resymbolize_build_id(up->srv, res->info.build_id_hex);
    }
    nwb_free(up);
}

void nwb__symbols_post_handle(struct nwb__conn *c)
{
    struct nwb__spill *sp = nwb__conn_spill_take(c);

    if (sp == NULL) {
        nwb__conn_respond_error(c, 500, "the upload was not streamed");
        return;
    }
    c->work.ctx = NWB_CONTAINER_OF(sp, struct upload, spill);
    if (nwb__offload(c, post_run, post_done) != 0) {
        c->work.ctx = NULL;
        sp->abandon(sp);
        nwb__conn_respond_error(c, 500, "cannot queue the upload");
    }
}

static void lookup_run(struct nwb__conn *c)
{
    struct lookup *l = c->work.ctx;

    l->err = nwb__symbols_lookup(c->srv->symbols_dir, l->id, &l->size, &l->has_debug_info);
}

static void lookup_done(struct nwb__conn *c)
{
    struct lookup *l = c->work.ctx;

    c->work.ctx = NULL;
    if (c->state != NWB__CONN_CLOSED) {
        if (l->err == 0) {
            respond_info(c, 200, l->id, l->size, l->has_debug_info, -1);
        } else if (l->err == -ENOENT) {
            nwb__conn_respond_error(c, 404, "no symbols for this build id");
        } else {
            char ebuf[48], msg[128];

            snprintf(msg, sizeof(msg), "cannot look the build id up: %s",
                     nwb__err_label(l->err, ebuf, sizeof(ebuf)));
            nwb__conn_respond_error(c, 500, msg);
        }
    }
    nwb_free(l);
}

void nwb__symbols_get_handle(struct nwb__conn *c)
{
    static const char prefix[] = "/v1/symbols/";
    const struct nwb__http_req *r = &c->req;
    const char *q = memchr(r->url, '?', r->url_len);
    const size_t len = (q != NULL ? (size_t)(q - r->url) : r->url_len) - (sizeof(prefix) - 1);
    const char *id = r->url + sizeof(prefix) - 1;
    struct lookup *l;

    /* The router matched /v1/symbols/<one segment>. */
    if (!nwb__symbols_id_valid(id, len)) {
        nwb__conn_respond_error(c, 400, bad_id_reason);
        return;
    }
    l = nwb_calloc(1, sizeof(*l));
    if (l == NULL) {
        nwb__conn_respond_error(c, 503, "out of memory");
        return;
    }
    memcpy(l->id, id, len);
    l->id[len] = '\0';
    c->work.ctx = l;
    if (nwb__offload(c, lookup_run, lookup_done) != 0) {
        c->work.ctx = NULL;
        nwb_free(l);
        nwb__conn_respond_error(c, 500, "cannot queue the request");
    }
}
