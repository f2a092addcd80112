/* SPDX-License-Identifier: MIT */
/*
 * test_symbolize_e2e.c - symbolisation through the real nwb-logserver (docs/crash.md,
 * "Symbolisation"): a package holding crash_prog's threads.nwbc (captured by the test tracer)
 * is symbolised at ingest by the default nwb-symbolize beside the server, first without
 * symbols (module+offset, the build id named as missing), then again after the binary is put
 * under --symbols-dir and POST /v1/crashes/<id>/resymbolize asks; the signature follows the
 * symbolised frames, GET /v1/crashes/<id> shows them as strict JSON and stack.txt is served.
 * A symboliser that hangs is killed at --symbolize-timeout-ms and the crash kept, marked failed.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "crash_test_archive.h"
#include "json_check.h"
#include "symbolize_test_world.h"
#include "test_support.h"

#define WAIT_MS 30000

static struct sym_world w;

static int setup_world(void **state)
{
    (void)state;
    return sym_world_setup(&w, "symbolize_e2e");
}

static int teardown_world(void **state)
{
    (void)state;
    sym_world_teardown(&w);
    return 0;
}

/* POST the package; its id into @p id (33 bytes). */
static void post(int port, const char *tag, char *id)
{
    size_t len;
    void *body = sym_world_package(&w, tag, &len);
    char resp[256];
    const char *at;

    assert_int_equal(nwb_test_http(port, "POST", "/v1/crash", NULL, body, len, resp, sizeof(resp)),
                     200);
    free(body);
    at = strstr(resp, "\"id\":\"");
    assert_non_null(at);
    memcpy(id, at + 6, 32);
    id[32] = '\0';
}

static void analysis_path(const struct nwb_test_server *srv, const char *id, const char *name,
                          char *out, size_t cap)
{
    snprintf(out, cap, "%s/crashes/analysis/%s/%s", srv->out_dir, id, name);
}

/* GET /v1/crashes/<id>, checked as strict JSON; returns it (free()). */
static char *crash_json(int port, const char *id)
{
    char path[128];
    char *body = malloc(1u << 20);

    assert_non_null(body);
    snprintf(path, sizeof(path), "/v1/crashes/%s", id);
    assert_int_equal(nwb_test_http(port, "GET", path, NULL, NULL, 0, body, 1u << 20), 200);
    assert_int_equal(nwb_test_json_check(body, strlen(body), NULL), 0);
    return body;
}

static void test_symbolize_e2e_at_ingest_then_after_symbols_arrive(void **state)
{
    struct nwb_test_server srv;
    const char *const extra[] = {"--symbols-dir", w.symbols, NULL};
    char out[700], id[33], path[900], want[256], url[128];
    char *json, *text;

    (void)state;
    sym_world_reset(&w);
    (void)mkdir(w.symbols, 0755);
    snprintf(out, sizeof(out), "%s/srv1", w.dir);
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, extra), 0);

    /* No symbols yet: symbolised as module+offset, the build id named as missing. */
    post(srv.port, "first", id);
    analysis_path(&srv, id, "signature.txt", path, sizeof(path));
    assert_true(nwb_test_wait_file_contains(path, "SIGSEGV | crash_prog+0x", WAIT_MS));
    json = crash_json(srv.port, id);
    assert_non_null(strstr(json, "\"symbolization\":{\"state\":\"done\",\"reason\":null,"));
    snprintf(want, sizeof(want), "\"missing\":[{\"buildId\":\"%s\",\"module\":\"crash_prog\"}",
             w.build_id);
    assert_non_null(strstr(json, want));
    assert_null(strstr(json, "crash_prog_null_deref"));
    free(json);

    /* The binary arrives; a re-run names the function, and the signature follows. */
    sym_world_symbol_path(&w, ".debug", path, sizeof(path));
    assert_int_equal(sym_copy_file(CRASH_PROG_EXE, path, 0644), 0);
    snprintf(url, sizeof(url), "/v1/crashes/%s/resymbolize", id);
    {
        char resp[256];

        assert_int_equal(nwb_test_http(srv.port, "POST", url, NULL, NULL, 0, resp, sizeof(resp)),
                         202);
        assert_int_equal(nwb_test_json_check(resp, strlen(resp), NULL), 0);
        assert_non_null(strstr(resp, "\"state\":\"pending\""));
    }
    analysis_path(&srv, id, "signature.txt", path, sizeof(path));
    assert_true(
        nwb_test_wait_file_contains(path, "SIGSEGV | crash_prog_null_deref | main\n", WAIT_MS));
    json = crash_json(srv.port, id);
    assert_non_null(strstr(json, "\"signature\":\"SIGSEGV | crash_prog_null_deref | main\""));
    assert_non_null(strstr(json, "\"symbolization\":{\"state\":\"done\""));
    snprintf(want, sizeof(want), "\"function\":\"crash_prog_null_deref\",\"file\":\"");
    assert_non_null(strstr(json, want));
    snprintf(want, sizeof(want), "crash_prog.c\",\"line\":%u,\"inlined\":false,", w.crash_line);
    assert_non_null(strstr(json, want));
    assert_non_null(strstr(json, "\"crashed\":true"));
    free(json);

    /* stack.txt through the crash files endpoint. */
    text = malloc(1u << 20);
    assert_non_null(text);
    snprintf(url, sizeof(url), "/v1/crashes/%s/files/stack.txt", id);
    assert_int_equal(nwb_test_http(srv.port, "GET", url, NULL, NULL, 0, text, 1u << 20), 200);
    assert_non_null(strstr(text, "(crashed)\n#0 0x"));
    assert_non_null(strstr(text, " crash_prog_null_deref ("));
    snprintf(url, sizeof(url), "/v1/crashes/%s/files/stack.json", id);
    assert_int_equal(nwb_test_http(srv.port, "GET", url, NULL, NULL, 0, text, 1u << 20), 200);
    assert_int_equal(nwb_test_json_check(text, strlen(text), NULL), 0);
    free(text);

    /* Bad re-run requests. */
    assert_int_equal(
        nwb_test_http(srv.port, "POST", "/v1/crashes/0123/resymbolize", NULL, NULL, 0, NULL, 0),
        404);
    assert_int_equal(nwb_test_http(srv.port, "POST",
                                   "/v1/crashes/00000000000000000000000000000000/resymbolize", NULL,
                                   NULL, 0, NULL, 0),
                     404);
    assert_int_equal(nwb_test_server_stop(&srv, SIGTERM, 10000) >= 0, 1);
}

