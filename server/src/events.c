/* SPDX-License-Identifier: MIT */
/*
 * events.c - GET /v1/events (Server-Sent Events) and the event bus behind it: events from the
 * ingest points (runs, log growth, telemetry reports, crash archives), coalesced per run by one
 * loop timer, numbered and kept in a bounded backlog; each stream is written from the backlog
 * at its reader's pace (resumed streams replayed from Last-Event-ID), cut off when its unsent
 * bytes pass --events-max-unsent-bytes, and kept open through proxies by one shared keep-alive
 * timer. docs/protocol.md ("GET /v1/events") is the contract.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>

#include "nwb/alloc.h"
#include "nwb/json.h"
#include "nwb/log_line.h"

#include "events_int.h"
#include "read_int.h"

/* The pending-change bits of a run. */
enum { DIRTY_LOG = 1u, DIRTY_TEL = 2u };

#define RUN_BUCKETS (2u * NWB__EVENTS_RUNS_MAX)

/* One run the bus has seen active in this lifetime: what its coalesced events carry. */
struct ev_run {
    struct ev_run *hash_next;
    struct ev_run *lru_prev, *lru_next; /* most recently active first */
    struct ev_run *dirty_next;          /* ev->dirty: a log or telemetry event is pending */
    uint32_t hash;
    unsigned dirty; /* DIRTY_* */
    int tel_seen;   /* a telemetry report was announced (run event "telemetry") */
    uint64_t log_size;
    uint64_t tel_uploads;
    char dir[NWB__RUN_DIR_MAX + 1];
};

/* One event of the backlog: its whole text ("id: N\nevent: T\ndata: {...}\n\n"). */
struct ev_entry {
    char *text; /* owned */
    uint32_t len;
    uint64_t end; /* bytes of every event published, through this one */
};

/* A crash change on its way from another thread. */
struct crash_note {
    char id[NWB_SAFE_NAME_MAX + 1];
    char status[16];
    char program[NWB_SAFE_NAME_MAX + 1];
    char run[NWB_SAFE_NAME_MAX + 1];
};

struct nwb__event_stream {
    struct nwb__event_stream *prev, *next; /* ev->streams */
    struct nwb__events *bus;
    struct nwb__conn *c;
    int attached;  /* in ev->streams; 0 once its connection closes */
    int writing;   /* wreq in flight with wbuf */
    uint64_t pos;  /* the last event handed to the socket (or its first position) */
    char pre[640]; /* stream-specific bytes before the next event: head, position, reset */
    size_t pre_len;
    char *wbuf; /* what the socket did not take at once */
    size_t wlen;
    uv_write_t wreq;
};

struct nwb__events {
    struct nwb_server *srv;
    uv_timer_t coalesce;  /* running while a run has a pending event */
    uv_timer_t keepalive; /* running while a stream is open */
    uv_async_t crash_async;
    int handles_open;
    void (*closed)(void *ctx);
    void *closed_ctx;
    /* ids and the backlog ring (allocated with the first event) */
    uint64_t next_id;
    struct ev_entry *ring;
    unsigned ring_head, ring_len;
    size_t ring_bytes;
    uint64_t bytes_total;      /* every event's bytes since start */
    uint64_t ring_start_bytes; /* bytes_total before the oldest entry */
    /* runs (the table allocated with the first run) */
    struct ev_run **buckets;
    unsigned nruns;
    struct ev_run *lru_head, *lru_tail;
    struct ev_run *dirty;
    /* streams */
    struct nwb__event_stream *streams;
    unsigned nstreams;
    /* crash notes from other threads */
    pthread_mutex_t crash_lock;
    struct crash_note crash_notes[NWB__EVENTS_CRASH_NOTES];
    unsigned crash_len;
    unsigned crash_lost; /* notes dropped since the loop last took them: publish a reset */
    /* counters for GET /metrics */
    uint64_t published;
    uint64_t failed; /* events that could not be built (out of memory) */
    uint64_t streams_total;
    uint64_t streams_rejected;
    uint64_t streams_cut;
    uint64_t resets;
    uint64_t crash_dropped; /* loop thread (added from crash_lost) */
};

