/* SPDX-License-Identifier: MIT */
/*
 * test_fault_disk_full.c - the server's --out is a 4 MiB tmpfs that a filler
 * file fills up while a client process logs 20,000 numbered lines: the server
 * answers 503 + Retry-After, reports it once on stderr, keeps serving
 * /v1/health and /metrics; once the filler is deleted it resumes by itself
 * and the client delivers what was not acknowledged: every line exactly once.
 * Where mounting is not allowed, RLIMIT_FSIZE on the server injects the
 * failure instead (EFBIG), healed by raising the limit (NWB_FAULT_NO_MOUNT=1
 * forces that path).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "itest_common.h"

#define LINES 20000

static char mounted[512];
static pid_t child_pid;

static int teardown(void **state)
{
    (void)state;
    if (child_pid > 0) {
        kill(child_pid, SIGKILL);
        waitpid(child_pid, NULL, 0);
        child_pid = 0;
    }
    if (mounted[0] != '\0') {
        umount2(mounted, MNT_DETACH);
        nwb_test_rmtree(mounted);
        mounted[0] = '\0';
    }
    return 0;
}

/* Append the server's stderr to @p buf (NUL-terminated, @p *used bytes) for up to @p ms. */
static void read_stderr(struct nwb_test_server *srv, char *buf, size_t cap, size_t *used, int ms)
{
    struct pollfd p = {.fd = srv->stderr_fd, .events = POLLIN};

    if (poll(&p, 1, ms) == 1) {
        *used += nwb_test_server_stderr(srv, buf + *used, cap - *used);
    }
}

