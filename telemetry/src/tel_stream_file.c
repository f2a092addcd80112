/* SPDX-License-Identifier: MIT */
/*
 * tel_stream_file.c - stored telemetry streams: zstd frames decompressed under caps (one
 * upload's, or one frame at a time from telemetry.nwbs.zst), raw telemetry.nwbs read one whole
 * segment at a time, the format told by the magic, and a run's stored stream fed into a
 * report state in bounded memory (docs/telemetry-report.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "nwb/alloc.h"
#include "nwb/byte_order.h"
#include "nwb/error.h"
#include "tel_report_int.h"

#define READ_STEP        (1u << 20) /* bytes read from the file at a time */
#define ZSTD_MAGIC       0xFD2FB528u
#define ZSTD_SKIP_MAGIC  0x184D2A50u /* skippable frames: the low 4 bits vary */
#define HEADER_READ_MAX  65536u      /* a segment header is at most 65,535 bytes */
#define FIRST_OUTPUT_CAP 65536u

/* ---- One zstd frame under caps ----------------------------------------------------------- */

struct zframe {
    ZSTD_DCtx *d;
    size_t max; /* < SIZE_MAX */
    uint8_t *buf;
    size_t cap;
    size_t len;
};

static int zframe_init(struct zframe *z, size_t max, unsigned wlog, const char **why)
{
    const ZSTD_bounds wb = ZSTD_dParam_getBounds(ZSTD_d_windowLogMax);

    memset(z, 0, sizeof(*z));
    z->max = max;
    z->d = ZSTD_createDCtx();
    if (z->d == NULL) {
        *why = "out of memory";
        return -ENOMEM;
    }
    /* zstd takes windowLogMax 0 as "the default" (2^27): refuse it and any value outside
     * zstd's range ourselves, so a cap is never silently widened (fuzz_tel_unzstd found it). */
    if (ZSTD_isError(wb.error) || wlog > 64u || (int)wlog < wb.lowerBound ||
        (int)wlog > wb.upperBound ||
        ZSTD_isError(ZSTD_DCtx_setParameter(z->d, ZSTD_d_windowLogMax, (int)wlog))) {
        ZSTD_freeDCtx(z->d);
        z->d = NULL;
        *why = "zstd window limit rejected";
        return NWB_ECONFIG;
    }
    return 0;
}

static void zframe_cleanup(struct zframe *z)
{
    ZSTD_freeDCtx(z->d);
    nwb_free(z->buf);
    memset(z, 0, sizeof(*z));
}

/*
 * Decompress from @p ib into z->buf (appending at z->len) until the frame ends (1), the input
 * runs out inside it (0: more input, or the frame is truncated), or an error (negative, with a
 * static reason). The output grows with what is produced, never past max + 1 bytes: the
 * frame's claimed content size is never trusted.
 */
static int zframe_step(struct zframe *z, ZSTD_inBuffer *ib, const char **why)
{
    for (;;) {
        ZSTD_outBuffer ob;
        size_t r;

        if (z->len == z->cap) {
            size_t ncap = z->cap == 0 ? FIRST_OUTPUT_CAP : z->cap * 2;
            uint8_t *p;

            ncap = ncap > z->max + 1 ? z->max + 1 : ncap;
            if (ncap <= z->cap) {
                *why = "decompressed frame exceeds the cap";
                return NWB_ETOOBIG;
            }
            p = nwb_realloc(z->buf, ncap);
            if (p == NULL) {
                *why = "out of memory";
                return -ENOMEM;
            }
            z->buf = p;
            z->cap = ncap;
        }
        ob.dst = z->buf;
        ob.size = z->cap;
        ob.pos = z->len;
        r = ZSTD_decompressStream(z->d, &ob, ib);
        z->len = ob.pos;
        if (ZSTD_isError(r)) {
            if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge) {
                *why = "zstd window larger than the cap";
                return NWB_ETOOBIG;
            }
            *why = "corrupt zstd data";
            return NWB_ECOMPRESS;
        }
        if (z->len > z->max) {
            *why = "decompressed frame exceeds the cap";
            return NWB_ETOOBIG;
        }
        if (r == 0) {
            return 1;
        }
        if (ib->pos == ib->size && ob.pos < ob.size) {
            return 0;
        }
    }
}

