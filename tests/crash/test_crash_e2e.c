/* SPDX-License-Identifier: MIT */
/*
 * test_crash_e2e.c - crash capture and ingest through the real nwb-logserver
 * on 127.0.0.1 port 0: each crash mode's package reaches the server and is
 * extracted there (function named after symbolisation, log lines inside);
 * a package left pending while the server was down is uploaded at the next
 * start; bad archives end in invalid/ with the server still serving;
 * retention with small caps and with 0; repeated uploads get one id; the
 * JSON views (strict JSON) and /metrics. Nothing here is skipped: the crash
 * routes exist, so a 404 is a failure. NWB_CRASH_E2E_SERVER overrides the
 * binary.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nwb/crash.h"
#include "nwb/error.h"

#include "crash_test_archive.h"
#include "crash_test_run.h"
#include "json_check.h"
#include "test_support.h"

#define WAIT_MS 30000

struct fixture {
    char base[512];
    char out[600];
    char crash_dir[600];
    char unpacked[600];
    char sentinel[600];
    char server[64];
    struct nwb_test_server srv;
    int started;
};

static const char sentinel_text[] = "e2e sentinel\n";

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("crash-e2e", f->base, sizeof(f->base)) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->out, sizeof(f->out), "%s/out", f->base);
    snprintf(f->crash_dir, sizeof(f->crash_dir), "%s/crashes", f->base);
    snprintf(f->unpacked, sizeof(f->unpacked), "%s/unpacked", f->base);
    snprintf(f->sentinel, sizeof(f->sentinel), "%s/sentinel.txt", f->base);
    mkdir(f->unpacked, 0700);
    if (ta_write_file(f->sentinel, sentinel_text, sizeof(sentinel_text) - 1) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    if (f->started) {
        nwb_test_server_stop(&f->srv, SIGTERM, 10000);
    }
    nwb_test_rmtree(f->base);
    free(f);
    return 0;
}

/* GET @p url into @p body; a 200 answer must be strict JSON, and is not truncated. */
static int get_json(struct fixture *f, const char *url, char *body, size_t cap)
{
    const int status = nwb_test_http(f->srv.port, "GET", url, NULL, NULL, 0, body, cap);
    size_t bad = 0;

    if (status == 200) {
        assert_true(strlen(body) + 1 < cap);
        if (nwb_test_json_check(body, strlen(body), &bad) != 0) {
            fail_msg("%s is not valid JSON at byte %zu: %.2000s", url, bad, body);
        }
    }
    return status;
}

/* Start the server (with extra arguments); its crash routes answer. */
static void start_server(struct fixture *f, const char *const *extra)
{
    const char *exe = getenv("NWB_CRASH_E2E_SERVER");
    char body[256];

    assert_int_equal(nwb_test_server_start(&f->srv, exe, f->out, 0, extra), 0);
    f->started = 1;
    snprintf(f->server, sizeof(f->server), "127.0.0.1:%d", f->srv.port);
    assert_int_equal(get_json(f, "/v1/crashes", body, sizeof(body)), 200);
}

static int post_archive(struct fixture *f, const void *body, size_t len, char *id, size_t cap)
{
    char resp[512];
    const char *p;
    const int status = nwb_test_http(f->srv.port, "POST", "/v1/crash",
                                     "X-NWB-Program: e2e\r\nX-NWB-Run: 00000000000000e2\r\n", body,
                                     len, resp, sizeof(resp));

    id[0] = '\0';
    if (status == 200 && nwb_test_json_check(resp, strlen(resp), NULL) != 0) {
        fail_msg("the POST /v1/crash answer is not valid JSON: %s", resp);
    }
    p = strstr(resp, "\"id\"");
    if (status == 200 && p != NULL) {
        p = strchr(p + 4, '"');
        if (p != NULL) {
            snprintf(id, cap, "%.*s", (int)strcspn(p + 1, "\""), p + 1);
        }
    }
    return status;
}

