/* SPDX-License-Identifier: MIT */
/* test_support.c - process, socket and file helpers for integration tests (test_support.h). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nwb/file_io.h"
#include "test_support.h"

#ifndef NWB_TEST_SERVER_EXE
#define NWB_TEST_SERVER_EXE "nwb-logserver"
#endif

long long nwb_test_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long nwb_test_metric(int port, const char *name)
{
    const size_t cap = 1u << 18;
    char *body = malloc(cap);
    char key[256];
    const char *p;
    long long v = -1;

    if (body == NULL) {
        return -1;
    }
    if (nwb_test_http(port, "GET", "/metrics", NULL, NULL, 0, body, cap) == 200) {
        snprintf(key, sizeof(key), "\n%s ", name);
        p = strstr(body, key);
        v = p != NULL ? strtoll(p + strlen(key), NULL, 10) : -1;
    }
    free(body);
    return v;
}

int nwb_test_wait_metric(int port, const char *name, long long at_least, int timeout_ms)
{
    const long long deadline = nwb_test_now_ms() + timeout_ms;

    while (nwb_test_metric(port, name) < at_least) {
        if (nwb_test_now_ms() >= deadline) {
            return 0;
        }
        poll(NULL, 0, 50);
    }
    return 1;
}

int nwb_test_tmpdir(const char *tag, char *out, size_t outlen)
{
    const char *base = getenv("TMPDIR");

    snprintf(out, outlen, "%s/nwb-test-%s-XXXXXX", base != NULL ? base : "/tmp", tag);
    return mkdtemp(out) != NULL ? 0 : -1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) == 0 ? 0 : 0;
}

void nwb_test_rmtree(const char *path)
{
    nftw(path, rm_entry, 32, FTW_DEPTH | FTW_PHYS);
}

/* Servers started and not yet stopped: killed at exit, so a failed test leaves no orphan. */
static pid_t live_servers[64];

static void kill_live_servers(void)
{
    for (size_t i = 0; i < sizeof(live_servers) / sizeof(live_servers[0]); i++) {
        if (live_servers[i] > 0) {
            kill(live_servers[i], SIGKILL);
            waitpid(live_servers[i], NULL, 0);
            live_servers[i] = 0;
        }
    }
}

static void track_server(pid_t pid, int add)
{
    static int hooked;

    if (!hooked) {
        atexit(kill_live_servers);
        hooked = 1;
    }
    for (size_t i = 0; i < sizeof(live_servers) / sizeof(live_servers[0]); i++) {
        if (add ? live_servers[i] == 0 : live_servers[i] == pid) {
            live_servers[i] = add ? pid : 0;
            return;
        }
    }
}

/*
 * NWB_TEST_SERVER_WRAPPER: words (separated by spaces, no quoting) put before the server's
 * command, e.g. "valgrind --error-exitcode=1 --log-file=/tmp/vg.%p" (scripts/test's valgrind
 * stage). Looked up in $PATH. At most 32 words of the first 1023 bytes; unset or empty: none.
 */
#define WRAPPER_WORDS_MAX 32

static int server_wrapper(char *buf, size_t cap, const char **words)
{
    const char *env = getenv("NWB_TEST_SERVER_WRAPPER");
    int n = 0;

    if (env == NULL) {
        return 0;
    }
    snprintf(buf, cap, "%s", env);
    for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w != NULL && n < WRAPPER_WORDS_MAX;
         w = strtok_r(NULL, " \t", &save)) {
        words[n++] = w;
    }
    return n;
}

