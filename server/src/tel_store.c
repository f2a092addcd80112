/* SPDX-License-Identifier: MIT */
/*
 * tel_store.c - one run's stored telemetry: telemetry.nwbs.zst (the uploads' zstd frames
 * concatenated as received) and telemetry.index (one 64-byte record per acknowledged upload:
 * its seq, where its frame is, its frames and events), kept consistent across kill -9. Opening
 * recovers (the stream is cut back to what the index holds; records whose bytes are missing
 * are dropped), converts an older server's telemetry.nwbs once, and replays the stored stream
 * into a report state. docs/protocol.md, "Telemetry storage", has the byte tables and rules.
 * Pool threads; one caller per run at a time (the endpoint's per-run lanes).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <zstd.h>

#include "nwb/alloc.h"
#include "nwb/byte_order.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "nwb/name.h"
#include "tel_run_int.h"

/*
 * telemetry.index, version 1, little-endian. Header (64 bytes):
 *   0 magic "NWBTIDX\n"   8 u32 version (1)   12 u32 record size (64)   16..55 zero
 *   56 u64 FNV-1a 64 of bytes 0..55
 * Record (64 bytes), one per acknowledged upload, in the order they were acknowledged:
 *   0 u64 seq            8 u64 offset of its zstd frame in telemetry.nwbs.zst
 *   16 u32 frame bytes (0: not stored)   20 u32 flags (1 stored, 2 has frames)
 *   24 u32 decompressed bytes            28 u32 zero
 *   32 u64 smallest perfFrame number     40 u64 largest
 *   48 u64 events        56 u64 FNV-1a 64 of bytes 0..55
 * The header is 64 bytes so that no record straddles a page.
 */
#define INDEX_MAGIC       "NWBTIDX\n"
#define INDEX_VERSION     1u
#define INDEX_HEADER_SIZE 64u
#define INDEX_RECORD_SIZE 64u
#define INDEX_READ_BATCH  1024u /* records per pread while loading */
#define INDEX_TMP_NAME    NWB_TEL_INDEX_FILE ".tmp"
#define LEGACY_ZSTD_LEVEL 1 /* conversion of an older server's raw stream */

struct nwb__tel_store {
    char dir[NWB__TEL_PATH_MAX];
    int dfd;
    int stream_fd;
    int index_fd;
    uint64_t stream_size; /* bytes of telemetry.nwbs.zst the index covers */
    struct nwb__tel_rec *recs;
    uint32_t nrecs;
    uint32_t cap;
    uint32_t *slots; /* seq hash: record index + 1, 0 = empty; nslots a power of two */
    uint32_t nslots;
    uint64_t unstored;
    int recovered; /* bytes were cut back or records dropped at open */
};

static uint64_t checksum(const uint8_t *b)
{
    return nwb_name_hash(b, 56);
}

static void header_encode(uint8_t b[INDEX_HEADER_SIZE])
{
    memset(b, 0, INDEX_HEADER_SIZE);
    memcpy(b, INDEX_MAGIC, 8);
    nwb_le32_store(b + 8, INDEX_VERSION);
    nwb_le32_store(b + 12, INDEX_RECORD_SIZE);
    nwb_le64_store(b + 56, checksum(b));
}

static int header_valid(const uint8_t b[INDEX_HEADER_SIZE])
{
    return memcmp(b, INDEX_MAGIC, 8) == 0 && nwb_le32_load(b + 8) == INDEX_VERSION &&
           nwb_le32_load(b + 12) == INDEX_RECORD_SIZE && nwb_le64_load(b + 56) == checksum(b);
}

static void rec_encode(uint8_t b[INDEX_RECORD_SIZE], const struct nwb__tel_rec *r)
{
    nwb_le64_store(b, r->seq);
    nwb_le64_store(b + 8, r->offset);
    nwb_le32_store(b + 16, r->length);
    nwb_le32_store(b + 20, r->flags);
    nwb_le32_store(b + 24, r->raw_len);
    nwb_le32_store(b + 28, 0);
    nwb_le64_store(b + 32, r->frame_min);
    nwb_le64_store(b + 40, r->frame_max);
    nwb_le64_store(b + 48, r->events);
    nwb_le64_store(b + 56, checksum(b));
}

