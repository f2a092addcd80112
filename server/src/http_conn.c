/* SPDX-License-Identifier: MIT */
/*
 * http_conn.c - one client connection: reads into the shared read buffer (or
 * straight into the body buffer once a Content-Length body is under way; after
 * a big body the next head is read short so the body is not copied),
 * drives the request parser, enforces the per-connection bounds and timers,
 * routes complete requests and writes their answers. One request at a time:
 * bytes of a pipelined next request wait in a bounded stash. A connection
 * whose job is with the log worker (or whose work is on the thread pool)
 * stays allocated until it returns. Each route has its own body limit. A GET /v1/events
 * answer turns the connection into a stream (events.c writes it) that lasts until a side
 * closes; the connection then only reads to see the client go, discarding what it sends.
 * A route may stream a body to a file instead (nwb__conn_spill_begin, POST /v1/symbols): the
 * body buffer is then a bounded window, written out on the thread pool whenever it is nearly
 * full while the connection stops reading.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "nwb/alloc.h"
#include "read_int.h"
#include "events_int.h"
#include "server_int.h"

static char ok_head[] =
    "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n" NWB__HTTP_SECURITY_HEADERS "\r\n";
static char ok_head_close[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n" NWB__HTTP_SECURITY_HEADERS
                              "Connection: close\r\n\r\n";
static char continue_head[] = "HTTP/1.1 100 Continue\r\n\r\n";

static void conn_drive(struct nwb__conn *c);

static int parse_state(int state)
{
    return state == NWB__CONN_IDLE || state == NWB__CONN_HEAD || state == NWB__CONN_BODY;
}

/* A body buffer of at least @p cap bytes (its size in *got): pooled sizes come from the pool. */
static uint8_t *body_buf_get(struct nwb_server *srv, size_t cap, size_t *got)
{
    if (cap > NWB__BODY_POOL_CAP / 2 && cap <= NWB__BODY_POOL_CAP) {
        *got = NWB__BODY_POOL_CAP;
        if (srv->body_pool_n > 0) {
            return srv->body_pool[--srv->body_pool_n];
        }
        return nwb_malloc(NWB__BODY_POOL_CAP);
    }
    *got = cap;
    return nwb_malloc(cap);
}

/* Give back a body buffer of @p cap bytes: kept when it is a pooled size and there is room. */
static void body_buf_put(struct nwb_server *srv, uint8_t *b, size_t cap)
{
    if (b != NULL && cap == NWB__BODY_POOL_CAP && srv->body_pool_n < NWB__BODY_POOL_MAX) {
        srv->body_pool[srv->body_pool_n++] = b;
        return;
    }
    nwb_free(b);
}

static void conn_free(struct nwb__conn *c)
{
    struct nwb_server *srv = c->srv;

    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        srv->conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    srv->conn_count--;
    body_buf_put(srv, c->body, c->body_cap);
    if (srv->conn_count == 0) {
        /* No connection left to reuse them. */
        while (srv->body_pool_n > 0) {
            nwb_free(srv->body_pool[--srv->body_pool_n]);
        }
    }
    nwb_free(c->pend);
    nwb_free(c->resp_body);
    nwb__read_release(c);
    nwb__events_stream_free(c->stream); /* its writes' callbacks ran before the close's */
    nwb_free(c);
    nwb__server_maybe_finish(srv);
}

static void on_handle_closed(uv_handle_t *h)
{
    struct nwb__conn *c = h->data;

    if (--c->handles_open == 0 && !c->job_out) {
        conn_free(c);
    }
}

/* Free the body and give its budget back (never while the worker reads it). */
static void body_release(struct nwb__conn *c)
{
    if (c->job_out) {
        return;
    }
    body_buf_put(c->srv, c->body, c->body_cap);
    c->body = NULL;
    c->body_len = c->body_cap = 0;
    if (c->spill != NULL) {
        struct nwb__spill *sp = c->spill;

        c->spill = NULL; /* the handler never took it: the request did not complete */
        sp->abandon(sp);
    }
    if (c->reserved > 0 || c->wait_list != 0) {
        nwb__flow_release(c->srv, c);
    }
}

