/* SPDX-License-Identifier: MIT */
/*
 * test_symbols_http.c - the symbol store against the real nwb-logserver and the real
 * nwb-crash: the test's own executable uploaded with `nwb-crash symbols upload` is stored at
 * its build-id path (.debug: it has DWARF) with identical bytes, again is "exists" (200,
 * stored:false), GET /v1/symbols/<id> describes it; the server binary, exactly
 * --symbols-max-bytes and several 1 MiB windows long, is stored whole; a stripped copy goes
 * to the path without .debug (201). Refusals leave nothing in --symbols-dir: garbage (400
 * "not an ELF file", also through nwb-crash, exit 1), a truncated file, a wrong ?build_id=
 * (400 "build id mismatch"), one byte over the cap (413), chunked (411), a client gone in
 * the middle of its body. Under --token-file the upload needs the token (nwb-crash --token).
 * Every JSON answer is parsed by the strict checker.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nwb/build_id.h"
#include "json_check.h"
#include "server_test_util.h"

#ifndef NWB_CRASH_EXE
#error "NWB_CRASH_EXE must name the nwb-crash binary"
#endif

struct fx {
    char dir[512];
    char out[600];
    char symbols[700];
    char self[512];
    char id[128];
    size_t cap; /* --symbols-max-bytes: nwb-logserver's own size (several 1 MiB windows) */
    struct nwb_test_server srv;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    char cap[32];
    struct stat st;
    ssize_t n;

    if (f == NULL || nwb_test_tmpdir("symbols", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    n = readlink("/proc/self/exe", f->self, sizeof(f->self) - 1);
    if (n <= 0 || stat(NWB_TEST_SERVER_EXE, &st) != 0) {
        free(f);
        return -1;
    }
    f->self[n] = '\0';
    f->cap = (size_t)st.st_size;
    nwb_build_id(f->id, sizeof(f->id));
    snprintf(f->out, sizeof(f->out), "%s/out", f->dir);
    snprintf(f->symbols, sizeof(f->symbols), "%s/syms", f->dir);
    /* The cap is exactly the server binary's size: it is taken, one byte more is not. */
    snprintf(cap, sizeof(cap), "%zu", f->cap);
    {
        /* A generous request timeout: under valgrind a 9 MB upload takes more than 10 s. */
        const char *extra[] = {
            "--symbols-dir", f->symbols, "--symbols-max-bytes", cap, "--request-timeout-ms",
            "120000",        NULL};

        if (tu_start(&f->srv, f->out, 0, extra) != 0) {
            free(f);
            return -1;
        }
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    assert_int_equal(tu_stop(&f->srv, SIGTERM, 10000), 0);
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

static void expect_json(const char *body, const char *what)
{
    size_t bad = 0;

    if (nwb_test_json_check(body, strlen(body), &bad) != 0) {
        fail_msg("%s is not valid JSON at byte %zu: %.500s", what, bad, body);
    }
}

/* Run nwb-crash with @p args (shell words); its stdout and stderr into @p out. Exit code. */
static int run_crash_tool(const char *args, char *out, size_t cap)
{
    char cmd[2048];
    size_t used = 0;
    FILE *p;
    int status;

    snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", NWB_CRASH_EXE, args);
    p = popen(cmd, "r");
    assert_non_null(p);
    while (used + 1 < cap) {
        const size_t n = fread(out + used, 1, cap - 1 - used, p);

        if (n == 0) {
            break;
        }
        used += n;
    }
    out[used] = '\0';
    status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int files_equal(const char *a, const char *b)
{
    size_t la = 0, lb = 0;
    char *da = nwb_test_read_file(a, &la);
    char *db = nwb_test_read_file(b, &lb);
    const int same = da != NULL && db != NULL && la == lb && memcmp(da, db, la) == 0;

    free(da);
    free(db);
    return same;
}

/* Entries of --symbols-dir whose name starts with @p prefix. */
static int count_entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;

    assert_non_null(d);
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            n++;
        }
    }
    closedir(d);
    return n;
}

/* Files under .build-id (every level). */
static int count_stored(const struct fx *f)
{
    char cmd[1024], out[64];
    FILE *p;

    snprintf(cmd, sizeof(cmd), "find '%s/.build-id' -type f 2>/dev/null | wc -l", f->symbols);
    p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(out, sizeof(out), p));
    pclose(p);
    return atoi(out);
}

