/* SPDX-License-Identifier: MIT */
/*
 * test_write_failure.c - real write failures under the real nwb-logserver:
 * a file-size limit (RLIMIT_FSIZE: the kernel cuts the write short, then
 * fails it with EFBIG) and, where this machine lets the test mount one, a
 * full tmpfs (ENOSPC). Each must give 503 + Retry-After, one console report,
 * nothing partial in log.txt, working health/metrics, and success once the
 * limit (or space) is back.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server_test_util.h"

#define LINES 50

/* A text body of LINES numbered lines for batch @p seq. */
static size_t make_body(char *buf, size_t cap, int seq)
{
    size_t n = 0;

    for (int i = 0; i < LINES; i++) {
        n += (size_t)snprintf(buf + n, cap - n, "batch %04d line %02d padding padding\n", seq, i);
    }
    return n;
}

/* POST batch @p seq; returns the status, and whether "Retry-After: 1" came with it. */
static int post_batch(int port, int seq, int *retry_after)
{
    char body[4096];
    char head[512];
    char resp[8192];
    size_t used = 0;
    size_t blen = make_body(body, sizeof(body), seq);
    int fd = nwb_test_connect(port);
    int status = -1;
    int n;

    *retry_after = 0;
    if (fd < 0) {
        return -1;
    }
    n = snprintf(head, sizeof(head),
                 "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nX-NWB-Program: full\r\n"
                 "X-NWB-Run: disk\r\nX-NWB-Seq: %d\r\nConnection: close\r\n"
                 "Content-Length: %zu\r\n\r\n",
                 seq, blen);
    if (nwb_test_send_all(fd, head, (size_t)n) == 0 && nwb_test_send_all(fd, body, blen) == 0) {
        for (;;) {
            ssize_t got = recv(fd, resp + used, sizeof(resp) - 1 - used, 0);

            if (got <= 0) {
                break;
            }
            used += (size_t)got;
        }
        resp[used] = '\0';
        if (sscanf(resp, "HTTP/1.1 %d", &status) != 1) {
            status = -1;
        }
        *retry_after = strstr(resp, "\r\nRetry-After: 1\r\n") != NULL;
    }
    close(fd);
    return status;
}

/* Check log.txt holds exactly the lines of batches 1..acked, each once, nothing partial. */
static void check_log(const char *dir, int acked)
{
    char path[1024];
    size_t len = 0;
    char *text;

    assert_int_equal(nwb_test_find_run_log(dir, "full", "disk", path, sizeof(path)), 0);
    text = nwb_test_read_file(path, &len);
    assert_non_null(text);
    assert_int_equal(tu_count(text, "\n"), acked * LINES);
    assert_true(len == 0 || text[len - 1] == '\n');
    for (int seq = 1; seq <= acked; seq++) {
        char line[64];

        snprintf(line, sizeof(line), "batch %04d line %02d ", seq, LINES - 1);
        assert_int_equal(tu_count(text, line), 1);
    }
    free(text);
}

/*
 * Post batches until one fails; then show the failure is stable, reported
 * once, harmless; call @p heal and show the same batch then lands.
 */
static void fail_and_heal(struct nwb_test_server *srv, const char *dir, void (*heal)(void *),
                          void *heal_arg, const char *expect_msg)
{
    char err[8192];
    int acked = 0;
    int status = 200;
    int retry_after = 0;
    int failures = 0;

    while (status == 200 && acked < 1000) {
        status = post_batch(srv->port, acked + 1, &retry_after);
        if (status == 200) {
            acked++;
        }
    }
    assert_int_equal(status, 503);
    assert_true(retry_after);
    assert_true(acked >= 1);
    failures++;
    for (int i = 0; i < 3; i++) { /* the client retries; still full, still 503 */
        assert_int_equal(post_batch(srv->port, acked + 1, &retry_after), 503);
        assert_true(retry_after);
        failures++;
    }
    check_log(dir, acked);
    assert_int_equal(nwb_test_http(srv->port, "GET", "/v1/health", NULL, NULL, 0, NULL, 0), 200);
    assert_int_equal(tu_metric(srv->port, "nwb_write_errors_total"), failures);
    nwb_test_server_stderr(srv, err, sizeof(err));
    assert_int_equal(tu_count(err, "error: writing runs/full_"), 1); /* once, not per request */
    assert_non_null(strstr(err, expect_msg));
    heal(heal_arg);
    assert_int_equal(post_batch(srv->port, acked + 1, &retry_after), 200);
    check_log(dir, acked + 1);
    nwb_test_server_stderr(srv, err, sizeof(err));
    assert_non_null(strstr(err, "writing works again"));
}

static void raise_fsize(void *arg)
{
    const pid_t pid = *(const pid_t *)arg;
    struct rlimit lim;

    assert_int_equal(prlimit(pid, RLIMIT_FSIZE, NULL, &lim), 0);
    lim.rlim_cur = lim.rlim_max;
    assert_int_equal(prlimit(pid, RLIMIT_FSIZE, &lim, NULL), 0);
}

static void test_file_size_limit_gives_503_once_reported_and_heals(void **state)
{
    struct nwb_test_server srv;
    struct rlimit old, lim;
    char dir[512];
    int rc;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("wfail", dir, sizeof(dir)), 0);
    /* The server inherits a 64 KiB file-size limit; this process keeps its own. */
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 64 * 1024;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    rc = tu_start(&srv, dir, 0, NULL);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    assert_int_equal(rc, 0);
    fail_and_heal(&srv, dir, raise_fsize, &srv.pid, "File too large (EFBIG");
    assert_int_equal(tu_stop(&srv, SIGTERM, 10000), 0);
    nwb_test_rmtree(dir);
}

/* The tmpfs mounted by the current test, detached by its teardown whatever happened. */
static char mounted[512];

static int teardown(void **state)
{
    tu_reap(state);
    if (mounted[0] != '\0') {
        umount2(mounted, MNT_DETACH);
        nwb_test_rmtree(mounted);
        mounted[0] = '\0';
    }
    return 0;
}

static void grow_tmpfs(void *arg)
{
    assert_int_equal(mount("tmpfs", (const char *)arg, "tmpfs", MS_REMOUNT, "size=4m"), 0);
}

static void test_full_disk_gives_503_once_reported_and_heals(void **state)
{
    struct nwb_test_server srv;
    char dir[512];

    (void)state;
    assert_int_equal(nwb_test_tmpdir("wfull", dir, sizeof(dir)), 0);
    if (mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0755") != 0) {
        /* Needs CAP_SYS_ADMIN (e.g. an unprivileged container): the EFBIG test covers it. */
        fprintf(stderr, "mount tmpfs: %s: skipped\n", strerror(errno));
        nwb_test_rmtree(dir);
        skip();
    }
    snprintf(mounted, sizeof(mounted), "%s", dir);
    assert_int_equal(tu_start(&srv, dir, 0, NULL), 0);
    fail_and_heal(&srv, dir, grow_tmpfs, dir, "No space left on device (ENOSPC");
    assert_int_equal(tu_stop(&srv, SIGTERM, 10000), 0);
    assert_int_equal(umount2(dir, MNT_DETACH), 0);
    mounted[0] = '\0';
    nwb_test_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_file_size_limit_gives_503_once_reported_and_heals, tu_reap),
        cmocka_unit_test_teardown(test_full_disk_gives_503_once_reported_and_heals, teardown),
    };

    return cmocka_run_group_tests_name("server.write_failure", tests, NULL, NULL);
}
