/* SPDX-License-Identifier: MIT */
/*
 * test_crash_capture.c - the threads.nwbc reader and writer (nwb/crash_capture.h,
 * docs/crash-capture-format.md): round trips on both arches, every bound at its edge and one
 * past it (refused with the reason), each bad header/thread/module field, the thread and module
 * ordering rules, trailing bytes, and truncation at every byte offset of a small valid file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/byte_order.h"
#include "nwb/crash_capture.h"
#include "nwb/crash_capture_write.h"

#define HDR      32u
#define THR      40u
#define MOD      32u
#define X86_REGS NWB_CRASH_REGS_X86_64

/* Offsets inside the small file built by build_small() (note "why", 3 bytes). */
#define NOTE_LEN   3u
#define T0         (HDR + NOTE_LEN)
#define T0_STACK   16u
#define T1         (T0 + THR + 8u * X86_REGS + T0_STACK)
#define T1_STACK   8u
#define M0         (T1 + THR + 8u * X86_REGS + T1_STACK)
#define M0_BID     20u
#define M0_PATH    9u /* "/bin/game" */
#define M1         (M0 + MOD + M0_BID + M0_PATH)
#define M1_PATH    15u /* "/lib/libc.so.6" + 1 */
#define SMALL_SIZE (M1 + MOD + M1_PATH)

static char why[256];

static void regs_fill(uint64_t *regs, unsigned n, uint64_t base)
{
    for (unsigned i = 0; i < n; i++) {
        regs[i] = base + i;
    }
}

/* A valid x86_64 file: two threads (crashed first), two modules. Returns its size. */
static size_t build_small(uint8_t *buf, size_t cap)
{
    nwb_crash_capture_writer_t w;
    uint64_t regs[X86_REGS];
    uint8_t stack0[T0_STACK], stack1[T1_STACK], bid[M0_BID];
    long n;

    for (unsigned i = 0; i < sizeof stack0; i++) {
        stack0[i] = (uint8_t)i;
    }
    memset(stack1, 0xab, sizeof stack1);
    for (unsigned i = 0; i < sizeof bid; i++) {
        bid[i] = (uint8_t)(0xc0 + i);
    }
    nwb_crash_capture_writer_init(&w, buf, cap);
    nwb_crash_capture_write_header(&w, NWB_CRASH_ARCH_X86_64, NWB_CRASH_CAPTURE_PTRACE, 100, 101, 2,
                                   2, "why", NOTE_LEN);
    regs_fill(regs, X86_REGS, 0x1000);
    nwb_crash_capture_write_thread(&w, 101, NWB_CRASH_THREAD_CRASHED | NWB_CRASH_THREAD_SIGNAL_REGS,
                                   "main", regs, X86_REGS, 0x7fff0000, stack0, sizeof stack0);
    regs_fill(regs, X86_REGS, 0x2000);
    nwb_crash_capture_write_thread(&w, 102, 0, "worker-1", regs, X86_REGS, 0x7ffe0000, stack1,
                                   sizeof stack1);
    nwb_crash_capture_write_module(&w, 0x400000, 0x500000, 0, bid, sizeof bid, "/bin/game",
                                   M0_PATH);
    nwb_crash_capture_write_module(&w, 0x500000, 0x600000, 0x1000, NULL, 0, "/lib/libc.so.6x",
                                   M1_PATH);
    n = nwb_crash_capture_writer_finish(&w);
    assert_int_equal(n, SMALL_SIZE);
    return (size_t)n;
}

static int parse(const void *buf, size_t len)
{
    nwb_crash_capture_view_t v;
    const int rc = nwb_crash_capture_parse(buf, len, &v, why, sizeof why);

    if (rc == 0) {
        nwb_crash_capture_view_free(&v);
    } else {
        assert_int_equal(v.nthreads, 0);
        assert_null(v.threads);
        assert_null(v.modules);
        assert_true(why[0] != '\0');
        assert_null(strchr(why, '\n'));
    }
    return rc;
}

/* Parse the small file with one byte range changed; expect @p code and @p reason in why. */
static void expect_patched(size_t off, const void *bytes, size_t n, int code, const char *reason)
{
    uint8_t buf[SMALL_SIZE];

    build_small(buf, sizeof buf);
    memcpy(buf + off, bytes, n);
    assert_int_equal(parse(buf, sizeof buf), code);
    if (strstr(why, reason) == NULL) {
        fail_msg("reason \"%s\" lacks \"%s\"", why, reason);
    }
}