static void test_symbolize_e2e_timeout_keeps_the_crash_marked_failed(void **state)
{
    struct nwb_test_server srv;
    char out[700], id[33], path[900], hang[700];
    static const char script[] = "#!/bin/sh\nexec tail -f /dev/null\n";
    char *json;

    (void)state;
    sym_world_reset(&w);
    snprintf(hang, sizeof(hang), "%s/hang.sh", w.dir);
    assert_int_equal(nwb_test_write_file(hang, script, sizeof(script) - 1, 0755), 0);
    {
        const char *const extra[] = {
            "--symbols-dir", w.symbols, "--symbolizer", hang, "--symbolize-timeout-ms",
            "300",           NULL};

        snprintf(out, sizeof(out), "%s/srv2", w.dir);
        assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, extra), 0);
    }
    post(srv.port, "hang", id);
    analysis_path(&srv, id, "symbolize_failed.txt", path, sizeof(path));
    assert_true(nwb_test_wait_file_contains(path, "timed out after 300 ms", WAIT_MS));
    /* The crash is kept, with its fallback signature. */
    analysis_path(&srv, id, "signature.txt", path, sizeof(path));
    assert_true(nwb_test_wait_file_contains(path, "SIGSEGV\n", WAIT_MS));
    json = crash_json(srv.port, id);
    assert_non_null(strstr(json, "\"status\":\"extracted\""));
    assert_non_null(strstr(json, "\"symbolization\":{\"state\":\"failed\",\"reason\":\"timed out "
                                 "after 300 ms (--symbolize-timeout-ms)\",\"threads\":[]"));
    assert_non_null(strstr(json, "\"path\":\"threads.nwbc\""));
    free(json);
    assert_int_equal(nwb_test_server_stop(&srv, SIGTERM, 10000) >= 0, 1);
}

static void test_symbolize_e2e_bad_symboliser_flag_is_refused(void **state)
{
    struct nwb_test_server srv;
    char out[700];
    const char *const extra[] = {"--symbolizer", "/nonexistent/nwb-symbolize", NULL};

    (void)state;
    snprintf(out, sizeof(out), "%s/srv3", w.dir);
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, extra), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symbolize_e2e_at_ingest_then_after_symbols_arrive),
        cmocka_unit_test(test_symbolize_e2e_timeout_keeps_the_crash_marked_failed),
        cmocka_unit_test(test_symbolize_e2e_bad_symboliser_flag_is_refused),
    };

    return cmocka_run_group_tests_name("crash.symbolize_e2e", tests, setup_world, teardown_world);
}
