/* SPDX-License-Identifier: MIT */
/*
 * test_macros.c - the NWB_LOGGER_* macros through the real client: one
 * argument is a raw message, formatted calls render exactly like snprintf
 * for every supported kind (and through the vsnprintf fallback for the
 * rest), ESSENTIAL works, and records carry level, file, line, thread, time.
 */
#define _GNU_SOURCE
#undef NWB_FINAL /* these tests need INFO/WARNING/ERROR compiled in, in every config */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "nwb/client.h"
#include "nwb/log.h"
#include "nwb/log_line.h"

#include "client_clock.h"
#include "test_core_capture.h"

/* Expected messages, in logging order. */
static char *expected[512];
static size_t n_expected;

static void expect_msg(const char *msg)
{
    expected[n_expected++] = strdup(msg);
}

static void expect_free(void)
{
    for (size_t i = 0; i < n_expected; i++) {
        free(expected[i]);
    }
    n_expected = 0;
}

/* Log a formatted call and remember what snprintf makes of the same format and arguments. */
#define CHECK_FMT(...)                                                                             \
    do {                                                                                           \
        char want_[8192];                                                                          \
        snprintf(want_, sizeof(want_), __VA_ARGS__);                                               \
        expect_msg(want_);                                                                         \
        NWB_LOGGER_INFO(__VA_ARGS__);                                                              \
    } while (0)

static int setup(void **state)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;

    *state = cap_client(&cfg);
    return *state != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    nwb_client_destroy(*state);
    cap_free();
    expect_free();
    return 0;
}

static void assert_all_expected(nwb_client_t *client)
{
    assert_int_equal(nwb_client_flush(client, 10000), 0);
    assert_int_equal(cap_count(), n_expected);
    for (size_t i = 0; i < n_expected; i++) {
        if (strcmp(cap_get(i)->msg, expected[i]) != 0) {
            print_error("record %zu: got \"%s\", want \"%s\"\n", i, cap_get(i)->msg, expected[i]);
        }
        assert_string_equal(cap_get(i)->msg, expected[i]);
    }
}

static void test_raw_one_argument_prints_literally(void **state)
{
    char dynamic[64];
    const char *nonliteral = dynamic;

    snprintf(dynamic, sizeof(dynamic), "built at run time: %s %d%%", "%s", 5);
    NWB_LOGGER_INFO("%d %s %%");
    NWB_LOGGER_WARNING(nonliteral);
    NWB_LOGGER_ERROR("");
    assert_int_equal(nwb_client_flush(*state, 10000), 0);
    assert_int_equal(cap_count(), 3);
    assert_string_equal(cap_get(0)->msg, "%d %s %%");
    assert_int_equal(cap_get(0)->rec.level, NWB_LOG_INFO);
    assert_string_equal(cap_get(1)->msg, "built at run time: %s 5%");
    assert_int_equal(cap_get(1)->rec.level, NWB_LOG_WARNING);
    assert_string_equal(cap_get(2)->msg, "");
    assert_int_equal(cap_get(2)->rec.level, NWB_LOG_ERROR);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(cap_get(i)->rec.flags & NWB_LOG_RECORD_TRUNCATED, 0);
    }
}

