/* SPDX-License-Identifier: MIT */
/*
 * tel_cache.c - the report states of live runs (telemetry_int.h): each run's storage, report
 * state and upload outcomes stay in memory between its uploads, in an LRU bounded by runs and
 * bytes (--telemetry-cache-runs, --telemetry-cache-bytes). A run that is not in memory (never
 * seen since the start, evicted, or broken by a failed write) is rebuilt once from its stored
 * stream when it is next acquired, never once per upload. Any thread; the list is guarded by
 * one mutex held only for bookkeeping, never for I/O.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "tel_run_int.h"

struct entry {
    struct nwb__tel_run run; /* first: the holder's pointer is the entry's */
    struct entry *prev, *next;
    int in_use;
    size_t bytes; /* accounted in the cache's total */
};

struct nwb__tel_cache {
    pthread_mutex_t mu;
    struct entry lru; /* sentinel: lru.next is the most recently used */
    unsigned count;
    size_t bytes;
    unsigned max_runs;
    size_t max_bytes;
    struct nwb__tel_ingest_metrics *m;
};

static void gauge_set(struct nwb__tel_cache *c)
{
    if (c->m != NULL) {
        atomic_store_explicit(&c->m->cached_runs, c->count, memory_order_relaxed);
        atomic_store_explicit(&c->m->cached_bytes, c->bytes, memory_order_relaxed);
    }
}

static void list_unlink(struct entry *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->prev = e->next = e;
}

static void list_push_front(struct nwb__tel_cache *c, struct entry *e)
{
    e->next = c->lru.next;
    e->prev = &c->lru;
    c->lru.next->prev = e;
    c->lru.next = e;
}

/* Drop what the run holds in memory (it is rebuilt from its files when needed again). */
static void run_unload(struct nwb__tel_run *run)
{
    nwb__tel_store_close(run->store);
    nwb_tel_report_state_destroy(run->state);
    run->store = NULL;
    run->state = NULL;
    run->broken = 0;
}

static size_t run_memory(const struct nwb__tel_run *run)
{
    return sizeof(struct entry) + (run->store != NULL ? nwb__tel_store_memory(run->store) : 0) +
           (run->state != NULL ? nwb_tel_report_state_memory_bytes(run->state) : 0);
}

int nwb__tel_cache_create(unsigned max_runs, size_t max_bytes, struct nwb__tel_ingest_metrics *m,
                          struct nwb__tel_cache **out)
{
    struct nwb__tel_cache *c = nwb_calloc(1, sizeof(*c));

    *out = NULL;
    if (c == NULL) {
        return -ENOMEM;
    }
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        nwb_free(c);
        return -ENOMEM;
    }
    c->lru.prev = c->lru.next = &c->lru;
    c->max_runs = max_runs > 0 ? max_runs : 1;
    c->max_bytes = max_bytes;
    c->m = m;
    gauge_set(c);
    *out = c;
    return 0;
}

void nwb__tel_cache_destroy(struct nwb__tel_cache *c)
{
    if (c == NULL) {
        return;
    }
    while (c->lru.next != &c->lru) {
        struct entry *e = c->lru.next;

        list_unlink(e);
        run_unload(&e->run);
        nwb_free(e);
    }
    c->count = 0;
    c->bytes = 0;
    gauge_set(c);
    pthread_mutex_destroy(&c->mu);
    nwb_free(c);
}

/* Open and rebuild @p run (not in memory). Outside the lock: this is the O(run) part. */
static int run_load(struct nwb__tel_cache *c, struct nwb__tel_run *run, int create)
{
    char path[NWB__TEL_PATH_MAX];
    int err = nwb_tel_report_state_create(&run->state);

    if (err == 0) {
        err = nwb__tel_store_open(run->dir, create, run->state, &run->store);
    }
    if (err == 0) {
        err = nwb__tel_path(path, run->dir, NWB_TEL_INGEST_LOG_NAME);
    }
    if (err == 0) {
        err = nwb_tel_ingest_log_load(path, &run->ingest);
    }
    if (err != 0) {
        run_unload(run);
        return err;
    }
    if (c->m != NULL) {
        atomic_fetch_add_explicit(&c->m->rebuilds, 1, memory_order_relaxed);
    }
    return 0;
}

int nwb__tel_cache_acquire(struct nwb__tel_cache *c, const char *dir, int create,
                           struct nwb__tel_run **out)
{
    struct entry *e;
    int err = 0;

    *out = NULL;
    if (strlen(dir) >= sizeof(e->run.dir)) {
        return NWB_ETOOBIG;
    }
    pthread_mutex_lock(&c->mu);
    for (e = c->lru.next; e != &c->lru; e = e->next) {
        if (strcmp(e->run.dir, dir) == 0) {
            break;
        }
    }
    if (e != &c->lru) {
        /* The endpoint's lanes give a run to one caller at a time. */
        if (e->in_use) {
            pthread_mutex_unlock(&c->mu);
            return -EBUSY;
        }
        list_unlink(e);
    } else {
        e = nwb_calloc(1, sizeof(*e));
        if (e == NULL) {
            pthread_mutex_unlock(&c->mu);
            return -ENOMEM;
        }
        snprintf(e->run.dir, sizeof(e->run.dir), "%s", dir);
        e->prev = e->next = e;
        e->bytes = sizeof(*e);
        c->count++;
        c->bytes += e->bytes;
    }
    e->in_use = 1;
    list_push_front(c, e);
    gauge_set(c);
    pthread_mutex_unlock(&c->mu);

    if (e->run.broken) {
        run_unload(&e->run);
    }
    if (e->run.state == NULL) {
        err = run_load(c, &e->run, create);
    }
    if (err != 0) {
        pthread_mutex_lock(&c->mu);
        list_unlink(e);
        c->count--;
        c->bytes -= e->bytes;
        gauge_set(c);
        pthread_mutex_unlock(&c->mu);
        nwb_free(e);
        return err;
    }
    *out = &e->run;
    return 0;
}

void nwb__tel_cache_release(struct nwb__tel_cache *c, struct nwb__tel_run *run)
{
    struct entry *e = (struct entry *)run;
    struct entry *evicted = NULL;
    size_t bytes;

    if (run == NULL) {
        return;
    }
    if (run->broken) {
        run_unload(run);
    }
    bytes = run_memory(run);
    pthread_mutex_lock(&c->mu);
    c->bytes = c->bytes - e->bytes + bytes;
    e->bytes = bytes;
    e->in_use = 0;
    /* Evict from the cold end; the run given back always stays (one run larger than the
     * byte cap still keeps its state between uploads). */
    for (struct entry *v = c->lru.prev;
         v != &c->lru && (c->count > c->max_runs || c->bytes > c->max_bytes);) {
        struct entry *p = v->prev;

        if (!v->in_use && v != e) {
            list_unlink(v);
            c->count--;
            c->bytes -= v->bytes;
            v->next = evicted;
            evicted = v;
        }
        v = p;
    }
    gauge_set(c);
    pthread_mutex_unlock(&c->mu);
    while (evicted != NULL) {
        struct entry *v = evicted;

        evicted = v->next;
        run_unload(&v->run);
        nwb_free(v);
        if (c->m != NULL) {
            atomic_fetch_add_explicit(&c->m->evictions, 1, memory_order_relaxed);
        }
    }
}
