/* SPDX-License-Identifier: MIT */
/*
 * run_store.c - the per-run directories under <out>/runs: finding or making
 * runs/<program>_<YYYYmmdd-HHMMSS>_<run>, keeping a bounded LRU of open
 * runs, and the durable state file (.nwb-state) that makes duplicate
 * suppression and "nothing partial in log.txt" survive a SIGKILL. Used only
 * by the log worker thread, except the open runs' #token counts, which
 * /metrics reads under a small lock. docs/protocol.md describes the scheme.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/byte_order.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "server_int.h"
#include "thread_names.h"

/*
 * .nwb-state (48 bytes, little-endian), rewritten with one pwrite at offset
 * 0 before every write to log.txt:
 *   0 u32 magic "NWBS"      16 u64 pending_seq
 *   4 u16 version (1)       24 u64 batch_start (log.txt size before the batch)
 *   6 u16 flags             32 u64 write_end (log.txt size once this piece is written)
 *   8 u64 last_seq          40 u64 FNV-1a 64 of bytes 0..39
 */
#define STATE_MAGIC       0x5342574Eu /* "NWBS" */
#define STATE_VERSION     1u
#define STATE_SIZE        NWB__RUN_STATE_SIZE
#define STATE_HAS_LAST    0x1u /* last_seq is valid */
#define STATE_PENDING     0x2u /* a batch was being written */
#define STATE_PENDING_SEQ 0x4u /* ... and it carried pending_seq */
#define STATE_FINAL       0x8u /* ... and this piece was its last */
#define STATE_FILE        NWB__RUN_STATE_FILE
#define LOG_FILE          "log.txt"
#define DIR_NAME_MAX      NWB__RUN_DIR_MAX

struct nwb__run {
    struct nwb__run *hnext;
    struct nwb__run *lru_prev, *lru_next;
    uint64_t hash;
    char program[NWB_SAFE_NAME_MAX + 1];
    char run[NWB_SAFE_NAME_MAX + 8];
    char dir[DIR_NAME_MAX + 1];
    int log_fd;
    int state_fd;
    uint64_t size; /* log.txt bytes */
    int has_last;
    uint64_t last_seq;
    /* the batch being written */
    int b_has_seq;
    uint64_t b_seq;
    uint64_t b_start;
    int broken;       /* a failed write could not be undone: reopen (and recover) before reuse */
    int reported_err; /* write error already on the console; 0 while writes work */
    /* #tokens in the records written while the run was open (guarded by stats_mu) */
    uint64_t tok_decoded;
    uint64_t tok_unknown;
    /* thread names from the records (log worker only); made at the first name, NULL before */
    struct nwb__thread_names *thread_names;
};

struct nwb__run_store {
    int runs_fd;
    unsigned max_open;
    unsigned count;
    unsigned nbuckets; /* power of two */
    struct nwb__run **buckets;
    struct nwb__run lru; /* sentinel: lru.lru_next is the most recent */
    int open_err_reported;
    /* Guards the LRU list and the runs' token counts, so other threads can walk them. */
    pthread_mutex_t stats_mu;
};

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t key_hash(const char *program, const char *run)
{
    uint64_t h = 0xcbf29ce484222325ull;

    h = fnv1a(h, program, strlen(program) + 1);
    return fnv1a(h, run, strlen(run));
}

