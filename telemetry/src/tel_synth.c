/* SPDX-License-Identifier: MIT */
/*
 * tel_synth.c - a deterministic synthetic telemetry stream, made by driving a real recorder
 * with a fake 60 Hz game: nested scopes on a main, a worker and an audio thread, GPU results
 * published two frames late and sometimes out of order, growing arenas beside a heapBacking
 * total, log lines with name tokens, frame graphs from a contributor, diagnostics, the
 * profiler's format-1.1 events (named threads with their record, drop and malformed counts,
 * the string tables of the scope and counter names, counters, marks), and (on request) events
 * a version-1 reader does not know. Used for golden streams, tests and benchmarks.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/telemetry.h"
#include "nwb/telemetry_report.h"

#define MAIN_THREAD      1u
#define WORKER_THREAD    2u
#define AUDIO_THREAD     3u
#define THREADS          3u
#define AUDIO_SCOPES     2u  /* audio.mix > audio.decode, when the scope budget allows */
#define AUDIO_NAMED_AT   2u  /* the audio thread is named from this frame on */
#define JOB_NAMES        16u
#define SYNTH_MAX_GPU    8u
#define SYNTH_MAX_ARENAS 8u

struct rng {
    uint64_t s;
};

/* splitmix64: tiny, deterministic, good enough for plausible timings. */
static uint64_t rng_next(struct rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static uint64_t rng_range(struct rng *r, uint64_t lo, uint64_t hi)
{
    return lo + rng_next(r) % (hi - lo + 1);
}

struct synth {
    const nwb_tel_synth_config_t *cfg;
    int (*segment)(void *ctx, const uint8_t *data, size_t len);
    void *segment_ctx;
    nwb_namesym_builder_t *names;
    nwb_tel_recorder_t *rec;
    int err;
    struct rng rng;
    uint64_t gpu_last[SYNTH_MAX_GPU]; /* GPU duration of the pending source frames */
    uint64_t arena_used[SYNTH_MAX_ARENAS];
    uint64_t heap_used;
    /* The profiler's per-thread counts (cumulative, as thread events carry them). */
    uint64_t records[THREADS], dropped[THREADS], malformed[THREADS];
    nwb_buf_t event; /* one encoded 1.1 event, its payload handed to the recorder */
};

static nwb_name_t name_of(struct synth *sy, const char *s)
{
    if (sy->names != NULL && sy->err == 0) {
        const int err = nwb_namesym_builder_add(sy->names, s, strlen(s));

        if (err != 0) {
            sy->err = err;
        }
    }
    return nwb_name_hash(s, strlen(s));
}

static int sink_submit(void *ctx, nwb_tel_upload_t *up)
{
    struct synth *sy = ctx;
    const int err = sy->segment(sy->segment_ctx, up->data, up->len);

    if (err != 0) {
        sy->err = err;
        return err;
    }
    nwb_free(up->data);
    return 0;
}

static int append_segment(void *ctx, const uint8_t *data, size_t len)
{
    return nwb_buf_append(ctx, data, len);
}

static const char *const main_names[] = {
    "frame",         "update",         "physics",         "ai",         "animation", "render",
    "render.shadow", "render.gbuffer", "render.lighting", "render.post"};
static const char *const audio_names[AUDIO_SCOPES] = {"audio.mix", "audio.decode"};
static const char *const counter_names[] = {"render.drawCalls", "physics.bodies", "audio.voices",
                                            "worker.queueDepth"};
static const char *const gpu_names[SYNTH_MAX_GPU] = {
    "gpu.shadow",          "gpu.gbuffer",      "gpu.lighting",   "gpu.post",
    "gpu.caustic.photons", "gpu.surfel.trace", "gpu.reflection", "gpu.ui"};
static const char *const arena_names[SYNTH_MAX_ARENAS] = {
    "arena/frame",   "arena/level", "arena/render",    "arena/audio",
    "arena/physics", "arena/ui",    "arena/streaming", "arena/scripts"};

struct scopes {
    nwb_tel_scope_id_t main[NWB_ARRAY_SIZE(main_names)];
    nwb_tel_scope_id_t worker;
    nwb_tel_scope_id_t jobs[JOB_NAMES];
    nwb_tel_scope_id_t gpu[SYNTH_MAX_GPU];
    nwb_tel_scope_id_t audio[AUDIO_SCOPES];
    nwb_name_t job_names[JOB_NAMES];
};

static void fg_contribute(void *ctx, nwb_tel_fg_builder_t *b, uint64_t frame)
{
    struct synth *sy = ctx;
    static const char *const passes[] = {"pass.shadow",   "pass.gbuffer", "pass.ssao",
                                         "pass.lighting", "pass.caustic", "pass.post",
                                         "pass.ui",       "pass.present"};
    nwb_tel_fg_counters_t c;
    uint32_t gfx = 0;
    uint32_t comp = 0;
    uint32_t pk[3];

    nwb_tel_fg_queue_add(b, name_of(sy, "queue.graphics"), NWB_TEL_QUEUE_GRAPHICS, &gfx);
    nwb_tel_fg_queue_add(b, name_of(sy, "queue.compute"), NWB_TEL_QUEUE_COMPUTE, &comp);
    nwb_tel_fg_packet_add(b, gfx, 1, 1, &pk[0]);
    nwb_tel_fg_packet_add(b, comp, 1, 1, &pk[1]);
    nwb_tel_fg_packet_add(b, gfx, 2, 1, &pk[2]);
    for (uint32_t i = 0; i < NWB_ARRAY_SIZE(passes); i++) {
        const uint32_t packet = i < 2 ? pk[0] : (i < 5 ? pk[1] : pk[2]);

        nwb_tel_fg_pass_add(b, name_of(sy, passes[i]), packet, (uint32_t)(1 + (i + frame) % 3),
                            NULL);
        if (i > 0) {
            nwb_tel_fg_edge_add(b, i - 1, i);
        }
    }
    c.emitted_waits = 3;
    c.same_queue_elisions = 2;
    c.duplicate_merges = (uint32_t)(frame % 2);
    c.inherited_elisions = 1;
    nwb_tel_fg_counters_add(b, &c);
}

static int setup(struct synth *sy, struct scopes *sc, nwb_tel_mem_source_t **arenas,
                 nwb_tel_mem_source_t **heap, nwb_tel_mem_source_t **scope)
{
    const nwb_tel_synth_config_t *cfg = sy->cfg;
    char buf[32];
    int err = 0;

    for (size_t i = 0; i < NWB_ARRAY_SIZE(main_names) && err == 0; i++) {
        err = nwb_tel_scope_register(sy->rec, name_of(sy, main_names[i]), NWB_TEL_SCOPE_CPU,
                                     &sc->main[i]);
    }
    if (err == 0) {
        err = nwb_tel_scope_register(sy->rec, name_of(sy, "worker.jobs"), NWB_TEL_SCOPE_CPU,
                                     &sc->worker);
    }
    for (unsigned i = 0; i < JOB_NAMES && err == 0; i++) {
        snprintf(buf, sizeof(buf), "job.%u", i);
        sc->job_names[i] = name_of(sy, buf);
        err = nwb_tel_scope_register(sy->rec, sc->job_names[i], NWB_TEL_SCOPE_CPU, &sc->jobs[i]);
    }
    for (unsigned i = 0; i < cfg->gpu_scopes && err == 0; i++) {
        err = nwb_tel_scope_register(sy->rec, name_of(sy, gpu_names[i]), NWB_TEL_SCOPE_GPU,
                                     &sc->gpu[i]);
    }
    for (unsigned i = 0; cfg->profiler && i < AUDIO_SCOPES && err == 0; i++) {
        err = nwb_tel_scope_register(sy->rec, name_of(sy, audio_names[i]), NWB_TEL_SCOPE_CPU,
                                     &sc->audio[i]);
    }
    for (size_t i = 0; cfg->profiler && i < NWB_ARRAY_SIZE(counter_names); i++) {
        (void)name_of(sy, counter_names[i]);
    }
    for (unsigned i = 0; i < cfg->arenas && err == 0; i++) {
        err = nwb_tel_mem_source_register(sy->rec, name_of(sy, arena_names[i]), NWB_TEL_MEM_ARENA,
                                          NWB_TEL_PEAK_LARGEST_ARENA, &arenas[i]);
    }
    if (err == 0) {
        err =
            nwb_tel_mem_source_register(sy->rec, name_of(sy, "heap/core"), NWB_TEL_MEM_HEAP_BACKING,
                                        NWB_TEL_PEAK_SAMPLED_HEAP, heap);
    }
    if (err == 0) {
        err = nwb_tel_mem_source_register(sy->rec, name_of(sy, "scope/loading"),
                                          NWB_TEL_MEM_EXPLICIT_SCOPE, NWB_TEL_PEAK_SCOPE, scope);
    }
    if (err == 0 && cfg->frame_graph_every > 0) {
        nwb_tel_contributor_id_t id;

        err = nwb_tel_fg_contributor_register(sy->rec, fg_contribute, sy, &id);
    }
    return err;
}

struct span {
    unsigned idx;
    uint64_t start, end;
    uint16_t depth;
};

static struct span span_make(unsigned idx, uint64_t start, uint64_t end, uint16_t depth)
{
    struct span s;

    s.idx = idx;
    s.start = start;
    s.end = end;
    s.depth = depth;
    return s;
}

/* One frame of the main thread: frame > {update > {physics, ai, animation}, render > {...}}. */
static uint32_t main_thread(struct synth *sy, const struct scopes *sc, uint64_t t0, uint64_t dur,
                            uint32_t budget)
{
    const uint64_t update = dur * rng_range(&sy->rng, 30, 40) / 100;
    const uint64_t render = dur - update - dur / 20;
    struct span s[NWB_ARRAY_SIZE(main_names)];
    uint64_t t;
    uint32_t n = 0;

    s[n++] = span_make(0, t0, t0 + dur, 0);
    s[n++] = span_make(1, t0 + dur / 40, t0 + dur / 40 + update, 1);
    t = t0 + dur / 40;
    for (unsigned k = 2; k <= 4; k++) {
        const uint64_t d = update * (k == 2 ? 45 : (k == 3 ? 30 : 20)) / 100;

        s[n++] = span_make(k, t, t + d, 2);
        t += d + update / 40;
    }
    t = t0 + dur / 40 + update + dur / 80;
    s[n++] = span_make(5, t, t + render, 1);
    for (unsigned k = 6; k <= 9; k++) {
        const uint64_t d = render * (k == 6 ? 20 : (k == 7 ? 30 : (k == 8 ? 35 : 10))) / 100;

        s[n++] = span_make(k, t, t + d, 2);
        t += d + render / 100;
    }
    if (n > budget) {
        n = budget;
    }
    for (uint32_t i = 0; i < n; i++) {
        nwb_tel_scope_record(sy->rec, sc->main[s[i].idx], MAIN_THREAD, s[i].start, s[i].end,
                             s[i].depth);
    }
    return n;
}

static void worker_thread(struct synth *sy, const struct scopes *sc, uint64_t t0, uint64_t dur,
                          uint32_t count)
{
    uint64_t t = t0 + dur / 50;
    const uint64_t span = dur * 90 / 100;
    const uint64_t slice = count > 1 ? span / (count - 1) : span;

    if (count == 0) {
        return;
    }
    nwb_tel_scope_record(sy->rec, sc->worker, WORKER_THREAD, t, t + span, 0);
    for (uint32_t i = 1; i < count; i++) {
        const uint64_t d = slice * rng_range(&sy->rng, 50, 95) / 100;

        nwb_tel_scope_record(sy->rec, sc->jobs[i % JOB_NAMES], WORKER_THREAD, t, t + d, 1);
        t += slice;
    }
}

/* ---- The profiler's format-1.1 events -------------------------------------------------- */

/* Hand the payload of the event just encoded in sy->event to the recorder (current frame). */
static void record_encoded(struct synth *sy, int enc_err, unsigned kind, uint64_t ts)
{
    int err = enc_err;

    if (err == 0) {
        err = nwb_tel_event_record_raw(sy->rec, kind, 1, ts, sy->event.data + NWB_TEL_EVENT_HEADER,
                                       sy->event.len - NWB_TEL_EVENT_HEADER);
    }
    if (err != 0 && sy->err == 0) {
        sy->err = err;
    }
    sy->event.len = 0;
}

/* The audio thread's frame: audio.mix with audio.decode inside, mid-frame. */
static void audio_thread(struct synth *sy, const struct scopes *sc, uint64_t t0, uint64_t dur)
{
    const uint64_t start = t0 + dur / 3;
    const uint64_t mix = dur * rng_range(&sy->rng, 8, 14) / 100;

    nwb_tel_scope_record(sy->rec, sc->audio[0], AUDIO_THREAD, start, start + mix, 0);
    nwb_tel_scope_record(sy->rec, sc->audio[1], AUDIO_THREAD, start + mix / 10,
                         start + mix * 6 / 10, 1);
    sy->records[AUDIO_THREAD - 1] += AUDIO_SCOPES;
}

/* The strings of every scope and counter name the profiler uses, as the recorder writes them at
 * the start of each segment (the first time the segment uses them). GPU, memory, frame-graph and
 * diagnostic names stay hashes: their strings come from the .namesym sidecar. */
static void string_table(struct synth *sy, uint64_t ts)
{
    nwb_tel_string_t s[NWB_ARRAY_SIZE(main_names) + 1 + JOB_NAMES + AUDIO_SCOPES +
                       NWB_ARRAY_SIZE(counter_names)];
    char jobs[JOB_NAMES][16];
    uint32_t n = 0;

    for (size_t i = 0; i < NWB_ARRAY_SIZE(main_names); i++) {
        s[n].str = main_names[i];
        s[n++].len = (uint16_t)strlen(main_names[i]);
    }
    s[n].str = "worker.jobs";
    s[n++].len = 11;
    for (unsigned i = 0; i < JOB_NAMES; i++) {
        const int len = snprintf(jobs[i], sizeof(jobs[i]), "job.%u", i);

        s[n].str = jobs[i];
        s[n++].len = (uint16_t)len;
    }
    for (size_t i = 0; i < AUDIO_SCOPES; i++) {
        s[n].str = audio_names[i];
        s[n++].len = (uint16_t)strlen(audio_names[i]);
    }
    for (size_t i = 0; i < NWB_ARRAY_SIZE(counter_names); i++) {
        s[n].str = counter_names[i];
        s[n++].len = (uint16_t)strlen(counter_names[i]);
    }
    for (uint32_t i = 0; i < n; i++) {
        s[i].name = nwb_name_hash(s[i].str, s[i].len);
    }
    record_encoded(sy, nwb_tel_encode_strings(&sy->event, ts, 0, s, n), NWB_TEL_KIND_STRING_TABLE,
                   ts);
}

/* One counterFrame: draw calls and bodies on the main thread, two voice-count samples on the
 * audio thread, the job queue's depth on the worker. */
static void counter_frame(struct synth *sy, uint64_t f, uint64_t t0, uint64_t dur, int hitch)
{
    nwb_tel_counter_t c[5];

    for (unsigned i = 0; i < NWB_ARRAY_SIZE(c); i++) {
        const unsigned k = i < 2 ? i : (i < 4 ? 2 : 3);

        c[i].name = nwb_name_hash(counter_names[k], strlen(counter_names[k]));
        c[i].ts_ns = t0 + dur * (i + 1) / 8;
        c[i].thread = k < 2 ? MAIN_THREAD : (k == 2 ? AUDIO_THREAD : WORKER_THREAD);
    }
    c[0].value = (double)rng_range(&sy->rng, 800, 1200) * (hitch ? 2.0 : 1.0);
    c[1].value = (double)(120 + f / 3);
    c[2].value = (double)rng_range(&sy->rng, 8, 24);
    c[3].value = (double)rng_range(&sy->rng, 8, 24) + 0.5;
    c[4].value = (double)rng_range(&sy->rng, 0, 12);
    sy->records[MAIN_THREAD - 1] += 2;
    sy->records[AUDIO_THREAD - 1] += 2;
    sy->records[WORKER_THREAD - 1] += 1;
    record_encoded(sy, nwb_tel_encode_counters(&sy->event, t0, 0, c, 5), NWB_TEL_KIND_COUNTER_FRAME,
                   t0 + dur / 2);
}

static void mark(struct synth *sy, uint32_t thread, uint64_t ts, const char *text)
{
    sy->records[thread - 1]++;
    record_encoded(sy, nwb_tel_encode_mark(&sy->event, ts, 0, thread, text, strlen(text)),
                   NWB_TEL_KIND_MARK, ts);
}

/* The thread events of a segment: cumulative counts; the audio thread is named late, so its
 * first events carry no name (a reader keeps the name once it is given). */
static void thread_events(struct synth *sy, uint64_t f, uint64_t ts)
{
    static const char *const names[THREADS] = {"main", "worker", "audio"};

    for (uint32_t t = 0; t < THREADS; t++) {
        nwb_tel_thread_info_t ti;
        const int named = t + 1 != AUDIO_THREAD || f >= AUDIO_NAMED_AT;

        ti.thread = t + 1;
        ti.name = named ? names[t] : NULL;
        ti.name_len = named ? (uint16_t)strlen(names[t]) : 0;
        ti.records = sy->records[t];
        ti.dropped = sy->dropped[t];
        ti.malformed = sy->malformed[t];
        record_encoded(sy, nwb_tel_encode_thread(&sy->event, ts, 0, &ti), NWB_TEL_KIND_THREAD,
                       ts);
    }
}

static void memory_frame(struct synth *sy, uint64_t f, nwb_tel_mem_source_t **arenas,
                         nwb_tel_mem_source_t *heap, nwb_tel_mem_source_t *scope)
{
    uint64_t arena_sum = 0;
    uint64_t heap_target;

    for (unsigned i = 0; i < sy->cfg->arenas; i++) {
        if (i == 0) {
            /* A per-frame arena: reset at the frame start, then filled again. */
            const uint64_t bytes = rng_range(&sy->rng, 64u << 10, 256u << 10);

            if (sy->arena_used[0] > 0) {
                nwb_tel_mem_free(arenas[0], sy->arena_used[0]);
            }
            nwb_tel_mem_alloc(arenas[0], bytes);
            sy->arena_used[0] = bytes;
        } else {
            /* Long-lived arenas grow, in bursts every 7 frames. */
            const uint64_t bytes = (uint64_t)i * 4096u + (f % 7 == 0 ? 65536u : 0u);

            nwb_tel_mem_alloc(arenas[i], bytes);
            sy->arena_used[i] += bytes;
        }
        /* Reserved grows in 1 MiB chunks ahead of use. */
        nwb_tel_mem_set_reserved(arenas[i], ((sy->arena_used[i] >> 20) + 1) << 20);
        arena_sum += sy->arena_used[i];
    }
    /* heapBacking is the inclusive heap total (the arenas' backing plus everything else):
     * reported beside the arenas, never added to them. */
    heap_target = arena_sum + (2u << 20) + f * 4096u;
    if (heap_target > sy->heap_used) {
        nwb_tel_mem_alloc(heap, heap_target - sy->heap_used);
    } else if (heap_target < sy->heap_used) {
        nwb_tel_mem_free(heap, sy->heap_used - heap_target);
    }
    sy->heap_used = heap_target;
    nwb_tel_mem_set_reserved(heap, ((heap_target >> 20) + 4) << 20);
    if (f < 8) {
        nwb_tel_mem_alloc(scope, 1u << 16);
    } else if (f == 8) {
        nwb_tel_mem_free(scope, 8u << 16);
    }
}

int nwb_tel_synth(const nwb_tel_synth_config_t *cfg, nwb_buf_t *out, nwb_namesym_builder_t *names)
{
    return nwb_tel_synth_run(cfg, append_segment, out, names);
}

int nwb_tel_synth_run(const nwb_tel_synth_config_t *cfg,
                      int (*segment)(void *ctx, const uint8_t *data, size_t len), void *ctx,
                      nwb_namesym_builder_t *names)
{
    nwb_tel_recorder_config_t rc = NWB_TEL_RECORDER_CONFIG_INIT;
    nwb_tel_mem_source_t *arenas[SYNTH_MAX_ARENAS] = {NULL};
    nwb_tel_mem_source_t *heap = NULL;
    nwb_tel_mem_source_t *scope = NULL;
    nwb_tel_sink_t sink;
    struct scopes sc;
    struct synth sy;
    char run[32];
    uint64_t t;
    int err;

    if (cfg->gpu_scopes > SYNTH_MAX_GPU || cfg->arenas > SYNTH_MAX_ARENAS ||
        cfg->scopes_per_frame < 4 || cfg->scopes_per_frame > NWB_TEL_CPU_SCOPES_MAX) {
        return NWB_ECONFIG;
    }
    memset(&sy, 0, sizeof(sy));
    nwb_buf_init(&sy.event, NWB_TEL_EVENT_HEADER + NWB_TEL_PAYLOAD_MAX);
    sy.cfg = cfg;
    sy.segment = segment;
    sy.segment_ctx = ctx;
    sy.names = names;
    sy.rng.s = cfg->seed;
    snprintf(run, sizeof(run), "synth%016llx", (unsigned long long)cfg->seed);
    rc.program = "nwb-synth";
    rc.run_id = run;
    rc.build_id = "synth-build-1";
    rc.start_wall_ns = 1700000000000000000ull;
    rc.start_mono_ns = 1000000000ull;
    rc.cpu_scopes_max = cfg->scopes_per_frame;
    rc.frame_bytes_max = 8u << 20;
    rc.pending_bytes_max = 256u << 20;
    err = nwb_tel_recorder_create(&rc, &sy.rec);
    if (err != 0) {
        return err;
    }
    err = setup(&sy, &sc, arenas, &heap, &scope);
    if (err != 0) {
        goto out;
    }
    sink.submit = sink_submit;
    sink.ctx = &sy;
    nwb_tel_recorder_set_upload(sy.rec, 1, &sink);
    t = rc.start_mono_ns + 5000000u;
    for (uint64_t f = 0; f < cfg->frames && sy.err == 0; f++) {
        /* 16.67 ms +- 1.5 ms, with a hitch every 37 frames. */
        uint64_t dur = rng_range(&sy.rng, 15166667u, 18166667u);
        char msg[160];
        uint32_t main_n;
        uint32_t audio_n;
        const uint32_t fpu = cfg->frames_per_upload;
        const int segment_first = fpu > 0 ? f % fpu == 0 : f == 0;
        const int segment_last = (fpu > 0 && (f + 1) % fpu == 0) || f + 1 == cfg->frames;

        if (f % 37 == 36) {
            dur = dur * rng_range(&sy.rng, 20, 30) / 10;
        }
        /* A frame graph only every frame_graph_every frames: the switch decides, as a game
         * would capture one diagnostic frame on request. */
        nwb_tel_recorder_set_capture(
            sy.rec, cfg->frame_graph_every > 0 && (f + 1) % cfg->frame_graph_every == 0
                        ? NWB_TEL_CAPTURE_ALL
                        : (NWB_TEL_CAPTURE_ALL & ~NWB_TEL_CAPTURE_FRAME_GRAPH));
        nwb_tel_frame_begin(sy.rec, f, t);
        if (cfg->profiler && segment_first) {
            string_table(&sy, t);
        }
        /* The audio thread's two scopes and at least two on the worker come out of the budget
         * first (when it has room for them); the main thread takes what is left, up to 10. */
        audio_n = cfg->profiler && cfg->scopes_per_frame >= 8 ? AUDIO_SCOPES : 0;
        main_n = main_thread(&sy, &sc, t, dur,
                             cfg->scopes_per_frame - audio_n - (audio_n != 0 ? 2u : 0u));
        worker_thread(&sy, &sc, t, dur, cfg->scopes_per_frame - audio_n - main_n);
        if (audio_n != 0) {
            audio_thread(&sy, &sc, t, dur);
        }
        if (cfg->profiler) {
            sy.records[MAIN_THREAD - 1] += main_n;
            sy.records[WORKER_THREAD - 1] += cfg->scopes_per_frame - audio_n - main_n;
            /* Overload: the worker's ring overflows every 4th frame, by more in a hitch; the
             * audio thread leaves a scope open at a frame end every 5th frame. */
            if (f % 4 == 3 || f % 37 == 36) {
                const unsigned lost = f % 37 == 36 ? 3u : 1u;

                sy.records[WORKER_THREAD - 1] += lost;
                sy.dropped[WORKER_THREAD - 1] += lost;
            }
            if (f % 5 == 4) {
                sy.malformed[AUDIO_THREAD - 1]++;
            }
            counter_frame(&sy, f, t, dur, f % 37 == 36);
            if (f == 0) {
                mark(&sy, MAIN_THREAD, t + 1000u, "level loaded");
            } else if (f % 30 == 3) {
                mark(&sy, MAIN_THREAD, t + dur / 4, "autosave");
            }
            if (f % 37 == 36) {
                mark(&sy, WORKER_THREAD, t + dur / 2, "streaming stall");
            }
        }
        /* GPU results of frame f-2 arrive now; every 7th frame they are held back and arrive
         * with the next frame's, newest first (out of source-frame order). */
        for (unsigned g = 0; g < cfg->gpu_scopes; g++) {
            const uint64_t gd = rng_range(&sy.rng, 300000u + g * 200000u, 500000u + g * 300000u);

            if (f >= 2 && f % 7 != 0) {
                nwb_tel_gpu_sample(sy.rec, sc.gpu[g], f - 2, gd);
                if (f % 7 == 1 && f >= 3) {
                    nwb_tel_gpu_sample(sy.rec, sc.gpu[g], f - 3, sy.gpu_last[g]);
                }
            }
            sy.gpu_last[g] = gd;
        }
        if (cfg->arenas > 0) {
            memory_frame(&sy, f, arenas, heap, scope);
        }
        for (uint32_t l = 0; l < cfg->logs_per_frame; l++) {
            char tok[NWB_NAME_TOKEN_SIZE];
            int n;

            nwb_name_token(sc.job_names[(f + l) % JOB_NAMES], tok);
            n = snprintf(msg, sizeof(msg), "frame %llu: %s finished in %.3f ms",
                         (unsigned long long)f, tok, (double)dur / 3e6);
            nwb_tel_text_record(sy.rec, t + dur / 2 + l, 0, MAIN_THREAD, msg, (size_t)n);
        }
        if (dur > 25000000u) {
            const int n = snprintf(msg, sizeof(msg), "frame %llu over budget: %.3f ms",
                                   (unsigned long long)f, (double)dur / 1e6);

            nwb_tel_text_record(sy.rec, t + dur - 1000u, 1, MAIN_THREAD, msg, (size_t)n);
        }
        if (cfg->diagnostics_every > 0 &&
            f % cfg->diagnostics_every == cfg->diagnostics_every - 1) {
            const nwb_tel_kv_t kv[2] = {{"shader", "lighting.frag", 6, 13},
                                        {"compile_ms", "3.25", 10, 4}};

            nwb_tel_diag_record(sy.rec, t + dur / 3, name_of(&sy, "diag.shader.slow_compile"),
                                NWB_TEL_SEVERITY_WARNING, kv, 2);
        }
        if (cfg->unknown_kinds && f % 10 == 5) {
            /* A kind from a newer writer, and a newer textLog version with a trailing field:
             * a version-1 reader skips the first and reads the known prefix of the second. */
            static const uint8_t blob[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
            uint8_t text2[NWB_TEL_TEXT_HEADER + 11 + 4] = {0};

            nwb_tel_event_record_raw(sy.rec, 0x0100u, 1, t + 10, blob, sizeof(blob));
            text2[2] = 11;
            text2[4] = MAIN_THREAD;
            memcpy(text2 + NWB_TEL_TEXT_HEADER, "from v2 log", 11);
            text2[NWB_TEL_TEXT_HEADER + 11] = 0xaa;
            nwb_tel_event_record_raw(sy.rec, NWB_TEL_KIND_TEXT_LOG, 2, t + 11, text2,
                                     sizeof(text2));
        }
        if (cfg->profiler && segment_last) {
            thread_events(&sy, f, t + dur - 500u);
        }
        nwb_tel_frame_end(sy.rec, t + dur);
        t += dur;
        if (cfg->frames_per_upload > 0 && (f + 1) % cfg->frames_per_upload == 0) {
            err = nwb_tel_flush_upload(sy.rec);
            if (err != 0) {
                goto out;
            }
        }
    }
    err = sy.err != 0 ? sy.err : nwb_tel_flush_upload(sy.rec);
out:
    nwb_tel_recorder_destroy(sy.rec);
    nwb_buf_cleanup(&sy.event);
    return err != 0 ? err : sy.err;
}
