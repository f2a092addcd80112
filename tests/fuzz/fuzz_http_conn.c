/* SPDX-License-Identifier: MIT */
/*
 * fuzz_http_conn.c - fuzz target for the server's HTTP handling of one connection (http_conn.c,
 * http_request.c, the router and every endpoint): the server library runs in-process on its own
 * loop thread (127.0.0.1, port 0), each input is written raw to a fresh loopback connection, and
 * what comes back must be well-formed HTTP responses with known status codes (every
 * application/json body strict JSON), the connection must end within a deadline, the server must
 * keep answering GET /v1/health, and nothing may appear outside --out (a sentinel beside it keeps
 * its bytes and mtime). abort() otherwise.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "nwb/server.h"

#include "../support/json_check.h"

/*
 * Input layout: byte 0 is the control byte, the rest is written to the connection.
 *   bits 0-5: split point, (n * (b & 63)) / 63 of the n bytes: written in two writes;
 *   bit 6:    pause after the first part until the server answers or PAUSE_MS pass;
 *   bit 7:    end with a pipelined "GET /v1/health" + Connection: close instead of SHUT_WR.
 */
#define CTRL_SPLIT_MASK 63u
#define CTRL_PAUSE      0x40u
#define CTRL_MARKER     0x80u
#define PAUSE_MS        5
/* Bounds: a connection must be closed by the server within CONN_DEADLINE_MS (the request
 * timeout below is far shorter); at most RESP_MAX bytes of answers are read. */
#define CONN_DEADLINE_MS 5000
#define RESP_MAX         (1u << 20)
/* Server settings kept small so timeouts and caps are reached quickly. */
#define FUZZ_REQUEST_TIMEOUT_MS 60u
#define FUZZ_IDLE_TIMEOUT_MS    60u
#define FUZZ_MAX_BODY           (256u * 1024u)
/* A fresh server (and empty --out) after this many inputs bounds the disk used. */
#define RESTART_EVERY 1000u
/* GET /v1/health on a separate connection every this many inputs (and after each restart). */
#define HEALTH_EVERY 16u

static const char marker[] = "GET /v1/health HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n";

static char base[256];      /* mkdtemp folder: sentinel, out/, names/ */
static char out_dir[300];   /* --out */
static char names_dir[300]; /* the only --namesym-dir: stays empty */
static char sentinel[300];  /* beside --out: never changes */
static struct stat sentinel_st;
static const char sentinel_text[] = "sentinel: the server must never write beside --out\n";

static uv_loop_t loop;
static nwb_server_t *srv;
static pthread_t loop_thread;
static int port = -1;
static unsigned long inputs;
static int verbose; /* NWB_FUZZ_HTTP_VERBOSE=1: one line per input on stderr */

static void fatal(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_http_conn: %s %s\n", what, detail != NULL ? detail : "");
    abort();
}

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void rmtree(const char *path)
{
    (void)nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void *loop_main(void *arg)
{
    (void)arg;
    uv_run(&loop, UV_RUN_DEFAULT);
    return NULL;
}

static void server_start(void)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    char err[512];

    if (mkdir(out_dir, 0700) != 0) {
        fatal("cannot create", out_dir);
    }
    cfg.bind_addr = "127.0.0.1";
    cfg.port = 0;
    cfg.out_dir = out_dir;
    cfg.namesym_dirs[0] = names_dir;
    cfg.namesym_dir_count = 1;
    cfg.request_timeout_ms = FUZZ_REQUEST_TIMEOUT_MS;
    cfg.idle_timeout_ms = FUZZ_IDLE_TIMEOUT_MS;
    cfg.max_body_bytes = FUZZ_MAX_BODY;
    cfg.max_buffered_bytes = 4u * FUZZ_MAX_BODY;
    cfg.crash_max_archive_bytes = FUZZ_MAX_BODY;
    cfg.crash_max_total_bytes = 1u << 20;
    cfg.crash_max_entry_bytes = 256u * 1024u;
    cfg.crash_retain_packages = 8;
    cfg.crash_retain_raw = 8;
    cfg.crash_retain_invalid = 8;
    cfg.max_connections = 64;
    cfg.max_open_runs = 8;
    cfg.handle_signals = 0;
    if (uv_loop_init(&loop) != 0) {
        fatal("uv_loop_init failed", NULL);
    }
    if (nwb_server_create(&loop, &cfg, &srv, err, sizeof(err)) != 0) {
        fatal("cannot start the server:", err);
    }
    port = nwb_server_port(srv);
    if (pthread_create(&loop_thread, NULL, loop_main, NULL) != 0) {
        fatal("pthread_create failed", NULL);
    }
}

