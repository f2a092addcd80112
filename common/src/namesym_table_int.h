/* SPDX-License-Identifier: MIT */
/*
 * namesym_table_int.h - the name table's layout and its hot helpers, inside
 * common/ only: namesym_table.c owns the table, and log_line.c decodes
 * #tokens while it formats a line (nwb_log_line_format_names()) with the
 * same lookups and token check, inlined.
 */
#ifndef NWB_NAMESYM_TABLE_INT_H
#define NWB_NAMESYM_TABLE_INT_H

#include <stddef.h>
#include <stdint.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "nwb/namesym.h"

/* Names shorter than this live in their slot: a lookup then reads one cache line. */
#define NWB__SLOT_INLINE 40u

/* One cache line (the array is 64-byte aligned). */
struct slot {
    nwb_name_t hash;
    const char *str; /* sanitised UTF-8, NUL-terminated: inl, or owned; NULL = empty slot */
    uint32_t len;
    uint32_t source; /* index into sources */
    char inl[NWB__SLOT_INLINE];
};

_Static_assert(sizeof(struct slot) == 64, "a slot is one cache line");

struct nwb_namesym_table {
    struct slot *slots; /* 64-byte aligned, inside slots_mem */
    void *slots_mem;
    size_t mask; /* capacity - 1, capacity a power of two */
    size_t count;
    size_t max_len;
    char **sources; /* owned copies of the source names, for collision reports */
    size_t nsources;
};

static inline size_t slot_index(nwb_name_t h, size_t mask)
{
    /* FNV output is well mixed in its high bits; fold them down. */
    return (size_t)(h ^ (h >> 29) ^ (h >> 47)) & mask;
}

static inline struct slot *slot_find(const nwb_namesym_table_t *t, nwb_name_t h)
{
    size_t i = slot_index(h, t->mask);

    for (;;) {
        struct slot *s = &t->slots[i];

        if (s->str == NULL || s->hash == h) {
            return s;
        }
        i = (i + 1) & t->mask;
    }
}

/* Lowercase hex digits map to their value + 1, upper-case A-F to 17, anything else to 0. */
static const uint8_t hexval[256] = {
    ['0'] = 0 + 1,  ['1'] = 1 + 1,  ['2'] = 2 + 1,  ['3'] = 3 + 1,  ['4'] = 4 + 1,  ['5'] = 5 + 1,
    ['6'] = 6 + 1,  ['7'] = 7 + 1,  ['8'] = 8 + 1,  ['9'] = 9 + 1,  ['a'] = 10 + 1, ['b'] = 11 + 1,
    ['c'] = 12 + 1, ['d'] = 13 + 1, ['e'] = 14 + 1, ['f'] = 15 + 1, ['A'] = 17,     ['B'] = 17,
    ['C'] = 17,     ['D'] = 17,     ['E'] = 17,     ['F'] = 17,
};

/* The 16 digits at @p d as a hash: 1, or 0 when one is not a lower-case hex digit. */
static inline int token_digits(const char *d, uint64_t *out)
{
#if defined(__SSE2__) && defined(__GNUC__)
    /* Signed compares check '0'..'9' and 'a'..'f' (bytes >= 0x80 are negative and fail), each
     * digit becomes its nibble, nibble pairs are merged into bytes and packed; the first digit's
     * byte is the top byte of the hash. */
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)d);
    const __m128i dig = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                      _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
    const __m128i low = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('a' - 1)),
                                      _mm_cmplt_epi8(v, _mm_set1_epi8('f' + 1)));
    __m128i nib, pairs;

    if (_mm_movemask_epi8(_mm_or_si128(dig, low)) != 0xffff) {
        return 0;
    }
    nib = _mm_add_epi8(_mm_and_si128(v, _mm_set1_epi8(0x0f)), _mm_and_si128(low, _mm_set1_epi8(9)));
    pairs = _mm_or_si128(_mm_slli_epi16(nib, 4), _mm_srli_epi16(nib, 8));
    pairs = _mm_packus_epi16(_mm_and_si128(pairs, _mm_set1_epi16(0x00ff)), pairs);
    *out = __builtin_bswap64((uint64_t)_mm_cvtsi128_si64(pairs));
    return 1;
#else
    uint64_t h = 0;

    for (int i = 0; i < 16; i++) {
        const uint8_t v = hexval[(unsigned char)d[i]];

        if (v == 0 || v == 17) {
            return 0;
        }
        h = (h << 4) | (uint64_t)(v - 1);
    }
    *out = h;
    return 1;
#endif
}

#endif /* NWB_NAMESYM_TABLE_INT_H */
