/* SPDX-License-Identifier: MIT */
/*
 * crash_test_archive.h - builds real archives in memory with libarchive for
 * the crash tests and the fuzz corpus: any entry type (links, devices,
 * FIFOs), hostile names, repeated filler data, and every format the ingest
 * accepts, plus helpers to look at the crashes/ folder afterwards.
 */
#ifndef NWB_CRASH_TEST_ARCHIVE_H
#define NWB_CRASH_TEST_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

/* Entry kinds. */
#define TA_FILE     0
#define TA_DIR      1
#define TA_SYMLINK  2
#define TA_HARDLINK 3
#define TA_CHARDEV  4
#define TA_FIFO     5

struct ta_entry {
    const char *path;
    int kind;
    const void *data; /* TA_FILE content (NULL: fill_bytes of fill_byte) */
    size_t len;
    uint64_t fill_bytes; /* TA_FILE without data: this many copies of fill_byte */
    unsigned char fill_byte;
    const char *target; /* TA_SYMLINK / TA_HARDLINK */
};

/*
 * Build an archive of @p n entries in @p format: "tar" (pax), "ustar", "tar.gz",
 * "tar.zst", "zip", or "gz.tar.zst" (a tar.zst compressed again with gzip).
 * Returns a malloc'd buffer (free()) and its length in @p len, or NULL.
 */
void *ta_build(const char *format, const struct ta_entry *e, size_t n, size_t *len);

/* A minimal valid package (manifest.txt + crash.txt) whose crash.txt holds @p tag. */
void *ta_package(const char *format, const char *tag, size_t *len);

/*
 * Extract the regular files of archive @p file (any format the ingest reads) flat into the
 * existing folder @p dir; names with a '/' keep only their last part. Returns the number of
 * files, or -1.
 */
int ta_extract(const char *file, const char *dir);

/* Number of entries in @p dir, ignoring "." and "..". -1 if it cannot be read. */
long ta_count_dir(const char *dir);

/* 1 when @p path exists. */
int ta_exists(const char *path);

/* Write @p len bytes to @p path (created or replaced). 0 or -1. */
int ta_write_file(const char *path, const void *data, size_t len);

#endif /* NWB_CRASH_TEST_ARCHIVE_H */
