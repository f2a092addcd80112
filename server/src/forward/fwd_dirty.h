/* SPDX-License-Identifier: MIT */
/*
 * fwd_dirty.h - the set of runs the forwarder must visit at its next pass: the run
 * directories whose log.txt or telemetry the server wrote since the last one. Bounded
 * (NWB__FWD_DIRTY_MAX names); a name that does not fit sets the overflow flag, which makes
 * the next pass a full scan of runs/. Not locked: the forwarder holds its mutex around it.
 */
#ifndef NWB_FWD_DIRTY_H
#define NWB_FWD_DIRTY_H

#include <stddef.h>
#include <stdint.h>

#include "../server_int.h"

/** Names one set holds; more between two passes (200 ms) makes the next pass a full scan. */
#define NWB__FWD_DIRTY_MAX 1024u
/** Hash slots (a power of two, twice the names: short probes). */
#define NWB__FWD_DIRTY_SLOTS (2u * NWB__FWD_DIRTY_MAX)

struct nwb__fwd_dirty {
    uint32_t count;
    int overflow;                        /* a name was dropped: scan everything */
    uint16_t slot[NWB__FWD_DIRTY_SLOTS]; /* 0: empty, else index + 1 into name */
    char name[NWB__FWD_DIRTY_MAX][NWB__RUN_DIR_MAX + 1];
};

/** Empty the set (also the initialisation of a zeroed one). */
void nwb__fwd_dirty_clear(struct nwb__fwd_dirty *d);

/** Add run directory @p dir (once however often it is added). A name longer than
 * NWB__RUN_DIR_MAX, or one past NWB__FWD_DIRTY_MAX, sets overflow instead. */
void nwb__fwd_dirty_add(struct nwb__fwd_dirty *d, const char *dir);

#endif /* NWB_FWD_DIRTY_H */