static void server_path(const struct fixture *f, char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void server_path(const struct fixture *f, char *buf, size_t cap, const char *fmt, ...)
{
    char rel[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(rel, sizeof(rel), fmt, ap);
    va_end(ap);
    if (snprintf(buf, cap, "%s/crashes/%s", f->out, rel) >= (int)cap) {
        fail_msg("test path too long");
    }
}

static int wait_extracted(struct fixture *f, const char *id)
{
    char p[800];

    server_path(f, p, sizeof(p), "packages/%s/manifest.txt", id);
    return nwb_test_wait_file_contains(p, "nwb-crash-manifest 1", WAIT_MS);
}

static int wait_invalid(struct fixture *f, const char *id)
{
    char p[800];

    server_path(f, p, sizeof(p), "invalid/%s.reason.txt", id);
    return nwb_test_wait_file_contains(p, "id=", WAIT_MS);
}

static long count(const struct fixture *f, const char *cat)
{
    char p[800];

    server_path(f, p, sizeof(p), "%s", cat);
    return ta_count_dir(p);
}

/* The id of the newest upload in <crash_dir>/upload.log, once the uploader is done. */
static void uploaded_id(struct fixture *f, char *id, size_t cap)
{
    nwb_crash_pending_entry_t e[4];
    char log[700];
    char *text, *last;
    size_t n = 4;

    assert_int_equal(nwb_crash_pending_list(f->crash_dir, 1, WAIT_MS, e, 4, &n), 0);
    assert_int_equal(n, 0);
    snprintf(log, sizeof(log), "%s/upload.log", f->crash_dir);
    text = nwb_test_read_file(log, NULL);
    assert_non_null(text);
    last = NULL;
    for (char *p = strstr(text, ": id "); p != NULL; p = strstr(p + 1, ": id ")) {
        last = p;
    }
    if (last == NULL) {
        fail_msg("no upload in %s:\n%s", log, text);
    }
    snprintf(id, cap, "%.*s", (int)strcspn(last + 5, " \n"), last + 5);
    free(text);
}

static void check_server_package(struct fixture *f, const char *id, const char *function,
                                 const char *log_line)
{
    char p[800], names[8192], fn[128];
    char *tail;

    assert_true(wait_extracted(f, id));
    server_path(f, p, sizeof(p), "packages/%s/crash.txt", id);
    assert_true(crash_symbolise(p, CRASH_PROG_EXE, names, sizeof(names)) > 0);
    snprintf(fn, sizeof(fn), "%s\n", function);
    if (strstr(names, fn) == NULL) {
        fail_msg("%s not among the symbolised frames of %s:\n%s", function, p, names);
    }
    server_path(f, p, sizeof(p), "packages/%s/log_tail.txt", id);
    tail = nwb_test_read_file(p, NULL);
    assert_non_null(tail);
    if (log_line != NULL && strstr(tail, log_line) == NULL) {
        fail_msg("\"%s\" not in the server's log_tail.txt:\n%s", log_line, tail);
    }
    free(tail);
}

static void test_crash_e2e_every_mode_reaches_the_server(void **state)
{
    static const struct {
        const char *mode;
        int sig;
        const char *function;
    } modes[] = {
        {"null", SIGSEGV, "crash_prog_null_deref"},
        {"abort", SIGABRT, "crash_prog_abort"},
        {"stack_main", SIGSEGV, "crash_prog_recurse"},
        {"stack_thread", SIGSEGV, "crash_prog_recurse"},
        {"fpe", SIGFPE, "crash_prog_fpe"},
        {"thread_signal", SIGBUS, "crash_prog_thread_raise"},
        {"early", SIGSEGV, "crash_prog_early"},
    };
    struct fixture *f = *state;

    start_server(f, NULL);
    for (size_t i = 0; i < NWB_ARRAY_SIZE(modes); i++) {
        struct crash_run r;
        char id[128], line[256], body[65536];
        int early = strcmp(modes[i].mode, "early") == 0;

        assert_int_equal(
            crash_run(modes[i].mode, f->crash_dir, f->server, NWB_CRASH_HELPER_EXE, NULL, &r), 0);
        if (!WIFSIGNALED(r.status) || WTERMSIG(r.status) != modes[i].sig) {
            fail_msg("%s: status 0x%x", modes[i].mode, r.status);
        }
        uploaded_id(f, id, sizeof(id));
        snprintf(line, sizeof(line), "crash_prog step 4 before %s\n", modes[i].mode);
        check_server_package(f, id, modes[i].function, early ? NULL : line);
        /* The listing names it with its run and signal. */
        snprintf(line, sizeof(line), "/v1/crashes/%s", id);
        assert_int_equal(get_json(f, line, body, sizeof(body)), 200);
        assert_non_null(strstr(body, "\"status\":\"extracted\""));
        assert_non_null(strstr(body, "\"program\":\"crash_prog\""));
        if (!early) {
            snprintf(line, sizeof(line), "\"run\":\"%s\"", r.run_id);
            assert_non_null(strstr(body, line));
        }
    }
    assert_int_equal(count(f, "packages"), (long)NWB_ARRAY_SIZE(modes));
}

static void test_crash_e2e_pending_package_is_uploaded_at_next_start(void **state)
{
    struct fixture *f = *state;
    nwb_crash_pending_entry_t e[4];
    struct crash_run r;
    char down[64], archive[1024], id[128];
    size_t n = 0;
    int closed_fd;
    const int port = crash_closed_port(&closed_fd);

    assert_true(port > 0);
    snprintf(down, sizeof(down), "127.0.0.1:%d", port);
    start_server(f, NULL);
    /* Crash while no server answers: the package waits. */
    assert_int_equal(crash_run("null", f->crash_dir, down, NWB_CRASH_HELPER_EXE, NULL, &r), 0);
    assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV);
    assert_int_equal(crash_pending_archive(f->crash_dir, archive, sizeof(archive)), 0);
    close(closed_fd);
    /* The next start (no crash this time) uploads it to the server that is up now. */
    assert_int_equal(crash_run("ok", f->crash_dir, f->server, NWB_CRASH_HELPER_EXE, NULL, &r), 0);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_int_equal(nwb_crash_pending_list(f->crash_dir, 1, WAIT_MS, e, 4, &n), 0);
    assert_int_equal(n, 0);
    uploaded_id(f, id, sizeof(id));
    check_server_package(f, id, "crash_prog_null_deref", "crash_prog step 4 before null\n");
}

static void test_crash_e2e_bad_archives_end_invalid_and_server_serves(void **state)
{
    struct fixture *f = *state;
    static const char manifest[] = "nwb-crash-manifest 1\nkind=signal\n";
    char abs[700];
    const struct ta_entry traversal[] = {
        {"manifest.txt", TA_FILE, manifest, sizeof(manifest) - 1, 0, 0, NULL},
        {"../../../sentinel.txt", TA_FILE, "x", 1, 0, 0, NULL}};
    struct ta_entry absolute[] = {
        {"manifest.txt", TA_FILE, manifest, sizeof(manifest) - 1, 0, 0, NULL},
        {NULL, TA_FILE, "x", 1, 0, 0, NULL}};
    const struct ta_entry symlink[] = {{"l", TA_SYMLINK, NULL, 0, 0, 0, "/"}};
    const struct ta_entry hardlink[] = {{"h", TA_HARDLINK, NULL, 0, 0, 0, "../../sentinel.txt"}};
    const struct ta_entry device[] = {{"d", TA_CHARDEV, NULL, 0, 0, 0, NULL}};
    const struct ta_entry fifo[] = {{"p", TA_FIFO, NULL, 0, 0, 0, NULL}};
    const struct ta_entry bomb[] = {
        {"manifest.txt", TA_FILE, manifest, sizeof(manifest) - 1, 0, 0, NULL},
        {"zeros", TA_FILE, NULL, 0, 1ull << 30, 0, NULL}};
    const struct ta_entry badname[] = {{"x\xff\xfe", TA_FILE, "x", 1, 0, 0, NULL}};
    const struct {
        const char *format;
        const struct ta_entry *e;
        size_t n;
    } cases[] = {{"tar", traversal, 2}, {"tar.zst", absolute, 2}, {"tar", symlink, 1},
                 {"tar", hardlink, 1},  {"tar", device, 1},       {"tar.gz", fifo, 1},
                 {"tar.zst", bomb, 2},  {"zip", badname, 1}};
    char id[128], body[65536]; /* /metrics whole */
    unsigned char noise[2048];

    snprintf(abs, sizeof(abs), "%s/abs.txt", f->base);
    absolute[1].path = abs;
    start_server(f, NULL);
    for (size_t i = 0; i < NWB_ARRAY_SIZE(cases); i++) {
        size_t len;
        void *a = ta_build(cases[i].format, cases[i].e, cases[i].n, &len);

        assert_non_null(a);
        assert_int_equal(post_archive(f, a, len, id, sizeof(id)), 200);
        assert_true(wait_invalid(f, id));
        free(a);
    }
    for (size_t i = 0; i < sizeof(noise); i++) {
        noise[i] = (unsigned char)(i * 7919u >> 3);
    }
    assert_int_equal(post_archive(f, noise, sizeof(noise), id, sizeof(id)), 200);
    assert_true(wait_invalid(f, id));
    assert_int_equal(post_archive(f, "", 0, id, sizeof(id)), 200);
    assert_true(wait_invalid(f, id));
    /* Nothing escaped --out, and the server still answers and still ingests. */
    {
        char *s = nwb_test_read_file(f->sentinel, NULL);

        assert_non_null(s);
        assert_string_equal(s, sentinel_text);
        free(s);
    }
    assert_false(ta_exists(abs));
    assert_int_equal(
        nwb_test_http(f->srv.port, "GET", "/v1/health", NULL, NULL, 0, body, sizeof(body)), 200);
    {
        size_t len;
        void *a = ta_package("tar.zst", "after the bad ones", &len);

        assert_int_equal(post_archive(f, a, len, id, sizeof(id)), 200);
        assert_true(wait_extracted(f, id));
        free(a);
    }
    assert_int_equal(count(f, "invalid"), 2 * 10);
    assert_int_equal(
        nwb_test_http(f->srv.port, "GET", "/metrics", NULL, NULL, 0, body, sizeof(body)), 200);
    assert_non_null(strstr(body, "nwb_crashes{category=\"invalid\"} 10\n"));
    assert_non_null(strstr(body, "nwb_crashes{category=\"packages\"} 1\n"));
    /* The listing names all eleven, as strict JSON, whatever the archives held. */
    {
        static char list[65536];
        int invalid = 0;

        assert_int_equal(get_json(f, "/v1/crashes", list, sizeof(list)), 200);
        for (const char *p = strstr(list, "\"status\":\"invalid\""); p != NULL;
             p = strstr(p + 1, "\"status\":\"invalid\"")) {
            invalid++;
        }
        assert_int_equal(invalid, 10);
        assert_non_null(strstr(list, "\"status\":\"extracted\""));
    }
}

static void upload_many(struct fixture *f, int n)
{
    for (int i = 0; i < n; i++) {
        char tag[32], id[128];
        size_t len;
        void *a;

        snprintf(tag, sizeof(tag), "many-%d", i);
        if (i % 4 == 3) {
            const struct ta_entry e[] = {{"crash.txt", TA_FILE, tag, strlen(tag), 0, 0, NULL}};

            a = ta_build("tar", e, 1, &len);
            assert_int_equal(post_archive(f, a, len, id, sizeof(id)), 200);
            assert_true(wait_invalid(f, id));
        } else {
            a = ta_package("tar.zst", tag, &len);
            assert_int_equal(post_archive(f, a, len, id, sizeof(id)), 200);
            assert_true(wait_extracted(f, id));
        }
        free(a);
    }
}

static void test_crash_e2e_retention_small_caps(void **state)
{
    struct fixture *f = *state;
    const char *const args[] = {"--crash-retain-packages",
                                "3",
                                "--crash-retain-raw",
                                "2",
                                "--crash-retain-invalid",
                                "1",
                                NULL};

    start_server(f, args);
    upload_many(f, 16);
    /* Retention runs right after each settle; the last upload is settled already. */
    assert_int_equal(count(f, "packages"), 3);
    assert_int_equal(count(f, "raw"), 2);
    assert_int_equal(count(f, "invalid"), 2); /* one archive + its reason */
}

static void test_crash_e2e_retention_zero_keeps_all(void **state)
{
    struct fixture *f = *state;
    const char *const args[] = {"--crash-retain-packages",
                                "0",
                                "--crash-retain-raw",
                                "0",
                                "--crash-retain-invalid",
                                "0",
                                NULL};

    start_server(f, args);
    upload_many(f, 16);
    assert_int_equal(count(f, "packages"), 12);
    assert_int_equal(count(f, "raw"), 12);
    assert_int_equal(count(f, "invalid"), 8);
}

static void test_crash_e2e_same_archive_twice_gets_one_id(void **state)
{
    struct fixture *f = *state;
    char id1[128], id2[128], body[65536];
    size_t len;
    void *a;

    start_server(f, NULL);
    a = ta_package("zip", "twice", &len);
    assert_int_equal(post_archive(f, a, len, id1, sizeof(id1)), 200);
    assert_int_equal(post_archive(f, a, len, id2, sizeof(id2)), 200);
    assert_string_equal(id1, id2);
    assert_true(wait_extracted(f, id1));
    assert_int_equal(post_archive(f, a, len, id2, sizeof(id2)), 200);
    assert_string_equal(id1, id2);
    assert_int_equal(count(f, "raw"), 1);
    assert_int_equal(get_json(f, "/v1/crashes", body, sizeof(body)), 200);
    assert_non_null(strstr(body, id1));
    assert_null(strstr(strstr(body, id1) + 1, id1)); /* listed once */
    assert_int_equal(nwb_test_http(f->srv.port, "GET", "/v1/crashes/nonsense", NULL, NULL, 0, body,
                                   sizeof(body)) /
                         100,
                     4);
    free(a);
}

/*
 * A server with --token-file: an upload without the token is answered 401 (and, 401 not being
 * a verdict on the archive, a pending package would stay pending); with $NWB_LOGSERVER_TOKEN or
 * $NWB_LOGSERVER_TOKEN_FILE it is stored. Unusable tokens fail before anything is sent.
 */
static void test_crash_e2e_upload_carries_the_server_token(void **state)
{
    static const char token[] = "crash-e2e-token-0123456789";
    struct fixture *f = *state;
    char token_file[700], archive[700], why[512];
    const char *extra[] = {"--token-file", token_file, NULL};
    nwb_crash_upload_result_t res;
    size_t len;
    void *a;

    snprintf(token_file, sizeof(token_file), "%s/token", f->base);
    assert_int_equal(ta_write_file(token_file, token, sizeof(token) - 1), 0);
    assert_int_equal(chmod(token_file, 0600), 0);
    snprintf(archive, sizeof(archive), "%s/e2e_00000000000000e2.zip", f->base);
    a = ta_package("zip", "token", &len);
    assert_int_equal(ta_write_file(archive, a, len), 0);
    free(a);
    assert_int_equal(
        nwb_test_server_start(&f->srv, getenv("NWB_CRASH_E2E_SERVER"), f->out, 0, extra), 0);
    f->started = 1;
    snprintf(f->server, sizeof(f->server), "127.0.0.1:%d", f->srv.port);
    unsetenv("NWB_LOGSERVER_TOKEN");
    unsetenv("NWB_LOGSERVER_TOKEN_FILE");

    assert_int_equal(nwb_crash_upload_file(archive, f->server, 5000, &res, why, sizeof(why)),
                     NWB_EHTTP);
    assert_int_equal(res.http_status, 401);
    setenv("NWB_LOGSERVER_TOKEN", "crash-e2e-wrong-token-000000", 1);
    assert_int_equal(nwb_crash_upload_file(archive, f->server, 5000, &res, why, sizeof(why)),
                     NWB_EHTTP);
    assert_int_equal(res.http_status, 401);
    setenv("NWB_LOGSERVER_TOKEN", "bad token", 1); /* a space: never sent */
    assert_int_equal(nwb_crash_upload_file(archive, f->server, 5000, &res, why, sizeof(why)),
                     NWB_ECONFIG);
    assert_non_null(strstr(why, "NWB_LOGSERVER_TOKEN"));
    setenv("NWB_LOGSERVER_TOKEN", token, 1);
    assert_int_equal(nwb_crash_upload_file(archive, f->server, 5000, &res, why, sizeof(why)), 0);
    assert_int_equal(res.http_status, 200);
    assert_true(wait_extracted(f, res.id));
    unsetenv("NWB_LOGSERVER_TOKEN");
    setenv("NWB_LOGSERVER_TOKEN_FILE", token_file, 1);
    assert_int_equal(nwb_crash_upload_file(archive, f->server, 5000, &res, why, sizeof(why)), 0);
    assert_int_equal(res.http_status, 200);
    unsetenv("NWB_LOGSERVER_TOKEN_FILE");
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_crash_e2e_every_mode_reaches_the_server),
        T(test_crash_e2e_pending_package_is_uploaded_at_next_start),
        T(test_crash_e2e_bad_archives_end_invalid_and_server_serves),
        T(test_crash_e2e_retention_small_caps),
        T(test_crash_e2e_retention_zero_keeps_all),
        T(test_crash_e2e_same_archive_twice_gets_one_id),
        T(test_crash_e2e_upload_carries_the_server_token),
    };
#undef T

    return cmocka_run_group_tests_name("crash.crash_e2e", tests, NULL, NULL);
}