static void stream_flush(struct nwb__event_stream *s);

/* ---- the backlog ---- */

static uint64_t oldest_id(const struct nwb__events *ev)
{
    return ev->next_id - ev->ring_len;
}

static const struct ev_entry *entry_of(const struct nwb__events *ev, uint64_t id)
{
    return &ev->ring[(ev->ring_head + (id - oldest_id(ev))) % NWB__EVENTS_BACKLOG_MAX];
}

/* Bytes of every event published through @p id (an id from oldest - 1 to the newest). */
static uint64_t bytes_through(const struct nwb__events *ev, uint64_t id)
{
    if (ev->ring_len == 0 || id < oldest_id(ev)) {
        return ev->ring_start_bytes;
    }
    return entry_of(ev, id)->end;
}

static void backlog_pop(struct nwb__events *ev)
{
    struct ev_entry *e = &ev->ring[ev->ring_head];

    ev->ring_start_bytes = e->end;
    ev->ring_bytes -= e->len;
    nwb_free(e->text);
    e->text = NULL;
    ev->ring_head = (ev->ring_head + 1) % NWB__EVENTS_BACKLOG_MAX;
    ev->ring_len--;
}

/* Take @p text (@p len bytes, nwb_malloc'd, numbered ev->next_id) into the backlog. */
static void backlog_push(struct nwb__events *ev, char *text, size_t len)
{
    struct ev_entry *e;

    if (ev->ring == NULL) {
        ev->ring = nwb_calloc(NWB__EVENTS_BACKLOG_MAX, sizeof(*ev->ring));
        if (ev->ring == NULL) {
            nwb_free(text);
            ev->failed++;
            return;
        }
    }
    while (ev->ring_len > 0 && (ev->ring_len == NWB__EVENTS_BACKLOG_MAX ||
                                ev->ring_bytes + len > NWB__EVENTS_BACKLOG_BYTES)) {
        backlog_pop(ev);
    }
    e = &ev->ring[(ev->ring_head + ev->ring_len) % NWB__EVENTS_BACKLOG_MAX];
    e->text = text;
    e->len = (uint32_t)len;
    ev->bytes_total += len;
    e->end = ev->bytes_total;
    ev->ring_bytes += len;
    ev->ring_len++;
    ev->next_id++;
    ev->published++;
}

/* ---- building one event: "id: N\nevent: TYPE\ndata: {...}\n\n", the data by nwb/json.h ---- */

struct ev_text {
    nwb_buf_t b;
    nwb_json_t j;
    int err;
};

/* Start event @p type with the next id; the caller adds the data object's members. */
static void text_begin(struct ev_text *t, const struct nwb__events *ev, const char *type)
{
    nwb_buf_init(&t->b, NWB__EVENTS_TEXT_MAX);
    t->err = nwb_buf_appendf(&t->b, "id: %llu\nevent: %s\ndata: ", (unsigned long long)ev->next_id,
                             type);
    nwb_json_init(&t->j, &t->b, NULL);
    nwb_json_obj_begin(&t->j);
}

/* Close the data object and publish the event (or count it as failed). */
static void text_publish(struct nwb__events *ev, struct ev_text *t)
{
    nwb_json_obj_end(&t->j);
    if (nwb_json_finish(&t->j) != 0 || t->err != 0 || nwb_buf_append(&t->b, "\n\n", 2) != 0) {
        nwb_buf_cleanup(&t->b);
        ev->failed++;
        return;
    }
    backlog_push(ev, (char *)t->b.data, t->b.len);
}

static void key_str(struct ev_text *t, const char *key, const char *value)
{
    nwb_json_key(&t->j, key);
    nwb_json_cstr(&t->j, value);
}

static void key_u64(struct ev_text *t, const char *key, uint64_t value)
{
    nwb_json_key(&t->j, key);
    nwb_json_u64(&t->j, value);
}