static void server_stop(void)
{
    nwb_server_request_stop(srv);
    if (pthread_join(loop_thread, NULL) != 0 || nwb_server_destroy(srv) != 0) {
        fatal("the server did not shut down cleanly", NULL);
    }
    if (uv_loop_close(&loop) != 0) {
        fatal("a libuv handle was left open after shutdown", NULL);
    }
    srv = NULL;
    rmtree(out_dir);
}

static void at_exit(void)
{
    if (srv != NULL) {
        server_stop();
    }
    rmtree(base);
}

static void setup_once(void)
{
    const char *tmp = getenv("TMPDIR");
    int fd;

    if (srv != NULL) {
        return;
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    verbose = getenv("NWB_FUZZ_HTTP_VERBOSE") != NULL;
    /* tmpfs when there is one: the endpoints fsync, and a disk would make that the bottleneck. */
    if (tmp == NULL) {
        tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    }
    snprintf(base, sizeof(base), "%s/nwb-fuzz-http-XXXXXX", tmp);
    if (mkdtemp(base) == NULL) {
        fatal("mkdtemp failed:", strerror(errno));
    }
    snprintf(out_dir, sizeof(out_dir), "%s/out", base);
    snprintf(names_dir, sizeof(names_dir), "%s/names", base);
    snprintf(sentinel, sizeof(sentinel), "%s/sentinel", base);
    fd = open(sentinel, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 ||
        write(fd, sentinel_text, sizeof(sentinel_text) - 1) !=
            (ssize_t)(sizeof(sentinel_text) - 1) ||
        fstat(fd, &sentinel_st) != 0 || close(fd) != 0 || mkdir(names_dir, 0700) != 0) {
        fatal("cannot set up", base);
    }
    server_start();
    atexit(at_exit);
}

/* The sentinel is unchanged, names/ is empty, and base holds only sentinel, out and names. */
static void check_outside(void)
{
    char buf[sizeof(sentinel_text)];
    struct stat st;
    const struct dirent *e;
    DIR *d;
    int fd;
    ssize_t got;

    if (lstat(sentinel, &st) != 0 || !S_ISREG(st.st_mode) || st.st_ino != sentinel_st.st_ino ||
        st.st_size != sentinel_st.st_size || st.st_mtim.tv_sec != sentinel_st.st_mtim.tv_sec ||
        st.st_mtim.tv_nsec != sentinel_st.st_mtim.tv_nsec) {
        fatal("the sentinel beside --out changed (inode, size or mtime)", NULL);
    }
    fd = open(sentinel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    got = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
    if (fd >= 0) {
        close(fd);
    }
    if (got != (ssize_t)(sizeof(sentinel_text) - 1) || memcmp(buf, sentinel_text, (size_t)got)) {
        fatal("the sentinel's bytes changed", NULL);
    }
    d = opendir(base);
    if (d == NULL) {
        fatal("cannot list", base);
    }
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "sentinel") &&
            strcmp(e->d_name, "out") && strcmp(e->d_name, "names")) {
            fatal("an entry appeared outside --out:", e->d_name);
        }
    }
    closedir(d);
    d = opendir(names_dir);
    if (d == NULL) {
        fatal("cannot list", names_dir);
    }
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            fatal("an entry appeared in the namesym folder:", e->d_name);
        }
    }
    closedir(d);
}

static int connect_server(void)
{
    struct sockaddr_in sa;
    const int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        fatal("socket failed:", strerror(errno));
    }
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
        fatal("connect to the in-process server failed:", strerror(errno));
    }
    return fd;
}

/* Close with an RST, so neither side keeps the 4-tuple in TIME_WAIT (a run makes millions). */
static void close_abort(int fd)
{
    const struct linger lg = {1, 0};

    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
}

