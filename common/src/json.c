/* SPDX-License-Identifier: MIT */
/*
 * json.c - the streaming JSON writer (nwb/json.h): automatic commas, tracked nesting, sticky
 * errors, strings escaped and re-sanitised to valid UTF-8.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/error.h"
#include "nwb/json.h"

#define JSON_STREAM_CHUNK (64u * 1024u)
/* Input bytes escaped at a time when streaming, and the most one byte can become (\u00XX). */
#define JSON_STRING_PIECE (8u * 1024u)
#define JSON_ESCAPE_MAX   6u

void nwb_json_init(nwb_json_t *j, nwb_buf_t *buf, FILE *out)
{
    memset(j, 0, sizeof(*j));
    j->buf = buf;
    j->out = out;
}

/* A caller's nesting mistake: a bug, stopped in debug builds, a sticky error otherwise. */
static void misuse(nwb_json_t *j, const char *what)
{
#ifndef NDEBUG
    fprintf(stderr, "nwb_json: %s\n", what);
    abort();
#else
    (void)what;
#endif
    if (j->err == 0) {
        j->err = NWB_EPROTO;
    }
}

int nwb_json_flush(nwb_json_t *j)
{
    if (j->err == 0 && j->out != NULL && j->buf->len > 0) {
        if (fwrite(j->buf->data, 1, j->buf->len, j->out) != j->buf->len) {
            j->err = -EIO;
        }
        j->buf->len = 0;
    }
    return j->err;
}

static void put(nwb_json_t *j, const void *p, size_t n)
{
    int err;

    if (j->err != 0) {
        return;
    }
    err = nwb_buf_append(j->buf, p, n);
    if (err != 0) {
        j->err = err;
        return;
    }
    if (j->out != NULL && j->buf->len >= JSON_STREAM_CHUNK) {
        nwb_json_flush(j);
    }
}

static int is_continuation(char c)
{
    return ((unsigned char)c & 0xc0) == 0x80;
}

/* Escape @p len bytes into the document. Streaming, a long string goes in pieces, the buffer
 * written out before a piece that might not fit, so a string needs no more than the cap; a
 * piece never ends inside a UTF-8 sequence, which would turn its bytes into U+FFFD. */
static void escape(nwb_json_t *j, const char *s, size_t len)
{
    while (j->err == 0 && len > 0) {
        size_t n = len;

        if (j->out != NULL) {
            if (n > JSON_STRING_PIECE) {
                size_t cut = JSON_STRING_PIECE;

                /* A sequence is at most 4 bytes: its start is at most 3 back. A continuation
                 * byte with none there is a stray, and the cut may stay before it. */
                for (int back = 0; back < 3 && is_continuation(s[cut]); back++) {
                    cut--;
                }
                n = is_continuation(s[cut]) ? JSON_STRING_PIECE : cut;
            }
            if (j->buf->max - j->buf->len < n * JSON_ESCAPE_MAX) {
                nwb_json_flush(j);
            }
        }
        if (j->err == 0) {
            j->err = nwb_json_escape_into(j->buf, s, n);
        }
        s += n;
        len -= n;
    }
}

/* Before a value: the key it belongs to, or the comma after the previous array item. A
 * document holds one top-level value. */
static void value_sep(nwb_json_t *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->depth == 0) {
        if (j->top_done) {
            misuse(j, "a second top-level value");
        }
        j->top_done = 1;
        return;
    }
    if (j->is_object[j->depth - 1]) {
        misuse(j, "a value in an object without its key");
        return;
    }
    if (j->has_item[j->depth - 1]) {
        put(j, ",", 1);
    }
    j->has_item[j->depth - 1] = 1;
}

static void open_level(nwb_json_t *j, char c)
{
    if (j->err != 0) {
        return;
    }
    value_sep(j);
    if (j->depth >= NWB_JSON_DEPTH_MAX) {
        j->err = j->err != 0 ? j->err : NWB_ETOOBIG;
        return;
    }
    put(j, &c, 1);
    j->is_object[j->depth] = c == '{';
    j->has_item[j->depth++] = 0;
}

static void close_level(nwb_json_t *j, char c)
{
    if (j->err != 0) {
        return;
    }
    if (j->depth == 0 || j->after_key || j->is_object[j->depth - 1] != (c == '}')) {
        misuse(j, "a close that does not match its open");
        return;
    }
    j->depth--;
    put(j, &c, 1);
}

void nwb_json_obj_begin(nwb_json_t *j)
{
    open_level(j, '{');
}

void nwb_json_obj_end(nwb_json_t *j)
{
    close_level(j, '}');
}

void nwb_json_arr_begin(nwb_json_t *j)
{
    open_level(j, '[');
}

void nwb_json_arr_end(nwb_json_t *j)
{
    close_level(j, ']');
}

void nwb_json_key(nwb_json_t *j, const char *key)
{
    if (j->err != 0) {
        return;
    }
    if (j->depth == 0 || !j->is_object[j->depth - 1] || j->after_key) {
        misuse(j, "a key outside an object, or two keys in a row");
        return;
    }
    if (j->has_item[j->depth - 1]) {
        put(j, ",", 1);
    }
    j->has_item[j->depth - 1] = 1;
    put(j, "\"", 1);
    escape(j, key, strlen(key));
    put(j, "\":", 2);
    j->after_key = 1;
}

/* Length of the valid UTF-8 sequence at @p s (RFC 3629: no overlongs, no surrogates, at most
 * U+10FFFF), or 0 when it is invalid. */