/* 0, or -1 for a record that is damaged (checksum, unknown flags, stored without bytes). */
static int rec_decode(const uint8_t b[INDEX_RECORD_SIZE], struct nwb__tel_rec *r)
{
    r->seq = nwb_le64_load(b);
    r->offset = nwb_le64_load(b + 8);
    r->length = nwb_le32_load(b + 16);
    r->flags = nwb_le32_load(b + 20);
    r->raw_len = nwb_le32_load(b + 24);
    r->frame_min = nwb_le64_load(b + 32);
    r->frame_max = nwb_le64_load(b + 40);
    r->events = nwb_le64_load(b + 48);
    if (nwb_le64_load(b + 56) != checksum(b) || nwb_le32_load(b + 28) != 0 ||
        (r->flags & ~(NWB__TEL_REC_STORED | NWB__TEL_REC_FRAMES)) != 0 ||
        ((r->flags & NWB__TEL_REC_STORED) != 0) != (r->length != 0)) {
        return -1;
    }
    return 0;
}

/* ---- the seq hash ---- */

static uint32_t slot_of(uint64_t seq, uint32_t nslots)
{
    return (uint32_t)((seq * 0x9e3779b97f4a7c15ull) >> 32) & (nslots - 1);
}

static void slots_insert(uint32_t *slots, uint32_t nslots, const struct nwb__tel_rec *recs,
                         uint32_t i)
{
    uint32_t k = slot_of(recs[i].seq, nslots);

    while (slots[k] != 0) {
        k = (k + 1) & (nslots - 1);
    }
    slots[k] = i + 1;
}

/* Room for one more record in recs and the hash (load at most 1/2), before anything is
 * written: an append never fails after its bytes are durable. */
static int reserve_one(struct nwb__tel_store *s)
{
    if (s->nrecs >= NWB__TEL_INDEX_MAX) {
        return NWB_ETOOBIG;
    }
    if (s->nrecs == s->cap) {
        const uint32_t ncap = s->cap == 0 ? 256u : s->cap * 2u;
        struct nwb__tel_rec *p = nwb_realloc(s->recs, sizeof(*p) * ncap);

        if (p == NULL) {
            return -ENOMEM;
        }
        s->recs = p;
        s->cap = ncap;
    }
    if ((uint64_t)(s->nrecs + 1) * 2 > s->nslots) {
        const uint32_t nslots = s->nslots == 0 ? 512u : s->nslots * 2u;
        uint32_t *slots = nwb_calloc(nslots, sizeof(*slots));

        if (slots == NULL) {
            return -ENOMEM;
        }
        for (uint32_t i = 0; i < s->nrecs; i++) {
            slots_insert(slots, nslots, s->recs, i);
        }
        nwb_free(s->slots);
        s->slots = slots;
        s->nslots = nslots;
    }
    return 0;
}

/* Add @p r (offset and length already set) to memory; reserve_one() ran. */
static void rec_push(struct nwb__tel_store *s, const struct nwb__tel_rec *r)
{
    s->recs[s->nrecs] = *r;
    slots_insert(s->slots, s->nslots, s->recs, s->nrecs);
    s->nrecs++;
    s->stream_size = r->offset + r->length;
    if ((r->flags & NWB__TEL_REC_STORED) == 0) {
        s->unstored++;
    }
}

static void recs_clear(struct nwb__tel_store *s)
{
    s->nrecs = 0;
    s->stream_size = 0;
    s->unstored = 0;
    if (s->slots != NULL) {
        memset(s->slots, 0, sizeof(*s->slots) * s->nslots);
    }
}

/* ---- files ---- */

/* openat() a regular file of the run's directory, never through a symlink; O_NONBLOCK, so a
 * FIFO in its place is refused (NWB_ENOTREG), never waited on. */
static int open_in(int dfd, const char *name, int flags, int *fd)
{
    struct stat st;
    const int f = openat(dfd, name, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);

    *fd = -1;
    if (f < 0) {
        return -errno;
    }
    if (fstat(f, &st) != 0) {
        const int err = -errno;

        close(f);
        return err;
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return NWB_ENOTREG;
    }
    *fd = f;
    return 0;
}

static int file_size(int fd, uint64_t *size)
{
    struct stat st;

    if (fstat(fd, &st) != 0) {
        return -errno;
    }
    *size = (uint64_t)st.st_size;
    return 0;
}