/* Occurrences of @p needle in @p text. */
static int count(const char *text, const char *needle)
{
    int n = 0;

    for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

/* A 64 KiB text/plain POST from another run (more than the space a failed batch left);
 * returns the status, *retry_after whether "Retry-After: 1" came with it. */
static int post_probe(int port, int *retry_after)
{
    static char req[70000];
    char resp[4096];
    size_t used = 0, len;
    int status = -1, fd;

    len =
        (size_t)snprintf(req, sizeof(req),
                         "POST /v1/log HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                         "X-NWB-Program: probe\r\nX-NWB-Run: probe-run\r\nX-NWB-Seq: 1\r\n"
                         "Connection: close\r\nContent-Length: 65536\r\n\r\n");
    for (int i = 0; i < 1024; i++) {
        memcpy(req + len, "probe line probe line probe line probe line probe line probe li\n", 64);
        len += 64;
    }
    *retry_after = 0;
    fd = nwb_test_connect(port);
    if (fd < 0) {
        return -1;
    }
    if (nwb_test_send_all(fd, req, len) == 0) {
        for (;;) {
            const ssize_t got = recv(fd, resp + used, sizeof(resp) - 1 - used, 0);

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

/* Fill the file system of @p dir with @p path, then free @p keep bytes of it. */
static void fill(const char *path, off_t keep)
{
    static char block[65536];
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    off_t size = 0;

    assert_true(fd >= 0);
    memset(block, 'f', sizeof(block));
    for (;;) {
        const ssize_t n = write(fd, block, sizeof(block));

        if (n <= 0) {
            assert_true(n < 0 && errno == ENOSPC);
            break;
        }
        size += n;
    }
    assert_int_equal(ftruncate(fd, size > keep ? size - keep : 0), 0);
    close(fd);
}

static void test_fault_disk_full_503_reported_once_then_everything_delivered(void **state)
{
    static char err[65536];
    struct nwb_test_server srv;
    struct itest_child child;
    struct rlimit old, lim;
    char out[512], cdir[512], filler[600];
    size_t used = 0;
    int use_tmpfs, retry_after = 0, rc;
    long long t0;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("fdisk", out, sizeof(out)), 0);
    assert_int_equal(nwb_test_tmpdir("fdiskc", cdir, sizeof(cdir)), 0);
    /* NWB_FAULT_NO_MOUNT=1 takes the fallback path on a machine that could mount. */
    errno = EPERM;
    /* The mount lives in a mount namespace of this process (and the server it starts): if the
     * test is killed (a ctest timeout), it goes away with them instead of staying mounted.
     * The propagation change names a source and type the kernel ignores: valgrind reports
     * NULL ones as unaddressable. */
    use_tmpfs = getenv("NWB_FAULT_NO_MOUNT") == NULL && unshare(CLONE_NEWNS) == 0 &&
                mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) == 0 &&
                mount("tmpfs", out, "tmpfs", 0, "size=4m,mode=0755") == 0;
    if (use_tmpfs) {
        snprintf(mounted, sizeof(mounted), "%s", out);
        assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, NULL), 0);
        snprintf(filler, sizeof(filler), "%s/filler", out);
        fill(filler, 128 * 1024);
        fprintf(stderr, "fault_disk_full: 4 MiB tmpfs at %s, filled but 128 KiB\n", out);
    } else {
        /* No CAP_SYS_ADMIN: the server inherits a 256 KiB file-size limit (EFBIG). */
        fprintf(stderr, "fault_disk_full: mount tmpfs: %s; injecting EFBIG with RLIMIT_FSIZE\n",
                getenv("NWB_FAULT_NO_MOUNT") != NULL ? "NWB_FAULT_NO_MOUNT" : strerror(errno));
        assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
        lim = old;
        lim.rlim_cur = 256 * 1024;
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
        rc = nwb_test_server_start(&srv, NULL, out, 0, NULL);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
        assert_int_equal(rc, 0);
    }

    child = (struct itest_child){.program = "diskfull",
                                 .run_id = "disk-run",
                                 .log_dir = cdir,
                                 .port = srv.port,
                                 .count = LINES,
                                 .batch_bytes = 8u * 1024u,
                                 .flush_ms = 60000u};
    child_pid = itest_child_spawn(&child);
    assert_true(child_pid > 0);

    /* The failure is reported; then the client's resends (Retry-After: 1) fail again. */
    t0 = nwb_test_now_ms();
    while (strstr(err, "error: writing runs/diskfull_") == NULL && nwb_test_now_ms() - t0 < 30000) {
        read_stderr(&srv, err, sizeof(err), &used, 100);
    }
    assert_non_null(strstr(err, "error: writing runs/diskfull_"));
    assert_non_null(strstr(err, use_tmpfs ? "(ENOSPC)" : "(EFBIG)"));
    while (itest_metric(srv.port, "nwb_write_errors_total") < 3 && nwb_test_now_ms() - t0 < 30000) {
        read_stderr(&srv, err, sizeof(err), &used, 100);
    }
    assert_true(itest_metric(srv.port, "nwb_write_errors_total") >= 3);
    fprintf(stderr, "fault_disk_full: %lld write errors after %lld ms\n",
            itest_metric(srv.port, "nwb_write_errors_total"), nwb_test_now_ms() - t0);
    if (use_tmpfs) { /* the whole file system is full: another run fails the same way */
        assert_int_equal(post_probe(srv.port, &retry_after), 503);
        assert_true(retry_after);
    } else { /* the limit is per file: another run's small log still works */
        assert_int_equal(post_probe(srv.port, &retry_after), 200);
    }
    assert_int_equal(nwb_test_http(srv.port, "GET", "/v1/health", NULL, NULL, 0, NULL, 0), 200);
    assert_true(itest_metric(srv.port, "nwb_requests_total{code=\"503\"}") >= 3 + use_tmpfs);
    read_stderr(&srv, err, sizeof(err), &used, 0);
    assert_int_equal(count(err, "error: writing runs/diskfull_"), 1); /* once, not per resend */

    /* Space comes back: nothing to do for the server; the client delivers the rest. */
    if (use_tmpfs) {
        assert_int_equal(unlink(filler), 0);
    } else {
        assert_int_equal(prlimit(srv.pid, RLIMIT_FSIZE, NULL, &lim), 0);
        lim.rlim_cur = lim.rlim_max;
        assert_int_equal(prlimit(srv.pid, RLIMIT_FSIZE, &lim, NULL), 0);
    }
    t0 = nwb_test_now_ms();
    assert_int_equal(itest_child_wait(child_pid, 90000), 0);
    child_pid = 0;
    fprintf(stderr, "fault_disk_full: client done %lld ms after space came back\n",
            nwb_test_now_ms() - t0);
    read_stderr(&srv, err, sizeof(err), &used, 0);
    assert_non_null(strstr(err, "writing works again"));
    assert_int_equal(count(err, "error: writing runs/diskfull_"), 1);
    assert_int_equal(itest_check_log(out, "diskfull", "disk-run", 1, LINES), 0);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
    if (use_tmpfs) {
        assert_int_equal(umount2(out, MNT_DETACH), 0);
        mounted[0] = '\0';
    }
    nwb_test_rmtree(out);
    nwb_test_rmtree(cdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_fault_disk_full_503_reported_once_then_everything_delivered,
                                  teardown),
    };

    return cmocka_run_group_tests_name("integration.fault_disk_full", tests, NULL, NULL);
}
