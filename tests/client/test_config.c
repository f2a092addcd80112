/* SPDX-License-Identifier: MIT */
/*
 * test_config.c - settings resolution: argv flags (--no-logserver,
 * --logserver=HOST:PORT) removed from argv, HOST:PORT and [V6]:PORT parsing,
 * defaults (program from /proc/self/exe, run ids, directories, ring size),
 * environment variables, every bound at its edge, and mode resolution.
 */
#define _GNU_SOURCE
#undef NWB_FINAL
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nwb/client.h"
#include "nwb/error.h"
#include "nwb/safe_name.h"

#include "client_core.h"
#include "test_support.h"

static int clear_env(void **state)
{
    (void)state;
    unsetenv("NWB_LOGSERVER");
    unsetenv("NWB_LOG_DIR");
    unsetenv("NWB_LOGSERVER_TOKEN");
    return 0;
}

static void test_args_remove_client_flags_and_keep_the_rest(void **state)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    char a0[] = "tool", a1[] = "--no-logserver", a2[] = "a", a3[] = "--logserver=127.0.0.1:9000";
    char a4[] = "b", a5[] = "--", a6[] = "--no-logserver";
    char *argv[] = {a0, a1, a2, a3, a4, a5, a6, NULL};
    int argc = 7;
    char err[256] = "x";

    (void)state;
    assert_int_equal(nwb_client_config_args(&cfg, &argc, argv, err, sizeof(err)), 0);
    assert_string_equal(err, "");
    assert_int_equal(argc, 5);
    assert_string_equal(argv[0], "tool");
    assert_string_equal(argv[1], "a");
    assert_string_equal(argv[2], "b");
    assert_string_equal(argv[3], "--");
    assert_string_equal(argv[4], "--no-logserver"); /* after "--" it belongs to the tool */
    assert_null(argv[5]);
    /* The last flag wins: --logserver came after --no-logserver. */
    assert_int_equal(cfg.mode, NWB_CLIENT_MODE_SERVER);
    assert_string_equal(cfg.server, "127.0.0.1:9000");
}

static void test_args_no_logserver_selects_standalone(void **state)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    char a0[] = "tool", a1[] = "--logserver=[::1]:7650", a2[] = "--no-logserver";
    char *argv[] = {a0, a1, a2, NULL};
    int argc = 3;

    (void)state;
    assert_int_equal(nwb_client_config_args(&cfg, &argc, argv, NULL, 0), 0);
    assert_int_equal(argc, 1);
    assert_null(argv[1]);
    assert_int_equal(cfg.mode, NWB_CLIENT_MODE_STANDALONE);
}

static void test_args_bad_values_fail_and_leave_argv_alone(void **state)
{
    static const char *const bad[] = {
        "--logserver=nohost",  "--logserver=:80",   "--logserver=h:",     "--logserver=h:0",
        "--logserver=h:65536", "--logserver=h:12a", "--logserver=::1:80", "--logserver=[::1]80",
        "--logserver",         "--logserver=a b:1"};

    (void)state;
    for (size_t i = 0; i < NWB_ARRAY_SIZE(bad); i++) {
        nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
        char arg[64];
        char a0[] = "tool", a1[] = "--no-logserver";
        char *argv[] = {a0, a1, arg, NULL};
        int argc = 3;
        char err[256] = "";

        snprintf(arg, sizeof(arg), "%s", bad[i]);
        assert_int_equal(nwb_client_config_args(&cfg, &argc, argv, err, sizeof(err)), NWB_ECONFIG);
        assert_true(strlen(err) > 0);
        assert_non_null(strstr(err, "--logserver"));
        assert_int_equal(argc, 3);
        assert_string_equal(argv[1], "--no-logserver");
        assert_int_equal(cfg.mode, NWB_CLIENT_MODE_AUTO);
    }
}