static void test_integer_kinds_render_like_snprintf(void **state)
{
    volatile int big = 300; /* %hhd / %hd of values cut to their types */
    int neg = -5;

    CHECK_FMT("%d", 42);
    CHECK_FMT("%d|%i", -2147483647 - 1, 2147483647);
    CHECK_FMT("%5d|%-5d|%05d|%+d|% d", 7, 7, 7, 7, 7);
    CHECK_FMT("%u %x %X %#x %#X %o %#o", 4000000000u, 0xbeefu, 0xbeefu, 255u, 255u, 8u, 8u);
    CHECK_FMT("%hhd %hhu %hd %hu", (signed char)big, (unsigned char)big, (short)(big * 300),
              (unsigned short)(big * 300));
    CHECK_FMT("%ld %lu %lx", -1234567890123L, 18446744073709551615UL, 0xdeadbeefcafeUL);
    CHECK_FMT("%lld %llu %llx", -9223372036854775807LL - 1, 18446744073709551615ULL, 1ULL);
    CHECK_FMT("%zu %zd %zx", (size_t)123456789, (ptrdiff_t)-3, (size_t)0xabc);
    CHECK_FMT("%jd %ju %td", (intmax_t)-77, (uintmax_t)77, (ptrdiff_t)-99);
    CHECK_FMT("%*d|%-*d|%*d", 6, 42, 6, 42, neg, 42);
    CHECK_FMT("%.3d|%.0d|%8.4d", 5, 0, -12);
    CHECK_FMT("%'d", 1234567);
    CHECK_FMT("%300d", 1);
    assert_all_expected(*state);
}

static void test_float_kinds_render_like_snprintf(void **state)
{
    CHECK_FMT("%f", 3.14159);
    CHECK_FMT("%.3f|%10.2f|%-10.1f|%+.0f", 2.5, -1.005, 9.99, 0.5);
    CHECK_FMT("%e %E %g %G", 12345.678, 0.000123, 1e-10, 1e20);
    CHECK_FMT("%a %A", 1.0, -0.1);
    CHECK_FMT("%f %f %f", (double)INFINITY, -(double)INFINITY, (double)NAN);
    CHECK_FMT("%*.*f|%.*e", 12, 3, 3.14159265, 2, 6.02e23);
    CHECK_FMT("%lf", 1.25);
    CHECK_FMT("%Lf|%Le|%.10Lg|%20.5Lf", 3.25L, 1e300L * 1e100L, 1.0L / 3.0L, -2.5L);
    CHECK_FMT("%f", (float)1.1f);
    assert_all_expected(*state);
}

static void test_pointer_char_string_kinds_render_like_snprintf(void **state)
{
    int local = 0;
    const char unterminated[3] = {'a', 'b', 'c'}; /* only precision keeps printf inside it */
    char longer[200];

    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    CHECK_FMT("%p %p", (void *)&local, (void *)0);
    CHECK_FMT("%c%c%c|%5c|%-3c|", 'a', 'b', 'c', 'z', 'q');
    CHECK_FMT("%s", "plain");
    CHECK_FMT("%10s|%-10s|%.2s|%5.1s|", "right", "left", "cut", "pre");
    CHECK_FMT("%.3s|%.*s|%.*s", unterminated, 2, unterminated, -1, "neg precision");
    CHECK_FMT("%s%s%s", "", "", "");
    CHECK_FMT("%s", longer);
    CHECK_FMT("%%|%d%%|%%%s", 5, "x");
    CHECK_FMT("frame %d took %f ms on %s", 1234, 16.6667, "render");
    assert_all_expected(*state);
}

static void test_null_string_prints_null_marker(void **state)
{
    const char *none = NULL;

    NWB_LOGGER_INFO("[%s]", none);
    assert_int_equal(nwb_client_flush(*state, 10000), 0);
    assert_int_equal(cap_count(), 1);
    assert_string_equal(cap_get(0)->msg, "[(null)]");
}

static void test_many_arguments_defer_up_to_limit_and_fall_back_beyond(void **state)
{
    /* 24 arguments: deferred; 25: formatted on the calling thread. Same text either way. */
    CHECK_FMT("%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d", 1, 2, 3, 4,
              5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24);
    CHECK_FMT("%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %s", 1, 2, 3,
              4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
              "twenty-five");
    CHECK_FMT("%s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %Lf", "a", "b",
              "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s",
              "t", "u", "v", "w", 1.5L);
    assert_all_expected(*state);
}

