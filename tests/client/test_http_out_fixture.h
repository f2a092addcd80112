/* SPDX-License-Identifier: MIT */
/*
 * test_http_out_fixture.h - shared pieces of the HTTP output tests: settings
 * for a loopback server, a pump that drives an output the way the client's
 * worker does (poll_prepare, poll, service), records and batch decoding.
 */
#ifndef NWB_TEST_HTTP_OUT_FIXTURE_H
#define NWB_TEST_HTTP_OUT_FIXTURE_H

#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nwb/log_batch.h"
#include "nwb/log_line.h"

#include "net_int.h"
#include "test_http_out_responder.h"

/* Fast retries so the tests take milliseconds, not seconds. */
static inline struct nwb__http_tuning fx_tuning(void)
{
    struct nwb__http_tuning t = {1000u, 2000u, 5u, 40u, 2000u, 3u, 50u};

    return t;
}

static inline void fx_settings(struct nwb__settings *s, int port, const char *dir,
                               const char *program, const char *run)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->program, sizeof(s->program), "%s", program);
    snprintf(s->run_id, sizeof(s->run_id), "%s", run);
    s->mode = NWB_CLIENT_MODE_SERVER;
    snprintf(s->host, sizeof(s->host), "127.0.0.1");
    snprintf(s->port, sizeof(s->port), "%d", port);
    snprintf(s->server, sizeof(s->server), "127.0.0.1:%d", port);
    snprintf(s->log_dir, sizeof(s->log_dir), "%s", dir);
    snprintf(s->spool_dir, sizeof(s->spool_dir), "%s/spool", dir);
    s->memory_bytes = 8u * 1024u * 1024u;
    s->spool_bytes = 64u * 1024u * 1024u;
    s->batch_bytes = 64u * 1024u;
    s->flush_interval_ms = 20;
    s->start_time_ns = nwb_time_now_ns();
}

/* One record "<text>" from t.c:<line>. */
static inline int fx_append(struct nwb__out *o, const char *text, uint32_t line)
{
    nwb_log_record_t r;

    memset(&r, 0, sizeof(r));
    r.time_ns = nwb_time_now_ns();
    r.thread_id = 42;
    r.line = line;
    r.level = NWB_LOG_INFO;
    r.file = "t.c";
    r.file_len = 3;
    r.msg = text;
    r.msg_len = (uint32_t)strlen(text);
    return o->ops->append(o, &r);
}

typedef int (*fx_cond_fn)(void *arg);

/* Drive @p o like the worker until @p cond holds or @p timeout_ms passes. Returns 1 or 0. */
static inline int fx_pump(struct nwb__out *o, fx_cond_fn cond, void *arg, int timeout_ms)
{
    const uint64_t deadline = nwb_time_mono_ns() + (uint64_t)timeout_ms * 1000000u;

    for (;;) {
        short events = 0;
        int timeout = -1;
        uint64_t now = nwb_time_mono_ns();
        int fd;

        o->ops->commit(o, now, 0);
        if (cond(arg)) {
            return 1;
        }
        if (now >= deadline) {
            return 0;
        }
        fd = o->ops->poll_prepare(o, &events, &timeout);
        /* The condition may depend on another thread (the responder): look again soon. */
        if (timeout < 0 || timeout > 20) {
            timeout = 20;
        }
        if (fd >= 0) {
            struct pollfd p = {fd, events, 0};

            poll(&p, 1, timeout);
            o->ops->service(o, p.revents, nwb_time_mono_ns());
        } else {
            poll(NULL, 0, timeout);
            o->ops->service(o, 0, nwb_time_mono_ns());
        }
    }
}

/* Conditions over a struct nwb__stats or an output. */
struct fx_wait {
    struct nwb__out *o;
    struct nwb__stats *st;
    struct responder *r;
    uint64_t n;
};

static inline int fx_sent_at_least(void *arg)
{
    const struct fx_wait *w = arg;

    return atomic_load(&w->st->batches_sent) >= w->n;
}

static inline int fx_settled(void *arg)
{
    const struct fx_wait *w = arg;

    return w->o->ops->settled(w->o);
}

static inline int fx_failures_at_least(void *arg)
{
    const struct fx_wait *w = arg;
    struct nwb__http_out_info info;

    nwb__http_out_info_get(w->o, &info);
    return info.connect_failures >= w->n;
}

static inline int fx_requests_at_least(void *arg)
{
    const struct fx_wait *w = arg;

    return responder_count(w->r) >= w->n;
}

static inline int fx_nothing_pending(void *arg)
{
    const struct fx_wait *w = arg;
    struct nwb__http_out_info info;

    nwb__http_out_info_get(w->o, &info);
    return info.mem_batches == 0 && info.spool_batches == 0 && info.old_files_pending == 0 &&
           w->o->ops->settled(w->o);
}

/* The messages of a batch body, joined with '\n' into @p out. Returns the record count or -1. */
static inline int fx_batch_messages(const uint8_t *body, size_t len, char *out, size_t cap)
{
    nwb_log_batch_reader_t rd;
    nwb_log_record_t rec;
    size_t used = 0;
    int n = 0;
    int rc;

    out[0] = '\0';
    if (nwb_log_batch_reader_init(&rd, body, len) != 0) {
        return -1;
    }
    while ((rc = nwb_log_batch_reader_next(&rd, &rec)) == 1) {
        const int w = snprintf(out + used, cap - used, "%s%.*s", n > 0 ? "\n" : "",
                               (int)rec.msg_len, rec.msg);

        if (w > 0 && (size_t)w < cap - used) {
            used += (size_t)w;
        }
        n++;
    }
    return rc == 0 ? n : -1;
}

/* Count files in @p dir whose names end in @p suffix, and their total size. */
static inline int fx_count_files(const char *dir, const char *suffix, long long *bytes)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;

    if (bytes != NULL) {
        *bytes = 0;
    }
    if (d == NULL) {
        return 0;
    }
    while ((de = readdir(d)) != NULL) {
        const size_t l = strlen(de->d_name);
        const size_t sl = strlen(suffix);
        char path[1200];
        struct stat st;

        if (l < sl || strcmp(de->d_name + l - sl, suffix) != 0) {
            continue;
        }
        n++;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (bytes != NULL && stat(path, &st) == 0) {
            *bytes += (long long)st.st_size;
        }
    }
    closedir(d);
    return n;
}

#endif /* NWB_TEST_HTTP_OUT_FIXTURE_H */