/* POST @p len bytes of @p data to @p url: @p status and the strict JSON answer describing the
 * test's own build id, @p len bytes, @p has_debug_info and @p stored. */
static void post_expect_stored(const struct fx *f, const char *url, const void *data, size_t len,
                               int status, int has_debug_info, int stored)
{
    char body[4096], want[512];

    assert_int_equal(nwb_test_http(f->srv.port, "POST", url, NULL, data, len, body, sizeof(body)),
                     status);
    expect_json(body, "the POST /v1/symbols answer");
    snprintf(want, sizeof(want),
             "{\"build_id\":\"%s\",\"size\":%zu,\"has_debug_info\":%s,\"stored\":%s}\n", f->id, len,
             has_debug_info ? "true" : "false", stored ? "true" : "false");
    assert_string_equal(body, want);
}

static void test_upload_own_executable(void **state)
{
    struct fx *f = *state;
    char args[2048], out[4096], want[1024], path[1024], body[4096], url[256];
    size_t len = 0;
    char *self;
    int rc;

    assert_int_equal(strlen(f->id), 40);
    snprintf(args, sizeof(args), "symbols upload --server http://127.0.0.1:%d/ '%s'", f->srv.port,
             f->self);
    rc = run_crash_tool(args, out, sizeof(out));
    snprintf(want, sizeof(want), "uploaded %s %s\n", f->id, f->self);
    if (rc != 0 || strcmp(out, want) != 0) {
        fail_msg("nwb-crash exit %d, said: %s", rc, out);
    }
    /* The server binary: exactly --symbols-max-bytes, streamed through several windows. */
    snprintf(args, sizeof(args), "symbols upload --server 127.0.0.1:%d '%s'", f->srv.port,
             NWB_TEST_SERVER_EXE);
    rc = run_crash_tool(args, out, sizeof(out));
    if (rc != 0 || strncmp(out, "uploaded ", 9) != 0) {
        fail_msg("nwb-crash exit %d, said: %s", rc, out);
    }
    snprintf(path, sizeof(path), "%s/.build-id/%.2s/%.38s.debug", f->symbols, out + 9, out + 11);
    assert_true(files_equal(path, NWB_TEST_SERVER_EXE));
    snprintf(args, sizeof(args), "symbols upload --server http://127.0.0.1:%d/ '%s'", f->srv.port,
             f->self);
    /* At its build-id path, with .debug (the test is built with -g), the same bytes. */
    snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", f->symbols, f->id, f->id + 2);
    assert_true(files_equal(path, f->self));

    /* Again: nothing new. */
    rc = run_crash_tool(args, out, sizeof(out));
    snprintf(want, sizeof(want), "exists %s %s\n", f->id, f->self);
    if (rc != 0 || strcmp(out, want) != 0) {
        fail_msg("nwb-crash exit %d, said: %s", rc, out);
    }
    /* The same as a raw request: 200 and its JSON. */
    self = nwb_test_read_file(f->self, &len);
    assert_non_null(self);
    post_expect_stored(f, "/v1/symbols", self, len, 200, 1, 0);
    /* The right ?build_id= is taken. */
    snprintf(url, sizeof(url), "/v1/symbols?build_id=%s", f->id);
    post_expect_stored(f, url, self, len, 200, 1, 0);
    free(self);

    /* GET describes it; an unknown id is 404, a malformed one 400. */
    snprintf(url, sizeof(url), "/v1/symbols/%s", f->id);
    assert_int_equal(nwb_test_http(f->srv.port, "GET", url, NULL, NULL, 0, body, sizeof(body)),
                     200);
    expect_json(body, "GET /v1/symbols/<id>");
    snprintf(want, sizeof(want), "{\"build_id\":\"%s\",\"size\":%zu,\"has_debug_info\":true}\n",
             f->id, len);
    assert_string_equal(body, want);
    assert_int_equal(nwb_test_http(f->srv.port, "GET", "/v1/symbols/00112233", NULL, NULL, 0, body,
                                   sizeof(body)),
                     404);
    assert_int_equal(
        nwb_test_http(f->srv.port, "GET", "/v1/symbols/ABCD", NULL, NULL, 0, body, sizeof(body)),
        400);
    assert_int_equal(
        nwb_test_http(f->srv.port, "GET", "/v1/symbols/abc", NULL, NULL, 0, body, sizeof(body)),
        400);
    assert_int_equal(count_stored(f), 2);
    assert_int_equal(count_entries(f->symbols, ".upload-"), 0);
}

