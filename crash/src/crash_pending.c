/* SPDX-License-Identifier: MIT */
/*
 * crash_pending.c - the pending folder (<crash_dir>/pending) outside the
 * dying process: recovering packages a handler could not finish, archiving
 * package folders, pruning to the count and byte caps (oldest first), and
 * uploading oldest first under an flock(2) lock so only one uploader runs.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/deadline.h"
#include "nwb/error.h"
#include "nwb/token.h"

#include "capture_int.h"

#define SCAN_MAX        4096u /* entries looked at per scan */
#define PROCESS_ROUNDS  8u    /* rescans for packages that arrive while uploading */
#define PARTIAL_STALE_S 600   /* a .tmp folder this old is recovered even if its pid lives */
#define DIR_DEPTH_MAX   8u

struct item {
    char name[256];
    int kind;
    uint64_t bytes;
};

int nwb__crash_lock_open(const char *pending_dir)
{
    char path[NWB_CRASH_PATH_MAX + 32];
    int fd;

    if ((size_t)snprintf(path, sizeof(path), "%s/.lock", pending_dir) >= sizeof(path)) {
        return NWB_ECONFIG;
    }
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    return fd >= 0 ? fd : -errno;
}

static int ends_with(const char *s, const char *suffix)
{
    const size_t n = strlen(s), m = strlen(suffix);

    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int is_archive_name(const char *name)
{
    return ends_with(name, ".tar.zst") || ends_with(name, ".tar.gz") || ends_with(name, ".tar") ||
           ends_with(name, ".zip");
}

static uint64_t tree_bytes(const char *path, unsigned depth)
{
    DIR *d;
    const struct dirent *e;
    uint64_t sum = 0;

    if (depth > DIR_DEPTH_MAX) {
        return 0;
    }
    d = opendir(path);
    if (d == NULL) {
        return 0;
    }
    while ((e = readdir(d)) != NULL) {
        char sub[NWB_CRASH_PATH_MAX * 2];
        struct stat st;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        if (lstat(sub, &st) != 0) {
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            sum += tree_bytes(sub, depth + 1);
        } else if (S_ISREG(st.st_mode)) {
            sum += (uint64_t)st.st_size;
        }
    }
    closedir(d);
    return sum;
}

static int cmp_items(const void *a, const void *b)
{
    return strcmp(((const struct item *)a)->name, ((const struct item *)b)->name);
}

/* The pending entries, sorted by name (names start with the crash time: oldest first). */
static int scan(const char *pending, struct item **out, size_t *count)
{
    DIR *d = opendir(pending);
    struct item *items;
    const struct dirent *e;
    size_t n = 0;

    *out = NULL;
    *count = 0;
    if (d == NULL) {
        return errno == ENOENT ? 0 : -errno;
    }
    items = nwb_calloc(SCAN_MAX, sizeof(*items));
    if (items == NULL) {
        closedir(d);
        return -ENOMEM;
    }
    while (n < SCAN_MAX && (e = readdir(d)) != NULL) {
        char path[NWB_CRASH_PATH_MAX * 2];
        struct stat st;
        struct item *it = &items[n];

        if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(it->name)) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", pending, e->d_name);
        if (lstat(path, &st) != 0) {
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            it->kind =
                ends_with(e->d_name, ".tmp") ? NWB_CRASH_PENDING_PARTIAL : NWB_CRASH_PENDING_DIR;
            it->bytes = tree_bytes(path, 0);
        } else if (S_ISREG(st.st_mode) && is_archive_name(e->d_name)) {
            it->kind = NWB_CRASH_PENDING_ARCHIVE;
            it->bytes = (uint64_t)st.st_size;
        } else {
            continue;
        }
        snprintf(it->name, sizeof(it->name), "%s", e->d_name);
        n++;
    }
    closedir(d);
    qsort(items, n, sizeof(*items), cmp_items);
    *out = items;
    *count = n;
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    (void)remove(path);
    return 0;
}

