/* SPDX-License-Identifier: MIT */
/*
 * test_demo_symbols.c - crashes a person can act on, end to end with real processes
 * (docs/crash.md, "Thread capture", "Symbolisation", "Grouping"): the real nwb-logserver, its
 * symbol store filled by `nwb-crash symbols upload`, and nwb-demo dying by --crash segv (three
 * times), abort and stack (an overflow on the worker thread). Each package is captured from
 * outside by ptrace, uploaded by nwb-crash, unwound and symbolised on the server: stack.txt
 * names the demo's own function at the line of nwb_demo.c that crashed (read from the source
 * here), lists the threads main and worker by name, and the groups are one of count 3 for the
 * segv and one each for the others. A copy of the demo stripped of its debug info, with the
 * debug file uploaded beside it, symbolises the same.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "json_check.h"
#include "symbolize_test_world.h"
#include "test_support.h"

#define DEMO_SOURCE NWB_SOURCE_DIR "/telemetry/tools/nwb_demo.c"
#define WAIT_MS     60000 /* a crash's upload and symbolisation on a loaded machine */
#define JSON_CAP    (1u << 20)

/* The sanitizer runtimes must leave the fatal signals to the demo's crash handler. */
#define CRASH_ASAN_OPTIONS                                                                         \
    "ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0:"   \
    "detect_leaks=0:allow_user_segv_handler=1"

static char dir[512];

static int setup(void **state)
{
    (void)state;
    return nwb_test_tmpdir("demo-symbols", dir, sizeof(dir));
}

static int teardown(void **state)
{
    (void)state;
    nwb_test_rmtree(dir);
    return 0;
}

/* ---- The demo's source: where each crash must be found -------------------------------------- */

struct src_lines {
    unsigned segv_line;                   /* `*demo_null = 42;` in demo_crash_segv */
    unsigned abort_line;                  /* `abort();` in demo_crash_now */
    unsigned recurse_first, recurse_last; /* demo_crash_recurse, signature line to closing brace */
};

/* Find the lines in nwb_demo.c itself, so the test follows the source when it moves. */
static void read_source_lines(struct src_lines *s)
{
    char *text = nwb_test_read_file(DEMO_SOURCE, NULL);
    unsigned n = 1;
    int in_crash_now = 0, in_recurse = 0;

    assert_non_null(text);
    memset(s, 0, sizeof(*s));
    for (char *l = text, *end; *l != '\0'; l = end + 1, n++) {
        end = strchr(l, '\n');
        if (end == NULL) {
            break;
        }
        *end = '\0';
        if (strstr(l, "*demo_null = 42;") != NULL) {
            s->segv_line = n;
        }
        if (strstr(l, "static void demo_crash_now(") != NULL) {
            in_crash_now = 1;
        } else if (in_crash_now && strstr(l, "abort();") != NULL) {
            s->abort_line = n;
            in_crash_now = 0;
        }
        if (strstr(l, "static int demo_crash_recurse(") != NULL) {
            s->recurse_first = n;
            in_recurse = 1;
        } else if (in_recurse && strcmp(l, "}") == 0) {
            s->recurse_last = n;
            in_recurse = 0;
        }
    }
    free(text);
    assert_true(s->segv_line > 0 && s->abort_line > 0);
    assert_true(s->recurse_first > 0 && s->recurse_last > s->recurse_first);
}

/* ---- Running the demo ----------------------------------------------------------------------- */

/*
 * Run @p exe --crash @p mode against the server on @p port, crash folder @p crash_dir, its
 * output into @p crash_dir.out, at most WAIT_MS. Returns the wait status.
 */