static void test_hostport_accepts_names_v4_and_bracketed_v6(void **state)
{
    char host[256];
    char port[8];
    char small_host[4];

    (void)state;
    assert_int_equal(
        nwb__hostport_parse("127.0.0.1:7650", host, sizeof(host), port, sizeof(port), NULL, 0), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_string_equal(port, "7650");
    assert_int_equal(
        nwb__hostport_parse("[::1]:1", host, sizeof(host), port, sizeof(port), NULL, 0), 0);
    assert_string_equal(host, "::1");
    assert_string_equal(port, "1");
    assert_int_equal(
        nwb__hostport_parse("logs.example:65535", host, sizeof(host), port, sizeof(port), NULL, 0),
        0);
    assert_string_equal(host, "logs.example");
    assert_string_equal(port, "65535");
    /* The host bound: cap - 1 characters fit, cap do not. */
    assert_int_equal(
        nwb__hostport_parse("abc:1", small_host, sizeof(small_host), port, sizeof(port), NULL, 0),
        0);
    assert_int_equal(
        nwb__hostport_parse("abcd:1", small_host, sizeof(small_host), port, sizeof(port), NULL, 0),
        NWB_ECONFIG);
    assert_int_equal(nwb__hostport_parse("", host, sizeof(host), port, sizeof(port), NULL, 0),
                     NWB_ECONFIG);
    assert_int_equal(nwb__hostport_parse(NULL, host, sizeof(host), port, sizeof(port), NULL, 0),
                     NWB_ECONFIG);
}

static void test_defaults_resolve_from_the_process(void **state)
{
    struct nwb__settings s;
    int explicit_server = -1;
    char err[256] = "";

    (void)state;
    assert_int_equal(nwb__settings_resolve(NULL, &s, &explicit_server, err, sizeof(err)), 0);
    assert_string_equal(s.program, "test_client_config"); /* basename of /proc/self/exe */
    assert_int_equal(strlen(s.run_id), 16);
    assert_int_equal(strspn(s.run_id, "0123456789abcdef"), 16);
    assert_int_equal(explicit_server, 0);
    assert_int_equal(s.mode, NWB_CLIENT_MODE_AUTO);
    assert_string_equal(s.host, "127.0.0.1");
    assert_string_equal(s.port, "7650");
    assert_string_equal(s.log_dir, "nwb-logs");
    assert_string_equal(s.spool_dir, "nwb-logs/spool");
    assert_string_equal(s.token, "");
    assert_int_equal(s.ring_bytes, 256u * 1024u);
    assert_int_equal(s.full_policy, NWB_CLIENT_FULL_DROP);
    assert_int_equal(s.console, 1);
    assert_true(s.start_time_ns > 0);
}

static void test_explicit_values_are_sanitised_and_bounded(void **state)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    struct nwb__settings s;
    int explicit_server;
    char err[256];
    char long_dir[1100];

    (void)state;
    cfg.program = "../evil prog";
    cfg.run_id = "0123456789abcdef";
    cfg.ring_bytes = 5000;
    cfg.spool_dir = "/tmp/spool-here";
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)), 0);
    assert_string_equal(s.program, "_._evil_prog");
    assert_string_equal(s.run_id, "0123456789abcdef");
    assert_int_equal(s.ring_bytes, 8192);
    assert_string_equal(s.spool_dir, "/tmp/spool-here");

    cfg.run_id = "0123456789abcdefX"; /* 17 characters: one over */
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)),
                     NWB_ECONFIG);
    assert_non_null(strstr(err, "run_id"));
    cfg.run_id = "a/b";
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)), 0);
    assert_string_equal(s.run_id, "a_b");
    cfg.run_id = NULL;

    cfg.ring_bytes = NWB__RING_MAX;
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)), 0);
    assert_int_equal(s.ring_bytes, NWB__RING_MAX);
    cfg.ring_bytes = NWB__RING_MAX + 1u;
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)),
                     NWB_ECONFIG);
    assert_non_null(strstr(err, "ring_bytes"));
    cfg.ring_bytes = 1;
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)), 0);
    assert_int_equal(s.ring_bytes, NWB__RING_MIN);
    cfg.ring_bytes = 0;

    memset(long_dir, 'd', 1023);
    long_dir[1023] = '\0'; /* 1023 bytes fit the 1024-byte field ... */
    cfg.log_dir = long_dir;
    cfg.spool_dir = "/s";
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)), 0);
    memset(long_dir, 'd', 1024);
    long_dir[1024] = '\0'; /* ... 1024 do not */
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)),
                     NWB_ECONFIG);
    assert_non_null(strstr(err, "log_dir"));
    cfg.log_dir = NULL;
    cfg.spool_dir = NULL;

    cfg.mode = 7;
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)),
                     NWB_ECONFIG);
    cfg.mode = NWB_CLIENT_MODE_AUTO;
    cfg.full_policy = 2;
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)),
                     NWB_ECONFIG);
    cfg.full_policy = NWB_CLIENT_FULL_DROP;
    {
        char token[257];

        memset(token, 't', 255);
        token[255] = '\0'; /* 255 bytes fit ... */
        cfg.token = token;
        assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)), 0);
        assert_int_equal(strlen(s.token), 255);
        token[255] = 't';
        token[256] = '\0'; /* ... 256 do not */
        assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)),
                         NWB_ECONFIG);
        assert_non_null(strstr(err, "token"));
    }
    cfg.token = "abc\r\nX-Evil: 1";
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)),
                     NWB_ECONFIG);
    assert_non_null(strstr(err, "token"));
}

