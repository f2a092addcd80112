/* SPDX-License-Identifier: MIT */
/*
 * namesym_table_int.h - the name table's layout and its hot helpers, inside
 * common/ only: namesym_table.c owns the table, and log_line.c decodes
 * #tokens while it formats a line (nwb_log_line_format_names()) with the
 * same lookups and token check, inlined. The table is keyed by the text of a
 * token's digits (slot_probe()), so a known token costs no parse, and a
 * lookup (slot_find()) picks its slot among 16 by a one-byte tag per slot,
 * without a probing loop whose exit the CPU would mispredict.
 */
#ifndef NWB_NAMESYM_TABLE_INT_H
#define NWB_NAMESYM_TABLE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "nwb/namesym.h"

#if defined(__GNUC__)
#define NWB__HOT_INLINE static inline __attribute__((always_inline))
#else
#define NWB__HOT_INLINE static inline
#endif

/* Names shorter than this live in their slot: a lookup then reads one cache line. */
#define NWB__SLOT_INLINE 40u

/*
 * One cache line (the array is 64-byte aligned). A slot is keyed by the text
 * of its name's token, the 16 hex digits, not by the parsed hash: a token in a
 * line is looked up by comparing its 16 bytes with one 16-byte load, with no
 * parse and no digit check on a hit (stored digits are valid by construction).
 */
struct slot {
    char tok[16];    /* the token's hex digits; tok[0] == '\0' in an empty slot */
    uint32_t len;    /* the name's bytes */
    uint32_t source; /* index into sources */
    union {
        char inl[NWB__SLOT_INLINE]; /* len < NWB__SLOT_INLINE: the name, NUL-terminated */
        char *heap;                 /* longer: an owned, NUL-terminated copy */
    } name;
};

_Static_assert(sizeof(struct slot) == 64, "a slot is one cache line");

/* The tags of the 16 slots from any slot are one load: the first 16 are repeated at the end. */
#define NWB__TAG_GROUP 16u

struct nwb_namesym_table {
    struct slot *slots; /* 64-byte aligned, inside slots_mem */
    void *slots_mem;
    uint8_t *tags;  /* capacity + NWB__TAG_GROUP: slot i's slot_tag(), 0 when it is empty */
    size_t mask;    /* capacity - 1, capacity a power of two */
    unsigned shift; /* 64 - log2(capacity): a slot_hash()'s top bits are its start slot */
    size_t count;
    size_t max_len;
    char **sources; /* owned copies of the source names, for collision reports */
    size_t nsources;
};

/* The name a full slot holds (sanitised UTF-8, NUL-terminated). */
static inline const char *slot_str(const struct slot *s)
{
    return s->len < NWB__SLOT_INLINE ? s->name.inl : s->name.heap;
}

/*
 * A multiplicative hash of the text of the 16 bytes at @p digits (Knuth's
 * 2^64 / golden ratio; the top bits of the product depend on every input
 * bit). The digits are the name hash's own bits, so mixing both halves is
 * plenty. Its top bits are the slot a token starts probing at, bits 24..30
 * its tag.
 */
static inline uint64_t slot_hash(const char *digits)
{
    uint64_t a, b;

    memcpy(&a, digits, 8);
    memcpy(&b, digits + 8, 8);
    return (a ^ (b << 4)) * 0x9e3779b97f4a7c15ull;
}

/* A full slot's tag: 7 hash bits that are not its index's, and the top bit (0 is empty). */
static inline uint8_t slot_tag(uint64_t h)
{
    return (uint8_t)(0x80u | ((h >> 24) & 0x7fu));
}

/*
 * The slot whose token digits are the 16 bytes at @p digits, or the empty
 * slot where they would go (tok[0] == '\0'). Any 16 bytes may be asked for:
 * only valid digits can match a full slot.
 */
static inline struct slot *slot_probe(const nwb_namesym_table_t *t, const char *digits)
{
    size_t i = (size_t)(slot_hash(digits) >> t->shift);
#if defined(__SSE2__)
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)digits);

    for (;;) {
        struct slot *s = &t->slots[i];
        const __m128i k = _mm_load_si128((const __m128i *)(void *)s->tok);

        if (_mm_movemask_epi8(_mm_cmpeq_epi8(k, v)) == 0xffff || s->tok[0] == '\0') {
            return s;
        }
        i = (i + 1) & t->mask;
    }
#else
    for (;;) {
        struct slot *s = &t->slots[i];

        if (s->tok[0] == '\0' || memcmp(s->tok, digits, 16) == 0) {
            return s;
        }
        i = (i + 1) & t->mask;
    }
#endif
}

/* slot_find() by slot_probe()'s loop, out of line: what the tag check does not settle. */
const struct slot *nwb__slot_find_slow(const nwb_namesym_table_t *t, const char *digits);