static void rm_tree(const char *path)
{
    (void)nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void report(const nwb_crash_pending_opts_t *o, const char *fmt, ...) NWB_PRINTF_LIKE(2, 3);

static void report(const nwb_crash_pending_opts_t *o, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    if (o->report == NULL) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    o->report(o->report_arg, line);
}

/* The pid in "<stamp>_<program>_<pid>_<seq>_<kind>.tmp", or -1. */
static long partial_pid(const char *name)
{
    char tmp[256];
    char *p;
    int field = 0;

    snprintf(tmp, sizeof(tmp), "%s", name);
    p = tmp + strlen(tmp);
    while (p > tmp) {
        p--;
        if (*p == '_') {
            if (++field == 3) {
                char *end;
                const long pid = strtol(p + 1, &end, 10);

                return end != p + 1 && *end == '_' && pid > 0 ? pid : -1;
            }
        }
    }
    return -1;
}

/* A .tmp folder whose writer died: keep it (marked incomplete) if it has a manifest. */
static int recover_partial(const char *pending, const struct item *it,
                           const nwb_crash_pending_opts_t *o)
{
    char path[NWB_CRASH_PATH_MAX * 2], final[NWB_CRASH_PATH_MAX * 2], man[NWB_CRASH_PATH_MAX * 3];
    const long pid = partial_pid(it->name);
    struct stat st;
    int fd;

    snprintf(path, sizeof(path), "%s/%s", pending, it->name);
    if (stat(path, &st) != 0) {
        return 0;
    }
    if (pid > 0 && kill((pid_t)pid, 0) == 0 && time(NULL) - st.st_mtime < PARTIAL_STALE_S) {
        return 0; /* its handler may still be writing */
    }
    snprintf(man, sizeof(man), "%s/%s", path, NWB_CRASH_MANIFEST_NAME);
    fd = open(man, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        report(o, "removing %s: the handler died before writing its manifest", it->name);
        rm_tree(path);
        return 1;
    }
    (void)nwb_write_all(fd, "incomplete=1\n", 13);
    close(fd);
    snprintf(final, sizeof(final), "%.*s", (int)(strlen(path) - 4), path);
    if (rename(path, final) != 0) {
        return 0;
    }
    report(o, "recovered %s (its handler did not finish)", it->name);
    return 1;
}

static int pack_one(const char *pending, const struct item *it, const nwb_crash_pending_opts_t *o)
{
    char dir[NWB_CRASH_PATH_MAX * 2], file[NWB_CRASH_PATH_MAX * 2 + 16];
    char why[512];
    int err;

    snprintf(dir, sizeof(dir), "%s/%s", pending, it->name);
    snprintf(file, sizeof(file), "%s.tar.zst", dir);
    err = nwb_crash_pack_dir(dir, file, why, sizeof(why));
    if (err != 0) {
        report(o, "cannot archive %s: %s", it->name, why);
        if (err == -ENOENT) {
            rm_tree(dir); /* an empty folder is nothing to keep */
        }
        return err;
    }
    rm_tree(dir);
    report(o, "archived %s", it->name);
    return 0;
}

/* Delete the oldest archives beyond @p max_count / @p max_bytes. Returns how many. */
static unsigned prune(const char *dir, unsigned max_count, uint64_t max_bytes,
                      const nwb_crash_pending_opts_t *o)
{
    struct item *items;
    size_t n, archives = 0;
    uint64_t bytes = 0;
    unsigned pruned = 0;

    if (scan(dir, &items, &n) != 0) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (items[i].kind != NWB_CRASH_PENDING_PARTIAL) {
            archives++;
            bytes += items[i].bytes;
        }
    }
    for (size_t i = 0; i < n && (archives > max_count || bytes > max_bytes); i++) {
        char path[NWB_CRASH_PATH_MAX * 2];

        if (items[i].kind == NWB_CRASH_PENDING_PARTIAL) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, items[i].name);
        if (items[i].kind == NWB_CRASH_PENDING_DIR) {
            rm_tree(path);
        } else {
            (void)unlink(path);
        }
        report(o, "pruned %s (%llu bytes): pending caps are %u packages, %llu bytes", items[i].name,
               (unsigned long long)items[i].bytes, max_count, (unsigned long long)max_bytes);
        archives--;
        bytes -= items[i].bytes;
        pruned++;
    }
    nwb_free(items);
    return pruned;
}

