/* SPDX-License-Identifier: MIT */
/*
 * thread_names.h - one run's map from a client thread id to the thread's
 * name, filled from the records' thread-name tags (nwb/log_batch.h) and read
 * by the log renderer so every line of that thread shows `tid[name]`, also
 * the lines of later batches that carry no name. Bounded: at most
 * NWB__THREAD_NAMES_MAX threads; a new thread beyond that keeps no name (its
 * lines show the tid alone) and is counted. Names are untrusted bytes, kept
 * raw; the line formatter escapes them. Used by the log worker thread only.
 */
#ifndef NWB_THREAD_NAMES_H
#define NWB_THREAD_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/log_batch.h"

/** Threads one run's map holds at most. */
#define NWB__THREAD_NAMES_MAX 1024u

struct nwb__thread_names;

/** A new empty map, or NULL when out of memory. */
struct nwb__thread_names *nwb__thread_names_create(void);
void nwb__thread_names_destroy(struct nwb__thread_names *m);

/*
 * Remember @p name (1..NWB_LOG_THREAD_NAME_MAX bytes; longer is cut) for
 * @p tid, replacing an earlier name. Returns 0, or NWB_EFULL when @p tid is
 * new and the map is full (counted in nwb__thread_names_refused()).
 */
int nwb__thread_names_set(struct nwb__thread_names *m, uint64_t tid, const char *name, size_t len);

/* The name of @p tid (borrowed, valid until it is set again) and its length; NULL when none. */
const char *nwb__thread_names_get(const struct nwb__thread_names *m, uint64_t tid, uint8_t *len);

/* Threads named so far / new threads refused because the map was full. */
size_t nwb__thread_names_count(const struct nwb__thread_names *m);
uint64_t nwb__thread_names_refused(const struct nwb__thread_names *m);

#endif /* NWB_THREAD_NAMES_H */
