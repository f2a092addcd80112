/* SPDX-License-Identifier: MIT */
/*
 * test_crash_http.c - the crash endpoints' HTTP side in the real
 * nwb-logserver (tests/crash/test_crash_e2e.c covers capture to ingest):
 * POST /v1/crash has its own body limit (--crash-max-archive-bytes, at the
 * edge, Content-Length and chunked) while /v1/log keeps --max-body-bytes; a
 * full crash queue is 503 with Retry-After and the retry is taken; the views
 * answer 200/404/405; /metrics carries the crash counts; SIGTERM during
 * ingest still exits 0. Every JSON answer (the POST answer, the list with 0,
 * 1 and 3 crashes, each crash) is parsed by the strict checker of
 * tests/support/json_check.h and checked for its keys.
 */
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
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crash_test_archive.h"
#include "json_check.h"
#include "server_test_util.h"

struct fx {
    char dir[512];
    struct nwb_test_server srv;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL) {
        return -1;
    }
    /* tmpfs when there is one: the queue test wants extraction to be memory-fast and
     * predictable, and fsync there costs nothing. */
    if (access("/dev/shm", W_OK) == 0) {
        snprintf(f->dir, sizeof(f->dir), "/dev/shm/nwb-crashhttp-%d", (int)getpid());
        nwb_test_rmtree(f->dir);
        if (mkdir(f->dir, 0700) != 0) {
            free(f);
            return -1;
        }
    } else if (nwb_test_tmpdir("crashhttp", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    tu_reap(NULL);
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* Send @p req (it asks for Connection: close) and read the whole answer into @p out. */
static size_t raw_exchange(int port, const void *req, size_t len, const void *body, size_t blen,
                           char *out, size_t cap)
{
    const int fd = nwb_test_connect(port);
    size_t used = 0;

    assert_true(fd >= 0);
    assert_int_equal(nwb_test_send_all(fd, req, len), 0);
    if (blen > 0) {
        assert_int_equal(nwb_test_send_all(fd, body, blen), 0);
    }
    while (used + 1 < cap) {
        const ssize_t n = read(fd, out + used, cap - 1 - used);

        if (n <= 0) {
            break;
        }
        used += (size_t)n;
    }
    out[used] = '\0';
    close(fd);
    return used;
}

/* @p json (@p len bytes) must be exactly one valid JSON value. */
static void expect_strict_json(const char *json, size_t len, const char *what)
{
    size_t bad = 0;

    if (nwb_test_json_check(json, len, &bad) != 0) {
        fail_msg("%s is not valid JSON at byte %zu: %.2000s", what, bad, json);
    }
}

/* The body of the raw answer @p resp (headers and body), or NULL. */
static const char *body_of(const char *resp)
{
    const char *p = strstr(resp, "\r\n\r\n");

    return p != NULL ? p + 4 : NULL;
}

/*
 * POST /v1/crash with Content-Length; returns the status, the id into @p id (if 200). A 200
 * answer must be the strict JSON {"id":"<32 hex>"}.
 */
static int post_crash(int port, const void *body, size_t len, char *id, size_t idcap, char *resp,
                      size_t rcap)
{
    char head[256];
    const int n = snprintf(head, sizeof(head),
                           "POST /v1/crash HTTP/1.1\r\nHost: x\r\nX-NWB-Program: http\r\n"
                           "Connection: close\r\nContent-Length: %zu\r\n\r\n",
                           len);
    const char *b;
    int status = 0;

    raw_exchange(port, head, (size_t)n, body, len, resp, rcap);
    if (sscanf(resp, "HTTP/1.1 %d", &status) != 1) {
        return -1;
    }
    if (id != NULL) {
        id[0] = '\0';
    }
    if (status == 200) {
        char got[64] = "";

        b = body_of(resp);
        assert_non_null(b);
        expect_strict_json(b, strlen(b), "the POST /v1/crash answer");
        assert_int_equal(sscanf(b, "{\"id\": \"%32[0-9a-f]\"}", got), 1); /* any spacing */
        assert_int_equal(strlen(got), 32);
        if (id != NULL) {
            snprintf(id, idcap, "%s", got);
        }
    }
    return status;
}

/* GET @p url into @p body; a 200 answer must be strict JSON. Returns the status. */
static int get_json(int port, const char *url, char *body, size_t cap)
{
    const int status = nwb_test_http(port, "GET", url, NULL, NULL, 0, body, cap);

    if (status == 200) {
        assert_true(strlen(body) + 1 < cap); /* not truncated */
        expect_strict_json(body, strlen(body), url);
    }
    return status;
}

/*
 * Wait until the crash views say @p status for @p id (the package is published before its
 * queue marker goes, so its files can exist while the listing still says "queued").
 */
static int wait_crash_status(int port, const char *id, const char *status, int timeout_ms)
{
    const long long deadline = nwb_test_now_ms() + timeout_ms;
    char url[128], want[64], body[8192];
    int delay = 1;

    snprintf(url, sizeof(url), "/v1/crashes/%s", id);
    snprintf(want, sizeof(want), "\"status\":\"%s\"", status);
    for (;;) {
        if (get_json(port, url, body, sizeof(body)) == 200 && strstr(body, want) != NULL) {
            return 1;
        }
        if (nwb_test_now_ms() >= deadline) {
            return 0;
        }
        poll(NULL, 0, delay);
        delay = delay < 50 ? delay * 2 : 50;
    }
}

/* Wait until crash @p id is extracted and analysed (its view has a signature). */
static int wait_crash_signature(int port, const char *id, int timeout_ms)
{
    const long long deadline = nwb_test_now_ms() + timeout_ms;
    char url[384], body[8192];
    int delay = 1;

    snprintf(url, sizeof(url), "/v1/crashes/%s", id);
    for (;;) {
        if (get_json(port, url, body, sizeof(body)) == 200 &&
            strstr(body, "\"signature\":\"") != NULL) {
            return 1;
        }
        if (nwb_test_now_ms() >= deadline) {
            return 0;
        }
        poll(NULL, 0, delay);
        delay = delay < 50 ? delay * 2 : 50;
    }
}

/* Every key of a crash object appears @p n times in @p json (docs/crash.md, GET /v1/crashes). */
static void expect_crash_keys(const char *json, int n)
{
    static const char *const keys[] = {
        "\"id\":\"",     "\"received\":\"", "\"program\":\"",          "\"run\":\"",
        "\"signal\":\"", "\"status\":\"",   "\"sizes\":{\"archive\":", ",\"extracted\":"};

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (tu_count(json, keys[i]) != n) {
            fail_msg("%s appears %d times, not %d, in:\n%.2000s", keys[i], tu_count(json, keys[i]),
                     n, json);
        }
    }
}

static void test_crash_http_body_limit_is_its_own(void **state)
{
    struct fx *f = *state;
    const char *const extra[] = {"--max-body-bytes", "1000", "--crash-max-archive-bytes", "5000",
                                 NULL};
    static char body[6000];
    char resp[4096], id[64], head[256], chunk[64];
    int n;

    for (size_t i = 0; i < sizeof(body); i++) {
        body[i] = (char)('a' + i % 23);
    }
    assert_int_equal(tu_start(&f->srv, f->dir, 0, extra), 0);
    /* Exactly the crash limit: stored (and later found invalid: it is no archive). */
    assert_int_equal(post_crash(f->srv.port, body, 5000, id, sizeof(id), resp, sizeof(resp)), 200);
    assert_int_equal(strlen(id), 32);
    /* One byte more: 413 from the head, naming the flag. */
    assert_int_equal(post_crash(f->srv.port, body, 5001, NULL, 0, resp, sizeof(resp)), 413);
    assert_non_null(strstr(resp, "crash archive exceeds --crash-max-archive-bytes"));
    /* Chunked: 413 once the sum passes it. */
    n = snprintf(head, sizeof(head),
                 "POST /v1/crash HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                 "Connection: close\r\n\r\n");
    {
        char *req = malloc(8192);
        size_t len = (size_t)n;

        assert_non_null(req);
        memcpy(req, head, len);
        for (int i = 0; i < 2; i++) {
            const int c = snprintf(chunk, sizeof(chunk), "%x\r\n", 2600);

            memcpy(req + len, chunk, (size_t)c);
            len += (size_t)c;
            memcpy(req + len, body, 2600);
            len += 2600;
            memcpy(req + len, "\r\n", 2);
            len += 2;
        }
        memcpy(req + len, "0\r\n\r\n", 5);
        len += 5;
        raw_exchange(f->srv.port, req, len, NULL, 0, resp, sizeof(resp));
        free(req);
    }
    assert_non_null(strstr(resp, "HTTP/1.1 413"));
    assert_non_null(strstr(resp, "crash archive exceeds --crash-max-archive-bytes"));
    /* /v1/log keeps --max-body-bytes. */
    assert_int_equal(tu_post(f->srv.port, "text/plain", "http", "lim", 1, body, 1000, NULL, 0),
                     200);
    assert_int_equal(
        tu_post(f->srv.port, "text/plain", "http", "lim", 2, body, 1001, resp, sizeof(resp)), 413);
    assert_non_null(strstr(resp, "--max-body-bytes"));
    assert_int_equal(tu_metric(f->srv.port, "nwb_crash_uploads_total"), 1);
    assert_true(WIFEXITED(tu_stop(&f->srv, SIGTERM, 10000)));
}

static void test_crash_http_full_queue_is_503_with_retry_after(void **state)
{
    struct fx *f = *state;
    const char *const extra[] = {"--crash-max-queue",
                                 "1",
                                 "--crash-max-entry-bytes",
                                 "1073741824",
                                 "--crash-max-total-bytes",
                                 "1073741824",
                                 "--crash-max-ratio",
                                 "1000000",
                                 NULL};
    static const char manifest[] = "nwb-crash-manifest 1\nkind=signal\n";
    /* A big package to keep the worker busy: 256 MiB of zeros, then a symlink that makes it
     * invalid, so nothing stays behind. */
    const struct ta_entry big[] = {
        {"manifest.txt", TA_FILE, manifest, sizeof(manifest) - 1, 0, 0, NULL},
        {"zeros", TA_FILE, NULL, 0, 256ull << 20, 0, NULL},
        {"link", TA_SYMLINK, NULL, 0, 0, 0, "/"}};
    char resp[4096], id[64], refused_tag[32];
    void *refused = NULL;
    size_t refused_len = 0, blen;
    void *a = ta_build("tar.zst", big, 3, &blen);
    int got503 = 0;

    assert_non_null(a);
    assert_int_equal(tu_start(&f->srv, f->dir, 0, extra), 0);
    assert_int_equal(post_crash(f->srv.port, a, blen, id, sizeof(id), resp, sizeof(resp)), 200);
    free(a);
    /* While it is extracted, the queue (1) fills: a later upload is refused for now. */
    for (int i = 0; i < 20 && !got503; i++) {
        size_t len;
        int status;

        snprintf(refused_tag, sizeof(refused_tag), "small-%d", i);
        a = ta_package("tar.zst", refused_tag, &len);
        assert_non_null(a);
        status = post_crash(f->srv.port, a, len, NULL, 0, resp, sizeof(resp));
        if (status == 503) {
            got503 = 1;
            refused = a;
            refused_len = len;
            assert_non_null(strstr(resp, "\r\nRetry-After: 1\r\n"));
            assert_non_null(strstr(resp, "crash queue full"));
        } else {
            assert_int_equal(status, 200);
            free(a);
        }
    }
    assert_true(got503);
    /* Once the worker caught up, the same upload is taken. */
    assert_true(wait_crash_status(f->srv.port, id, "invalid", 60000));
    assert_int_equal(
        post_crash(f->srv.port, refused, refused_len, id, sizeof(id), resp, sizeof(resp)), 200);
    assert_true(wait_crash_status(f->srv.port, id, "extracted", 30000));
    free(refused);
    assert_true(tu_metric(f->srv.port, "nwb_requests_total{code=\"503\"}") >= 1);
    assert_true(WIFEXITED(tu_stop(&f->srv, SIGTERM, 10000)));
}

static void test_crash_http_views_and_methods(void **state)
{
    struct fx *f = *state;
    char body[8192], id[64], resp[4096], path[700];
    size_t len;
    void *a;

    assert_int_equal(tu_start(&f->srv, f->dir, 0, NULL), 0);
    assert_int_equal(get_json(f->srv.port, "/v1/crashes", body, sizeof(body)), 200);
    assert_non_null(strstr(body, "\"crashes\":[]"));
    assert_int_equal(nwb_test_http(f->srv.port, "GET",
                                   "/v1/crashes/0123456789abcdef0123456789abcdef", NULL, NULL, 0,
                                   body, sizeof(body)),
                     404);
    assert_int_equal(nwb_test_http(f->srv.port, "GET", "/v1/crashes/../../etc", NULL, NULL, 0, body,
                                   sizeof(body)),
                     404);
    assert_int_equal(
        nwb_test_http(f->srv.port, "GET", "/v1/crashes/", NULL, NULL, 0, body, sizeof(body)), 404);
    assert_int_equal(
        nwb_test_http(f->srv.port, "GET", "/v1/crash", NULL, NULL, 0, body, sizeof(body)), 405);
    assert_int_equal(
        nwb_test_http(f->srv.port, "POST", "/v1/crashes", NULL, "x", 1, body, sizeof(body)), 405);
    a = ta_package("zip", "views", &len);
    assert_non_null(a);
    assert_int_equal(post_crash(f->srv.port, a, len, id, sizeof(id), resp, sizeof(resp)), 200);
    free(a);
    assert_true(wait_crash_status(f->srv.port, id, "extracted", 30000));
    snprintf(path, sizeof(path), "/v1/crashes/%s?x=1", id);
    assert_int_equal(get_json(f->srv.port, path, body, sizeof(body)), 200);
    assert_non_null(strstr(body, "\"status\":\"extracted\""));
    assert_non_null(strstr(body, "\"files\":["));
    assert_int_equal(get_json(f->srv.port, "/v1/crashes", body, sizeof(body)), 200);
    assert_non_null(strstr(body, id));
    assert_int_equal(tu_metric(f->srv.port, "nwb_crashes{category=\"packages\"}"), 1);
    assert_int_equal(tu_metric(f->srv.port, "nwb_crashes{category=\"raw\"}"), 1);
    assert_int_equal(tu_metric(f->srv.port, "nwb_crash_extracted_total"), 1);
    assert_true(WIFEXITED(tu_stop(&f->srv, SIGTERM, 10000)));
}

/*
 * A package whose crash.txt holds the in-process backtrace @p frames under @p signal; @p tag
 * makes its bytes (its id) unique.
 */
static void *backtrace_package(const char *signal, const char *frames, const char *tag, size_t *len)
{
    char manifest[256], crash[2048];
    struct ta_entry e[2];

    snprintf(manifest, sizeof(manifest),
             "nwb-crash-manifest 1\nkind=signal\nprogram=grouped\nrun=r%s\nsignal=%s\n"
             "build_id=0123456789abcdef0123456789abcdef01234567\n",
             tag, signal);
    snprintf(crash, sizeof(crash), "signal=%s\ntag=%s\n\n[backtrace]\n%s\n", signal, tag, frames);
    memset(e, 0, sizeof(e));
    e[0].path = "manifest.txt";
    e[0].data = manifest;
    e[0].len = strlen(manifest);
    e[1].path = "crash.txt";
    e[1].data = crash;
    e[1].len = strlen(crash);
    return ta_build("tar.zst", e, 2, len);
}

/*
 * GET /v1/crash-groups over the server's own analysis: three crashes with the same frames at
 * different load addresses (ASLR) are one group of count 3 whose signature names
 * module+offset frames with libc's skipped, a SIGABRT elsewhere a second group; ?group=
 * lists a group's crashes; a bad group id is 400; each crash carries its signature and group.
 * Every answer is strict JSON.
 */
static void test_crash_http_groups(void **state)
{
    struct fx *f = *state;
    char body[16384], ids[4][64], resp[4096], url[384], group[17] = "";
    const char *p;

    assert_int_equal(tu_start(&f->srv, f->dir, 0, NULL), 0);
    assert_int_equal(get_json(f->srv.port, "/v1/crash-groups", body, sizeof(body)), 200);
    assert_non_null(strstr(body, "\"groups\":[]"));
    for (int i = 0; i < 4; i++) {
        char tag[16], frames[1024];
        const unsigned long long base = 0x560000000000ull + (unsigned long long)i * 0x1000000ull;
        size_t len;
        void *a;

        snprintf(tag, sizeof(tag), "group-%d", i);
        if (i < 3) {
            snprintf(frames, sizeof(frames),
                     "# frame 0 is the interrupted pc; later frames are return addresses\n"
                     "#0 0x%016llx /opt/game/demo+0x1000\n"
                     "#1 0x%016llx /opt/game/demo+0x2040\n"
                     "#2 0x00007f0000029d90 /usr/lib/x86_64-linux-gnu/libc.so.6+0x29d90\n"
                     "#3 0x%016llx /opt/game/demo+0x3050\n"
                     "#4 0x%016llx /opt/game/demo+0x4060",
                     base + 0x1000, base + 0x2040, base + 0x3050, base + 0x4060);
        } else {
            snprintf(frames, sizeof(frames),
                     "#0 0x00007f00000969fc /usr/lib/x86_64-linux-gnu/libc.so.6+0x969fc\n"
                     "#1 0x00007f0000042476 /usr/lib/x86_64-linux-gnu/libc.so.6+0x42476\n"
                     "#2 0x%016llx /opt/game/demo+0x5000\n#3 0x%016llx ?",
                     base + 0x5000, base + 0x6000);
        }
        a = backtrace_package(i < 3 ? "SIGSEGV" : "SIGABRT", frames, tag, &len);
        assert_non_null(a);
        assert_int_equal(
            post_crash(f->srv.port, a, len, ids[i], sizeof(ids[i]), resp, sizeof(resp)), 200);
        free(a);
        assert_true(wait_crash_signature(f->srv.port, ids[i], 30000));
    }
    assert_int_equal(get_json(f->srv.port, "/v1/crash-groups", body, sizeof(body)), 200);
    assert_int_equal(tu_count(body, "\"group\":\""), 2);
    /* The largest group first. */
    p = strstr(body,
               "\"signature\":\"SIGSEGV | demo+0x1000 | demo+0x2040 | demo+0x3050\",\"count\":3");
    assert_non_null(p);
    assert_true(p < strstr(body, "\"signature\":\"SIGABRT | demo+0x5000\",\"count\":1"));
    snprintf(url, sizeof(url), "\"newest\":\"%s\"", ids[2]);
    assert_non_null(strstr(body, url));
    assert_non_null(strstr(body, "\"firstSeen\":\""));
    assert_non_null(strstr(body, "\"lastSeen\":\""));
    assert_non_null(strstr(body, "\"programs\":[\"grouped\"]"));
    assert_non_null(strstr(body, "\"buildIds\":[\"0123456789abcdef0123456789abcdef01234567\"]"));
    assert_int_equal(sscanf(strstr(body, "\"group\":\"") + 9, "%16[0-9a-f]", group), 1);

    snprintf(url, sizeof(url), "/v1/crashes?group=%s", group);
    assert_int_equal(get_json(f->srv.port, url, body, sizeof(body)), 200);
    assert_int_equal(tu_count(body, "\"status\":\"extracted\""), 3);
    for (int i = 0; i < 3; i++) {
        assert_non_null(strstr(body, ids[i]));
    }
    assert_null(strstr(body, ids[3]));
    snprintf(url, sizeof(url), "/v1/crashes/%s", ids[3]);
    assert_int_equal(get_json(f->srv.port, url, body, sizeof(body)), 200);
    assert_non_null(strstr(body, "\"signature\":\"SIGABRT | demo+0x5000\",\"group\":\""));
    assert_int_equal(
        get_json(f->srv.port, "/v1/crashes?group=0000000000000000", body, sizeof(body)), 200);
    assert_non_null(strstr(body, "\"crashes\":[]"));
    assert_int_equal(nwb_test_http(f->srv.port, "GET", "/v1/crashes?group=XYZ", NULL, NULL, 0, body,
                                   sizeof(body)),
                     400);
    assert_int_equal(nwb_test_http(f->srv.port, "GET", "/v1/crashes?group=%zz", NULL, NULL, 0, body,
                                   sizeof(body)),
                     400);
    assert_int_equal(
        nwb_test_http(f->srv.port, "POST", "/v1/crash-groups", NULL, "x", 1, body, sizeof(body)),
        405);
    assert_true(WIFEXITED(tu_stop(&f->srv, SIGTERM, 10000)));
}

/*
 * The listing with 0, 1 and 3 crashes (one extracted, two invalid) and each crash on its own
 * are strict JSON with every key; before the JSON writer every crash object of the list lacked
 * its closing brace.
 */
static void test_crash_http_listing_is_strict_json(void **state)
{
    struct fx *f = *state;
    const struct ta_entry no_manifest[] = {{"crash.txt", TA_FILE, "x", 1, 0, 0, NULL}};
    static char body[65536];
    char ids[3][64], resp[4096], path[700];
    unsigned char noise[512];
    size_t len;
    void *a;

    assert_int_equal(tu_start(&f->srv, f->dir, 0, NULL), 0);
    assert_int_equal(get_json(f->srv.port, "/v1/crashes", body, sizeof(body)), 200);
    assert_string_equal(body, "{\"crashes\":[]}\n");

    /* One crash, extracted. */
    a = ta_package("tar.zst", "listing", &len);
    assert_non_null(a);
    assert_int_equal(post_crash(f->srv.port, a, len, ids[0], sizeof(ids[0]), resp, sizeof(resp)),
                     200);
    free(a);
    assert_true(wait_crash_status(f->srv.port, ids[0], "extracted", 30000));
    assert_int_equal(get_json(f->srv.port, "/v1/crashes", body, sizeof(body)), 200);
    expect_crash_keys(body, 1);
    assert_non_null(strstr(body, ids[0]));
    assert_non_null(strstr(body, "\"status\":\"extracted\""));
    assert_non_null(strstr(body, "\"program\":\"ta_prog\""));

    /* Two more, both invalid: no manifest, and bytes that are no archive. */
    a = ta_build("tar", no_manifest, 1, &len);
    assert_non_null(a);
    assert_int_equal(post_crash(f->srv.port, a, len, ids[1], sizeof(ids[1]), resp, sizeof(resp)),
                     200);
    free(a);
    for (size_t i = 0; i < sizeof(noise); i++) {
        noise[i] = (unsigned char)(i * 131u + 7u);
    }
    assert_int_equal(
        post_crash(f->srv.port, noise, sizeof(noise), ids[2], sizeof(ids[2]), resp, sizeof(resp)),
        200);
    for (int i = 1; i < 3; i++) {
        assert_true(wait_crash_status(f->srv.port, ids[i], "invalid", 30000));
    }
    assert_int_equal(get_json(f->srv.port, "/v1/crashes", body, sizeof(body)), 200);
    expect_crash_keys(body, 3);
    assert_int_equal(tu_count(body, "\"status\":\"extracted\""), 1);
    assert_int_equal(tu_count(body, "\"status\":\"invalid\""), 2);
    assert_int_equal(tu_count(body, "\"program\":\"http\""), 2); /* the X-NWB-Program header */
    for (int i = 0; i < 3; i++) {
        assert_non_null(strstr(body, ids[i]));
    }

    /* Each crash alone: the same keys, plus its files or its reason. */
    snprintf(path, sizeof(path), "/v1/crashes/%s", ids[0]);
    assert_int_equal(get_json(f->srv.port, path, body, sizeof(body)), 200);
    expect_crash_keys(body, 1);
    assert_non_null(strstr(body, "\"files\":[{\"path\":\""));
    assert_non_null(strstr(body, "{\"path\":\"manifest.txt\",\"bytes\":"));
    /* No reason of its own (its "symbolization" has a null one: no capture). */
    assert_null(strstr(body, "\"reason\":\""));
    assert_non_null(strstr(body, "\"symbolization\":{\"state\":\"none\",\"reason\":null,"));
    for (int i = 1; i < 3; i++) {
        snprintf(path, sizeof(path), "/v1/crashes/%s", ids[i]);
        assert_int_equal(get_json(f->srv.port, path, body, sizeof(body)), 200);
        expect_crash_keys(body, 1);
        assert_non_null(strstr(body, "\"status\":\"invalid\""));
        assert_non_null(strstr(body, "\"reason\":\""));
        assert_non_null(strstr(body, "\"extracted\":null"));
        assert_null(strstr(body, "\"files\""));
    }
    assert_non_null(strstr(body, "\"reason\":\"not a tar or zip archive"));
    assert_true(WIFEXITED(tu_stop(&f->srv, SIGTERM, 10000)));
}

static void test_crash_http_sigterm_during_ingest_exits_cleanly(void **state)
{
    struct fx *f = *state;
    const char *const extra[] = {"--crash-max-entry-bytes",
                                 "1073741824",
                                 "--crash-max-total-bytes",
                                 "1073741824",
                                 "--crash-max-ratio",
                                 "1000000",
                                 NULL};
    static const char manifest[] = "nwb-crash-manifest 1\nkind=signal\n";
    const struct ta_entry big[] = {
        {"manifest.txt", TA_FILE, manifest, sizeof(manifest) - 1, 0, 0, NULL},
        {"zeros", TA_FILE, NULL, 0, 512ull << 20, 0, NULL}};
    char resp[1024], id[64], p[800];
    size_t blen;
    void *a = ta_build("tar.zst", big, 2, &blen);
    int status;

    assert_non_null(a);
    assert_int_equal(tu_start(&f->srv, f->dir, 0, extra), 0);
    assert_int_equal(post_crash(f->srv.port, a, blen, id, sizeof(id), resp, sizeof(resp)), 200);
    free(a);
    status = tu_stop(&f->srv, SIGTERM, 20000);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* The raw archive answered 200 is kept (and re-queued at the next start). */
    snprintf(p, sizeof(p), "%s/crashes/raw", f->dir);
    assert_int_equal(ta_count_dir(p), 1);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_crash_http_body_limit_is_its_own),
        T(test_crash_http_full_queue_is_503_with_retry_after),
        T(test_crash_http_views_and_methods),
        T(test_crash_http_groups),
        T(test_crash_http_listing_is_strict_json),
        T(test_crash_http_sigterm_during_ingest_exits_cleanly),
    };
#undef T

    return cmocka_run_group_tests_name("server.crash_http", tests, NULL, tu_reap);
}