static void test_stripped_copy_goes_beside(void **state)
{
    struct fx *f = *state;
    char cmd[2048], stripped[700], path[1024], body[4096];
    size_t len = 0;
    char *data;

    snprintf(stripped, sizeof(stripped), "%s/stripped", f->dir);
    snprintf(cmd, sizeof(cmd), "objcopy --strip-all '%s' '%s'", f->self, stripped);
    assert_int_equal(system(cmd), 0);
    data = nwb_test_read_file(stripped, &len);
    assert_non_null(data);
    post_expect_stored(f, "/v1/symbols", data, len, 201, 0, 1);
    free(data);
    snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s", f->symbols, f->id, f->id + 2);
    assert_true(files_equal(path, stripped));
    /* GET: no .debug file yet, so the stripped one. */
    snprintf(path, sizeof(path), "/v1/symbols/%s", f->id);
    assert_int_equal(nwb_test_http(f->srv.port, "GET", path, NULL, NULL, 0, body, sizeof(body)),
                     200);
    expect_json(body, "GET /v1/symbols/<id> (stripped)");
    assert_non_null(strstr(body, "\"has_debug_info\":false"));
}

/* @p want entries of .upload-* within @p timeout_ms (an upload's temporary file appears at its
 * first window written; an abandoned one is removed off the loop). */
static int wait_temp_files(const struct fx *f, int want, int timeout_ms)
{
    const long long deadline = nwb_test_now_ms() + timeout_ms;
    int delay = 1;

    while (count_entries(f->symbols, ".upload-") != want) {
        if (nwb_test_now_ms() >= deadline) {
            return 0;
        }
        poll(NULL, 0, delay);
        delay = delay < 50 ? delay * 2 : 50;
    }
    return 1;
}

