/* SPDX-License-Identifier: MIT */
/*
 * spool.c - the spool: unacknowledged log batches kept on disk, so a server
 * outage or a shutdown loses nothing. A run writes a few segment files it
 * holds locked (flock); a later run of the same program finds the files,
 * resends each batch with its original program/run/seq and deletes the file.
 * The byte layout and every bound are in docs/spool.md.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/byte_order.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "nwb/log_batch.h"

#include "net_int.h"

/*
 * File header                       Entry
 *  0 u32 magic "NWBS"                0 u32 magic "NWBE"
 *  4 u16 version (1)                 4 u32 payload_len
 *  6 u16 header_size (44 + prog_len) 8 u64 seq
 *  8 u64 start_ns                   16 u32 flags (0)
 * 16 u32 segment                    20 u32 crc32c(entry bytes 0..19, payload)
 * 20 u8  run_len (1..16)            24 payload: one log batch
 * 21 u8  program_len (1..64)
 * 22 u16 flags (0)
 * 24 run[16]  (zero padded)
 * 40 program[program_len]
 * .. u32 crc32c of every header byte before it
 */
#define HDR_FIXED 40u
/* A reader accepts header_size up to this (newer writers may add fields before the CRC). */
#define NWB_SPOOL_HEADER_MAX 1024u

size_t nwb__spool_header_size(const struct nwb__spool_ident *id)
{
    return HDR_FIXED + strlen(id->program) + 4u;
}

void nwb__spool_header_encode(uint8_t *dst, const struct nwb__spool_ident *id)
{
    const size_t plen = strlen(id->program);
    const size_t rlen = strlen(id->run);
    const size_t size = nwb__spool_header_size(id);

    memset(dst, 0, size);
    nwb_le32_store(dst, NWB_SPOOL_MAGIC);
    nwb_le16_store(dst + 4, NWB_SPOOL_VERSION);
    nwb_le16_store(dst + 6, (uint16_t)size);
    nwb_le64_store(dst + 8, id->start_ns);
    nwb_le32_store(dst + 16, id->segno);
    dst[20] = (uint8_t)rlen;
    dst[21] = (uint8_t)plen;
    memcpy(dst + 24, id->run, rlen);
    memcpy(dst + HDR_FIXED, id->program, plen);
    nwb_le32_store(dst + size - 4, nwb__crc32c(0, dst, size - 4));
}

static int name_ok(const uint8_t *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        const uint8_t c = s[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.')) {
            return 0;
        }
    }
    return len > 0;
}

int nwb__spool_header_decode(const uint8_t *src, size_t len, struct nwb__spool_ident *id,
                             const char **why)
{
    size_t size;
    size_t rlen;
    size_t plen;

    *why = "";
    if (len < 8) {
        *why = "file shorter than a spool header";
        return NWB_ETRUNCATED;
    }
    if (nwb_le32_load(src) != NWB_SPOOL_MAGIC) {
        *why = "bad spool magic (expected \"NWBS\")";
        return NWB_EMAGIC;
    }
    if (nwb_le16_load(src + 4) != NWB_SPOOL_VERSION) {
        *why = "unsupported spool version";
        return NWB_EVERSION;
    }
    size = nwb_le16_load(src + 6);
    if (size < HDR_FIXED + 4u || size > NWB_SPOOL_HEADER_MAX) {
        *why = "spool header_size out of range";
        return NWB_ERANGE;
    }
    if (len < HDR_FIXED) {
        *why = "spool header truncated";
        return NWB_ETRUNCATED;
    }
    rlen = src[20];
    plen = src[21];
    if (size < HDR_FIXED + plen + 4u) {
        *why = "spool header_size too small for its program name";
        return NWB_EPROTO;
    }
    if (len < size) {
        *why = "spool header truncated";
        return NWB_ETRUNCATED;
    }
    if (nwb_le32_load(src + size - 4) != nwb__crc32c(0, src, size - 4)) {
        *why = "spool header checksum mismatch";
        return NWB_EPROTO;
    }
    if (rlen == 0 || rlen > 16 || plen == 0 || plen > NWB_SAFE_NAME_MAX ||
        !name_ok(src + 24, rlen) || !name_ok(src + HDR_FIXED, plen)) {
        *why = "spool header names are empty, too long or unsafe";
        return NWB_EPROTO;
    }
    memcpy(id->run, src + 24, rlen);
    id->run[rlen] = '\0';
    memcpy(id->program, src + HDR_FIXED, plen);
    id->program[plen] = '\0';
    id->start_ns = nwb_le64_load(src + 8);
    id->segno = nwb_le32_load(src + 16);
    return (int)size;
}

