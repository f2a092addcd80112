/* SPDX-License-Identifier: MIT */
/*
 * tel_contrib.c - frame-graph contributors: registration, unregistration that is safe against
 * a frame in progress (a frame never calls a contributor that has unregistered), and the
 * builder contributors describe their frame's queues, packets, passes and edges with.
 */
#include <errno.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "tel_rec_int.h"

int nwb__tel_contrib_init(struct nwb_tel_recorder *rec)
{
    const int err = pthread_mutex_init(&rec->contrib_lock, NULL);

    if (err != 0) {
        return -err;
    }
    atomic_init(&rec->contrib_calling, 0);
    rec->next_contrib_id = 1;
    return 0;
}

void nwb__tel_contrib_destroy(struct nwb_tel_recorder *rec)
{
    if (rec == NULL) {
        return;
    }
    nwb_free(rec->contribs);
    rec->contribs = NULL;
    rec->ncontribs = 0;
    pthread_mutex_destroy(&rec->contrib_lock);
}

int nwb_tel_fg_contributor_register(nwb_tel_recorder_t *rec, nwb_tel_fg_contribute_fn fn, void *ctx,
                                    nwb_tel_contributor_id_t *id)
{
    int err = 0;

    *id = 0;
    if (fn == NULL) {
        return NWB_ECONFIG;
    }
    pthread_mutex_lock(&rec->contrib_lock);
    if (rec->contribs == NULL) {
        rec->contribs = nwb_calloc(rec->contributors_max, sizeof(*rec->contribs));
        if (rec->contribs == NULL) {
            err = -ENOMEM;
            goto out;
        }
    }
    /* Reuse a slot freed by an unregistration. */
    for (uint32_t i = 0; i < rec->ncontribs; i++) {
        if (!rec->contribs[i].active) {
            rec->contribs[i].fn = fn;
            rec->contribs[i].ctx = ctx;
            rec->contribs[i].id = rec->next_contrib_id++;
            rec->contribs[i].active = 1;
            *id = rec->contribs[i].id;
            goto out;
        }
    }
    if (rec->ncontribs >= rec->contributors_max) {
        err = NWB_EFULL;
        goto out;
    }
    rec->contribs[rec->ncontribs].fn = fn;
    rec->contribs[rec->ncontribs].ctx = ctx;
    rec->contribs[rec->ncontribs].id = rec->next_contrib_id++;
    rec->contribs[rec->ncontribs].active = 1;
    *id = rec->contribs[rec->ncontribs].id;
    rec->ncontribs++;
out:
    pthread_mutex_unlock(&rec->contrib_lock);
    return err;
}

static int deactivate(struct nwb_tel_recorder *rec, nwb_tel_contributor_id_t id)
{
    for (uint32_t i = 0; i < rec->ncontribs; i++) {
        if (rec->contribs[i].active && rec->contribs[i].id == id) {
            rec->contribs[i].active = 0;
            rec->contribs[i].fn = NULL;
            rec->contribs[i].ctx = NULL;
            return 0;
        }
    }
    return -ENOENT;
}

int nwb_tel_fg_contributor_unregister(nwb_tel_recorder_t *rec, nwb_tel_contributor_id_t id)
{
    int err;

    /* From inside a callback the frame thread already holds the lock; taking it again would
     * deadlock, and the table is safe to change from the thread that holds it. */
    if (atomic_load_explicit(&rec->contrib_calling, memory_order_acquire) &&
        pthread_equal(rec->contrib_owner, pthread_self())) {
        return deactivate(rec, id);
    }
    /* Blocks while a frame is calling contributors: once we return, no call is running and
     * none will start for this id. */
    pthread_mutex_lock(&rec->contrib_lock);
    err = deactivate(rec, id);
    pthread_mutex_unlock(&rec->contrib_lock);
    return err;
}

int nwb__tel_contrib_run(struct nwb_tel_recorder *rec)
{
    int any = 0;

    rec->fg_nqueues = 0;
    rec->fg_npackets = 0;
    rec->fg_npasses = 0;
    rec->fg_nedges = 0;
    memset(&rec->fg_counters, 0, sizeof(rec->fg_counters));
    pthread_mutex_lock(&rec->contrib_lock);
    rec->contrib_owner = pthread_self();
    atomic_store_explicit(&rec->contrib_calling, 1, memory_order_release);
    for (uint32_t i = 0; i < rec->ncontribs; i++) {
        /* Re-read the slot each time: a callback may unregister itself or another. */
        if (rec->contribs[i].active) {
            rec->contribs[i].fn(rec->contribs[i].ctx, &rec->builder, rec->frame);
            any = 1;
        }
    }
    atomic_store_explicit(&rec->contrib_calling, 0, memory_order_release);
    pthread_mutex_unlock(&rec->contrib_lock);
    return any && (rec->fg_nqueues > 0 || rec->fg_npasses > 0);
}

