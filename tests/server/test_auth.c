/* SPDX-License-Identifier: MIT */
/*
 * test_auth.c - unit tests of access control (auth.c): the constant-time
 * token compare, token file loading and its refusals, the Authorization
 * header as the request parser keeps it, the loopback rule of --bind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/error.h"
#include "server_int.h"
#include "test_support.h"

#define TOKEN "0123456789abcdef-TOKEN"

static struct nwb__auth auth_of(const char *token)
{
    struct nwb__auth a;

    memset(&a, 0, sizeof(a));
    a.required = 1;
    a.len = strlen(token);
    memcpy(a.token, token, a.len);
    return a;
}

/* @p s padded with zeros to NWB_TOKEN_MAX bytes, as the compare requires. */
static int equal(const struct nwb__auth *a, const char *s, size_t len)
{
    unsigned char buf[NWB_TOKEN_MAX + 8];

    memset(buf, 0, sizeof(buf));
    memcpy(buf, s, len);
    return nwb__auth_token_equal(a, buf, len);
}

static void test_token_equal_accepts_only_the_exact_token(void **state)
{
    const struct nwb__auth a = auth_of(TOKEN);
    char t[sizeof(TOKEN)];

    (void)state;
    assert_int_equal(equal(&a, TOKEN, strlen(TOKEN)), 1);
    /* Each single-bit change at each position is caught, first byte to last. */
    for (size_t i = 0; i < strlen(TOKEN); i++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(t, TOKEN, sizeof(TOKEN));
            t[i] = (char)(t[i] ^ (1 << bit));
            assert_int_equal(equal(&a, t, strlen(TOKEN)), 0);
        }
    }
    /* A prefix, the token with one byte more (zero or not), the empty string. */
    assert_int_equal(equal(&a, TOKEN, strlen(TOKEN) - 1), 0);
    assert_int_equal(equal(&a, TOKEN "x", strlen(TOKEN) + 1), 0);
    assert_int_equal(equal(&a, TOKEN "\0", strlen(TOKEN) + 1), 0);
    assert_int_equal(equal(&a, "", 0), 0);
    /* Lengths that differ only in high bits (no truncation to a byte). */
    {
        unsigned char buf[NWB_TOKEN_MAX + 8];

        memset(buf, 0, sizeof(buf));
        memcpy(buf, TOKEN, strlen(TOKEN));
        assert_int_equal(nwb__auth_token_equal(&a, buf, strlen(TOKEN) + 256), 0);
        assert_int_equal(nwb__auth_token_equal(&a, buf, strlen(TOKEN) + ((size_t)1 << 40)), 0);
        assert_int_equal(nwb__auth_token_equal(&a, buf, strlen(TOKEN)), 1);
    }
}

static void test_token_equal_at_the_longest_token(void **state)
{
    char tok[NWB_TOKEN_MAX + 1];
    struct nwb__auth a;

    (void)state;
    memset(tok, 'k', NWB_TOKEN_MAX);
    tok[NWB_TOKEN_MAX] = '\0';
    a = auth_of(tok);
    assert_int_equal(equal(&a, tok, NWB_TOKEN_MAX), 1);
    tok[NWB_TOKEN_MAX - 1] = 'j';
    assert_int_equal(equal(&a, tok, NWB_TOKEN_MAX), 0);
}

struct tmp {
    char dir[512];
    char path[600];
};

