/* SPDX-License-Identifier: MIT */
/*
 * client_worker.c - the client's one background thread: drains every
 * producer ring (per-thread order kept), renders each record's message,
 * hands records to the output, answers flush requests, frees the rings of
 * exited threads, and sleeps on an eventfd (plus the output's fd) when idle.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/log_batch.h"
#include "nwb/log_line.h"
#include "nwb/log_tail.h"

#include "client_core.h"
#include "client_fmt.h"

/* Records handed to the output per round (then commit, service, flush checks). */
#define DRAIN_BUDGET 4096u
/* Empty rounds (each ends in sched_yield) before the worker goes to sleep. */
#define IDLE_ROUNDS 64u
/* Poll timeout while the output is full but offers nothing to wait on. */
#define EFULL_RETRY_MS 10
/* The rings' thread names are read again from /proc at most this often (a thread renamed after
 * its first log call shows its new name within a second of the worker running). */
#define NAME_REFRESH_NS 1000000000ull

struct nwb__worker {
    struct nwb__ring **rings; /* snapshot of the client's list */
    size_t nrings;
    size_t cap;
    unsigned rings_gen; /* the list generation the snapshot matches */
    char *msg;          /* render buffer, NWB_LOG_RECORD_MSG_MAX + 1 bytes */
    int efull;          /* the output said NWB_EFULL: wait for service() before draining */
    uint64_t flush_seen;
    int flush_pending;
    int stopping;
    uint64_t deadline; /* shutdown deadline (monotonic ns) */
    uint64_t names_at; /* when the thread names were last read (monotonic ns) */
};

/* ---- rings ---- */

static void refresh_rings(struct nwb_client *c, struct nwb__worker *w)
{
    size_t n = 0;

    if (atomic_load_explicit(&c->rings_gen, memory_order_acquire) == w->rings_gen) {
        return;
    }
    pthread_mutex_lock(&c->ring_lock);
    for (struct nwb__ring *r = c->rings; r != NULL; r = r->next) {
        n++;
    }
    if (n > w->cap) {
        size_t cap = w->cap * 2 > n ? w->cap * 2 : n;
        struct nwb__ring **grown = nwb_realloc(w->rings, cap * sizeof(*grown));

        if (grown == NULL) {
            pthread_mutex_unlock(&c->ring_lock);
            return; /* keep the old snapshot; try again next round */
        }
        w->rings = grown;
        w->cap = cap;
    }
    n = 0;
    for (struct nwb__ring *r = c->rings; r != NULL; r = r->next) {
        w->rings[n++] = r;
    }
    w->nrings = n;
    w->rings_gen = atomic_load_explicit(&c->rings_gen, memory_order_relaxed);
    pthread_mutex_unlock(&c->ring_lock);
}

static int ring_empty(struct nwb__ring *r)
{
    return atomic_load_explicit(&r->head, memory_order_acquire) ==
           atomic_load_explicit(&r->tail, memory_order_relaxed);
}

static int all_empty(const struct nwb__worker *w)
{
    for (size_t i = 0; i < w->nrings; i++) {
        if (!ring_empty(w->rings[i])) {
            return 0;
        }
    }
    return 1;
}

/* ---- thread names ---- */

/* The kernel's name of @p r's thread, from /proc/self/task/TID/comm; kept as it was on failure. */
static void ring_name_read(struct nwb__ring *r)
{
    char path[48];
    char comm[NWB_LOG_THREAD_NAME_MAX + 2];
    ssize_t n;
    int fd;

    (void)snprintf(path, sizeof(path), "/proc/self/task/%" PRIu64 "/comm", r->thread_id);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return; /* the thread is gone, or no /proc */
    }
    n = read(fd, comm, sizeof(comm));
    close(fd);
    if (n <= 0) {
        return;
    }
    if (comm[n - 1] == '\n') {
        n--;
    }
    if (n > (ssize_t)NWB_LOG_THREAD_NAME_MAX) {
        n = (ssize_t)NWB_LOG_THREAD_NAME_MAX;
    }
    memcpy(r->thread_name, comm, (size_t)n);
    r->thread_name_len = (uint8_t)n;
}

