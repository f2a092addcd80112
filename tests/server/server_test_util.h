/* SPDX-License-Identifier: MIT */
/*
 * server_test_util.h - helpers shared by the nwb-logserver tests: building
 * binary log batches, POSTing to /v1/log with run identity headers, reading
 * one /metrics value, counting substrings, running the binary to its exit
 * (tu_run_exe). Header-only (static inline).
 */
#ifndef NWB_SERVER_TEST_UTIL_H
#define NWB_SERVER_TEST_UTIL_H

#include <signal.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nwb/log_batch.h"
#include "test_support.h"

/*
 * Servers a test started and has not stopped yet, by pid. tu_reap() is a
 * cmocka teardown: a failed assertion jumps out of the test, and the teardown
 * still kills what it left running.
 */
#define TU_LIVE_MAX 8

static inline pid_t *tu_live(void)
{
    static pid_t pids[TU_LIVE_MAX];

    return pids;
}

static inline void tu_live_set(pid_t old, pid_t now)
{
    pid_t *pids = tu_live();

    for (int i = 0; i < TU_LIVE_MAX; i++) {
        if (pids[i] == old) {
            pids[i] = now;
            return;
        }
    }
}

/* nwb_test_server_start() of the binary under test, remembered for tu_reap(). */
static inline int tu_start(struct nwb_test_server *srv, const char *out_dir, int port,
                           const char *const *extra)
{
    int rc = nwb_test_server_start(srv, NWB_TEST_SERVER_EXE, out_dir, port, extra);

    if (rc == 0) {
        tu_live_set(0, srv->pid);
    }
    return rc;
}

/* nwb_test_server_stop(), forgetting the server first. */
static inline int tu_stop(struct nwb_test_server *srv, int sig, int timeout_ms)
{
    tu_live_set(srv->pid, 0);
    return nwb_test_server_stop(srv, sig, timeout_ms);
}

static inline int tu_reap(void **state)
{
    pid_t *pids = tu_live();

    (void)state;
    for (int i = 0; i < TU_LIVE_MAX; i++) {
        if (pids[i] > 0) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
            pids[i] = 0;
        }
    }
    return 0;
}

/* A batch of @p n records "msgs[i]" (file "game.c", line 10+i, thread 4242). Returns its size. */
static inline size_t tu_batch_build(uint8_t *buf, size_t cap, const char *const *msgs, int n,
                                    uint8_t flags)
{
    size_t off = NWB_LOG_BATCH_HEADER_SIZE;

    nwb_log_batch_header_write(buf);
    for (int i = 0; i < n; i++) {
        nwb_log_record_t rec;

        memset(&rec, 0, sizeof(rec));
        rec.time_ns = 1764576000123456789ull + (uint64_t)i;
        rec.thread_id = 4242;
        rec.line = (uint32_t)(10 + i);
        rec.level = 1;
        rec.flags = flags;
        rec.file = "game.c";
        rec.file_len = 6;
        rec.msg = msgs[i];
        rec.msg_len = (uint32_t)strlen(msgs[i]);
        if (off + nwb_log_record_wire_size(rec.file_len, rec.msg_len) > cap) {
            return 0;
        }
        off += nwb_log_record_encode(buf + off, &rec);
    }
    nwb_log_batch_header_finish(buf, (uint32_t)n, (uint32_t)(off - NWB_LOG_BATCH_HEADER_SIZE));
    return off;
}

/* POST /v1/log on a fresh connection; @p seq < 0 sends no X-NWB-Seq. Returns the status. */
static inline int tu_post(int port, const char *ctype, const char *program, const char *run,
                          long long seq, const void *body, size_t len, char *resp, size_t cap)
{
    char headers[1024];
    int n = snprintf(headers, sizeof(headers), "Content-Type: %s\r\n", ctype);

    if (program != NULL) {
        n += snprintf(headers + n, sizeof(headers) - (size_t)n, "X-NWB-Program: %s\r\n", program);
    }
    if (run != NULL) {
        n += snprintf(headers + n, sizeof(headers) - (size_t)n, "X-NWB-Run: %s\r\n", run);
    }
    if (seq >= 0) {
        snprintf(headers + n, sizeof(headers) - (size_t)n, "X-NWB-Seq: %lld\r\n", seq);
    }
    return nwb_test_http(port, "POST", "/v1/log", headers, body, len, resp, cap);
}

/* One POST /v1/log on the keep-alive @p fd: the head (@p head, ending in the blank line), the
 * body, then the answer. 1 when it was 200, 0 otherwise (or on a socket error). */