static int run_demo_crash(const char *exe, const char *mode, int port, const char *crash_dir)
{
    char server_arg[64], log_env[800], crash_env[800], out_path[800];
    const char *argv[] = {exe,  "--frames",      "20", "--fast", server_arg, "--crash",
                          mode, "--crash-frame", "5",  NULL};
    const char *env[] = {log_env, crash_env, "NWB_CRASH_HELPER=" NWB_CRASH_HELPER_EXE,
                         CRASH_ASAN_OPTIONS, NULL};

    snprintf(server_arg, sizeof(server_arg), "--logserver=127.0.0.1:%d", port);
    snprintf(log_env, sizeof(log_env), "NWB_LOG_DIR=%s/logs", crash_dir);
    snprintf(crash_env, sizeof(crash_env), "NWB_CRASH_DIR=%s", crash_dir);
    snprintf(out_path, sizeof(out_path), "%s.out", crash_dir);
    return nwb_test_run(argv, env, out_path, WAIT_MS);
}

/* The id of the last package the uploader in @p crash_dir sent (33 bytes), once it is done. */
static void uploaded_id(const char *crash_dir, char *id)
{
    char path[800];
    char *log, *last = NULL;

    /* The uploader appends `...: id <id> ...` to upload.log for each package the server took. */
    snprintf(path, sizeof(path), "%s/upload.log", crash_dir);
    if (!nwb_test_wait_file_contains(path, ": id ", WAIT_MS)) {
        log = nwb_test_read_file(path, NULL);
        print_error("no upload in %s within %d ms:\n%s\n", path, WAIT_MS, log ? log : "");
        free(log);
        fail();
    }
    log = nwb_test_read_file(path, NULL);
    assert_non_null(log);
    for (char *q = strstr(log, ": id "); q != NULL; q = strstr(q + 1, ": id ")) {
        last = q;
    }
    snprintf(id, 33, "%.32s", last + 5);
    assert_int_equal(strlen(id), 32);
    free(log);
}

/* GET @p path on @p port, 200 and strict JSON; malloc'd (free()). */
static char *get_json(int port, const char *path)
{
    char *body = malloc(JSON_CAP);

    assert_non_null(body);
    assert_int_equal(nwb_test_http(port, "GET", path, NULL, NULL, 0, body, JSON_CAP), 200);
    if (nwb_test_json_check(body, strlen(body), NULL) != 0) {
        print_error("not strict JSON from %s:\n%s\n", path, body);
        fail();
    }
    return body;
}

/* Wait until crash @p id is symbolised ("done") and has its signature; its JSON (free()). */
static char *wait_symbolised(int port, const char *id)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;
    char path[80];
    int delay = 5;

    snprintf(path, sizeof(path), "/v1/crashes/%s", id);
    for (;;) {
        char *json = NULL;

        if (nwb_test_http(port, "GET", path, NULL, NULL, 0, NULL, 0) == 200) {
            json = get_json(port, path);
            /* The signature is written from the symbolised frames right after them. */
            if (strstr(json, "\"symbolization\":{\"state\":\"done\"") != NULL &&
                strstr(json, "\"signature\":\"") != NULL) {
                return json;
            }
            if (strstr(json, "\"symbolization\":{\"state\":\"failed\"") != NULL) {
                print_error("symbolisation failed:\n%s\n", json);
                fail();
            }
        }
        if (nwb_test_now_ms() > deadline) {
            print_error("crash %s not symbolised within %d ms:\n%s\n", id, WAIT_MS,
                        json != NULL ? json : "(not there)");
            fail();
        }
        free(json);
        /* The server has no push for this; back off geometrically. */
        poll(NULL, 0, delay);
        delay = delay < 100 ? delay * 2 : 100;
    }
}

/* The crash's stack.txt as the server serves it (free()). */
static char *stack_txt(int port, const char *id)
{
    char path[120];
    char *text = malloc(JSON_CAP);

    assert_non_null(text);
    snprintf(path, sizeof(path), "/v1/crashes/%s/files/stack.txt", id);
    assert_int_equal(nwb_test_http(port, "GET", path, NULL, NULL, 0, text, JSON_CAP), 200);
    return text;
}

/* The block of the crashed thread: its `thread ...` line to the blank line after it. */
static const char *crashed_block(const char *stack, size_t *len)
{
    const char *at = strstr(stack, "\nthread ");
    const char *end;

    if (at == NULL || strstr(at, "(crashed)\n") == NULL ||
        strstr(at, "(crashed)\n") > strchr(at + 1, '\n') + 1) {
        print_error("the first thread is not the crashed one:\n%s\n", stack);
        fail();
    }
    at++;
    end = strstr(at, "\n\n");
    *len = end != NULL ? (size_t)(end - at) : strlen(at);
    return at;
}

