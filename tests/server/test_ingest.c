/* SPDX-License-Identifier: MIT */
/*
 * test_ingest.c - POST /v1/log against the real nwb-logserver: text and
 * binary batches land in runs/<program>_<YYYYmmdd-HHMMSS>_<run>/log.txt,
 * a resent seq is written once (also across SIGKILL + restart), SIGTERM
 * exits 0 with every acknowledged line on disk, hostile run identities stay
 * inside --out, malformed batches are refused with a reason.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server_test_util.h"

#define BATCH "application/x-nwb-log-batch"

struct fx {
    char dir[512];
    struct nwb_test_server srv;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("ingest", f->dir, sizeof(f->dir)) != 0 ||
        tu_start(&f->srv, f->dir, 0, NULL) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    if (f->srv.pid > 0) {
        tu_stop(&f->srv, SIGKILL, 5000);
    }
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* The single directory under runs/ whose name starts with @p prefix, or "" */
static void run_dir(const char *out, const char *prefix, char *name, size_t len)
{
    char runs[1024];
    DIR *d;
    struct dirent *e;
    int found = 0;

    name[0] = '\0';
    snprintf(runs, sizeof(runs), "%s/runs", out);
    d = opendir(runs);
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            snprintf(name, len, "%s", e->d_name);
            found++;
        }
    }
    closedir(d);
    assert_int_equal(found, 1);
}

/* "YYYYmmdd-HHMMSS" at @p s */
static int is_compact_time(const char *s)
{
    for (int i = 0; i < 15; i++) {
        if (i == 8 ? s[i] != '-' : (s[i] < '0' || s[i] > '9')) {
            return 0;
        }
    }
    return 1;
}

static void test_text_and_binary_batches_land_in_the_run_layout(void **state)
{
    static const char *const msgs[] = {"hello from the batch", "second record"};
    struct fx *f = *state;
    uint8_t batch[1024];
    size_t blen = tu_batch_build(batch, sizeof(batch), msgs, 2, 0);
    char resp[256] = "x";
    char name[256];
    char *text;

    assert_int_equal(tu_post(f->srv.port, "text/plain", "game", "run1", 1, "plain one\nplain two\n",
                             20, resp, sizeof(resp)),
                     200);
    assert_string_equal(resp, ""); /* empty body */
    assert_int_equal(
        tu_post(f->srv.port, BATCH, "game", "run1", 2, batch, blen, resp, sizeof(resp)), 200);
    assert_string_equal(resp, "");
    run_dir(f->dir, "game_", name, sizeof(name));
    assert_int_equal(strlen(name), strlen("game_") + 15 + strlen("_run1"));
    assert_true(is_compact_time(name + 5));
    assert_string_equal(name + 20, "_run1");
    text = tu_run_log(f->dir, "game", "run1");
    assert_non_null(text);
    assert_int_equal(tu_count(text, "\n"), 4);
    assert_non_null(strstr(text, "Z INFO    0 game plain one\n"));
    assert_non_null(strstr(text, "Z INFO    0 game plain two\n"));
    assert_non_null(strstr(text, "2025-12-01T08:00:00.123456789Z WARNING 4242 game game.c:10: "
                                 "hello from the batch\n"));
    assert_non_null(strstr(text, "2025-12-01T08:00:00.123456790Z WARNING 4242 game game.c:11: "
                                 "second record\n"));
    assert_true(strstr(text, "plain two") < strstr(text, "hello from the batch"));
    free(text);
    assert_int_equal(tu_metric(f->srv.port, "nwb_records_total"), 4);
    assert_int_equal(tu_metric(f->srv.port, "nwb_batches_total"), 2);
    assert_int_equal(tu_metric(f->srv.port, "nwb_bytes_total"), (long long)(20 + blen));
}

static void test_resent_seq_is_written_once(void **state)
{
    struct fx *f = *state;
    char *text;

    for (int i = 0; i < 3; i++) {
        assert_int_equal(
            tu_post(f->srv.port, "text/plain", "game", "dup", 7, "only once\n", 10, NULL, 0), 200);
    }
    /* An older seq is a duplicate too; a newer one is written. */
    assert_int_equal(tu_post(f->srv.port, "text/plain", "game", "dup", 3, "older\n", 6, NULL, 0),
                     200);
    assert_int_equal(tu_post(f->srv.port, "text/plain", "game", "dup", 8, "newer\n", 6, NULL, 0),
                     200);
    /* Without X-NWB-Seq there is no suppression. */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(
            tu_post(f->srv.port, "text/plain", "game", "dup", -1, "unnumbered\n", 11, NULL, 0),
            200);
    }
    text = tu_run_log(f->dir, "game", "dup");
    assert_int_equal(tu_count(text, "only once"), 1);
    assert_int_equal(tu_count(text, "older"), 0);
    assert_int_equal(tu_count(text, "newer"), 1);
    assert_int_equal(tu_count(text, "unnumbered"), 2);
    free(text);
    assert_int_equal(tu_metric(f->srv.port, "nwb_duplicate_batches_total"), 3);
}

