/* SPDX-License-Identifier: MIT */
/*
 * client_fmt_render.c - the worker's half of deferred formatting: walk a
 * site's format and snprintf each conversion with the argument captured by
 * the producer (client_fmt.h), so the text equals what printf would print
 * (%d, %s and %f take exact fast paths that print the same bytes).
 */
#include <stdio.h>
#include <string.h>

#include "nwb/log_batch.h"

#include "client_fmt.h"
#include "client_fmt_float.h"

_Static_assert(sizeof(long) <= 8 && sizeof(long long) <= 8 && sizeof(size_t) <= 8 &&
                   sizeof(intmax_t) <= 8 && sizeof(ptrdiff_t) <= 8 && sizeof(void *) <= 8 &&
                   sizeof(double) <= 8,
               "argument slots are 8 bytes");
_Static_assert(sizeof(long double) <= 16, "long double takes two slots");

/* Reader over the captured arguments. */
struct args {
    const uint8_t *slots;
    size_t slot_bytes;
    size_t slot_off;
    const uint8_t *strs;
    size_t strs_len;
    size_t str_off;
    int bad; /* the record does not match its format (never expected) */
};

static const uint8_t *slot_take(struct args *a, size_t n)
{
    const uint8_t *s;

    if (a->slot_off + n > a->slot_bytes) {
        a->bad = 1;
        return NULL;
    }
    s = a->slots + a->slot_off;
    a->slot_off += n;
    return s;
}

static int take_int(struct args *a)
{
    const uint8_t *s = slot_take(a, 8);
    int v = 0;

    if (s != NULL) {
        memcpy(&v, s, sizeof(v));
    }
    return v;
}

/* The next captured string; its slot says how long it is. */
static const char *take_str(struct args *a, uint32_t *sflags)
{
    const uint8_t *s = slot_take(a, 8);
    uint32_t len = 0;
    const char *str;

    *sflags = 0;
    if (s == NULL) {
        return "";
    }
    memcpy(&len, s, 4);
    memcpy(sflags, s + 4, 4);
    if (*sflags & NWB__STR_NULL) {
        if (a->str_off < a->strs_len) {
            a->str_off++; /* the producer writes a NUL for a NULL string too */
        }
        return "(null)";
    }
    if (a->str_off + (size_t)len + 1u > a->strs_len || a->strs[a->str_off + len] != '\0') {
        a->bad = 1;
        return "";
    }
    str = (const char *)(a->strs + a->str_off);
    a->str_off += (size_t)len + 1u;
    return str;
}

/* "%d" of @p v, exactly as snprintf would write it (truncated to @p room - 1 plus NUL). */
static int emit_plain_int(char *dst, size_t room, int v)
{
    char tmp[12];
    char *const end = tmp + sizeof(tmp);
    const unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
    char *d = nwb__fmtf_utoa(end, u);
    size_t len;

    if (v < 0) {
        *--d = '-';
    }
    len = (size_t)(end - d);
    if (room > 0) {
        const size_t n = len < room - 1u ? len : room - 1u;

        memcpy(dst, d, n);
        dst[n] = '\0';
    }
    return (int)len;
}

