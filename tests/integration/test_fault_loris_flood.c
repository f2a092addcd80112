/* SPDX-License-Identifier: MIT */
/*
 * test_fault_loris_flood.c - 500 slow-loris sockets (a request head sent one
 * byte at a time, never finished) plus a flood of 5,000 connections (connect
 * and close, connect and reset, connect and junk): meanwhile a normal client
 * is served within 1 s on fresh connections (its numbered lines land once),
 * the loris sockets get 408 at --request-timeout-ms, the server's open
 * descriptors return to their baseline and its memory stays under the bound
 * of docs/operations.md. Also: a server whose descriptor limit is low copes.
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
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "itest_common.h"

#define LORIS              500
#define FLOOD              5000
#define WAVE               50
#define REQUEST_TIMEOUT_MS 5000
#define LATENCY_MAX_MS     1000
/* Growth of the server's peak RSS (VmHWM) over its RSS before the attack (docs/operations.md,
 * Bounds). A sanitizer's shadow memory and quarantine make every allocation cost more (the
 * server is built like this test). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#if defined(SANITIZED)
#define RSS_GROWTH_MAX_KIB (96L * 1024L)
#else
#define RSS_GROWTH_MAX_KIB (32L * 1024L)
#endif

struct normal {
    pthread_t tid;
    int port;
    atomic_int stop;
    int sent;        /* POSTs answered 200 */
    int failed;      /* answers other than 200, or none */
    int fail_status; /* the first failure: its status (-1: no answer) ... */
    int fail_health; /* ... and whether it was the health request */
    long long worst_ms;
};

/* One numbered POST /v1/log of the normal client on a fresh connection; keeps the worst latency. */
static void normal_post(struct normal *n)
{
    char hdr[256], body[128];
    const int blen = snprintf(body, sizeof(body), "itest-num t0 n%d normal client\n", n->sent);
    long long t = nwb_test_now_ms();
    int st;

    snprintf(hdr, sizeof(hdr),
             "Content-Type: text/plain\r\nX-NWB-Program: normal\r\nX-NWB-Run: normal-run\r\n"
             "X-NWB-Seq: %d\r\n",
             n->sent + 1);
    st = nwb_test_http(n->port, "POST", "/v1/log", hdr, body, (size_t)blen, NULL, 0);
    t = nwb_test_now_ms() - t;
    n->worst_ms = t > n->worst_ms ? t : n->worst_ms;
    if (st == 200) {
        n->sent++;
    } else if (n->failed++ == 0) {
        n->fail_status = st;
    }
}

/* The normal client: a numbered POST /v1/log and a GET /v1/health, each on a fresh connection,
 * every 10 ms, until told to stop; the worst latency is kept. */
static void *normal_run(void *arg)
{
    struct normal *n = arg;

    while (!atomic_load(&n->stop)) {
        long long t;
        int st;

        normal_post(n);
        t = nwb_test_now_ms();
        st = nwb_test_http(n->port, "GET", "/v1/health", NULL, NULL, 0, NULL, 0);
        t = nwb_test_now_ms() - t;
        n->worst_ms = t > n->worst_ms ? t : n->worst_ms;
        if (st != 200 && n->failed++ == 0) {
            n->fail_status = st;
            n->fail_health = 1;
        }
        poll(NULL, 0, 10); /* pacing of the normal load, not a synchronisation */
    }
    return NULL;
}

/* A non-blocking socket connecting to 127.0.0.1:@p port, or -1. */
static int connect_nb(int port)
{
    const struct sockaddr_in sa = nwb_test_loopback(port);
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        return -1;
    }
    if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

static const char loris_head[] =
    "POST /v1/log HTTP/1.1\r\nHost: 127.0.0.1\r\nX-NWB-Program: loris\r\n"
    "X-Loris: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

struct loris {
    int fd;
    size_t sent;
    int status;      /* 0 while open; the answer's status once the server answered and closed */
    long long at_ms; /* when the answer came (monotonic) */
};

/* One more header byte on every loris socket still open. */
static void loris_drip(struct loris *l, int count)
{
    for (int i = 0; i < count; i++) {
        if (l[i].status == 0 && l[i].sent < sizeof(loris_head) - 1 &&
            send(l[i].fd, loris_head + l[i].sent, 1, MSG_NOSIGNAL) == 1) {
            l[i].sent++;
        }
    }
}

