/* SPDX-License-Identifier: MIT */
/*
 * tel_profile.c - the producer side of the profiling macros (nwb/profile.h): each thread's
 * state and ring, created on its first record and released when it exits; the registry of
 * threads the attached recorder drains (tel_profile_drain.c); BEGIN/END pairs, marks, thread
 * names, logger lines; and the strings nwb_tel_name() remembers.
 *
 * Recording takes no lock: a thread writes only its own ring. The registry lock is taken when
 * a thread starts recording, when it exits, and while the recorder drains (so a thread's state
 * is never freed under the drainer).
 */
#define _GNU_SOURCE /* pthread_setname_np, syscall */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/profile.h"
#include "nwb/telemetry_format.h"
#include "tel_prof_int.h"

_Static_assert(sizeof(nwb__prof_rec_t) == 32, "a ring record is 32 bytes");
_Static_assert((NWB_TEL_PROFILE_RING_SLOTS & (NWB_TEL_PROFILE_RING_SLOTS - 1)) == 0,
               "ring slots are a power of two");

atomic_uint nwb__prof_on;
_Thread_local nwb__prof_thread_t *nwb__prof_self;

static _Thread_local int thread_exiting;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static nwb__prof_thread_t *registry;
static void *attached; /* the draining recorder, under registry_lock */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static atomic_uint_fast64_t threads_unrecorded; /* states that could not be allocated */

static void thread_free(nwb__prof_thread_t *t)
{
    nwb_free(t->slots);
    nwb_free(t->open);
    nwb_free(t);
}

/* pthread key destructor: the thread is exiting. */
static void thread_exit(void *arg)
{
    nwb__prof_thread_t *t = arg;

    thread_exiting = 1;
    nwb__prof_self = NULL;
    pthread_mutex_lock(&registry_lock);
    if (attached != NULL) {
        t->exited = 1; /* the drainer reads what is left, then frees it */
    } else {
        nwb__prof_thread_t **pp = &registry;

        while (*pp != NULL && *pp != t) {
            pp = &(*pp)->next;
        }
        if (*pp == t) {
            *pp = t->next;
        }
        thread_free(t);
    }
    pthread_mutex_unlock(&registry_lock);
}

static void key_create(void)
{
    (void)pthread_key_create(&exit_key, thread_exit);
}

/* @p len bytes as a record of @p type followed by ceil(len / 32) slots of bytes. */
static void push_bytes(nwb__prof_thread_t *t, uint8_t type, uint64_t a, uint64_t b, uint16_t depth,
                       const char *bytes, size_t len)
{
    const size_t extra = (len + sizeof(nwb__prof_rec_t) - 1) / sizeof(nwb__prof_rec_t);
    const uint64_t h = t->head;
    nwb__prof_rec_t *r;

    if (extra > UINT8_MAX || extra + 1 > (size_t)t->mask + 1) {
        atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
        return;
    }
    if (h + 1 + extra - t->tail_seen > (uint64_t)t->mask + 1) {
        t->tail_seen = atomic_load_explicit(&t->tail, memory_order_acquire);
        if (h + 1 + extra - t->tail_seen > (uint64_t)t->mask + 1) {
            atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
            return;
        }
    }
    r = &t->slots[h & t->mask];
    r->a = a;
    r->b = b;
    r->c = 0;
    r->d = (uint32_t)len;
    r->depth = depth;
    r->type = type;
    r->extra = (uint8_t)extra;
    for (size_t i = 0; i < extra; i++) {
        const size_t off = i * sizeof(nwb__prof_rec_t);
        const size_t n = len - off < sizeof(nwb__prof_rec_t) ? len - off : sizeof(nwb__prof_rec_t);

        memcpy(&t->slots[(h + 1 + i) & t->mask], bytes + off, n);
    }
    t->head = h + 1 + extra;
    atomic_store_explicit(&t->published, t->head, memory_order_release);
}

