/* SPDX-License-Identifier: MIT */
/*
 * test_launch.c - a program that asks the client to start nwb-logserver when
 * none answers: the launched server takes the run's lines and is stopped when
 * the program exits; with detach it keeps running; after a failed start-up it
 * is stopped even though detach was asked for.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nwb/client.h"
#include "nwb/log.h"
#include "test_support.h"

/* 1 when something accepts TCP connections at @p addr ("127.0.0.1:PORT"). */
static int answers(const char *addr)
{
    const char *colon = strrchr(addr, ':');
    int fd;

    if (colon == NULL) {
        return 0;
    }
    fd = nwb_test_connect(atoi(colon + 1));
    if (fd < 0) {
        return 0;
    }
    close(fd);
    return 1;
}

/* Kill the nwb-logserver whose command line names @p out_dir. Returns how many were found. */
static int kill_server_of(const char *out_dir)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int found = 0;

    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[300], cmd[4096];
        size_t n;
        FILE *f;

        if (e->d_name[0] < '1' || e->d_name[0] > '9') {
            continue;
        }
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        f = fopen(path, "rb");
        if (f == NULL) {
            continue;
        }
        n = fread(cmd, 1, sizeof(cmd) - 1, f);
        fclose(f);
        for (size_t i = 0; i < n; i++) {
            if (cmd[i] == '\0') {
                cmd[i] = ' ';
            }
        }
        cmd[n] = '\0';
        if (strstr(cmd, "nwb-logserver") != NULL && strstr(cmd, out_dir) != NULL) {
            kill(atoi(e->d_name), SIGKILL);
            found++;
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return found;
}

static nwb_client_t *launch_client(const char *out, char *addr, size_t addrlen, int detach)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *client = NULL;
    char configured[64], err[256];
    int port;
    /* The configured address refuses (nothing listens there) while the client probes it;
     * the client then launches a server of its own on another port. */
    const int dead = nwb_test_reserve_dead_port(&port);

    assert_true(dead >= 0);
    snprintf(configured, sizeof(configured), "127.0.0.1:%d", port);
    cfg.program = "launched";
    cfg.mode = NWB_CLIENT_MODE_SERVER;
    cfg.server = configured;
    cfg.log_dir = out;
    cfg.launch_server = 1;
    cfg.detach_server = detach;
    cfg.server_exe = NWB_TEST_SERVER_EXE;
    assert_int_equal(nwb_client_create(&cfg, &client, err, sizeof(err)), 0);
    assert_true(nwb_client_is_server_mode(client));
    snprintf(addr, addrlen, "%s", nwb_client_server(client));
    assert_string_not_equal(addr, configured); /* the launched server's own port */
    assert_true(answers(addr));
    close(dead);
    return client;
}

static void test_launch_server_takes_the_run_and_stops_with_the_program(void **state)
{
    char out[512], addr[300], logpath[1024], run[17];
    nwb_client_t *client;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("launch", out, sizeof(out)), 0);
    client = launch_client(out, addr, sizeof(addr), 0);
    snprintf(run, sizeof(run), "%s", nwb_client_run_id(client));
    NWB_LOGGER_ESSENTIAL_INFO("hello from a launched server run");
    assert_int_equal(nwb_client_flush(client, 10000), 0);
    nwb_client_destroy(client);
    assert_false(answers(addr));
    assert_int_equal(kill_server_of(out), 0);
    assert_int_equal(nwb_test_find_run_log(out, "launched", run, logpath, sizeof(logpath)), 0);
    assert_true(nwb_test_wait_file_contains(logpath, "hello from a launched server run", 1000));
    nwb_test_rmtree(out);
}

static void test_launch_detached_server_outlives_the_program(void **state)
{
    char out[512], addr[300];
    nwb_client_t *client;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("launch-detach", out, sizeof(out)), 0);
    client = launch_client(out, addr, sizeof(addr), 1);
    nwb_client_destroy(client);
    assert_true(answers(addr));
    assert_int_equal(kill_server_of(out), 1);
    nwb_test_rmtree(out);
}

static void test_launch_failed_startup_stops_even_a_detached_server(void **state)
{
    char out[512], addr[300];
    nwb_client_t *client;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("launch-fail", out, sizeof(out)), 0);
    client = launch_client(out, addr, sizeof(addr), 1);
    nwb_client_startup_failed(client);
    nwb_client_destroy(client);
    assert_false(answers(addr));
    assert_int_equal(kill_server_of(out), 0);
    nwb_test_rmtree(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launch_server_takes_the_run_and_stops_with_the_program),
        cmocka_unit_test(test_launch_detached_server_outlives_the_program),
        cmocka_unit_test(test_launch_failed_startup_stops_even_a_detached_server),
    };

    return cmocka_run_group_tests_name("integration.launch", tests, NULL, NULL);
}
