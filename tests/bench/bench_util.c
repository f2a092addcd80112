/* SPDX-License-Identifier: MIT */
/* bench_util.c - timer calibration, percentiles, temp dirs, line counts, server processes,
 * loopback connections. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "nwb/alloc.h"

#include "bench_util.h"

uint64_t nwb_bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double nwb_bench_ticks_per_ns(unsigned ms)
{
#if NWB_BENCH_HAVE_TSC
    const uint64_t span = (uint64_t)ms * 1000000u;
    uint64_t t0 = nwb_bench_now_ns();
    uint64_t c0 = nwb_bench_ticks_begin();
    uint64_t t1;
    uint64_t c1;

    do {
        t1 = nwb_bench_now_ns();
    } while (t1 - t0 < span);
    c1 = nwb_bench_ticks_end();
    return (double)(c1 - c0) / (double)(t1 - t0);
#else
    (void)ms;
    return 1.0;
#endif
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a;
    const uint64_t y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

void nwb_bench_sort_u64(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_u64);
}

uint64_t nwb_bench_quantile(const uint64_t *v, size_t n, double q)
{
    size_t rank;

    if (n == 0) {
        return 0;
    }
    if (q <= 0.0) {
        return v[0];
    }
    rank = (size_t)(q * (double)n + 0.999999);
    if (rank == 0) {
        rank = 1;
    }
    if (rank > n) {
        rank = n;
    }
    return v[rank - 1];
}

int nwb_bench_tmpdir(const char *tag, char *out, size_t outlen)
{
    const char *base = getenv("NWB_BENCH_TMP"); /* scripts/bench's knob, run by hand too */
    int n;

    if (base == NULL || base[0] == '\0') {
        base = getenv("TMPDIR");
    }
    if (base == NULL || base[0] == '\0') {
        base = "/tmp";
    }
    n = snprintf(out, outlen, "%s/nwb-bench-%s-XXXXXX", base, tag);
    if (n < 0 || (size_t)n >= outlen) {
        return -1;
    }
    return mkdtemp(out) != NULL ? 0 : -1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void nwb_bench_rmtree(const char *path)
{
    if (path == NULL || path[0] == '\0' || strcmp(path, "/") == 0) {
        return;
    }
    nftw(path, rm_entry, 32, FTW_DEPTH | FTW_PHYS);
}

/* Line counting through nftw needs file-scope state; the benchmarks are single-threaded here. */
static const char *count_needle;
static long long count_total;
static long long bytes_total;
static char *count_buf;

#define COUNT_CHUNK (1u << 20)
#define COUNT_CARRY (64u * 1024u)

static void count_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t carry = 0;
    size_t nlen = strlen(count_needle);

    if (fd < 0) {
        return;
    }
    for (;;) {
        ssize_t n = read(fd, count_buf + carry, COUNT_CHUNK);
        size_t len;
        size_t start = 0;

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (carry > 0 && memmem(count_buf, carry, count_needle, nlen) != NULL) {
                count_total++;
            }
            break;
        }
        len = carry + (size_t)n;
        for (;;) {
            char *nl = memchr(count_buf + start, '\n', len - start);

            if (nl == NULL) {
                break;
            }
            if (memmem(count_buf + start, (size_t)(nl - (count_buf + start)), count_needle, nlen) !=
                NULL) {
                count_total++;
            }
            start = (size_t)(nl - count_buf) + 1;
        }
        carry = len - start;
        if (carry >= COUNT_CARRY) {
            /* An over-long line: count this piece and start the next one. */
            if (memmem(count_buf + start, carry, count_needle, nlen) != NULL) {
                count_total++;
            }
            carry = 0;
        } else if (carry > 0) {
            memmove(count_buf, count_buf + start, carry);
        }
    }
    close(fd);
}

static int count_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag == FTW_F && S_ISREG(st->st_mode)) {
        bytes_total += (long long)st->st_size;
        if (count_needle != NULL) {
            count_file(path);
        }
    }
    return 0;
}

