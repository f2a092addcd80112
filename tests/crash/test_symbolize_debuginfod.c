/* SPDX-License-Identifier: MIT */
/*
 * test_symbolize_debuginfod.c - nwb-symbolize's debuginfod lookups (docs/crash.md,
 * "Symbolisation"): with an empty --symbols-dir, Debian's real debuginfod server on loopback,
 * scanning a folder that holds crash_prog, gives the crashing function at its line, directly
 * and through nwb-logserver's --debuginfod-urls; a port where nothing listens, a responder
 * that serves another binary, and one that never answers leave the frame module+offset with
 * the reason and exit 0, the last within --debuginfod-timeout-ms. Skipped only when the
 * debuginfod binary is not installed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "symbolize_test_world.h"
#include "test_support.h"

#define DEBUGINFOD_EXE "/usr/bin/debuginfod"
#define INDEX_WAIT_MS  30000 /* debuginfod's first scan of one small folder */
#define POLL_GAP_MS    50    /* between two index polls */
#define WAIT_MS        30000 /* the server's symbolisation of one crash */

static struct sym_world w;

/* ---- Debian's debuginfod on a loopback port ---- */

struct debuginfod_server {
    pid_t pid;
    int port;
};

/* A port the kernel just handed out and released (debuginfod 0.188 takes only a number). */
static int pick_port(void)
{
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = nwb_test_loopback(0);
    socklen_t len = sizeof(a);
    int port = -1;

    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0) {
        port = ntohs(a.sin_port);
    }
    if (fd >= 0) {
        close(fd);
    }
    return port;
}

static void pause_ms(long ms)
{
    const struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    (void)nanosleep(&ts, NULL);
}

/* Stop @p s: SIGTERM, then SIGKILL after 5 s. */
static void debuginfod_stop(struct debuginfod_server *s)
{
    const long long until = nwb_test_now_ms() + 5000;
    int status;

    if (s->pid <= 0) {
        return;
    }
    kill(s->pid, SIGTERM);
    while (waitpid(s->pid, &status, WNOHANG) == 0) {
        if (nwb_test_now_ms() > until) {
            kill(s->pid, SIGKILL);
            (void)waitpid(s->pid, &status, 0);
            break;
        }
        pause_ms(POLL_GAP_MS);
    }
    s->pid = -1;
}

/*
 * Start debuginfod scanning @p dir (its database and log under w.dir) and wait until it
 * serves build id @p build_id's debuginfo: GET /buildid/<id>/debuginfo polled every
 * POLL_GAP_MS for at most INDEX_WAIT_MS. A port taken meanwhile by another test makes it
 * exit at once; then it is tried on another port, three times in all. 0 or -1.
 */
static int debuginfod_start(struct debuginfod_server *s, const char *dir, const char *build_id)
{
    char db[700], log[700], port_arg[16], url[256];

    snprintf(db, sizeof(db), "%s/debuginfod.sqlite", w.dir);
    snprintf(log, sizeof(log), "%s/debuginfod.log", w.dir);
    snprintf(url, sizeof(url), "/buildid/%s/debuginfo", build_id);
    for (int attempt = 0; attempt < 3; attempt++) {
        const long long until = nwb_test_now_ms() + INDEX_WAIT_MS;
        int status;

        s->port = pick_port();
        snprintf(port_arg, sizeof(port_arg), "%d", s->port);
        (void)unlink(db);
        s->pid = fork();
        if (s->pid == 0) {
            const int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
            }
            /* No federation: it must never forward a miss to the host's servers. */
            unsetenv("DEBUGINFOD_URLS");
            execl(DEBUGINFOD_EXE, DEBUGINFOD_EXE, "-p", port_arg, "-d", db, "-F", "-t", "0", "-g",
                  "0", "-c", "1", dir, (char *)NULL);
            _exit(127);
        }
        if (s->pid < 0) {
            return -1;
        }
        while (nwb_test_now_ms() < until) {
            if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
                s->pid = -1;
                break; /* exited: the port was taken, or it cannot run */
            }
            if (nwb_test_http(s->port, "GET", url, NULL, NULL, 0, NULL, 0) == 200) {
                return 0;
            }
            pause_ms(POLL_GAP_MS);
        }
        if (s->pid > 0) {
            debuginfod_stop(s);
            return -1; /* running but never indexed the file */
        }
    }
    return -1;
}

