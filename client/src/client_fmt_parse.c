/* SPDX-License-Identifier: MIT */
/*
 * client_fmt_parse.c - the grammar of the deferrable printf subset
 * (client_fmt.h): one conversion at a time, and a whole site's format into
 * argument kinds. Anything outside the subset makes the site COMPLEX.
 */
#include <string.h>

#include "client_fmt.h"

/* Length modifiers. */
enum { LEN_NONE, LEN_HH, LEN_H, LEN_L, LEN_LL, LEN_BIGL, LEN_J, LEN_Z, LEN_T };

static int is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* Skip digits; 1 when they are followed by '$' (a positional argument). */
static const char *skip_digits(const char *q, int *value)
{
    long v = 0;

    while (is_digit(*q)) {
        if (v < 100000000L) {
            v = v * 10 + (*q - '0');
        }
        q++;
    }
    if (value != NULL) {
        *value = (int)v;
    }
    return q;
}

static int int_kind(int len)
{
    switch (len) {
    case LEN_NONE:
    case LEN_HH:
    case LEN_H:
        return NWB__ARG_INT;
    case LEN_L:
        return NWB__ARG_LONG;
    case LEN_LL:
        return NWB__ARG_LLONG;
    case LEN_J:
        return NWB__ARG_INTMAX;
    case LEN_Z:
        return NWB__ARG_SIZE;
    case LEN_T:
        return NWB__ARG_PTRDIFF;
    default:
        return -1; /* %Ld and friends: glibc-specific */
    }
}

/* The value kind for conversion character @p ch, or -1 (unsupported), -2 (%n). */
static int value_kind(char ch, int len, const struct nwb__conv *c)
{
    switch (ch) {
    case 'd':
    case 'i':
    case 'o':
    case 'u':
    case 'x':
    case 'X':
        return int_kind(len);
    case 'c':
        return len == LEN_NONE ? NWB__ARG_INT : -1;
    case 's':
        if (len != LEN_NONE) {
            return -1; /* %ls: wide strings */
        }
        if (c->star_prec) {
            return NWB__ARG_STR_PSTAR;
        }
        return c->prec >= 0 ? NWB__ARG_STR_PLIT : NWB__ARG_STR;
    case 'p':
        return len == LEN_NONE ? NWB__ARG_PTR : -1;
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G':
    case 'a':
    case 'A':
        if (len == LEN_NONE || len == LEN_L) {
            return NWB__ARG_DOUBLE;
        }
        return len == LEN_BIGL ? NWB__ARG_LDOUBLE : -1;
    case 'n':
        return -2;
    default:
        return -1; /* %m, %C, %S, end of string, anything unknown */
    }
}

/* Parse the conversion at @p pct (a '%'). Same returns as nwb__fmt_next. */
static int conv_parse(const char *pct, struct nwb__conv *c)
{
    const char *q = pct + 1;
    int len = LEN_NONE;
    int prec;
    int kind;

    memset(c, 0, sizeof(*c));
    c->start = pct;
    c->prec = -1;
    if (*q == '%') {
        c->len = 2;
        return 1;
    }
    while (*q == '-' || *q == '+' || *q == ' ' || *q == '#' || *q == '0' || *q == '\'') {
        q++;
    }
    if (*q == '*') {
        c->star_width = 1;
        q++;
        if (is_digit(*q)) {
            return -1; /* "*3$": a positional width */
        }
    } else if (is_digit(*q)) {
        q = skip_digits(q, NULL);
        if (*q == '$') {
            return -1; /* "%1$d": positional arguments are not deferred */
        }
    }
    if (*q == '.') {
        q++;
        if (*q == '*') {
            c->star_prec = 1;
            q++;
            if (is_digit(*q)) {
                return -1;
            }
        } else {
            q = skip_digits(q, &prec);
            c->prec = prec;
        }
    }
    switch (*q) {
    case 'h':
        len = q[1] == 'h' ? LEN_HH : LEN_H;
        q += len == LEN_HH ? 2 : 1;
        break;
    case 'l':
        len = q[1] == 'l' ? LEN_LL : LEN_L;
        q += len == LEN_LL ? 2 : 1;
        break;
    case 'L':
        len = LEN_BIGL;
        q++;
        break;
    case 'j':
        len = LEN_J;
        q++;
        break;
    case 'z':
        len = LEN_Z;
        q++;
        break;
    case 't':
        len = LEN_T;
        q++;
        break;
    default:
        break;
    }
    kind = value_kind(*q, len, c);
    if (kind < 0) {
        return kind;
    }
    c->kind = (uint8_t)kind;
    c->len = (uint32_t)(q - pct + 1);
    if (c->len > NWB__FMT_SPEC_MAX) {
        return -1;
    }
    return 1;
}

