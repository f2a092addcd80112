/* SPDX-License-Identifier: MIT */
/*
 * nwb/profile.h - profiling macros for any thread: scopes (NWB_PROFILE_SCOPE ends with its
 * block, NWB_PROFILE_FUNCTION, NWB_PROFILE_BEGIN/END pairs), counters (NWB_PROFILE_COUNTER),
 * marks (nwb_tel_mark) and thread names (nwb_tel_thread_name).
 *
 * Each call site has a static handle. A scope reads the monotonic clock once at each end and
 * writes one fixed-size record into the calling thread's ring (single producer, no lock, no
 * allocation once the thread's ring exists). The recorder a process attached (the first one
 * created, nwb/telemetry.h) drains every thread's ring at frame end on the frame thread: scopes
 * go into the frame's perf event with their thread and depth, counters into a counter frame,
 * marks into mark events, and the names' strings into the segment's string table (dbg and opt
 * builds; fin builds send hashes only). A full ring drops the record and counts it; an END
 * without a BEGIN, a scope still open at frame end on the frame thread and nesting deeper than
 * 255 are counted as malformed. Rings are released when their thread exits.
 *
 * The compile-time level (nwb/build_config.h, CMake NWB_TELEMETRY): OFF compiles every macro
 * here to nothing that evaluates its arguments (they are type-checked only), STATS keeps
 * counters and marks, FULL adds scopes. Docs: docs/telemetry-format.md, README "Profiling".
 */
#ifndef NWB_PROFILE_H
#define NWB_PROFILE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "nwb/build_config.h"
#include "nwb/common.h"
#include "nwb/name.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bounds (docs/telemetry-format.md, "Producing streams"). */
#define NWB_TEL_PROFILE_RING_SLOTS  8192u /* 32-byte records per thread (256 KiB) */
#define NWB_TEL_PROFILE_STACK_MAX   256u  /* open NWB_PROFILE_BEGIN scopes per thread */
#define NWB_TEL_PROFILE_THREADS_MAX 1024u /* threads a recorder names in its stream */

/**
 * A call site's handle: its name (a string literal, or __func__), and fields only the draining
 * recorder reads and writes (the registered scope, the segment that last carried its string).
 */
typedef struct nwb_tel_site {
    const char *name;
    uint32_t len;
    uint32_t id;       /* the recorder's scope id + 1 (0: not looked up yet) */
    nwb_name_t hash;   /* nwb_name_hash(name): computed at the first drain */
    const void *owner; /* the recorder that filled id and seg */
    uint64_t seg;      /* segment (seq + 1) whose string table has this name */
} nwb_tel_site_t;

#define NWB_TEL_SITE_INIT(lit)                                                                     \
    {                                                                                              \
        (lit), (uint32_t)(sizeof(lit) - 1u), 0u, 0u, NULL, 0u                                      \
    }

/**
 * Name the calling thread: kept for telemetry (at most NWB_TEL_THREAD_NAME_MAX bytes, carried
 * in the stream's thread events and the trace's tracks) and set as its OS name (the first 15
 * bytes, which crash reports and debuggers show). A thread that never calls it is known by its
 * OS name. Any thread; never fails (a thread whose ring cannot be allocated is counted).
 */
NWB_API void nwb_tel_thread_name(const char *name);

/** An instant event with @p text (at most NWB_TEL_MARK_MAX bytes kept), on the calling thread. */
NWB_API void nwb_tel_mark(const char *text);

/**
 * The name of @p s (its hash), with its string remembered so the attached recorder's stream
 * can carry it (not in fin builds). For names a game builds once at setup (memory sources,
 * frame-graph passes, diagnostic codes). At most 4,096 strings are remembered.
 */
NWB_API nwb_name_t nwb_tel_name(const char *s);

/** The string nwb_tel_name() remembered for @p name, or NULL. Any thread. */
NWB_API const char *nwb_tel_name_string(nwb_name_t name, size_t *len);

/* ---- Internals the macros use ------------------------------------------------------------ */

typedef struct nwb__prof_rec {
    uint64_t a;     /* site pointer (scope, counter), or timestamp (mark, name, text) */
    uint64_t b;     /* start_ns (scope), ts (counter), producer thread (text) */
    uint64_t c;     /* end_ns (scope), value bits (counter) */
    uint32_t d;     /* byte length (mark, name, text) */
    uint16_t depth; /* scope depth; log level (text) */
    uint8_t type;   /* NWB__PROF_* */
    uint8_t extra;  /* slots of bytes that follow (mark, name, text: up to 129) */
} nwb__prof_rec_t;

enum {
    NWB__PROF_SCOPE = 1,
    NWB__PROF_COUNTER = 2,
    NWB__PROF_MARK = 3,
    NWB__PROF_NAME = 4,
    NWB__PROF_TEXT = 5,
};