/* ---- a loopback responder that is not debuginfod ---- */

struct responder {
    int fd;           /* listening */
    const char *file; /* served for every request; NULL: never accept (a stalled server) */
    pthread_t thread;
    int started;
};

static void *responder_main(void *arg)
{
    struct responder *r = arg;
    size_t len = 0;
    char *body = nwb_test_read_file(r->file, &len);

    for (;;) {
        char req[4096], head[128];
        size_t got = 0;
        const int c = accept4(r->fd, NULL, NULL, SOCK_CLOEXEC);

        if (c < 0) {
            break; /* shut down */
        }
        while (got + 1 < sizeof(req)) {
            const ssize_t n = read(c, req + got, sizeof(req) - 1 - got);

            if (n <= 0) {
                break;
            }
            got += (size_t)n;
            req[got] = '\0';
            if (strstr(req, "\r\n\r\n") != NULL) {
                break;
            }
        }
        snprintf(head, sizeof(head),
                 "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", len);
        (void)nwb_test_send_all(c, head, strlen(head));
        (void)nwb_test_send_all(c, body, len);
        close(c);
    }
    free(body);
    return NULL;
}

/* Listen on 127.0.0.1:0; serve @p file to every request, or (NULL) accept nothing. */
static int responder_start(struct responder *r, const char *file, int *port)
{
    struct sockaddr_in a = nwb_test_loopback(0);
    socklen_t len = sizeof(a);

    memset(r, 0, sizeof(*r));
    r->file = file;
    r->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (r->fd < 0 || bind(r->fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(r->fd, 64) != 0 ||
        getsockname(r->fd, (struct sockaddr *)&a, &len) != 0) {
        return -1;
    }
    *port = ntohs(a.sin_port);
    if (file != NULL) {
        if (pthread_create(&r->thread, NULL, responder_main, r) != 0) {
            return -1;
        }
        r->started = 1;
    }
    return 0;
}

static void responder_stop(struct responder *r)
{
    shutdown(r->fd, SHUT_RDWR); /* wakes accept() */
    if (r->started) {
        pthread_join(r->thread, NULL);
    }
    close(r->fd);
}

/* ---- running nwb-symbolize ---- */

static int setup_world(void **state)
{
    (void)state;
    if (access(DEBUGINFOD_EXE, X_OK) != 0) {
        return 0; /* each test skips, saying why */
    }
    return sym_world_setup(&w, "symbolize_debuginfod");
}

static int teardown_world(void **state)
{
    (void)state;
    if (w.dir[0] != '\0') {
        sym_world_teardown(&w);
    }
    return 0;
}

static void need_debuginfod(void)
{
    if (access(DEBUGINFOD_EXE, X_OK) != 0) {
        fprintf(stderr,
                "skipped: %s is not installed (Debian package debuginfod, "
                "scripts/install-deps test)\n",
                DEBUGINFOD_EXE);
        skip();
    }
}

/* nwb-symbolize over w's capture with an empty symbols folder, asking @p url within
 * @p total_ms ("" = the default); its stack.txt (free()), and the run's wall time. */
static char *symbolize_from(const char *url, const char *total_ms, long long *elapsed_ms)
{
    char urls[300], cache[700], err[1024], path[700];
    const char *const argv[] = {NWB_SYMBOLIZE_EXE,
                                "--capture",
                                w.capture,
                                "--symbols-dir",
                                w.symbols,
                                "--out",
                                w.out,
                                "--debuginfod-urls",
                                urls,
                                "--debuginfod-cache",
                                cache,
                                total_ms[0] != '\0' ? "--debuginfod-timeout-ms" : NULL,
                                total_ms,
                                NULL};
    long long t0;
    char *text;
    int rc;

    sym_world_reset(&w);
    (void)mkdir(w.symbols, 0755);
    snprintf(urls, sizeof(urls), "%s", url);
    snprintf(cache, sizeof(cache), "%s/cache", w.out); /* fresh each run: no cached misses */
    t0 = nwb_test_now_ms();
    rc = sym_run(argv, err, sizeof(err));
    *elapsed_ms = nwb_test_now_ms() - t0;
    if (rc != 0) {
        fprintf(stderr, "nwb-symbolize exited %d: %s\n", rc, err);
    }
    assert_int_equal(rc, 0);
    snprintf(path, sizeof(path), "%s/stack.txt", w.out);
    text = nwb_test_read_file(path, NULL);
    assert_non_null(text);
    if (getenv("NWB_TEST_VERBOSE") != NULL) {
        fprintf(stderr, "%s(%lld ms)\n", text, *elapsed_ms);
    }
    return text;
}

/* Frame #0 is crash_prog+0x... without a name, and the missing list says @p reason for it. */
static void assert_unsymbolised(const char *text, const char *reason)
{
    char want[512];
    const char *f0 = strstr(text, "\n#0 ");

    assert_non_null(f0);
    assert_null(strstr(text, "crash_prog_null_deref"));
    snprintf(want, sizeof(want), "  crash_prog: no symbols: build id %s; debuginfod: %s\n",
             w.build_id, reason);
    if (strstr(text, want) == NULL) {
        fail_msg("stack.txt lacks '%s':\n%s", want, text);
    }
}

static void test_debuginfod_real_server_names_the_crashing_line(void **state)
{
    struct debuginfod_server s = {-1, 0};
    char served[700], file[800], url[64], want[256];
    long long ms;
    char *text;

    (void)state;
    need_debuginfod();
    snprintf(served, sizeof(served), "%s/served", w.dir);
    assert_int_equal(mkdir(served, 0755), 0);
    snprintf(file, sizeof(file), "%s/crash_prog", served);
    assert_int_equal(sym_copy_file(CRASH_PROG_EXE, file, 0755), 0);
    assert_int_equal(debuginfod_start(&s, served, w.build_id), 0);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
    text = symbolize_from(url, "", &ms);
    debuginfod_stop(&s);
    snprintf(want, sizeof(want), "crash_prog.c:%u) crash_prog+0x", w.crash_line);
    assert_non_null(strstr(text, "\n#0 "));
    assert_non_null(strstr(strstr(text, "\n#0 "), " crash_prog_null_deref ("));
    assert_true(strstr(text, want) < strchr(strstr(text, "\n#0 ") + 1, '\n'));
    assert_non_null(strstr(text, " main (")); /* the downloaded binary's CFI unwound to main */
    /* libc and the rest are not served: named missing with the server's answer. */
    assert_non_null(strstr(text, "; debuginfod: not found (404)\n"));
    assert_null(strstr(text, "  crash_prog: "));
    free(text);
}

/* Through nwb-logserver: its --debuginfod-urls reach the symboliser it runs per crash, and the
 * default cache is created under --symbols-dir. */
static void test_debuginfod_through_the_server(void **state)
{
    struct debuginfod_server s = {-1, 0};
    struct nwb_test_server srv;
    char served[700], file[800], url[64], out[700], path[1000], resp[256], id[33];
    const char *const extra[] = {"--symbols-dir", w.symbols, "--debuginfod-urls", url, NULL};
    struct stat st;
    size_t len;
    void *body;
    const char *at;

    (void)state;
    need_debuginfod();
    sym_world_reset(&w);
    snprintf(served, sizeof(served), "%s/served2", w.dir);
    assert_int_equal(mkdir(served, 0755), 0);
    snprintf(file, sizeof(file), "%s/crash_prog", served);
    assert_int_equal(sym_copy_file(CRASH_PROG_EXE, file, 0755), 0);
    assert_int_equal(debuginfod_start(&s, served, w.build_id), 0);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
    snprintf(out, sizeof(out), "%s/srv", w.dir);
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, extra), 0);
    snprintf(path, sizeof(path), "%s/.debuginfod-cache", w.symbols);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));

    body = sym_world_package(&w, "through-server", &len);
    assert_non_null(body);
    assert_int_equal(
        nwb_test_http(srv.port, "POST", "/v1/crash", NULL, body, len, resp, sizeof(resp)), 200);
    free(body);
    at = strstr(resp, "\"id\":\"");
    assert_non_null(at);
    memcpy(id, at + 6, 32);
    id[32] = '\0';
    snprintf(path, sizeof(path), "%s/crashes/analysis/%s/signature.txt", out, id);
    /* The frames below the first depend on crash_prog's code layout (an -O2 build adds one). */
    assert_true(nwb_test_wait_file_contains(path, "SIGSEGV | crash_prog_null_deref | ", WAIT_MS));
    snprintf(path, sizeof(path), "%s/crashes/analysis/%s/stack.txt", out, id);
    assert_true(nwb_test_wait_file_contains(path, "; debuginfod: not found (404)\n", WAIT_MS));
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
    debuginfod_stop(&s);
}