static void tmp_file(struct tmp *t, const void *data, size_t len, mode_t mode)
{
    int fd;

    assert_int_equal(nwb_test_tmpdir("auth", t->dir, sizeof(t->dir)), 0);
    snprintf(t->path, sizeof(t->path), "%s/token", t->dir);
    fd = open(t->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
    assert_int_equal(chmod(t->path, mode), 0);
}

/* Load a token file holding @p data; returns the result, the reason in @p err. */
static int load(const void *data, size_t len, mode_t mode, struct nwb__auth *a, char *err,
                size_t errlen)
{
    struct tmp t;
    int rc;

    tmp_file(&t, data, len, mode);
    err[0] = '\0';
    rc = nwb__auth_load(a, t.path, err, errlen);
    nwb_test_rmtree(t.dir);
    return rc;
}

static void test_token_file_trims_one_newline_only(void **state)
{
    struct nwb__auth a;
    char err[512];

    (void)state;
    assert_int_equal(load(TOKEN, strlen(TOKEN), 0600, &a, err, sizeof(err)), 0);
    assert_int_equal(a.required, 1);
    assert_int_equal(a.len, strlen(TOKEN));
    assert_memory_equal(a.token, TOKEN, a.len);
    assert_int_equal(load(TOKEN "\n", strlen(TOKEN) + 1, 0400, &a, err, sizeof(err)), 0);
    assert_int_equal(a.len, strlen(TOKEN));
    assert_int_equal(load(TOKEN "\r\n", strlen(TOKEN) + 2, 0600, &a, err, sizeof(err)), 0);
    assert_int_equal(a.len, strlen(TOKEN));
    /* A second newline is not trimmed: it is a bad byte. */
    assert_int_equal(load(TOKEN "\n\n", strlen(TOKEN) + 2, 0600, &a, err, sizeof(err)),
                     NWB_ECONFIG);
    assert_non_null(strstr(err, "not visible ASCII"));
    assert_int_equal(a.required, 0);
}

static void test_token_file_length_bounds_at_their_edges(void **state)
{
    char tok[NWB_TOKEN_MAX + 2];
    struct nwb__auth a;
    char err[512];

    (void)state;
    memset(tok, 'A', sizeof(tok));
    assert_int_equal(load(tok, NWB_TOKEN_MAX, 0600, &a, err, sizeof(err)), 0);
    assert_int_equal(a.len, NWB_TOKEN_MAX);
    tok[NWB_TOKEN_MAX] = '\n';
    assert_int_equal(load(tok, NWB_TOKEN_MAX + 1, 0600, &a, err, sizeof(err)), 0);
    assert_int_equal(a.len, NWB_TOKEN_MAX);
    tok[NWB_TOKEN_MAX] = 'A';
    assert_int_equal(load(tok, NWB_TOKEN_MAX + 1, 0600, &a, err, sizeof(err)), NWB_ECONFIG);
    assert_non_null(strstr(err, "longer than 255 bytes"));
    assert_int_equal(load(tok, NWB__TOKEN_MIN, 0600, &a, err, sizeof(err)), 0);
    assert_int_equal(load(tok, NWB__TOKEN_MIN - 1, 0600, &a, err, sizeof(err)), NWB_ECONFIG);
    assert_non_null(strstr(err, "shorter than 16 bytes"));
    assert_int_equal(load("", 0, 0600, &a, err, sizeof(err)), NWB_ECONFIG);
    assert_non_null(strstr(err, "the token is empty"));
    assert_int_equal(load("\n", 1, 0600, &a, err, sizeof(err)), NWB_ECONFIG);
    assert_non_null(strstr(err, "the token is empty"));
}

static void test_token_file_refuses_bad_bytes_modes_and_kinds(void **state)
{
    struct nwb__auth a;
    char err[512];
    char dir[512];

    (void)state;
    assert_int_equal(load("0123456789 abcdef", 17, 0600, &a, err, sizeof(err)), NWB_ECONFIG);
    assert_non_null(strstr(err, "byte 10 of the token is not visible ASCII"));
    assert_int_equal(load("0123456789\x01"
                          "abcdef",
                          17, 0600, &a, err, sizeof(err)),
                     NWB_ECONFIG);
    assert_int_equal(load("0123456789\xc3\xa9"
                          "abcdef",
                          18, 0600, &a, err, sizeof(err)),
                     NWB_ECONFIG);
    assert_int_equal(load("0123456789\0abcdef", 17, 0600, &a, err, sizeof(err)), NWB_ECONFIG);
    assert_int_equal(load(TOKEN, strlen(TOKEN), 0644, &a, err, sizeof(err)), NWB_ECONFIG);
    assert_non_null(strstr(err, "group or others (mode 0644); chmod 600"));
    assert_int_equal(load(TOKEN, strlen(TOKEN), 0640, &a, err, sizeof(err)), NWB_ECONFIG);
    assert_int_equal(load(TOKEN, strlen(TOKEN), 0602, &a, err, sizeof(err)), NWB_ECONFIG);
    assert_int_equal(nwb_test_tmpdir("auth", dir, sizeof(dir)), 0);
    assert_int_equal(chmod(dir, 0700), 0);
    assert_int_equal(nwb__auth_load(&a, dir, err, sizeof(err)), NWB_ECONFIG);
    assert_non_null(strstr(err, "not a regular file"));
    nwb_test_rmtree(dir);
    assert_int_equal(a.required, 0);
}

/* The message names the file and the real cause: the errno's text and name, the mode. */
static void expect_load_error(const char *path, const char *cause)
{
    struct nwb__auth a;
    char err[512];
    char want[700];

    err[0] = '\0';
    assert_int_equal(nwb__auth_load(&a, path, err, sizeof(err)), NWB_ECONFIG);
    snprintf(want, sizeof(want), "the token file %s: ", path);
    if (strstr(err, want) == NULL || strstr(err, cause) == NULL) {
        fail_msg("'%s' does not name %s and '%s'", err, path, cause);
    }
    assert_int_equal(a.required, 0);
}

static void test_token_file_errors_name_the_file_and_the_cause(void **state)
{
    struct tmp t;
    char path[700];

    (void)state;
    expect_load_error("/nonexistent/nwb-token",
                      "cannot be read: No such file or directory (ENOENT)");
    tmp_file(&t, TOKEN, strlen(TOKEN), 0600);
    /* A path through a regular file: ENOTDIR. */
    snprintf(path, sizeof(path), "%s/below", t.path);
    expect_load_error(path, "(ENOTDIR)");
    /* A symbolic link to itself: ELOOP. */
    snprintf(path, sizeof(path), "%s/loop", t.dir);
    assert_int_equal(symlink(path, path), 0);
    expect_load_error(path, "(ELOOP)");
    /* Mode rules, with the mode found. */
    assert_int_equal(chmod(t.path, 0604), 0);
    expect_load_error(t.path, "readable or writable by group or others (mode 0604)");
    if (geteuid() != 0) {
        /* Unreadable (root reads any file, so only other users can see this one). */
        assert_int_equal(chmod(t.path, 0000), 0);
        expect_load_error(t.path, "cannot be read: Permission denied (EACCES)");
    }
    nwb_test_rmtree(t.dir);
}

/* Parse @p head with the real request parser and check it against TOKEN. */
static int check_head(const char *head, const char **reason)
{
    static const struct nwb__http_limits limits = {16384, 64};
    static struct nwb__http_req r;
    const struct nwb__auth a = auth_of(TOKEN);
    size_t used;

    nwb__http_req_init(&r, &limits, NULL, NULL);
    assert_int_equal(nwb__http_req_feed(&r, head, strlen(head), &used), NWB__HTTP_HEAD);
    *reason = NULL;
    return nwb__auth_check_request(&a, &r, reason);
}

static void test_bearer_header_forms(void **state)
{
    char head[2048];
    char big[1024];
    const char *why;

    (void)state;
    assert_int_equal(check_head("GET / HTTP/1.1\r\nAuthorization: Bearer " TOKEN "\r\n\r\n", &why),
                     0);
    /* Scheme case-insensitive, several spaces, trailing blanks, field name in any case. */
    assert_int_equal(
        check_head("GET / HTTP/1.1\r\nauthorization: bEARER   " TOKEN " \t\r\n\r\n", &why), 0);
    assert_int_equal(check_head("GET / HTTP/1.1\r\nHost: x\r\n\r\n", &why), 401);
    assert_non_null(strstr(why, "missing"));
    assert_int_equal(check_head("GET / HTTP/1.1\r\nAuthorization: Basic " TOKEN "\r\n\r\n", &why),
                     401);
    assert_non_null(strstr(why, "not Bearer"));
    assert_int_equal(check_head("GET / HTTP/1.1\r\nAuthorization: Bearer" TOKEN "\r\n\r\n", &why),
                     401);
    assert_int_equal(check_head("GET / HTTP/1.1\r\nAuthorization: Bearer\r\n\r\n", &why), 401);
    assert_int_equal(check_head("GET / HTTP/1.1\r\nAuthorization: Bearer \r\n\r\n", &why), 401);
    assert_int_equal(check_head("GET / HTTP/1.1\r\nAuthorization:\r\n\r\n", &why), 401);
    /* Wrong, shorter, longer. */
    assert_int_equal(check_head("GET / HTTP/1.1\r\nAuthorization: Bearer 0123456789abcdef-TOKEx"
                                "\r\n\r\n",
                                &why),
                     401);
    assert_non_null(strstr(why, "wrong"));
    assert_int_equal(check_head("GET / HTTP/1.1\r\nAuthorization: Bearer 0123456789abcdef-TOKE"
                                "\r\n\r\n",
                                &why),
                     401);
    assert_int_equal(check_head("GET / HTTP/1.1\r\nAuthorization: Bearer " TOKEN "X\r\n\r\n", &why),
                     401);
    /* The first Authorization field counts; a second right one does not rescue a wrong one. */
    assert_int_equal(check_head("GET / HTTP/1.1\r\nAuthorization: Bearer nope\r\n"
                                "Authorization: Bearer " TOKEN "\r\n\r\n",
                                &why),
                     401);
    /* Value at the kept bound: checked (wrong here); one byte more: too long, never a crash. */
    memset(big, 'x', sizeof(big));
    snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nAuthorization: Bearer %.*s\r\n\r\n",
             (int)(NWB__AUTH_VALUE_MAX - 7), big);
    assert_int_equal(check_head(head, &why), 401);
    assert_non_null(strstr(why, "wrong"));
    snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nAuthorization: Bearer %.*s\r\n\r\n",
             (int)(NWB__AUTH_VALUE_MAX - 6), big);
    assert_int_equal(check_head(head, &why), 401);
    assert_non_null(strstr(why, "too long"));
}