int nwb_tel_unzstd(const uint8_t *in, size_t in_len, size_t max, unsigned wlog, uint8_t **out,
                   size_t *out_len, const char **why)
{
    ZSTD_inBuffer ib = {in, in_len, 0};
    struct zframe z;
    int rc;

    *out = NULL;
    *out_len = 0;
    rc = zframe_init(&z, max, wlog, why);
    if (rc != 0) {
        return rc;
    }
    rc = zframe_step(&z, &ib, why);
    if (rc == 0) {
        rc = NWB_ECOMPRESS;
        *why = "zstd frame is truncated";
    } else if (rc == 1 && ib.pos != ib.size) {
        rc = NWB_ECOMPRESS;
        *why = "data after the zstd frame (one frame per upload)";
    }
    if (rc != 1) {
        zframe_cleanup(&z);
        return rc;
    }
    *out = z.buf;
    *out_len = z.len;
    z.buf = NULL;
    zframe_cleanup(&z);
    return 0;
}

/* ---- The file reader --------------------------------------------------------------------- */

struct nwb_tel_file_reader {
    int fd;
    nwb_tel_file_format_t format;
    int eof;
    int err; /* sticky */
    const char *reason;
    uint64_t piece_off;
    uint64_t pieces;

    /* Bytes read and not yet returned: win[0..len) starts at file offset win_off. */
    uint8_t *win;
    size_t cap, len;
    uint64_t win_off;
    size_t given; /* bytes of win returned as the last piece (dropped on the next call) */

    /* zstd */
    struct zframe z;
    size_t in_pos; /* zstd: consumed bytes of win */

    /* raw */
    int tail; /* the structure broke: the rest goes out as it is */
};

/* Read up to READ_STEP more bytes (or @p want, if larger) after win[len]. */
static int fill(nwb_tel_file_reader_t *r, size_t want)
{
    const size_t step = want > READ_STEP ? want : READ_STEP;
    ssize_t n;

    if (r->eof) {
        return 0;
    }
    if (r->len + step > r->cap) {
        const int err = nwb__tel_grow((void **)&r->win, &r->cap, r->len + step, 1);

        if (err != 0) {
            return err;
        }
    }
    do {
        n = read(r->fd, r->win + r->len, r->cap - r->len);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        return -errno;
    }
    if (n == 0) {
        r->eof = 1;
    }
    r->len += (size_t)n;
    return 0;
}

/* Drop the first @p n bytes of the window. */
static void drop(nwb_tel_file_reader_t *r, size_t n)
{
    if (n == 0) {
        return;
    }
    memmove(r->win, r->win + n, r->len - n);
    r->len -= n;
    r->win_off += n;
}

static int fail(nwb_tel_file_reader_t *r, int err, const char *why)
{
    r->err = err;
    r->reason = why;
    return err;
}

