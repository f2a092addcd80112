/* SPDX-License-Identifier: MIT */
/*
 * test_read_log.c - unit tests of read_log.c's range and tail readers on real files: how an
 * offset and a limit snap to whole lines, the end and past it, a last line without its '\n',
 * a line longer than the limit, reassembling a log from successive reads, the last N lines
 * under a byte bound, and a 10 GiB sparse log read at its end and its middle with the bytes
 * read (/proc/self/io rchar) bounded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/error.h"
#include "read_int.h"
#include "test_support.h"

#define TEN_GIB (10ull << 30)

struct fx {
    char dir[512];
    char path[600];
    int fd;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("readlog", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof(f->path), "%s/log.txt", f->dir);
    f->fd = -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    if (f->fd >= 0) {
        close(f->fd);
    }
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

static void put(struct fx *f, const char *text, size_t len)
{
    if (f->fd >= 0) {
        close(f->fd);
    }
    assert_int_equal(nwb_test_write_file(f->path, text, len, 0644), 0);
    f->fd = open(f->path, O_RDONLY);
    assert_true(f->fd >= 0);
}

/* nwb__read_log_range() into a fresh buffer: the text (static, NUL-terminated) or NULL. */
static const char *range(struct fx *f, uint64_t size, uint64_t offset, uint64_t limit,
                         uint64_t *start, int *rc)
{
    static char text[1 << 16];
    nwb_buf_t b = NWB_BUF_INIT((size_t)limit + NWB__LOG_LINE_LONGEST);

    *rc = nwb__read_log_range(f->fd, size, offset, limit, &b, start);
    assert_true(b.len < sizeof(text));
    if (b.len > 0) {
        memcpy(text, b.data, b.len);
    }
    text[b.len] = '\0';
    nwb_buf_cleanup(&b);
    return text;
}

static const char *tail(struct fx *f, uint64_t size, uint64_t lines, uint64_t max, uint64_t *start)
{
    static char text[1 << 16];
    nwb_buf_t b = NWB_BUF_INIT((size_t)max);

    assert_int_equal(nwb__read_log_tail(f->fd, size, lines, max, &b, start), 0);
    assert_true(b.len < sizeof(text) && b.len <= max);
    if (b.len > 0) {
        memcpy(text, b.data, b.len);
    }
    text[b.len] = '\0';
    nwb_buf_cleanup(&b);
    return text;
}

static const char lines3[] = "aaaa\nbb\ncccccc\n"; /* lines start at 0, 5, 8; size 15 */

static void test_range_snaps_offset_and_limit_to_whole_lines(void **state)
{
    struct fx *f = *state;
    uint64_t start = 99;
    int rc;

    put(f, lines3, 15);
    assert_string_equal(range(f, 15, 0, 100, &start, &rc), lines3);
    assert_int_equal(rc, 0);
    assert_int_equal(start, 0);
    /* The limit cuts inside "cccccc\n": the answer ends after "bb\n". */
    assert_string_equal(range(f, 15, 0, 10, &start, &rc), "aaaa\nbb\n");
    /* Exactly the first line. */
    assert_string_equal(range(f, 15, 0, 5, &start, &rc), "aaaa\n");
    /* Offsets inside a line start at the next one. */
    assert_string_equal(range(f, 15, 1, 100, &start, &rc), "bb\ncccccc\n");
    assert_int_equal(start, 5);
    assert_string_equal(range(f, 15, 4, 100, &start, &rc), "bb\ncccccc\n");
    assert_int_equal(start, 5);
    assert_string_equal(range(f, 15, 5, 100, &start, &rc), "bb\ncccccc\n");
    assert_int_equal(start, 5);
    assert_string_equal(range(f, 15, 9, 100, &start, &rc), "");
    assert_int_equal(start, 15);
    /* At the end: nothing (yet); past it: NWB_ERANGE. */
    assert_string_equal(range(f, 15, 15, 100, &start, &rc), "");
    assert_int_equal(rc, 0);
    assert_int_equal(start, 15);
    range(f, 15, 16, 100, &start, &rc);
    assert_int_equal(rc, NWB_ERANGE);
    range(f, 15, UINT64_MAX, 100, &start, &rc);
    assert_int_equal(rc, NWB_ERANGE);
    /* The size given bounds the answer (what the worker reported written). */
    assert_string_equal(range(f, 8, 0, 100, &start, &rc), "aaaa\nbb\n");
    assert_string_equal(range(f, 7, 0, 100, &start, &rc), "aaaa\n");
    range(f, 8, 9, 100, &start, &rc);
    assert_int_equal(rc, NWB_ERANGE);
}