/* Collect the answers of loris sockets the server gave up on; returns how many are done. */
static int loris_reap(struct loris *l, int count, int wait_ms)
{
    static struct pollfd p[LORIS];
    int done = 0;

    for (int i = 0; i < count; i++) {
        p[i].fd = l[i].status == 0 ? l[i].fd : -1;
        p[i].events = POLLIN;
        p[i].revents = 0;
    }
    (void)poll(p, (nfds_t)count, wait_ms);
    for (int i = 0; i < count; i++) {
        if (l[i].status == 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
            char buf[512];
            const ssize_t n = recv(l[i].fd, buf, sizeof(buf) - 1, 0);

            l[i].status = -1;
            l[i].at_ms = nwb_test_now_ms();
            if (n > 0) {
                buf[n] = '\0';
                if (sscanf(buf, "HTTP/1.1 %d", &l[i].status) != 1) {
                    l[i].status = -1;
                }
            }
        }
        done += l[i].status != 0;
    }
    return done;
}

/* Wait up to @p timeout_ms for the server's descriptor count to come down to @p want. */
static int wait_fds(pid_t pid, int want, int timeout_ms)
{
    const long long deadline = nwb_test_now_ms() + timeout_ms;
    int now;

    while ((now = itest_proc_fds(pid)) > want && nwb_test_now_ms() < deadline) {
        /* Descriptors closing in another process raise no event here. */
        poll(NULL, 0, 20);
    }
    return now;
}

/* The server's descriptor count once it stayed the same for 200 ms (at most 3 s): the baseline,
 * after the connections of earlier requests are closed. */
static int settled_fds(pid_t pid)
{
    const long long deadline = nwb_test_now_ms() + 3000;
    long long since = nwb_test_now_ms();
    int last = itest_proc_fds(pid);

    while (nwb_test_now_ms() - since < 200 && nwb_test_now_ms() < deadline) {
        const int now = itest_proc_fds(pid);

        if (now != last) {
            last = now;
            since = nwb_test_now_ms();
        }
        poll(NULL, 0, 20); /* no event for another process's descriptors */
    }
    return last;
}

static void raise_nofile(void)
{
    struct rlimit rl;

    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rl.rlim_cur = rl.rlim_max;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    assert_true(rl.rlim_cur >= LORIS + 2 * WAVE + 64);
}

