/* SPDX-License-Identifier: MIT */
/*
 * client_producer.c - the logger behind the NWB_LOGGER_* macros: what runs on
 * the game's threads. Each thread copies its call's site pointer, time and
 * raw arguments into its own ring (client_ring.h) without locks, allocation
 * or I/O; the worker formats later. Also the lifetime protocol that keeps a
 * call from ever touching a destroyed client, and the thread-exit hook.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/log_batch.h"
#include "nwb/log_line.h"

#include "client_core.h"
#include "client_fmt.h"

#if defined(__SANITIZE_THREAD__)
#define NWB__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NWB__TSAN 1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#define NWB__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NWB__ASAN 1
#endif
#endif

/* The word-at-a-time string length reads bytes past a string's NUL (within its aligned word),
 * which the sanitizers report; under them, and under valgrind (checked at run time), it is
 * strnlen. */
#if defined(NWB__ASAN) || defined(NWB__TSAN)
#define NWB__STRLEN_WORDS 0
#else
#define NWB__STRLEN_WORDS 1
#endif
#if NWB__STRLEN_WORDS && defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define NWB__HAVE_VALGRIND_H 1
#endif
#endif

enum { PROD_FRESH = 0, PROD_LINKED = 1, PROD_EXITED = 2 };

/*
 * Per-thread state, in static TLS so it outlives every client. in_call is
 * the only field other threads read (destroy waits for it to clear).
 */
struct producer {
    atomic_int in_call;
    int state;     /* PROD_* */
    int is_worker; /* the client's own worker thread: never waits for room */
    uint64_t gen;  /* the client ring belongs to */
    struct nwb__ring *ring;
    uint64_t tid;
    struct producer *prev;
    struct producer *next;
};

/* initial-exec: the thread pointer plus a fixed offset, never a __tls_get_addr call (the model
 * a shared libnwb_client takes static TLS for; docs/client.md, "Threading model"). */
static _Thread_local struct producer tls_producer __attribute__((tls_model("initial-exec")));

static struct {
    _Atomic(struct nwb_client *) live; /* the client calls go to, or NULL */
    pthread_mutex_t lock;              /* list and claimed */
    struct producer *list;             /* every thread that ever logged, until it exits */
    int claimed;
    pthread_key_t key; /* its destructor retires a thread's ring */
    int fence;         /* 1: light barriers are real fences (no membarrier) */
    int strnlen_only;  /* 1: under valgrind, string lengths by strnlen (str_len) */
    atomic_uint_fast64_t next_gen;
} G = {.lock = PTHREAD_MUTEX_INITIALIZER, .fence = 1, .next_gen = 1};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static int global_err;

/* Size of a drop note: header and a uint64_t count. */
#define NOTE_SIZE (NWB__REC_HDR + 8u)

static inline uint32_t round8(size_t n)
{
    return (uint32_t)((n + 7u) & ~(size_t)7u);
}

/*
 * The light half of an asymmetric barrier pair (folly, liburcu): with
 * membarrier(PRIVATE_EXPEDITED) the worker and destroy pay for the full
 * fence, so a producer only needs to stop the compiler from reordering.
 */
static inline void barrier_light(void)
{
    if (NWB_UNLIKELY(G.fence)) {
        atomic_thread_fence(memory_order_seq_cst);
    } else {
        atomic_signal_fence(memory_order_seq_cst);
    }
}

void nwb__barrier_heavy(void)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (!G.fence) {
        (void)syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0);
    }
}

/* Producer-only counters: a relaxed load and store, no locked instruction. */
static inline void bump(atomic_uint_fast64_t *v)
{
    atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + 1u,
                          memory_order_relaxed);
}

/* ---- no live client: one synchronous stderr line, like common's fallback ---- */

static void fallback_line(const nwb_log_site_t *site, const char *msg, size_t len)
{
    char line[2048];
    int n = snprintf(line, sizeof(line), "%-7s %s:%u: %.*s\n", nwb_log_level_name(site->level),
                     site->file, (unsigned)site->line, (int)(len > 1900 ? 1900 : len), msg);

    if (n > 0) {
        size_t want = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
        ssize_t w = write(STDERR_FILENO, line, want);

        (void)w; /* nothing sensible to do when stderr itself fails */
    }
}

static void fallback_format(const nwb_log_site_t *site, va_list ap)
{
    uint8_t kinds[NWB_LOG_MAX_ARGS];
    uint8_t nargs;
    char msg[1024];
    int n;

    if (nwb__fmt_parse(site->fmt, kinds, &nargs) == NWB_LOG_SITE_COMPLEX &&
        kinds[0] == NWB__CX_REJECT) {
        fallback_line(site, site->fmt, strlen(site->fmt));
        return;
    }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    n = vsnprintf(msg, sizeof(msg), site->fmt, ap);
#pragma GCC diagnostic pop
    if (n >= 0) {
        fallback_line(site, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
    }
}

/* ---- thread registration and client lifetime ---- */

static void producer_exit(void *arg)
{
    struct producer *p = arg;
    struct nwb_client *c;

    pthread_mutex_lock(&G.lock);
    if (p->prev != NULL) {
        p->prev->next = p->next;
    } else {
        G.list = p->next;
    }
    if (p->next != NULL) {
        p->next->prev = p->prev;
    }
    /* Under G.lock the live client cannot be freed: destroy takes the lock first. */
    c = atomic_load_explicit(&G.live, memory_order_acquire);
    if (c != NULL && p->ring != NULL && p->gen == c->gen) {
        atomic_store_explicit(&p->ring->closed, 1, memory_order_release);
        nwb__worker_wake(c, 1);
    }
    /* Calls from later TLS destructors of this thread go to stderr. */
    p->state = PROD_EXITED;
    p->ring = NULL;
    p->gen = 0;
    pthread_mutex_unlock(&G.lock);
}

static void global_init_once(void)
{
    int rc = pthread_key_create(&G.key, producer_exit);

    if (rc != 0) {
        global_err = -rc;
        return;
    }
#ifdef NWB__HAVE_VALGRIND_H
    G.strnlen_only = RUNNING_ON_VALGRIND != 0;
#endif
#ifndef NWB__TSAN
    {
        long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0);

        if (q >= 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
            syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0) {
            G.fence = 0;
        }
    }
#endif
}

int nwb__producer_global_init(void)
{
    pthread_once(&global_once, global_init_once);
    return global_err;
}

