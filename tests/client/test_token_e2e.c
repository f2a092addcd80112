/* SPDX-License-Identifier: MIT */
/*
 * test_token_e2e.c - the real client against the real nwb-logserver started
 * with --token-file: the token from the config, $NWB_LOGSERVER_TOKEN_FILE
 * or nwb-log --token-file is sent and the lines land; a wrong or missing
 * token is reported once, the batches are spooled (not dropped) and the next
 * run with the right token delivers them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nwb/client.h"
#include "nwb/error.h"
#include "nwb/log.h"
#include "test_support.h"

#ifndef NWB_TEST_NWB_LOG_EXE
#define NWB_TEST_NWB_LOG_EXE "nwb-log"
#endif

#define TOKEN "e2e-token-0123456789-ABCDEFGHIJ"

struct fx {
    char dir[512];
    char out[600];
    char client_dir[600];
    char token_file[600];
    char addr[64];
    struct nwb_test_server srv;
    int started;
};

static void write_file(const char *path, const char *data, unsigned mode)
{
    assert_int_equal(nwb_test_write_file(path, data, strlen(data), mode), 0);
}

static int setup(void **state)
{
    static struct fx f;
    const char *extra[] = {"--token-file", f.token_file, NULL};

    memset(&f, 0, sizeof(f));
    unsetenv("NWB_LOGSERVER");
    unsetenv("NWB_LOG_DIR");
    unsetenv("NWB_LOGSERVER_TOKEN");
    unsetenv("NWB_LOGSERVER_TOKEN_FILE");
    if (nwb_test_tmpdir("token-e2e", f.dir, sizeof(f.dir)) != 0) {
        return -1;
    }
    snprintf(f.out, sizeof(f.out), "%s/out", f.dir);
    snprintf(f.client_dir, sizeof(f.client_dir), "%s/client", f.dir);
    snprintf(f.token_file, sizeof(f.token_file), "%s/token", f.dir);
    write_file(f.token_file, TOKEN "\n", 0600);
    if (nwb_test_server_start(&f.srv, NULL, f.out, 0, extra) != 0) {
        return -1;
    }
    f.started = 1;
    snprintf(f.addr, sizeof(f.addr), "127.0.0.1:%d", f.srv.port);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    unsetenv("NWB_LOGSERVER_TOKEN_FILE");
    if (f->started) {
        assert_true(WIFEXITED(nwb_test_server_stop(&f->srv, SIGTERM, 10000)));
    }
    nwb_test_rmtree(f->dir);
    return 0;
}

static nwb_client_config_t config(struct fx *f, const char *program, const char *token)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;

    cfg.program = program;
    cfg.mode = NWB_CLIENT_MODE_SERVER;
    cfg.server = f->addr;
    cfg.log_dir = f->client_dir;
    cfg.token = token;
    cfg.full_policy = NWB_CLIENT_FULL_BLOCK;
    cfg.block_timeout_us = 5u * 1000u * 1000u;
    return cfg;
}

/* Wait up to @p ms for runs/<program>_*_<run>/log.txt to hold @p needle. */
static int wait_logged(struct fx *f, const char *program, const char *run, const char *needle,
                       int ms)
{
    const long long deadline = nwb_test_now_ms() + ms;
    char path[1024];

    while (nwb_test_now_ms() < deadline) {
        if (nwb_test_find_run_log(f->out, program, run, path, sizeof(path)) == 0) {
            return nwb_test_wait_file_contains(path, needle, (int)(deadline - nwb_test_now_ms()));
        }
        poll(NULL, 0, 20); /* the run folder appears with the first batch */
    }
    return 0;
}

static void test_config_token_is_sent_and_lines_land(void **state)
{
    struct fx *f = *state;
    nwb_client_config_t cfg = config(f, "tokcfg", TOKEN);
    nwb_client_t *c = NULL;
    char err[256];
    char run[17];

    assert_int_equal(nwb_client_create(&cfg, &c, err, sizeof(err)), 0);
    snprintf(run, sizeof(run), "%s", nwb_client_run_id(c));
    NWB_LOGGER_ESSENTIAL_INFO("token-e2e line %d", 1);
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    /* Uploads (telemetry, crash) carry it too: this stream is refused by the decoder (400),
     * not by access control (401). */
    assert_int_equal(
        nwb_client_post(c, "/v1/telemetry", "junk", 4, "application/octet-stream", NULL, 1, 5000),
        400);
    nwb_client_destroy(c);
    assert_true(wait_logged(f, "tokcfg", run, "token-e2e line 1", 5000));
}

static void test_token_file_environment_is_used(void **state)
{
    struct fx *f = *state;
    nwb_client_config_t cfg = config(f, "tokenv", NULL);
    nwb_client_t *c = NULL;
    char err[256];
    char run[17];

    setenv("NWB_LOGSERVER_TOKEN_FILE", f->token_file, 1);
    assert_int_equal(nwb_client_create(&cfg, &c, err, sizeof(err)), 0);
    snprintf(run, sizeof(run), "%s", nwb_client_run_id(c));
    NWB_LOGGER_ESSENTIAL_INFO("token-e2e env line");
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    nwb_client_destroy(c);
    assert_true(wait_logged(f, "tokenv", run, "token-e2e env line", 5000));
    /* A token file that cannot be read fails create with a reason. */
    setenv("NWB_LOGSERVER_TOKEN_FILE", "/nonexistent/nwb-token", 1);
    assert_int_equal(nwb_client_create(&cfg, &c, err, sizeof(err)), NWB_ECONFIG);
    assert_null(c);
    assert_non_null(strstr(err, "token file /nonexistent/nwb-token"));
}

