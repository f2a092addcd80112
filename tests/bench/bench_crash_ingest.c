/* SPDX-License-Identifier: MIT */
/*
 * bench_crash_ingest.c - crash ingest rate of the real nwb-logserver:
 * archives/s and MB/s for 64 KiB and 20 MiB tar.zst packages, from the first
 * POST /v1/crash until GET /v1/crashes/<id> says "extracted" for all of them,
 * beside `bsdtar -x` of the same archives in the same run (sequential
 * extraction with no checks: the peer floor).
 * usage: bench_crash_ingest [--server-exe P] [--small N] [--large N]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "nwb/crash.h"

#ifndef NWB_BENCH_SERVER_EXE
#define NWB_BENCH_SERVER_EXE "nwb-logserver"
#endif

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Text that compresses about as well as real maps/backtraces (zstd ~3-4x). */
static int write_text(const char *path, size_t bytes)
{
    FILE *f = fopen(path, "w");
    size_t n = 0;

    if (f == NULL) {
        return -1;
    }
    while (n < bytes) {
        const uint64_t r = next_rand();

        n += (size_t)fprintf(f, "7f%010llx-7f%010llx r-xp %08llx 08:01 %llu /usr/lib/libfoo%u.so\n",
                             (unsigned long long)(r & 0xffffffffffull),
                             (unsigned long long)((r >> 8) & 0xffffffffffull),
                             (unsigned long long)(r >> 40), (unsigned long long)(r % 999983),
                             (unsigned)(r % 97));
    }
    return fclose(f);
}

