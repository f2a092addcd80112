/* SPDX-License-Identifier: MIT */
/*
 * test_standalone.c - the standalone file output: the run layout under
 * log_dir, lines identical to common's nwb_log_line_format, the console
 * echo, and write failures (/dev/full) reported exactly once on stderr,
 * never into the file, and again only after a write succeeded in between.
 */
#define _GNU_SOURCE
#undef NWB_FINAL
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "nwb/client.h"
#include "nwb/log.h"
#include "nwb/log_line.h"

#include "client_clock.h"
#include "client_core.h"
#include "test_core_capture.h"
#include "test_support.h"

struct fixture {
    char dir[512];
    char errpath[600];
    int saved_stderr;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("standalone", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->errpath, sizeof(f->errpath), "%s/stderr.txt", f->dir);
    f->saved_stderr = -1;
    *state = f;
    return 0;
}

static void stderr_restore(struct fixture *f)
{
    if (f->saved_stderr >= 0) {
        fflush(stderr);
        dup2(f->saved_stderr, STDERR_FILENO);
        close(f->saved_stderr);
        f->saved_stderr = -1;
    }
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    stderr_restore(f);
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* Send fd 2 to a file until stderr_restore(). */
static void stderr_capture(struct fixture *f)
{
    int fd = open(f->errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    assert_true(fd >= 0);
    fflush(stderr);
    f->saved_stderr = dup(STDERR_FILENO);
    assert_true(f->saved_stderr >= 0);
    assert_true(dup2(fd, STDERR_FILENO) >= 0);
    close(fd);
}

static size_t count_substr(const char *text, const char *needle)
{
    size_t n = 0;

    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle)) {
        n++;
    }
    return n;
}

static nwb_client_t *standalone(struct fixture *f, const char *program, const char *run,
                                int console)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *c = NULL;
    char err[256] = "";

    cfg.mode = NWB_CLIENT_MODE_STANDALONE;
    cfg.log_dir = f->dir;
    cfg.program = program;
    cfg.run_id = run;
    cfg.console = console;
    if (nwb_client_create(&cfg, &c, err, sizeof(err)) != 0) {
        print_error("create: %s\n", err);
        return NULL;
    }
    return c;
}

/* "2026-12-01T07:34:00.123456789Z" -> ns since the epoch. */
static uint64_t parse_time(const char *s)
{
    struct tm tm;
    unsigned long nsec = 0;

    memset(&tm, 0, sizeof(tm));
    assert_int_equal(sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%9luZ", &tm.tm_year, &tm.tm_mon,
                            &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &nsec),
                     7);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (uint64_t)timegm(&tm) * 1000000000u + nsec;
}

struct expect_line {
    int level;
    uint32_t line;
    uint8_t flags;
    const char *msg;
};

