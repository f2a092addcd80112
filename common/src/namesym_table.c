/* SPDX-License-Identifier: MIT */
/*
 * namesym_table.c - a decoding table merged from .namesym sidecars (an
 * open-addressing map from a token's 16 hex digits to the sanitised name; see
 * namesym_table_int.h) and the token decoder that rewrites "#" +
 * 16-hex-digit tokens in text (memchr to each '#', the digits looked up as
 * they are, checked as a token only when they are not in the table).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "nwb/namesym.h"
#include "namesym_table_int.h"

/* @p cap zeroed (empty) slots, 64-byte aligned (one cache line each); *mem is what to free. */
static struct slot *slots_alloc(size_t cap, void **mem)
{
    char *raw = nwb_calloc(1, cap * sizeof(struct slot) + 63u);

    *mem = raw;
    if (raw == NULL) {
        return NULL;
    }
    return (struct slot *)(void *)(raw + ((64u - ((uintptr_t)raw & 63u)) & 63u));
}

static void slot_free_str(struct slot *s)
{
    if (s->tok[0] != '\0' && s->len >= NWB__SLOT_INLINE) {
        nwb_free(s->name.heap);
    }
}

/* Give @p t @p cap (a power of two) fresh empty slots and tags; the old ones stay the caller's. */
static int slots_set(nwb_namesym_table_t *t, size_t cap)
{
    void *mem;
    struct slot *slots = slots_alloc(cap, &mem);
    uint8_t *tags = nwb_calloc(1, cap + NWB__TAG_GROUP);

    if (slots == NULL || tags == NULL) {
        nwb_free(mem);
        nwb_free(tags);
        return -ENOMEM;
    }
    t->slots = slots;
    t->slots_mem = mem;
    t->tags = tags;
    t->mask = cap - 1;
    t->shift = 64u - (unsigned)__builtin_ctzll((unsigned long long)cap); /* 64 - log2(cap) */
    return 0;
}

int nwb_namesym_table_create(nwb_namesym_table_t **out)
{
    nwb_namesym_table_t *t = nwb_calloc(1, sizeof(*t));

    *out = NULL;
    if (t == NULL) {
        return -ENOMEM;
    }
    if (slots_set(t, 1024) != 0) {
        nwb_free(t);
        return -ENOMEM;
    }
    *out = t;
    return 0;
}

void nwb_namesym_table_destroy(nwb_namesym_table_t *t)
{
    if (t == NULL) {
        return;
    }
    for (size_t i = 0; i <= t->mask; i++) {
        slot_free_str(&t->slots[i]);
    }
    for (size_t i = 0; i < t->nsources; i++) {
        nwb_free(t->sources[i]);
    }
    nwb_free(t->sources);
    nwb_free(t->slots_mem);
    nwb_free(t->tags);
    nwb_free(t);
}

/* Tag @p s, just filled, as full for slot_find() (and its copy past the end, for the first 16). */
static void slot_tag_set(nwb_namesym_table_t *t, const struct slot *s)
{
    const size_t i = (size_t)(s - t->slots);
    const uint8_t tag = slot_tag(slot_hash(s->tok));

    t->tags[i] = tag;
    if (i < NWB__TAG_GROUP) {
        t->tags[t->mask + 1 + i] = tag;
    }
}

const struct slot *nwb__slot_find_slow(const nwb_namesym_table_t *t, const char *digits)
{
    const struct slot *s = slot_probe(t, digits);

    return s->tok[0] != '\0' ? s : NULL;
}

static int table_grow(nwb_namesym_table_t *t)
{
    struct slot *old = t->slots;
    void *old_mem = t->slots_mem;
    uint8_t *old_tags = t->tags;
    const size_t old_cap = t->mask + 1;

    if (slots_set(t, old_cap * 2) != 0) {
        return -ENOMEM;
    }
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].tok[0] != '\0') {
            struct slot *s = slot_probe(t, old[i].tok);

            *s = old[i]; /* an inline name moves with its slot */
            slot_tag_set(t, s);
        }
    }
    nwb_free(old_mem);
    nwb_free(old_tags);
    return 0;
}

