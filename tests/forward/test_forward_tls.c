/* SPDX-License-Identifier: MIT */
/*
 * test_forward_tls.c - the real nwb-logserver with an https --forward-clickhouse, fed by
 * nwb-log, against Debian's real clickhouse-server serving a certificate for IP 127.0.0.1 from
 * a throw-away CA: with that CA (--forward-ca-file) every line arrives exactly once; with
 * another CA, or the system's trust store, or a host name the certificate does not name,
 * nothing is sent, the verification failure is one log line and a /metrics counter, and
 * ingest goes on answering 200; ClickHouse killed and restarted under an https forwarder;
 * the CA options that stop the server at start.
 */
#define _GNU_SOURCE
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
#include <sys/wait.h>
#include <unistd.h>

#include "clickhouse_server.h"
#include "nwb/buf.h"
#include "nwb/file_io.h"
#include "test_support.h"
#include "tls_certs.h"

#ifndef NWB_TEST_NWB_LOG_EXE
#define NWB_TEST_NWB_LOG_EXE "nwb-log"
#endif

#define PROGRAM "fwdtls"
#define WAIT_MS 60000
#define LINES   5000u

struct fixture {
    struct nwb_test_clickhouse ch;
    struct nwb_test_tls_ca ca, other_ca;
    char dir[512]; /* certificates */
    char out[512]; /* the current server's --out */
    struct nwb_test_server srv;
    int srv_running;
    struct nwb_test_server plain; /* a plain HTTP peer for an https URL */
    int plain_running;
    char plain_out[512];
};

