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

struct fx {
    char dir[512];
};

/* What a failed read must overwrite with NULL. */
static uint8_t sentinel[1];

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("file-io", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
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
    struct fx *f = *state;
    char path[600];
    uint8_t *got;
    size_t len = 0;
    int fd;

    snprintf(path, sizeof(path), "%s/pw", f->dir);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
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

static void write_file(const char *path, size_t n)
{
    char *data = malloc(n + 1);

    assert_non_null(data);
    for (size_t i = 0; i < n; i++) {
        data[i] = (char)('A' + i % 26);
    }
    assert_int_equal(nwb_test_write_file(path, data, n, 0600), 0);
    free(data);
}

static void test_file_read_at_the_cap_and_one_byte_over(void **state)
{
    struct fx *f = *state;
    char path[600];
    uint8_t *got = sentinel;
    size_t len = 99;

    snprintf(path, sizeof(path), "%s/capped", f->dir);
    write_file(path, 4096);
    assert_int_equal(nwb_file_read(path, 4096, &got, &len), 0);
    assert_int_equal(len, 4096);
    assert_int_equal(got[0], 'A');
    assert_int_equal(got[4095], 'A' + 4095 % 26);
    assert_int_equal(got[4096], '\0'); /* one NUL after the data */
    nwb_free(got);

    got = sentinel;
    len = 99;
    assert_int_equal(nwb_file_read(path, 4095, &got, &len), NWB_ETOOBIG);
    assert_null(got);
    assert_int_equal(len, 0);
    assert_int_equal(nwb_file_read(path, 0, &got, &len), NWB_ETOOBIG);
}

static void test_file_read_empty_file_is_an_empty_string(void **state)
{
    struct fx *f = *state;
    char path[600];
    uint8_t *got = NULL;
    size_t len = 99;

    snprintf(path, sizeof(path), "%s/empty", f->dir);
    write_file(path, 0);
    assert_int_equal(nwb_file_read(path, 0, &got, &len), 0);
    assert_non_null(got);
    assert_int_equal(len, 0);
    assert_int_equal(got[0], '\0');
    nwb_free(got);
}

static void test_file_read_fifo_is_enotreg_without_hanging(void **state)
{
    struct fx *f = *state;
    char path[600];
    uint8_t *got = sentinel;
    size_t len = 99;
    const long long t0 = nwb_test_now_ms();

    snprintf(path, sizeof(path), "%s/fifo", f->dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    /* No writer ever opens it: a blocking open would wait for ever (ctest's timeout). */
    assert_int_equal(nwb_file_read(path, 1024, &got, &len), NWB_ENOTREG);
    assert_null(got);
    assert_int_equal(len, 0);
    assert_true(nwb_test_now_ms() - t0 < 5000);
}

static void test_file_read_directory_device_and_missing(void **state)
{
    struct fx *f = *state;
    char path[600];
    uint8_t *got = sentinel;
    size_t len = 99;

    assert_int_equal(nwb_file_read(f->dir, 1024, &got, &len), NWB_ENOTREG);
    assert_null(got);
    assert_int_equal(len, 0);
    assert_int_equal(nwb_file_read("/dev/null", 1024, &got, &len), NWB_ENOTREG);
    snprintf(path, sizeof(path), "%s/missing", f->dir);
    got = sentinel;
    len = 99;
    assert_int_equal(nwb_file_read(path, 1024, &got, &len), -ENOENT);
    assert_null(got);
    assert_int_equal(len, 0);
    snprintf(path, sizeof(path), "%s/missing/below", f->dir);
    assert_int_equal(nwb_file_read(path, 1024, &got, &len), -ENOENT);
}

static void test_file_read_at_is_relative_to_the_directory_and_follows_symlinks(void **state)
{
    struct fx *f = *state;
    char path[600], link_path[600];
    uint8_t *got = NULL;
    size_t len = 0;
    const int dirfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    assert_true(dirfd >= 0);
    snprintf(path, sizeof(path), "%s/rel", f->dir);
    assert_int_equal(nwb_test_write_file(path, "relative", 8, 0600), 0);
    assert_int_equal(nwb_file_read_at(dirfd, "rel", 64, &got, &len), 0);
    assert_int_equal(len, 8);
    assert_string_equal((const char *)got, "relative");
    nwb_free(got);
    snprintf(link_path, sizeof(link_path), "%s/link", f->dir);
    assert_int_equal(symlink("rel", link_path), 0);
    assert_int_equal(nwb_file_read_at(dirfd, "link", 64, &got, &len), 0);
    assert_string_equal((const char *)got, "relative");
    nwb_free(got);
    close(dirfd);
}

static void test_file_read_allocation_failure_is_enomem(void **state)
{
    struct fx *f = *state;
    char path[600];
    uint8_t *got = sentinel;
    size_t len = 99;

    snprintf(path, sizeof(path), "%s/alloc", f->dir);
    write_file(path, 100);
    nwb_alloc_fail_after(0);
    assert_int_equal(nwb_file_read(path, 1024, &got, &len), -ENOMEM);
    nwb_alloc_fail_after(-1);
    assert_null(got);
    assert_int_equal(len, 0);
}

/* ---- mkdir -p ---- */

static mode_t mode_of(const char *path)
{
    struct stat st;

    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    return st.st_mode & 07777;
}

static void test_mkdir_p_creates_nested_with_the_mode_asked_for(void **state)
{
    struct fx *f = *state;
    char path[600], part[600];
    const mode_t old = umask(022);

    snprintf(path, sizeof(path), "%s/a/b/c", f->dir);
    assert_int_equal(nwb_mkdir_p(path, 0700), 0);
    assert_int_equal(mode_of(path), 0700);
    snprintf(part, sizeof(part), "%s/a", f->dir);
    assert_int_equal(mode_of(part), 0700); /* every created parent too */
    snprintf(path, sizeof(path), "%s/x/y/", f->dir);
    assert_int_equal(nwb_mkdir_p(path, 0755), 0);
    assert_int_equal(mode_of(path), 0755);
    /* Existing: fine, and the mode of what exists is left alone. */
    snprintf(path, sizeof(path), "%s/a/b/c", f->dir);
    assert_int_equal(nwb_mkdir_p(path, 0755), 0);
    assert_int_equal(mode_of(path), 0700);
    assert_int_equal(nwb_mkdir_p("/", 0755), 0);
    /* Doubled slashes. */
    snprintf(path, sizeof(path), "%s//d//e", f->dir);
    assert_int_equal(nwb_mkdir_p(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/d/e", f->dir);
    assert_int_equal(mode_of(path), 0700);
    umask(old);
}

static void test_mkdir_p_file_in_the_way_is_enotdir(void **state)
{
    struct fx *f = *state;
    char file[600], path[700];

    snprintf(file, sizeof(file), "%s/plain", f->dir);
    write_file(file, 3);
    /* The path itself is a file. */
    assert_int_equal(nwb_mkdir_p(file, 0700), -ENOTDIR);
    /* A file where a parent should be. */
    snprintf(path, sizeof(path), "%s/sub/deeper", file);
    assert_int_equal(nwb_mkdir_p(path, 0700), -ENOTDIR);
}

static void test_mkdir_p_empty_too_long_and_denied(void **state)
{
    struct fx *f = *state;
    char *longp = malloc(PATH_MAX + 2);
    char path[700];

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
    snprintf(path, sizeof(path), "%s/ro", f->dir);
    assert_int_equal(mkdir(path, 0500), 0);
    snprintf(path, sizeof(path), "%s/ro/sub", f->dir);
    if (geteuid() != 0) {
        assert_int_equal(nwb_mkdir_p(path, 0700), -EACCES);
    }
    snprintf(path, sizeof(path), "%s/ro", f->dir);
    assert_int_equal(chmod(path, 0700), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_all_to_a_pipe_delivers_every_byte),
        cmocka_unit_test(test_write_all_reports_the_errno),
        cmocka_unit_test_setup_teardown(
            test_pwrite_all_writes_at_the_offset_and_keeps_the_file_offset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_read_at_the_cap_and_one_byte_over, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_file_read_empty_file_is_an_empty_string, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_file_read_fifo_is_enotreg_without_hanging, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_file_read_directory_device_and_missing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_file_read_at_is_relative_to_the_directory_and_follows_symlinks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_read_allocation_failure_is_enomem, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_mkdir_p_creates_nested_with_the_mode_asked_for, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_mkdir_p_file_in_the_way_is_enotdir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mkdir_p_empty_too_long_and_denied, setup, teardown),
    };

    return cmocka_run_group_tests_name("common.file_io", tests, NULL, NULL);
}