static int id_char(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
           c == '_';
}

/* The "id" string of a {"id": "..."} answer. */
static int parse_id(const char *body, char *out, size_t cap)
{
    const char *p = strstr(body, "\"id\"");
    size_t n = 0;

    if (p == NULL) {
        return NWB_EPROTO;
    }
    p += 4;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
        p++;
    }
    if (*p++ != ':') {
        return NWB_EPROTO;
    }
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
        p++;
    }
    if (*p++ != '"') {
        return NWB_EPROTO;
    }
    while (id_char(p[n]) && n + 1 < cap) {
        out[n] = p[n];
        n++;
    }
    out[n] = '\0';
    return n > 0 && p[n] == '"' ? 0 : NWB_EPROTO;
}

static const char *content_type(const char *file)
{
    if (ends_with(file, ".zip")) {
        return "application/zip";
    }
    if (ends_with(file, ".tar.gz")) {
        return "application/gzip";
    }
    if (ends_with(file, ".tar")) {
        return "application/x-tar";
    }
    return "application/zstd";
}

int nwb_crash_upload_file(const char *file, const char *server, unsigned timeout_ms,
                          nwb_crash_upload_result_t *res, char *errbuf, size_t errlen)
{
    char program[NWB_SAFE_NAME_MAX + 1], run[NWB_SAFE_NAME_MAX + 1];
    char headers[1024], body[1024], token[NWB_TOKEN_MAX + 1];
    struct stat st;
    int fd, err;

    memset(res, 0, sizeof(*res));
    err = nwb_token_from_env(token, sizeof(token), errbuf, errlen);
    if (err != 0) {
        return err; /* nothing sent: the archive stays pending */
    }
    if (server == NULL) {
        server = getenv("NWB_LOGSERVER");
    }
    if (server == NULL || server[0] == '\0') {
        server = NWB__CRASH_DEF_SERVER;
    }
    if (timeout_ms == 0) {
        timeout_ms = NWB__CRASH_DEF_TIMEOUT_MS;
    }
    (void)nwb__crash_archive_identity(file, program, run);
    fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        err = -errno;
        if (fd >= 0) {
            close(fd);
        }
        if (errbuf != NULL) {
            snprintf(errbuf, errlen, "cannot open %s: %s", file, strerror(-err));
        }
        return err;
    }
    snprintf(headers, sizeof(headers), "Content-Type: %s\r\n%s%s%s%s%s%s%s%s%s", content_type(file),
             program[0] != '\0' ? "X-NWB-Program: " : "", program, program[0] != '\0' ? "\r\n" : "",
             run[0] != '\0' ? "X-NWB-Run: " : "", run, run[0] != '\0' ? "\r\n" : "",
             token[0] != '\0' ? "Authorization: Bearer " : "", token,
             token[0] != '\0' ? "\r\n" : "");
    memset(token, 0, sizeof(token));
    err = nwb__crash_http_post(server, "/v1/crash", headers, fd, (uint64_t)st.st_size, timeout_ms,
                               &res->http_status, body, sizeof(body));
    close(fd);
    if (err != 0) {
        if (errbuf != NULL) {
            char tmp[128];

            snprintf(errbuf, errlen, "POST http://%s/v1/crash: %s", server,
                     nwb_strerror_r(err, tmp, sizeof(tmp)));
        }
        return err;
    }
    if (res->http_status != 200) {
        if (errbuf != NULL) {
            snprintf(errbuf, errlen, "POST http://%s/v1/crash: HTTP %d %.200s", server,
                     res->http_status, body);
        }
        return NWB_EHTTP;
    }
    err = parse_id(body, res->id, sizeof(res->id));
    if (err != 0 && errbuf != NULL) {
        snprintf(errbuf, errlen, "POST http://%s/v1/crash: 200 without an id: %.200s", server,
                 body);
    }
    return err;
}