int nwb_test_server_start(struct nwb_test_server *srv, const char *exe, const char *out_dir,
                          int port, const char *const *extra)
{
    char wrap_buf[1024];
    const char *wrap[WRAPPER_WORDS_MAX];
    const int nwrap = server_wrapper(wrap_buf, sizeof(wrap_buf), wrap);
    int outp[2], errp[2];
    char portbuf[16];
    const char *argv[64 + WRAPPER_WORDS_MAX];
    int argc = 0;
    char line[1024];
    size_t used = 0;
    long long deadline;

    memset(srv, 0, sizeof(*srv));
    srv->stdout_fd = -1;
    srv->stderr_fd = -1;
    snprintf(srv->out_dir, sizeof(srv->out_dir), "%s", out_dir);
    snprintf(portbuf, sizeof(portbuf), "%d", port);
    for (int i = 0; i < nwrap; i++) {
        argv[argc++] = wrap[i];
    }
    argv[argc++] = exe != NULL ? exe : NWB_TEST_SERVER_EXE;
    argv[argc++] = "--port";
    argv[argc++] = portbuf;
    argv[argc++] = "--out";
    argv[argc++] = out_dir;
    for (int i = 0; extra != NULL && extra[i] != NULL && argc < 62 + nwrap; i++) {
        argv[argc++] = extra[i];
    }
    argv[argc] = NULL;
    if (pipe2(outp, O_CLOEXEC) != 0) {
        return -1;
    }
    if (pipe2(errp, O_CLOEXEC) != 0) {
        close(outp[0]);
        close(outp[1]);
        return -1;
    }
    srv->pid = fork();
    if (srv->pid == 0) {
        dup2(outp[1], STDOUT_FILENO);
        dup2(errp[1], STDERR_FILENO);
        char *av[64 + WRAPPER_WORDS_MAX];

        for (int i = 0; i <= argc; i++) {
            av[i] = (char *)(uintptr_t)argv[i]; /* execv's prototype predates const */
        }
        if (nwrap > 0) {
            execvp(av[0], av);
            _exit(127);
        }
        execv(av[0], av);
        _exit(127);
    }
    close(outp[1]);
    close(errp[1]);
    if (srv->pid < 0) {
        close(outp[0]);
        close(errp[0]);
        return -1;
    }
    track_server(srv->pid, 1);
    srv->stdout_fd = outp[0];
    srv->stderr_fd = errp[0];
    fcntl(srv->stdout_fd, F_SETFL, O_NONBLOCK);
    fcntl(srv->stderr_fd, F_SETFL, O_NONBLOCK);
    deadline = nwb_test_now_ms() + 10000;
    while (nwb_test_now_ms() < deadline) {
        struct pollfd pfd = {srv->stdout_fd, POLLIN, 0};
        const char *hit;
        ssize_t n;

        if (poll(&pfd, 1, (int)(deadline - nwb_test_now_ms())) <= 0) {
            continue;
        }
        n = read(srv->stdout_fd, line + used, sizeof(line) - 1 - used);
        if (n <= 0) {
            if (n < 0 && errno == EAGAIN) {
                continue;
            }
            break;
        }
        used += (size_t)n;
        line[used] = '\0';
        hit = strstr(line, "listening on http://");
        if (hit != NULL) {
            const char *colon = strchr(hit + strlen("listening on http://"), ']');

            colon = colon != NULL ? colon + 1 : strchr(hit + strlen("listening on http://"), ':');
            if (colon != NULL && *colon == ':' && strchr(colon, '\n') != NULL) {
                srv->port = atoi(colon + 1);
                return srv->port > 0 ? 0 : -1;
            }
        }
        if (used == sizeof(line) - 1) {
            used = 0;
        }
    }
    kill(srv->pid, SIGKILL);
    waitpid(srv->pid, NULL, 0);
    track_server(srv->pid, 0);
    close(srv->stdout_fd);
    close(srv->stderr_fd);
    srv->pid = 0;
    return -1;
}

int nwb_test_server_stop(struct nwb_test_server *srv, int sig, int timeout_ms)
{
    long long deadline = nwb_test_now_ms() + timeout_ms;
    int status = -1;

    if (srv->pid <= 0) {
        return -1;
    }
    kill(srv->pid, sig);
    for (;;) {
        pid_t r = waitpid(srv->pid, &status, WNOHANG);

        if (r == srv->pid) {
            break;
        }
        if (nwb_test_now_ms() >= deadline) {
            kill(srv->pid, SIGKILL);
            waitpid(srv->pid, &status, 0);
            status = -1;
            break;
        }
        /* Waiting for a child has no fd to poll on here; a short poll() slice is the wait. */
        poll(NULL, 0, 5);
    }
    track_server(srv->pid, 0);
    srv->pid = 0;
    if (srv->stdout_fd >= 0) {
        close(srv->stdout_fd);
    }
    if (srv->stderr_fd >= 0) {
        close(srv->stderr_fd);
    }
    srv->stdout_fd = srv->stderr_fd = -1;
    return status;
}

size_t nwb_test_server_stderr(struct nwb_test_server *srv, char *buf, size_t cap)
{
    size_t used = 0;

    while (srv->stderr_fd >= 0 && used + 1 < cap) {
        ssize_t n = read(srv->stderr_fd, buf + used, cap - 1 - used);

        if (n <= 0) {
            break;
        }
        used += (size_t)n;
    }
    buf[used] = '\0';
    return used;
}