static void patch16(size_t off, uint16_t v, int code, const char *reason)
{
    uint8_t b[2];

    nwb_le16_store(b, v);
    expect_patched(off, b, 2, code, reason);
}

static void patch32(size_t off, uint32_t v, int code, const char *reason)
{
    uint8_t b[4];

    nwb_le32_store(b, v);
    expect_patched(off, b, 4, code, reason);
}

static void test_round_trip_x86_64(void **state)
{
    uint8_t buf[SMALL_SIZE];
    nwb_crash_capture_view_t v;
    const size_t n = build_small(buf, sizeof buf);

    (void)state;
    assert_int_equal(nwb_crash_capture_parse(buf, n, &v, why, sizeof why), 0);
    assert_string_equal(why, "");
    assert_int_equal(v.arch, NWB_CRASH_ARCH_X86_64);
    assert_int_equal(v.method, NWB_CRASH_CAPTURE_PTRACE);
    assert_int_equal(v.pid, 100);
    assert_int_equal(v.crashed_tid, 101);
    assert_int_equal(v.note_len, 3);
    assert_memory_equal(v.note, "why", 3);
    assert_int_equal(v.nthreads, 2);
    assert_int_equal(v.threads[0].tid, 101);
    assert_int_equal(v.threads[0].flags, 3);
    assert_string_equal(v.threads[0].name, "main");
    assert_int_equal(v.threads[0].nregs, X86_REGS);
    assert_int_equal(v.threads[0].regs[0], 0x1000);
    assert_int_equal(v.threads[0].regs[16], 0x1010);
    assert_int_equal(v.threads[0].stack_start, 0x7fff0000);
    assert_int_equal(v.threads[0].stack_len, T0_STACK);
    assert_ptr_equal(v.threads[0].stack, buf + T0 + THR + 8 * X86_REGS);
    assert_int_equal(v.threads[0].stack[15], 15);
    assert_string_equal(v.threads[1].name, "worker-1");
    assert_int_equal(v.threads[1].flags, 0);
    assert_int_equal(v.threads[1].regs[16], 0x2010);
    assert_int_equal(v.threads[1].stack_len, T1_STACK);
    assert_int_equal(v.nmodules, 2);
    assert_int_equal(v.modules[0].start, 0x400000);
    assert_int_equal(v.modules[0].end, 0x500000);
    assert_int_equal(v.modules[0].build_id_len, M0_BID);
    assert_int_equal(v.modules[0].build_id[0], 0xc0);
    assert_int_equal(v.modules[0].path_len, M0_PATH);
    assert_memory_equal(v.modules[0].path, "/bin/game", M0_PATH);
    assert_int_equal(v.modules[1].file_offset, 0x1000);
    assert_null(v.modules[1].build_id);
    assert_int_equal(v.modules[1].build_id_len, 0);
    nwb_crash_capture_view_free(&v);
    assert_null(v.threads);
    nwb_crash_capture_view_free(&v); /* idempotent */
    nwb_crash_capture_view_free(NULL);
}

static void test_round_trip_aarch64_minimal(void **state)
{
    uint8_t buf[HDR + THR + 8 * NWB_CRASH_REGS_AARCH64];
    uint64_t regs[NWB_CRASH_REGS_AARCH64];
    nwb_crash_capture_writer_t w;
    nwb_crash_capture_view_t v;

    (void)state;
    regs_fill(regs, NWB_CRASH_REGS_AARCH64, 7);
    nwb_crash_capture_writer_init(&w, buf, sizeof buf);
    nwb_crash_capture_write_header(&w, NWB_CRASH_ARCH_AARCH64, NWB_CRASH_CAPTURE_IN_PROCESS, 5, 5,
                                   1, 0, NULL, 0);
    nwb_crash_capture_write_thread(&w, 5, NWB_CRASH_THREAD_CRASHED, NULL, regs,
                                   NWB_CRASH_REGS_AARCH64, 0, NULL, 0);
    assert_int_equal(nwb_crash_capture_writer_finish(&w), sizeof buf);
    assert_int_equal(nwb_crash_capture_parse(buf, sizeof buf, &v, why, sizeof why), 0);
    assert_int_equal(v.arch, NWB_CRASH_ARCH_AARCH64);
    assert_int_equal(v.method, NWB_CRASH_CAPTURE_IN_PROCESS);
    assert_int_equal(v.threads[0].nregs, 33);
    assert_int_equal(v.threads[0].regs[32], 39);
    assert_string_equal(v.threads[0].name, "");
    assert_int_equal(v.nmodules, 0);
    assert_null(v.modules);
    nwb_crash_capture_view_free(&v);
}