nwb__prof_thread_t *nwb__prof_thread_slow(void)
{
    nwb__prof_thread_t *t;
    char os_name[17];

    if (nwb__prof_self != NULL) {
        return nwb__prof_self;
    }
    if (thread_exiting || pthread_once(&key_once, key_create) != 0) {
        return NULL;
    }
    t = nwb_calloc(1, sizeof(*t));
    if (t != NULL) {
        t->slots = nwb_calloc(NWB_TEL_PROFILE_RING_SLOTS, sizeof(*t->slots));
        t->open = nwb_calloc(NWB_TEL_PROFILE_STACK_MAX, sizeof(*t->open));
    }
    if (t == NULL || t->slots == NULL || t->open == NULL || pthread_setspecific(exit_key, t) != 0) {
        if (t != NULL) {
            thread_free(t);
        }
        atomic_fetch_add_explicit(&threads_unrecorded, 1, memory_order_relaxed);
        return NULL;
    }
    t->mask = NWB_TEL_PROFILE_RING_SLOTS - 1;
    t->tid = (uint32_t)syscall(SYS_gettid);
    pthread_mutex_lock(&registry_lock);
    t->next = registry;
    registry = t;
    pthread_mutex_unlock(&registry_lock);
    nwb__prof_self = t;
    /* Known by its OS name until it names itself. */
    memset(os_name, 0, sizeof(os_name));
    if (prctl(PR_GET_NAME, os_name, 0, 0, 0) == 0 && os_name[0] != '\0') {
        push_bytes(t, NWB__PROF_NAME, nwb__prof_now(), 0, 0, os_name, strnlen(os_name, 16));
    }
    return t;
}

void nwb__prof_malformed(nwb__prof_thread_t *t)
{
    atomic_fetch_add_explicit(&t->malformed, 1, memory_order_relaxed);
}

void nwb__prof_begin(nwb_tel_site_t *site)
{
    const int on =
        (atomic_load_explicit(&nwb__prof_on, memory_order_relaxed) & NWB__PROF_ON_SCOPES) != 0;
    nwb__prof_thread_t *t = on ? nwb__prof_thread() : nwb__prof_self;
    struct nwb__prof_open *o;

    if (t == NULL) {
        return;
    }
    if (t->nopen == NWB_TEL_PROFILE_STACK_MAX || (on && t->depth > NWB_TEL_DEPTH_MAX)) {
        t->overflow++; /* its END is consumed without a record */
        nwb__prof_malformed(t);
        return;
    }
    o = &t->open[t->nopen++];
    /* A BEGIN while scopes are off keeps its place so its END pairs with it. */
    o->site = on ? site : NULL;
    o->depth = t->depth;
    if (on) {
        t->depth++;
        o->start_ns = nwb__prof_now();
    }
}

void nwb__prof_end(void)
{
    nwb__prof_thread_t *t = nwb__prof_self;
    struct nwb__prof_open *o;
    uint64_t end;

    if (t == NULL) {
        if (atomic_load_explicit(&nwb__prof_on, memory_order_relaxed) & NWB__PROF_ON_SCOPES) {
            t = nwb__prof_thread();
            if (t != NULL) {
                nwb__prof_malformed(t);
            }
        }
        return;
    }
    if (t->overflow > 0) {
        t->overflow--;
        return;
    }
    if (t->nopen == 0) {
        nwb__prof_malformed(t);
        return;
    }
    o = &t->open[--t->nopen];
    if (o->site == NULL) {
        return;
    }
    end = nwb__prof_now();
    t->depth = o->depth;
    nwb__prof_push(t, (uint64_t)(uintptr_t)o->site, o->start_ns, end, (uint16_t)o->depth,
                   NWB__PROF_SCOPE);
}

void nwb__prof_close_open(uint64_t end_ns)
{
    nwb__prof_thread_t *t = nwb__prof_self;

    if (t == NULL) {
        return;
    }
    while (t->nopen > 0) {
        struct nwb__prof_open *o = &t->open[--t->nopen];

        nwb__prof_malformed(t);
        if (o->site != NULL) {
            const uint64_t start = o->start_ns < end_ns ? o->start_ns : end_ns;

            t->depth = o->depth;
            nwb__prof_push(t, (uint64_t)(uintptr_t)o->site, start, end_ns, (uint16_t)o->depth,
                           NWB__PROF_SCOPE);
        }
    }
    t->overflow = 0;
}

void nwb_tel_mark(const char *text)
{
    nwb__prof_thread_t *t;
    size_t len;

    if (text == NULL ||
        !(atomic_load_explicit(&nwb__prof_on, memory_order_relaxed) & NWB__PROF_ON_MARKS)) {
        return;
    }
    len = strnlen(text, NWB_TEL_MARK_MAX);
    t = nwb__prof_thread();
    if (t != NULL && len > 0) {
        push_bytes(t, NWB__PROF_MARK, nwb__prof_now(), 0, 0, text, len);
    }
}