int nwb__run_store_open(const char *out_dir, unsigned max_open_runs, struct nwb__run_store **out,
                        char *errbuf, size_t errlen)
{
    struct nwb__run_store *s;
    char runs[4096];
    int err;

    *out = NULL;
    if (snprintf(runs, sizeof(runs), "%s/runs", out_dir) >= (int)sizeof(runs)) {
        snprintf(errbuf, errlen, "--out path too long");
        return NWB_ECONFIG;
    }
    err = nwb_mkdir_p(runs, 0755);
    if (err) {
        char ebuf[128];

        snprintf(errbuf, errlen, "cannot create %s: %s", runs,
                 nwb_strerror_r(err, ebuf, sizeof(ebuf)));
        return err;
    }
    s = nwb_calloc(1, sizeof(*s));
    if (s == NULL) {
        snprintf(errbuf, errlen, "out of memory");
        return -ENOMEM;
    }
    s->max_open = max_open_runs > 0 ? max_open_runs : 1;
    s->nbuckets = 16;
    while (s->nbuckets < 2u * s->max_open) {
        s->nbuckets *= 2;
    }
    s->buckets = nwb_calloc(s->nbuckets, sizeof(*s->buckets));
    if (s->buckets == NULL) {
        snprintf(errbuf, errlen, "out of memory");
        err = -ENOMEM;
        goto fail_free;
    }
    s->lru.lru_next = s->lru.lru_prev = &s->lru;
    s->runs_fd = open(runs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->runs_fd < 0) {
        char ebuf[128];

        err = -errno;
        snprintf(errbuf, errlen, "cannot open %s: %s", runs,
                 nwb_strerror_r(err, ebuf, sizeof(ebuf)));
        goto fail_buckets;
    }
    err = -pthread_mutex_init(&s->stats_mu, NULL);
    if (err) {
        snprintf(errbuf, errlen, "pthread_mutex_init failed");
        goto fail_fd;
    }
    *out = s;
    return 0;

fail_fd:
    close(s->runs_fd);
fail_buckets:
    nwb_free(s->buckets);
fail_free:
    nwb_free(s);
    return err;
}

static void lru_unlink(struct nwb__run *r)
{
    r->lru_prev->lru_next = r->lru_next;
    r->lru_next->lru_prev = r->lru_prev;
}

static void lru_push_front(struct nwb__run_store *s, struct nwb__run *r)
{
    r->lru_next = s->lru.lru_next;
    r->lru_prev = &s->lru;
    s->lru.lru_next->lru_prev = r;
    s->lru.lru_next = r;
}

static void run_free(struct nwb__run *r)
{
    if (r->log_fd >= 0) {
        close(r->log_fd);
    }
    if (r->state_fd >= 0) {
        close(r->state_fd);
    }
    nwb__thread_names_destroy(r->thread_names);
    nwb_free(r);
}

/* Take @p r out of the table and free it (its files close). */
static void run_evict(struct nwb__run_store *s, struct nwb__run *r)
{
    struct nwb__run **pp = &s->buckets[r->hash & (s->nbuckets - 1)];

    while (*pp != r) {
        pp = &(*pp)->hnext;
    }
    *pp = r->hnext;
    pthread_mutex_lock(&s->stats_mu);
    lru_unlink(r);
    s->count--;
    pthread_mutex_unlock(&s->stats_mu);
    run_free(r);
}

void nwb__run_store_close(struct nwb__run_store *s)
{
    if (s == NULL) {
        return;
    }
    while (s->lru.lru_next != &s->lru) {
        run_evict(s, s->lru.lru_next);
    }
    close(s->runs_fd);
    pthread_mutex_destroy(&s->stats_mu);
    nwb_free(s->buckets);
    nwb_free(s);
}

/* runs/<program>_<8 digits>-<6 digits>_<run> */
static int dir_matches(const char *name, const char *program, size_t plen, const char *run,
                       size_t rlen)
{
    const size_t n = strlen(name);
    const char *ts;

    if (n != plen + 1 + 15 + 1 + rlen || memcmp(name, program, plen) != 0 || name[plen] != '_' ||
        name[plen + 16] != '_' || memcmp(name + plen + 17, run, rlen) != 0) {
        return 0;
    }
    ts = name + plen + 1;
    for (int i = 0; i < 15; i++) {
        const int digit = ts[i] >= '0' && ts[i] <= '9';

        if (i == 8 ? ts[i] != '-' : !digit) {
            return 0;
        }
    }
    return 1;
}

/* Find an existing directory of (program, run); the newest when several match. */
static int find_dir(struct nwb__run_store *s, const char *program, const char *run, char *out)
{
    const size_t plen = strlen(program);
    const size_t rlen = strlen(run);
    struct dirent *e;
    int found = 0;
    int fd = dup(s->runs_fd);
    DIR *d;

    if (fd < 0) {
        return -errno;
    }
    d = fdopendir(fd);
    if (d == NULL) {
        const int err = -errno;

        close(fd);
        return err;
    }
    rewinddir(d);
    while ((e = readdir(d)) != NULL) {
        const size_t n = strlen(e->d_name);

        if (n <= DIR_NAME_MAX && dir_matches(e->d_name, program, plen, run, rlen) &&
            (!found || strcmp(e->d_name, out) > 0)) {
            memcpy(out, e->d_name, n + 1);
            found = 1;
        }
    }
    closedir(d);
    return found;
}

