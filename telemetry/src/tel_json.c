/* SPDX-License-Identifier: MIT */
/*
 * tel_json.c - the streaming JSON writer behind the report and the Chrome trace: automatic
 * commas, sticky errors, strings escaped and re-sanitised to valid UTF-8, names and text
 * decoded through a .namesym table.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nwb/error.h"
#include "tel_int.h"

#define JSON_STREAM_CHUNK (64u * 1024u)

void nwb__json_init(struct nwb__json *j, nwb_tel_buf_t *buf, FILE *out)
{
    memset(j, 0, sizeof(*j));
    j->buf = buf;
    j->out = out;
}

int nwb__json_flush(struct nwb__json *j)
{
    if (j->err == 0 && j->out != NULL && j->buf->len > 0) {
        if (fwrite(j->buf->data, 1, j->buf->len, j->out) != j->buf->len) {
            j->err = -EIO;
        }
        j->buf->len = 0;
    }
    return j->err;
}

static void put(struct nwb__json *j, const void *p, size_t n)
{
    int err;

    if (j->err != 0) {
        return;
    }
    err = nwb_tel_buf_append(j->buf, p, n);
    if (err != 0) {
        j->err = err;
        return;
    }
    if (j->out != NULL && j->buf->len >= JSON_STREAM_CHUNK) {
        nwb__json_flush(j);
    }
}

void nwb__json_value_sep(struct nwb__json *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->depth > 0) {
        if (j->has_item[j->depth - 1]) {
            put(j, ",", 1);
        }
        j->has_item[j->depth - 1] = 1;
    }
}

static void open_level(struct nwb__json *j, char c)
{
    nwb__json_value_sep(j);
    if (j->depth >= NWB__JSON_DEPTH_MAX) {
        j->err = j->err != 0 ? j->err : NWB_ETOOBIG;
        return;
    }
    put(j, &c, 1);
    j->has_item[j->depth++] = 0;
}

static void close_level(struct nwb__json *j, char c)
{
    if (j->depth > 0) {
        j->depth--;
    }
    put(j, &c, 1);
}

void nwb__json_obj_begin(struct nwb__json *j)
{
    open_level(j, '{');
}

void nwb__json_obj_end(struct nwb__json *j)
{
    close_level(j, '}');
}

void nwb__json_arr_begin(struct nwb__json *j)
{
    open_level(j, '[');
}

void nwb__json_arr_end(struct nwb__json *j)
{
    close_level(j, ']');
}

void nwb__json_key(struct nwb__json *j, const char *key)
{
    nwb__json_value_sep(j);
    put(j, "\"", 1);
    if (j->err == 0) {
        const int err = nwb__json_escape_into(j->buf, key, strlen(key));

        j->err = err;
    }
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

int nwb__json_escape_into(nwb_tel_buf_t *b, const char *str, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    int err;

    /* Worst case 6 output bytes per input byte; reserve once when it fits, else per byte. */
    while (i < len) {
        size_t run = i;
        size_t n;

        while (run < len && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\') {
            run++;
        }
        if (run > i) {
            err = nwb_tel_buf_append(b, s + i, run - i);
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
            err = nwb_tel_buf_append(b, esc, elen);
            i++;
        } else {
            n = utf8_valid(s + i, len - i);
            if (n == 0) {
                err = nwb_tel_buf_append(b, "\xef\xbf\xbd", 3); /* U+FFFD */
                i++;
            } else {
                err = nwb_tel_buf_append(b, s + i, n);
                i += n;
            }
        }
        if (err != 0) {
            return err;
        }
    }
    return 0;
}

void nwb__json_str(struct nwb__json *j, const char *s, size_t len)
{
    nwb__json_value_sep(j);
    put(j, "\"", 1);
    if (j->err == 0) {
        const int err = nwb__json_escape_into(j->buf, s, len);

        j->err = err;
    }
    put(j, "\"", 1);
    if (j->err == 0 && j->out != NULL && j->buf->len >= JSON_STREAM_CHUNK) {
        nwb__json_flush(j);
    }
}

void nwb__json_cstr(struct nwb__json *j, const char *s)
{
    nwb__json_str(j, s, strlen(s));
}

void nwb__json_u64(struct nwb__json *j, uint64_t v)
{
    char tmp[24];
    size_t n = sizeof(tmp);

    do {
        tmp[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    nwb__json_value_sep(j);
    put(j, tmp + n, sizeof(tmp) - n);
}

void nwb__json_i64(struct nwb__json *j, int64_t v)
{
    char tmp[24];
    int n;

    n = snprintf(tmp, sizeof(tmp), "%lld", (long long)v);
    nwb__json_value_sep(j);
    put(j, tmp, (size_t)n);
}

void nwb__json_dbl(struct nwb__json *j, double v, int decimals)
{
    char tmp[64];
    int n;

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
    /* "-0.000" is valid JSON but noisy. */
    if (tmp[0] == '-' && strspn(tmp + 1, "0.") == (size_t)(n - 1)) {
        nwb__json_value_sep(j);
        put(j, tmp + 1, (size_t)n - 1);
        return;
    }
    nwb__json_value_sep(j);
    put(j, tmp, (size_t)n);
}

void nwb__json_null(struct nwb__json *j)
{
    nwb__json_value_sep(j);
    put(j, "null", 4);
}

void nwb__json_bool(struct nwb__json *j, int v)
{
    nwb__json_value_sep(j);
    put(j, v ? "true" : "false", v ? 4 : 5);
}

void nwb__json_raw(struct nwb__json *j, const char *s, size_t len)
{
    put(j, s, len);
}

void nwb__tel_json_name(struct nwb__json *j, const nwb_namesym_table_t *names, nwb_name_t n)
{
    char tok[NWB_NAME_TOKEN_SIZE];
    size_t len = 0;
    const char *s = names != NULL ? nwb_namesym_table_find(names, n, &len) : NULL;

    if (s != NULL) {
        nwb__json_str(j, s, len);
        return;
    }
    nwb_name_token(n, tok);
    nwb__json_str(j, tok, NWB_NAME_TOKEN_LEN);
}

void nwb__tel_json_text(struct nwb__json *j, const nwb_namesym_table_t *names, const char *msg,
                        size_t len, nwb_tel_buf_t *scratch)
{
    size_t need;
    int err;

    if (names == NULL || len == 0 || memchr(msg, '#', len) == NULL) {
        nwb__json_str(j, msg, len);
        return;
    }
    need = nwb_namesym_decode_max(names, len);
    scratch->len = 0;
    err = nwb_tel_buf_reserve(scratch, need);
    if (err != 0) {
        /* Too large to decode within the scratch cap: keep the tokens. */
        nwb__json_str(j, msg, len);
        return;
    }
    scratch->len = nwb_namesym_decode(names, msg, len, (char *)scratch->data, NULL, NULL);
    nwb__json_str(j, (const char *)scratch->data, scratch->len);
}
