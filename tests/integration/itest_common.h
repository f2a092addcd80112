/* SPDX-License-Identifier: MIT */
/*
 * itest_common.h - shared pieces of the client-to-server integration tests:
 * numbered lines ("itest-num t<T> n<N>") and the check that each landed exactly
 * once and in per-thread order; for the fault tests also client child
 * processes and /proc and /metrics readings of the server.
 */
#ifndef NWB_ITEST_COMMON_H
#define NWB_ITEST_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nwb/client.h"
#include "nwb/log.h"
#include "test_support.h"

/*
 * Scan @p text for "itest-num t<T> n<N>" and check that, for every thread
 * T < threads, the numbers 0..per_thread-1 each appear exactly once and in
 * increasing order. Returns 0, or -1 with a reason printed.
 */
static inline int itest_check_numbered(const char *text, int threads, int per_thread)
{
    static const char marker[] = "itest-num t";
    int *next = calloc((size_t)threads, sizeof(int));
    const char *line = text;
    int rc = 0;

    /* One pass over the lines: strstr over the whole rest of a large file per
     * line would be quadratic (and very slow under ASan's interceptors). */
    while (*line != '\0' && rc == 0) {
        const char *eol = strchr(line, '\n');
        const size_t len = eol != NULL ? (size_t)(eol - line) : strlen(line);
        const char *p = NULL;

        for (const char *q = line; q + sizeof(marker) - 1 <= line + len; q++) {
            if (*q == 'i' && memcmp(q, marker, sizeof(marker) - 1) == 0) {
                p = q;
                break;
            }
        }

        if (p != NULL) {
            int t = -1, n = -1;

            /* sscanf() on the rest of a large file would strlen() it per line (quadratic):
             * parse a bounded copy of the line. */
            char one[64];
            const size_t take = (size_t)(line + len - p) < sizeof(one) - 1
                                    ? (size_t)(line + len - p)
                                    : sizeof(one) - 1;

            memcpy(one, p, take);
            one[take] = '\0';
            if (sscanf(one, "itest-num t%d n%d", &t, &n) != 2 || t < 0 || t >= threads) {
                fprintf(stderr, "unparsable line: %.*s\n", (int)len, line);
                rc = -1;
            } else if (n != next[t]) {
                fprintf(stderr, "thread %d: expected n%d, found n%d (%s)\n", t, next[t], n,
                        n < next[t] ? "duplicate or reordered" : "missing");
                rc = -1;
            } else {
                next[t]++;
            }
        }
        line += len + (eol != NULL ? 1 : 0);
    }
    for (int t = 0; rc == 0 && t < threads; t++) {
        if (next[t] != per_thread) {
            fprintf(stderr, "thread %d: %d of %d lines arrived\n", t, next[t], per_thread);
            rc = -1;
        }
    }
    free(next);
    return rc;
}

/*
 * Fault tests (test_fault_*.c): client processes. A child made by
 * itest_child_spawn() creates its own client (one per process), logs
 * "itest-num t<tag> n<N>" for N in 0..count-1 (blocking, never dropping),
 * flushes for up to flush_ms (0: no flush, e.g. while the server is down),
 * destroys the client and _exit()s: 0 when nothing was dropped and the flush
 * (if any) succeeded, 10 create failed, 11 flush timed out, 12 records
 * dropped, 13 spool_ms passed with segments still in the spool (earlier runs'
 * files are delivered while this client lives), 14 count_path not written.
 * With stop_fd it logs until the parent closes that pipe (a load lasting as
 * long as the parent needs it), at most count lines, 32 lines per 1 ms. _exit(), not exit(): the
 * parent's atexit handlers (which kill the servers it started) must not run
 * in the child.
 */
struct itest_child {
    const char *program;
    const char *run_id;
    const char *log_dir;    /* the client's log dir; the spool is <log_dir>/spool */
    int port;               /* the server's port on 127.0.0.1 */
    int tag;                /* the t<tag> of the lines */
    int count;              /* lines to log */
    size_t batch_bytes;     /* 0: the default */
    unsigned flush_ms;      /* 0: destroy without a flush */
    unsigned spool_ms;      /* after the flush, wait up to this long for an empty spool (13) */
    int stop_fd;            /* > 0: log until this pipe reads EOF (count is then a cap) ... */
    int stop_wfd;           /* ... and its write end, closed in the child (> 0) */
    const char *count_path; /* non-NULL: the number of lines logged is written there */
};

/* Files in @p dir whose names end in ".spool" (0 when it cannot be read). */
static inline int itest_spool_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (d == NULL) {
        return 0;
    }
    while ((e = readdir(d)) != NULL) {
        const size_t len = strlen(e->d_name);

        if (len > 6 && strcmp(e->d_name + len - 6, ".spool") == 0) {
            n++;
        }
    }
    closedir(d);
    return n;
}

