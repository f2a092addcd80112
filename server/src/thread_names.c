/* SPDX-License-Identifier: MIT */
/*
 * thread_names.c - the per-run tid -> thread name map (thread_names.h): one
 * fixed table of 2 x NWB__THREAD_NAMES_MAX slots with linear probing, so a
 * lookup stays a few probes even when the map is full. Nothing is removed.
 */
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"

#include "thread_names.h"

#define SLOTS (2u * NWB__THREAD_NAMES_MAX) /* a power of two */

struct name_slot {
    uint64_t tid;
    uint8_t used;
    uint8_t len;
    char name[NWB_LOG_THREAD_NAME_MAX];
};

struct nwb__thread_names {
    size_t count;
    uint64_t refused;
    struct name_slot slot[SLOTS];
};

_Static_assert((SLOTS & (SLOTS - 1u)) == 0, "the slot count is a power of two");

struct nwb__thread_names *nwb__thread_names_create(void)
{
    struct nwb__thread_names *m = nwb_malloc(sizeof(*m));

    if (m != NULL) {
        memset(m, 0, sizeof(*m));
    }
    return m;
}

void nwb__thread_names_destroy(struct nwb__thread_names *m)
{
    nwb_free(m);
}

static size_t slot_of(uint64_t tid)
{
    tid ^= tid >> 33;
    tid *= 0xff51afd7ed558ccdull;
    tid ^= tid >> 33;
    return (size_t)(tid & (SLOTS - 1u));
}

/* The index of @p tid's slot, or of the empty slot where it would go. */
static size_t find(const struct nwb__thread_names *m, uint64_t tid)
{
    size_t i = slot_of(tid);

    /* Never more than half the slots are used: the probe ends at an empty one. */
    while (m->slot[i].used && m->slot[i].tid != tid) {
        i = (i + 1u) & (SLOTS - 1u);
    }
    return i;
}

int nwb__thread_names_set(struct nwb__thread_names *m, uint64_t tid, const char *name, size_t len)
{
    struct name_slot *s = &m->slot[find(m, tid)];

    if (!s->used) {
        if (m->count >= NWB__THREAD_NAMES_MAX) {
            m->refused++;
            return NWB_EFULL;
        }
        s->used = 1;
        s->tid = tid;
        m->count++;
    }
    if (len > NWB_LOG_THREAD_NAME_MAX) {
        len = NWB_LOG_THREAD_NAME_MAX;
    }
    memcpy(s->name, name, len);
    s->len = (uint8_t)len;
    return 0;
}

const char *nwb__thread_names_get(const struct nwb__thread_names *m, uint64_t tid, uint8_t *len)
{
    const struct name_slot *s = &m->slot[find(m, tid)];

    if (!s->used || s->len == 0) {
        *len = 0;
        return NULL;
    }
    *len = s->len;
    return s->name;
}

size_t nwb__thread_names_count(const struct nwb__thread_names *m)
{
    return m->count;
}

uint64_t nwb__thread_names_refused(const struct nwb__thread_names *m)
{
    return m->refused;
}
