/* SPDX-License-Identifier: MIT */
/*
 * nwb_demo.c - nwb-demo, a small fake game for the quick start and the end-to-end test: a
 * 60 Hz frame loop with work scopes on two threads, growing arenas, asynchronous GPU samples,
 * a frame-graph contributor and log lines with names, using the logger client, the telemetry
 * recorder (uploads through the client) and crash capture. --crash kills it on purpose.
 *
 * It is written the way a game would use nwb: CPU scopes are NWB_PROFILE_* macros on whichever
 * thread runs the work (the frame thread "main" and the job thread "worker", each named), a
 * counter and a mark come from NWB_PROFILE_COUNTER and nwb_tel_mark, and its log lines reach
 * telemetry through the logger client's worker (nwb_tel_client_capture_logs), not by being
 * formatted twice on the frame thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/client.h"
#include "nwb/crash.h"
#include "nwb/deadline.h"
#include "nwb/error.h"
#include "nwb/log.h"
#include "nwb/log_line.h"
#include "nwb/name.h"
#include "nwb/profile.h"
#include "nwb/telemetry.h"
#include "nwb/telemetry_client.h"

/* ---- Bounds (each one is checked where it applies; the usage text lists them) ------------- */

#define DEMO_FRAMES_DEFAULT  600u     /* 10 s at 60 Hz */
#define DEMO_FRAMES_MAX      1000000u /* a little under 5 h at 60 Hz */
#define DEMO_HZ_DEFAULT      60u
#define DEMO_HZ_MAX          1000u
#define DEMO_CRASH_FRAME     30u         /* --crash happens in this frame by default */
#define DEMO_UPLOAD_EVERY    60u         /* frames per telemetry upload */
#define DEMO_FAST_DIVISOR    50u         /* --fast: work scopes 50 times shorter, no pacing */
#define DEMO_HITCH_EVERY     97u         /* a streaming hitch in every 97th frame */
#define DEMO_ARENA_MAX       (64u << 20) /* bytes an arena may reserve; beyond: refused */
#define DEMO_CHUNK_FIRST     (64u << 10) /* an arena's first chunk; doubling ... */
#define DEMO_CHUNK_MAX       (1u << 20)  /* ... up to this */
#define DEMO_SCRATCH_BYTES   (16u << 10) /* per-frame heap scratch (allocated and freed) */
#define DEMO_WORKER_WAIT_MS  1000u       /* the frame thread waits this long for the worker */
#define DEMO_CRASH_WAIT_MS   30000u      /* --crash stack: how long to wait for the death */
#define DEMO_UPLOAD_FLUSH_MS 15000u      /* final wait for telemetry delivery */
#define DEMO_CLIENT_FLUSH_MS 5000u       /* final wait for the log */
#define DEMO_LATE_WARNINGS   8u          /* over-budget warnings before they are only counted */
#define DEMO_GPU_RING        8u          /* frames of GPU results in flight */

/* ---- Names ---------------------------------------------------------------------------------- */

enum demo_scope {
    SC_FRAME,
    SC_UPDATE,
    SC_INPUT,
    SC_PHYSICS,
    SC_AI,
    SC_ANIMATION,
    SC_STREAMING,
    SC_RENDER,
    SC_SHADOW,
    SC_GBUFFER,
    SC_LIGHTING,
    SC_POST,
    SC_WORKER,
    SC_JOB_CULL,
    SC_JOB_SKIN,
    SC_JOB_PARTICLES,
    SC_JOB_AUDIO,
    SC_CPU_COUNT,
    SG_SHADOW = SC_CPU_COUNT,
    SG_GBUFFER,
    SG_LIGHTING,
    SG_POST,
    SC_COUNT
};

#define DEMO_GPU_COUNT (SC_COUNT - SC_CPU_COUNT)
#define DEMO_JOB_FIRST SC_JOB_CULL
#define DEMO_JOB_COUNT (SC_CPU_COUNT - SC_JOB_CULL)

/* Every scope: its name and base duration in microseconds (CPU scopes spin for real, GPU
 * results are made up; 0: a parent, as long as its children). */
static const struct demo_scope_def {
    const char *name;
    unsigned base_us;
} scope_defs[SC_COUNT] = {
    [SC_FRAME] = {"frame", 0},
    [SC_UPDATE] = {"update", 0},
    [SC_INPUT] = {"input", 100},
    [SC_PHYSICS] = {"physics", 600},
    [SC_AI] = {"ai", 400},
    [SC_ANIMATION] = {"animation", 300},
    [SC_STREAMING] = {"streaming", 150},
    [SC_RENDER] = {"render", 0},
    [SC_SHADOW] = {"render.shadow", 300},
    [SC_GBUFFER] = {"render.gbuffer", 400},
    [SC_LIGHTING] = {"render.lighting", 350},
    [SC_POST] = {"render.post", 200},
    [SC_WORKER] = {"worker.jobs", 0},
    [SC_JOB_CULL] = {"job.cull", 250},
    [SC_JOB_SKIN] = {"job.skin", 300},
    [SC_JOB_PARTICLES] = {"job.particles", 200},
    [SC_JOB_AUDIO] = {"job.audio", 150},
    [SG_SHADOW] = {"gpu.shadow", 900},
    [SG_GBUFFER] = {"gpu.gbuffer", 1500},
    [SG_LIGHTING] = {"gpu.lighting", 1800},
    [SG_POST] = {"gpu.post", 500},
};

enum demo_fg_name {
    FG_GFX,
    FG_COMPUTE,
    FG_SHADOW,
    FG_GBUFFER,
    FG_PARTICLES,
    FG_LIGHTING,
    FG_POST,
    FG_PRESENT,
    FG_COUNT
};

static const char *const fg_names[FG_COUNT] = {"queue.graphics", "queue.compute",  "pass.shadow",
                                               "pass.gbuffer",   "pass.particles", "pass.lighting",
                                               "pass.post",      "pass.present"};

/* ---- State ---------------------------------------------------------------------------------- */

enum demo_crash { CRASH_NONE, CRASH_SEGV, CRASH_ABORT, CRASH_STACK, CRASH_GPU };

static const char *const crash_names[] = {"none", "segv", "abort", "stack", "gpu"};

struct demo_opts {
    unsigned long frames;
    unsigned hz;
    int fast;
    int crash;
    unsigned long crash_frame;
    const char *record;
};

struct demo_rng {
    uint64_t s;
};

/* One chunk of an arena; the data follows the header. */
struct demo_chunk {
    struct demo_chunk *next;
    size_t size;
    size_t used;
    unsigned char data[];
};

/* A bump arena that grows by chunks from the heap (nwb_malloc) and never shrinks. */
struct demo_arena {
    const char *label;
    nwb_name_t name;
    nwb_tel_mem_source_t *src;
    struct demo_chunk *head;
    size_t next_chunk;
    uint64_t used;
    uint64_t reserved;
    uint64_t allocs;
    uint64_t refused;
};

