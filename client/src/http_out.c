/* SPDX-License-Identifier: MIT */
/*
 * http_out.c - the server-mode output: encodes records into log batches and
 * POSTs them to nwb-logserver over one keep-alive connection, driven
 * non-blockingly from the worker's poll loop. Unacknowledged batches stay in
 * memory up to memory_bytes, then move to the spool (spool.c); earlier runs'
 * spool files are delivered alongside. Order, retries and bounds: docs/spool.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/log_batch.h"
#include "nwb/log_line.h"

#include "net_int.h"

enum conn_state {
    CS_DOWN,       /* no socket; connect when there is work and the backoff allows */
    CS_CONNECTING, /* non-blocking connect in progress */
    CS_IDLE,       /* connected, nothing in flight */
    CS_SENDING,    /* writing the request */
    CS_WAITING,    /* request written, reading the response */
};

enum slot_src {
    SRC_MEM = 1, /* a sealed batch of this run, held in memory */
    SRC_SPOOL,   /* this run's batch read back from (or also written to) its spool */
    SRC_OLD,     /* an entry of an earlier run's spool file */
};

/* The batch being sent (or waiting to be resent). Delivery is strictly in order: the slot is
 * always resent before anything else, so the server's run+seq duplicate check never sees a
 * newer seq of a run before an older one. */
struct slot {
    struct nwb__batch *b;
    int src;
    unsigned sends; /* times this batch was sent */
    unsigned hard;  /* 5xx/3xx answers, before it is given up */
    int abandoned;  /* its spool copy was dropped by the cap: sent once more at most */
    int fast_retry; /* already retried at once after a stale keep-alive connection */
    char program[NWB_SAFE_NAME_MAX + 1];
    char run[17];
};

#define MAX_ADDRS 4

/* Threads a batch names at most (each once, on its first record in the batch); records of
 * further threads go without a name (counted in names_unsent). Slots: twice that, a power of 2. */
#define NAMED_MAX   192u
#define NAMED_SLOTS 512u

struct http_out {
    struct nwb__out base;
    const struct nwb__settings *s;
    struct nwb__stats *st;
    struct nwb__http_tuning t;
    uint32_t batch_bytes;
    uint64_t interval_ns;
    uint64_t last_ack_ns; /* monotonic time of the last 2xx; 0 = none yet */

    /* the batch being filled */
    struct nwb__batch *open;
    /* threads whose name the open batch already carries (open addressing, tid + 1; 0 = empty) */
    uint64_t named[NAMED_SLOTS];
    unsigned named_count;
    uint64_t names_unsent; /* records of a named thread sent without its name: the set was full */
    uint64_t open_since;
    uint64_t next_seq;

    /* sealed batches in memory, oldest first (the slot's batch is not in this list) */
    struct nwb__batch *mem_head;
    struct nwb__batch *mem_tail;
    uint64_t mem_count; /* includes a SRC_MEM slot */
    size_t mem_bytes;   /* includes a SRC_MEM slot */

    /* this run's spool; NULL when spool_bytes is 0 */
    struct nwb__spool *spool;
    uint64_t spool_retry_at;

    /* earlier runs' spool files */
    struct nwb__spool_found *found;
    size_t found_n;
    size_t found_i;
    size_t old_finished; /* files completed during the current list */
    int old_rescanned;
    int old_open;
    struct nwb__spool_reader old;

    struct slot slot;
    int prefer_old;

    /* the connection */
    char host[256]; /* settings->host without IPv6 brackets */
    struct sockaddr_storage addr[MAX_ADDRS];
    socklen_t addrlen[MAX_ADDRS];
    int naddr;
    unsigned addr_i;
    int fd;
    int state;
    uint64_t deadline;     /* of the connect or the response */
    uint64_t next_attempt; /* no connect/send before this */
    unsigned backoff_ms;
    uint64_t rng;
    int failing;          /* the last attempt failed; no response since */
    unsigned conn_served; /* responses on this connection */
    int sent_on_reused;
    struct nwb__http_resp resp;
    char head[NWB_NET_HEAD_MAX];
    size_t head_len;
    size_t sent;

    int closing;
    uint64_t connect_failures;
    uint64_t rejected;
    int reported_conn;
    int reported_reject;
    int reported_auth; /* a 401/403 was reported (once per client) */
    int reported_spool;
    int reported_toobig;
};

#define MS 1000000ull

static struct http_out *out_of(struct nwb__out *o)
{
    return NWB_CONTAINER_OF(o, struct http_out, base);
}