int nwb__fmt_next(const char *p, struct nwb__conv *c)
{
    const char *pct = strchr(p, '%');
    uint8_t kind;

    if (pct == NULL) {
        return 0;
    }
    /* A bare "%d", "%s", "%f"...: what conv_parse gives, without walking flags and lengths
     * (the worker walks every record's format with this). */
    switch (pct[1]) {
    case 'd':
    case 'i':
    case 'o':
    case 'u':
    case 'x':
    case 'X':
    case 'c':
        kind = NWB__ARG_INT;
        break;
    case 's':
        kind = NWB__ARG_STR;
        break;
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G':
    case 'a':
    case 'A':
        kind = NWB__ARG_DOUBLE;
        break;
    case 'p':
        kind = NWB__ARG_PTR;
        break;
    default:
        return conv_parse(pct, c);
    }
    memset(c, 0, sizeof(*c));
    c->start = pct;
    c->len = 2;
    c->kind = kind;
    c->prec = -1;
    return 1;
}

/* 1 when some conversion of @p fmt is %n, even after an unsupported one. */
static int has_percent_n(const char *fmt)
{
    const char *p = fmt;

    while ((p = strchr(p, '%')) != NULL) {
        p++;
        if (*p == '%') {
            p++;
            continue;
        }
        while (*p != '\0' && strchr("-+ #0'I*$.0123456789hlLqjzt", *p) != NULL) {
            p++;
        }
        if (*p == 'n') {
            return 1;
        }
    }
    return 0;
}

uint32_t nwb__fmt_parse(const char *fmt, uint8_t kinds[NWB_LOG_MAX_ARGS], uint8_t *nargs)
{
    const char *p = fmt;
    struct nwb__conv c;
    unsigned n = 0;
    int rc;

    while ((rc = nwb__fmt_next(p, &c)) == 1) {
        const unsigned need = (unsigned)c.star_width + c.star_prec + (c.kind != 0 ? 1u : 0u);

        if (n + need > NWB_LOG_MAX_ARGS) {
            rc = -1;
            break;
        }
        if (c.star_width) {
            kinds[n++] = NWB__ARG_INT;
        }
        if (c.star_prec) {
            kinds[n++] = NWB__ARG_INT;
        }
        if (c.kind != 0) {
            kinds[n++] = c.kind;
        }
        p = c.start + c.len;
    }
    if (rc == 0) {
        *nargs = (uint8_t)n;
        return NWB_LOG_SITE_READY;
    }
    *nargs = 0;
    kinds[0] = (rc == -2 || has_percent_n(fmt)) ? NWB__CX_REJECT : NWB__CX_VSNPRINTF;
    return NWB_LOG_SITE_COMPLEX;
}

int nwb__fmt_arg_prec(const char *fmt, unsigned argi)
{
    const char *p = fmt;
    struct nwb__conv c;
    unsigned n = 0;

    while (nwb__fmt_next(p, &c) == 1) {
        n += (unsigned)c.star_width + c.star_prec;
        if (c.kind != 0) {
            if (n == argi) {
                return c.prec;
            }
            n++;
        }
        p = c.start + c.len;
    }
    return -1;
}
