/* SPDX-License-Identifier: MIT */
/* bench_ingest_reclaim.c - count and punch out what a server appended (bench_ingest_reclaim.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/alloc.h"

#include "bench_ingest_reclaim.h"

#define READ_CHUNK (1u << 20)
#define PAGE       4096u

struct tracked {
    dev_t dev;
    ino_t ino;
    int fd;
    uint64_t counted; /* bytes read and counted */
    uint64_t punched; /* bytes [0, punched) are holes */
};

struct nwb_bench_reclaim {
    const char *dir;
    const char *name;
    uint64_t punch_min;
    int count;
    struct tracked files[NWB_BENCH_RECLAIM_MAX_FILES];
    int nfiles;
    long long lines;
    uint64_t punched;
    int punch_failed;
    char *buf;
};

int nwb_bench_reclaim_create(const char *dir, const char *name, uint64_t punch_min, int count,
                             struct nwb_bench_reclaim **out)
{
    struct nwb_bench_reclaim *rc = nwb_calloc(1, sizeof(*rc));

    *out = NULL;
    if (rc == NULL) {
        return -1;
    }
    rc->buf = nwb_malloc(READ_CHUNK);
    if (rc->buf == NULL) {
        nwb_free(rc);
        return -1;
    }
    rc->dir = dir;
    rc->name = name;
    rc->punch_min = punch_min;
    rc->count = count;
    *out = rc;
    return 0;
}

static void track(struct nwb_bench_reclaim *rc, const char *path)
{
    struct stat st;
    int fd;

    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        return;
    }
    for (int i = 0; i < rc->nfiles; i++) {
        if (rc->files[i].dev == st.st_dev && rc->files[i].ino == st.st_ino) {
            return;
        }
    }
    if (rc->nfiles == NWB_BENCH_RECLAIM_MAX_FILES) {
        return;
    }
    /* Read-write: fallocate() needs a writable descriptor. */
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return;
    }
    rc->files[rc->nfiles].dev = st.st_dev;
    rc->files[rc->nfiles].ino = st.st_ino;
    rc->files[rc->nfiles].fd = fd;
    rc->files[rc->nfiles].counted = 0;
    rc->files[rc->nfiles].punched = 0;
    rc->nfiles++;
}

static void scan(struct nwb_bench_reclaim *rc, const char *dir, int depth)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    if (d == NULL) {
        return;
    }
    while ((e = readdir(d)) != NULL) {
        char path[4096];
        int is_dir;
        int n;

        if (e->d_name[0] == '.') {
            continue;
        }
        n = snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (n < 0 || (size_t)n >= sizeof(path)) {
            continue;
        }
        is_dir = e->d_type == DT_DIR;
        if (e->d_type == DT_UNKNOWN) {
            struct stat st;

            is_dir = lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
        }
        if (is_dir && depth < 3) {
            scan(rc, path, depth + 1);
        } else if (!is_dir && strcmp(e->d_name, rc->name) == 0) {
            track(rc, path);
        }
    }
    closedir(d);
}

/* Count the whole lines appended since the last call; a partial last line waits. */
static void count_new(struct nwb_bench_reclaim *rc, struct tracked *t, uint64_t size)
{
    while (t->counted < size) {
        size_t want = size - t->counted < READ_CHUNK ? (size_t)(size - t->counted) : READ_CHUNK;
        ssize_t n = pread(t->fd, rc->buf, want, (off_t)t->counted);
        const char *p;
        const char *end;
        const char *last = NULL;

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;
        }
        p = rc->buf;
        end = rc->buf + n;
        for (;;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));

            if (nl == NULL) {
                break;
            }
            rc->lines++;
            last = nl;
            p = nl + 1;
        }
        if (last == NULL) {
            return; /* no complete line in this piece yet */
        }
        t->counted += (uint64_t)(last + 1 - rc->buf);
    }
}

/*
 * The threshold is on the server's whole output, not per file: a server that
 * writes one file per run (nwb-logserver, a run per connection) must not keep
 * connections x punch_min of fresh tmpfs pages while the null server's one
 * file is punched every punch_min. Once the done bytes of all files reach
 * punch_min (or on the final step), every file is punched up to what is done.
 */
void nwb_bench_reclaim_step(struct nwb_bench_reclaim *rc, int final)
{
    uint64_t pending = 0;

    scan(rc, rc->dir, 0);
    for (int i = 0; i < rc->nfiles; i++) {
        struct tracked *t = &rc->files[i];
        struct stat st;

        if (fstat(t->fd, &st) != 0) {
            continue;
        }
        if (rc->count) {
            count_new(rc, t, (uint64_t)st.st_size);
        } else {
            t->counted = (uint64_t)st.st_size; /* not read: only punched */
        }
        pending += (t->counted & ~(uint64_t)(PAGE - 1)) - t->punched;
    }
    if (rc->punch_min == 0 || rc->punch_failed || (!final && pending < rc->punch_min)) {
        return;
    }
    for (int i = 0; i < rc->nfiles; i++) {
        struct tracked *t = &rc->files[i];
        const uint64_t upto = t->counted & ~(uint64_t)(PAGE - 1);

        if (upto <= t->punched) {
            continue;
        }
        if (fallocate(t->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)t->punched,
                      (off_t)(upto - t->punched)) != 0) {
            rc->punch_failed = 1;
            return;
        }
        rc->punched += upto - t->punched;
        t->punched = upto;
    }
}

long long nwb_bench_reclaim_lines(const struct nwb_bench_reclaim *rc)
{
    return rc->lines;
}

uint64_t nwb_bench_reclaim_punched(const struct nwb_bench_reclaim *rc, int *failed)
{
    *failed = rc->punch_failed;
    return rc->punched;
}

void nwb_bench_reclaim_destroy(struct nwb_bench_reclaim *rc)
{
    if (rc == NULL) {
        return;
    }
    for (int i = 0; i < rc->nfiles; i++) {
        close(rc->files[i].fd);
    }
    nwb_free(rc->buf);
    nwb_free(rc);
}
