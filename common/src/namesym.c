/* SPDX-License-Identifier: MIT */
/*
 * namesym.c - the .namesym sidecar format, version 1 (docs/namesym.md): the
 * builder that sorts and writes sidecars, the strict in-place reader, and
 * UTF-8 re-sanitising of the strings it hands out.
 *
 * Header (64 bytes, little-endian)        Entry (16 bytes), sorted by hash
 *  0  8 magic "NWBNSYM\0"                  0 u64 hash (FNV-1a of the string)
 *  8  2 version (1)                        8 u32 string offset in the string area
 * 10  2 header_size (64)                  12 u32 string length
 * 12  2 entry_size (16)
 * 14  2 flags (0)
 * 16  4 entry_count
 * 20  4 build_id_len
 * 24  8 entries_offset
 * 32  8 strings_offset
 * 40  8 strings_size
 * 48  8 created_ns
 * 56  4 build_id_offset (in the string area)
 * 60  4 reserved (0)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/byte_order.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "nwb/log_line.h"
#include "nwb/namesym.h"

struct nwb__namesym_entry {
    nwb_name_t hash;
    char *str; /* owned */
    uint32_t len;
};

void nwb_namesym_builder_init(nwb_namesym_builder_t *b)
{
    memset(b, 0, sizeof(*b));
}

void nwb_namesym_builder_cleanup(nwb_namesym_builder_t *b)
{
    if (b == NULL) {
        return;
    }
    for (size_t i = 0; i < b->count; i++) {
        nwb_free(b->entries[i].str);
    }
    nwb_free(b->entries);
    nwb_namesym_builder_init(b);
}

int nwb_namesym_builder_add(nwb_namesym_builder_t *b, const char *s, size_t len)
{
    struct nwb__namesym_entry *e;

    if (len > NWB_NAMESYM_MAX_STRING) {
        return NWB_ETOOBIG;
    }
    if (b->count == NWB_NAMESYM_MAX_ENTRIES) {
        return NWB_ETOOBIG;
    }
    if (b->count == b->cap) {
        const size_t cap = b->cap == 0 ? 256 : b->cap * 2;
        struct nwb__namesym_entry *n = nwb_realloc(b->entries, cap * sizeof(*n));

        if (n == NULL) {
            return -ENOMEM;
        }
        b->entries = n;
        b->cap = cap;
    }
    e = &b->entries[b->count];
    e->str = nwb_malloc(len + 1);
    if (e->str == NULL) {
        return -ENOMEM;
    }
    memcpy(e->str, s, len);
    e->str[len] = '\0';
    e->len = (uint32_t)len;
    e->hash = nwb_name_hash(s, len);
    b->count++;
    b->string_bytes += len;
    return 0;
}

static int entry_cmp(const void *a, const void *b)
{
    const struct nwb__namesym_entry *x = a, *y = b;

    if (x->hash != y->hash) {
        return x->hash < y->hash ? -1 : 1;
    }
    if (x->len != y->len) {
        return x->len < y->len ? -1 : 1;
    }
    return memcmp(x->str, y->str, x->len);
}