static void stat_add(atomic_uint_fast64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* ---- memory list ---- */

static void mem_push(struct http_out *o, struct nwb__batch *b)
{
    b->next = NULL;
    if (o->mem_tail != NULL) {
        o->mem_tail->next = b;
    } else {
        o->mem_head = b;
    }
    o->mem_tail = b;
    o->mem_count++;
    o->mem_bytes += nwb__batch_cost(b);
}

/* Detach the oldest batch; it still counts against memory until mem_release(). */
static struct nwb__batch *mem_pop(struct http_out *o)
{
    struct nwb__batch *b = o->mem_head;

    if (b != NULL) {
        o->mem_head = b->next;
        if (o->mem_head == NULL) {
            o->mem_tail = NULL;
        }
        b->next = NULL;
    }
    return b;
}

static void mem_release(struct http_out *o, struct nwb__batch *b)
{
    o->mem_count--;
    o->mem_bytes -= nwb__batch_cost(b);
}

/* ---- the slot ---- */

static void slot_clear(struct http_out *o)
{
    nwb_free(o->slot.b);
    memset(&o->slot, 0, sizeof(o->slot));
}

/* The slot's batch is finished: delivered (a 2xx) or given up (rejected, dropped). */
static void slot_resolve(struct http_out *o, int delivered)
{
    struct nwb__batch *b = o->slot.b;

    if (b == NULL) {
        return;
    }
    if (delivered) {
        stat_add(&o->st->batches_sent, 1);
        o->last_ack_ns = nwb_time_mono_ns();
        if (o->slot.src != SRC_OLD) {
            stat_add(&o->st->records_written, b->records);
        }
    } else {
        stat_add(&o->st->batches_dropped, 1);
    }
    switch (o->slot.src) {
    case SRC_MEM:
        mem_release(o, b);
        break;
    case SRC_SPOOL:
        if (!o->slot.abandoned) {
            nwb__spool_pop(o->spool);
        }
        break;
    case SRC_OLD:
        nwb__spool_reader_ack(&o->old);
        if (o->old_open && o->old.off >= o->old.size) {
            /* Its last batch is acknowledged: delete it now, not at the next read. */
            nwb__spool_reader_close(&o->old, 1);
            o->old_open = 0;
            o->old_finished++;
        }
        break;
    default:
        break;
    }
    slot_clear(o);
}

/* ---- spooling ---- */

static int spool_usable(const struct http_out *o, uint64_t now)
{
    return o->spool != NULL && now >= o->spool_retry_at;
}

/*
 * The server is taking batches right now (a connection is up). Then a full
 * memory means delivery is merely behind: the output pushes back onto the
 * rings (where the block/drop policy counts every record and notes the gap)
 * instead of filling the spool, which is for a server that does not answer.
 */
static int delivering(const struct http_out *o)
{
    return o->state != CS_DOWN && o->state != CS_CONNECTING && o->last_ack_ns != 0 &&
           nwb_time_mono_ns() - o->last_ack_ns < NWB_NET_DELIVERING_NS;
}

/*
 * Move the oldest batch that exists only in memory to the spool: the slot's
 * batch when it has not been spooled, else the head of the memory list. Keeping
 * that order makes each spool file hold its run's batches in seq order.
 * Returns 0 when one moved, 1 when there was nothing to move, <0 on an error.
 */
static int spool_one(struct http_out *o, uint64_t now)
{
    const int is_slot = o->slot.b != NULL && o->slot.src == SRC_MEM && !o->slot.abandoned;
    struct nwb__batch *b = is_slot ? o->slot.b : o->mem_head;
    uint64_t dropped = 0;
    int head_lost = 0;
    int rc;

    if (b == NULL) {
        return 1;
    }
    rc = nwb__spool_append(o->spool, b->seq, b->data, b->len, &dropped, &head_lost);
    if (dropped > 0) {
        stat_add(&o->st->batches_dropped, dropped);
    }
    if (head_lost && o->slot.b != NULL && o->slot.src == SRC_SPOOL) {
        o->slot.abandoned = 1;
    }
    if (rc == NWB_ETOOBIG) {
        if (!o->reported_toobig) {
            o->reported_toobig = 1;
            nwb__net_report("a %" PRIu32 "-byte batch does not fit in the %zu-byte spool cap; "
                            "it is dropped if it cannot be delivered",
                            b->len, o->s->spool_bytes);
        }
        if (is_slot) {
            o->slot.abandoned = 1;
        } else {
            mem_release(o, mem_pop(o));
            nwb_free(b);
            stat_add(&o->st->batches_dropped, 1);
        }
        return 0;
    }
    if (rc != 0) {
        char ebuf[128];

        o->spool_retry_at = now + (uint64_t)o->t.spool_retry_ms * MS;
        if (!o->reported_spool) {
            o->reported_spool = 1;
            nwb__net_report("cannot write the spool in %s: %s; batches stay in memory",
                            o->s->spool_dir, nwb_strerror_r(rc, ebuf, sizeof(ebuf)));
        }
        return rc;
    }
    stat_add(&o->st->batches_spooled, 1);
    if (is_slot) {
        /* The spool was empty (the slot is only taken from memory then), so the new entry
         * is its head: acknowledging the slot pops it. */
        mem_release(o, b);
        o->slot.src = SRC_SPOOL;
        nwb__spool_mark_head(o->spool);
    } else {
        mem_release(o, mem_pop(o));
        nwb_free(b);
    }
    return 0;
}

/* Keep memory within memory_bytes by moving the oldest batches to the spool, while the server
 * does not answer (when it does, append() pushes back instead). */
static void spool_excess(struct http_out *o, uint64_t now)
{
    while (o->mem_bytes > o->s->memory_bytes && !delivering(o) && spool_usable(o, now)) {
        if (spool_one(o, now) != 0) {
            break;
        }
    }
}

/* Make everything durable: used by close when the server does not answer. */
static void spool_all(struct http_out *o, uint64_t now)
{
    while (spool_usable(o, now)) {
        if (spool_one(o, now) != 0) {
            break;
        }
    }
}

/* ---- batches ---- */

static void seal(struct http_out *o, uint64_t now)
{
    struct nwb__batch *b = o->open;

    o->open = NULL;
    nwb_log_batch_header_finish(b->data, b->records, b->len - NWB_LOG_BATCH_HEADER_SIZE);
    b->seq = ++o->next_seq;
    if (b->cap - b->len > 4096) {
        struct nwb__batch *small = nwb_realloc(b, sizeof(*b) + b->len);

        if (small != NULL) {
            b = small;
            b->cap = b->len;
        }
    }
    mem_push(o, b);
    spool_excess(o, now);
}

static int open_has_records(const struct http_out *o)
{
    return o->open != NULL && o->open->records > 0;
}

static int unsettled_mem(const struct http_out *o)
{
    uint64_t n = o->mem_count;

    if (o->slot.b != NULL && o->slot.src == SRC_MEM && o->slot.abandoned) {
        n--;
    }
    return n > 0;
}

static int out_settled(struct nwb__out *base)
{
    const struct http_out *o = out_of(base);

    return !open_has_records(o) && !unsettled_mem(o);
}

/*
 * Keep @p r's thread name only when it is the first record of its thread in the open batch
 * and the batch names fewer than NAMED_MAX threads; the server remembers it for the rest.
 * Returns the slot to mark once the record is in the batch, or -1.
 */
static long name_once_per_batch(struct http_out *o, nwb_log_record_t *r)
{
    const uint64_t key = r->thread_id + 1u;
    size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 55) & (NAMED_SLOTS - 1u);

    if (r->thread_name_len == 0 || r->thread_name == NULL) {
        r->thread_name_len = 0;
        return -1;
    }
    if (r->thread_name_len > NWB_LOG_THREAD_NAME_MAX) {
        r->thread_name_len = NWB_LOG_THREAD_NAME_MAX;
    }
    while (o->named[i] != 0) {
        if (o->named[i] == key) {
            r->thread_name_len = 0; /* named earlier in this batch */
            return -1;
        }
        i = (i + 1u) & (NAMED_SLOTS - 1u);
    }
    if (o->named_count >= NAMED_MAX) {
        r->thread_name_len = 0;
        o->names_unsent++;
        return -1;
    }
    return (long)i;
}

