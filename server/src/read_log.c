/* SPDX-License-Identifier: MIT */
/*
 * read_log.c - GET /v1/runs/<id>/log: whole lines of a run's log.txt, a byte range
 * (?offset=N&limit=BYTES) or the last lines (?tail=N), read with bounded preads on the thread
 * pool whatever the log's size (a 10 GiB log is never read whole), with the log's current size
 * in X-NWB-Log-Size. docs/protocol.md, "Reading".
 */
#define _GNU_SOURCE /* memrchr */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"

#include "read_int.h"
#include "server_int.h"

/* Bytes read at once while looking for a line end. */
#define SCAN_BLOCK (64u * 1024u)

_Static_assert(NWB__LOG_LINE_LONGEST == NWB_LOG_LINE_FIXED_MAX + NWB_SAFE_NAME_MAX +
                                            4u * NWB_LOG_RECORD_FILE_MAX + 4u * NWB__DECODE_MSG_MAX,
               "the longest line is the renderer's");

/* pread @p n bytes at @p off into @p buf, short only at the end of the file. */
static int pread_full(int fd, void *buf, size_t n, uint64_t off, size_t *got)
{
    size_t done = 0;

    while (done < n) {
        const ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));

        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            return -errno;
        }
        if (r == 0) {
            break;
        }
        done += (size_t)r;
    }
    *got = done;
    return 0;
}

/* Append [off, off + n) of @p fd to @p out (n bytes at most; fewer at the file's end). */
static int append_range(int fd, uint64_t off, size_t n, nwb_buf_t *out)
{
    size_t got = 0;
    int err = nwb_buf_reserve(out, n);

    if (err == 0) {
        err = pread_full(fd, out->data + out->len, n, off, &got);
    }
    if (err == 0) {
        out->len += got;
    }
    return err;
}

/*
 * The position just after the first '\n' in [from, end), looked for in blocks, at most
 * @p bound bytes: 0 with @p *pos, 1 when there is none before @p end, 2 when none within
 * @p bound (a damaged, overlong line), or a negated errno.
 */
static int next_line_start(int fd, uint64_t from, uint64_t end, uint64_t bound, uint64_t *pos)
{
    char block[SCAN_BLOCK];
    uint64_t at = from;

    while (at < end && at - from < bound) {
        const uint64_t left = end - at < bound - (at - from) ? end - at : bound - (at - from);
        const size_t want = left < sizeof(block) ? (size_t)left : sizeof(block);
        size_t got = 0;
        const char *nl;
        const int err = pread_full(fd, block, want, at, &got);

        if (err != 0) {
            return err;
        }
        if (got == 0) {
            return 1;
        }
        nl = memchr(block, '\n', got);
        if (nl != NULL) {
            *pos = at + (uint64_t)(nl - block) + 1;
            return 0;
        }
        at += got;
    }
    return at >= end ? 1 : 2;
}

int nwb__read_log_range(int fd, uint64_t size, uint64_t offset, uint64_t limit, nwb_buf_t *out,
                        uint64_t *start)
{
    uint64_t s = offset;
    size_t want;
    const char *nl;
    int err;

    *start = offset;
    if (offset > size) {
        return NWB_ERANGE;
    }
    if (offset > 0 && offset < size) {
        char prev = 0;
        size_t got = 0;

        err = pread_full(fd, &prev, 1, offset - 1, &got);
        if (err != 0) {
            return err;
        }
        if (got == 1 && prev != '\n') {
            err = next_line_start(fd, offset, size, NWB__LOG_LINE_LONGEST, &s);
            if (err < 0) {
                return err;
            }
            s = err == 1 ? size : err == 2 ? offset + NWB__LOG_LINE_LONGEST : s;
        }
    }
    *start = s;
    if (s >= size) {
        return 0;
    }
    want = size - s < limit ? (size_t)(size - s) : (size_t)limit;
    err = append_range(fd, s, want, out);
    if (err != 0) {
        return err;
    }
    nl = out->len > 0 ? memrchr(out->data, '\n', out->len) : NULL;
    if (nl != NULL) {
        out->len = (size_t)(nl - (const char *)out->data) + 1;
        return 0;
    }
    if (s + out->len >= size) {
        out->len = 0; /* the rest is a line still without its '\n' */
        return 0;
    }
    if (out->len >= NWB__LOG_LINE_LONGEST) {
        out->len = NWB__LOG_LINE_LONGEST; /* damaged: cut */
        return 0;
    }
    /* One line longer than the limit: answered whole, up to the longest line. */
    {
        uint64_t end = 0;

        err = next_line_start(fd, s + out->len, size, NWB__LOG_LINE_LONGEST - out->len, &end);
        if (err < 0) {
            return err;
        }
        if (err == 1) {
            out->len = 0;
            return 0;
        }
        end = err == 2 ? s + NWB__LOG_LINE_LONGEST : end;
        return append_range(fd, s + out->len, (size_t)(end - s - out->len), out);
    }
}

