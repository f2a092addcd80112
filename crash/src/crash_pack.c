/* SPDX-License-Identifier: MIT */
/*
 * crash_pack.c - turns a package folder into an archive with libarchive
 * (tar.zst by default; tar.gz, tar or zip by name), written to a hidden
 * temporary file, fsynced and renamed; and reads the manifest back out of an
 * archive for the upload headers. Runs in the uploader, never in a handler.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "nwb/alloc.h"
#include "nwb/error.h"

#include "capture_int.h"

#define PACK_ENTRIES_MAX 4096u /* files in one package folder */
#define PACK_DEPTH_MAX   8u

struct file_list {
    char **paths; /* relative, nwb_malloc'd */
    size_t count;
    size_t cap;
};

static void set_err(char *errbuf, size_t errlen, const char *what, const char *detail)
{
    if (errbuf != NULL && errlen > 0) {
        snprintf(errbuf, errlen, "%s%s%s", what, detail != NULL ? ": " : "",
                 detail != NULL ? detail : "");
    }
}

static int list_add(struct file_list *l, const char *rel)
{
    char *copy;

    if (l->count == PACK_ENTRIES_MAX) {
        return NWB_ETOOBIG;
    }
    if (l->count == l->cap) {
        const size_t ncap = l->cap != 0 ? l->cap * 2 : 16;
        char **np = nwb_realloc(l->paths, ncap * sizeof(*np));

        if (np == NULL) {
            return -ENOMEM;
        }
        l->paths = np;
        l->cap = ncap;
    }
    copy = nwb_strdup(rel);
    if (copy == NULL) {
        return -ENOMEM;
    }
    l->paths[l->count++] = copy;
    return 0;
}

static void list_free(struct file_list *l)
{
    for (size_t i = 0; i < l->count; i++) {
        nwb_free(l->paths[i]);
    }
    nwb_free(l->paths);
    l->paths = NULL;
    l->count = l->cap = 0;
}

/* Regular files under root/rel, recursively; symlinks and specials are skipped. */
static int collect(const char *root, const char *rel, unsigned depth, struct file_list *l)
{
    char path[NWB_CRASH_PATH_MAX * 2];
    DIR *d;
    const struct dirent *e;
    int err = 0;

    if (depth > PACK_DEPTH_MAX) {
        return NWB_ETOOBIG;
    }
    snprintf(path, sizeof(path), "%s%s%s", root, rel[0] != '\0' ? "/" : "", rel);
    d = opendir(path);
    if (d == NULL) {
        return -errno;
    }
    while (err == 0 && (e = readdir(d)) != NULL) {
        char sub[NWB_CRASH_PATH_MAX];
        char full[NWB_CRASH_PATH_MAX * 3];
        struct stat st;
        int n;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        n = snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] != '\0' ? "/" : "", e->d_name);
        if (n < 0 || (size_t)n >= sizeof(sub)) {
            err = NWB_ETOOBIG;
            break;
        }
        snprintf(full, sizeof(full), "%s/%s", root, sub);
        if (lstat(full, &st) != 0) {
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            err = collect(root, sub, depth + 1, l);
        } else if (S_ISREG(st.st_mode)) {
            err = list_add(l, sub);
        }
    }
    closedir(d);
    return err;
}

static int cmp_paths(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with(const char *s, const char *suffix)
{
    const size_t n = strlen(s), m = strlen(suffix);

    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int setup_writer(struct archive *a, const char *out_file)
{
    int r;

    if (ends_with(out_file, ".zip")) {
        return archive_write_set_format_zip(a);
    }
    r = archive_write_set_format_pax_restricted(a);
    if (r != ARCHIVE_OK) {
        return r;
    }
    if (ends_with(out_file, ".tar.gz") || ends_with(out_file, ".tgz")) {
        return archive_write_add_filter_gzip(a);
    }
    if (ends_with(out_file, ".tar")) {
        return ARCHIVE_OK;
    }
    /* ARCHIVE_WARN would mean an external zstd program: refuse it. */
    return archive_write_add_filter_zstd(a);
}

static int add_file(struct archive *a, const char *root, const char *rel, char *errbuf,
                    size_t errlen)
{
    char full[NWB_CRASH_PATH_MAX * 3];
    struct archive_entry *e;
    struct stat st;
    char buf[64 * 1024];
    int fd, err = 0;
    off_t left;

    snprintf(full, sizeof(full), "%s/%s", root, rel);
    fd = open(full, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        err = -errno;
        set_err(errbuf, errlen, "cannot open", full);
        return err;
    }
    if (fstat(fd, &st) != 0) {
        err = -errno;
        close(fd);
        return err;
    }
    e = archive_entry_new();
    if (e == NULL) {
        close(fd);
        return -ENOMEM;
    }
    archive_entry_set_pathname(e, rel);
    archive_entry_set_size(e, st.st_size);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_mtime(e, st.st_mtime, 0);
    if (archive_write_header(a, e) != ARCHIVE_OK) {
        set_err(errbuf, errlen, "archive header", archive_error_string(a));
        err = NWB_EARCHIVE;
        goto out;
    }
    /* Exactly st_size bytes: the header already promised them. */
    for (left = st.st_size; left > 0;) {
        const size_t want = (size_t)left < sizeof(buf) ? (size_t)left : sizeof(buf);
        ssize_t n = read(fd, buf, want);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            memset(buf, 0, want);
            n = (ssize_t)want;
        }
        if (archive_write_data(a, buf, (size_t)n) != n) {
            set_err(errbuf, errlen, "archive data", archive_error_string(a));
            err = NWB_EARCHIVE;
            goto out;
        }
        left -= n;
    }
out:
    archive_entry_free(e);
    close(fd);
    return err;
}

int nwb__crash_hidden_tmp(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    int n;

    if (slash == NULL) {
        n = snprintf(out, cap, ".%s.part%ld", path, (long)getpid());
    } else {
        n = snprintf(out, cap, "%.*s/.%s.part%ld", (int)(slash - path), path, slash + 1,
                     (long)getpid());
    }
    return n < 0 || (size_t)n >= cap ? NWB_ECONFIG : 0;
}

int nwb__crash_fsync_path(const char *path)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    int err = 0;

    if (fd < 0) {
        return -errno;
    }
    if (fsync(fd) != 0) {
        err = -errno;
    }
    close(fd);
    return err;
}