struct sockaddr_in nwb_test_loopback(int port)
{
    struct sockaddr_in sa;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return sa;
}

int nwb_test_reserve_dead_port(int *port)
{
    struct sockaddr_in sa = nwb_test_loopback(0);
    socklen_t len = sizeof(sa);
    const int one = 1;
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    *port = -1;
    if (fd < 0) {
        return -1;
    }
    /* SO_REUSEADDR only after the bind: the port is chosen as for any other socket, and the
     * flag lets a server that asks for it as well share the port later. */
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

int nwb_test_connect(int port)
{
    const struct sockaddr_in sa = nwb_test_loopback(port);
    struct timeval tv = {10, 0};
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int nwb_test_send_all(int fd, const void *data, size_t len)
{
    const char *p = data;

    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

long nwb_test_read_response(int fd, int *status, char *body, size_t cap)
{
    char head[16384];
    size_t used = 0;
    char *end = NULL;
    long clen = 0;
    size_t have;
    const char *cl;

    *status = -1;
    while (end == NULL) {
        ssize_t n;

        if (used == sizeof(head) - 1) {
            return -1;
        }
        n = recv(fd, head + used, sizeof(head) - 1 - used, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        used += (size_t)n;
        head[used] = '\0';
        end = strstr(head, "\r\n\r\n");
    }
    if (sscanf(head, "HTTP/1.%*d %d", status) != 1) {
        return -1;
    }
    cl = strcasestr(head, "\r\ncontent-length:");
    if (cl != NULL && cl < end) {
        clen = strtol(cl + strlen("\r\ncontent-length:"), NULL, 10);
    }
    end += 4;
    have = used - (size_t)(end - head);
    if (body != NULL && cap > 0) {
        size_t copy = have < cap - 1 ? have : cap - 1;

        memcpy(body, end, copy);
        body[copy] = '\0';
    }
    while ((long)have < clen) {
        char tmp[4096];
        size_t want = (size_t)clen - have < sizeof(tmp) ? (size_t)clen - have : sizeof(tmp);
        ssize_t n = recv(fd, tmp, want, 0);

        if (n <= 0) {
            return -1;
        }
        if (body != NULL && have + 1 < cap) {
            size_t copy = (size_t)n < cap - 1 - have ? (size_t)n : cap - 1 - have;

            memcpy(body + have, tmp, copy);
            body[have + copy] = '\0';
        }
        have += (size_t)n;
    }
    return clen;
}

int nwb_test_http(int port, const char *method, const char *path, const char *headers,
                  const void *body, size_t body_len, char *resp, size_t resp_cap)
{
    char head[4096];
    int status = -1;
    int fd = nwb_test_connect(port);
    int n;

    if (fd < 0) {
        return -1;
    }
    n = snprintf(head, sizeof(head),
                 "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %zu\r\n%s\r\n", method, path,
                 body_len, headers != NULL ? headers : "");
    if (nwb_test_send_all(fd, head, (size_t)n) != 0 ||
        (body_len > 0 && nwb_test_send_all(fd, body, body_len) != 0) ||
        nwb_test_read_response(fd, &status, resp, resp_cap) < 0) {
        status = -1;
    }
    close(fd);
    return status;
}

int nwb_test_wait_closed(int fd, int timeout_ms)
{
    long long deadline = nwb_test_now_ms() + timeout_ms;

    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        long long left = deadline - nwb_test_now_ms();
        char tmp[4096];
        ssize_t n;

        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) {
            return 0;
        }
        n = recv(fd, tmp, sizeof(tmp), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            return 1;
        }
    }
}

int nwb_test_write_file(const char *path, const void *data, size_t len, unsigned mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    if (fd < 0) {
        return -1;
    }
    if (nwb_write_all(fd, data, len) != 0) {
        close(fd);
        return -1;
    }
    if (close(fd) != 0 || chmod(path, (mode_t)mode) != 0) {
        return -1;
    }
    return 0;
}

char *nwb_test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, used = 0;

    if (f == NULL) {
        return NULL;
    }
    for (;;) {
        size_t n;

        if (cap - used < 65536) {
            char *nb = realloc(buf, cap * 2 + 65536 + 1);

            if (nb == NULL) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap = cap * 2 + 65536;
        }
        n = fread(buf + used, 1, cap - used, f);
        used += n;
        if (n == 0) {
            break;
        }
    }
    fclose(f);
    buf[used] = '\0';
    if (len != NULL) {
        *len = used;
    }
    return buf;
}

int nwb_test_find_run_log(const char *out_dir, const char *program, const char *run, char *path,
                          size_t pathlen)
{
    char runs[1024];
    DIR *d;
    struct dirent *e;
    int found = 0;
    const size_t plen = strlen(program), rlen = strlen(run);

    snprintf(runs, sizeof(runs), "%s/runs", out_dir);
    d = opendir(runs);
    if (d == NULL) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        const size_t n = strlen(e->d_name);

        if (n > plen + rlen + 2 && strncmp(e->d_name, program, plen) == 0 &&
            e->d_name[plen] == '_' && strcmp(e->d_name + n - rlen, run) == 0 &&
            e->d_name[n - rlen - 1] == '_') {
            snprintf(path, pathlen, "%s/%s/log.txt", runs, e->d_name);
            found++;
        }
    }
    closedir(d);
    return found == 1 ? 0 : -1;
}

