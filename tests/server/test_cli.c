/* SPDX-License-Identifier: MIT */
/*
 * test_cli.c - the nwb-logserver binary's command-line contract: exit status
 * 2 and a message for bad options and token files, --help and --version,
 * exit 1 when it cannot start, the listening line (IPv4 and IPv6) with the
 * real port.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server_test_util.h"

static void test_bad_options_exit_2_with_a_message(void **state)
{
    struct tu_result r;

    (void)state;
    TU_RUN(&r, "--bogus");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "unknown option '--bogus'"));
    assert_string_equal(r.out, "");
    TU_RUN(&r, "--port", "seventy");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--port: 'seventy' is not a whole number in 0..65535"));
    TU_RUN(&r, "--max-body-bytes=0");
    assert_int_equal(r.status, 2);
    TU_RUN(&r, "--bind", "example.com");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "not an IPv4 or IPv6 address literal"));
    TU_RUN(&r, "--out");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--out needs a value"));
}

static void test_help_and_version_exit_0(void **state)
{
    struct tu_result r;

    (void)state;
    TU_RUN(&r, "--help");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "usage: nwb-logserver"));
    assert_non_null(strstr(r.out, "--max-connections N"));
    TU_RUN(&r, "--version");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "nwb-logserver 0.1.0\n");
}

static void test_cannot_start_exits_1_with_a_reason(void **state)
{
    struct nwb_test_server srv;
    char dir[512];
    char port[16];
    struct tu_result r;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("cli", dir, sizeof(dir)), 0);
    assert_int_equal(tu_start(&srv, dir, 0, NULL), 0);
    snprintf(port, sizeof(port), "%d", srv.port);
    TU_RUN(&r, "--port", port, "--out", dir);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "cannot listen on 127.0.0.1 port"));
    assert_null(strstr(r.out, "listening on"));
    assert_int_equal(tu_stop(&srv, SIGTERM, 10000), 0);
    TU_RUN(&r, "--port", "0", "--out", "/proc/self/no-such-place");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "cannot create /proc/self/no-such-place"));
    nwb_test_rmtree(dir);
}

/* nwb-logserver --token-file @p path exits 2 with exactly "the token file PATH: @p cause". */
static void expect_token_refused(const char *path, const char *out_dir, const char *cause)
{
    struct tu_result r;
    char want[900];

    TU_RUN(&r, "--token-file", path, "--port", "0", "--out", out_dir);
    assert_int_equal(r.status, 2);
    snprintf(want, sizeof(want), "nwb-logserver: the token file %s: %s\n", path, cause);
    assert_string_equal(r.err, want);
    assert_string_equal(r.out, "");
}

/* A --token-file that cannot be used: exit 2, one line naming the file and the real cause. */
static void test_bad_token_file_exits_2_naming_the_file_and_the_cause(void **state)
{
    static const char token[] = "cli-token-0123456789abcdef\n";
    char dir[512];
    char path[600];

    (void)state;
    assert_int_equal(nwb_test_tmpdir("cli-token", dir, sizeof(dir)), 0);
    snprintf(path, sizeof(path), "%s/missing", dir);
    expect_token_refused(path, dir, "cannot be read: No such file or directory (ENOENT)");
    snprintf(path, sizeof(path), "%s/token", dir);
    assert_int_equal(nwb_test_write_file(path, token, sizeof(token) - 1, 0640), 0);
    expect_token_refused(path, dir,
                         "readable or writable by group or others (mode 0640); chmod 600 it");
    nwb_test_rmtree(dir);
}

static void test_listening_line_has_the_real_port(void **state)
{
    struct nwb_test_server srv;
    char dir[512];

    (void)state;
    assert_int_equal(nwb_test_tmpdir("cli", dir, sizeof(dir)), 0);
    assert_int_equal(tu_start(&srv, dir, 0, NULL), 0);
    assert_true(srv.port > 0 && srv.port != 7650);
    assert_int_equal(nwb_test_http(srv.port, "GET", "/v1/health", NULL, NULL, 0, NULL, 0), 200);
    assert_int_equal(tu_stop(&srv, SIGINT, 10000), 0);
    nwb_test_rmtree(dir);
}

static int ipv6_loopback_works(void)
{
    struct sockaddr_in6 sa;
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    int ok;

    if (fd < 0) {
        return 0;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sin6_family = AF_INET6;
    sa.sin6_addr = in6addr_loopback;
    ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    return ok;
}

static void test_ipv6_bind_prints_bracketed_address_and_serves(void **state)
{
    static const char *const extra[] = {"--bind", "::1", NULL};
    static const char req[] = "GET /v1/health HTTP/1.1\r\nConnection: close\r\n\r\n";
    struct nwb_test_server srv;
    struct sockaddr_in6 sa;
    char dir[512];
    char resp[1024];
    size_t used = 0;
    int fd;

    (void)state;
    if (!ipv6_loopback_works()) {
        print_message("skipped: this machine has no IPv6 loopback (::1 cannot be bound)\n");
        skip();
    }
    assert_int_equal(nwb_test_tmpdir("cli6", dir, sizeof(dir)), 0);
    /* The helper finds the port after "]:" - so the line reads http://[::1]:PORT. */
    assert_int_equal(tu_start(&srv, dir, 0, extra), 0);
    fd = socket(AF_INET6, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin6_family = AF_INET6;
    sa.sin6_addr = in6addr_loopback;
    sa.sin6_port = htons((uint16_t)srv.port);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(nwb_test_send_all(fd, req, sizeof(req) - 1), 0);
    for (;;) {
        ssize_t n = recv(fd, resp + used, sizeof(resp) - 1 - used, 0);

        if (n <= 0) {
            break;
        }
        used += (size_t)n;
    }
    resp[used] = '\0';
    close(fd);
    assert_non_null(strstr(resp, "HTTP/1.1 200 OK"));
    assert_int_equal(tu_stop(&srv, SIGTERM, 10000), 0);
    nwb_test_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_bad_options_exit_2_with_a_message, tu_reap),
        cmocka_unit_test_teardown(test_help_and_version_exit_0, tu_reap),
        cmocka_unit_test_teardown(test_cannot_start_exits_1_with_a_reason, tu_reap),
        cmocka_unit_test_teardown(test_bad_token_file_exits_2_naming_the_file_and_the_cause,
                                  tu_reap),
        cmocka_unit_test_teardown(test_listening_line_has_the_real_port, tu_reap),
        cmocka_unit_test_teardown(test_ipv6_bind_prints_bracketed_address_and_serves, tu_reap),
    };

    return cmocka_run_group_tests_name("server.cli", tests, NULL, NULL);
}
