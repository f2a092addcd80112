/* SPDX-License-Identifier: MIT */
/*
 * viewer_endpoint.c - GET / and GET /assets/<name>: the web viewer's files from the table
 * embedded at build time (viewer_int.h). Each answer names its Content-Type and carries an
 * ETag with Cache-Control: no-cache (the bytes change only with the binary, so a browser may
 * keep them but asks again on each load, and an If-None-Match naming the ETag is a 304); the
 * security headers every answer of the server has come from nwb__http_head_format(). The page is
 * served without the bearer token (the router row says so): it holds no data, and it is what asks
 * for the token.
 */
#include <stdio.h>
#include <string.h>

#include "server_int.h"
#include "viewer_int.h"

#define ASSETS_PREFIX "/assets/"

static const struct nwb__viewer_asset *asset_named(const char *name, size_t len)
{
    for (size_t i = 0; i < nwb__viewer_assets_count; i++) {
        const struct nwb__viewer_asset *a = &nwb__viewer_assets[i];

        if (strlen(a->name) == len && memcmp(a->name, name, len) == 0) {
            return a;
        }
    }
    return NULL;
}

const struct nwb__viewer_asset *nwb__viewer_asset_for_path(const char *path, size_t len)
{
    const char *q = memchr(path, '?', len);
    const size_t plen = sizeof(ASSETS_PREFIX) - 1;

    if (q != NULL) {
        len = (size_t)(q - path);
    }
    if (len == 1 && path[0] == '/') {
        return asset_named("index.html", sizeof("index.html") - 1);
    }
    if (len > plen && memcmp(path, ASSETS_PREFIX, plen) == 0) {
        return asset_named(path + plen, len - plen);
    }
    return NULL;
}

void nwb__viewer_handle(struct nwb__conn *c)
{
    const struct nwb__viewer_asset *a = nwb__viewer_asset_for_path(c->req.url, c->req.url_len);
    char extra[96];

    if (a == NULL) {
        nwb__conn_respond_error(c, 404,
                                nwb__viewer_assets_count == 0
                                    ? "this nwb-logserver was built without the viewer "
                                      "(-DNWB_BUILD_VIEWER=OFF)"
                                    : "no such viewer asset");
        return;
    }
    snprintf(extra, sizeof(extra), "ETag: %s\r\nCache-Control: no-cache\r\n", a->etag);
    if (nwb__http_req_etag_matches(&c->req, a->etag)) {
        /* The browser's copy is this one: the head again, no body. */
        nwb__conn_respond(c, 304, NULL, NULL, 0, 0, extra);
        return;
    }
    nwb__conn_respond(c, 200, a->ctype, (const char *)a->data, a->len, 0, extra);
}
