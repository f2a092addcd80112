/* SPDX-License-Identifier: MIT */
/*
 * crash_store.c - the crashes/ folder of the crash ingest: content ids (SHA-256), durable
 * storage of uploaded archives and their queue markers (temporary file, fsync, rename),
 * publishing an extraction to packages/ or an archive to invalid/ with its reason, retention
 * per category, and the folder scans the views and /metrics read. The contract is in
 * crash_ingest_int.h; the caller serialises every change (crash_ingest.c's lock).
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

#include "nwb/alloc.h"
#include "nwb/crash_manifest.h"
#include "nwb/error.h"
#include "nwb/file_io.h"

#include "crash_ingest_int.h"
#include "crash_signature.h"

#define MARKER_MAX   1024u         /* bytes of a queue marker read back */
#define REASON_MAX   (16u * 1024u) /* bytes of a reason file read back */
#define RMTREE_DEPTH 64u

/* The file names an id takes in raw/ and invalid/ ("<id>.<ext>", "<id>.reason.txt"). */
#define NAME_CAP (NWB_CRASH_INGEST_ID_LEN + 16u)

/* Every extension nwb__crash_sniff_ext() gives, with the media type the archive is served as. */
const struct nwb__crash_archive_kind nwb__crash_archive_kinds[] = {
    {"tar.zst", "application/zstd"},     {"tar.gz", "application/gzip"},
    {"zip", "application/zip"},          {"tar", "application/x-tar"},
    {"bin", "application/octet-stream"},
};
const size_t nwb__crash_archive_kinds_count = NWB_ARRAY_SIZE(nwb__crash_archive_kinds);

/* ---- SHA-256 (FIPS 180-4) ---- */

struct sha256 {
    uint32_t h[8];
    uint64_t bytes;
    uint8_t block[64];
    size_t used;
};

static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t ror(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32u - n));
}

static void sha_block(struct sha256 *s, const uint8_t *p)
{
    uint32_t w[64], a, b, c, d, e, f, g, h;

    for (int i = 0; i < 16; i++) {
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    }
    for (int i = 16; i < 64; i++) {
        const uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        const uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);

        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = s->h[0];
    b = s->h[1];
    c = s->h[2];
    d = s->h[3];
    e = s->h[4];
    f = s->h[5];
    g = s->h[6];
    h = s->h[7];
    for (int i = 0; i < 64; i++) {
        const uint32_t t1 =
            h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + sha_k[i] + w[i];
        const uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));

        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    s->h[0] += a;
    s->h[1] += b;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
    s->h[5] += f;
    s->h[6] += g;
    s->h[7] += h;
}

void nwb__crash_sha256(const void *data, size_t len, uint8_t out[32])
{
    static const uint32_t init[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    struct sha256 s;
    const uint8_t *p = data;
    uint64_t bits;

    memcpy(s.h, init, sizeof(init));
    s.bytes = len;
    s.used = 0;
    while (len >= 64) {
        sha_block(&s, p);
        p += 64;
        len -= 64;
    }
    memcpy(s.block, p, len);
    s.used = len;
    s.block[s.used++] = 0x80;
    if (s.used > 56) {
        memset(s.block + s.used, 0, 64 - s.used);
        sha_block(&s, s.block);
        s.used = 0;
    }
    memset(s.block + s.used, 0, 56 - s.used);
    bits = s.bytes * 8u;
    for (int i = 0; i < 8; i++) {
        s.block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
    }
    sha_block(&s, s.block);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s.h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s.h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s.h[i] >> 8);
        out[4 * i + 3] = (uint8_t)s.h[i];
    }
}

