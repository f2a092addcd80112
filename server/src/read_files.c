/* SPDX-License-Identifier: MIT */
/*
 * read_files.c - the read endpoints that answer a stored file: GET /v1/runs/<id>/telemetry
 * (the run's telemetry.json), GET /v1/crashes/<id>/files/<name> (a file of an extracted
 * crash package) and GET /v1/crashes/<id>/archive (the archive as it was uploaded). All open every
 * path component with O_NOFOLLOW under a folder the server made, take regular files only, read them
 * under a cap on the thread pool, and set the content type. docs/protocol.md, "Reading".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/file_io.h"

#include "crash_ingest_int.h"
#include "read_int.h"
#include "server_int.h"

struct file_read {
    char id[NWB__RUN_ID_MAX + 1]; /* a run id or a crash id */
    char name[NWB__URL_MAX + 1];  /* the crash file's decoded path */
    size_t name_len;
    const char *ctype;
    char extra[128]; /* header lines after Content-Type */
    uint8_t *data;
    size_t len;
    int err;
};

/* The content type of a package file, by its name's extension. */
static const char *content_type(const char *name, size_t len)
{
    static const struct {
        const char *ext;
        const char *type;
    } types[] = {
        {".txt", "text/plain; charset=utf-8"}, {".log", "text/plain; charset=utf-8"},
        {".json", "application/json"},         {".zst", "application/zstd"},
        {".gz", "application/gzip"},           {".tar", "application/x-tar"},
    };

    for (size_t i = 0; i < NWB_ARRAY_SIZE(types); i++) {
        const size_t elen = strlen(types[i].ext);

        if (len > elen && memcmp(name + len - elen, types[i].ext, elen) == 0) {
            return types[i].type;
        }
    }
    return "application/octet-stream";
}

static void file_read_fd(struct file_read *f, int fd, size_t max)
{
    if (fd < 0) {
        f->err = fd;
        return;
    }
    f->err = nwb_file_read_fd(fd, max, &f->data, &f->len);
    close(fd);
}

/* Open @p name (decoded, checked by nwb__read_file_path_valid) below the folder @p dfd (which
 * this takes over), every component with O_NOFOLLOW. The fd, or a negated errno. */
