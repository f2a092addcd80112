/* SPDX-License-Identifier: MIT */
/* tel_buf.c - the capped growable byte buffer every telemetry encoder and writer appends to. */
#include <errno.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/telemetry_format.h"

void nwb_tel_buf_init(nwb_tel_buf_t *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

int nwb_tel_buf_reserve(nwb_tel_buf_t *b, size_t extra)
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
    cap = b->cap < 256 ? 256 : b->cap;
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

int nwb_tel_buf_append(nwb_tel_buf_t *b, const void *p, size_t n)
{
    const int err = nwb_tel_buf_reserve(b, n);

    if (err != 0) {
        return err;
    }
    if (n > 0) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
    }
    return 0;
}

void nwb_tel_buf_cleanup(nwb_tel_buf_t *b)
{
    if (b == NULL) {
        return;
    }
    nwb_free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}
