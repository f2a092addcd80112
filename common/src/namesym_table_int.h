/* SPDX-License-Identifier: MIT */
/*
 * namesym_table_int.h - the name table's layout and its hot helpers, inside
 * common/ only: namesym_table.c owns the table, and log_line.c decodes
 * #tokens while it formats a line (nwb_log_line_format_names()) with the
 * same lookups and token check, inlined. The table is keyed by the text of a
 * token's digits (slot_probe()), so a known token costs no parse.
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

struct nwb_namesym_table {
    struct slot *slots; /* 64-byte aligned, inside slots_mem */
    void *slots_mem;
    size_t mask;    /* capacity - 1, capacity a power of two */
    unsigned shift; /* 64 - log2(capacity): slot_index() keeps the product's top bits */
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
 * Where the 16 bytes at @p digits start probing: a multiplicative hash of
 * their text (Knuth's 2^64 / golden ratio; the top bits of the product
 * depend on every input bit). The digits are the name hash's own bits, so
 * mixing both halves is plenty.
 */
static inline size_t slot_index(const char *digits, unsigned shift)
{
    uint64_t a, b;

    memcpy(&a, digits, 8);
    memcpy(&b, digits + 8, 8);
    return (size_t)(((a ^ (b << 4)) * 0x9e3779b97f4a7c15ull) >> shift);
}

/*
 * The slot whose token digits are the 16 bytes at @p digits, or the empty
 * slot where they would go (tok[0] == '\0'). Any 16 bytes may be asked for:
 * only valid digits can match a full slot.
 */
static inline struct slot *slot_probe(const nwb_namesym_table_t *t, const char *digits)
{
    size_t i = slot_index(digits, t->shift);
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
static inline enum token_kind token_at(const nwb_namesym_table_t *t, const unsigned char *u,
                                       size_t at, size_t len, const struct slot **s)
{
    const size_t left = len - at;
    const char *const digits = (const char *)u + at + 1;

    if (left < NWB_NAME_TOKEN_LEN || (at > 0 && u[at - 1] == '#') ||
        (left > NWB_NAME_TOKEN_LEN && hexval[u[at + NWB_NAME_TOKEN_LEN]] != 0)) {
        return TOKEN_NONE;
    }
    if (t != NULL) {
        *s = slot_probe(t, digits);
        if (NWB_LIKELY((*s)->tok[0] != '\0')) {
            return TOKEN_KNOWN; /* stored digits are valid: no check */
        }
    }
    return token_digits_valid(digits) ? TOKEN_UNKNOWN : TOKEN_NONE;
}

#endif /* NWB_NAMESYM_TABLE_INT_H */