struct demo_worker {
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t go;   /* frame + 1 the worker should run; 0 = none yet */
    uint64_t done; /* frame + 1 it finished last */
    int quit;
    int crash_stack; /* recurse without bound in the next frame */
    uint32_t tid;
    uint64_t samples[SC_CPU_COUNT]; /* the scopes it recorded; read once it is joined */
    unsigned divisor;
    const nwb_name_t *names; /* the scope names, read-only once the worker runs */
    struct demo_rng rng;     /* the worker's own */
};

struct demo {
    struct demo_opts opt;
    nwb_client_t *client;
    nwb_tel_uploader_t *uploader;
    nwb_tel_recorder_t *rec;
    nwb_tel_contributor_id_t fg_id;
    int fg_registered;
    uint32_t main_tid;
    struct demo_rng rng;
    nwb_name_t names[SC_COUNT];
    nwb_tel_scope_id_t ids[SC_COUNT];
    uint64_t samples[SC_COUNT]; /* what this program recorded, per scope */
    nwb_name_t fg[FG_COUNT];
    nwb_name_t diag_hitch;
    struct demo_arena arenas[2];
    nwb_tel_mem_source_t *heap_src;
    nwb_name_t heap_name;
    uint64_t heap_used;
    uint64_t heap_allocs;
    uint64_t heap_frees;
    uint64_t gpu_dur[DEMO_GPU_RING][DEMO_GPU_COUNT];
    int gpu_out_of_order_logged;
    struct demo_worker worker;
    uint64_t frames;       /* frames ended */
    uint64_t marks;        /* nwb_tel_mark calls */
    uint64_t draw_samples; /* NWB_PROFILE_COUNTER("render.draw_calls") samples */
    uint64_t diagnostics;  /* diagnostics the recorder took */
    uint64_t fg_frames;    /* frame graphs the contributor described */
    uint64_t flush_failures;
    uint64_t worker_late; /* frames whose worker scopes came too late (dropped) */
    uint64_t late_frames; /* paced mode: frames over 1.5 budgets */
    uint64_t last_frame_ns;
};

static volatile sig_atomic_t demo_stop;
static _Atomic uint64_t demo_frame_now; /* read by the crash hook */

/* ---- Small helpers -------------------------------------------------------------------------- */

static uint32_t demo_gettid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

