/* SPDX-License-Identifier: MIT */
/* clickhouse_server.c - start, query, restart and remove a real clickhouse-server for tests. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clickhouse_server.h"
#include "test_support.h"

/* Only what a test needs: loopback, no query log, small caches, UTC, the log in the folder.
 * Every element here exists in 18.16 (Debian 12) and in current releases. */
#define CONFIG_FMT                                                                                 \
    "<?xml version=\"1.0\"?>\n"                                                                    \
    "<yandex>\n"                                                                                   \
    "  <logger><level>warning</level><log>%1$s/server.log</log>"                                   \
    "<errorlog>%1$s/server.err.log</errorlog></logger>\n"                                          \
    "  <http_port>%2$d</http_port>\n"                                                              \
    "  <tcp_port>%3$d</tcp_port>\n"                                                                \
    "  <listen_host>127.0.0.1</listen_host>\n"                                                     \
    "  <path>%1$s/data/</path>\n"                                                                  \
    "  <tmp_path>%1$s/data/tmp/</tmp_path>\n"                                                      \
    "  <user_files_path>%1$s/data/user_files/</user_files_path>\n"                                 \
    "  <format_schema_path>%1$s/data/format_schemas/</format_schema_path>\n"                       \
    "  <users_config>%1$s/users.xml</users_config>\n"                                              \
    "  <default_profile>default</default_profile>\n"                                               \
    "  <default_database>default</default_database>\n"                                             \
    "  <timezone>UTC</timezone>\n"                                                                 \
    "  <mark_cache_size>67108864</mark_cache_size>\n"                                              \
    "  <uncompressed_cache_size>67108864</uncompressed_cache_size>\n"                              \
    "  <max_concurrent_queries>32</max_concurrent_queries>\n"                                      \
    "%4$s"                                                                                         \
    "</yandex>\n"

static const char users_xml[] =
    "<?xml version=\"1.0\"?>\n"
    "<yandex>\n"
    "  <profiles><default></default></profiles>\n"
    "  <users><default><password></password>\n"
    "    <networks><ip>127.0.0.1</ip></networks>\n"
    "    <profile>default</profile><quota>default</quota>\n"
    "  </default>\n"
    "  <" NWB_TEST_CLICKHOUSE_USER "><password>" NWB_TEST_CLICKHOUSE_PASSWORD "</password>\n"
    "    <networks><ip>127.0.0.1</ip></networks>\n"
    "    <profile>default</profile><quota>default</quota>\n"
    "  </" NWB_TEST_CLICKHOUSE_USER "></users>\n"
    "  <quotas><default></default></quotas>\n"
    "</yandex>\n";

static const char *server_exe(void)
{
    const char *env = getenv("NWB_TEST_CLICKHOUSE_SERVER");

    return env != NULL && env[0] != '\0' ? env : NWB_TEST_CLICKHOUSE_SERVER_EXE;
}

int nwb_test_clickhouse_available(char *why, size_t cap)
{
    const char *exe = server_exe();

    if (access(exe, X_OK) != 0) {
        snprintf(why, cap,
                 "clickhouse-server is not installed (%s: %s); scripts/install-deps clickhouse",
                 exe, strerror(errno));
        return 0;
    }
    why[0] = '\0';
    return 1;
}

/* Copy the end of the server's own files to stderr, for a failed start. */
static void dump_logs(const struct nwb_test_clickhouse *ch)
{
    static const char *const names[] = {"console.log", "server.err.log"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char path[600];
        size_t len = 0;
        char *text;

        snprintf(path, sizeof(path), "%s/%s", ch->dir, names[i]);
        text = nwb_test_read_file(path, &len);
        if (text != NULL) {
            const size_t from = len > 4000 ? len - 4000 : 0;

            fprintf(stderr, "---- %s (last %zu bytes)\n%s\n", path, len - from, text + from);
            free(text);
        }
    }
}

/* One request on a fresh connection, HTTP/1.0 so the answer is never chunked and ends at EOF.
 * Returns the status with the body in @p out, or -1. */