void nwb__tel_fg_tables_free(struct nwb_tel_recorder *rec)
{
    if (rec == NULL) {
        return;
    }
    nwb_free(rec->fg_queues);
    nwb_free(rec->fg_packets);
    nwb_free(rec->fg_passes);
    nwb_free(rec->fg_edges);
    rec->fg_queues = NULL;
    rec->fg_packets = NULL;
    rec->fg_passes = NULL;
    rec->fg_edges = NULL;
    rec->fg_cap_queues = rec->fg_cap_packets = rec->fg_cap_passes = rec->fg_cap_edges = 0;
    rec->fg_nqueues = rec->fg_npackets = rec->fg_npasses = rec->fg_nedges = 0;
}

static int drop(struct nwb_tel_recorder *rec, int err)
{
    rec->dropped_scopes++;
    return err;
}

int nwb_tel_fg_queue_add(nwb_tel_fg_builder_t *b, nwb_name_t name, unsigned type, uint32_t *index)
{
    struct nwb_tel_recorder *rec = b->rec;
    int err;

    if (type > NWB_TEL_QUEUE_OTHER) {
        return drop(rec, NWB_ERANGE);
    }
    err = nwb__tel_table_grow((void **)&rec->fg_queues, &rec->fg_cap_queues, rec->fg_nqueues + 1,
                              NWB_TEL_FG_QUEUES_MAX, sizeof(*rec->fg_queues));
    if (err != 0) {
        return drop(rec, err);
    }
    rec->fg_queues[rec->fg_nqueues].name = name;
    rec->fg_queues[rec->fg_nqueues].type = (uint8_t)type;
    if (index != NULL) {
        *index = rec->fg_nqueues;
    }
    rec->fg_nqueues++;
    return 0;
}

int nwb_tel_fg_packet_add(nwb_tel_fg_builder_t *b, uint32_t queue, uint32_t waits, uint32_t signals,
                          uint32_t *index)
{
    struct nwb_tel_recorder *rec = b->rec;
    int err;

    if (queue >= rec->fg_nqueues) {
        return drop(rec, NWB_ERANGE);
    }
    err = nwb__tel_table_grow((void **)&rec->fg_packets, &rec->fg_cap_packets, rec->fg_npackets + 1,
                              NWB_TEL_FG_PACKETS_MAX, sizeof(*rec->fg_packets));
    if (err != 0) {
        return drop(rec, err);
    }
    rec->fg_packets[rec->fg_npackets].queue = queue;
    rec->fg_packets[rec->fg_npackets].waits = waits;
    rec->fg_packets[rec->fg_npackets].signals = signals;
    if (index != NULL) {
        *index = rec->fg_npackets;
    }
    rec->fg_npackets++;
    return 0;
}

int nwb_tel_fg_pass_add(nwb_tel_fg_builder_t *b, nwb_name_t name, uint32_t packet,
                        uint32_t barriers, uint32_t *index)
{
    struct nwb_tel_recorder *rec = b->rec;
    int err;

    if (packet >= rec->fg_npackets) {
        return drop(rec, NWB_ERANGE);
    }
    err = nwb__tel_table_grow((void **)&rec->fg_passes, &rec->fg_cap_passes, rec->fg_npasses + 1,
                              NWB_TEL_FG_PASSES_MAX, sizeof(*rec->fg_passes));
    if (err != 0) {
        return drop(rec, err);
    }
    rec->fg_passes[rec->fg_npasses].name = name;
    rec->fg_passes[rec->fg_npasses].packet = packet;
    rec->fg_passes[rec->fg_npasses].barriers = barriers;
    if (index != NULL) {
        *index = rec->fg_npasses;
    }
    rec->fg_npasses++;
    return 0;
}

int nwb_tel_fg_edge_add(nwb_tel_fg_builder_t *b, uint32_t from, uint32_t to)
{
    struct nwb_tel_recorder *rec = b->rec;
    int err;

    if (from >= rec->fg_npasses || to >= rec->fg_npasses || from == to) {
        return drop(rec, NWB_ERANGE);
    }
    err = nwb__tel_table_grow((void **)&rec->fg_edges, &rec->fg_cap_edges, rec->fg_nedges + 1,
                              NWB_TEL_FG_EDGES_MAX, sizeof(*rec->fg_edges));
    if (err != 0) {
        return drop(rec, err);
    }
    rec->fg_edges[rec->fg_nedges].from = from;
    rec->fg_edges[rec->fg_nedges].to = to;
    rec->fg_nedges++;
    return 0;
}

void nwb_tel_fg_counters_add(nwb_tel_fg_builder_t *b, const nwb_tel_fg_counters_t *c)
{
    nwb_tel_fg_counters_t *t = &b->rec->fg_counters;

    t->emitted_waits += c->emitted_waits;
    t->same_queue_elisions += c->same_queue_elisions;
    t->duplicate_merges += c->duplicate_merges;
    t->inherited_elisions += c->inherited_elisions;
}