static int out_append(struct nwb__out *base, const nwb_log_record_t *rec)
{
    struct http_out *o = out_of(base);
    nwb_log_record_t r = *rec;
    long named_slot;
    size_t need;

    if (r.file_len > NWB_LOG_RECORD_FILE_MAX) {
        r.file_len = NWB_LOG_RECORD_FILE_MAX;
    }
    if (r.msg_len > NWB_LOG_RECORD_MSG_MAX) {
        r.msg_len = NWB_LOG_RECORD_MSG_MAX;
        r.flags |= NWB_LOG_RECORD_TRUNCATED;
    }
    if (r.file == NULL) {
        r.file_len = 0;
    }
    if (r.msg == NULL) {
        r.msg_len = 0;
    }
    /* With its name, when it is the first record of its thread in a new batch. */
    need = nwb_log_record_wire_size(r.file_len, r.msg_len) + 2u + NWB_LOG_THREAD_NAME_MAX;
    if (open_has_records(o) && o->open->len + need > o->batch_bytes) {
        const uint64_t now = nwb_time_mono_ns();

        /* Backpressure when memory is full and either the server is up (delivery is only
         * behind) or the spool cannot take the overflow. */
        if (o->mem_count > 0 && o->mem_bytes + nwb__batch_cost(o->open) > o->s->memory_bytes &&
            (delivering(o) || !spool_usable(o, now))) {
            return NWB_EFULL;
        }
        seal(o, now);
    }
    if (o->open == NULL) {
        const size_t cap = need + NWB_LOG_BATCH_HEADER_SIZE > o->batch_bytes
                               ? need + NWB_LOG_BATCH_HEADER_SIZE
                               : o->batch_bytes;

        o->open = nwb__batch_alloc((uint32_t)cap);
        if (o->open == NULL) {
            return NWB_EFULL;
        }
        nwb_log_batch_header_write(o->open->data);
        o->open->len = NWB_LOG_BATCH_HEADER_SIZE;
        memset(o->named, 0, sizeof(o->named));
        o->named_count = 0;
    }
    named_slot = name_once_per_batch(o, &r);
    need = nwb_log_record_encoded_size(&r);
    if (o->open->len + need > o->open->cap &&
        nwb__batch_reserve(&o->open, (uint32_t)(o->open->len + need)) != 0) {
        return NWB_EFULL;
    }
    o->open->len += (uint32_t)nwb_log_record_encode(o->open->data + o->open->len, &r);
    if (named_slot >= 0) {
        o->named[named_slot] = r.thread_id + 1u;
        o->named_count++;
    }
    if (++o->open->records == 1) {
        o->open_since = nwb_time_mono_ns();
    }
    return 0;
}

static void seal_if_due(struct http_out *o, uint64_t now, int force)
{
    if (!open_has_records(o)) {
        return;
    }
    if (force || o->open->len >= o->batch_bytes || now - o->open_since >= o->interval_ns) {
        seal(o, now);
    }
}

static void out_commit(struct nwb__out *base, uint64_t now, int force)
{
    struct http_out *o = out_of(base);

    /* A flush (force) waits for acknowledgements; batches reach the spool only when memory
     * is full or at close, so a flush while the server is down times out (client.h). */
    seal_if_due(o, now, force);
}

/* ---- earlier runs ---- */

static int old_available(const struct http_out *o)
{
    return !o->closing && (o->old_open || o->found_i < o->found_n);
}

static void old_rescan(struct http_out *o)
{
    /* One rescan after a list in which files were delivered finds files that were locked by
     * a process that has exited since (bounded: a rescan needs a delivered file). */
    nwb_free(o->found);
    o->found = NULL;
    o->found_n = 0;
    o->found_i = 0;
    if (o->old_finished > 0 && !o->old_rescanned) {
        o->old_rescanned = 1;
        nwb__spool_scan(o->s->spool_dir, o->s->program, &o->found, &o->found_n);
    }
    o->old_finished = 0;
}

