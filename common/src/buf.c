/* SPDX-License-Identifier: MIT */
/* buf.c - the capped growable byte buffer (nwb/buf.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/buf.h"
#include "nwb/error.h"

/* The first allocation: small answers and lines fit without a second one. */
#define BUF_FIRST_CAP 256u

void nwb_buf_init(nwb_buf_t *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

int nwb_buf_reserve(nwb_buf_t *b, size_t extra)
{
    size_t want;
    size_t cap;
    uint8_t *p;

    if (extra > b->max || b->len > b->max - extra) {
        return NWB_ETOOBIG;
    }
    want = b->len + extra;
    if (want <= b->cap) {
        return 0;
    }
    cap = b->cap < BUF_FIRST_CAP ? BUF_FIRST_CAP : b->cap;
    while (cap < want) {
        /* Doubling cannot overflow before reaching max, which is a size_t. */
        cap = cap > b->max / 2 ? b->max : cap * 2;
    }
    if (cap > b->max) {
        cap = b->max;
    }
    p = nwb_realloc(b->data, cap);
    if (p == NULL) {
        return -ENOMEM;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int nwb_buf_append(nwb_buf_t *b, const void *p, size_t n)
{
    const int err = nwb_buf_reserve(b, n);

    if (err != 0) {
        return err;
    }
    if (n > 0) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
    }
    return 0;
}

int nwb_buf_append_str(nwb_buf_t *b, const char *s)
{
    return nwb_buf_append(b, s, strlen(s));
}

int nwb_buf_appendf(nwb_buf_t *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    int n;
    int err;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        return NWB_EPROTO;
    }
    if ((size_t)n < sizeof(small)) {
        return nwb_buf_append(b, small, (size_t)n);
    }
    /* Longer than the stack copy: format straight into the buffer, which needs room for the
     * NUL too; at the cap's very edge the NUL may not fit, so format into a temporary copy. */
    err = nwb_buf_reserve(b, (size_t)n);
    if (err != 0) {
        return err;
    }
    if (b->cap - b->len > (size_t)n) {
        va_start(ap, fmt);
        n = vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    } else {
        char *tmp = nwb_malloc((size_t)n + 1);

        if (tmp == NULL) {
            return -ENOMEM;
        }
        va_start(ap, fmt);
        n = vsnprintf(tmp, (size_t)n + 1, fmt, ap);
        va_end(ap);
        if (n >= 0) {
            memcpy(b->data + b->len, tmp, (size_t)n);
        }
        nwb_free(tmp);
    }
    if (n < 0) {
        return NWB_EPROTO;
    }
    b->len += (size_t)n;
    return 0;
}

void nwb_buf_reset(nwb_buf_t *b)
{
    if (b != NULL) {
        b->len = 0;
    }
}

void nwb_buf_cleanup(nwb_buf_t *b)
{
    if (b == NULL) {
        return;
    }
    nwb_free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}
