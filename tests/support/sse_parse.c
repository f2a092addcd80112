/* SPDX-License-Identifier: MIT */
/*
 * sse_parse.c - the Server-Sent Events block parser of sse_parse.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sse_parse.h"

void nwb_test_sse_parser_init(struct nwb_test_sse_parser *p)
{
    p->off = p->len = 0;
}

char *nwb_test_sse_parser_room(struct nwb_test_sse_parser *p, size_t *room)
{
    if (p->off > 0) {
        memmove(p->buf, p->buf + p->off, p->len);
        p->off = 0;
    }
    *room = sizeof(p->buf) - p->len;
    return p->buf + p->len;
}

void nwb_test_sse_parser_wrote(struct nwb_test_sse_parser *p, size_t n)
{
    p->len += n;
}

/* A decimal u64 of @p len bytes; -1 when it is not one. */
static int decimal(const char *s, size_t len, uint64_t *out)
{
    char tmp[24];
    unsigned long long v;

    if (len == 0 || len > 20) {
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
    }
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    errno = 0;
    v = strtoull(tmp, NULL, 10);
    if (errno != 0) {
        return -1;
    }
    *out = v;
    return 0;
}

/* One line of a block into @p b: "name: value" or a comment. 0, or -1 for a line the server
 * never sends. */
static int take_line(struct nwb_test_sse_block *b, const char *line, size_t len)
{
    const char *colon = memchr(line, ':', len);
    const char *val;
    size_t nlen, vlen;
    uint64_t v;

    if (colon == line) {
        b->comments++;
        return 0;
    }
    if (colon == NULL || (size_t)(colon - line) + 1 >= len || colon[1] != ' ') {
        return -1;
    }
    nlen = (size_t)(colon - line);
    val = colon + 2;
    vlen = len - nlen - 2;
    if (nlen == 2 && memcmp(line, "id", 2) == 0) {
        if (b->has_id || decimal(val, vlen, &b->id) != 0) {
            return -1;
        }
        b->has_id = 1;
    } else if (nlen == 5 && memcmp(line, "event", 5) == 0) {
        if (b->event[0] != '\0' || vlen >= sizeof(b->event)) {
            return -1;
        }
        memcpy(b->event, val, vlen);
        b->event[vlen] = '\0';
    } else if (nlen == 4 && memcmp(line, "data", 4) == 0) {
        if (b->has_data || vlen > NWB_TEST_SSE_DATA_MAX) {
            return -1;
        }
        memcpy(b->data, val, vlen);
        b->data[vlen] = '\0';
        b->data_len = vlen;
        b->has_data = 1;
    } else if (nlen == 5 && memcmp(line, "retry", 5) == 0) {
        if (decimal(val, vlen, &v) != 0 || v > 86400000u) {
            return -1;
        }
        b->has_retry = 1;
        b->retry_ms = (unsigned)v;
    } else {
        return -1;
    }
    return 0;
}

int nwb_test_sse_parser_next(struct nwb_test_sse_parser *p, struct nwb_test_sse_block *b)
{
    const char *start = p->buf + p->off;
    const char *end = start + p->len;
    const char *line = start;

    memset(b, 0, sizeof(*b));
    for (;;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));

        if (nl == NULL) {
            return p->len == sizeof(p->buf) ? -1 : 0; /* full without a block's end: too long */
        }
        if (nl == line) {
            const size_t used = (size_t)(nl + 1 - start);

            if (line == start) {
                return -1; /* a blank line with no block before it */
            }
            p->off += used;
            p->len -= used;
            return 1;
        }
        if (memchr(line, '\r', (size_t)(nl - line)) != NULL ||
            take_line(b, line, (size_t)(nl - line)) != 0) {
            return -1;
        }
        line = nl + 1;
    }
}

int nwb_test_sse_data_str(const char *data, const char *key, char *out, size_t cap)
{
    char k[64];
    const char *p;
    const char *e;

    snprintf(k, sizeof(k), "\"%s\":\"", key);
    p = strstr(data, k);
    if (p == NULL) {
        return 0;
    }
    p += strlen(k);
    e = strchr(p, '"');
    if (e == NULL || (size_t)(e - p) >= cap) {
        return 0;
    }
    memcpy(out, p, (size_t)(e - p));
    out[e - p] = '\0';
    return 1;
}

int nwb_test_sse_data_u64(const char *data, const char *key, uint64_t *out)
{
    char k[64];
    const char *p;

    snprintf(k, sizeof(k), "\"%s\":", key);
    p = strstr(data, k);
    if (p == NULL || p[strlen(k)] < '0' || p[strlen(k)] > '9') {
        return 0;
    }
    *out = strtoull(p + strlen(k), NULL, 10);
    return 1;
}