int nwb__producer_claim(uint64_t *gen)
{
    int rc = 0;

    pthread_mutex_lock(&G.lock);
    if (G.claimed) {
        rc = NWB_ECONFIG;
    } else {
        G.claimed = 1;
        *gen = atomic_fetch_add(&G.next_gen, 1);
    }
    pthread_mutex_unlock(&G.lock);
    return rc;
}

void nwb__producer_unclaim(void)
{
    pthread_mutex_lock(&G.lock);
    G.claimed = 0;
    pthread_mutex_unlock(&G.lock);
}

void nwb__producer_publish(struct nwb_client *c)
{
    atomic_store_explicit(&G.live, c, memory_order_seq_cst);
}

void nwb__producer_retire(struct nwb_client *c)
{
    atomic_store_explicit(&c->closing, 1, memory_order_seq_cst);
    atomic_store_explicit(&G.live, NULL, memory_order_seq_cst);
    nwb__barrier_heavy();
    /*
     * Every thread either saw live == NULL or had announced in_call before
     * the barrier; wait for the latter. A waiting BLOCK producer sees closing
     * and gives up, so this wait is short.
     */
    pthread_mutex_lock(&G.lock);
    for (struct producer *p = G.list; p != NULL; p = p->next) {
        while (atomic_load_explicit(&p->in_call, memory_order_acquire) != 0) {
            sched_yield();
        }
    }
    pthread_mutex_unlock(&G.lock);
}

void nwb__producer_mark_worker(void)
{
    tls_producer.is_worker = 1;
}

void nwb__worker_wake(struct nwb_client *c, int force)
{
    if (force || atomic_exchange_explicit(&c->sleeping, 0, memory_order_acq_rel) != 0) {
        const uint64_t one = 1;
        ssize_t w = write(c->efd, &one, sizeof(one));

        (void)w; /* EAGAIN: the counter is already non-zero, the worker wakes anyway */
    }
}

/* First call on this thread: join the producer list (may take the lock). */
static NWB_NOINLINE int producer_link(struct producer *p)
{
    if (p->state == PROD_EXITED) {
        return -1;
    }
    pthread_mutex_lock(&G.lock);
    if (pthread_setspecific(G.key, p) != 0) {
        pthread_mutex_unlock(&G.lock);
        return -1;
    }
    p->tid = (uint64_t)syscall(SYS_gettid);
    p->prev = NULL;
    p->next = G.list;
    if (G.list != NULL) {
        G.list->prev = p;
    }
    G.list = p;
    p->state = PROD_LINKED;
    pthread_mutex_unlock(&G.lock);
    return 0;
}

/* Announce the call, then read the live client (Dekker pair with retire). */
static inline struct nwb_client *call_enter(struct producer *p)
{
    atomic_store_explicit(&p->in_call, 1, memory_order_relaxed);
    barrier_light();
    return atomic_load_explicit(&G.live, memory_order_acquire);
}

static inline void call_leave(struct producer *p)
{
    atomic_store_explicit(&p->in_call, 0, memory_order_release);
}

/* First call of this thread for client @p c: make and register its ring. */
static NWB_NOINLINE void producer_attach(struct producer *p, struct nwb_client *c)
{
    struct nwb__ring *r = nwb__ring_create(c->s.ring_bytes, p->tid);
    char name[16] = {0}; /* PR_GET_NAME writes up to 16 bytes with the NUL */

    p->gen = c->gen;
    p->ring = r; /* NULL: out of memory, this thread's records are dropped and counted */
    if (r == NULL) {
        return;
    }
    if (prctl(PR_GET_NAME, name, 0, 0, 0) == 0) {
        const size_t len = strnlen(name, NWB_LOG_THREAD_NAME_MAX);

        memcpy(r->thread_name, name, len);
        r->thread_name_len = (uint8_t)len;
    }
    pthread_mutex_lock(&c->ring_lock);
    r->next = c->rings;
    c->rings = r;
    atomic_fetch_add_explicit(&c->rings_gen, 1u, memory_order_release);
    pthread_mutex_unlock(&c->ring_lock);
}

/* ---- reserving room ---- */

/* A drop note goes in front of the first record that fits after a gap. */
static NWB_NOINLINE uint8_t *reserve_after_gap(struct nwb__ring *r, uint32_t size, uint64_t now)
{
    const uint64_t save = r->head_local;
    uint8_t *np = nwb__ring_reserve(r, NOTE_SIZE);
    struct nwb__rec *note;
    uint8_t *dst;

    if (np == NULL) {
        return NULL;
    }
    note = (struct nwb__rec *)(void *)np;
    note->size = NOTE_SIZE;
    note->type = NWB__REC_DROPNOTE;
    note->flags = NWB_LOG_RECORD_DROPNOTE;
    note->aux = 0;
    note->site = NULL;
    note->time_ns = now;
    memcpy(np + NWB__REC_HDR, &r->pending_drops, 8);
    r->head_local += NOTE_SIZE;
    dst = nwb__ring_reserve(r, size);
    if (dst == NULL) {
        r->head_local = save; /* nothing was published; the note waits for the next try */
        return NULL;
    }
    r->pending_drops = 0;
    return dst;
}

static inline uint8_t *reserve_try(struct nwb__ring *r, uint32_t size, uint64_t now)
{
    if (NWB_LIKELY(r->pending_drops == 0)) {
        return nwb__ring_reserve(r, size);
    }
    return reserve_after_gap(r, size, now);
}

/* A BLOCK producer spins this many times (pause) before it sleeps on its ring's futex. */
#define BLOCK_SPINS 64u
/* Longest single futex sleep: a missed wake-up or destroy's "closing" costs at most this. */
#define BLOCK_NAP_NS 1000000u

/*
 * Sleep on @p r's wake_seq until the worker moves the tail (or @p until,
 * monotonic ns, at most BLOCK_NAP_NS from now). Returns the reserved room
 * when it appeared before sleeping, else NULL (the caller tries again).
 */
