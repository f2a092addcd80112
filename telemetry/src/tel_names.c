/* SPDX-License-Identifier: MIT */
/*
 * tel_names.c - how the readers spell things: the report spellings of the telemetry format's
 * kinds and enumerations, and the names a stream carries (its string-table events, kept by
 * hash in bounded memory) looked up before the .namesym sidecar.
 */
#include <errno.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/telemetry_report.h"
#include "tel_int.h"

/* The kind table must stay contiguous from 1: as many rows as NWB_TEL_KIND_COUNT, each value
 * within 1..NWB_TEL_KIND_LAST (the switch below refuses duplicates), so every value is used. */
#define XX(sym, val, key) +1
_Static_assert(0 NWB_TEL_KIND_MAP(XX) == NWB_TEL_KIND_COUNT, "kind count drifted from the map");
#undef XX
_Static_assert(NWB_TEL_KIND_COUNT == NWB_TEL_KIND_LAST, "core kinds must be contiguous from 1");
#define XX(sym, val, key)                                                                          \
    _Static_assert((val) >= 1 && (val) <= NWB_TEL_KIND_LAST, "kind " #sym " out of range");
NWB_TEL_KIND_MAP(XX)
#undef XX

const char *nwb_tel_kind_name(unsigned kind)
{
    switch (kind) {
#define XX(sym, val, key)                                                                          \
    case (val):                                                                                    \
        return key;
        NWB_TEL_KIND_MAP(XX)
#undef XX
    default:
        return NULL;
    }
}

const char *nwb_tel_queue_type_name(unsigned t)
{
    static const char *const names[] = {"graphics", "compute", "transfer", "other"};

    return t < NWB_ARRAY_SIZE(names) ? names[t] : "?";
}

const char *nwb_tel_mem_source_name(unsigned s)
{
    static const char *const names[] = {"arena", "heapBacking", "explicitScope"};

    return s < NWB_ARRAY_SIZE(names) ? names[s] : "?";
}

const char *nwb_tel_peak_basis_name(unsigned b)
{
    static const char *const names[] = {"largestArena", "sampledHeap", "scope"};

    return b < NWB_ARRAY_SIZE(names) ? names[b] : "?";
}

const char *nwb_tel_severity_name(unsigned s)
{
    static const char *const names[] = {"info", "warning", "error", "fatal"};

    return s < NWB_ARRAY_SIZE(names) ? names[s] : "?";
}

/* ---- The strings a stream carries ---------------------------------------------------------- */

struct nwb__tel_str_slot {
    uint64_t name;
    uint32_t off; /* in bytes */
    uint16_t len; /* 0 = empty slot (the decoder refuses empty strings) */
    uint16_t unused;
};

_Static_assert(NWB_TEL_REPORT_STRING_BYTES_MAX <= UINT32_MAX, "string offsets are 32 bits");

static size_t slot_of(uint64_t name, size_t mask)
{
    /* FNV-1a hashes are well mixed in their low bits already; fold the high ones in. */
    return (size_t)(name ^ (name >> 29)) & mask;
}

void nwb__tel_strings_init(struct nwb__tel_strings *s)
{
    memset(s, 0, sizeof(*s));
}

/* Double the slot array (from 64), keeping the load at most one half. 0 or -ENOMEM. */
static int strings_grow(struct nwb__tel_strings *s)
{
    const size_t cap = s->slots == NULL ? 64 : (s->mask + 1) * 2;
    struct nwb__tel_str_slot *n = nwb_calloc(cap, sizeof(*n));

    if (n == NULL) {
        return -ENOMEM;
    }
    for (size_t i = 0; s->slots != NULL && i <= s->mask; i++) {
        if (s->slots[i].len != 0) {
            size_t j = slot_of(s->slots[i].name, cap - 1);

            while (n[j].len != 0) {
                j = (j + 1) & (cap - 1);
            }
            n[j] = s->slots[i];
        }
    }
    nwb_free(s->slots);
    s->slots = n;
    s->mask = cap - 1;
    return 0;
}

static struct nwb__tel_str_slot *strings_probe(const struct nwb__tel_strings *s, uint64_t name)
{
    size_t j = slot_of(name, s->mask);

    while (s->slots[j].len != 0 && s->slots[j].name != name) {
        j = (j + 1) & s->mask;
    }
    return &s->slots[j];
}

int nwb__tel_strings_add(struct nwb__tel_strings *s, const nwb_tel_strings_view_t *v)
{
    nwb_tel_string_t e;
    size_t pos = 0;

    while (nwb_tel_string_next(v, &pos, &e)) {
        struct nwb__tel_str_slot *slot;

        if (s->slots != NULL && strings_probe(s, e.name)->len != 0) {
            continue; /* known: every segment repeats the strings it uses */
        }
        if (s->count >= NWB_TEL_REPORT_STRINGS_MAX ||
            s->len + e.len > NWB_TEL_REPORT_STRING_BYTES_MAX) {
            s->not_kept++;
            continue;
        }
        if (s->slots == NULL || (size_t)(s->count + 1) * 2 > s->mask + 1) {
            if (strings_grow(s) != 0) {
                return -ENOMEM;
            }
        }
        if (s->len + e.len > s->cap) {
            size_t cap = s->cap == 0 ? 4096 : s->cap;
            char *b;

            while (cap < s->len + e.len) {
                cap *= 2;
            }
            cap = cap < NWB_TEL_REPORT_STRING_BYTES_MAX ? cap : NWB_TEL_REPORT_STRING_BYTES_MAX;
            b = nwb_realloc(s->bytes, cap);
            if (b == NULL) {
                return -ENOMEM;
            }
            s->bytes = b;
            s->cap = cap;
        }
        memcpy(s->bytes + s->len, e.str, e.len);
        slot = strings_probe(s, e.name);
        slot->name = e.name;
        slot->off = (uint32_t)s->len;
        slot->len = e.len;
        s->len += e.len;
        s->count++;
    }
    return 0;
}

const char *nwb__tel_strings_find(const struct nwb__tel_strings *s, nwb_name_t n, size_t *len)
{
    const struct nwb__tel_str_slot *slot;

    if (s == NULL || s->slots == NULL) {
        return NULL;
    }
    slot = strings_probe(s, n);
    if (slot->len == 0) {
        return NULL;
    }
    *len = slot->len;
    return s->bytes + slot->off;
}

size_t nwb__tel_strings_memory(const struct nwb__tel_strings *s)
{
    return (s->slots != NULL ? (s->mask + 1) * sizeof(*s->slots) : 0) + s->cap;
}

void nwb__tel_strings_cleanup(struct nwb__tel_strings *s)
{
    nwb_free(s->slots);
    nwb_free(s->bytes);
    nwb__tel_strings_init(s);
}

const char *nwb__tel_name_find(const struct nwb__tel_names *nm, nwb_name_t n, size_t *len)
{
    const char *str;

    if (nm == NULL) {
        return NULL;
    }
    str = nwb__tel_strings_find(nm->strings, n, len);
    if (str == NULL && nm->sym != NULL) {
        str = nwb_namesym_table_find(nm->sym, n, len);
    }
    return str;
}