long long nwb_bench_count_lines(const char *dir, const char *needle)
{
    int rc;

    count_buf = nwb_malloc(COUNT_CHUNK + COUNT_CARRY);
    if (count_buf == NULL) {
        return -1;
    }
    count_needle = needle;
    count_total = 0;
    bytes_total = 0;
    rc = nftw(dir, count_entry, 32, FTW_PHYS);
    nwb_free(count_buf);
    count_buf = NULL;
    count_needle = NULL;
    return rc == 0 ? count_total : -1;
}

long long nwb_bench_dir_bytes(const char *dir)
{
    int rc;

    count_needle = NULL;
    bytes_total = 0;
    rc = nftw(dir, count_entry, 32, FTW_PHYS);
    return rc == 0 ? bytes_total : -1;
}

/* ---- server processes ---- */

#define TAIL_CAP 4096u

struct drain {
    pthread_t thread;
    int fds[2];  /* child's stdout, stderr (read ends) */
    int quit[2]; /* a pipe: written once the child is reaped */
    pthread_mutex_t lock;
    char tail[TAIL_CAP]; /* ring of the last output bytes */
    size_t tail_len;     /* bytes in tail, at most TAIL_CAP */
    size_t tail_pos;     /* next write position */
};

static void tail_add(struct drain *d, const char *buf, size_t n)
{
    pthread_mutex_lock(&d->lock);
    for (size_t i = 0; i < n; i++) {
        d->tail[d->tail_pos] = buf[i];
        d->tail_pos = (d->tail_pos + 1) % TAIL_CAP;
        if (d->tail_len < TAIL_CAP) {
            d->tail_len++;
        }
    }
    pthread_mutex_unlock(&d->lock);
}

static void *drain_main(void *arg)
{
    struct drain *d = arg;
    char buf[4096];

    int quitting = 0;
    int left = 64; /* reads allowed after the quit: a grandchild may keep writing */

    while (d->fds[0] >= 0 || d->fds[1] >= 0) {
        struct pollfd pfd[3] = {
            {d->fds[0], POLLIN, 0}, {d->fds[1], POLLIN, 0}, {d->quit[0], POLLIN, 0}};
        int rc = poll(pfd, quitting ? 2 : 3, quitting ? 0 : -1);

        if (rc < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        if (rc == 0 || (quitting && left-- == 0)) {
            break; /* quitting: a grandchild may still hold the pipes open */
        }
        if (!quitting && pfd[2].revents != 0) {
            quitting = 1;
        }
        for (int i = 0; i < 2; i++) {
            ssize_t n;

            if (d->fds[i] < 0 || pfd[i].revents == 0) {
                continue;
            }
            n = read(d->fds[i], buf, sizeof(buf));
            if (n > 0) {
                tail_add(d, buf, (size_t)n);
            } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                close(d->fds[i]);
                d->fds[i] = -1;
            }
        }
    }
    return NULL;
}

static int parse_listening(const char *text, int *port)
{
    const char *hit = strstr(text, "listening on http://");
    const char *host;
    const char *colon;
    const char *bracket;

    if (hit == NULL || strchr(hit, '\n') == NULL) {
        return 0;
    }
    host = hit + strlen("listening on http://");
    bracket = host[0] == '[' ? strchr(host, ']') : NULL;
    colon = bracket != NULL ? bracket + 1 : strchr(host, ':');
    if (colon == NULL || *colon != ':') {
        return -1;
    }
    *port = atoi(colon + 1);
    return *port > 0 ? 1 : -1;
}

static void reap_now(pid_t pid)
{
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
}