/* ---- entries ---- */

static void entry_header_encode(uint8_t *dst, uint64_t seq, const uint8_t *data, uint32_t len)
{
    uint32_t crc;

    nwb_le32_store(dst, NWB_SPOOL_ENTRY_MAGIC);
    nwb_le32_store(dst + 4, len);
    nwb_le64_store(dst + 8, seq);
    nwb_le32_store(dst + 16, 0);
    crc = nwb__crc32c(0, dst, 20);
    nwb_le32_store(dst + 20, nwb__crc32c(crc, data, len));
}

static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t off)
{
    size_t done = 0;

    while (done < len) {
        const ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -errno;
        }
        if (n == 0) {
            break;
        }
        done += (size_t)n;
    }
    return (ssize_t)done;
}

/*
 * Read the entry at @p off of a file of @p size bytes. Returns 1 with a new
 * batch in @p *out and the entry's size in @p *entry_size, 0 at a clean end,
 * or a negative code with a reason.
 */
static int entry_read(int fd, uint64_t off, uint64_t size, struct nwb__batch **out,
                      uint64_t *entry_size, const char **why)
{
    uint8_t h[NWB_SPOOL_ENTRY_HEADER];
    struct nwb__batch *b;
    uint32_t len;
    uint32_t crc;
    ssize_t n;
    const char *bwhy;

    *out = NULL;
    if (off == size) {
        return 0;
    }
    if (size - off < NWB_SPOOL_ENTRY_HEADER) {
        *why = "entry header truncated";
        return NWB_ETRUNCATED;
    }
    n = pread_full(fd, h, sizeof(h), off);
    if (n < 0) {
        *why = "read error";
        return (int)n;
    }
    if ((size_t)n < sizeof(h)) {
        *why = "entry header truncated";
        return NWB_ETRUNCATED;
    }
    if (nwb_le32_load(h) != NWB_SPOOL_ENTRY_MAGIC) {
        *why = "bad entry magic (expected \"NWBE\")";
        return NWB_EMAGIC;
    }
    len = nwb_le32_load(h + 4);
    if (len < NWB_LOG_BATCH_HEADER_SIZE || len > NWB_SPOOL_ENTRY_MAX) {
        *why = "entry payload_len out of range";
        return NWB_ERANGE;
    }
    if (size - off - NWB_SPOOL_ENTRY_HEADER < len) {
        *why = "entry payload truncated";
        return NWB_ETRUNCATED;
    }
    b = nwb__batch_alloc(len);
    if (b == NULL) {
        *why = "out of memory";
        return NWB_EFULL;
    }
    n = pread_full(fd, b->data, len, off + NWB_SPOOL_ENTRY_HEADER);
    if (n != (ssize_t)len) {
        nwb_free(b);
        *why = n < 0 ? "read error" : "entry payload truncated";
        return n < 0 ? (int)n : NWB_ETRUNCATED;
    }
    crc = nwb__crc32c(nwb__crc32c(0, h, 20), b->data, len);
    if (crc != nwb_le32_load(h + 20)) {
        nwb_free(b);
        *why = "entry checksum mismatch";
        return NWB_EPROTO;
    }
    if (nwb_log_batch_validate(b->data, len, &bwhy, NULL) != 0) {
        nwb_free(b);
        *why = "entry payload is not a valid log batch";
        return NWB_EPROTO;
    }
    b->len = len;
    b->seq = nwb_le64_load(h + 8);
    b->records = nwb_le32_load(b->data + 8);
    *out = b;
    *entry_size = NWB_SPOOL_ENTRY_HEADER + (uint64_t)len;
    return 1;
}

