/* SPDX-License-Identifier: MIT */
/*
 * client_fmt_float.h - the worker's exact fast path for "%f" / "%.Nf" (flags
 * - + space 0 #, a width, 'l'): byte-identical to glibc's snprintf in the range
 * it accepts, -1 for everything else (which then goes to snprintf); and the
 * two-digits-at-a-time decimal writer it shares with the renderer's "%d".
 */
#ifndef NWB_CLIENT_FMT_FLOAT_H
#define NWB_CLIENT_FMT_FLOAT_H

#include <langinfo.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Bounds of the fast path (docs/client.md). Outside them, or when the value
 * is NaN or infinite, the rounding mode is not round-to-nearest, the locale's
 * decimal point is not ".", or the spec has the ' flag, the caller uses snprintf.
 * - precision 0..NWB__FMTF_PREC_MAX (the default 6 when absent);
 * - width 0..NWB__FMTF_WIDTH_MAX;
 * - |x| < 2^53 and round(|x| * 10^precision) < 2^64.
 */
#define NWB__FMTF_PREC_MAX  17
#define NWB__FMTF_WIDTH_MAX 100

/* Decimal digits of @p v into the end of a buffer ending at @p end; returns the first digit. */
static inline char *nwb__fmtf_utoa(char *end, uint64_t v)
{
    static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
                                   "25262728293031323334353637383940414243444546474849"
                                   "50515253545556575859606162636465666768697071727374"
                                   "75767778798081828384858687888990919293949596979899";
    char *p = end;

    while (v >= 100u) {
        const unsigned d = (unsigned)(v % 100u) * 2u;

        v /= 100u;
        p -= 2;
        p[0] = pairs[d];
        p[1] = pairs[d + 1u];
    }
    if (v >= 10u) {
        p -= 2;
        p[0] = pairs[v * 2u];
        p[1] = pairs[v * 2u + 1u];
    } else {
        *--p = (char)('0' + v);
    }
    return p;
}

#if defined(__SIZEOF_INT128__) && (defined(__x86_64__) || defined(__i386__))
#define NWB__FMTF_ENABLED 1

__extension__ typedef unsigned __int128 nwb__fmtf_u128;

/* 10^0 .. 10^NWB__FMTF_PREC_MAX */
static const uint64_t nwb__fmtf_pow10[NWB__FMTF_PREC_MAX + 1] = {UINT64_C(1),
                                                                 UINT64_C(10),
                                                                 UINT64_C(100),
                                                                 UINT64_C(1000),
                                                                 UINT64_C(10000),
                                                                 UINT64_C(100000),
                                                                 UINT64_C(1000000),
                                                                 UINT64_C(10000000),
                                                                 UINT64_C(100000000),
                                                                 UINT64_C(1000000000),
                                                                 UINT64_C(10000000000),
                                                                 UINT64_C(100000000000),
                                                                 UINT64_C(1000000000000),
                                                                 UINT64_C(10000000000000),
                                                                 UINT64_C(100000000000000),
                                                                 UINT64_C(1000000000000000),
                                                                 UINT64_C(10000000000000000),
                                                                 UINT64_C(100000000000000000)};

/*
 * 1 when both the x87 control word (which glibc's printf reads) and SSE's
 * MXCSR round to nearest, so the exact rounding below is the one printf does.
 */
static inline int nwb__fmtf_round_nearest(void)
{
    uint16_t cw;
    uint32_t csr;

    __asm__ volatile("fnstcw %0" : "=m"(cw));
    __asm__ volatile("stmxcsr %0" : "=m"(csr));
    return (cw & 0x0c00u) == 0 && (csr & 0x6000u) == 0;
}

/* 1 when the calling thread's locale writes "." as the decimal point. */
static inline int nwb__fmtf_dot_locale(void)
{
    const char *dp = nl_langinfo(RADIXCHAR);

    return dp != NULL && dp[0] == '.' && dp[1] == '\0';
}

/*
 * round(|v| * 10^prec) to nearest, ties to even, on the exact binary value of
 * @p v (what glibc's printf does in round-to-nearest). Returns 0 with *@p out
 * set, or -1 when the value is outside the bounds above (or not finite).
 */
static inline int nwb__fmtf_scaled(uint64_t bits, unsigned prec, uint64_t *out)
{
    const unsigned bexp = (unsigned)(bits >> 52) & 0x7ffu;
    uint64_t m = bits & ((UINT64_C(1) << 52) - 1u);
    int e;
    nwb__fmtf_u128 n;

    if (bexp == 0x7ffu) {
        return -1; /* NaN, inf */
    }
    if (bexp == 0) {
        e = -1074; /* zero and subnormals: m * 2^-1074 */
    } else {
        m |= UINT64_C(1) << 52;
        e = (int)bexp - 1075;
    }
    /* |v| = m * 2^e exactly, m < 2^53. */
    if (e >= 0) {
        if (e > 0) {
            return -1; /* |v| >= 2^53 */
        }
        n = (nwb__fmtf_u128)m * nwb__fmtf_pow10[prec]; /* an integer: nothing to round */
    } else {
        const unsigned s = (unsigned)-e;
        const nwb__fmtf_u128 p =
            (nwb__fmtf_u128)m * nwb__fmtf_pow10[prec]; /* < 2^53 * 10^17 < 2^110 */

        if (s >= 112) {
            /* p * 2^-s < 2^110 * 2^-112 = 1/4: rounds to 0, never a tie */
            n = 0;
        } else {
            const nwb__fmtf_u128 one = 1;
            const nwb__fmtf_u128 half = one << (s - 1u);
            const nwb__fmtf_u128 rem = p & ((one << s) - 1u);

            n = p >> s;
            if (rem > half || (rem == half && (n & 1u) != 0)) {
                n++;
            }
        }
    }
    if ((n >> 64) != 0) {
        return -1;
    }
    *out = (uint64_t)n;
    return 0;
}