static void conn_close(struct nwb__conn *c)
{
    if (c->state == NWB__CONN_CLOSED) {
        return;
    }
    c->state = NWB__CONN_CLOSED;
    nwb__events_stream_detach(c->stream);
    nwb__flow_forget(c->srv, c);
    body_release(c);
    c->reading = 0;
    uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

static void on_timer(uv_timer_t *t);

static void timer_arm(struct nwb__conn *c, unsigned ms)
{
    uv_timer_start(&c->timer, on_timer, ms, 0);
}

static int wants_read(const struct nwb__conn *c)
{
    const struct nwb_server *srv = c->srv;

    if (c->state == NWB__CONN_CLOSED) {
        return 0;
    }
    if (c->state == NWB__CONN_LINGER || c->state == NWB__CONN_STREAMING) {
        return 1; /* only to see the peer's FIN (what it sends is discarded) */
    }
    if (c->peer_eof || srv->reading_paused || srv->stopping) {
        return 0;
    }
    if (parse_state(c->state)) {
        return c->pend_len == 0;
    }
    if (c->spill != NULL) {
        return 0; /* a streamed body's window is being written out: backpressure */
    }
    /* Busy with a request: take what the client pipelines, up to the stash cap (nothing
     * when the connection closes after this answer anyway). */
    return !c->close_after && c->pend_len < NWB__READ_BUF_SIZE;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

void nwb__conn_update_reading(struct nwb__conn *c)
{
    const int want = wants_read(c);

    if (want && !c->reading) {
        if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0) {
            c->reading = 1;
        } else {
            conn_close(c);
        }
    } else if (!want && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = 0;
    }
}

/* Wait for the peer's FIN after a closing answer, so it is not lost to an RST. */
static void on_shutdown(uv_shutdown_t *req, int status)
{
    struct nwb__conn *c = req->data;

    if (status < 0 && c->state == NWB__CONN_LINGER) {
        conn_close(c);
    }
}

static void conn_linger(struct nwb__conn *c)
{
    c->state = NWB__CONN_LINGER;
    c->shutdown_req.data = c;
    if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
        conn_close(c);
        return;
    }
    timer_arm(c, NWB__LINGER_MS);
    nwb__conn_update_reading(c);
}

static void after_response(struct nwb__conn *c)
{
    nwb_free(c->resp_body);
    c->resp_body = NULL;
    nwb__read_release(c);
    body_release(c);
    if (c->close_after) {
        conn_linger(c);
        return;
    }
    c->state = NWB__CONN_IDLE;
    timer_arm(c, c->srv->idle_timeout_ms);
    if (!c->in_process) {
        conn_drive(c);
        if (c->peer_eof && parse_state(c->state)) {
            /* The peer sent all it will: what is left is an incomplete request (dropped: it
             * was never acknowledged), and every complete one was answered. */
            conn_close(c);
            return;
        }
        nwb__conn_update_reading(c);
    }
}

static void on_write(uv_write_t *req, int status)
{
    struct nwb__conn *c = req->data;

    if (c->state == NWB__CONN_CLOSED) {
        return;
    }
    if (status < 0) {
        conn_close(c);
        return;
    }
    after_response(c);
}

void nwb__conn_respond(struct nwb__conn *c, int status, const char *ctype, const char *body,
                       size_t body_len, int take_body, const char *extra)
{
    struct nwb_server *srv = c->srv;
    uv_buf_t bufs[2];
    unsigned nbufs = 1;
    size_t total;
    int n;

    if (c->state == NWB__CONN_CLOSED) {
        if (take_body) {
            nwb_free((void *)(uintptr_t)body);
        }
        return;
    }
    if (srv->stopping || !c->req.keep_alive) {
        c->close_after = 1;
    }
    nwb__metrics_count_status(&srv->metrics, status);
    if (status == 200 && ctype == NULL && body_len == 0 && extra == NULL) {
        bufs[0] = c->close_after ? uv_buf_init(ok_head_close, sizeof(ok_head_close) - 1)
                                 : uv_buf_init(ok_head, sizeof(ok_head) - 1);
    } else {
        size_t hlen = nwb__http_head_format(c->head, sizeof(c->head), status, ctype, body_len,
                                            extra, c->close_after);

        bufs[0] = uv_buf_init(c->head, (unsigned)hlen);
    }
    if (body_len > 0 && c->req.method == HTTP_HEAD) {
        /* A response to HEAD has no body (its Content-Length still says what GET would get). */
        if (take_body) {
            nwb_free((void *)(uintptr_t)body);
        }
    } else if (body_len > 0) {
        if (take_body) {
            c->resp_body = (char *)(uintptr_t)body;
        } else {
            c->resp_body = nwb_malloc(body_len);
            if (c->resp_body == NULL) {
                conn_close(c);
                return;
            }
            memcpy(c->resp_body, body, body_len);
        }
        bufs[1] = uv_buf_init(c->resp_body, (unsigned)body_len);
        nbufs = 2;
    } else if (take_body) {
        nwb_free((void *)(uintptr_t)body);
    }
    total = bufs[0].len + (nbufs > 1 ? bufs[1].len : 0);
    n = uv_try_write((uv_stream_t *)&c->tcp, bufs, nbufs);
    if (n >= 0 && (size_t)n == total) {
        after_response(c);
        return;
    }
    if (n < 0 && n != UV_EAGAIN) {
        conn_close(c);
        return;
    }
    if (n > 0) {
        size_t done = (size_t)n;

        if (done >= bufs[0].len) {
            done -= bufs[0].len;
            bufs[0] = bufs[1];
            nbufs = 1;
        }
        bufs[0].base += done;
        bufs[0].len -= done;
    }
    c->state = NWB__CONN_WRITING;
    timer_arm(c, srv->request_timeout_ms); /* a peer that never reads is dropped */
    c->wreq.data = c;
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, bufs, nbufs, on_write) != 0) {
        conn_close(c);
    }
}

