/* SPDX-License-Identifier: MIT */
/*
 * nwb/crash_capture_write.h - the encoder of the crash capture file
 * (threads.nwbc, docs/crash-capture-format.md), for the capture side
 * (nwb-crash's ptrace helper, the handler's in-process fallback) and tests.
 *
 * It writes into a caller-provided buffer, allocates nothing, calls no libc
 * and so is async-signal-safe. It does not validate: the caller writes the
 * header counts it will then fill, and a test can build malformed files.
 * Running out of room sets a sticky overflow; finish then fails.
 */
#ifndef NWB_CRASH_CAPTURE_WRITE_H
#define NWB_CRASH_CAPTURE_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nwb_crash_capture_writer {
    uint8_t *buf;
    size_t cap;
    size_t len;
    int overflow; /* 1 once a write did not fit */
} nwb_crash_capture_writer_t;

NWB_API void nwb_crash_capture_writer_init(nwb_crash_capture_writer_t *w, void *buf, size_t cap);

/* The 32-byte header then the note (note_len bytes, copied as given). */
NWB_API void nwb_crash_capture_write_header(nwb_crash_capture_writer_t *w, unsigned arch,
                                            unsigned method, uint32_t pid, uint32_t crashed_tid,
                                            uint32_t nthreads, uint32_t nmodules, const char *note,
                                            size_t note_len);

/* One thread record: @p name is NUL-terminated (cut at 15 bytes), regs has nregs values. */
NWB_API void nwb_crash_capture_write_thread(nwb_crash_capture_writer_t *w, uint32_t tid,
                                            uint32_t flags, const char *name, const uint64_t *regs,
                                            unsigned nregs, uint64_t stack_start, const void *stack,
                                            size_t stack_len);

NWB_API void nwb_crash_capture_write_module(nwb_crash_capture_writer_t *w, uint64_t start,
                                            uint64_t end, uint64_t file_offset,
                                            const uint8_t *build_id, size_t build_id_len,
                                            const char *path, size_t path_len);

/* Bytes written, or -1 when the buffer overflowed. */
NWB_API long nwb_crash_capture_writer_finish(const nwb_crash_capture_writer_t *w);

#ifdef __cplusplus
}
#endif

#endif /* NWB_CRASH_CAPTURE_WRITE_H */