static uint8_t *block_nap(struct nwb_client *c, struct nwb__ring *r, uint32_t size, uint64_t now,
                          uint64_t until)
{
    const unsigned seq = atomic_load_explicit(&r->wake_seq, memory_order_acquire);
    struct timespec ts;
    uint64_t t = nwb_time_mono_ns();
    uint8_t *dst;

    /* Dekker pair with the worker's "store tail; fence; read waiting" (client_worker.c). */
    atomic_store_explicit(&r->waiting, 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
    dst = reserve_try(r, size, now);
    if (dst != NULL || t >= until || atomic_load_explicit(&c->closing, memory_order_relaxed)) {
        atomic_store_explicit(&r->waiting, 0, memory_order_relaxed);
        return dst;
    }
    if (atomic_load_explicit(&c->sleeping, memory_order_relaxed) != NWB__SLEEP_AWAKE) {
        nwb__worker_wake(c, 0);
    }
    t = until - t < BLOCK_NAP_NS ? until - t : BLOCK_NAP_NS;
    ts.tv_sec = 0;
    ts.tv_nsec = (long)t;
    /* EAGAIN (seq moved), EINTR, ETIMEDOUT: all mean "look again" */
    (void)syscall(SYS_futex, (uint32_t *)(uintptr_t)&r->wake_seq, FUTEX_WAIT_PRIVATE, seq, &ts,
                  NULL, 0);
    atomic_store_explicit(&r->waiting, 0, memory_order_relaxed);
    return NULL;
}

/*
 * The ring is full: wait (BLOCK policy) or drop and count. Waiting spins
 * briefly, then sleeps on the ring's futex so that on a small machine the
 * waiting thread gives its CPU to the worker that makes the room.
 */
static NWB_NOINLINE uint8_t *reserve_full(struct nwb_client *c, struct producer *p,
                                          struct nwb__ring *r, uint32_t size, uint64_t now)
{
    if (c->s.full_policy == NWB_CLIENT_FULL_BLOCK && !p->is_worker) {
        const uint64_t deadline = nwb_time_mono_ns() + (uint64_t)c->s.block_timeout_us * 1000u;

        nwb__worker_wake(c, 0);
        for (unsigned spin = 1;; spin++) {
            uint8_t *dst;

            if (spin < BLOCK_SPINS) {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
            } else {
                dst = block_nap(c, r, size, now, deadline);
                if (dst != NULL) {
                    return dst;
                }
            }
            dst = reserve_try(r, size, now);
            if (dst != NULL) {
                return dst;
            }
            if (atomic_load_explicit(&c->closing, memory_order_relaxed) != 0) {
                break;
            }
            if ((spin >= BLOCK_SPINS || (spin & 15u) == 0) && nwb_time_mono_ns() >= deadline) {
                break;
            }
        }
    }
    r->pending_drops++;
    bump(&r->dropped);
    return NULL;
}

static inline uint8_t *reserve(struct nwb_client *c, struct producer *p, struct nwb__ring *r,
                               uint32_t size, uint64_t now)
{
    uint8_t *dst = reserve_try(r, size, now);

    if (NWB_LIKELY(dst != NULL)) {
        return dst;
    }
    return reserve_full(c, p, r, size, now);
}

/* The worker sleeps: wake it when it sleeps deeply, or lazily while this ring fills up. */
static NWB_NOINLINE void wake_check(struct nwb_client *c, struct nwb__ring *r, int sleeping)
{
    if (sleeping == NWB__SLEEP_LAZY) {
        /* Acquire: nwb__ring_reserve() trusts tail_cache, so the worker's reads of the records
         * before this tail must happen before the producer writes over them. */
        r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (r->head_local - r->tail_cache <= r->cap / 2u) {
            return; /* the worker looks again within NWB__LAZY_SLEEP_MS */
        }
    }
    nwb__worker_wake(c, 0);
}

/* A lazily sleeping worker with this ring at most half full by the last tail seen (the real
 * tail is never behind it): nothing to wake, decided on the producer's own line. */
static inline int lazy_and_room(const struct nwb__ring *r, int sleeping)
{
    return sleeping == NWB__SLEEP_LAZY && r->head_local - r->tail_cache <= (r->pmask >> 1) + 1u;
}

static inline void publish(struct nwb_client *c, struct nwb__ring *r, uint32_t size)
{
    int sleeping;

    nwb__ring_commit(r, size);
    bump(&r->accepted);
    /* Dekker pair with the worker's "sleeping = DEEP; heavy barrier; look at rings". */
    barrier_light();
    sleeping = atomic_load_explicit(&c->sleeping, memory_order_relaxed);
    if (NWB_UNLIKELY(sleeping != NWB__SLEEP_AWAKE) && !lazy_and_room(r, sleeping)) {
        wake_check(c, r, sleeping);
    }
}

static void drop_no_ring(struct nwb_client *c)
{
    atomic_fetch_add_explicit(&c->st.records_dropped, 1u, memory_order_relaxed);
}

/* ---- records ---- */

/*
 * Where a call's arguments come from: a va_list (the variadic entry: C++,
 * long double, more than NWB_LOG_MAX_ARGS) or the C macros' capture by type
 * (@p args, classes in @p types), read in order by scalar_put / src_string.
 */
struct arg_src {
    va_list *ap; /* NULL: captured */
    uint64_t types;
    const nwb_log_arg_t *args;
    unsigned nargs;
    unsigned next;
};

/* A message as is: raw calls, and formats rendered on the calling thread. */
static void record_text(struct nwb_client *c, struct producer *p, nwb_log_site_t *site,
                        const char *msg, size_t len)
{
    struct nwb__ring *r = p->ring;
    uint64_t now = nwb__clock_stamp(&c->clock);
    size_t max;
    uint8_t flags = 0;
    uint32_t size;
    uint8_t *dst;
    struct nwb__rec *h;

    if (NWB_UNLIKELY(r == NULL)) {
        drop_no_ring(c);
        return;
    }
    max = r->prec_max - NWB__REC_HDR;
    if (max > NWB_LOG_RECORD_MSG_MAX) {
        max = NWB_LOG_RECORD_MSG_MAX;
    }
    if (NWB_UNLIKELY(len > max)) {
        len = max;
        flags = NWB_LOG_RECORD_TRUNCATED;
    }
    size = round8(NWB__REC_HDR + len);
    dst = reserve(c, p, r, size, now);
    if (dst == NULL) {
        return;
    }
    h = (struct nwb__rec *)(void *)dst;
    h->size = size;
    h->type = NWB__REC_TEXT;
    h->flags = flags;
    h->aux = (uint16_t)(size - NWB__REC_HDR - len);
    h->site = site;
    h->time_ns = now;
    if (NWB_UNLIKELY(flags != 0)) {
        memcpy(dst + NWB__REC_HDR, msg, len - 3u);
        memcpy(dst + NWB__REC_HDR + len - 3u, "...", 3);
    } else {
        memcpy(dst + NWB__REC_HDR, msg, len);
    }
    publish(c, r, size);
}

/* A COMPLEX site: format here with vsnprintf (slow path, same text as printf). */
static void record_complex_va(struct nwb_client *c, struct producer *p, nwb_log_site_t *site,
                              va_list ap);

/* A COMPLEX site called with captured arguments: nwb_log_format_args here (slow path); a
 * message too long for the stack buffer is formatted straight into the ring. */
static NWB_NOINLINE void record_complex_captured(struct nwb_client *c, struct producer *p,
                                                 nwb_log_site_t *site, const struct arg_src *src)
{
    struct nwb__ring *r = p->ring;
    char small[512];
    const int n =
        nwb_log_format_args(small, sizeof(small), site->fmt, src->types, src->args, src->nargs);
    size_t max;
    size_t len;
    uint32_t size;
    uint64_t now;
    uint8_t *dst;
    struct nwb__rec *h;

    if (n < 0) {
        record_text(c, p, site, site->fmt, strlen(site->fmt));
        return;
    }
    if ((size_t)n < sizeof(small)) {
        record_text(c, p, site, small, (size_t)n);
        return;
    }
    if (r == NULL) {
        drop_no_ring(c);
        return;
    }
    max = r->prec_max - NWB__REC_HDR - 1u;
    if (max > NWB_LOG_RECORD_MSG_MAX) {
        max = NWB_LOG_RECORD_MSG_MAX;
    }
    len = (size_t)n > max ? max : (size_t)n;
    size = round8(NWB__REC_HDR + len + 1u);
    now = nwb__clock_stamp(&c->clock);
    dst = reserve(c, p, r, size, now);
    if (dst == NULL) {
        return;
    }
    h = (struct nwb__rec *)(void *)dst;
    h->size = size;
    h->type = NWB__REC_TEXT;
    h->flags = len < (size_t)n ? NWB_LOG_RECORD_TRUNCATED : 0; /* cut text ends in "..." */
    h->aux = (uint16_t)(size - NWB__REC_HDR - len);
    h->site = site;
    h->time_ns = now;
    (void)nwb_log_format_args((char *)dst + NWB__REC_HDR, len + 1u, site->fmt, src->types,
                              src->args, src->nargs);
    publish(c, r, size);
}

static NWB_NOINLINE void record_complex(struct nwb_client *c, struct producer *p,
                                        nwb_log_site_t *site, unsigned how,
                                        const struct arg_src *src)
{
    static const char reject[] = " [nwb: %n is not supported, arguments not printed]";
    char small[512];
    int n;

    if (how == NWB__CX_REJECT) {
        n = snprintf(small, sizeof(small), "%s%s", site->fmt, reject);
        record_text(c, p, site, small, (size_t)n < sizeof(small) ? (size_t)n : sizeof(small) - 1);
        return;
    }
    if (src->ap == NULL) {
        record_complex_captured(c, p, site, src);
        return;
    }
    record_complex_va(c, p, site, *src->ap);
}

/* A COMPLEX site called through va_list: format here with vsnprintf (same text as printf). */
static void record_complex_va(struct nwb_client *c, struct producer *p, nwb_log_site_t *site,
                              va_list ap)
{
    struct nwb__ring *r = p->ring;
    char small[512];
    uint64_t now;
    size_t max;
    size_t len;
    uint32_t size;
    uint8_t *dst;
    struct nwb__rec *h;
    va_list aq;
    int n;

    va_copy(aq, ap);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    n = vsnprintf(small, sizeof(small), site->fmt, ap);
    if (n < 0) {
        record_text(c, p, site, site->fmt, strlen(site->fmt));
    } else if ((size_t)n < sizeof(small)) {
        record_text(c, p, site, small, (size_t)n);
    } else if (r == NULL) {
        drop_no_ring(c);
    } else {
        /* Too long for the stack buffer: format straight into the ring. */
        max = r->prec_max - NWB__REC_HDR - 1u;
        if (max > NWB_LOG_RECORD_MSG_MAX) {
            max = NWB_LOG_RECORD_MSG_MAX;
        }
        len = (size_t)n > max ? max : (size_t)n;
        size = round8(NWB__REC_HDR + len + 1u);
        now = nwb__clock_stamp(&c->clock);
        dst = reserve(c, p, r, size, now);
        if (dst != NULL) {
            h = (struct nwb__rec *)(void *)dst;
            h->size = size;
            h->type = NWB__REC_TEXT;
            h->flags = 0;
            h->aux = (uint16_t)(size - NWB__REC_HDR - len);
            h->site = site;
            h->time_ns = now;
            vsnprintf((char *)dst + NWB__REC_HDR, len + 1u, site->fmt, aq);
            if (len < (size_t)n) {
                h->flags = NWB_LOG_RECORD_TRUNCATED;
                memcpy(dst + NWB__REC_HDR + len - 3u, "...", 3);
            }
            publish(c, r, size);
        }
    }
#pragma GCC diagnostic pop
    va_end(aq);
}

/*
 * The site's precomputed layout (nwb_log_site_t.slot_bytes, nstrs, layout):
 * LAYOUT_DIRECT when every string is a plain %s (its length is strnlen's, up
 * to NWB__STR_MAX) and the largest record the site can make is at most
 * DIRECT_MAX bytes, so a call can reserve that worst case up front and write
 * its arguments straight into the ring in one walk (record_args_direct).
 */
#define LAYOUT_GENERIC 0u
#define LAYOUT_DIRECT  1u
#define DIRECT_MAX     (16u * 1024u)
/* Flag on LAYOUT_DIRECT: the site is called with captured arguments whose classes are the ones
 * its kinds read (integer for the integer kinds, double, pointer for %p and %s), so the fast
 * path copies each 8-byte capture as is (record_captured_direct). The classes of one site are
 * compile-time constants of its one macro expansion, so checking them once is enough. */
#define LAYOUT_TYPED 2u

/* Whether captured class @p cls is what kind @p kind reads (long double never is). */
static int class_fits_kind(unsigned cls, unsigned kind)
{
    switch (kind) {
    case NWB__ARG_DOUBLE:
        return cls == NWB_LOG_ARG_DOUBLE;
    case NWB__ARG_LDOUBLE:
        return 0;
    case NWB__ARG_PTR:
    case NWB__ARG_STR:
    case NWB__ARG_STR_PSTAR:
    case NWB__ARG_STR_PLIT:
        return cls == NWB_LOG_ARG_POINTER;
    default:
        return cls == NWB_LOG_ARG_SIGNED || cls == NWB_LOG_ARG_UNSIGNED;
    }
}

static void layout_prepare(nwb_log_site_t *site, const struct arg_src *src)
{
    unsigned bytes = 0;
    unsigned nstrs = 0;
    unsigned layout = LAYOUT_DIRECT;

    for (unsigned i = 0; i < site->nargs; i++) {
        switch (site->kinds[i]) {
        case NWB__ARG_LDOUBLE:
            bytes += 16u;
            break;
        case NWB__ARG_STR:
            nstrs++;
            bytes += 8u;
            break;
        case NWB__ARG_STR_PSTAR:
        case NWB__ARG_STR_PLIT:
            nstrs++;
            bytes += 8u;
            layout = LAYOUT_GENERIC; /* the length depends on a precision */
            break;
        default:
            bytes += 8u;
            break;
        }
    }
    if (NWB__REC_HDR + bytes + nstrs * (NWB__STR_MAX + 1u) + 7u > DIRECT_MAX) {
        layout = LAYOUT_GENERIC;
    }
    if (layout == LAYOUT_DIRECT && src->ap == NULL && src->nargs >= site->nargs) {
        unsigned fits = 1;

        for (unsigned i = 0; i < site->nargs; i++) {
            fits &= (unsigned)class_fits_kind(NWB_LOG_ARG_CLASS(src->types, i), site->kinds[i]);
        }
        layout |= fits ? LAYOUT_TYPED : 0u;
    }
    site->slot_bytes = (uint16_t)bytes;
    site->nstrs = (uint8_t)nstrs;
    site->layout = (uint8_t)layout;
}

/* Parse the site's format once; threads that lose the race parse into @p local. */
static NWB_NOINLINE uint32_t site_prepare(nwb_log_site_t *site, const struct arg_src *src,
                                          uint8_t *local, const uint8_t **kinds, unsigned *nargs)
{
    uint32_t expected = NWB_LOG_SITE_UNPARSED;
    uint32_t st;
    uint8_t n;

    if (__atomic_compare_exchange_n(&site->state, &expected, NWB_LOG_SITE_PARSING, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        st = nwb__fmt_parse(site->fmt, site->kinds, &n);
        site->nargs = n;
        if (st == NWB_LOG_SITE_READY) {
            layout_prepare(site, src);
        }
        __atomic_store_n(&site->state, st, __ATOMIC_RELEASE);
        *kinds = site->kinds;
        *nargs = n;
        return st;
    }
    if (expected == NWB_LOG_SITE_READY || expected == NWB_LOG_SITE_COMPLEX) {
        *kinds = site->kinds;
        *nargs = site->nargs;
        return expected;
    }
    st = nwb__fmt_parse(site->fmt, local, &n);
    *kinds = local;
    *nargs = n;
    return st;
}

/*
 * Store one non-string argument of @p kind from @p ap into @p slot (8 bytes;
 * 16 for long double). Returns the bytes written. The one place that knows
 * each kind's C type: both walks of the arguments call it.
 */
static inline unsigned scalar_put_va(uint8_t *slot, unsigned kind, va_list *ap)
{
    switch (kind) {
    case NWB__ARG_INT: {
        const int64_t v = va_arg(*ap, int); /* sign-extended; render reads the low int */

        memcpy(slot, &v, 8);
        return 8;
    }
    case NWB__ARG_LONG: {
        const long v = va_arg(*ap, long);

        memcpy(slot, &v, 8);
        return 8;
    }
    case NWB__ARG_LLONG: {
        const long long v = va_arg(*ap, long long);

        memcpy(slot, &v, 8);
        return 8;
    }
    case NWB__ARG_SIZE: {
        const size_t v = va_arg(*ap, size_t);

        memcpy(slot, &v, 8);
        return 8;
    }
    case NWB__ARG_INTMAX: {
        const intmax_t v = va_arg(*ap, intmax_t);

        memcpy(slot, &v, 8);
        return 8;
    }
    case NWB__ARG_PTRDIFF: {
        const ptrdiff_t v = va_arg(*ap, ptrdiff_t);

        memcpy(slot, &v, 8);
        return 8;
    }
    case NWB__ARG_DOUBLE: {
        const double v = va_arg(*ap, double);

        memcpy(slot, &v, 8);
        return 8;
    }
    case NWB__ARG_LDOUBLE: {
        const long double v = va_arg(*ap, long double);

        memset(slot, 0, 16);
        memcpy(slot, &v, sizeof(v) < 16 ? sizeof(v) : 16);
        return 16;
    }
    default: { /* NWB__ARG_PTR */
        void *const v = va_arg(*ap, void *);

        memcpy(slot, &v, 8);
        return 8;
    }
    }
}

static inline int kind_is_string(unsigned kind)
{
    return kind >= NWB__ARG_STR;
}

/* double -> int64_t without undefined behaviour: NaN is 0, out of range is clamped. */
static int64_t double_to_i64(double d)
{
    if (!(d == d)) {
        return 0;
    }
    if (d >= 9.2233720368547758e18) {
        return INT64_MAX;
    }
    if (d <= -9.2233720368547758e18) {
        return INT64_MIN;
    }
    return (int64_t)d;
}

/*
 * Store the next captured argument as @p kind (the format's word, never the
 * capture's): a value of another class is converted (integer <-> double,
 * a pointer's bits for an integer kind); a missing argument is 0.
 */
static unsigned scalar_put_captured(uint8_t *slot, unsigned kind, struct arg_src *src)
{
    nwb_log_arg_t v = {.u = 0};
    unsigned cls = NWB_LOG_ARG_UNSIGNED;

    if (src->next < src->nargs) {
        v = src->args[src->next];
        cls = NWB_LOG_ARG_CLASS(src->types, src->next);
    }
    src->next++;
    if (kind == NWB__ARG_DOUBLE || kind == NWB__ARG_LDOUBLE) {
        const long double d = cls == NWB_LOG_ARG_DOUBLE   ? (long double)v.d
                              : cls == NWB_LOG_ARG_SIGNED ? (long double)v.i
                                                          : (long double)v.u;

        if (kind == NWB__ARG_DOUBLE) {
            const double x = (double)d;

            memcpy(slot, &x, 8);
            return 8;
        }
        memset(slot, 0, 16);
        memcpy(slot, &d, sizeof(d) < 16 ? sizeof(d) : 16);
        return 16;
    }
    if (cls == NWB_LOG_ARG_DOUBLE) {
        v.i = double_to_i64(v.d);
    }
    memcpy(slot, &v, 8); /* integer kinds and %p: the 64 bits (render reads an INT's low int) */
    return 8;
}

static inline unsigned scalar_put(uint8_t *slot, unsigned kind, struct arg_src *src)
{
    if (src->ap != NULL) {
        return scalar_put_va(slot, kind, src->ap);
    }
    return scalar_put_captured(slot, kind, src);
}

/* The next argument as a string: a captured non-pointer is NULL, never read as a string. */
static inline const char *src_string(struct arg_src *src)
{
    const char *s = NULL;

    if (src->ap != NULL) {
        return va_arg(*src->ap, const char *);
    }
    if (src->next < src->nargs && NWB_LOG_ARG_CLASS(src->types, src->next) == NWB_LOG_ARG_POINTER) {
        s = (const char *)src->args[src->next].p;
    }
    src->next++;
    return s;
}

/*
 * Copy @p len bytes reading only [src, src + len). Strings in log calls are
 * short: fixed-size (overlapping) moves the compiler emits as register
 * loads and stores, where a variable memcpy here became `rep movsq`, whose
 * start-up cost was a sixth of the call (perf annotate).
 */
static inline void copy_short(uint8_t *dst, const char *src, size_t len)
{
    if (len >= 16u) {
        size_t i = 0;

        for (; i + 16u < len; i += 16u) {
            memcpy(dst + i, src + i, 16);
        }
        memcpy(dst + len - 16u, src + len - 16u, 16);
    } else if (len >= 8u) {
        memcpy(dst, src, 8);
        memcpy(dst + len - 8u, src + len - 8u, 8);
    } else if (len >= 4u) {
        memcpy(dst, src, 4);
        memcpy(dst + len - 4u, src + len - 4u, 4);
    } else {
        for (size_t i = 0; i < len; i++) {
            dst[i] = (uint8_t)src[i];
        }
    }
}

/*
 * strnlen(s, NWB__STR_MAX + 1), inline for the short strings of log calls
 * (the libc call through the PLT was a visible part of the call): whole
 * aligned 8-byte words, the first four here, the rest of a longer string by
 * strnlen. An aligned word never crosses a page, so the bytes read past the
 * NUL are in the word that holds it: harmless, but reported by the
 * sanitizers and memcheck, which get strnlen alone.
 */
static inline size_t str_len(const char *s)
{
    const size_t max = NWB__STR_MAX + 1u;
#if NWB__STRLEN_WORDS
    const uint64_t ones = 0x0101010101010101u;
    const uint64_t highs = 0x8080808080808080u;
    const uintptr_t at = (uintptr_t)s;
    const char *w = (const char *)(at & ~(uintptr_t)7u);
    const unsigned skip = (unsigned)(at & 7u);
    uint64_t v;

    if (NWB_UNLIKELY(G.strnlen_only)) {
        return strnlen(s, max);
    }
    memcpy(&v, w, 8);
    v |= ((uint64_t)1 << (8u * skip)) - 1u; /* the bytes before s: never a NUL */
    for (unsigned i = 0; i < 4u; i++) {
        /* Lowest byte that is 0: exact (a borrow only marks bytes above a real 0). */
        const uint64_t z = (v - ones) & ~v & highs;

        if (z != 0) {
            return 8u * i + ((unsigned)__builtin_ctzll(z) >> 3) - skip;
        }
        memcpy(&v, w + 8u * (i + 1u), 8);
    }
    return 32u - skip + strnlen(w + 32, max - (32u - skip));
#else
    return strnlen(s, max);
#endif
}

/* A DIRECT site's worst case reserved, or NULL (no room right now, or a drop note is due). */
static inline uint8_t *direct_reserve(struct nwb__ring *r, const nwb_log_site_t *site)
{
    const uint32_t worst =
        round8(NWB__REC_HDR + site->slot_bytes + site->nstrs * (NWB__STR_MAX + 1u));

    if (NWB_UNLIKELY(r->pending_drops != 0 || worst > r->prec_max)) {
        return NULL;
    }
    return nwb__ring_reserve(r, worst);
}

/* A plain %s of a DIRECT site: its slot (length, flags) and its bytes at @p str; returns the
 * end of the strings written. */
static inline NWB_ALWAYS_INLINE uint8_t *direct_put_str(uint8_t *slot, uint8_t *str, const char *s)
{
    uint32_t len = 0;
    uint32_t sflags = NWB__STR_NULL;

    if (s != NULL) {
        len = (uint32_t)str_len(s);
        sflags = 0;
        if (len > NWB__STR_MAX) {
            len = NWB__STR_MAX;
            sflags = NWB__STR_TRUNCATED;
        }
        copy_short(str, s, len);
    }
    memcpy(slot, &len, 4);
    memcpy(slot + 4, &sflags, 4);
    str[len] = '\0';
    return str + len + 1u;
}

/* Header and publication of a DIRECT record that starts at @p dst and ends at @p end. */
static inline void direct_publish(struct nwb_client *c, struct nwb__ring *r, nwb_log_site_t *site,
                                  uint8_t *dst, const uint8_t *end, uint64_t now)
{
    const uint32_t size = round8((size_t)(end - dst));
    struct nwb__rec *h = (struct nwb__rec *)(void *)dst;

    h->size = size;
    h->type = NWB__REC_ARGS;
    h->flags = 0;
    h->aux = site->slot_bytes;
    h->site = site;
    h->time_ns = now;
    publish(c, r, size);
}

/*
 * The fast path of a READY LAYOUT_DIRECT site called through va_list:
 * reserve the site's worst case (every string NWB__STR_MAX long), then walk
 * the arguments once, writing slots and strings straight into the ring, and
 * publish the actual size. Returns 0 without touching @p ap when the worst
 * case does not fit right now (or a drop note is due): the caller takes the
 * general path.
 */
static inline int record_args_direct(struct nwb_client *c, struct nwb__ring *r,
                                     nwb_log_site_t *site, struct arg_src *ap)
{
    const uint64_t now = nwb__clock_stamp(&c->clock);
    uint8_t *dst = direct_reserve(r, site);
    uint8_t *slot;
    uint8_t *str;

    if (NWB_UNLIKELY(dst == NULL)) {
        return 0;
    }
    slot = dst + NWB__REC_HDR;
    str = slot + site->slot_bytes;
    for (unsigned i = 0; i < site->nargs; i++) {
        if (!kind_is_string(site->kinds[i])) {
            slot += scalar_put(slot, site->kinds[i], ap);
            continue;
        }
        str = direct_put_str(slot, str, src_string(ap)); /* NWB__ARG_STR, the only string kind */
        slot += 8;
    }
    direct_publish(c, r, site, dst, str, now);
    return 1;
}

/*
 * The fast path of a LAYOUT_DIRECT | LAYOUT_TYPED site: the call's captures
 * are already the slots the record holds, so each scalar is an 8-byte copy
 * and only %s arguments are measured (strnlen) and copied. Same record and
 * same refusal (returns 0) as record_args_direct.
 */
static inline NWB_ALWAYS_INLINE int record_captured_direct(struct nwb_client *c,
                                                           struct nwb__ring *r,
                                                           nwb_log_site_t *site,
                                                           const nwb_log_arg_t *args)
{
    const uint64_t now = nwb__clock_stamp(&c->clock);
    uint8_t *dst = direct_reserve(r, site);
    uint8_t *slot;
    uint8_t *str;

    if (NWB_UNLIKELY(dst == NULL)) {
        return 0;
    }
    slot = dst + NWB__REC_HDR;
    str = slot + site->slot_bytes;
    for (unsigned i = 0; i < site->nargs; i++, slot += 8) {
        if (!kind_is_string(site->kinds[i])) {
            memcpy(slot, &args[i], 8);
            continue;
        }
        str = direct_put_str(slot, str, (const char *)args[i].p);
    }
    direct_publish(c, r, site, dst, str, now);
    return 1;
}

/*
 * The general path: measure every argument on the stack first, then reserve
 * the exact size (first use of a site, COMPLEX sites, non-DIRECT layouts, a
 * nearly full ring). Not inlined: its arrays would otherwise give the fast
 * paths in record_args a large frame to set up on every call.
 */
static NWB_NOINLINE void record_args_general(struct nwb_client *c, struct producer *p,
                                             nwb_log_site_t *site, struct arg_src *ap,
                                             uint32_t state)
{
    struct nwb__ring *r = p->ring;
    _Alignas(16) uint8_t slots[NWB_LOG_MAX_ARGS * 16];
    const char *sp[NWB_LOG_MAX_ARGS];
    uint32_t sl[NWB_LOG_MAX_ARGS];
    uint32_t soff[NWB_LOG_MAX_ARGS];
    uint8_t local[NWB_LOG_MAX_ARGS];
    const uint8_t *kinds = site->kinds;
    unsigned nargs = state == NWB_LOG_SITE_READY ? site->nargs : 0u;
    unsigned ns = 0;
    size_t so = 0;
    size_t strbytes = 0;
    int last_int = -1;
    size_t total;
    uint32_t size;
    uint64_t now;
    uint8_t *dst;
    struct nwb__rec *h;

    if (NWB_UNLIKELY(state != NWB_LOG_SITE_READY)) {
        if (state == NWB_LOG_SITE_COMPLEX) {
            nargs = 0;
        } else {
            state = site_prepare(site, ap, local, &kinds, &nargs);
        }
        if (state == NWB_LOG_SITE_COMPLEX) {
            record_complex(c, p, site, kinds[0], ap);
            return;
        }
    }
    if (NWB_UNLIKELY(r == NULL)) {
        drop_no_ring(c);
        return;
    }
    for (unsigned i = 0; i < nargs; i++) {
        uint8_t *slot = slots + so;

        if (!kind_is_string(kinds[i])) {
            const unsigned n = scalar_put(slot, kinds[i], ap);

            if (kinds[i] == NWB__ARG_INT) {
                int v;

                memcpy(&v, slot, sizeof(v)); /* the low bytes on little-endian */
                last_int = v;
            }
            so += n;
            continue;
        }
        { /* the three string kinds */
            const char *s = src_string(ap);
            uint32_t sflags = 0;
            size_t len = 0;

            if (s == NULL) {
                sflags = NWB__STR_NULL;
            } else {
                long prec = -1;

                if (kinds[i] == NWB__ARG_STR_PSTAR) {
                    prec = last_int; /* negative: as if no precision */
                } else if (kinds[i] == NWB__ARG_STR_PLIT) {
                    prec = nwb__fmt_arg_prec(site->fmt, i);
                }
                if (prec >= 0 && prec <= (long)NWB__STR_MAX) {
                    /* printf reads at most prec bytes: so do we (the array may not end in NUL) */
                    len = strnlen(s, (size_t)prec);
                } else {
                    len = strnlen(s, NWB__STR_MAX + 1u);
                    if (len > NWB__STR_MAX) {
                        len = NWB__STR_MAX;
                        sflags = NWB__STR_TRUNCATED;
                    }
                }
            }
            memcpy(slot, &(uint32_t){(uint32_t)len}, 4);
            memcpy(slot + 4, &sflags, 4);
            sp[ns] = s;
            sl[ns] = (uint32_t)len;
            soff[ns] = (uint32_t)so;
            ns++;
            strbytes += len + 1u;
            so += 8;
        }
    }
    total = NWB__REC_HDR + so + strbytes;
    if (NWB_UNLIKELY(total > r->prec_max)) {
        /* Cut strings from the last one back until the record fits its bound. */
        size_t over = total - r->prec_max;

        for (unsigned j = ns; j-- > 0 && over > 0;) {
            const uint32_t cut = sl[j] < over ? sl[j] : (uint32_t)over;
            const uint32_t sflags = NWB__STR_TRUNCATED;

            if (cut == 0) {
                continue;
            }
            sl[j] -= cut;
            over -= cut;
            strbytes -= cut;
            memcpy(slots + soff[j], &sl[j], 4);
            memcpy(slots + soff[j] + 4, &sflags, 4);
        }
        total = NWB__REC_HDR + so + strbytes;
    }
    size = round8(total);
    now = nwb__clock_stamp(&c->clock);
    dst = reserve(c, p, r, size, now);
    if (dst == NULL) {
        return;
    }
    h = (struct nwb__rec *)(void *)dst;
    h->size = size;
    h->type = NWB__REC_ARGS;
    h->flags = 0;
    h->aux = (uint16_t)so;
    h->site = site;
    h->time_ns = now;
    memcpy(dst + NWB__REC_HDR, slots, so);
    dst += NWB__REC_HDR + so;
    for (unsigned j = 0; j < ns; j++) {
        if (sp[j] != NULL) {
            memcpy(dst, sp[j], sl[j]);
        }
        dst[sl[j]] = '\0';
        dst += sl[j] + 1u;
    }
    publish(c, r, size);
}

/* The deferred path: capture the raw arguments, by a DIRECT fast path when the site has one. */
static inline void record_args(struct nwb_client *c, struct producer *p, nwb_log_site_t *site,
                               struct arg_src *ap)
{
    struct nwb__ring *r = p->ring;
    /* Acquire first: kinds, nargs and the layout are only valid once READY is seen. */
    const uint32_t state = __atomic_load_n(&site->state, __ATOMIC_ACQUIRE);

    if (NWB_LIKELY(state == NWB_LOG_SITE_READY && r != NULL)) {
        if (site->layout == (LAYOUT_DIRECT | LAYOUT_TYPED) && ap->ap == NULL) {
            if (record_captured_direct(c, r, site, ap->args)) {
                return;
            }
        } else if ((site->layout & LAYOUT_DIRECT) != 0 && record_args_direct(c, r, site, ap)) {
            return;
        }
    }
    record_args_general(c, p, site, ap, state);
}

/* A captured call that the inline fast path below does not take: record_args out of line. */
static NWB_NOINLINE void record_captured_other(struct nwb_client *c, struct producer *p,
                                               nwb_log_site_t *site, uint64_t types,
                                               const nwb_log_arg_t *args, unsigned nargs)
{
    struct arg_src src = {NULL, types, args, nargs, 0};

    record_args(c, p, site, &src);
}

/*
 * The captured entry: a READY DIRECT | TYPED site's fast path inline in
 * op_write_args (one frame for the whole call), everything else out of line.
 */
static inline void record_captured(struct nwb_client *c, struct producer *p, nwb_log_site_t *site,
                                   uint64_t types, const nwb_log_arg_t *args, unsigned nargs)
{
    struct nwb__ring *r = p->ring;
    /* Acquire first: kinds, nargs and the layout are only valid once READY is seen. */
    const uint32_t state = __atomic_load_n(&site->state, __ATOMIC_ACQUIRE);

    if (NWB_LIKELY(state == NWB_LOG_SITE_READY && r != NULL &&
                   site->layout == (LAYOUT_DIRECT | LAYOUT_TYPED)) &&
        NWB_LIKELY(record_captured_direct(c, r, site, args))) {
        return;
    }
    record_captured_other(c, p, site, types, args, nargs);
}

/* ---- the logger ops ---- */

static void op_write(void *self, nwb_log_site_t *site, va_list ap)
{
    struct producer *p = &tls_producer;
    struct nwb_client *c;

    (void)self; /* the static logger; the live client is read under the in-call flag */
    if (NWB_UNLIKELY(p->state != PROD_LINKED) && producer_link(p) != 0) {
        fallback_format(site, ap);
        return;
    }
    if (NWB_UNLIKELY(atomic_load_explicit(&p->in_call, memory_order_relaxed) != 0)) {
        fallback_format(site, ap); /* nested on this thread (a signal handler): not the ring */
        return;
    }
    c = call_enter(p);
    if (NWB_LIKELY(c != NULL)) {
        if (NWB_UNLIKELY(p->gen != c->gen)) {
            producer_attach(p, c);
        }
        va_list aq; /* record_args walks a copy by pointer (C11 7.16: ap itself is a parameter) */

        struct arg_src src = {&aq, 0, NULL, 0, 0};

        va_copy(aq, ap);
        record_args(c, p, site, &src);
        va_end(aq);
        call_leave(p);
        return;
    }
    call_leave(p);
    fallback_format(site, ap);
}

/* No client or a nested call: the message formatted here, one stderr line. */
static void fallback_format_captured(const nwb_log_site_t *site, uint64_t types,
                                     const nwb_log_arg_t *args, unsigned nargs)
{
    char msg[1024];
    const int n = nwb_log_format_args(msg, sizeof(msg), site->fmt, types, args, nargs);

    if (n < 0) {
        fallback_line(site, site->fmt, strlen(site->fmt));
        return;
    }
    fallback_line(site, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1u);
}

static void op_write_args(void *self, nwb_log_site_t *site, uint64_t types,
                          const nwb_log_arg_t *args, unsigned nargs)
{
    struct producer *p = &tls_producer;
    struct nwb_client *c;

    (void)self; /* the static logger; the live client is read under the in-call flag */
    if (NWB_UNLIKELY(p->state != PROD_LINKED) && producer_link(p) != 0) {
        fallback_format_captured(site, types, args, nargs);
        return;
    }
    if (NWB_UNLIKELY(atomic_load_explicit(&p->in_call, memory_order_relaxed) != 0)) {
        fallback_format_captured(site, types, args, nargs); /* nested (a signal handler) */
        return;
    }
    c = call_enter(p);
    if (NWB_LIKELY(c != NULL)) {
        if (NWB_UNLIKELY(p->gen != c->gen)) {
            producer_attach(p, c);
        }
        record_captured(c, p, site, types, args, nargs);
        call_leave(p);
        return;
    }
    call_leave(p);
    fallback_format_captured(site, types, args, nargs);
}

static void op_write_raw(void *self, nwb_log_site_t *site, const char *msg, size_t len)
{
    struct producer *p = &tls_producer;
    struct nwb_client *c;

    (void)self;
    if (NWB_UNLIKELY(p->state != PROD_LINKED) && producer_link(p) != 0) {
        fallback_line(site, msg, len);
        return;
    }
    if (NWB_UNLIKELY(atomic_load_explicit(&p->in_call, memory_order_relaxed) != 0)) {
        fallback_line(site, msg, len); /* nested on this thread (a signal handler) */
        return;
    }
    c = call_enter(p);
    if (NWB_LIKELY(c != NULL)) {
        if (NWB_UNLIKELY(p->gen != c->gen)) {
            producer_attach(p, c);
        }
        record_text(c, p, site, msg, len);
        call_leave(p);
        return;
    }
    call_leave(p);
    fallback_line(site, msg, len);
}

static void op_flush(void *self)
{
    struct producer *p = &tls_producer;
    struct nwb_client *c;

    (void)self;
    if (NWB_UNLIKELY(p->state != PROD_LINKED) && producer_link(p) != 0) {
        return;
    }
    if (atomic_load_explicit(&p->in_call, memory_order_relaxed) != 0) {
        return; /* nested on this thread: waiting here could deadlock */
    }
    c = call_enter(p);
    if (c != NULL && !p->is_worker) {
        (void)nwb_client_flush(c, NWB__FATAL_FLUSH_MS);
    }
    call_leave(p);
}

static const nwb_logger_ops_t producer_ops = {op_write, op_write_raw, op_flush, op_write_args};
static nwb_logger_t producer_logger = {&producer_ops, NULL};

nwb_logger_t *nwb__producer_logger(void)
{
    return &producer_logger;
}