static void publish_run(struct nwb__events *ev, const char *dir, const char *program,
                        const char *run, const char *change)
{
    struct ev_text t;

    text_begin(&t, ev, "run");
    key_str(&t, "id", dir);
    key_str(&t, "program", program);
    key_str(&t, "run", run);
    key_str(&t, "change", change);
    text_publish(ev, &t);
}

/* The coalesced events of @p r: its log's size, its telemetry report. */
static void publish_pending(struct nwb__events *ev, struct ev_run *r)
{
    struct ev_text t;

    if (r->dirty & DIRTY_LOG) {
        text_begin(&t, ev, "log");
        key_str(&t, "id", r->dir);
        key_u64(&t, "size", r->log_size);
        text_publish(ev, &t);
    }
    if (r->dirty & DIRTY_TEL) {
        text_begin(&t, ev, "telemetry");
        key_str(&t, "id", r->dir);
        key_u64(&t, "uploads", r->tel_uploads);
        text_publish(ev, &t);
    }
    r->dirty = 0;
}

/* An event for every stream: events were lost, so clients re-read the state. */
static void publish_reset(struct nwb__events *ev, const char *reason)
{
    struct ev_text t;

    text_begin(&t, ev, "reset");
    key_str(&t, "reason", reason);
    text_publish(ev, &t);
    ev->resets++;
}

/* Write what was published to every stream that can take it now. */
static void flush_all(struct nwb__events *ev)
{
    struct nwb__event_stream *s = ev->streams;

    while (s != NULL) {
        struct nwb__event_stream *const next = s->next; /* a flush may close s */

        stream_flush(s);
        s = next;
    }
}

/* ---- runs ---- */

static uint32_t dir_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (; *s != '\0'; s++) {
        h = (h ^ (uint8_t)*s) * 16777619u;
    }
    return h;
}

static void lru_unlink(struct nwb__events *ev, struct ev_run *r)
{
    if (r->lru_prev != NULL) {
        r->lru_prev->lru_next = r->lru_next;
    } else {
        ev->lru_head = r->lru_next;
    }
    if (r->lru_next != NULL) {
        r->lru_next->lru_prev = r->lru_prev;
    } else {
        ev->lru_tail = r->lru_prev;
    }
    r->lru_prev = r->lru_next = NULL;
}

static void lru_push_front(struct nwb__events *ev, struct ev_run *r)
{
    r->lru_next = ev->lru_head;
    if (ev->lru_head != NULL) {
        ev->lru_head->lru_prev = r;
    }
    ev->lru_head = r;
    if (ev->lru_tail == NULL) {
        ev->lru_tail = r;
    }
}

static void hash_unlink(struct nwb__events *ev, struct ev_run *r)
{
    struct ev_run **p = &ev->buckets[r->hash % RUN_BUCKETS];

    while (*p != r) {
        p = &(*p)->hash_next;
    }
    *p = r->hash_next;
}

static void dirty_unlink(struct nwb__events *ev, struct ev_run *r)
{
    struct ev_run **p = &ev->dirty;

    while (*p != NULL && *p != r) {
        p = &(*p)->dirty_next;
    }
    if (*p == r) {
        *p = r->dirty_next;
    }
    r->dirty_next = NULL;
}

/* The least recently active run leaves the table; its pending events are published first. */
static struct ev_run *run_evict(struct nwb__events *ev)
{
    struct ev_run *r = ev->lru_tail;

    if (r->dirty != 0) {
        publish_pending(ev, r);
        dirty_unlink(ev, r);
    }
    lru_unlink(ev, r);
    hash_unlink(ev, r);
    ev->nruns--;
    return r;
}

/*
 * The run of @p job (by its directory), now the most recently active; a run not in the table
 * is added and announced (run event "active", then the streams are written). NULL when the
 * job names no directory or memory is short.
 */
static struct ev_run *run_touch(struct nwb__events *ev, const struct nwb__log_job *job)
{
    const uint32_t h = dir_hash(job->dir);
    struct ev_run *r;

