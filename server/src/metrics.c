/* SPDX-License-Identifier: MIT */
/*
 * metrics.c - the server's counters (loop thread only, so plain integers)
 * and the two status endpoints: GET /metrics (Prometheus text format 0.0.4:
 * the loop's counters, then on the thread pool the crash folders' counts,
 * the telemetry ingest's atomics and the open runs' #token counts) and
 * GET /v1/health (JSON).
 */
#include <stdio.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/buf.h"
#include "nwb/json.h"
#include "nwb/log_line.h"
#include "crash_int.h"
#include "events_int.h"
#include "forward/forwarder.h"
#include "server_int.h"

/* The status codes the server answers with; the last slot counts any other. */
static const int status_codes[NWB__STATUS_SLOTS] = {100, 200, 400, 401, 404, 405, 408, 411, 413,
                                                    415, 429, 431, 500, 501, 503, 505, 0};

void nwb__metrics_count_status(struct nwb__metrics *m, int status)
{
    size_t i = 0;

    while (i + 1 < NWB__STATUS_SLOTS && status_codes[i] != status) {
        i++;
    }
    m->requests[i]++;
    if (status >= 400) {
        m->errors++;
    }
}

/* The /metrics text: grows as needed, up to a bound. Once an append fails (the bound or
 * memory) nothing more is added, so a cut text still ends at a line. */
#define TEXT_MAX (64u * 1024u * 1024u)

struct text {
    nwb_buf_t b;
    int full;
};

#define TEXT_PUT(t, ...) ((t)->full = (t)->full || nwb_buf_appendf(&(t)->b, __VA_ARGS__) != 0)

static void metric(struct text *t, const char *name, const char *type, const char *help,
                   uint64_t value)
{
    TEXT_PUT(t, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
             (unsigned long long)value);
}

static uint64_t uptime_s(const struct nwb_server *srv)
{
    return (nwb_time_mono_ns() - srv->start_mono_ns) / 1000000000u;
}

/* --forward-clickhouse's counters (a locked snapshot: the forwarder thread writes them). */
static void forward_part(struct nwb_server *srv, struct text *t)
{
    struct nwb__fwd_stats st;

    if (srv->forwarder == NULL) {
        return;
    }
    nwb__forwarder_stats(srv->forwarder, &st);
    metric(t, "nwb_forward_up", "gauge",
           "1 when ClickHouse answered the forwarder's last request with 200.", (uint64_t)st.up);
    metric(t, "nwb_forward_records_total", "counter", "Log lines ClickHouse acknowledged.",
           st.records_total);
    metric(t, "nwb_forward_bytes_total", "counter", "log.txt bytes of those lines.",
           st.bytes_total);
    metric(t, "nwb_forward_inserts_total", "counter", "Inserts answered 200.", st.inserts_total);
    metric(t, "nwb_forward_inserts_failed_total", "counter",
           "Requests to ClickHouse refused or not answered.", st.inserts_failed);
    metric(t, "nwb_forward_tls_failures_total", "counter",
           "Connections to an https ClickHouse refused at TLS (handshake, certificate "
           "verification, host name).",
           st.tls_failures);
    metric(t, "nwb_forward_lines_skipped_total", "counter",
           "log.txt lines the forwarder could not parse (never sent).", st.lines_skipped);
    metric(t, "nwb_forward_frames_total", "counter",
           "Telemetry frames (nwb_frames rows) ClickHouse acknowledged.", st.frames_total);
    metric(t, "nwb_forward_crash_rows_total", "counter",
           "nwb_crashes rows ClickHouse acknowledged (every crash again when the list changed).",
           st.crash_rows_total);
    metric(t, "nwb_forward_passes_total", "counter",
           "Forwarder passes (over the runs written since the last one, or all of them).",
           st.passes_total);
    metric(t, "nwb_forward_full_passes_total", "counter",
           "Forwarder passes that scanned every run (the first, after a failure, each minute).",
           st.full_passes_total);
    metric(t, "nwb_forward_bytes_behind", "gauge",
           "log.txt bytes not yet acknowledged by ClickHouse, at the last pass.", st.bytes_behind);
    metric(t, "nwb_forward_records_behind", "gauge",
           "Complete lines read but not yet acknowledged, at the last pass.", st.records_behind);
    TEXT_PUT(t,
             "# HELP nwb_forward_seconds_behind Age of the oldest unacknowledged line.\n"
             "# TYPE nwb_forward_seconds_behind gauge\nnwb_forward_seconds_behind %.3f\n",
             st.seconds_behind);
}

