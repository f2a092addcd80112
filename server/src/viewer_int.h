/* SPDX-License-Identifier: MIT */
/*
 * viewer_int.h - the web viewer's embedded files (server/viewer/src and uPlot, turned into
 * the generated viewer_assets.c at build time by cmake/NwbEmbedAssets.cmake) and the route
 * that serves them: GET / and GET /assets/<name> (viewer_endpoint.c, docs/viewer.md).
 */
#ifndef NWB_VIEWER_INT_H
#define NWB_VIEWER_INT_H

#include <stddef.h>

struct nwb__conn;

/* One embedded file. Every member points into read-only data of the binary. */
struct nwb__viewer_asset {
    const char *name;  /* served at /assets/<name>; "index.html" is also GET / */
    const char *ctype; /* Content-Type, from the name's extension */
    const char *etag;  /* quoted strong validator: the first 64 bits of the bytes' SHA-256 */
    const unsigned char *data;
    size_t len;
};

/* The generated table (viewer_assets.c); empty when built with -DNWB_BUILD_VIEWER=OFF. */
extern const struct nwb__viewer_asset nwb__viewer_assets[];
extern const size_t nwb__viewer_assets_count;

/* The asset served at @p path (@p len bytes, a query string ignored), or NULL. */
const struct nwb__viewer_asset *nwb__viewer_asset_for_path(const char *path, size_t len);

/* Route handler for GET / and GET /assets/<name>. Loop thread. */
void nwb__viewer_handle(struct nwb__conn *c);

#endif /* NWB_VIEWER_INT_H */
