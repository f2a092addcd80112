/* SPDX-License-Identifier: MIT */
/*
 * nwb/telemetry_client.h - telemetry upload through the logger client
 * (library nwb_telemetry_client: telemetry feeding client's public API).
 *
 * nwb_tel_client_uploader_create() starts an uploader whose worker thread
 * compresses each sealed upload into one zstd frame and POSTs it to
 * /v1/telemetry with the client's run headers and the upload's seq; with a
 * standalone client it appends the raw stream to <run dir>/telemetry.nwbs
 * instead. Nothing of it runs on the frame thread: nwb_tel_flush_upload()
 * only queues the sealed buffer.
 */
#ifndef NWB_TELEMETRY_CLIENT_H
#define NWB_TELEMETRY_CLIENT_H

#include "nwb/client.h"
#include "nwb/telemetry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Delivery bounds (docs/telemetry-report.md, "Upload"). */
#define NWB_TEL_CLIENT_POST_TIMEOUT_MS 10000u /* one POST, connect to answer */
#define NWB_TEL_CLIENT_ATTEMPTS        4u     /* tries per upload before it is dropped */
#define NWB_TEL_CLIENT_BACKOFF_MS      100u   /* first retry delay, quadrupling */

/**
 * Start an uploader that delivers through @p client (borrowed; must outlive
 * the uploader). Returns 0 with @p *out, or a negative code.
 */
NWB_API int nwb_tel_client_uploader_create(nwb_client_t *client, nwb_tel_uploader_t **out);

/**
 * The deliver function behind it (nwb_tel_deliver_fn), @p ctx being the
 * client: server mode POSTs and retries a failed delivery (connection error,
 * timeout, 408, 429, 503) up to NWB_TEL_CLIENT_ATTEMPTS times with the same
 * seq (the server stores a seq once); other answers are final. Standalone
 * mode appends to the run's telemetry.nwbs.
 */
NWB_API int nwb_tel_client_deliver(void *ctx, const uint8_t *body, size_t len,
                                   const char *content_encoding, uint64_t seq);

/**
 * Lines the logger client renders at @p min_level (nwb_log_level_t) and above become textLog
 * events of the attached recorder (nwb/profile.h), recorded by the client's worker thread, which
 * formats them anyway: nothing is formatted twice and nothing runs on the game thread. They are
 * taken while the recorder captures NWB_TEL_CAPTURE_LOGS with upload on, and each goes into the
 * frame its time falls in (of the last 64 frames). @p min_level above FATAL stops it.
 */
NWB_API void nwb_tel_client_capture_logs(nwb_client_t *client, unsigned min_level);

#ifdef __cplusplus
}
#endif

#endif /* NWB_TELEMETRY_CLIENT_H */
