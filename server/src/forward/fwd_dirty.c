/* SPDX-License-Identifier: MIT */
/* fwd_dirty.c - the forwarder's bounded set of runs written since its last pass (fwd_dirty.h). */
#include <string.h>

#include "nwb/name.h"

#include "fwd_dirty.h"

void nwb__fwd_dirty_clear(struct nwb__fwd_dirty *d)
{
    if (d->count > 0) {
        memset(d->slot, 0, sizeof(d->slot));
    }
    d->count = 0;
    d->overflow = 0;
}

void nwb__fwd_dirty_add(struct nwb__fwd_dirty *d, const char *dir)
{
    const size_t len = strlen(dir);
    uint32_t i;

    if (len > NWB__RUN_DIR_MAX) {
        d->overflow = 1;
        return;
    }
    i = (uint32_t)nwb_name_hash(dir, len) & (NWB__FWD_DIRTY_SLOTS - 1u);
    while (d->slot[i] != 0) {
        if (strcmp(d->name[d->slot[i] - 1u], dir) == 0) {
            return;
        }
        i = (i + 1u) & (NWB__FWD_DIRTY_SLOTS - 1u);
    }
    if (d->count == NWB__FWD_DIRTY_MAX) {
        d->overflow = 1;
        return;
    }
    memcpy(d->name[d->count], dir, len + 1);
    d->slot[i] = (uint16_t)(++d->count);
}