static void test_writer_overflow_is_sticky(void **state)
{
    uint8_t buf[SMALL_SIZE];
    nwb_crash_capture_writer_t w;

    (void)state;
    assert_int_equal(build_small(buf, sizeof buf), SMALL_SIZE);
    nwb_crash_capture_writer_init(&w, buf, HDR + 1);
    nwb_crash_capture_write_header(&w, 1, 1, 1, 1, 1, 0, "ab", 2); /* 34 > 33 */
    assert_int_equal(nwb_crash_capture_writer_finish(&w), -1);
    nwb_crash_capture_writer_init(&w, NULL, 100);
    nwb_crash_capture_write_header(&w, 1, 1, 1, 1, 1, 0, NULL, 0);
    assert_int_equal(nwb_crash_capture_writer_finish(&w), -1);
}

static void test_bad_header_fields(void **state)
{
    (void)state;
    expect_patched(0, "NWBX", 4, -EINVAL, "bad magic");
    patch16(4, 2, -EINVAL, "unknown version 2");
    patch16(4, 0, -EINVAL, "unknown version 0");
    patch16(6, 3, -EINVAL, "unknown arch 3");
    patch16(6, 0, -EINVAL, "unknown arch 0");
    patch16(8, 0, -EINVAL, "unknown method 0");
    patch16(8, 3, -EINVAL, "unknown method 3");
    patch16(10, 1, -EINVAL, "header reserved field not 0");
    patch32(20, 0, -EINVAL, "no thread records");
    /* The arch says aarch64 (33 registers): two such records do not fit in the small file. */
    patch16(6, NWB_CRASH_ARCH_AARCH64, -EINVAL, "2 thread records do not fit in the file");
    expect_patched(HDR + 1, "\0", 1, -EINVAL, "NUL byte in the note");
}

static void test_bad_thread_fields(void **state)
{
    (void)state;
    patch32(T0 + 4, 0x04, -EINVAL, "thread 0: unknown flags 0x4");
    patch32(T1 + 4, 0x80000000u, -EINVAL, "thread 1: unknown flags 0x80000000");
    patch16(T0 + 24, 16, -EINVAL, "thread 0: nregs 16, the arch has 17");
    patch16(T1 + 24, 33, -EINVAL, "thread 1: nregs 33, the arch has 17");
    patch16(T0 + 26, 1, -EINVAL, "thread 0: reserved field not 0");
    expect_patched(T0 + 8, "abcdefghijklmnop", 16, -EINVAL, "thread 0: name not NUL-terminated");
    expect_patched(T0 + 8 + 10, "x", 1, -EINVAL, "thread 0: name padding not NUL");
    {
        uint8_t b[8];

        nwb_le64_store(b, UINT64_MAX - T0_STACK + 1); /* start + len == 2^64: wraps */
        expect_patched(T0 + 32, b, 8, -EINVAL, "thread 0: stack_start + stack_len wraps");
    }
}

static void test_name_of_15_bytes_is_the_edge(void **state)
{
    uint8_t buf[SMALL_SIZE];
    nwb_crash_capture_view_t v;

    (void)state;
    build_small(buf, sizeof buf);
    memcpy(buf + T1 + 8, "abcdefghijklmno", 15); /* byte 15 stays NUL */
    assert_int_equal(nwb_crash_capture_parse(buf, sizeof buf, &v, why, sizeof why), 0);
    assert_string_equal(v.threads[1].name, "abcdefghijklmno");
    nwb_crash_capture_view_free(&v);
    {
        /* The writer cuts a longer name at 15 bytes. */
        nwb_crash_capture_writer_t w;
        uint64_t regs[X86_REGS] = {0};
        uint8_t b[HDR + THR + 8 * X86_REGS];

        nwb_crash_capture_writer_init(&w, b, sizeof b);
        nwb_crash_capture_write_header(&w, 1, 1, 1, 1, 1, 0, NULL, 0);
        nwb_crash_capture_write_thread(&w, 1, 1, "abcdefghijklmnopqrstuvwxyz", regs, X86_REGS, 0,
                                       NULL, 0);
        assert_int_equal(nwb_crash_capture_writer_finish(&w), sizeof b);
        assert_int_equal(nwb_crash_capture_parse(b, sizeof b, &v, why, sizeof why), 0);
        assert_string_equal(v.threads[0].name, "abcdefghijklmno");
        nwb_crash_capture_view_free(&v);
    }
}