void nwb__crash_id_of(const void *body, size_t len, char id[NWB_CRASH_INGEST_ID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t digest[32];

    nwb__crash_sha256(body, len, digest);
    for (unsigned i = 0; i < NWB_CRASH_INGEST_ID_LEN / 2; i++) {
        id[2 * i] = hex[digest[i] >> 4];
        id[2 * i + 1] = hex[digest[i] & 15];
    }
    id[NWB_CRASH_INGEST_ID_LEN] = '\0';
}

int nwb__crash_id_valid(const char *s)
{
    size_t n = 0;

    for (; s[n] != '\0'; n++) {
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) {
            return 0;
        }
    }
    return n == NWB_CRASH_INGEST_ID_LEN;
}

const char *nwb__crash_sniff_ext(const void *body, size_t len)
{
    const unsigned char *b = body;

    if (len >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) {
        return "tar.zst";
    }
    if (len >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
        return "tar.gz";
    }
    if (len >= 4 && b[0] == 'P' && b[1] == 'K' &&
        ((b[2] == 3 && b[3] == 4) || (b[2] == 5 && b[3] == 6))) {
        return "zip";
    }
    if (len >= 262 && memcmp(b + 257, "ustar", 5) == 0) {
        return "tar";
    }
    return "bin";
}

/* ---- folders ---- */

DIR *nwb__crash_dir_open(int dir_fd)
{
    const int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

    if (d == NULL && fd >= 0) {
        const int saved = errno;

        close(fd);
        errno = saved;
    }
    return d;
}

static int is_dot(const char *name)
{
    return strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

static int rmtree_fd(int dirfd, unsigned depth);

static int rm_child(int dirfd, const char *name, unsigned depth)
{
    struct stat st;
    int fd, err;

    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return errno == ENOENT ? 0 : -errno;
    }
    if (!S_ISDIR(st.st_mode)) {
        return unlinkat(dirfd, name, 0) == 0 || errno == ENOENT ? 0 : -errno;
    }
    if (depth >= RMTREE_DEPTH) {
        return -ELOOP;
    }
    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    err = rmtree_fd(fd, depth + 1);
    close(fd);
    if (err == 0 && unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) {
        err = -errno;
    }
    return err;
}

/* Remove everything inside the folder @p dirfd. */
static int rmtree_fd(int dirfd, unsigned depth)
{
    DIR *d = nwb__crash_dir_open(dirfd);
    const struct dirent *de;
    int err = 0;

    if (d == NULL) {
        return -errno;
    }
    while ((de = readdir(d)) != NULL) {
        const int e2 = is_dot(de->d_name) ? 0 : rm_child(dirfd, de->d_name, depth);

        if (e2 != 0 && err == 0) {
            err = e2;
        }
    }
    closedir(d);
    return err;
}

int nwb__crash_rmtree_at(int dirfd, const char *name)
{
    return rm_child(dirfd, name, 0);
}