static inline void itest_child_run(const struct itest_child *c)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *client = NULL;
    nwb_client_stats_t st;
    char addr[64], err[256];
    int code = 0, logged = 0;

    snprintf(addr, sizeof(addr), "127.0.0.1:%d", c->port);
    cfg.program = c->program;
    cfg.run_id = c->run_id;
    cfg.mode = NWB_CLIENT_MODE_SERVER;
    cfg.server = addr;
    cfg.log_dir = c->log_dir;
    cfg.full_policy = NWB_CLIENT_FULL_BLOCK;
    cfg.block_timeout_us = 60u * 1000u * 1000u;
    if (c->batch_bytes != 0) {
        cfg.batch_bytes = c->batch_bytes;
    }
    if (nwb_client_create(&cfg, &client, err, sizeof(err)) != 0) {
        fprintf(stderr, "child %s: create: %s\n", c->program, err);
        _exit(10);
    }
    if (c->stop_wfd > 0) {
        close(c->stop_wfd);
    }
    for (; logged < c->count; logged++) {
        if (c->stop_fd > 0 && logged % 32 == 0) {
            struct pollfd p = {.fd = c->stop_fd, .events = POLLIN};

            /* Wait for the stop for 1 ms: also paces the load to at most ~30,000 lines/s,
             * a rate the server keeps up with, so the run stays bounded in time. */
            if (poll(&p, 1, 1) == 1) {
                break; /* the parent closed the pipe: stop */
            }
        }
        NWB_LOGGER_ESSENTIAL_INFO("itest-num t%d n%d %s", c->tag, logged,
                                  "fault-payload-0123456789");
    }
    if (c->count_path != NULL) {
        FILE *f = fopen(c->count_path, "w");

        if (f == NULL || fprintf(f, "%d\n", logged) < 0 || fclose(f) != 0) {
            _exit(14);
        }
    }
    if (c->flush_ms != 0 && nwb_client_flush(client, c->flush_ms) != 0) {
        code = 11;
    }
    if (code == 0 && c->spool_ms != 0) {
        char spool[600];
        const long long deadline = nwb_test_now_ms() + c->spool_ms;

        snprintf(spool, sizeof(spool), "%s/spool", c->log_dir);
        while (itest_spool_files(spool) != 0 && code == 0) {
            code = nwb_test_now_ms() < deadline ? 0 : 13;
            /* Delivery deletes the files; no event to wait on from here. */
            poll(NULL, 0, 10);
        }
    }
    nwb_client_stats_get(client, &st);
    if (code == 0 && st.records_dropped != 0) {
        code = 12;
    }
    fprintf(stderr,
            "child %s/%s: exit %d: accepted %llu dropped %llu written %llu sent %llu "
            "resent %llu spooled %llu connects %llu\n",
            c->program, c->run_id, code, (unsigned long long)st.records_accepted,
            (unsigned long long)st.records_dropped, (unsigned long long)st.records_written,
            (unsigned long long)st.batches_sent, (unsigned long long)st.batches_resent,
            (unsigned long long)st.batches_spooled, (unsigned long long)st.connects);
    nwb_client_destroy(client);
    _exit(code);
}

/* Fork a child running itest_child_run(@p c). Returns its pid, or -1. */
static inline pid_t itest_child_spawn(const struct itest_child *c)
{
    const pid_t pid = fork();

    if (pid == 0) {
        itest_child_run(c);
    }
    return pid;
}

/*
 * Wait up to @p timeout_ms for child @p pid; SIGKILL and reap it after that.
 * Returns its exit code, or -1 when it was killed or timed out.
 */
static inline int itest_child_wait(pid_t pid, int timeout_ms)
{
    const long long deadline = nwb_test_now_ms() + timeout_ms;
    int status = 0;

    for (;;) {
        const pid_t r = waitpid(pid, &status, WNOHANG);

        if (r == pid) {
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        }
        if (r < 0 || nwb_test_now_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            return -1;
        }
        /* A child's exit has no fd here; a short poll() slice is the wait. */
        poll(NULL, 0, 5);
    }
}

/* Read @p path and run itest_check_numbered() on it (tag 0..threads-1). Returns 0 or -1. */
static inline int itest_check_log(const char *out_dir, const char *program, const char *run,
                                  int threads, int per_thread)
{
    char path[1024];
    char *text;
    int rc;

    if (nwb_test_find_run_log(out_dir, program, run, path, sizeof(path)) != 0) {
        fprintf(stderr, "no single run directory for %s/%s under %s\n", program, run, out_dir);
        return -1;
    }
    text = nwb_test_read_file(path, NULL);
    if (text == NULL) {
        return -1;
    }
    rc = itest_check_numbered(text, threads, per_thread);
    if (rc != 0) {
        fprintf(stderr, "(in %s)\n", path);
    }
    free(text);
    return rc;
}

/* Entries of directory @p path (not "." or ".."), or -1 when it cannot be read. */
static inline int itest_dir_count(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;

    if (d == NULL) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            n++;
        }
    }
    closedir(d);
    return n;
}

/* Open descriptors of process @p pid (entries of /proc/PID/fd), or -1. */
static inline int itest_proc_fds(pid_t pid)
{
    char path[64];

    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    return itest_dir_count(path);
}

/* A "Key:  N kB" field of /proc/PID/status (VmRSS, VmHWM) in KiB, or -1. */
static inline long itest_proc_status_kib(pid_t pid, const char *key)
{
    char path[64], line[256];
    const size_t klen = strlen(key);
    long v = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            v = strtol(line + klen + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

/* One value of GET /metrics (a series without labels, or with them spelled out), or -1. */
static inline long long itest_metric(int port, const char *series)
{
    static char body[262144];
    char key[256];
    const char *p;

    if (nwb_test_http(port, "GET", "/metrics", NULL, NULL, 0, body, sizeof(body)) != 200) {
        return -1;
    }
    snprintf(key, sizeof(key), "\n%s ", series);
    p = strstr(body, key);
    return p != NULL ? strtoll(p + strlen(key), NULL, 10) : -1;
}

#endif /* NWB_ITEST_COMMON_H */