long nwb_namesym_table_add(nwb_namesym_table_t *t, const nwb_namesym_view_t *v, const char *source,
                           nwb_namesym_collision_fn on_collision, void *ctx)
{
    char **sources;
    long added = 0;
    uint32_t src;

    sources = nwb_realloc(t->sources, (t->nsources + 1) * sizeof(*sources));
    if (sources == NULL) {
        return -ENOMEM;
    }
    t->sources = sources;
    t->sources[t->nsources] = nwb_strdup(source != NULL ? source : "?");
    if (t->sources[t->nsources] == NULL) {
        return -ENOMEM;
    }
    src = (uint32_t)t->nsources++;
    for (uint32_t i = 0; i < v->count; i++) {
        nwb_name_t h;
        const char *raw;
        uint32_t rlen;
        struct slot *s;
        char tok[NWB_NAME_TOKEN_SIZE];
        char *clean;
        size_t clen;

        nwb_namesym_view_entry(v, i, &h, &raw, &rlen);
        clean = nwb_malloc((size_t)rlen * 3 + 1);
        if (clean == NULL) {
            return -ENOMEM;
        }
        clen = nwb_utf8_sanitize(clean, raw, rlen);
        clean[clen] = '\0';
        if ((t->count + 1) * 2 > t->mask + 1 && table_grow(t) != 0) {
            nwb_free(clean);
            return -ENOMEM;
        }
        nwb_name_token(h, tok);
        s = slot_probe(t, tok + 1);
        if (s->tok[0] != '\0') {
            const char *have = slot_str(s);

            if ((s->len != clen || memcmp(have, clean, clen) != 0) && on_collision != NULL) {
                on_collision(ctx, h, have, t->sources[s->source], clean, t->sources[src]);
            }
            nwb_free(clean);
            continue;
        }
        memcpy(s->tok, tok + 1, sizeof(s->tok));
        if (clen < NWB__SLOT_INLINE) {
            memcpy(s->name.inl, clean, clen + 1);
            nwb_free(clean);
        } else {
            s->name.heap = clean;
        }
        s->len = (uint32_t)clen;
        s->source = src;
        slot_tag_set(t, s);
        t->count++;
        t->max_len = clen > t->max_len ? clen : t->max_len;
        added++;
    }
    return added;
}

long nwb_namesym_table_add_file(nwb_namesym_table_t *t, const char *path,
                                nwb_namesym_collision_fn on_collision, void *ctx, char *errbuf,
                                size_t errlen)
{
    /* No valid sidecar is larger: a bigger file is refused before it is read. */
    const size_t max =
        (size_t)NWB_NAMESYM_HEADER_SIZE +
        (size_t)NWB_NAMESYM_MAX_ENTRIES * (NWB_NAMESYM_ENTRY_SIZE + NWB_NAMESYM_MAX_STRING);
    nwb_namesym_view_t v;
    const char *why = "";
    size_t bad = 0, len = 0;
    uint8_t *buf = NULL;
    long rc = nwb_file_read(path, max, &buf, &len);

    if (rc == NWB_ENOTREG) {
        snprintf(errbuf, errlen, "%s: not a regular file", path);
        return rc;
    }
    if (rc == NWB_ETOOBIG) {
        snprintf(errbuf, errlen, "%s: larger than any valid sidecar", path);
        return rc;
    }
    if (rc != 0) {
        snprintf(errbuf, errlen, "%s: %s", path, strerror((int)-rc));
        return rc;
    }
    rc = nwb_namesym_view_open(&v, buf, len, &why, &bad);
    if (rc != 0) {
        snprintf(errbuf, errlen, "%s: invalid sidecar: %s (at byte %zu)", path, why, bad);
    } else {
        rc = nwb_namesym_table_add(t, &v, path, on_collision, ctx);
    }
    nwb_free(buf);
    return rc;
}

size_t nwb_namesym_table_count(const nwb_namesym_table_t *t)
{
    return t->count;
}

const char *nwb_namesym_table_find(const nwb_namesym_table_t *t, nwb_name_t hash, size_t *len)
{
    char tok[NWB_NAME_TOKEN_SIZE];
    const struct slot *s;

    nwb_name_token(hash, tok);
    s = slot_find(t, tok + 1);
    if (s == NULL) {
        return NULL;
    }
    if (len != NULL) {
        *len = s->len;
    }
    return slot_str(s);
}

size_t nwb_namesym_decode_max(const nwb_namesym_table_t *t, size_t len)
{
    const size_t tokens = len / NWB_NAME_TOKEN_LEN;
    const size_t grow = t != NULL && t->max_len > NWB_NAME_TOKEN_LEN ? t->max_len : 0;

    return len + tokens * grow;
}

size_t nwb_namesym_decode(const nwb_namesym_table_t *t, const char *text, size_t len, char *dst,
                          uint64_t *decoded, uint64_t *unknown)
{
    const char *p = text, *end = text + len, *copied = text;
    char *o = dst;
    uint64_t ndec = 0, nunk = 0;

    while (p < end) {
        const char *hash = memchr(p, '#', (size_t)(end - p));
        const struct slot *s = NULL;
        enum token_kind kind;

        if (hash == NULL) {
            break;
        }
        p = hash + 1;
        kind = token_at(t, (const unsigned char *)text, (size_t)(hash - text), len, &s);
        if (kind == TOKEN_NONE) {
            continue;
        }
        if (kind == TOKEN_UNKNOWN) {
            nunk++;
            p = hash + NWB_NAME_TOKEN_LEN;
            continue;
        }
        memcpy(o, copied, (size_t)(hash - copied));
        o += hash - copied;
        memcpy(o, slot_str(s), s->len);
        o += s->len;
        copied = p = hash + NWB_NAME_TOKEN_LEN;
        ndec++;
    }
    memcpy(o, copied, (size_t)(end - copied));
    o += end - copied;
    if (decoded != NULL) {
        *decoded += ndec;
    }
    if (unknown != NULL) {
        *unknown += nunk;
    }
    return (size_t)(o - dst);
}
