/* SPDX-License-Identifier: MIT */
/*
 * test_launcher.c - the start-up probe (probe.c) and the server launcher
 * (launcher.c): the real nwb-logserver when it is ready, and fake servers
 * (shell scripts) for the edges: no listening line, early exit, inherited
 * descriptors, $PATH lookup, SIGTERM ignored, detach.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nwb/error.h"
#include "nwb/log_line.h"
#include "net_int.h"
#include "test_http_out_responder.h"
#include "test_support.h"

struct fx {
    char dir[512];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("launch", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* Write an executable shell script @p name with @p body into the fixture's directory. */
static void fake(struct fx *f, const char *name, const char *body, char *path, size_t cap)
{
    FILE *fp;

    snprintf(path, cap, "%s/%s", f->dir, name);
    fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp, "#!/bin/sh\n%s\n", body);
    assert_int_equal(fclose(fp), 0);
    assert_int_equal(chmod(path, 0755), 0);
}

static int alive(int pid)
{
    return kill(pid, 0) == 0;
}

/* ---- probe ---- */

static void test_probe_true_for_listener_false_for_closed_port(void **state)
{
    struct responder r;
    char port[16];
    long long t0;
    int dead, dead_port;

    (void)state;
    assert_int_equal(responder_start(&r, 0), 0);
    snprintf(port, sizeof(port), "%d", r.port);
    assert_int_equal(nwb__server_probe("127.0.0.1", port, 1000), 1);
    /* A name: every address is tried within the one deadline (::1 refuses, 127.0.0.1 answers).
     * Only where the name resolves at all (a bare chroot may have no /etc/hosts). */
    {
        struct addrinfo hints, *res = NULL;

        memset(&hints, 0, sizeof(hints));
        hints.ai_socktype = SOCK_STREAM;
        if (getaddrinfo("localhost", port, &hints, &res) == 0) {
            freeaddrinfo(res);
            assert_int_equal(nwb__server_probe("localhost", port, 1000), 1);
        }
    }
    responder_stop(&r);
    dead = nwb_test_reserve_dead_port(&dead_port);
    assert_true(dead >= 0);
    snprintf(port, sizeof(port), "%d", dead_port);
    t0 = nwb_test_now_ms();
    assert_int_equal(nwb__server_probe("127.0.0.1", port, 1000), 0);
    /* Refused is immediate: far below the timeout. */
    assert_true(nwb_test_now_ms() - t0 < 900);
    assert_int_equal(nwb__server_probe("127.0.0.1", "notaport", 100), 0);
    assert_int_equal(nwb__server_probe("", port, 100), 0);
    assert_int_equal(nwb__server_probe(NULL, port, 100), 0);
    close(dead);
}

/* ---- launcher ---- */

static void test_launcher_starts_real_server(void **state)
{
    struct fx *f = *state;
    struct nwb__launched l = {0, 0};
    char addr[80], err[512], out[600];
    const char *colon;

    snprintf(out, sizeof(out), "%s/out", f->dir);
    /* The server is built beside this test and prints its listening line: a launch that
     * fails is a failure, never a skip. */
    if (nwb__server_launch(NWB_TEST_SERVER_EXE, out, 5000, &l, addr, sizeof(addr), err,
                           sizeof(err)) != 0) {
        fail_msg("%s did not start: %s", NWB_TEST_SERVER_EXE, err);
    }
    assert_true(l.pid > 0);
    assert_int_equal(getpgid(l.pid), l.pid); /* its own process group */
    assert_non_null(strstr(addr, "127.0.0.1:"));
    colon = strrchr(addr, ':');
    assert_non_null(colon);
    assert_int_equal(nwb__server_probe("127.0.0.1", colon + 1, 1000), 1);
    {
        const int pid = l.pid;

        nwb__server_stop(&l);
        assert_int_equal(l.pid, 0);
        assert_false(alive(pid));
    }
}