/* splitmix64: deterministic jitter for durations. */
static uint64_t rng_next(struct demo_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* @p base +- 20 %. */
static uint64_t jitter(struct demo_rng *r, uint64_t base)
{
    if (base < 10) {
        return base;
    }
    return base * 80u / 100u + rng_next(r) % (base * 40u / 100u + 1u);
}

/* Per thread: the frame thread and the worker both spin. Keeps the work from being optimised
 * away. */
static _Thread_local volatile uint64_t demo_sink;

/* Burn CPU until @p end_ns (monotonic): the fake work inside a scope. Returns the time then. */
static uint64_t spin_until(uint64_t end_ns)
{
    uint64_t h = demo_sink | 1u;
    uint64_t now;

    do {
        for (unsigned i = 0; i < 64; i++) {
            h = h * 6364136223846793005ull + 1442695040888963407ull;
        }
        now = nwb_time_mono_ns();
    } while (now < end_ns);
    demo_sink = h;
    return now;
}

static const char *name_str(const struct demo *d, unsigned scope, char buf[NWB_NAME_TOKEN_SIZE])
{
    return nwb_name_str(d->names[scope], buf);
}

/* ---- Crashes on purpose --------------------------------------------------------------------- */

/* The sanitizers would report these themselves; the point is the crash handler's package. */
#define DEMO_NO_SANITIZE __attribute__((noinline, no_sanitize("address", "undefined")))

static int *volatile demo_null;
static volatile int demo_never = -1;

DEMO_NO_SANITIZE static void demo_crash_segv(void)
{
    *demo_null = 42;
    demo_sink = 1; /* not a tail position: the frame stays in the backtrace */
}

DEMO_NO_SANITIZE static int demo_crash_recurse(volatile char *prev, int depth)
{
    volatile char frame[1024];

    frame[0] = (char)depth;
    frame[sizeof(frame) - 1] = prev != NULL ? prev[0] : 0;
    if (depth == demo_never) {
        return 0;
    }
    return demo_crash_recurse(frame, depth + 1) + frame[7];
}

/* Async-signal-safe: app.txt gets the frame the game was in. */
static void demo_on_crash(int fd, void *arg)
{
    char buf[64];
    char digits[24];
    uint64_t v = atomic_load_explicit(&demo_frame_now, memory_order_relaxed);
    size_t n = 0;
    size_t k = 0;
    ssize_t w;

    (void)arg;
    memcpy(buf, "nwb-demo frame=", 15);
    n = 15;
    do {
        digits[k++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0);
    while (k > 0) {
        buf[n++] = digits[--k];
    }
    buf[n++] = '\n';
    w = write(fd, buf, n);
    (void)w;
}

/* --crash gpu: a device loss with fake vendor bytes; the game keeps running. */
static void demo_crash_gpu(uint64_t frame)
{
    static const unsigned char rgd[] = "RGD-FAKE\x01\x02\x03\x04 nwb-demo device fault bytes";
    static const char meta[] = "shader lighting.frag hash=0x5eed1234\npipeline deferred.main\n";
    static const char *const markers[] = {"frame/render/render.gbuffer",
                                          "frame/render/render.lighting"};
    nwb_crash_gpu_info_t gi;
    char pkg[256];
    char errbuf[96];
    int err;

    memset(&gi, 0, sizeof(gi));
    gi.api = "vulkan";
    gi.reporting_call = "vkQueueSubmit2";
    gi.result = "VK_ERROR_DEVICE_LOST";
    gi.device_name = "nwb-demo fake GPU";
    gi.vendor_id = 0x1002;
    gi.device_id = 0x73bf;
    gi.driver_name = "fake";
    gi.driver_version = "1.0.0";
    gi.rgd_bytes = rgd;
    gi.rgd_len = sizeof(rgd) - 1u;
    gi.aftermath_status = "not an NVIDIA device";
    gi.device_fault_status = "VK_EXT_device_fault not supported by the fake device";
    gi.marker_paths = markers;
    gi.marker_count = NWB_ARRAY_SIZE(markers);
    gi.debug_metadata = meta;
    gi.debug_metadata_len = sizeof(meta) - 1u;
    pkg[0] = '\0';
    err = nwb_crash_capture_gpu(&gi, pkg, sizeof(pkg));
    if (err != 0) {
        NWB_LOGGER_ESSENTIAL_WARNING(
            "gpu: device lost in frame %llu (simulated), capture failed: %s",
            (unsigned long long)frame, nwb_strerror_r(err, errbuf, sizeof(errbuf)));
        return;
    }
    NWB_LOGGER_ESSENTIAL_WARNING("gpu: device lost in frame %llu (simulated), crash package %s",
                                 (unsigned long long)frame, pkg);
}

/* Log why, push the log out (so the package's log tail and the server have it), then die. */
static void demo_crash_now(struct demo *d, uint64_t frame)
{
    NWB_LOGGER_ESSENTIAL_WARNING("crashing on purpose: %s in frame %llu", crash_names[d->opt.crash],
                                 (unsigned long long)frame);
    nwb_client_flush(d->client, 2000);
    if (d->opt.crash == CRASH_SEGV) {
        demo_crash_segv();
    } else if (d->opt.crash == CRASH_ABORT) {
        abort();
    }
}

/* ---- Arenas and the heap -------------------------------------------------------------------- */

static void heap_alloc(struct demo *d, uint64_t bytes)
{
    nwb_tel_mem_alloc(d->heap_src, bytes);
    d->heap_used += bytes;
    d->heap_allocs++;
    nwb_tel_mem_set_reserved(d->heap_src, ((d->heap_used >> 20) + 1u) << 20);
}

static void heap_free(struct demo *d, uint64_t bytes)
{
    nwb_tel_mem_free(d->heap_src, bytes);
    d->heap_used -= bytes;
    d->heap_frees++;
    nwb_tel_mem_set_reserved(d->heap_src, ((d->heap_used >> 20) + 1u) << 20);
}

/* Bump-allocate @p n bytes; grows by a new chunk when needed. NULL (counted) past the cap. */
static void *arena_alloc(struct demo *d, struct demo_arena *a, size_t n)
{
    char tok[NWB_NAME_TOKEN_SIZE];
    void *p;

    n = (n + 15u) & ~(size_t)15u;
    if (a->head == NULL || a->head->size - a->head->used < n) {
        const size_t size = n > a->next_chunk ? n : a->next_chunk;
        struct demo_chunk *c;

        if (a->reserved + size > DEMO_ARENA_MAX) {
            if (a->refused++ == 0) {
                NWB_LOGGER_WARNING("arena %s is full at %llu bytes: allocations refused",
                                   nwb_name_str(a->name, tok), (unsigned long long)a->reserved);
            }
            return NULL;
        }
        c = nwb_malloc(sizeof(*c) + size);
        if (c == NULL) {
            a->refused++;
            return NULL;
        }
        c->next = a->head;
        c->size = size;
        c->used = 0;
        a->head = c;
        a->reserved += size;
        a->next_chunk = a->next_chunk * 2u > DEMO_CHUNK_MAX ? DEMO_CHUNK_MAX : a->next_chunk * 2u;
        nwb_tel_mem_set_reserved(a->src, a->reserved);
        heap_alloc(d, size);
        NWB_LOGGER_INFO("arena %s grew to %llu bytes", nwb_name_str(a->name, tok),
                        (unsigned long long)a->reserved);
    }
    p = a->head->data + a->head->used;
    a->head->used += n;
    a->used += n;
    a->allocs++;
    nwb_tel_mem_alloc(a->src, n);
    return p;
}

static void arena_free_all(struct demo_arena *a)
{
    while (a->head != NULL) {
        struct demo_chunk *next = a->head->next;

        nwb_free(a->head);
        a->head = next;
    }
}

/* ---- Work scopes --------------------------------------------------------------------------- */

/* Spin for a leaf scope's jittered duration (its NWB_PROFILE_SCOPE is the caller's). */
static void spin_work(struct demo_rng *rng, unsigned scope, uint64_t extra_us, unsigned divisor)
{
    const uint64_t us = scope_defs[scope].base_us + extra_us;

    (void)spin_until(nwb_time_mono_ns() + jitter(rng, us * 1000u) / divisor);
}

/*
 * One leaf work scope on the frame thread: the macro needs the name as a literal, so each call
 * site passes the scope's enum and its name (the same string as scope_defs[], which the record
 * file prints and the end-to-end test checks against the report).
 */
#define DEMO_WORK(d, scope, literal, extra_us)                                                     \
    do {                                                                                           \
        NWB_PROFILE_SCOPE(literal);                                                                \
        spin_work(&(d)->rng, (scope), (extra_us), (d)->opt.fast ? DEMO_FAST_DIVISOR : 1u);         \
        (d)->samples[(scope)]++;                                                                   \
    } while (0)

static void fg_contribute(void *ctx, nwb_tel_fg_builder_t *b, uint64_t frame)
{
    struct demo *d = ctx;
    nwb_tel_fg_counters_t c;
    uint32_t gfx, comp, pk[3], pass[6];
    static const unsigned pass_names[6] = {FG_SHADOW,   FG_GBUFFER, FG_PARTICLES,
                                           FG_LIGHTING, FG_POST,    FG_PRESENT};
    static const unsigned pass_packet[6] = {0, 0, 1, 2, 2, 2};

    if (nwb_tel_fg_queue_add(b, d->fg[FG_GFX], NWB_TEL_QUEUE_GRAPHICS, &gfx) != 0 ||
        nwb_tel_fg_queue_add(b, d->fg[FG_COMPUTE], NWB_TEL_QUEUE_COMPUTE, &comp) != 0 ||
        nwb_tel_fg_packet_add(b, gfx, 0, 1, &pk[0]) != 0 ||
        nwb_tel_fg_packet_add(b, comp, 1, 1, &pk[1]) != 0 ||
        nwb_tel_fg_packet_add(b, gfx, 2, 0, &pk[2]) != 0) {
        return;
    }
    for (unsigned i = 0; i < 6; i++) {
        if (nwb_tel_fg_pass_add(b, d->fg[pass_names[i]], pk[pass_packet[i]],
                                (uint32_t)(1u + (i + frame) % 3u), &pass[i]) != 0) {
            return;
        }
    }
    nwb_tel_fg_edge_add(b, pass[0], pass[3]);
    nwb_tel_fg_edge_add(b, pass[1], pass[3]);
    nwb_tel_fg_edge_add(b, pass[2], pass[4]);
    nwb_tel_fg_edge_add(b, pass[3], pass[4]);
    nwb_tel_fg_edge_add(b, pass[4], pass[5]);
    c.emitted_waits = 2;
    c.same_queue_elisions = 1;
    c.duplicate_merges = (uint32_t)(frame % 2u);
    c.inherited_elisions = 0;
    nwb_tel_fg_counters_add(b, &c);
    d->fg_frames++;
}

/*
 * GPU results: frame f's timings are "measured" now and read back two frames later, as real
 * timestamp queries are. Every 5th frame the read-back is late: the held results arrive with
 * the next frame's, after them (out of source-frame order).
 */
static void gpu_frame(struct demo *d, uint64_t f)
{
    uint64_t *const now = d->gpu_dur[f % DEMO_GPU_RING];

    for (unsigned g = 0; g < DEMO_GPU_COUNT; g++) {
        now[g] = jitter(&d->rng, (uint64_t)scope_defs[SC_CPU_COUNT + g].base_us * 1000u);
    }
    if (f < 2 || f % 5u == 0) {
        return;
    }
    for (unsigned back = 2; back <= (f % 5u == 1 && f >= 3 ? 3u : 2u); back++) {
        const uint64_t src = f - back;

        for (unsigned g = 0; g < DEMO_GPU_COUNT; g++) {
            nwb_tel_gpu_sample(d->rec, d->ids[SC_CPU_COUNT + g], src,
                               d->gpu_dur[src % DEMO_GPU_RING][g]);
            d->samples[SC_CPU_COUNT + g]++;
        }
        if (back == 3 && !d->gpu_out_of_order_logged) {
            d->gpu_out_of_order_logged = 1;
            NWB_LOGGER_WARNING(
                "gpu: results of frame %llu arrived after frame %llu's (out of order)",
                (unsigned long long)src, (unsigned long long)(src + 1));
        }
    }
}

/* ---- The worker thread ---------------------------------------------------------------------- */

/* The worker's jobs, each a scope inside "worker.jobs"; returns the longest job. */
static unsigned worker_jobs(struct demo_worker *w, uint64_t *longest_ns)
{
    unsigned longest_job = DEMO_JOB_FIRST;
    uint64_t t, longest = 0;

    NWB_PROFILE_SCOPE("worker.jobs");
    w->samples[SC_WORKER]++;
    for (unsigned j = 0; j < DEMO_JOB_COUNT; j++) {
        const unsigned scope = DEMO_JOB_FIRST + j;

        t = nwb_time_mono_ns();
        switch (scope) {
        case SC_JOB_CULL: {
            NWB_PROFILE_SCOPE("job.cull");
            spin_work(&w->rng, scope, 0, w->divisor);
            break;
        }
        case SC_JOB_SKIN: {
            NWB_PROFILE_SCOPE("job.skin");
            spin_work(&w->rng, scope, 0, w->divisor);
            break;
        }
        case SC_JOB_PARTICLES: {
            NWB_PROFILE_SCOPE("job.particles");
            spin_work(&w->rng, scope, 0, w->divisor);
            break;
        }
        default: {
            NWB_PROFILE_SCOPE("job.audio");
            spin_work(&w->rng, scope, 0, w->divisor);
            break;
        }
        }
        w->samples[scope]++;
        t = nwb_time_mono_ns() - t;
        if (t > longest) {
            longest = t;
            longest_job = scope;
        }
    }
    NWB_PROFILE_COUNTER("worker.jobs_done", DEMO_JOB_COUNT);
    *longest_ns = longest;
    return longest_job;
}

/* The job thread: its scopes go into its own ring, which the recorder drains at frame end. */
static void *worker_main(void *arg)
{
    struct demo_worker *w = arg;
    const uint32_t tid = demo_gettid();
    uint64_t seen = 0;

    pthread_mutex_lock(&w->mu);
    w->tid = tid;
    for (;;) {
        uint64_t f, longest = 0;
        unsigned longest_job;
        int crash;

        while (!w->quit && w->go == seen) {
            pthread_cond_wait(&w->cv, &w->mu);
        }
        if (w->quit) {
            break;
        }
        seen = w->go;
        f = seen - 1u;
        crash = w->crash_stack;
        pthread_mutex_unlock(&w->mu);
        if (crash) {
            demo_sink = (uint64_t)demo_crash_recurse(NULL, 0);
        }
        longest_job = worker_jobs(w, &longest);
        if (f % 60u == 30u) {
            char tok[NWB_NAME_TOKEN_SIZE];

            NWB_LOGGER_INFO("worker: %u jobs in frame %llu, longest %s (%.3f ms)",
                            (unsigned)DEMO_JOB_COUNT, (unsigned long long)f,
                            nwb_name_str(w->names[longest_job], tok), (double)longest / 1e6);
        }
        pthread_mutex_lock(&w->mu);
        w->done = seen;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static int worker_start(struct demo *d)
{
    struct demo_worker *w = &d->worker;
    int err;

    w->divisor = d->opt.fast ? DEMO_FAST_DIVISOR : 1u;
    w->names = d->names;
    w->rng.s = 0x5eedull;
    err = pthread_mutex_init(&w->mu, NULL);
    if (err != 0) {
        return -err;
    }
    err = nwb_cond_init_monotonic(&w->cv);
    if (err != 0) {
        pthread_mutex_destroy(&w->mu);
        return -err;
    }
    err = nwb_crash_thread_create_named(&w->thread, NULL, "worker", worker_main, w);
    if (err != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        return err;
    }
    w->started = 1;
    return 0;
}

static void worker_stop(struct demo_worker *w)
{
    if (!w->started) {
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    w->started = 0;
}

static void worker_go(struct demo_worker *w, uint64_t frame, int crash_stack)
{
    pthread_mutex_lock(&w->mu);
    w->go = frame + 1u;
    w->crash_stack = crash_stack;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Wait (bounded) for the worker to finish the frame's jobs, as a frame waits for its job system.
 * Its scopes are already in its ring; a late worker's land in a later frame. */
static void worker_join(struct demo *d, uint64_t frame, unsigned wait_ms)
{
    struct demo_worker *w = &d->worker;
    const nwb_deadline_t deadline = nwb_deadline_in_ms(wait_ms);
    int late = 0;

    pthread_mutex_lock(&w->mu);
    while (w->done != frame + 1u) {
        if (nwb_cond_wait_until(&w->cv, &w->mu, &deadline) == ETIMEDOUT) {
            late = w->done != frame + 1u;
            break;
        }
    }
    pthread_mutex_unlock(&w->mu);
    if (late && d->worker_late++ == 0) {
        NWB_LOGGER_WARNING("worker missed frame %llu (waited %u ms): its scopes land later",
                           (unsigned long long)frame, wait_ms);
    }
}

/* ---- The frame ------------------------------------------------------------------------------ */

static void frame_run(struct demo *d, uint64_t f)
{
    const int crash_here = d->opt.crash != CRASH_NONE && f == d->opt.crash_frame;
    const int hitch = f % DEMO_HITCH_EVERY == DEMO_HITCH_EVERY - 1u;
    char tok[NWB_NAME_TOKEN_SIZE];
    uint64_t t0, t, stream_start;
    unsigned char *draws;

    atomic_store_explicit(&demo_frame_now, f, memory_order_relaxed);
    t0 = nwb_time_mono_ns();
    nwb_tel_frame_begin(d->rec, f, t0);
    /* "frame" spans the whole frame, the worker's wait included; it ends before frame end. */
    NWB_PROFILE_BEGIN("frame");
    d->samples[SC_FRAME]++;
    if (crash_here && d->opt.crash == CRASH_STACK) {
        NWB_LOGGER_ESSENTIAL_WARNING("crashing on purpose: %s in frame %llu (worker thread)",
                                     crash_names[d->opt.crash], (unsigned long long)f);
        nwb_client_flush(d->client, 2000);
    }
    worker_go(&d->worker, f, crash_here && d->opt.crash == CRASH_STACK);

    /* update > input, physics, ai, animation, streaming */
    {
        NWB_PROFILE_SCOPE("update");
        d->samples[SC_UPDATE]++;
        DEMO_WORK(d, SC_INPUT, "input", 0);
        if (crash_here && (d->opt.crash == CRASH_SEGV || d->opt.crash == CRASH_ABORT)) {
            demo_crash_now(d, f);
        }
        DEMO_WORK(d, SC_PHYSICS, "physics", 0);
        DEMO_WORK(d, SC_AI, "ai", 0);
        DEMO_WORK(d, SC_ANIMATION, "animation", 0);
        stream_start = nwb_time_mono_ns();
        arena_alloc(d, &d->arenas[0], 2048u + (size_t)(f % 7u) * 512u);
        DEMO_WORK(d, SC_STREAMING, "streaming", hitch ? 25000u : 0u);
        t = nwb_time_mono_ns();
    }
    if (hitch) {
        const nwb_tel_kv_t kv[2] = {{"scope", "streaming", 5, 9}, {"cause", "level load", 5, 10}};

        NWB_LOGGER_WARNING("frame %llu hitch: %s took %.3f ms", (unsigned long long)f,
                           name_str(d, SC_STREAMING, tok), (double)(t - stream_start) / 1e6);
        if (nwb_tel_diag_record(d->rec, 0, d->diag_hitch, NWB_TEL_SEVERITY_WARNING, kv, 2) == 0) {
            d->diagnostics++;
        }
        /* The streaming hitch is a (simulated) level load: a mark on the timeline. */
        nwb_tel_mark("level loaded");
        d->marks++;
    }

    /* render > shadow, gbuffer, lighting, post; draw lists persist in the render arena */
    draws = arena_alloc(d, &d->arenas[1], 1024u + (size_t)(f % 5u) * 256u);
    if (draws != NULL) {
        draws[0] = (unsigned char)f;
    }
    {
        unsigned char *scratch = nwb_malloc(DEMO_SCRATCH_BYTES);
        NWB_PROFILE_SCOPE("render");

        d->samples[SC_RENDER]++;
        if (scratch != NULL) {
            heap_alloc(d, DEMO_SCRATCH_BYTES);
            memset(scratch, (int)(f & 0xffu), DEMO_SCRATCH_BYTES);
        }
        DEMO_WORK(d, SC_SHADOW, "render.shadow", 0);
        DEMO_WORK(d, SC_GBUFFER, "render.gbuffer", 0);
        if (crash_here && d->opt.crash == CRASH_GPU) {
            demo_crash_gpu(f);
        }
        DEMO_WORK(d, SC_LIGHTING, "render.lighting", 0);
        DEMO_WORK(d, SC_POST, "render.post", 0);
        if (scratch != NULL) {
            demo_sink += scratch[DEMO_SCRATCH_BYTES - 1u];
            nwb_free(scratch);
            heap_free(d, DEMO_SCRATCH_BYTES);
        }
        /* The draw calls the render pass issued: a counter (min/max/mean per frame). */
        NWB_PROFILE_COUNTER("render.draw_calls", 800u + (unsigned)(f % 13u) * 17u);
        d->draw_samples++;
    }
    gpu_frame(d, f);

    worker_join(
        d, f, crash_here && d->opt.crash == CRASH_STACK ? DEMO_CRASH_WAIT_MS : DEMO_WORKER_WAIT_MS);
    NWB_PROFILE_END();
    t = nwb_time_mono_ns();
    if (nwb_tel_frame_end(d->rec, t) == 0) {
        d->frames++;
    }
    d->last_frame_ns = t - t0;
    if (f % DEMO_UPLOAD_EVERY == DEMO_UPLOAD_EVERY - 1u) {
        NWB_LOGGER_INFO("frame %llu: %s %.3f ms; %s %llu bytes used, %s %llu bytes used",
                        (unsigned long long)f, name_str(d, SC_FRAME, tok), (double)(t - t0) / 1e6,
                        d->arenas[0].label, (unsigned long long)d->arenas[0].used,
                        d->arenas[1].label, (unsigned long long)d->arenas[1].used);
        if (nwb_tel_flush_upload(d->rec) != 0 && d->flush_failures++ == 0) {
            NWB_LOGGER_WARNING("telemetry upload of frame %llu refused: the uploader is behind",
                               (unsigned long long)f);
        }
    }
}

/* ---- Setup ---------------------------------------------------------------------------------- */

static int recorder_setup(struct demo *d)
{
    nwb_tel_recorder_config_t rc = NWB_TEL_RECORDER_CONFIG_INIT;
    int err;

    rc.program = nwb_client_program(d->client);
    rc.run_id = nwb_client_run_id(d->client);
    err = nwb_tel_recorder_create(&rc, &d->rec);
    if (err != 0) {
        return err;
    }
    /* CPU scopes are NWB_PROFILE_* call sites (registered at their first drain); GPU results
     * arrive frames late, so their scopes are registered up front. Every name is made here, so
     * a BUILDMODE sidecar holds them all for fin builds, which send hashes only. */
    for (unsigned i = 0; i < SC_COUNT && err == 0; i++) {
        d->names[i] = nwb_name_make(scope_defs[i].name);
        if (i >= SC_CPU_COUNT) {
            err = nwb_tel_scope_register(d->rec, d->names[i], NWB_TEL_SCOPE_GPU, &d->ids[i]);
        }
    }
    (void)nwb_name_make("render.draw_calls");
    (void)nwb_name_make("worker.jobs_done");
    for (unsigned i = 0; i < 2 && err == 0; i++) {
        struct demo_arena *a = &d->arenas[i];

        a->label = i == 0 ? "arena/level" : "arena/render";
        a->name = nwb_name_make(a->label);
        a->next_chunk = DEMO_CHUNK_FIRST;
        err = nwb_tel_mem_source_register(d->rec, a->name, NWB_TEL_MEM_ARENA,
                                          NWB_TEL_PEAK_LARGEST_ARENA, &a->src);
    }
    if (err == 0) {
        d->heap_name = nwb_name_make("heap/demo");
        err = nwb_tel_mem_source_register(d->rec, d->heap_name, NWB_TEL_MEM_HEAP_BACKING,
                                          NWB_TEL_PEAK_SAMPLED_HEAP, &d->heap_src);
    }
    /* Every name is made here, so a BUILDMODE sidecar holds them all after any run. */
    for (unsigned i = 0; i < FG_COUNT; i++) {
        d->fg[i] = nwb_name_make(fg_names[i]);
    }
    d->diag_hitch = nwb_name_make("diag.frame.hitch");
    if (err == 0) {
        err = nwb_tel_fg_contributor_register(d->rec, fg_contribute, d, &d->fg_id);
        d->fg_registered = err == 0;
    }
    if (err == 0) {
        err = nwb_tel_client_uploader_create(d->client, &d->uploader);
    }
    if (err == 0) {
        err = nwb_tel_recorder_set_upload(d->rec, 1, nwb_tel_uploader_sink(d->uploader));
    }
    if (err == 0) {
        nwb_tel_recorder_set_capture(d->rec, NWB_TEL_CAPTURE_ALL);
        /* Every line from INFO up becomes a textLog event, on the logger client's worker. */
        nwb_tel_client_capture_logs(d->client, NWB_LOG_INFO);
    }
    return err;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: nwb-demo [--frames N] [--hz N] [--fast] [--crash segv|abort|stack|gpu]\n"
            "                [--crash-frame N] [--record FILE] [--no-logserver | "
            "--logserver=HOST:PORT]\n"
            "\n"
            "A small fake game: a frame loop with work scopes on two threads, growing arenas,\n"
            "GPU timings, a frame graph and log lines, sent to nwb-logserver (log and\n"
            "telemetry) or, standalone, to NWB_LOG_DIR (default ./nwb-logs).\n"
            "\n"
            "  --frames N        frames to run, 1..%u (%u)\n"
            "  --hz N            frame rate, 1..%u (%u)\n"
            "  --fast            no pacing, work scopes %u times shorter (tests)\n"
            "  --crash MODE      in frame --crash-frame: segv (null write), abort, stack\n"
            "                    (unbounded recursion on the worker thread), or gpu (a device\n"
            "                    loss capture; the demo keeps running)\n"
            "  --crash-frame N   the frame of --crash (%u; at most the last frame)\n"
            "  --record FILE     write what was recorded (frames, scope samples, memory) to FILE\n"
            "  --no-logserver    standalone: log and telemetry files, no network\n"
            "  --logserver=H:P   the server (else $NWB_LOGSERVER, else 127.0.0.1:7650 if it\n"
            "                    answers, else standalone)\n",
            DEMO_FRAMES_MAX, DEMO_FRAMES_DEFAULT, DEMO_HZ_MAX, DEMO_HZ_DEFAULT, DEMO_FAST_DIVISOR,
            DEMO_CRASH_FRAME);
}

/* A decimal in [lo, hi]. Returns 0 or -1. */
static int parse_ulong(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
    char *end;
    unsigned long v;

    if (s == NULL || *s < '0' || *s > '9') {
        return -1;
    }
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *out = v;
    return 0;
}

/* Returns 0, 1 for --help (printed), or -1 (message printed). */
static int parse_args(int argc, char **argv, struct demo_opts *o)
{
    unsigned long v;
    int crash_frame_set = 0;

    o->frames = DEMO_FRAMES_DEFAULT;
    o->hz = DEMO_HZ_DEFAULT;
    o->crash_frame = DEMO_CRASH_FRAME;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(a, "--fast") == 0) {
            o->fast = 1;
        } else if (strcmp(a, "--frames") == 0) {
            if (parse_ulong(val, 1, DEMO_FRAMES_MAX, &o->frames) != 0) {
                fprintf(stderr, "nwb-demo: --frames needs a number from 1 to %u\n",
                        DEMO_FRAMES_MAX);
                return -1;
            }
            i++;
        } else if (strcmp(a, "--hz") == 0) {
            if (parse_ulong(val, 1, DEMO_HZ_MAX, &v) != 0) {
                fprintf(stderr, "nwb-demo: --hz needs a number from 1 to %u\n", DEMO_HZ_MAX);
                return -1;
            }
            o->hz = (unsigned)v;
            i++;
        } else if (strcmp(a, "--crash-frame") == 0) {
            if (parse_ulong(val, 0, DEMO_FRAMES_MAX - 1u, &o->crash_frame) != 0) {
                fprintf(stderr, "nwb-demo: --crash-frame needs a number from 0 to %u\n",
                        DEMO_FRAMES_MAX - 1u);
                return -1;
            }
            crash_frame_set = 1;
            i++;
        } else if (strcmp(a, "--crash") == 0) {
            o->crash = CRASH_NONE;
            for (int m = CRASH_SEGV; m <= CRASH_GPU && val != NULL; m++) {
                if (strcmp(val, crash_names[m]) == 0) {
                    o->crash = m;
                }
            }
            if (o->crash == CRASH_NONE) {
                fprintf(stderr, "nwb-demo: --crash needs segv, abort, stack or gpu\n");
                return -1;
            }
            i++;
        } else if (strcmp(a, "--record") == 0) {
            if (val == NULL || val[0] == '\0') {
                fprintf(stderr, "nwb-demo: --record needs a file name\n");
                return -1;
            }
            o->record = val;
            i++;
        } else {
            fprintf(stderr, "nwb-demo: unknown argument '%s' (try --help)\n", a);
            return -1;
        }
    }
    if (o->crash_frame >= o->frames) {
        if (crash_frame_set && o->crash != CRASH_NONE) {
            fprintf(stderr, "nwb-demo: --crash-frame %lu is past the last frame; using %lu\n",
                    o->crash_frame, o->frames - 1u);
        }
        o->crash_frame = o->frames - 1u;
    }
    return 0;
}

/*
 * The uploader the crash handler starts: $NWB_CRASH_HELPER or nwb-crash next to this
 * executable (the library's own lookup, NULL here); in a build tree, where they are not
 * neighbours, the nwb-crash this demo was built with.
 */
static const char *crash_helper(char *buf, size_t cap)
{
    ssize_t n;
    char *slash;

    if (getenv("NWB_CRASH_HELPER") != NULL) {
        return NULL;
    }
    n = readlink("/proc/self/exe", buf, cap - 1u);
    if (n > 0) {
        buf[n] = '\0';
        slash = strrchr(buf, '/');
        if (slash != NULL && (size_t)(slash - buf) + sizeof("/nwb-crash") <= cap) {
            memcpy(slash, "/nwb-crash", sizeof("/nwb-crash"));
            if (access(buf, X_OK) == 0) {
                return NULL;
            }
        }
    }
#ifdef NWB_DEMO_CRASH_HELPER
    if (access(NWB_DEMO_CRASH_HELPER, X_OK) == 0) {
        return NWB_DEMO_CRASH_HELPER;
    }
#endif
    return NULL;
}

static void on_stop_signal(int sig)
{
    (void)sig;
    demo_stop = 1;
}

static void sleep_until(uint64_t t_ns)
{
    const struct timespec ts = {(time_t)(t_ns / 1000000000u), (long)(t_ns % 1000000000u)};

    while (!demo_stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* ---- Exit: the record and the summary ------------------------------------------------------ */

static int record_write(const struct demo *d, const char *path, const char *run_dir,
                        const nwb_tel_recorder_stats_t *rs, const nwb_tel_uploader_stats_t *us)
{
    char tok[NWB_NAME_TOKEN_SIZE];
    uint64_t cpu = 0, gpu = 0;
    FILE *f = fopen(path, "w");
    int bad;

    if (f == NULL) {
        fprintf(stderr, "nwb-demo: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    for (unsigned i = 0; i < SC_COUNT; i++) {
        if (i < SC_CPU_COUNT) {
            cpu += d->samples[i];
        } else {
            gpu += d->samples[i];
        }
    }
    fprintf(f, "nwb-demo-record 1\n");
    fprintf(f, "program %s\nrun %s\n", nwb_client_program(d->client), nwb_client_run_id(d->client));
    fprintf(f, "mode %s\n", nwb_client_is_server_mode(d->client) ? "server" : "standalone");
    fprintf(f, "run_dir %s\n", run_dir != NULL ? run_dir : "-");
    fprintf(f, "frames %llu\n", (unsigned long long)d->frames);
    fprintf(f, "cpu_scopes %llu\ngpu_samples %llu\n", (unsigned long long)cpu,
            (unsigned long long)gpu);
    fprintf(f, "event diagnostic %llu\n", (unsigned long long)d->diagnostics);
    fprintf(f, "event frameGraphFrame %llu\n", (unsigned long long)d->fg_frames);
    fprintf(f, "event perfFrame %llu\n", (unsigned long long)d->frames);
    fprintf(f, "event memoryFrame %llu\n", (unsigned long long)d->frames);
    fprintf(f, "event mark %llu\n", (unsigned long long)d->marks);
    nwb_name_token(nwb_name_make("render.draw_calls"), tok);
    fprintf(f, "counter render.draw_calls %s %llu\n", tok, (unsigned long long)d->draw_samples);
    nwb_name_token(nwb_name_make("worker.jobs_done"), tok);
    fprintf(f, "counter worker.jobs_done %s %llu\n", tok,
            (unsigned long long)d->worker.samples[SC_WORKER]);
    for (unsigned i = 0; i < SC_COUNT; i++) {
        nwb_name_token(d->names[i], tok);
        fprintf(f, "scope %s %s %s %llu\n", i < SC_CPU_COUNT ? "cpu" : "gpu", scope_defs[i].name,
                tok, (unsigned long long)d->samples[i]);
    }
    for (unsigned i = 0; i < 2; i++) {
        const struct demo_arena *a = &d->arenas[i];

        nwb_name_token(a->name, tok);
        fprintf(f, "memory arena %s %s %llu %llu %llu\n", a->label, tok,
                (unsigned long long)a->used, (unsigned long long)a->reserved,
                (unsigned long long)a->allocs);
    }
    nwb_name_token(d->heap_name, tok);
    fprintf(f, "memory heapBacking heap/demo %s %llu %llu %llu\n", tok,
            (unsigned long long)d->heap_used,
            (unsigned long long)(((d->heap_used >> 20) + 1u) << 20),
            (unsigned long long)d->heap_allocs);
    fprintf(f,
            "recorder frames %llu events %llu uploads %llu dropped_events %llu "
            "dropped_scopes %llu dropped_uploads %llu\n",
            (unsigned long long)rs->frames, (unsigned long long)rs->events,
            (unsigned long long)rs->uploads, (unsigned long long)rs->dropped_events,
            (unsigned long long)rs->dropped_scopes, (unsigned long long)rs->dropped_uploads);
    fprintf(f, "uploader submitted %llu delivered %llu failed %llu refused %llu\n",
            (unsigned long long)us->submitted, (unsigned long long)us->delivered,
            (unsigned long long)us->failed, (unsigned long long)us->refused);
    fprintf(f, "thread main %u\nthread worker %u\n", (unsigned)d->main_tid,
            (unsigned)d->worker.tid);
    fprintf(f, "worker_late %llu\n", (unsigned long long)d->worker_late);
    bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "nwb-demo: writing %s failed\n", path);
        return -1;
    }
    return 0;
}

static void summary_print(const struct demo *d, const char *run_dir, const char *server,
                          const nwb_tel_recorder_stats_t *rs, const nwb_tel_uploader_stats_t *us)
{
    uint64_t cpu = 0, gpu = 0;

    for (unsigned i = 0; i < SC_COUNT; i++) {
        if (i < SC_CPU_COUNT) {
            cpu += d->samples[i];
        } else {
            gpu += d->samples[i];
        }
    }
    printf("nwb-demo: %llu frames at %u Hz%s: %llu CPU scopes, %llu GPU samples, %llu telemetry "
           "events\n",
           (unsigned long long)d->frames, d->opt.hz, d->opt.fast ? " (fast, unpaced)" : "",
           (unsigned long long)cpu, (unsigned long long)gpu, (unsigned long long)rs->events);
    printf("nwb-demo: telemetry: %llu uploads, %llu delivered, %llu failed, %llu refused; "
           "dropped %llu events, %llu scopes\n",
           (unsigned long long)us->submitted, (unsigned long long)us->delivered,
           (unsigned long long)us->failed, (unsigned long long)us->refused,
           (unsigned long long)rs->dropped_events, (unsigned long long)rs->dropped_scopes);
    if (d->late_frames > 0 || d->worker_late > 0) {
        printf("nwb-demo: %llu frames over budget, %llu worker frames missed\n",
               (unsigned long long)d->late_frames, (unsigned long long)d->worker_late);
    }
    if (server != NULL) {
        printf("nwb-demo: run %s on the server %s; under its --out (default ./nwb-logs):\n"
               "nwb-demo:   log    runs/%s_<YYYYmmdd-HHMMSS>_%s/log.txt\n"
               "nwb-demo:   report runs/%s_<YYYYmmdd-HHMMSS>_%s/telemetry.json\n",
               nwb_client_run_id(d->client), server, nwb_client_program(d->client),
               nwb_client_run_id(d->client), nwb_client_program(d->client),
               nwb_client_run_id(d->client));
        if (us->failed > 0) {
            printf("nwb-demo:   (telemetry uploads failed: the server may not route "
                   "POST /v1/telemetry yet)\n");
        }
    } else {
        printf("nwb-demo: standalone run %s:\n"
               "nwb-demo:   log       %s/log.txt\n"
               "nwb-demo:   telemetry %s/telemetry.nwbs\n"
               "nwb-demo:   report    nwb-telemetry report %s/telemetry.nwbs\n",
               nwb_client_run_id(d->client), run_dir != NULL ? run_dir : "?",
               run_dir != NULL ? run_dir : "?", run_dir != NULL ? run_dir : "?");
    }
}

/* ---- main ----------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    nwb_crash_config_t crash = NWB_CRASH_CONFIG_INIT;
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_tel_recorder_stats_t rs;
    nwb_tel_uploader_stats_t us;
    struct sigaction sa;
    static struct demo demo; /* large (the kept lines); zeroed */
    struct demo *d = &demo;
    char helper[PATH_MAX];
    char errbuf[512];
    char run_dir_buf[1400];
    char server_buf[300];
    const char *run_dir = NULL;
    const char *server = NULL;
    uint64_t period_ns, next_ns;
    int crash_err, err, rc = 0;

    /* First, before anything can crash: argument parsing and logging come after. Only a
     * --logserver=HOST:PORT is looked for now, so crash uploads go where the log goes (the
     * client validates it next; without it: $NWB_LOGSERVER, else 127.0.0.1:7650). */
    crash.version = NWB_VERSION_STRING;
    crash.helper_exe = crash_helper(helper, sizeof(helper));
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strncmp(argv[i], "--logserver=", 12) == 0) {
            crash.server = argv[i] + 12;
        }
    }
    crash.on_crash = demo_on_crash;
    crash_err = nwb_crash_install(&crash); /* also turns the crash log tail on */

    err = nwb_client_config_args(&cfg, &argc, argv, errbuf, sizeof(errbuf));
    if (err != 0) {
        fprintf(stderr, "nwb-demo: %s\n", errbuf);
        return 2;
    }
    err = parse_args(argc, argv, &d->opt);
    if (err != 0) {
        return err > 0 ? 0 : 2;
    }
    if (crash_err != 0) {
        fprintf(stderr, "nwb-demo: crash capture is off: %s\n",
                nwb_strerror_r(crash_err, errbuf, sizeof(errbuf)));
    } else {
        cfg.run_id = nwb_crash_run_id(); /* the log, telemetry and crash packages share it */
    }
    err = nwb_client_create(&cfg, &d->client, errbuf, sizeof(errbuf));
    if (err != 0) {
        fprintf(stderr, "nwb-demo: logger client: %s\n", errbuf);
        return 1;
    }
    d->main_tid = demo_gettid();
    nwb_tel_thread_name("main"); /* its track in reports and traces, and its OS name */
    d->rng.s = 0x6e77622d64656d6full;
    /* Both are borrowed from the client until destroy: keep copies for the summary. */
    if (nwb_client_run_dir(d->client) != NULL) {
        snprintf(run_dir_buf, sizeof(run_dir_buf), "%s", nwb_client_run_dir(d->client));
        run_dir = run_dir_buf;
    }
    if (nwb_client_server(d->client) != NULL) {
        snprintf(server_buf, sizeof(server_buf), "%s", nwb_client_server(d->client));
        server = server_buf;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    err = recorder_setup(d);
    if (err != 0) {
        NWB_LOGGER_ESSENTIAL_ERROR("nwb-demo: telemetry setup failed: %s",
                                   nwb_strerror_r(err, errbuf, sizeof(errbuf)));
        rc = 1;
        goto fail_recorder;
    }
    err = worker_start(d);
    if (err != 0) {
        NWB_LOGGER_ESSENTIAL_ERROR("nwb-demo: worker thread: %s",
                                   nwb_strerror_r(err, errbuf, sizeof(errbuf)));
        rc = 1;
        goto fail_recorder;
    }
    NWB_LOGGER_ESSENTIAL_INFO("nwb-demo %s: %lu frames at %u Hz%s, run %s, %s", NWB_VERSION_STRING,
                              d->opt.frames, d->opt.hz, d->opt.fast ? " (fast)" : "",
                              nwb_client_run_id(d->client),
                              server != NULL ? "server mode" : "standalone");
    if (d->opt.crash != CRASH_NONE) {
        NWB_LOGGER_INFO("will crash (%s) in frame %lu", crash_names[d->opt.crash],
                        d->opt.crash_frame);
    }

    period_ns = 1000000000u / d->opt.hz;
    next_ns = nwb_time_mono_ns();
    for (uint64_t f = 0; f < d->opt.frames && !demo_stop; f++) {
        frame_run(d, f);
        if (d->opt.fast) {
            continue;
        }
        if (d->last_frame_ns > period_ns + period_ns / 2u &&
            d->late_frames++ < DEMO_LATE_WARNINGS) {
            NWB_LOGGER_WARNING("frame %llu took %.3f ms (budget %.3f ms)", (unsigned long long)f,
                               (double)d->last_frame_ns / 1e6, (double)period_ns / 1e6);
        }
        /* Frame pacing: absolute deadlines, so the rate does not drift; a loop more than a
         * frame behind starts counting again from now instead of rushing to catch up. */
        next_ns += period_ns;
        if (nwb_time_mono_ns() > next_ns + period_ns) {
            next_ns = nwb_time_mono_ns();
        } else {
            sleep_until(next_ns);
        }
    }
    if (d->opt.crash == CRASH_STACK && d->frames > d->opt.crash_frame) {
        NWB_LOGGER_ESSENTIAL_ERROR("nwb-demo: --crash stack did not kill the process");
        rc = 3;
    }
    worker_stop(&d->worker);
    for (unsigned i = 0; i < SC_CPU_COUNT; i++) {
        d->samples[i] += d->worker.samples[i]; /* joined: its counts are final */
    }
    NWB_LOGGER_ESSENTIAL_INFO("nwb-demo done: %llu frames%s", (unsigned long long)d->frames,
                              demo_stop ? " (interrupted)" : "");
    err = nwb_tel_flush_upload(d->rec);
    if (err != 0) {
        d->flush_failures++;
    }
    if (nwb_tel_uploader_flush(d->uploader, DEMO_UPLOAD_FLUSH_MS) != 0) {
        NWB_LOGGER_WARNING("nwb-demo: telemetry still not delivered after %u ms",
                           DEMO_UPLOAD_FLUSH_MS);
    }
    nwb_tel_uploader_stats_get(d->uploader, &us);
    nwb_tel_recorder_stats_get(d->rec, &rs);
    if (us.failed > 0 || us.refused > 0) {
        NWB_LOGGER_WARNING("nwb-demo: %llu telemetry uploads failed, %llu refused",
                           (unsigned long long)us.failed, (unsigned long long)us.refused);
    }
    nwb_client_flush(d->client, DEMO_CLIENT_FLUSH_MS);
    if (d->opt.record != NULL && record_write(d, d->opt.record, run_dir, &rs, &us) != 0) {
        rc = 1;
    }
    summary_print(d, run_dir, server, &rs, &us);

fail_recorder:
    worker_stop(&d->worker);
    nwb_tel_uploader_destroy(d->uploader);
    if (d->fg_registered) {
        nwb_tel_fg_contributor_unregister(d->rec, d->fg_id);
    }
    nwb_tel_recorder_destroy(d->rec);
    arena_free_all(&d->arenas[0]);
    arena_free_all(&d->arenas[1]);
    nwb_client_destroy(d->client);
    return rc;
}
