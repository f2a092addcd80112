/* SPDX-License-Identifier: MIT */
/*
 * bench_ingest_reclaim.h - keeps a server's output from filling memory
 * during an ingest run: while the run goes on, punches what the server
 * appended out of its files (fallocate PUNCH_HOLE) so the pages are freed,
 * optionally counting the lines first so an exact on-disk count survives.
 */
#ifndef NWB_BENCH_INGEST_RECLAIM_H
#define NWB_BENCH_INGEST_RECLAIM_H

#include <stdint.h>

struct nwb_bench_reclaim;

/* Files tracked per run (more are ignored: neither counted nor punched). */
#define NWB_BENCH_RECLAIM_MAX_FILES 1024

/**
 * Track every regular file named @p name (borrowed) up to 3 levels under
 * @p dir (borrowed), e.g. "log.txt" for runs/<run>/log.txt. Every file is
 * punched up to what is done once @p punch_min bytes are done over all the
 * files together (0: never punch). With @p count, the
 * bytes are read and their newlines counted before they are punched;
 * without, nothing is read. Returns 0, or -1 when out of memory.
 */
int nwb_bench_reclaim_create(const char *dir, const char *name, uint64_t punch_min, int count,
                             struct nwb_bench_reclaim **out);

/**
 * Pick up new files, count the newlines appended since the last step (when
 * counting), and punch out what is done once all files together have
 * punch_min of it done (any amount when @p final). Cheap when nothing changed.
 */
void nwb_bench_reclaim_step(struct nwb_bench_reclaim *rc, int final);

/** Newlines counted so far, over every tracked file. */
long long nwb_bench_reclaim_lines(const struct nwb_bench_reclaim *rc);

/** Bytes punched out so far; @p failed set when the file system cannot punch holes. */
uint64_t nwb_bench_reclaim_punched(const struct nwb_bench_reclaim *rc, int *failed);

/** Close the files (they stay on disk). NULL is a no-op. */
void nwb_bench_reclaim_destroy(struct nwb_bench_reclaim *rc);

#endif /* NWB_BENCH_INGEST_RECLAIM_H */