static int open_below(int dfd, const char *name, size_t len)
{
    size_t i = 0;

    while (dfd >= 0) {
        const char *slash = memchr(name + i, '/', len - i);
        const size_t end = slash != NULL ? (size_t)(slash - name) : len;
        char comp[NWB__READ_FILE_NAME_MAX + 1];
        int next;

        memcpy(comp, name + i, end - i);
        comp[end - i] = '\0';
        next = openat(dfd, comp,
                      slash != NULL ? O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
                                    : O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (next < 0) {
            next = -errno;
        }
        close(dfd);
        if (slash == NULL || next < 0) {
            return next;
        }
        dfd = next;
        i = end + 1;
    }
    return dfd;
}

/* Answer what a file_read came back with: @p what names the file in errors, @p missing is the
 * 404 reason, a file over @p max is answered @p too_big. */
static void file_done(struct nwb__conn *c, const char *what, const char *missing, unsigned max,
                      int too_big)
{
    struct file_read *f = c->work.ctx;
    char msg[192], ebuf[96];

    c->work.ctx = NULL;
    if (c->state == NWB__CONN_CLOSED) {
        /* nothing to answer */
    } else if (f->err == 0 && nwb__read_reserve(c, f->len) != 0) {
        /* 503 answered: the answer budget is spent */
    } else if (f->err == 0) {
        nwb__conn_respond(c, 200, f->ctype, (const char *)f->data, f->len, f->len > 0, f->extra);
        if (f->len > 0) {
            f->data = NULL; /* the connection frees it */
        }
    } else if (f->err == -ENOENT || f->err == -ENOTDIR || f->err == -ELOOP ||
               f->err == NWB_EPROTO || f->err == NWB_ENOTREG) {
        nwb__conn_respond_error(c, 404, missing);
    } else if (f->err == NWB_ETOOBIG) {
        snprintf(msg, sizeof(msg), "%s is larger than the %u bytes answered", what, max);
        nwb__conn_respond_error(c, too_big, msg);
    } else {
        snprintf(msg, sizeof(msg), "cannot read %s: %s", what,
                 nwb_strerror_r(f->err, ebuf, sizeof(ebuf)));
        nwb__conn_respond_error(c, f->err == -ENOMEM ? 503 : 500, msg);
    }
    nwb_free(f->data);
    nwb_free(f);
}

/* A file_read for @p id (@p len bytes), or NULL after answering 503. */
static struct file_read *file_read_new(struct nwb__conn *c, const char *id, size_t len)
{
    struct file_read *f = nwb_calloc(1, sizeof(*f));

    if (f == NULL) {
        nwb__conn_respond_error(c, 503, "out of memory");
        return NULL;
    }
    memcpy(f->id, id, len);
    return f;
}

static void queue_read(struct nwb__conn *c, struct file_read *f, nwb__work_run_fn run,
                       nwb__work_done_fn done)
{
    c->work.ctx = f;
    if (nwb__offload(c, run, done) != 0) {
        c->work.ctx = NULL;
        nwb_free(f);
        nwb__conn_respond_error(c, 500, "cannot queue the request");
    }
}

/* ---- GET /v1/runs/<id>/telemetry ---- */

static void telemetry_run(struct nwb__conn *c)
{
    struct file_read *f = c->work.ctx;
    const int dfd = nwb__read_run_dirfd(c->srv->out_dir, f->id, strlen(f->id));
    int fd = dfd;

    if (dfd >= 0) {
        fd = openat(dfd, NWB_TEL_REPORT_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        fd = fd < 0 ? -errno : fd;
        close(dfd);
    }
    file_read_fd(f, fd, NWB__READ_TELEMETRY_MAX);
}

static void telemetry_done(struct nwb__conn *c)
{
    file_done(c, "the run's " NWB_TEL_REPORT_FILE, "no such run, or it has no telemetry report",
              NWB__READ_TELEMETRY_MAX, 500);
}

void nwb__read_telemetry_handle(struct nwb__conn *c)
{
    struct nwb__target t;
    struct file_read *f;
    const char *id;
    size_t id_len;

    if (nwb__read_target_run(c, &t, &id, &id_len) != 0) {
        return;
    }
    f = file_read_new(c, id, id_len);
    if (f == NULL) {
        return;
    }
    f->ctype = "application/json";
    queue_read(c, f, telemetry_run, telemetry_done);
}

/* ---- GET /v1/crashes/<id>/files/<name> ---- */

/* The server's analysis files a crash's files endpoint also serves (docs/crash.md). */
static int is_analysis_file(const char *name, size_t len)
{
    static const char *const names[] = {"stack.txt", "stack.json", "signature.txt",
                                        "symbolize_failed.txt"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (len == strlen(names[i]) && memcmp(name, names[i], len) == 0) {
            return 1;
        }
    }
    return 0;
}

static void crash_file_run(struct nwb__conn *c)
{
    struct file_read *f = c->work.ctx;
    char path[4096];
    int dfd;

    int fd;

    snprintf(path, sizeof(path), "%s/crashes/packages/%s", c->srv->out_dir, f->id);
    dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    fd = dfd < 0 ? -errno : open_below(dfd, f->name, f->name_len);
    if (fd == -ENOENT && dfd >= 0 && is_analysis_file(f->name, f->name_len)) {
        /* What the server derived (crash_analysis.h), when the package has no such file. */
        snprintf(path, sizeof(path), "%s/crashes/analysis/%s", c->srv->out_dir, f->id);
        dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        fd = dfd < 0 ? -errno : open_below(dfd, f->name, f->name_len);
    }
    file_read_fd(f, fd, NWB__READ_FILE_MAX);
}

static void crash_file_done(struct nwb__conn *c)
{
    file_done(c, "the crash file", "no such crash package or file", NWB__READ_FILE_MAX, 413);
}

void nwb__read_crash_file_handle(struct nwb__conn *c)
{
    static const char files[] = "files";
    struct nwb__target t;
    struct file_read *f;
    const char *id, *seg;
    size_t id_len, seg_len, off;
    long n;

    nwb__target_split(c->req.url, c->req.url_len, &t);
    if (!nwb__path_segment(t.path, t.path_len, "/v1/crashes/", 0, &id, &id_len) ||
        id_len != NWB_CRASH_INGEST_ID_LEN ||
        !nwb__path_segment(t.path, t.path_len, "/v1/crashes/", 1, &seg, &seg_len) ||
        seg_len != sizeof(files) - 1 || memcmp(seg, files, seg_len) != 0) {
        nwb__conn_respond_error(c, 404, "no such crash package or file");
        return;
    }
    f = file_read_new(c, id, id_len);
    if (f == NULL) {
        return;
    }
    /* The name: everything after ".../files/" (the route has at least one byte there). */
    off = (size_t)(seg + seg_len - t.path) + 1;
    n = off < t.path_len ? nwb__pct_decode(t.path + off, t.path_len - off, 0, f->name, NWB__URL_MAX)
                         : 0;
    if (!nwb__crash_id_valid(f->id) || n < 0 || !nwb__read_file_path_valid(f->name, (size_t)n)) {
        nwb_free(f);
        nwb__conn_respond_error(c, n < 0 ? 400 : 404,
                                n < 0 ? "malformed file name: a bad %XX escape or an escaped NUL"
                                      : "no such crash package or file");
        return;
    }
    f->name_len = (size_t)n;
    f->ctype = content_type(f->name, f->name_len);
    queue_read(c, f, crash_file_run, crash_file_done);
}

/* ---- GET /v1/crashes/<id>/archive ---- */

/* Where the store keeps an upload (crash_store.c): raw/ while it is kept, invalid/ once it was
 * refused, named <id>.<ext> with one of nwb__crash_archive_kinds. */
static const char *const archive_folders[] = {"raw", "invalid"};

static void crash_archive_run(struct nwb__conn *c)
{
    struct file_read *f = c->work.ctx;
    char path[4096];
    int fd = -ENOENT;

    /* raw/ first: an archive moves from raw/ to invalid/, never back. */
    for (size_t i = 0; i < NWB_ARRAY_SIZE(archive_folders) && fd == -ENOENT; i++) {
        for (size_t j = 0; j < nwb__crash_archive_kinds_count && fd == -ENOENT; j++) {
            const struct nwb__crash_archive_kind *k = &nwb__crash_archive_kinds[j];

            snprintf(path, sizeof(path), "%s/crashes/%s/%s.%s", c->srv->out_dir, archive_folders[i],
                     f->id, k->ext);
            fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
            if (fd < 0) {
                fd = -errno;
            } else {
                f->ctype = k->type;
                snprintf(f->extra, sizeof(f->extra),
                         "Content-Disposition: attachment; filename=\"%.32s.%s\"\r\n", f->id,
                         k->ext);
            }
        }
    }
    file_read_fd(f, fd, NWB__READ_ARCHIVE_MAX);
}

static void crash_archive_done(struct nwb__conn *c)
{
    file_done(c, "the raw archive", "no such crash, or its raw archive is no longer kept",
              NWB__READ_ARCHIVE_MAX, 413);
}

void nwb__read_crash_archive_handle(struct nwb__conn *c)
{
    struct nwb__target t;
    struct file_read *f;
    const char *id;
    size_t id_len;

    nwb__target_split(c->req.url, c->req.url_len, &t);
    if (!nwb__path_segment(t.path, t.path_len, "/v1/crashes/", 0, &id, &id_len) ||
        id_len != NWB_CRASH_INGEST_ID_LEN) {
        nwb__conn_respond_error(c, 404, "no such crash, or its raw archive is no longer kept");
        return;
    }
    f = file_read_new(c, id, id_len);
    if (f == NULL) {
        return;
    }
    if (!nwb__crash_id_valid(f->id)) {
        nwb_free(f);
        nwb__conn_respond_error(c, 404, "no such crash, or its raw archive is no longer kept");
        return;
    }
    f->ctype = "application/octet-stream";
    queue_read(c, f, crash_archive_run, crash_archive_done);
}
