/* SPDX-License-Identifier: MIT */
/*
 * tel_json.c - JSON values of telemetry names and text: a name's string from a .namesym
 * table (or its token), a text message with its tokens decoded. The writer is common's
 * nwb/json.h.
 */
#include <string.h>

#include "tel_int.h"

void nwb__tel_json_name(nwb_json_t *j, const nwb_namesym_table_t *names, nwb_name_t n)
{
    char tok[NWB_NAME_TOKEN_SIZE];
    size_t len = 0;
    const char *s = names != NULL ? nwb_namesym_table_find(names, n, &len) : NULL;

    if (s != NULL) {
        nwb_json_str(j, s, len);
        return;
    }
    nwb_name_token(n, tok);
    nwb_json_str(j, tok, NWB_NAME_TOKEN_LEN);
}

void nwb__tel_json_text(nwb_json_t *j, const nwb_namesym_table_t *names, const char *msg,
                        size_t len, nwb_buf_t *scratch)
{
    size_t need;
    int err;

    if (names == NULL || len == 0 || memchr(msg, '#', len) == NULL) {
        nwb_json_str(j, msg, len);
        return;
    }
    need = nwb_namesym_decode_max(names, len);
    scratch->len = 0;
    err = nwb_buf_reserve(scratch, need);
    if (err != 0) {
        /* Too large to decode within the scratch cap: keep the tokens. */
        nwb_json_str(j, msg, len);
        return;
    }
    scratch->len = nwb_namesym_decode(names, msg, len, (char *)scratch->data, NULL, NULL);
    nwb_json_str(j, (const char *)scratch->data, scratch->len);
}