/* ---- the current run's spool ---- */

struct spool_seg {
    struct spool_seg *next;
    int fd;
    uint32_t segno;
    uint64_t size;     /* bytes in the file (the append offset) */
    uint64_t read_off; /* the oldest unacknowledged entry */
    uint64_t live;     /* unacknowledged entries */
    char path[];
};

struct nwb__spool {
    char dir[1024];
    struct nwb__spool_ident id;
    uint64_t cap;
    uint64_t seg_target;
    size_t header_size;
    struct spool_seg *head; /* oldest */
    struct spool_seg *tail; /* written to */
    uint64_t disk;          /* bytes in all segment files */
    uint64_t live;
    uint32_t next_segno;
    int peeked;         /* the head entry is handed out */
    uint64_t peek_size; /* its size on disk */
    int dir_reported;
};

int nwb__spool_create(const char *dir, const struct nwb__spool_ident *id, uint64_t cap_bytes,
                      struct nwb__spool **out)
{
    struct nwb__spool *sp = nwb_calloc(1, sizeof(*sp));

    *out = NULL;
    if (sp == NULL) {
        return NWB_EFULL;
    }
    if (nwb__fmt(sp->dir, sizeof(sp->dir), "%s", dir) != 0) {
        nwb_free(sp);
        return NWB_ECONFIG;
    }
    sp->id = *id;
    sp->cap = cap_bytes;
    sp->seg_target = cap_bytes / NWB_SPOOL_SEGMENTS;
    sp->header_size = nwb__spool_header_size(id);
    *out = sp;
    return 0;
}

static void seg_free(struct nwb__spool *sp, struct spool_seg *seg, int remove)
{
    if (remove) {
        unlink(seg->path);
    }
    close(seg->fd);
    sp->disk -= seg->size;
    nwb_free(seg);
}

/* Remove the head segment; returns how many unacknowledged entries it held. */
static uint64_t seg_drop_head(struct nwb__spool *sp, int *head_lost)
{
    struct spool_seg *seg = sp->head;
    uint64_t dropped = seg->live;

    if (sp->peeked) {
        sp->peeked = 0;
        dropped--;
        if (head_lost != NULL) {
            *head_lost = 1;
        }
    }
    sp->live -= seg->live;
    sp->head = seg->next;
    if (sp->tail == seg) {
        sp->tail = NULL;
    }
    seg_free(sp, seg, 1);
    return dropped;
}

/*
 * Make a new segment: written under a temporary name, locked, then linked to
 * its final name, so a scanning process never sees a half-written header and
 * never wins the lock on a file being born.
 */
static int seg_new(struct nwb__spool *sp, struct spool_seg **out)
{
    uint8_t hdr[HDR_FIXED + NWB_SAFE_NAME_MAX + 4];
    char tmp[1200];
    struct spool_seg *seg;
    const size_t path_cap = strlen(sp->dir) + 2 + sizeof(sp->id.program) + 1 + 16 + 12 + 8;
    int fd;
    int err;

    err = nwb_mkdir_p(sp->dir, 0700); /* unsent records are the player's: private */
    if (err != 0) {
        return err;
    }
    if (nwb__fmt(tmp, sizeof(tmp), "%s/.%s_%s.%ld.tmp", sp->dir, sp->id.program, sp->id.run,
                 (long)getpid()) != 0) {
        return NWB_ECONFIG;
    }
    seg = nwb_malloc(sizeof(*seg) + path_cap);
    if (seg == NULL) {
        return NWB_EFULL;
    }
    unlink(tmp); /* a leftover of a crashed process with our pid */
    fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        err = -errno;
        goto fail_free;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        err = -errno;
        goto fail_close;
    }
    for (int attempt = 0;; attempt++) {
        struct nwb__spool_ident id = sp->id;

        if (attempt == 1000) {
            err = -EEXIST;
            goto fail_close;
        }
        id.segno = sp->next_segno++;
        nwb__spool_header_encode(hdr, &id);
        err = nwb_pwrite_all(fd, hdr, sp->header_size, 0);
        if (err != 0) {
            goto fail_close;
        }
        snprintf(seg->path, path_cap, "%s/%s_%s.%06" PRIu32 NWB_SPOOL_SUFFIX, sp->dir,
                 sp->id.program, sp->id.run, id.segno);
        /* link() never replaces a file an earlier process with the same run id left. */
        if (link(tmp, seg->path) == 0) {
            break;
        }
        if (errno == EEXIST) {
            continue;
        }
        if (errno == EPERM || errno == ENOTSUP || errno == EOPNOTSUPP || errno == ENOSYS) {
            struct stat st;

            /* Filesystems without hard links: check, then rename (racy only there). */
            if (stat(seg->path, &st) == 0) {
                continue;
            }
            if (rename(tmp, seg->path) == 0) {
                tmp[0] = '\0';
                break;
            }
        }
        err = -errno;
        goto fail_close;
    }
    if (tmp[0] != '\0') {
        unlink(tmp);
    }
    seg->next = NULL;
    seg->fd = fd;
    seg->segno = sp->next_segno - 1;
    seg->size = sp->header_size;
    seg->read_off = sp->header_size;
    seg->live = 0;
    sp->disk += seg->size;
    *out = seg;
    return 0;

