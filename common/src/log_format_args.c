/* SPDX-License-Identifier: MIT */
/*
 * log_format_args.c - printf with arguments captured by type (nwb_log_arg_t,
 * the C macros' capture): the slow path for loggers without a write_args op,
 * for the no-logger stderr line and for formats a logger cannot defer. Each
 * conversion is handed to snprintf with the argument the format names,
 * converted from the class it was captured as, so a format/type mismatch
 * prints a converted value and never reads a non-pointer as a string.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "nwb/log.h"

/* Longest conversion spec copied (flags, width, precision, length); a longer one is printed as
 * literal text. */
#define SPEC_MAX 48u

struct captured {
    uint64_t types;
    const nwb_log_arg_t *args;
    unsigned nargs;
    unsigned next;
};

static unsigned next_class(const struct captured *a, nwb_log_arg_t *v)
{
    if (a->next >= a->nargs || a->next >= NWB_LOG_MAX_ARGS) {
        v->u = 0; /* a missing argument is 0 / NULL */
        return NWB_LOG_ARG_UNSIGNED;
    }
    *v = a->args[a->next];
    return NWB_LOG_ARG_CLASS(a->types, a->next);
}

static int64_t take_int(struct captured *a)
{
    nwb_log_arg_t v;
    const unsigned cls = next_class(a, &v);

    a->next++;
    if (cls == NWB_LOG_ARG_DOUBLE) {
        if (!(v.d == v.d)) {
            return 0; /* NaN */
        }
        if (v.d >= 9.2233720368547758e18) {
            return INT64_MAX;
        }
        if (v.d <= -9.2233720368547758e18) {
            return INT64_MIN;
        }
        return (int64_t)v.d;
    }
    return v.i; /* integers and pointers: the 64 bits as captured */
}

static long double take_double(struct captured *a)
{
    nwb_log_arg_t v;
    const unsigned cls = next_class(a, &v);

    a->next++;
    switch (cls) {
    case NWB_LOG_ARG_DOUBLE:
        return v.d;
    case NWB_LOG_ARG_SIGNED:
        return (long double)v.i;
    default:
        return (long double)v.u;
    }
}

static const void *take_pointer(struct captured *a, int want_string)
{
    nwb_log_arg_t v;
    const unsigned cls = next_class(a, &v);

    a->next++;
    if (cls == NWB_LOG_ARG_POINTER) {
        return v.p;
    }
    if (want_string || cls == NWB_LOG_ARG_DOUBLE) {
        return NULL; /* never read an integer as a string */
    }
    return (const void *)(uintptr_t)v.u;
}