static int pread_all(int fd, uint8_t *p, size_t n, uint64_t at)
{
    size_t off = 0;

    while (off < n) {
        const ssize_t r = pread(fd, p + off, n - off, (off_t)(at + off));

        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            return -errno;
        }
        if (r == 0) {
            return NWB_ETRUNCATED;
        }
        off += (size_t)r;
    }
    return 0;
}

static int sync_fd(int fd)
{
    return fdatasync(fd) == 0 ? 0 : -errno;
}

/* Cut @p fd back to @p size and make it durable. */
static int cut_back(int fd, uint64_t size)
{
    if (ftruncate(fd, (off_t)size) != 0) {
        return -errno;
    }
    return sync_fd(fd);
}

/*
 * Replace telemetry.index with the records in memory (temporary file, fsync, rename, fsync of
 * the directory) and reopen it. Used when the index is derived or converted.
 */
static int index_rewrite(struct nwb__tel_store *s)
{
    uint8_t b[INDEX_RECORD_SIZE * 64];
    int fd;
    int err;

    header_encode(b);
    err = open_in(s->dfd, INDEX_TMP_NAME, O_RDWR | O_CREAT | O_TRUNC, &fd);
    if (err != 0) {
        return err;
    }
    err = nwb_write_all(fd, b, INDEX_HEADER_SIZE);
    for (uint32_t i = 0; err == 0 && i < s->nrecs;) {
        uint32_t n = 0;

        for (; n < 64 && i < s->nrecs; n++, i++) {
            rec_encode(b + (size_t)n * INDEX_RECORD_SIZE, &s->recs[i]);
        }
        err = nwb_write_all(fd, b, (size_t)n * INDEX_RECORD_SIZE);
    }
    if (err == 0) {
        err = sync_fd(fd);
    }
    if (err == 0 && renameat(s->dfd, INDEX_TMP_NAME, s->dfd, NWB_TEL_INDEX_FILE) != 0) {
        err = -errno;
    }
    if (err != 0) {
        close(fd);
        unlinkat(s->dfd, INDEX_TMP_NAME, 0);
        return err;
    }
    if (s->index_fd >= 0) {
        close(s->index_fd);
    }
    s->index_fd = fd;
    return fsync(s->dfd) == 0 ? 0 : -errno;
}

int nwb__tel_path(char out[NWB__TEL_PATH_MAX], const char *dir, const char *name)
{
    const int n = snprintf(out, NWB__TEL_PATH_MAX, "%s/%s", dir, name);

    return n < 0 || (size_t)n >= NWB__TEL_PATH_MAX ? NWB_ETOOBIG : 0;
}

/* A record for @p len decompressed bytes fed with result @p fr. */
static void rec_from_feed(struct nwb__tel_rec *r, uint64_t seq, size_t len,
                          const nwb_tel_feed_result_t *fr)
{
    memset(r, 0, sizeof(*r));
    r->seq = seq;
    r->raw_len = (uint32_t)len;
    r->events = fr->events;
    if (fr->frames > 0) {
        r->flags |= NWB__TEL_REC_FRAMES;
        r->frame_min = fr->frame_min;
        r->frame_max = fr->frame_max;
    }
}

/*
 * The index is missing or its header is damaged: derive it from the stream, one zstd frame
 * (one upload) at a time, feeding @p state. The stream is cut back at the first frame that
 * does not decompress or decode as a whole segment.
 */