static void test_range_last_line_without_newline_is_never_answered(void **state)
{
    struct fx *f = *state;
    uint64_t start;
    int rc;

    put(f, "aaaa\nbb", 7);
    assert_string_equal(range(f, 7, 0, 100, &start, &rc), "aaaa\n");
    assert_string_equal(range(f, 7, 5, 100, &start, &rc), "");
    assert_int_equal(start, 5);
    assert_int_equal(rc, 0);
    put(f, "no newline at all", 17);
    assert_string_equal(range(f, 17, 0, 100, &start, &rc), "");
    assert_int_equal(start, 0);
    assert_string_equal(range(f, 17, 3, 100, &start, &rc), "");
    assert_int_equal(start, 17);
    put(f, "", 0);
    assert_string_equal(range(f, 0, 0, 100, &start, &rc), "");
    assert_int_equal(rc, 0);
    range(f, 0, 1, 100, &start, &rc);
    assert_int_equal(rc, NWB_ERANGE);
}

static void test_range_line_longer_than_limit_is_answered_whole(void **state)
{
    struct fx *f = *state;
    char text[300];
    uint64_t start;
    int rc;

    memset(text, 'x', 200);
    text[199] = '\n';
    memcpy(text + 200, "short\n", 6);
    put(f, text, 206);
    assert_int_equal(strlen(range(f, 206, 0, 1, &start, &rc)), 200);
    assert_int_equal(strlen(range(f, 206, 0, 199, &start, &rc)), 200);
    assert_int_equal(strlen(range(f, 206, 0, 200, &start, &rc)), 200);
    assert_int_equal(strlen(range(f, 206, 0, 205, &start, &rc)), 200);
    assert_int_equal(strlen(range(f, 206, 0, 206, &start, &rc)), 206);
    /* Still being written (no '\n' yet): nothing. */
    assert_string_equal(range(f, 150, 0, 10, &start, &rc), "");
}