int nwb_namesym_builder_serialize(nwb_namesym_builder_t *b, const char *build_id, uint8_t **out,
                                  size_t *out_len, char *errbuf, size_t errlen)
{
    size_t build_len = build_id != NULL ? strlen(build_id) : 0;
    size_t unique = 0, strings = 0, total;
    uint8_t *buf, *ent, *str;

    *out = NULL;
    *out_len = 0;
    if (build_len > NWB_NAMESYM_MAX_BUILD) {
        build_len = NWB_NAMESYM_MAX_BUILD;
    }
    if (b->count > 0) {
        qsort(b->entries, b->count, sizeof(*b->entries), entry_cmp);
    }
    for (size_t i = 0; i < b->count; i++) {
        const struct nwb__namesym_entry *e = &b->entries[i];

        if (i > 0 && e->hash == b->entries[i - 1].hash) {
            if (e->len == b->entries[i - 1].len &&
                memcmp(e->str, b->entries[i - 1].str, e->len) == 0) {
                continue; /* the same name added twice */
            }
            if (errbuf != NULL) {
                snprintf(errbuf, errlen, "hash collision %016llx: \"%s\" and \"%s\"",
                         (unsigned long long)e->hash, b->entries[i - 1].str, e->str);
            }
            return NWB_EDUPLICATE;
        }
        unique++;
        strings += e->len;
    }
    total = NWB_NAMESYM_HEADER_SIZE + unique * NWB_NAMESYM_ENTRY_SIZE + build_len + strings;
    buf = nwb_calloc(1, total);
    if (buf == NULL) {
        return -ENOMEM;
    }
    ent = buf + NWB_NAMESYM_HEADER_SIZE;
    str = ent + unique * NWB_NAMESYM_ENTRY_SIZE;
    memcpy(buf, NWB_NAMESYM_MAGIC, 8);
    nwb_le16_store(buf + 8, NWB_NAMESYM_VERSION);
    nwb_le16_store(buf + 10, NWB_NAMESYM_HEADER_SIZE);
    nwb_le16_store(buf + 12, NWB_NAMESYM_ENTRY_SIZE);
    nwb_le16_store(buf + 14, 0);
    nwb_le32_store(buf + 16, (uint32_t)unique);
    nwb_le32_store(buf + 20, (uint32_t)build_len);
    nwb_le64_store(buf + 24, NWB_NAMESYM_HEADER_SIZE);
    nwb_le64_store(buf + 32, (uint64_t)(str - buf));
    nwb_le64_store(buf + 40, build_len + strings);
    nwb_le64_store(buf + 48, nwb_time_now_ns());
    nwb_le32_store(buf + 56, 0);
    memcpy(str, build_id != NULL ? build_id : "", build_len);
    {
        size_t soff = build_len, k = 0;

        for (size_t i = 0; i < b->count; i++) {
            const struct nwb__namesym_entry *e = &b->entries[i];

            if (i > 0 && e->hash == b->entries[i - 1].hash) {
                continue;
            }
            nwb_le64_store(ent + k * NWB_NAMESYM_ENTRY_SIZE, e->hash);
            nwb_le32_store(ent + k * NWB_NAMESYM_ENTRY_SIZE + 8, (uint32_t)soff);
            nwb_le32_store(ent + k * NWB_NAMESYM_ENTRY_SIZE + 12, e->len);
            memcpy(str + soff, e->str, e->len);
            soff += e->len;
            k++;
        }
    }
    *out = buf;
    *out_len = total;
    return 0;
}

int nwb_namesym_builder_write(nwb_namesym_builder_t *b, const char *build_id, const char *path,
                              char *errbuf, size_t errlen)
{
    uint8_t *buf;
    size_t len;
    char tmp[4200];
    int fd, rc;

    rc = nwb_namesym_builder_serialize(b, build_id, &buf, &len, errbuf, errlen);
    if (rc != 0) {
        return rc;
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = -errno;
        goto out;
    }
    rc = nwb_write_all(fd, buf, len);
    if (rc == 0 && fsync(fd) != 0) {
        rc = -errno;
    }
    if (close(fd) != 0 && rc == 0) {
        rc = -errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -errno;
    }
    if (rc != 0) {
        unlink(tmp);
        if (errbuf != NULL) {
            snprintf(errbuf, errlen, "writing %s: %s", path, strerror(-rc));
        }
    }
out:
    nwb_free(buf);
    return rc;
}

static int reject(const char **why, size_t *bad, const char *reason, size_t off, int code)
{
    if (why != NULL) {
        *why = reason;
    }
    if (bad != NULL) {
        *bad = off;
    }
    return code;
}