static void state_encode(uint8_t *b, const struct nwb__run *r, unsigned flags, uint64_t write_end)
{
    nwb_le32_store(b, STATE_MAGIC);
    nwb_le16_store(b + 4, STATE_VERSION);
    nwb_le16_store(b + 6, (uint16_t)flags);
    nwb_le64_store(b + 8, r->last_seq);
    nwb_le64_store(b + 16, r->b_seq);
    nwb_le64_store(b + 24, r->b_start);
    nwb_le64_store(b + 32, write_end);
    nwb_le64_store(b + 40, fnv1a(0xcbf29ce484222325ull, b, 40));
}

uint64_t nwb__run_state_durable_end(const uint8_t *b, size_t n, uint64_t size)
{
    unsigned flags;
    uint64_t batch_start, write_end;

    if (n != STATE_SIZE || nwb_le32_load(b) != STATE_MAGIC ||
        nwb_le16_load(b + 4) != STATE_VERSION ||
        nwb_le64_load(b + 40) != fnv1a(0xcbf29ce484222325ull, b, 40)) {
        return size; /* no state (an older run) or a damaged one: the file as it is */
    }
    flags = nwb_le16_load(b + 6);
    batch_start = nwb_le64_load(b + 24);
    write_end = nwb_le64_load(b + 32);
    if (!(flags & STATE_PENDING)) {
        return size;
    }
    if ((flags & STATE_FINAL) && size >= write_end) {
        /* The batch landed; bytes past its end belong to a later one, not yet announced. */
        return write_end;
    }
    /* A batch (or a piece of one) is being written, or was cut short: up to its start. */
    return batch_start < size ? batch_start : size;
}

/* Bring the run's memory in line with its files after a restart (or a reopen). */
static int run_recover(struct nwb__run *r)
{
    uint8_t b[STATE_SIZE];
    struct stat st;
    ssize_t n;
    unsigned flags;
    uint64_t batch_start, write_end;

    if (fstat(r->log_fd, &st) != 0) {
        return -errno;
    }
    r->size = (uint64_t)st.st_size;
    n = pread(r->state_fd, b, sizeof(b), 0);
    if (n < 0) {
        return -errno;
    }
    if (n == 0) {
        if (r->size > 0) {
            nwb__console("warning: runs/%s has no " STATE_FILE
                         ": duplicate suppression starts afresh",
                         r->dir);
        }
        return 0;
    }
    if (n != (ssize_t)sizeof(b) || nwb_le32_load(b) != STATE_MAGIC ||
        nwb_le16_load(b + 4) != STATE_VERSION ||
        nwb_le64_load(b + 40) != fnv1a(0xcbf29ce484222325ull, b, 40)) {
        nwb__console("warning: runs/%s/" STATE_FILE
                     " is damaged: duplicate suppression starts afresh",
                     r->dir);
        return 0;
    }
    flags = nwb_le16_load(b + 6);
    r->has_last = (flags & STATE_HAS_LAST) != 0;
    r->last_seq = nwb_le64_load(b + 8);
    batch_start = nwb_le64_load(b + 24);
    write_end = nwb_le64_load(b + 32);
    if (!(flags & STATE_PENDING)) {
        return 0;
    }
    if ((flags & STATE_FINAL) && r->size >= write_end) {
        /* The batch's last piece is all there: it landed. */
        if (flags & STATE_PENDING_SEQ) {
            r->has_last = 1;
            r->last_seq = nwb_le64_load(b + 16);
        }
    } else if (r->size > batch_start) {
        /* Stopped part-way through a batch (never acknowledged): remove the part. */
        if (ftruncate(r->log_fd, (off_t)batch_start) != 0) {
            return -errno;
        }
        nwb__console("runs/%s/" LOG_FILE ": removed %llu bytes of an incomplete batch", r->dir,
                     (unsigned long long)(r->size - batch_start));
        r->size = batch_start;
    }
    return 0;
}

