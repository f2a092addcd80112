/* SPDX-License-Identifier: MIT */
/*
 * tel_frames_read.h - the frame durations of a run's stored telemetry, for nwb_frames: walks
 * telemetry.index from a record number on (the run's frames cursor), reads and decompresses
 * each stored upload from telemetry.nwbs.zst and hands every perfFrame event's frame number
 * and duration to a callback. It only reads what acknowledged uploads left (never opens the
 * store, which recovers and may rewrite), so it runs beside the ingest on any thread.
 */
#ifndef NWB_FWD_TEL_FRAMES_READ_H
#define NWB_FWD_TEL_FRAMES_READ_H

#include <stdint.h>

/** One frame; return 0 to go on, anything else stops the walk (the record is not counted). */
typedef int (*nwb__fwd_frame_fn)(void *ctx, uint64_t frame, uint64_t duration_ns);

/**
 * Hand @p fn the perfFrame events of index records @p *next.. of the run folder @p run_dir_fd,
 * at most @p max_records of them, advancing @p *next past each record whose events were all
 * handed (uploads that were not stored have none). Returns 0 when the index has no more
 * records, 1 when @p max_records were walked (more may follow), -ENOENT when the run has no
 * telemetry.index, the nonzero return of @p fn, or another negative code with a static
 * one-line reason in @p *why (an index this server did not write, a stored upload that does
 * not decompress or decode: that record is stepped over, *@p next past it).
 */
int nwb__fwd_tel_frames(int run_dir_fd, uint32_t *next, uint32_t max_records, nwb__fwd_frame_fn fn,
                        void *ctx, const char **why);

#endif /* NWB_FWD_TEL_FRAMES_READ_H */