    if (job->dir[0] == '\0') {
        return NULL;
    }
    if (ev->buckets == NULL) {
        ev->buckets = nwb_calloc(RUN_BUCKETS, sizeof(*ev->buckets));
        if (ev->buckets == NULL) {
            return NULL;
        }
    }
    for (r = ev->buckets[h % RUN_BUCKETS]; r != NULL; r = r->hash_next) {
        if (r->hash == h && strcmp(r->dir, job->dir) == 0) {
            if (ev->lru_head != r) {
                lru_unlink(ev, r);
                lru_push_front(ev, r);
            }
            return r;
        }
    }
    r = ev->nruns >= NWB__EVENTS_RUNS_MAX ? run_evict(ev) : nwb_malloc(sizeof(*r));
    if (r == NULL) {
        return NULL;
    }
    memset(r, 0, sizeof(*r));
    r->hash = h;
    snprintf(r->dir, sizeof(r->dir), "%s", job->dir);
    r->hash_next = ev->buckets[h % RUN_BUCKETS];
    ev->buckets[h % RUN_BUCKETS] = r;
    lru_push_front(ev, r);
    ev->nruns++;
    publish_run(ev, r->dir, job->program, job->run, "active");
    flush_all(ev);
    return r;
}

static void on_coalesce(uv_timer_t *t)
{
    struct nwb__events *ev = t->data;

    while (ev->dirty != NULL) {
        struct ev_run *r = ev->dirty;

        ev->dirty = r->dirty_next;
        r->dirty_next = NULL;
        publish_pending(ev, r);
    }
    flush_all(ev);
}

/* Note a pending change of @p r; the coalescing timer publishes it within the period. */
static void run_mark(struct nwb__events *ev, struct ev_run *r, unsigned bits)
{
    if (r->dirty == 0) {
        r->dirty_next = ev->dirty;
        ev->dirty = r;
    }
    r->dirty |= bits;
    if (!uv_is_active((uv_handle_t *)&ev->coalesce)) {
        uv_timer_start(&ev->coalesce, on_coalesce, NWB__EVENTS_COALESCE_MS, 0);
    }
}

void nwb__events_log_written(struct nwb__events *ev, const struct nwb__log_job *job)
{
    struct ev_run *r;

    if (ev == NULL) {
        return;
    }
    r = run_touch(ev, job);
    if (r == NULL) {
        return;
    }
    if (r->log_size != job->log_size) {
        r->log_size = job->log_size;
        run_mark(ev, r, DIRTY_LOG);
    }
}

void nwb__events_run_seen(struct nwb__events *ev, const struct nwb__log_job *job)
{
    if (ev != NULL) {
        (void)run_touch(ev, job);
    }
}

void nwb__events_run_changed(struct nwb__events *ev, const char *id, const char *program,
                             const char *run, const char *change)
{
    if (ev != NULL) {
        publish_run(ev, id, program, run, change);
        flush_all(ev);
    }
}

void nwb__events_telemetry(struct nwb__events *ev, const struct nwb__log_job *job,
                           int report_changed)
{
    struct ev_run *r;

    if (ev == NULL || !report_changed) {
        return;
    }
    r = run_touch(ev, job);
    if (r == NULL) {
        return;
    }
    r->tel_uploads++;
    if (!r->tel_seen) {
        r->tel_seen = 1;
        publish_run(ev, r->dir, job->program, job->run, "telemetry");
        flush_all(ev);
    }
    run_mark(ev, r, DIRTY_TEL);
}

/* ---- crash notes: other threads to the loop ---- */

void nwb__events_crash_note(void *ctx, const char *id, const char *status, const char *program,
                            const char *run)
{
    struct nwb__events *ev = ctx;

    pthread_mutex_lock(&ev->crash_lock);
    if (ev->crash_len < NWB__EVENTS_CRASH_NOTES) {
        struct crash_note *n = &ev->crash_notes[ev->crash_len++];

        snprintf(n->id, sizeof(n->id), "%s", id);
        snprintf(n->status, sizeof(n->status), "%s", status);
        snprintf(n->program, sizeof(n->program), "%s", program);
        snprintf(n->run, sizeof(n->run), "%s", run);
    } else {
        ev->crash_lost++;
    }
    pthread_mutex_unlock(&ev->crash_lock);
    uv_async_send(&ev->crash_async);
}