int nwb_bench_proc_start(struct nwb_bench_proc *p, char *const argv[], int timeout_ms, char *errbuf,
                         size_t errlen)
{
    int outp[2];
    int errp[2];
    char line[4096];
    size_t used = 0;
    uint64_t deadline;
    struct drain *d;
    int found = 0;

    memset(p, 0, sizeof(*p));
    p->pidfd = -1;
    if (pipe2(outp, O_CLOEXEC) != 0) {
        snprintf(errbuf, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    if (pipe2(errp, O_CLOEXEC) != 0) {
        snprintf(errbuf, errlen, "pipe: %s", strerror(errno));
        close(outp[0]);
        close(outp[1]);
        return -1;
    }
    p->pid = fork();
    if (p->pid == 0) {
        dup2(outp[1], STDOUT_FILENO);
        dup2(errp[1], STDERR_FILENO);
        execv(argv[0], argv);
        {
            /* Only async-signal-safe calls between fork and _exit. */
            static const char msg[] = "exec failed: ";
            ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);

            w = write(STDERR_FILENO, argv[0], strlen(argv[0]));
            w = write(STDERR_FILENO, "\n", 1);
            (void)w;
        }
        _exit(127);
    }
    close(outp[1]);
    close(errp[1]);
    if (p->pid < 0) {
        snprintf(errbuf, errlen, "fork: %s", strerror(errno));
        close(outp[0]);
        close(errp[0]);
        return -1;
    }
    p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
    deadline = nwb_bench_now_ns() + (uint64_t)timeout_ms * 1000000u;
    while (!found) {
        uint64_t now = nwb_bench_now_ns();
        struct pollfd pfd = {outp[0], POLLIN, 0};
        ssize_t n;
        int rc;

        if (now >= deadline) {
            snprintf(errbuf, errlen, "%s: no listening line within %d ms", argv[0], timeout_ms);
            break;
        }
        rc = poll(&pfd, 1, (int)((deadline - now) / 1000000u) + 1);
        if (rc <= 0) {
            continue;
        }
        n = read(outp[0], line + used, sizeof(line) - 1 - used);
        if (n <= 0) {
            char err[512] = "";
            ssize_t e = read(errp[0], err, sizeof(err) - 1);

            err[e > 0 ? e : 0] = '\0';
            snprintf(errbuf, errlen, "%s exited before listening: %s", argv[0], err);
            break;
        }
        used += (size_t)n;
        line[used] = '\0';
        rc = parse_listening(line, &p->port);
        if (rc < 0) {
            snprintf(errbuf, errlen, "%s: unparsable listening line: %s", argv[0], line);
            break;
        }
        if (rc > 0) {
            found = 1;
        } else if (used == sizeof(line) - 1) {
            used = 0;
        }
    }
    if (!found) {
        reap_now(p->pid);
        if (p->pidfd >= 0) {
            close(p->pidfd);
        }
        close(outp[0]);
        close(errp[0]);
        p->pid = 0;
        return -1;
    }
    d = nwb_calloc(1, sizeof(*d));
    if (d == NULL) {
        snprintf(errbuf, errlen, "out of memory");
        goto fail_reap;
    }
    d->fds[0] = outp[0];
    d->fds[1] = errp[0];
    if (pipe2(d->quit, O_CLOEXEC) != 0) {
        snprintf(errbuf, errlen, "pipe: %s", strerror(errno));
        nwb_free(d);
        goto fail_reap;
    }
    pthread_mutex_init(&d->lock, NULL);
    tail_add(d, line, used);
    if (pthread_create(&d->thread, NULL, drain_main, d) != 0) {
        snprintf(errbuf, errlen, "pthread_create failed");
        pthread_mutex_destroy(&d->lock);
        close(d->quit[0]);
        close(d->quit[1]);
        nwb_free(d);
        goto fail_reap;
    }
    p->drain = d;
    return 0;

fail_reap:
    reap_now(p->pid);
    if (p->pidfd >= 0) {
        close(p->pidfd);
    }
    close(outp[0]);
    close(errp[0]);
    p->pid = 0;
    return -1;
}

int nwb_bench_proc_stop(struct nwb_bench_proc *p, int sig, int timeout_ms)
{
    struct drain *d = p->drain;
    int status = -1;
    int exited = 0;

    if (p->pid <= 0) {
        return -1;
    }
    kill(p->pid, sig);
    if (p->pidfd >= 0) {
        struct pollfd pfd = {p->pidfd, POLLIN, 0};

        exited = poll(&pfd, 1, timeout_ms) == 1;
    } else {
        /* No pidfd (old kernel): bounded waitpid polling is the only wait available. */
        uint64_t deadline = nwb_bench_now_ns() + (uint64_t)timeout_ms * 1000000u;

        while (!exited && nwb_bench_now_ns() < deadline) {
            if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
                exited = 2;
                break;
            }
            poll(NULL, 0, 5);
        }
    }
    if (!exited) {
        kill(p->pid, SIGKILL);
    }
    if (exited != 2) {
        while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    if (!exited) {
        status = -1;
    }
    if (p->pidfd >= 0) {
        close(p->pidfd);
        p->pidfd = -1;
    }
    if (d != NULL) {
        ssize_t w = write(d->quit[1], "q", 1);

        (void)w; /* a pipe with room for one byte: cannot fail short */
        pthread_join(d->thread, NULL);
        close(d->quit[0]);
        close(d->quit[1]);
        for (int i = 0; i < 2; i++) {
            if (d->fds[i] >= 0) {
                close(d->fds[i]);
            }
        }
        nwb_bench_proc_output(p, p->last_output, sizeof(p->last_output));
        pthread_mutex_destroy(&d->lock);
        nwb_free(d);
        p->drain = NULL;
    }
    p->pid = 0;
    return status;
}

void nwb_bench_proc_output(struct nwb_bench_proc *p, char *buf, size_t cap)
{
    struct drain *d = p->drain;
    size_t n;
    size_t start;

    if (cap == 0) {
        return;
    }
    buf[0] = '\0';
    if (d == NULL) {
        snprintf(buf, cap, "%s", p->last_output);
        return;
    }
    pthread_mutex_lock(&d->lock);
    n = d->tail_len < cap - 1 ? d->tail_len : cap - 1;
    start = (d->tail_pos + TAIL_CAP - n) % TAIL_CAP;
    for (size_t i = 0; i < n; i++) {
        buf[i] = d->tail[(start + i) % TAIL_CAP];
    }
    buf[n] = '\0';
    pthread_mutex_unlock(&d->lock);
}

double nwb_bench_proc_cpu_s(pid_t pid)
{
    char path[64];
    char buf[1024];
    unsigned long utime = 0;
    unsigned long stime = 0;
    const char *rp;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1.0;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return -1.0;
    }
    buf[n] = '\0';
    /* Fields after "(comm)": state is field 3, utime 14, stime 15. */
    rp = strrchr(buf, ')');
    if (rp == NULL || sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
                             &stime) != 2) {
        return -1.0;
    }
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

double nwb_bench_self_cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

double nwb_bench_children_cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

double nwb_bench_machine_busy_s(void)
{
    unsigned long long v[8] = {0};
    char buf[512];
    ssize_t n;
    int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        return -1.0;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return -1.0;
    }
    buf[n] = '\0';
    /* cpu user nice system idle iowait irq softirq steal */
    if (sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5], &v[6], &v[7]) != 8) {
        return -1.0;
    }
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

int nwb_bench_connect(int port, int timeout_ms)
{
    const struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    struct sockaddr_in a;
    const int one = 1;
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int nwb_bench_metrics_get(int port, char *buf, size_t cap)
{
    static const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Connection: close\r\n\r\n";
    size_t used = 0;
    const int fd = nwb_bench_connect(port, 5000);

    if (fd < 0) {
        return -1;
    }
    if (write(fd, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1)) {
        close(fd);
        return -1;
    }
    for (;;) {
        const ssize_t n = read(fd, buf + used, cap - 1 - used);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0 || (used += (size_t)n) == cap - 1) {
            break;
        }
    }
    close(fd);
    buf[used] = '\0';
    return strncmp(buf, "HTTP/1.1 200", 12) == 0 ? 0 : -1;
}