fail_close:
    close(fd);
    unlink(tmp);
fail_free:
    nwb_free(seg);
    return err;
}

int nwb__spool_append(struct nwb__spool *sp, uint64_t seq, const uint8_t *data, uint32_t len,
                      uint64_t *dropped, int *head_lost)
{
    uint8_t h[NWB_SPOOL_ENTRY_HEADER];
    const uint64_t esize = NWB_SPOOL_ENTRY_HEADER + (uint64_t)len;
    struct iovec iov[2];
    struct spool_seg *seg = NULL;
    int need_new;
    int err;

    *dropped = 0;
    *head_lost = 0;
    if (len > NWB_SPOOL_ENTRY_MAX || esize + sp->header_size > sp->cap) {
        return NWB_ETOOBIG;
    }
    for (;;) {
        uint64_t need;

        need_new = sp->tail == NULL ||
                   (sp->tail->size > sp->header_size && sp->tail->size + esize > sp->seg_target);
        need = esize + (need_new ? sp->header_size : 0);
        if (sp->disk + need <= sp->cap || sp->head == NULL) {
            break;
        }
        *dropped += seg_drop_head(sp, head_lost);
    }
    if (need_new) {
        err = seg_new(sp, &seg);
        if (err != 0) {
            if (!sp->dir_reported) {
                char ebuf[128];

                sp->dir_reported = 1;
                nwb__net_report("cannot create a spool file in %s: %s", sp->dir,
                                nwb_strerror_r(err, ebuf, sizeof(ebuf)));
            }
            return err;
        }
        if (sp->tail != NULL) {
            sp->tail->next = seg;
        } else {
            sp->head = seg;
        }
        sp->tail = seg;
    }
    seg = sp->tail;
    entry_header_encode(h, seq, data, len);
    iov[0].iov_base = h;
    iov[0].iov_len = sizeof(h);
    iov[1].iov_base = (void *)(uintptr_t)data;
    iov[1].iov_len = len;
    {
        size_t done = 0;

        while (done < esize) {
            ssize_t n;

            if (done < sizeof(h)) {
                struct iovec part[2] = {{h + done, sizeof(h) - done}, iov[1]};

                n = pwritev(seg->fd, part, 2, (off_t)(seg->size + done));
            } else {
                n = pwrite(seg->fd, data + (done - sizeof(h)), esize - done,
                           (off_t)(seg->size + done));
            }
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                err = n < 0 ? -errno : -EIO;
                /* Leave the file as it was: a torn entry would only be skipped later. */
                if (ftruncate(seg->fd, (off_t)seg->size) != 0) {
                    /* The reader stops at a torn tail anyway. */
                }
                return err;
            }
            done += (size_t)n;
        }
    }
    seg->size += esize;
    seg->live++;
    sp->disk += esize;
    sp->live++;
    return 0;
}

