/* SPDX-License-Identifier: MIT */
/*
 * tel_uploader.c - the uploader: a sink whose submit() only queues (bounded, never blocks the
 * frame thread) and a worker thread that compresses each upload into one independent zstd frame
 * and hands it to a deliver function; plus the file deliverer for standalone runs.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "nwb/alloc.h"
#include "nwb/deadline.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "nwb/telemetry.h"

struct item {
    struct item *next;
    uint8_t *data;
    size_t len;
    uint64_t seq;
};

struct nwb_tel_uploader {
    nwb_tel_uploader_config_t cfg;
    nwb_tel_sink_t sink;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* worker: work or stop */
    pthread_cond_t idle; /* flush(): the queue drained (CLOCK_MONOTONIC: a timed wait) */
    struct item *head, *tail;
    unsigned queued;
    size_t queued_bytes;
    int busy; /* the worker holds an item outside the queue */
    int stop;
    nwb_tel_uploader_stats_t stats;
};

static int submit(void *ctx, nwb_tel_upload_t *up)
{
    nwb_tel_uploader_t *u = ctx;
    struct item *it;
    int err = 0;

    /* Allocated before the lock so the critical section stays a few stores. */
    it = nwb_malloc(sizeof(*it));
    if (it == NULL) {
        pthread_mutex_lock(&u->lock);
        u->stats.refused++;
        pthread_mutex_unlock(&u->lock);
        return -ENOMEM;
    }
    it->next = NULL;
    it->data = up->data;
    it->len = up->len;
    it->seq = up->seq;
    pthread_mutex_lock(&u->lock);
    if (u->stop || u->queued >= u->cfg.queue_max ||
        u->queued_bytes + up->len > u->cfg.queue_max_bytes) {
        u->stats.refused++;
        err = u->stop ? NWB_ECLOSED : NWB_EFULL;
    } else {
        if (u->tail != NULL) {
            u->tail->next = it;
        } else {
            u->head = it;
        }
        u->tail = it;
        u->queued++;
        u->queued_bytes += up->len;
        u->stats.submitted++;
        u->stats.raw_bytes += up->len;
        pthread_cond_signal(&u->wake);
    }
    pthread_mutex_unlock(&u->lock);
    if (err != 0) {
        nwb_free(it);
    }
    return err;
}

static void *worker(void *arg)
{
    nwb_tel_uploader_t *u = arg;
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    uint8_t *zbuf = NULL;
    size_t zcap = 0;

    if (cctx != NULL) {
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, u->cfg.zstd_level);
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    }
    pthread_mutex_lock(&u->lock);
    for (;;) {
        struct item *it;
        int err;

        while (u->head == NULL && !u->stop) {
            pthread_cond_wait(&u->wake, &u->lock);
        }
        if (u->head == NULL) {
            break; /* stopping and drained */
        }
        it = u->head;
        u->head = it->next;
        if (u->head == NULL) {
            u->tail = NULL;
        }
        u->busy = 1;
        pthread_mutex_unlock(&u->lock);

        if (u->cfg.compress) {
            const size_t bound = ZSTD_compressBound(it->len);
            size_t n;

            err = 0;
            if (cctx == NULL) {
                err = -ENOMEM;
            } else if (bound > zcap) {
                uint8_t *p = nwb_realloc(zbuf, bound);

                if (p == NULL) {
                    err = -ENOMEM;
                } else {
                    zbuf = p;
                    zcap = bound;
                }
            }
            if (err == 0) {
                /* compress2 makes one complete, independent frame per call. */
                n = ZSTD_compress2(cctx, zbuf, zcap, it->data, it->len);
                err = ZSTD_isError(n) ? NWB_ECOMPRESS
                                      : u->cfg.deliver(u->cfg.ctx, zbuf, n, "zstd", it->seq);
                if (err == 0) {
                    pthread_mutex_lock(&u->lock);
                    u->stats.sent_bytes += n;
                    pthread_mutex_unlock(&u->lock);
                }
            }
        } else {
            err = u->cfg.deliver(u->cfg.ctx, it->data, it->len, NULL, it->seq);
            if (err == 0) {
                pthread_mutex_lock(&u->lock);
                u->stats.sent_bytes += it->len;
                pthread_mutex_unlock(&u->lock);
            }
        }
        pthread_mutex_lock(&u->lock);
        if (err == 0) {
            u->stats.delivered++;
        } else {
            u->stats.failed++;
        }
        u->queued--;
        u->queued_bytes -= it->len;
        u->busy = 0;
        if (u->queued == 0) {
            pthread_cond_broadcast(&u->idle);
        }
        pthread_mutex_unlock(&u->lock);
        nwb_free(it->data);
        nwb_free(it);
        pthread_mutex_lock(&u->lock);
    }
    pthread_cond_broadcast(&u->idle);
    pthread_mutex_unlock(&u->lock);
    ZSTD_freeCCtx(cctx);
    nwb_free(zbuf);
    return NULL;
}

