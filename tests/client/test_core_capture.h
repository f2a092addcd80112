/* SPDX-License-Identifier: MIT */
/*
 * test_core_capture.h - a capturing output for the client core's unit tests:
 * plugged in with nwb__client_test_out_factory, it keeps copies of every
 * record the worker appends, and can be "gated" (append answers NWB_EFULL)
 * to hold the worker back and fill the rings. Include once per test file.
 */
#ifndef NWB_TEST_CORE_CAPTURE_H
#define NWB_TEST_CORE_CAPTURE_H

/* The including file defines _GNU_SOURCE before its first include (syscall, strndup). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nwb/error.h"

#include "client_core.h"

struct cap_rec {
    nwb_log_record_t rec; /* file and msg point to the copies below */
    char *file;           /* NUL-terminated copies */
    char *msg;
};

struct capture {
    struct nwb__out base;
    struct nwb__stats *st;
    pthread_mutex_t mu;
    struct cap_rec *recs;
    size_t n;
    size_t cap;
    atomic_int gated;       /* 1: append answers NWB_EFULL */
    atomic_uint efull_seen; /* appends refused */
    int efd;                /* polled by the worker while gated */
    int destroyed;
};

static struct capture *g_cap;

static inline struct capture *cap_of(struct nwb__out *o)
{
    return NWB_CONTAINER_OF(o, struct capture, base);
}

static inline int cap_append(struct nwb__out *o, const nwb_log_record_t *rec)
{
    struct capture *c = cap_of(o);
    struct cap_rec *r;

    if (atomic_load(&c->gated)) {
        atomic_fetch_add(&c->efull_seen, 1u);
        return NWB_EFULL;
    }
    pthread_mutex_lock(&c->mu);
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 1024;
        c->recs = realloc(c->recs, c->cap * sizeof(*c->recs));
    }
    r = &c->recs[c->n++];
    r->rec = *rec;
    r->file = strndup(rec->file != NULL ? rec->file : "", rec->file_len);
    r->msg = malloc(rec->msg_len + 1u);
    memcpy(r->msg, rec->msg, rec->msg_len);
    r->msg[rec->msg_len] = '\0';
    r->rec.file = r->file;
    r->rec.msg = r->msg;
    pthread_mutex_unlock(&c->mu);
    atomic_fetch_add(&c->st->records_written, 1u);
    return 0;
}

static inline void cap_commit(struct nwb__out *o, uint64_t now, int force)
{
    (void)o;
    (void)now;
    (void)force;
}

static inline int cap_poll_prepare(struct nwb__out *o, short *events, int *timeout_ms)
{
    struct capture *c = cap_of(o);

    (void)timeout_ms;
    *events = POLLIN;
    return atomic_load(&c->gated) ? c->efd : -1;
}

static inline void cap_service(struct nwb__out *o, short revents, uint64_t now)
{
    struct capture *c = cap_of(o);
    uint64_t v;

    (void)now;
    if (revents & POLLIN) {
        ssize_t r = read(c->efd, &v, sizeof(v));

        (void)r;
    }
}

static inline int cap_settled(struct nwb__out *o)
{
    (void)o;
    return 1;
}

static inline void cap_close(struct nwb__out *o, uint64_t deadline)
{
    (void)o;
    (void)deadline;
}

static inline void cap_destroy(struct nwb__out *o)
{
    cap_of(o)->destroyed = 1; /* the test reads the records afterwards; cap_free() frees */
}

static const struct nwb__out_ops cap_ops = {cap_append,  cap_commit, cap_poll_prepare, cap_service,
                                            cap_settled, cap_close,  cap_destroy};

static inline int cap_factory(const struct nwb__settings *s, struct nwb__stats *st,
                              struct nwb__out **out, char *errbuf, size_t errlen)
{
    struct capture *c = calloc(1, sizeof(*c));

    (void)s;
    (void)errbuf;
    (void)errlen;
    c->base.ops = &cap_ops;
    c->st = st;
    pthread_mutex_init(&c->mu, NULL);
    c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (g_cap != NULL && g_cap->destroyed == 0) {
        abort(); /* one capture at a time */
    }
    g_cap = c;
    *out = &c->base;
    return 0;
}

static inline void cap_free(void)
{
    struct capture *c = g_cap;

    if (c == NULL) {
        return;
    }
    for (size_t i = 0; i < c->n; i++) {
        free(c->recs[i].file);
        free(c->recs[i].msg);
    }
    free(c->recs);
    close(c->efd);
    pthread_mutex_destroy(&c->mu);
    free(c);
    g_cap = NULL;
}

/* Hold the worker back (appends refused) or let it go again. */
static inline void cap_gate(int closed)
{
    const uint64_t one = 1;
    ssize_t r;

    atomic_store(&g_cap->gated, closed);
    r = write(g_cap->efd, &one, sizeof(one));
    (void)r;
}

static inline size_t cap_count(void)
{
    size_t n;

    pthread_mutex_lock(&g_cap->mu);
    n = g_cap->n;
    pthread_mutex_unlock(&g_cap->mu);
    return n;
}

/* Record @p i (valid while no worker appends, e.g. after a flush with no logging). */
static inline const struct cap_rec *cap_get(size_t i)
{
    return &g_cap->recs[i];
}

/* A client on the capturing output. */
static inline nwb_client_t *cap_client(nwb_client_config_t *cfg)
{
    nwb_client_t *client = NULL;
    char err[256] = "";

    nwb__client_test_out_factory = cap_factory;
    if (cfg->program == NULL) {
        cfg->program = "captest";
    }
    cfg->mode = NWB_CLIENT_MODE_STANDALONE;
    if (nwb_client_create(cfg, &client, err, sizeof(err)) != 0) {
        client = NULL;
    }
    nwb__client_test_out_factory = NULL;
    return client;
}

static inline uint64_t test_gettid(void)
{
    return (uint64_t)syscall(SYS_gettid);
}

/* The calling thread's name as the client reads it (PR_GET_NAME), in @p buf
 * of 16 bytes; returns its length. Lines the client writes show it as
 * tid[name]. */
static inline size_t test_thread_name(char buf[16])
{
    memset(buf, 0, 16);
    if (prctl(PR_GET_NAME, buf, 0, 0, 0) != 0) {
        buf[0] = '\0';
    }
    buf[15] = '\0';
    return strlen(buf);
}

#endif /* NWB_TEST_CORE_CAPTURE_H */
