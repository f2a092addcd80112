/* SPDX-License-Identifier: MIT */
/*
 * log_worker.c - the log writer thread. The loop hands it jobs (a body moved,
 * not copied, with its run identity); it formats each job's records into one
 * big buffer, decoding #tokens with its name table, and writes it to the
 * run's log.txt (one write per job, or a few for huge ones), then returns the
 * job through a completion list and uv_async_send (sends coalesce: the loop
 * drains the whole list). Two more job kinds ride the same ordered queue:
 * finding a run's directory (telemetry) and switching the name table
 * (SIGHUP) between two batches. It waits on a condition variable when there
 * is nothing to do: no polling. When it is idle the loop thread may process a
 * small log body itself (nwb__log_worker_try_inline(), the inline path of
 * flow.c): the same code, the same order, no cross-thread wake-up.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "server_int.h"

struct nwb__log_worker {
    uv_async_t async; /* completions ready */
    nwb__job_done_fn done;
    void *ctx;
    unsigned outstanding; /* loop thread only */
    pthread_t thread;
    int thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* guarded by mu */
    struct nwb__log_job *q_head, *q_tail;       /* to the worker */
    struct nwb__log_job *done_head, *done_tail; /* back to the loop */
    int stop;
    int waiting;
    /* worker thread only (and the loop after the join) */
    struct nwb__run_store *store;
    char *buf;
    struct nwb__names *names;
};

static void job_fail(struct nwb__log_job *job, int err)
{
    job->status = NWB__JOB_FAILED;
    job->err = err;
}

static void job_process(struct nwb__log_worker *w, struct nwb__log_job *job)
{
    struct nwb__run *run;
    struct nwb__rec_iter it;
    struct nwb__render rd;
    size_t len;
    int end = 0;
    int err;

    job->records = 0;
    job->drops = 0;
    job->tok_decoded = 0;
    job->tok_unknown = 0;
    job->err = 0;
    if (job->kind == NWB__JOB_NAMES) {
        struct nwb__names *old = w->names;

        w->names = job->names;
        job->names = old;
        job->status = NWB__JOB_WRITTEN;
        return;
    }
    err = nwb__run_store_get(w->store, job->program, job->run, job->recv_time_ns, &run);
    if (err) {
        job_fail(job, err);
        return;
    }
    {
        const char *dir = nwb__run_dir_name(run);

        memcpy(job->dir, dir, strlen(dir) + 1);
    }
    if (job->kind == NWB__JOB_RUN_DIR) {
        job->log_size = nwb__run_log_size(run);
        job->status = NWB__JOB_WRITTEN;
        return;
    }
    if (nwb__run_seq_seen(run, job->has_seq, job->seq)) {
        job->log_size = nwb__run_log_size(run);
        job->status = NWB__JOB_DUPLICATE;
        return;
    }
    if (job->kind == NWB__JOB_BATCH) {
        nwb__rec_iter_batch(&it, job->body, job->body_len);
    } else {
        nwb__rec_iter_text(&it, job->body, job->body_len, job->recv_time_ns);
    }
    nwb__render_init(&rd, job->program, job->program_len);
    nwb__render_set_names(&rd, w->names != NULL ? w->names->table : NULL);
    nwb__render_set_thread_names(&rd, nwb__run_thread_names(run));
    nwb__run_batch_begin(run, job->has_seq, job->seq);
    while (!end) {
        err = nwb__render_fill(&rd, &it, w->buf, NWB__RENDER_BUF_SIZE, &len, &end);
        if (err) {
            /* Validated on the loop thread, so this is a bug; keep the log whole. */
            char lbuf[32];

            nwb__console("error: a log batch failed to decode after validation (%s)",
                         nwb__err_label(err, lbuf, sizeof(lbuf)));
            nwb__run_batch_abort(run);
            job_fail(job, err);
            return;
        }
        err = nwb__run_batch_append(w->store, run, w->buf, len, end);
        if (err) {
            job_fail(job, err);
            return;
        }
    }
    nwb__run_batch_commit(run);
    job->log_size = nwb__run_log_size(run);
    job->status = NWB__JOB_WRITTEN;
    job->records = rd.records;
    job->drops = rd.drops;
    job->tok_decoded = rd.decoded;
    job->tok_unknown = rd.unknown;
    if (rd.decoded != 0 || rd.unknown != 0) {
        nwb__run_tokens_add(w->store, run, rd.decoded, rd.unknown);
    }
}