static int http_request(int port, const char *method, const char *target, const void *body,
                        size_t body_len, char *out, size_t cap, int timeout_ms)
{
    char head[8192];
    char *resp = NULL;
    size_t used = 0, alloc = 0;
    const long long deadline = nwb_test_now_ms() + timeout_ms;
    int status = -1;
    int n;
    const int fd = nwb_test_connect(port);

    if (out != NULL && cap > 0) {
        out[0] = '\0';
    }
    if (fd < 0) {
        return -1;
    }
    n = snprintf(head, sizeof(head),
                 "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: %zu\r\n\r\n", method, target,
                 body_len);
    if (n < 0 || (size_t)n >= sizeof(head) || nwb_test_send_all(fd, head, (size_t)n) != 0 ||
        (body_len > 0 && nwb_test_send_all(fd, body, body_len) != 0)) {
        close(fd);
        return -1;
    }
    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        const long long left = deadline - nwb_test_now_ms();
        ssize_t got;

        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) {
            goto out;
        }
        if (used + 4096 + 1 > alloc) {
            char *grown = realloc(resp, alloc == 0 ? 65536 : alloc * 2);

            if (grown == NULL) {
                goto out;
            }
            resp = grown;
            alloc = alloc == 0 ? 65536 : alloc * 2;
        }
        got = recv(fd, resp + used, alloc - used - 1, 0);
        if (got == 0) {
            break;
        }
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            goto out;
        }
        used += (size_t)got;
    }
    if (resp != NULL) {
        const char *end;

        resp[used] = '\0';
        end = strstr(resp, "\r\n\r\n");
        if (end != NULL && sscanf(resp, "HTTP/%*d.%*d %d", &status) == 1 && out != NULL &&
            cap > 0) {
            snprintf(out, cap, "%s", end + 4);
        }
    }
out:
    free(resp);
    close(fd);
    return status;
}

/* Wait for GET /ping to answer "Ok." while the server runs. 0, or -1 (it died or timed out). */
static int wait_ping(struct nwb_test_clickhouse *ch)
{
    const long long deadline = nwb_test_now_ms() + NWB_TEST_CLICKHOUSE_START_MS;

    while (nwb_test_now_ms() < deadline) {
        char body[64];
        int wstatus;

        if (http_request(ch->http_port, "GET", "/ping", NULL, 0, body, sizeof(body), 2000) == 200 &&
            strncmp(body, "Ok.", 3) == 0) {
            return 0;
        }
        if (waitpid(ch->pid, &wstatus, WNOHANG) == ch->pid) {
            fprintf(stderr, "clickhouse-server exited before answering /ping (status %d)\n",
                    wstatus);
            ch->pid = 0;
            return -1;
        }
        /* The server gives no readiness event to wait on; /ping is polled in 20 ms slices. */
        poll(NULL, 0, 20);
    }
    fprintf(stderr, "clickhouse-server did not answer /ping within %d ms\n",
            NWB_TEST_CLICKHOUSE_START_MS);
    return -1;
}

static int launch(struct nwb_test_clickhouse *ch)
{
    char config[600], console[600], arg[640];
    int fd;

    snprintf(config, sizeof(config), "%s/config.xml", ch->dir);
    snprintf(console, sizeof(console), "%s/console.log", ch->dir);
    snprintf(arg, sizeof(arg), "--config-file=%s", config);
    fd = open(console, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        return -1;
    }
    ch->pid = fork();
    if (ch->pid == 0) {
        const int devnull = open("/dev/null", O_RDONLY);

        dup2(devnull, STDIN_FILENO);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        execl(ch->exe, ch->exe, arg, (char *)NULL);
        _exit(127);
    }
    close(fd);
    if (ch->pid < 0) {
        ch->pid = 0;
        return -1;
    }
    if (wait_ping(ch) != 0) {
        dump_logs(ch);
        nwb_test_clickhouse_stop(ch, SIGKILL, 5000);
        return -1;
    }
    return 0;
}