/* Read every live ring's thread name again, at most once per NAME_REFRESH_NS. */
static void names_refresh(struct nwb__worker *w, uint64_t now)
{
    if (now - w->names_at < NAME_REFRESH_NS) {
        return;
    }
    w->names_at = now;
    for (size_t i = 0; i < w->nrings; i++) {
        if (!atomic_load_explicit(&w->rings[i]->closed, memory_order_acquire)) {
            ring_name_read(w->rings[i]);
        }
    }
}

/* ---- records ---- */

static void note_build(struct nwb__worker *w, uint64_t count, uint64_t time_ns,
                       const struct nwb__ring *r, nwb_log_record_t *rec)
{
    int n = snprintf(w->msg, NWB_LOG_RECORD_MSG_MAX + 1u,
                     "nwb: dropped %" PRIu64 " record%s here (ring full)", count,
                     count == 1 ? "" : "s");

    memset(rec, 0, sizeof(*rec));
    rec->time_ns = time_ns;
    rec->thread_id = r->thread_id;
    rec->thread_name = r->thread_name;
    rec->thread_name_len = r->thread_name_len;
    rec->level = NWB_LOG_WARNING;
    rec->flags = NWB_LOG_RECORD_DROPNOTE;
    rec->msg = w->msg;
    rec->msg_len = n > 0 ? (uint32_t)n : 0;
    rec->file = "";
}

static void record_build(struct nwb__worker *w, const struct nwb__clock *clk,
                         const struct nwb__ring *r, const struct nwb__rec *h, nwb_log_record_t *rec)
{
    const uint8_t *payload = (const uint8_t *)h + NWB__REC_HDR;
    const nwb_log_site_t *site = h->site;
    const char *base;
    size_t flen;

    if (h->type == NWB__REC_DROPNOTE) {
        uint64_t count;

        memcpy(&count, payload, sizeof(count));
        note_build(w, count, nwb__clock_to_wall(clk, h->time_ns), r, rec);
        return;
    }
    memset(rec, 0, sizeof(*rec));
    rec->time_ns = nwb__clock_to_wall(clk, h->time_ns);
    rec->thread_id = r->thread_id;
    rec->thread_name = r->thread_name;
    rec->thread_name_len = r->thread_name_len;
    rec->flags = h->flags;
    if (h->type == NWB__REC_ARGS) {
        rec->msg_len = (uint32_t)nwb__fmt_render(site->fmt, payload, h->aux, payload + h->aux,
                                                 h->size - NWB__REC_HDR - h->aux, w->msg,
                                                 NWB_LOG_RECORD_MSG_MAX + 1u, &rec->flags);
        rec->msg = w->msg;
    } else {
        rec->msg = (const char *)payload;
        rec->msg_len = h->size - NWB__REC_HDR - h->aux;
    }
    rec->level = site->level < NWB_LOG_LEVEL_COUNT ? site->level : NWB_LOG_ERROR;
    if (site->flags & NWB_LOG_SITE_ESSENTIAL) {
        rec->flags |= NWB_LOG_RECORD_ESSENTIAL;
    }
    rec->line = site->line;
    base = site->file != NULL ? site->file : "";
    if (strrchr(base, '/') != NULL) {
        base = strrchr(base, '/') + 1;
    }
    flen = strlen(base);
    rec->file = base;
    rec->file_len = (uint16_t)(flen > NWB_LOG_RECORD_FILE_MAX ? NWB_LOG_RECORD_FILE_MAX : flen);
}

/* The next record of @p r this round, skipping PAD records; NULL when there is none. */
static const struct nwb__rec *ring_peek(struct nwb__ring *r)
{
    while (r->drain_tail != r->drain_head) {
        const struct nwb__rec *h =
            (const struct nwb__rec *)(const void *)(r->buf + (r->drain_tail & r->mask));

        if (NWB_UNLIKELY(h->size < 8u || h->size > r->drain_head - r->drain_tail ||
                         (h->size & 7u) != 0)) {
            r->drain_tail = r->drain_head; /* cannot happen: never loop on garbage */
            break;
        }
        if (h->type != NWB__REC_PAD) {
            return h;
        }
        r->drain_tail += h->size;
    }
    return NULL;
}