static void test_fault_loris_flood_normal_client_served_fds_and_memory_return(void **state)
{
    static struct loris loris[LORIS];
    /* The default connection cap (4096) holds the attack as the server sees it: the 500 loris
     * sockets, plus flood connections the client side closed long ago but the server has not
     * read the close of yet, up to a full listen backlog (511) per accept burst. With a cap of
     * 1024 a normal client sometimes got the over-cap 503 under a loaded machine. */
    const char *const extra[] = {"--request-timeout-ms", "5000", /* REQUEST_TIMEOUT_MS */
                                 NULL};
    struct nwb_test_server srv;
    struct normal normal;
    char out[512];
    int fds0, fds1, flood_failed = 0, junk = 0, resets = 0, done = 0;
    long rss0, hwm0, hwm1, rss1;
    long long t0, last_drip, flood_ms, first_ms = 0, last_ms = 0;
    int by_status[3] = {0, 0, 0}; /* 408, other answers, closed without one */
    const char *wrapper = getenv("NWB_TEST_SERVER_WRAPPER");
    const int wrapped = wrapper != NULL && wrapper[0] != '\0';

    (void)state;
    raise_nofile();
    assert_int_equal(nwb_test_tmpdir("floris", out, sizeof(out)), 0);
    assert_int_equal(nwb_test_server_start(&srv, NULL, out, 0, extra), 0);
    assert_int_equal(nwb_test_http(srv.port, "GET", "/v1/health", NULL, NULL, 0, NULL, 0), 200);
    /* The normal client's first line opens its run (the run's files are part of the baseline). */
    memset(&normal, 0, sizeof(normal));
    normal.port = srv.port;
    normal_post(&normal);
    assert_int_equal(normal.sent, 1);
    fds0 = settled_fds(srv.pid);
    rss0 = itest_proc_status_kib(srv.pid, "VmRSS");
    hwm0 = itest_proc_status_kib(srv.pid, "VmHWM");
    assert_true(fds0 > 0 && rss0 > 0);

    assert_int_equal(pthread_create(&normal.tid, NULL, normal_run, &normal), 0);

    /* 500 loris sockets, each with its first byte. */
    t0 = nwb_test_now_ms();
    for (int i = 0; i < LORIS; i++) {
        loris[i].fd = connect_nb(srv.port);
        assert_true(loris[i].fd >= 0);
    }
    for (int i = 0; i < LORIS; i++) {
        struct pollfd p = {.fd = loris[i].fd, .events = POLLOUT};

        assert_int_equal(poll(&p, 1, 5000), 1);
    }
    loris_drip(loris, LORIS);
    last_drip = nwb_test_now_ms();

    /* The flood, WAVE connections at a time: a third close at once, a third reset, a third
     * send junk and close; the loris sockets get a byte every 100 ms meanwhile. */
    for (int base = 0; base < FLOOD; base += WAVE) {
        struct pollfd p[WAVE];
        int left = WAVE;

        for (int i = 0; i < WAVE; i++) {
            p[i].fd = connect_nb(srv.port);
            p[i].events = POLLOUT;
            flood_failed += p[i].fd < 0;
            left -= p[i].fd < 0;
        }
        while (left > 0 && poll(p, WAVE, 2000) > 0) {
            for (int i = 0; i < WAVE; i++) {
                const int kind = (base + i) % 3;

                if (p[i].fd < 0 || p[i].revents == 0) {
                    continue;
                }
                if (kind == 1) {
                    const struct linger lg = {1, 0};

                    (void)setsockopt(p[i].fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
                    resets++;
                } else if (kind == 2) {
                    static const char trash[] = "\x16\x03\x01\x02\x00GARBAGE / HTTP/9.9\r\n\r\n";

                    junk += send(p[i].fd, trash, sizeof(trash) - 1, MSG_NOSIGNAL) > 0;
                }
                close(p[i].fd);
                p[i].fd = -1;
                left--;
            }
        }
        for (int i = 0; i < WAVE; i++) {
            if (p[i].fd >= 0) { /* not connected within 2 s */
                flood_failed++;
                close(p[i].fd);
            }
        }
        if (nwb_test_now_ms() - last_drip >= 100) {
            loris_drip(loris, LORIS);
            last_drip = nwb_test_now_ms();
        }
    }
    flood_ms = nwb_test_now_ms() - t0;

    /* The loris sockets: the server answers each 408 once its request time is up. */
    while (done < LORIS && nwb_test_now_ms() - t0 < REQUEST_TIMEOUT_MS + 10000) {
        done = loris_reap(loris, LORIS, 100);
        loris_drip(loris, LORIS);
    }
    for (int i = 0; i < LORIS; i++) {
        const long long at = loris[i].at_ms - t0;

        first_ms = i == 0 || at < first_ms ? at : first_ms;
        last_ms = at > last_ms ? at : last_ms;
        by_status[loris[i].status == 408 ? 0 : loris[i].status > 0 ? 1 : 2]++;
        close(loris[i].fd);
    }
    hwm1 = itest_proc_status_kib(srv.pid, "VmHWM");
    atomic_store(&normal.stop, 1);
    pthread_join(normal.tid, NULL);

    fds1 = wait_fds(srv.pid, fds0, 10000);
    rss1 = itest_proc_status_kib(srv.pid, "VmRSS");
    fprintf(stderr,
            "fault_loris_flood: flood of %d (%d reset, %d junk, %d failed) in %lld ms; loris: "
            "%d got 408, %d another answer, %d closed without one, answers %lld .. %lld ms after "
            "the first byte\n",
            FLOOD, resets, junk, flood_failed, flood_ms, by_status[0], by_status[1], by_status[2],
            first_ms, last_ms);
    fprintf(stderr,
            "fault_loris_flood: normal client: %d POSTs + health, %d failed (the first: %s, "
            "status %d), worst %lld ms\n",
            normal.sent, normal.failed, normal.fail_health ? "health" : "POST", normal.fail_status,
            normal.worst_ms);
    fprintf(stderr,
            "fault_loris_flood: server fds %d before, %d after; VmRSS %ld KiB before, %ld after; "
            "VmHWM %ld KiB before, %ld after (growth %ld KiB, bound %ld)\n",
            fds0, fds1, rss0, rss1, hwm0, hwm1, hwm1 - rss0, RSS_GROWTH_MAX_KIB);

    assert_int_equal(flood_failed, 0);
    assert_int_equal(by_status[0], LORIS);
    assert_int_equal(normal.failed, 0);
    assert_true(normal.sent > 0);
    if (wrapped) {
        /* valgrind (scripts/test's valgrind stage) slows the server and owns its RSS: the
         * figures above are printed, the time and memory bounds are for direct runs. */
        fprintf(stderr, "fault_loris_flood: NWB_TEST_SERVER_WRAPPER is set: latency and RSS "
                        "bounds not asserted\n");
    } else {
        assert_true(normal.worst_ms < LATENCY_MAX_MS);
        assert_true(hwm1 - rss0 < RSS_GROWTH_MAX_KIB);
    }
    assert_int_equal(fds1, fds0);
    assert_int_equal(itest_metric(srv.port, "nwb_request_timeouts_total"), LORIS);
    assert_int_equal(itest_metric(srv.port, "nwb_connections_rejected_total"), 0);
    /* Every connection reached the server (a reset one may be gone before its accept). */
    assert_true(itest_metric(srv.port, "nwb_connections_total") >= LORIS + FLOOD - FLOOD / 3);
    assert_int_equal(itest_metric(srv.port, "nwb_connections_open"), 1); /* this request */
    assert_int_equal(itest_check_log(out, "normal", "normal-run", 1, normal.sent), 0);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
    nwb_test_rmtree(out);
}

/* The soft and hard "Max open files" of process @p pid, from /proc/PID/limits. */
static void proc_nofile(pid_t pid, long *soft, long *hard)
{
    char path[64], line[256];
    FILE *f;

    *soft = *hard = -1;
    snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
    f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "Max open files", 14) == 0) {
            assert_int_equal(sscanf(line + 14, "%ld %ld", soft, hard), 2);
        }
    }
    fclose(f);
}

