/* SPDX-License-Identifier: MIT */
/*
 * test_file_io.c - the shared file helpers (nwb/file_io.h) at their edges: write all of a
 * buffer (to a pipe, a full device, a closed pipe), pwrite at an offset, read a whole file
 * under a cap (exactly at it, one byte over, empty, a FIFO, a directory, missing), and
 * mkdir -p (nested, existing, a file in the way, too long, the mode asked for).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "test_support.h"

/* One directory for the whole file; each test uses names of its own in it. */
static char dir[512];

static int group_setup(void **state)
{
    (void)state;
    return nwb_test_tmpdir("file-io", dir, sizeof(dir));
}

static int group_teardown(void **state)
{
    (void)state;
    nwb_test_rmtree(dir);
    return 0;
}

/* @p name inside the test directory. */
static const char *in_dir(const char *name, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, name);
    return path;
}

/* What a failed read must overwrite with NULL. */
static uint8_t sentinel[1];

/* nwb_file_read(@p path, @p max) fails with @p want, leaving nothing allocated. */
static void expect_read_fails(const char *path, size_t max, int want)
{
    uint8_t *got = sentinel;
    size_t len = 99;

    assert_int_equal(nwb_file_read(path, max, &got, &len), want);
    assert_null(got);
    assert_int_equal(len, 0);
}

/* ---- write ---- */

struct drain {
    int fd;
    uint8_t *got;
    size_t cap;
    size_t len;
};

static void *drain_main(void *arg)
{
    struct drain *d = arg;

    for (;;) {
        const ssize_t n = read(d->fd, d->got + d->len, d->cap - d->len);

        if (n <= 0) {
            break;
        }
        d->len += (size_t)n;
    }
    return NULL;
}

static void test_write_all_to_a_pipe_delivers_every_byte(void **state)
{
    const size_t n = 1u << 20; /* sixteen times a pipe's buffer */
    uint8_t *data = malloc(n);
    struct drain d;
    pthread_t t;
    int p[2];

    (void)state;
    assert_non_null(data);
    for (size_t i = 0; i < n; i++) {
        data[i] = (uint8_t)(i * 31u + i / 251u);
    }
    assert_int_equal(pipe(p), 0);
    d.fd = p[0];
    d.cap = n + 1;
    d.len = 0;
    d.got = malloc(d.cap);
    assert_non_null(d.got);
    assert_int_equal(pthread_create(&t, NULL, drain_main, &d), 0);
    assert_int_equal(nwb_write_all(p[1], data, n), 0);
    close(p[1]);
    assert_int_equal(pthread_join(t, NULL), 0);
    close(p[0]);
    assert_int_equal(d.len, n);
    assert_memory_equal(d.got, data, n);
    free(d.got);
    free(data);
}

static void test_write_all_reports_the_errno(void **state)
{
    int p[2];
    struct sigaction ign, old;
    const int full = open("/dev/full", O_WRONLY | O_CLOEXEC);

    (void)state;
    /* Nothing to write: nothing is called, whatever the descriptor. */
    assert_int_equal(nwb_write_all(-1, "x", 0), 0);
    assert_int_equal(nwb_write_all(-1, "x", 1), -EBADF);
    if (full >= 0) {
        assert_int_equal(nwb_write_all(full, "x", 1), -ENOSPC);
        close(full);
    }
    /* A pipe nobody reads any more: EPIPE (with SIGPIPE ignored, as a game or server does). */
    memset(&ign, 0, sizeof(ign));
    ign.sa_handler = SIG_IGN;
    assert_int_equal(sigaction(SIGPIPE, &ign, &old), 0);
    assert_int_equal(pipe(p), 0);
    close(p[0]);
    assert_int_equal(nwb_write_all(p[1], "abc", 3), -EPIPE);
    close(p[1]);
    assert_int_equal(sigaction(SIGPIPE, &old, NULL), 0);
}