static void test_thread_order_rules(void **state)
{
    (void)state;
    /* Two crashed threads. */
    patch32(T1 + 4, NWB_CRASH_THREAD_CRASHED, -EINVAL, "thread 1 (tid 102): a second crashed");
    /* The crashed thread not first: thread 0 loses the flag, thread 1 gets it. */
    {
        uint8_t buf[SMALL_SIZE];

        build_small(buf, sizeof buf);
        nwb_le32_store(buf + T0 + 4, 0);
        nwb_le32_store(buf + T1 + 4, NWB_CRASH_THREAD_CRASHED);
        assert_int_equal(parse(buf, sizeof buf), -EINVAL);
        assert_non_null(strstr(why, "thread 0 (tid 101) is not the crashed thread"));
    }
    /* No crashed thread at all. */
    patch32(T0 + 4, 0, -EINVAL, "is not the crashed thread");
    /* The header's crashed_tid is another thread. */
    patch32(16, 102, -EINVAL, "crashed thread tid 101, header says 102");
    /* Duplicate tid. */
    patch32(T1, 101, -EINVAL, "thread 1: duplicate tid 101");
}

static void test_module_rules(void **state)
{
    uint8_t b[8];

    (void)state;
    /* Unsorted: module 1 starts below module 0. */
    nwb_le64_store(b, 0x300000);
    expect_patched(M1, b, 8, -EINVAL, "module 1: start 0x300000 not after module 0's end");
    /* Overlapping by one byte. */
    nwb_le64_store(b, 0x4fffff);
    expect_patched(M1, b, 8, -EINVAL, "module 1: start 0x4fffff not after module 0's end 0x500000");
    /* Touching (start == previous end) is fine: checked in the round trip. */
    nwb_le64_store(b, 0x400000);
    expect_patched(M0 + 8, b, 8, -EINVAL, "module 0: end 0x400000 not above start 0x400000");
    patch32(M0 + 28, 1, -EINVAL, "module 0: reserved field not 0");
    patch16(M0 + 26, 0, -EINVAL, "module 0: empty path");
    expect_patched(M1 + MOD + 3, "\0", 1, -EINVAL, "module 1: NUL byte in path");
}

static void test_trailing_bytes(void **state)
{
    uint8_t buf[SMALL_SIZE + 1];

    (void)state;
    build_small(buf, sizeof buf);
    buf[SMALL_SIZE] = 0;
    assert_int_equal(parse(buf, sizeof buf), -EINVAL);
    assert_string_equal(why, "1 trailing bytes after the last module");
}

static void test_truncation_at_every_offset(void **state)
{
    uint8_t buf[SMALL_SIZE];

    (void)state;
    build_small(buf, sizeof buf);
    assert_int_equal(parse(buf, SMALL_SIZE), 0);
    for (size_t len = 0; len < SMALL_SIZE; len++) {
        /* An exact-size copy, so the sanitizer sees any read past the end. */
        uint8_t *copy = malloc(len > 0 ? len : 1);

        assert_non_null(copy);
        memcpy(copy, buf, len);
        if (parse(copy, len) != -EINVAL) {
            fail_msg("a file cut at %zu of %u bytes was not refused", len, SMALL_SIZE);
        }
        free(copy);
    }
    assert_int_equal(parse(NULL, 0), -EINVAL);
    assert_string_equal(why, "file shorter than the magic");
    assert_int_equal(parse(buf, 31), -EINVAL);
    assert_string_equal(why, "header truncated (31 of 32 bytes)");
}

