/* SPDX-License-Identifier: MIT */
/*
 * log_decode.c - the log worker's #token decoder: the token rule of
 * nwb_namesym_decode() (docs/namesym.md), with memchr jumps between '#'s,
 * the 16 digits checked and parsed at once (SSE2; 8 at a time with SWAR
 * elsewhere), short pieces copied inline, nothing copied unless a
 * token is known, and the output bounded by NWB__DECODE_MSG_MAX (tokens whose
 * names would pass it stay as they are). tests/server/test_render_decode.c
 * checks it against nwb_namesym_decode() byte for byte.
 */
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "server_int.h"

/* Lower-case hex digits: 0x10 | value. Anything else 0 (upper case is no token digit). */
static const unsigned char tok_digit[256] = {
    ['0'] = 0x10, ['1'] = 0x11, ['2'] = 0x12, ['3'] = 0x13, ['4'] = 0x14, ['5'] = 0x15,
    ['6'] = 0x16, ['7'] = 0x17, ['8'] = 0x18, ['9'] = 0x19, ['a'] = 0x1a, ['b'] = 0x1b,
    ['c'] = 0x1c, ['d'] = 0x1d, ['e'] = 0x1e, ['f'] = 0x1f,
};

/* A digit after the 16 ends a token candidate: any hex digit, either case. */
static int any_hex(unsigned char c)
{
    return tok_digit[c] != 0 || (c >= 'A' && c <= 'F');
}

#if defined(__SSE2__) && defined(__GNUC__)
/*
 * The 16 digits at @p d as a hash: 1, or 0 when one is not a lower-case hex
 * digit. All 16 at once (SSE2): signed compares check the ranges '0'..'9'
 * and 'a'..'f' (bytes >= 0x80 are negative and fail both), each digit
 * becomes its nibble, adjacent nibbles are merged into bytes and packed, and
 * the first digit's byte is the hash's top byte.
 */
static int token_hash(const unsigned char *d, uint64_t *out)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)d);
    const __m128i dig = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                      _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
    const __m128i low = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('a' - 1)),
                                      _mm_cmplt_epi8(v, _mm_set1_epi8('f' + 1)));
    __m128i nib, pairs;
    uint64_t h;

    if (_mm_movemask_epi8(_mm_or_si128(dig, low)) != 0xffff) {
        return 0;
    }
    /* '0'..'9' -> 0..9, 'a'..'f' -> 1..6 + 9 */
    nib = _mm_add_epi8(_mm_and_si128(v, _mm_set1_epi8(0x0f)), _mm_and_si128(low, _mm_set1_epi8(9)));
    /* 16-bit lane i holds digit 2i (low byte) and 2i+1: (2i << 4) | (2i+1) in the low byte */
    pairs = _mm_or_si128(_mm_slli_epi16(nib, 4), _mm_srli_epi16(nib, 8));
    pairs = _mm_and_si128(pairs, _mm_set1_epi16(0x00ff));
    pairs = _mm_packus_epi16(pairs, pairs);
    h = (uint64_t)_mm_cvtsi128_si64(pairs);
    *out = __builtin_bswap64(h);
    return 1;
}
#elif defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/*
 * 8 digits loaded little-endian (the first in the lowest byte): 1 and their
 * value, or 0 when one is not a lower-case hex digit. SWAR: for bytes below
 * 0x80, adding 0x80 - lo sets a byte's top bit exactly when it is >= lo,
 * without a carry into the next byte, so one add per bound tests all eight.
 */
static int hex8(uint64_t w, uint32_t *out)
{
    const uint64_t top = 0x8080808080808080ull;
    const uint64_t ge_0 = w + 0x5050505050505050ull; /* >= '0' */
    const uint64_t gt_9 = w + 0x4646464646464646ull; /* >= '9' + 1 */
    const uint64_t ge_a = w + 0x1f1f1f1f1f1f1f1full; /* >= 'a' */
    const uint64_t gt_f = w + 0x1919191919191919ull; /* >= 'f' + 1 */
    uint64_t v;

    if ((w & top) != 0 || (((ge_0 & ~gt_9) | (ge_a & ~gt_f)) & top) != top) {
        return 0;
    }
    /* '0'..'9' -> 0..9, 'a'..'f' -> 1..6 + 9; then the nibbles packed, first digit on top. */
    v = (w & 0x0f0f0f0f0f0f0f0full) + 9 * ((w >> 6) & 0x0101010101010101ull);
    v = __builtin_bswap64(v);
    v = (v | (v >> 4)) & 0x00ff00ff00ff00ffull;
    v = (v | (v >> 8)) & 0x0000ffff0000ffffull;
    v = (v | (v >> 16)) & 0x00000000ffffffffull;
    *out = (uint32_t)v;
    return 1;
}