/* The part only the loop thread may read (its plain counters). */
static void loop_part(struct nwb_server *srv, struct text *t)
{
    const struct nwb__metrics *m = &srv->metrics;

    metric(t, "nwb_records_total", "counter", "Log records written to run logs.", m->records);
    metric(t, "nwb_bytes_total", "counter", "Body bytes of the log batches written.", m->bytes);
    metric(t, "nwb_batches_total", "counter", "Log batches (POST /v1/log bodies) written.",
           m->batches);
    metric(t, "nwb_inline_batches_total", "counter",
           "Log bodies the loop thread handled itself (worker idle, body small).", m->inline_jobs);
    metric(t, "nwb_duplicate_batches_total", "counter",
           "Batches answered 200 without writing: their X-NWB-Seq was already written.",
           m->duplicates);
    TEXT_PUT(t, "# HELP nwb_requests_total Requests answered, by status code.\n"
                "# TYPE nwb_requests_total counter\n");
    for (size_t i = 0; i < NWB__STATUS_SLOTS; i++) {
        if (status_codes[i] != 0) {
            TEXT_PUT(t, "nwb_requests_total{code=\"%d\"} %llu\n", status_codes[i],
                     (unsigned long long)m->requests[i]);
        } else {
            TEXT_PUT(t, "nwb_requests_total{code=\"other\"} %llu\n",
                     (unsigned long long)m->requests[i]);
        }
    }
    metric(t, "nwb_errors_total", "counter", "Requests answered with a status >= 400.", m->errors);
    metric(t, "nwb_write_errors_total", "counter",
           "Batches that could not be written (answered 503).", m->write_errors);
    metric(t, "nwb_drops_total", "counter",
           "Client-reported drops: records written with the DROPNOTE flag.", m->drops);
    metric(t, "nwb_connections_open", "gauge", "Open client connections.", srv->conn_count);
    metric(t, "nwb_connections_total", "counter", "Connections accepted.", m->connections_total);
    metric(t, "nwb_connections_rejected_total", "counter",
           "Connections refused over --max-connections.", m->connections_rejected);
    metric(t, "nwb_request_timeouts_total", "counter", "Requests answered 408.", m->timeouts);
    metric(t, "nwb_read_pauses_total", "counter",
           "Times the log queue filled and every connection stopped reading.", m->read_pauses);
    metric(t, "nwb_budget_waits_total", "counter",
           "Requests that waited for room under --max-buffered-bytes.", m->budget_waits);
    metric(t, "nwb_queue_jobs", "gauge", "Log jobs queued or being written.",
           nwb__log_worker_outstanding(srv->worker));
    metric(t, "nwb_buffered_bytes", "gauge", "Request body bytes reserved in memory.",
           srv->budget_used);
    forward_part(srv, t);
    metric(t, "nwb_namesym_names", "gauge", "Names in the current name-symbol table.",
           srv->names != NULL ? srv->names->count : 0);
    metric(t, "nwb_namesym_sidecars", "gauge", "Sidecars the current name-symbol table came from.",
           srv->names != NULL ? srv->names->files : 0);
    metric(t, "nwb_namesym_reloads_total", "counter",
           "Name-symbol tables switched to after SIGHUP.", m->namesym_reloads);
    metric(t, "nwb_namesym_reload_failures_total", "counter",
           "SIGHUP reloads that failed (the previous table stayed).", m->namesym_reload_failures);
    TEXT_PUT(t,
             "# HELP nwb_namesym_tokens_total #tokens in written log records, by result, since "
             "start.\n"
             "# TYPE nwb_namesym_tokens_total counter\n"
             "nwb_namesym_tokens_total{result=\"decoded\"} %llu\n"
             "nwb_namesym_tokens_total{result=\"unknown\"} %llu\n",
             (unsigned long long)m->tokens_decoded, (unsigned long long)m->tokens_unknown);
    t->full = t->full || nwb__events_metrics_write(srv->events, &t->b) != 0;
}