static void test_environment_supplies_server_dir_and_token(void **state)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    struct nwb__settings s;
    int explicit_server = 0;
    char err[256];

    (void)state;
    setenv("NWB_LOGSERVER", "[::1]:7651", 1);
    setenv("NWB_LOG_DIR", "/tmp/from-env", 1);
    setenv("NWB_LOGSERVER_TOKEN", "secret", 1);
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)), 0);
    assert_int_equal(explicit_server, 1);
    assert_string_equal(s.host, "::1");
    assert_string_equal(s.port, "7651");
    assert_string_equal(s.server, "[::1]:7651");
    assert_string_equal(s.log_dir, "/tmp/from-env");
    assert_string_equal(s.spool_dir, "/tmp/from-env/spool");
    assert_string_equal(s.token, "secret");

    /* The config wins over the environment. */
    cfg.server = "10.1.2.3:99";
    cfg.log_dir = "/tmp/from-cfg";
    cfg.token = "cfgtoken";
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)), 0);
    assert_string_equal(s.host, "10.1.2.3");
    assert_string_equal(s.log_dir, "/tmp/from-cfg");
    assert_string_equal(s.token, "cfgtoken");

    /* A malformed $NWB_LOGSERVER is an error where it matters, ignored in standalone mode. */
    cfg.server = NULL;
    setenv("NWB_LOGSERVER", "no-port-here", 1);
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)),
                     NWB_ECONFIG);
    assert_non_null(strstr(err, "$NWB_LOGSERVER"));
    cfg.mode = NWB_CLIENT_MODE_STANDALONE;
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)), 0);
    assert_int_equal(explicit_server, 0);
    clear_env(NULL);
}

/* 1 when something accepts TCP connections on 127.0.0.1:7650 right now. */
static int default_port_answers(void)
{
    const struct sockaddr_in sa = nwb_test_loopback(7650);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int ok;

    ok = connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    return ok;
}

static void test_mode_resolution_follows_config_and_probe(void **state)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    struct nwb__settings s;
    struct nwb__launched l;
    int explicit_server;
    char note[256];
    char err[256];

    (void)state;
    /* AUTO with an explicit server: server mode, nothing probed or launched. */
    cfg.server = "127.0.0.1:1";
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)), 0);
    nwb__mode_resolve(&cfg, &s, explicit_server, &l, note, sizeof(note));
    assert_int_equal(s.mode, NWB_CLIENT_MODE_SERVER);
    assert_int_equal(l.pid, 0);
    assert_string_equal(note, "");

    /* SERVER stays SERVER even when nothing answers (the output keeps retrying). */
    cfg.mode = NWB_CLIENT_MODE_SERVER;
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)), 0);
    nwb__mode_resolve(&cfg, &s, explicit_server, &l, note, sizeof(note));
    assert_int_equal(s.mode, NWB_CLIENT_MODE_SERVER);

    /* STANDALONE ignores every server setting. */
    cfg.mode = NWB_CLIENT_MODE_STANDALONE;
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)), 0);
    nwb__mode_resolve(&cfg, &s, explicit_server, &l, note, sizeof(note));
    assert_int_equal(s.mode, NWB_CLIENT_MODE_STANDALONE);

    /* AUTO with nothing configured: whatever the probe of 127.0.0.1:7650 finds. */
    cfg.mode = NWB_CLIENT_MODE_AUTO;
    cfg.server = NULL;
    assert_int_equal(nwb__settings_resolve(&cfg, &s, &explicit_server, err, sizeof(err)), 0);
    nwb__mode_resolve(&cfg, &s, explicit_server, &l, note, sizeof(note));
    assert_int_equal(s.mode,
                     default_port_answers() ? NWB_CLIENT_MODE_SERVER : NWB_CLIENT_MODE_STANDALONE);
}

static void test_only_one_client_is_live_at_a_time(void **state)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *a = NULL;
    nwb_client_t *b = NULL;
    char dir[] = "/tmp/nwb-test-config-XXXXXX";
    char err[256] = "";
    char runs[64];

    (void)state;
    assert_non_null(mkdtemp(dir));
    cfg.mode = NWB_CLIENT_MODE_STANDALONE;
    cfg.log_dir = dir;
    cfg.console = 0;
    assert_int_equal(nwb_client_create(&cfg, &a, err, sizeof(err)), 0);
    assert_int_equal(nwb_client_is_server_mode(a), 0);
    assert_null(nwb_client_server(a));
    assert_string_equal(nwb_client_program(a), "test_client_config");
    assert_int_equal(strlen(nwb_client_run_id(a)), 16);
    assert_int_equal(nwb_client_create(&cfg, &b, err, sizeof(err)), NWB_ECONFIG);
    assert_null(b);
    assert_non_null(strstr(err, "another nwb client"));
    nwb_client_destroy(a);
    assert_int_equal(nwb_client_create(&cfg, &b, err, sizeof(err)), 0);
    nwb_client_destroy(b);
    nwb_client_destroy(NULL); /* a no-op */
    assert_int_equal(nwb_client_create(&cfg, NULL, err, sizeof(err)), NWB_ECONFIG);
    snprintf(runs, sizeof(runs), "rm -rf %s", dir);
    assert_int_equal(system(runs), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, clear_env, clear_env)
        T(test_args_remove_client_flags_and_keep_the_rest),
        T(test_args_no_logserver_selects_standalone),
        T(test_args_bad_values_fail_and_leave_argv_alone),
        T(test_hostport_accepts_names_v4_and_bracketed_v6),
        T(test_defaults_resolve_from_the_process),
        T(test_explicit_values_are_sanitised_and_bounded),
        T(test_environment_supplies_server_dir_and_token),
        T(test_mode_resolution_follows_config_and_probe),
        T(test_only_one_client_is_live_at_a_time),
#undef T
    };

    return cmocka_run_group_tests_name("client.config", tests, NULL, NULL);
}
