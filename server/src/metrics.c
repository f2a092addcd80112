/* SPDX-License-Identifier: MIT */
/*
 * metrics.c - the server's counters (loop thread only, so plain integers)
 * and the two status endpoints: GET /metrics (Prometheus text format 0.0.4)
 * and GET /v1/health (JSON).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/log_line.h"
#include "server_int.h"

/* The status codes the server answers with; the last slot counts any other. */
static const int status_codes[NWB__STATUS_SLOTS] = {100, 200, 400, 404, 405, 408, 411, 413,
                                                    415, 429, 431, 500, 503, 505, 0};

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

struct text {
    char *buf;
    size_t len, cap;
};

static void put(struct text *t, const char *fmt, ...) NWB_PRINTF_LIKE(2, 3);

static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (t->buf == NULL || t->len >= t->cap) {
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n > 0) {
        t->len += (size_t)n;
        if (t->len > t->cap) {
            t->len = t->cap; /* truncated; cap is sized so this does not happen */
        }
    }
}

static void metric(struct text *t, const char *name, const char *type, const char *help,
                   uint64_t value)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
        (unsigned long long)value);
}

static uint64_t uptime_s(const struct nwb_server *srv)
{
    return (nwb_time_mono_ns() - srv->start_mono_ns) / 1000000000u;
}

void nwb__metrics_handle(struct nwb__conn *c)
{
    struct nwb_server *srv = c->srv;
    const struct nwb__metrics *m = &srv->metrics;
    struct text t = {nwb_malloc(8192), 0, 8192};
    static const char *const categories[] = {"packages", "raw", "invalid"};

    if (t.buf == NULL) {
        nwb__conn_respond_error(c, 503, "out of memory");
        return;
    }
    metric(&t, "nwb_records_total", "counter", "Log records written to run logs.", m->records);
    metric(&t, "nwb_bytes_total", "counter", "Body bytes of the log batches written.", m->bytes);
    metric(&t, "nwb_batches_total", "counter", "Log batches (POST /v1/log bodies) written.",
           m->batches);
    metric(&t, "nwb_duplicate_batches_total", "counter",
           "Batches answered 200 without writing: their X-NWB-Seq was already written.",
           m->duplicates);
    put(&t, "# HELP nwb_requests_total Requests answered, by status code.\n"
            "# TYPE nwb_requests_total counter\n");
    for (size_t i = 0; i < NWB__STATUS_SLOTS; i++) {
        if (status_codes[i] != 0) {
            put(&t, "nwb_requests_total{code=\"%d\"} %llu\n", status_codes[i],
                (unsigned long long)m->requests[i]);
        } else {
            put(&t, "nwb_requests_total{code=\"other\"} %llu\n",
                (unsigned long long)m->requests[i]);
        }
    }
    metric(&t, "nwb_errors_total", "counter", "Requests answered with a status >= 400.", m->errors);
    metric(&t, "nwb_write_errors_total", "counter",
           "Batches that could not be written (answered 503).", m->write_errors);
    metric(&t, "nwb_drops_total", "counter",
           "Client-reported drops: records written with the DROPNOTE flag.", m->drops);
    metric(&t, "nwb_connections_open", "gauge", "Open client connections.", srv->conn_count);
    metric(&t, "nwb_connections_total", "counter", "Connections accepted.", m->connections_total);
    metric(&t, "nwb_connections_rejected_total", "counter",
           "Connections refused over --max-connections.", m->connections_rejected);
    metric(&t, "nwb_request_timeouts_total", "counter", "Requests answered 408.", m->timeouts);
    metric(&t, "nwb_read_pauses_total", "counter",
           "Times the log queue filled and every connection stopped reading.", m->read_pauses);
    metric(&t, "nwb_budget_waits_total", "counter",
           "Requests that waited for room under --max-buffered-bytes.", m->budget_waits);
    metric(&t, "nwb_queue_jobs", "gauge", "Log jobs queued or being written.",
           nwb__log_worker_outstanding(srv->worker));
    metric(&t, "nwb_buffered_bytes", "gauge", "Request body bytes reserved in memory.",
           srv->budget_used);
    put(&t, "# HELP nwb_crashes Crash archives stored, by category.\n"
            "# TYPE nwb_crashes gauge\n");
    for (size_t i = 0; i < NWB_ARRAY_SIZE(categories); i++) {
        put(&t, "nwb_crashes{category=\"%s\"} 0\n", categories[i]);
    }
    metric(&t, "nwb_uptime_seconds", "gauge", "Seconds since the server started.", uptime_s(srv));
    nwb__conn_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", t.buf, t.len, 1, NULL);
}

void nwb__health_handle(struct nwb__conn *c)
{
    char body[128];
    int n =
        snprintf(body, sizeof(body), "{\"status\":\"ok\",\"version\":\"%s\",\"uptime_s\":%llu}\n",
                 NWB_VERSION_STRING, (unsigned long long)uptime_s(c->srv));

    nwb__conn_respond(c, 200, "application/json", body, (size_t)n, 0, NULL);
}
