/* SPDX-License-Identifier: MIT */
/*
 * router.c - the endpoint table. An endpoint is one row: its path (exact, a prefix for
 * /v1/crashes/<id>, or a pattern where '*' is one path segment: /v1/runs/<asterisk>/log),
 * methods, whether it keeps the body and under which limit, and its handlers. The first
 * matching row wins.
 */
#include <string.h>

#include "events_int.h"
#include "read_int.h"
#include "server_int.h"
#include "symbols_int.h"
#include "viewer_int.h"

static const struct nwb__route routes[] = {
    {"/v1/log", 0, NWB__METHOD_POST, "POST", 1, NULL, NULL, nwb__log_on_head, nwb__log_handle,
     nwb__log_job_done},
    {"/v1/telemetry", 0, NWB__METHOD_POST, "POST", 1, nwb__tel_body_limit,
     "telemetry upload exceeds 67108864 bytes", nwb__tel_on_head, nwb__tel_handle,
     nwb__tel_job_done},
    {"/v1/crash", 0, NWB__METHOD_POST, "POST", 1, nwb__crash_body_limit,
     "crash archive exceeds --crash-max-archive-bytes", NULL, nwb__crash_post_handle, NULL},
    {"/v1/symbols", 0, NWB__METHOD_POST, "POST", 1, nwb__symbols_body_limit,
     "symbol file exceeds --symbols-max-bytes", nwb__symbols_on_head, nwb__symbols_post_handle,
     NULL},
    {"/v1/symbols/*", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__symbols_get_handle,
     NULL},
    {"/v1/crashes", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__crash_get_handle, NULL},
    {"/v1/crash-groups", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__crash_get_handle,
     NULL},
    /* The read API (read_int.h); before /v1/crashes/, which would take the files too. */
    {"/v1/crashes/*/files/", 1, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL,
     nwb__read_crash_file_handle, NULL},
    {"/v1/crashes/*/archive", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL,
     nwb__read_crash_archive_handle, NULL},
    {"/v1/crashes/*/resymbolize", 0, NWB__METHOD_POST, "POST", 0, NULL, NULL, NULL,
     nwb__crash_resymbolize_handle, NULL},
    {"/v1/runs", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__read_runs_handle, NULL},
    {"/v1/runs/*", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__read_run_handle, NULL},
    {"/v1/runs/*/log", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__read_log_handle, NULL},
    {"/v1/runs/*/telemetry", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL,
     nwb__read_telemetry_handle, NULL},
    {"/v1/runs/*/frames", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__tel_frames_handle,
     NULL},
    {"/v1/runs/*/frames/*", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__tel_frame_handle,
     NULL},
    {"/v1/crashes/", 1, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__crash_get_handle, NULL},
    {"/v1/events", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__events_handle, NULL},
    {"/v1/health", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__health_handle, NULL},
    {"/metrics", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__metrics_handle, NULL},
};

/* The viewer's files (viewer_endpoint.c), answered without --token-file's bearer check: they
 * hold no data, and a browser cannot send the token before the page that asks for it is in. */
static const struct nwb__route public_routes[] = {
    {"/", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__viewer_handle, NULL},
    {"/assets/", 1, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__viewer_handle, NULL},
};

/*
 * @p pattern matches @p path (@p len bytes, no query): byte for byte, except that a '*' stands
 * for one non-empty path segment (no '/'); with @p prefix, a longer path matches too.
 */
static int path_matches(const char *pattern, int prefix, const char *path, size_t len)
{
    size_t i = 0;

    for (const char *p = pattern; *p != '\0'; p++) {
        if (*p == '*') {
            const size_t start = i;

            while (i < len && path[i] != '/') {
                i++;
            }
            if (i == start) {
                return 0;
            }
        } else if (i >= len || path[i++] != *p) {
            return 0;
        }
    }
    return prefix ? i < len : i == len;
}

static const struct nwb__route *match_in(const struct nwb__route *table, size_t n, const char *path,
                                         size_t len)
{
    for (size_t i = 0; i < n; i++) {
        if (path_matches(table[i].path, table[i].prefix, path, len)) {
            return &table[i];
        }
    }
    return NULL;
}

const struct nwb__route *nwb__router_match(const char *path, size_t len)
{
    const char *q = memchr(path, '?', len);
    const struct nwb__route *r;

    if (q != NULL) {
        len = (size_t)(q - path);
    }
    r = match_in(routes, NWB_ARRAY_SIZE(routes), path, len);
    return r != NULL ? r : match_in(public_routes, NWB_ARRAY_SIZE(public_routes), path, len);
}

int nwb__router_route_is_public(const struct nwb__route *route)
{
    for (size_t i = 0; i < NWB_ARRAY_SIZE(public_routes); i++) {
        if (route == &public_routes[i]) {
            return 1;
        }
    }
    return 0;
}

unsigned nwb__router_method_bit(unsigned method)
{
    switch (method) {
    case HTTP_GET:
        return NWB__METHOD_GET;
    case HTTP_POST:
        return NWB__METHOD_POST;
    default:
        return 0;
    }
}
