/* SPDX-License-Identifier: MIT */
/*
 * crash_ingest.c - the crash ingest's face (crash_int.h), all of it: submit stores an upload
 * and queues it, the crash worker thread takes the queue one archive at a time, extracts it
 * (crash_extract.c) and settles it in the store (crash_store.c); the views (crash_list.c),
 * counts, pause, wait and stop. One lock guards the queue, the counters and every change in
 * the crashes/ folders.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/deadline.h"
#include "nwb/error.h"
#include "nwb/safe_name.h"

#include "crash_analysis.h"
#include "crash_frames.h"
#include "crash_ingest_int.h"

struct nwb__crash_ingest {
    struct nwb_crash_caps caps;
    struct nwb__crash_store store;
    pthread_mutex_t lock;         /* the queue, the counters, and every change in the folders */
    pthread_cond_t wake;          /* the worker waits here */
    pthread_cond_t idle;          /* wait_idle waits here (monotonic clock) */
    struct nwb__crash_job *queue; /* ring of caps.max_queue */
    unsigned q_head, q_len;
    int busy;   /* the worker holds a job */
    int paused; /* nwb__crash_ingest_pause() */
    int rescan; /* markers exist beyond what the queue could take */
    atomic_int stopping;
    pthread_t worker;
    struct nwb_crash_counts totals;   /* the *_total fields */
    nwb__crash_settled_fn settled_fn; /* nwb__crash_ingest_on_settled() */
    void *settled_ctx;
    struct nwb_crash_skip skip; /* frames grouping signatures pass over */
    /* Symbolisation re-runs (POST /v1/crashes/<id>/resymbolize, symbols uploads), a ring. */
    struct resym {
        int by_build_id;
        char key[NWB_CRASH_FRAMES_BUILD_ID_MAX + 1];
    } resym[NWB__CRASH_RESYMBOLIZE_QUEUE];
    unsigned r_head, r_len;
};

/* ---- the queue (lock held) ---- */

