/* SPDX-License-Identifier: MIT */
/*
 * tel_client.c - telemetry uploads delivered through the logger client: a
 * POST per upload from the uploader's own thread (with bounded retries), or
 * an append to the standalone run's telemetry.nwbs.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>

#include "nwb/error.h"
#include "nwb/telemetry_client.h"

static int retryable(int status)
{
    return status < 0 || status == 408 || status == 429 || status == 503;
}

int nwb_tel_client_deliver(void *ctx, const uint8_t *body, size_t len, const char *content_encoding,
                           uint64_t seq)
{
    nwb_client_t *client = ctx;
    unsigned delay = NWB_TEL_CLIENT_BACKOFF_MS;
    int status = NWB_ECONFIG;

    if (!nwb_client_is_server_mode(client)) {
        char path[1300];
        const char *dir = nwb_client_run_dir(client);

        if (dir == NULL) {
            return NWB_ECONFIG;
        }
        snprintf(path, sizeof(path), "%s/telemetry.nwbs", dir);
        return nwb_tel_deliver_file(path, body, len, content_encoding, seq);
    }
    for (unsigned attempt = 0; attempt < NWB_TEL_CLIENT_ATTEMPTS; attempt++) {
        if (attempt > 0) {
            /* This is the uploader's thread, never a frame thread: waiting here is the point. */
            poll(NULL, 0, (int)delay);
            delay *= 4;
        }
        status = nwb_client_post(client, "/v1/telemetry", body, len, "application/x-nwb-telemetry",
                                 content_encoding, seq, NWB_TEL_CLIENT_POST_TIMEOUT_MS);
        if (status == 200) {
            return 0;
        }
        if (!retryable(status)) {
            break;
        }
    }
    return status < 0 ? status : NWB_EHTTP;
}

int nwb_tel_client_uploader_create(nwb_client_t *client, nwb_tel_uploader_t **out)
{
    nwb_tel_uploader_config_t cfg = NWB_TEL_UPLOADER_CONFIG_INIT;

    *out = NULL;
    if (client == NULL) {
        return NWB_ECONFIG;
    }
    cfg.compress = nwb_client_is_server_mode(client); /* the file keeps the raw stream */
    cfg.deliver = nwb_tel_client_deliver;
    cfg.ctx = client;
    return nwb_tel_uploader_create(&cfg, out);
}