static void *worker_main(void *arg)
{
    struct nwb__log_worker *w = arg;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        struct nwb__log_job *list;

        while (w->q_head == NULL && !w->stop) {
            w->waiting = 1;
            pthread_cond_wait(&w->cv, &w->mu);
            w->waiting = 0;
        }
        if (w->q_head == NULL) {
            break; /* stopping, and everything queued is written */
        }
        list = w->q_head;
        w->q_head = w->q_tail = NULL;
        pthread_mutex_unlock(&w->mu);
        while (list != NULL) {
            struct nwb__log_job *job = list;

            list = job->next;
            job->next = NULL;
            job_process(w, job);
            pthread_mutex_lock(&w->mu);
            if (w->done_tail != NULL) {
                w->done_tail->next = job;
            } else {
                w->done_head = job;
            }
            w->done_tail = job;
            pthread_mutex_unlock(&w->mu);
            uv_async_send(&w->async);
        }
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Deliver every finished job to the loop's callback. */
static void deliver(struct nwb__log_worker *w)
{
    struct nwb__log_job *list;

    pthread_mutex_lock(&w->mu);
    list = w->done_head;
    w->done_head = w->done_tail = NULL;
    pthread_mutex_unlock(&w->mu);
    while (list != NULL) {
        struct nwb__log_job *job = list;

        list = job->next;
        job->next = NULL;
        w->outstanding--;
        w->done(w->ctx, job);
    }
}

static void on_async(uv_async_t *a)
{
    deliver(a->data);
}

static void on_async_closed(uv_handle_t *h)
{
    struct nwb__log_worker *w = h->data;

    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    nwb_free(w);
}

int nwb__log_worker_create(uv_loop_t *loop, const char *out_dir, unsigned max_open_runs,
                           struct nwb__names *names, nwb__job_done_fn done, void *ctx,
                           struct nwb__log_worker **out, char *errbuf, size_t errlen)
{
    struct nwb__log_worker *w;
    int err;

    *out = NULL;
    w = nwb_calloc(1, sizeof(*w));
    if (w == NULL) {
        snprintf(errbuf, errlen, "out of memory");
        return -ENOMEM;
    }
    w->done = done;
    w->ctx = ctx;
    w->names = names;
    w->buf = nwb_malloc(NWB__RENDER_BUF_SIZE);
    if (w->buf == NULL) {
        snprintf(errbuf, errlen, "out of memory");
        err = -ENOMEM;
        goto fail_free;
    }
    err = nwb__run_store_open(out_dir, max_open_runs, &w->store, errbuf, errlen);
    if (err) {
        goto fail_buf;
    }
    err = -pthread_mutex_init(&w->mu, NULL);
    if (err) {
        snprintf(errbuf, errlen, "pthread_mutex_init failed");
        goto fail_store;
    }
    err = -pthread_cond_init(&w->cv, NULL);
    if (err) {
        snprintf(errbuf, errlen, "pthread_cond_init failed");
        goto fail_mutex;
    }
    err = uv_async_init(loop, &w->async, on_async);
    if (err) {
        snprintf(errbuf, errlen, "uv_async_init: %s", uv_strerror(err));
        goto fail_cond;
    }
    w->async.data = w;
    err = -pthread_create(&w->thread, NULL, worker_main, w);
    if (err) {
        snprintf(errbuf, errlen, "cannot start the log worker thread");
        /* The memory now goes in the async handle's close callback. */
        nwb__run_store_close(w->store);
        nwb_free(w->buf);
        uv_close((uv_handle_t *)&w->async, on_async_closed);
        return err;
    }
    w->thread_started = 1;
    *out = w;
    return 0;

fail_cond:
    pthread_cond_destroy(&w->cv);
fail_mutex:
    pthread_mutex_destroy(&w->mu);
fail_store:
    nwb__run_store_close(w->store);
fail_buf:
    nwb_free(w->buf);
fail_free:
    nwb_free(w);
    return err;
}

void nwb__log_worker_submit(struct nwb__log_worker *w, struct nwb__log_job *job)
{
    int wake;

    job->next = NULL;
    w->outstanding++;
    pthread_mutex_lock(&w->mu);
    if (w->q_tail != NULL) {
        w->q_tail->next = job;
    } else {
        w->q_head = job;
    }
    w->q_tail = job;
    wake = w->waiting;
    pthread_mutex_unlock(&w->mu);
    if (wake) {
        pthread_cond_signal(&w->cv);
    }
}

int nwb__log_worker_try_inline(struct nwb__log_worker *w, struct nwb__log_job *job)
{
    /* With nothing outstanding the thread holds no job: everything it did to the store, the
     * buffer and the names happened before deliver() took mu, and our work happens before the
     * next submit does. */
    if (w->outstanding != 0 || (job->kind != NWB__JOB_BATCH && job->kind != NWB__JOB_TEXT) ||
        !nwb__run_store_is_open(w->store, job->program, job->run)) {
        return 0;
    }
    job->next = NULL;
    job_process(w, job);
    w->done(w->ctx, job);
    return 1;
}

unsigned nwb__log_worker_outstanding(const struct nwb__log_worker *w)
{
    return w->outstanding;
}

void nwb__log_worker_stop(struct nwb__log_worker *w)
{
    if (w == NULL) {
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_mutex_unlock(&w->mu);
    pthread_cond_signal(&w->cv);
    if (w->thread_started) {
        pthread_join(w->thread, NULL);
        w->thread_started = 0;
    }
    /* The thread wrote everything queued; hand the last completions back now. */
    deliver(w);
    nwb__run_store_close(w->store);
    w->store = NULL;
    nwb_free(w->buf);
    w->buf = NULL;
    uv_close((uv_handle_t *)&w->async, on_async_closed);
}

struct nwb__run_store *nwb__log_worker_store(struct nwb__log_worker *w)
{
    return w->store;
}