int nwb_tel_file_reader_open(const char *path, nwb_tel_file_reader_t **out)
{
    nwb_tel_file_reader_t *r;
    struct stat st;
    uint8_t magic[4];
    ssize_t n;
    int err;

    *out = NULL;
    r = nwb_calloc(1, sizeof(*r));
    if (r == NULL) {
        return -ENOMEM;
    }
    /* Non-blocking open: a FIFO is refused below, never waited on. */
    r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (r->fd < 0) {
        err = -errno;
        nwb_free(r);
        return err;
    }
    if (fstat(r->fd, &st) != 0) {
        err = -errno;
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        err = NWB_ENOTREG;
        goto fail;
    }
    n = pread(r->fd, magic, sizeof(magic), 0);
    if (n < 0) {
        err = -errno;
        goto fail;
    }
    r->format = NWB_TEL_FILE_RAW;
    if (n == (ssize_t)sizeof(magic) &&
        (nwb_le32_load(magic) == ZSTD_MAGIC || (nwb_le32_load(magic) & ~0xfu) == ZSTD_SKIP_MAGIC)) {
        const char *why = NULL;

        r->format = NWB_TEL_FILE_ZSTD;
        err = zframe_init(&r->z, NWB_TEL_ZSTD_FRAME_MAX, NWB_TEL_ZSTD_WINDOW_LOG, &why);
        if (err != 0) {
            goto fail;
        }
    }
    *out = r;
    return 0;
fail:
    close(r->fd);
    nwb_free(r);
    return err;
}

static int next_zstd(nwb_tel_file_reader_t *r, const uint8_t **data, size_t *len)
{
    for (;;) {
        const char *why = NULL;
        int rc;

        drop(r, r->in_pos);
        r->in_pos = 0;
        r->z.len = 0;
        r->piece_off = r->win_off;
        do {
            ZSTD_inBuffer ib;

            if (r->in_pos == r->len) {
                r->in_pos = 0;
                r->win_off += r->len;
                r->len = 0;
                rc = fill(r, 0);
                if (rc != 0) {
                    return fail(r, rc, "read error");
                }
                if (r->len == 0) {
                    if (r->win_off == r->piece_off) {
                        return 0; /* the end, between frames */
                    }
                    return fail(r, NWB_ECOMPRESS, "zstd frame is truncated (a torn tail)");
                }
            }
            ib.src = r->win;
            ib.size = r->len;
            ib.pos = r->in_pos;
            rc = zframe_step(&r->z, &ib, &why);
            r->in_pos = ib.pos;
        } while (rc == 0);
        if (rc < 0) {
            return fail(r, rc, why);
        }
        if (r->z.len > 0) { /* skippable frames give nothing */
            r->pieces++;
            *data = r->z.buf;
            *len = r->z.len;
            return 1;
        }
    }
}

/* Make sure win holds @p need bytes if the file has them. */
static int want(nwb_tel_file_reader_t *r, size_t need)
{
    while (r->len < need && !r->eof) {
        const int err = fill(r, need - r->len);

        if (err != 0) {
            return err;
        }
    }
    return 0;
}

/* Give win[0..n) out as the next piece. */
static int give(nwb_tel_file_reader_t *r, size_t n, const uint8_t **data, size_t *len)
{
    r->given = n;
    r->piece_off = r->win_off;
    r->pieces++;
    *data = r->win;
    *len = n;
    return 1;
}

/*
 * The structure breaks at @p at (an event header, or the segment header when at is 0): give
 * out what the decoder needs to fail there as a whole-file decode does (the event's header
 * and payload, bounded by the largest payload), then the rest as it is.
 */
static int give_broken(nwb_tel_file_reader_t *r, size_t at, const uint8_t **data, size_t *len)
{
    size_t end = at == 0 ? HEADER_READ_MAX : at + NWB_TEL_EVENT_HEADER;
    int err;

    if (at != 0 && r->len >= at + NWB_TEL_EVENT_HEADER &&
        nwb_le32_load(r->win + at + 4) <= NWB_TEL_PAYLOAD_MAX) {
        end += nwb_le32_load(r->win + at + 4);
    }
    err = want(r, end);
    if (err != 0) {
        return fail(r, err, "read error");
    }
    r->tail = 1;
    return give(r, end < r->len ? end : r->len, data, len);
}