/* A fresh folder and two held ports for @p ch. 0, or -1 (the caller destroys @p ch). */
static int prepare(struct nwb_test_clickhouse *ch)
{
    memset(ch, 0, sizeof(*ch));
    ch->hold_fds[0] = ch->hold_fds[1] = ch->hold_fds[2] = -1;
    snprintf(ch->exe, sizeof(ch->exe), "%s", server_exe());
    if (nwb_test_tmpdir("clickhouse", ch->dir, sizeof(ch->dir)) != 0) {
        return -1;
    }
    /* Both ports stay bound (never listening) by us for the server's whole life: the server
     * binds with SO_REUSEADDR as our sockets do, so it can listen there, and no other test
     * can take a port while the server is down between a stop and its restart. */
    ch->hold_fds[0] = nwb_test_reserve_dead_port(&ch->http_port);
    ch->hold_fds[1] = nwb_test_reserve_dead_port(&ch->tcp_port);
    return ch->hold_fds[0] < 0 || ch->hold_fds[1] < 0 ? -1 : 0;
}

/* Write @p ch's config.xml (with @p extra, more elements of <yandex>) and users.xml, and
 * start it. 0, or -1. */
static int configure_and_launch(struct nwb_test_clickhouse *ch, const char *extra)
{
    char path[600];
    char *config = NULL;
    int len = asprintf(&config, CONFIG_FMT, ch->dir, ch->http_port, ch->tcp_port, extra);
    int rc = -1;

    if (len < 0) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/config.xml", ch->dir);
    if (nwb_test_write_file(path, config, (size_t)len, 0600) == 0) {
        snprintf(path, sizeof(path), "%s/users.xml", ch->dir);
        rc = nwb_test_write_file(path, users_xml, sizeof(users_xml) - 1, 0600) == 0 &&
                     launch(ch) == 0
                 ? 0
                 : -1;
    }
    free(config);
    return rc;
}

int nwb_test_clickhouse_start(struct nwb_test_clickhouse *ch)
{
    if (prepare(ch) != 0 || configure_and_launch(ch, "") != 0) {
        nwb_test_clickhouse_destroy(ch);
        return -1;
    }
    return 0;
}

int nwb_test_clickhouse_start_tls(struct nwb_test_clickhouse *ch, const char *cert_file,
                                  const char *key_file)
{
    char *extra = NULL;
    int rc = -1;

    if (prepare(ch) != 0) {
        goto out;
    }
    ch->hold_fds[2] = nwb_test_reserve_dead_port(&ch->https_port);
    if (ch->hold_fds[2] < 0 ||
        asprintf(&extra,
                 "  <https_port>%d</https_port>\n"
                 "  <openSSL><server><certificateFile>%s</certificateFile>"
                 "<privateKeyFile>%s</privateKeyFile><verificationMode>none</verificationMode>"
                 "<loadDefaultCAFile>false</loadDefaultCAFile>"
                 "<disableProtocols>sslv2,sslv3</disableProtocols></server></openSSL>\n",
                 ch->https_port, cert_file, key_file) < 0) {
        extra = NULL;
        goto out;
    }
    rc = configure_and_launch(ch, extra);
out:
    free(extra);
    if (rc != 0) {
        nwb_test_clickhouse_destroy(ch);
    }
    return rc;
}

int nwb_test_clickhouse_start_shards(struct nwb_test_clickhouse *ch, size_t n)
{
    char remote[256 + NWB_TEST_CLICKHOUSE_SHARDS_MAX * 128];
    size_t used = 0;
    size_t i;

    if (n == 0 || n > NWB_TEST_CLICKHOUSE_SHARDS_MAX) {
        fprintf(stderr, "clickhouse shards: %zu is not 1..%u\n", n, NWB_TEST_CLICKHOUSE_SHARDS_MAX);
        return -1;
    }
    for (i = 0; i < n; i++) {
        memset(&ch[i], 0, sizeof(ch[i]));
        /* each one destroyable from here on */
        ch[i].hold_fds[0] = ch[i].hold_fds[1] = ch[i].hold_fds[2] = -1;
    }
    for (i = 0; i < n; i++) {
        if (prepare(&ch[i]) != 0) {
            goto fail;
        }
    }
    used += (size_t)snprintf(remote + used, sizeof(remote) - used,
                             "  <remote_servers><" NWB_TEST_CLICKHOUSE_CLUSTER ">\n");
    for (i = 0; i < n; i++) {
        used += (size_t)snprintf(remote + used, sizeof(remote) - used,
                                 "    <shard><replica><host>127.0.0.1</host><port>%d</port>"
                                 "</replica></shard>\n",
                                 ch[i].tcp_port);
    }
    snprintf(remote + used, sizeof(remote) - used,
             "  </" NWB_TEST_CLICKHOUSE_CLUSTER "></remote_servers>\n");
    for (i = 0; i < n; i++) {
        if (configure_and_launch(&ch[i], remote) != 0) {
            goto fail;
        }
    }
    return 0;

fail:
    for (size_t j = 0; j < n; j++) {
        nwb_test_clickhouse_destroy(&ch[j]);
    }
    return -1;
}