static void test_refusals_leave_nothing(void **state)
{
    struct fx *f = *state;
    static const char garbage[] = "this is not an ELF file, just text\n";
    char body[4096], url[256], args[2048], out[4096], gpath[700], head[256];
    size_t len = 0;
    char *self = nwb_test_read_file(f->self, &len);
    int fd, n;

    assert_non_null(self);
    assert_int_equal(nwb_test_http(f->srv.port, "POST", "/v1/symbols", NULL, garbage,
                                   sizeof(garbage) - 1, body, sizeof(body)),
                     400);
    expect_json(body, "the 400 answer");
    assert_string_equal(body, "{\"error\":\"not an ELF file\"}\n");
    /* Empty. */
    assert_int_equal(
        nwb_test_http(f->srv.port, "POST", "/v1/symbols", NULL, NULL, 0, body, sizeof(body)), 400);
    assert_string_equal(body, "{\"error\":\"not an ELF file\"}\n");
    /* Truncated in its section headers. */
    assert_int_equal(
        nwb_test_http(f->srv.port, "POST", "/v1/symbols", NULL, self, len - 1, body, sizeof(body)),
        400);
    expect_json(body, "the truncated answer");
    assert_string_equal(body, "{\"error\":\"truncated section headers\"}\n");
    /* A build id that is not the file's. */
    snprintf(url, sizeof(url), "/v1/symbols?build_id=%.38s00", f->id);
    if (strcmp(url + strlen(url) - 2, f->id + 38) == 0) {
        snprintf(url, sizeof(url), "/v1/symbols?build_id=%.38s11", f->id);
    }
    assert_int_equal(nwb_test_http(f->srv.port, "POST", url, NULL, self, len, body, sizeof(body)),
                     400);
    expect_json(body, "the mismatch answer");
    assert_string_equal(body, "{\"error\":\"build id mismatch\"}\n");
    assert_int_equal(nwb_test_http(f->srv.port, "POST", "/v1/symbols?build_id=xyz", NULL, garbage,
                                   sizeof(garbage) - 1, body, sizeof(body)),
                     400);
    /* Through the tool: the server's reason, exit 1. */
    snprintf(gpath, sizeof(gpath), "%s/garbage.so", f->dir);
    assert_int_equal(nwb_test_write_file(gpath, garbage, sizeof(garbage) - 1, 0644), 0);
    snprintf(args, sizeof(args), "symbols upload --server 127.0.0.1:%d '%s'", f->srv.port, gpath);
    assert_int_equal(run_crash_tool(args, out, sizeof(out)), 1);
    assert_non_null(strstr(out, "not an ELF file"));
    /* One byte over --symbols-max-bytes: 413 from the head, before any body byte. */
    fd = nwb_test_connect(f->srv.port);
    assert_true(fd >= 0);
    n = snprintf(head, sizeof(head),
                 "POST /v1/symbols HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", f->cap + 1);
    assert_int_equal(nwb_test_send_all(fd, head, (size_t)n), 0);
    {
        int status = 0;

        assert_true(nwb_test_read_response(fd, &status, body, sizeof(body)) >= 0);
        assert_int_equal(status, 413);
        assert_non_null(strstr(body, "--symbols-max-bytes"));
    }
    close(fd);
    /* Chunked: Content-Length is required. */
    fd = nwb_test_connect(f->srv.port);
    assert_true(fd >= 0);
    n = snprintf(head, sizeof(head),
                 "POST /v1/symbols HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "4\r\nabcd\r\n0\r\n\r\n");
    assert_int_equal(nwb_test_send_all(fd, head, (size_t)n), 0);
    {
        int status = 0;

        assert_true(nwb_test_read_response(fd, &status, body, sizeof(body)) >= 0);
        assert_int_equal(status, 411);
    }
    close(fd);
    /* A client gone after 2 MiB of a body at the cap: the windows written so far are in the
     * temporary file; the file goes. */
    fd = nwb_test_connect(f->srv.port);
    assert_true(fd >= 0);
    n = snprintf(head, sizeof(head),
                 "POST /v1/symbols HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", f->cap);
    assert_int_equal(nwb_test_send_all(fd, head, (size_t)n), 0);
    assert_true(f->cap > (size_t)2 << 20);
    {
        char *part = calloc(1, (size_t)2 << 20);

        assert_non_null(part);
        assert_int_equal(nwb_test_send_all(fd, part, (size_t)2 << 20), 0);
        free(part);
    }
    /* The first window written makes the temporary file; then the client goes. */
    assert_true(wait_temp_files(f, 1, 10000));
    close(fd);
    assert_true(wait_temp_files(f, 0, 10000));
    free(self);
    assert_int_equal(count_stored(f), 0);
}

/* --token-file: the upload needs the token like every endpoint; nwb-crash --token sends it. */
static void test_upload_needs_the_token(void **state)
{
    struct fx *f = *state;
    static const char token[] = "symbols-token-0123456789";
    char tfile[700], out2[700], args[2048], out[4096], want[1024];
    struct nwb_test_server srv;

    snprintf(tfile, sizeof(tfile), "%s/token", f->dir);
    snprintf(out2, sizeof(out2), "%s/out2", f->dir);
    assert_int_equal(nwb_test_write_file(tfile, token, sizeof(token) - 1, 0600), 0);
    {
        const char *extra[] = {"--token-file", tfile, NULL};

        assert_int_equal(tu_start(&srv, out2, 0, extra), 0);
    }
    snprintf(args, sizeof(args), "symbols upload --server 127.0.0.1:%d '%s'", srv.port, f->self);
    assert_int_equal(run_crash_tool(args, out, sizeof(out)), 1);
    assert_non_null(strstr(out, "HTTP 401"));
    snprintf(args, sizeof(args), "symbols upload --server 127.0.0.1:%d --token %s '%s'", srv.port,
             token, f->self);
    snprintf(want, sizeof(want), "uploaded %s %s\n", f->id, f->self);
    if (run_crash_tool(args, out, sizeof(out)) != 0 || strcmp(out, want) != 0) {
        fail_msg("with the token, nwb-crash said: %s", out);
    }
    assert_int_equal(tu_stop(&srv, SIGTERM, 10000), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_upload_own_executable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stripped_copy_goes_beside, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals_leave_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upload_needs_the_token, setup, teardown),
    };

    return cmocka_run_group_tests_name("server.symbols_http", tests, NULL, NULL);
}