static int open_regular(int dfd, const char *name, int flags)
{
    struct stat st;
    /* O_NONBLOCK: a FIFO planted in place of the file must not block the worker. */
    int fd = openat(dfd, name, flags | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);

    if (fd < 0) {
        return -errno;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    return fd;
}

static int run_open(struct nwb__run_store *s, const char *program, const char *run, uint64_t now_ns,
                    struct nwb__run **out)
{
    struct nwb__run *r = nwb_calloc(1, sizeof(*r));
    int dfd;
    int err;

    if (r == NULL) {
        return -ENOMEM;
    }
    r->log_fd = r->state_fd = -1;
    snprintf(r->program, sizeof(r->program), "%s", program);
    snprintf(r->run, sizeof(r->run), "%s", run);
    err = find_dir(s, program, run, r->dir);
    if (err < 0) {
        goto fail;
    }
    if (err == 0) {
        char ts[16];

        nwb_time_compact(now_ns, ts);
        snprintf(r->dir, sizeof(r->dir), "%s_%s_%s", program, ts, run);
        if (mkdirat(s->runs_fd, r->dir, 0755) != 0 && errno != EEXIST) {
            err = -errno;
            goto fail;
        }
    }
    dfd = openat(s->runs_fd, r->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        err = -errno;
        goto fail;
    }
    r->log_fd = open_regular(dfd, LOG_FILE, O_WRONLY | O_APPEND);
    r->state_fd = r->log_fd < 0 ? -1 : open_regular(dfd, STATE_FILE, O_RDWR);
    close(dfd);
    if (r->log_fd < 0 || r->state_fd < 0) {
        err = r->log_fd < 0 ? r->log_fd : r->state_fd;
        goto fail;
    }
    err = run_recover(r);
    if (err) {
        goto fail;
    }
    *out = r;
    return 0;

fail:
    run_free(r);
    return err;
}

int nwb__run_store_get(struct nwb__run_store *s, const char *program, const char *run,
                       uint64_t now_ns, struct nwb__run **out)
{
    const uint64_t h = key_hash(program, run);
    struct nwb__run **bucket = &s->buckets[h & (s->nbuckets - 1)];
    struct nwb__run *r;
    int err;

    for (r = *bucket; r != NULL; r = r->hnext) {
        if (r->hash == h && strcmp(r->program, program) == 0 && strcmp(r->run, run) == 0) {
            break;
        }
    }
    if (r != NULL && r->broken) {
        run_evict(s, r);
        r = NULL;
    }
    if (r != NULL) {
        if (s->lru.lru_next != r) {
            pthread_mutex_lock(&s->stats_mu);
            lru_unlink(r);
            lru_push_front(s, r);
            pthread_mutex_unlock(&s->stats_mu);
        }
        *out = r;
        return 0;
    }
    if (s->count >= s->max_open) {
        run_evict(s, s->lru.lru_prev);
    }
    err = run_open(s, program, run, now_ns, &r);
    if (err) {
        if (s->open_err_reported != err) {
            char ebuf[128];
            char lbuf[32];

            nwb__console("error: cannot open the run %s_*_%s under runs/: %s (%s); answering 503 "
                         "until it opens",
                         program, run, nwb_strerror_r(err, ebuf, sizeof(ebuf)),
                         nwb__err_label(err, lbuf, sizeof(lbuf)));
            s->open_err_reported = err;
        }
        return err;
    }
    s->open_err_reported = 0;
    r->hash = h;
    r->hnext = *bucket;
    *bucket = r;
    pthread_mutex_lock(&s->stats_mu);
    lru_push_front(s, r);
    s->count++;
    pthread_mutex_unlock(&s->stats_mu);
    *out = r;
    return 0;
}

int nwb__run_store_is_open(const struct nwb__run_store *s, const char *program, const char *run)
{
    const uint64_t h = key_hash(program, run);

    for (const struct nwb__run *r = s->buckets[h & (s->nbuckets - 1)]; r != NULL; r = r->hnext) {
        if (r->hash == h && strcmp(r->program, program) == 0 && strcmp(r->run, run) == 0) {
            return !r->broken;
        }
    }
    return 0;
}

int nwb__run_seq_seen(const struct nwb__run *r, int has_seq, uint64_t seq)
{
    return has_seq && r->has_last && seq <= r->last_seq;
}

void nwb__run_batch_begin(struct nwb__run *r, int has_seq, uint64_t seq)
{
    r->b_has_seq = has_seq;
    r->b_seq = has_seq ? seq : 0;
    r->b_start = r->size;
}

static void report(struct nwb__run *r, const char *what, int err)
{
    char ebuf[128];
    char lbuf[32];

    if (r->reported_err == err) {
        return;
    }
    r->reported_err = err;
    nwb__console("error: writing runs/%s/%s failed: %s (%s); answering 503 with Retry-After: 1 "
                 "until a write succeeds",
                 r->dir, what, nwb_strerror_r(err, ebuf, sizeof(ebuf)),
                 nwb__err_label(err, lbuf, sizeof(lbuf)));
}

int nwb__run_batch_append(struct nwb__run_store *s, struct nwb__run *r, const char *buf, size_t len,
                          int final)
{
    uint8_t st[STATE_SIZE];
    unsigned flags = STATE_PENDING;
    int err;

    (void)s;
    if (r->has_last) {
        flags |= STATE_HAS_LAST;
    }
    if (r->b_has_seq) {
        flags |= STATE_PENDING_SEQ;
    }
    if (final) {
        flags |= STATE_FINAL;
    }
    state_encode(st, r, flags, r->size + len);
    err = nwb_pwrite_all(r->state_fd, st, sizeof(st), 0);
    if (err) {
        report(r, STATE_FILE, err);
        nwb__run_batch_abort(r);
        return err;
    }
    err = nwb_write_all(r->log_fd, buf, len);
    if (err) {
        report(r, LOG_FILE, err);
        /* Some of it may have landed: the abort cuts log.txt back to the batch's start. */
        r->size += len;
        nwb__run_batch_abort(r);
        return err;
    }
    r->size += len;
    return 0;
}

void nwb__run_batch_abort(struct nwb__run *r)
{
    /* Nothing partial stays: cut log.txt back to where the batch began. */
    if (r->size > r->b_start && ftruncate(r->log_fd, (off_t)r->b_start) != 0) {
        char ebuf[128];

        nwb__console("error: cannot truncate runs/%s/" LOG_FILE " back to %llu bytes: %s; "
                     "it is repaired when the run is reopened",
                     r->dir, (unsigned long long)r->b_start,
                     nwb_strerror_r(-errno, ebuf, sizeof(ebuf)));
        r->broken = 1;
    }
    r->size = r->b_start;
}

void nwb__run_batch_commit(struct nwb__run *r)
{
    if (r->b_has_seq) {
        r->has_last = 1;
        r->last_seq = r->b_seq;
    }
    if (r->reported_err != 0) {
        nwb__console("runs/%s: writing works again", r->dir);
        r->reported_err = 0;
    }
}

struct nwb__thread_names *nwb__run_thread_names(struct nwb__run *r)
{
    if (r->thread_names == NULL) {
        r->thread_names = nwb__thread_names_create(); /* NULL: lines go without names */
    }
    return r->thread_names;
}

uint64_t nwb__run_log_size(const struct nwb__run *r)
{
    return r->size;
}

const char *nwb__run_dir_name(const struct nwb__run *r)
{
    return r->dir;
}

uint64_t nwb__run_last_seq(const struct nwb__run *r, int *has)
{
    *has = r->has_last;
    return r->last_seq;
}

void nwb__run_tokens_add(struct nwb__run_store *s, struct nwb__run *r, uint64_t decoded,
                         uint64_t unknown)
{
    pthread_mutex_lock(&s->stats_mu);
    r->tok_decoded += decoded;
    r->tok_unknown += unknown;
    pthread_mutex_unlock(&s->stats_mu);
}

void nwb__run_store_tokens_each(struct nwb__run_store *s, nwb__run_tokens_fn fn, void *ctx)
{
    pthread_mutex_lock(&s->stats_mu);
    for (const struct nwb__run *r = s->lru.lru_next; r != &s->lru; r = r->lru_next) {
        fn(ctx, r->program, r->run, r->tok_decoded, r->tok_unknown);
    }
    pthread_mutex_unlock(&s->stats_mu);
}
