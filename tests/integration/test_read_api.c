/* SPDX-License-Identifier: MIT */
/*
 * test_read_api.c - the read API against the real nwb-logserver (127.0.0.1, port 0):
 * GET /v1/runs (newest first, ?program=, ?limit=, live then not live after --run-live-s),
 * GET /v1/runs/<id> (its counters), GET /v1/runs/<id>/log (successive ?offset= reads give
 * log.txt back byte for byte, ?tail=, X-NWB-Log-Size, 416 past the end, a 10 GiB log answered
 * without being read whole), GET /v1/runs/<id>/telemetry (the run's telemetry.json),
 * GET /v1/crashes/<id>/files/<name> (a package's files, the size cap), GET
 * /v1/crashes/<id>/archive (the upload as it came, kept or refused), bad input (400, 404,
 * 416, never a file outside --out), the --token-file rule, and a live nwb-demo run. Every
 * JSON answer is parsed strictly.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nwb/buf.h"
#include "nwb/file_io.h"
#include "nwb/log_batch.h"
#include "nwb/telemetry_report.h"
#include "crash_test_archive.h"
#include "json_check.h"
#include "server_test_util.h"
#include "test_support.h"

#define WAIT_MS    30000
#define TEN_GIB    (10ull << 30)
#define FILE_MAX   (16u << 20) /* NWB__READ_FILE_MAX */
#define LIMIT_MAX  4194304u    /* NWB__READ_LOG_LIMIT_MAX */
#define TAIL_LINES 10000u      /* NWB__READ_TAIL_LINES_MAX */

/* ---- HTTP with the answer's head ---------------------------------------------------------- */

struct resp {
    int status;
    char head[4096];
    char *body; /* malloc'd, NUL-terminated */
    size_t len;
};

static void resp_free(struct resp *r)
{
    free(r->body);
    r->body = NULL;
}