/* Successive ?offset= reads with every limit give back the file byte for byte. */
static void test_range_reads_reassemble_the_log(void **state)
{
    struct fx *f = *state;
    char text[4096], got[4096];
    size_t len = 0;

    for (int i = 0; len < 3000; i++) {
        len += (size_t)snprintf(text + len, sizeof(text) - len, "line %d %.*s\n", i, i % 37,
                                "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
    }
    put(f, text, len);
    for (uint64_t limit = 1; limit < 200; limit += 7) {
        uint64_t offset = 0;
        size_t glen = 0;

        while (offset < len) {
            uint64_t start;
            int rc;
            const char *part = range(f, len, offset, limit, &start, &rc);

            assert_int_equal(rc, 0);
            assert_int_equal(start, offset); /* every next offset is a line start */
            assert_true(strlen(part) > 0);
            memcpy(got + glen, part, strlen(part));
            glen += strlen(part);
            offset += strlen(part);
        }
        assert_int_equal(glen, len);
        assert_memory_equal(got, text, len);
    }
}

static void test_tail_gives_the_last_lines_within_the_byte_bound(void **state)
{
    struct fx *f = *state;
    uint64_t start;

    put(f, lines3, 15);
    assert_string_equal(tail(f, 15, 1, 1000, &start), "cccccc\n");
    assert_int_equal(start, 8);
    assert_string_equal(tail(f, 15, 2, 1000, &start), "bb\ncccccc\n");
    assert_int_equal(start, 5);
    assert_string_equal(tail(f, 15, 3, 1000, &start), lines3);
    assert_int_equal(start, 0);
    assert_string_equal(tail(f, 15, 10000, 1000, &start), lines3);
    /* The byte bound: 10 bytes hold the last two lines, 9 only the last. */
    assert_string_equal(tail(f, 15, 3, 10, &start), "bb\ncccccc\n");
    assert_string_equal(tail(f, 15, 3, 9, &start), "cccccc\n");
    assert_string_equal(tail(f, 15, 3, 15, &start), lines3);
    /* The size given bounds it; a last line without '\n' is left out. */
    assert_string_equal(tail(f, 8, 1, 1000, &start), "bb\n");
    assert_string_equal(tail(f, 10, 1, 1000, &start), "bb\n");
    put(f, "aaaa\nbb", 7);
    assert_string_equal(tail(f, 7, 5, 1000, &start), "aaaa\n");
    put(f, "nothing whole", 13);
    assert_string_equal(tail(f, 13, 5, 1000, &start), "");
    put(f, "", 0);
    assert_string_equal(tail(f, 0, 5, 1000, &start), "");
    assert_int_equal(start, 0);
}

/* Bytes this process has read so far (/proc/self/io), or -1. */
static long long rchar(void)
{
    char *io = nwb_test_read_file("/proc/self/io", NULL);
    const char *p = io != NULL ? strstr(io, "rchar: ") : NULL;
    const long long v = p != NULL ? strtoll(p + 7, NULL, 10) : -1;

    free(io);
    return v;
}

/* A 10 GiB log (sparse: lines at its start and end) is read at its end and middle with a
 * bounded number of bytes: never whole. */
static void test_ten_gib_log_is_read_in_bounded_ranges(void **state)
{
    struct fx *f = *state;
    static const char head[] = "first line\nsecond line\n";
    static const char end[] = "\nthird from last\nsecond from last\nlast line\n";
    const uint64_t size = TEN_GIB;
    const uint64_t end_at = size - (sizeof(end) - 1);
    nwb_buf_t b = NWB_BUF_INIT(NWB__READ_LOG_LIMIT_MAX + NWB__LOG_LINE_LONGEST);
    uint64_t start;
    long long before;
    int fd;

    fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    if (ftruncate(fd, (off_t)size) != 0) {
        close(fd);
        skip(); /* the file system here cannot hold a sparse 10 GiB file */
    }
    assert_int_equal(pwrite(fd, head, sizeof(head) - 1, 0), (ssize_t)(sizeof(head) - 1));
    assert_int_equal(pwrite(fd, end, sizeof(end) - 1, (off_t)end_at), (ssize_t)(sizeof(end) - 1));
    close(fd);
    f->fd = open(f->path, O_RDONLY);
    assert_true(f->fd >= 0);
    if (rchar() < 0) {
        skip(); /* no /proc/self/io (task I/O accounting) to count the bytes read */
    }

    before = rchar();
    assert_int_equal(nwb__read_log_tail(f->fd, size, 2, NWB__READ_TAIL_BYTES_MAX, &b, &start), 0);
    assert_int_equal(b.len, strlen("second from last\nlast line\n"));
    assert_memory_equal(b.data, "second from last\nlast line\n", b.len);
    assert_true(start == size - b.len);
    assert_true(rchar() - before < 2 * 1024 * 1024);

    /* The whole lines from the one starting right after the zeros. */
    nwb_buf_reset(&b);
    before = rchar();
    assert_int_equal(
        nwb__read_log_range(f->fd, size, end_at + 1, NWB__READ_LOG_LIMIT_DEFAULT, &b, &start), 0);
    assert_true(start == end_at + 1);
    assert_int_equal(b.len, sizeof(end) - 2);
    assert_memory_equal(b.data, end + 1, b.len);
    assert_true(rchar() - before < 2 * 1024 * 1024);

    /* The start is read as it is, however long the file. */
    nwb_buf_reset(&b);
    assert_int_equal(nwb__read_log_range(f->fd, size, 0, 100, &b, &start), 0);
    assert_int_equal(b.len, sizeof(head) - 1);

    /* In the middle (a damaged stretch without a newline): bounded reads, never the rest. */
    nwb_buf_reset(&b);
    before = rchar();
    assert_int_equal(
        nwb__read_log_range(f->fd, size, size / 2, NWB__READ_LOG_LIMIT_MAX, &b, &start), 0);
    assert_true(rchar() - before <=
                (long long)(NWB__READ_LOG_LIMIT_MAX + 2 * NWB__LOG_LINE_LONGEST + 65536));
    assert_true(b.len <= NWB__LOG_LINE_LONGEST);
    nwb_buf_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_range_snaps_offset_and_limit_to_whole_lines, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_range_last_line_without_newline_is_never_answered,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_range_line_longer_than_limit_is_answered_whole, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_range_reads_reassemble_the_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tail_gives_the_last_lines_within_the_byte_bound, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ten_gib_log_is_read_in_bounded_ranges, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