static int exists_at(int dir_fd, const char *name)
{
    struct stat st;

    return fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int open_dir_at(int parent, const char *name, int *out)
{
    if (mkdirat(parent, name, 0755) != 0 && errno != EEXIST) {
        return -errno;
    }
    *out = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return *out >= 0 ? 0 : -errno;
}

int nwb__crash_store_file_as(struct nwb__crash_store *st, const char *tmp_name, int dir_fd,
                             const char *name, const void *data, size_t len)
{
    int fd, err;

    (void)unlinkat(st->tmp_fd, tmp_name, 0);
    fd = openat(st->tmp_fd, tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        return -errno;
    }
    err = nwb_write_all(fd, data, len);
    if (err == 0 && fsync(fd) != 0) {
        err = -errno;
    }
    if (close(fd) != 0 && err == 0) {
        err = -errno;
    }
    if (err == 0 && renameat(st->tmp_fd, tmp_name, dir_fd, name) != 0) {
        err = -errno;
    }
    if (err == 0 && fsync(dir_fd) != 0) {
        err = -errno;
    }
    if (err != 0) {
        (void)unlinkat(st->tmp_fd, tmp_name, 0);
    }
    return err;
}

/* Write @p len bytes as @p name in .tmp/, fsync, and rename it into @p dir_fd. */
static int store_file(struct nwb__crash_store *st, int dir_fd, const char *name, const void *data,
                      size_t len)
{
    return nwb__crash_store_file_as(st, name, dir_fd, name, data, len);
}

static void raw_name(const struct nwb__crash_job *job, char name[NAME_CAP])
{
    snprintf(name, NAME_CAP, "%s.%s", job->id, job->ext);
}

static void reason_name(const char *id, char name[NAME_CAP])
{
    snprintf(name, NAME_CAP, "%s.reason.txt", id);
}

/* The known extension equal to @p ext, or NULL. */
static const char *known_ext(const char *ext)
{
    for (size_t i = 0; i < nwb__crash_archive_kinds_count; i++) {
        if (strcmp(ext, nwb__crash_archive_kinds[i].ext) == 0) {
            return nwb__crash_archive_kinds[i].ext;
        }
    }
    return NULL;
}

int nwb__crash_store_open(struct nwb__crash_store *st, const char *out_dir)
{
    static const char *const cat_names[NWB__CRASH_CATS] = {"packages", "raw", "invalid"};
    int out_fd, err;

    st->root_fd = st->tmp_fd = st->stage_fd = st->queue_fd = st->analysis_fd = -1;
    for (int c = 0; c < NWB__CRASH_CATS; c++) {
        st->cat_fd[c] = -1;
    }
    err = nwb_mkdir_p(out_dir, 0755);
    if (err != 0) {
        return err;
    }
    out_fd = open(out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (out_fd < 0) {
        return -errno;
    }
    err = open_dir_at(out_fd, "crashes", &st->root_fd);
    close(out_fd);
    for (int c = 0; c < NWB__CRASH_CATS && err == 0; c++) {
        err = open_dir_at(st->root_fd, cat_names[c], &st->cat_fd[c]);
    }
    if (err == 0) {
        err = open_dir_at(st->root_fd, ".tmp", &st->tmp_fd);
    }
    if (err == 0) {
        err = open_dir_at(st->root_fd, ".staging", &st->stage_fd);
    }
    if (err == 0) {
        err = open_dir_at(st->root_fd, ".queue", &st->queue_fd);
    }
    if (err == 0) {
        err = open_dir_at(st->root_fd, "analysis", &st->analysis_fd);
    }
    if (err != 0) {
        nwb__crash_store_close(st);
        return err;
    }
    /* Whatever a previous process was writing or extracting is redone from the raw archive. */
    (void)rmtree_fd(st->tmp_fd, 0);
    (void)rmtree_fd(st->stage_fd, 0);
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

void nwb__crash_store_close(struct nwb__crash_store *st)
{
    if (st == NULL) {
        return;
    }
    close_fd(&st->analysis_fd);
    close_fd(&st->queue_fd);
    close_fd(&st->stage_fd);
    close_fd(&st->tmp_fd);
    for (int c = 0; c < NWB__CRASH_CATS; c++) {
        close_fd(&st->cat_fd[c]);
    }
    close_fd(&st->root_fd);
}

/* ---- category scans ---- */

/* "<id>.<known ext>" → id and ext. */
static int split_name(const char *name, char *id, char *ext)
{
    const char *known;

    if (strlen(name) < NWB_CRASH_INGEST_ID_LEN + 2 || name[NWB_CRASH_INGEST_ID_LEN] != '.') {
        return -1;
    }
    memcpy(id, name, NWB_CRASH_INGEST_ID_LEN);
    id[NWB_CRASH_INGEST_ID_LEN] = '\0';
    known = known_ext(name + NWB_CRASH_INGEST_ID_LEN + 1);
    if (!nwb__crash_id_valid(id) || known == NULL) {
        return -1;
    }
    memcpy(ext, known, strlen(known) + 1);
    return 0;
}

int nwb__crash_store_scan(const struct nwb__crash_store *st, enum nwb__crash_cat cat,
                          struct nwb__crash_entry **out, size_t *count)
{
    const int dir_fd = st->cat_fd[cat];
    DIR *d = nwb__crash_dir_open(dir_fd);
    const struct dirent *e;
    struct nwb__crash_entry *list = NULL;
    size_t n = 0, cap = 0;

    *out = NULL;
    *count = 0;
    if (d == NULL) {
        return -errno;
    }
    while ((e = readdir(d)) != NULL) {
        struct nwb__crash_entry en;
        struct stat sb;

        memset(&en, 0, sizeof(en));
        if (cat == NWB__CRASH_PACKAGES) {
            if (!nwb__crash_id_valid(e->d_name)) {
                continue;
            }
            memcpy(en.id, e->d_name, sizeof(en.id));
        } else if (split_name(e->d_name, en.id, en.ext) != 0) {
            continue;
        }
        if (fstatat(dir_fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
            continue;
        }
        en.mtime_ns = (uint64_t)sb.st_mtim.tv_sec * 1000000000u + (uint64_t)sb.st_mtim.tv_nsec;
        en.size = (uint64_t)sb.st_size;
        if (n == cap) {
            const size_t ncap = cap != 0 ? cap * 2 : 64;
            struct nwb__crash_entry *nl = nwb_realloc(list, ncap * sizeof(*nl));

            if (nl == NULL) {
                closedir(d);
                nwb_free(list);
                return -ENOMEM;
            }
            list = nl;
            cap = ncap;
        }
        list[n++] = en;
    }
    closedir(d);
    *out = list;
    *count = n;
    return 0;
}

uint64_t nwb__crash_store_count(const struct nwb__crash_store *st, enum nwb__crash_cat cat)
{
    struct nwb__crash_entry *list;
    size_t n;

    if (nwb__crash_store_scan(st, cat, &list, &n) != 0) {
        return 0;
    }
    nwb_free(list);
    return n;
}

int nwb__crash_store_reason_read(const struct nwb__crash_store *st, const char *id, char **text,
                                 size_t *len)
{
    char name[NAME_CAP];
    uint8_t *data;
    int err;

    *text = NULL;
    reason_name(id, name);
    err = nwb_file_read_at(st->cat_fd[NWB__CRASH_INVALID], name, REASON_MAX, &data, len);
    if (err == 0) {
        *text = (char *)data;
    }
    return err;
}

/* ---- storing and the queue markers ---- */

int nwb__crash_store_is_queued(const struct nwb__crash_store *st, const char *id)
{
    return exists_at(st->queue_fd, id);
}

int nwb__crash_store_known(const struct nwb__crash_store *st, const struct nwb__crash_job *job)
{
    char name[NAME_CAP];

    if (exists_at(st->cat_fd[NWB__CRASH_PACKAGES], job->id) ||
        nwb__crash_store_is_queued(st, job->id)) {
        return 1;
    }
    raw_name(job, name);
    return exists_at(st->cat_fd[NWB__CRASH_RAW], name) ||
           exists_at(st->cat_fd[NWB__CRASH_INVALID], name);
}

int nwb__crash_store_put(struct nwb__crash_store *st, const struct nwb__crash_job *job,
                         const void *body, size_t len)
{
    char marker[512], name[NAME_CAP];
    const int n = snprintf(marker, sizeof(marker), "ext=%s\nprogram=%s\nrun=%s\nreceived_ns=%llu\n",
                           job->ext, job->program, job->run, (unsigned long long)job->received_ns);
    int err;

    raw_name(job, name);
    /* Marker first: a marker without its raw archive is dropped at start, never the reverse. */
    err = store_file(st, st->queue_fd, job->id, marker, (size_t)n);
    if (err == 0) {
        err = store_file(st, st->cat_fd[NWB__CRASH_RAW], name, body, len);
        if (err != 0) {
            (void)unlinkat(st->queue_fd, job->id, 0);
        }
    }
    return err;
}

int nwb__crash_store_marker_read(const struct nwb__crash_store *st, const char *id,
                                 struct nwb__crash_job *job)
{
    char ext[NWB_SAFE_NAME_MAX + 1], when[NWB_SAFE_NAME_MAX + 1];
    const char *known;
    uint8_t *text;
    size_t len;

    memset(job, 0, sizeof(*job));
    if (!nwb__crash_id_valid(id) ||
        nwb_file_read_at(st->queue_fd, id, MARKER_MAX, &text, &len) != 0) {
        return -1;
    }
    memcpy(job->id, id, sizeof(job->id));
    nwb_crash_manifest_value((const char *)text, len, "ext", ext);
    nwb_crash_manifest_value((const char *)text, len, "program", job->program);
    nwb_crash_manifest_value((const char *)text, len, "run", job->run);
    nwb_crash_manifest_value((const char *)text, len, "received_ns", when);
    nwb_free(text);
    job->received_ns = strtoull(when, NULL, 10);
    known = known_ext(ext);
    if (known == NULL) {
        return -1;
    }
    memcpy(job->ext, known, strlen(known) + 1);
    return 0;
}

int nwb__crash_store_requeue(struct nwb__crash_store *st,
                             int (*take)(void *arg, const struct nwb__crash_job *job), void *arg)
{
    DIR *d = nwb__crash_dir_open(st->queue_fd);
    const struct dirent *e;
    int stop = 0;

    if (d == NULL) {
        return 0;
    }
    while (stop == 0 && (e = readdir(d)) != NULL) {
        struct nwb__crash_job job;
        char name[NAME_CAP];

        if (!nwb__crash_id_valid(e->d_name)) {
            continue;
        }
        if (nwb__crash_store_marker_read(st, e->d_name, &job) == 0) {
            raw_name(&job, name);
            if (exists_at(st->cat_fd[NWB__CRASH_RAW], name)) {
                stop = take(arg, &job);
                continue;
            }
        }
        /* The marker is written before the raw archive: a crash between the two. */
        (void)unlinkat(st->queue_fd, e->d_name, 0);
    }
    closedir(d);
    return stop;
}

/* ---- the worker's side ---- */

int nwb__crash_store_raw_open(const struct nwb__crash_store *st, const struct nwb__crash_job *job,
                              uint64_t *len)
{
    char name[NAME_CAP];
    struct stat sb;
    int fd;

    raw_name(job, name);
    fd = openat(st->cat_fd[NWB__CRASH_RAW], name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    if (fstat(fd, &sb) != 0) {
        const int err = -errno;

        close(fd);
        return err;
    }
    *len = (uint64_t)sb.st_size;
    return fd;
}

int nwb__crash_store_stage_open(struct nwb__crash_store *st, const char *id)
{
    int fd;

    nwb__crash_store_stage_drop(st, id);
    if (mkdirat(st->stage_fd, id, 0755) != 0) {
        return -errno;
    }
    fd = openat(st->stage_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

void nwb__crash_store_stage_drop(struct nwb__crash_store *st, const char *id)
{
    (void)nwb__crash_rmtree_at(st->stage_fd, id);
}

static int cmp_age(const void *a, const void *b)
{
    const struct nwb__crash_entry *x = a, *y = b;

    if (x->mtime_ns != y->mtime_ns) {
        return x->mtime_ns < y->mtime_ns ? -1 : 1;
    }
    return strcmp(x->id, y->id);
}

int nwb__crash_analysis_signature(const struct nwb__crash_store *st, const char *id, char *sig,
                                  size_t cap)
{
    char path[NWB_CRASH_INGEST_ID_LEN + 32];
    ssize_t n;
    int fd;

    if (cap == 0) {
        return -EINVAL;
    }
    snprintf(path, sizeof(path), "%s/signature.txt", id);
    fd = openat(st->analysis_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        return -errno;
    }
    n = read(fd, sig, cap - 1);
    close(fd);
    if (n < 0) {
        return -EIO;
    }
    while (n > 0 && (sig[n - 1] == '\n' || sig[n - 1] == '\r')) {
        n--;
    }
    sig[n] = '\0';
    if (n == 0 || memchr(sig, '\n', (size_t)n) != NULL || strlen(sig) != (size_t)n) {
        return -EINVAL; /* not one line: treated as no signature */
    }
    return (int)n;
}

/* A package entry being considered for pruning, with what retention needs of its group. */
struct aged {
    struct nwb__crash_entry e;
    char group[NWB_CRASH_SIG_MAX + 1]; /* "" = no signature: never protected */
    int newest_of_group;
};

static int cmp_aged_group(const void *a, const void *b)
{
    const struct aged *x = a, *y = b;
    const int c = strcmp(x->group, y->group);

    return c != 0 ? c : -cmp_age(&x->e, &y->e); /* newest first inside a group */
}

static int cmp_aged_age(const void *a, const void *b)
{
    const struct aged *x = a, *y = b;

    return cmp_age(&x->e, &y->e);
}

/*
 * Mark the newest package of every group (signatures read from analysis/). Packages without
 * a signature are not protected.
 */
static void mark_group_newest(const struct nwb__crash_store *st, struct aged *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (nwb__crash_analysis_signature(st, list[i].e.id, list[i].group, sizeof(list[i].group)) <
            0) {
            list[i].group[0] = '\0';
        }
        list[i].newest_of_group = 0;
    }
    qsort(list, n, sizeof(*list), cmp_aged_group);
    for (size_t i = 0; i < n; i++) {
        list[i].newest_of_group =
            list[i].group[0] != '\0' && (i == 0 || strcmp(list[i].group, list[i - 1].group) != 0);
    }
    qsort(list, n, sizeof(*list), cmp_aged_age);
}

/* Remove one entry of @p cat (and what belongs to it). 0 or -1. */
static int remove_entry(struct nwb__crash_store *st, enum nwb__crash_cat cat,
                        const struct nwb__crash_entry *e, struct nwb_crash_counts *totals)
{
    const int dir_fd = st->cat_fd[cat];
    char name[NAME_CAP];

    if (cat == NWB__CRASH_PACKAGES) {
        if (nwb__crash_rmtree_at(dir_fd, e->id) != 0) {
            return -1;
        }
        (void)nwb__crash_rmtree_at(st->analysis_fd, e->id);
        totals->pruned_packages_total++;
        return 0;
    }
    snprintf(name, sizeof(name), "%s.%s", e->id, e->ext);
    if (unlinkat(dir_fd, name, 0) != 0) {
        return -1;
    }
    if (cat == NWB__CRASH_INVALID) {
        reason_name(e->id, name);
        (void)unlinkat(dir_fd, name, 0);
        totals->pruned_invalid_total++;
    } else {
        totals->pruned_raw_total++;
    }
    return 0;
}

/*
 * Delete the oldest entries of @p cat until it holds @p keep, never @p current. @p extra is
 * the change about to happen to the category (+1: @p current moves in, -1: it moves out), so
 * the cap already holds once the move is visible.
 *
 * Packages: the newest crash of every group is kept while anything else can go. The first
 * pass deletes, oldest first, packages that are not the newest of their group (a package
 * without a signature counts as not protected); only if the category is still above the cap
 * does a second pass delete the oldest of what is left, group-newest ones included: the cap
 * always holds.
 */
static void prune(struct nwb__crash_store *st, enum nwb__crash_cat cat, unsigned keep,
                  const char *current, int extra, struct nwb_crash_counts *totals)
{
    struct nwb__crash_entry *list;
    struct aged *aged;
    size_t n, left;

    if (keep == 0 || nwb__crash_store_scan(st, cat, &list, &n) != 0) {
        return;
    }
    if (n == 0 || (long long)n + extra <= (long long)keep) {
        nwb_free(list);
        return;
    }
    aged = nwb_calloc(n, sizeof(*aged));
    if (aged == NULL) {
        nwb_free(list);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        aged[i].e = list[i];
    }
    nwb_free(list);
    if (cat == NWB__CRASH_PACKAGES) {
        mark_group_newest(st, aged, n);
    } else {
        qsort(aged, n, sizeof(*aged), cmp_aged_age);
    }
    left = n;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n && (long long)left + extra > (long long)keep; i++) {
            if (aged[i].e.id[0] == '\0' || strcmp(aged[i].e.id, current) == 0) {
                continue;
            }
            if (pass == 0 && aged[i].newest_of_group) {
                continue;
            }
            /* A stored archive still waiting for the worker is not old, it is next. */
            if (cat == NWB__CRASH_RAW && nwb__crash_store_is_queued(st, aged[i].e.id)) {
                continue;
            }
            if (remove_entry(st, cat, &aged[i].e, totals) == 0) {
                aged[i].e.id[0] = '\0';
                left--;
            }
        }
    }
    nwb_free(aged);
}

static void write_reason(struct nwb__crash_store *st, const struct nwb__crash_job *job,
                         const char *reason)
{
    char text[2048], name[NAME_CAP];
    const int n = snprintf(text, sizeof(text),
                           "%s\nid=%s\narchive=%s.%s\nprogram=%s\nrun=%s\nreceived_ns=%llu\n",
                           reason, job->id, job->id, job->ext, job->program, job->run,
                           (unsigned long long)job->received_ns);

    reason_name(job->id, name);
    (void)store_file(st, st->cat_fd[NWB__CRASH_INVALID], name, text,
                     n > 0 && (size_t)n < sizeof(text) ? (size_t)n : strlen(text));
}

void nwb__crash_store_settle(struct nwb__crash_store *st, const struct nwb_crash_caps *caps,
                             const struct nwb__crash_job *job, int rc, const char *reason,
                             struct nwb_crash_counts *totals)
{
    const int pkg_fd = st->cat_fd[NWB__CRASH_PACKAGES];
    const int raw_fd = st->cat_fd[NWB__CRASH_RAW];
    const int inv_fd = st->cat_fd[NWB__CRASH_INVALID];
    char name[NAME_CAP];

    raw_name(job, name);
    if (rc != 0 && rc != NWB_EARCHIVE && rc != -ENOENT) {
        return; /* abandoned (stopping) or a local failure: redone at the next start */
    }
    /* Retention first, so no category is ever seen above its cap. */
    prune(st, NWB__CRASH_PACKAGES, caps->retain_packages, job->id, rc == 0, totals);
    prune(st, NWB__CRASH_RAW, caps->retain_raw, job->id, rc == NWB_EARCHIVE ? -1 : 0, totals);
    prune(st, NWB__CRASH_INVALID, caps->retain_invalid, job->id, rc == NWB_EARCHIVE, totals);
    if (rc == 0) {
        struct stat sb;

        if (renameat(st->stage_fd, job->id, pkg_fd, job->id) != 0) {
            fprintf(stderr, "nwb-logserver: crash %s: cannot publish the package: %s\n", job->id,
                    strerror(errno));
            nwb__crash_store_stage_drop(st, job->id);
            return; /* the marker stays: retried at the next start */
        }
        /* The package's age for retention is its upload time, like the raw archive's. */
        if (fstatat(raw_fd, name, &sb, 0) == 0) {
            const struct timespec times[2] = {sb.st_mtim, sb.st_mtim};

            (void)utimensat(pkg_fd, job->id, times, 0);
        }
        (void)fsync(pkg_fd);
        totals->extracted_total++;
    } else if (rc == NWB_EARCHIVE) {
        if (renameat(raw_fd, name, inv_fd, name) != 0 && errno != ENOENT) {
            fprintf(stderr, "nwb-logserver: crash %s: cannot move to invalid/: %s\n", job->id,
                    strerror(errno));
            return;
        }
        write_reason(st, job, reason);
        (void)fsync(inv_fd);
        totals->invalid_total++;
    }
    (void)unlinkat(st->queue_fd, job->id, 0);
}