/* The frame line of @p function in @p block (NUL-terminated copy into @p out), or fail. */
static void frame_line(const char *block, size_t len, const char *function, char *out, size_t cap)
{
    char needle[128];
    const char *hit, *bol, *eol;

    snprintf(needle, sizeof(needle), " %s ", function); /* then `(file:line)` or the module */
    hit = memmem(block, len, needle, strlen(needle));
    if (hit == NULL) {
        print_error("no frame of %s in the crashed thread:\n%.*s\n", function, (int)len, block);
        fail();
    }
    for (bol = hit; bol > block && bol[-1] != '\n'; bol--) {
    }
    eol = memchr(hit, '\n', len - (size_t)(hit - block));
    if (eol == NULL) {
        eol = block + len;
    }
    snprintf(out, cap, "%.*s", (int)(eol - bol), bol);
}

/* The line number of a frame line `#N 0x... fn (/path/nwb_demo.c:LINE) ...`; 0 if another file. */
static unsigned frame_demo_line(const char *line)
{
    const char *at = strstr(line, "/telemetry/tools/nwb_demo.c:");

    return at != NULL ? (unsigned)strtoul(at + strlen("/telemetry/tools/nwb_demo.c:"), NULL, 10)
                      : 0;
}

/* Every thread of the demo is listed by name; the crashed one is @p crashed_name. */
static void check_threads(const char *stack, const char *crashed_name)
{
    char want[64];

    assert_non_null(strstr(stack, "capture: ptrace, pid "));
    snprintf(want, sizeof(want), " [%s] (crashed)\n", crashed_name);
    if (strstr(stack, want) == NULL || strstr(stack, " [main]") == NULL ||
        strstr(stack, " [worker]") == NULL) {
        print_error("want threads main and worker, %s crashed:\n%s\n", crashed_name, stack);
        fail();
    }
}

/* Upload @p files (NULL-terminated, at most 4) to the server's symbol store. */
static void upload_symbols(int port, const char *const *files)
{
    char server[64], err[4096];
    const char *argv[10] = {NWB_CRASH_HELPER_EXE, "symbols", "upload", "--server", server};
    size_t n = 5;

    snprintf(server, sizeof(server), "127.0.0.1:%d", port);
    for (size_t i = 0; files[i] != NULL && n < 9; i++) {
        argv[n++] = files[i];
    }
    argv[n] = NULL;
    if (sym_run(argv, err, sizeof(err)) != 0) {
        print_error("nwb-crash symbols upload failed:\n%s\n", err);
        fail();
    }
}

/* The C library this test (built like the demo) maps: the demo's abort() frames are in it. */
static void libc_path(char *out, size_t cap)
{
    char *maps = nwb_test_read_file("/proc/self/maps", NULL);
    const char *hit;

    assert_non_null(maps);
    hit = strstr(maps, "/libc.so.6\n");
    assert_non_null(hit);
    while (hit > maps && hit[-1] != ' ') {
        hit--;
    }
    snprintf(out, cap, "%.*s", (int)strcspn(hit, "\n"), hit);
    free(maps);
}

/* One demo crash: run it, take the uploaded id, wait for its symbolisation. */
static void crash_once(const char *exe, const char *mode, int port, int n, char *id)
{
    char crash_dir[700];
    int status;
    const int sig = strcmp(mode, "abort") == 0 ? SIGABRT : SIGSEGV;

    snprintf(crash_dir, sizeof(crash_dir), "%s/crash-%s-%d", dir, mode, n);
    status = run_demo_crash(exe, mode, port, crash_dir);
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == sig)) {
        char out[800];
        char *text;

        snprintf(out, sizeof(out), "%s.out", crash_dir);
        text = nwb_test_read_file(out, NULL);
        print_error("nwb-demo --crash %s: status 0x%x, want signal %d\n%s\n", mode,
                    (unsigned)status, sig, text != NULL ? text : "");
        free(text);
        fail();
    }
    uploaded_id(crash_dir, id);
    free(wait_symbolised(port, id));
}