/* The 16 digits at @p d as a hash: 1, or 0 when one is not a lower-case hex digit. */
static int token_hash(const unsigned char *d, uint64_t *out)
{
    uint64_t a, b;
    uint32_t x, y;

    memcpy(&a, d, 8);
    memcpy(&b, d + 8, 8);
    if (!hex8(a, &x) || !hex8(b, &y)) {
        return 0;
    }
    *out = (uint64_t)x << 32 | y;
    return 1;
}
#else
/* The 16 digits at @p d as a hash: 1, or 0 when one is not a lower-case hex digit. */
static int token_hash(const unsigned char *d, uint64_t *out)
{
    unsigned all = 0x10;
    uint64_t h = 0;

    for (int i = 0; i < 16; i++) {
        const unsigned v = tok_digit[d[i]];

        all &= v;
        h = h << 4 | (v & 0xfu);
    }
    *out = h;
    return all != 0;
}
#endif

/*
 * memcpy() for the short pieces a decode copies (the text between tokens, a
 * name): two overlapping loads and stores of 16, 8, 4 or 1 bytes cover any
 * length up to 32 inline, never touching a byte outside either range.
 */
static inline void copy_short(char *dst, const char *src, size_t n)
{
    if (n > 32) {
        memcpy(dst, src, n);
    } else if (n >= 16) {
        char a[16], b[16];

        memcpy(a, src, 16);
        memcpy(b, src + n - 16, 16);
        memcpy(dst, a, 16);
        memcpy(dst + n - 16, b, 16);
    } else if (n >= 8) {
        uint64_t a, b;

        memcpy(&a, src, 8);
        memcpy(&b, src + n - 8, 8);
        memcpy(dst, &a, 8);
        memcpy(dst + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t a, b;

        memcpy(&a, src, 4);
        memcpy(&b, src + n - 4, 4);
        memcpy(dst, &a, 4);
        memcpy(dst + n - 4, &b, 4);
    } else {
        for (size_t i = 0; i < n; i++) {
            dst[i] = src[i];
        }
    }
}

size_t nwb__render_decode(const nwb_namesym_table_t *names, const char *msg, size_t len,
                          size_t from, char *dst, int *changed, uint64_t *decoded,
                          uint64_t *unknown)
{
    const char *const end = msg + len;
    const char *p = msg + from;
    const char *copied = msg; /* msg up to here is in dst already */
    size_t out = 0;

    *changed = 0;
    while (p < end) {
        /* The caller found the first '#' already: no need to look for it again. */
        const char *hash = *p == '#' ? p : memchr(p, '#', (size_t)(end - p));
        const char *s;
        uint64_t h;
        size_t slen = 0;

        if (hash == NULL) {
            break;
        }
        p = hash + 1;
        if ((size_t)(end - hash) < NWB_NAME_TOKEN_LEN || (hash > msg && hash[-1] == '#') ||
            !token_hash((const unsigned char *)hash + 1, &h) ||
            (hash + NWB_NAME_TOKEN_LEN < end && any_hex((unsigned char)hash[NWB_NAME_TOKEN_LEN]))) {
            continue;
        }
        p = hash + NWB_NAME_TOKEN_LEN;
        s = nwb_namesym_table_find(names, h, &slen);
        if (s == NULL) {
            ++*unknown;
            continue;
        }
        /* The name goes in only while the rest of the message still fits raw after it. */
        if (out + (size_t)(hash - copied) + slen + (size_t)(end - p) > NWB__DECODE_MSG_MAX) {
            break;
        }
        copy_short(dst + out, copied, (size_t)(hash - copied));
        out += (size_t)(hash - copied);
        copy_short(dst + out, s, slen);
        out += slen;
        copied = p;
        ++*decoded;
        *changed = 1;
    }
    if (!*changed) {
        return len;
    }
    copy_short(dst + out, copied, (size_t)(end - copied));
    return out + (size_t)(end - copied);
}