/* What the attached recorder captures now (bits): the macros test this first. */
#define NWB__PROF_ON_SCOPES   0x1u
#define NWB__PROF_ON_COUNTERS 0x2u
#define NWB__PROF_ON_MARKS    0x4u
#define NWB__PROF_ON_TEXT     0x8u
NWB_API extern atomic_uint nwb__prof_on;

struct nwb__prof_open {
    nwb_tel_site_t *site; /* NULL: begun while scopes were off */
    uint64_t start_ns;
    uint32_t depth;
};

typedef struct nwb__prof_thread {
    /* producer side (the owning thread) */
    uint64_t head;      /* next slot to write */
    uint64_t tail_seen; /* the consumer's tail as last read */
    uint32_t mask;      /* slots - 1 */
    uint32_t tid;       /* kernel thread id */
    uint32_t depth;     /* open scopes (SCOPE and BEGIN) */
    uint32_t nopen;     /* BEGIN stack */
    uint32_t overflow;  /* BEGINs refused (stack full, too deep) whose END is still due */
    nwb__prof_rec_t *slots;
    struct nwb__prof_open *open;
    atomic_uint_fast64_t dropped;   /* records lost to a full ring */
    atomic_uint_fast64_t malformed; /* bad END, open at frame end, too deep */
    /* shared */
    _Alignas(64) atomic_uint_fast64_t published; /* head as the consumer may read it */
    _Alignas(64) atomic_uint_fast64_t tail;      /* consumer: next slot to read */
    /* registry (under its lock) */
    struct nwb__prof_thread *next;
    int exited;
    uint64_t consumed; /* records the drainer read (consumer only) */
} nwb__prof_thread_t;

NWB_API extern _Thread_local nwb__prof_thread_t *nwb__prof_self;

/* The calling thread's state, created on first use (NULL when it cannot be). */
NWB_API nwb__prof_thread_t *nwb__prof_thread_slow(void);