void nwb_tel_thread_name(const char *name)
{
    nwb__prof_thread_t *t;
    char os_name[16];
    size_t len;

    if (name == NULL) {
        return;
    }
    len = strnlen(name, NWB_TEL_THREAD_NAME_MAX);
    memcpy(os_name, name, len < 15 ? len : 15);
    os_name[len < 15 ? len : 15] = '\0';
    (void)pthread_setname_np(pthread_self(), os_name);
    t = nwb__prof_thread();
    if (t != NULL) {
        push_bytes(t, NWB__PROF_NAME, nwb__prof_now(), 0, 0, name, len);
    }
}

void nwb__prof_text(uint64_t ts, unsigned level, uint32_t producer, const char *msg, size_t len)
{
    nwb__prof_thread_t *t;

    if (!(atomic_load_explicit(&nwb__prof_on, memory_order_relaxed) & NWB__PROF_ON_TEXT)) {
        return;
    }
    if (len > NWB_TEL_TEXT_MAX) {
        len = NWB_TEL_TEXT_MAX;
    }
    t = nwb__prof_thread();
    if (t != NULL) {
        push_bytes(t, NWB__PROF_TEXT, ts, producer, (uint16_t)level, msg, len);
    }
}

/* ---- The recorder's side: attach, flags, drain -------------------------------------------- */

int nwb__prof_attach(void *rec)
{
    int mine;

    pthread_mutex_lock(&registry_lock);
    if (attached == NULL) {
        attached = rec;
    }
    mine = attached == rec;
    pthread_mutex_unlock(&registry_lock);
    return mine;
}

void nwb__prof_detach(void *rec)
{
    pthread_mutex_lock(&registry_lock);
    if (attached == rec) {
        nwb__prof_thread_t **pp = &registry;

        attached = NULL;
        atomic_store_explicit(&nwb__prof_on, 0, memory_order_relaxed);
        while (*pp != NULL) {
            nwb__prof_thread_t *t = *pp;

            if (t->exited) {
                *pp = t->next;
                thread_free(t);
                continue;
            }
            /* What is left belongs to no recorder: the next one starts empty. */
            atomic_store_explicit(&t->tail,
                                  atomic_load_explicit(&t->published, memory_order_acquire),
                                  memory_order_release);
            pp = &t->next;
        }
    }
    pthread_mutex_unlock(&registry_lock);
}

void nwb__prof_set_on(unsigned bits)
{
    atomic_store_explicit(&nwb__prof_on, bits, memory_order_relaxed);
}

uint64_t nwb__prof_threads_unrecorded(void)
{
    return atomic_load_explicit(&threads_unrecorded, memory_order_relaxed);
}

void nwb__prof_drain(const struct nwb__prof_drain_ops *ops, void *ctx)
{
    static _Thread_local uint8_t bytes[256 * sizeof(nwb__prof_rec_t)];
    nwb__prof_thread_t **pp;

    pthread_mutex_lock(&registry_lock);
    pp = &registry;
    while (*pp != NULL) {
        nwb__prof_thread_t *t = *pp;
        const uint64_t head = atomic_load_explicit(&t->published, memory_order_acquire);
        uint64_t tail = atomic_load_explicit(&t->tail, memory_order_relaxed);
        uint64_t got = 0;

        while (tail < head) {
            const nwb__prof_rec_t *r = &t->slots[tail & t->mask];
            size_t len = 0;

            if (r->extra > 0) {
                len = r->d;
                for (unsigned i = 0; i < r->extra; i++) {
                    memcpy(bytes + i * sizeof(nwb__prof_rec_t), &t->slots[(tail + 1 + i) & t->mask],
                           sizeof(nwb__prof_rec_t));
                }
            }
            ops->record(ctx, t->tid, r, bytes, len);
            tail += 1u + r->extra;
            got++;
        }
        atomic_store_explicit(&t->tail, tail, memory_order_release);
        t->consumed += got;
        ops->thread(ctx, t->tid, t->consumed,
                    atomic_load_explicit(&t->dropped, memory_order_relaxed),
                    atomic_load_explicit(&t->malformed, memory_order_relaxed), t->exited, got);
        if (t->exited) {
            *pp = t->next;
            thread_free(t);
            continue;
        }
        pp = &t->next;
    }
    pthread_mutex_unlock(&registry_lock);
}