/* A new port each time: the port a stopped server released could be taken meanwhile. */
static void restart(struct fx *f, int sig)
{
    const int status = tu_stop(&f->srv, sig, 10000);

    if (sig == SIGKILL) {
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    } else {
        assert_int_equal(status, 0);
    }
    assert_int_equal(tu_start(&f->srv, f->dir, 0, NULL), 0);
}

static void test_duplicates_are_suppressed_across_sigkill_and_restart(void **state)
{
    static const char *const msgs[] = {"batch one line"};
    struct fx *f = *state;
    uint8_t batch[512];
    size_t blen = tu_batch_build(batch, sizeof(batch), msgs, 1, 0);
    char first[256];
    char name[256];
    char *text;

    assert_int_equal(tu_post(f->srv.port, BATCH, "game", "crashy", 41, batch, blen, NULL, 0), 200);
    run_dir(f->dir, "game_", first, sizeof(first));
    restart(f, SIGKILL);
    /* The client did not see the 200 (say) and resends seq 41. */
    assert_int_equal(tu_post(f->srv.port, BATCH, "game", "crashy", 41, batch, blen, NULL, 0), 200);
    assert_int_equal(
        tu_post(f->srv.port, "text/plain", "game", "crashy", 42, "after restart\n", 14, NULL, 0),
        200);
    run_dir(f->dir, "game_", name, sizeof(name));
    assert_string_equal(name, first); /* the same directory, appended to */
    text = tu_run_log(f->dir, "game", "crashy");
    assert_int_equal(tu_count(text, "batch one line"), 1);
    assert_int_equal(tu_count(text, "after restart"), 1);
    free(text);
    assert_int_equal(tu_metric(f->srv.port, "nwb_duplicate_batches_total"), 1);
    /* And once more after a clean stop. */
    restart(f, SIGTERM);
    assert_int_equal(
        tu_post(f->srv.port, "text/plain", "game", "crashy", 42, "after restart\n", 14, NULL, 0),
        200);
    text = tu_run_log(f->dir, "game", "crashy");
    assert_int_equal(tu_count(text, "after restart"), 1);
    free(text);
}

struct sender {
    int port;
    int id;
    atomic_int *stop;
    int acked; /* batches answered 200, seqs 1..acked */
};

/* Keep POSTing numbered lines on one keep-alive connection until the server goes away. */
static void *sender_main(void *arg)
{
    struct sender *s = arg;
    int fd = nwb_test_connect(s->port);

    while (fd >= 0 && !atomic_load(s->stop)) {
        char req[512];
        char body[64];
        int status;
        int blen = snprintf(body, sizeof(body), "sender %d line %d\n", s->id, s->acked + 1);
        int n = snprintf(req, sizeof(req),
                         "POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\n"
                         "X-NWB-Program: game\r\nX-NWB-Run: term%d\r\nX-NWB-Seq: %d\r\n"
                         "Content-Length: %d\r\n\r\n%s",
                         s->id, s->acked + 1, blen, body);

        if (nwb_test_send_all(fd, req, (size_t)n) != 0 ||
            nwb_test_read_response(fd, &status, NULL, 0) < 0 || status != 200) {
            break;
        }
        s->acked++;
    }
    if (fd >= 0) {
        close(fd);
    }
    return NULL;
}

static void test_sigterm_exits_0_with_every_acknowledged_line(void **state)
{
    struct fx *f = *state;
    struct sender senders[4];
    pthread_t threads[4];
    atomic_int stop = 0;
    long long deadline = nwb_test_now_ms() + 10000;
    int total = 0;

    for (int i = 0; i < 4; i++) {
        senders[i] = (struct sender){f->srv.port, i, &stop, 0};
        assert_int_equal(pthread_create(&threads[i], NULL, sender_main, &senders[i]), 0);
    }
    /* Stop while requests are in flight. */
    while (nwb_test_now_ms() < deadline && tu_metric(f->srv.port, "nwb_batches_total") < 400) {
        poll(NULL, 0, 5);
    }
    assert_int_equal(tu_stop(&f->srv, SIGTERM, 10000), 0);
    atomic_store(&stop, 1);
    for (int i = 0; i < 4; i++) {
        char run[16];
        char *text;

        pthread_join(threads[i], NULL);
        snprintf(run, sizeof(run), "term%d", i);
        text = tu_run_log(f->dir, "game", run);
        assert_non_null(text);
        for (int k = 1; k <= senders[i].acked; k++) {
            char line[64];

            snprintf(line, sizeof(line), " game sender %d line %d\n", i, k);
            if (tu_count(text, line) != 1) {
                fail_msg("acknowledged line '%s' found %d times", line, tu_count(text, line));
            }
        }
        total += senders[i].acked;
        free(text);
    }
    assert_true(total >= 400);
}