/*
 * Answers about the archive itself, which retrying will not change. Everything else (404 or 405
 * from a server without crash ingest, 408, 429, 5xx) keeps the archive pending for a later try.
 */
static int is_permanent(int status)
{
    return status == 400 || status == 413 || status == 415 || status == 422;
}

static void move_to_failed(const nwb_crash_pending_opts_t *o, const char *crash_dir,
                           const char *pending, const char *name, unsigned max_count)
{
    char failed[NWB_CRASH_PATH_MAX + 16], from[NWB_CRASH_PATH_MAX * 2], to[NWB_CRASH_PATH_MAX * 2];

    snprintf(failed, sizeof(failed), "%s/failed", crash_dir);
    (void)mkdir(failed, 0700);
    snprintf(from, sizeof(from), "%s/%s", pending, name);
    snprintf(to, sizeof(to), "%s/%s", failed, name);
    if (rename(from, to) != 0) {
        (void)unlink(from);
    }
    /* The failed folder has the same count cap; its bytes are bounded by the pending cap. */
    (void)prune(failed, max_count, UINT64_MAX, o);
}

static int lock_wait(int fd, int op, unsigned wait_ms)
{
    const nwb_deadline_t deadline = nwb_deadline_in_ms(wait_ms);

    for (;;) {
        if (flock(fd, op | LOCK_NB) == 0) {
            return 0;
        }
        if (errno != EWOULDBLOCK && errno != EINTR) {
            return -errno;
        }
        /* Expired only once the whole wait has passed (left_ms rounds up). */
        if (nwb_deadline_expired(&deadline)) {
            return NWB_ETIMEOUT;
        }
        /* flock(2) has no timed form and no fd to poll: retry in short slices. */
        (void)poll(NULL, 0, 10);
    }
}