static inline uint64_t nwb__prof_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One record into the calling thread's ring, or a counted drop. */
static inline void nwb__prof_push(nwb__prof_thread_t *t, uint64_t a, uint64_t b, uint64_t c,
                                  uint16_t depth, uint8_t type)
{
    const uint64_t h = t->head;
    nwb__prof_rec_t *r;

    if (NWB_UNLIKELY(h - t->tail_seen > t->mask)) {
        t->tail_seen = atomic_load_explicit(&t->tail, memory_order_acquire);
        if (h - t->tail_seen > t->mask) {
            atomic_store_explicit(&t->dropped,
                                  atomic_load_explicit(&t->dropped, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
            return;
        }
    }
    r = &t->slots[h & t->mask];
    r->a = a;
    r->b = b;
    r->c = c;
    r->d = 0;
    r->depth = depth;
    r->type = type;
    r->extra = 0;
    t->head = h + 1;
    atomic_store_explicit(&t->published, h + 1, memory_order_release);
}

static inline nwb__prof_thread_t *nwb__prof_thread(void)
{
    nwb__prof_thread_t *t = nwb__prof_self;

    return NWB_LIKELY(t != NULL) ? t : nwb__prof_thread_slow();
}

NWB_API void nwb__prof_malformed(nwb__prof_thread_t *t);

typedef struct nwb__prof_scope {
    nwb_tel_site_t *site; /* NULL: not recording */
    uint64_t start_ns;
    uint32_t depth;
} nwb__prof_scope_t;

static inline nwb__prof_scope_t nwb__prof_scope_begin(nwb_tel_site_t *site)
{
    nwb__prof_scope_t s = {NULL, 0, 0};
    nwb__prof_thread_t *t;

    if (NWB_LIKELY(atomic_load_explicit(&nwb__prof_on, memory_order_relaxed) &
                   NWB__PROF_ON_SCOPES) &&
        (t = nwb__prof_thread()) != NULL) {
        if (NWB_UNLIKELY(t->depth > 255u)) {
            nwb__prof_malformed(t);
            return s;
        }
        s.site = site;
        s.depth = t->depth++;
        s.start_ns = nwb__prof_now();
    }
    return s;
}

static inline void nwb__prof_scope_end(nwb__prof_scope_t *s)
{
    if (s->site != NULL) {
        const uint64_t end = nwb__prof_now();
        nwb__prof_thread_t *t = nwb__prof_self;

        t->depth = s->depth;
        nwb__prof_push(t, (uint64_t)(uintptr_t)s->site, s->start_ns, end, (uint16_t)s->depth,
                       NWB__PROF_SCOPE);
    }
}

NWB_API void nwb__prof_begin(nwb_tel_site_t *site);
NWB_API void nwb__prof_end(void);

static inline void nwb__prof_counter(nwb_tel_site_t *site, double value)
{
    nwb__prof_thread_t *t;

    if (NWB_LIKELY(atomic_load_explicit(&nwb__prof_on, memory_order_relaxed) &
                   NWB__PROF_ON_COUNTERS) &&
        (t = nwb__prof_thread()) != NULL) {
        union {
            double d;
            uint64_t u;
        } v;

        v.d = value;
        nwb__prof_push(t, (uint64_t)(uintptr_t)site, nwb__prof_now(), v.u, 0, NWB__PROF_COUNTER);
    }
}

/*
 * A rendered log line for the attached recorder's textLog events (the logger client's worker
 * calls it through nwb/telemetry_client.h). @p producer is the thread that logged.
 */
NWB_API void nwb__prof_text(uint64_t ts, unsigned level, uint32_t producer, const char *msg,
                            size_t len);

/* ---- The macros ----------------------------------------------------------------------------- */

#define NWB__PROF_CAT2(a, b) a##b
#define NWB__PROF_CAT(a, b)  NWB__PROF_CAT2(a, b)
#define NWB__PROF_ID(p)      NWB__PROF_CAT(p, __COUNTER__)
/* Type-check, never evaluate. */
#define NWB__PROF_CHECK(x) ((void)sizeof(x))

#if NWB_TELEMETRY_LEVEL >= NWB_TELEMETRY_FULL
#define NWB__PROF_SCOPE_AT(site, var, lit)                                                         \
    static nwb_tel_site_t site = NWB_TEL_SITE_INIT(lit);                                           \
    nwb__prof_scope_t var __attribute__((cleanup(nwb__prof_scope_end), unused)) =                  \
        nwb__prof_scope_begin(&site)
#define NWB__PROF_SCOPE_ID(n, name)                                                                \
    NWB__PROF_SCOPE_AT(NWB__PROF_CAT(nwb__prof_site_, n), NWB__PROF_CAT(nwb__prof_scope_, n),      \
                       "" name "")
/** A scope from here to the end of the enclosing block (@p name: a string literal). */
#define NWB_PROFILE_SCOPE(name) NWB__PROF_SCOPE_ID(__COUNTER__, name)
#define NWB__PROF_FUNCTION_ID(n)                                                                   \
    static nwb_tel_site_t NWB__PROF_CAT(nwb__prof_site_, n) = {                                    \
        __func__, (uint32_t)(sizeof(__func__) - 1u), 0u, 0u, NULL, 0u};                            \
    nwb__prof_scope_t NWB__PROF_CAT(nwb__prof_scope_, n)                                           \
        __attribute__((cleanup(nwb__prof_scope_end), unused)) =                                    \
            nwb__prof_scope_begin(&NWB__PROF_CAT(nwb__prof_site_, n))
/** A scope named after the enclosing function, to its end. */
#define NWB_PROFILE_FUNCTION() NWB__PROF_FUNCTION_ID(__COUNTER__)
/** Open a scope that NWB_PROFILE_END() on the same thread closes (innermost first). */
#define NWB_PROFILE_BEGIN(name)                                                                    \
    do {                                                                                           \
        static nwb_tel_site_t nwb__prof_site_b = NWB_TEL_SITE_INIT("" name "");                    \
        nwb__prof_begin(&nwb__prof_site_b);                                                        \
    } while (0)
#define NWB_PROFILE_END() nwb__prof_end()
#else
#define NWB_PROFILE_SCOPE(name) NWB__PROF_CHECK("" name "")
#define NWB_PROFILE_FUNCTION()  ((void)0)
#define NWB_PROFILE_BEGIN(name) NWB__PROF_CHECK("" name "")
#define NWB_PROFILE_END()       ((void)0)
#endif

#if NWB_TELEMETRY_LEVEL >= NWB_TELEMETRY_STATS
/** Sample counter @p name (a string literal) at @p value (any arithmetic type). */
#define NWB_PROFILE_COUNTER(name, value)                                                           \
    do {                                                                                           \
        static nwb_tel_site_t nwb__prof_site_c = NWB_TEL_SITE_INIT("" name "");                    \
        nwb__prof_counter(&nwb__prof_site_c, (double)(value));                                     \
    } while (0)
/** nwb_tel_mark(@p text), compiled out at level OFF. */
#define NWB_PROFILE_MARK(text) nwb_tel_mark(text)
/** nwb_tel_thread_name(@p name), compiled out at level OFF. */
#define NWB_PROFILE_THREAD(name) nwb_tel_thread_name(name)
#else
#define NWB_PROFILE_COUNTER(name, value)                                                           \
    do {                                                                                           \
        NWB__PROF_CHECK("" name "");                                                               \
        NWB__PROF_CHECK((double)(value));                                                          \
    } while (0)
#define NWB_PROFILE_MARK(text)   NWB__PROF_CHECK(*(text))
#define NWB_PROFILE_THREAD(name) NWB__PROF_CHECK(*(name))
#endif

#ifdef __cplusplus
}
#endif

#endif /* NWB_PROFILE_H */