int nwb__read_log_tail(int fd, uint64_t size, uint64_t lines, uint64_t max_bytes, nwb_buf_t *out,
                       uint64_t *start)
{
    char block[SCAN_BLOCK];
    uint64_t end = 0, at, s;
    uint64_t seen = 0;
    int found_end = 0;

    *start = size;
    /* Back from the end: first the last '\n' (a last line without one is not whole), then
     * @p lines more line starts, within @p max_bytes of that end. */
    at = size;
    s = size;
    while (at > 0) {
        const size_t want = at < sizeof(block) ? (size_t)at : sizeof(block);
        size_t got = 0;
        const int err = pread_full(fd, block, want, at - want, &got);

        if (err != 0) {
            return err;
        }
        if (got != want) {
            return -EIO; /* shrank meanwhile */
        }
        for (size_t i = want; i-- > 0;) {
            const uint64_t pos = at - want + i;

            if (block[i] != '\n') {
                continue;
            }
            if (!found_end) {
                found_end = 1;
                end = pos + 1;
                s = end;
                continue;
            }
            if (end - (pos + 1) > max_bytes) {
                goto done;
            }
            s = pos + 1;
            if (++seen == lines) {
                goto done;
            }
        }
        at -= want;
        if (!found_end && size - at >= NWB__LOG_LINE_LONGEST) {
            return 0; /* no line end near the end: nothing whole to answer */
        }
        if (found_end && end - at > max_bytes) {
            goto done;
        }
    }
    if (found_end && end <= max_bytes && seen < lines) {
        s = 0; /* the first line of the file */
    }
done:
    if (!found_end) {
        return 0;
    }
    *start = s;
    return append_range(fd, s, (size_t)(end - s), out);
}

/* ---- the endpoint ---- */

struct log_read {
    char id[NWB__RUN_ID_MAX + 1];
    uint64_t size_cap; /* the index's logBytes (committed), or UINT64_MAX */
    int tail;
    uint64_t offset, limit, lines;
    nwb_buf_t text;
    uint64_t start, size;
    int err;
};