static void test_unsupported_conversions_use_vsnprintf(void **state)
{
    errno = ENOENT;
    {
        char want[256];

        snprintf(want, sizeof(want), "%s: %d", strerror(ENOENT), 3);
        expect_msg(want);
        errno = ENOENT;
        NWB_LOGGER_INFO("%m: %d", 3); /* errno of the calling thread, read at the call */
    }
    CHECK_FMT("%ls|%lc", L"wide", (wint_t)L'w');
    CHECK_FMT("%2$s %1$s", "world", "hello");
    CHECK_FMT("%.000000000000000000000000000000000000005d", 5); /* spec over 32 bytes */
    assert_all_expected(*state);
}

static void test_percent_n_is_never_executed(void **state)
{
    int written = -1;

    NWB_LOGGER_INFO("count%n here %d", &written, 5);
    assert_int_equal(nwb_client_flush(*state, 10000), 0);
    assert_int_equal(written, -1);
    assert_int_equal(cap_count(), 1);
    assert_non_null(strstr(cap_get(0)->msg, "count%n here %d"));
    assert_non_null(strstr(cap_get(0)->msg, "not supported"));
}

static void test_long_strings_are_cut_and_marked(void **state)
{
    char *huge = malloc(10000);
    const nwb_log_record_t *rec;

    memset(huge, 'y', 9999);
    huge[9999] = '\0';
    NWB_LOGGER_INFO("<%s>", huge);
    NWB_LOGGER_INFO(huge);             /* raw: bounded by the record size, not the string bound */
    NWB_LOGGER_INFO("%.5000s|", huge); /* a precision above the bound cuts at the bound too */
    NWB_LOGGER_INFO("%.100s|", huge);  /* a precision below it is printf's own cut, no mark */
    assert_int_equal(nwb_client_flush(*state, 10000), 0);
    assert_int_equal(cap_count(), 4);
    rec = &cap_get(0)->rec;
    assert_int_equal(rec->msg_len, 1 + 4096 + 3 + 1);
    assert_memory_equal(rec->msg + 1 + 4096, "...>", 4);
    assert_true(rec->flags & NWB_LOG_RECORD_TRUNCATED);
    rec = &cap_get(1)->rec;
    assert_int_equal(rec->msg_len, 9999);
    assert_int_equal(rec->flags & NWB_LOG_RECORD_TRUNCATED, 0);
    rec = &cap_get(2)->rec;
    assert_int_equal(rec->msg_len, 4096 + 3 + 1);
    assert_true(rec->flags & NWB_LOG_RECORD_TRUNCATED);
    rec = &cap_get(3)->rec;
    assert_int_equal(rec->msg_len, 101);
    assert_int_equal(rec->flags & NWB_LOG_RECORD_TRUNCATED, 0);
    free(huge);
}

/* Every length around the short-string copy's steps (4, 8, 16 bytes and its 16-byte loop) is
 * copied exactly, from heap strings of that exact size (ASan sees any read past the end). */
static void test_string_lengths_0_to_70_copy_exactly(void **state)
{
    char want[96];

    for (size_t len = 0; len <= 70; len++) {
        char *s = malloc(len + 1u);

        assert_non_null(s);
        for (size_t i = 0; i < len; i++) {
            s[i] = (char)('a' + (i * 7u + len) % 26u);
        }
        s[len] = '\0';
        NWB_LOGGER_INFO("<%s|%d>", s, (int)len);
        free(s); /* the call copied it */
    }
    assert_int_equal(nwb_client_flush(*state, 10000), 0);
    assert_int_equal(cap_count(), 71);
    for (size_t len = 0; len <= 70; len++) {
        char s[80];

        for (size_t i = 0; i < len; i++) {
            s[i] = (char)('a' + (i * 7u + len) % 26u);
        }
        s[len] = '\0';
        snprintf(want, sizeof(want), "<%s|%d>", s, (int)len);
        assert_string_equal(cap_get(len)->msg, want);
    }
}

/* The inline length reads aligned words: every start alignment, lengths across its 32-byte
 * inline span, and bytes after the NUL that are not NUL themselves. */