/* Wait for @p pid at most @p timeout_ms (then SIGKILL); its wait status, or -1. */
static int wait_child(pid_t pid, int timeout_ms)
{
    const long long deadline = nwb_test_now_ms() + timeout_ms;
    const int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int status = -1, delay = 1;

    if (pidfd >= 0) {
        struct pollfd pfd = {pidfd, POLLIN, 0};

        if (poll(&pfd, 1, timeout_ms) != 1) {
            kill(pid, SIGKILL);
        }
        close(pidfd);
    } else {
        while (waitpid(pid, &status, WNOHANG) == 0) {
            if (nwb_test_now_ms() > deadline) {
                kill(pid, SIGKILL);
                break;
            }
            poll(NULL, 0, delay);
            delay = delay < 50 ? delay * 2 : 50;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            return status;
        }
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    return status;
}

int nwb_test_run(const char *const *argv, const char *const *env, const char *out_path,
                 int timeout_ms)
{
    const pid_t pid = fork();

    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        const struct rlimit no_core = {0, 0};
        const int fd = out_path != NULL
                           ? open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
                           : open("/dev/null", O_WRONLY | O_CLOEXEC);

        setrlimit(RLIMIT_CORE, &no_core);
        for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
            putenv((char *)(uintptr_t)env[i]);
        }
        unsetenv("NWB_LOGSERVER");
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
        }
        execv(argv[0], (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    return wait_child(pid, timeout_ms);
}

size_t nwb_test_count(const char *hay, const char *needle)
{
    const size_t hay_len = strlen(hay), needle_len = strlen(needle);
    size_t n = 0, at = 0;

    if (needle_len == 0) {
        return 0;
    }
    /* memchr + memcmp, not memmem: the sanitizers' memmem checks the whole rest of the
     * haystack on every call, which is quadratic on a big log (minutes under TSan). */
    while (hay_len - at >= needle_len) {
        const char *hit = memchr(hay + at, needle[0], hay_len - at - needle_len + 1);

        if (hit == NULL) {
            break;
        }
        at = (size_t)(hit - hay);
        if (memcmp(hit, needle, needle_len) == 0) {
            n++;
        }
        at++;
    }
    return n;
}

int nwb_test_wait_file_contains(const char *path, const char *needle, int timeout_ms)
{
    long long deadline = nwb_test_now_ms() + timeout_ms;
    int delay = 1;

    for (;;) {
        char *text = nwb_test_read_file(path, NULL);
        int hit = text != NULL && strstr(text, needle) != NULL;

        free(text);
        if (hit) {
            return 1;
        }
        if (nwb_test_now_ms() >= deadline) {
            return 0;
        }
        /* Files have no readiness event worth the complexity here; back off geometrically. */
        poll(NULL, 0, delay);
        delay = delay < 50 ? delay * 2 : 50;
    }
}

long long nwb_test_cpu_ticks(pid_t pid)
{
    char path[64];
    char buf[2048];
    unsigned long long ut = 0, st = 0;
    const char *p;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* the command name may hold spaces */
    /* after ") ": state(3) ... utime is field 14, stime 15 */
    if (p == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2) {
        return -1;
    }
    return (long long)(ut + st);
}