static void test_launcher_fake_reports_address_and_stops(void **state)
{
    struct fx *f = *state;
    struct nwb__launched l = {0, 0};
    char path[700], addr[80], err[256];
    long long t0;
    int pid;

    fake(f, "fake-ok",
         "echo 'starting up'\necho 'nwb-logserver: listening on "
         "http://127.0.0.1:4321 (out /x)'\nexec /bin/sleep 600",
         path, sizeof(path));
    assert_int_equal(
        nwb__server_launch(path, f->dir, 5000, &l, addr, sizeof(addr), err, sizeof(err)), 0);
    assert_string_equal(addr, "127.0.0.1:4321");
    assert_true(l.pid > 0);
    pid = l.pid;
    assert_int_equal(getpgid(pid), pid);
    t0 = nwb_test_now_ms();
    nwb__server_stop(&l);
    assert_true(nwb_test_now_ms() - t0 < 3000); /* SIGTERM was enough */
    assert_int_equal(l.pid, 0);
    assert_false(alive(pid));
    nwb__server_stop(&l); /* a second stop is a no-op */
}

static void test_launcher_ipv6_address_is_kept_whole(void **state)
{
    struct fx *f = *state;
    struct nwb__launched l = {0, 0};
    char path[700], addr[80], err[256];

    fake(f, "fake-v6", "echo 'listening on http://[::1]:7777/'\nexec /bin/sleep 600", path,
         sizeof(path));
    assert_int_equal(nwb__server_launch(path, NULL, 5000, &l, addr, sizeof(addr), err, sizeof(err)),
                     0);
    assert_string_equal(addr, "[::1]:7777");
    nwb__server_stop(&l);
}