static void run_tokens(void *ctx, const char *program, const char *run, uint64_t decoded,
                       uint64_t unknown)
{
    /* program and run are safe names ([A-Za-z0-9_.-]): nothing to escape in a label. */
    TEXT_PUT((struct text *)ctx,
             "nwb_namesym_run_tokens_total{program=\"%s\",run=\"%s\",result=\"decoded\"} %llu\n"
             "nwb_namesym_run_tokens_total{program=\"%s\",run=\"%s\",result=\"unknown\"} %llu\n",
             program, run, (unsigned long long)decoded, program, run, (unsigned long long)unknown);
}

/* Room for @p need more bytes written in place (past b.len); 0 when there is none. */
static int text_room(struct text *t, size_t need)
{
    if (t->full || nwb_buf_reserve(&t->b, need) != 0) {
        t->full = 1;
        return 0;
    }
    return 1;
}

/* The part that scans folders or takes other threads' locks: on the thread pool. */
static void pool_part(struct nwb__conn *c)
{
    struct nwb_server *srv = c->srv;
    struct text *t = c->work.ctx;

    if (srv->crash != NULL) {
        size_t want = 1;

        for (int tries = 0; tries < 2 && text_room(t, want); tries++) {
            const size_t room = t->b.cap - t->b.len;
            const size_t need =
                nwb__crash_ingest_metrics_write(srv->crash, (char *)t->b.data + t->b.len, room);

            if (need < room) {
                t->b.len += need;
                break;
            }
            want = need + 1;
        }
    }
    if (text_room(t, 4096)) {
        t->b.len += nwb__tel_ingest_metrics_format(&srv->tel_metrics, (char *)t->b.data + t->b.len,
                                                   t->b.cap - t->b.len);
    }
    TEXT_PUT(t, "# HELP nwb_namesym_run_tokens_total #tokens in the log records of each open run "
                "(--max-open-runs), by result.\n"
                "# TYPE nwb_namesym_run_tokens_total counter\n");
    nwb__run_store_tokens_each(nwb__log_worker_store(srv->worker), run_tokens, t);
    metric(t, "nwb_uptime_seconds", "gauge", "Seconds since the server started.", uptime_s(srv));
}

static void text_free(struct text *t)
{
    if (t != NULL) {
        nwb_buf_cleanup(&t->b);
        nwb_free(t);
    }
}

static void metrics_done(struct nwb__conn *c)
{
    struct text *t = c->work.ctx;

    c->work.ctx = NULL;
    if (c->state != NWB__CONN_CLOSED) {
        nwb__conn_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8",
                          (const char *)t->b.data, t->b.len, 1, NULL);
        t->b.data = NULL; /* the answer owns it now */
        t->b.len = t->b.cap = 0;
    }
    text_free(t);
}

void nwb__metrics_handle(struct nwb__conn *c)
{
    struct nwb_server *srv = c->srv;
    struct text *t = nwb_calloc(1, sizeof(*t));

    if (t != NULL) {
        nwb_buf_init(&t->b, TEXT_MAX);
    }
    if (t == NULL || nwb_buf_reserve(&t->b, 16384) != 0) {
        text_free(t);
        nwb__conn_respond_error(c, 503, "out of memory");
        return;
    }
    loop_part(srv, t);
    c->work.ctx = t;
    if (nwb__offload(c, pool_part, metrics_done) != 0) {
        c->work.ctx = NULL;
        text_free(t);
        nwb__conn_respond_error(c, 500, "cannot queue the metrics");
    }
}

void nwb__health_handle(struct nwb__conn *c)
{
    nwb_buf_t b = NWB_BUF_INIT(256);
    nwb_json_t j;

    nwb_json_init(&j, &b, NULL);
    nwb_json_obj_begin(&j);
    nwb_json_key(&j, "status");
    nwb_json_cstr(&j, "ok");
    nwb_json_key(&j, "version");
    nwb_json_cstr(&j, NWB_VERSION_STRING);
    nwb_json_key(&j, "uptime_s");
    nwb_json_u64(&j, uptime_s(c->srv));
    nwb_json_obj_end(&j);
    nwb_json_space(&j, "\n", 1);
    if (nwb_json_finish(&j) != 0) {
        nwb_buf_cleanup(&b);
        nwb__conn_respond_error(c, 503, "out of memory");
        return;
    }
    /* The answer takes the buffer. */
    nwb__conn_respond(c, 200, "application/json", (const char *)b.data, b.len, 1, NULL);
}
