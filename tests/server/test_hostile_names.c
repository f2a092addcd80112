/* SPDX-License-Identifier: MIT */
/*
 * test_hostile_names.c - hostile X-NWB-Program / X-NWB-Run values (../,
 * absolute paths, raw NUL, 4 KiB, non-UTF-8, "." and "..") on POST /v1/log,
 * /v1/telemetry and /v1/crash of the real binary: nothing appears or changes
 * outside --out (its parent folder, with a sentinel beside --out, is walked
 * before and after), the run folders made have safe names, and what was
 * answered 200 is in a run log under --out.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server_test_util.h"

#define ENTRIES_MAX 4096
#define MARK        "hostile-marker-"

struct walk {
    char *e[ENTRIES_MAX];
    int n;
};

/* Record "relpath type size content-hash" for every entry below @p root/@p rel. */
static void walk_dir(struct walk *w, const char *root, const char *rel, const char *skip)
{
    char path[2048];
    DIR *d;
    struct dirent *de;

    snprintf(path, sizeof(path), "%s%s%s", root, rel[0] != '\0' ? "/" : "", rel);
    d = opendir(path);
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        char sub[1024];
        char full[3072];
        char line[1400];
        struct stat st;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }
        snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] != '\0' ? "/" : "", de->d_name);
        if (skip != NULL && strcmp(sub, skip) == 0) {
            continue;
        }
        snprintf(full, sizeof(full), "%s/%s", root, sub);
        assert_int_equal(lstat(full, &st), 0);
        snprintf(line, sizeof(line), "%s %o %lld %lld", sub, (unsigned)st.st_mode,
                 (long long)st.st_size, (long long)st.st_mtime);
        assert_true(w->n < ENTRIES_MAX);
        w->e[w->n] = strdup(line);
        assert_non_null(w->e[w->n]);
        w->n++;
        if (S_ISDIR(st.st_mode)) {
            walk_dir(w, root, sub, skip);
        }
    }
    closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void walk(struct walk *w, const char *root, const char *skip)
{
    w->n = 0;
    walk_dir(w, root, "", skip);
    qsort(w->e, (size_t)w->n, sizeof(w->e[0]), cmp_str);
}

static void walk_free(struct walk *w)
{
    for (int i = 0; i < w->n; i++) {
        free(w->e[i]);
    }
    w->n = 0;
}

/* [A-Za-z0-9_.-], not starting with '.' (what nwb_safe_name makes). */
static int safe_part(const char *s, size_t n)
{
    if (n == 0 || s[0] == '.') {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        const char ch = s[i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '.' || ch == '-')) {
            return 0;
        }
    }
    return 1;
}

/*
 * POST @p path with raw header values (@p plen / @p rlen bytes, any bytes) and
 * @p body. Returns the status, or -1 when the server closed without an answer.
 */
static int post_raw(int port, const char *path, const char *prog, size_t plen, const char *run,
                    size_t rlen, const char *ctype, const char *body, size_t blen)
{
    static char req[16384];
    char resp[512];
    size_t n = 0;
    int status = -1;
    int fd;

#define ADD(p, l)                                                                                  \
    do {                                                                                           \
        assert_true(n + (l) < sizeof(req));                                                        \
        memcpy(req + n, (p), (l));                                                                 \
        n += (l);                                                                                  \
    } while (0)
#define ADDS(s) ADD((s), strlen(s))
    ADDS("POST ");
    ADDS(path);
    ADDS(" HTTP/1.1\r\nHost: 127.0.0.1\r\nX-NWB-Program: ");
    ADD(prog, plen);
    ADDS("\r\nX-NWB-Run: ");
    ADD(run, rlen);
    ADDS("\r\nContent-Type: ");
    ADDS(ctype);
    {
        char cl[64];

        snprintf(cl, sizeof(cl), "\r\nContent-Length: %zu\r\n\r\n", blen);
        ADDS(cl);
    }
    ADD(body, blen);
#undef ADDS
#undef ADD
    fd = nwb_test_connect(port);
    assert_true(fd >= 0);
    if (nwb_test_send_all(fd, req, n) == 0 &&
        nwb_test_read_response(fd, &status, resp, sizeof(resp)) < 0) {
        status = -1;
    }
    close(fd);
    return status;
}

struct hostile {
    const char *v;
    size_t len;
};

static char long_a[4096], long_dots[4096], abs_escape[700];

