/* SPDX-License-Identifier: MIT */
/*
 * crash_store.c - the crashes/ folder: content ids (SHA-256), durable
 * storage of uploaded archives (temporary file, fsync, rename), the queue
 * markers that survive a restart, moving results into packages/ or
 * invalid/, retention per category, and the JSON and Prometheus views.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/safe_name.h"

#include "crash_int.h"

/* Bounded string copy (truncates; always NUL-terminates). */
static void copy_str(char *dst, size_t cap, const char *src)
{
    const size_t n = strnlen(src, cap - 1);

    memmove(dst, src, n);
    dst[n] = '\0';
}

#define SCAN_MAX_DEPTH    16u
#define MARKER_MAX        1024u         /* bytes of a queue marker read back */
#define MANIFEST_TEXT_MAX (16u * 1024u) /* bytes of a manifest or reason file read back */

static const char *const known_exts[] = {"tar.zst", "tar.gz", "zip", "tar", "bin"};

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

/* ---- small file helpers ---- */

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n > 0) {
        const ssize_t k = write(fd, c, n);

        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            return k < 0 ? -errno : -EIO;
        }
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Write @p len bytes as @p name in .tmp/, fsync, and rename it into @p dir_fd. */
static int store_file(struct nwb__crash_ingest *ci, int dir_fd, const char *name, const void *data,
                      size_t len)
{
    int fd, err;

    (void)unlinkat(ci->tmp_fd, name, 0);
    fd = openat(ci->tmp_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        return -errno;
    }
    err = write_all(fd, data, len);
    if (err == 0 && fsync(fd) != 0) {
        err = -errno;
    }
    if (close(fd) != 0 && err == 0) {
        err = -errno;
    }
    if (err == 0 && renameat(ci->tmp_fd, name, dir_fd, name) != 0) {
        err = -errno;
    }
    if (err == 0 && fsync(dir_fd) != 0) {
        err = -errno;
    }
    if (err != 0) {
        (void)unlinkat(ci->tmp_fd, name, 0);
    }
    return err;
}

static size_t read_small(int dir_fd, const char *name, char *buf, size_t cap)
{
    const int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    size_t used = 0;

    if (fd < 0) {
        buf[0] = '\0';
        return 0;
    }
    while (used + 1 < cap) {
        const ssize_t n = read(fd, buf + used, cap - 1 - used);

        if (n <= 0) {
            break;
        }
        used += (size_t)n;
    }
    close(fd);
    buf[used] = '\0';
    return used;
}

/* "key=value" from text @p t into @p out (cap NWB_SAFE_NAME_MAX + 1), sanitised. */
static void text_key(const char *t, const char *key, char *out)
{
    const size_t klen = strlen(key);

    out[0] = '\0';
    for (const char *p = t; *p != '\0';) {
        const char *end = strchr(p, '\n');
        const size_t n = end != NULL ? (size_t)(end - p) : strlen(p);

        if (n > klen && memcmp(p, key, klen) == 0 && p[klen] == '=') {
            nwb_safe_name(out, p + klen + 1, n - klen - 1, "");
            return;
        }
        p += n + (end != NULL);
    }
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

/* Remove everything inside the folder @p dir_fd. */
static void empty_dir(int dir_fd)
{
    const int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    const struct dirent *e;

    if (d == NULL) {
        if (fd >= 0) {
            close(fd);
        }
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            (void)nwb__crash_rmtree_at(dir_fd, e->d_name);
        }
    }
    closedir(d);
}

/* ---- category scans ---- */

#define CAT_PACKAGES 0
#define CAT_RAW      1
#define CAT_INVALID  2

struct entry {
    char id[NWB_CRASH_INGEST_ID_LEN + 1];
    char ext[8];
    uint64_t mtime_ns;
    uint64_t size;
};

/* "<id>.<known ext>" → id and ext. */
static int split_name(const char *name, char *id, char *ext)
{
    if (strlen(name) < NWB_CRASH_INGEST_ID_LEN + 2 || name[NWB_CRASH_INGEST_ID_LEN] != '.') {
        return -1;
    }
    memcpy(id, name, NWB_CRASH_INGEST_ID_LEN);
    id[NWB_CRASH_INGEST_ID_LEN] = '\0';
    if (!nwb__crash_id_valid(id)) {
        return -1;
    }
    for (size_t i = 0; i < NWB_ARRAY_SIZE(known_exts); i++) {
        if (strcmp(name + NWB_CRASH_INGEST_ID_LEN + 1, known_exts[i]) == 0) {
            copy_str(ext, 8, known_exts[i]);
            return 0;
        }
    }
    return -1;
}