/* "%s" of @p str, exactly as snprintf would write it. */
static int emit_plain_str(char *dst, size_t room, const char *str)
{
    const size_t len = strlen(str);

    if (room > 0) {
        const size_t n = len < room - 1 ? len : room - 1;

        memcpy(dst, str, n);
        dst[n] = '\0';
    }
    return (int)len;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
/* snprintf one conversion, its text from '%' copied into @p spec and NUL-terminated first. */
#define EMIT(val)                                                                                  \
    (memcpy(spec, c->start, c->len), spec[c->len] = '\0',                                          \
     c->star_width && c->star_prec ? snprintf(dst, room, spec, w, pr, val)                         \
     : c->star_width               ? snprintf(dst, room, spec, w, val)                             \
     : c->star_prec                ? snprintf(dst, room, spec, pr, val)                            \
                                   : snprintf(dst, room, spec, val))

static int emit_conv(char *dst, size_t room, const struct nwb__conv *c, struct args *a,
                     uint32_t *sflags)
{
    char spec[NWB__FMT_SPEC_MAX + 1];
    const int w = c->star_width ? take_int(a) : 0;
    const int pr = c->star_prec ? take_int(a) : 0;
    const char conv = c->start[c->len - 1u];
    const uint8_t *s;

    /* The plainest conversions, the most common in game logs, skip snprintf's parsing. */
    const int plain = c->len == 2u && !c->star_width && !c->star_prec;

    *sflags = 0;
    switch (c->kind) {
    case NWB__ARG_INT:
        if (plain && (conv == 'd' || conv == 'i')) {
            return emit_plain_int(dst, room, take_int(a));
        }
        return EMIT(take_int(a));
    case NWB__ARG_STR:
    case NWB__ARG_STR_PSTAR:
    case NWB__ARG_STR_PLIT: {
        const char *str = take_str(a, sflags);

        if (plain && conv == 's') {
            return emit_plain_str(dst, room, str);
        }
        return EMIT(str);
    }
    case NWB__ARG_LDOUBLE: {
        long double v = 0;

        if ((s = slot_take(a, 16)) != NULL) {
            memcpy(&v, s, sizeof(v));
        }
        return EMIT(v);
    }
    default:
        break;
    }
    if ((s = slot_take(a, 8)) == NULL) {
        return 0;
    }
    switch (c->kind) {
    case NWB__ARG_LONG: {
        long v;

        memcpy(&v, s, sizeof(v));
        return EMIT(v);
    }
    case NWB__ARG_LLONG: {
        long long v;

        memcpy(&v, s, sizeof(v));
        return EMIT(v);
    }
    case NWB__ARG_SIZE: {
        size_t v;

        memcpy(&v, s, sizeof(v));
        return EMIT(v);
    }
    case NWB__ARG_INTMAX: {
        intmax_t v;

        memcpy(&v, s, sizeof(v));
        return EMIT(v);
    }
    case NWB__ARG_PTRDIFF: {
        ptrdiff_t v;

        memcpy(&v, s, sizeof(v));
        return EMIT(v);
    }
    case NWB__ARG_DOUBLE: {
        double v;

        memcpy(&v, s, sizeof(v));
        if (conv == 'f' || conv == 'F') {
            /* %f without glibc's multi-precision path when the exact fast path takes it */
            const int n = nwb__fmt_float_f(dst, room, c->start, c->len, w, pr, v);

            if (n >= 0) {
                return n;
            }
        }
        return EMIT(v);
    }
    case NWB__ARG_PTR: {
        void *v;

        memcpy(&v, s, sizeof(v));
        return EMIT(v);
    }
    default:
        a->bad = 1;
        return 0;
    }
}
#undef EMIT
#pragma GCC diagnostic pop

size_t nwb__fmt_render(const char *fmt, const uint8_t *slots, size_t slot_bytes,
                       const uint8_t *strs, size_t strs_len, char *dst, size_t cap, uint8_t *flags)
{
    /* Room kept at the end for "..." and the NUL. */
    const size_t lim = cap - 4u;
    struct args a = {slots, slot_bytes, 0, strs, strs_len, 0, 0};
    const char *p = fmt;
    struct nwb__conv c;
    size_t pos = 0;
    int cut = 0;
    int rc;

    for (;;) {
        size_t lit;
        uint32_t sflags;
        int n;

        rc = nwb__fmt_next(p, &c);
        lit = rc == 1 ? (size_t)(c.start - p) : strlen(p);
        if (lit > lim - pos) {
            lit = lim - pos;
            cut = 1;
        }
        memcpy(dst + pos, p, lit);
        pos += lit;
        if (rc != 1 || cut) {
            break; /* rc < 0 cannot happen for a READY site; stop at it regardless */
        }
        p = c.start + c.len;
        if (c.kind == 0) { /* "%%" */
            if (pos >= lim) {
                cut = 1;
                break;
            }
            dst[pos++] = '%';
            continue;
        }
        n = emit_conv(dst + pos, cap - pos, &c, &a, &sflags);
        if (n < 0) {
            n = 0;
        }
        if ((size_t)n > lim - pos) {
            pos = lim;
            cut = 1;
            break;
        }
        pos += (size_t)n;
        if (sflags & NWB__STR_TRUNCATED) {
            /* The string was longer than the copy bound: say so where it was cut. */
            *flags |= NWB_LOG_RECORD_TRUNCATED;
            if (lim - pos < 3u) {
                pos = lim;
                cut = 1;
                break;
            }
            memcpy(dst + pos, "...", 3);
            pos += 3;
        }
        if (a.bad) {
            break;
        }
    }
    if (cut || a.bad) {
        *flags |= NWB_LOG_RECORD_TRUNCATED;
        memcpy(dst + pos, "...", 3);
        pos += 3;
    }
    dst[pos] = '\0';
    return pos;
}
