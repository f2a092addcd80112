/* SPDX-License-Identifier: MIT */
/*
 * client_fmt.h - the printf subset the client can defer: parsing a call
 * site's format into argument kinds (producer, once per site) and rendering
 * a record's captured arguments back into text (worker). Both walk the
 * format with the same nwb__fmt_next(), so they always agree on the layout.
 */
#ifndef NWB_CLIENT_FMT_H
#define NWB_CLIENT_FMT_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/log.h"

/* Argument kinds stored in nwb_log_site_t.kinds once the site is READY. */
enum {
    NWB__ARG_INT = 1,   /* int and what promotes to it: char, short, '*' width/precision */
    NWB__ARG_LONG,      /* long, unsigned long */
    NWB__ARG_LLONG,     /* long long, unsigned long long */
    NWB__ARG_SIZE,      /* size_t, ssize_t */
    NWB__ARG_INTMAX,    /* intmax_t, uintmax_t */
    NWB__ARG_PTRDIFF,   /* ptrdiff_t */
    NWB__ARG_DOUBLE,    /* double (float promotes to it) */
    NWB__ARG_LDOUBLE,   /* long double: two slots */
    NWB__ARG_PTR,       /* void * (%p) */
    NWB__ARG_STR,       /* const char *, no precision */
    NWB__ARG_STR_PSTAR, /* const char *, precision is the previous ('*') argument */
    NWB__ARG_STR_PLIT   /* const char *, literal precision in the format */
};

/* kinds[0] of a COMPLEX site says how the calling thread handles it. */
#define NWB__CX_VSNPRINTF 1u /* format with vsnprintf on the calling thread */
#define NWB__CX_REJECT    2u /* the format has %n: print the format text, never the arguments */

/* A conversion spec longer than this (flags, width, precision, length) is not deferred. */
#define NWB__FMT_SPEC_MAX 32u

/* Longest C string copied per argument; longer ones are cut and marked "...". */
#define NWB__STR_MAX 4096u

/* STR slot flags. */
#define NWB__STR_TRUNCATED 0x1u
#define NWB__STR_NULL      0x2u

/* One conversion found by nwb__fmt_next(). */
struct nwb__conv {
    const char *start;  /* its '%' */
    uint32_t len;       /* bytes from '%' through the conversion character */
    uint8_t kind;       /* NWB__ARG_* of the value, 0 for "%%" */
    uint8_t star_width; /* 1 when the width is '*' (an int argument before the value) */
    uint8_t star_prec;  /* 1 when the precision is '*' (an int argument before the value) */
    int32_t prec;       /* literal precision; -1 when absent or '*' */
};

/*
 * Find the next conversion in @p p. Returns 1 with @p c filled (the literal
 * text before it is [p, c->start)), 0 when only literal text is left, -1 for
 * a conversion the client does not defer, -2 for %n (never supported).
 */
int nwb__fmt_next(const char *p, struct nwb__conv *c);

/*
 * Parse @p fmt into @p kinds / @p nargs. Returns NWB_LOG_SITE_READY, or
 * NWB_LOG_SITE_COMPLEX with kinds[0] set to NWB__CX_VSNPRINTF or
 * NWB__CX_REJECT (more than NWB_LOG_MAX_ARGS arguments, or anything unsupported).
 */
uint32_t nwb__fmt_parse(const char *fmt, uint8_t kinds[NWB_LOG_MAX_ARGS], uint8_t *nargs);

/* The literal precision of argument @p argi of @p fmt (an NWB__ARG_STR_PLIT), or -1. */
int nwb__fmt_arg_prec(const char *fmt, unsigned argi);

/*
 * Render @p fmt with the captured arguments: @p slots (8 bytes per argument,
 * 16 for long double; a string's slot holds its length and NWB__STR_* flags)
 * and @p strs (the strings in order, each NUL-terminated). Writes at most
 * @p cap - 1 bytes plus a NUL to @p dst; output that does not fit is cut and
 * ends in "...". Sets NWB_LOG_RECORD_TRUNCATED in @p *flags when anything
 * was cut. Returns the message length.
 */
size_t nwb__fmt_render(const char *fmt, const uint8_t *slots, size_t slot_bytes,
                       const uint8_t *strs, size_t strs_len, char *dst, size_t cap, uint8_t *flags);

#endif /* NWB_CLIENT_FMT_H */
