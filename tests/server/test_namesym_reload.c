/* SPDX-License-Identifier: MIT */
/*
 * test_namesym_reload.c - SIGHUP reloads the .namesym sidecars of the real
 * nwb-logserver while two clients stream batches at it: every line lands
 * once and in order, each batch is decoded wholly with the old table or
 * wholly with the new, the switch happens once per run (old, then new),
 * batches answered before the signal used the old table and batches sent
 * after the reload was reported use the new one; /metrics counts it. A
 * broken sidecar at reload time is skipped and the server goes on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/deadline.h"

#include "namesym_test_util.h"
#include "server_test_util.h"

#define BATCH_LINES 20
#define SENDERS     2
#define MAX_BATCHES 5000 /* a bound on the stream, far above what the test needs */

struct sender {
    pthread_t thread;
    int port;
    int id;
    const char *tok_a, *tok_b;
    atomic_int next_seq; /* the seq about to be sent (batches below it were sent) */
    atomic_int acked;    /* the highest seq answered 200 */
    atomic_int stop;
    int error; /* 0, or what went wrong (checked on the main thread) */
};

struct fx {
    char dir[512];
    char syms[600];
    char sidecar[700];
    struct nwb_test_server srv;
    char a[NWB_NAME_TOKEN_SIZE], b[NWB_NAME_TOKEN_SIZE];
    struct sender s[SENDERS];
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static struct fx *g_fx; /* for the senders' progress signal */

static int setup(void **state)
{
    static const char *const v1[] = {"alpha", NULL};
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("nsreload", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->syms, sizeof(f->syms), "%s/syms", f->dir);
    snprintf(f->sidecar, sizeof(f->sidecar), "%s/game.namesym", f->syms);
    if (mkdir(f->syms, 0755) != 0 || nsu_sidecar(f->sidecar, v1) != 0) {
        free(f);
        return -1;
    }
    nsu_token("alpha", f->a);
    nsu_token("beta", f->b);
    pthread_mutex_init(&f->mu, NULL);
    assert_int_equal(nwb_cond_init_monotonic(&f->cv), 0);
    {
        const char *const extra[] = {"--namesym-dir", f->syms, NULL};

        if (tu_start(&f->srv, f->dir, 0, extra) != 0) {
            free(f);
            return -1;
        }
    }
    g_fx = f;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    tu_stop(&f->srv, SIGTERM, 10000);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* One batch of run s<id>: lines "s<id> b<seq> l<j> <A> <B>". */
static size_t build(const struct sender *s, int seq, uint8_t *buf, size_t cap)
{
    char m[BATCH_LINES][96];
    const char *msgs[BATCH_LINES];

    for (int j = 0; j < BATCH_LINES; j++) {
        snprintf(m[j], sizeof(m[j]), "s%d b%05d l%02d %s %s", s->id, seq, j, s->tok_a, s->tok_b);
        msgs[j] = m[j];
    }
    return tu_batch_build(buf, cap, msgs, BATCH_LINES, 0);
}

static void progress(void)
{
    pthread_mutex_lock(&g_fx->mu);
    pthread_cond_broadcast(&g_fx->cv);
    pthread_mutex_unlock(&g_fx->mu);
}

/* Streams batches seq 1, 2, ... on one keep-alive connection until told to stop. */
static void *sender_main(void *arg)
{
    struct sender *s = arg;
    uint8_t batch[16384];
    char head[512], run[16];
    int fd = nwb_test_connect(s->port);

    snprintf(run, sizeof(run), "s%d", s->id);
    if (fd < 0) {
        s->error = 1;
        progress();
        return NULL;
    }
    for (int seq = 1; seq <= MAX_BATCHES && !atomic_load(&s->stop); seq++) {
        const size_t len = build(s, seq, batch, sizeof(batch));
        int status = 0;
        const int n = snprintf(head, sizeof(head),
                               "POST /v1/log HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n"
                               "X-NWB-Program: game\r\nX-NWB-Run: %s\r\nX-NWB-Seq: %d\r\n"
                               "Content-Length: %zu\r\n\r\n",
                               NWB_LOG_BATCH_CONTENT_TYPE, run, seq, len);

        atomic_store(&s->next_seq, seq);
        if (len == 0 || nwb_test_send_all(fd, head, (size_t)n) != 0 ||
            nwb_test_send_all(fd, batch, len) != 0 ||
            nwb_test_read_response(fd, &status, NULL, 0) < 0 || status != 200) {
            s->error = 2;
            break;
        }
        atomic_store(&s->acked, seq);
        progress();
    }
    atomic_store(&s->next_seq, MAX_BATCHES + 1);
    close(fd);
    progress();
    return NULL;
}

/* Wait until every sender answered at least @p min batches (or failed), 60 s at most. */
static void wait_acked(struct fx *f, const int *min)
{
    const long long deadline = nwb_test_now_ms() + 60000;

    pthread_mutex_lock(&f->mu);
    for (;;) {
        int done = 1;

        for (int i = 0; i < SENDERS; i++) {
            assert_int_equal(f->s[i].error, 0);
            if (atomic_load(&f->s[i].acked) < min[i]) {
                done = 0;
            }
        }
        if (done) {
            break;
        }
        if (nwb_test_now_ms() > deadline) {
            pthread_mutex_unlock(&f->mu);
            fail_msg("the senders did not make progress");
        }
        {
            const nwb_deadline_t tick = nwb_deadline_in_ms(100);

            nwb_cond_wait_until(&f->cv, &f->mu, &tick);
        }
    }
    pthread_mutex_unlock(&f->mu);
}

/* Check one run's log; returns the first batch decoded with the new table. */
static int check_run(struct fx *f, int id, int batches, int acked_before, int sent_after)
{
    char run[16], old_tail[128], new_tail[128], key[64];
    char *log;
    const char *p;
    int first_new = 0;

    snprintf(run, sizeof(run), "s%d", id);
    snprintf(old_tail, sizeof(old_tail), " alpha %s\n", f->b);
    snprintf(new_tail, sizeof(new_tail), " alpha beta\n");
    log = tu_run_log(f->dir, "game", run);
    assert_non_null(log);
    assert_int_equal(tu_count(log, "\n"), batches * BATCH_LINES);
    p = log;
    for (int seq = 1; seq <= batches; seq++) {
        int batch_new = -1;

        for (int j = 0; j < BATCH_LINES; j++) {
            const char *e;
            int is_new = 0;

            snprintf(key, sizeof(key), ": s%d b%05d l%02d", id, seq, j);
            p = strstr(p, key);
            if (p == NULL) {
                fail_msg("run %s: line b%05d l%02d missing or out of order", run, seq, j);
            }
            p += strlen(key);
            e = strchr(p, '\n');
            assert_non_null(e);
            if (strncmp(p, new_tail, strlen(new_tail)) == 0) {
                is_new = 1;
            } else if (strncmp(p, old_tail, strlen(old_tail)) == 0) {
                is_new = 0;
            } else {
                fail_msg("run %s b%05d l%02d: neither decoding: %.*s", run, seq, j, (int)(e - p),
                         p);
            }
            if (batch_new == -1) {
                batch_new = is_new;
            } else if (batch_new != is_new) {
                fail_msg("run %s: batch %d is decoded half with each table", run, seq);
            }
            p = e;
        }
        if (batch_new && first_new == 0) {
            first_new = seq;
        }
        if (!batch_new && first_new != 0) {
            fail_msg("run %s: batch %d uses the old table after batch %d used the new", run, seq,
                     first_new);
        }
    }
    if (first_new == 0) {
        fail_msg("run %s: no batch used the new table", run);
    }
    if (first_new <= acked_before) {
        fail_msg("run %s: batch %d, answered before the SIGHUP, used the new table", run,
                 first_new);
    }
    if (first_new > sent_after) {
        fail_msg("run %s: batch %d, sent after the reload was reported, used the old table", run,
                 sent_after);
    }
    free(log);
    return first_new;
}

static void test_namesym_reload_switches_between_batches_under_load(void **state)
{
    struct fx *f = *state;
    static const char *const v2[] = {"alpha", "beta", NULL};
    struct nsu_stderr *err = calloc(1, sizeof(*err));
    int min[SENDERS], acked_before[SENDERS], sent_after[SENDERS], total[SENDERS];

    assert_non_null(err);
    for (int i = 0; i < SENDERS; i++) {
        f->s[i].port = f->srv.port;
        f->s[i].id = i + 1;
        f->s[i].tok_a = f->a;
        f->s[i].tok_b = f->b;
        atomic_init(&f->s[i].next_seq, 0);
        atomic_init(&f->s[i].acked, 0);
        atomic_init(&f->s[i].stop, 0);
        assert_int_equal(pthread_create(&f->s[i].thread, NULL, sender_main, &f->s[i]), 0);
        min[i] = 30;
    }
    assert_true(nsu_wait_stderr(&f->srv, err, "namesym: 1 names from 1 sidecars", 5000));
    wait_acked(f, min);
    /* The new table: written atomically, then the signal, with both streams running. */
    assert_int_equal(nsu_sidecar(f->sidecar, v2), 0);
    for (int i = 0; i < SENDERS; i++) {
        acked_before[i] = atomic_load(&f->s[i].acked);
    }
    assert_int_equal(kill(f->srv.pid, SIGHUP), 0);
    assert_true(nsu_wait_stderr(&f->srv, err, "namesym: reloaded: 2 names from 1 sidecars", 10000));
    for (int i = 0; i < SENDERS; i++) {
        sent_after[i] = atomic_load(&f->s[i].next_seq) + 1;
        min[i] = sent_after[i] + 30;
    }
    wait_acked(f, min);
    for (int i = 0; i < SENDERS; i++) {
        atomic_store(&f->s[i].stop, 1);
    }
    for (int i = 0; i < SENDERS; i++) {
        assert_int_equal(pthread_join(f->s[i].thread, NULL), 0);
        assert_int_equal(f->s[i].error, 0);
        total[i] = atomic_load(&f->s[i].acked);
    }
    for (int i = 0; i < SENDERS; i++) {
        const int first_new = check_run(f, i + 1, total[i], acked_before[i], sent_after[i]);

        print_message("run s%d: %d batches, answered before SIGHUP %d, first new %d, sent after "
                      "the reload %d\n",
                      i + 1, total[i], acked_before[i], first_new, sent_after[i]);
    }
    assert_int_equal(tu_metric(f->srv.port, "nwb_namesym_reloads_total"), 1);
    assert_int_equal(tu_metric(f->srv.port, "nwb_namesym_names"), 2);
    assert_int_equal(tu_metric(f->srv.port, "nwb_records_total"),
                     (long long)(total[0] + total[1]) * BATCH_LINES);
    free(err);
}

static void test_namesym_reload_skips_a_broken_sidecar_and_keeps_serving(void **state)
{
    struct fx *f = *state;
    struct nsu_stderr *err = calloc(1, sizeof(*err));
    char p[800], line[128];
    char *log;
    FILE *fp;

    assert_non_null(err);
    assert_true(nsu_wait_stderr(&f->srv, err, "namesym: 1 names from 1 sidecars", 5000));
    /* Replaced by garbage, then two signals in a row: the second reload runs after the first. */
    fp = fopen(f->sidecar, "wb");
    assert_non_null(fp);
    assert_int_equal(fputs("garbage, not a sidecar", fp) >= 0, 1);
    assert_int_equal(fclose(fp), 0);
    assert_int_equal(kill(f->srv.pid, SIGHUP), 0);
    assert_int_equal(kill(f->srv.pid, SIGHUP), 0);
    snprintf(p, sizeof(p), "warning: namesym: skipped %s: invalid sidecar", f->sidecar);
    assert_true(nsu_wait_stderr(&f->srv, err, p, 10000));
    assert_true(nsu_wait_stderr(&f->srv, err, "namesym: reloaded: 0 names from 0 sidecars", 10000));
    snprintf(line, sizeof(line), "after %s\n", f->a);
    assert_int_equal(
        tu_post(f->srv.port, "text/plain", "game", "broken", 1, line, strlen(line), NULL, 0), 200);
    log = tu_run_log(f->dir, "game", "broken");
    snprintf(p, sizeof(p), " game after %s\n", f->a);
    assert_non_null(log);
    assert_non_null(strstr(log, p)); /* no names now: the token stays */
    free(log);
    assert_int_equal(tu_metric(f->srv.port, "nwb_namesym_names"), 0);
    assert_true(tu_metric(f->srv.port, "nwb_namesym_reloads_total") >= 1);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_namesym_reload_switches_between_batches_under_load,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_namesym_reload_skips_a_broken_sidecar_and_keeps_serving, setup, teardown),
    };

    return cmocka_run_group_tests_name("server.namesym_reload", tests, NULL, tu_reap);
}
