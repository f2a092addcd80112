/* SPDX-License-Identifier: MIT */
/*
 * fuzz_namesym.c - any byte string given to the .namesym reader must be
 * accepted or rejected cleanly; an accepted sidecar must be searchable for
 * every entry, mergeable into a table, and decode text made of its own
 * tokens within the announced output bound.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/namesym.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nwb_namesym_view_t v;
    nwb_namesym_table_t *t;
    char text[64 * NWB_NAME_TOKEN_LEN];
    size_t tlen = 0;
    char *out;

    if (nwb_namesym_view_open(&v, data, size, NULL, NULL) != 0) {
        return 0;
    }
    for (uint32_t i = 0; i < v.count; i++) {
        nwb_name_t h;
        const char *s, *f;
        uint32_t len, flen;

        nwb_namesym_view_entry(&v, i, &h, &s, &len);
        if (!nwb_namesym_view_find(&v, h, &f, &flen) || f != s || flen != len) {
            abort(); /* sorted and unique: binary search must find every entry */
        }
        if (i < 64) {
            nwb_name_token(h, text + tlen);
            tlen += NWB_NAME_TOKEN_LEN;
        }
    }
    if (nwb_namesym_table_create(&t) != 0) {
        return 0;
    }
    if (nwb_namesym_table_add(t, &v, "fuzz", NULL, NULL) >= 0) {
        const size_t cap = nwb_namesym_decode_max(t, tlen);
        size_t n;

        out = malloc(cap + 1);
        if (out != NULL) {
            n = nwb_namesym_decode(t, text, tlen, out, NULL, NULL);
            if (n > cap) {
                abort();
            }
            free(out);
        }
    }
    nwb_namesym_table_destroy(t);
    return 0;
}