/* The symboliser's command line as nwb-logserver @p extra makes it, written by a stand-in
 * symboliser; into @p args (free()). */
static char *symbolizer_args(const char *tag, const char *const *extra_in, size_t n_in)
{
    struct nwb_test_server srv;
    char out[700], script_path[700], args_path[700], script[1024], resp[256];
    const char *extra[16];
    size_t len, n = 0;
    void *body;
    char *args;

    snprintf(script_path, sizeof(script_path), "%s/args-%s.sh", w.dir, tag);
    snprintf(args_path, sizeof(args_path), "%s/args-%s.txt", w.dir, tag);
    snprintf(script, sizeof(script), "#!/bin/sh\necho \"$*\" > '%s'\nexit 1\n", args_path);
    assert_int_equal(nwb_test_write_file(script_path, script, strlen(script), 0755), 0);
    extra[n++] = "--symbols-dir";
    extra[n++] = w.symbols;
    extra[n++] = "--symbolizer";
    extra[n++] = script_path;
    for (size_t i = 0; i < n_in && n + 1 < sizeof(extra) / sizeof(extra[0]); i++) {
        extra[n++] = extra_in[i];
    }
    extra[n] = NULL;
    snprintf(out, sizeof(out), "%s/srv-%s", w.dir, tag);
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, extra), 0);
    body = sym_world_package(&w, tag, &len);
    assert_non_null(body);
    assert_int_equal(
        nwb_test_http(srv.port, "POST", "/v1/crash", NULL, body, len, resp, sizeof(resp)), 200);
    free(body);
    assert_true(nwb_test_wait_file_contains(args_path, "--out", WAIT_MS));
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
    args = nwb_test_read_file(args_path, NULL);
    assert_non_null(args);
    return args;
}

