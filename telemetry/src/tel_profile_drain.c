/* SPDX-License-Identifier: MIT */
/*
 * tel_profile_drain.c - the recorder's side of the profiling macros: at frame end it drains
 * every thread's ring (tel_profile.c) on the frame thread. Scopes become the frame's CPU
 * scopes (registered by name on first sight, attributed to their thread), counter samples a
 * counter frame, marks and logger lines their events; each thread's name and counts go out
 * as thread events, and the strings of the names a segment uses as string-table events (not
 * in fin builds). Every table is bounded; what does not fit is dropped and counted.
 */
#include <errno.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/profile.h"
#include "tel_prof_int.h"
#include "tel_rec_int.h"

#define SEG_NAMES 8192u /* names a segment's string tables carry (open addressing, half full) */

#if NWB_IS_FINAL
#define STRINGS_IN_STREAM 0
#else
#define STRINGS_IN_STREAM 1
#endif

static unsigned on_bits(const nwb_tel_recorder_t *rec, unsigned capture)
{
    unsigned bits = 0;

    if (capture & NWB_TEL_CAPTURE_CPU) {
        bits |= NWB__PROF_ON_SCOPES | NWB__PROF_ON_COUNTERS;
    }
    if (capture != 0 && rec->upload) {
        bits |= NWB__PROF_ON_MARKS;
    }
    if ((capture & NWB_TEL_CAPTURE_LOGS) && rec->upload) {
        bits |= NWB__PROF_ON_TEXT;
    }
    return bits;
}

void nwb__tel_prof_init(nwb_tel_recorder_t *rec)
{
    rec->prof_attached = nwb__prof_attach(rec);
}

void nwb__tel_prof_destroy(nwb_tel_recorder_t *rec)
{
    if (rec->prof_attached) {
        nwb__prof_detach(rec);
    }
    nwb_free(rec->counters);
    nwb_free(rec->strings);
    nwb_free(rec->seg_names);
    nwb_free(rec->threads);
}

void nwb__tel_prof_capture(nwb_tel_recorder_t *rec, unsigned capture)
{
    if (rec->prof_attached) {
        nwb__prof_set_on(on_bits(rec, capture));
    }
}

/* 1 when @p name was not yet in this segment's set (and is now), 0 when it was or is full. */
static int seg_name_add(nwb_tel_recorder_t *rec, nwb_name_t name)
{
    uint32_t i;

    if (rec->seg_names == NULL) {
        rec->seg_names = nwb_calloc(SEG_NAMES, sizeof(*rec->seg_names));
        if (rec->seg_names == NULL) {
            return 0;
        }
    }
    if (name == 0 || rec->nseg_names >= SEG_NAMES / 2) {
        return 0;
    }
    for (i = (uint32_t)name & (SEG_NAMES - 1); rec->seg_names[i] != 0;
         i = (i + 1) & (SEG_NAMES - 1)) {
        if (rec->seg_names[i] == name) {
            return 0;
        }
    }
    rec->seg_names[i] = name;
    rec->nseg_names++;
    return 1;
}

void nwb__tel_prof_want_name(nwb_tel_recorder_t *rec, nwb_name_t name, const char *s, size_t len)
{
    if (!STRINGS_IN_STREAM || !rec->upload) {
        return;
    }
    if (s == NULL) {
        s = nwb_tel_name_string(name, &len);
    }
    if (s == NULL || len == 0 || len > NWB_TEL_STRING_MAX || !seg_name_add(rec, name)) {
        return;
    }
    if (rec->nstrings == rec->strings_cap &&
        nwb__tel_table_grow((void **)&rec->strings, &rec->strings_cap, rec->nstrings + 1,
                            NWB_TEL_STRINGS_MAX, sizeof(*rec->strings)) != 0) {
        return;
    }
    rec->strings[rec->nstrings].name = name;
    rec->strings[rec->nstrings].str = s;
    rec->strings[rec->nstrings].len = (uint16_t)len;
    rec->nstrings++;
    if (rec->nstrings == NWB_TEL_STRINGS_MAX) {
        nwb__tel_prof_strings_flush(rec);
    }
}

void nwb__tel_prof_strings_flush(nwb_tel_recorder_t *rec)
{
    int err;

    if (rec->nstrings == 0) {
        return;
    }
    err = nwb__tel_pending_prepare(rec);
    if (err == 0) {
        err = nwb_tel_encode_strings(&rec->pending, nwb__prof_now(), rec->frame, rec->strings,
                                     rec->nstrings);
    }
    if (err != 0) {
        rec->dropped_events++;
    } else {
        rec->pending_events++;
    }
    rec->nstrings = 0;
}