static int index_derive(struct nwb__tel_store *s, nwb_tel_report_state_t *state)
{
    char path[NWB__TEL_PATH_MAX];
    nwb_tel_file_reader_t *r = NULL;
    int rc;

    recs_clear(s);
    rc = nwb__tel_path(path, s->dir, NWB_TEL_STREAM_ZST_FILE);
    if (rc == 0) {
        rc = nwb_tel_file_reader_open(path, &r);
    }
    while (rc == 0) {
        const uint8_t *data;
        size_t len;
        nwb_tel_feed_result_t fr;
        struct nwb__tel_rec rec;
        uint64_t start;

        rc = nwb_tel_file_reader_next(r, &data, &len);
        if (rc == 0) {
            /* The end of the file: the last frame runs to it. */
            uint64_t size = 0;

            rc = file_size(s->stream_fd, &size);
            if (rc == 0 && s->nrecs > 0) {
                s->recs[s->nrecs - 1].length = (uint32_t)(size - s->recs[s->nrecs - 1].offset);
                s->stream_size = size;
            }
            break;
        }
        /* The previous frame ends where this piece (or the unreadable frame) starts. */
        start = nwb_tel_file_reader_offset(r);
        if (s->nrecs > 0) {
            s->recs[s->nrecs - 1].length = (uint32_t)(start - s->recs[s->nrecs - 1].offset);
            s->stream_size = start;
        }
        if (rc < 0) {
            rc = rc == NWB_ECOMPRESS || rc == NWB_ETOOBIG ? 0 : rc;
            break;
        }
        rc = reserve_one(s);
        if (rc == 0) {
            rc = nwb_tel_report_state_feed(state, data, len, NWB_TEL_FEED_ATOMIC, &fr);
        }
        if (rc != 0 || fr.status != 0 || !fr.applied || fr.segments != 1) {
            break;
        }
        rec_from_feed(&rec, fr.seq_first, len, &fr);
        rec.flags |= NWB__TEL_REC_STORED;
        rec.offset = s->stream_size;
        rec.length = 0; /* until the next piece's start (or the end) is known */
        rec_push(s, &rec);
    }
    nwb_tel_file_reader_destroy(r);
    if (rc == -ENOMEM || (rc < 0 && rc > -4096)) {
        return rc; /* out of memory or a system error: nothing is cut */
    }
    s->recovered = 1;
    rc = cut_back(s->stream_fd, s->stream_size);
    return rc != 0 ? rc : index_rewrite(s);
}

/*
 * Load the index and apply the crash rules: a partial last record is dropped; loading stops at
 * the first damaged record, one whose offset is not where the previous one ended, or one whose
 * bytes are not (wholly) in the stream; the index is cut back there, and the stream to the end
 * of the last record kept. Returns 0, 1 when the header is damaged (derive instead), or an
 * error.
 */
static int index_load(struct nwb__tel_store *s)
{
    uint8_t head[INDEX_HEADER_SIZE];
    uint8_t b[INDEX_RECORD_SIZE * INDEX_READ_BATCH];
    uint64_t isize = 0;
    uint64_t ssize = 0;
    uint64_t n;
    uint64_t end = 0;
    int stop = 0;
    int err;

    recs_clear(s);
    err = file_size(s->index_fd, &isize);
    if (err == 0) {
        err = file_size(s->stream_fd, &ssize);
    }
    if (err != 0) {
        return err;
    }
    if (isize < INDEX_HEADER_SIZE || pread_all(s->index_fd, head, sizeof(head), 0) != 0 ||
        !header_valid(head)) {
        return 1;
    }
    n = (isize - INDEX_HEADER_SIZE) / INDEX_RECORD_SIZE;
    for (uint64_t i = 0; i < n && !stop;) {
        const uint64_t batch = n - i < INDEX_READ_BATCH ? n - i : INDEX_READ_BATCH;

        err = pread_all(s->index_fd, b, (size_t)batch * INDEX_RECORD_SIZE,
                        INDEX_HEADER_SIZE + i * INDEX_RECORD_SIZE);
        if (err != 0) {
            return err;
        }
        for (uint64_t k = 0; k < batch; k++, i++) {
            struct nwb__tel_rec r;

            if (rec_decode(b + k * INDEX_RECORD_SIZE, &r) != 0 || r.offset != end ||
                r.offset + r.length > ssize) {
                stop = 1;
                break;
            }
            err = reserve_one(s);
            if (err == NWB_ETOOBIG) {
                stop = 1;
                break;
            }
            if (err != 0) {
                return err;
            }
            rec_push(s, &r);
            end = r.offset + r.length;
        }
    }
    if (s->nrecs != n || isize != INDEX_HEADER_SIZE + n * INDEX_RECORD_SIZE) {
        s->recovered = 1;
        err = cut_back(s->index_fd, INDEX_HEADER_SIZE + (uint64_t)s->nrecs * INDEX_RECORD_SIZE);
        if (err != 0) {
            return err;
        }
    }
    if (ssize != end) {
        /* Bytes of an upload that was never acknowledged (killed between the two writes). */
        s->recovered = 1;
        err = cut_back(s->stream_fd, end);
    }
    s->stream_size = end;
    return err;
}