int nwb_tel_uploader_create(const nwb_tel_uploader_config_t *cfg, nwb_tel_uploader_t **out)
{
    nwb_tel_uploader_t *u;
    int err;

    *out = NULL;
    if (cfg == NULL || cfg->deliver == NULL || cfg->queue_max == 0 || cfg->queue_max_bytes == 0) {
        return NWB_ECONFIG;
    }
    u = nwb_calloc(1, sizeof(*u));
    if (u == NULL) {
        return -ENOMEM;
    }
    u->cfg = *cfg;
    u->sink.submit = submit;
    u->sink.ctx = u;
    err = pthread_mutex_init(&u->lock, NULL);
    if (err != 0) {
        goto fail_free;
    }
    err = pthread_cond_init(&u->wake, NULL);
    if (err != 0) {
        goto fail_lock;
    }
    err = nwb_cond_init_monotonic(&u->idle);
    if (err != 0) {
        goto fail_wake;
    }
    err = pthread_create(&u->thread, NULL, worker, u);
    if (err != 0) {
        goto fail_idle;
    }
    /* Its own name in crash stacks and profilers, not its creator's (often "main"). */
    (void)pthread_setname_np(u->thread, "nwb-tel-upload");
    *out = u;
    return 0;

fail_idle:
    pthread_cond_destroy(&u->idle);
fail_wake:
    pthread_cond_destroy(&u->wake);
fail_lock:
    pthread_mutex_destroy(&u->lock);
fail_free:
    nwb_free(u);
    return -err;
}

const nwb_tel_sink_t *nwb_tel_uploader_sink(nwb_tel_uploader_t *u)
{
    return &u->sink;
}

int nwb_tel_uploader_flush(nwb_tel_uploader_t *u, unsigned timeout_ms)
{
    const nwb_deadline_t deadline = nwb_deadline_in_ms(timeout_ms);
    int err = 0;

    pthread_mutex_lock(&u->lock);
    while (u->queued > 0 && err == 0) {
        if (nwb_cond_wait_until(&u->idle, &u->lock, &deadline) == ETIMEDOUT) {
            err = u->queued > 0 ? NWB_ETIMEOUT : 0;
        }
    }
    pthread_mutex_unlock(&u->lock);
    return err;
}

void nwb_tel_uploader_destroy(nwb_tel_uploader_t *u)
{
    if (u == NULL) {
        return;
    }
    pthread_mutex_lock(&u->lock);
    u->stop = 1;
    pthread_cond_signal(&u->wake);
    pthread_mutex_unlock(&u->lock);
    pthread_join(u->thread, NULL);
    pthread_cond_destroy(&u->idle);
    pthread_cond_destroy(&u->wake);
    pthread_mutex_destroy(&u->lock);
    nwb_free(u);
}

void nwb_tel_uploader_stats_get(nwb_tel_uploader_t *u, nwb_tel_uploader_stats_t *out)
{
    pthread_mutex_lock(&u->lock);
    *out = u->stats;
    pthread_mutex_unlock(&u->lock);
}

int nwb_tel_deliver_file(void *ctx, const uint8_t *body, size_t len, const char *content_encoding,
                         uint64_t seq)
{
    const char *path = ctx;
    int fd;
    int err;

    (void)seq;
    if (content_encoding != NULL) {
        return NWB_ECONFIG; /* the file holds the raw stream: configure compress = 0 */
    }
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return -errno;
    }
    err = nwb_write_all(fd, body, len);
    if (close(fd) != 0 && err == 0) {
        err = -errno;
    }
    return err;
}
