/* SPDX-License-Identifier: MIT */
/*
 * test_fault_spool.c - two client processes of one program log and exit
 * while no server answers: what they spooled (<log_dir>/spool,
 * docs/spool.md) is delivered by the next runs of that program once the
 * server is up (a short run 2 that exits early, then run 3), each batch into
 * its own run's directory (runs/<program>_*_<that run>/log.txt: sent with
 * that run's id and seqs): every line of all four runs exactly once, the
 * spool emptied.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itest_common.h"

#define FIRST_LINES  20000
#define SECOND_LINES 3000

static void test_fault_spool_exit_while_down_is_delivered_by_next_run(void **state)
{
    static const char *const runs1[2] = {"spool-run-1a", "spool-run-1b"};
    static const char *const runs2[2] = {"spool-run-2", "spool-run-3"};
    struct itest_child first, second;
    struct nwb_test_server srv;
    char out[512], cdir[512], spool[600];
    int port;
    /* Held to the end: refused while down, then taken over by the server (SO_REUSEADDR). */
    const int dead = nwb_test_reserve_dead_port(&port);
    long long t0;
    pid_t pid;
    int left;

    (void)state;
    assert_true(dead >= 0);
    assert_int_equal(nwb_test_tmpdir("fspool", out, sizeof(out)), 0);
    assert_int_equal(nwb_test_tmpdir("fspoolc", cdir, sizeof(cdir)), 0);
    snprintf(spool, sizeof(spool), "%s/spool", cdir);

    /* Runs 1a and 1b: nobody listens on the port; destroy spools what was not acknowledged. */
    for (int i = 0; i < 2; i++) {
        first = (struct itest_child){.program = "spooler",
                                     .run_id = runs1[i],
                                     .log_dir = cdir,
                                     .port = port,
                                     .count = FIRST_LINES,
                                     .batch_bytes = 8u * 1024u};
        t0 = nwb_test_now_ms();
        pid = itest_child_spawn(&first);
        assert_true(pid > 0);
        assert_int_equal(itest_child_wait(pid, 60000), 0);
        fprintf(stderr, "fault_spool: %s exited after %lld ms; %d spool files\n", runs1[i],
                nwb_test_now_ms() - t0, itest_spool_files(spool));
        assert_true(itest_spool_files(spool) >= i + 1);
    }

    /* Run 2 of the same program, server up: it delivers its own 300 lines and exits at once,
     * likely before runs 1a and 1b are through (what it did not deliver stays spooled). Run 3
     * delivers the rest beside its own lines and stays until the spool holds no segment (at
     * most 30 s). */
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, port, NULL), 0);
    for (int i = 0; i < 2; i++) {
        second = (struct itest_child){.program = "spooler",
                                      .run_id = runs2[i],
                                      .log_dir = cdir,
                                      .port = port,
                                      .count = i == 0 ? 300 : SECOND_LINES,
                                      .batch_bytes = 8u * 1024u,
                                      .flush_ms = 30000u,
                                      .spool_ms = i == 0 ? 0u : 30000u};
        pid = itest_child_spawn(&second);
        assert_true(pid > 0);
        assert_int_equal(itest_child_wait(pid, 60000), 0);
        left = itest_spool_files(spool);
        fprintf(stderr, "fault_spool: %d spool files left after %s\n", left, runs2[i]);
    }
    assert_int_equal(itest_check_log(out, "spooler", "spool-run-1a", 1, FIRST_LINES), 0);
    assert_int_equal(itest_check_log(out, "spooler", "spool-run-1b", 1, FIRST_LINES), 0);
    assert_int_equal(itest_check_log(out, "spooler", "spool-run-2", 1, 300), 0);
    assert_int_equal(itest_check_log(out, "spooler", "spool-run-3", 1, SECOND_LINES), 0);
    assert_int_equal(left, 0);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
    close(dead);
    nwb_test_rmtree(out);
    nwb_test_rmtree(cdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_spool_exit_while_down_is_delivered_by_next_run),
    };

    return cmocka_run_group_tests_name("integration.fault_spool", tests, NULL, NULL);
}