int nwb__spool_peek(struct nwb__spool *sp, struct nwb__batch **out, uint64_t *dropped)
{
    struct spool_seg *seg;
    const char *why = "";
    uint64_t esize = 0;
    int rc;

    *out = NULL;
    *dropped = 0;
    for (;;) {
        seg = sp->head;
        if (seg == NULL) {
            return 0;
        }
        if (seg->live > 0) {
            break;
        }
        /* An emptied segment that is still the write target. */
        sp->head = seg->next;
        if (sp->tail == seg) {
            sp->tail = NULL;
        }
        seg_free(sp, seg, 1);
    }
    rc = entry_read(seg->fd, seg->read_off, seg->size, out, &esize, &why);
    if (rc == 1) {
        sp->peeked = 1;
        sp->peek_size = esize;
        return 1;
    }
    if (rc == NWB_EFULL) {
        return rc;
    }
    /* Our own file is damaged (disk error, someone truncated it): give the segment up. */
    nwb__net_report("spool file %s is damaged at offset %" PRIu64 " (%s); dropping %" PRIu64
                    " batches",
                    seg->path, seg->read_off, why, seg->live);
    sp->peeked = 0;
    *dropped = seg_drop_head(sp, NULL);
    return rc < 0 ? rc : NWB_EPROTO;
}

void nwb__spool_mark_head(struct nwb__spool *sp)
{
    struct spool_seg *seg = sp->head;
    uint8_t h[NWB_SPOOL_ENTRY_HEADER];

    if (seg == NULL || seg->live == 0) {
        return;
    }
    if (pread_full(seg->fd, h, sizeof(h), seg->read_off) != (ssize_t)sizeof(h)) {
        return;
    }
    sp->peeked = 1;
    sp->peek_size = NWB_SPOOL_ENTRY_HEADER + (uint64_t)nwb_le32_load(h + 4);
}

void nwb__spool_pop(struct nwb__spool *sp)
{
    struct spool_seg *seg = sp->head;

    if (!sp->peeked || seg == NULL) {
        return;
    }
    sp->peeked = 0;
    seg->read_off += sp->peek_size;
    seg->live--;
    sp->live--;
    if (seg->live == 0) {
        sp->head = seg->next;
        if (sp->tail == seg) {
            sp->tail = NULL;
        }
        seg_free(sp, seg, 1);
    }
}

void nwb__spool_unpeek(struct nwb__spool *sp)
{
    sp->peeked = 0;
}

uint64_t nwb__spool_live(const struct nwb__spool *sp)
{
    return sp->live;
}

uint64_t nwb__spool_disk_bytes(const struct nwb__spool *sp)
{
    return sp->disk;
}

void nwb__spool_destroy(struct nwb__spool *sp)
{
    if (sp == NULL) {
        return;
    }
    while (sp->head != NULL) {
        struct spool_seg *seg = sp->head;

        sp->head = seg->next;
        /* Files with unacknowledged batches stay for the next run; empty ones go. */
        seg_free(sp, seg, seg->live == 0);
    }
    nwb_free(sp);
}

/* ---- earlier runs' files ---- */

