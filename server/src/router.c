/* SPDX-License-Identifier: MIT */
/*
 * router.c - the endpoint table. An endpoint is one row: its path (exact,
 * or a prefix for /v1/crashes/<id>), methods, whether it keeps the body and
 * under which limit, and its handlers.
 */
#include <string.h>

#include "server_int.h"

static const struct nwb__route routes[] = {
    {"/v1/log", 0, NWB__METHOD_POST, "POST", 1, NULL, NULL, nwb__log_on_head, nwb__log_handle,
     nwb__log_job_done},
    {"/v1/telemetry", 0, NWB__METHOD_POST, "POST", 1, nwb__tel_body_limit,
     "telemetry upload exceeds 67108864 bytes", nwb__tel_on_head, nwb__tel_handle,
     nwb__tel_job_done},
    {"/v1/crash", 0, NWB__METHOD_POST, "POST", 1, nwb__crash_body_limit,
     "crash archive exceeds --crash-max-archive-bytes", NULL, nwb__crash_post_handle, NULL},
    {"/v1/crashes", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__crash_get_handle, NULL},
    {"/v1/crashes/", 1, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__crash_get_handle, NULL},
    {"/v1/health", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__health_handle, NULL},
    {"/metrics", 0, NWB__METHOD_GET, "GET", 0, NULL, NULL, NULL, nwb__metrics_handle, NULL},
};

const struct nwb__route *nwb__router_match(const char *path, size_t len)
{
    const char *q = memchr(path, '?', len);

    if (q != NULL) {
        len = (size_t)(q - path);
    }
    for (size_t i = 0; i < NWB_ARRAY_SIZE(routes); i++) {
        const size_t n = strlen(routes[i].path);

        if (routes[i].prefix ? len > n && memcmp(routes[i].path, path, n) == 0
                             : n == len && memcmp(routes[i].path, path, len) == 0) {
            return &routes[i];
        }
    }
    return NULL;
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