static void test_string_lengths_at_every_alignment(void **state)
{
    char buf[64 + 8];
    char want[96];

    for (size_t at = 0; at < 8; at++) {
        for (size_t len = 0; len <= 40; len++) {
            memset(buf, 'x', sizeof(buf));
            for (size_t i = 0; i < len; i++) {
                buf[at + i] = (char)('a' + (i * 5u + len + at) % 26u);
            }
            buf[at + len] = '\0';
            snprintf(want, sizeof(want), "<%s|%d>", buf + at, (int)len);
            expect_msg(want);
            NWB_LOGGER_INFO("<%s|%d>", buf + at, (int)len);
        }
    }
    assert_all_expected(*state);
}

/* A string that ends on the last byte of a page followed by an inaccessible one: no read
 * crosses into it, whatever the string's alignment. */
static void test_string_at_the_end_of_a_page(void **state)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *map = mmap(NULL, 2u * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    assert_true(map != MAP_FAILED);
    assert_int_equal(mprotect(map + page, page, PROT_NONE), 0);
    memset(map, 'p', page);
    for (size_t len = 0; len <= 40; len++) {
        char *s = map + page - 1u - len;
        char want[64];

        map[page - 1u] = '\0';
        snprintf(want, sizeof(want), "[%s]", s);
        expect_msg(want);
        NWB_LOGGER_INFO("[%s]", s);
    }
    assert_all_expected(*state);
    munmap(map, 2u * page);
}

static void test_string_bound_edge_4096_kept_4097_cut(void **state)
{
    char *s = malloc(4098);

    memset(s, 'e', 4097);
    s[4097] = '\0';
    NWB_LOGGER_INFO("%s", s + 1); /* exactly 4096 bytes */
    NWB_LOGGER_INFO("%s", s);     /* 4097 bytes */
    assert_int_equal(nwb_client_flush(*state, 10000), 0);
    assert_int_equal(cap_count(), 2);
    assert_int_equal(cap_get(0)->rec.msg_len, 4096);
    assert_int_equal(cap_get(0)->rec.flags & NWB_LOG_RECORD_TRUNCATED, 0);
    assert_int_equal(cap_get(1)->rec.msg_len, 4096 + 3);
    assert_true(cap_get(1)->rec.flags & NWB_LOG_RECORD_TRUNCATED);
    assert_memory_equal(cap_get(1)->msg + 4096, "...", 3);
    free(s);
}

static void test_messages_over_the_record_bound_are_cut(void **state)
{
    const size_t huge_len = NWB_LOG_RECORD_MSG_MAX + 5000u;
    char *huge = malloc(huge_len + 1);
    const nwb_log_record_t *rec;

    memset(huge, 'z', huge_len);
    huge[huge_len] = '\0';
    NWB_LOGGER_INFO(huge);            /* raw */
    NWB_LOGGER_INFO("%70000d|", 1);   /* deferred: the render is bounded */
    NWB_LOGGER_INFO("%70000d|%m", 1); /* vsnprintf path */
    assert_int_equal(nwb_client_flush(*state, 10000), 0);
    assert_int_equal(cap_count(), 3);
    for (size_t i = 0; i < 3; i++) {
        rec = &cap_get(i)->rec;
        assert_true(rec->msg_len <= NWB_LOG_RECORD_MSG_MAX);
        assert_true(rec->msg_len > NWB_LOG_RECORD_MSG_MAX - 64u);
        assert_true(rec->flags & NWB_LOG_RECORD_TRUNCATED);
        assert_memory_equal(rec->msg + rec->msg_len - 3, "...", 3);
    }
    free(huge);
}

