/* SPDX-License-Identifier: MIT */
/*
 * run_index.c - the catalogue of the runs under <out>/runs behind GET /v1/runs (read_int.h):
 * built once at start by scanning, then kept current on the loop thread from what already
 * passes there (log jobs coming back, accepted telemetry uploads, the crash worker's settle
 * notices through an async handle). Each run's counters are persisted in its .nwb-counters,
 * written off the loop at most once a second per changed run, and at shutdown.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/crash_manifest.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "nwb/name.h"

#include "crash_int.h"
#include "read_int.h"
#include "server_int.h"

#define LOG_FILE       "log.txt"
#define REPORT_FILE    NWB_TEL_REPORT_FILE
#define COUNTERS_MAGIC "nwb-run-counters"
#define COUNTERS_TMP   NWB__RUN_COUNTERS_FILE ".tmp"
/* Changed runs written per timer tick; more wait for the next one. */
#define FLUSH_BATCH_MAX 1024u
#define BUCKETS_MIN     256u
#define CRASH_BUCKETS   4096u

struct entry {
    struct nwb__run_info info; /* first: an entry is handed out as its info */
    struct entry *id_next;     /* chains of the two hash tables */
    struct entry *key_next;
    uint64_t id_hash;
    uint64_t key_hash;
    int dirty;  /* counters changed since the last write */
    int loaded; /* 0: made at run time; the counters file's counts are not added in yet */
    /* the live list: runs active in this process and not yet reported ended */
    struct entry *live_next;
    struct entry *live_prev;
    int in_live;
    int ended; /* reported ended, and not active since */
};

/* A crash attributed to a run (by program and run, so it outlives the run's entry). */
struct crash_ref {
    struct crash_ref *next;
    char id[NWB_CRASH_INGEST_ID_LEN + 1];
    char program[NWB_SAFE_NAME_MAX + 1];
    char run[NWB_SAFE_NAME_MAX + 1];
};

/* A settle notice on its way from the crash worker to the loop. */
struct crash_note {
    struct crash_note *next;
    struct crash_ref ref;
};

/* One run's counters on their way to its file. */
struct flush_item {
    struct nwb__run_info snap; /* what to write (before the base is added) */
    int loaded;                /* 0: read the file's counts first and add them in */
    struct nwb__run_info base; /* the file's, when it was read */
    int base_read;
    int err;
};

struct nwb__run_index {
    uv_loop_t *loop;
    int runs_fd;
    uint64_t live_ns;
    size_t max_runs; /* NWB__RUN_INDEX_MAX (smaller in tests) */
    /* entries, oldest first by (started_ns, id) */
    struct entry **sorted;
    size_t count;
    struct entry **id_buckets;
    struct entry **key_buckets;
    size_t nbuckets; /* power of two */
    /* crashes attributed */
    struct crash_ref *crash_buckets[CRASH_BUCKETS];
    size_t crash_count;
    int crash_full_reported;
    int full_reported;
    nwb__run_change_fn watch_fn;
    void *watch_ctx;
    nwb__run_saved_fn saved_fn; /* after a run's counters file was written */
    void *saved_ctx;
    /* runs that are live, and the timer that reports each one ended (runs only while any is) */
    struct entry *live_head;
    uv_timer_t live_timer;
    /* counters persistence */
    uv_timer_t timer;
    uv_work_t work;
    int flushing; /* the work is on the pool */
    struct flush_item *batch;
    size_t batch_len;
    int write_err_reported;
    /* crash notices (notes_mu) */
    uv_async_t async;
    pthread_mutex_t notes_mu;
    int notes_mu_init;
    struct crash_note *notes;
    /* lifecycle */
    int handles_open;
    int closing;
    void (*closed)(void *ctx);
    void *closed_ctx;
};

/* ---- the two hash tables and the sorted array ---- */

static uint64_t key_hash(const char *program, const char *run)
{
    char key[2 * NWB_SAFE_NAME_MAX + 16];
    const int n = snprintf(key, sizeof(key), "%s/%s", program, run);

    return nwb_name_hash(key, n > 0 ? (size_t)n : 0);
}

/* <0, 0, >0 as @p a sorts before, with or after @p b: by started_ns, then id. */
static int entry_cmp(const struct nwb__run_info *a, const struct nwb__run_info *b)
{
    if (a->started_ns != b->started_ns) {
        return a->started_ns < b->started_ns ? -1 : 1;
    }
    return strcmp(a->id, b->id);
}