static int found_cmp(const void *a, const void *b)
{
    const struct nwb__spool_found *x = a;
    const struct nwb__spool_found *y = b;
    int c;

    if (x->id.start_ns != y->id.start_ns) {
        return x->id.start_ns < y->id.start_ns ? -1 : 1;
    }
    c = strcmp(x->id.run, y->id.run);
    if (c != 0) {
        return c;
    }
    if (x->id.segno != y->id.segno) {
        return x->id.segno < y->id.segno ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

static int has_suffix(const char *s, const char *suffix)
{
    const size_t n = strlen(s);
    const size_t m = strlen(suffix);

    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Read and check the header of an open file. Returns the header size or a negative code. */
static int header_read(int fd, struct nwb__spool_ident *id, const char **why)
{
    uint8_t buf[NWB_SPOOL_HEADER_MAX];
    const ssize_t n = pread_full(fd, buf, sizeof(buf), 0);

    if (n < 0) {
        *why = "read error";
        return (int)n;
    }
    return nwb__spool_header_decode(buf, (size_t)n, id, why);
}

int nwb__spool_scan(const char *dir, const char *program, struct nwb__spool_found **out,
                    size_t *count)
{
    struct nwb__spool_found *list;
    struct dirent *de;
    size_t n = 0;
    const size_t plen = strlen(program);
    DIR *d;

    *out = NULL;
    *count = 0;
    d = opendir(dir);
    if (d == NULL) {
        return 0;
    }
    list = nwb_malloc(sizeof(*list) * NWB_SPOOL_SCAN_MAX);
    if (list == NULL) {
        closedir(d);
        return NWB_EFULL;
    }
    while (n < NWB_SPOOL_SCAN_MAX) {
        char path[1200];
        const char *why = "";
        int fd;
        int rc;

        de = readdir(d);
        if (de == NULL) {
            break;
        }
        if (strncmp(de->d_name, program, plen) != 0 || de->d_name[plen] != '_' ||
            !has_suffix(de->d_name, NWB_SPOOL_SUFFIX) ||
            strlen(de->d_name) >= sizeof(list[0].name) ||
            nwb__fmt(path, sizeof(path), "%s/%s", dir, de->d_name) != 0) {
            continue;
        }
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
            continue;
        }
        /* Headers never change once a file has its name, so reading needs no lock; files a
         * live process holds are listed too and skipped when their turn comes. */
        rc = header_read(fd, &list[n].id, &why);
        if (rc > 0 && strcmp(list[n].id.program, program) == 0) {
            memcpy(list[n].name, de->d_name, strlen(de->d_name) + 1);
            n++;
        } else if (rc < 0 && rc != NWB_EVERSION && flock(fd, LOCK_EX | LOCK_NB) == 0) {
            char bad[1210];

            /* Renamed so it is reported once, and kept for whoever wants to look at it. */
            nwb__net_report("spool file %s has a bad header (%s); renamed to %s.bad", path, why,
                            de->d_name);
            if (nwb__fmt(bad, sizeof(bad), "%s.bad", path) == 0 && rename(path, bad) != 0) {
                unlink(path);
            }
        }
        close(fd);
    }
    closedir(d);
    if (n == 0) {
        nwb_free(list);
        return 0;
    }
    qsort(list, n, sizeof(*list), found_cmp);
    *out = list;
    *count = n;
    return 0;
}

int nwb__spool_reader_open(struct nwb__spool_reader *r, const char *dir, const char *name)
{
    struct stat a;
    struct stat b;
    int rc;

    memset(r, 0, sizeof(*r));
    r->fd = -1;
    r->why = "";
    if (nwb__fmt(r->path, sizeof(r->path), "%s/%s", dir, name) != 0) {
        r->why = "path too long";
        return NWB_ECONFIG;
    }
    r->fd = open(r->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (r->fd < 0) {
        return -errno;
    }
    if (flock(r->fd, LOCK_EX | LOCK_NB) != 0) {
        rc = -errno;
        goto fail;
    }
    /* Another process may have delivered and deleted it between our open and lock. */
    if (fstat(r->fd, &a) != 0 || stat(r->path, &b) != 0 || a.st_ino != b.st_ino ||
        a.st_dev != b.st_dev) {
        rc = -ENOENT;
        goto fail;
    }
    rc = header_read(r->fd, &r->id, &r->why);
    if (rc < 0) {
        goto fail;
    }
    r->off = (uint64_t)rc;
    r->next_off = r->off;
    r->size = (uint64_t)a.st_size;
    return 0;

fail:
    close(r->fd);
    r->fd = -1;
    return rc;
}

int nwb__spool_reader_next(struct nwb__spool_reader *r, struct nwb__batch **out)
{
    uint64_t esize = 0;
    const int rc = entry_read(r->fd, r->off, r->size, out, &esize, &r->why);

    if (rc == 1) {
        r->next_off = r->off + esize;
    }
    return rc;
}

void nwb__spool_reader_ack(struct nwb__spool_reader *r)
{
    r->off = r->next_off;
}

void nwb__spool_reader_close(struct nwb__spool_reader *r, int remove)
{
    if (r == NULL || r->fd < 0) {
        return;
    }
    if (remove) {
        unlink(r->path);
    }
    close(r->fd);
    r->fd = -1;
}