static int group_setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    char cert[600], key[600], why[256];

    if (f == NULL) {
        return -1;
    }
    if (!nwb_test_clickhouse_available(why, sizeof why)) {
        fprintf(stderr, "skipped: %s\n", why);
        exit(NWB_TEST_CLICKHOUSE_SKIP);
    }
    if (nwb_test_tmpdir("forward-tls", f->dir, sizeof f->dir) != 0 ||
        nwb_test_tls_ca_make(&f->ca, f->dir, "nwb-test") != 0 ||
        nwb_test_tls_ca_make(&f->other_ca, f->dir, "other") != 0) {
        free(f);
        return -1;
    }
    snprintf(cert, sizeof cert, "%s/server.pem", f->dir);
    snprintf(key, sizeof key, "%s/server.key", f->dir);
    if (nwb_test_tls_server_make(&f->ca, "IP:127.0.0.1", cert, key) != 0 ||
        nwb_test_clickhouse_start_tls(&f->ch, cert, key) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int group_teardown(void **state)
{
    struct fixture *f = *state;

    nwb_test_clickhouse_destroy(&f->ch);
    nwb_test_tls_ca_free(&f->ca);
    nwb_test_tls_ca_free(&f->other_ca);
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    if (f->srv_running) {
        nwb_test_server_stop(&f->srv, SIGTERM, 10000);
        f->srv_running = 0;
    }
    if (f->out[0] != '\0') {
        nwb_test_rmtree(f->out);
        f->out[0] = '\0';
    }
    if (f->plain_running) {
        nwb_test_server_stop(&f->plain, SIGTERM, 10000);
        f->plain_running = 0;
        nwb_test_rmtree(f->plain_out);
    }
    return 0;
}

/* A server forwarding to https://@p host:PORT/?database=@p db, trusting @p ca_file (NULL: the
 * system's store). */
static void server_start(struct fixture *f, const char *host, const char *db, const char *ca_file)
{
    char url[256];
    const char *extra[] = {"--forward-clickhouse", url, "--forward-ca-file", ca_file, NULL};

    snprintf(url, sizeof url, "https://%s:%d/?database=%s", host, f->ch.https_port, db);
    if (ca_file == NULL) {
        extra[2] = NULL;
    }
    assert_int_equal(nwb_test_tmpdir("forward-tls-out", f->out, sizeof f->out), 0);
    assert_int_equal(nwb_test_server_start(&f->srv, NULL, f->out, 0, extra), 0);
    f->srv_running = 1;
}

/* nwb-log sends @p n lines of @p run to the server and exits 0: every batch answered 200. */
static void log_run(struct fixture *f, const char *run, unsigned n)
{
    char logserver[64], client_dir[600];
    nwb_buf_t b = NWB_BUF_INIT(16u << 20);
    int fds[2], status = 0;
    pid_t pid;

    snprintf(logserver, sizeof logserver, "--logserver=127.0.0.1:%d", f->srv.port);
    snprintf(client_dir, sizeof client_dir, "%s/client", f->out);
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(
            nwb_buf_appendf(&b, i % 5 == 0 ? "%s line %u: q'\"\\ \tx\n" : "%s line %u\n", run, i),
            0);
    }
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[0], STDIN_FILENO);
        execl(NWB_TEST_NWB_LOG_EXE, "nwb-log", logserver, "--program", PROGRAM, "--run", run,
              "--log-dir", client_dir, "--timeout-ms", "30000", (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    assert_int_equal(nwb_write_all(fds[1], b.data, b.len), 0);
    close(fds[1]);
    nwb_buf_cleanup(&b);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* The lines of @p run's log.txt on the server. */
static size_t log_txt_lines(struct fixture *f, const char *run)
{
    char path[1024];
    size_t len = 0, lines = 0;
    char *text;

    assert_int_equal(nwb_test_find_run_log(f->out, PROGRAM, run, path, sizeof path), 0);
    text = nwb_test_read_file(path, &len);
    assert_non_null(text);
    for (size_t i = 0; i < len; i++) {
        lines += text[i] == '\n';
    }
    free(text);
    return lines;
}

static long long metric_value(struct fixture *f, const char *name)
{
    return nwb_test_metric(f->srv.port, name);
}

static void wait_metric(struct fixture *f, const char *name, long long at_least)
{
    if (!nwb_test_wait_metric(f->srv.port, name, at_least, WAIT_MS)) {
        fail_msg("%s stayed below %lld", name, at_least);
    }
}

/* The server's stderr so far, appended to @p acc (NUL-terminated, @p cap bytes). */
static void stderr_collect(struct fixture *f, char *acc, size_t cap)
{
    const size_t used = strlen(acc);

    nwb_test_server_stderr(&f->srv, acc + used, cap - used);
}

/* Wait until the server's stderr holds @p needle; returns the collected text's count of it. */
static size_t wait_stderr(struct fixture *f, char *acc, size_t cap, const char *needle)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;

    for (;;) {
        stderr_collect(f, acc, cap);
        if (strstr(acc, needle) != NULL) {
            return nwb_test_count(acc, needle);
        }
        if (nwb_test_now_ms() >= deadline) {
            fail_msg("the server never logged \"%s\"; it logged:\n%s", needle, acc);
        }
        poll(NULL, 0, 50);
    }
}

/* Wait until nwb_tls.nwb_logs FINAL holds exactly @p lines rows of @p run. */
static void wait_count(struct fixture *f, const char *run, size_t lines)
{
    const long long deadline = nwb_test_now_ms() + WAIT_MS;
    char sql[256];
    long long n = -1;

    snprintf(sql, sizeof sql,
             "SELECT count() FROM nwb_tls.nwb_logs FINAL WHERE program = '" PROGRAM
             "' AND run = '%s'",
             run);
    while (nwb_test_now_ms() < deadline) {
        n = nwb_test_clickhouse_count(&f->ch, sql);
        if (n == (long long)lines) {
            break;
        }
        assert_true(n < (long long)lines);
        /* ClickHouse has no change notification; the count is polled in 50 ms slices. */
        poll(NULL, 0, 50);
    }
    assert_int_equal(n, (long long)lines);
}

static void test_forward_tls_records_arrive_exactly_once(void **state)
{
    struct fixture *f = *state;
    size_t lines;

    server_start(f, "127.0.0.1", "nwb_tls", f->ca.cert_path);
    log_run(f, "tls1", LINES);
    lines = log_txt_lines(f, "tls1");
    assert_int_equal(lines, LINES);
    wait_count(f, "tls1", lines);
    /* Rows, not a re-sent batch collapsing: the plain count is the same. */
    assert_int_equal(nwb_test_clickhouse_count(&f->ch, "SELECT count() FROM nwb_tls.nwb_logs"),
                     (long long)lines);
    wait_metric(f, "nwb_forward_records_total", (long long)lines);
    assert_int_equal(metric_value(f, "nwb_forward_up"), 1);
    assert_int_equal(metric_value(f, "nwb_forward_tls_failures_total"), 0);

    /* ClickHouse killed and restarted: the backlog waits, a new handshake resumes it. */
    assert_int_equal(nwb_test_clickhouse_stop(&f->ch, SIGKILL, 10000), 0);
    log_run(f, "tls2", LINES);
    wait_metric(f, "nwb_forward_inserts_failed_total", 1);
    assert_int_equal(nwb_test_clickhouse_restart(&f->ch), 0);
    wait_count(f, "tls2", log_txt_lines(f, "tls2"));
    assert_int_equal(nwb_test_clickhouse_count(&f->ch, "SELECT count() FROM nwb_tls.nwb_logs"),
                     (long long)(lines + LINES));
    /* A refused connection is not a TLS failure. */
    assert_int_equal(metric_value(f, "nwb_forward_tls_failures_total"), 0);
}

/* A server whose TLS check refuses ClickHouse: ingest answers 200, nothing reaches
 * ClickHouse (not even the schema), the reason is logged once while the retries are counted. */
static void expect_refused(struct fixture *f, const char *db, const char *reason)
{
    char *acc = calloc(1, 1u << 16);
    char sql[256];

    assert_non_null(acc);
    log_run(f, "refused", 200);
    assert_int_equal(log_txt_lines(f, "refused"), 200);
    wait_metric(f, "nwb_forward_tls_failures_total", 2);
    wait_metric(f, "nwb_forward_bytes_behind", 1);
    assert_true(metric_value(f, "nwb_forward_inserts_failed_total") >= 2);
    assert_int_equal(metric_value(f, "nwb_forward_up"), 0);
    assert_int_equal(metric_value(f, "nwb_forward_records_total"), 0);
    /* One line for any number of retries (backoff), with OpenSSL's reason. */
    assert_int_equal(wait_stderr(f, acc, 1u << 16, reason), 1);
    assert_non_null(strstr(acc, "error: forward to ClickHouse: "));
    snprintf(sql, sizeof sql, "SELECT count() FROM system.databases WHERE name = '%s'", db);
    assert_int_equal(nwb_test_clickhouse_count(&f->ch, sql), 0);
    free(acc);
}

static void test_forward_tls_wrong_ca_forwards_nothing(void **state)
{
    struct fixture *f = *state;

    server_start(f, "127.0.0.1", "nwb_tls_wrong_ca", f->other_ca.cert_path);
    expect_refused(f, "nwb_tls_wrong_ca",
                   "TLS refused: certificate verify failed: unable to get local issuer "
                   "certificate");
}

/* Verification is on without --forward-ca-file too: the system's store does not hold the
 * test CA. */
static void test_forward_tls_system_store_refuses_unknown_ca(void **state)
{
    struct fixture *f = *state;

    server_start(f, "127.0.0.1", "nwb_tls_system", NULL);
    expect_refused(f, "nwb_tls_system",
                   "TLS refused: certificate verify failed: unable to get local issuer "
                   "certificate");
}

/* The right CA, but "localhost" is not a name of the certificate (it names IP 127.0.0.1). */
static void test_forward_tls_hostname_mismatch_refused(void **state)
{
    struct fixture *f = *state;

    server_start(f, "localhost", "nwb_tls_name", f->ca.cert_path);
    expect_refused(f, "nwb_tls_name", "TLS refused: certificate verify failed: hostname mismatch");
}

/* An https URL to a plain HTTP server (another nwb-logserver, whose llhttp answers the
 * ClientHello's first byte with a 400 at once): the handshake fails (there is no certificate
 * to check), with OpenSSL's reason, the same way. Not ClickHouse's plain port: its parser
 * waits for a line end the ClientHello may lack, and the handshake would wait 30 s. */
static void test_forward_tls_plain_port_refused(void **state)
{
    struct fixture *f = *state;
    char url[256];
    const char *extra[] = {"--forward-clickhouse", url, "--forward-ca-file", f->ca.cert_path, NULL};

    assert_int_equal(nwb_test_tmpdir("forward-tls-plain", f->plain_out, sizeof f->plain_out), 0);
    assert_int_equal(nwb_test_server_start(&f->plain, NULL, f->plain_out, 0, NULL), 0);
    f->plain_running = 1;
    snprintf(url, sizeof url, "https://127.0.0.1:%d/?database=nwb_tls_plain", f->plain.port);
    assert_int_equal(nwb_test_tmpdir("forward-tls-out", f->out, sizeof f->out), 0);
    assert_int_equal(nwb_test_server_start(&f->srv, NULL, f->out, 0, extra), 0);
    f->srv_running = 1;
    expect_refused(f, "nwb_tls_plain", "TLS refused: TLS handshake failed: ");
}

/* nwb-logserver with @p args exits 2 at start with @p reason on stderr. */
static void expect_exit_2(struct fixture *f, const char *const *args, const char *reason)
{
    char log[700];
    char *text;
    size_t len = 0;
    int status;

    snprintf(log, sizeof log, "%s/start.log", f->dir);
    status = nwb_test_run(args, NULL, log, 30000);
    text = nwb_test_read_file(log, &len);
    assert_non_null(text);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 2) || strstr(text, reason) == NULL) {
        fail_msg("want exit 2 with \"%s\", got status %d and:\n%s", reason, status, text);
    }
    free(text);
}