/*
 * An older server's telemetry.nwbs (raw segments back to back): converted once into
 * telemetry.nwbs.zst (each segment one zstd frame, level LEGACY_ZSTD_LEVEL) and a new index,
 * feeding @p state; the raw file is removed last, so a conversion cut short is redone from it
 * at the next open. A torn last segment (the old server killed mid-append) is left out.
 */
static int legacy_convert(struct nwb__tel_store *s, nwb_tel_report_state_t *state)
{
    char path[NWB__TEL_PATH_MAX];
    nwb_tel_file_reader_t *r = NULL;
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    uint8_t *z = NULL;
    size_t zcap = 0;
    int rc;

    if (cctx == NULL) {
        return -ENOMEM;
    }
    recs_clear(s);
    rc = nwb__tel_path(path, s->dir, NWB_TEL_STREAM_FILE);
    if (rc == 0) {
        rc = nwb_tel_file_reader_open(path, &r);
    }
    if (rc == 0 && ftruncate(s->stream_fd, 0) != 0) {
        rc = -errno;
    }
    while (rc == 0) {
        const uint8_t *data;
        size_t len;
        size_t zlen;
        nwb_tel_feed_result_t fr;
        struct nwb__tel_rec rec;

        rc = nwb_tel_file_reader_next(r, &data, &len);
        if (rc != 1) {
            break;
        }
        rc = reserve_one(s);
        if (rc == 0) {
            rc = nwb_tel_report_state_feed(state, data, len, NWB_TEL_FEED_ATOMIC, &fr);
        }
        if (rc != 0 || fr.status != 0 || !fr.applied) {
            rc = rc == -ENOMEM ? rc : 0;
            break;
        }
        if (ZSTD_compressBound(len) > zcap) {
            nwb_free(z);
            zcap = ZSTD_compressBound(len);
            z = nwb_malloc(zcap);
            if (z == NULL) {
                rc = -ENOMEM;
                break;
            }
        }
        zlen = ZSTD_compressCCtx(cctx, z, zcap, data, len, LEGACY_ZSTD_LEVEL);
        if (ZSTD_isError(zlen)) {
            rc = NWB_ECOMPRESS;
            break;
        }
        rc = nwb_pwrite_all(s->stream_fd, z, zlen, (off_t)s->stream_size);
        if (rc != 0) {
            break;
        }
        rec_from_feed(&rec, fr.seq_first, len, &fr);
        rec.flags |= NWB__TEL_REC_STORED;
        rec.offset = s->stream_size;
        rec.length = (uint32_t)zlen;
        rec_push(s, &rec);
    }
    /* The reader's own failure (a torn or bad last segment) ends the stream like a decode
     * failure: what came before is converted. */
    if (rc == NWB_ECOMPRESS || rc == NWB_ETOOBIG || rc == NWB_ETRUNCATED || rc == NWB_EPROTO) {
        rc = 0;
    }
    nwb_tel_file_reader_destroy(r);
    nwb_free(z);
    ZSTD_freeCCtx(cctx);
    if (rc == 0) {
        rc = sync_fd(s->stream_fd);
    }
    if (rc == 0) {
        rc = index_rewrite(s);
    }
    if (rc == 0 && unlinkat(s->dfd, NWB_TEL_STREAM_FILE, 0) != 0) {
        rc = -errno;
    }
    if (rc == 0 && fsync(s->dfd) != 0) {
        rc = -errno;
    }
    s->recovered = 1;
    return rc;
}

/* Exactly what `nwb-telemetry report` does with the file. A frame that cannot be read stops
 * the state (the report says so): not an error here. */
static int feed_stored(const char *path, nwb_tel_report_state_t *state)
{
    nwb_tel_file_reader_t *r = NULL;
    int err = nwb_tel_file_reader_open(path, &r);

    if (err == 0) {
        err = nwb_tel_report_state_feed_reader(state, r);
        err = err == -ENOMEM ? err : 0;
    }
    nwb_tel_file_reader_destroy(r);
    return err;
}