int nwb_namesym_view_open(nwb_namesym_view_t *v, const void *data, size_t len, const char **why,
                          size_t *bad_offset)
{
    const uint8_t *p = data;
    uint64_t entries_off, strings_off, strings_size;
    uint32_t header_size, entry_size, build_off;

    memset(v, 0, sizeof(*v));
    if (len < 8 || memcmp(p, NWB_NAMESYM_MAGIC, 8) != 0) {
        return reject(why, bad_offset, len < 8 ? "file shorter than the magic" : "bad magic", 0,
                      len < 8 ? NWB_ETRUNCATED : NWB_EMAGIC);
    }
    if (len < 10) {
        return reject(why, bad_offset, "header truncated", len, NWB_ETRUNCATED);
    }
    if (nwb_le16_load(p + 8) != NWB_NAMESYM_VERSION) {
        return reject(why, bad_offset, "unknown version", 8, NWB_EVERSION);
    }
    if (len < NWB_NAMESYM_HEADER_SIZE) {
        return reject(why, bad_offset, "header truncated", len, NWB_ETRUNCATED);
    }
    header_size = nwb_le16_load(p + 10);
    entry_size = nwb_le16_load(p + 12);
    if (header_size != NWB_NAMESYM_HEADER_SIZE) {
        return reject(why, bad_offset, "header_size is not 64", 10, NWB_EPROTO);
    }
    if (entry_size != NWB_NAMESYM_ENTRY_SIZE) {
        return reject(why, bad_offset, "entry_size is not 16", 12, NWB_EPROTO);
    }
    v->count = nwb_le32_load(p + 16);
    v->build_id_len = nwb_le32_load(p + 20);
    entries_off = nwb_le64_load(p + 24);
    strings_off = nwb_le64_load(p + 32);
    strings_size = nwb_le64_load(p + 40);
    v->created_ns = nwb_le64_load(p + 48);
    build_off = nwb_le32_load(p + 56);
    if (v->count > NWB_NAMESYM_MAX_ENTRIES) {
        return reject(why, bad_offset, "entry_count over the reader's bound", 16, NWB_ERANGE);
    }
    if (entries_off < header_size || entries_off > len ||
        (uint64_t)v->count * entry_size > len - entries_off) {
        return reject(why, bad_offset,
                      entries_off > len ? "entries offset out of range" : "entries truncated", 24,
                      entries_off > len || entries_off < header_size ? NWB_ERANGE : NWB_ETRUNCATED);
    }
    if (strings_off < entries_off + (uint64_t)v->count * entry_size || strings_off > len) {
        return reject(why, bad_offset, "string area offset out of range", 32, NWB_ERANGE);
    }
    if (strings_size > len - strings_off) {
        return reject(why, bad_offset, "string area truncated", 40, NWB_ETRUNCATED);
    }
    if (v->build_id_len > NWB_NAMESYM_MAX_BUILD ||
        (uint64_t)build_off + v->build_id_len > strings_size) {
        return reject(why, bad_offset, "build id out of range", 56, NWB_ERANGE);
    }
    v->data = p;
    v->len = len;
    v->entries = p + entries_off;
    v->strings = p + strings_off;
    v->strings_size = strings_size;
    v->build_id = (const char *)v->strings + build_off;
    for (uint32_t i = 0; i < v->count; i++) {
        const uint8_t *e = v->entries + (size_t)i * NWB_NAMESYM_ENTRY_SIZE;
        const size_t eoff = (size_t)(e - p);
        const nwb_name_t h = nwb_le64_load(e);
        const uint32_t soff = nwb_le32_load(e + 8), slen = nwb_le32_load(e + 12);

        if (slen > NWB_NAMESYM_MAX_STRING) {
            return reject(why, bad_offset, "string longer than the reader's bound", eoff + 12,
                          NWB_ERANGE);
        }
        if ((uint64_t)soff + slen > strings_size) {
            return reject(why, bad_offset, "string offset out of range", eoff + 8, NWB_ERANGE);
        }
        if (i > 0) {
            const nwb_name_t prev = nwb_le64_load(e - NWB_NAMESYM_ENTRY_SIZE);

            if (h == prev) {
                return reject(why, bad_offset, "duplicate hash", eoff, NWB_EDUPLICATE);
            }
            if (h < prev) {
                return reject(why, bad_offset, "entries not sorted by hash", eoff, NWB_EUNSORTED);
            }
        }
    }
    return reject(why, bad_offset, "", 0, 0);
}

void nwb_namesym_view_entry(const nwb_namesym_view_t *v, uint32_t i, nwb_name_t *hash,
                            const char **s, uint32_t *len)
{
    const uint8_t *e = v->entries + (size_t)i * NWB_NAMESYM_ENTRY_SIZE;

    *hash = nwb_le64_load(e);
    *s = (const char *)v->strings + nwb_le32_load(e + 8);
    *len = nwb_le32_load(e + 12);
}

int nwb_namesym_view_find(const nwb_namesym_view_t *v, nwb_name_t hash, const char **s,
                          uint32_t *len)
{
    uint32_t lo = 0, hi = v->count;

    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        nwb_name_t h;

        nwb_namesym_view_entry(v, mid, &h, s, len);
        if (h == hash) {
            return 1;
        }
        if (h < hash) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return 0;
}

size_t nwb_utf8_sanitize(char *dst, const char *src, size_t len)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t i = 0, n = 0;

    while (i < len) {
        const unsigned char c = s[i];
        size_t need = 0;
        uint32_t cp = 0, min = 0;

        if (c < 0x80) {
            dst[n++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            need = 1, cp = c & 0x1f, min = 0x80;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 2, cp = c & 0x0f, min = 0x800;
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 3, cp = c & 0x07, min = 0x10000;
        }
        if (need == 0 || i + need >= len) {
            dst[n++] = (char)0xef, dst[n++] = (char)0xbf, dst[n++] = (char)0xbd;
            i++;
            continue;
        }
        {
            size_t k;

            for (k = 1; k <= need; k++) {
                if ((s[i + k] & 0xc0) != 0x80) {
                    break;
                }
                cp = (cp << 6) | (s[i + k] & 0x3f);
            }
            if (k <= need || cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
                dst[n++] = (char)0xef, dst[n++] = (char)0xbf, dst[n++] = (char)0xbd;
                i++;
                continue;
            }
            memcpy(dst + n, s + i, need + 1);
            n += need + 1;
            i += need + 1;
        }
    }
    return n;
}