static void test_pwrite_all_writes_at_the_offset_and_keeps_the_file_offset(void **state)
{
    char path[600];
    uint8_t *got;
    size_t len = 0;
    const int fd =
        open(in_dir("pw", path, sizeof(path)), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(nwb_write_all(fd, "0123456789", 10), 0);
    assert_int_equal(nwb_pwrite_all(fd, "ab", 2, 3), 0);
    assert_int_equal(nwb_pwrite_all(fd, "XYZ", 3, 12), 0); /* past the end: a hole */
    assert_int_equal(lseek(fd, 0, SEEK_CUR), 10);
    assert_int_equal(nwb_pwrite_all(-1, "x", 1, 0), -EBADF);
    close(fd);
    assert_int_equal(nwb_file_read(path, 100, &got, &len), 0);
    assert_int_equal(len, 15);
    assert_memory_equal(got, "012ab56789\0\0XYZ", 15);
    nwb_free(got);
}

/* ---- read ---- */

/* Create @p name in the test directory with @p n bytes A..Z repeated; its path to @p path. */
static const char *make_file(const char *name, size_t n, char *path, size_t cap)
{
    char *data = malloc(n + 1);

    assert_non_null(data);
    for (size_t i = 0; i < n; i++) {
        data[i] = (char)('A' + i % 26);
    }
    assert_int_equal(nwb_test_write_file(in_dir(name, path, cap), data, n, 0600), 0);
    free(data);
    return path;
}

/* nwb_file_read(@p path, @p max) succeeds with @p want_len bytes and a NUL after them. */
static uint8_t *expect_read(const char *path, size_t max, size_t want_len)
{
    uint8_t *got = NULL;
    size_t len = 99;

    assert_int_equal(nwb_file_read(path, max, &got, &len), 0);
    assert_non_null(got);
    assert_int_equal(len, want_len);
    assert_int_equal(got[len], '\0');
    return got;
}

static void test_file_read_at_the_cap_and_one_byte_over(void **state)
{
    char path[600];
    uint8_t *got;

    (void)state;
    make_file("capped", 4096, path, sizeof(path));
    got = expect_read(path, 4096, 4096);
    assert_int_equal(got[0], 'A');
    assert_int_equal(got[4095], 'A' + 4095 % 26);
    nwb_free(got);
    expect_read_fails(path, 4095, NWB_ETOOBIG);
    expect_read_fails(path, 0, NWB_ETOOBIG);
}

static void test_file_read_empty_file_is_an_empty_string(void **state)
{
    char path[600];

    (void)state;
    make_file("empty", 0, path, sizeof(path));
    nwb_free(expect_read(path, 0, 0));
}

static void test_file_read_fifo_is_enotreg_without_hanging(void **state)
{
    char path[600];
    const long long t0 = nwb_test_now_ms();

    (void)state;
    assert_int_equal(mkfifo(in_dir("fifo", path, sizeof(path)), 0600), 0);
    /* No writer ever opens it: a blocking open would wait for ever (ctest's timeout). */
    expect_read_fails(path, 1024, NWB_ENOTREG);
    assert_true(nwb_test_now_ms() - t0 < 5000);
}

static void test_file_read_directory_device_and_missing(void **state)
{
    char path[600];

    (void)state;
    expect_read_fails(dir, 1024, NWB_ENOTREG);
    expect_read_fails("/dev/null", 1024, NWB_ENOTREG);
    expect_read_fails(in_dir("missing", path, sizeof(path)), 1024, -ENOENT);
    expect_read_fails(in_dir("missing/below", path, sizeof(path)), 1024, -ENOENT);
}

static void test_file_read_sizeless_proc_file_reads_as_empty(void **state)
{
    (void)state;
    /* The documented limit: the size comes from fstat, and /proc reports none. */
    nwb_free(expect_read("/proc/self/status", 1u << 20, 0));
}

static void test_file_read_at_is_relative_to_the_directory_and_follows_symlinks(void **state)
{
    char path[600];
    uint8_t *got = NULL;
    size_t len = 0;
    const int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    (void)state;
    assert_true(dirfd >= 0);
    make_file("rel", 8, path, sizeof(path));
    assert_int_equal(nwb_file_read_at(dirfd, "rel", 64, &got, &len), 0);
    assert_int_equal(len, 8);
    assert_string_equal((const char *)got, "ABCDEFGH");
    nwb_free(got);
    assert_int_equal(symlink("rel", in_dir("link", path, sizeof(path))), 0);
    assert_int_equal(nwb_file_read_at(dirfd, "link", 64, &got, &len), 0);
    assert_string_equal((const char *)got, "ABCDEFGH");
    nwb_free(got);
    close(dirfd);
}

static void test_file_read_allocation_failure_is_enomem(void **state)
{
    char path[600];

    (void)state;
    make_file("alloc", 100, path, sizeof(path));
    nwb_alloc_fail_after(0);
    expect_read_fails(path, 1024, -ENOMEM);
    nwb_alloc_fail_after(-1);
}

/* ---- mkdir -p ---- */

/* The permission bits of directory @p name in the test directory. */
static mode_t mode_of(const char *name)
{
    char path[600];
    struct stat st;

    assert_int_equal(stat(in_dir(name, path, sizeof(path)), &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    return st.st_mode & 07777;
}

static int mkdir_p_in(const char *name, mode_t mode)
{
    char path[600];

    return nwb_mkdir_p(in_dir(name, path, sizeof(path)), mode);
}

static void test_mkdir_p_creates_nested_with_the_mode_asked_for(void **state)
{
    const mode_t old = umask(022);

    (void)state;
    assert_int_equal(mkdir_p_in("a/b/c", 0700), 0);
    assert_int_equal(mode_of("a/b/c"), 0700);
    assert_int_equal(mode_of("a"), 0700); /* every created parent too */
    assert_int_equal(mkdir_p_in("x/y/", 0755), 0);
    assert_int_equal(mode_of("x/y"), 0755);
    /* Existing: fine, and the mode of what exists is left alone. */
    assert_int_equal(mkdir_p_in("a/b/c", 0755), 0);
    assert_int_equal(mode_of("a/b/c"), 0700);
    assert_int_equal(nwb_mkdir_p("/", 0755), 0);
    /* Doubled slashes. */
    assert_int_equal(mkdir_p_in("/d//e", 0700), 0);
    assert_int_equal(mode_of("d/e"), 0700);
    umask(old);
}

static void test_mkdir_p_file_in_the_way_is_enotdir(void **state)
{
    char path[600];

    (void)state;
    make_file("plain", 3, path, sizeof(path));
    /* The path itself is a file. */
    assert_int_equal(mkdir_p_in("plain", 0700), -ENOTDIR);
    /* A file where a parent should be. */
    assert_int_equal(mkdir_p_in("plain/sub/deeper", 0700), -ENOTDIR);
}

static void test_mkdir_p_empty_too_long_and_denied(void **state)
{
    char *longp = malloc(PATH_MAX + 2);
    char path[600];

    (void)state;
    assert_non_null(longp);
    assert_int_equal(nwb_mkdir_p("", 0700), -ENOENT);
    /* PATH_MAX characters (no room for the NUL) and more. */
    memset(longp, 'a', PATH_MAX);
    longp[0] = '/';
    longp[PATH_MAX] = '\0';
    assert_int_equal(nwb_mkdir_p(longp, 0700), -ENAMETOOLONG);
    longp[PATH_MAX] = 'a';
    longp[PATH_MAX + 1] = '\0';
    assert_int_equal(nwb_mkdir_p(longp, 0700), -ENAMETOOLONG);
    free(longp);
    /* Under a directory nobody may write to (root may: then it is created). */
    assert_int_equal(mkdir(in_dir("ro", path, sizeof(path)), 0500), 0);
    if (geteuid() != 0) {
        assert_int_equal(mkdir_p_in("ro/sub", 0700), -EACCES);
    }
    assert_int_equal(chmod(path, 0700), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_all_to_a_pipe_delivers_every_byte),
        cmocka_unit_test(test_write_all_reports_the_errno),
        cmocka_unit_test(test_pwrite_all_writes_at_the_offset_and_keeps_the_file_offset),
        cmocka_unit_test(test_file_read_at_the_cap_and_one_byte_over),
        cmocka_unit_test(test_file_read_empty_file_is_an_empty_string),
        cmocka_unit_test(test_file_read_fifo_is_enotreg_without_hanging),
        cmocka_unit_test(test_file_read_directory_device_and_missing),
        cmocka_unit_test(test_file_read_sizeless_proc_file_reads_as_empty),
        cmocka_unit_test(test_file_read_at_is_relative_to_the_directory_and_follows_symlinks),
        cmocka_unit_test(test_file_read_allocation_failure_is_enomem),
        cmocka_unit_test(test_mkdir_p_creates_nested_with_the_mode_asked_for),
        cmocka_unit_test(test_mkdir_p_file_in_the_way_is_enotdir),
        cmocka_unit_test(test_mkdir_p_empty_too_long_and_denied),
    };

    return cmocka_run_group_tests_name("common.file_io", tests, group_setup, group_teardown);
}
