/* SPDX-License-Identifier: MIT */
/*
 * client.c - the public client API (nwb/client.h): create (settings, mode,
 * output, worker, registration), flush, destroy in the order that loses
 * nothing and never frees what a logging thread may still touch, stats.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/deadline.h"
#include "nwb/error.h"
#include "nwb/log_line.h"

#include "client_core.h"

nwb__out_factory_fn nwb__client_test_out_factory;

static void set_msg(char *errbuf, size_t errlen, const char *msg)
{
    if (errbuf != NULL && errlen > 0) {
        snprintf(errbuf, errlen, "%s", msg);
    }
}

static void set_sys(char *errbuf, size_t errlen, const char *what, int err)
{
    char tmp[128];

    if (errbuf != NULL && errlen > 0) {
        snprintf(errbuf, errlen, "%s: %s", what, nwb_strerror_r(err, tmp, sizeof(tmp)));
    }
}

static int output_create(struct nwb_client *c, char *errbuf, size_t errlen)
{
    if (nwb__client_test_out_factory != NULL) {
        return nwb__client_test_out_factory(&c->s, &c->st, &c->out, errbuf, errlen);
    }
    if (c->s.mode == NWB_CLIENT_MODE_SERVER) {
        return nwb__http_out_create(&c->s, &c->st, &c->out, errbuf, errlen);
    }
    nwb__run_dir_format(&c->s, c->run_dir, sizeof(c->run_dir));
    return nwb__file_out_create(&c->s, &c->st, &c->out, errbuf, errlen);
}

static int sync_init(struct nwb_client *c)
{
    int rc;

    rc = pthread_mutex_init(&c->ring_lock, NULL);
    if (rc != 0) {
        return -rc;
    }
    rc = pthread_mutex_init(&c->flush_lock, NULL);
    if (rc != 0) {
        goto fail_ring_lock;
    }
    rc = nwb_cond_init_monotonic(&c->flush_cond);
    if (rc != 0) {
        goto fail_flush_lock;
    }
    return 0;

fail_flush_lock:
    pthread_mutex_destroy(&c->flush_lock);
fail_ring_lock:
    pthread_mutex_destroy(&c->ring_lock);
    return -rc;
}

static void sync_destroy(struct nwb_client *c)
{
    pthread_cond_destroy(&c->flush_cond);
    pthread_mutex_destroy(&c->flush_lock);
    pthread_mutex_destroy(&c->ring_lock);
}

int nwb_client_create(const nwb_client_config_t *cfg, nwb_client_t **out, char *errbuf,
                      size_t errlen)
{
    struct nwb_client *c;
    int explicit_server = 0;
    char ignored[256];
    uint64_t gen;
    int rc;

    if (errbuf == NULL || errlen == 0) {
        errbuf = ignored; /* the parts below always have somewhere to explain */
        errlen = sizeof(ignored);
    }
    errbuf[0] = '\0';
    if (out == NULL) {
        set_msg(errbuf, errlen, "nwb_client_create: out is NULL");
        return NWB_ECONFIG;
    }
    *out = NULL;
    rc = nwb__producer_global_init();
    if (rc != 0) {
        set_sys(errbuf, errlen, "cannot create the thread-exit key", rc);
        return rc;
    }
    rc = nwb__producer_claim(&gen);
    if (rc != 0) {
        set_msg(errbuf, errlen, "another nwb client is live in this process (destroy it first)");
        return rc;
    }
    c = nwb_calloc(1, sizeof(*c));
    if (c == NULL) {
        rc = -ENOMEM;
        set_msg(errbuf, errlen, "out of memory");
        goto fail_unclaim;
    }
    c->gen = gen;
    c->efd = -1;
    nwb__clock_init(&c->clock);
    rc = nwb__settings_resolve(cfg, &c->s, &explicit_server, errbuf, errlen);
    if (rc != 0) {
        goto fail_free;
    }
    nwb__mode_resolve(cfg, &c->s, explicit_server, &c->launched, c->launch_note,
                      sizeof(c->launch_note));
    rc = output_create(c, errbuf, errlen);
    if (rc != 0) {
        goto fail_launched;
    }
    rc = sync_init(c);
    if (rc != 0) {
        set_sys(errbuf, errlen, "cannot create the client's locks", rc);
        goto fail_out;
    }
    c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (c->efd < 0) {
        rc = -errno;
        set_sys(errbuf, errlen, "eventfd", rc);
        goto fail_sync;
    }
    rc = nwb__worker_start(c);
    if (rc != 0) {
        set_sys(errbuf, errlen, "cannot start the worker thread", rc);
        goto fail_efd;
    }
    nwb__producer_publish(c);
    (void)nwb_logger_register(nwb__producer_logger(), &c->guard);
    if (c->launch_note[0] != '\0') {
        NWB_LOGGER_ESSENTIAL_WARNING("%s", c->launch_note);
    }
    *out = c;
    return 0;