static void test_loopback_addresses(void **state)
{
    (void)state;
    assert_true(nwb__auth_addr_is_loopback("127.0.0.1"));
    assert_true(nwb__auth_addr_is_loopback("127.255.0.9"));
    assert_true(nwb__auth_addr_is_loopback("::1"));
    assert_true(nwb__auth_addr_is_loopback("::ffff:127.0.0.2"));
    assert_false(nwb__auth_addr_is_loopback("0.0.0.0"));
    assert_false(nwb__auth_addr_is_loopback("::"));
    assert_false(nwb__auth_addr_is_loopback("128.0.0.1"));
    assert_false(nwb__auth_addr_is_loopback("10.1.2.3"));
    assert_false(nwb__auth_addr_is_loopback("::2"));
    assert_false(nwb__auth_addr_is_loopback("::ffff:10.0.0.1"));
    assert_false(nwb__auth_addr_is_loopback("localhost")); /* --bind takes literals only */
    assert_false(nwb__auth_addr_is_loopback(NULL));
}

static int args(const char **token_file, char *err, size_t errlen, int argc, const char *a0,
                const char *a1, const char *a2, const char *a3)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    char *argv[5] = {(char *)(uintptr_t) "nwb-logserver", (char *)(uintptr_t)a0,
                     (char *)(uintptr_t)a1, (char *)(uintptr_t)a2, (char *)(uintptr_t)a3};

    int rc;

    err[0] = '\0';
    rc = nwb_server_config_parse(&cfg, argc, argv, err, errlen);
    *token_file = cfg.token_file;
    return rc;
}