static void on_crash_async(uv_async_t *a)
{
    struct nwb__events *ev = a->data;

    /* Published with the lock held (no I/O: the backlog only); written out after. */
    pthread_mutex_lock(&ev->crash_lock);
    for (unsigned i = 0; i < ev->crash_len; i++) {
        const struct crash_note *n = &ev->crash_notes[i];
        struct ev_text t;

        text_begin(&t, ev, "crash");
        key_str(&t, "id", n->id);
        key_str(&t, "status", n->status);
        key_str(&t, "program", n->program);
        key_str(&t, "run", n->run);
        text_publish(ev, &t);
    }
    ev->crash_len = 0;
    if (ev->crash_lost > 0) {
        ev->crash_dropped += ev->crash_lost;
        ev->crash_lost = 0;
        publish_reset(ev, "crash changes were dropped (more than 256 waiting)");
    }
    pthread_mutex_unlock(&ev->crash_lock);
    flush_all(ev);
}

/* ---- streams ---- */

static int stream_fd(const struct nwb__event_stream *s)
{
    uv_os_fd_t fd = -1;

    return uv_fileno((const uv_handle_t *)&s->c->tcp, &fd) == 0 ? fd : -1;
}

/*
 * The bytes the stream's reader has not taken: what waits for the socket (the stream's own
 * bytes, the backlog's events after its position, a write in flight) plus what the kernel
 * holds unacknowledged (SIOCOUTQ).
 */
static uint64_t stream_unsent(const struct nwb__event_stream *s)
{
    const struct nwb__events *ev = s->bus;
    const int fd = stream_fd(s);
    int outq = 0;
    uint64_t n = s->pre_len + s->wlen + (ev->bytes_total - bytes_through(ev, s->pos));

    if (fd >= 0 && ioctl(fd, SIOCOUTQ, &outq) == 0 && outq > 0) {
        n += (uint64_t)outq;
    }
    return n;
}

/* Over the unsent cap, or behind the backlog (events it needs are gone): cut it off. */
static int stream_cut_if_behind(struct nwb__event_stream *s)
{
    struct nwb__events *ev = s->bus;

    if (s->pos + 1 >= oldest_id(ev) && stream_unsent(s) <= ev->srv->cfg.events_max_unsent_bytes) {
        return 0;
    }
    ev->streams_cut++;
    nwb__conn_stream_close(s->c);
    return 1;
}

static void on_stream_write(uv_write_t *req, int status)
{
    struct nwb__event_stream *s = req->data;

    nwb_free(s->wbuf);
    s->wbuf = NULL;
    s->wlen = 0;
    s->writing = 0;
    if (!s->attached) {
        return; /* the connection is closing (UV_ECANCELED) */
    }
    if (status < 0) {
        nwb__conn_stream_close(s->c);
        return;
    }
    stream_flush(s);
}

/* Queue what the socket did not take: the bytes of @p bufs after the first @p done. */
static void stream_queue_rest(struct nwb__event_stream *s, const uv_buf_t *bufs, unsigned n,
                              size_t total, size_t done)
{
    size_t off = 0;
    uv_buf_t b;

    s->wbuf = nwb_malloc(total - done);
    if (s->wbuf == NULL) {
        nwb__conn_stream_close(s->c);
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        const size_t len = bufs[i].len;

        if (done >= len) {
            done -= len;
            continue;
        }
        memcpy(s->wbuf + off, bufs[i].base + done, len - done);
        off += len - done;
        done = 0;
    }
    s->wlen = off;
    s->writing = 1;
    s->wreq.data = s;
    b = uv_buf_init(s->wbuf, (unsigned)s->wlen);
    if (uv_write(&s->wreq, (uv_stream_t *)&s->c->tcp, &b, 1, on_stream_write) != 0) {
        s->writing = 0;
        nwb__conn_stream_close(s->c);
    }
}