static inline int tu_post_on(int fd, const char *head, size_t head_len, const void *body,
                             size_t len)
{
    int status = 0;

    return nwb_test_send_all(fd, head, head_len) == 0 && nwb_test_send_all(fd, body, len) == 0 &&
           nwb_test_read_response(fd, &status, NULL, 0) >= 0 && status == 200;
}

/* The value of the first /metrics sample line starting with @p name (with labels), or -1. */
static inline long long tu_metric(int port, const char *name)
{
    static char body[65536];
    const size_t nlen = strlen(name);
    const char *p;

    if (nwb_test_http(port, "GET", "/metrics", NULL, NULL, 0, body, sizeof(body)) != 200) {
        return -1;
    }
    for (p = body; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p != NULL ? p + 1 : NULL) {
        if (strncmp(p, name, nlen) == 0 && p[nlen] == ' ') {
            return strtoll(p + nlen + 1, NULL, 10);
        }
    }
    return -1;
}

/* Occurrences of @p needle in @p hay (NULL hay: 0). Linear scan: the sanitizers' strstr
 * measures the whole haystack on every call, which is quadratic on big logs. */
static inline int tu_count(const char *hay, const char *needle)
{
    const size_t len = strlen(needle);
    const char *end;
    int n = 0;

    if (hay == NULL || len == 0) {
        return 0;
    }
    end = hay + strlen(hay);
    while ((size_t)(end - hay) >= len) {
        const char *hit = memchr(hay, needle[0], (size_t)(end - hay) - len + 1);

        if (hit == NULL) {
            break;
        }
        if (memcmp(hit, needle, len) == 0) {
            n++;
            hay = hit + len;
        } else {
            hay = hit + 1;
        }
    }
    return n;
}

/* The run's log.txt as a malloc'd string (NULL when there is no single run dir). */
static inline char *tu_run_log(const char *out_dir, const char *program, const char *run)
{
    char path[1024];

    if (nwb_test_find_run_log(out_dir, program, run, path, sizeof(path)) != 0) {
        return NULL;
    }
    return nwb_test_read_file(path, NULL);
}

#ifdef NWB_TEST_SERVER_EXE
struct tu_result {
    int status; /* exit code, or -1 */
    char out[8192];
    char err[8192];
};

/* Run nwb-logserver with @p args (NULL-terminated) to its exit (10 s at most): exit code and
 * output. */
static inline void tu_run_exe(struct tu_result *res, const char *const *args)
{
    const char *argv[32];
    int outp[2], errp[2];
    size_t olen = 0, elen = 0;
    int argc = 0;
    int status;
    long long deadline = nwb_test_now_ms() + 10000;
    pid_t pid;

    memset(res, 0, sizeof(*res));
    res->status = -1;
    argv[argc++] = NWB_TEST_SERVER_EXE;
    while (*args != NULL && argc < 31) {
        argv[argc++] = *args++;
    }
    argv[argc] = NULL;
    assert_int_equal(pipe(outp), 0);
    assert_int_equal(pipe(errp), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(outp[1], STDOUT_FILENO);
        dup2(errp[1], STDERR_FILENO);
        execv(argv[0], (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    close(outp[1]);
    close(errp[1]);
    for (int open_fds = 2; open_fds > 0 && nwb_test_now_ms() < deadline;) {
        struct pollfd p[2] = {{outp[0], POLLIN, 0}, {errp[0], POLLIN, 0}};

        if (poll(p, 2, 1000) <= 0) {
            continue;
        }
        for (int i = 0; i < 2; i++) {
            char *buf = i == 0 ? res->out : res->err;
            size_t *len = i == 0 ? &olen : &elen;
            ssize_t n;

            if (p[i].revents == 0 || p[i].fd < 0) {
                continue;
            }
            n = read(p[i].fd, buf + *len, sizeof(res->out) - 1 - *len);
            if (n <= 0) {
                close(i == 0 ? outp[0] : errp[0]);
                if (i == 0) {
                    outp[0] = -1;
                } else {
                    errp[0] = -1;
                }
                open_fds--;
            } else {
                *len += (size_t)n;
            }
        }
    }
    if (outp[0] >= 0) {
        close(outp[0]);
        kill(pid, SIGKILL);
    }
    if (errp[0] >= 0) {
        close(errp[0]);
        kill(pid, SIGKILL);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    res->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#define TU_RUN(res, ...)                                                                           \
    do {                                                                                           \
        const char *const args_[] = {__VA_ARGS__, NULL};                                           \
        tu_run_exe(res, args_);                                                                    \
    } while (0)
#endif /* NWB_TEST_SERVER_EXE */

#endif /* NWB_SERVER_TEST_UTIL_H */