static void test_why_buffer_is_bounded(void **state)
{
    uint8_t buf[SMALL_SIZE];
    nwb_crash_capture_view_t v;
    char tiny[4] = "zzz";

    (void)state;
    build_small(buf, sizeof buf);
    buf[0] = 'X';
    assert_int_equal(nwb_crash_capture_parse(buf, sizeof buf, &v, tiny, sizeof tiny), -EINVAL);
    assert_string_equal(tiny, "bad");
    assert_int_equal(nwb_crash_capture_parse(buf, sizeof buf, &v, NULL, 0), -EINVAL);
    assert_int_equal(nwb_crash_capture_parse(buf, sizeof buf, NULL, why, sizeof why), -EINVAL);
}

/* A file of one crashed thread with the given counts/lengths, the rest minimal. */
struct shape {
    uint32_t nthreads;
    uint32_t nmodules;
    size_t note_len;
    size_t stack_len;
    size_t build_id_len;
    size_t path_len;
};

static uint8_t *build_shape(const struct shape *s, size_t *len)
{
    const size_t cap = HDR + s->note_len + s->nthreads * (THR + 8 * X86_REGS) + s->stack_len +
                       s->nmodules * (MOD + s->build_id_len + s->path_len) + 16;
    uint8_t *buf = malloc(cap);
    uint8_t *fill = calloc(1, s->stack_len + s->path_len + s->note_len + s->build_id_len + 1);
    uint64_t regs[X86_REGS] = {0};
    nwb_crash_capture_writer_t w;
    long n;

    assert_non_null(buf);
    assert_non_null(fill);
    memset(fill, 'a', s->path_len + s->note_len);
    nwb_crash_capture_writer_init(&w, buf, cap);
    nwb_crash_capture_write_header(&w, 1, 1, 9, 1000, s->nthreads, s->nmodules, (char *)fill,
                                   s->note_len);
    for (uint32_t i = 0; i < s->nthreads; i++) {
        nwb_crash_capture_write_thread(&w, 1000 + i, i == 0 ? 1 : 0, "t", regs, X86_REGS, 0x1000,
                                       fill, i == 0 ? s->stack_len : 0);
    }
    for (uint32_t i = 0; i < s->nmodules; i++) {
        nwb_crash_capture_write_module(&w, 0x10000 * (uint64_t)(i + 1),
                                       0x10000 * (uint64_t)(i + 1) + 0x1000, 0, fill,
                                       s->build_id_len, (char *)fill, s->path_len);
    }
    n = nwb_crash_capture_writer_finish(&w);
    assert_true(n > 0);
    free(fill);
    *len = (size_t)n;
    return buf;
}

static void expect_shape(const struct shape *s, int code, const char *reason)
{
    size_t len;
    uint8_t *buf = build_shape(s, &len);
    const int rc = parse(buf, len);

    free(buf);
    if (rc != code) {
        fail_msg("expected %d, got %d (%s)", code, rc, why);
    }
    if (reason != NULL && strstr(why, reason) == NULL) {
        fail_msg("reason \"%s\" lacks \"%s\"", why, reason);
    }
}

static void test_bounds_at_their_edges(void **state)
{
    const struct shape base = {1, 1, 0, 0, 0, 1};
    struct shape s;

    (void)state;
    s = base, s.nthreads = NWB_CRASH_CAPTURE_THREADS_MAX;
    expect_shape(&s, 0, NULL);
    s.nthreads++;
    expect_shape(&s, -E2BIG, "nthreads 1025 over 1024");
    s = base, s.nmodules = NWB_CRASH_CAPTURE_MODULES_MAX;
    expect_shape(&s, 0, NULL);
    s.nmodules++;
    expect_shape(&s, -E2BIG, "nmodules 1025 over 1024");
    s = base, s.note_len = NWB_CRASH_CAPTURE_NOTE_MAX;
    expect_shape(&s, 0, NULL);
    s.note_len++;
    expect_shape(&s, -E2BIG, "note_len 1025 over 1024");
    s = base, s.stack_len = NWB_CRASH_CAPTURE_STACK_MAX;
    expect_shape(&s, 0, NULL);
    s.stack_len++;
    expect_shape(&s, -E2BIG, "thread 0: stack_len 262145 over 262144");
    s = base, s.build_id_len = NWB_CRASH_CAPTURE_BUILD_ID_MAX;
    expect_shape(&s, 0, NULL);
    s.build_id_len++;
    expect_shape(&s, -E2BIG, "module 0: build_id_len 65 over 64");
    s = base, s.path_len = NWB_CRASH_CAPTURE_PATH_MAX;
    expect_shape(&s, 0, NULL);
    s.path_len++;
    expect_shape(&s, -E2BIG, "module 0: path_len 4097 over 4096");
}