static void log_run(struct nwb__conn *c)
{
    struct log_read *l = c->work.ctx;
    const int dfd = nwb__read_run_dirfd(c->srv->out_dir, l->id, strlen(l->id));
    struct stat st;
    int fd;

    if (dfd < 0) {
        l->err = dfd;
        return;
    }
    fd = openat(dfd, "log.txt", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    close(dfd);
    if (fd < 0) {
        /* No log yet (a run with telemetry only): an empty one. */
        l->err = errno == ENOENT ? 0 : -errno;
        l->size = 0;
        if (l->err == 0 && !l->tail && l->offset > 0) {
            l->err = NWB_ERANGE;
        }
        return;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        l->err = NWB_ENOTREG;
        close(fd);
        return;
    }
    /* Not past what the log worker reported written: a batch being written is not whole. */
    l->size = (uint64_t)st.st_size < l->size_cap ? (uint64_t)st.st_size : l->size_cap;
    if (l->tail) {
        l->err = nwb__read_log_tail(fd, l->size, l->lines, NWB__READ_TAIL_BYTES_MAX, &l->text,
                                    &l->start);
    } else {
        l->err = nwb__read_log_range(fd, l->size, l->offset, l->limit, &l->text, &l->start);
    }
    close(fd);
}

static void log_done(struct nwb__conn *c)
{
    struct log_read *l = c->work.ctx;
    char extra[128], msg[192], ebuf[96];

    c->work.ctx = NULL;
    snprintf(extra, sizeof(extra), "X-NWB-Log-Size: %llu\r\nX-NWB-Log-Offset: %llu\r\n",
             (unsigned long long)l->size, (unsigned long long)l->start);
    if (c->state == NWB__CONN_CLOSED) {
        /* nothing to answer */
    } else if (l->err == 0 && nwb__read_reserve(c, l->text.len) != 0) {
        /* 503 answered: the answer budget is spent */
    } else if (l->err == 0) {
        nwb__conn_respond(c, 200, "text/plain; charset=utf-8", (const char *)l->text.data,
                          l->text.len, l->text.len > 0, extra);
        if (l->text.len > 0) {
            nwb_buf_init(&l->text, 0); /* the connection frees it */
        }
    } else if (l->err == NWB_ERANGE) {
        snprintf(msg, sizeof(msg), "?offset=%llu is past the end of the log (%llu bytes)\n",
                 (unsigned long long)l->offset, (unsigned long long)l->size);
        snprintf(extra, sizeof(extra), "X-NWB-Log-Size: %llu\r\n", (unsigned long long)l->size);
        nwb__conn_respond(c, 416, "text/plain; charset=utf-8", msg, strlen(msg), 0, extra);
    } else if (l->err == -ENOENT || l->err == NWB_EPROTO) {
        nwb__conn_respond_error(c, 404, "no such run");
    } else if (l->err == NWB_ENOTREG) {
        nwb__conn_respond_error(c, 500, "the run's log.txt is not a regular file");
    } else {
        snprintf(msg, sizeof(msg), "cannot read the run's log: %s",
                 nwb_strerror_r(l->err, ebuf, sizeof(ebuf)));
        nwb__conn_respond_error(c, l->err == -ENOMEM ? 503 : 500, msg);
    }
    nwb_buf_cleanup(&l->text);
    nwb_free(l);
}

void nwb__read_log_handle(struct nwb__conn *c)
{
    const struct nwb__run_info *r;
    struct nwb__target t;
    struct log_read *l;
    const char *id;
    size_t id_len;
    int has_offset = 0, has_limit = 0;

    if (nwb__read_target_run(c, &t, &id, &id_len) != 0) {
        return;
    }
    l = nwb_calloc(1, sizeof(*l));
    if (l == NULL) {
        nwb__conn_respond_error(c, 503, "out of memory");
        return;
    }
    l->limit = NWB__READ_LOG_LIMIT_DEFAULT;
    if (nwb__read_query_u64(c, &t, "offset", 0, UINT64_MAX, &l->offset, &has_offset) != 0 ||
        nwb__read_query_u64(c, &t, "limit", 1, NWB__READ_LOG_LIMIT_MAX, &l->limit, &has_limit) !=
            0 ||
        nwb__read_query_u64(c, &t, "tail", 1, NWB__READ_TAIL_LINES_MAX, &l->lines, &l->tail) != 0) {
        nwb_free(l);
        return;
    }
    if (l->tail && (has_offset || has_limit)) {
        nwb_free(l);
        nwb__conn_respond_error(c, 400, "?tail= cannot be combined with ?offset= or ?limit=");
        return;
    }
    memcpy(l->id, id, id_len);
    r = nwb__run_index_find(c->srv->runs, id, id_len);
    l->size_cap = r != NULL ? r->log_bytes : UINT64_MAX;
    nwb_buf_init(&l->text,
                 l->tail ? NWB__READ_TAIL_BYTES_MAX : (size_t)l->limit + NWB__LOG_LINE_LONGEST);
    c->work.ctx = l;
    if (nwb__offload(c, log_run, log_done) != 0) {
        c->work.ctx = NULL;
        nwb_free(l);
        nwb__conn_respond_error(c, 500, "cannot queue the request");
    }
}