/* Put the next entry of an earlier run's spool into the slot. Returns 1 when it did. */
static int load_old(struct http_out *o)
{
    for (int tries = 0; tries < 16; tries++) {
        struct nwb__batch *b = NULL;
        int rc;

        if (!o->old_open) {
            const struct nwb__spool_found *f;

            if (o->found_i >= o->found_n) {
                old_rescan(o);
                if (o->found_i >= o->found_n) {
                    return 0;
                }
            }
            f = &o->found[o->found_i++];
            /* A file of this very process (same run id, our own spool) is never ours to take. */
            rc = nwb__spool_reader_open(&o->old, o->s->spool_dir, f->name);
            if (rc != 0) {
                continue;
            }
            o->old_open = 1;
        }
        rc = nwb__spool_reader_next(&o->old, &b);
        if (rc == 1) {
            o->slot.b = b;
            o->slot.src = SRC_OLD;
            memcpy(o->slot.program, o->old.id.program, sizeof(o->slot.program));
            memcpy(o->slot.run, o->old.id.run, sizeof(o->slot.run));
            return 1;
        }
        if (rc == NWB_EFULL) {
            return 0;
        }
        if (rc < 0) {
            nwb__net_report("spool file %s is damaged at offset %" PRIu64
                            " (%s); the rest of it is skipped",
                            o->old.path, o->old.off, o->old.why);
        }
        /* Every batch before the end (or the damage) was acknowledged: the file is done. */
        nwb__spool_reader_close(&o->old, 1);
        o->old_open = 0;
        o->old_finished++;
    }
    return 0;
}

/* ---- choosing what to send ---- */

static int cur_available(const struct http_out *o)
{
    return o->mem_head != NULL || (o->spool != NULL && nwb__spool_live(o->spool) > 0);
}

static int have_work(const struct http_out *o)
{
    return o->slot.b != NULL || cur_available(o) || old_available(o);
}

static int load_cur(struct http_out *o)
{
    for (int tries = 0; tries < 4; tries++) {
        if (o->spool != NULL && nwb__spool_live(o->spool) > 0) {
            struct nwb__batch *b = NULL;
            uint64_t dropped = 0;
            const int rc = nwb__spool_peek(o->spool, &b, &dropped);

            if (dropped > 0) {
                stat_add(&o->st->batches_dropped, dropped);
            }
            if (rc == 1) {
                o->slot.b = b;
                o->slot.src = SRC_SPOOL;
                return 1;
            }
            if (rc == NWB_EFULL) {
                return 0;
            }
            continue;
        }
        if (o->mem_head != NULL) {
            o->slot.b = mem_pop(o);
            o->slot.src = SRC_MEM;
            return 1;
        }
        return 0;
    }
    return 0;
}

/* Fill the slot. The spool of this run is older than its memory, so it goes first; earlier
 * runs' files alternate with this run so neither starves. */
static int load_slot(struct http_out *o)
{
    int use_old;

    if (o->slot.b != NULL) {
        return 1;
    }
    if (cur_available(o) && old_available(o)) {
        use_old = o->prefer_old;
        o->prefer_old = !o->prefer_old;
    } else {
        use_old = old_available(o);
    }
    if (use_old && load_old(o)) {
        return 1;
    }
    if (load_cur(o)) {
        return 1;
    }
    return !use_old && load_old(o);
}

/* ---- the connection ---- */

static unsigned jitter(struct http_out *o, unsigned ms)
{
    /* xorshift64*: equal jitter, 50-100% of the delay, so clients do not retry in step. */
    uint64_t x = o->rng;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    o->rng = x;
    x *= 0x2545F4914F6CDD1Dull;
    return ms / 2 + (unsigned)((x >> 33) % (ms / 2 + 1));
}

static void backoff(struct http_out *o, uint64_t now)
{
    if (o->backoff_ms == 0) {
        o->backoff_ms = o->t.backoff_min_ms;
    } else {
        o->backoff_ms =
            o->backoff_ms * 2 > o->t.backoff_max_ms ? o->t.backoff_max_ms : o->backoff_ms * 2;
    }
    o->next_attempt = now + (uint64_t)jitter(o, o->backoff_ms) * MS;
}

static void conn_close(struct http_out *o)
{
    if (o->fd >= 0) {
        close(o->fd);
        o->fd = -1;
    }
    o->state = CS_DOWN;
}

/* A connect, send or receive failed, or the response was unusable: close, back off, retry. */
static void fail(struct http_out *o, uint64_t now, int err, const char *what)
{
    const int no_answer = o->resp.bytes == 0;
    const int reused = o->sent_on_reused && (o->state == CS_SENDING || o->state == CS_WAITING);

    conn_close(o);
    o->connect_failures++;
    o->failing = 1;
    if (!o->reported_conn) {
        char ebuf[128];

        o->reported_conn = 1;
        nwb__net_report("%s nwb-logserver at %s failed (%s); keeping unacknowledged batches "
                        "and retrying",
                        what, o->s->server,
                        err == NWB_ECLOSED ? "closed by the server"
                                           : nwb_strerror_r(err, ebuf, sizeof(ebuf)));
    }
    if (o->slot.b != NULL && o->slot.abandoned) {
        slot_resolve(o, 0);
    }
    if (o->slot.b != NULL && reused && no_answer && !o->slot.fast_retry) {
        /* The server closed an idle keep-alive connection as we reused it: retry at once. */
        o->slot.fast_retry = 1;
        o->next_attempt = now;
    } else {
        backoff(o, now);
    }
    if (o->closing) {
        /* Shutting down and the server does not answer: make everything durable now. */
        spool_all(o, now);
    }
}