/* A header claiming more records than the file can hold is refused before any allocation. */
static void test_counts_beyond_the_file_are_refused_early(void **state)
{
    uint8_t buf[SMALL_SIZE];

    (void)state;
    build_small(buf, sizeof buf);
    nwb_le32_store(buf + 20, 1000);
    nwb_alloc_fail_after(0);
    assert_int_equal(parse(buf, sizeof buf), -EINVAL);
    nwb_alloc_fail_after(-1);
    assert_string_equal(why, "1000 thread records do not fit in the file");
    build_small(buf, sizeof buf);
    nwb_le32_store(buf + 24, 1000);
    assert_int_equal(parse(buf, sizeof buf), -EINVAL);
    assert_string_equal(why, "1000 module records do not fit in the file");
    /* Out of memory is a reason too, not a crash. */
    build_small(buf, sizeof buf);
    nwb_alloc_fail_after(0);
    assert_int_equal(parse(buf, sizeof buf), -ENOMEM);
    nwb_alloc_fail_after(-1);
    assert_string_equal(why, "out of memory for 2 threads");
}

/* The whole file: exactly 64 MiB parses, one byte more is refused before anything else. */
static void test_file_size_edge(void **state)
{
    const size_t rec = THR + 8 * X86_REGS;
    const size_t nthreads = 256;
    size_t stacks = NWB_CRASH_CAPTURE_FILE_MAX - HDR - nthreads * rec;
    uint8_t *buf = malloc((size_t)NWB_CRASH_CAPTURE_FILE_MAX + 1);
    uint8_t *zero = calloc(1, NWB_CRASH_CAPTURE_STACK_MAX);
    uint64_t regs[X86_REGS] = {0};
    nwb_crash_capture_writer_t w;

    (void)state;
    assert_non_null(buf);
    assert_non_null(zero);
    nwb_crash_capture_writer_init(&w, buf, NWB_CRASH_CAPTURE_FILE_MAX);
    nwb_crash_capture_write_header(&w, 1, 1, 1, 1, (uint32_t)nthreads, 0, NULL, 0);
    for (size_t i = 0; i < nthreads; i++) {
        const size_t take =
            stacks < NWB_CRASH_CAPTURE_STACK_MAX ? stacks : NWB_CRASH_CAPTURE_STACK_MAX;

        nwb_crash_capture_write_thread(&w, (uint32_t)(i + 1), i == 0 ? 1 : 0, "s", regs, X86_REGS,
                                       0x100000, zero, take);
        stacks -= take;
    }
    assert_int_equal(stacks, 0);
    assert_int_equal(nwb_crash_capture_writer_finish(&w), NWB_CRASH_CAPTURE_FILE_MAX);
    assert_int_equal(parse(buf, NWB_CRASH_CAPTURE_FILE_MAX), 0);
    buf[NWB_CRASH_CAPTURE_FILE_MAX] = 0;
    assert_int_equal(parse(buf, (size_t)NWB_CRASH_CAPTURE_FILE_MAX + 1), -E2BIG);
    assert_string_equal(why, "file of 67108865 bytes over 67108864");
    free(zero);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_x86_64),
        cmocka_unit_test(test_round_trip_aarch64_minimal),
        cmocka_unit_test(test_writer_overflow_is_sticky),
        cmocka_unit_test(test_bad_header_fields),
        cmocka_unit_test(test_bad_thread_fields),
        cmocka_unit_test(test_name_of_15_bytes_is_the_edge),
        cmocka_unit_test(test_thread_order_rules),
        cmocka_unit_test(test_module_rules),
        cmocka_unit_test(test_trailing_bytes),
        cmocka_unit_test(test_truncation_at_every_offset),
        cmocka_unit_test(test_why_buffer_is_bounded),
        cmocka_unit_test(test_bounds_at_their_edges),
        cmocka_unit_test(test_counts_beyond_the_file_are_refused_early),
        cmocka_unit_test(test_file_size_edge),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