static void test_lines_match_common_line_format_and_layout(void **state)
{
    struct fixture *f = *state;
    const uint64_t before = nwb_time_now_ns();
    nwb_client_t *c = standalone(f, "fmtprog", "0123456789abcdef", 0);
    const uint64_t after = nwb_time_now_ns();
    struct expect_line want[3];
    char stamp_lo[16];
    char stamp_hi[16];
    char path[1024];
    char runs[600];
    char *text;
    char *save = NULL;
    char tname[16];
    size_t tname_len = test_thread_name(tname);
    size_t n = 0;
    DIR *d;
    struct dirent *e;
    int dirs = 0;

    assert_non_null(c);
    want[0] = (struct expect_line){NWB_LOG_INFO, __LINE__ + 1, 0, "hello 7"};
    NWB_LOGGER_INFO("hello %d", 7);
    want[1] = (struct expect_line){NWB_LOG_ERROR, __LINE__ + 1, 0, "multi\nline\tand \x01"};
    NWB_LOGGER_ERROR("multi\nline\tand \x01");
    want[2] = (struct expect_line){NWB_LOG_WARNING, __LINE__ + 1, NWB_LOG_RECORD_ESSENTIAL, "ess"};
    NWB_LOGGER_ESSENTIAL_WARNING("%s", "ess");
    assert_int_equal(nwb_client_flush(c, 10000), 0);

    /* runs/<program>_<YYYYmmdd-HHMMSS>_<run>/log.txt, stamped with the run's start. */
    snprintf(runs, sizeof(runs), "%s/runs", f->dir);
    d = opendir(runs);
    assert_non_null(d);
    nwb_time_compact(before, stamp_lo);
    nwb_time_compact(after, stamp_hi);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        dirs++;
        assert_int_equal(strlen(e->d_name), strlen("fmtprog_20261201-073400_0123456789abcdef"));
        assert_memory_equal(e->d_name, "fmtprog_", 8);
        assert_true(memcmp(e->d_name + 8, stamp_lo, 15) >= 0);
        assert_true(memcmp(e->d_name + 8, stamp_hi, 15) <= 0);
        assert_string_equal(e->d_name + 8 + 15, "_0123456789abcdef");
    }
    closedir(d);
    assert_int_equal(dirs, 1);

    assert_int_equal(
        nwb_test_find_run_log(f->dir, "fmtprog", "0123456789abcdef", path, sizeof(path)), 0);
    text = nwb_test_read_file(path, NULL);
    assert_non_null(text);
    for (char *line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        nwb_log_line_clock_t clock = NWB_LOG_LINE_CLOCK_INIT;
        nwb_log_record_t rec;
        char formatted[1024];
        size_t len;

        assert_true(n < 3);
        memset(&rec, 0, sizeof(rec));
        rec.time_ns = parse_time(line);
        assert_true(rec.time_ns >= before / 1000u * 1000u);
        rec.thread_id = test_gettid();
        rec.thread_name = tname;
        rec.thread_name_len = (uint8_t)tname_len;
        rec.level = (uint8_t)want[n].level;
        rec.flags = want[n].flags;
        rec.line = want[n].line;
        rec.file = "test_standalone.c";
        rec.file_len = (uint16_t)strlen(rec.file);
        rec.msg = want[n].msg;
        rec.msg_len = (uint32_t)strlen(want[n].msg);
        len = nwb_log_line_format(formatted, sizeof(formatted), &clock, &rec, "fmtprog", 7);
        assert_true(len > 0 && formatted[len - 1] == '\n');
        formatted[len - 1] = '\0';
        assert_string_equal(line, formatted);
        n++;
    }
    assert_int_equal(n, 3);
    free(text);
    nwb_client_destroy(c);
}

/*
 * log.txt's time of each line lies within NWB__CLOCK_ERROR_MAX_NS of the wall
 * clock read around its call, for lines the worker converts after one or more
 * re-anchors (a flush after each call, 1.5 ms of busy time between calls),
 * with the TSC stamp where there is one and with CLOCK_REALTIME stamps.
 */