static int resolve(struct http_out *o)
{
    struct addrinfo hints;
    struct addrinfo *res = NULL;
    int rc;

    if (o->naddr > 0) {
        return 0;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_NUMERICHOST;
    rc = getaddrinfo(o->host, o->s->port, &hints, &res);
    if (rc == EAI_NONAME) {
        /* A host name: resolving may block the worker (never a producer) briefly. */
        hints.ai_flags = AI_NUMERICSERV;
        rc = getaddrinfo(o->host, o->s->port, &hints, &res);
    }
    if (rc != 0) {
        return rc == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
    }
    for (struct addrinfo *ai = res; ai != NULL && o->naddr < MAX_ADDRS; ai = ai->ai_next) {
        if (ai->ai_addrlen <= sizeof(o->addr[0])) {
            memcpy(&o->addr[o->naddr], ai->ai_addr, ai->ai_addrlen);
            o->addrlen[o->naddr] = (socklen_t)ai->ai_addrlen;
            o->naddr++;
        }
    }
    freeaddrinfo(res);
    return o->naddr > 0 ? 0 : -EHOSTUNREACH;
}

static void connected(struct http_out *o)
{
    o->state = CS_IDLE;
    o->conn_served = 0;
    nwb__http_resp_init(&o->resp);
    stat_add(&o->st->connects, 1);
}

static void start_connect(struct http_out *o, uint64_t now)
{
    const struct sockaddr *sa;
    const int one = 1;
    int rc = resolve(o);
    int fd;

    if (rc != 0) {
        fail(o, now, rc, "resolving");
        return;
    }
    sa = (const struct sockaddr *)&o->addr[o->addr_i % (unsigned)o->naddr];
    fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fail(o, now, -errno, "connecting to");
        return;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    o->fd = fd;
    o->resp.bytes = 0;
    o->sent_on_reused = 0;
    rc = connect(fd, sa, o->addrlen[o->addr_i % (unsigned)o->naddr]);
    if (rc == 0) {
        connected(o);
        return;
    }
    if (errno == EINPROGRESS || errno == EINTR) {
        o->state = CS_CONNECTING;
        o->deadline = now + (uint64_t)o->t.connect_timeout_ms * MS;
        return;
    }
    rc = -errno;
    o->addr_i++;
    fail(o, now, rc, "connecting to");
}

static short fd_ready(int fd, short events)
{
    struct pollfd p = {fd, events, 0};

    if (poll(&p, 1, 0) <= 0) {
        return 0;
    }
    return p.revents;
}

static void begin_request(struct http_out *o, uint64_t now)
{
    const char *program = o->slot.src == SRC_OLD ? o->slot.program : o->s->program;
    const char *run = o->slot.src == SRC_OLD ? o->slot.run : o->s->run_id;
    const int n = nwb__http_request_head(o->head, sizeof(o->head), o->host, o->s->port, program,
                                         run, o->slot.b->seq, o->slot.b->len, o->s->token);

    if (n < 0) {
        /* Cannot happen with the bounds checked at create; never loop on it. */
        slot_resolve(o, 0);
        return;
    }
    o->head_len = (size_t)n;
    o->sent = 0;
    o->state = CS_SENDING;
    o->deadline = now + (uint64_t)o->t.response_timeout_ms * MS;
    o->sent_on_reused = o->conn_served > 0;
    o->resp.bytes = 0;
    if (o->slot.sends > 0) {
        stat_add(&o->st->batches_resent, 1);
    }
    o->slot.sends++;
}

static int is_retryable(int status)
{
    return status == 503 || status == 429 || status == 408;
}

/*
 * 401/403: the token is missing or wrong, a configuration error that no
 * retry of this batch fixes but a corrected server or client run does.
 * Reported once; the batch is kept as for a server that is down (memory,
 * then the spool, and spooled at once while shutting down) and retried with
 * the full backoff, never dropped for it.
 */
static void on_auth_refused(struct http_out *o, uint64_t now, int status)
{
    if (!o->reported_auth) {
        o->reported_auth = 1;
        nwb__net_report("nwb-logserver at %s refused this client with HTTP %d (%s); batches are "
                        "kept (memory, then the spool in %s) and retried",
                        o->s->server, status,
                        o->s->token[0] != '\0'
                            ? "wrong token: config token, $NWB_LOGSERVER_TOKEN or "
                              "$NWB_LOGSERVER_TOKEN_FILE is not the server's --token-file"
                            : "no token configured: set config token, $NWB_LOGSERVER_TOKEN or "
                              "$NWB_LOGSERVER_TOKEN_FILE",
                        o->s->spool_dir[0] != '\0' ? o->s->spool_dir : "(none)");
    }
    o->failing = 1;
    backoff(o, now);
    if (o->slot.b != NULL && o->slot.abandoned) {
        slot_resolve(o, 0);
    }
    if (o->closing) {
        spool_all(o, now);
    }
}

static void on_response(struct http_out *o, uint64_t now, int trailing)
{
    const int status = o->resp.status;
    const int whole = o->sent == o->head_len + (o->slot.b != NULL ? o->slot.b->len : 0);
    const int keep = o->resp.keep_alive && !trailing && whole;
    const long ra = o->resp.retry_after_s;

    o->conn_served++;
    o->failing = 0;
    nwb__http_resp_next(&o->resp);
    if (status >= 200 && status < 300) {
        o->backoff_ms = 0;
        o->next_attempt = now;
        slot_resolve(o, 1);
    } else if (is_retryable(status)) {
        if (ra >= 0 && status != 408) {
            uint64_t ms = (uint64_t)ra * 1000u;

            ms = ms > o->t.retry_after_cap_ms ? o->t.retry_after_cap_ms : ms;
            ms = ms < o->t.backoff_min_ms ? o->t.backoff_min_ms : ms;
            o->next_attempt = now + ms * MS;
        } else {
            backoff(o, now);
        }
        if (o->slot.b != NULL && o->slot.abandoned) {
            slot_resolve(o, 0);
        }
    } else if (status == 401 || status == 403) {
        on_auth_refused(o, now, status);
    } else if (status >= 400 && status < 500) {
        o->rejected++;
        if (!o->reported_reject) {
            o->reported_reject = 1;
            nwb__net_report("nwb-logserver at %s rejected a batch with HTTP %d; it is dropped "
                            "(further rejections are only counted)",
                            o->s->server, status);
        }
        slot_resolve(o, 0);
    } else {
        if (o->slot.b != NULL && (o->slot.abandoned || ++o->slot.hard >= o->t.hard_fail_max)) {
            o->rejected++;
            if (!o->reported_reject) {
                o->reported_reject = 1;
                nwb__net_report("nwb-logserver at %s answered HTTP %d %u times to one batch; it "
                                "is dropped (further drops are only counted)",
                                o->s->server, status, o->t.hard_fail_max);
            }
            slot_resolve(o, 0);
        } else {
            backoff(o, now);
        }
    }
    if (keep) {
        o->state = CS_IDLE;
    } else {
        conn_close(o);
    }
}

/* Read what the socket has. Returns 1 when something happened (a response, a close). */
static int do_read(struct http_out *o, uint64_t now)
{
    char buf[4096];

    for (int i = 0; i < 64; i++) {
        const ssize_t n = recv(o->fd, buf, sizeof(buf), MSG_DONTWAIT);
        size_t used = 0;

        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return 0;
            }
            if (errno == EINTR) {
                continue;
            }
            fail(o, now, -errno, "receiving from");
            return 1;
        }
        if (n == 0) {
            if (nwb__http_resp_eof(&o->resp) == 0 && o->resp.complete) {
                on_response(o, now, 0);
                conn_close(o);
            } else {
                fail(o, now, NWB_ECLOSED, "reading the response of");
            }
            return 1;
        }
        if (nwb__http_resp_feed(&o->resp, buf, (size_t)n, &used) != 0) {
            fail(o, now, NWB_EPROTO, "parsing the response of");
            return 1;
        }
        if (o->resp.complete) {
            on_response(o, now, used < (size_t)n);
            return 1;
        }
    }
    return 1;
}