static void test_essential_macros_mark_records(void **state)
{
    NWB_LOGGER_ESSENTIAL_INFO("ess %d", 1);
    NWB_LOGGER_ESSENTIAL_WARNING("ess raw");
    NWB_LOGGER_ESSENTIAL_ERROR("ess %s", "three");
    NWB_LOGGER_INFO("plain %d", 4);
    assert_int_equal(nwb_client_flush(*state, 10000), 0);
    assert_int_equal(cap_count(), 4);
    assert_string_equal(cap_get(0)->msg, "ess 1");
    assert_int_equal(cap_get(0)->rec.level, NWB_LOG_INFO);
    assert_string_equal(cap_get(1)->msg, "ess raw");
    assert_int_equal(cap_get(1)->rec.level, NWB_LOG_WARNING);
    assert_string_equal(cap_get(2)->msg, "ess three");
    assert_int_equal(cap_get(2)->rec.level, NWB_LOG_ERROR);
    for (size_t i = 0; i < 3; i++) {
        assert_true(cap_get(i)->rec.flags & NWB_LOG_RECORD_ESSENTIAL);
    }
    assert_int_equal(cap_get(3)->rec.flags & NWB_LOG_RECORD_ESSENTIAL, 0);
}

struct thread_call {
    uint64_t tid;
    uint32_t line;
};

static void *log_from_thread(void *arg)
{
    struct thread_call *tc = arg;

    tc->tid = test_gettid();
    tc->line = __LINE__ + 1;
    NWB_LOGGER_ERROR("from thread %d", 2);
    return NULL;
}

static void test_records_carry_level_file_line_thread_and_time(void **state)
{
    struct thread_call tc;
    const uint64_t before = nwb_time_now_ns();
    const uint32_t line = __LINE__ + 1;
    NWB_LOGGER_WARNING("main %d", 1);
    pthread_t t;
    uint64_t after;
    const nwb_log_record_t *a;
    const nwb_log_record_t *b;

    assert_int_equal(pthread_create(&t, NULL, log_from_thread, &tc), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    after = nwb_time_now_ns();
    assert_int_equal(nwb_client_flush(*state, 10000), 0);
    assert_int_equal(cap_count(), 2);
    a = &cap_get(0)->rec;
    b = &cap_get(1)->rec;
    assert_string_equal(cap_get(0)->msg, "main 1");
    assert_int_equal(a->level, NWB_LOG_WARNING);
    assert_string_equal(cap_get(0)->file, "test_macros.c"); /* the base name */
    assert_int_equal(a->line, line);
    assert_int_equal(a->thread_id, test_gettid());
    /* The worker converts the call's stamp: within the clock's bound (client_clock.h). */
    assert_true(a->time_ns + NWB__CLOCK_ERROR_MAX_NS >= before &&
                a->time_ns <= after + NWB__CLOCK_ERROR_MAX_NS);
    assert_string_equal(cap_get(1)->msg, "from thread 2");
    assert_int_equal(b->level, NWB_LOG_ERROR);
    assert_int_equal(b->line, tc.line);
    assert_int_equal(b->thread_id, tc.tid);
    assert_true(b->thread_id != a->thread_id);
    assert_true(b->time_ns >= a->time_ns && b->time_ns <= after + NWB__CLOCK_ERROR_MAX_NS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
        T(test_raw_one_argument_prints_literally),
        T(test_integer_kinds_render_like_snprintf),
        T(test_float_kinds_render_like_snprintf),
        T(test_pointer_char_string_kinds_render_like_snprintf),
        T(test_null_string_prints_null_marker),
        T(test_many_arguments_defer_up_to_limit_and_fall_back_beyond),
        T(test_unsupported_conversions_use_vsnprintf),
        T(test_percent_n_is_never_executed),
        T(test_long_strings_are_cut_and_marked),
        T(test_string_lengths_0_to_70_copy_exactly),
        T(test_string_lengths_at_every_alignment),
        T(test_string_at_the_end_of_a_page),
        T(test_string_bound_edge_4096_kept_4097_cut),
        T(test_messages_over_the_record_bound_are_cut),
        T(test_essential_macros_mark_records),
        T(test_records_carry_level_file_line_thread_and_time),
#undef T
    };

    return cmocka_run_group_tests_name("client.macros", tests, NULL, NULL);
}