void nwb__conn_respond_error(struct nwb__conn *c, int status, const char *reason)
{
    char body[256];
    char extra[64];
    size_t n = strlen(reason);

    if (n > sizeof(body) - 2) {
        n = sizeof(body) - 2;
    }
    memcpy(body, reason, n);
    body[n++] = '\n';
    extra[0] = '\0';
    if (status == 405 && c->route != NULL) {
        snprintf(extra, sizeof(extra), "Allow: %s\r\n", c->route->allow);
    } else if (status == 503) {
        snprintf(extra, sizeof(extra), "Retry-After: 1\r\n");
    }
    nwb__conn_respond(c, status, "text/plain; charset=utf-8", body, n, 0,
                      extra[0] != '\0' ? extra : NULL);
}

/* Answer now and close: the request cannot go on (bounds, framing). */
static void conn_fail(struct nwb__conn *c, int status, const char *reason)
{
    uv_timer_stop(&c->timer);
    c->state = NWB__CONN_HANDLING;
    c->close_after = 1;
    nwb__conn_respond_error(c, status, reason);
}

static void on_timer(uv_timer_t *t)
{
    struct nwb__conn *c = t->data;

    switch (c->state) {
    case NWB__CONN_IDLE:
    case NWB__CONN_LINGER:
    case NWB__CONN_WRITING:
        conn_close(c);
        break;
    case NWB__CONN_HEAD:
    case NWB__CONN_BODY:
        c->srv->metrics.timeouts++;
        conn_fail(c, 408, "request not complete within --request-timeout-ms");
        break;
    default:
        break;
    }
}

static void send_continue(struct nwb__conn *c)
{
    uv_buf_t b = uv_buf_init(continue_head, sizeof(continue_head) - 1);
    int n;

    if (!c->req.has_expect || c->req.expect_len != 12 ||
        strncasecmp(c->req.expect, "100-continue", 12) != 0) {
        return;
    }
    nwb__metrics_count_status(&c->srv->metrics, 100);
    n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (n == (int)b.len) {
        return;
    }
    if (n > 0) {
        b.base += n;
        b.len -= (size_t)n;
    }
    c->continue_req.data = c;
    if (uv_write(&c->continue_req, (uv_stream_t *)&c->tcp, &b, 1, NULL) != 0) {
        conn_close(c);
    }
}

/* Allocate the body buffer once the budget is granted; 0 or an HTTP status. */
static int body_alloc(struct nwb__conn *c)
{
    const struct nwb__http_req *r = &c->req;
    size_t cap = r->chunked ? 64u * 1024u : (size_t)r->content_length;

    if (cap > c->body_max) {
        cap = c->body_max;
    }
    if (c->spill != NULL && cap > NWB__SPILL_BUF) {
        cap = NWB__SPILL_BUF; /* a window: the rest goes to the file */
    }
    c->body_len = 0;
    c->body_cap = 0;
    if (cap == 0) {
        return 0;
    }
    c->body = body_buf_get(c->srv, cap, &c->body_cap);
    if (c->body == NULL) {
        c->body_cap = 0;
        return 503;
    }
    return 0;
}

