/* SPDX-License-Identifier: MIT */
/*
 * test_thread_names.c - thread names end to end: a program with two named
 * threads ("render" with pthread_setname_np, "audio-mixer" with prctl, each
 * before its first log call) logs through the real client to the real nwb-logserver, and the
 * run's log.txt shows `tid[name]` for both; a thread that renames itself
 * after it has logged shows the new name once the client's worker read it
 * again (at most once per second).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itest_common.h"
#include "nwb/client.h"
#include "nwb/log.h"
#include "test_support.h"

#define LINES 50

struct named_thread {
    pthread_t thread;
    const char *name; /* set by the thread itself before it logs */
    int use_prctl;
    long tid;
};

static void *produce(void *arg)
{
    struct named_thread *t = arg;

    t->tid = (long)syscall(SYS_gettid);
    if (t->use_prctl) {
        prctl(PR_SET_NAME, t->name, 0, 0, 0);
    } else {
        pthread_setname_np(pthread_self(), t->name);
    }
    for (int n = 0; n < LINES; n++) {
        NWB_LOGGER_ESSENTIAL_INFO("named line %d", n);
    }
    return NULL;
}

/* Starts a client for program "itest" on @p port; writes its run id into @p run. */
static nwb_client_t *client_start(int port, const char *out, char *run)
{
    char addr[64], err[256];
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *client = NULL;

    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    cfg.program = "itest";
    cfg.mode = NWB_CLIENT_MODE_SERVER;
    cfg.server = addr;
    cfg.log_dir = out;
    cfg.full_policy = NWB_CLIENT_FULL_BLOCK;
    cfg.block_timeout_us = 10u * 1000u * 1000u;
    assert_int_equal(nwb_client_create(&cfg, &client, err, sizeof(err)), 0);
    snprintf(run, 17, "%s", nwb_client_run_id(client));
    return client;
}

static void test_log_txt_shows_tid_and_name_of_two_named_threads(void **state)
{
    struct nwb_test_server srv;
    struct named_thread render = {.name = "render"},
                        audio = {.name = "audio-mixer", .use_prctl = 1};
    char out[512], logpath[1024], want[128], run[17];
    nwb_client_t *client;
    char *text;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("thread_names", out, sizeof(out)), 0);
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, NULL), 0);
    client = client_start(srv.port, out, run);
    assert_int_equal(pthread_create(&render.thread, NULL, produce, &render), 0);
    assert_int_equal(pthread_create(&audio.thread, NULL, produce, &audio), 0);
    pthread_join(render.thread, NULL);
    pthread_join(audio.thread, NULL);
    assert_int_equal(nwb_client_flush(client, 30000), 0);
    nwb_client_destroy(client);

    assert_int_equal(nwb_test_find_run_log(out, "itest", run, logpath, sizeof(logpath)), 0);
    text = nwb_test_read_file(logpath, NULL);
    assert_non_null(text);
    snprintf(want, sizeof(want), " INFO    %ld[audio-mixer] itest test_thread_names.c:", audio.tid);
    assert_non_null(strstr(text, want));
    snprintf(want, sizeof(want), " INFO    %ld[render] itest test_thread_names.c:", render.tid);
    assert_non_null(strstr(text, want));
    /* every line of both threads carries the name, also after the first of its batch */
    snprintf(want, sizeof(want), " %ld ", render.tid);
    assert_null(strstr(text, want));
    free(text);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
    nwb_test_rmtree(out);
}

static void test_a_renamed_thread_shows_its_new_name_after_the_refresh(void **state)
{
    struct nwb_test_server srv;
    char out[512], logpath[1024], want[128], run[17];
    nwb_client_t *client;
    long long until;
    int found = 0;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("thread_rename", out, sizeof(out)), 0);
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, NULL), 0);
    client = client_start(srv.port, out, run);
    prctl(PR_SET_NAME, "before", 0, 0, 0);
    NWB_LOGGER_ESSENTIAL_INFO("first line under the first name");
    assert_int_equal(nwb_client_flush(client, 30000), 0);
    assert_int_equal(nwb_test_find_run_log(out, "itest", run, logpath, sizeof(logpath)), 0);
    snprintf(want, sizeof(want), " %ld[before] itest ", (long)syscall(SYS_gettid));
    assert_int_equal(nwb_test_wait_file_contains(logpath, want, 10000), 1);
    prctl(PR_SET_NAME, "after", 0, 0, 0);
    snprintf(want, sizeof(want), " %ld[after] itest ", (long)syscall(SYS_gettid));
    /* Each flush is a round trip to the server: the wait is on its answers, bounded. */
    until = nwb_test_now_ms() + 10000;
    while (!found && nwb_test_now_ms() < until) {
        NWB_LOGGER_ESSENTIAL_INFO("waiting for the new name");
        assert_int_equal(nwb_client_flush(client, 30000), 0);
        found = nwb_test_wait_file_contains(logpath, want, 0);
    }
    assert_true(found);
    nwb_client_destroy(client);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
    nwb_test_rmtree(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_txt_shows_tid_and_name_of_two_named_threads),
        cmocka_unit_test(test_a_renamed_thread_shows_its_new_name_after_the_refresh),
    };

    return cmocka_run_group_tests_name("integration.thread_names", tests, NULL, NULL);
}