static void test_launcher_no_listening_line_times_out(void **state)
{
    struct fx *f = *state;
    struct nwb__launched l = {0, 0};
    char path[700], addr[80], err[256];
    const long long t0 = nwb_test_now_ms();

    fake(f, "fake-mute", "echo 'thinking...'\nexec /bin/sleep 600", path, sizeof(path));
    assert_int_equal(
        nwb__server_launch(path, f->dir, 300, &l, addr, sizeof(addr), err, sizeof(err)),
        NWB_ETIMEOUT);
    assert_true(nwb_test_now_ms() - t0 >= 290);
    assert_true(nwb_test_now_ms() - t0 < 3000);
    assert_int_equal(l.pid, 0);
    assert_string_equal(addr, "");
    assert_non_null(strstr(err, "no listening line"));
    /* The child was killed and reaped: no child of ours is left. */
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

static void test_launcher_child_exit_is_reported_at_once(void **state)
{
    struct fx *f = *state;
    struct nwb__launched l = {0, 0};
    char path[700], addr[80], err[256];
    const long long t0 = nwb_test_now_ms();

    fake(f, "fake-exit", "echo 'bad option' >&2\nexit 3", path, sizeof(path));
    assert_int_equal(
        nwb__server_launch(path, f->dir, 5000, &l, addr, sizeof(addr), err, sizeof(err)),
        NWB_ECLOSED);
    assert_true(nwb_test_now_ms() - t0 < 3000);
    assert_int_equal(l.pid, 0);
    assert_non_null(strstr(err, "before listening"));
}

static void test_launcher_bad_listening_line_is_refused(void **state)
{
    struct fx *f = *state;
    struct nwb__launched l = {0, 0};
    char path[700], addr[80], err[256];

    fake(f, "fake-badline", "echo 'listening on http://nowhere'\nexec /bin/sleep 600", path,
         sizeof(path));
    assert_int_equal(
        nwb__server_launch(path, f->dir, 5000, &l, addr, sizeof(addr), err, sizeof(err)),
        NWB_EPROTO);
    assert_int_equal(l.pid, 0);
}

static void test_launcher_child_inherits_no_descriptors(void **state)
{
    struct fx *f = *state;
    struct nwb__launched l = {0, 0};
    char path[700], addr[80], err[256];
    const int leak = fcntl(STDERR_FILENO, F_DUPFD, 200); /* no O_CLOEXEC on purpose */

    assert_true(leak >= 200);
    snprintf(err, sizeof(err),
             "if [ -e /proc/$$/fd/%d ]; then p=1; else p=2; fi\n"
             "echo \"listening on http://127.0.0.1:$p\"\nexec /bin/sleep 600",
             leak);
    fake(f, "fake-fds", err, path, sizeof(path));
    assert_int_equal(
        nwb__server_launch(path, f->dir, 5000, &l, addr, sizeof(addr), err, sizeof(err)), 0);
    close(leak);
    assert_string_equal(addr, "127.0.0.1:2");
    nwb__server_stop(&l);
}

static void test_launcher_finds_server_on_path(void **state)
{
    struct fx *f = *state;
    struct nwb__launched l = {0, 0};
    char path[700], addr[80], err[256];
    char *saved = getenv("PATH") != NULL ? strdup(getenv("PATH")) : NULL;

    fake(f, "nwb-logserver",
         "echo \"listening on http://127.0.0.1:5555 args $*\"\n"
         "exec /bin/sleep 600",
         path, sizeof(path));
    setenv("PATH", f->dir, 1);
    /* No exe given, none next to the test binary: $PATH decides. */
    assert_int_equal(
        nwb__server_launch(NULL, "/tmp/some-out", 5000, &l, addr, sizeof(addr), err, sizeof(err)),
        0);
    assert_string_equal(addr, "127.0.0.1:5555");
    nwb__server_stop(&l);
    /* A bare name is looked up on $PATH too. */
    assert_int_equal(
        nwb__server_launch("nwb-logserver", NULL, 5000, &l, addr, sizeof(addr), err, sizeof(err)),
        0);
    nwb__server_stop(&l);
    setenv("PATH", "/nonexistent", 1);
    assert_true(nwb__server_launch(NULL, NULL, 5000, &l, addr, sizeof(addr), err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "cannot find"));
    if (saved != NULL) {
        setenv("PATH", saved, 1);
        free(saved);
    }
}

static void test_launcher_missing_exe_is_a_clear_error(void **state)
{
    struct nwb__launched l = {0, 0};
    char addr[80], err[256];

    (void)state;
    assert_int_equal(nwb__server_launch("/nonexistent/nwb-logserver", NULL, 1000, &l, addr,
                                        sizeof(addr), err, sizeof(err)),
                     -ENOENT);
    assert_int_equal(l.pid, 0);
    assert_non_null(strstr(err, "/nonexistent/nwb-logserver"));
}

static void test_launcher_stop_escalates_to_sigkill(void **state)
{
    struct fx *f = *state;
    struct nwb__launched l = {0, 0};
    char path[700], addr[80], err[256];
    long long t0, took;
    int pid;

    /* SIGTERM ignored (and inherited as ignored by sleep). */
    fake(f, "fake-stubborn",
         "trap '' TERM\necho 'listening on http://127.0.0.1:1'\n"
         "exec /bin/sleep 600",
         path, sizeof(path));
    assert_int_equal(nwb__server_launch(path, NULL, 5000, &l, addr, sizeof(addr), err, sizeof(err)),
                     0);
    pid = l.pid;
    t0 = nwb_test_now_ms();
    nwb__server_stop(&l);
    took = nwb_test_now_ms() - t0;
    assert_false(alive(pid));
    assert_true(took >= 4900);
    assert_true(took < 8000);
}

static void test_launcher_detached_server_is_left_running(void **state)
{
    struct fx *f = *state;
    struct nwb__launched l = {0, 1};
    char path[700], addr[80], err[256];
    int pid;
    int status;

    fake(f, "fake-detach", "echo 'listening on http://127.0.0.1:2'\nexec /bin/sleep 600", path,
         sizeof(path));
    assert_int_equal(nwb__server_launch(path, NULL, 5000, &l, addr, sizeof(addr), err, sizeof(err)),
                     0);
    pid = l.pid;
    nwb__server_stop(&l);
    assert_int_equal(l.pid, 0);
    assert_true(alive(pid));
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_true_for_listener_false_for_closed_port),
        cmocka_unit_test_setup_teardown(test_launcher_starts_real_server, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launcher_fake_reports_address_and_stops, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_launcher_ipv6_address_is_kept_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launcher_no_listening_line_times_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launcher_child_exit_is_reported_at_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_launcher_bad_listening_line_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_launcher_child_inherits_no_descriptors, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_launcher_finds_server_on_path, setup, teardown),
        cmocka_unit_test(test_launcher_missing_exe_is_a_clear_error),
        cmocka_unit_test_setup_teardown(test_launcher_stop_escalates_to_sigkill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launcher_detached_server_is_left_running, setup,
                                        teardown),
    };

    return cmocka_run_group_tests_name("client.launcher", tests, NULL, NULL);
}