/*
 * The full slot whose token digits are the 16 bytes at @p digits, or NULL.
 * The 16 tags from the start slot are compared at once: the first slot with
 * the token's tag is nearly always the token's (7 bits: another token's tag
 * matches 1 time in 128), so a lookup is two loads and two predictable
 * branches. A run of 16 full slots without the tag, or another token's slot
 * with it first, takes slot_probe()'s loop.
 */
NWB__HOT_INLINE const struct slot *slot_find(const nwb_namesym_table_t *t, const char *digits)
{
#if defined(__SSE2__)
    const uint64_t h = slot_hash(digits);
    const size_t i = (size_t)(h >> t->shift);
    const __m128i g = _mm_loadu_si128((const __m128i *)(const void *)(t->tags + i));
    const unsigned match =
        (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(g, _mm_set1_epi8((char)slot_tag(h))));

    if (NWB_LIKELY(match != 0)) {
        /* The first slot with the tag: the token's unless another tag like it comes first. */
        const struct slot *s = &t->slots[(i + (unsigned)__builtin_ctz(match)) & t->mask];
        const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)digits);
        const __m128i k = _mm_load_si128((const __m128i *)(const void *)s->tok);

        if (NWB_LIKELY(_mm_movemask_epi8(_mm_cmpeq_epi8(k, v)) == 0xffff)) {
            return s;
        }
    } else if (_mm_movemask_epi8(_mm_cmpeq_epi8(g, _mm_setzero_si128())) != 0) {
        return NULL; /* no slot with its tag before an empty one */
    }
#endif
    return nwb__slot_find_slow(t, digits);
}

/* Lowercase hex digits map to their value + 1, upper-case A-F to 17, anything else to 0. */
static const uint8_t hexval[256] = {
    ['0'] = 0 + 1,  ['1'] = 1 + 1,  ['2'] = 2 + 1,  ['3'] = 3 + 1,  ['4'] = 4 + 1,  ['5'] = 5 + 1,
    ['6'] = 6 + 1,  ['7'] = 7 + 1,  ['8'] = 8 + 1,  ['9'] = 9 + 1,  ['a'] = 10 + 1, ['b'] = 11 + 1,
    ['c'] = 12 + 1, ['d'] = 13 + 1, ['e'] = 14 + 1, ['f'] = 15 + 1, ['A'] = 17,     ['B'] = 17,
    ['C'] = 17,     ['D'] = 17,     ['E'] = 17,     ['F'] = 17,
};

/* 1 when the 16 bytes at @p d are lower-case hex digits (the rest of a token), else 0. */
static inline int token_digits_valid(const char *d)
{
#if defined(__SSE2__)
    /* Signed compares check '0'..'9' and 'a'..'f'; bytes >= 0x80 are negative and fail. */
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)d);
    const __m128i dig = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                      _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
    const __m128i low = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('a' - 1)),
                                      _mm_cmplt_epi8(v, _mm_set1_epi8('f' + 1)));

    return _mm_movemask_epi8(_mm_or_si128(dig, low)) == 0xffff;
#else
    for (int i = 0; i < 16; i++) {
        const uint8_t v = hexval[(unsigned char)d[i]];

        if (v == 0 || v == 17) {
            return 0;
        }
    }
    return 1;
#endif
}

/* What a '#' starts (token_at()). */
enum token_kind { TOKEN_NONE, TOKEN_UNKNOWN, TOKEN_KNOWN };

/*
 * The token rule, for both decoders: what the '#' at u[at] of the @p len
 * bytes at @p u starts. A token is '#' + 16 lower-case hex digits, not after
 * a '#' and not followed by a hex digit of either case. The digits are looked
 * up in @p t (NULL: no table) as they are, and checked only when they are not
 * there. For TOKEN_KNOWN, *s is the name's slot.
 */
NWB__HOT_INLINE enum token_kind token_at(const nwb_namesym_table_t *t, const unsigned char *u,
                                         size_t at, size_t len, const struct slot **s)
{
    const size_t left = len - at;
    const char *const digits = (const char *)u + at + 1;

    if (left < NWB_NAME_TOKEN_LEN || (at > 0 && u[at - 1] == '#') ||
        (left > NWB_NAME_TOKEN_LEN && hexval[u[at + NWB_NAME_TOKEN_LEN]] != 0)) {
        return TOKEN_NONE;
    }
    if (t != NULL) {
        *s = slot_find(t, digits);
        if (NWB_LIKELY(*s != NULL)) {
            return TOKEN_KNOWN; /* stored digits are valid: no check */
        }
    }
    return token_digits_valid(digits) ? TOKEN_UNKNOWN : TOKEN_NONE;
}

#endif /* NWB_NAMESYM_TABLE_INT_H */