/* Hand the socket what the stream has not sent yet, batch by batch, until it takes no more. */
static void stream_flush(struct nwb__event_stream *s)
{
    struct nwb__events *ev = s->bus;

    while (s->attached && !s->writing) {
        uv_buf_t bufs[NWB__EVENTS_WRITE_BATCH + 1];
        const uint64_t newest = ev->next_id - 1;
        unsigned n = 0;
        size_t total = 0;
        uint64_t id = s->pos;
        int w;

        if (stream_cut_if_behind(s)) {
            return;
        }
        if (s->pre_len > 0) {
            bufs[n++] = uv_buf_init(s->pre, (unsigned)s->pre_len);
            total += s->pre_len;
        }
        while (id < newest && n < NWB__EVENTS_WRITE_BATCH + 1 && total < NWB__EVENTS_WRITE_BYTES) {
            const struct ev_entry *e = entry_of(ev, ++id);

            bufs[n++] = uv_buf_init(e->text, e->len);
            total += e->len;
        }
        if (n == 0) {
            return;
        }
        w = uv_try_write((uv_stream_t *)&s->c->tcp, bufs, n);
        if (w < 0 && w != UV_EAGAIN) {
            nwb__conn_stream_close(s->c);
            return;
        }
        s->pos = id;
        s->pre_len = 0;
        if (w >= 0 && (size_t)w == total) {
            continue;
        }
        stream_queue_rest(s, bufs, n, total, w > 0 ? (size_t)w : 0);
    }
}

static void on_keepalive(uv_timer_t *t)
{
    static const char comment[] = ": keepalive\n\n";
    struct nwb__events *ev = t->data;

    for (struct nwb__event_stream *s = ev->streams; s != NULL; s = s->next) {
        if (s->pre_len + sizeof(comment) - 1 <= sizeof(s->pre)) {
            memcpy(s->pre + s->pre_len, comment, sizeof(comment) - 1);
            s->pre_len += sizeof(comment) - 1;
        }
    }
    flush_all(ev);
}

void nwb__events_stream_detach(struct nwb__event_stream *s)
{
    struct nwb__events *ev;

    if (s == NULL || !s->attached) {
        return;
    }
    ev = s->bus;
    s->attached = 0;
    if (s->prev != NULL) {
        s->prev->next = s->next;
    } else {
        ev->streams = s->next;
    }
    if (s->next != NULL) {
        s->next->prev = s->prev;
    }
    s->prev = s->next = NULL;
    if (--ev->nstreams == 0) {
        uv_timer_stop(&ev->keepalive);
    }
}

void nwb__events_stream_free(struct nwb__event_stream *s)
{
    if (s != NULL) {
        nwb_free(s->wbuf);
        nwb_free(s);
    }
}

/* The answer's head and the stream's first position (docs/protocol.md, "GET /v1/events"). */
static void stream_preamble(struct nwb__event_stream *s, int has_last, uint64_t last)
{
    struct nwb__events *ev = s->bus;
    const uint64_t newest = ev->next_id - 1;
    int n = snprintf(s->pre, sizeof(s->pre),
                     "HTTP/1.1 200 OK\r\n"
                     "Content-Type: text/event-stream; charset=utf-8\r\n"
                     "Cache-Control: no-store\r\n"
                     "X-Accel-Buffering: no\r\n"
                     "Connection: close\r\n"
                     "\r\n"
                     "retry: %u\n",
                     NWB__EVENTS_RETRY_MS);

    if (has_last && last + 1 >= oldest_id(ev) && last <= newest) {
        /* Resumed: every event after @p last is still in the backlog. */
        s->pos = last;
        n += snprintf(s->pre + n, sizeof(s->pre) - (size_t)n, "id: %llu\n\n",
                      (unsigned long long)s->pos);
    } else if (has_last) {
        /* Older than the backlog, or not an id of this server's lifetime. */
        nwb_buf_t b = NWB_BUF_INIT(256);
        nwb_json_t j;

        s->pos = newest;
        nwb_json_init(&j, &b, NULL);
        nwb_json_obj_begin(&j);
        nwb_json_key(&j, "reason");
        nwb_json_cstr(&j, last > newest ? "the id is not one of this server's lifetime"
                                        : "the id is older than the backlog");
        nwb_json_key(&j, "lastEventId");
        nwb_json_u64(&j, newest);
        nwb_json_obj_end(&j);
        if (nwb_json_finish(&j) == 0) {
            n += snprintf(s->pre + n, sizeof(s->pre) - (size_t)n,
                          "id: %llu\nevent: reset\ndata: %.*s\n\n", (unsigned long long)s->pos,
                          (int)b.len, (const char *)b.data);
        }
        nwb_buf_cleanup(&b);
        ev->resets++;
    } else {
        /* Fresh: live from the newest event; its id is the position to resume from. */
        s->pos = newest;
        n += snprintf(s->pre + n, sizeof(s->pre) - (size_t)n, "id: %llu\n\n",
                      (unsigned long long)s->pos);
    }
    s->pre_len = n > 0 && (size_t)n < sizeof(s->pre) ? (size_t)n : 0;
}