static int make_package(const char *work, const char *tag, int i, size_t bytes, char *archive,
                        size_t cap)
{
    char dir[1024], path[1200], err[256];
    FILE *f;

    snprintf(dir, sizeof(dir), "%s/pkg-%s-%d", work, tag, i);
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/manifest.txt", dir);
    f = fopen(path, "w");
    if (f == NULL) {
        return -1;
    }
    fprintf(f,
            "nwb-crash-manifest 1\nkind=signal\nprogram=bench\nrun=bench%08d\nsignal=SIGSEGV\n"
            "nonce=%llu\n",
            i, (unsigned long long)next_rand());
    fclose(f);
    snprintf(path, sizeof(path), "%s/maps.txt", dir);
    if (write_text(path, bytes) != 0) {
        return -1;
    }
    snprintf(archive, cap, "%s/%s-%d.tar.zst", work, tag, i);
    if (nwb_crash_pack_dir(dir, archive, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_crash_ingest: pack: %s\n", err);
        return -1;
    }
    nwb_bench_rmtree(dir);
    return 0;
}

/* One request on a fresh connection; the response body goes to @p resp. Returns the status. */
static int request(int port, const char *head, const void *body, size_t len, char *resp, size_t cap)
{
    const int fd = nwb_bench_connect(port, 30000);
    size_t used = 0;
    int status = -1;

    if (fd < 0) {
        return -1;
    }
    if (send(fd, head, strlen(head), MSG_NOSIGNAL) < 0) {
        close(fd);
        return -1;
    }
    for (size_t off = 0; off < len;) {
        const ssize_t n = send(fd, (const char *)body + off, len - off, MSG_NOSIGNAL);

        if (n <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    for (;;) {
        const ssize_t n = recv(fd, resp + used, cap - 1 - used, 0);

        if (n <= 0) {
            break;
        }
        used += (size_t)n;
        if (used == cap - 1) {
            break;
        }
    }
    resp[used] = '\0';
    close(fd);
    sscanf(resp, "HTTP/1.%*d %d", &status);
    return status;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

struct result {
    double seconds;
    double mb;
    int count;
};

static int bench_server(const char *exe, const char *work, char **archives, int n,
                        struct result *res)
{
    struct nwb_bench_proc proc;
    char out[1100], err[256], resp[4096];
    char(*ids)[64] = calloc((size_t)n, 64);
    uint64_t t0;
    static char a_port[] = "--port", a_zero[] = "0", a_out[] = "--out";
    static char a_rp[] = "--crash-retain-packages", a_rr[] = "--crash-retain-raw";
    char *argv[] = {
        (char *)(uintptr_t)exe, a_port, a_zero, a_out, out, a_rp, a_zero, a_rr, a_zero, NULL};

    snprintf(out, sizeof(out), "%s/out", work);
    if (nwb_bench_proc_start(&proc, argv, 10000, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_crash_ingest: %s\n", err);
        return -1;
    }
    res->mb = 0;
    t0 = nwb_bench_now_ns();
    for (int i = 0; i < n; i++) {
        char head[512];
        size_t len = 0;
        char *body = read_all(archives[i], &len);
        const char *id;

        snprintf(head, sizeof(head),
                 "POST /v1/crash HTTP/1.1\r\nHost: x\r\nContent-Type: application/zstd\r\n"
                 "X-NWB-Program: bench\r\nX-NWB-Run: bench%08d\r\nContent-Length: %zu\r\n"
                 "Connection: close\r\n\r\n",
                 i, len);
        if (body == NULL || request(proc.port, head, body, len, resp, sizeof(resp)) != 200 ||
            (id = strstr(resp, "\"id\"")) == NULL ||
            sscanf(id + 4, "%*[^\"]\"%63[0-9a-f]", ids[i]) != 1) {
            fprintf(stderr, "bench_crash_ingest: upload %d failed: %.200s\n", i, resp);
            free(body);
            nwb_bench_proc_stop(&proc, 15, 10000);
            return -1;
        }
        res->mb += (double)len / 1e6;
        free(body);
    }
    /* Done when every id reports "extracted" (the worker extracts in upload order). */
    for (int i = n - 1; i >= 0; i--) {
        const uint64_t deadline = nwb_bench_now_ns() + 120ull * 1000000000ull;

        for (;;) {
            char head[256];

            snprintf(head, sizeof(head),
                     "GET /v1/crashes/%s HTTP/1.1\r\nHost: x\r\n"
                     "Connection: close\r\n\r\n",
                     ids[i]);
            if (request(proc.port, head, NULL, 0, resp, sizeof(resp)) == 200 &&
                strstr(resp, "\"extracted\"") != NULL) {
                break;
            }
            if (strstr(resp, "\"invalid\"") != NULL || nwb_bench_now_ns() > deadline) {
                fprintf(stderr, "bench_crash_ingest: %s not extracted: %.300s\n", ids[i], resp);
                nwb_bench_proc_stop(&proc, 15, 10000);
                return -1;
            }
            /* Only the last upload is polled: its status is the end of the measurement. */
            nanosleep(&(struct timespec){0, 200000}, NULL);
        }
        break; /* the last one extracted means all earlier ones were too */
    }
    res->seconds = (double)(nwb_bench_now_ns() - t0) / 1e9;
    res->count = n;
    nwb_bench_proc_stop(&proc, 15, 10000);
    free(ids);
    return 0;
}

static int bench_bsdtar(const char *work, char **archives, int n, struct result *res)
{
    const uint64_t t0 = nwb_bench_now_ns();

    res->mb = 0;
    for (int i = 0; i < n; i++) {
        char dir[1100];
        struct stat st;
        pid_t pid;
        int status;

        snprintf(dir, sizeof(dir), "%s/bsdtar-%d", work, i);
        mkdir(dir, 0755);
        stat(archives[i], &st);
        res->mb += (double)st.st_size / 1e6;
        pid = fork();
        if (pid == 0) {
            execlp("bsdtar", "bsdtar", "-x", "-f", archives[i], "-C", dir, (char *)NULL);
            _exit(127);
        }
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            fprintf(stderr, "bench_crash_ingest: bsdtar failed (is libarchive-tools installed?)\n");
            return -1;
        }
    }
    res->seconds = (double)(nwb_bench_now_ns() - t0) / 1e9;
    res->count = n;
    return 0;
}

int main(int argc, char **argv)
{
    const char *exe = NWB_BENCH_SERVER_EXE;
    int small = 200, large = 5;
    char work[512];
    int rc = 0;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--server-exe") == 0) {
            exe = argv[i + 1];
        } else if (strcmp(argv[i], "--small") == 0) {
            small = atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "--large") == 0) {
            large = atoi(argv[i + 1]);
        }
    }
    if (nwb_bench_tmpdir("crash-ingest", work, sizeof(work)) != 0) {
        return 1;
    }
    printf("crash ingest: tar.zst packages POSTed to nwb-logserver until extracted, beside "
           "bsdtar -x of the same archives\n");
    printf("| package | archives | archive MB | nwb archives/s | nwb MB/s | bsdtar archives/s | "
           "bsdtar MB/s | nwb / bsdtar |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < 2 && rc == 0; k++) {
        const size_t bytes = k == 0 ? 64u * 1024u : 20u * 1024u * 1024u;
        const int n = k == 0 ? small : large;
        char **archives = calloc((size_t)n, sizeof(char *));
        struct result a, b;

        for (int i = 0; i < n && rc == 0; i++) {
            archives[i] = malloc(1200);
            rc = make_package(work, k == 0 ? "small" : "large", i, bytes, archives[i], 1200);
        }
        if (rc == 0) {
            rc = bench_server(exe, work, archives, n, &a);
        }
        if (rc == 0) {
            rc = bench_bsdtar(work, archives, n, &b);
        }
        if (rc == 0) {
            printf("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f%% |\n",
                   k == 0 ? "64 KiB" : "20 MiB", n, a.mb, a.count / a.seconds, a.mb / a.seconds,
                   b.count / b.seconds, b.mb / b.seconds, 100.0 * b.seconds / a.seconds);
        }
        for (int i = 0; i < n; i++) {
            free(archives[i]);
        }
        free(archives);
        fflush(stdout);
    }
    nwb_bench_rmtree(work);
    return rc == 0 ? 0 : 1;
}