#define TAIL_PUBLISH_EVERY 16u

/*
 * Hand @p r's consumed space back to its producer. A BLOCK producer that
 * sleeps for room (waiting set) is woken once half the ring is free, or
 * whatever is free at the end of a round (@p end). Nobody waiting costs a
 * fence and a load of a line the worker owns anyway.
 */
static inline void tail_publish(struct nwb__ring *r, int end)
{
    atomic_store_explicit(&r->tail, r->drain_tail, memory_order_release);
    /* Dekker pair with the producer's "waiting = 1; fence; read tail" (client_producer.c). */
    atomic_thread_fence(memory_order_seq_cst);
    if (NWB_UNLIKELY(atomic_load_explicit(&r->waiting, memory_order_relaxed) != 0) &&
        (end || r->drain_head - r->drain_tail <= r->cap / 2u) &&
        atomic_exchange_explicit(&r->waiting, 0, memory_order_acq_rel) != 0) {
        atomic_fetch_add_explicit(&r->wake_seq, 1u, memory_order_release);
        (void)syscall(SYS_futex, (uint32_t *)(uintptr_t)&r->wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL,
                      NULL, 0);
    }
}

/*
 * One round: hand the records published so far to the output, merging the
 * rings by timestamp (each ring stays in its own order), at most
 * DRAIN_BUDGET records. Returns 1 when any ring's tail moved.
 */
static int drain_all(struct nwb_client *c, struct nwb__worker *w)
{
    const int tail_on = nwb_log_tail_enabled();
    int moved = 0;

    for (size_t i = 0; i < w->nrings; i++) {
        struct nwb__ring *r = w->rings[i];

        r->drain_head = atomic_load_explicit(&r->head, memory_order_acquire);
        r->drain_tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    }
    for (unsigned n = 0; n < DRAIN_BUDGET; n++) {
        struct nwb__ring *best = NULL;
        const struct nwb__rec *bh = NULL;
        nwb_log_record_t rec;
        nwb_client_line_tap_fn tap;

        for (size_t i = 0; i < w->nrings; i++) {
            const struct nwb__rec *h = ring_peek(w->rings[i]);

            if (h != NULL && (bh == NULL || h->time_ns < bh->time_ns)) {
                best = w->rings[i];
                bh = h;
            }
        }
        if (best == NULL) {
            break;
        }
        record_build(w, &c->clock, best, bh, &rec);
        if (c->out->ops->append(c->out, &rec) == NWB_EFULL) {
            w->efull = 1;
            break;
        }
        if (tail_on) {
            nwb_log_tail_append(&rec); /* the crash package's last lines */
        }
        tap = atomic_load_explicit(&c->tap, memory_order_acquire);
        if (tap != NULL) {
            tap(atomic_load_explicit(&c->tap_ctx, memory_order_relaxed), &rec);
        }
        best->drain_tail += bh->size;
        /* Hand space back every TAIL_PUBLISH_EVERY records (and at the end of the round, below)
         * rather than after each one: fewer stores to the line a waiting producer reads. */
        if ((n + 1) % TAIL_PUBLISH_EVERY == 0) {
            tail_publish(best, 0);
        }
        moved = 1;
    }
    for (size_t i = 0; i < w->nrings; i++) { /* PAD records skipped by ring_peek */
        struct nwb__ring *r = w->rings[i];

        if (r->drain_tail != atomic_load_explicit(&r->tail, memory_order_relaxed)) {
            tail_publish(r, 1);
            moved = 1;
        } else if (NWB_UNLIKELY(atomic_load_explicit(&r->waiting, memory_order_relaxed) != 0)) {
            tail_publish(r, 1); /* published mid-round already: the waiter still needs a wake */
        }
    }
    return moved;
}