static void test_hostile_names_stay_inside_out(void **state)
{
    static const char *const names[] = {
        "../../../../tmp/escape", "..", ".", "/etc/passwd", "a/b\\c", ".hidden", "name with spaces",
        "\xc3\xa9t\xc3\xa9",
    };
    struct fx *f = *state;
    char runs[1024];
    char big[300];
    DIR *d;
    struct dirent *e;
    int dirs = 0;

    for (size_t i = 0; i < NWB_ARRAY_SIZE(names); i++) {
        assert_int_equal(
            tu_post(f->srv.port, "text/plain", names[i], names[i], -1, "x\n", 2, NULL, 0), 200);
    }
    memset(big, 'L', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(tu_post(f->srv.port, "text/plain", big, big, -1, "x\n", 2, NULL, 0), 200);
    /* Everything went under OUT/runs, as plain directories with safe names. */
    snprintf(runs, sizeof(runs), "%s/runs", f->dir);
    d = opendir(runs);
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        assert_true(e->d_name[0] != '.');
        assert_int_equal(strspn(e->d_name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789_.-"),
                         strlen(e->d_name));
        assert_true(strlen(e->d_name) <= 64 + 1 + 15 + 1 + 64);
        dirs++;
    }
    closedir(d);
    assert_int_equal(dirs, (int)NWB_ARRAY_SIZE(names) + 1);
    /* Nothing appeared beside OUT or where the names pointed. */
    {
        char esc[700];

        snprintf(esc, sizeof(esc), "%s/../escape", f->dir);
        assert_int_equal(access(esc, F_OK), -1);
        assert_int_equal(access("/tmp/escape", F_OK), -1);
    }
}

static void test_missing_identity_headers_get_defaults(void **state)
{
    struct fx *f = *state;
    char name[256];
    char *text;

    assert_int_equal(tu_post(f->srv.port, "text/plain", NULL, NULL, -1, "anonymous\n", 10, NULL, 0),
                     200);
    run_dir(f->dir, "unknown_", name, sizeof(name));
    assert_non_null(strstr(name + strlen("unknown_") + 15, "_anon-"));
    assert_int_equal(strlen(name), strlen("unknown_") + 15 + strlen("_anon-") + 16);
    text = tu_run_log(f->dir, "unknown", name + strlen("unknown_") + 16);
    assert_non_null(strstr(text, " unknown anonymous\n"));
    free(text);
}

static void test_malformed_batch_is_400_with_reason_and_nothing_is_written(void **state)
{
    static const char *const msgs[] = {"one", "two"};
    struct fx *f = *state;
    uint8_t batch[512];
    size_t blen = tu_batch_build(batch, sizeof(batch), msgs, 2, 0);
    char resp[512];
    char runs[1024];
    DIR *d;
    struct dirent *e;
    int entries = 0;

    batch[0] = 'X';
    assert_int_equal(tu_post(f->srv.port, BATCH, "game", "bad", 1, batch, blen, resp, sizeof(resp)),
                     400);
    assert_non_null(strstr(resp, "bad batch magic"));
    assert_non_null(strstr(resp, "byte offset 0"));
    batch[0] = 'N';
    batch[NWB_LOG_BATCH_HEADER_SIZE + 32 + 6 + 3 + 4] = 7; /* second record: level 7 */
    assert_int_equal(tu_post(f->srv.port, BATCH, "game", "bad", 1, batch, blen, resp, sizeof(resp)),
                     400);
    assert_non_null(strstr(resp, "unknown log level"));
    assert_non_null(strstr(resp, "byte offset 57"));
    assert_int_equal(tu_post(f->srv.port, BATCH, "game", "bad", 1, batch, 10, resp, sizeof(resp)),
                     400);
    snprintf(runs, sizeof(runs), "%s/runs", f->dir);
    d = opendir(runs);
    while ((e = readdir(d)) != NULL) {
        entries += e->d_name[0] != '.';
    }
    closedir(d);
    assert_int_equal(entries, 0); /* not even a run directory */
    assert_int_equal(tu_metric(f->srv.port, "nwb_records_total"), 0);
    assert_int_equal(tu_metric(f->srv.port, "nwb_requests_total{code=\"400\"}"), 3);
}

static void test_client_reported_drops_are_counted(void **state)
{
    static const char *const msgs[] = {"17 records dropped here"};
    struct fx *f = *state;
    uint8_t batch[512];
    size_t blen = tu_batch_build(batch, sizeof(batch), msgs, 1, NWB_LOG_RECORD_DROPNOTE);

    assert_int_equal(tu_post(f->srv.port, BATCH, "game", "drops", 1, batch, blen, NULL, 0), 200);
    assert_int_equal(tu_metric(f->srv.port, "nwb_drops_total"), 1);
    assert_int_equal(tu_metric(f->srv.port, "nwb_crashes{category=\"packages\"}"), 0);
    assert_int_equal(tu_metric(f->srv.port, "nwb_crashes{category=\"raw\"}"), 0);
    assert_int_equal(tu_metric(f->srv.port, "nwb_crashes{category=\"invalid\"}"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_text_and_binary_batches_land_in_the_run_layout, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_resent_seq_is_written_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicates_are_suppressed_across_sigkill_and_restart,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_exits_0_with_every_acknowledged_line, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_hostile_names_stay_inside_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_identity_headers_get_defaults, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_malformed_batch_is_400_with_reason_and_nothing_is_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_reported_drops_are_counted, setup, teardown),
    };

    return cmocka_run_group_tests_name("server.ingest", tests, NULL, NULL);
}