/* Write all of @p len bytes; 0, or -1 when the server already closed (EPIPE, ECONNRESET). */
static int send_all(int fd, const uint8_t *p, size_t len)
{
    while (len > 0) {
        const ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
            return -1;
        }
        if (n <= 0) {
            fatal("send failed:", strerror(errno));
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Read until the server closes, at most @p cap bytes, by @p deadline. Returns the bytes read;
 * *@p reset is set when the connection ended with an RST rather than a FIN. */
static size_t read_until_close(int fd, char *buf, size_t cap, long long deadline, int *reset)
{
    size_t used = 0;

    *reset = 0;
    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        const long long left = deadline - now_ms();
        ssize_t n;
        int pr;

        if (left <= 0) {
            fatal("the server neither answered nor closed the connection in time", NULL);
        }
        pr = poll(&pfd, 1, (int)left);
        if (pr < 0 && errno == EINTR) {
            continue;
        }
        if (pr <= 0) {
            continue; /* the deadline check above ends it */
        }
        n = recv(fd, buf + used, cap - used, 0);
        if (n == 0) {
            return used;
        }
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            if (errno == ECONNRESET) {
                *reset = 1;
                return used;
            }
            fatal("recv failed:", strerror(errno));
        }
        used += (size_t)n;
        if (used == cap) {
            fatal("more answer bytes than the read bound", NULL);
        }
    }
}

static int known_status(int s)
{
    static const int known[] = {100, 200, 201, 304, 400, 401, 403, 404, 405, 408,
                                411, 413, 415, 416, 429, 431, 500, 501, 503, 505};

    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (known[i] == s) {
            return 1;
        }
    }
    return 0;
}

/*
 * Parse @p len bytes as a sequence of complete responses: a status line "HTTP/1.1 DDD Reason",
 * header lines "Name: value" (printable, CRLF-ended), an empty line, then exactly Content-Length
 * body bytes (every final response has one but 304, which has neither; 100 Continue has none). With
 * @p partial (the connection ended with an RST, which may drop bytes in flight) the last response
 * may be cut. With @p may_head (the input holds "HEAD") a response may instead end at its head, as
 * an answer to HEAD does, when what follows is the end or the next status line (the server's own
 * bodies never start with one). A body under Content-Type application/json must be one strict JSON
 * value (nwb_test_json_check). Returns the count of final (non-1xx) responses; *@p last_status
 * gets the last final status.
 */
static unsigned check_responses(const char *buf, size_t len, int partial, int may_head,
                                int *last_status)
{
    size_t off = 0;
    unsigned finals = 0;

    *last_status = 0;
    while (off < len) {
        const char *head = buf + off;
        const char *end = memmem(head, len - off, "\r\n\r\n", 4);
        const char *line;
        long long clen = -1;
        int json = 0;
        int status;

        if (end == NULL) {
            if (partial) {
                break;
            }
            fatal("a response head is incomplete", NULL);
        }
        if (end - head < 13 || memcmp(head, "HTTP/1.1 ", 9) != 0 || head[9] < '1' ||
            head[9] > '5' || head[10] < '0' || head[10] > '9' || head[11] < '0' || head[11] > '9' ||
            head[12] != ' ') {
            fatal("a malformed status line", NULL);
        }
        status = (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
        if (!known_status(status)) {
            fatal("an unexpected status code", NULL);
        }
        /* Every byte of the head is printable ASCII or CRLF, every line ends with CRLF. */
        for (const char *p = head; p < end + 2; p++) {
            if (*p == '\r') {
                if (p[1] != '\n') {
                    fatal("a bare CR in a response head", NULL);
                }
                p++;
            } else if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) {
                fatal("a control or non-ASCII byte in a response head", NULL);
            }
        }
        line = (const char *)memchr(head, '\n', (size_t)(end + 2 - head)) + 1;
        while (line < end + 2) {
            const char *eol = memmem(line, (size_t)(end + 2 - line), "\r\n", 2);
            const char *colon = memchr(line, ':', (size_t)(eol - line));

            if (colon == NULL || colon == line) {
                fatal("a response header line without a name", NULL);
            }
            if ((size_t)(colon - line) == 14 && strncasecmp(line, "Content-Length", 14) == 0) {
                char num[24];
                size_t nlen = (size_t)(eol - colon - 1);
                char *stop;

                if (clen >= 0 || nlen == 0 || nlen >= sizeof(num)) {
                    fatal("a bad or repeated Content-Length in a response", NULL);
                }
                memcpy(num, colon + 1, nlen);
                num[nlen] = '\0';
                clen = strtoll(num, &stop, 10);
                if (*stop != '\0' || clen < 0) {
                    fatal("a bad Content-Length in a response", num);
                }
            } else if ((size_t)(colon - line) == 12 && strncasecmp(line, "Content-Type", 12) == 0) {
                static const char app_json[] = " application/json";
                const size_t vlen = (size_t)(eol - colon - 1);

                json = vlen >= sizeof(app_json) - 1 &&
                       strncasecmp(colon + 1, app_json, sizeof(app_json) - 1) == 0 &&
                       (vlen == sizeof(app_json) - 1 || colon[sizeof(app_json)] == ';');
            }
            line = eol + 2;
        }
        off = (size_t)(end + 4 - buf);
        if (status < 200) {
            if (clen >= 0) {
                fatal("a 1xx response with a body", NULL);
            }
            continue;
        }
        if (status == 304) {
            /* If-None-Match on the viewer's files: no body, and no Content-Length for it. */
            if (clen >= 0) {
                fatal("a 304 with a Content-Length", NULL);
            }
            finals++;
            *last_status = status;
            continue;
        }
        if (clen < 0) {
            fatal("a final response without Content-Length", NULL);
        }
        if (may_head && clen > 0 &&
            (off == len || (len - off >= 9 && memcmp(buf + off, "HTTP/1.1 ", 9) == 0))) {
            clen = 0; /* an answer to HEAD: Content-Length without the body */
        }
        if ((unsigned long long)clen > len - off) {
            if (partial) {
                break;
            }
            fatal("a response body cut short", NULL);
        }
        if (json && clen > 0) {
            size_t bad = 0;

            if (nwb_test_json_check(buf + off, (size_t)clen, &bad) != 0) {
                char where[32];

                snprintf(where, sizeof(where), "(byte %zu)", bad);
                fatal("an application/json body is not strict JSON", where);
            }
        }
        off += (size_t)clen;
        finals++;
        *last_status = status;
    }
    return finals;
}