/* Last-Event-ID (the header wins: a reconnecting EventSource sends it with the old URL), else
 * ?lastEventId=. 0, or -1 when the one given is not a decimal u64. */
static int resume_id(const struct nwb__conn *c, int *has, uint64_t *id)
{
    struct nwb__target t;

    if (nwb__http_req_last_event_id(&c->req, has, id) != 0) {
        return -1;
    }
    if (*has) {
        return 0;
    }
    nwb__target_split(c->req.url, c->req.url_len, &t);
    return nwb__query_u64(t.query, t.query_len, "lastEventId", 0, UINT64_MAX, id, has);
}

void nwb__events_handle(struct nwb__conn *c)
{
    struct nwb_server *srv = c->srv;
    struct nwb__events *ev = srv->events;
    struct nwb__event_stream *s;
    uint64_t last = 0;
    int has_last = 0;

    if (resume_id(c, &has_last, &last) != 0) {
        nwb__conn_respond_error(c, 400, "Last-Event-ID / lastEventId must be a decimal event id");
        return;
    }
    if (ev->nstreams >= srv->cfg.events_max_streams) {
        static const char msg[] = "too many event streams (--events-max-streams); retry later\n";

        ev->streams_rejected++;
        nwb__conn_respond(c, 429, "text/plain; charset=utf-8", msg, sizeof(msg) - 1, 0,
                          "Retry-After: 1\r\n");
        return;
    }
    s = nwb_calloc(1, sizeof(*s));
    if (s == NULL) {
        nwb__conn_respond_error(c, 503, "out of memory");
        return;
    }
    s->bus = ev;
    s->c = c;
    stream_preamble(s, has_last, last);
    s->attached = 1;
    s->next = ev->streams;
    if (ev->streams != NULL) {
        ev->streams->prev = s;
    }
    ev->streams = s;
    if (ev->nstreams++ == 0) {
        const unsigned ms = srv->cfg.events_keepalive_ms;

        uv_timer_start(&ev->keepalive, on_keepalive, ms, ms);
    }
    ev->streams_total++;
    nwb__conn_stream_begin(c, s);
    stream_flush(s);
}

/* ---- lifecycle and metrics ---- */

int nwb__events_create(struct nwb_server *srv, struct nwb__events **out)
{
    struct nwb__events *ev = nwb_calloc(1, sizeof(*ev));
    int err;

    *out = NULL;
    if (ev == NULL) {
        return -ENOMEM;
    }
    ev->srv = srv;
    /* Ids start at the start time in microseconds: a later lifetime's ids are larger than an
     * earlier one's (unless the clock was set back), so an id of a previous lifetime is
     * "older than the backlog" and gets a reset (docs/protocol.md). */
    ev->next_id = nwb_time_now_ns() / 1000u + 1u;
    err = -pthread_mutex_init(&ev->crash_lock, NULL);
    if (err != 0) {
        nwb_free(ev);
        return err;
    }
    err = uv_async_init(srv->loop, &ev->crash_async, on_crash_async);
    if (err != 0) {
        pthread_mutex_destroy(&ev->crash_lock);
        nwb_free(ev);
        return err;
    }
    /* Timers cannot fail to initialise on a live loop. */
    uv_timer_init(srv->loop, &ev->coalesce);
    uv_timer_init(srv->loop, &ev->keepalive);
    ev->crash_async.data = ev->coalesce.data = ev->keepalive.data = ev;
    ev->handles_open = 3;
    *out = ev;
    return 0;
}