/* The body sink of the request parser. */
static int conn_body(void *ctx, const char *at, size_t len)
{
    struct nwb__conn *c = ctx;
    const size_t max = c->body_max;

    if (c->discard_body) {
        /* Skipped (the answer is already decided); bounded like a kept body. */
        if (len > max - c->body_len) {
            return 413;
        }
        c->body_len += len;
        return 0;
    }
    if (c->spill != NULL) {
        /* The window never overflows: it is written out while NWB__READ_BUF_SIZE bytes (the
         * most one feed brings) are still free, and in-place reads stop at its end. */
        if (len > max - c->body_len || c->spill->written > max - c->body_len - len) {
            return 413;
        }
        if (len > c->body_cap - c->body_len) {
            return 500;
        }
        if (at != (const char *)c->body + c->body_len) {
            memcpy(c->body + c->body_len, at, len);
        }
        c->body_len += len;
        return 0;
    }
    if (len > max - c->body_len) {
        return 413;
    }
    if (c->body_len + len > c->body_cap) {
        size_t cap = c->body_cap * 2 > c->body_len + len ? c->body_cap * 2 : c->body_len + len;
        uint8_t *nb;

        if (cap > max) {
            cap = max;
        }
        nb = nwb_realloc(c->body, cap);
        if (nb == NULL) {
            return 503;
        }
        c->body = nb;
        c->body_cap = cap;
    }
    if (at != (const char *)c->body + c->body_len) {
        memcpy(c->body + c->body_len, at, len);
    }
    c->body_len += len;
    return 0;
}

static const char *too_big_reason(const struct nwb__conn *c)
{
    if (c->route != NULL && c->route->too_big != NULL) {
        return c->route->too_big;
    }
    return "request body exceeds --max-body-bytes";
}

static void early(struct nwb__conn *c, int status, const char *reason)
{
    c->early_status = status;
    c->early_reason = reason;
}

static void conn_on_head(struct nwb__conn *c)
{
    struct nwb_server *srv = c->srv;
    const struct nwb__http_req *r = &c->req;
    int status;

    c->route = r->url_long ? NULL : nwb__router_match(r->url, r->url_len);
    c->body_max = c->route != NULL && c->route->body_limit != NULL ? c->route->body_limit(srv)
                                                                   : srv->max_body_bytes;
    c->early_status = 0;
    c->discard_body = 0;
    c->body_len = 0;
    if (r->upgrade) {
        c->close_after = 1;
    }
    c->state = NWB__CONN_BODY;
    if (nwb__auth_reject(c)) { /* auth.c: 401 and close, before routing and any body byte */
        return;
    }
    if (c->route == NULL) {
        early(c, 404, "no such endpoint");
    } else if ((c->route->methods & nwb__router_method_bit(r->method)) == 0) {
        early(c, 405, "method not allowed for this endpoint");
    } else if (r->method == HTTP_POST && !r->has_length && !r->chunked) {
        conn_fail(c, 411, "POST needs Content-Length (or chunked Transfer-Encoding)");
        return;
    } else if (r->has_length && r->content_length > c->body_max) {
        conn_fail(c, 413, too_big_reason(c));
        return;
    } else if (c->route->on_head != NULL && (status = c->route->on_head(c)) != 0) {
        early(c, status, c->early_reason);
    }
    if (c->early_status != 0 || !c->route->wants_body) {
        if (c->early_status != 0 && r->has_expect && (r->chunked || r->content_length > 0)) {
            /* The client waits for 100 Continue: answer now instead of reading the body. */
            conn_fail(c, c->early_status, c->early_reason);
            return;
        }
        c->discard_body = 1;
        return;
    }
    if (r->chunked || r->content_length > 0) {
        size_t want = r->chunked ? c->body_max : (size_t)r->content_length;

        if (c->spill != NULL && want > NWB__SPILL_BUF) {
            want = NWB__SPILL_BUF;
        }

        if (!nwb__flow_reserve(srv, c, want)) {
            /* Server-side wait: the client's request timer does not run meanwhile. */
            c->state = NWB__CONN_WAIT_BUDGET;
            uv_timer_stop(&c->timer);
            return;
        }
    }
    status = body_alloc(c);
    if (status != 0) {
        conn_fail(c, status, "out of memory");
        return;
    }
    send_continue(c);
}