static size_t utf8_valid(const unsigned char *s, size_t len)
{
    const unsigned c = s[0];

    if (c < 0x80) {
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        return (len >= 2 && (s[1] & 0xc0) == 0x80) ? 2 : 0;
    }
    if (c >= 0xe0 && c <= 0xef) {
        unsigned lo = 0x80;
        unsigned hi = 0xbf;

        if (c == 0xe0) {
            lo = 0xa0;
        } else if (c == 0xed) {
            hi = 0x9f;
        }
        return (len >= 3 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80) ? 3 : 0;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        unsigned lo = 0x80;
        unsigned hi = 0xbf;

        if (c == 0xf0) {
            lo = 0x90;
        } else if (c == 0xf4) {
            hi = 0x8f;
        }
        return (len >= 4 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 &&
                (s[3] & 0xc0) == 0x80)
                   ? 4
                   : 0;
    }
    return 0;
}

int nwb_json_escape_into(nwb_buf_t *b, const char *str, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    int err;

    while (i < len) {
        size_t run = i;
        size_t n;

        while (run < len && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\') {
            run++;
        }
        if (run > i) {
            err = nwb_buf_append(b, s + i, run - i);
            if (err != 0) {
                return err;
            }
            i = run;
            continue;
        }
        if (s[i] < 0x20 || s[i] == '"' || s[i] == '\\') {
            char esc[6] = {'\\', 'u', '0', '0', hex[s[i] >> 4], hex[s[i] & 15]};
            size_t elen = 6;

            if (s[i] == '"' || s[i] == '\\') {
                esc[1] = (char)s[i];
                elen = 2;
            } else if (s[i] == '\n') {
                esc[1] = 'n';
                elen = 2;
            } else if (s[i] == '\t') {
                esc[1] = 't';
                elen = 2;
            } else if (s[i] == '\r') {
                esc[1] = 'r';
                elen = 2;
            }
            err = nwb_buf_append(b, esc, elen);
            i++;
        } else {
            n = utf8_valid(s + i, len - i);
            if (n == 0) {
                err = nwb_buf_append(b, "\xef\xbf\xbd", 3); /* U+FFFD */
                i++;
            } else {
                err = nwb_buf_append(b, s + i, n);
                i += n;
            }
        }
        if (err != 0) {
            return err;
        }
    }
    return 0;
}

void nwb_json_str(nwb_json_t *j, const char *s, size_t len)
{
    if (j->err != 0) {
        return;
    }
    value_sep(j);
    put(j, "\"", 1);
    escape(j, s, len);
    put(j, "\"", 1);
}

void nwb_json_cstr(nwb_json_t *j, const char *s)
{
    nwb_json_str(j, s, strlen(s));
}

void nwb_json_u64(nwb_json_t *j, uint64_t v)
{
    char tmp[24];
    size_t n = sizeof(tmp);

    if (j->err != 0) {
        return;
    }
    do {
        tmp[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    value_sep(j);
    put(j, tmp + n, sizeof(tmp) - n);
}

void nwb_json_i64(nwb_json_t *j, int64_t v)
{
    char tmp[24];
    const int n = snprintf(tmp, sizeof(tmp), "%lld", (long long)v);

    if (j->err != 0) {
        return;
    }
    value_sep(j);
    put(j, tmp, (size_t)n);
}

void nwb_json_dbl(nwb_json_t *j, double v, int decimals)
{
    char tmp[64];
    int n;

    if (j->err != 0) {
        return;
    }
    if (!isfinite(v)) {
        v = 0.0;
    }
    if (decimals < 0 || decimals > 9) {
        decimals = 6;
    }
    /* Magnitudes above 1e18 would need a long fixed form; %g keeps them short and valid. */
    if (fabs(v) >= 1e18) {
        n = snprintf(tmp, sizeof(tmp), "%.17g", v);
    } else {
        n = snprintf(tmp, sizeof(tmp), "%.*f", decimals, v);
    }
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        j->err = j->err != 0 ? j->err : NWB_EPROTO;
        return;
    }
    value_sep(j);
    /* "-0.000" is valid JSON but noisy. */
    if (tmp[0] == '-' && strspn(tmp + 1, "0.") == (size_t)(n - 1)) {
        put(j, tmp + 1, (size_t)n - 1);
        return;
    }
    put(j, tmp, (size_t)n);
}

void nwb_json_null(nwb_json_t *j)
{
    if (j->err != 0) {
        return;
    }
    value_sep(j);
    put(j, "null", 4);
}

void nwb_json_bool(nwb_json_t *j, int v)
{
    if (j->err != 0) {
        return;
    }
    value_sep(j);
    put(j, v ? "true" : "false", v ? 4 : 5);
}

void nwb_json_number_text(nwb_json_t *j, const char *s, size_t len)
{
    if (j->err != 0) {
        return;
    }
    value_sep(j);
    put(j, s, len);
}

void nwb_json_space(nwb_json_t *j, const char *s, size_t len)
{
    if (j->err != 0) {
        return;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') {
            misuse(j, "nwb_json_space() with something other than whitespace");
            return;
        }
    }
    put(j, s, len);
}

int nwb_json_finish(nwb_json_t *j)
{
    if (j->err != 0) {
        return j->err;
    }
    if (j->depth != 0 || j->after_key || !j->top_done) {
        misuse(j, "a document finished empty or with levels still open");
    }
    return nwb_json_flush(j);
}