static void on_bus_closed(uv_handle_t *h)
{
    struct nwb__events *ev = h->data;
    void (*const closed)(void *) = ev->closed;
    void *const closed_ctx = ev->closed_ctx;

    if (--ev->handles_open > 0) {
        return;
    }
    while (ev->ring != NULL && ev->ring_len > 0) {
        backlog_pop(ev);
    }
    nwb_free(ev->ring);
    while (ev->lru_head != NULL) {
        struct ev_run *r = ev->lru_head;

        ev->lru_head = r->lru_next;
        nwb_free(r);
    }
    nwb_free(ev->buckets);
    pthread_mutex_destroy(&ev->crash_lock);
    nwb_free(ev);
    if (closed != NULL) {
        closed(closed_ctx);
    }
}

void nwb__events_close(struct nwb__events *ev, void (*closed)(void *ctx), void *ctx)
{
    if (ev == NULL) {
        return;
    }
    ev->closed = closed;
    ev->closed_ctx = ctx;
    uv_close((uv_handle_t *)&ev->coalesce, on_bus_closed);
    uv_close((uv_handle_t *)&ev->keepalive, on_bus_closed);
    uv_close((uv_handle_t *)&ev->crash_async, on_bus_closed);
}

int nwb__events_metrics_write(const struct nwb__events *ev, nwb_buf_t *b)
{
    if (ev == NULL) {
        return 0;
    }
    return nwb_buf_appendf(
        b,
        "# HELP nwb_events_total Events published to GET /v1/events streams and the backlog.\n"
        "# TYPE nwb_events_total counter\n"
        "nwb_events_total %llu\n"
        "# HELP nwb_events_failed_total Events that could not be built (out of memory).\n"
        "# TYPE nwb_events_failed_total counter\n"
        "nwb_events_failed_total %llu\n"
        "# HELP nwb_events_backlog Events kept for resuming streams (Last-Event-ID).\n"
        "# TYPE nwb_events_backlog gauge\n"
        "nwb_events_backlog %u\n"
        "# HELP nwb_event_streams Open GET /v1/events streams.\n"
        "# TYPE nwb_event_streams gauge\n"
        "nwb_event_streams %u\n"
        "# HELP nwb_event_streams_total Event streams opened.\n"
        "# TYPE nwb_event_streams_total counter\n"
        "nwb_event_streams_total %llu\n"
        "# HELP nwb_event_streams_rejected_total Event streams refused with 429 over "
        "--events-max-streams.\n"
        "# TYPE nwb_event_streams_rejected_total counter\n"
        "nwb_event_streams_rejected_total %llu\n"
        "# HELP nwb_event_streams_cut_total Event streams cut off: unsent bytes over "
        "--events-max-unsent-bytes, or behind the backlog.\n"
        "# TYPE nwb_event_streams_cut_total counter\n"
        "nwb_event_streams_cut_total %llu\n"
        "# HELP nwb_event_resets_total reset events sent (an id older than the backlog, or "
        "dropped crash changes).\n"
        "# TYPE nwb_event_resets_total counter\n"
        "nwb_event_resets_total %llu\n"
        "# HELP nwb_events_crash_dropped_total Crash changes dropped before the loop took them "
        "(a reset was published instead).\n"
        "# TYPE nwb_events_crash_dropped_total counter\n"
        "nwb_events_crash_dropped_total %llu\n",
        (unsigned long long)ev->published, (unsigned long long)ev->failed, ev->ring_len,
        ev->nstreams, (unsigned long long)ev->streams_total,
        (unsigned long long)ev->streams_rejected, (unsigned long long)ev->streams_cut,
        (unsigned long long)ev->resets, (unsigned long long)ev->crash_dropped);
}