static void test_forward_tls_bad_ca_options_exit_2(void **state)
{
    struct fixture *f = *state;
    char url[128], empty[600], out[600];
    const char *http_with_ca[] = {
        NWB_TEST_SERVER_EXE, "--port",        "0", "--out", out, "--forward-clickhouse", url,
        "--forward-ca-file", f->ca.cert_path, NULL};
    const char *empty_ca[] = {
        NWB_TEST_SERVER_EXE, "--port", "0", "--out", out, "--forward-clickhouse", url,
        "--forward-ca-file", empty,    NULL};
    const char *ca_alone[] = {NWB_TEST_SERVER_EXE, "--port",        "0", "--out", out,
                              "--forward-ca-file", f->ca.cert_path, NULL};

    snprintf(out, sizeof out, "%s/out", f->dir);
    snprintf(empty, sizeof empty, "%s/empty.pem", f->dir);
    assert_int_equal(nwb_test_write_file(empty, "", 0, 0600), 0);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", f->ch.http_port);
    expect_exit_2(f, http_with_ca, "--forward-ca-file is only for an https:// URL");
    snprintf(url, sizeof url, "https://127.0.0.1:%d/", f->ch.https_port);
    expect_exit_2(f, empty_ca, "no PEM certificate (-----BEGIN CERTIFICATE-----) in it");
    expect_exit_2(f, ca_alone, "--forward-ca-file needs an https --forward-clickhouse");
    nwb_test_rmtree(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_forward_tls_records_arrive_exactly_once, teardown),
        cmocka_unit_test_teardown(test_forward_tls_wrong_ca_forwards_nothing, teardown),
        cmocka_unit_test_teardown(test_forward_tls_system_store_refuses_unknown_ca, teardown),
        cmocka_unit_test_teardown(test_forward_tls_hostname_mismatch_refused, teardown),
        cmocka_unit_test_teardown(test_forward_tls_plain_port_refused, teardown),
        cmocka_unit_test(test_forward_tls_bad_ca_options_exit_2),
    };

    return cmocka_run_group_tests_name("forward.forward_tls", tests, group_setup, group_teardown);
}