int nwb_crash_pending_process(const nwb_crash_pending_opts_t *opts,
                              nwb_crash_pending_stats_t *stats)
{
    nwb_crash_pending_opts_t o = *opts;
    nwb_crash_pending_stats_t local;
    char crash_dir[NWB_CRASH_PATH_MAX], pending[NWB_CRASH_PATH_MAX + 16];
    int fd = o.lock_fd, own_fd = 0, err = 0, server_down = 0;

    if (stats == NULL) {
        stats = &local;
    }
    memset(stats, 0, sizeof(*stats));
    if (o.crash_dir == NULL) {
        o.crash_dir = getenv("NWB_CRASH_DIR");
    }
    if (o.crash_dir == NULL || o.crash_dir[0] == '\0') {
        o.crash_dir = NWB__CRASH_DEF_DIR;
    }
    o.max_count = o.max_count != 0 ? o.max_count : NWB__CRASH_DEF_PENDING_COUNT;
    o.max_bytes = o.max_bytes != 0 ? o.max_bytes : NWB__CRASH_DEF_PENDING_BYTES;
    if ((size_t)snprintf(crash_dir, sizeof(crash_dir), "%s", o.crash_dir) >= sizeof(crash_dir)) {
        return NWB_ECONFIG;
    }
    snprintf(pending, sizeof(pending), "%s/pending", crash_dir);
    if (fd < 0) {
        fd = nwb__crash_lock_open(pending);
        if (fd < 0) {
            return fd;
        }
        own_fd = 1;
        /* Another uploader finishes within its own timeouts; wait for it. */
        while (flock(fd, LOCK_EX) != 0) {
            if (errno != EINTR) {
                err = -errno;
                close(fd);
                return err;
            }
        }
    }
    for (unsigned round = 0; round < PROCESS_ROUNDS; round++) {
        struct item *items;
        size_t n;
        int progress = 0;

        err = scan(pending, &items, &n);
        if (err != 0) {
            break;
        }
        for (size_t i = 0; i < n; i++) {
            if (items[i].kind == NWB_CRASH_PENDING_PARTIAL) {
                progress |= recover_partial(pending, &items[i], &o);
            }
        }
        nwb_free(items);
        err = scan(pending, &items, &n);
        if (err != 0) {
            break;
        }
        for (size_t i = 0; i < n; i++) {
            if (items[i].kind == NWB_CRASH_PENDING_DIR && pack_one(pending, &items[i], &o) == 0) {
                stats->packed++;
                progress = 1;
            }
        }
        nwb_free(items);
        stats->pruned += prune(pending, o.max_count, o.max_bytes, &o);
        if (o.no_upload || server_down) {
            break;
        }
        err = scan(pending, &items, &n);
        if (err != 0) {
            break;
        }
        for (size_t i = 0; i < n && !server_down; i++) {
            char path[NWB_CRASH_PATH_MAX * 2], why[512];
            nwb_crash_upload_result_t res;
            int rc;

            if (items[i].kind != NWB_CRASH_PENDING_ARCHIVE) {
                continue;
            }
            snprintf(path, sizeof(path), "%s/%s", pending, items[i].name);
            rc = nwb_crash_upload_file(path, o.server, o.timeout_ms, &res, why, sizeof(why));
            if (rc == 0) {
                report(&o, "uploaded %s: id %s", items[i].name, res.id);
                (void)unlink(path);
                stats->uploaded++;
                progress = 1;
            } else if (rc == NWB_EHTTP && is_permanent(res.http_status)) {
                report(&o, "server refused %s: %s (moved to failed/)", items[i].name, why);
                move_to_failed(&o, crash_dir, pending, items[i].name, o.max_count);
                stats->rejected++;
                progress = 1;
            } else {
                report(&o, "upload of %s failed, kept pending: %s", items[i].name, why);
                server_down = 1;
            }
        }
        nwb_free(items);
        if (!progress) {
            break;
        }
    }
    if (err == 0) {
        struct item *items;
        size_t n;

        if (scan(pending, &items, &n) == 0) {
            for (size_t i = 0; i < n; i++) {
                stats->left += items[i].kind != NWB_CRASH_PENDING_PARTIAL;
            }
            nwb_free(items);
        }
        err = stats->left > 0 ? NWB_EFULL : 0;
    }
    if (own_fd) {
        close(fd); /* releases the lock */
    }
    return err;
}

int nwb_crash_pending_list(const char *crash_dir, int wait, unsigned wait_ms,
                           nwb_crash_pending_entry_t *out, size_t cap, size_t *count)
{
    char pending[NWB_CRASH_PATH_MAX + 16];
    struct item *items;
    size_t n;
    int fd = -1, err;

    *count = 0;
    if (crash_dir == NULL) {
        crash_dir = getenv("NWB_CRASH_DIR");
    }
    if (crash_dir == NULL || crash_dir[0] == '\0') {
        crash_dir = NWB__CRASH_DEF_DIR;
    }
    if ((size_t)snprintf(pending, sizeof(pending), "%s/pending", crash_dir) >= sizeof(pending)) {
        return NWB_ECONFIG;
    }
    if (wait) {
        fd = nwb__crash_lock_open(pending);
        if (fd < 0) {
            return fd == -ENOENT ? 0 : fd;
        }
        err = lock_wait(fd, LOCK_SH, wait_ms);
        if (err != 0) {
            close(fd);
            return err;
        }
    }
    err = scan(pending, &items, &n);
    if (err == 0) {
        for (size_t i = 0; i < n && i < cap; i++) {
            snprintf(out[i].name, sizeof(out[i].name), "%s", items[i].name);
            out[i].kind = items[i].kind;
            out[i].bytes = items[i].bytes;
        }
        *count = n;
        nwb_free(items);
    }
    if (fd >= 0) {
        close(fd);
    }
    return err;
}
