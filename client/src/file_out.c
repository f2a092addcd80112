/* SPDX-License-Identifier: MIT */
/*
 * file_out.c - the standalone output (struct nwb__out_ops): one run's
 * records as text lines in <log_dir>/runs/<program>_<YYYYmmdd-HHMMSS>_<run>/log.txt,
 * the server's layout and line format, optionally echoed to stderr. A round's
 * lines go out in one write(2); a failing write is reported once on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "nwb/log_line.h"

#include "client_core.h"

/* Lines buffered per write; one line is at most nwb_log_line_max() (about 257 KiB). */
#define FILE_OUT_BUF (1024u * 1024u)

struct file_out {
    struct nwb__out base;
    const struct nwb__settings *s;
    struct nwb__stats *st;
    int fd;
    char path[1280];
    char *buf;
    size_t len;
    uint64_t buffered; /* records in buf */
    size_t program_len;
    int reported; /* a failure was reported and no write has succeeded since */
    nwb_log_line_clock_t clock;
};

static struct file_out *file_out_of(struct nwb__out *o)
{
    return NWB_CONTAINER_OF(o, struct file_out, base);
}

/* Report a failed write (@p err: a negative errno) once on stderr, never through the log
 * itself. */
static void report_failure(struct file_out *f, int err)
{
    char tmp[128];
    char msg[1536];
    int n;

    atomic_fetch_add_explicit(&f->st->write_errors, 1u, memory_order_relaxed);
    if (f->reported) {
        return;
    }
    f->reported = 1;
    n = snprintf(msg, sizeof(msg),
                 "nwb: cannot write %s: %s (records are lost; reported again only after a "
                 "write succeeds)\n",
                 f->path, nwb_strerror_r(err, tmp, sizeof(tmp)));
    if (n > 0) {
        ssize_t w = write(STDERR_FILENO, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg));

        (void)w;
    }
}

static void write_out(struct file_out *f)
{
    int err;

    if (f->len == 0) {
        return;
    }
    err = f->fd >= 0 ? nwb_write_all(f->fd, f->buf, f->len) : -EBADF;
    if (f->s->console) {
        (void)nwb_write_all(STDERR_FILENO, f->buf, f->len);
    }
    if (err != 0) {
        report_failure(f, err);
    } else {
        atomic_fetch_add_explicit(&f->st->records_written, f->buffered, memory_order_relaxed);
        f->reported = 0;
    }
    f->len = 0;
    f->buffered = 0;
}

static int file_append(struct nwb__out *o, const nwb_log_record_t *rec)
{
    struct file_out *f = file_out_of(o);
    const size_t need = nwb_log_line_max(rec, f->program_len);

    if (f->len + need > FILE_OUT_BUF) {
        write_out(f);
    }
    f->len += nwb_log_line_format(f->buf + f->len, FILE_OUT_BUF - f->len, &f->clock, rec,
                                  f->s->program, f->program_len);
    f->buffered++;
    return 0;
}

static void file_commit(struct nwb__out *o, uint64_t now_mono_ns, int force)
{
    (void)now_mono_ns;
    (void)force; /* every round is written: the file is local */
    write_out(file_out_of(o));
}

static int file_poll_prepare(struct nwb__out *o, short *events, int *timeout_ms)
{
    (void)o;
    (void)timeout_ms;
    *events = 0;
    return -1;
}

static void file_service(struct nwb__out *o, short revents, uint64_t now_mono_ns)
{
    (void)o;
    (void)revents;
    (void)now_mono_ns;
}

static int file_settled(struct nwb__out *o)
{
    return file_out_of(o)->len == 0;
}

static void file_close(struct nwb__out *o, uint64_t deadline_mono_ns)
{
    struct file_out *f;

    (void)deadline_mono_ns;
    if (o == NULL) {
        return;
    }
    f = file_out_of(o);
    write_out(f);
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
    }
}

static void file_destroy(struct nwb__out *o)
{
    struct file_out *f;

    if (o == NULL) {
        return;
    }
    f = file_out_of(o);
    if (f->fd >= 0) {
        close(f->fd);
    }
    nwb_free(f->buf);
    nwb_free(f);
}

static const struct nwb__out_ops file_ops = {
    file_append,  file_commit, file_poll_prepare, file_service,
    file_settled, file_close,  file_destroy,
};

void nwb__file_out_swap_fd(struct nwb__out *o, int fd)
{
    struct file_out *f = file_out_of(o);

    if (f->fd >= 0) {
        close(f->fd);
    }
    f->fd = fd;
}

int nwb__run_dir_format(const struct nwb__settings *s, char *dst, size_t cap)
{
    char stamp[16];

    nwb_time_compact(s->start_time_ns, stamp);
    return snprintf(dst, cap, "%s/runs/%s_%s_%s", s->log_dir, s->program, stamp, s->run_id);
}

int nwb__file_out_create(const struct nwb__settings *s, struct nwb__stats *st,
                         struct nwb__out **out, char *errbuf, size_t errlen)
{
    struct file_out *f = nwb_calloc(1, sizeof(*f));
    char dir[1280];
    char tmp[128];
    int rc;
    int n;

    *out = NULL;
    if (f == NULL) {
        snprintf(errbuf, errlen, "out of memory");
        return -ENOMEM;
    }
    f->buf = nwb_malloc(FILE_OUT_BUF);
    if (f->buf == NULL) {
        rc = -ENOMEM;
        snprintf(errbuf, errlen, "out of memory");
        goto fail_free;
    }
    f->base.ops = &file_ops;
    f->s = s;
    f->st = st;
    f->fd = -1;
    f->program_len = strlen(s->program);
    f->clock = (nwb_log_line_clock_t)NWB_LOG_LINE_CLOCK_INIT;
    n = nwb__run_dir_format(s, dir, sizeof(dir));
    if (n < 0 || (size_t)n >= sizeof(dir) - sizeof("/log.txt")) {
        rc = NWB_ECONFIG;
        snprintf(errbuf, errlen, "log_dir is too long");
        goto fail_free;
    }
    rc = nwb_mkdir_p(dir, 0755); /* the server's layout, readable by the player's tools */
    if (rc != 0) {
        snprintf(errbuf, errlen, "cannot create %s: %s", dir, nwb_strerror_r(rc, tmp, sizeof(tmp)));
        goto fail_free;
    }
    memcpy(f->path, dir, (size_t)n);
    memcpy(f->path + n, "/log.txt", sizeof("/log.txt"));
    f->fd = open(f->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (f->fd < 0) {
        rc = -errno;
        snprintf(errbuf, errlen, "cannot open %s: %s", f->path,
                 nwb_strerror_r(rc, tmp, sizeof(tmp)));
        goto fail_free;
    }
    *out = &f->base;
    return 0;

fail_free:
    nwb_free(f->buf);
    nwb_free(f);
    return rc;
}