static void line_times_within_bound(struct fixture *f, int force_realtime)
{
    enum { CALLS = 24 };
    const char *program = force_realtime ? "clockrt" : "clocktsc";
    /* CLOCK_REALTIME stamps are read at the call: exact, no tolerance. */
    const uint64_t bound = force_realtime ? 0u : NWB__CLOCK_ERROR_MAX_NS;
    uint64_t lo[CALLS];
    uint64_t hi[CALLS];
    uint64_t worst = 0;
    uint64_t anchors_first = 0;
    char path[1024];
    char *text;
    char *save = NULL;
    int n = 0;
    nwb_client_t *c;

    nwb__clock_test_force_realtime = force_realtime;
    c = standalone(f, program, "00000000000000c1", 0);
    nwb__clock_test_force_realtime = 0;
    assert_non_null(c);
    if (force_realtime) {
        assert_int_equal(c->clock.tsc, 0);
    }
    for (int i = 0; i < CALLS; i++) {
        const uint64_t until = nwb_time_mono_ns() + NWB__CLOCK_ANCHOR_EVERY_NS * 3u / 2u;

        while (nwb_time_mono_ns() < until) {
        }
        lo[i] = nwb_time_now_ns();
        NWB_LOGGER_INFO("clock %d", i);
        hi[i] = nwb_time_now_ns();
        assert_int_equal(nwb_client_flush(c, 10000), 0);
        if (i == 0) {
            anchors_first = atomic_load_explicit(&c->clock.anchors, memory_order_relaxed);
        }
    }
    if (c->clock.tsc) {
        assert_true(atomic_load_explicit(&c->clock.anchors, memory_order_relaxed) >=
                    anchors_first + CALLS - 1u);
    }
    nwb_client_destroy(c);
    assert_int_equal(nwb_test_find_run_log(f->dir, program, "00000000000000c1", path, sizeof(path)),
                     0);
    text = nwb_test_read_file(path, NULL);
    assert_non_null(text);
    for (char *line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        const uint64_t t = parse_time(line);
        char want[32];

        assert_true(n < CALLS);
        snprintf(want, sizeof(want), ": clock %d", n);
        assert_non_null(strstr(line, want));
        /* The line keeps ns; a stamp outside [lo, hi] may be off by at most the bound. */
        if (t < lo[n]) {
            assert_true(lo[n] - t <= bound);
            worst = lo[n] - t > worst ? lo[n] - t : worst;
        } else if (t > hi[n]) {
            assert_true(t - hi[n] <= bound);
            worst = t - hi[n] > worst ? t - hi[n] : worst;
        }
        n++;
    }
    assert_int_equal(n, CALLS);
    print_message("%s stamps: worst distance outside the call's bracket %llu ns\n",
                  force_realtime ? "CLOCK_REALTIME" : "client clock", (unsigned long long)worst);
    free(text);
}

static void test_line_times_stay_within_bound_of_the_wall_clock(void **state)
{
    line_times_within_bound(*state, 0);
}

static void test_line_times_with_realtime_stamps_are_exact(void **state)
{
    line_times_within_bound(*state, 1);
}

static void test_console_echoes_the_same_lines_to_stderr(void **state)
{
    struct fixture *f = *state;
    nwb_client_t *c;
    char path[1024];
    char *file_text;
    char *err_text;

    stderr_capture(f);
    c = standalone(f, "consoleprog", "c0ffee", 1);
    assert_non_null(c);
    NWB_LOGGER_INFO("to the console %d", 1);
    NWB_LOGGER_WARNING("and %s", "again");
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    nwb_client_destroy(c);
    stderr_restore(f);

    assert_int_equal(nwb_test_find_run_log(f->dir, "consoleprog", "c0ffee", path, sizeof(path)), 0);
    file_text = nwb_test_read_file(path, NULL);
    err_text = nwb_test_read_file(f->errpath, NULL);
    assert_non_null(file_text);
    assert_non_null(err_text);
    assert_non_null(strstr(file_text, ": to the console 1\n"));
    assert_string_equal(err_text, file_text);
    free(file_text);
    free(err_text);
}

static void test_no_console_echo_when_console_is_off(void **state)
{
    struct fixture *f = *state;
    nwb_client_t *c;
    char *err_text;

    stderr_capture(f);
    c = standalone(f, "quietprog", "q1", 0);
    assert_non_null(c);
    NWB_LOGGER_INFO("quiet %d", 1);
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    nwb_client_destroy(c);
    stderr_restore(f);
    err_text = nwb_test_read_file(f->errpath, NULL);
    assert_non_null(err_text);
    assert_string_equal(err_text, "");
    free(err_text);
}

static nwb_log_record_t sample_record(const char *msg)
{
    nwb_log_record_t rec;

    memset(&rec, 0, sizeof(rec));
    rec.time_ns = 1700000000000000000ull;
    rec.thread_id = 42;
    rec.level = NWB_LOG_INFO;
    rec.line = 7;
    rec.file = "x.c";
    rec.file_len = 3;
    rec.msg = msg;
    rec.msg_len = (uint32_t)strlen(msg);
    return rec;
}