static void test_args_need_a_token_beyond_loopback(void **state)
{
    const char *tf = "unset";
    char err[512];

    (void)state;
    assert_int_equal(args(&tf, err, sizeof(err), 1, NULL, NULL, NULL, NULL), 0);
    assert_null(tf);
    assert_int_equal(args(&tf, err, sizeof(err), 3, "--bind", "127.0.0.5", NULL, NULL), 0);
    assert_int_equal(args(&tf, err, sizeof(err), 3, "--bind", "0.0.0.0", NULL, NULL), NWB_ECONFIG);
    assert_non_null(strstr(err, "--bind 0.0.0.0 is not a loopback address"));
    assert_non_null(strstr(err, "--token-file"));
    assert_int_equal(args(&tf, err, sizeof(err), 2, "--bind=::", NULL, NULL, NULL), NWB_ECONFIG);
    assert_int_equal(args(&tf, err, sizeof(err), 5, "--bind", "0.0.0.0", "--token-file", "/t"), 0);
    assert_string_equal(tf, "/t");
    assert_int_equal(args(&tf, err, sizeof(err), 2, "--token-file=", NULL, NULL, NULL),
                     NWB_ECONFIG);
    assert_non_null(strstr(err, "empty"));
    assert_int_equal(args(&tf, err, sizeof(err), 2, "--token-file", NULL, NULL, NULL), NWB_ECONFIG);
    assert_non_null(strstr(err, "needs a value"));
}

/* nwb_server_create() applies the same rule and loads the file itself (library callers). */
static void test_create_refuses_non_loopback_without_token_and_bad_files(void **state)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    nwb_server_t *srv = (nwb_server_t *)(uintptr_t)1;
    uv_loop_t loop;
    char err[512];

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    cfg.bind_addr = "0.0.0.0";
    cfg.port = 0;
    cfg.out_dir = "/nonexistent-nwb-auth-test";
    assert_int_equal(nwb_server_create(&loop, &cfg, &srv, err, sizeof(err)), NWB_ECONFIG);
    assert_null(srv);
    assert_non_null(strstr(err, "not a loopback address"));
    cfg.token_file = "/nonexistent-nwb-auth-test/token";
    assert_int_equal(nwb_server_create(&loop, &cfg, &srv, err, sizeof(err)), NWB_ECONFIG);
    assert_null(srv);
    assert_non_null(strstr(err, "the token file /nonexistent-nwb-auth-test/token: "));
    assert_non_null(strstr(err, "No such file or directory (ENOENT)"));
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_equal_accepts_only_the_exact_token),
        cmocka_unit_test(test_token_equal_at_the_longest_token),
        cmocka_unit_test(test_token_file_trims_one_newline_only),
        cmocka_unit_test(test_token_file_length_bounds_at_their_edges),
        cmocka_unit_test(test_token_file_refuses_bad_bytes_modes_and_kinds),
        cmocka_unit_test(test_token_file_errors_name_the_file_and_the_cause),
        cmocka_unit_test(test_bearer_header_forms),
        cmocka_unit_test(test_loopback_addresses),
        cmocka_unit_test(test_args_need_a_token_beyond_loopback),
        cmocka_unit_test(test_create_refuses_non_loopback_without_token_and_bad_files),
    };

    return cmocka_run_group_tests_name("server.auth", tests, NULL, NULL);
}