fail_efd:
    close(c->efd);
fail_sync:
    sync_destroy(c);
fail_out:
    c->out->ops->destroy(c->out);
fail_launched:
    if (c->launched.pid != 0) {
        nwb__server_stop(&c->launched);
    }
fail_free:
    nwb_free(c);
fail_unclaim:
    nwb__producer_unclaim();
    return rc;
}

int nwb_client_flush(nwb_client_t *c, unsigned timeout_ms)
{
    nwb_deadline_t deadline;
    uint64_t my;
    int rc = 0;

    if (c == NULL) {
        return 0;
    }
    deadline = nwb_deadline_in_ms(timeout_ms);
    my = atomic_fetch_add_explicit(&c->flush_req, 1u, memory_order_seq_cst) + 1u;
    nwb__worker_wake(c, 1);
    pthread_mutex_lock(&c->flush_lock);
    while (c->flush_ack < my) {
        if (nwb_cond_wait_until(&c->flush_cond, &c->flush_lock, &deadline) == ETIMEDOUT) {
            rc = c->flush_ack < my ? NWB_ETIMEOUT : 0;
            break;
        }
    }
    pthread_mutex_unlock(&c->flush_lock);
    return rc;
}

void nwb_client_destroy(nwb_client_t *c)
{
    struct nwb__ring *r;

    if (c == NULL) {
        return;
    }
    /* 1. No new calls reach the client; wait out the ones inside it. */
    (void)nwb_logger_unregister(&c->guard);
    nwb__producer_retire(c);
    /* 2. The worker drains every ring, closes the output (deadline), exits. */
    nwb__worker_stop(c);
    c->out->ops->destroy(c->out);
    /* 3. Nothing references the rings any more. */
    while ((r = c->rings) != NULL) {
        c->rings = r->next;
        nwb__ring_destroy(r);
    }
    if (c->launched.pid != 0 && !c->launched.detach) {
        nwb__server_stop(&c->launched);
    }
    close(c->efd);
    sync_destroy(c);
    nwb_free(c);
    nwb__producer_unclaim();
}

void nwb_client_stats_get(nwb_client_t *c, nwb_client_stats_t *out)
{
    uint64_t accepted;
    uint64_t dropped;

    memset(out, 0, sizeof(*out));
    if (c == NULL) {
        return;
    }
    pthread_mutex_lock(&c->ring_lock);
    accepted = c->retired_accepted;
    dropped = c->retired_dropped;
    for (struct nwb__ring *r = c->rings; r != NULL; r = r->next) {
        accepted += atomic_load_explicit(&r->accepted, memory_order_relaxed);
        dropped += atomic_load_explicit(&r->dropped, memory_order_relaxed);
    }
    pthread_mutex_unlock(&c->ring_lock);
    out->records_accepted = accepted;
    out->records_dropped = dropped + atomic_load(&c->st.records_dropped);
    out->records_written = atomic_load(&c->st.records_written);
    out->batches_sent = atomic_load(&c->st.batches_sent);
    out->batches_resent = atomic_load(&c->st.batches_resent);
    out->batches_spooled = atomic_load(&c->st.batches_spooled);
    out->batches_dropped = atomic_load(&c->st.batches_dropped);
    out->write_errors = atomic_load(&c->st.write_errors);
    out->connects = atomic_load(&c->st.connects);
}

size_t nwb__client_ring_count(nwb_client_t *c)
{
    size_t n = 0;

    pthread_mutex_lock(&c->ring_lock);
    for (struct nwb__ring *r = c->rings; r != NULL; r = r->next) {
        n++;
    }
    pthread_mutex_unlock(&c->ring_lock);
    return n;
}

void nwb_client_startup_failed(nwb_client_t *client)
{
    if (client != NULL) {
        client->launched.detach = 0; /* a failed start-up never leaves a server behind */
    }
}

int nwb_client_is_server_mode(const nwb_client_t *c)
{
    return c != NULL && c->s.mode == NWB_CLIENT_MODE_SERVER;
}

const char *nwb_client_run_id(const nwb_client_t *c)
{
    return c != NULL ? c->s.run_id : NULL;
}

const char *nwb_client_program(const nwb_client_t *c)
{
    return c != NULL ? c->s.program : NULL;
}

const char *nwb_client_server(const nwb_client_t *c)
{
    return c != NULL && c->s.mode == NWB_CLIENT_MODE_SERVER ? c->s.server : NULL;
}

void nwb_client_set_line_tap(nwb_client_t *client, nwb_client_line_tap_fn fn, void *ctx)
{
    atomic_store_explicit(&client->tap_ctx, ctx, memory_order_relaxed);
    atomic_store_explicit(&client->tap, fn, memory_order_release);
}