/* One request on a fresh connection (Connection: close): the whole answer. */
static int http(int port, const char *method, const char *target, const char *headers,
                const void *body, size_t body_len, struct resp *r)
{
    char req[2048];
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    const char *end, *cl;
    int n;
    const int fd = nwb_test_connect(port);

    memset(r, 0, sizeof(*r));
    r->status = -1;
    assert_non_null(buf);
    assert_true(fd >= 0);
    n = snprintf(req, sizeof(req),
                 "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Length: %zu\r\nConnection: "
                 "close\r\n\r\n",
                 method, target, headers != NULL ? headers : "", body_len);
    assert_int_equal(nwb_test_send_all(fd, req, (size_t)n), 0);
    if (body_len > 0) {
        assert_int_equal(nwb_test_send_all(fd, body, body_len), 0);
    }
    for (;;) {
        ssize_t got;

        if (len + 65536 > cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        got = read(fd, buf + len, cap - len - 1);
        if (got <= 0) {
            break;
        }
        len += (size_t)got;
    }
    close(fd);
    buf[len] = '\0';
    end = strstr(buf, "\r\n\r\n");
    if (end == NULL || sscanf(buf, "HTTP/1.1 %d", &r->status) != 1) {
        free(buf);
        return -1;
    }
    snprintf(r->head, sizeof(r->head), "%.*s", (int)(end - buf + 2), buf);
    r->len = len - (size_t)(end + 4 - buf);
    r->body = malloc(r->len + 1);
    assert_non_null(r->body);
    memcpy(r->body, end + 4, r->len);
    r->body[r->len] = '\0';
    cl = strcasestr(r->head, "\r\nContent-Length: ");
    assert_non_null(cl);
    assert_int_equal(strtoull(cl + 18, NULL, 10), r->len);
    free(buf);
    return r->status;
}

static int get(int port, const char *target, struct resp *r)
{
    return http(port, "GET", target, NULL, NULL, 0, r);
}

/* The value of header @p name (case-insensitive), or NULL. */
static const char *header(const struct resp *r, const char *name, char *out, size_t cap)
{
    char key[96];
    const char *p;

    snprintf(key, sizeof(key), "\r\n%s: ", name);
    p = strcasestr(r->head, key);
    if (p == NULL) {
        return NULL;
    }
    p += strlen(key);
    snprintf(out, cap, "%.*s", (int)strcspn(p, "\r"), p);
    return out;
}

static unsigned long long header_u64(const struct resp *r, const char *name)
{
    char v[64];

    if (header(r, name, v, sizeof(v)) == NULL) {
        fail_msg("no %s header in:\n%s", name, r->head);
    }
    return strtoull(v, NULL, 10);
}

/* GET @p target: 200, application/json, strictly valid. The body stays in @p r. */
static void get_json(int port, const char *target, struct resp *r)
{
    char ctype[64];
    size_t bad = 0;

    if (get(port, target, r) != 200) {
        fail_msg("GET %s: %d %s", target, r->status, r->body != NULL ? r->body : "");
    }
    assert_non_null(header(r, "Content-Type", ctype, sizeof(ctype)));
    assert_string_equal(ctype, "application/json");
    if (nwb_test_json_check(r->body, r->len, &bad) != 0) {
        fail_msg("GET %s: invalid JSON at byte %zu: %s", target, bad, r->body);
    }
}

static void expect_status(int port, const char *target, int status)
{
    struct resp r;

    if (get(port, target, &r) != status) {
        fail_msg("GET %s: %d (%s), expected %d", target, r.status, r.body, status);
    }
    resp_free(&r);
}

/* expect_status() of a target made from @p fmt. */
static void expect_statusf(int port, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void expect_statusf(int port, int status, const char *fmt, ...)
{
    char target[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(target, sizeof(target), fmt, ap);
    va_end(ap);
    expect_status(port, target, status);
}

/* The {"id":"<id>",...} object of @p id in a runs list (no nested objects), or NULL. */
static const char *run_obj(const char *json, const char *id, char *out, size_t cap)
{
    char key[256];
    const char *p, *e;

    snprintf(key, sizeof(key), "{\"id\":\"%s\"", id);
    p = strstr(json, key);
    if (p == NULL) {
        return NULL;
    }
    e = strchr(p, '}');
    assert_non_null(e);
    snprintf(out, cap, "%.*s", (int)(e - p + 1), p);
    return out;
}

static unsigned long long num(const char *obj, const char *key)
{
    char k[64];
    const char *p;

    snprintf(k, sizeof(k), "\"%s\":", key);
    p = strstr(obj, k);
    if (p == NULL) {
        fail_msg("no %s in %s", key, obj);
    }
    return strtoull(p + strlen(k), NULL, 10);
}

/* The run directory name (the id) of (@p program, @p run) under @p out. */
static void run_id(const char *out, const char *program, const char *run, char *id, size_t cap)
{
    char path[1024];
    const char *slash;

    assert_int_equal(nwb_test_find_run_log(out, program, run, path, sizeof(path)), 0);
    *strrchr(path, '/') = '\0';
    slash = strrchr(path, '/');
    snprintf(id, cap, "%s", slash + 1);
}

static void post_text(int port, const char *program, const char *run, const char *text)
{
    char headers[256];
    struct resp r;

    snprintf(headers, sizeof(headers),
             "Content-Type: text/plain\r\nX-NWB-Program: %s\r\nX-NWB-Run: %s\r\n", program, run);
    assert_int_equal(http(port, "POST", "/v1/log", headers, text, strlen(text), &r), 200);
    resp_free(&r);
}

/* ---- Fixture ------------------------------------------------------------------------------ */

struct fx {
    char dir[512];
    char out[600];
    struct nwb_test_server srv;
    int up;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("readapi", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->out, sizeof(f->out), "%s/out", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    if (f->up) {
        nwb_test_server_stop(&f->srv, SIGKILL, 5000);
    }
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

static void start(struct fx *f, const char *const *extra)
{
    assert_int_equal(nwb_test_server_start(&f->srv, NULL, f->out, 0, extra), 0);
    f->up = 1;
}

static void stop(struct fx *f)
{
    const int status = nwb_test_server_stop(&f->srv, SIGTERM, 10000);

    f->up = 0;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- GET /v1/runs, GET /v1/runs/<id> ------------------------------------------------------ */

/* Each listed id sorts after the next one: (time in the id, id) descending. */
static void check_newest_first(const char *json)
{
    char prev[340] = "";
    const char *p = json;

    while ((p = strstr(p, "{\"id\":\"")) != NULL) {
        char id[300], key[340];
        const char *ts;

        p += 7;
        snprintf(id, sizeof(id), "%.*s", (int)strcspn(p, "\""), p);
        ts = strchr(id, '_');
        assert_non_null(ts);
        snprintf(key, sizeof(key), "%.15s %s", ts + 1, id);
        if (prev[0] != '\0' && strcmp(prev, key) < 0) {
            fail_msg("not newest first: %s before %s", prev, key);
        }
        snprintf(prev, sizeof(prev), "%s", key);
    }
}

static void test_runs_list_filter_limit_and_counters(void **state)
{
    struct fx *f = *state;
    const char *const extra[] = {"--run-live-s", "1", NULL};
    char a1[256], b1[256], a3[256], obj[1024], target[512];
    const char *const drop_msg[] = {"nwb: dropped 3 records here (ring full)"};
    const char *const after_msg[] = {"after the gap"};
    uint8_t batch[512];
    size_t blen;
    struct resp r;
    long long deadline;

    start(f, extra);
    post_text(f->srv.port, "alpha", "r1", "one\ntwo\n");
    post_text(f->srv.port, "alpha", "r1", "three\nfour\n");
    post_text(f->srv.port, "alpha", "r1", "five\nsix\n");
    post_text(f->srv.port, "beta", "r2", "b\n");
    /* A gap marker (a DROPNOTE record), then a record after it. */
    blen = tu_batch_build(batch, sizeof(batch), drop_msg, 1, NWB_LOG_RECORD_DROPNOTE);
    assert_int_equal(
        tu_post(f->srv.port, NWB_LOG_BATCH_CONTENT_TYPE, "alpha", "r3", -1, batch, blen, NULL, 0),
        200);
    blen = tu_batch_build(batch, sizeof(batch), after_msg, 1, 0);
    assert_int_equal(
        tu_post(f->srv.port, NWB_LOG_BATCH_CONTENT_TYPE, "alpha", "r3", -1, batch, blen, NULL, 0),
        200);
    run_id(f->out, "alpha", "r1", a1, sizeof(a1));
    run_id(f->out, "beta", "r2", b1, sizeof(b1));
    run_id(f->out, "alpha", "r3", a3, sizeof(a3));

    get_json(f->srv.port, "/v1/runs", &r);
    assert_int_equal(strncmp(r.body, "{\"runs\":[", 9), 0);
    check_newest_first(r.body);
    assert_non_null(run_obj(r.body, a1, obj, sizeof(obj)));
    assert_non_null(strstr(obj, "\"program\":\"alpha\",\"run\":\"r1\",\"started\":\""));
    assert_non_null(strstr(obj, "\"live\":true"));
    assert_non_null(strstr(obj, "\"telemetry\":false"));
    assert_int_equal(num(obj, "records"), 6);
    assert_int_equal(num(obj, "crashes"), 0);
    {
        char path[1024];
        struct stat st;

        snprintf(path, sizeof(path), "%s/runs/%s/log.txt", f->out, a1);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(num(obj, "logBytes"), (unsigned long long)st.st_size);
    }
    assert_non_null(run_obj(r.body, b1, obj, sizeof(obj)));
    assert_non_null(run_obj(r.body, a3, obj, sizeof(obj)));
    resp_free(&r);

    get_json(f->srv.port, "/v1/runs?program=alpha", &r);
    assert_null(strstr(r.body, "\"program\":\"beta\""));
    assert_non_null(strstr(r.body, a1));
    assert_non_null(strstr(r.body, a3));
    resp_free(&r);
    get_json(f->srv.port, "/v1/runs?program=alpha&limit=1", &r);
    assert_int_equal(tu_count(r.body, "{\"id\":"), 1);
    assert_int_equal(tu_count(r.body, "\"program\":\"alpha\""), 1);
    resp_free(&r);
    get_json(f->srv.port, "/v1/runs?limit=1", &r);
    assert_int_equal(tu_count(r.body, "{\"id\":"), 1);
    resp_free(&r);
    get_json(f->srv.port, "/v1/runs", &r);
    assert_int_equal(tu_count(r.body, "{\"id\":"), 3);
    resp_free(&r);
    get_json(f->srv.port, "/v1/runs?program=nobody", &r);
    assert_string_equal(r.body, "{\"runs\":[]}\n");
    resp_free(&r);
    get_json(f->srv.port, "/v1/runs?limit=1000", &r);
    /* The list carries the gap markers and unknown tokens too (a runs view needs no per-run
     * request for them). */
    assert_non_null(run_obj(r.body, a3, obj, sizeof(obj)));
    assert_int_equal(num(obj, "drops"), 1);
    assert_int_equal(num(obj, "tokensUnknown"), 0);
    resp_free(&r);

    /* One run with its counters: the DROPNOTE record is the gap marker. */
    snprintf(target, sizeof(target), "/v1/runs/%s", a3);
    get_json(f->srv.port, target, &r);
    assert_non_null(strstr(r.body, "\"counters\":{\"records\":2,\"drops\":1,\"tokensDecoded\":0,"
                                   "\"tokensUnknown\":0,\"telemetryUploads\":0},\"listed\":true}"));
    resp_free(&r);

    /* Bad input. */
    expect_status(f->srv.port, "/v1/runs?limit=0", 400);
    expect_status(f->srv.port, "/v1/runs?limit=1001", 400);
    expect_status(f->srv.port, "/v1/runs?limit=-1", 400);
    expect_status(f->srv.port, "/v1/runs?limit=abc", 400);
    expect_status(f->srv.port, "/v1/runs?limit=18446744073709551616", 400);
    expect_status(f->srv.port, "/v1/runs?limit=%zz", 400);
    expect_status(f->srv.port, "/v1/runs?x=%00", 400);
    expect_status(f->srv.port, "/v1/runs?program=..%2fetc", 400);
    expect_status(f->srv.port, "/v1/runs?program=", 400);
    expect_status(f->srv.port, "/v1/runs/alpha_20000101-000000_nope", 404);
    expect_status(f->srv.port, "/v1/runs/..", 404);
    expect_status(f->srv.port, "/v1/runs/%2e%2e", 404);
    expect_status(f->srv.port, "/v1/runs/..%2f..%2fetc", 404);
    expect_status(f->srv.port, "/v1/runs/../../etc/passwd", 404);
    expect_status(f->srv.port, "/v1/runs/", 404);
    assert_int_equal(http(f->srv.port, "POST", "/v1/runs", NULL, NULL, 0, &r), 405);
    resp_free(&r);

    /* --run-live-s 1: no batch for a second, so none is live. */
    deadline = nwb_test_now_ms() + WAIT_MS;
    for (;;) {
        get_json(f->srv.port, "/v1/runs", &r);
        if (strstr(r.body, "\"live\":true") == NULL) {
            break;
        }
        resp_free(&r);
        assert_true(nwb_test_now_ms() < deadline);
        poll(NULL, 0, 50);
    }
    assert_non_null(strstr(r.body, "\"live\":false"));
    resp_free(&r);
    stop(f);

    /* After a restart the counters come back from each run's .nwb-counters. */
    start(f, extra);
    snprintf(target, sizeof(target), "/v1/runs/%s", a1);
    get_json(f->srv.port, target, &r);
    assert_int_equal(num(r.body, "records"), 6);
    assert_non_null(strstr(r.body, "\"live\":false"));
    resp_free(&r);
    stop(f);
}

/* ---- GET /v1/runs/<id>/log ---------------------------------------------------------------- */

static char *read_log(const char *out, const char *id, size_t *len)
{
    char path[1024];

    snprintf(path, sizeof(path), "%s/runs/%s/log.txt", out, id);
    return nwb_test_read_file(path, len);
}

/* Successive ?offset= reads of @p limit bytes from 0 give back @p file (@p flen bytes): each
 * answer whole lines from where it was asked, with the log's size and its offset. */
static void read_back(int port, const char *id, unsigned limit, const char *file, size_t flen)
{
    char *got = malloc(flen + 1);
    size_t offset = 0;
    char target[512], ctype[64];
    struct resp r;

    assert_non_null(got);
    while (offset < flen) {
        snprintf(target, sizeof(target), "/v1/runs/%s/log?offset=%zu&limit=%u", id, offset, limit);
        assert_int_equal(get(port, target, &r), 200);
        assert_string_equal(header(&r, "Content-Type", ctype, sizeof(ctype)),
                            "text/plain; charset=utf-8");
        assert_int_equal(header_u64(&r, "X-NWB-Log-Size"), flen);
        assert_int_equal(header_u64(&r, "X-NWB-Log-Offset"), offset);
        assert_true(r.len > 0 && offset + r.len <= flen);
        assert_true(r.body[r.len - 1] == '\n');
        memcpy(got + offset, r.body, r.len);
        offset += r.len;
        resp_free(&r);
    }
    assert_int_equal(offset, flen);
    assert_memory_equal(got, file, flen);
    free(got);
}

static void test_log_range_reads_reassemble_log_txt_and_tail(void **state)
{
    struct fx *f = *state;
    char id[256], target[512], text[8192];
    const unsigned limits[] = {1, 100, 777, 4096, LIMIT_MAX};
    size_t flen = 0;
    char *file;
    const char *nl;
    struct resp r;

    start(f, NULL);
    for (int b = 0; b < 10; b++) {
        size_t n = 0;

        for (int i = 0; i < 20; i++) {
            n += (size_t)snprintf(text + n, sizeof(text) - n, "batch %d line %d %.*s\n", b, i,
                                  (b * 7 + i) % 50,
                                  "................................................");
        }
        post_text(f->srv.port, "logs", "r", text);
    }
    run_id(f->out, "logs", "r", id, sizeof(id));
    file = read_log(f->out, id, &flen);
    assert_non_null(file);

    for (size_t k = 0; k < sizeof(limits) / sizeof(limits[0]); k++) {
        read_back(f->srv.port, id, limits[k], file, flen);
    }

    /* Without ?limit=: from the start, whole lines. */
    snprintf(target, sizeof(target), "/v1/runs/%s/log", id);
    assert_int_equal(get(f->srv.port, target, &r), 200);
    assert_int_equal(r.len, flen);
    resp_free(&r);
    /* An offset inside a line starts at the next line. */
    nl = strchr(file, '\n');
    snprintf(target, sizeof(target), "/v1/runs/%s/log?offset=3&limit=100000", id);
    assert_int_equal(get(f->srv.port, target, &r), 200);
    assert_int_equal(header_u64(&r, "X-NWB-Log-Offset"), (unsigned long long)(nl + 1 - file));
    assert_int_equal(r.len, flen - (size_t)(nl + 1 - file));
    resp_free(&r);
    /* At the end: empty; past it: 416 with the size. */
    snprintf(target, sizeof(target), "/v1/runs/%s/log?offset=%zu", id, flen);
    assert_int_equal(get(f->srv.port, target, &r), 200);
    assert_int_equal(r.len, 0);
    resp_free(&r);
    snprintf(target, sizeof(target), "/v1/runs/%s/log?offset=%zu", id, flen + 1);
    assert_int_equal(get(f->srv.port, target, &r), 416);
    assert_int_equal(header_u64(&r, "X-NWB-Log-Size"), flen);
    resp_free(&r);
    expect_statusf(f->srv.port, 416, "/v1/runs/%s/log?offset=18446744073709551615", id);

    /* ?tail=N: the file's last N lines. */
    snprintf(target, sizeof(target), "/v1/runs/%s/log?tail=3", id);
    assert_int_equal(get(f->srv.port, target, &r), 200);
    {
        const char *p = file + flen - 1;

        for (int lines = 0; p > file; p--) {
            if (p[-1] == '\n' && ++lines == 3) {
                break;
            }
        }
        assert_int_equal(r.len, (size_t)(file + flen - p));
        assert_memory_equal(r.body, p, r.len);
        assert_int_equal(header_u64(&r, "X-NWB-Log-Offset"), (unsigned long long)(p - file));
    }
    resp_free(&r);
    snprintf(target, sizeof(target), "/v1/runs/%s/log?tail=%u", id, TAIL_LINES);
    assert_int_equal(get(f->srv.port, target, &r), 200);
    assert_int_equal(r.len, flen);
    resp_free(&r);

    /* Bad input. */
    expect_statusf(f->srv.port, 200, "/v1/runs/%s/log?limit=%u", id, LIMIT_MAX);
    expect_statusf(f->srv.port, 400, "/v1/runs/%s/log?limit=%u", id, LIMIT_MAX + 1);
    expect_statusf(f->srv.port, 400, "/v1/runs/%s/log?limit=0", id);
    expect_statusf(f->srv.port, 400, "/v1/runs/%s/log?offset=-1", id);
    expect_statusf(f->srv.port, 400, "/v1/runs/%s/log?offset=18446744073709551616", id);
    expect_statusf(f->srv.port, 400, "/v1/runs/%s/log?tail=0", id);
    expect_statusf(f->srv.port, 400, "/v1/runs/%s/log?tail=%u", id, TAIL_LINES + 1);
    expect_statusf(f->srv.port, 400, "/v1/runs/%s/log?tail=3&offset=0", id);
    expect_statusf(f->srv.port, 400, "/v1/runs/%s/log?offset=1%%", id);
    expect_status(f->srv.port, "/v1/runs/logs_20000101-000000_nope/log", 404);
    expect_status(f->srv.port, "/v1/runs/../log", 404);
    expect_status(f->srv.port, "/v1/runs/%2e%2e/log", 404);
    free(file);
    stop(f);
}

/* Bytes the process @p pid has read (/proc/<pid>/io), or -1. */
static long long proc_rchar(pid_t pid)
{
    char path[64];
    char *io;
    const char *p;
    long long v;

    snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
    io = nwb_test_read_file(path, NULL);
    p = io != NULL ? strstr(io, "rchar: ") : NULL;
    v = p != NULL ? strtoll(p + 7, NULL, 10) : -1;
    free(io);
    return v;
}

static void test_ten_gib_log_is_answered_without_reading_it_whole(void **state)
{
    struct fx *f = *state;
    static const char id[] = "big_20240101-000000_r";
    static const char end[] = "\nthe line before the last\nthe last line\n";
    char path[1024], target[512];
    long long before;
    struct resp r;
    int fd;

    snprintf(path, sizeof(path), "%s/runs/%s", f->out, id);
    assert_int_equal(nwb_mkdir_p(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/runs/%s/log.txt", f->out, id);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    if (ftruncate(fd, (off_t)TEN_GIB) != 0) {
        close(fd);
        skip(); /* the file system here cannot hold a sparse 10 GiB file */
    }
    assert_int_equal(pwrite(fd, "first\n", 6, 0), 6);
    assert_int_equal(pwrite(fd, end, sizeof(end) - 1, (off_t)(TEN_GIB - (sizeof(end) - 1))),
                     (ssize_t)(sizeof(end) - 1));
    close(fd);
    start(f, NULL);
    if (proc_rchar(f->srv.pid) < 0) {
        skip(); /* no /proc/<pid>/io (task I/O accounting) to count the server's reads */
    }
    snprintf(target, sizeof(target), "/v1/runs/%s", id);
    get_json(f->srv.port, target, &r);
    assert_int_equal(num(r.body, "logBytes"), TEN_GIB);
    resp_free(&r);

    before = proc_rchar(f->srv.pid);
    snprintf(target, sizeof(target), "/v1/runs/%s/log?tail=2", id);
    assert_int_equal(get(f->srv.port, target, &r), 200);
    assert_string_equal(r.body, "the line before the last\nthe last line\n");
    assert_int_equal(header_u64(&r, "X-NWB-Log-Size"), TEN_GIB);
    resp_free(&r);
    snprintf(target, sizeof(target), "/v1/runs/%s/log?offset=%llu", id,
             (unsigned long long)(TEN_GIB - (sizeof(end) - 2)));
    assert_int_equal(get(f->srv.port, target, &r), 200);
    assert_string_equal(r.body, end + 1);
    resp_free(&r);
    snprintf(target, sizeof(target), "/v1/runs/%s/log?offset=%llu&limit=%u", id,
             (unsigned long long)(TEN_GIB / 2), LIMIT_MAX);
    assert_int_equal(get(f->srv.port, target, &r), 200);
    resp_free(&r);
    assert_true(proc_rchar(f->srv.pid) - before < 16ll * 1024 * 1024);
    stop(f);
}

/* ---- GET /v1/runs/<id>/telemetry ---------------------------------------------------------- */

static void test_telemetry_answers_the_runs_report(void **state)
{
    struct fx *f = *state;
    nwb_tel_synth_config_t cfg = NWB_TEL_SYNTH_CONFIG_INIT;
    nwb_buf_t stream = NWB_BUF_INIT(64u << 20);
    char id[256], target[512], path[1024], obj[1024];
    size_t json_len = 0;
    char *json;
    struct resp r;

    cfg.frames = 30;
    cfg.frames_per_upload = 0;
    assert_int_equal(nwb_tel_synth(&cfg, &stream, NULL), 0);
    start(f, NULL);
    post_text(f->srv.port, "tel", "t1", "a line\n");
    post_text(f->srv.port, "tel", "t0", "no telemetry here\n");
    for (int i = 0; i < 2; i++) { /* the second is a duplicate (same seq) */
        assert_int_equal(http(f->srv.port, "POST", "/v1/telemetry",
                              "X-NWB-Program: tel\r\nX-NWB-Run: t1\r\nX-NWB-Seq: 1\r\n",
                              stream.data, stream.len, &r),
                         200);
        resp_free(&r);
    }
    nwb_buf_cleanup(&stream);
    run_id(f->out, "tel", "t1", id, sizeof(id));
    snprintf(target, sizeof(target), "/v1/runs/%s/telemetry", id);
    get_json(f->srv.port, target, &r);
    snprintf(path, sizeof(path), "%s/runs/%s/telemetry.json", f->out, id);
    json = nwb_test_read_file(path, &json_len);
    assert_non_null(json);
    assert_int_equal(r.len, json_len);
    assert_memory_equal(r.body, json, json_len);
    free(json);
    resp_free(&r);

    get_json(f->srv.port, "/v1/runs", &r);
    assert_non_null(run_obj(r.body, id, obj, sizeof(obj)));
    assert_non_null(strstr(obj, "\"telemetry\":true"));
    resp_free(&r);
    snprintf(target, sizeof(target), "/v1/runs/%s", id);
    get_json(f->srv.port, target, &r);
    assert_int_equal(num(strstr(r.body, "\"counters\""), "telemetryUploads"), 1);
    resp_free(&r);

    run_id(f->out, "tel", "t0", id, sizeof(id));
    expect_statusf(f->srv.port, 404, "/v1/runs/%s/telemetry", id);
    expect_status(f->srv.port, "/v1/runs/tel_20000101-000000_none/telemetry", 404);
    expect_status(f->srv.port, "/v1/runs/..%2f..%2f/telemetry", 404);
    stop(f);
}

/* ---- GET /v1/crashes/<id>/files/<name> ---------------------------------------------------- */

/* POST @p archive; wait until the crash is @p status ("extracted" or "invalid", never the
 * other); its id into @p id. */
static void post_crash_until(struct fx *f, const void *archive, size_t len, const char *status,
                             char *id, size_t cap)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;
    const char *other = strcmp(status, "invalid") == 0 ? "extracted" : "invalid";
    char target[256], want[64], unwanted[64];
    struct resp r;
    const char *p;

    assert_int_equal(http(f->srv.port, "POST", "/v1/crash", NULL, archive, len, &r), 200);
    p = strstr(r.body, "\"id\":\"");
    assert_non_null(p);
    snprintf(id, cap, "%.32s", p + 6);
    resp_free(&r);
    snprintf(target, sizeof(target), "/v1/crashes/%s", id);
    snprintf(want, sizeof(want), "\"status\":\"%s\"", status);
    snprintf(unwanted, sizeof(unwanted), "\"status\":\"%s\"", other);
    for (;;) {
        get_json(f->srv.port, target, &r);
        if (strstr(r.body, want) != NULL) {
            resp_free(&r);
            return;
        }
        assert_null(strstr(r.body, unwanted));
        resp_free(&r);
        assert_true(nwb_test_now_ms() < deadline);
        poll(NULL, 0, 20);
    }
}

/* POST @p archive; wait until the crash is extracted; its id into @p id. */
static void post_crash(struct fx *f, const void *archive, size_t len, char *id, size_t cap)
{
    post_crash_until(f, archive, len, "extracted", id, cap);
}

/* An archive entry: a file of @p len bytes of @p data (NULL: @p len bytes of zeros). */
static void file_entry(struct ta_entry *e, const char *path, const void *data, size_t len)
{
    memset(e, 0, sizeof(*e));
    e->path = path;
    e->data = data;
    if (data != NULL) {
        e->len = len;
    } else {
        e->fill_bytes = len;
    }
}

static void test_crash_files_are_answered_by_name(void **state)
{
    struct fx *f = *state;
    static const char manifest[] = "nwb-crash-manifest 1\nkind=signal\nprogram=crashy\n"
                                   "run=cr1\nsignal=SIGSEGV\n";
    static const char stack[] = "#0 main () at game.c:10\n";
    const char *const extra[] = {"--crash-max-ratio", "1000000", NULL};
    struct ta_entry e[5];
    char id[64], big[64], run[256], target[512], ctype[96], nosniff[32];
    long long deadline;
    void *archive;
    size_t len;
    struct resp r;

    start(f, extra);
    post_text(f->srv.port, "crashy", "cr1", "before the crash\n");
    run_id(f->out, "crashy", "cr1", run, sizeof(run));
    file_entry(&e[0], "manifest.txt", manifest, sizeof(manifest) - 1);
    file_entry(&e[1], "threads", NULL, 0);
    e[1].kind = TA_DIR;
    file_entry(&e[2], "threads/main.txt", stack, sizeof(stack) - 1);
    file_entry(&e[3], "core.bin", NULL, 1000);
    e[3].fill_byte = 7;
    archive = ta_build("tar.zst", e, 4, &len);
    assert_non_null(archive);
    post_crash(f, archive, len, id, sizeof(id));
    free(archive);

    snprintf(target, sizeof(target), "/v1/crashes/%s/files/manifest.txt", id);
    assert_int_equal(get(f->srv.port, target, &r), 200);
    assert_string_equal(r.body, manifest);
    assert_string_equal(header(&r, "Content-Type", ctype, sizeof(ctype)),
                        "text/plain; charset=utf-8");
    assert_string_equal(header(&r, "X-Content-Type-Options", nosniff, sizeof(nosniff)), "nosniff");
    /* Once: the security headers carry it; a second copy would be the route's own. */
    {
        const char *first = strcasestr(r.head, "\r\nX-Content-Type-Options:");

        assert_non_null(first);
        assert_null(strcasestr(first + 2, "\r\nX-Content-Type-Options:"));
    }
    resp_free(&r);
    snprintf(target, sizeof(target), "/v1/crashes/%s/files/threads/main.txt", id);
    assert_int_equal(get(f->srv.port, target, &r), 200);
    assert_string_equal(r.body, stack);
    resp_free(&r);
    expect_statusf(f->srv.port, 200, "/v1/crashes/%s/files/threads%%2Fmain.txt", id);
    snprintf(target, sizeof(target), "/v1/crashes/%s/files/core.bin", id);
    assert_int_equal(get(f->srv.port, target, &r), 200);
    assert_int_equal(r.len, 1000);
    assert_string_equal(header(&r, "Content-Type", ctype, sizeof(ctype)),
                        "application/octet-stream");
    resp_free(&r);

    /* The run the manifest names counts the crash. */
    deadline = nwb_test_now_ms() + WAIT_MS;
    snprintf(target, sizeof(target), "/v1/runs/%s", run);
    for (;;) {
        get_json(f->srv.port, target, &r);
        if (num(r.body, "crashes") == 1) {
            resp_free(&r);
            break;
        }
        resp_free(&r);
        assert_true(nwb_test_now_ms() < deadline);
        poll(NULL, 0, 20);
    }

    /* Not files, not there, not inside the package: 404; a bad escape: 400. */
    expect_statusf(f->srv.port, 404, "/v1/crashes/%s/files/threads", id);
    expect_statusf(f->srv.port, 404, "/v1/crashes/%s/files/nope.txt", id);
    expect_statusf(f->srv.port, 404, "/v1/crashes/%s/files/..%%2F..%%2F..%%2Fruns", id);
    expect_statusf(f->srv.port, 404, "/v1/crashes/%s/files/%%2e%%2e/%%2e%%2e/raw", id);
    expect_statusf(f->srv.port, 404, "/v1/crashes/%s/files/../../raw", id);
    expect_statusf(f->srv.port, 404, "/v1/crashes/%s/files/%%2Fetc%%2Fpasswd", id);
    expect_statusf(f->srv.port, 400, "/v1/crashes/%s/files/a%%zz", id);
    expect_statusf(f->srv.port, 400, "/v1/crashes/%s/files/a%%00b", id);
    expect_statusf(f->srv.port, 404, "/v1/crashes/%s/files/", id);
    expect_status(f->srv.port, "/v1/crashes/0123456789abcdef0123456789abcdef/files/manifest.txt",
                  404);
    expect_status(f->srv.port, "/v1/crashes/..%2f..%2fruns/files/log.txt", 404);
    expect_status(f->srv.port, "/v1/crashes/XYZ/files/manifest.txt", 404);

    /* The size cap: a file of exactly NWB__READ_FILE_MAX is answered, one byte more is 413. */
    file_entry(&e[0], "manifest.txt", manifest, sizeof(manifest) - 1);
    file_entry(&e[1], "at_cap.bin", NULL, FILE_MAX);
    file_entry(&e[2], "over_cap.bin", NULL, FILE_MAX + 1u);
    archive = ta_build("tar.zst", e, 3, &len);
    assert_non_null(archive);
    post_crash(f, archive, len, big, sizeof(big));
    free(archive);
    snprintf(target, sizeof(target), "/v1/crashes/%s/files/at_cap.bin", big);
    assert_int_equal(get(f->srv.port, target, &r), 200);
    assert_int_equal(r.len, FILE_MAX);
    resp_free(&r);
    expect_statusf(f->srv.port, 413, "/v1/crashes/%s/files/over_cap.bin", big);
    /* The package's manifest (GET /v1/crashes/<id>) lists the files. */
    snprintf(target, sizeof(target), "/v1/crashes/%s", big);
    get_json(f->srv.port, target, &r);
    assert_non_null(strstr(r.body, "\"path\":\"over_cap.bin\""));
    resp_free(&r);
    stop(f);
}

/* ---- GET /v1/crashes/<id>/archive --------------------------------------------------------- */

/* GET the raw archive of @p id: 200, the bytes @p body (@p len), type @p ctype, the file name
 * <id>.<ext> for a download. */
static void expect_archive(struct fx *f, const char *id, const void *body, size_t len,
                           const char *ctype, const char *ext)
{
    char target[256], got[128], want[128];
    struct resp r;

    snprintf(target, sizeof(target), "/v1/crashes/%s/archive", id);
    assert_int_equal(get(f->srv.port, target, &r), 200);
    assert_int_equal(r.len, len);
    assert_memory_equal(r.body, body, len);
    assert_string_equal(header(&r, "Content-Type", got, sizeof(got)), ctype);
    snprintf(want, sizeof(want), "attachment; filename=\"%s.%s\"", id, ext);
    assert_string_equal(header(&r, "Content-Disposition", got, sizeof(got)), want);
    resp_free(&r);
}

static void test_crash_archive_is_answered_as_uploaded(void **state)
{
    struct fx *f = *state;
    static const char manifest[] = "nwb-crash-manifest 1\nkind=signal\nprogram=crashy\n"
                                   "run=cr2\nsignal=SIGSEGV\n";
    static const char junk[] = "not an archive at all";
    struct ta_entry e[2];
    char id[64], bad[64], target[256];
    void *archive;
    size_t len;
    struct resp r;

    start(f, NULL);
    file_entry(&e[0], "manifest.txt", manifest, sizeof(manifest) - 1);
    file_entry(&e[1], "crash.txt", "signal=SIGSEGV\n", 15);
    archive = ta_build("tar.zst", e, 2, &len);
    assert_non_null(archive);
    post_crash(f, archive, len, id, sizeof(id));
    expect_archive(f, id, archive, len, "application/zstd", "tar.zst");
    free(archive);

    /* A refused upload: its bytes from invalid/, as they came. */
    post_crash_until(f, junk, sizeof(junk) - 1, "invalid", bad, sizeof(bad));
    expect_archive(f, bad, junk, sizeof(junk) - 1, "application/octet-stream", "bin");

    /* Unknown, malformed, traversals: 404; another method: 405. */
    expect_status(f->srv.port, "/v1/crashes/0123456789abcdef0123456789abcdef/archive", 404);
    expect_status(f->srv.port, "/v1/crashes/0123456789ABCDEF0123456789ABCDEF/archive", 404);
    expect_status(f->srv.port, "/v1/crashes/..%2f..%2fraw/archive", 404);
    expect_status(f->srv.port, "/v1/crashes/XYZ/archive", 404);
    snprintf(target, sizeof(target), "/v1/crashes/%s/archive", id);
    assert_int_equal(http(f->srv.port, "POST", target, NULL, "x", 1, &r), 405);
    resp_free(&r);
    stop(f);
}

/* ---- --token-file covers the read routes -------------------------------------------------- */

static void test_token_file_rule_covers_the_read_routes(void **state)
{
    struct fx *f = *state;
    char token_path[700];
    const char *const extra[] = {"--token-file", token_path, NULL};
    static const char *const targets[] = {"/v1/runs",
                                          "/v1/runs/a_20240101-000000_b",
                                          "/v1/runs/a_20240101-000000_b/log",
                                          "/v1/runs/a_20240101-000000_b/telemetry",
                                          "/v1/crashes/0123456789abcdef0123456789abcdef/files/x",
                                          "/v1/crashes/0123456789abcdef0123456789abcdef/archive"};
    struct resp r;

    snprintf(token_path, sizeof(token_path), "%s/token", f->dir);
    assert_int_equal(nwb_test_write_file(token_path, "read-api-token-0123456789\n", 26, 0600), 0);
    start(f, extra);
    for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
        expect_status(f->srv.port, targets[i], 401);
    }
    assert_int_equal(http(f->srv.port, "GET", "/v1/runs",
                          "Authorization: Bearer read-api-token-0123456789\r\n", NULL, 0, &r),
                     200);
    resp_free(&r);
    stop(f);
}

/* ---- A live nwb-demo run ------------------------------------------------------------------ */

#ifdef NWB_DEMO_EXE
static pid_t spawn_demo(struct fx *f, const char *record)
{
    char server_arg[64], log_env[700], crash_env[700];
    pid_t pid;

    snprintf(server_arg, sizeof(server_arg), "--logserver=127.0.0.1:%d", f->srv.port);
    snprintf(log_env, sizeof(log_env), "NWB_LOG_DIR=%s/demo-logs", f->dir);
    snprintf(crash_env, sizeof(crash_env), "NWB_CRASH_DIR=%s/demo-crash", f->dir);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const char *const argv[] = {NWB_DEMO_EXE, "--frames", "240", server_arg,
                                    "--record",   record,     NULL};
        const int devnull = open("/dev/null", O_WRONLY);

        putenv(log_env);
        putenv(crash_env);
        putenv((char *)(uintptr_t) "NWB_CRASH_HELPER=");
        unsetenv("NWB_LOGSERVER");
        dup2(devnull, STDOUT_FILENO);
        dup2(devnull, STDERR_FILENO);
        execv(argv[0], (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    return pid;
}

/* The id of the first nwb-demo run in a runs list, or "" ; @p live its live flag. */
static void demo_in(const char *json, char *id, size_t cap, int *live)
{
    const char *p = strstr(json, "\"program\":\"nwb-demo\"");
    const char *s, *e;

    id[0] = '\0';
    if (p == NULL) {
        return;
    }
    for (s = p; s > json && strncmp(s, "{\"id\":\"", 7) != 0; s--) {
    }
    snprintf(id, cap, "%.*s", (int)strcspn(s + 7, "\""), s + 7);
    e = strchr(p, '}');
    *live = e != NULL && memmem(p, (size_t)(e - p), "\"live\":true", 11) != NULL;
}

static void test_demo_run_is_live_while_it_runs_and_its_log_reads_back(void **state)
{
    struct fx *f = *state;
    const char *const extra[] = {"--run-live-s", "1", NULL};
    char record[700], id[256], target[512];
    long long deadline = nwb_test_now_ms() + WAIT_MS;
    int live = 0, status = 0;
    size_t flen = 0;
    char *file;
    struct resp r;
    pid_t pid;

    snprintf(record, sizeof(record), "%s/record.txt", f->dir);
    start(f, extra);
    pid = spawn_demo(f, record);
    /* Listed live while it runs (240 frames at 60 Hz: about 4 s). */
    for (;;) {
        get_json(f->srv.port, "/v1/runs", &r);
        demo_in(r.body, id, sizeof(id), &live);
        resp_free(&r);
        if (live) {
            break;
        }
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fail_msg("nwb-demo exited (status 0x%x) before it was seen live", (unsigned)status);
        }
        assert_true(nwb_test_now_ms() < deadline);
        poll(NULL, 0, 20);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* And not live once --run-live-s passed without a batch. */
    deadline = nwb_test_now_ms() + WAIT_MS;
    for (;;) {
        char again[256];

        get_json(f->srv.port, "/v1/runs", &r);
        demo_in(r.body, again, sizeof(again), &live);
        resp_free(&r);
        assert_string_equal(again, id);
        if (!live) {
            break;
        }
        assert_true(nwb_test_now_ms() < deadline);
        poll(NULL, 0, 50);
    }

    /* Its log, read back in ranges, is log.txt byte for byte; its tail is the last line. */
    file = read_log(f->out, id, &flen);
    assert_non_null(file);
    assert_true(flen > 0);
    read_back(f->srv.port, id, 1024, file, flen);
    snprintf(target, sizeof(target), "/v1/runs/%s/log?tail=1", id);
    assert_int_equal(get(f->srv.port, target, &r), 200);
    assert_true(r.len > 0 && r.len <= flen);
    assert_memory_equal(r.body, file + flen - r.len, r.len);
    assert_true(r.len == flen || file[flen - r.len - 1] == '\n');
    resp_free(&r);
    free(file);

    /* Its report, and the list saying it has one. */
    snprintf(target, sizeof(target), "/v1/runs/%s/telemetry", id);
    get_json(f->srv.port, target, &r);
    assert_non_null(strstr(r.body, "\"program\":\"nwb-demo\""));
    resp_free(&r);
    snprintf(target, sizeof(target), "/v1/runs/%s", id);
    get_json(f->srv.port, target, &r);
    assert_non_null(strstr(r.body, "\"telemetry\":true"));
    assert_true(num(strstr(r.body, "\"counters\""), "telemetryUploads") >= 2);
    resp_free(&r);
    stop(f);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_runs_list_filter_limit_and_counters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_range_reads_reassemble_log_txt_and_tail, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ten_gib_log_is_answered_without_reading_it_whole,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_telemetry_answers_the_runs_report, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_files_are_answered_by_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_archive_is_answered_as_uploaded, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_token_file_rule_covers_the_read_routes, setup,
                                        teardown),
#ifdef NWB_DEMO_EXE
        cmocka_unit_test_setup_teardown(test_demo_run_is_live_while_it_runs_and_its_log_reads_back,
                                        setup, teardown),
#endif
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