/* The server passes the URLs, the cache and the total, the total at most half of
 * --symbolize-timeout-ms; without URLs none of it. */
static void test_debuginfod_server_options_reach_the_symbolizer(void **state)
{
    const char *const capped[] = {"--debuginfod-urls", "http://127.0.0.1:1/ http://127.0.0.1:2/",
                                  "--symbolize-timeout-ms", "300"};
    char cache[700], want[1024];
    const char *const under[] = {"--debuginfod-urls",       "http://127.0.0.1:1/",
                                 "--debuginfod-cache",      cache,
                                 "--debuginfod-timeout-ms", "149",
                                 "--symbolize-timeout-ms",  "300"};
    const char *const none[] = {"--debuginfod-timeout-ms", "149"};
    struct stat st;
    char *args;

    (void)state;
    need_debuginfod();
    sym_world_reset(&w);
    snprintf(cache, sizeof(cache), "%s/own-cache/deeper", w.dir);
    args = symbolizer_args("capped", capped, 4);
    snprintf(want, sizeof(want),
             " --debuginfod-urls http://127.0.0.1:1/ http://127.0.0.1:2/ --debuginfod-cache "
             "%s/.debuginfod-cache --debuginfod-timeout-ms 150\n",
             w.symbols);
    if (strstr(args, want) == NULL) {
        fail_msg("symboliser args '%s' lack '%s'", args, want);
    }
    free(args);
    /* One below the cap is kept as given; a given cache folder is made with its parents. */
    args = symbolizer_args("under", under, 8);
    snprintf(want, sizeof(want), " --debuginfod-cache %s --debuginfod-timeout-ms 149\n", cache);
    if (strstr(args, want) == NULL) {
        fail_msg("symboliser args '%s' lack '%s'", args, want);
    }
    free(args);
    assert_int_equal(stat(cache, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    args = symbolizer_args("none", none, 2);
    assert_null(strstr(args, "--debuginfod-"));
    free(args);
}

static void test_debuginfod_nothing_listening_keeps_module_offset(void **state)
{
    int port;
    const int held = nwb_test_reserve_dead_port(&port);
    char url[64];
    long long ms;
    char *text;

    (void)state;
    need_debuginfod();
    assert_true(held >= 0);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
    text = symbolize_from(url, "", &ms);
    close(held);
    assert_unsymbolised(text, "Connection refused");
    free(text);
}

/* Start @p r serving @p file (NULL: never answering); its URL into @p url (64 bytes). */
static void responder_url(struct responder *r, const char *file, char *url)
{
    int port = -1;

    assert_int_equal(responder_start(r, file, &port), 0);
    snprintf(url, 64, "http://127.0.0.1:%d/", port);
}

static void test_debuginfod_file_with_another_build_id_is_refused(void **state)
{
    struct responder r;
    char url[64];
    long long ms;
    char *text;

    (void)state;
    need_debuginfod();
    /* Every request gets nwb-symbolize's own binary: a real ELF file, another build id. */
    responder_url(&r, NWB_SYMBOLIZE_EXE, url);
    text = symbolize_from(url, "", &ms);
    responder_stop(&r);
    assert_unsymbolised(text, "refused (build id mismatch)");
    free(text);
}

static void test_debuginfod_stalled_server_ends_at_the_total_bound(void **state)
{
    struct responder r;
    char url[64];
    long long ms;
    char *text;

    (void)state;
    need_debuginfod();
    /* Connections complete in the kernel's backlog and are never answered. */
    responder_url(&r, NULL, url);
    text = symbolize_from(url, "1500", &ms);
    assert_unsymbolised(text, "timed out");
    free(text);
    /* The first query gets the whole seconds left (1 s) and times out; with 0.5 s left no
     * other query starts. Under the bound, plus the tool's own start and unwinding. */
    assert_true(ms >= 1000);
    assert_true(ms < 1500 + 1000);
    /* Under one second in all: no query is started at all. */
    text = symbolize_from(url, "999", &ms);
    responder_stop(&r);
    assert_unsymbolised(text, "timed out");
    assert_true(ms < 999);
    free(text);
}

static void test_debuginfod_command_line_bounds(void **state)
{
    char err[1024], cache[700];
    const char *base[] = {NWB_SYMBOLIZE_EXE, "--capture", w.capture, "--symbols-dir",
                          w.symbols,         "--out",     w.out};
    const char *bad_total[] = {"0", "3600001", "12x", ""};

    (void)state;
    need_debuginfod();
    snprintf(cache, sizeof(cache), "%s/cache", w.out);
    for (size_t i = 0; i < sizeof(bad_total) / sizeof(bad_total[0]); i++) {
        const char *const argv[] = {base[0],
                                    base[1],
                                    base[2],
                                    base[3],
                                    base[4],
                                    base[5],
                                    base[6],
                                    "--debuginfod-urls",
                                    "http://127.0.0.1:1/",
                                    "--debuginfod-cache",
                                    cache,
                                    "--debuginfod-timeout-ms",
                                    bad_total[i],
                                    NULL};

        assert_int_equal(sym_run(argv, err, sizeof(err)), 2);
        assert_non_null(strstr(err, "--debuginfod-timeout-ms: '"));
    }
    {
        /* URLs without a cache folder, and the reverse. */
        const char *const no_cache[] = {base[0],
                                        base[1],
                                        base[2],
                                        base[3],
                                        base[4],
                                        base[5],
                                        base[6],
                                        "--debuginfod-urls",
                                        "http://127.0.0.1:1/",
                                        NULL};
        const char *const no_urls[] = {base[0], base[1], base[2], base[3],
                                       base[4], base[5], base[6], "--debuginfod-cache",
                                       cache,   NULL};

        assert_int_equal(sym_run(no_cache, err, sizeof(err)), 2);
        assert_non_null(strstr(err, "go together"));
        assert_int_equal(sym_run(no_urls, err, sizeof(err)), 2);
    }
    {
        /* --debuginfod-urls: NWB_SYM_DEBUGINFOD_URLS_MAX bytes at most. */
        static char long_urls[4098];
        const char *const argv[] = {base[0],   base[1],
                                    base[2],   base[3],
                                    base[4],   base[5],
                                    base[6],   "--debuginfod-urls",
                                    long_urls, "--debuginfod-cache",
                                    cache,     NULL};

        memset(long_urls, ' ', 4097);
        memcpy(long_urls, "http://127.0.0.1:1/", strlen("http://127.0.0.1:1/"));
        long_urls[4097] = '\0';
        assert_int_equal(sym_run(argv, err, sizeof(err)), 2);
        assert_non_null(strstr(err, "--debuginfod-urls: empty or longer than 4096 bytes"));
        long_urls[4096] = '\0'; /* at the bound: taken (port 1 refuses at once) */
        sym_world_reset(&w);
        (void)mkdir(w.symbols, 0755);
        assert_int_equal(sym_run(argv, err, sizeof(err)), 0);
    }
    {
        /* The largest total is accepted (a dead port answers at once). */
        int port;
        const int held = nwb_test_reserve_dead_port(&port);
        char url[64];
        const char *const argv[] = {base[0],   base[1],
                                    base[2],   base[3],
                                    base[4],   base[5],
                                    base[6],   "--debuginfod-urls",
                                    url,       "--debuginfod-cache",
                                    cache,     "--debuginfod-timeout-ms",
                                    "3600000", NULL};

        assert_true(held >= 0);
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
        sym_world_reset(&w);
        (void)mkdir(w.symbols, 0755);
        assert_int_equal(sym_run(argv, err, sizeof(err)), 0);
        close(held);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_debuginfod_real_server_names_the_crashing_line),
        cmocka_unit_test(test_debuginfod_through_the_server),
        cmocka_unit_test(test_debuginfod_server_options_reach_the_symbolizer),
        cmocka_unit_test(test_debuginfod_nothing_listening_keeps_module_offset),
        cmocka_unit_test(test_debuginfod_file_with_another_build_id_is_refused),
        cmocka_unit_test(test_debuginfod_stalled_server_ends_at_the_total_bound),
        cmocka_unit_test(test_debuginfod_command_line_bounds),
    };

    return cmocka_run_group_tests_name("crash.symbolize_debuginfod", tests, setup_world,
                                       teardown_world);
}