static void test_write_failure_is_reported_once_until_a_write_succeeds(void **state)
{
    struct fixture *f = *state;
    struct nwb__settings s;
    struct nwb__stats st;
    struct nwb__out *o = NULL;
    char stamp[16];
    char run_dir[800];
    char link_path[900];
    char good_path[700];
    char err[256] = "";
    char *err_text;
    char *good_text;
    nwb_log_record_t rec;

    memset(&s, 0, sizeof(s));
    memset(&st, 0, sizeof(st));
    snprintf(s.program, sizeof(s.program), "full");
    snprintf(s.run_id, sizeof(s.run_id), "r1");
    snprintf(s.log_dir, sizeof(s.log_dir), "%s", f->dir);
    s.mode = NWB_CLIENT_MODE_STANDALONE;
    s.start_time_ns = 1700000000000000000ull;
    nwb_time_compact(s.start_time_ns, stamp);
    snprintf(run_dir, sizeof(run_dir), "%s/runs", f->dir);
    assert_int_equal(mkdir(run_dir, 0755), 0);
    snprintf(run_dir, sizeof(run_dir), "%s/runs/full_%s_r1", f->dir, stamp);
    assert_int_equal(mkdir(run_dir, 0755), 0);
    snprintf(link_path, sizeof(link_path), "%s/log.txt", run_dir);
    assert_int_equal(symlink("/dev/full", link_path), 0);

    assert_int_equal(nwb__file_out_create(&s, &st, &o, err, sizeof(err)), 0);
    stderr_capture(f);
    for (int round = 0; round < 3; round++) {
        rec = sample_record("into /dev/full");
        assert_int_equal(o->ops->append(o, &rec), 0);
        assert_int_equal(o->ops->append(o, &rec), 0);
        o->ops->commit(o, 0, 0);
        assert_true(o->ops->settled(o)); /* failed lines are dropped, not kept forever */
    }
    fflush(stderr);
    err_text = nwb_test_read_file(f->errpath, NULL);
    assert_non_null(err_text);
    assert_int_equal(count_substr(err_text, "nwb: cannot write"), 1);
    assert_non_null(strstr(err_text, link_path));
    assert_non_null(strstr(err_text, "No space left on device"));
    free(err_text);
    assert_int_equal(atomic_load(&st.write_errors), 3);
    assert_int_equal(atomic_load(&st.records_written), 0);

    /* A write that succeeds re-arms the report; nothing about the failure lands in the file. */
    snprintf(good_path, sizeof(good_path), "%s/good.txt", f->dir);
    nwb__file_out_swap_fd(o, open(good_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    rec = sample_record("good one");
    assert_int_equal(o->ops->append(o, &rec), 0);
    rec = sample_record("good two");
    assert_int_equal(o->ops->append(o, &rec), 0);
    o->ops->commit(o, 0, 0);
    assert_int_equal(atomic_load(&st.records_written), 2);
    good_text = nwb_test_read_file(good_path, NULL);
    assert_non_null(good_text);
    assert_int_equal(count_substr(good_text, "\n"), 2);
    assert_non_null(strstr(good_text, "INFO    42 full x.c:7: good one\n"));
    assert_null(strstr(good_text, "nwb:"));
    free(good_text);

    nwb__file_out_swap_fd(o, open("/dev/full", O_WRONLY | O_CLOEXEC));
    rec = sample_record("full again");
    assert_int_equal(o->ops->append(o, &rec), 0);
    o->ops->commit(o, 0, 0);
    o->ops->commit(o, 0, 0);
    rec = sample_record("and again");
    assert_int_equal(o->ops->append(o, &rec), 0);
    o->ops->commit(o, 0, 0);
    fflush(stderr);
    err_text = nwb_test_read_file(f->errpath, NULL);
    assert_int_equal(count_substr(err_text, "nwb: cannot write"), 2);
    free(err_text);
    assert_int_equal(atomic_load(&st.write_errors), 5);
    o->ops->close(o, 0);
    o->ops->destroy(o);
    stderr_restore(f);
}

static void test_client_on_a_failing_file_reports_once_and_keeps_running(void **state)
{
    struct fixture *f = *state;
    const uint64_t now = nwb_time_now_ns();
    char runs[600];
    nwb_client_t *c;
    nwb_client_stats_t st;
    char *err_text;

    /* The run directory name has the start second in it: pre-make it for the next few. */
    snprintf(runs, sizeof(runs), "%s/runs", f->dir);
    assert_int_equal(mkdir(runs, 0755), 0);
    for (int s = -1; s <= 5; s++) {
        char stamp[16];
        char dir[800];
        char link_path[900];

        nwb_time_compact(now + (uint64_t)((int64_t)s * 1000000000), stamp);
        snprintf(dir, sizeof(dir), "%s/devfull_%s_fullrun", runs, stamp);
        if (mkdir(dir, 0755) == 0) {
            snprintf(link_path, sizeof(link_path), "%s/log.txt", dir);
            assert_int_equal(symlink("/dev/full", link_path), 0);
        }
    }
    stderr_capture(f);
    c = standalone(f, "devfull", "fullrun", 0);
    assert_non_null(c);
    for (int i = 0; i < 5; i++) {
        NWB_LOGGER_INFO("lost %d", i);
        assert_int_equal(nwb_client_flush(c, 10000), 0); /* a failed write still settles */
    }
    nwb_client_stats_get(c, &st);
    assert_int_equal(st.records_accepted, 5);
    assert_int_equal(st.records_written, 0);
    assert_int_equal(st.write_errors, 5);
    nwb_client_destroy(c);
    stderr_restore(f);
    err_text = nwb_test_read_file(f->errpath, NULL);
    assert_non_null(err_text);
    assert_int_equal(count_substr(err_text, "nwb: cannot write"), 1);
    assert_non_null(strstr(err_text, "/log.txt: No space left on device"));
    free(err_text);
}

static void test_unusable_log_dir_fails_create_with_a_clear_error(void **state)
{
    struct fixture *f = *state;
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *c = (nwb_client_t *)&cfg; /* must be reset to NULL */
    char plain[600];
    char err[512] = "";
    FILE *fp;

    snprintf(plain, sizeof(plain), "%s/plainfile", f->dir);
    fp = fopen(plain, "w");
    assert_non_null(fp);
    fclose(fp);
    cfg.mode = NWB_CLIENT_MODE_STANDALONE;
    cfg.log_dir = plain;
    cfg.program = "nodir";
    assert_int_equal(nwb_client_create(&cfg, &c, err, sizeof(err)), -ENOTDIR);
    assert_null(c);
    assert_non_null(strstr(err, plain));
    assert_non_null(strstr(err, "Not a directory"));
    /* Nothing is left running: a new client can be made right away. */
    cfg.log_dir = f->dir;
    assert_int_equal(nwb_client_create(&cfg, &c, err, sizeof(err)), 0);
    nwb_client_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        T(test_lines_match_common_line_format_and_layout),
        T(test_line_times_stay_within_bound_of_the_wall_clock),
        T(test_line_times_with_realtime_stamps_are_exact),
        T(test_console_echoes_the_same_lines_to_stderr),
        T(test_no_console_echo_when_console_is_off),
        T(test_write_failure_is_reported_once_until_a_write_succeeds),
        T(test_client_on_a_failing_file_reports_once_and_keeps_running),
        T(test_unusable_log_dir_fails_create_with_a_clear_error),
#undef T
    };

    return cmocka_run_group_tests_name("client.standalone", tests, NULL, NULL);
}
