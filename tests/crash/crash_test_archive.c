/* SPDX-License-Identifier: MIT */
/* crash_test_archive.c - in-memory archive builder and folder helpers for the crash tests. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "crash_test_archive.h"

struct membuf {
    unsigned char *p;
    size_t len, cap;
};

static la_ssize_t mem_write(struct archive *a, void *arg, const void *buf, size_t n)
{
    struct membuf *m = arg;

    (void)a;
    if (m->len + n > m->cap) {
        size_t ncap = m->cap != 0 ? m->cap : 65536;
        unsigned char *np;

        while (ncap < m->len + n) {
            ncap *= 2;
        }
        np = realloc(m->p, ncap);
        if (np == NULL) {
            return -1;
        }
        m->p = np;
        m->cap = ncap;
    }
    memcpy(m->p + m->len, buf, n);
    m->len += n;
    return (la_ssize_t)n;
}

static int set_format(struct archive *a, const char *format)
{
    if (strcmp(format, "zip") == 0) {
        return archive_write_set_format_zip(a);
    }
    if (strcmp(format, "ustar") == 0) {
        return archive_write_set_format_ustar(a);
    }
    if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK) {
        return ARCHIVE_FATAL;
    }
    if (strcmp(format, "tar.gz") == 0) {
        return archive_write_add_filter_gzip(a);
    }
    if (strcmp(format, "tar.zst") == 0) {
        return archive_write_add_filter_zstd(a);
    }
    if (strcmp(format, "gz.tar.zst") == 0) {
        if (archive_write_add_filter_gzip(a) != ARCHIVE_OK) {
            return ARCHIVE_FATAL;
        }
        return archive_write_add_filter_zstd(a);
    }
    return ARCHIVE_OK;
}

static int add_entry(struct archive *a, const struct ta_entry *t)
{
    struct archive_entry *e = archive_entry_new();
    int rc = ARCHIVE_OK;

    archive_entry_set_pathname(e, t->path);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_mtime(e, 1700000000, 0);
    switch (t->kind) {
    case TA_DIR:
        archive_entry_set_filetype(e, AE_IFDIR);
        archive_entry_set_perm(e, 0755);
        break;
    case TA_SYMLINK:
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_symlink(e, t->target);
        break;
    case TA_HARDLINK:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_hardlink(e, t->target);
        archive_entry_set_size(e, 0);
        break;
    case TA_CHARDEV:
        archive_entry_set_filetype(e, AE_IFCHR);
        archive_entry_set_rdev(e, 0x0103); /* /dev/null's numbers */
        break;
    case TA_FIFO:
        archive_entry_set_filetype(e, AE_IFIFO);
        break;
    default:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, (la_int64_t)(t->data != NULL ? t->len : t->fill_bytes));
        break;
    }
    if (archive_write_header(a, e) < ARCHIVE_WARN) {
        fprintf(stderr, "ta_build: header %s: %s\n", t->path, archive_error_string(a));
        rc = ARCHIVE_FATAL;
    } else if (t->kind == TA_FILE && t->data != NULL && t->len > 0) {
        if (archive_write_data(a, t->data, t->len) != (la_ssize_t)t->len) {
            rc = ARCHIVE_FATAL;
        }
    } else if (t->kind == TA_FILE && t->data == NULL) {
        static unsigned char block[1 << 20];
        uint64_t left = t->fill_bytes;

        memset(block, t->fill_byte, sizeof(block));
        while (left > 0 && rc == ARCHIVE_OK) {
            const size_t k = left < sizeof(block) ? (size_t)left : sizeof(block);

            if (archive_write_data(a, block, k) != (la_ssize_t)k) {
                rc = ARCHIVE_FATAL;
            }
            left -= k;
        }
    }
    archive_entry_free(e);
    return rc;
}

void *ta_build(const char *format, const struct ta_entry *e, size_t n, size_t *len)
{
    struct archive *a = archive_write_new();
    struct membuf m = {NULL, 0, 0};
    int ok = a != NULL;

    ok = ok && set_format(a, format) == ARCHIVE_OK;
    /* Write every byte as it comes: the default tar blocking would pad small archives. */
    ok = ok && archive_write_set_bytes_in_last_block(a, 1) == ARCHIVE_OK;
    ok = ok && archive_write_open2(a, &m, NULL, mem_write, NULL, NULL) == ARCHIVE_OK;
    for (size_t i = 0; ok && i < n; i++) {
        ok = add_entry(a, &e[i]) == ARCHIVE_OK;
    }
    if (a != NULL) {
        ok = archive_write_close(a) == ARCHIVE_OK && ok;
        archive_write_free(a);
    }
    if (!ok) {
        free(m.p);
        return NULL;
    }
    *len = m.len;
    return m.p;
}

void *ta_package(const char *format, const char *tag, size_t *len)
{
    static const char manifest[] = "nwb-crash-manifest 1\nkind=signal\nprogram=ta_prog\n"
                                   "run=0123456789abcdef\nsignal=SIGSEGV\n";
    char crash[256];
    struct ta_entry e[2];

    snprintf(crash, sizeof(crash), "signal=SIGSEGV\ntag=%s\n", tag);
    memset(e, 0, sizeof(e));
    e[0].path = "manifest.txt";
    e[0].data = manifest;
    e[0].len = sizeof(manifest) - 1;
    e[1].path = "crash.txt";
    e[1].data = crash;
    e[1].len = strlen(crash);
    return ta_build(format, e, 2, len);
}

long ta_count_dir(const char *dir)
{
    DIR *d = opendir(dir);
    const struct dirent *e;
    long n = 0;

    if (d == NULL) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            n++;
        }
    }
    closedir(d);
    return n;
}

int ta_exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}

int ta_write_file(const char *path, const void *data, size_t len)
{
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int ok;

    if (fd < 0) {
        return -1;
    }
    ok = write(fd, data, len) == (ssize_t)len;
    return close(fd) == 0 && ok ? 0 : -1;
}

int ta_extract(const char *file, const char *dir)
{
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    int files = 0, ok = 1;

    archive_read_support_format_tar(a);
    archive_read_support_format_zip(a);
    archive_read_support_filter_gzip(a);
    archive_read_support_filter_zstd(a);
    if (archive_read_open_filename(a, file, 65536) != ARCHIVE_OK) {
        archive_read_free(a);
        return -1;
    }
    while (ok && archive_read_next_header(a, &e) == ARCHIVE_OK) {
        const char *name = archive_entry_pathname(e);
        const char *slash = name != NULL ? strrchr(name, '/') : NULL;
        char path[4096];
        char buf[65536];
        la_ssize_t n;
        int fd;

        if (name == NULL || archive_entry_filetype(e) != AE_IFREG) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, slash != NULL ? slash + 1 : name);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            ok = 0;
            break;
        }
        while ((n = archive_read_data(a, buf, sizeof(buf))) > 0) {
            ok = ok && write(fd, buf, (size_t)n) == n;
        }
        ok = ok && n == 0;
        close(fd);
        files++;
    }
    archive_read_free(a);
    return ok ? files : -1;
}