static int queue_has(const struct nwb__crash_ingest *ci, const char *id)
{
    for (unsigned i = 0; i < ci->q_len; i++) {
        if (strcmp(ci->queue[(ci->q_head + i) % ci->caps.max_queue].id, id) == 0) {
            return 1;
        }
    }
    return 0;
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

/* nwb__crash_store_requeue()'s taker: queue what is not queued yet, until the ring is full. */
static int requeue_take(void *arg, const struct nwb__crash_job *job)
{
    struct nwb__crash_ingest *ci = arg;

    if (queue_has(ci, job->id)) {
        return 0;
    }
    if (queue_push(ci, job) != 0) {
        ci->rescan = 1; /* the rest once the worker has drained the queue */
        return NWB_EFULL;
    }
    return 0;
}

/* ---- the worker ---- */

static void process(struct nwb__crash_ingest *ci, const struct nwb__crash_job *job)
{
    struct nwb__crash_extract_info info;
    char reason[1024];
    uint64_t len = 0;
    const int src = nwb__crash_store_raw_open(&ci->store, job, &len);
    nwb__crash_settled_fn fn;
    void *fn_ctx;
    int settled;
    int rc;

    memset(&info, 0, sizeof(info));
    if (src < 0) {
        rc = src; /* -ENOENT: gone (settled as such); anything else: retried at the next start */
        snprintf(reason, sizeof(reason), "cannot open the raw archive %s.%s: %s", job->id, job->ext,
                 strerror(-src));
    } else {
        const int dst = nwb__crash_store_stage_open(&ci->store, job->id);

        if (dst < 0) {
            rc = dst;
            snprintf(reason, sizeof(reason), "cannot create the staging folder: %s",
                     strerror(-dst));
        } else {
            rc = nwb__crash_extract(NULL, src, len, dst, &ci->caps, &ci->stopping, &info, reason,
                                    sizeof(reason));
            close(dst);
        }
        close(src);
        if (rc != 0) {
            nwb__crash_store_stage_drop(&ci->store, job->id);
        }
    }
    if (rc != 0 && rc != NWB_EARCHIVE && rc != NWB_ECLOSED && rc != -ENOENT) {
        fprintf(stderr, "nwb-logserver: crash %s kept for the next start: %s\n", job->id, reason);
    }
    pthread_mutex_lock(&ci->lock);
    nwb__crash_store_settle(&ci->store, &ci->caps, job, rc, reason, &ci->totals);
    fn = ci->settled_fn;
    fn_ctx = ci->settled_ctx;
    /* Settled only when its marker is gone (a failed move keeps it for the next start). */
    settled = (rc == 0 || rc == NWB_EARCHIVE) && !nwb__crash_store_is_queued(&ci->store, job->id);
    pthread_mutex_unlock(&ci->lock);
    if (settled && rc == 0) {
        /* Before the notice, so a viewer told of the crash finds its signature. */
        (void)nwb__crash_analyse(&ci->store, job->id, &ci->skip, &ci->caps.symbolize,
                                 &ci->stopping);
    }
    if (fn != NULL && settled) {
        const int named = rc == 0 && info.manifest.program[0] != '\0';
        const struct nwb__crash_settled s = {job->id, rc == 0,
                                             named ? info.manifest.program : job->program,
                                             named ? info.manifest.run : job->run, 0};

        fn(fn_ctx, &s);
    }
}

/* A re-run of the symbolisation: one package, or every package missing a build id. */
static void resymbolize(struct nwb__crash_ingest *ci, const struct resym *r)
{
    struct nwb__crash_entry *list;
    size_t n;

    if (!r->by_build_id) {
        (void)nwb__crash_analyse(&ci->store, r->key, &ci->skip, &ci->caps.symbolize, &ci->stopping);
        return;
    }
    if (nwb__crash_store_scan(&ci->store, NWB__CRASH_PACKAGES, &list, &n) != 0) {
        return;
    }
    for (size_t i = 0; i < n && !atomic_load(&ci->stopping); i++) {
        if (nwb__crash_frames_miss(&ci->store, list[i].id, r->key)) {
            (void)nwb__crash_analyse(&ci->store, list[i].id, &ci->skip, &ci->caps.symbolize,
                                     &ci->stopping);
        }
    }
    nwb_free(list);
}

static void *worker_main(void *arg)
{
    struct nwb__crash_ingest *ci = arg;

    pthread_mutex_lock(&ci->lock);
    /* Packages stored before the server analysed them (or whose analysis was lost). */
    ci->busy = 1;
    pthread_mutex_unlock(&ci->lock);
    nwb__crash_analyse_missing(&ci->store, &ci->skip, &ci->caps.symbolize, &ci->stopping);
    pthread_mutex_lock(&ci->lock);
    ci->busy = 0;
    for (;;) {
        struct nwb__crash_job job;

        while (((ci->q_len == 0 && ci->r_len == 0) || ci->paused) && !atomic_load(&ci->stopping)) {
            if (ci->rescan) {
                ci->rescan = 0;
                (void)nwb__crash_store_requeue(&ci->store, requeue_take, ci);
                if ((ci->q_len > 0 || ci->r_len > 0) && !ci->paused) {
                    break;
                }
            }
            pthread_cond_broadcast(&ci->idle);
            pthread_cond_wait(&ci->wake, &ci->lock);
        }
        if (atomic_load(&ci->stopping)) {
            break;
        }
        if (ci->q_len == 0) {
            /* Archives first; a re-run only when none waits. */
            const struct resym r = ci->resym[ci->r_head];

            ci->busy = 1;
            pthread_mutex_unlock(&ci->lock);
            resymbolize(ci, &r);
            pthread_mutex_lock(&ci->lock);
            ci->r_head = (ci->r_head + 1) % NWB__CRASH_RESYMBOLIZE_QUEUE;
            ci->r_len--;
            ci->busy = 0;
            continue;
        }
        job = ci->queue[ci->q_head];
        ci->busy = 1;
        pthread_mutex_unlock(&ci->lock);
        process(ci, &job);
        pthread_mutex_lock(&ci->lock);
        /* Popped only now: a submit meanwhile sees the id as queued and does not store it twice. */
        ci->q_head = (ci->q_head + 1) % ci->caps.max_queue;
        ci->q_len--;
        ci->busy = 0;
    }
    ci->busy = 0;
    pthread_cond_broadcast(&ci->idle);
    pthread_mutex_unlock(&ci->lock);
    return NULL;
}

/* ---- create and stop ---- */

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

int nwb__crash_ingest_create(const char *out_dir, const struct nwb_crash_caps *caps,
                             struct nwb__crash_ingest **out)
{
    static const struct nwb_crash_caps defaults = NWB_CRASH_CAPS_INIT;
    struct nwb__crash_ingest *ci;
    int err;

    *out = NULL;
    caps = caps != NULL ? caps : &defaults;
    err = caps_check(caps);
    if (err != 0) {
        return err;
    }
    ci = nwb_calloc(1, sizeof(*ci));
    if (ci == NULL) {
        return -ENOMEM;
    }
    ci->caps = *caps;
    nwb_crash_skip_defaults(&ci->skip);
    err = nwb__crash_store_open(&ci->store, out_dir);
    if (err != 0) {
        goto fail_free;
    }
    ci->queue = nwb_calloc(caps->max_queue, sizeof(*ci->queue));
    if (ci->queue == NULL) {
        err = -ENOMEM;
        goto fail_store;
    }
    err = -pthread_mutex_init(&ci->lock, NULL);
    if (err != 0) {
        goto fail_queue;
    }
    err = -nwb_cond_init_monotonic(&ci->wake);
    if (err != 0) {
        goto fail_mutex;
    }
    err = -nwb_cond_init_monotonic(&ci->idle);
    if (err != 0) {
        goto fail_wake;
    }
    /* No thread runs yet: the lock is not needed to fill the queue. */
    (void)nwb__crash_store_requeue(&ci->store, requeue_take, ci);
    err = -pthread_create(&ci->worker, NULL, worker_main, ci);
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
fail_store:
    nwb__crash_store_close(&ci->store);
fail_free:
    nwb_free(ci);
    return err;
}

void nwb__crash_ingest_stop(struct nwb__crash_ingest *ci)
{
    if (ci == NULL) {
        return;
    }
    pthread_mutex_lock(&ci->lock);
    atomic_store(&ci->stopping, 1);
    pthread_cond_broadcast(&ci->wake);
    pthread_cond_broadcast(&ci->idle);
    pthread_mutex_unlock(&ci->lock);
    pthread_join(ci->worker, NULL);
    nwb__crash_store_close(&ci->store);
    pthread_cond_destroy(&ci->idle);
    pthread_cond_destroy(&ci->wake);
    pthread_mutex_destroy(&ci->lock);
    nwb_free(ci->queue);
    nwb_free(ci);
}

void nwb__crash_ingest_pause(struct nwb__crash_ingest *ci, int paused)
{
    pthread_mutex_lock(&ci->lock);
    ci->paused = paused;
    pthread_cond_broadcast(&ci->wake);
    pthread_mutex_unlock(&ci->lock);
}

int nwb__crash_ingest_wait_idle(struct nwb__crash_ingest *ci, unsigned timeout_ms)
{
    const nwb_deadline_t deadline = nwb_deadline_in_ms(timeout_ms);
    int err = 0;

    pthread_mutex_lock(&ci->lock);
    while ((ci->q_len > 0 || ci->r_len > 0 || ci->busy || ci->rescan) &&
           !atomic_load(&ci->stopping)) {
        if (nwb_cond_wait_until(&ci->idle, &ci->lock, &deadline) == ETIMEDOUT) {
            err = NWB_ETIMEOUT;
            break;
        }
    }
    pthread_mutex_unlock(&ci->lock);
    return err;
}

/* ---- submit ---- */

int nwb__crash_ingest_submit(struct nwb__crash_ingest *ci, const void *body, size_t len,
                             const char *program, const char *run,
                             char id_out[NWB_CRASH_INGEST_ID_LEN + 1])
{
    struct nwb__crash_job job;
    struct timespec now;
    int err;

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
    /* A date for the listing, not a duration: the wall clock. */
    clock_gettime(CLOCK_REALTIME, &now);
    job.received_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;

    pthread_mutex_lock(&ci->lock);
    if (atomic_load(&ci->stopping)) {
        err = NWB_ECLOSED;
    } else if (nwb__crash_store_known(&ci->store, &job)) {
        ci->totals.duplicates_total++;
        memcpy(id_out, job.id, sizeof(job.id));
        err = 0;
    } else if (ci->q_len >= ci->caps.max_queue) {
        err = NWB_EFULL;
    } else {
        err = nwb__crash_store_put(&ci->store, &job, body, len);
        if (err == 0) {
            (void)queue_push(ci, &job);
            ci->totals.uploads_total++;
            memcpy(id_out, job.id, sizeof(job.id));
            if (ci->settled_fn != NULL) {
                /* With the lock held: the worker settles it (and says so) only after this. */
                const struct nwb__crash_settled s = {job.id, 0, job.program, job.run, 1};

                ci->settled_fn(ci->settled_ctx, &s);
            }
        }
    }
    pthread_mutex_unlock(&ci->lock);
    return err;
}

/* ---- symbolisation re-runs ---- */

static int resym_push(struct nwb__crash_ingest *ci, int by_build_id, const char *key)
{
    int err = 0;

    pthread_mutex_lock(&ci->lock);
    if (atomic_load(&ci->stopping)) {
        err = NWB_ECLOSED;
    }
    for (unsigned i = 0; err == 0 && i < ci->r_len; i++) {
        const struct resym *r = &ci->resym[(ci->r_head + i) % NWB__CRASH_RESYMBOLIZE_QUEUE];

        if (r->by_build_id == by_build_id && strcmp(r->key, key) == 0) {
            pthread_mutex_unlock(&ci->lock);
            return 0; /* already waiting */
        }
    }
    if (err == 0 && ci->r_len >= NWB__CRASH_RESYMBOLIZE_QUEUE) {
        err = NWB_EFULL;
    }
    if (err == 0) {
        struct resym *r = &ci->resym[(ci->r_head + ci->r_len) % NWB__CRASH_RESYMBOLIZE_QUEUE];

        r->by_build_id = by_build_id;
        snprintf(r->key, sizeof(r->key), "%s", key);
        ci->r_len++;
        pthread_cond_signal(&ci->wake);
    }
    pthread_mutex_unlock(&ci->lock);
    return err;
}

int nwb__crash_ingest_resymbolize(struct nwb__crash_ingest *ci, const char *id)
{
    struct stat sb;

    if (id == NULL || !nwb__crash_id_valid(id)) {
        return -EINVAL;
    }
    if (ci->caps.symbolize.symbolizer[0] == '\0') {
        return -ENOTSUP;
    }
    if (fstatat(ci->store.cat_fd[NWB__CRASH_PACKAGES], id, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(sb.st_mode)) {
        return -ENOENT;
    }
    if (!nwb__crash_has_capture(&ci->store, id)) {
        return -ENODATA;
    }
    return resym_push(ci, 0, id);
}

int nwb__crash_ingest_resymbolize_build_id(struct nwb__crash_ingest *ci, const char *build_id)
{
    const size_t len = build_id != NULL ? strlen(build_id) : 0;

    if (len < 2 || len > NWB_CRASH_FRAMES_BUILD_ID_MAX || len % 2 != 0 ||
        strspn(build_id, "0123456789abcdef") != len) {
        return -EINVAL;
    }
    if (ci->caps.symbolize.symbolizer[0] == '\0') {
        return -ENOTSUP;
    }
    return resym_push(ci, 1, build_id);
}

/* ---- views and counts ---- */

void nwb__crash_ingest_on_settled(struct nwb__crash_ingest *ci, nwb__crash_settled_fn fn, void *ctx)
{
    pthread_mutex_lock(&ci->lock);
    ci->settled_fn = fn;
    ci->settled_ctx = ctx;
    pthread_mutex_unlock(&ci->lock);
}

int nwb__crash_ingest_each(struct nwb__crash_ingest *ci, nwb__crash_settled_fn fn, void *ctx)
{
    return nwb__crash_list_each(&ci->store, fn, ctx);
}

int nwb__crash_ingest_each_row(struct nwb__crash_ingest *ci, nwb__crash_row_fn fn, void *ctx)
{
    return nwb__crash_list_rows(&ci->store, fn, ctx);
}

int nwb__crash_ingest_list_json(struct nwb__crash_ingest *ci, const char *group, char **json,
                                size_t *len)
{
    return nwb__crash_list_json(&ci->store, NULL, group, json, len);
}

int nwb__crash_ingest_groups_json(struct nwb__crash_ingest *ci, char **json, size_t *len)
{
    return nwb__crash_groups_json(&ci->store, json, len);
}

int nwb__crash_ingest_get_json(struct nwb__crash_ingest *ci, const char *id, char **json,
                               size_t *len)
{
    if (id == NULL) {
        *json = NULL;
        *len = 0;
        return -EINVAL;
    }
    return nwb__crash_list_json(&ci->store, id, NULL, json, len);
}

void nwb__crash_ingest_counts(struct nwb__crash_ingest *ci, struct nwb_crash_counts *out)
{
    pthread_mutex_lock(&ci->lock);
    *out = ci->totals;
    out->queued = ci->q_len;
    pthread_mutex_unlock(&ci->lock);
    out->packages = nwb__crash_store_count(&ci->store, NWB__CRASH_PACKAGES);
    out->raw = nwb__crash_store_count(&ci->store, NWB__CRASH_RAW);
    out->invalid = nwb__crash_store_count(&ci->store, NWB__CRASH_INVALID);
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
