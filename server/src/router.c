/* SPDX-License-Identifier: MIT */
/*
 * router.c - the endpoint table. A new endpoint (POST /v1/telemetry,
 * POST /v1/crash) is one more row: its path, methods, whether it keeps the
 * body, and its handlers.
 */
#include <string.h>

#include "server_int.h"

static const struct nwb__route routes[] = {
    {"/v1/log", NWB__METHOD_POST, "POST", 1, nwb__log_on_head, nwb__log_handle, nwb__log_job_done},
    {"/v1/health", NWB__METHOD_GET, "GET", 0, NULL, nwb__health_handle, NULL},
    {"/metrics", NWB__METHOD_GET, "GET", 0, NULL, nwb__metrics_handle, NULL},
};

const struct nwb__route *nwb__router_match(const char *path, size_t len)
{
    const char *q = memchr(path, '?', len);

    if (q != NULL) {
        len = (size_t)(q - path);
    }
    for (size_t i = 0; i < NWB_ARRAY_SIZE(routes); i++) {
        if (strlen(routes[i].path) == len && memcmp(routes[i].path, path, len) == 0) {
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
