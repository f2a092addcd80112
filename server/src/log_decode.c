/* SPDX-License-Identifier: MIT */
/*
 * log_decode.c - the log worker's #token decoder: the token rule of
 * nwb_namesym_decode() (docs/namesym.md), with memchr jumps between '#'s,
 * the 16 digits read 8 at a time (SWAR), nothing copied unless a
 * token is known, and the output bounded by NWB__DECODE_MSG_MAX (tokens whose
 * names would pass it stay as they are). tests/server/test_render_decode.c
 * checks it against nwb_namesym_decode() byte for byte.
 */
#include <string.h>

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

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
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
        memcpy(dst + out, copied, (size_t)(hash - copied));
        out += (size_t)(hash - copied);
        memcpy(dst + out, s, slen);
        out += slen;
        copied = p;
        ++*decoded;
        *changed = 1;
    }
    if (!*changed) {
        return len;
    }
    memcpy(dst + out, copied, (size_t)(end - copied));
    return out + (size_t)(end - copied);
}