/* Drops a thread had counted but not yet noted (it exited, or the client is closing). */
static int note_pending(struct nwb_client *c, struct nwb__worker *w, struct nwb__ring *r)
{
    nwb_log_record_t rec;

    if (r->pending_drops == 0) {
        return 0;
    }
    note_build(w, r->pending_drops, nwb_time_now_ns(), r, &rec);
    if (c->out->ops->append(c->out, &rec) == NWB_EFULL) {
        return NWB_EFULL;
    }
    r->pending_drops = 0;
    return 0;
}

/* Free the rings of exited threads once they are drained. */
static void reap_closed(struct nwb_client *c, struct nwb__worker *w)
{
    size_t i = 0;

    while (i < w->nrings) {
        struct nwb__ring *r = w->rings[i];
        struct nwb__ring **pp;

        if (!atomic_load_explicit(&r->closed, memory_order_acquire) || !ring_empty(r) || w->efull ||
            note_pending(c, w, r) != 0) {
            i++;
            continue;
        }
        pthread_mutex_lock(&c->ring_lock);
        for (pp = &c->rings; *pp != NULL && *pp != r; pp = &(*pp)->next) {
        }
        if (*pp == r) {
            *pp = r->next;
        }
        c->retired_accepted += atomic_load_explicit(&r->accepted, memory_order_relaxed);
        c->retired_dropped += atomic_load_explicit(&r->dropped, memory_order_relaxed);
        if (atomic_load_explicit(&c->rings_gen, memory_order_relaxed) == w->rings_gen) {
            w->rings_gen = atomic_fetch_add_explicit(&c->rings_gen, 1u, memory_order_release) + 1u;
        } else {
            atomic_fetch_add_explicit(&c->rings_gen, 1u, memory_order_release);
        }
        pthread_mutex_unlock(&c->ring_lock);
        w->rings[i] = w->rings[--w->nrings];
        nwb__ring_destroy(r);
    }
}

/* Whatever is still in the rings when the shutdown deadline passed is dropped and counted. */
static void drop_rest(struct nwb_client *c, struct nwb__worker *w)
{
    for (size_t i = 0; i < w->nrings; i++) {
        struct nwb__ring *r = w->rings[i];
        const uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
        uint64_t n = 0;

        while (tail != head) {
            const struct nwb__rec *h =
                (const struct nwb__rec *)(const void *)(r->buf + (tail & r->mask));

            if (h->size < 8u || h->size > head - tail) {
                break;
            }
            n += h->type == NWB__REC_ARGS || h->type == NWB__REC_TEXT;
            tail += h->size;
        }
        atomic_store_explicit(&r->tail, head, memory_order_release);
        atomic_fetch_add_explicit(&c->st.records_dropped, n, memory_order_relaxed);
    }
}

/* ---- flush ---- */

static void flush_done(struct nwb_client *c, uint64_t gen)
{
    pthread_mutex_lock(&c->flush_lock);
    if (gen > c->flush_ack) {
        c->flush_ack = gen;
    }
    pthread_cond_broadcast(&c->flush_cond);
    pthread_mutex_unlock(&c->flush_lock);
}

/* A new request: everything published so far in each ring must get through. */
static void flush_begin(struct nwb_client *c, struct nwb__worker *w)
{
    const uint64_t req = atomic_load_explicit(&c->flush_req, memory_order_acquire);

    if (req == w->flush_seen) {
        return;
    }
    refresh_rings(c, w);
    for (size_t i = 0; i < w->nrings; i++) {
        w->rings[i]->flush_mark = atomic_load_explicit(&w->rings[i]->head, memory_order_acquire);
    }
    w->flush_seen = req;
    w->flush_pending = 1;
}

static void flush_check(struct nwb_client *c, struct nwb__worker *w)
{
    if (!w->flush_pending) {
        return;
    }
    for (size_t i = 0; i < w->nrings; i++) {
        if (atomic_load_explicit(&w->rings[i]->tail, memory_order_relaxed) <
            w->rings[i]->flush_mark) {
            return;
        }
    }
    if (!c->out->ops->settled(c->out)) {
        return;
    }
    w->flush_pending = 0;
    flush_done(c, w->flush_seen);
}