/* Where @p info is or would go in idx->sorted. */
static size_t sorted_pos(const struct nwb__run_index *idx, const struct nwb__run_info *info)
{
    size_t lo = 0, hi = idx->count;

    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;

        if (entry_cmp(&idx->sorted[mid]->info, info) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static int buckets_grow(struct nwb__run_index *idx)
{
    const size_t n = idx->nbuckets * 2;
    struct entry **ids = nwb_calloc(n, sizeof(*ids));
    struct entry **keys = nwb_calloc(n, sizeof(*keys));

    if (ids == NULL || keys == NULL) {
        nwb_free(ids);
        nwb_free(keys);
        return -ENOMEM;
    }
    for (size_t i = 0; i < idx->count; i++) {
        struct entry *e = idx->sorted[i];

        e->id_next = ids[e->id_hash & (n - 1)];
        ids[e->id_hash & (n - 1)] = e;
        e->key_next = keys[e->key_hash & (n - 1)];
        keys[e->key_hash & (n - 1)] = e;
    }
    nwb_free(idx->id_buckets);
    nwb_free(idx->key_buckets);
    idx->id_buckets = ids;
    idx->key_buckets = keys;
    idx->nbuckets = n;
    return 0;
}

static struct entry *find_id(const struct nwb__run_index *idx, const char *id, size_t len)
{
    const uint64_t h = nwb_name_hash(id, len);

    for (struct entry *e = idx->id_buckets[h & (idx->nbuckets - 1)]; e != NULL; e = e->id_next) {
        if (e->id_hash == h && strlen(e->info.id) == len && memcmp(e->info.id, id, len) == 0) {
            return e;
        }
    }
    return NULL;
}

/* The newest entry of (program, run): the one the log worker writes to (run_store.c). */
static struct entry *find_key(const struct nwb__run_index *idx, const char *program,
                              const char *run)
{
    const uint64_t h = key_hash(program, run);
    struct entry *best = NULL;

    for (struct entry *e = idx->key_buckets[h & (idx->nbuckets - 1)]; e != NULL; e = e->key_next) {
        if (e->key_hash == h && strcmp(e->info.program, program) == 0 &&
            strcmp(e->info.run, run) == 0 &&
            (best == NULL || strcmp(e->info.id, best->info.id) > 0)) {
            best = e;
        }
    }
    return best;
}

static void unlink_chain(struct entry **pp, struct entry *e, int by_id)
{
    while (*pp != e) {
        pp = by_id ? &(*pp)->id_next : &(*pp)->key_next;
    }
    *pp = by_id ? e->id_next : e->key_next;
}

static void live_unlink(struct nwb__run_index *idx, struct entry *e)
{
    if (!e->in_live) {
        return;
    }
    if (e->live_prev != NULL) {
        e->live_prev->live_next = e->live_next;
    } else {
        idx->live_head = e->live_next;
    }
    if (e->live_next != NULL) {
        e->live_next->live_prev = e->live_prev;
    }
    e->live_next = e->live_prev = NULL;
    e->in_live = 0;
}

static void entry_remove(struct nwb__run_index *idx, struct entry *e)
{
    const size_t pos = sorted_pos(idx, &e->info);

    live_unlink(idx, e);
    memmove(&idx->sorted[pos], &idx->sorted[pos + 1],
            (idx->count - pos - 1) * sizeof(idx->sorted[0]));
    idx->count--;
    unlink_chain(&idx->id_buckets[e->id_hash & (idx->nbuckets - 1)], e, 1);
    unlink_chain(&idx->key_buckets[e->key_hash & (idx->nbuckets - 1)], e, 0);
    nwb_free(e);
}

/* Crashes already attributed to (program, run): counted into a run entering the index. */
static uint64_t crashes_of(const struct nwb__run_index *idx, const char *program, const char *run)
{
    uint64_t n = 0;

    for (size_t b = 0; idx->crash_count > 0 && b < CRASH_BUCKETS; b++) {
        for (const struct crash_ref *c = idx->crash_buckets[b]; c != NULL; c = c->next) {
            n += strcmp(c->program, program) == 0 && strcmp(c->run, run) == 0;
        }
    }
    return n;
}

/* Make room at the cap: drop the least recently active run that is neither live nor dirty.
 * Returns 0, or NWB_EFULL when every run is one of those. */
static int make_room(struct nwb__run_index *idx)
{
    struct entry *victim = NULL;

    for (size_t i = 0; i < idx->count; i++) {
        struct entry *e = idx->sorted[i];

        if (!e->dirty && !nwb__run_index_live(idx, &e->info) &&
            (victim == NULL || e->info.last_activity_ns < victim->info.last_activity_ns)) {
            victim = e;
        }
    }
    if (victim == NULL) {
        return NWB_EFULL;
    }
    entry_remove(idx, victim);
    return 0;
}

/* Add a copy of @p info. Returns the entry, or NULL (out of memory, or full). */
static struct entry *entry_add(struct nwb__run_index *idx, const struct nwb__run_info *info)
{
    struct entry *e;
    size_t pos;

    if (idx->count >= idx->max_runs && make_room(idx) != 0) {
        if (!idx->full_reported) {
            nwb__console("warning: the run index holds %zu runs, none of which can be dropped; "
                         "runs/%s is not listed by GET /v1/runs (it is still answered by id)",
                         idx->max_runs, info->id);
            idx->full_reported = 1;
        }
        return NULL;
    }
    if (idx->count >= idx->nbuckets && buckets_grow(idx) != 0) {
        return NULL;
    }
    e = nwb_calloc(1, sizeof(*e));
    if (e == NULL) {
        return NULL;
    }
    e->info = *info;
    e->id_hash = nwb_name_hash(e->info.id, strlen(e->info.id));
    e->key_hash = key_hash(e->info.program, e->info.run);
    e->loaded = 1;
    pos = sorted_pos(idx, &e->info);
    memmove(&idx->sorted[pos + 1], &idx->sorted[pos], (idx->count - pos) * sizeof(idx->sorted[0]));
    idx->sorted[pos] = e;
    idx->count++;
    e->id_next = idx->id_buckets[e->id_hash & (idx->nbuckets - 1)];
    idx->id_buckets[e->id_hash & (idx->nbuckets - 1)] = e;
    e->key_next = idx->key_buckets[e->key_hash & (idx->nbuckets - 1)];
    idx->key_buckets[e->key_hash & (idx->nbuckets - 1)] = e;
    return e;
}

/* ---- the counters file ---- */

int nwb__run_counters_format(const struct nwb__run_info *r, nwb_buf_t *b)
{
    return nwb_buf_appendf(b,
                           COUNTERS_MAGIC " %u\nprogram=%s\nrun=%s\nrecords=%llu\ndrops=%llu\n"
                                          "tokens_decoded=%llu\ntokens_unknown=%llu\n"
                                          "telemetry_uploads=%llu\nlast_activity_ns=%llu\n",
                           NWB__RUN_COUNTERS_VERSION, r->program, r->run,
                           (unsigned long long)r->records, (unsigned long long)r->drops,
                           (unsigned long long)r->tok_decoded, (unsigned long long)r->tok_unknown,
                           (unsigned long long)r->tel_uploads,
                           (unsigned long long)r->last_activity_ns);
}

/* The decimal value of "key=" in the counters text; 0 when it is missing or malformed. */
static uint64_t counter_value(const char *text, size_t len, const char *key)
{
    char v[NWB_SAFE_NAME_MAX + 1];
    uint64_t x = 0;

    nwb_crash_manifest_value(text, len, key, v);
    return nwb__parse_u64(v, strlen(v), &x) == 0 ? x : 0;
}

int nwb__run_counters_parse(const char *text, size_t len, struct nwb__run_info *r)
{
    static const char magic[] = COUNTERS_MAGIC " ";
    const char *nl = memchr(text, '\n', len);
    uint64_t version = 0;
    char program[NWB_SAFE_NAME_MAX + 1], run[NWB_SAFE_NAME_MAX + 1];

    if (nl == NULL || (size_t)(nl - text) < sizeof(magic) ||
        memcmp(text, magic, sizeof(magic) - 1) != 0) {
        return NWB_EPROTO;
    }
    if (nwb__parse_u64(text + sizeof(magic) - 1, (size_t)(nl - text) - (sizeof(magic) - 1),
                       &version) != 0) {
        return NWB_EPROTO;
    }
    if (version != NWB__RUN_COUNTERS_VERSION) {
        return NWB_EVERSION;
    }
    r->records = counter_value(text, len, "records");
    r->drops = counter_value(text, len, "drops");
    r->tok_decoded = counter_value(text, len, "tokens_decoded");
    r->tok_unknown = counter_value(text, len, "tokens_unknown");
    r->tel_uploads = counter_value(text, len, "telemetry_uploads");
    r->last_activity_ns = counter_value(text, len, "last_activity_ns");
    nwb_crash_manifest_value(text, len, "program", program);
    nwb_crash_manifest_value(text, len, "run", run);
    /* Exact where the id's split is ambiguous (a program with "_<time>_" in it), but only
     * when the id is <program>_<time>_<run>. */
    if (program[0] != '\0' && run[0] != '\0' &&
        strlen(program) + 17 + strlen(run) == strlen(r->id) &&
        strncmp(r->id, program, strlen(program)) == 0 && r->id[strlen(program)] == '_' &&
        strcmp(r->id + strlen(r->id) - strlen(run), run) == 0) {
        snprintf(r->program, sizeof(r->program), "%s", program);
        snprintf(r->run, sizeof(r->run), "%s", run);
    }
    return 0;
}

static uint64_t mtime_ns(const struct stat *st)
{
    return (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec;
}

int nwb__run_info_load(int dir_fd, const char *name, struct nwb__run_info *out)
{
    struct nwb__run_name rn;
    struct nwb__run_info counters;
    struct stat st;
    uint8_t *text = NULL;
    size_t text_len = 0;
    const size_t len = strlen(name);
    int fd;

    memset(out, 0, sizeof(*out));
    if (!nwb__run_id_parse(name, len, &rn)) {
        return NWB_EPROTO;
    }
    memcpy(out->id, name, len + 1);
    memcpy(out->program, rn.program, rn.program_len);
    memcpy(out->run, rn.run, rn.run_len);
    out->started_ns = rn.started_ns;
    if (fstat(dir_fd, &st) == 0) {
        out->last_activity_ns = mtime_ns(&st);
    }
    if (fstatat(dir_fd, LOG_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
        out->log_bytes = (uint64_t)st.st_size;
        out->last_activity_ns = mtime_ns(&st);
    }
    if (fstatat(dir_fd, REPORT_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
        out->telemetry = 1;
        if (mtime_ns(&st) > out->last_activity_ns) {
            out->last_activity_ns = mtime_ns(&st);
        }
    }
    fd = openat(dir_fd, NWB__RUN_COUNTERS_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0 && nwb_file_read_fd(fd, NWB__RUN_COUNTERS_READ_MAX, &text, &text_len) == 0) {
        memcpy(&counters, out, sizeof(counters));
        if (nwb__run_counters_parse((const char *)text, text_len, &counters) == 0) {
            const uint64_t files_ns = out->last_activity_ns;

            *out = counters;
            /* The file can be up to a second behind the log (kill -9): the later time wins. */
            if (files_ns > out->last_activity_ns) {
                out->last_activity_ns = files_ns;
            }
        }
        nwb_free(text);
    }
    if (fd >= 0) {
        close(fd);
    }
    return 0;
}

/* Write @p r's counters file in its directory: a temporary file renamed over the old one. */
static int counters_write(int runs_fd, const struct nwb__run_info *r)
{
    nwb_buf_t b = NWB_BUF_INIT(NWB__RUN_COUNTERS_READ_MAX);
    const int dfd = openat(runs_fd, r->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int fd = -1;
    int err;

    if (dfd < 0) {
        return -errno;
    }
    err = nwb__run_counters_format(r, &b);
    if (err == 0) {
        fd = openat(dfd, COUNTERS_TMP, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        err = fd < 0 ? -errno : nwb_write_all(fd, b.data, b.len);
    }
    if (fd >= 0 && close(fd) != 0 && err == 0) {
        err = -errno;
    }
    if (err == 0 && renameat(dfd, COUNTERS_TMP, dfd, NWB__RUN_COUNTERS_FILE) != 0) {
        err = -errno;
    }
    close(dfd);
    nwb_buf_cleanup(&b);
    return err;
}

/* Add the file's counts (@p base) to @p r's, which counted only what this process saw. */
static void add_base(struct nwb__run_info *r, const struct nwb__run_info *base)
{
    r->records += base->records;
    r->drops += base->drops;
    r->tok_decoded += base->tok_decoded;
    r->tok_unknown += base->tok_unknown;
    r->tel_uploads += base->tel_uploads;
    r->telemetry |= base->telemetry;
    if (base->last_activity_ns > r->last_activity_ns) {
        r->last_activity_ns = base->last_activity_ns;
    }
}

/* One item, on whatever thread writes: read the base first when needed, then write. */
static void flush_item_write(int runs_fd, struct flush_item *it)
{
    struct nwb__run_info out = it->snap;

    if (!it->loaded) {
        const int dfd =
            openat(runs_fd, it->snap.id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        if (dfd >= 0) {
            it->base_read = nwb__run_info_load(dfd, it->snap.id, &it->base) == 0;
            close(dfd);
        }
        if (it->base_read) {
            add_base(&out, &it->base);
        }
    }
    it->err = counters_write(runs_fd, &out);
}

/* ---- persistence on the loop: the timer, the batch, the work ---- */

static void flush_work(uv_work_t *req)
{
    struct nwb__run_index *idx = req->data;

    for (size_t i = 0; i < idx->batch_len; i++) {
        flush_item_write(idx->runs_fd, &idx->batch[i]);
    }
}

/* Copy up to FLUSH_BATCH_MAX dirty entries into idx->batch (clearing their flag). */
static size_t batch_take(struct nwb__run_index *idx)
{
    size_t n = 0;

    for (size_t i = 0; i < idx->count && n < FLUSH_BATCH_MAX; i++) {
        struct entry *e = idx->sorted[i];

        if (e->dirty) {
            struct flush_item *it = &idx->batch[n++];

            memset(it, 0, sizeof(*it));
            it->snap = e->info;
            it->loaded = e->loaded;
            e->dirty = 0;
        }
    }
    idx->batch_len = n;
    return n;
}

/* The batch was written: merge the bases read, report a failure once. */
static void batch_apply(struct nwb__run_index *idx)
{
    for (size_t i = 0; i < idx->batch_len; i++) {
        const struct flush_item *it = &idx->batch[i];
        struct entry *e = find_id(idx, it->snap.id, strlen(it->snap.id));

        if (e != NULL && !e->loaded && !it->loaded) {
            if (it->base_read) {
                add_base(&e->info, &it->base);
            }
            e->loaded = 1;
        }
        if (it->err != 0 && it->err != -ENOENT && idx->write_err_reported != it->err) {
            char ebuf[96];

            nwb__console("warning: cannot write runs/%s/" NWB__RUN_COUNTERS_FILE
                         ": %s; its counters after a restart may be behind",
                         it->snap.id, nwb_strerror_r(it->err, ebuf, sizeof(ebuf)));
            idx->write_err_reported = it->err;
        } else if (it->err == 0) {
            idx->write_err_reported = 0;
        }
        if (it->err == 0 && idx->saved_fn != NULL) {
            idx->saved_fn(idx->saved_ctx, it->snap.id);
        }
    }
    idx->batch_len = 0;
}

static int any_dirty(const struct nwb__run_index *idx)
{
    for (size_t i = 0; i < idx->count; i++) {
        if (idx->sorted[i]->dirty) {
            return 1;
        }
    }
    return 0;
}

static void on_timer(uv_timer_t *t);

static void timer_arm(struct nwb__run_index *idx)
{
    if (!idx->closing && !idx->flushing && !uv_is_active((uv_handle_t *)&idx->timer)) {
        uv_timer_start(&idx->timer, on_timer, NWB__RUN_COUNTERS_PERIOD_MS, 0);
    }
}

static void finish_close(struct nwb__run_index *idx);

static void flush_after(uv_work_t *req, int status)
{
    struct nwb__run_index *idx = req->data;

    (void)status;
    idx->flushing = 0;
    batch_apply(idx);
    if (idx->closing) {
        finish_close(idx);
    } else if (any_dirty(idx)) {
        timer_arm(idx);
    }
}

static void on_timer(uv_timer_t *t)
{
    struct nwb__run_index *idx = t->data;

    if (idx->flushing || batch_take(idx) == 0) {
        return;
    }
    if (uv_queue_work(idx->loop, &idx->work, flush_work, flush_after) == 0) {
        idx->flushing = 1;
    } else {
        /* No pool: write here rather than lose them. */
        flush_work(&idx->work);
        flush_after(&idx->work, 0);
    }
}

/* @p e changed: its counters (@p counters: write them within a second) and @p what. */
static void changed(struct nwb__run_index *idx, struct entry *e, int counters, unsigned what)
{
    if (counters) {
        e->dirty = 1;
        timer_arm(idx);
    }
    if (what != 0 && idx->watch_fn != NULL) {
        idx->watch_fn(idx->watch_ctx, &e->info, what);
    }
}

/* ---- updates on the loop ---- */

/* The entry of runs/@p dir, made (without disk I/O: its counts are added at its first write)
 * when the index does not hold it. NULL when @p dir is not a run id or there is no room. */
static struct entry *entry_for(struct nwb__run_index *idx, const char *dir, const char *program,
                               const char *run, unsigned *what)
{
    const size_t len = strlen(dir);
    struct entry *e = find_id(idx, dir, len);
    struct nwb__run_name rn;
    struct nwb__run_info info;

    if (e != NULL || !nwb__run_id_parse(dir, len, &rn)) {
        return e;
    }
    memset(&info, 0, sizeof(info));
    memcpy(info.id, dir, len + 1);
    snprintf(info.program, sizeof(info.program), "%s", program);
    snprintf(info.run, sizeof(info.run), "%s", run);
    info.started_ns = rn.started_ns;
    info.crashes = crashes_of(idx, info.program, info.run);
    e = entry_add(idx, &info);
    if (e != NULL) {
        e->loaded = 0;
        *what |= NWB__RUN_CHANGE_NEW;
    }
    return e;
}

static void on_live_timer(uv_timer_t *t);

/* One wakeup at the earliest moment a live run can stop being live (its last activity plus
 * --run-live-s); nothing while no run is live, so an idle server has no timer running. */
static void live_timer_arm(struct nwb__run_index *idx)
{
    const uint64_t now = nwb_time_mono_ns();
    uint64_t earliest = UINT64_MAX;

    if (idx->closing || idx->live_head == NULL || uv_is_active((uv_handle_t *)&idx->live_timer)) {
        return;
    }
    for (const struct entry *e = idx->live_head; e != NULL; e = e->live_next) {
        const uint64_t at = e->info.active_mono_ns + idx->live_ns;

        earliest = at < earliest ? at : earliest;
    }
    uv_timer_start(&idx->live_timer, on_live_timer,
                   earliest > now ? (earliest - now) / 1000000u + 1 : 0, 0);
}

static void on_live_timer(uv_timer_t *t)
{
    struct nwb__run_index *idx = t->data;
    struct entry *e = idx->live_head;

    while (e != NULL) {
        struct entry *const next = e->live_next;

        if (!nwb__run_index_live(idx, &e->info)) {
            live_unlink(idx, e);
            e->ended = 1;
            if (idx->watch_fn != NULL) {
                idx->watch_fn(idx->watch_ctx, &e->info, NWB__RUN_CHANGE_ENDED);
            }
        }
        e = next;
    }
    live_timer_arm(idx); /* the next run to end, if any is still live */
}

static void activity(struct nwb__run_index *idx, struct entry *e, uint64_t wall_ns)
{
    e->info.active_mono_ns = nwb_time_mono_ns();
    if (wall_ns > e->info.last_activity_ns) {
        e->info.last_activity_ns = wall_ns;
    }
    if (!e->in_live) {
        e->live_prev = NULL;
        e->live_next = idx->live_head;
        if (idx->live_head != NULL) {
            idx->live_head->live_prev = e;
        }
        idx->live_head = e;
        e->in_live = 1;
        live_timer_arm(idx);
        if (e->ended) {
            /* Quiet long enough to be reported ended, and writing again: say so too. */
            e->ended = 0;
            if (idx->watch_fn != NULL) {
                idx->watch_fn(idx->watch_ctx, &e->info, NWB__RUN_CHANGE_RESUMED);
            }
        }
    }
}

void nwb__run_index_log_job(struct nwb__run_index *idx, const struct nwb__log_job *job)
{
    unsigned what = 0;
    struct entry *e;
    int written;

    if (idx == NULL || job->status == NWB__JOB_FAILED || job->kind == NWB__JOB_NAMES ||
        job->dir[0] == '\0') {
        return;
    }
    e = entry_for(idx, job->dir, job->program, job->run, &what);
    if (e == NULL) {
        return;
    }
    if (job->log_size != e->info.log_bytes) {
        e->info.log_bytes = job->log_size;
        what |= NWB__RUN_CHANGE_LOG;
    }
    written = job->status == NWB__JOB_WRITTEN && job->kind != NWB__JOB_RUN_DIR;
    if (written) {
        e->info.records += job->records;
        e->info.drops += job->drops;
        e->info.tok_decoded += job->tok_decoded;
        e->info.tok_unknown += job->tok_unknown;
        activity(idx, e, job->recv_time_ns);
    }
    /* A new entry is written soon too: that write adds in the counts of its file. */
    changed(idx, e, written || (what & NWB__RUN_CHANGE_NEW) != 0, what);
}

void nwb__run_index_telemetry(struct nwb__run_index *idx, const char *dir, const char *program,
                              const char *run)
{
    unsigned what = NWB__RUN_CHANGE_TELEMETRY;
    struct entry *e = idx != NULL ? entry_for(idx, dir, program, run, &what) : NULL;

    if (e == NULL) {
        return;
    }
    e->info.tel_uploads++;
    e->info.telemetry = 1;
    activity(idx, e, nwb_time_now_ns());
    changed(idx, e, 1, what);
}

/* Count crash @p ref once (moving it when a later notice names another run). */
static void crash_attribute(struct nwb__run_index *idx, const struct crash_ref *ref)
{
    const uint64_t h = nwb_name_hash(ref->id, strlen(ref->id)) & (CRASH_BUCKETS - 1);
    struct crash_ref *c;
    struct entry *e;

    for (c = idx->crash_buckets[h]; c != NULL; c = c->next) {
        if (strcmp(c->id, ref->id) == 0) {
            break;
        }
    }
    if (c != NULL) {
        if (strcmp(c->program, ref->program) == 0 && strcmp(c->run, ref->run) == 0) {
            return;
        }
        e = find_key(idx, c->program, c->run);
        if (e != NULL && e->info.crashes > 0) {
            e->info.crashes--;
        }
    } else {
        if (idx->crash_count >= NWB__RUN_INDEX_CRASHES_MAX) {
            if (!idx->crash_full_reported) {
                nwb__console("warning: the run index attributes %u crashes; later ones are not "
                             "counted in the runs' \"crashes\"",
                             NWB__RUN_INDEX_CRASHES_MAX);
                idx->crash_full_reported = 1;
            }
            return;
        }
        c = nwb_malloc(sizeof(*c));
        if (c == NULL) {
            return;
        }
        memcpy(c->id, ref->id, sizeof(c->id));
        c->next = idx->crash_buckets[h];
        idx->crash_buckets[h] = c;
        idx->crash_count++;
    }
    memcpy(c->program, ref->program, sizeof(c->program));
    memcpy(c->run, ref->run, sizeof(c->run));
    e = find_key(idx, c->program, c->run);
    if (e != NULL) {
        e->info.crashes++;
        if (idx->watch_fn != NULL) {
            idx->watch_fn(idx->watch_ctx, &e->info, NWB__RUN_CHANGE_CRASH);
        }
    }
}

static void ref_fill(struct crash_ref *ref, const struct nwb__crash_settled *s)
{
    memset(ref, 0, sizeof(*ref));
    snprintf(ref->id, sizeof(ref->id), "%s", s->id);
    nwb_safe_name(ref->program, s->program, strlen(s->program), "unknown");
    nwb_safe_name(ref->run, s->run, strlen(s->run), "unknown");
}

/* nwb__crash_ingest_each() at start: straight in (loop thread). */
static void crash_seen(void *ctx, const struct nwb__crash_settled *s)
{
    struct crash_ref ref;

    ref_fill(&ref, s);
    crash_attribute(ctx, &ref);
}

void nwb__run_index_crash_settled(void *ctx, const struct nwb__crash_settled *s)
{
    struct nwb__run_index *idx = ctx;
    struct crash_note *n;

    if (s->queued) {
        return; /* counted once settled */
    }
    n = nwb_malloc(sizeof(*n));
    if (n == NULL) {
        return; /* counted at the next start */
    }
    ref_fill(&n->ref, s);
    pthread_mutex_lock(&idx->notes_mu);
    n->next = idx->notes;
    idx->notes = n;
    pthread_mutex_unlock(&idx->notes_mu);
    uv_async_send(&idx->async);
}

/* Apply the crash notices that arrived, oldest first. */
static void notes_drain(struct nwb__run_index *idx)
{
    struct crash_note *list, *rev = NULL;

    pthread_mutex_lock(&idx->notes_mu);
    list = idx->notes;
    idx->notes = NULL;
    pthread_mutex_unlock(&idx->notes_mu);
    while (list != NULL) {
        struct crash_note *n = list;

        list = n->next;
        n->next = rev;
        rev = n;
    }
    while (rev != NULL) {
        struct crash_note *n = rev;

        rev = n->next;
        crash_attribute(idx, &n->ref);
        nwb_free(n);
    }
}

static void on_async(uv_async_t *a)
{
    notes_drain(a->data);
}

void nwb__run_index_attach_crashes(struct nwb__run_index *idx, struct nwb__crash_ingest *ci)
{
    /* The hook first: what settles during the scan is noticed twice, and counted once. */
    nwb__crash_ingest_on_settled(ci, nwb__run_index_crash_settled, idx);
    (void)nwb__crash_ingest_each(ci, crash_seen, idx);
}

void nwb__run_index_on_saved(struct nwb__run_index *idx, nwb__run_saved_fn fn, void *ctx)
{
    idx->saved_fn = fn;
    idx->saved_ctx = ctx;
}

void nwb__run_index_watch(struct nwb__run_index *idx, nwb__run_change_fn fn, void *ctx)
{
    idx->watch_fn = fn;
    idx->watch_ctx = ctx;
}

/* ---- queries ---- */

size_t nwb__run_index_count(const struct nwb__run_index *idx)
{
    return idx->count;
}

const struct nwb__run_info *nwb__run_index_newest(const struct nwb__run_index *idx, size_t i)
{
    return i < idx->count ? &idx->sorted[idx->count - 1 - i]->info : NULL;
}

const struct nwb__run_info *nwb__run_index_find(const struct nwb__run_index *idx, const char *id,
                                                size_t len)
{
    const struct entry *e = find_id(idx, id, len);

    return e != NULL ? &e->info : NULL;
}

int nwb__run_index_live(const struct nwb__run_index *idx, const struct nwb__run_info *r)
{
    return r->active_mono_ns != 0 && nwb_time_mono_ns() - r->active_mono_ns < idx->live_ns;
}

/* ---- the scan at start ---- */

struct cand {
    uint64_t started_ns;
    char name[NWB__RUN_ID_MAX + 1];
};

static int cand_less(const struct cand *a, const struct cand *b)
{
    return a->started_ns != b->started_ns ? a->started_ns < b->started_ns
                                          : strcmp(a->name, b->name) < 0;
}

/* Min-heap of the newest candidates: the oldest kept is at the top. */
static void heap_down(struct cand *h, size_t n, size_t i)
{
    for (;;) {
        size_t m = i;
        const size_t l = 2 * i + 1, r = 2 * i + 2;

        if (l < n && cand_less(&h[l], &h[m])) {
            m = l;
        }
        if (r < n && cand_less(&h[r], &h[m])) {
            m = r;
        }
        if (m == i) {
            return;
        }
        {
            const struct cand t = h[i];

            h[i] = h[m];
            h[m] = t;
        }
        i = m;
    }
}

static void heap_up(struct cand *h, size_t i)
{
    while (i > 0 && cand_less(&h[i], &h[(i - 1) / 2])) {
        const struct cand t = h[i];

        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

/* The @p max newest run directories' names. */
static int scan_names(int runs_fd, size_t max, struct cand **out, size_t *count, size_t *skipped)
{
    const int fd = dup(runs_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct cand *h = NULL;
    size_t n = 0, cap = 0;
    const struct dirent *de;

    *out = NULL;
    *count = *skipped = 0;
    if (d == NULL) {
        const int err = -errno;

        if (fd >= 0) {
            close(fd);
        }
        return err;
    }
    rewinddir(d);
    while ((de = readdir(d)) != NULL) {
        struct nwb__run_name rn;
        struct cand c;
        const size_t len = strlen(de->d_name);

        if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) {
            continue;
        }
        if (!nwb__run_id_parse(de->d_name, len, &rn)) {
            continue;
        }
        c.started_ns = rn.started_ns;
        memcpy(c.name, de->d_name, len + 1);
        if (n == max) {
            (*skipped)++;
            if (cand_less(&h[0], &c)) {
                h[0] = c;
                heap_down(h, n, 0);
            }
            continue;
        }
        if (n == cap) {
            const size_t ncap = cap == 0 ? 256 : cap * 2;
            struct cand *nh = nwb_realloc(h, ncap * sizeof(*nh));

            if (nh == NULL) {
                nwb_free(h);
                closedir(d);
                return -ENOMEM;
            }
            h = nh;
            cap = ncap;
        }
        h[n] = c;
        heap_up(h, n++);
    }
    closedir(d);
    *out = h;
    *count = n;
    return 0;
}

static int scan(struct nwb__run_index *idx)
{
    struct cand *names;
    size_t n, skipped;
    int err = scan_names(idx->runs_fd, idx->max_runs, &names, &n, &skipped);

    if (err != 0) {
        return err;
    }
    for (size_t i = 0; i < n && err == 0; i++) {
        const int dfd =
            openat(idx->runs_fd, names[i].name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct nwb__run_info info;

        if (dfd < 0) {
            continue; /* a file or a link with a run's name: not a run */
        }
        if (nwb__run_info_load(dfd, names[i].name, &info) == 0 && entry_add(idx, &info) == NULL) {
            err = -ENOMEM;
        }
        close(dfd);
    }
    nwb_free(names);
    if (skipped > 0) {
        nwb__console("note: runs/ holds %zu runs more than the run index's %zu; the oldest are "
                     "not listed by GET /v1/runs (they are still answered by id)",
                     skipped, idx->max_runs);
    }
    return err;
}

/* ---- lifecycle ---- */

int nwb__run_index_create(uv_loop_t *loop, const char *out_dir, unsigned live_s, size_t max_runs,
                          struct nwb__run_index **out, char *errbuf, size_t errlen)
{
    struct nwb__run_index *idx;
    char runs[4096];
    char ebuf[96];
    int err;

    *out = NULL;
    idx = nwb_calloc(1, sizeof(*idx));
    if (idx == NULL) {
        snprintf(errbuf, errlen, "out of memory");
        return -ENOMEM;
    }
    idx->loop = loop;
    idx->work.data = idx;
    idx->live_ns = (uint64_t)live_s * 1000000000u;
    idx->max_runs = max_runs > 0 ? max_runs : 1;
    idx->runs_fd = -1;
    idx->nbuckets = BUCKETS_MIN;
    idx->id_buckets = nwb_calloc(idx->nbuckets, sizeof(*idx->id_buckets));
    idx->key_buckets = nwb_calloc(idx->nbuckets, sizeof(*idx->key_buckets));
    idx->sorted = nwb_calloc(idx->max_runs, sizeof(*idx->sorted));
    idx->batch = nwb_calloc(FLUSH_BATCH_MAX, sizeof(*idx->batch));
    if (idx->id_buckets == NULL || idx->key_buckets == NULL || idx->sorted == NULL ||
        idx->batch == NULL) {
        snprintf(errbuf, errlen, "out of memory");
        err = -ENOMEM;
        goto fail;
    }
    snprintf(runs, sizeof(runs), "%s/runs", out_dir);
    idx->runs_fd = open(runs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (idx->runs_fd < 0) {
        err = -errno;
        snprintf(errbuf, errlen, "cannot open %s: %s", runs,
                 nwb_strerror_r(err, ebuf, sizeof(ebuf)));
        goto fail;
    }
    err = scan(idx);
    if (err != 0) {
        snprintf(errbuf, errlen, "cannot list %s: %s", runs,
                 nwb_strerror_r(err, ebuf, sizeof(ebuf)));
        goto fail;
    }
    err = -pthread_mutex_init(&idx->notes_mu, NULL);
    if (err != 0) {
        snprintf(errbuf, errlen, "pthread_mutex_init failed");
        goto fail;
    }
    idx->notes_mu_init = 1;
    /* Last: from here on only nwb__run_index_close() releases it. */
    uv_timer_init(loop, &idx->timer);
    idx->timer.data = idx;
    uv_timer_init(loop, &idx->live_timer);
    idx->live_timer.data = idx;
    uv_async_init(loop, &idx->async, on_async);
    idx->async.data = idx;
    idx->handles_open = 3;
    *out = idx;
    return 0;

fail:
    nwb__run_index_destroy(idx);
    return err;
}

static void on_handle_closed(uv_handle_t *h)
{
    struct nwb__run_index *idx = h->data;

    if (--idx->handles_open == 0 && idx->closed != NULL) {
        idx->closed(idx->closed_ctx);
    }
}

/* Everything is in: write what changed, here on the loop (the server is stopping), and close. */
static void finish_close(struct nwb__run_index *idx)
{
    notes_drain(idx);
    while (batch_take(idx) > 0) {
        flush_work(&idx->work);
        batch_apply(idx);
    }
    uv_close((uv_handle_t *)&idx->timer, on_handle_closed);
    uv_close((uv_handle_t *)&idx->live_timer, on_handle_closed);
    uv_close((uv_handle_t *)&idx->async, on_handle_closed);
}

void nwb__run_index_close(struct nwb__run_index *idx, void (*closed)(void *ctx), void *ctx)
{
    if (idx->closing) {
        return;
    }
    idx->closing = 1;
    idx->closed = closed;
    idx->closed_ctx = ctx;
    uv_timer_stop(&idx->timer);
    uv_timer_stop(&idx->live_timer);
    if (!idx->flushing) {
        finish_close(idx);
    }
}

void nwb__run_index_destroy(struct nwb__run_index *idx)
{
    if (idx == NULL) {
        return;
    }
    for (size_t i = 0; i < idx->count; i++) {
        nwb_free(idx->sorted[i]);
    }
    for (size_t b = 0; b < CRASH_BUCKETS; b++) {
        while (idx->crash_buckets[b] != NULL) {
            struct crash_ref *c = idx->crash_buckets[b];

            idx->crash_buckets[b] = c->next;
            nwb_free(c);
        }
    }
    while (idx->notes != NULL) {
        struct crash_note *n = idx->notes;

        idx->notes = n->next;
        nwb_free(n);
    }
    if (idx->notes_mu_init) {
        pthread_mutex_destroy(&idx->notes_mu);
    }
    if (idx->runs_fd >= 0) {
        close(idx->runs_fd);
    }
    nwb_free(idx->sorted);
    nwb_free(idx->id_buckets);
    nwb_free(idx->key_buckets);
    nwb_free(idx->batch);
    nwb_free(idx);
}