/* The group of @p signature_prefix in GET /v1/crash-groups: its count and id (17 bytes). */
static unsigned group_of(const char *groups, const char *signature_prefix, char *group)
{
    char needle[256];
    const char *sig, *obj, *count;

    snprintf(needle, sizeof(needle), "\"signature\":\"%s", signature_prefix);
    sig = strstr(groups, needle);
    if (sig == NULL) {
        print_error("no group %s in:\n%s\n", signature_prefix, groups);
        fail();
    }
    assert_null(strstr(sig + 1, needle)); /* exactly one such group */
    for (obj = sig; obj > groups && *obj != '{'; obj--) {
    }
    assert_memory_equal(obj, "{\"group\":\"", 10);
    snprintf(group, 17, "%.16s", obj + 10);
    count = strstr(sig, "\"count\":");
    assert_non_null(count);
    return (unsigned)strtoul(count + 8, NULL, 10);
}

/* ---- Tests ---------------------------------------------------------------------------------- */

static void test_demo_crashes_are_symbolised_per_thread_and_grouped(void **state)
{
    struct nwb_test_server srv;
    struct src_lines src;
    char out[700], libc[512], segv[3][33], abrt[33], stack[33], line[512], group[17], url[64];
    const char *const files[] = {NWB_DEMO_EXE, libc, NULL};
    char *text, *json;
    const char *block;
    size_t len;

    (void)state;
    read_source_lines(&src);
    libc_path(libc, sizeof(libc));
    snprintf(out, sizeof(out), "%s/srv", dir);
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, NULL), 0);
    upload_symbols(srv.port, files);

    for (int i = 0; i < 3; i++) {
        crash_once(NWB_DEMO_EXE, "segv", srv.port, i, segv[i]);
    }
    crash_once(NWB_DEMO_EXE, "abort", srv.port, 0, abrt);
    crash_once(NWB_DEMO_EXE, "stack", srv.port, 0, stack);

    /* segv: frame #0 is demo_crash_segv at the line that writes through the null pointer, and
     * the main thread is unwound down to main(). */
    text = stack_txt(srv.port, segv[0]);
    check_threads(text, "main");
    block = crashed_block(text, &len);
    frame_line(block, len, "demo_crash_segv", line, sizeof(line));
    assert_memory_equal(line, "#0 0x", 5);
    assert_int_equal(frame_demo_line(line), src.segv_line);
    assert_non_null(strstr(line, " nwb-demo+0x"));
    frame_line(block, len, "main", line, sizeof(line));
    free(text);
    json = wait_symbolised(srv.port, segv[0]);
    assert_non_null(strstr(json, "\"function\":\"demo_crash_segv\""));
    assert_non_null(strstr(json, "\"name\":\"worker\""));
    /* The demo's helper threads carry their own names, not their creator's. */
    assert_int_equal(nwb_test_count(json, "\"name\":\"main\""), 1);
    assert_int_equal(nwb_test_count(json, "\"name\":\"nwb-log\""), 1);
    assert_int_equal(nwb_test_count(json, "\"name\":\"nwb-tel-upload\""), 1);
    free(json);

    /* abort: the crashed thread passes through libc's abort() to demo_crash_now at the call. */
    text = stack_txt(srv.port, abrt);
    check_threads(text, "main");
    block = crashed_block(text, &len);
    frame_line(block, len, "abort", line, sizeof(line));
    assert_non_null(strstr(line, " abort libc.so.6+0x"));
    frame_line(block, len, "demo_crash_now", line, sizeof(line));
    assert_int_equal(frame_demo_line(line), src.abort_line);
    free(text);

    /* stack: the worker overflowed in demo_crash_recurse; main is listed beside it. */
    text = stack_txt(srv.port, stack);
    check_threads(text, "worker");
    block = crashed_block(text, &len);
    frame_line(block, len, "demo_crash_recurse", line, sizeof(line));
    assert_memory_equal(line, "#0 0x", 5);
    assert_in_range(frame_demo_line(line), src.recurse_first, src.recurse_last);
    free(text);

    /* Groups: the three segv crashes are one group of 3, the others one each. */
    json = get_json(srv.port, "/v1/crash-groups");
    assert_int_equal(nwb_test_count(json, "\"group\":\""), 3);
    assert_int_equal(group_of(json, "SIGSEGV | demo_crash_segv | demo_crash_now", group), 3);
    assert_non_null(strstr(json, segv[2])); /* the newest of the group */
    snprintf(url, sizeof(url), "/v1/crashes?group=%s", group);
    free(json);
    json = get_json(srv.port, url);
    for (int i = 0; i < 3; i++) {
        assert_non_null(strstr(json, segv[i]));
    }
    assert_null(strstr(json, abrt));
    assert_int_equal(nwb_test_count(json, "\"id\":\""), 3);
    free(json);
    json = get_json(srv.port, "/v1/crash-groups");
    assert_int_equal(group_of(json, "SIGABRT | demo_crash_now", group), 1);
    assert_int_equal(group_of(json, "SIGSEGV | demo_crash_recurse", group), 1);
    free(json);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
}

