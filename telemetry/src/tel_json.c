/* SPDX-License-Identifier: MIT */
/*
 * tel_json.c - JSON values of telemetry names and text: a name's string (from the stream's
 * string tables, else a .namesym table, else its token), a text message with its tokens
 * decoded the same way. The writer is common's nwb/json.h.
 */
#include <string.h>

#include "tel_int.h"

void nwb__tel_json_name(nwb_json_t *j, const struct nwb__tel_names *nm, nwb_name_t n)
{
    char tok[NWB_NAME_TOKEN_SIZE];
    size_t len = 0;
    const char *s = nwb__tel_name_find(nm, n, &len);

    if (s != NULL) {
        nwb_json_str(j, s, len);
        return;
    }
    nwb_name_token(n, tok);
    nwb_json_str(j, tok, NWB_NAME_TOKEN_LEN);
}

/* Value of a lower-case hex digit, -1 for anything else. */
static int hex_lower(unsigned char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

static int hex_any(unsigned char c)
{
    return hex_lower(c) >= 0 || (c >= 'A' && c <= 'F');
}

/*
 * The token rule of nwb_namesym_decode() (nwb/namesym.h): the '#' at @p at of the @p len bytes
 * at @p u starts a token when 16 lower-case hex digits follow, it does not follow a '#', and
 * no hex digit of either case follows the 16. Returns 1 with the name in @p *out, else 0.
 */
static int token_at(const unsigned char *u, size_t at, size_t len, nwb_name_t *out)
{
    const size_t left = len - at;
    nwb_name_t n = 0;

    if (left < NWB_NAME_TOKEN_LEN || (at > 0 && u[at - 1] == '#') ||
        (left > NWB_NAME_TOKEN_LEN && hex_any(u[at + NWB_NAME_TOKEN_LEN]))) {
        return 0;
    }
    for (size_t i = 1; i < NWB_NAME_TOKEN_LEN; i++) {
        const int v = hex_lower(u[at + i]);

        if (v < 0) {
            return 0;
        }
        n = (n << 4) | (nwb_name_t)v;
    }
    *out = n;
    return 1;
}

/* Copy @p msg into @p scratch with known tokens replaced. 0, or the buffer's error. */
static int text_decode(const struct nwb__tel_names *nm, const char *msg, size_t len,
                       nwb_buf_t *scratch)
{
    const unsigned char *u = (const unsigned char *)msg;
    size_t copied = 0;
    size_t p = 0;
    int err = 0;

    scratch->len = 0;
    while (p < len && err == 0) {
        const char *hash = memchr(msg + p, '#', len - p);
        const char *str;
        nwb_name_t n;
        size_t at;
        size_t slen = 0;

        if (hash == NULL) {
            break;
        }
        at = (size_t)(hash - msg);
        p = at + 1;
        if (!token_at(u, at, len, &n)) {
            continue;
        }
        p = at + NWB_NAME_TOKEN_LEN;
        str = nwb__tel_name_find(nm, n, &slen);
        if (str == NULL) {
            continue;
        }
        err = nwb_buf_append(scratch, msg + copied, at - copied);
        if (err == 0) {
            err = nwb_buf_append(scratch, str, slen);
        }
        copied = p;
    }
    if (err == 0) {
        err = nwb_buf_append(scratch, msg + copied, len - copied);
    }
    return err;
}

void nwb__tel_json_text(nwb_json_t *j, const struct nwb__tel_names *nm, const char *msg, size_t len,
                        nwb_buf_t *scratch)
{
    const int none =
        nm == NULL || (nm->sym == NULL && (nm->strings == NULL || nm->strings->count == 0));

    if (none || len == 0 || memchr(msg, '#', len) == NULL ||
        text_decode(nm, msg, len, scratch) != 0) {
        /* Nothing to decode, or too large to decode within the scratch cap: the tokens. */
        nwb_json_str(j, msg, len);
        return;
    }
    nwb_json_str(j, scratch->len != 0 ? (const char *)scratch->data : "", scratch->len);
}