int nwb_crash_pack_dir(const char *dir, const char *out_file, char *errbuf, size_t errlen)
{
    struct file_list files = {NULL, 0, 0};
    char tmp[NWB_CRASH_PATH_MAX * 2];
    struct archive *a;
    int err;

    err = nwb__crash_hidden_tmp(out_file, tmp, sizeof(tmp));
    if (err != 0) {
        set_err(errbuf, errlen, "output path too long", NULL);
        return err;
    }
    err = collect(dir, "", 0, &files);
    if (err != 0) {
        set_err(errbuf, errlen, "cannot list the package folder", dir);
        goto fail_list;
    }
    if (files.count == 0) {
        set_err(errbuf, errlen, "empty package folder", dir);
        err = -ENOENT;
        goto fail_list;
    }
    qsort(files.paths, files.count, sizeof(*files.paths), cmp_paths);
    /* The manifest goes first, so readers (and the uploader) find it at once. */
    for (size_t i = 0; i < files.count; i++) {
        if (strcmp(files.paths[i], NWB_CRASH_MANIFEST_NAME) == 0 && i > 0) {
            char *m = files.paths[i];

            memmove(files.paths + 1, files.paths, i * sizeof(*files.paths));
            files.paths[0] = m;
            break;
        }
    }
    a = archive_write_new();
    if (a == NULL) {
        err = -ENOMEM;
        goto fail_list;
    }
    if (setup_writer(a, out_file) != ARCHIVE_OK ||
        archive_write_open_filename(a, tmp) != ARCHIVE_OK) {
        set_err(errbuf, errlen, "cannot start the archive", archive_error_string(a));
        err = NWB_EARCHIVE;
        goto fail_archive;
    }
    for (size_t i = 0; i < files.count && err == 0; i++) {
        err = add_file(a, dir, files.paths[i], errbuf, errlen);
    }
    if (archive_write_close(a) != ARCHIVE_OK && err == 0) {
        set_err(errbuf, errlen, "cannot finish the archive", archive_error_string(a));
        err = NWB_EARCHIVE;
    }
    archive_write_free(a);
    a = NULL;
    if (err == 0) {
        err = nwb__crash_fsync_path(tmp);
    }
    if (err == 0 && rename(tmp, out_file) != 0) {
        err = -errno;
        set_err(errbuf, errlen, "cannot rename the archive into place", strerror(errno));
    }
    if (err != 0) {
        unlink(tmp);
    }
    list_free(&files);
    return err;

fail_archive:
    archive_write_free(a);
    unlink(tmp);
fail_list:
    list_free(&files);
    return err;
}

int nwb__crash_archive_identity(const char *file, char *program, char *run)
{
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    int err = -ENOENT;

    program[0] = run[0] = '\0';
    if (a == NULL) {
        return -ENOMEM;
    }
    archive_read_support_format_tar(a);
    archive_read_support_format_zip(a);
    archive_read_support_filter_gzip(a);
    archive_read_support_filter_zstd(a);
    if (archive_read_open_filename(a, file, 64 * 1024) != ARCHIVE_OK) {
        archive_read_free(a);
        return NWB_EARCHIVE;
    }
    for (int i = 0; i < 64 && archive_read_next_header(a, &e) == ARCHIVE_OK; i++) {
        const char *name = archive_entry_pathname(e);

        if (name != NULL && strncmp(name, "./", 2) == 0) {
            name += 2;
        }
        if (name != NULL && strcmp(name, NWB_CRASH_MANIFEST_NAME) == 0) {
            char buf[NWB_CRASH_MANIFEST_READ_MAX];
            const la_ssize_t n = archive_read_data(a, buf, sizeof(buf));

            if (n > 0) {
                nwb_crash_manifest_value(buf, (size_t)n, "program", program);
                nwb_crash_manifest_value(buf, (size_t)n, "run", run);
                err = 0;
            }
            break;
        }
    }
    archive_read_free(a);
    return err;
}