static int do_send(struct http_out *o, uint64_t now)
{
    const size_t total = o->head_len + o->slot.b->len;

    while (o->sent < total) {
        struct iovec iov[2];
        struct msghdr msg;
        int niov = 0;
        ssize_t n;

        if (o->sent < o->head_len) {
            iov[niov].iov_base = o->head + o->sent;
            iov[niov].iov_len = o->head_len - o->sent;
            niov++;
            iov[niov].iov_base = o->slot.b->data;
            iov[niov].iov_len = o->slot.b->len;
            niov++;
        } else {
            iov[niov].iov_base = o->slot.b->data + (o->sent - o->head_len);
            iov[niov].iov_len = total - o->sent;
            niov++;
        }
        memset(&msg, 0, sizeof(msg));
        msg.msg_iov = iov;
        msg.msg_iovlen = (size_t)niov;
        /* MSG_NOSIGNAL: a closed peer must never raise SIGPIPE in the game. */
        n = sendmsg(o->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return 0;
            }
            if (errno == EINTR) {
                continue;
            }
            fail(o, now, -errno, "sending to");
            return 1;
        }
        o->sent += (size_t)n;
    }
    o->state = CS_WAITING;
    return 1;
}

/* One step of the connection's state machine. Returns 1 when it is worth stepping again. */
static int step(struct http_out *o, uint64_t now)
{
    short rev;

    switch (o->state) {
    case CS_DOWN:
        if (!have_work(o) || now < o->next_attempt) {
            return 0;
        }
        start_connect(o, now);
        return 1;
    case CS_CONNECTING:
        rev = fd_ready(o->fd, POLLOUT);
        if (rev != 0) {
            int err = 0;
            socklen_t len = sizeof(err);

            if (getsockopt(o->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
                err = errno;
            }
            if (err == 0) {
                connected(o);
            } else {
                o->addr_i++;
                fail(o, now, -err, "connecting to");
            }
            return 1;
        }
        if (now >= o->deadline) {
            o->addr_i++;
            fail(o, now, NWB_ETIMEOUT, "connecting to");
            return 1;
        }
        return 0;
    case CS_IDLE:
        rev = fd_ready(o->fd, POLLIN);
        if (rev != 0) {
            char c;
            const ssize_t n = recv(o->fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);

            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                /* The server closed the idle connection: not a failure, reconnect on demand. */
                conn_close(o);
                return 1;
            }
            if (n > 0) {
                /* Bytes nobody asked for: the connection cannot be trusted any more. */
                conn_close(o);
                return 1;
            }
        }
        if (!have_work(o) || now < o->next_attempt) {
            return 0;
        }
        if (!load_slot(o)) {
            if (have_work(o)) {
                /* Nothing loadable right now (out of memory): do not spin on POLLOUT. */
                o->next_attempt = now + (uint64_t)o->t.backoff_min_ms * MS;
            }
            return 0;
        }
        begin_request(o, now);
        return 1;
    case CS_SENDING:
        rev = fd_ready(o->fd, POLLOUT | POLLIN);
        if (rev & (POLLIN | POLLHUP | POLLERR)) {
            /* An early answer (413 before the body is read) or a reset. */
            if (do_read(o, now)) {
                return 1;
            }
        }
        if (rev & POLLOUT) {
            if (do_send(o, now)) {
                return 1;
            }
        }
        if (now >= o->deadline) {
            fail(o, now, NWB_ETIMEOUT, "sending to");
            return 1;
        }
        return 0;
    case CS_WAITING:
        rev = fd_ready(o->fd, POLLIN);
        if (rev != 0 && do_read(o, now)) {
            return 1;
        }
        if (now >= o->deadline) {
            fail(o, now, NWB_ETIMEOUT, "waiting for the response of");
            return 1;
        }
        return 0;
    default:
        return 0;
    }
}