/* ---- waiting ---- */

static void efd_clear(struct nwb_client *c)
{
    uint64_t v;
    ssize_t n = read(c->efd, &v, sizeof(v));

    (void)n; /* EAGAIN when nothing was signalled */
}

/*
 * Let the output make progress. @p block 0: only look. Otherwise wait on the
 * eventfd and the output's fd up to the output's timeout, and (when
 * @p block > 0) at most @p block ms.
 */
static void service_poll(struct nwb_client *c, struct nwb__worker *w, int block)
{
    struct pollfd pfd[2];
    short events = 0;
    int timeout = -1;
    const int fd = c->out->ops->poll_prepare(c->out, &events, &timeout);
    int n;

    if (!block) {
        if (fd < 0 && timeout != 0) {
            return;
        }
        pfd[0].fd = fd;
        pfd[0].events = events;
        pfd[0].revents = 0;
        n = fd >= 0 ? poll(pfd, 1, 0) : 0;
        if ((n > 0 && pfd[0].revents != 0) || timeout == 0) {
            c->out->ops->service(c->out, n > 0 ? pfd[0].revents : 0, nwb_time_mono_ns());
        }
        return;
    }
    if (w->efull && fd < 0 && (timeout < 0 || timeout > EFULL_RETRY_MS)) {
        timeout = EFULL_RETRY_MS;
    }
    if (block > 0 && (timeout < 0 || timeout > block)) {
        timeout = block;
    }
    pfd[0].fd = c->efd;
    pfd[0].events = POLLIN;
    pfd[0].revents = 0;
    pfd[1].fd = fd;
    pfd[1].events = events;
    pfd[1].revents = 0;
    n = poll(pfd, fd >= 0 ? 2u : 1u, timeout);
    if (n > 0 && pfd[0].revents != 0) {
        efd_clear(c);
    }
    if (n == 0 || (fd >= 0 && n > 0 && pfd[1].revents != 0)) {
        c->out->ops->service(c->out, n > 0 ? pfd[1].revents : 0, nwb_time_mono_ns());
    }
}

/* Anything that must not wait for a wake-up? */
static int work_visible(struct nwb_client *c, struct nwb__worker *w)
{
    if (atomic_load_explicit(&c->stop, memory_order_acquire) ||
        atomic_load_explicit(&c->flush_req, memory_order_acquire) != w->flush_seen ||
        atomic_load_explicit(&c->rings_gen, memory_order_acquire) != w->rings_gen) {
        return 1;
    }
    for (size_t i = 0; i < w->nrings; i++) {
        if (!ring_empty(w->rings[i]) ||
            atomic_load_explicit(&w->rings[i]->closed, memory_order_acquire)) {
            return 1;
        }
    }
    return 0;
}

static void worker_sleep(struct nwb_client *c, struct nwb__worker *w, int deep)
{
    atomic_store_explicit(&c->sleeping, deep ? NWB__SLEEP_DEEP : NWB__SLEEP_LAZY,
                          memory_order_seq_cst);
    if (deep) {
        /*
         * Dekker pair with the producer's "publish; light barrier; read
         * sleeping": either it sees DEEP and wakes us, or we see its record.
         * A lazy sleep needs no such guarantee: it ends on its own timeout.
         */
        nwb__barrier_heavy();
    }
    if (work_visible(c, w)) {
        atomic_store_explicit(&c->sleeping, NWB__SLEEP_AWAKE, memory_order_relaxed);
        sched_yield(); /* never a tight loop, even if that work cannot be done yet */
        return;
    }
    service_poll(c, w, deep ? -1 : (int)NWB__LAZY_SLEEP_MS);
    atomic_store_explicit(&c->sleeping, NWB__SLEEP_AWAKE, memory_order_relaxed);
}

/* ---- the thread ---- */