/*
 * What snprintf(dst, room, spec, ...) would do for a spec of the 'f' or 'F'
 * conversion (@p spec_len bytes "%...f", no NUL needed; a '*' width or
 * precision takes @p star_w / @p star_p) and the value @p v: writes the same
 * bytes (cut to @p room - 1 plus a NUL) and returns the same length. Returns
 * -1 without writing when the spec or value is outside the fast path.
 */
static inline int nwb__fmt_float_f(char *dst, size_t room, const char *spec, size_t spec_len,
                                   int star_w, int star_p, double v)
{
    const char *const end = spec + spec_len;
    char buf[NWB__FMTF_WIDTH_MAX + 48];
    char digits[48];
    char *const dend = digits + sizeof(digits);
    const char *q = spec + 1;
    int minus = 0, plus = 0, space = 0, zero = 0, alt = 0;
    long width = 0;
    long prec = 6;
    uint64_t bits;
    uint64_t n;
    uint64_t ip;
    uint64_t fp = 0;
    char *d;
    char sign = 0;
    size_t body;
    size_t len;
    size_t pad;
    size_t pos = 0;

    if (spec_len < 2u || spec[0] != '%') {
        return -1;
    }
    for (;; q++) {
        if (q == end) {
            return -1;
        }
        if (*q == '-') {
            minus = 1;
        } else if (*q == '+') {
            plus = 1;
        } else if (*q == ' ') {
            space = 1;
        } else if (*q == '0') {
            zero = 1;
        } else if (*q == '#') {
            alt = 1;
        } else {
            break; /* the ' flag (grouping) is not handled */
        }
    }
    if (*q == '*') { /* q < end: the loop above stopped on a byte */
        q++;
        if (star_w < 0) {
            if (star_w < -NWB__FMTF_WIDTH_MAX) {
                return -1;
            }
            minus = 1; /* a negative '*' width is the '-' flag */
            width = -(long)star_w;
        } else {
            width = star_w;
        }
    } else {
        while (q < end && *q >= '0' && *q <= '9') {
            width = width * 10 + (*q++ - '0');
            if (width > NWB__FMTF_WIDTH_MAX) {
                return -1;
            }
        }
    }
    if (width > NWB__FMTF_WIDTH_MAX) {
        return -1;
    }
    if (q < end && *q == '.') {
        q++;
        if (q < end && *q == '*') {
            q++;
            prec = star_p < 0 ? 6 : star_p; /* a negative '*' precision is none */
        } else {
            prec = 0;
            while (q < end && *q >= '0' && *q <= '9') {
                prec = prec * 10 + (*q++ - '0');
                if (prec > NWB__FMTF_PREC_MAX) {
                    return -1;
                }
            }
        }
    }
    if (prec > NWB__FMTF_PREC_MAX) {
        return -1;
    }
    if (q < end && *q == 'l') {
        q++;
    }
    if (end - q != 1 || (*q != 'f' && *q != 'F')) {
        return -1;
    }
    memcpy(&bits, &v, sizeof(bits));
    if (nwb__fmtf_scaled(bits, (unsigned)prec, &n) != 0 || !nwb__fmtf_round_nearest() ||
        !nwb__fmtf_dot_locale()) {
        return -1;
    }
    if (bits >> 63) {
        sign = '-'; /* also -0.0 and negatives that round to zero: glibc prints "-0.00" */
    } else if (plus) {
        sign = '+';
    } else if (space) {
        sign = ' ';
    }

    /* digits: the integer part, then ".", then prec fraction digits */
    d = dend;
    if (prec > 0) {
        char *f;

        ip = n / nwb__fmtf_pow10[prec];
        fp = n % nwb__fmtf_pow10[prec];
        f = nwb__fmtf_utoa(dend, fp);
        while (dend - f < prec) {
            *--f = '0';
        }
        d = f;
        *--d = '.';
    } else {
        ip = n;
        if (alt) {
            *--d = '.';
        }
    }
    d = nwb__fmtf_utoa(d, ip);
    body = (size_t)(dend - d) + (sign != 0);
    pad = (size_t)width > body ? (size_t)width - body : 0u;
    len = body + pad;

    if (pad > 0 && !minus && !zero) {
        memset(buf, ' ', pad);
        pos = pad;
    }
    if (sign != 0) {
        buf[pos++] = sign;
    }
    if (pad > 0 && !minus && zero) {
        memset(buf + pos, '0', pad);
        pos += pad;
    }
    memcpy(buf + pos, d, (size_t)(dend - d));
    pos += (size_t)(dend - d);
    if (pad > 0 && minus) {
        memset(buf + pos, ' ', pad);
        pos += pad;
    }
    if (room > 0) {
        const size_t cp = len < room - 1u ? len : room - 1u;

        memcpy(dst, buf, cp);
        dst[cp] = '\0';
    }
    return (int)len;
}

#else /* no 128-bit integers or not x86: always snprintf */
#define NWB__FMTF_ENABLED 0

static inline int nwb__fmt_float_f(char *dst, size_t room, const char *spec, size_t spec_len,
                                   int star_w, int star_p, double v)
{
    (void)dst;
    (void)room;
    (void)spec;
    (void)spec_len;
    (void)star_w;
    (void)star_p;
    (void)v;
    return -1;
}
#endif

#endif /* NWB_CLIENT_FMT_FLOAT_H */
