/* SPDX-License-Identifier: MIT */
/*
 * tel_client.c - telemetry uploads delivered through the logger client: a
 * POST per upload from the uploader's own thread (with bounded retries), or
 * an append to the standalone run's telemetry.nwbs.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>

#include <stdatomic.h>

#include "nwb/error.h"
#include "nwb/log_line.h"
#include "nwb/profile.h"
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

/* ---- Logger lines into telemetry (the client's worker thread) ---------------------------- */

static atomic_uint capture_min_level;

static void line_tap(void *ctx, const nwb_log_record_t *rec)
{
    const uint64_t mono = nwb_time_mono_ns();
    const uint64_t wall = nwb_time_now_ns();
    uint64_t ts;

    (void)ctx;
    if (rec->level < atomic_load_explicit(&capture_min_level, memory_order_relaxed)) {
        return;
    }
    /* The line's wall-clock time on the monotonic clock of the stream. */
    ts = wall >= rec->time_ns ? mono - (mono < wall - rec->time_ns ? mono : wall - rec->time_ns)
                              : mono;
    nwb__prof_text(ts, rec->level, (uint32_t)rec->thread_id, rec->msg, rec->msg_len);
}

void nwb_tel_client_capture_logs(nwb_client_t *client, unsigned min_level)
{
    atomic_store_explicit(&capture_min_level, min_level, memory_order_relaxed);
    nwb_client_set_line_tap(client, min_level <= NWB_LOG_FATAL ? line_tap : NULL, NULL);
}
