/* SPDX-License-Identifier: MIT */
/*
 * names_load.c - builds the server's name-symbol table from the .namesym
 * sidecars in its folders (docs/namesym.md): every *.namesym of each folder,
 * folders in command-line order and files in byte order of their names, so
 * "first string wins" on a collision is always the same string. Reports what
 * came from which file, collisions and skipped files on the console. Runs at
 * startup (before listening) and on the thread pool for SIGHUP reloads.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "server_int.h"

#define SUFFIX     ".namesym"
#define SUFFIX_LEN (sizeof(SUFFIX) - 1)

struct load {
    nwb_namesym_table_t *t;
    unsigned files;       /* sidecars added */
    unsigned considered;  /* sidecars looked at (bound: NWB__NAMESYM_FILES_MAX) */
    unsigned skipped_max; /* sidecars beyond that bound */
    unsigned long long collisions;
};

static void on_collision(void *ctx, nwb_name_t hash, const char *kept, const char *kept_source,
                         const char *dropped, const char *dropped_source)
{
    struct load *l = ctx;

    if (l->collisions++ < NWB__NAMESYM_COLLISIONS_SHOWN) {
        nwb__console("warning: namesym: collision for #%016llx: kept \"%.200s\" from %s, "
                     "dropped \"%.200s\" from %s",
                     (unsigned long long)hash, kept, kept_source, dropped, dropped_source);
    }
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_sidecar_name(const char *name)
{
    const size_t n = strlen(name);

    return name[0] != '.' && n > SUFFIX_LEN && strcmp(name + n - SUFFIX_LEN, SUFFIX) == 0;
}

/* Why a sidecar could not be read, from nwb_file_read_at()'s code (@p buf for errno text). */
static const char *read_failure(int err, char *buf, size_t len)
{
    if (err == NWB_ENOTREG) {
        return "not a regular file";
    }
    if (err == NWB_ETOOBIG) {
        return "larger than 256 MiB";
    }
    return nwb_strerror_r(err, buf, len);
}

/* Add one sidecar. 0 (added or skipped with a warning) or -ENOMEM. */
static int load_file(struct load *l, int dfd, const char *dir, const char *name)
{
    char path[4096 + 256];
    nwb_namesym_view_t v;
    const char *why = "";
    size_t bad = 0;
    size_t len;
    uint8_t *buf;
    long added;
    int err;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    /* nwb_file_read_at opens O_NONBLOCK: a FIFO named *.namesym must not hang the load.
     * Symlinks are followed: the folders are the operator's choice, and sidecars often link
     * to a build's output. */
    err = nwb_file_read_at(dfd, name, NWB__NAMESYM_FILE_BYTES_MAX, &buf, &len);
    if (err != 0) {
        char ebuf[96];

        nwb__console("warning: namesym: skipped %s: %s", path,
                     read_failure(err, ebuf, sizeof(ebuf)));
        return err == -ENOMEM ? err : 0;
    }
    err = nwb_namesym_view_open(&v, buf, len, &why, &bad);
    if (err != 0) {
        nwb__console("warning: namesym: skipped %s: invalid sidecar: %s (at byte %zu)", path, why,
                     bad);
        nwb_free(buf);
        return 0;
    }
    if (nwb_namesym_table_count(l->t) + v.count > NWB__NAMESYM_NAMES_MAX) {
        nwb__console("warning: namesym: skipped %s: its %u names would pass the bound of %u "
                     "names",
                     path, v.count, NWB__NAMESYM_NAMES_MAX);
        nwb_free(buf);
        return 0;
    }
    added = nwb_namesym_table_add(l->t, &v, path, on_collision, l);
    nwb_free(buf);
    if (added < 0) {
        return (int)added;
    }
    l->files++;
    if ((unsigned long)added < v.count) {
        nwb__console("namesym: %s: %ld names (%lu more already loaded or colliding)", path, added,
                     (unsigned long)v.count - (unsigned long)added);
    } else {
        nwb__console("namesym: %s: %ld names", path, added);
    }
    return 0;
}

/* Every sidecar of @p dir, in byte order of the names. */
static int load_dir(struct load *l, const char *dir, int strict, char *errbuf, size_t errlen)
{
    char **names = NULL;
    size_t count = 0, cap = 0;
    struct dirent *e;
    unsigned before = l->files;
    DIR *d = opendir(dir);
    int err = 0;

    if (d == NULL) {
        char ebuf[96];

        err = -errno;
        if (strict) {
            snprintf(errbuf, errlen, "--namesym-dir %s: cannot read the folder: %s", dir,
                     nwb_strerror_r(err, ebuf, sizeof(ebuf)));
            return err;
        }
        nwb__console("warning: namesym: cannot read %s: %s; no sidecars from it", dir,
                     nwb_strerror_r(err, ebuf, sizeof(ebuf)));
        return 0;
    }
    while ((e = readdir(d)) != NULL) {
        if (!is_sidecar_name(e->d_name)) {
            continue;
        }
        if (l->considered + count >= NWB__NAMESYM_FILES_MAX) {
            l->skipped_max++;
            continue;
        }
        if (count == cap) {
            const size_t ncap = cap == 0 ? 16 : cap * 2;
            char **n = nwb_realloc(names, ncap * sizeof(*n));

            if (n == NULL) {
                err = -ENOMEM;
                break;
            }
            names = n;
            cap = ncap;
        }
        names[count] = nwb_strdup(e->d_name);
        if (names[count] == NULL) {
            err = -ENOMEM;
            break;
        }
        count++;
    }
    if (err == 0 && count > 0) {
        qsort(names, count, sizeof(*names), cmp_name);
    }
    l->considered += (unsigned)count;
    for (size_t i = 0; i < count && err == 0; i++) {
        err = load_file(l, dirfd(d), dir, names[i]);
    }
    for (size_t i = 0; i < count; i++) {
        nwb_free(names[i]);
    }
    nwb_free(names);
    closedir(d);
    if (err != 0) {
        snprintf(errbuf, errlen, "out of memory loading the sidecars of %s", dir);
        return err;
    }
    if (l->files == before) {
        nwb__console("namesym: no sidecars loaded from %s", dir);
    }
    return 0;
}

int nwb__names_load(char *const *dirs, unsigned ndirs, int strict, struct nwb__names **out,
                    char *errbuf, size_t errlen)
{
    struct nwb__names *n;
    struct load l;
    int err;

    *out = NULL;
    memset(&l, 0, sizeof(l));
    n = nwb_calloc(1, sizeof(*n));
    if (n == NULL || nwb_namesym_table_create(&l.t) != 0) {
        nwb_free(n);
        snprintf(errbuf, errlen, "out of memory");
        return -ENOMEM;
    }
    for (unsigned i = 0; i < ndirs; i++) {
        err = load_dir(&l, dirs[i], strict, errbuf, errlen);
        if (err != 0) {
            nwb_namesym_table_destroy(l.t);
            nwb_free(n);
            return err;
        }
    }
    if (l.skipped_max > 0) {
        nwb__console("warning: namesym: %u sidecars skipped beyond the bound of %u files",
                     l.skipped_max, NWB__NAMESYM_FILES_MAX);
    }
    if (l.collisions > NWB__NAMESYM_COLLISIONS_SHOWN) {
        nwb__console("warning: namesym: %llu more collisions not shown",
                     l.collisions - NWB__NAMESYM_COLLISIONS_SHOWN);
    }
    n->table = l.t;
    n->count = nwb_namesym_table_count(l.t);
    n->files = l.files;
    n->refs = 1;
    nwb__console("namesym: %zu names from %u sidecars", n->count, n->files);
    *out = n;
    return 0;
}

int nwb__names_exe_dir(char *buf, size_t len)
{
    ssize_t n;
    char *slash;

    if (len < 2) {
        return -ENAMETOOLONG;
    }
    n = readlink("/proc/self/exe", buf, len - 1);
    if (n < 0) {
        return -errno;
    }
    if ((size_t)n >= len - 1) {
        return -ENAMETOOLONG;
    }
    buf[n] = '\0';
    slash = strrchr(buf, '/');
    if (slash == NULL) {
        return -ENOENT;
    }
    slash[slash == buf ? 1 : 0] = '\0';
    return 0;
}

void nwb__names_ref(struct nwb__names *n)
{
    n->refs++;
}

void nwb__names_unref(struct nwb__names *n)
{
    if (n == NULL || --n->refs > 0) {
        return;
    }
    nwb_namesym_table_destroy(n->table);
    nwb_free(n);
}