void nwb__conn_stream_begin(struct nwb__conn *c, struct nwb__event_stream *stream)
{
    nwb__metrics_count_status(&c->srv->metrics, 200);
    uv_timer_stop(&c->timer); /* neither idle nor slow: the stream's own cap bounds a reader */
    c->stream = stream;
    c->state = NWB__CONN_STREAMING;
    c->close_after = 1;
    nwb__conn_update_reading(c);
}

void nwb__conn_stream_close(struct nwb__conn *c)
{
    conn_close(c);
}

void nwb__conn_budget_granted(struct nwb__conn *c)
{
    int status;

    c->state = NWB__CONN_BODY;
    status = body_alloc(c);
    if (status != 0) {
        conn_fail(c, status, "out of memory");
        return;
    }
    timer_arm(c, c->srv->request_timeout_ms);
    send_continue(c);
    conn_drive(c);
    nwb__conn_update_reading(c);
}

static void conn_on_done(struct nwb__conn *c)
{
    uv_timer_stop(&c->timer);
    c->state = NWB__CONN_HANDLING;
    c->last_body_len = c->body_len;
    if (c->early_status != 0) {
        nwb__conn_respond_error(c, c->early_status, c->early_reason);
        return;
    }
    c->route->handle(c);
}

/* Keep bytes that arrived while the connection cannot parse (they fit: see wants_read). */
static void stash(struct nwb__conn *c, const char *data, size_t len)
{
    if (len == 0) {
        return;
    }
    if (c->pend == NULL) {
        c->pend = nwb_malloc(NWB__READ_BUF_SIZE);
        if (c->pend == NULL) {
            conn_close(c);
            return;
        }
        c->pend_off = c->pend_len = 0;
    }
    if (c->pend_off > 0) {
        memmove(c->pend, c->pend + c->pend_off, c->pend_len);
        c->pend_off = 0;
    }
    if (len > NWB__READ_BUF_SIZE - c->pend_len) {
        len = NWB__READ_BUF_SIZE - c->pend_len; /* cannot happen: reads are sized to fit */
    }
    memcpy(c->pend + c->pend_len, data, len);
    c->pend_len += len;
}

void nwb__conn_spill_begin(struct nwb__conn *c, struct nwb__spill *sp)
{
    c->spill = sp;
}

struct nwb__spill *nwb__conn_spill_take(struct nwb__conn *c)
{
    struct nwb__spill *sp = c->spill;

    c->spill = NULL;
    return sp;
}

static void spill_flush_run(struct nwb__conn *c)
{
    struct nwb__spill *sp = c->spill;

    sp->err = nwb__spill_write(sp, c->body, c->body_len);
}

static void spill_flush_done(struct nwb__conn *c)
{
    struct nwb__spill *sp = c->spill;
    char reason[160], ebuf[48];

    if (c->state == NWB__CONN_CLOSED) {
        return; /* nwb__conn_work_finished() releases it: body_release() abandons the spill */
    }
    if (sp->err != 0) {
        snprintf(reason, sizeof(reason), "cannot write the upload: %s",
                 nwb__err_label(sp->err, ebuf, sizeof(ebuf)));
        conn_fail(c, 500, reason);
        return;
    }
    c->body_len = 0;
    c->state = NWB__CONN_BODY;
    if (c->srv->stopping || c->peer_eof) {
        conn_close(c); /* never acknowledged: the client sends it again */
        return;
    }
    if (!uv_is_active((uv_handle_t *)&c->timer)) {
        c->srv->metrics.timeouts++; /* the request timer ran out while the window was written */
        conn_fail(c, 408, "request not complete within --request-timeout-ms");
        return;
    }
    conn_drive(c);
    nwb__conn_update_reading(c);
}

/* The streamed body's window is nearly full: write it to the file, reading stopped. */
static void spill_flush(struct nwb__conn *c)
{
    if (nwb__offload(c, spill_flush_run, spill_flush_done) != 0) {
        conn_fail(c, 500, "cannot queue the upload's write");
    }
}

/*
 * Parse @p data until it is used up or the connection stops parsing (a
 * request went to its handler, waits, or failed). Returns the bytes taken;
 * from a read buffer (@p from_pend 0) the rest is stashed.
 */