/* Append the decimal @p v to @p spec at *@p n (bounded by SPEC_MAX). */
static int spec_number(char *spec, size_t *n, int64_t v)
{
    const int w = snprintf(spec + *n, SPEC_MAX - *n, "%lld", (long long)v);

    if (w < 0 || (size_t)w >= SPEC_MAX - *n) {
        return -1;
    }
    *n += (size_t)w;
    return 0;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
/* One conversion with its value; returns what snprintf returns. */
static int convert(char *dst, size_t room, const char *spec, char conv, const char *len,
                   struct captured *a)
{
    const int h = len[0] == 'h' && len[1] != 'h';
    const int hh = len[0] == 'h' && len[1] == 'h';
    const int l = len[0] == 'l' && len[1] != 'l';
    const int ll = (len[0] == 'l' && len[1] == 'l') || len[0] == 'q';

    switch (conv) {
    case 'd':
    case 'i': {
        const int64_t v = take_int(a);

        if (ll || l || len[0] == 'L' || len[0] == 'j' || len[0] == 'z' || len[0] == 't') {
            return snprintf(dst, room, spec, (long long)v);
        }
        return snprintf(dst, room, spec, hh ? (int)(signed char)v : h ? (int)(short)v : (int)v);
    }
    case 'o':
    case 'u':
    case 'x':
    case 'X': {
        const uint64_t v = (uint64_t)take_int(a);

        if (ll || l || len[0] == 'L' || len[0] == 'j' || len[0] == 'z' || len[0] == 't') {
            return snprintf(dst, room, spec, (unsigned long long)v);
        }
        return snprintf(dst, room, spec,
                        hh  ? (unsigned)(unsigned char)v
                        : h ? (unsigned)(unsigned short)v
                            : (unsigned)v);
    }
    case 'c':
        if (l) {
            return snprintf(dst, room, spec, (wint_t)take_int(a));
        }
        return snprintf(dst, room, spec, (int)take_int(a));
    case 's': {
        const void *s = take_pointer(a, 1);

        if (l) {
            return snprintf(dst, room, spec, s != NULL ? (const wchar_t *)s : L"(null)");
        }
        return snprintf(dst, room, spec, s != NULL ? (const char *)s : "(null)");
    }
    case 'p':
        return snprintf(dst, room, spec, take_pointer(a, 0));
    case 'm':
        return snprintf(dst, room, spec); /* glibc: strerror(errno), no argument */
    default:                              /* f F e E g G a A */
        if (len[0] == 'L') {
            return snprintf(dst, room, spec, take_double(a));
        }
        return snprintf(dst, room, spec, (double)take_double(a));
    }
}
#pragma GCC diagnostic pop

/* A literal width or precision at p + *i (leading zeros allowed), clamped to NUMBER_MAX: no
 * message is longer than NWB_LOG_RECORD_MSG_MAX, so a larger one only costs time. */
#define NUMBER_MAX 100000
static int64_t digits(const char *p, size_t *i)
{
    int64_t v = 0;

    for (; p[*i] >= '0' && p[*i] <= '9'; (*i)++) {
        v = v * 10 + (p[*i] - '0');
        if (v > NUMBER_MAX) {
            v = NUMBER_MAX;
        }
    }
    return v;
}

/* "N$" at @p p (POSIX positional arguments): moves the next argument to N - 1 and returns the
 * bytes consumed, 0 when @p p is not a position. */
static size_t position(const char *p, struct captured *a)
{
    size_t i = 0;
    unsigned v = 0;

    while (p[i] >= '0' && p[i] <= '9' && v < 1000u) {
        v = v * 10u + (unsigned)(p[i] - '0');
        i++;
    }
    if (i == 0 || p[i] != '$' || v == 0) {
        return 0;
    }
    a->next = v - 1u;
    return i + 1u;
}

/* Copy the conversion at @p p ('%') into @p spec with '*' replaced by its argument; sets
 * @p conv, @p len (the length modifier) and returns the bytes consumed, 0 for an unknown spec. */
static size_t parse_spec(const char *p, char *spec, char *conv, char len[3], struct captured *a)
{
    size_t i = 1;
    size_t n = 1;

    spec[0] = '%';
    i += position(p + i, a);
    while (p[i] != '\0' && strchr("-+ #0'I", p[i]) != NULL) {
        if (memchr(spec + 1, p[i], n - 1u) == NULL) { /* a repeated flag means nothing more */
            spec[n++] = p[i];
        }
        i++;
    }
    if (p[i] == '*') {
        const unsigned value_next = a->next;
        const size_t pos = position(p + i + 1, a);

        i += pos;
        if (spec_number(spec, &n, (int64_t)(int)take_int(a)) != 0) {
            return 0;
        }
        if (pos != 0) {
            a->next = value_next; /* "*N$" names the width only */
        }
        i++;
    }
    if (p[i] >= '1' && p[i] <= '9' && spec_number(spec, &n, digits(p, &i)) != 0) {
        return 0;
    }
    if (p[i] == '.') {
        i++;
        if (p[i] == '*') {
            const unsigned value_next = a->next;
            const size_t pos = position(p + i + 1, a);
            const int prec = (int)take_int(a);

            if (pos != 0) {
                a->next = value_next;
            }
            i += 1u + pos;
            if (prec >= 0) { /* negative: as if no precision was given */
                spec[n++] = '.';
                if (spec_number(spec, &n, prec) != 0) {
                    return 0;
                }
            }
        } else {
            spec[n++] = '.';
            if (spec_number(spec, &n, digits(p, &i)) != 0) {
                return 0;
            }
        }
    }
    len[0] = len[1] = len[2] = '\0';
    for (size_t k = 0; k < 2 && p[i] != '\0' && strchr("hlLjztq", p[i]) != NULL; k++) {
        len[k] = p[i];
        spec[n++] = p[i++];
    }
    if (p[i] == '\0' || strchr("diouxXcspmfFeEgGaAn%", p[i]) == NULL || n >= SPEC_MAX - 2u) {
        return 0;
    }
    *conv = p[i];
    spec[n++] = p[i++];
    spec[n] = '\0';
    return i;
}

int nwb_log_format_args(char *dst, size_t cap, const char *fmt, uint64_t types,
                        const nwb_log_arg_t *args, unsigned nargs)
{
    struct captured a = {types, args, nargs, 0};
    size_t out = 0;
    size_t want = 0; /* the length without a bound */
    int cut = 0;

    if (cap == 0 || fmt == NULL) {
        return -1;
    }
    for (const char *p = fmt; *p != '\0';) {
        const char *pc = strchr(p, '%');
        const size_t lit = pc != NULL ? (size_t)(pc - p) : strlen(p);
        char spec[SPEC_MAX];
        char len[3];
        char conv = 0;
        size_t used;
        int w;

        if (lit > 0) {
            const size_t take = lit < cap - 1u - out ? lit : cap - 1u - out;

            memcpy(dst + out, p, take);
            out += take;
            want += lit;
            cut |= take < lit;
            p += lit;
            continue;
        }
        used = parse_spec(p, spec, &conv, len, &a);
        if (used == 0) { /* not a conversion printf knows: print the '%' as text */
            if (out + 1u < cap) {
                dst[out++] = '%';
            } else {
                cut = 1;
            }
            want++;
            p++;
            continue;
        }
        if (conv == 'n') {
            return -1;
        }
        p += used;
        if (conv == '%') {
            w = snprintf(dst + out, cap - out, "%%");
        } else {
            w = convert(dst + out, cap - out, spec, conv, len, &a);
        }
        if (w < 0) {
            continue;
        }
        want += (size_t)w;
        if ((size_t)w >= cap - out) {
            out = cap - 1u;
            cut = 1;
        } else {
            out += (size_t)w;
        }
    }
    dst[out] = '\0';
    if (cut && out >= 3u) {
        memcpy(dst + out - 3u, "...", 3);
    }
    return want > INT_MAX ? INT_MAX : (int)want;
}