int nwb_test_clickhouse_stop(struct nwb_test_clickhouse *ch, int sig, int timeout_ms)
{
    const long long deadline = nwb_test_now_ms() + timeout_ms;

    if (ch->pid <= 0) {
        return -1;
    }
    kill(ch->pid, sig);
    for (;;) {
        const pid_t r = waitpid(ch->pid, NULL, WNOHANG);

        if (r == ch->pid || (r < 0 && errno == ECHILD)) {
            break;
        }
        if (nwb_test_now_ms() >= deadline) {
            kill(ch->pid, SIGKILL);
            waitpid(ch->pid, NULL, 0);
            break;
        }
        /* A child's exit has no descriptor to poll; short slices up to the deadline. */
        poll(NULL, 0, 5);
    }
    ch->pid = 0;
    return 0;
}

int nwb_test_clickhouse_restart(struct nwb_test_clickhouse *ch)
{
    if (ch->pid > 0) {
        return -1;
    }
    return launch(ch);
}

void nwb_test_clickhouse_destroy(struct nwb_test_clickhouse *ch)
{
    if (ch == NULL) {
        return;
    }
    if (ch->pid > 0) {
        nwb_test_clickhouse_stop(ch, SIGKILL, 10000);
    }
    for (int i = 0; i < 3; i++) {
        if (ch->hold_fds[i] >= 0) {
            close(ch->hold_fds[i]);
            ch->hold_fds[i] = -1;
        }
    }
    if (ch->dir[0] != '\0') {
        nwb_test_rmtree(ch->dir);
        ch->dir[0] = '\0';
    }
}

/* "/?query=" + @p sql percent-encoded (every byte but unreserved ones). 0, or -1 (too long). */
static int query_target(char *dst, size_t cap, const char *sql)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = (size_t)snprintf(dst, cap, "/?query=");

    for (const unsigned char *p = (const unsigned char *)sql; *p != '\0'; p++) {
        const int plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                          (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.' ||
                          *p == '~';

        if (n + 4 > cap) {
            return -1;
        }
        if (plain) {
            dst[n++] = (char)*p;
        } else {
            dst[n++] = '%';
            dst[n++] = hex[*p >> 4];
            dst[n++] = hex[*p & 15];
        }
    }
    dst[n] = '\0';
    return 0;
}

int nwb_test_clickhouse_query(const struct nwb_test_clickhouse *ch, const char *sql,
                              const void *body, size_t body_len, char *out, size_t cap)
{
    char target[4096];

    if (body == NULL) {
        return http_request(ch->http_port, "POST", "/", sql, strlen(sql), out, cap, 30000);
    }
    if (query_target(target, sizeof(target), sql) != 0) {
        return -1;
    }
    return http_request(ch->http_port, "POST", target, body, body_len, out, cap, 30000);
}

long long nwb_test_clickhouse_count(const struct nwb_test_clickhouse *ch, const char *sql)
{
    char out[256];
    char *end;
    long long v;

    if (nwb_test_clickhouse_query(ch, sql, NULL, 0, out, sizeof(out)) != 200) {
        return -1;
    }
    errno = 0;
    v = strtoll(out, &end, 10);
    if (errno != 0 || end == out || (*end != '\n' && *end != '\0')) {
        return -1;
    }
    return v;
}