static struct nwb__tel_prof_thread *thread_entry(nwb_tel_recorder_t *rec, uint32_t tid)
{
    struct nwb__tel_prof_thread *e;

    for (uint32_t i = 0; i < rec->nthreads; i++) {
        if (rec->threads[i].tid == tid) {
            return &rec->threads[i];
        }
    }
    if (rec->nthreads == rec->threads_cap &&
        nwb__tel_table_grow((void **)&rec->threads, &rec->threads_cap, rec->nthreads + 1,
                            NWB_TEL_PROFILE_THREADS_MAX, sizeof(*rec->threads)) != 0) {
        return NULL;
    }
    e = &rec->threads[rec->nthreads++];
    memset(e, 0, sizeof(*e));
    e->tid = tid;
    e->dirty = 1;
    return e;
}

static void thread_event(nwb_tel_recorder_t *rec, struct nwb__tel_prof_thread *e)
{
    nwb_tel_thread_info_t info;
    int err;

    if (!rec->upload) {
        return;
    }
    info.thread = e->tid;
    info.name_len = e->name_len;
    info.name = e->name;
    info.records = e->records;
    info.dropped = e->dropped;
    info.malformed = e->malformed;
    err = nwb__tel_pending_prepare(rec);
    if (err == 0) {
        err = nwb_tel_encode_thread(&rec->pending, nwb__prof_now(), rec->frame, &info);
    }
    if (err != 0) {
        rec->dropped_events++;
        return;
    }
    rec->pending_events++;
    e->seg = rec->seq + 1;
    e->dirty = 0;
}

static void on_scope(nwb_tel_recorder_t *rec, uint32_t tid, const nwb__prof_rec_t *r)
{
    nwb_tel_site_t *site = (nwb_tel_site_t *)(uintptr_t)r->a;
    nwb_tel_scope_id_t id;

    if (site->owner != rec || site->id == 0) {
        if (site->hash == 0) {
            site->hash = nwb_name_make_n(site->name, site->len);
        }
        if (nwb_tel_scope_register(rec, site->hash, NWB_TEL_SCOPE_CPU, &id) != 0) {
            rec->dropped_scopes++;
            return;
        }
        site->owner = rec;
        site->id = id + 1;
        site->seg = 0;
    }
    if (site->seg != rec->seq + 1) {
        site->seg = rec->seq + 1;
        nwb__tel_prof_want_name(rec, site->hash, site->name, site->len);
    }
    nwb_tel_scope_record(rec, site->id - 1, tid, r->b, r->c, r->depth);
}

static void on_counter(nwb_tel_recorder_t *rec, uint32_t tid, const nwb__prof_rec_t *r)
{
    nwb_tel_site_t *site = (nwb_tel_site_t *)(uintptr_t)r->a;
    nwb_tel_counter_t *c;
    double v;

    if (site->hash == 0) {
        site->hash = nwb_name_make_n(site->name, site->len);
    }
    memcpy(&v, &r->c, sizeof(v));
    if (v != v || v - v != 0) { /* NaN or infinite: the format refuses them */
        rec->dropped_scopes++;
        return;
    }
    if (rec->ncounters == rec->counters_cap &&
        nwb__tel_table_grow((void **)&rec->counters, &rec->counters_cap, rec->ncounters + 1,
                            NWB_TEL_COUNTERS_MAX, sizeof(*rec->counters)) != 0) {
        rec->dropped_scopes++;
        return;
    }
    if (site->owner != rec || site->seg != rec->seq + 1) {
        site->owner = rec;
        site->id = 0;
        site->seg = rec->seq + 1;
        nwb__tel_prof_want_name(rec, site->hash, site->name, site->len);
    }
    c = &rec->counters[rec->ncounters++];
    c->name = site->hash;
    c->ts_ns = r->b;
    c->value = v;
    c->thread = tid;
}

/* The frame whose time @p ts falls in, of the last 64 (the oldest one for older times). */
static uint64_t frame_at(const nwb_tel_recorder_t *rec, uint64_t ts)
{
    const uint32_t n = rec->frame_hist_n < 64 ? rec->frame_hist_n : 64;
    uint64_t frame = rec->frame;

    for (uint32_t k = 0; k < n; k++) {
        const uint32_t i = (rec->frame_hist_n - 1 - k) % 64;

        frame = rec->frame_hist[i].frame;
        if (rec->frame_hist[i].start_ns <= ts) {
            break;
        }
    }
    return frame;
}

static void encode_or_drop(nwb_tel_recorder_t *rec, int err)
{
    if (err != 0) {
        rec->dropped_events++;
    } else {
        rec->pending_events++;
    }
}

