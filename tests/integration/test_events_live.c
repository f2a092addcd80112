/* SPDX-License-Identifier: MIT */
/*
 * test_events_live.c - GET /v1/events on the real nwb-logserver while nwb-demo plays a live
 * session into it (run the way tests/telemetry/test_demo_e2e.c runs it): the demo run's run,
 * log and telemetry events arrive in order with consecutive ids, every data line strict JSON;
 * its last log event carries log.txt's size and its telemetry events count every delivered
 * upload; a second stream that left mid-run and came back with Last-Event-ID gets exactly the
 * events it missed, once each. Across a restart on the same --out, a client's last id belongs
 * to the old lifetime: it gets a reset, then the run it follows is announced active again.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sse_client.h"
#include "test_support.h"

#ifndef NWB_DEMO_EXE
#define NWB_DEMO_EXE "nwb-demo"
#endif

#define WAIT_MS     60000 /* the demo's whole run, and the events after it */
#define EVENTS_MAX  2048
#define RUN_ID_MAX  256
#define DEMO_FRAMES "120"
#define DEMO_HZ     "120"

struct fx {
    char dir[512];
    struct nwb_test_server srv;
    int srv_up;
    pid_t demo;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    char out[600];

    if (f == NULL || nwb_test_tmpdir("events-live", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    snprintf(out, sizeof(out), "%s/srv", f->dir);
    if (nwb_test_server_start(&f->srv, NULL, out, 0, NULL) != 0) {
        free(f);
        return -1;
    }
    f->srv_up = 1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    if (f->demo > 0) {
        kill(f->demo, SIGKILL);
        waitpid(f->demo, NULL, 0);
    }
    if (f->srv_up) {
        nwb_test_server_stop(&f->srv, SIGKILL, 5000);
    }
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* Start nwb-demo against the server, its output into DIR/demo.out, its record DIR/record.txt. */
static pid_t demo_start(const struct fx *f)
{
    char server_arg[64], record[600], out[600], log_env[600], crash_env[600];
    pid_t pid;

    snprintf(server_arg, sizeof(server_arg), "--logserver=127.0.0.1:%d", f->srv.port);
    snprintf(record, sizeof(record), "%s/record.txt", f->dir);
    snprintf(out, sizeof(out), "%s/demo.out", f->dir);
    snprintf(log_env, sizeof(log_env), "%s/logs", f->dir);
    snprintf(crash_env, sizeof(crash_env), "%s/crash", f->dir);
    pid = fork();
    if (pid == 0) {
        /* Paced (no --fast): a session of about a second, so events come while it plays. */
        const char *argv[] = {NWB_DEMO_EXE, "--frames", DEMO_FRAMES, "--hz", DEMO_HZ,
                              server_arg,   "--record", record,      NULL};
        const int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        setenv("NWB_LOG_DIR", log_env, 1);
        setenv("NWB_CRASH_DIR", crash_env, 1);
        setenv("NWB_CRASH_HELPER", "", 1);
        unsetenv("NWB_LOGSERVER");
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
        }
        execv(argv[0], (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    return pid;
}

/* "uploader submitted N delivered M ..." of the demo's record: M. */
static unsigned long long demo_delivered(const struct fx *f, char *run, size_t cap)
{
    char path[600];
    unsigned long long submitted = 0, delivered = 0;
    char *text, *p;

    snprintf(path, sizeof(path), "%s/record.txt", f->dir);
    text = nwb_test_read_file(path, NULL);
    assert_non_null(text);
    p = strstr(text, "\nuploader submitted ");
    assert_non_null(p);
    assert_int_equal(
        sscanf(p + 1, "uploader submitted %llu delivered %llu", &submitted, &delivered), 2);
    assert_true(submitted >= 2);
    assert_int_equal(delivered, submitted);
    p = strstr(text, "\nrun ");
    assert_non_null(p);
    snprintf(run, cap, "%.*s", (int)strcspn(p + 5, "\n"), p + 5);
    free(text);
    return delivered;
}

struct ev {
    uint64_t id;
    char event[16];
    char data[512];
};

/* The string member @p key of an event's data into @p out ("" when absent). */
static void json_str(const char *data, const char *key, char *out, size_t cap)
{
    if (!nwb_test_sse_data_str(data, key, out, cap)) {
        out[0] = '\0';
    }
}

static unsigned long long json_num(const char *data, const char *key)
{
    uint64_t v = 0;

    assert_true(nwb_test_sse_data_u64(data, key, &v));
    return (unsigned long long)v;
}

/* Take the next event of @p s (waiting up to @p ms) into @p evs; 1, or 0 on timeout. */
static int take(struct nwb_test_sse *s, struct ev *evs, int *n, int ms)
{
    struct nwb_test_sse_block b;
    const int rc = nwb_test_sse_next_event(s, &b, ms);

    assert_true(rc >= 0);
    if (rc == 0) {
        return 0;
    }
    assert_true(b.has_id && b.has_data);
    assert_true(*n < EVENTS_MAX);
    assert_true(b.data_len < sizeof(evs[0].data));
    evs[*n].id = b.id;
    snprintf(evs[*n].event, sizeof(evs[0].event), "%.15s", b.event);
    memcpy(evs[*n].data, b.data, b.data_len + 1);
    (*n)++;
    return 1;
}

static uint64_t first_position(struct nwb_test_sse *s)
{
    struct nwb_test_sse_block b;

    assert_int_equal(s->status, 200);
    assert_int_equal(nwb_test_sse_next(s, &b, WAIT_MS), 1);
    assert_true(b.has_id && b.event[0] == '\0');
    return b.id;
}

static void test_events_live_demo_run_is_followed_in_order_and_resumed_without_loss(void **state)
{
    struct fx *f = *state;
    static struct nwb_test_sse all, away, back;
    static struct ev seen[EVENTS_MAX], missed[EVENTS_MAX];
    char run[64], demo_id[RUN_ID_MAX] = "", path[1200], hdr[64];
    unsigned long long delivered = 0, tel_uploads = 0, log_bytes = 0;
    int n = 0, m = 0, status = 0, demo_done = 0, run_at = -1, tel_run_at = -1;
    int first_log_at = -1, first_tel_at = -1;
    uint64_t pos, away_pos, left_at = 0;
    const long long deadline = nwb_test_now_ms() + WAIT_MS;
    struct stat st;

    assert_int_equal(nwb_test_sse_open(&all, f->srv.port, "/v1/events", NULL, 0, WAIT_MS), 0);
    pos = first_position(&all);
    assert_int_equal(nwb_test_sse_open(&away, f->srv.port, "/v1/events", NULL, 0, WAIT_MS), 0);
    away_pos = first_position(&away);
    assert_int_equal(away_pos, pos);
    f->demo = demo_start(f);
    assert_true(f->demo > 0);

    /* The second stream leaves after its first log event of the run (mid-run). */
    {
        static struct ev tmp[EVENTS_MAX];
        int k = 0;

        while (left_at == 0) {
            assert_true(nwb_test_now_ms() < deadline);
            if (take(&away, tmp, &k, 1000) && strcmp(tmp[k - 1].event, "log") == 0) {
                left_at = tmp[k - 1].id;
            }
        }
        nwb_test_sse_close(&away);
    }

    /* Follow everything until the demo is done and its last log size and upload count are in. */
    for (;;) {
        struct ev *e;
        char id[RUN_ID_MAX];

        assert_true(nwb_test_now_ms() < deadline);
        if (!demo_done && waitpid(f->demo, &status, WNOHANG) == f->demo) {
            demo_done = 1;
            f->demo = 0;
            assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
            delivered = demo_delivered(f, run, sizeof(run));
        }
        if (demo_done && demo_id[0] != '\0') {
            snprintf(path, sizeof(path), "%s/srv/runs/%s/log.txt", f->dir, demo_id);
            assert_int_equal(stat(path, &st), 0);
            if ((unsigned long long)st.st_size == log_bytes && tel_uploads == delivered) {
                break;
            }
        }
        if (!take(&all, seen, &n, 200)) {
            continue;
        }
        e = &seen[n - 1];
        if (e->id != pos + 1) {
            fail_msg("event %llu after %llu: lost or repeated", (unsigned long long)e->id,
                     (unsigned long long)pos);
        }
        pos = e->id;
        json_str(e->data, "id", id, sizeof(id));
        if (strcmp(e->event, "run") == 0 && strncmp(id, "nwb-demo_", 9) == 0) {
            char change[32];

            json_str(e->data, "change", change, sizeof(change));
            if (strcmp(change, "active") == 0) {
                assert_int_equal(run_at, -1);
                run_at = n - 1;
                snprintf(demo_id, sizeof(demo_id), "%s", id);
            } else {
                assert_string_equal(change, "telemetry");
                assert_int_equal(tel_run_at, -1);
                tel_run_at = n - 1;
            }
            continue;
        }
        if (demo_id[0] == '\0' || strcmp(id, demo_id) != 0) {
            continue;
        }
        if (strcmp(e->event, "log") == 0) {
            const unsigned long long size = json_num(e->data, "size");

            assert_true(size > log_bytes);
            log_bytes = size;
            first_log_at = first_log_at < 0 ? n - 1 : first_log_at;
        } else if (strcmp(e->event, "telemetry") == 0) {
            const unsigned long long up = json_num(e->data, "uploads");

            assert_true(up > tel_uploads);
            tel_uploads = up;
            first_tel_at = first_tel_at < 0 ? n - 1 : first_tel_at;
        }
    }
    /* In order: the run before its log and telemetry, its telemetry run event before the
     * first report. The id carries the demo's run id. */
    assert_true(run_at >= 0 && first_log_at > run_at);
    assert_true(tel_run_at > run_at && first_tel_at > tel_run_at);
    assert_non_null(strstr(demo_id, run));
    print_message("%d events; %s: log %llu bytes, %llu reports; resumed after %llu\n", n, demo_id,
                  log_bytes, tel_uploads, (unsigned long long)left_at);

    /* Back with Last-Event-ID: exactly what it missed, then nothing more. */
    snprintf(hdr, sizeof(hdr), "Last-Event-ID: %llu\r\n", (unsigned long long)left_at);
    assert_int_equal(nwb_test_sse_open(&back, f->srv.port, "/v1/events", hdr, 0, WAIT_MS), 0);
    assert_int_equal(first_position(&back), left_at);
    while (m == 0 || missed[m - 1].id < pos) {
        assert_true(take(&back, missed, &m, 5000));
    }
    {
        int i = 0;

        while (seen[i].id <= left_at) {
            i++;
        }
        assert_int_equal(m, n - i);
        for (int k = 0; k < m; k++) {
            assert_int_equal(missed[k].id, seen[i + k].id);
            assert_string_equal(missed[k].event, seen[i + k].event);
            assert_string_equal(missed[k].data, seen[i + k].data);
        }
    }
    {
        struct nwb_test_sse_block b;

        assert_int_equal(nwb_test_sse_next_event(&back, &b, 300), 0);
    }
    nwb_test_sse_close(&back);
    nwb_test_sse_close(&all);
    status = nwb_test_server_stop(&f->srv, SIGTERM, 10000);
    f->srv_up = 0;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* POST one text line to (restart, r1); the next events are its run and log events. */
static uint64_t post_line(struct fx *f, struct nwb_test_sse *s, int run_event, char *id, size_t cap)
{
    struct nwb_test_sse_block b;

    assert_int_equal(nwb_test_http(f->srv.port, "POST", "/v1/log",
                                   "Content-Type: text/plain\r\nX-NWB-Program: restart\r\n"
                                   "X-NWB-Run: r1\r\n",
                                   "a line\n", 7, NULL, 0),
                     200);
    if (run_event) {
        assert_int_equal(nwb_test_sse_next_event(s, &b, WAIT_MS), 1);
        assert_string_equal(b.event, "run");
        json_str(b.data, "id", id, cap);
    }
    assert_int_equal(nwb_test_sse_next_event(s, &b, WAIT_MS), 1);
    assert_string_equal(b.event, "log");
    return b.id;
}

static void test_events_live_restart_gives_a_reset_then_the_run_again(void **state)
{
    struct fx *f = *state;
    static struct nwb_test_sse s;
    struct nwb_test_sse_block b;
    char out[600], hdr[64], id[RUN_ID_MAX], again[RUN_ID_MAX];
    uint64_t last;
    int status;

    assert_int_equal(nwb_test_sse_open(&s, f->srv.port, "/v1/events", NULL, 0, WAIT_MS), 0);
    (void)first_position(&s);
    last = post_line(f, &s, 1, id, sizeof(id));
    status = nwb_test_server_stop(&f->srv, SIGTERM, 10000);
    f->srv_up = 0;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(nwb_test_sse_wait_closed(&s, WAIT_MS)); /* the stream ends with the server */
    nwb_test_sse_close(&s);

    snprintf(out, sizeof(out), "%s/srv", f->dir);
    assert_int_equal(nwb_test_server_start(&f->srv, NULL, out, 0, NULL), 0);
    f->srv_up = 1;
    snprintf(hdr, sizeof(hdr), "Last-Event-ID: %llu\r\n", (unsigned long long)last);
    assert_int_equal(nwb_test_sse_open(&s, f->srv.port, "/v1/events", hdr, 0, WAIT_MS), 0);
    assert_int_equal(s.status, 200);
    assert_int_equal(nwb_test_sse_next(&s, &b, WAIT_MS), 1);
    assert_string_equal(b.event, "reset");
    assert_true(b.id > last); /* the new lifetime's ids are larger */
    /* The same run, written again: active in this lifetime, the same directory. */
    (void)post_line(f, &s, 1, again, sizeof(again));
    assert_string_equal(again, id);
    nwb_test_sse_close(&s);
}

/* --run-live-s 1: a run that stops writing gets a "run" event with change "ended" once it is
 * no longer live, and only then; written again, it is "active" again. */
static void test_events_live_a_quiet_run_is_reported_ended(void **state)
{
    static const char *const extra[] = {"--run-live-s", "1", NULL};
    struct fx *f = *state;
    static struct nwb_test_sse s;
    struct nwb_test_sse_block b;
    char out[600], id[RUN_ID_MAX], got[RUN_ID_MAX], change[32];
    long long t0, waited;
    int status;

    status = nwb_test_server_stop(&f->srv, SIGTERM, 10000);
    f->srv_up = 0;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    snprintf(out, sizeof(out), "%s/srv", f->dir);
    assert_int_equal(nwb_test_server_start(&f->srv, NULL, out, 0, extra), 0);
    f->srv_up = 1;
    assert_int_equal(nwb_test_sse_open(&s, f->srv.port, "/v1/events", NULL, 0, WAIT_MS), 0);
    (void)first_position(&s);
    t0 = nwb_test_now_ms(); /* before the write: the run is live from it on */
    (void)post_line(f, &s, 1, id, sizeof(id));
    for (;;) {
        assert_int_equal(nwb_test_sse_next_event(&s, &b, WAIT_MS), 1);
        if (strcmp(b.event, "run") != 0) {
            continue;
        }
        json_str(b.data, "id", got, sizeof(got));
        json_str(b.data, "change", change, sizeof(change));
        if (strcmp(got, id) == 0 && strcmp(change, "ended") == 0) {
            break;
        }
    }
    waited = nwb_test_now_ms() - t0;
    assert_true(waited >= 1000);  /* not before the live window passed */
    assert_true(waited <= 10000); /* and soon after it */
    /* Written again: a "run" event for it (its "active" again) before its "log" event. */
    (void)post_line(f, &s, 1, got, sizeof(got));
    assert_string_equal(got, id);
    nwb_test_sse_close(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_events_live_demo_run_is_followed_in_order_and_resumed_without_loss, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_events_live_restart_gives_a_reset_then_the_run_again,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_events_live_a_quiet_run_is_reported_ended, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