static int scan_category(int dir_fd, int cat, struct entry **out, size_t *count)
{
    const int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    const struct dirent *e;
    struct entry *list = NULL;
    size_t n = 0, cap = 0;

    *out = NULL;
    *count = 0;
    if (d == NULL) {
        if (fd >= 0) {
            close(fd);
        }
        return -errno;
    }
    while ((e = readdir(d)) != NULL) {
        struct entry en;
        struct stat st;

        memset(&en, 0, sizeof(en));
        if (cat == CAT_PACKAGES) {
            if (!nwb__crash_id_valid(e->d_name)) {
                continue;
            }
            copy_str(en.id, sizeof(en.id), e->d_name);
        } else if (split_name(e->d_name, en.id, en.ext) != 0) {
            continue;
        }
        if (fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            continue;
        }
        en.mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
        en.size = (uint64_t)st.st_size;
        if (n == cap) {
            const size_t ncap = cap != 0 ? cap * 2 : 64;
            struct entry *nl = nwb_realloc(list, ncap * sizeof(*nl));

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

static int cmp_age(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;

    if (x->mtime_ns != y->mtime_ns) {
        return x->mtime_ns < y->mtime_ns ? -1 : 1;
    }
    return strcmp(x->id, y->id);
}

static uint64_t count_category(int dir_fd, int cat)
{
    struct entry *list;
    size_t n;

    if (scan_category(dir_fd, cat, &list, &n) != 0) {
        return 0;
    }
    nwb_free(list);
    return n;
}

/* ---- the queue ---- */

int nwb__crash_store_is_queued(struct nwb__crash_ingest *ci, const char *id)
{
    for (unsigned i = 0; i < ci->q_len; i++) {
        if (strcmp(ci->queue[(ci->q_head + i) % ci->caps.max_queue].id, id) == 0) {
            return 1;
        }
    }
    return exists_at(ci->queue_fd, id);
}

static int queue_push(struct nwb__crash_ingest *ci, const struct nwb__crash_job *job)
{
    if (ci->q_len >= ci->caps.max_queue) {
        return NWB_EFULL;
    }
    ci->queue[(ci->q_head + ci->q_len) % ci->caps.max_queue] = *job;
    ci->q_len++;
    pthread_cond_signal(&ci->wake);
    return 0;
}

static int marker_read(struct nwb__crash_ingest *ci, const char *id, struct nwb__crash_job *job)
{
    char text[MARKER_MAX];
    char ext[NWB_SAFE_NAME_MAX + 1], when[NWB_SAFE_NAME_MAX + 1];

    if (read_small(ci->queue_fd, id, text, sizeof(text)) == 0) {
        return -1;
    }
    memset(job, 0, sizeof(*job));
    if (snprintf(job->id, sizeof(job->id), "%s", id) >= (int)sizeof(job->id)) {
        return -1; /* not an id this store made */
    }
    text_key(text, "ext", ext);
    text_key(text, "program", job->program);
    text_key(text, "run", job->run);
    text_key(text, "received_ns", when);
    job->received_ns = strtoull(when, NULL, 10);
    for (size_t i = 0; i < NWB_ARRAY_SIZE(known_exts); i++) {
        if (strcmp(ext, known_exts[i]) == 0) {
            copy_str(job->ext, sizeof(job->ext), ext);
            return 0;
        }
    }
    return -1;
}

void nwb__crash_store_requeue(struct nwb__crash_ingest *ci)
{
    const int fd = openat(ci->queue_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    const struct dirent *e;

    if (d == NULL) {
        if (fd >= 0) {
            close(fd);
        }
        return;
    }
    while ((e = readdir(d)) != NULL) {
        struct nwb__crash_job job;
        char raw[NWB_CRASH_INGEST_ID_LEN + 16] = "";
        int queued = 0;

        memset(&job, 0, sizeof(job));

        if (!nwb__crash_id_valid(e->d_name)) {
            continue;
        }
        for (unsigned i = 0; i < ci->q_len; i++) {
            queued |= strcmp(ci->queue[(ci->q_head + i) % ci->caps.max_queue].id, e->d_name) == 0;
        }
        if (queued) {
            continue;
        }
        if (marker_read(ci, e->d_name, &job) == 0) {
            snprintf(raw, sizeof(raw), "%s.%s", job.id, job.ext);
        }
        if (job.ext[0] == '\0' || !exists_at(ci->raw_fd, raw)) {
            /* The marker is written before the raw archive: a crash between the two. */
            (void)unlinkat(ci->queue_fd, e->d_name, 0);
            continue;
        }
        if (queue_push(ci, &job) != 0) {
            ci->rescan = 1; /* the rest once the worker has drained the queue */
            break;
        }
    }
    closedir(d);
}

/* ---- create and submit ---- */

static int caps_check(const struct nwb_crash_caps *c)
{
    if (c->max_archive_bytes == 0 || c->max_entries == 0 || c->max_path_bytes == 0 ||
        c->max_path_depth == 0 || c->max_path_depth > NWB__CRASH_DEPTH_LIMIT ||
        c->max_entry_bytes == 0 || c->max_total_bytes == 0 || c->max_ratio == 0 ||
        c->max_queue == 0) {
        return NWB_ECONFIG;
    }
    return 0;
}

static void close_fds(struct nwb__crash_ingest *ci)
{
    const int fds[] = {ci->queue_fd, ci->stage_fd, ci->tmp_fd, ci->inv_fd,
                       ci->raw_fd,   ci->pkg_fd,   ci->root_fd};

    for (size_t i = 0; i < NWB_ARRAY_SIZE(fds); i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
}

int nwb__crash_ingest_create(const char *out_dir, const struct nwb_crash_caps *caps,
                             struct nwb__crash_ingest **out)
{
    static const struct nwb_crash_caps defaults = NWB_CRASH_CAPS_INIT;
    struct nwb__crash_ingest *ci;
    int out_fd, err;

    *out = NULL;
    caps = caps != NULL ? caps : &defaults;
    err = caps_check(caps);
    if (err != 0) {
        return err;
    }
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
        return -errno;
    }
    out_fd = open(out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (out_fd < 0) {
        return -errno;
    }
    ci = nwb_calloc(1, sizeof(*ci));
    if (ci == NULL) {
        close(out_fd);
        return -ENOMEM;
    }
    ci->caps = *caps;
    ci->root_fd = ci->pkg_fd = ci->raw_fd = ci->inv_fd = -1;
    ci->tmp_fd = ci->stage_fd = ci->queue_fd = -1;
    err = open_dir_at(out_fd, "crashes", &ci->root_fd);
    close(out_fd);
    if (err == 0) {
        err = open_dir_at(ci->root_fd, "packages", &ci->pkg_fd);
    }
    if (err == 0) {
        err = open_dir_at(ci->root_fd, "raw", &ci->raw_fd);
    }
    if (err == 0) {
        err = open_dir_at(ci->root_fd, "invalid", &ci->inv_fd);
    }
    if (err == 0) {
        err = open_dir_at(ci->root_fd, ".tmp", &ci->tmp_fd);
    }
    if (err == 0) {
        err = open_dir_at(ci->root_fd, ".staging", &ci->stage_fd);
    }
    if (err == 0) {
        err = open_dir_at(ci->root_fd, ".queue", &ci->queue_fd);
    }
    if (err != 0) {
        goto fail_fds;
    }
    ci->queue = nwb_calloc(caps->max_queue, sizeof(*ci->queue));
    if (ci->queue == NULL) {
        err = -ENOMEM;
        goto fail_fds;
    }
    if (pthread_mutex_init(&ci->lock, NULL) != 0) {
        err = -ENOMEM;
        goto fail_queue;
    }
    if (pthread_cond_init(&ci->wake, NULL) != 0) {
        err = -ENOMEM;
        goto fail_mutex;
    }
    if (pthread_cond_init(&ci->idle, NULL) != 0) {
        err = -ENOMEM;
        goto fail_wake;
    }
    /* Whatever a previous process was writing or extracting is redone from the raw archive. */
    empty_dir(ci->tmp_fd);
    empty_dir(ci->stage_fd);
    nwb__crash_store_requeue(ci);
    err = nwb__crash_worker_start(ci);
    if (err != 0) {
        goto fail_idle;
    }
    *out = ci;
    return 0;

fail_idle:
    pthread_cond_destroy(&ci->idle);
fail_wake:
    pthread_cond_destroy(&ci->wake);
fail_mutex:
    pthread_mutex_destroy(&ci->lock);
fail_queue:
    nwb_free(ci->queue);
fail_fds:
    close_fds(ci);
    nwb_free(ci);
    return err;
}

/* 1 when the id is known in any category or queued (lock held). */
static int known(struct nwb__crash_ingest *ci, const char *id, const char *ext)
{
    char name[NWB_CRASH_INGEST_ID_LEN + 16];

    if (exists_at(ci->pkg_fd, id) || nwb__crash_store_is_queued(ci, id)) {
        return 1;
    }
    snprintf(name, sizeof(name), "%s.%s", id, ext);
    if (exists_at(ci->raw_fd, name) || exists_at(ci->inv_fd, name)) {
        return 1;
    }
    return 0;
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int nwb__crash_ingest_submit(struct nwb__crash_ingest *ci, const void *body, size_t len,
                             const char *program, const char *run,
                             char id_out[NWB_CRASH_INGEST_ID_LEN + 1])
{
    struct nwb__crash_job job;
    char marker[512], name[NWB_CRASH_INGEST_ID_LEN + 16];
    int err, n;

    id_out[0] = '\0';
    if (len > ci->caps.max_archive_bytes) {
        return NWB_ETOOBIG;
    }
    memset(&job, 0, sizeof(job));
    nwb__crash_id_of(body, len, job.id);
    snprintf(job.ext, sizeof(job.ext), "%s", nwb__crash_sniff_ext(body, len));
    nwb_safe_name(job.program, program != NULL ? program : "",
                  program != NULL ? strlen(program) : 0, "unknown");
    nwb_safe_name(job.run, run != NULL ? run : "", run != NULL ? strlen(run) : 0, "unknown");
    job.received_ns = now_ns();
    snprintf(name, sizeof(name), "%s.%s", job.id, job.ext);
    n = snprintf(marker, sizeof(marker), "ext=%s\nprogram=%s\nrun=%s\nreceived_ns=%llu\n", job.ext,
                 job.program, job.run, (unsigned long long)job.received_ns);

    pthread_mutex_lock(&ci->lock);
    if (atomic_load(&ci->stopping)) {
        err = NWB_ECLOSED;
        goto out;
    }
    if (known(ci, job.id, job.ext)) {
        ci->totals.duplicates_total++;
        memcpy(id_out, job.id, sizeof(job.id));
        err = 0;
        goto out;
    }
    if (ci->q_len >= ci->caps.max_queue) {
        err = NWB_EFULL;
        goto out;
    }
    /* Marker first: a marker without its raw archive is dropped at start, never the reverse. */
    err = store_file(ci, ci->queue_fd, job.id, marker, (size_t)n);
    if (err == 0) {
        err = store_file(ci, ci->raw_fd, name, body, len);
        if (err != 0) {
            (void)unlinkat(ci->queue_fd, job.id, 0);
        }
    }
    if (err == 0) {
        (void)queue_push(ci, &job);
        ci->totals.uploads_total++;
        memcpy(id_out, job.id, sizeof(job.id));
    }
out:
    pthread_mutex_unlock(&ci->lock);
    return err;
}

/* ---- settle and retention ---- */

/*
 * Delete the oldest entries of @p cat until it holds @p keep, never @p current. @p extra is
 * the change about to happen to the category (+1: @p current moves in, -1: it moves out), so
 * the cap already holds once the move is visible.
 */
static void prune(struct nwb__crash_ingest *ci, int cat, unsigned keep, const char *current,
                  int extra)
{
    const int dir_fd = cat == CAT_PACKAGES ? ci->pkg_fd : cat == CAT_RAW ? ci->raw_fd : ci->inv_fd;
    struct entry *list;
    size_t n, left;

    if (keep == 0 || scan_category(dir_fd, cat, &list, &n) != 0) {
        return;
    }
    if (n == 0) {
        nwb_free(list);
        return;
    }
    qsort(list, n, sizeof(*list), cmp_age);
    left = n;
    for (size_t i = 0; i < n && (long long)left + extra > (long long)keep; i++) {
        char name[NWB_CRASH_INGEST_ID_LEN + 32];

        if (strcmp(list[i].id, current) == 0) {
            continue;
        }
        /* A stored archive still waiting for the worker is not old, it is next. */
        if (cat == CAT_RAW && nwb__crash_store_is_queued(ci, list[i].id)) {
            continue;
        }
        if (cat == CAT_PACKAGES) {
            if (nwb__crash_rmtree_at(dir_fd, list[i].id) != 0) {
                continue;
            }
            ci->totals.pruned_packages_total++;
        } else {
            snprintf(name, sizeof(name), "%s.%s", list[i].id, list[i].ext);
            if (unlinkat(dir_fd, name, 0) != 0) {
                continue;
            }
            if (cat == CAT_INVALID) {
                snprintf(name, sizeof(name), "%s.reason.txt", list[i].id);
                (void)unlinkat(dir_fd, name, 0);
                ci->totals.pruned_invalid_total++;
            } else {
                ci->totals.pruned_raw_total++;
            }
        }
        left--;
    }
    nwb_free(list);
}

static void write_reason(struct nwb__crash_ingest *ci, const struct nwb__crash_job *job,
                         const char *reason)
{
    char text[2048], name[NWB_CRASH_INGEST_ID_LEN + 16];
    const int n = snprintf(text, sizeof(text),
                           "%s\nid=%s\narchive=%s.%s\nprogram=%s\nrun=%s\nreceived_ns=%llu\n",
                           reason, job->id, job->id, job->ext, job->program, job->run,
                           (unsigned long long)job->received_ns);

    snprintf(name, sizeof(name), "%s.reason.txt", job->id);
    (void)store_file(ci, ci->inv_fd, name, text,
                     n > 0 && (size_t)n < sizeof(text) ? (size_t)n : strlen(text));
}

void nwb__crash_store_settle(struct nwb__crash_ingest *ci, const struct nwb__crash_job *job, int rc,
                             const char *reason)
{
    char name[NWB_CRASH_INGEST_ID_LEN + 16];

    const struct nwb_crash_caps *k = &ci->caps;

    snprintf(name, sizeof(name), "%s.%s", job->id, job->ext);
    if (rc != 0 && rc != NWB_EARCHIVE && rc != -ENOENT) {
        return; /* abandoned (stopping) or a local failure: redone at the next start */
    }
    /* Retention first, so no category is ever seen above its cap. */
    prune(ci, CAT_PACKAGES, k->retain_packages, job->id, rc == 0);
    prune(ci, CAT_RAW, k->retain_raw, job->id, rc == NWB_EARCHIVE ? -1 : 0);
    prune(ci, CAT_INVALID, k->retain_invalid, job->id, rc == NWB_EARCHIVE);
    if (rc == 0) {
        struct stat st;

        if (renameat(ci->stage_fd, job->id, ci->pkg_fd, job->id) != 0) {
            fprintf(stderr, "nwb-logserver: crash %s: cannot publish the package: %s\n", job->id,
                    strerror(errno));
            (void)nwb__crash_rmtree_at(ci->stage_fd, job->id);
            return; /* the marker stays: retried at the next start */
        }
        /* The package's age for retention is its upload time, like the raw archive's. */
        if (fstatat(ci->raw_fd, name, &st, 0) == 0) {
            const struct timespec times[2] = {st.st_mtim, st.st_mtim};

            (void)utimensat(ci->pkg_fd, job->id, times, 0);
        }
        (void)fsync(ci->pkg_fd);
        ci->totals.extracted_total++;
    } else if (rc == NWB_EARCHIVE) {
        if (renameat(ci->raw_fd, name, ci->inv_fd, name) != 0 && errno != ENOENT) {
            fprintf(stderr, "nwb-logserver: crash %s: cannot move to invalid/: %s\n", job->id,
                    strerror(errno));
            return;
        }
        write_reason(ci, job, reason);
        (void)fsync(ci->inv_fd);
        ci->totals.invalid_total++;
    }
    (void)unlinkat(ci->queue_fd, job->id, 0);
}

/* ---- JSON ---- */

struct sb {
    char *p;
    size_t len, cap;
    int oom;
};

static void sb_add(struct sb *b, const char *s, size_t n)
{
    if (b->oom) {
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t ncap = b->cap != 0 ? b->cap : 1024;
        char *np;

        while (ncap < b->len + n + 1) {
            ncap *= 2;
        }
        np = nwb_realloc(b->p, ncap);
        if (np == NULL) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = ncap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_printf(struct sb *b, const char *fmt, ...) NWB_PRINTF_LIKE(2, 3);

static void sb_printf(struct sb *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0) {
        sb_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
    }
}

static void sb_json_str(struct sb *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";

    sb_add(b, "\"", 1);
    for (; *s != '\0'; s++) {
        const unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\') {
            const char e[2] = {'\\', (char)c};

            sb_add(b, e, 2);
        } else if (c < 0x20 || c == 0x7f) {
            const char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};

            sb_add(b, e, 6);
        } else {
            sb_add(b, (const char *)&c, 1);
        }
    }
    sb_add(b, "\"", 1);
}

static void sb_time(struct sb *b, uint64_t ns)
{
    const time_t secs = (time_t)(ns / 1000000000u);
    struct tm tm;
    char buf[64];

    gmtime_r(&secs, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    sb_printf(b, "\"%s.%03uZ\"", buf, (unsigned)(ns / 1000000u % 1000u));
}

/* One crash as the listing and GET describe it. */
struct record {
    char id[NWB_CRASH_INGEST_ID_LEN + 1];
    char ext[8];
    uint64_t received_ns;
    int has_pkg, has_raw, has_inv, queued;
    uint64_t raw_bytes;
};

static uint64_t tree_bytes_at(int dir_fd, const char *name, unsigned depth)
{
    const int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    const struct dirent *e;
    uint64_t sum = 0;

    if (d == NULL) {
        if (fd >= 0) {
            close(fd);
        }
        return 0;
    }
    while ((e = readdir(d)) != NULL) {
        struct stat st;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            continue;
        }
        if (S_ISDIR(st.st_mode) && depth < SCAN_MAX_DEPTH) {
            sum += tree_bytes_at(dirfd(d), e->d_name, depth + 1);
        } else if (S_ISREG(st.st_mode)) {
            sum += (uint64_t)st.st_size;
        }
    }
    closedir(d);
    return sum;
}

static void describe(struct nwb__crash_ingest *ci, const struct record *r, struct sb *b)
{
    char text[MANIFEST_TEXT_MAX + 1];
    char program[NWB_SAFE_NAME_MAX + 1] = "", run[NWB_SAFE_NAME_MAX + 1] = "";
    char signal[NWB_SAFE_NAME_MAX + 1] = "";
    const char *status = r->queued    ? "queued"
                         : r->has_pkg ? "extracted"
                         : r->has_inv ? "invalid"
                                      : "stored";

    if (r->has_pkg) {
        char path[NWB_CRASH_INGEST_ID_LEN + 32];

        snprintf(path, sizeof(path), "%s/" NWB__CRASH_MANIFEST_NAME, r->id);
        read_small(ci->pkg_fd, path, text, sizeof(text));
        text_key(text, "program", program);
        text_key(text, "run", run);
        text_key(text, "signal", signal);
    } else if (r->has_inv) {
        char name[NWB_CRASH_INGEST_ID_LEN + 16];

        snprintf(name, sizeof(name), "%s.reason.txt", r->id);
        read_small(ci->inv_fd, name, text, sizeof(text));
        text_key(text, "program", program);
        text_key(text, "run", run);
    } else if (r->queued) {
        read_small(ci->queue_fd, r->id, text, sizeof(text));
        text_key(text, "program", program);
        text_key(text, "run", run);
    }
    sb_add(b, "{\"id\":", 6);
    sb_json_str(b, r->id);
    sb_add(b, ",\"received\":", 12);
    sb_time(b, r->received_ns);
    sb_add(b, ",\"program\":", 11);
    sb_json_str(b, program);
    sb_add(b, ",\"run\":", 7);
    sb_json_str(b, run);
    sb_add(b, ",\"signal\":", 10);
    sb_json_str(b, signal);
    sb_add(b, ",\"status\":", 10);
    sb_json_str(b, status);
    sb_add(b, ",\"sizes\":{\"archive\":", 20);
    if (r->has_raw || r->has_inv) {
        sb_printf(b, "%llu", (unsigned long long)r->raw_bytes);
    } else {
        sb_add(b, "null", 4);
    }
    sb_add(b, ",\"extracted\":", 13);
    if (r->has_pkg) {
        sb_printf(b, "%llu", (unsigned long long)tree_bytes_at(ci->pkg_fd, r->id, 0));
    } else {
        sb_add(b, "null", 4);
    }
    sb_add(b, "}", 1);
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp(((const struct record *)a)->id, ((const struct record *)b)->id);
}

static int cmp_received(const void *a, const void *b)
{
    const struct record *x = a, *y = b;

    if (x->received_ns != y->received_ns) {
        return x->received_ns < y->received_ns ? -1 : 1;
    }
    return strcmp(x->id, y->id);
}

/* Every crash known in any category, merged by id, oldest first. */
static int collect(struct nwb__crash_ingest *ci, struct record **out, size_t *count)
{
    struct entry *lists[3] = {NULL, NULL, NULL};
    size_t ns[3] = {0, 0, 0}, total, n = 0;
    const int fds[3] = {ci->pkg_fd, ci->raw_fd, ci->inv_fd};
    struct record *recs;
    int err = 0;

    for (int c = 0; c < 3 && err == 0; c++) {
        err = scan_category(fds[c], c, &lists[c], &ns[c]);
    }
    total = ns[0] + ns[1] + ns[2];
    recs = err == 0 ? nwb_calloc(total + 1, sizeof(*recs)) : NULL;
    if (recs == NULL) {
        for (int c = 0; c < 3; c++) {
            nwb_free(lists[c]);
        }
        return err != 0 ? err : -ENOMEM;
    }
    for (int c = 0; c < 3; c++) {
        for (size_t i = 0; i < ns[c]; i++) {
            struct record *r = &recs[n++];

            snprintf(r->id, sizeof(r->id), "%s", lists[c][i].id);
            snprintf(r->ext, sizeof(r->ext), "%s", lists[c][i].ext);
            r->received_ns = lists[c][i].mtime_ns;
            r->has_pkg = c == CAT_PACKAGES;
            r->has_raw = c == CAT_RAW;
            r->has_inv = c == CAT_INVALID;
            r->raw_bytes = c != CAT_PACKAGES ? lists[c][i].size : 0;
        }
        nwb_free(lists[c]);
    }
    qsort(recs, n, sizeof(*recs), cmp_id);
    {
        size_t w = 0;

        for (size_t i = 0; i < n; i++) {
            if (w > 0 && strcmp(recs[w - 1].id, recs[i].id) == 0) {
                struct record *m = &recs[w - 1];

                m->has_pkg |= recs[i].has_pkg;
                m->has_raw |= recs[i].has_raw;
                m->has_inv |= recs[i].has_inv;
                if (recs[i].raw_bytes != 0) {
                    m->raw_bytes = recs[i].raw_bytes;
                    copy_str(m->ext, sizeof(m->ext), recs[i].ext);
                }
                if (recs[i].received_ns < m->received_ns) {
                    m->received_ns = recs[i].received_ns;
                }
                continue;
            }
            recs[w++] = recs[i];
        }
        n = w;
    }
    pthread_mutex_lock(&ci->lock);
    for (size_t i = 0; i < n; i++) {
        recs[i].queued = nwb__crash_store_is_queued(ci, recs[i].id);
    }
    pthread_mutex_unlock(&ci->lock);
    qsort(recs, n, sizeof(*recs), cmp_received);
    *out = recs;
    *count = n;
    return 0;
}

static int finish_json(struct sb *b, char **json, size_t *len)
{
    if (b->oom) {
        nwb_free(b->p);
        return -ENOMEM;
    }
    *json = b->p;
    *len = b->len;
    return 0;
}

int nwb__crash_ingest_list_json(struct nwb__crash_ingest *ci, char **json, size_t *len)
{
    struct record *recs;
    size_t n;
    struct sb b = {NULL, 0, 0, 0};
    const int err = collect(ci, &recs, &n);

    *json = NULL;
    *len = 0;
    if (err != 0) {
        return err;
    }
    sb_add(&b, "{\"crashes\":[", 12);
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            sb_add(&b, ",", 1);
        }
        describe(ci, &recs[i], &b);
    }
    sb_add(&b, "]}\n", 3);
    nwb_free(recs);
    return finish_json(&b, json, len);
}

/* Files of a package, relative paths with sizes, sorted by the walk (readdir order sorted). */
static void list_files(int dir_fd, const char *prefix, unsigned depth, struct sb *b, int *first)
{
    const int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    const struct dirent *e;

    if (d == NULL) {
        if (fd >= 0) {
            close(fd);
        }
        return;
    }
    while ((e = readdir(d)) != NULL) {
        char path[1024];
        struct stat st;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            continue;
        }
        snprintf(path, sizeof(path), "%s%s%s", prefix, prefix[0] != '\0' ? "/" : "", e->d_name);
        if (S_ISDIR(st.st_mode) && depth < SCAN_MAX_DEPTH) {
            const int sub =
                openat(dir_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

            if (sub >= 0) {
                list_files(sub, path, depth + 1, b, first);
                close(sub);
            }
        } else if (S_ISREG(st.st_mode)) {
            sb_add(b, *first ? "{\"path\":" : ",{\"path\":", *first ? 8 : 9);
            sb_json_str(b, path);
            sb_printf(b, ",\"bytes\":%llu}", (unsigned long long)st.st_size);
            *first = 0;
        }
    }
    closedir(d);
}

int nwb__crash_ingest_get_json(struct nwb__crash_ingest *ci, const char *id, char **json,
                               size_t *len)
{
    struct record *recs;
    size_t n;
    struct sb b = {NULL, 0, 0, 0};
    const struct record *r = NULL;
    int err;

    *json = NULL;
    *len = 0;
    if (id == NULL || !nwb__crash_id_valid(id)) {
        return -EINVAL;
    }
    err = collect(ci, &recs, &n);
    if (err != 0) {
        return err;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(recs[i].id, id) == 0) {
            r = &recs[i];
        }
    }
    if (r == NULL) {
        nwb_free(recs);
        return -ENOENT;
    }
    describe(ci, r, &b);
    b.len--; /* reopen the object */
    if (r->has_inv) {
        char text[MANIFEST_TEXT_MAX + 1], name[NWB_CRASH_INGEST_ID_LEN + 16];
        char *nl;

        snprintf(name, sizeof(name), "%s.reason.txt", r->id);
        read_small(ci->inv_fd, name, text, sizeof(text));
        nl = strchr(text, '\n');
        if (nl != NULL) {
            *nl = '\0';
        }
        sb_add(&b, ",\"reason\":", 10);
        sb_json_str(&b, text);
    }
    if (r->has_pkg) {
        const int fd = openat(ci->pkg_fd, r->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int first = 1;

        sb_add(&b, ",\"files\":[", 10);
        if (fd >= 0) {
            list_files(fd, "", 0, &b, &first);
            close(fd);
        }
        sb_add(&b, "]", 1);
    }
    sb_add(&b, "}\n", 2);
    nwb_free(recs);
    return finish_json(&b, json, len);
}

/* ---- counts ---- */

void nwb__crash_ingest_counts(struct nwb__crash_ingest *ci, struct nwb_crash_counts *out)
{
    pthread_mutex_lock(&ci->lock);
    *out = ci->totals;
    out->queued = ci->q_len;
    pthread_mutex_unlock(&ci->lock);
    out->packages = count_category(ci->pkg_fd, CAT_PACKAGES);
    out->raw = count_category(ci->raw_fd, CAT_RAW);
    out->invalid = count_category(ci->inv_fd, CAT_INVALID);
}

size_t nwb__crash_ingest_metrics_write(struct nwb__crash_ingest *ci, char *buf, size_t cap)
{
    struct nwb_crash_counts c;
    int n;

    nwb__crash_ingest_counts(ci, &c);
    n = snprintf(
        buf, cap,
        "# HELP nwb_crashes Crash archives per category under crashes/.\n"
        "# TYPE nwb_crashes gauge\n"
        "nwb_crashes{category=\"packages\"} %llu\n"
        "nwb_crashes{category=\"raw\"} %llu\n"
        "nwb_crashes{category=\"invalid\"} %llu\n"
        "nwb_crashes{category=\"queued\"} %llu\n"
        "# TYPE nwb_crash_uploads_total counter\n"
        "nwb_crash_uploads_total %llu\n"
        "# TYPE nwb_crash_duplicates_total counter\n"
        "nwb_crash_duplicates_total %llu\n"
        "# TYPE nwb_crash_extracted_total counter\n"
        "nwb_crash_extracted_total %llu\n"
        "# TYPE nwb_crash_invalid_total counter\n"
        "nwb_crash_invalid_total %llu\n"
        "# TYPE nwb_crash_pruned_total counter\n"
        "nwb_crash_pruned_total{category=\"packages\"} %llu\n"
        "nwb_crash_pruned_total{category=\"raw\"} %llu\n"
        "nwb_crash_pruned_total{category=\"invalid\"} %llu\n",
        (unsigned long long)c.packages, (unsigned long long)c.raw, (unsigned long long)c.invalid,
        (unsigned long long)c.queued, (unsigned long long)c.uploads_total,
        (unsigned long long)c.duplicates_total, (unsigned long long)c.extracted_total,
        (unsigned long long)c.invalid_total, (unsigned long long)c.pruned_packages_total,
        (unsigned long long)c.pruned_raw_total, (unsigned long long)c.pruned_invalid_total);
    return n > 0 ? (size_t)n : 0;
}