static void test_hostile_names_stay_inside_out(void **state)
{
    struct nwb_test_server srv;
    char dir[512], out[600], sentinel[700], runs[700];
    struct walk before, after, rw;
    char *sentinel_text;
    int tmp_x_existed;
    struct stat st;
    int served = 0;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("hostile", dir, sizeof(dir)), 0);
    snprintf(out, sizeof(out), "%s/out", dir);
    snprintf(sentinel, sizeof(sentinel), "%s/sentinel.txt", dir);
    snprintf(abs_escape, sizeof(abs_escape), "%s/abs-escape", dir);
    {
        FILE *f = fopen(sentinel, "w");

        assert_non_null(f);
        fputs("untouched\n", f);
        fclose(f);
    }
    memset(long_a, 'A', sizeof(long_a));
    for (size_t i = 0; i + 3 <= sizeof(long_dots); i += 3) {
        memcpy(long_dots + i, "../", 3);
    }
    tmp_x_existed = lstat("/tmp/x", &st) == 0;

    const struct hostile names[] = {
        {"../", 3},
        {"../../etc", 9},
        {"../../../../../../tmp/x", 23},
        {"/tmp/x", 6},
        {abs_escape, strlen(abs_escape)},
        {"..", 2},
        {".", 1},
        {"a/../../b", 9},
        {"..\\..\\win", 9},
        {"ab\0cd", 5}, /* raw NUL: llhttp refuses it (400) */
        {long_a, sizeof(long_a)},
        {long_dots, sizeof(long_dots) - sizeof(long_dots) % 3},
        {"\xff\xfe\xc0\xaf\xc0\xae\xc0\xae", 8}, /* not UTF-8 (overlong "/" and ".") */
        {"%2e%2e%2f%2e%2e", 15},
        {"~root", 5},
        {"", 0},
        {".hidden", 7},
        {"-rf", 3},
    };
    const size_t count = sizeof(names) / sizeof(names[0]);

    assert_int_equal(tu_start(&srv, out, 0, NULL), 0);
    walk(&before, dir, "out");
    for (size_t i = 0; i < count; i++) {
        for (int which = 0; which < 3; which++) {
            /* hostile program and run; hostile program only; hostile run only */
            const char *prog = which == 2 ? "goodprog" : names[i].v;
            const size_t plen = which == 2 ? 8 : names[i].len;
            const char *run = which == 1 ? "goodrun" : names[i].v;
            const size_t rlen = which == 1 ? 7 : names[i].len;
            char body[64];
            int n = snprintf(body, sizeof(body), MARK "%zu-%d\n", i, which);
            int st1 =
                post_raw(srv.port, "/v1/log", prog, plen, run, rlen, "text/plain", body, (size_t)n);
            int st2 = post_raw(srv.port, "/v1/telemetry", prog, plen, run, rlen,
                               "application/octet-stream", "not a telemetry stream", 22);
            int st3 = post_raw(srv.port, "/v1/crash", prog, plen, run, rlen,
                               "application/octet-stream", "not an archive", 14);

            if (memchr(names[i].v, '\0', names[i].len) != NULL) {
                assert_int_equal(st1, 400);
                assert_int_equal(st2, 400);
                assert_int_equal(st3, 400);
                continue;
            }
            assert_int_equal(st1, 200);
            served++;
            assert_true(st2 == 400 || st2 == 200);
            assert_true(st3 == 200 || st3 == 503);
        }
    }
    /* The server is still healthy, and shuts down cleanly (every file closed). */
    assert_int_equal(nwb_test_http(srv.port, "GET", "/v1/health", NULL, NULL, 0, NULL, 0), 200);
    assert_int_equal(tu_stop(&srv, SIGTERM, 20000), 0);

    /* Nothing outside --out appeared, vanished or changed. */
    walk(&after, dir, "out");
    assert_int_equal(after.n, before.n);
    for (int i = 0; i < before.n; i++) {
        assert_string_equal(after.e[i], before.e[i]);
    }
    sentinel_text = nwb_test_read_file(sentinel, NULL);
    assert_non_null(sentinel_text);
    assert_string_equal(sentinel_text, "untouched\n");
    free(sentinel_text);
    assert_int_equal(lstat(abs_escape, &st), -1);
    if (!tmp_x_existed) {
        assert_int_equal(lstat("/tmp/x", &st), -1);
    }

    /* Every run folder has a safe name of the contract's shape, holds no symlink, and the
     * 200-answered markers are all in their logs. */
    snprintf(runs, sizeof(runs), "%s/runs", out);
    walk(&rw, runs, NULL);
    {
        int dirs = 0;
        int found = 0;

        for (int i = 0; i < rw.n; i++) {
            char name[1400];
            char *sp;
            char *slash;

            snprintf(name, sizeof(name), "%s", rw.e[i]);
            sp = strchr(name, ' ');
            assert_non_null(sp);
            *sp = '\0';
            assert_false(S_ISLNK((mode_t)strtoul(sp + 1, NULL, 8)));
            slash = strchr(name, '/');
            if (slash == NULL) {
                /* runs/<program>_<YYYYmmdd-HHMMSS>_<run> */
                size_t len = strlen(name);
                char *first = strchr(name, '_');

                dirs++;
                assert_true(len <= 64 + 1 + 15 + 1 + 64 + 8);
                assert_true(safe_part(name, len));
                assert_non_null(first);
                (void)first;
            } else if (strcmp(slash, "/log.txt") == 0) {
                char path[2200];
                char *text;

                snprintf(path, sizeof(path), "%s/%s", runs, name);
                text = nwb_test_read_file(path, NULL);
                assert_non_null(text);
                found += tu_count(text, MARK);
                free(text);
            }
        }
        assert_true(dirs > 0);
        assert_int_equal(found, served);
    }
    walk_free(&before);
    walk_free(&after);
    walk_free(&rw);
    nwb_test_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_hostile_names_stay_inside_out, tu_reap),
    };

    return cmocka_run_group_tests_name("server.hostile_names", tests, NULL, NULL);
}