static void lower_timeout(int *timeout_ms, uint64_t due, uint64_t now)
{
    const uint64_t ms = due > now ? (due - now + MS - 1) / MS : 0;
    const int v = ms > 60000 ? 60000 : (int)ms;

    if (*timeout_ms < 0 || v < *timeout_ms) {
        *timeout_ms = v;
    }
}

static int out_poll_prepare(struct nwb__out *base, short *events, int *timeout_ms)
{
    struct http_out *o = out_of(base);
    const uint64_t now = nwb_time_mono_ns();

    *events = 0;
    if (open_has_records(o)) {
        lower_timeout(timeout_ms, o->open_since + o->interval_ns, now);
    }
    switch (o->state) {
    case CS_DOWN:
        if (have_work(o)) {
            lower_timeout(timeout_ms, o->next_attempt, now);
        }
        return -1;
    case CS_CONNECTING:
        *events = POLLOUT;
        lower_timeout(timeout_ms, o->deadline, now);
        return o->fd;
    case CS_IDLE:
        *events = POLLIN;
        if (have_work(o)) {
            if (now >= o->next_attempt) {
                *events |= POLLOUT;
            } else {
                lower_timeout(timeout_ms, o->next_attempt, now);
            }
        }
        return o->fd;
    case CS_SENDING:
        *events = POLLOUT | POLLIN;
        lower_timeout(timeout_ms, o->deadline, now);
        return o->fd;
    case CS_WAITING:
        *events = POLLIN;
        lower_timeout(timeout_ms, o->deadline, now);
        return o->fd;
    default:
        return -1;
    }
}

static void out_service(struct nwb__out *base, short revents, uint64_t now)
{
    struct http_out *o = out_of(base);

    /* revents is only a hint: each step polls its own fd with a zero timeout, so a wake-up
     * for any other reason is harmless. */
    (void)revents;
    seal_if_due(o, now, 0);
    for (int i = 0; i < 64 && step(o, now); i++) {
        now = nwb_time_mono_ns();
    }
}

static int old_in_flight(const struct http_out *o)
{
    return o->slot.b != NULL && o->slot.src == SRC_OLD &&
           (o->state == CS_SENDING || o->state == CS_WAITING);
}

static void out_close(struct nwb__out *base, uint64_t deadline)
{
    struct http_out *o;
    uint64_t now = nwb_time_mono_ns();
    uint64_t lost = 0;

    if (base == NULL) {
        return;
    }
    o = out_of(base);
    o->closing = 1;
    seal_if_due(o, now, 1);
    if (o->failing && o->state == CS_DOWN) {
        spool_all(o, now);
    }
    /* Earlier runs' entries are not waited for, but one in flight is finished if it can be
     * (else the next run sends it again: harmless, the server drops it, but wasted). */
    while ((!out_settled(base) || old_in_flight(o)) && now < deadline) {
        short events = 0;
        int timeout = -1;
        const int fd = out_poll_prepare(base, &events, &timeout);

        lower_timeout(&timeout, deadline, now);
        if (fd >= 0) {
            struct pollfd p = {fd, events, 0};

            poll(&p, 1, timeout);
        } else if (timeout > 0) {
            /* Only a timer is pending (a reconnect backoff): wait for it, bounded. */
            poll(NULL, 0, timeout);
        }
        now = nwb_time_mono_ns();
        out_service(base, 0, now);
        if (o->state == CS_DOWN && !have_work(o)) {
            break;
        }
    }
    conn_close(o);
    if (o->slot.b != NULL && o->slot.src == SRC_OLD) {
        /* Left in its file, which a later run delivers. */
        slot_clear(o);
    }
    o->spool_retry_at = 0;
    spool_all(o, now);
    /* What is still only in memory (the spool is off, full of errors, or too small). */
    lost = o->mem_count;
    if (lost > 0) {
        stat_add(&o->st->batches_dropped, lost);
        nwb__net_report("%" PRIu64 " batches could be neither delivered to %s nor spooled in %s "
                        "and are lost",
                        lost, o->s->server,
                        o->s->spool_dir[0] != '\0' ? o->s->spool_dir : "(none)");
        while (o->mem_head != NULL) {
            struct nwb__batch *b = mem_pop(o);

            mem_release(o, b);
            nwb_free(b);
        }
        if (o->slot.b != NULL && o->slot.src == SRC_MEM) {
            mem_release(o, o->slot.b);
            slot_clear(o);
        }
    }
}

static void out_destroy(struct nwb__out *base)
{
    struct http_out *o;

    if (base == NULL) {
        return;
    }
    o = out_of(base);
    conn_close(o);
    nwb_free(o->open);
    while (o->mem_head != NULL) {
        nwb_free(mem_pop(o));
    }
    slot_clear(o);
    nwb__spool_destroy(o->spool);
    if (o->old_open) {
        nwb__spool_reader_close(&o->old, 0);
    }
    nwb_free(o->found);
    nwb_free(o);
}

static const struct nwb__out_ops http_ops = {
    out_append, out_commit, out_poll_prepare, out_service, out_settled, out_close, out_destroy,
};