static size_t conn_process(struct nwb__conn *c, const char *data, size_t len, int from_pend)
{
    size_t off = 0;

    c->in_process = 1;
    for (;;) {
        size_t used;
        int ev;

        if (c->state == NWB__CONN_CLOSED || c->state == NWB__CONN_LINGER ||
            c->state == NWB__CONN_STREAMING) {
            off = len; /* discarded */
            break;
        }
        if (!parse_state(c->state)) {
            if (!from_pend) {
                stash(c, data + off, len - off);
                off = len;
            }
            break;
        }
        if (c->state == NWB__CONN_IDLE) {
            if (off == len) {
                break;
            }
            c->state = NWB__CONN_HEAD;
            timer_arm(c, c->srv->request_timeout_ms);
        }
        ev = nwb__http_req_feed(&c->req, data + off, len - off, &used);
        off += used;
        if (ev == NWB__HTTP_MORE) {
            if (c->spill != NULL && c->state == NWB__CONN_BODY && !c->discard_body &&
                c->body_cap - c->body_len < NWB__READ_BUF_SIZE) {
                spill_flush(c);
            }
            break;
        }
        if (ev == NWB__HTTP_ERROR) {
            conn_fail(c, c->req.status,
                      c->req.status == 413 && c->state == NWB__CONN_BODY ? too_big_reason(c)
                                                                         : c->req.reason);
            off = len;
            break;
        }
        if (ev == NWB__HTTP_HEAD) {
            conn_on_head(c);
        } else {
            conn_on_done(c);
        }
    }
    c->in_process = 0;
    return off;
}

/* Parse stashed bytes while the connection can. */
static void conn_drive(struct nwb__conn *c)
{
    if (c->in_process) {
        return;
    }
    while (c->pend_len > 0 && parse_state(c->state)) {
        const size_t n = conn_process(c, c->pend + c->pend_off, c->pend_len, 1);

        if (c->state == NWB__CONN_CLOSED) {
            return;
        }
        c->pend_off += n;
        c->pend_len -= n;
        if (n == 0) {
            break;
        }
    }
    if (c->pend_len == 0 && c->pend != NULL) {
        nwb_free(c->pend);
        c->pend = NULL;
        c->pend_off = 0;
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct nwb__conn *c = h->data;

    (void)suggested;
    if (c->state == NWB__CONN_LINGER || c->state == NWB__CONN_STREAMING ||
        (parse_state(c->state) && c->pend_len == 0)) {
        /* The body's own bytes only: a pooled buffer is larger, and what follows the body
         * belongs to the next request. */
        const uint64_t left = c->req.content_length - (c->spill != NULL ? c->spill->written : 0);
        const size_t want = c->body_cap < left ? c->body_cap : (size_t)left;

        if (c->state == NWB__CONN_BODY && c->body != NULL && !c->req.chunked && !c->discard_body &&
            c->body_len < want) {
            /* Content-Length body under way: read it in place, no copy. */
            *buf = uv_buf_init((char *)c->body + c->body_len, (unsigned)(want - c->body_len));
            return;
        }
        /* A connection that sends big bodies gets a short first read: the head and the
         * start of the body, the rest then goes straight into the body buffer. */
        *buf = uv_buf_init(c->srv->read_buf,
                           c->state == NWB__CONN_IDLE && c->last_body_len >= NWB__BIG_BODY
                               ? NWB__HEAD_READ_SIZE
                               : NWB__READ_BUF_SIZE);
        return;
    }
    if (c->pend == NULL) {
        c->pend = nwb_malloc(NWB__READ_BUF_SIZE);
        c->pend_off = c->pend_len = 0;
        if (c->pend == NULL) {
            *buf = uv_buf_init(NULL, 0);
            return;
        }
    }
    if (c->pend_off > 0) {
        memmove(c->pend, c->pend + c->pend_off, c->pend_len);
        c->pend_off = 0;
    }
    *buf = uv_buf_init(c->pend + c->pend_len, (unsigned)(NWB__READ_BUF_SIZE - c->pend_len));
}

static void conn_on_eof(struct nwb__conn *c)
{
    switch (c->state) {
    case NWB__CONN_HANDLING:
    case NWB__CONN_WAIT_QUEUE:
    case NWB__CONN_IN_WORKER:
    case NWB__CONN_WRITING:
        /* The peer half-closed after its request: still answer it and every complete
         * request pipelined behind it (stashed), then close. */
        c->peer_eof = 1;
        nwb__conn_update_reading(c);
        break;
    default:
        /* An incomplete request is dropped: it was never acknowledged. */
        conn_close(c);
        break;
    }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct nwb__conn *c = s->data;

    if (nread == 0 || c->state == NWB__CONN_CLOSED) {
        return;
    }
    if (nread < 0) {
        conn_on_eof(c);
        return;
    }
    if (c->state == NWB__CONN_LINGER || c->state == NWB__CONN_STREAMING) {
        return; /* discarded */
    }
    if (c->pend != NULL && buf->base == c->pend + c->pend_len) {
        c->pend_len += (size_t)nread;
        conn_drive(c);
    } else {
        conn_process(c, buf->base, (size_t)nread, 0);
    }
    nwb__conn_update_reading(c);
}

struct reject {
    uv_tcp_t tcp;
};

static void on_reject_closed(uv_handle_t *h)
{
    nwb_free(h->data);
}

/* Over the connection cap: a best-effort 503, then close. */
static void conn_reject(struct nwb_server *srv)
{
    static char busy[] =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n" NWB__HTTP_SECURITY_HEADERS
        "Retry-After: 1\r\nConnection: close\r\n\r\n";
    struct reject *rj = nwb_malloc(sizeof(*rj));
    uv_buf_t b = uv_buf_init(busy, sizeof(busy) - 1);

    if (rj == NULL || uv_tcp_init(srv->loop, &rj->tcp) != 0) {
        nwb_free(rj);
        return;
    }
    rj->tcp.data = rj;
    if (uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)&rj->tcp) == 0) {
        (void)uv_try_write((uv_stream_t *)&rj->tcp, &b, 1);
        srv->metrics.connections_rejected++;
    }
    uv_close((uv_handle_t *)&rj->tcp, on_reject_closed);
}