#define LOW_NOFILE 128
#define HELD       300
/* server.c keeps 64 descriptors out of the connection cap. */
#define CAP (LOW_NOFILE - 64)

/*
 * A low soft limit is raised to the hard limit at start. With a low hard limit
 * (prlimit --nofile=128:128 as the server's wrapper) the server lowers its
 * connection cap to 128 - 64 (server.c) and says so: of 300 connections held
 * open at once 64 are kept and the others answered 503 and closed, none is
 * dropped unanswered; once they are gone the server serves again with its
 * baseline descriptors.
 */
static void test_fault_loris_flood_low_nofile_limit_rejects_cleanly(void **state)
{
    static int held[HELD];
    struct nwb_test_server srv;
    struct rlimit old, low;
    char out[512], wrapper[64], err[16384];
    const char *prev = getenv("NWB_TEST_SERVER_WRAPPER");
    int open_now = 0, rejected = 0, dropped = 0, fds0, fds1, rc;
    long soft, hard;

    (void)state;
    if (access("/usr/bin/prlimit", X_OK) != 0) {
        fprintf(stderr, "fault_loris_flood: no /usr/bin/prlimit: low-limit test skipped\n");
        skip();
    }
    if (prev != NULL && prev[0] != '\0') {
        /* valgrind keeps descriptors of its own and filters the server's setrlimit(): the
         * limits are for direct runs. */
        fprintf(stderr, "fault_loris_flood: NWB_TEST_SERVER_WRAPPER is set: low-limit test "
                        "skipped\n");
        skip();
    }
    assert_int_equal(nwb_test_tmpdir("fnofile", out, sizeof(out)), 0);

    /* A soft limit of 128 under a higher hard limit: the server takes the hard limit. */
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = LOW_NOFILE;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    rc = nwb_test_server_start(&srv, NULL, out, 0, NULL);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(rc, 0);
    proc_nofile(srv.pid, &soft, &hard);
    fprintf(stderr, "fault_loris_flood: started with soft limit %d: now %ld / %ld\n", LOW_NOFILE,
            soft, hard);
    assert_true(soft == hard && soft > LOW_NOFILE);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));

    /* A hard limit of 128. */
    snprintf(wrapper, sizeof(wrapper), "prlimit --nofile=%d:%d", LOW_NOFILE, LOW_NOFILE);
    assert_int_equal(setenv("NWB_TEST_SERVER_WRAPPER", wrapper, 1), 0);
    rc = nwb_test_server_start(&srv, NULL, out, 0, NULL);
    unsetenv("NWB_TEST_SERVER_WRAPPER");
    assert_int_equal(rc, 0);
    proc_nofile(srv.pid, &soft, &hard);
    assert_true(soft == LOW_NOFILE && hard == LOW_NOFILE);
    assert_int_equal(nwb_test_http(srv.port, "GET", "/v1/health", NULL, NULL, 0, NULL, 0), 200);
    fds0 = settled_fds(srv.pid);

    for (int i = 0; i < HELD; i++) {
        held[i] = connect_nb(srv.port);
        assert_true(held[i] >= 0);
    }
    /* The server keeps CAP of them and answers the others 503 and closes them: wait until
     * that many were answered (at most 10 s), then a further 200 ms for any extra answer, and
     * see what each got. */
    {
        static struct pollfd p[HELD];
        const long long t0 = nwb_test_now_ms();
        long long quiet = 0;
        int decided = 0;

        for (int i = 0; i < HELD; i++) {
            p[i] = (struct pollfd){.fd = held[i], .events = POLLIN};
        }
        while (nwb_test_now_ms() - t0 < 10000 &&
               (decided < HELD - CAP || nwb_test_now_ms() - quiet < 200)) {
            if (poll(p, HELD, 50) > 0) {
                for (int i = 0; i < HELD; i++) {
                    if (p[i].fd >= 0 && p[i].revents != 0) {
                        p[i].fd = -1; /* this one is decided */
                        decided++;
                    }
                }
            }
            if (decided >= HELD - CAP && quiet == 0) {
                quiet = nwb_test_now_ms();
            }
        }
    }
    for (int i = 0; i < HELD; i++) {
        char buf[256];
        const ssize_t n = recv(held[i], buf, sizeof(buf) - 1, MSG_DONTWAIT);

        if (n > 0) {
            buf[n] = '\0';
            rejected += strncmp(buf, "HTTP/1.1 503 ", 13) == 0;
            dropped += strncmp(buf, "HTTP/1.1 503 ", 13) != 0;
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            dropped++; /* closed without an answer */
        } else {
            open_now++;
        }
    }
    fds1 = itest_proc_fds(srv.pid);
    nwb_test_server_stderr(&srv, err, sizeof(err));
    fprintf(stderr,
            "fault_loris_flood: hard limit %d: of %d connections %d open, %d answered 503, %d "
            "closed without an answer; server fds %d (baseline %d)\nserver stderr:\n%s",
            LOW_NOFILE, HELD, open_now, rejected, dropped, fds1, fds0, err);
    for (int i = 0; i < HELD; i++) {
        close(held[i]);
    }
    /* The cap was fitted to the limit: the extra connections got a 503, none went unanswered. */
    assert_non_null(strstr(err, "--max-connections 4096 lowered to 64"));
    assert_true(fds1 <= LOW_NOFILE + 1); /* + 1: TSan's runtime holds one of its own */
    assert_int_equal(open_now, CAP);
    assert_int_equal(rejected, HELD - CAP);
    assert_int_equal(dropped, 0);
    assert_int_equal(wait_fds(srv.pid, fds0, 10000), fds0);
    assert_int_equal(nwb_test_http(srv.port, "GET", "/v1/health", NULL, NULL, 0, NULL, 0), 200);
    assert_int_equal(nwb_test_http(srv.port, "POST", "/v1/log",
                                   "Content-Type: text/plain\r\nX-NWB-Program: lowfd\r\n", "ok\n",
                                   3, NULL, 0),
                     200);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
    nwb_test_rmtree(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_loris_flood_normal_client_served_fds_and_memory_return),
        cmocka_unit_test(test_fault_loris_flood_low_nofile_limit_rejects_cleanly),
    };

    return cmocka_run_group_tests_name("integration.fault_loris_flood", tests, NULL, NULL);
}
