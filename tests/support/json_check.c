/* SPDX-License-Identifier: MIT */
/*
 * json_check.c - a strict RFC 8259 JSON checker (UTF-8 validated, surrogates paired,
 * number grammar exact, nesting bounded) used by every test and fuzz oracle that reads JSON nwb
 * wrote.
 */
#include <string.h>

#include "json_check.h"

struct jp {
    const unsigned char *s;
    size_t len;
    size_t pos;
    int depth;
};

static void ws(struct jp *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                               p->s[p->pos] == '\n' || p->s[p->pos] == '\r')) {
        p->pos++;
    }
}

static int lit(struct jp *p, const char *w)
{
    const size_t n = strlen(w);

    if (p->len - p->pos < n || memcmp(p->s + p->pos, w, n) != 0) {
        return -1;
    }
    p->pos += n;
    return 0;
}

static int hex4(struct jp *p, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c;

        if (p->pos >= p->len) {
            return -1;
        }
        c = p->s[p->pos++];
        *v <<= 4;
        if (c >= '0' && c <= '9') {
            *v |= c - '0';
        } else if (c >= 'a' && c <= 'f') {
            *v |= c - 'a' + 10;
        } else if (c >= 'A' && c <= 'F') {
            *v |= c - 'A' + 10;
        } else {
            return -1;
        }
    }
    return 0;
}

static int utf8(struct jp *p)
{
    const unsigned char *s = p->s + p->pos;
    const size_t rem = p->len - p->pos;
    const unsigned c = s[0];
    size_t n;
    unsigned lo = 0x80;
    unsigned hi = 0xbf;

    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80;
        hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;
    } else {
        return -1;
    }
    if (rem < n || s[1] < lo || s[1] > hi) {
        return -1;
    }
    for (size_t i = 2; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return -1;
        }
    }
    p->pos += n;
    return 0;
}

static int str(struct jp *p)
{
    if (p->pos >= p->len || p->s[p->pos] != '"') {
        return -1;
    }
    p->pos++;
    while (p->pos < p->len) {
        const unsigned c = p->s[p->pos];

        if (c == '"') {
            p->pos++;
            return 0;
        }
        if (c < 0x20) {
            return -1;
        }
        if (c == '\\') {
            unsigned v;

            p->pos++;
            if (p->pos >= p->len) {
                return -1;
            }
            switch (p->s[p->pos++]) {
            case '"':
            case '\\':
            case '/':
            case 'b':
            case 'f':
            case 'n':
            case 'r':
            case 't':
                break;
            case 'u':
                if (hex4(p, &v) != 0) {
                    return -1;
                }
                if (v >= 0xd800 && v <= 0xdbff) {
                    unsigned w;

                    if (lit(p, "\\u") != 0 || hex4(p, &w) != 0 || w < 0xdc00 || w > 0xdfff) {
                        return -1;
                    }
                } else if (v >= 0xdc00 && v <= 0xdfff) {
                    return -1;
                }
                break;
            default:
                return -1;
            }
            continue;
        }
        if (c >= 0x80) {
            if (utf8(p) != 0) {
                return -1;
            }
            continue;
        }
        p->pos++;
    }
    return -1;
}

static int digits(struct jp *p)
{
    const size_t start = p->pos;

    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        p->pos++;
    }
    return p->pos > start ? 0 : -1;
}

static int num(struct jp *p)
{
    if (p->pos < p->len && p->s[p->pos] == '-') {
        p->pos++;
    }
    if (p->pos < p->len && p->s[p->pos] == '0') {
        p->pos++;
    } else if (digits(p) != 0) {
        return -1;
    }
    if (p->pos < p->len && p->s[p->pos] == '.') {
        p->pos++;
        if (digits(p) != 0) {
            return -1;
        }
    }
    if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) {
            p->pos++;
        }
        if (digits(p) != 0) {
            return -1;
        }
    }
    return 0;
}

static int value(struct jp *p)
{
    ws(p);
    if (p->pos >= p->len) {
        return -1;
    }
    switch (p->s[p->pos]) {
    case '{':
        if (++p->depth > 64) {
            return -1;
        }
        p->pos++;
        ws(p);
        if (p->pos < p->len && p->s[p->pos] == '}') {
            p->pos++;
            p->depth--;
            return 0;
        }
        for (;;) {
            ws(p);
            if (str(p) != 0) {
                return -1;
            }
            ws(p);
            if (lit(p, ":") != 0 || value(p) != 0) {
                return -1;
            }
            ws(p);
            if (p->pos < p->len && p->s[p->pos] == ',') {
                p->pos++;
                continue;
            }
            if (lit(p, "}") != 0) {
                return -1;
            }
            p->depth--;
            return 0;
        }
    case '[':
        if (++p->depth > 64) {
            return -1;
        }
        p->pos++;
        ws(p);
        if (p->pos < p->len && p->s[p->pos] == ']') {
            p->pos++;
            p->depth--;
            return 0;
        }
        for (;;) {
            if (value(p) != 0) {
                return -1;
            }
            ws(p);
            if (p->pos < p->len && p->s[p->pos] == ',') {
                p->pos++;
                continue;
            }
            if (lit(p, "]") != 0) {
                return -1;
            }
            p->depth--;
            return 0;
        }
    case '"':
        return str(p);
    case 't':
        return lit(p, "true");
    case 'f':
        return lit(p, "false");
    case 'n':
        return lit(p, "null");
    default:
        return num(p);
    }
}

int nwb_test_json_check(const char *s, size_t len, size_t *bad_offset)
{
    struct jp p = {(const unsigned char *)s, len, 0, 0};

    if (value(&p) == 0) {
        ws(&p);
        if (p.pos == p.len) {
            return 0;
        }
    }
    if (bad_offset != NULL) {
        *bad_offset = p.pos;
    }
    return -1;
}