void nwb__http_out_info_get(struct nwb__out *base, struct nwb__http_out_info *info)
{
    struct http_out *o = out_of(base);

    memset(info, 0, sizeof(*info));
    info->connected = o->state != CS_DOWN && o->state != CS_CONNECTING;
    info->connect_failures = o->connect_failures;
    info->mem_batches = o->mem_count;
    info->mem_bytes = o->mem_bytes;
    if (o->spool != NULL) {
        info->spool_batches = nwb__spool_live(o->spool);
        info->spool_bytes = nwb__spool_disk_bytes(o->spool);
    }
    info->old_files_pending = (o->found_n - o->found_i) + (o->old_open ? 1u : 0u);
    info->next_seq = o->next_seq + 1;
    info->rejected = o->rejected;
}

static int port_ok(const char *p)
{
    long v = 0;

    if (p[0] == '\0') {
        return 0;
    }
    for (const char *c = p; *c != '\0'; c++) {
        if (*c < '0' || *c > '9' || v > 65535) {
            return 0;
        }
        v = v * 10 + (*c - '0');
    }
    return v >= 1 && v <= 65535;
}

int nwb__http_out_create_tuned(const struct nwb__settings *s, struct nwb__stats *st,
                               const struct nwb__http_tuning *t, struct nwb__out **out,
                               char *errbuf, size_t errlen)
{
    static const struct nwb__http_tuning defaults = NWB__HTTP_TUNING_INIT;
    struct http_out *o;
    const char *bad = NULL;

    *out = NULL;
    if (s->host[0] == '\0' || strlen(s->host) > 253 || !nwb__http_header_safe(s->host, 0)) {
        bad = "the server host is empty or not a valid host name";
    } else if (!port_ok(s->port)) {
        bad = "the server port is not a number from 1 to 65535";
    } else if (!nwb__http_header_safe(s->program, 0) || strlen(s->program) > NWB_SAFE_NAME_MAX) {
        bad = "the program name is empty or unsafe";
    } else if (!nwb__http_header_safe(s->run_id, 0) || strlen(s->run_id) > 16) {
        bad = "the run id is empty, longer than 16 characters or unsafe";
    } else if (s->token[0] != '\0' && !nwb__http_header_safe(s->token, 0)) {
        bad = "the token contains spaces or control characters";
    }
    if (bad != NULL) {
        if (errbuf != NULL && errlen > 0) {
            snprintf(errbuf, errlen, "HTTP output: %s", bad);
        }
        return NWB_ECONFIG;
    }
    o = nwb_calloc(1, sizeof(*o));
    if (o == NULL) {
        if (errbuf != NULL && errlen > 0) {
            snprintf(errbuf, errlen, "HTTP output: out of memory");
        }
        return NWB_EFULL;
    }
    o->base.ops = &http_ops;
    o->s = s;
    o->st = st;
    o->t = t != NULL ? *t : defaults;
    if (o->t.backoff_min_ms < 2) {
        o->t.backoff_min_ms = 2;
    }
    if (o->t.backoff_max_ms < o->t.backoff_min_ms) {
        o->t.backoff_max_ms = o->t.backoff_min_ms;
    }
    if (o->t.hard_fail_max == 0) {
        o->t.hard_fail_max = 1;
    }
    o->batch_bytes = s->batch_bytes < NWB_NET_BATCH_MIN   ? NWB_NET_BATCH_MIN
                     : s->batch_bytes > NWB_NET_BATCH_MAX ? NWB_NET_BATCH_MAX
                                                          : (uint32_t)s->batch_bytes;
    o->interval_ns = (uint64_t)s->flush_interval_ms * MS;
    {
        const size_t hl = strlen(s->host);

        if (hl >= 2 && s->host[0] == '[' && s->host[hl - 1] == ']') {
            memcpy(o->host, s->host + 1, hl - 2);
            o->host[hl - 2] = '\0';
        } else {
            memcpy(o->host, s->host, hl + 1);
        }
    }
    o->fd = -1;
    o->state = CS_DOWN;
    o->rng = nwb_time_mono_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9E3779B97F4A7C15ull;
    for (const char *c = s->run_id; *c != '\0'; c++) {
        o->rng = (o->rng ^ (uint8_t)*c) * 0x100000001B3ull;
    }
    if (o->rng == 0) {
        o->rng = 1;
    }
    /* Numeric hosts resolve at once; a name is tried again at each connect if this fails. */
    resolve(o);
    if (s->spool_bytes > 0 && s->spool_dir[0] != '\0') {
        struct nwb__spool_ident id;

        memset(&id, 0, sizeof(id));
        memcpy(id.program, s->program, strlen(s->program) + 1);
        memcpy(id.run, s->run_id, strlen(s->run_id) + 1);
        id.start_ns = s->start_time_ns != 0 ? s->start_time_ns : nwb_time_now_ns();
        if (nwb__spool_create(s->spool_dir, &id, s->spool_bytes, &o->spool) != 0) {
            nwb_free(o);
            if (errbuf != NULL && errlen > 0) {
                snprintf(errbuf, errlen, "HTTP output: out of memory or spool path too long");
            }
            return NWB_EFULL;
        }
    }
    if (s->spool_dir[0] != '\0') {
        nwb__spool_scan(s->spool_dir, s->program, &o->found, &o->found_n);
    }
    *out = &o->base;
    return 0;
}

int nwb__http_out_create(const struct nwb__settings *s, struct nwb__stats *st,
                         struct nwb__out **out, char *errbuf, size_t errlen)
{
    return nwb__http_out_create_tuned(s, st, NULL, out, errbuf, errlen);
}