static void drain_record(void *ctx, uint32_t tid, const nwb__prof_rec_t *r, const uint8_t *bytes,
                         size_t len)
{
    nwb_tel_recorder_t *rec = ctx;
    const int cpu = (rec->frame_capture & NWB_TEL_CAPTURE_CPU) != 0;
    struct nwb__tel_prof_thread *e;

    switch (r->type) {
    case NWB__PROF_SCOPE:
        if (cpu) {
            on_scope(rec, tid, r);
        }
        break;
    case NWB__PROF_COUNTER:
        if (cpu) {
            on_counter(rec, tid, r);
        }
        break;
    case NWB__PROF_MARK:
        if (rec->upload && rec->frame_capture != 0) {
            int err = nwb__tel_pending_prepare(rec);

            if (err == 0) {
                err = nwb_tel_encode_mark(&rec->pending, r->a, rec->frame, tid, (const char *)bytes,
                                          len);
            }
            encode_or_drop(rec, err);
        }
        break;
    case NWB__PROF_TEXT:
        if (rec->upload && (rec->frame_capture & NWB_TEL_CAPTURE_LOGS)) {
            int err = nwb__tel_pending_prepare(rec);

            if (err == 0) {
                err = nwb_tel_encode_text(&rec->pending, r->a, frame_at(rec, r->a),
                                          r->depth > 3 ? 3u : r->depth, (uint32_t)r->b,
                                          (const char *)bytes, len);
            }
            encode_or_drop(rec, err);
        }
        break;
    case NWB__PROF_NAME:
        e = thread_entry(rec, tid);
        if (e != NULL) {
            const size_t n = len < NWB_TEL_THREAD_NAME_MAX ? len : NWB_TEL_THREAD_NAME_MAX;

            if (n != e->name_len || memcmp(e->name, bytes, n) != 0) {
                memcpy(e->name, bytes, n);
                e->name_len = (uint16_t)n;
                e->dirty = 1;
                e->seg = 0; /* a new name goes out at once */
            }
        }
        break;
    default:
        break;
    }
}

static void drain_thread(void *ctx, uint32_t tid, uint64_t consumed, uint64_t dropped,
                         uint64_t malformed, int exited, uint64_t got)
{
    nwb_tel_recorder_t *rec = ctx;
    struct nwb__tel_prof_thread *e;

    if (got == 0 && dropped == 0 && malformed == 0 && !exited) {
        /* nothing new; a thread that never recorded is not worth an entry */
        for (uint32_t i = 0; i < rec->nthreads; i++) {
            if (rec->threads[i].tid == tid) {
                goto known;
            }
        }
        return;
    }
known:
    e = thread_entry(rec, tid);
    if (e == NULL) {
        return;
    }
    if (e->records != consumed + dropped || e->dropped != dropped || e->malformed != malformed) {
        e->records = consumed + dropped;
        e->dropped = dropped;
        e->malformed = malformed;
        e->dirty = 1;
    }
    e->exited |= exited;
    if (e->seg != rec->seq + 1 && got > 0) {
        thread_event(rec, e); /* first records of this segment: name the thread now */
    }
}

void nwb__tel_prof_frame_end(nwb_tel_recorder_t *rec, uint64_t end_ns)
{
    static const struct nwb__prof_drain_ops ops = {drain_record, drain_thread};

    if (!rec->prof_attached) {
        return;
    }
    nwb__prof_close_open(end_ns);
    rec->ncounters = 0;
    nwb__prof_drain(&ops, rec);
    nwb__tel_prof_strings_flush(rec);
}

void nwb__tel_prof_encode_counters(nwb_tel_recorder_t *rec, uint64_t ts)
{
    int err;

    if (rec->ncounters == 0) {
        return;
    }
    err = nwb__tel_pending_prepare(rec);
    if (err == 0) {
        err = nwb_tel_encode_counters(&rec->pending, ts, rec->frame, rec->counters, rec->ncounters);
    }
    if (err != 0) {
        rec->dropped_events++;
        rec->dropped_scopes += rec->ncounters;
    } else {
        rec->pending_events++;
    }
    rec->ncounters = 0;
}

void nwb__tel_prof_segment_end(nwb_tel_recorder_t *rec)
{
    uint32_t kept = 0;

    if (!rec->prof_attached) {
        return;
    }
    for (uint32_t i = 0; i < rec->nthreads; i++) {
        struct nwb__tel_prof_thread *e = &rec->threads[i];

        if (e->dirty && e->seg == rec->seq + 1) {
            thread_event(rec, e); /* counts as they are at the segment's end */
        }
        if (!e->exited) {
            rec->threads[kept++] = *e;
        }
    }
    rec->nthreads = kept;
    if (rec->seg_names != NULL && rec->nseg_names > 0) {
        memset(rec->seg_names, 0, SEG_NAMES * sizeof(*rec->seg_names));
        rec->nseg_names = 0;
    }
}