static void test_stripped_demo_is_symbolised_from_its_uploaded_debug_file(void **state)
{
    struct nwb_test_server srv;
    struct src_lines src;
    char out[700], libc[512], bin[700], debug[700], line[512], id[33], err[4096];
    char built_id[129], stripped_id[129], path[200];
    const char *const files[] = {bin, debug, libc, NULL};
    char *text, *json;
    const char *block;
    size_t len;

    (void)state;
    read_source_lines(&src);
    libc_path(libc, sizeof(libc));
    /* What a build machine does: keep the debug info apart, ship the stripped binary. */
    snprintf(bin, sizeof(bin), "%s/nwb-demo", dir);
    snprintf(debug, sizeof(debug), "%s/nwb-demo.debug", dir);
    {
        const char *keep[] = {"objcopy", "--only-keep-debug", NWB_DEMO_EXE, debug, NULL};
        const char *strip[] = {"objcopy", "--strip-debug", NWB_DEMO_EXE, bin, NULL};

        assert_int_equal(sym_run(keep, err, sizeof(err)), 0);
        assert_int_equal(sym_run(strip, err, sizeof(err)), 0);
    }
    assert_int_equal(chmod(bin, 0755), 0);
    assert_int_equal(sym_build_id_hex(NWB_DEMO_EXE, built_id), 0);
    assert_int_equal(sym_build_id_hex(bin, stripped_id), 0);
    assert_string_equal(built_id, stripped_id);

    snprintf(out, sizeof(out), "%s/srv-stripped", dir);
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, NULL), 0);
    upload_symbols(srv.port, files);
    /* The stripped binary has no DWARF of its own; the store tells them apart. */
    snprintf(path, sizeof(path), "/v1/symbols/%s", built_id);
    json = get_json(srv.port, path);
    assert_non_null(strstr(json, "\"has_debug_info\":true"));
    free(json);

    crash_once(bin, "segv", srv.port, 9, id);
    text = stack_txt(srv.port, id);
    check_threads(text, "main");
    block = crashed_block(text, &len);
    frame_line(block, len, "demo_crash_segv", line, sizeof(line));
    assert_memory_equal(line, "#0 0x", 5);
    assert_int_equal(frame_demo_line(line), src.segv_line);
    frame_line(block, len, "main", line, sizeof(line));
    free(text);
    json = get_json(srv.port, "/v1/crash-groups");
    assert_int_equal(group_of(json, "SIGSEGV | demo_crash_segv | demo_crash_now", path), 1);
    free(json);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demo_crashes_are_symbolised_per_thread_and_grouped),
        cmocka_unit_test(test_stripped_demo_is_symbolised_from_its_uploaded_debug_file),
    };

    return cmocka_run_group_tests_name("crash.demo_symbols", tests, setup, teardown);
}