static int next_raw(nwb_tel_file_reader_t *r, const uint8_t **data, size_t *len)
{
    nwb_tel_header_t h;
    size_t at = 0;
    int err;

    drop(r, r->given);
    r->given = 0;
    if (r->tail) {
        err = want(r, READ_STEP);
        if (err != 0) {
            return fail(r, err, "read error");
        }
        return r->len == 0 ? 0 : give(r, r->len < READ_STEP ? r->len : READ_STEP, data, len);
    }
    err = want(r, NWB_TEL_HEADER_FIXED);
    if (err != 0) {
        return fail(r, err, "read error");
    }
    if (r->len == 0) {
        return 0;
    }
    for (;;) {
        err = nwb_tel_header_decode(r->win, r->len, &h, &at, NULL, NULL);
        if (err != NWB_ETRUNCATED || r->eof || r->len >= HEADER_READ_MAX) {
            break;
        }
        err = want(r, r->len + 1);
        if (err != 0) {
            return fail(r, err, "read error");
        }
    }
    if (err != 0) {
        return give_broken(r, 0, data, len);
    }
    /* Walk the events by their sizes to the next segment header or the end of the file. */
    for (;;) {
        uint32_t size;

        err = want(r, at + NWB_TEL_EVENT_HEADER);
        if (err != 0) {
            return fail(r, err, "read error");
        }
        if (r->len == at) {
            return give(r, at, data, len);
        }
        if (r->len - at >= 2 && nwb_le16_load(r->win + at) == NWB_TEL_KIND_SEGMENT) {
            return give(r, at, data, len);
        }
        if (r->len - at < NWB_TEL_EVENT_HEADER || nwb_le16_load(r->win + at) == 0) {
            return give_broken(r, at, data, len);
        }
        size = nwb_le32_load(r->win + at + 4);
        if (size > NWB_TEL_PAYLOAD_MAX) {
            return give_broken(r, at, data, len);
        }
        if (at + NWB_TEL_EVENT_HEADER + size > NWB_TEL_RAW_CHUNK_MAX) {
            return fail(r, NWB_ETOOBIG, "a segment larger than the reader's 1 GiB");
        }
        err = want(r, at + NWB_TEL_EVENT_HEADER + size);
        if (err != 0) {
            return fail(r, err, "read error");
        }
        if (r->len < at + NWB_TEL_EVENT_HEADER + size) {
            return give_broken(r, at, data, len);
        }
        at += NWB_TEL_EVENT_HEADER + size;
    }
}

int nwb_tel_file_reader_next(nwb_tel_file_reader_t *r, const uint8_t **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    if (r->err != 0) {
        return r->err;
    }
    return r->format == NWB_TEL_FILE_ZSTD ? next_zstd(r, data, len) : next_raw(r, data, len);
}

nwb_tel_file_format_t nwb_tel_file_reader_format(const nwb_tel_file_reader_t *r)
{
    return r->format;
}

uint64_t nwb_tel_file_reader_offset(const nwb_tel_file_reader_t *r)
{
    return r->piece_off;
}

const char *nwb_tel_file_reader_reason(const nwb_tel_file_reader_t *r)
{
    return r->reason;
}

uint64_t nwb_tel_file_reader_pieces(const nwb_tel_file_reader_t *r)
{
    return r->pieces;
}

void nwb_tel_file_reader_destroy(nwb_tel_file_reader_t *r)
{
    if (r == NULL) {
        return;
    }
    close(r->fd);
    zframe_cleanup(&r->z);
    nwb_free(r->win);
    nwb_free(r);
}

int nwb_tel_report_state_feed_reader(nwb_tel_report_state_t *s, nwb_tel_file_reader_t *r)
{
    const uint8_t *data;
    size_t len;
    int rc;

    for (;;) {
        rc = nwb_tel_file_reader_next(r, &data, &len);
        if (rc != 1) {
            break;
        }
        rc = nwb_tel_report_state_feed(s, data, len, 0, NULL);
        if (rc != 0) {
            return rc;
        }
    }
    if (rc != 0) {
        nwb_tel_report_state_fail(s, rc, r->reason != NULL ? r->reason : "read error");
    }
    return rc;
}