void nwb__conn_accept(struct nwb_server *srv)
{
    struct nwb__conn *c;

    if (srv->conn_count >= srv->max_connections || srv->stopping) {
        conn_reject(srv);
        return;
    }
    c = nwb_calloc(1, sizeof(*c));
    if (c == NULL) {
        conn_reject(srv);
        return;
    }
    c->srv = srv;
    if (uv_tcp_init(srv->loop, &c->tcp) != 0) {
        nwb_free(c);
        return;
    }
    c->tcp.data = c;
    c->handles_open = 1;
    if (uv_timer_init(srv->loop, &c->timer) != 0) {
        c->state = NWB__CONN_CLOSED;
        uv_close((uv_handle_t *)&c->tcp, on_reject_closed);
        return;
    }
    c->timer.data = c;
    c->handles_open = 2;
    c->next = srv->conns;
    if (srv->conns != NULL) {
        srv->conns->prev = c;
    }
    srv->conns = c;
    srv->conn_count++;
    nwb__http_req_init(&c->req, &srv->http_limits, conn_body, c);
    c->state = NWB__CONN_IDLE;
    if (uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    srv->metrics.connections_total++;
    uv_tcp_nodelay(&c->tcp, 1);
    timer_arm(c, srv->idle_timeout_ms);
    nwb__conn_update_reading(c);
}

/* A closed connection's job or work came back: free what it still holds. */
static void conn_release_closed(struct nwb__conn *c)
{
    body_release(c);
    if (c->handles_open == 0) {
        conn_free(c);
    }
}

void nwb__conn_job_finished(struct nwb__conn *c)
{
    c->job_out = 0;
    if (c->state == NWB__CONN_CLOSED) {
        conn_release_closed(c);
        return;
    }
    c->route->job_done(c);
}

void nwb__conn_work_finished(struct nwb__conn *c, nwb__work_done_fn done)
{
    c->job_out = 0;
    done(c);
    if (c->state == NWB__CONN_CLOSED && !c->job_out) {
        conn_release_closed(c);
    }
}

void nwb__conn_shutdown(struct nwb__conn *c)
{
    switch (c->state) {
    case NWB__CONN_HANDLING:
    case NWB__CONN_WAIT_QUEUE:
    case NWB__CONN_IN_WORKER:
    case NWB__CONN_WRITING:
        /* Its body is complete: answer it, then close. */
        c->close_after = 1;
        nwb__conn_update_reading(c);
        break;
    default:
        conn_close(c);
        break;
    }
}
