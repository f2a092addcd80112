/* SPDX-License-Identifier: MIT */
/*
 * tel_prof_int.h - between the profiling macros' producer side (tel_profile.c) and the
 * recorder that drains them (tel_profile_drain.c): attach, the capture bits, the drain walk.
 */
#ifndef NWB_TEL_PROF_INT_H
#define NWB_TEL_PROF_INT_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/profile.h"

struct nwb__prof_drain_ops {
    /* One record of thread @p tid; @p bytes / @p len: the bytes of a mark, name or text. */
    void (*record)(void *ctx, uint32_t tid, const nwb__prof_rec_t *r, const uint8_t *bytes,
                   size_t len);
    /* After a thread's records: its cumulative counts; @p got records read now. */
    void (*thread)(void *ctx, uint32_t tid, uint64_t consumed, uint64_t dropped, uint64_t malformed,
                   int exited, uint64_t got);
};

/* 1 when @p rec is (now) the recorder the macros feed; the first one created wins. */
int nwb__prof_attach(void *rec);
void nwb__prof_detach(void *rec);
void nwb__prof_set_on(unsigned bits);
/* Walk every thread's ring (registry lock held); frees threads that exited. */
void nwb__prof_drain(const struct nwb__prof_drain_ops *ops, void *ctx);
/* Close the calling thread's open BEGIN scopes at @p end_ns, each counted malformed. */
void nwb__prof_close_open(uint64_t end_ns);
uint64_t nwb__prof_threads_unrecorded(void);

#endif /* NWB_TEL_PROF_INT_H */