void nwb__tel_store_close(struct nwb__tel_store *s)
{
    if (s == NULL) {
        return;
    }
    if (s->stream_fd >= 0) {
        close(s->stream_fd);
    }
    if (s->index_fd >= 0) {
        close(s->index_fd);
    }
    if (s->dfd >= 0) {
        close(s->dfd);
    }
    nwb_free(s->recs);
    nwb_free(s->slots);
    nwb_free(s);
}

static int exists_in(int dfd, const char *name)
{
    struct stat st;

    return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int nwb__tel_store_open(const char *dir, int create, nwb_tel_report_state_t *state,
                        struct nwb__tel_store **out)
{
    struct nwb__tel_store *s = nwb_calloc(1, sizeof(*s));
    const int flags = O_RDWR | (create ? O_CREAT : 0);
    char path[NWB__TEL_PATH_MAX];
    int legacy;
    int fresh;
    int err;
    int n;

    *out = NULL;
    if (s == NULL) {
        return -ENOMEM;
    }
    s->stream_fd = s->index_fd = -1;
    n = snprintf(s->dir, sizeof(s->dir), "%s", dir);
    s->dfd = n < 0 || (size_t)n >= sizeof(s->dir)
                 ? -1
                 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (s->dfd < 0) {
        err = n < 0 || (size_t)n >= sizeof(s->dir) ? NWB_ETOOBIG : -errno;
        nwb__tel_store_close(s);
        return err == -ENOTDIR ? -ENOENT : err;
    }
    legacy = exists_in(s->dfd, NWB_TEL_STREAM_FILE);
    fresh = !exists_in(s->dfd, NWB_TEL_INDEX_FILE);
    if (!create && !legacy && fresh && !exists_in(s->dfd, NWB_TEL_STREAM_ZST_FILE)) {
        nwb__tel_store_close(s);
        return -ENOENT;
    }
    err = open_in(s->dfd, NWB_TEL_STREAM_ZST_FILE, O_RDWR | O_CREAT, &s->stream_fd);
    if (err == 0 && legacy) {
        err = legacy_convert(s, state);
    } else if (err == 0) {
        err = open_in(s->dfd, NWB_TEL_INDEX_FILE, flags | O_CREAT, &s->index_fd);
        if (err == 0 && fresh) {
            uint64_t ssize = 0;

            err = file_size(s->stream_fd, &ssize);
            if (err == 0 && ssize == 0) {
                /* A new run: an empty index, made durable with its directory entry. */
                uint8_t h[INDEX_HEADER_SIZE];

                header_encode(h);
                err = nwb_pwrite_all(s->index_fd, h, sizeof(h), 0);
                if (err == 0) {
                    err = sync_fd(s->index_fd);
                }
                if (err == 0 && fsync(s->dfd) != 0) {
                    err = -errno;
                }
            } else if (err == 0) {
                err = index_derive(s, state);
            }
        } else if (err == 0) {
            err = index_load(s);
            if (err == 1) {
                err = index_derive(s, state);
            } else if (err == 0 && s->stream_size > 0) {
                err = nwb__tel_path(path, s->dir, NWB_TEL_STREAM_ZST_FILE);
                if (err == 0) {
                    err = feed_stored(path, state);
                }
            }
        }
    }
    if (err != 0) {
        nwb__tel_store_close(s);
        return err;
    }
    *out = s;
    return 0;
}

int nwb__tel_store_has_seq(const struct nwb__tel_store *s, uint64_t seq)
{
    if (s->nslots == 0) {
        return 0;
    }
    for (uint32_t k = slot_of(seq, s->nslots); s->slots[k] != 0; k = (k + 1) & (s->nslots - 1)) {
        if (s->recs[s->slots[k] - 1].seq == seq) {
            return 1;
        }
    }
    return 0;
}

uint64_t nwb__tel_store_bytes(const struct nwb__tel_store *s)
{
    return s->stream_size;
}

uint64_t nwb__tel_store_unstored(const struct nwb__tel_store *s)
{
    return s->unstored;
}

uint32_t nwb__tel_store_uploads(const struct nwb__tel_store *s)
{
    return s->nrecs;
}

int nwb__tel_store_recovered(const struct nwb__tel_store *s)
{
    return s->recovered;
}

size_t nwb__tel_store_memory(const struct nwb__tel_store *s)
{
    return sizeof(*s) + sizeof(*s->recs) * s->cap + sizeof(*s->slots) * s->nslots;
}

int nwb__tel_store_append(struct nwb__tel_store *s, const uint8_t *z, size_t zlen,
                          struct nwb__tel_rec *rec)
{
    const uint64_t at = s->stream_size;
    const uint64_t iat = INDEX_HEADER_SIZE + (uint64_t)s->nrecs * INDEX_RECORD_SIZE;
    uint8_t b[INDEX_RECORD_SIZE];
    int err;

    if (z != NULL && (zlen == 0 || zlen > UINT32_MAX)) {
        return NWB_ETOOBIG;
    }
    err = reserve_one(s);
    if (err != 0) {
        return err;
    }
    rec->offset = at;
    rec->length = z != NULL ? (uint32_t)zlen : 0;
    rec->flags = (rec->flags & NWB__TEL_REC_FRAMES) | (z != NULL ? NWB__TEL_REC_STORED : 0);
    /* The frame first, then its record; a 200 only after both are durable. */
    if (z != NULL) {
        err = nwb_pwrite_all(s->stream_fd, z, zlen, (off_t)at);
        if (err == 0) {
            err = sync_fd(s->stream_fd);
        }
        if (err != 0) {
            (void)ftruncate(s->stream_fd, (off_t)at);
            return err;
        }
    }
    rec_encode(b, rec);
    err = nwb_pwrite_all(s->index_fd, b, sizeof(b), (off_t)iat);
    if (err == 0) {
        err = sync_fd(s->index_fd);
    }
    if (err != 0) {
        (void)ftruncate(s->index_fd, (off_t)iat);
        if (z != NULL) {
            (void)ftruncate(s->stream_fd, (off_t)at);
        }
        return err;
    }
    rec_push(s, rec);
    return 0;
}

const struct nwb__tel_rec *nwb__tel_store_find_frame(const struct nwb__tel_store *s, uint64_t frame,
                                                     uint32_t *from)
{
    for (uint32_t i = *from; i < s->nrecs; i++) {
        const struct nwb__tel_rec *r = &s->recs[i];

        if ((r->flags & NWB__TEL_REC_FRAMES) != 0 && r->frame_min <= frame &&
            frame <= r->frame_max) {
            *from = i + 1;
            return r;
        }
    }
    *from = s->nrecs;
    return NULL;
}

int nwb__tel_upload_read(int stream_fd, const struct nwb__tel_rec *r,
                         const struct nwb__tel_ingest_limits *lim, uint8_t **raw, size_t *len,
                         const char **why)
{
    uint8_t *z;
    int err;

    *raw = NULL;
    *len = 0;
    if ((r->flags & NWB__TEL_REC_STORED) == 0) {
        *why = "the upload was not stored (the run's stream limit)";
        return -ENOENT;
    }
    z = nwb_malloc(r->length);
    if (z == NULL) {
        *why = "out of memory";
        return -ENOMEM;
    }
    err = pread_all(stream_fd, z, r->length, r->offset);
    if (err != 0) {
        *why = "cannot read the stored stream";
    } else {
        err =
            nwb_tel_unzstd(z, r->length, lim->decompressed_max, lim->window_log_max, raw, len, why);
    }
    nwb_free(z);
    return err;
}

int nwb__tel_store_read(const struct nwb__tel_store *s, const struct nwb__tel_rec *r,
                        const struct nwb__tel_ingest_limits *lim, uint8_t **raw, size_t *len,
                        const char **why)
{
    return nwb__tel_upload_read(s->stream_fd, r, lim, raw, len, why);
}

int nwb__tel_index_record_at(int index_fd, uint32_t i, struct nwb__tel_rec *r)
{
    uint8_t head[INDEX_HEADER_SIZE], b[INDEX_RECORD_SIZE];
    int err = pread_all(index_fd, head, sizeof(head), 0);

    if (err == NWB_ETRUNCATED) {
        return 1;
    }
    if (err != 0) {
        return err;
    }
    if (!header_valid(head)) {
        return NWB_EPROTO;
    }
    err = pread_all(index_fd, b, sizeof(b), INDEX_HEADER_SIZE + (uint64_t)i * INDEX_RECORD_SIZE);
    if (err == NWB_ETRUNCATED) {
        return 1;
    }
    if (err != 0) {
        return err;
    }
    return rec_decode(b, r) == 0 ? 0 : 1;
}
