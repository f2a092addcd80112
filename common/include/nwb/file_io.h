/* SPDX-License-Identifier: MIT */
/*
 * nwb/file_io.h - the small file helpers every module shares: write all of a buffer, read a
 * whole regular file under a cap, create a directory path. One rule each, in one place.
 */
#ifndef NWB_FILE_IO_H
#define NWB_FILE_IO_H

#include <sys/types.h>

#include "nwb/common.h"

/**
 * Write all @p n bytes of @p p to @p fd, retrying short writes and EINTR. Returns 0 or a
 * negative errno (-EIO when write(2) returns 0). Async-signal-safe (no allocation, no locks).
 */
NWB_API int nwb_write_all(int fd, const void *p, size_t n);

/** The same at file offset @p at (pwrite(2)); the file offset is not moved. */
NWB_API int nwb_pwrite_all(int fd, const void *p, size_t n, off_t at);

/**
 * Read the whole regular file @p path (relative to @p dirfd, or AT_FDCWD) into a nwb_malloc'd
 * buffer with one NUL byte after the data (not counted in @p *len). The file is opened
 * O_NONBLOCK, so a FIFO never hangs the read; symlinks are followed. The size read is the one
 * fstat(2) gives: a file that reports no size (/proc, /sys) reads as empty.
 * Returns 0, NWB_ENOTREG (not a regular file), NWB_ETOOBIG (larger than @p max bytes),
 * -ENOMEM, or the negative errno of open/fstat/read. A file that shrinks while it is read
 * gives what was there. On failure @p *out is NULL and @p *len 0.
 */
NWB_API int nwb_file_read_at(int dirfd, const char *path, size_t max, uint8_t **out, size_t *len);
/**
 * nwb_file_read_at() of a file the caller opened (@p fd, borrowed: left open), read from its
 * current offset; for callers that open with their own flags (O_NOFOLLOW under a folder fd).
 */
NWB_API int nwb_file_read_fd(int fd, size_t max, uint8_t **out, size_t *len);
/** nwb_file_read_at(AT_FDCWD, ...). */
NWB_API int nwb_file_read(const char *path, size_t max, uint8_t **out, size_t *len);

/**
 * mkdir -p: create @p path and every missing parent with @p mode (before the umask). An
 * existing directory is fine. Returns 0, -ENOENT (empty path), -ENAMETOOLONG (PATH_MAX or
 * more), or the negative errno of the mkdir(2) that failed.
 */
NWB_API int nwb_mkdir_p(const char *path, mode_t mode);

#endif /* NWB_FILE_IO_H */
