/* SPDX-License-Identifier: MIT */
/*
 * events_int.h - GET /v1/events, the live event stream (docs/protocol.md, "GET /v1/events"):
 * the event bus of events.c. Ingest points tell it what changed (a run became active, its
 * log grew, its telemetry report changed, a crash archive was stored or settled); log and
 * report changes are coalesced per run by one loop timer. Every event gets the next id and
 * enters a bounded backlog, from which each open stream is written at its reader's pace, and
 * a stream resumed with Last-Event-ID is replayed.
 *
 * Threading: the loop thread only, except nwb__events_crash_note() (any thread).
 */
#ifndef NWB_SERVER_EVENTS_INT_H
#define NWB_SERVER_EVENTS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/buf.h"

#include "server_int.h"

/* ---- bounds (docs/operations.md, "Bounds") ---- */
#define NWB__EVENTS_BACKLOG_MAX   4096u           /* events kept for resuming streams */
#define NWB__EVENTS_BACKLOG_BYTES (1024u * 1024u) /* ... and at most this many of their bytes */
#define NWB__EVENTS_COALESCE_MS   100u  /* at most one log and one telemetry event per run per */
#define NWB__EVENTS_RUNS_MAX      4096u /* runs tracked; the least recently active is dropped */
#define NWB__EVENTS_TEXT_MAX      1024u /* one event's bytes (id, event and data lines) */
#define NWB__EVENTS_CRASH_NOTES   256u  /* crash changes waiting for the loop; beyond: a reset */
#define NWB__EVENTS_RETRY_MS      1000u /* the reconnection delay streams advise (retry:) */
#define NWB__EVENTS_WRITE_BATCH   64u   /* events gathered into one write */
#define NWB__EVENTS_WRITE_BYTES   (64u * 1024u) /* ... and at most this many bytes */

struct nwb__events;

/*
 * The bus of @p srv (its limits from srv->cfg). It allocates its backlog and run table only
 * when the first event comes, and runs no timer while nothing is pending and no stream is
 * open. Returns 0 with @p *out (returned-owned: nwb__events_close), or -ENOMEM / a libuv
 * error.
 */
int nwb__events_create(struct nwb_server *srv, struct nwb__events **out);

/*
 * Close the bus's handles (every stream must be closed already); the memory goes in their
 * close callbacks, after which @p closed(@p ctx) runs. NULL is a no-op.
 */
void nwb__events_close(struct nwb__events *ev, void (*closed)(void *ctx), void *ctx);

/* The route handler of GET /v1/events. */
void nwb__events_handle(struct nwb__conn *c);

/* A log job was written (job->dir, job->log_size): the run is active, its log grew. */
void nwb__events_log_written(struct nwb__events *ev, const struct nwb__log_job *job);

/* A telemetry upload's run directory is known (job->dir): the run is active. */
void nwb__events_run_seen(struct nwb__events *ev, const struct nwb__log_job *job);

/* The run @p id (program, run) changed in a way GET /v1/runs/{id} shows (@p change: "crash",
 * a crash package was attributed to it): a run event now. */
void nwb__events_run_changed(struct nwb__events *ev, const char *id, const char *program,
                             const char *run, const char *change);

/* A telemetry upload of the run job->dir was answered; @p report_changed: telemetry.json was
 * rewritten with new content (stored, or a refusal recorded in it). */
void nwb__events_telemetry(struct nwb__events *ev, const struct nwb__log_job *job,
                           int report_changed);

/*
 * A crash archive changed state (the crash ingest's hook, crash_int.h): @p id, @p status
 * ("queued", "extracted", "invalid"), @p program / @p run (sanitised names). Any thread: the
 * note is queued (bounded) and published on the loop. @p ctx is the bus.
 */
void nwb__events_crash_note(void *ctx, const char *id, const char *status, const char *program,
                            const char *run);

/* The stream's connection is closing: no more writes (http_conn.c). NULL is a no-op. */
void nwb__events_stream_detach(struct nwb__event_stream *s);

/* Free a detached stream once its connection's handles closed (http_conn.c). NULL is a no-op. */
void nwb__events_stream_free(struct nwb__event_stream *s);

/* Append the nwb_event* series of GET /metrics to @p b. Returns 0 or a nwb_buf_t error. */
int nwb__events_metrics_write(const struct nwb__events *ev, nwb_buf_t *b);

#endif /* NWB_SERVER_EVENTS_INT_H */