/* GET /v1/health on its own connection: must be 200 and well formed. */
static void check_health(void)
{
    static char buf[64 * 1024];
    const int fd = connect_server();
    int reset;
    int status;
    size_t n;

    if (send_all(fd, (const uint8_t *)marker, sizeof(marker) - 1) != 0) {
        fatal("the server closed a health request unanswered", NULL);
    }
    n = read_until_close(fd, buf, sizeof(buf), now_ms() + CONN_DEADLINE_MS, &reset);
    close_abort(fd);
    if (reset || check_responses(buf, n, 0, 0, &status) != 1 || status != 200) {
        fatal("GET /v1/health did not answer 200", NULL);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setup_once();
    check_health();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char buf[RESP_MAX];
    const uint8_t *body = data + 1;
    size_t body_len;
    size_t split;
    unsigned ctrl;
    int fd;
    int reset;
    int status;
    int closed = 0;
    unsigned finals;
    long long started;
    size_t n;

    if (size < 1) {
        return 0;
    }
    setup_once();
    started = now_ms();
    ctrl = data[0];
    body_len = size - 1;
    split = body_len * (ctrl & CTRL_SPLIT_MASK) / CTRL_SPLIT_MASK;

    fd = connect_server();
    closed = send_all(fd, body, split) != 0;
    if (!closed && (ctrl & CTRL_PAUSE) != 0) {
        struct pollfd pfd = {fd, POLLIN, 0};

        (void)poll(&pfd, 1, PAUSE_MS);
    }
    if (!closed) {
        closed = send_all(fd, body + split, body_len - split) != 0;
    }
    if (!closed) {
        if ((ctrl & CTRL_MARKER) != 0) {
            closed = send_all(fd, (const uint8_t *)marker, sizeof(marker) - 1) != 0;
        } else {
            (void)shutdown(fd, SHUT_WR);
        }
    }
    n = read_until_close(fd, buf, sizeof(buf), now_ms() + CONN_DEADLINE_MS, &reset);
    close_abort(fd);
    /* An RST can cut what was in flight; only a FIN-ended stream must parse completely. */
    finals = check_responses(buf, n, reset, memmem(body, body_len, "HEAD", 4) != NULL, &status);
    if (verbose) {
        fprintf(
            stderr,
            "fuzz_http_conn: ctrl 0x%02x, %zu bytes in, %zu out, %u answers, last %d%s, %lld ms\n",
            ctrl, body_len, n, finals, status, reset ? ", reset" : "", now_ms() - started);
    }
    check_outside();
    inputs++;
    if (inputs % RESTART_EVERY == 0) {
        server_stop();
        server_start();
        check_health();
    } else if (inputs % HEALTH_EVERY == 0) {
        check_health();
    }
    return 0;
}