/* Run create..destroy of a client with @p token logging @p line; its stderr into @p errout. */
static void refused_run(struct fx *f, const char *token, const char *line, char *run, char *errout,
                        size_t errcap)
{
    nwb_client_config_t cfg = config(f, "tokbad", token);
    nwb_client_stats_t st;
    nwb_client_t *c = NULL;
    char path[700];
    char err[256];
    char *text;
    int saved = dup(STDERR_FILENO);
    int fd;

    snprintf(path, sizeof(path), "%s/stderr.txt", f->dir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0 && saved >= 0);
    dup2(fd, STDERR_FILENO);
    close(fd);
    assert_int_equal(nwb_client_create(&cfg, &c, err, sizeof(err)), 0);
    snprintf(run, 17, "%s", nwb_client_run_id(c));
    NWB_LOGGER_ESSENTIAL_INFO("%s", line);
    /* Like a server that is down: not acknowledged, so a flush times out ... */
    assert_int_equal(nwb_client_flush(c, 500), NWB_ETIMEOUT);
    NWB_LOGGER_ESSENTIAL_INFO("%s second", line);
    assert_int_equal(nwb_client_flush(c, 300), NWB_ETIMEOUT);
    nwb_client_stats_get(c, &st);
    assert_int_equal(st.batches_sent, 0);
    nwb_client_destroy(c); /* ... and destroy spools what is left */
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    text = nwb_test_read_file(path, NULL);
    assert_non_null(text);
    snprintf(errout, errcap, "%s", text);
    free(text);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

static void test_wrong_or_missing_token_is_reported_once_and_spooled(void **state)
{
    struct fx *f = *state;
    nwb_client_config_t cfg = config(f, "tokbad", TOKEN);
    nwb_client_t *c = NULL;
    char err[256];
    char out[8192];
    char run1[17], run2[17];

    refused_run(f, "not-the-token-but-long-enough", "token-e2e refused wrong", run1, out,
                sizeof(out));
    assert_int_equal(count(out, "refused this client with HTTP 401"), 1);
    assert_non_null(strstr(out, "wrong token"));
    refused_run(f, NULL, "token-e2e refused none", run2, out, sizeof(out));
    assert_int_equal(count(out, "refused this client with HTTP 401"), 1);
    assert_non_null(strstr(out, "no token configured"));
    assert_null(strstr(out, "are lost"));
    /* Nothing of either run reached the server. */
    {
        char path[1024];

        assert_int_equal(nwb_test_find_run_log(f->out, "tokbad", run1, path, sizeof(path)), -1);
        assert_int_equal(nwb_test_find_run_log(f->out, "tokbad", run2, path, sizeof(path)), -1);
    }
    /* The next run of the program, with the right token, delivers both runs' spool. */
    assert_int_equal(nwb_client_create(&cfg, &c, err, sizeof(err)), 0);
    NWB_LOGGER_ESSENTIAL_INFO("token-e2e fixed");
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    assert_true(wait_logged(f, "tokbad", run1, "token-e2e refused wrong second", 10000));
    assert_true(wait_logged(f, "tokbad", run2, "token-e2e refused none second", 10000));
    {
        char path[1024];
        char *text;

        assert_int_equal(nwb_test_find_run_log(f->out, "tokbad", run1, path, sizeof(path)), 0);
        text = nwb_test_read_file(path, NULL);
        assert_non_null(text);
        assert_int_equal(count(text, "token-e2e refused wrong"), 2); /* each line once */
        free(text);
    }
    nwb_client_destroy(c);
}

/* nwb-log --token-file FILE: delivered (exit 0); a missing file is a usage error (exit 2). */
static void test_nwb_log_token_file_flag(void **state)
{
    struct fx *f = *state;
    char logserver[96];
    int status;
    pid_t pid;

    snprintf(logserver, sizeof(logserver), "--logserver=%s", f->addr);
    for (int pass = 0; pass < 2; pass++) {
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            const int devnull = open("/dev/null", O_WRONLY);

            dup2(devnull, STDERR_FILENO);
            execl(NWB_TEST_NWB_LOG_EXE, "nwb-log", logserver, "--program", "toktool", "--run",
                  "toolrun", "--log-dir", f->client_dir, "--token-file",
                  pass == 0 ? f->token_file : "/nonexistent/token", "--timeout-ms", "10000",
                  "token-e2e", "from", "nwb-log", (char *)NULL);
            _exit(127);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), pass == 0 ? 0 : 2);
    }
    assert_true(wait_logged(f, "toktool", "toolrun", "token-e2e from nwb-log", 5000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_config_token_is_sent_and_lines_land, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_file_environment_is_used, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_or_missing_token_is_reported_once_and_spooled,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_nwb_log_token_file_flag, setup, teardown),
    };

    return cmocka_run_group_tests_name("client.token_e2e", tests, NULL, NULL);
}