static void *worker_main(void *arg)
{
    struct nwb_client *c = arg;
    struct nwb__worker *w = c->w;
    const unsigned deep_after = NWB__DEEP_AFTER_MS / NWB__LAZY_SLEEP_MS;
    unsigned idle = 0;
    unsigned lazy = 0; /* lazy sleeps in a row that found nothing */

    nwb__producer_mark_worker();
    for (;;) {
        uint64_t now;
        int moved;

        if (!w->stopping && atomic_load_explicit(&c->stop, memory_order_acquire)) {
            w->stopping = 1;
            w->deadline = nwb_time_mono_ns() + (uint64_t)NWB__CLOSE_DEADLINE_MS * 1000000u;
        }
        /* First, before the rings and their heads are read: every stamp this round drains
         * converts from an anchor taken before it (the first one may wait out calibration). */
        nwb__clock_anchor_refresh(&c->clock);
        refresh_rings(c, w);
        names_refresh(w, nwb_time_mono_ns());
        flush_begin(c, w);
        moved = w->efull ? 0 : drain_all(c, w);
        now = nwb_time_mono_ns();
        c->out->ops->commit(c->out, now, w->flush_pending || w->stopping);
        reap_closed(c, w);
        flush_check(c, w);
        if (w->stopping) {
            if (!w->efull && all_empty(w)) {
                break;
            }
            if (now >= w->deadline) {
                drop_rest(c, w);
                break;
            }
        }
        if (moved) {
            idle = 0;
            lazy = 0;
            service_poll(c, w, 0);
            continue;
        }
        if (w->efull) {
            service_poll(c, w, -1);
            w->efull = 0; /* try again; append says EFULL again if there is still no room */
            continue;
        }
        if (++idle < IDLE_ROUNDS || w->stopping) {
            service_poll(c, w, 0);
            sched_yield();
            continue;
        }
        if (lazy < deep_after) {
            lazy++;
        }
        worker_sleep(c, w, lazy >= deep_after);
        idle = IDLE_ROUNDS - 1u; /* one empty round after a wake-up, then sleep again */
    }
    /* No producer is left (retired before stop): their uncounted gaps go at the end. */
    for (size_t i = 0; i < w->nrings; i++) {
        (void)note_pending(c, w, w->rings[i]);
    }
    c->out->ops->commit(c->out, nwb_time_mono_ns(), 1);
    c->out->ops->close(c->out, w->deadline);
    flush_done(c, atomic_load_explicit(&c->flush_req, memory_order_acquire));
    return NULL;
}

int nwb__worker_start(struct nwb_client *c)
{
    struct nwb__worker *w = nwb_calloc(1, sizeof(*w));
    sigset_t all;
    sigset_t old;
    int rc;

    if (w == NULL) {
        return -ENOMEM;
    }
    w->cap = 8;
    w->names_at = nwb_time_mono_ns(); /* new rings have the name they were created with */
    w->rings = nwb_calloc(w->cap, sizeof(*w->rings));
    w->msg = nwb_malloc(NWB_LOG_RECORD_MSG_MAX + 1u);
    if (w->rings == NULL || w->msg == NULL) {
        rc = -ENOMEM;
        goto fail_free;
    }
    c->w = w;
    /*
     * The worker takes no asynchronous signals (they belong to the game's
     * threads); faults stay unblocked so a crash handler still runs there.
     */
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    sigdelset(&all, SIGTRAP);
    sigdelset(&all, SIGABRT);
    sigdelset(&all, SIGSYS);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&c->thread, NULL, worker_main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        rc = -rc;
        c->w = NULL;
        goto fail_free;
    }
    (void)pthread_setname_np(c->thread, "nwb-log");
    return 0;

fail_free:
    nwb_free(w->msg);
    nwb_free(w->rings);
    nwb_free(w);
    return rc;
}

void nwb__worker_stop(struct nwb_client *c)
{
    struct nwb__worker *w = c != NULL ? c->w : NULL;

    if (w == NULL) {
        return;
    }
    atomic_store_explicit(&c->stop, 1, memory_order_release);
    nwb__worker_wake(c, 1);
    pthread_join(c->thread, NULL);
    nwb_free(w->msg);
    nwb_free(w->rings);
    nwb_free(w);
    c->w = NULL;
}
