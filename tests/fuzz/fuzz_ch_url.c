/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ch_url.c - fuzz target for the --forward-clickhouse URL parser
 * (server/src/forward/ch_http.c, nwb__ch_http_init): any text is accepted or refused with a
 * one-line reason; an accepted URL has a host of 1..253 visible bytes, a port in 1..65535 and
 * a database name that nwb__ch_db_name_check() accepts, and opens no connection.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward/ch_http.h"

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_ch_url: check failed at line %d: %s\n", __LINE__, #cond);        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char url[1024];
    char err[256];
    struct nwb__ch_http h;
    size_t n = size < sizeof(url) - 1 ? size : sizeof(url) - 1;

    memcpy(url, data, n);
    url[n] = '\0';
    err[0] = '\0';
    if (nwb__ch_http_init(&h, url, err, sizeof(err)) != 0) {
        FUZZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
        return 0;
    }
    FUZZ_CHECK(h.fd == -1);
    FUZZ_CHECK(h.tls == NULL && h.conn == NULL && (h.https == 0 || h.https == 1));
    FUZZ_CHECK(h.port >= 1 && h.port <= 65535);
    FUZZ_CHECK(strlen(h.host) >= 1 && strlen(h.host) <= NWB__CH_HOST_MAX);
    for (const char *p = h.host; *p != '\0'; p++) {
        FUZZ_CHECK(*p > 0x20 && *p < 0x7f && *p != '@');
    }
    FUZZ_CHECK(nwb__ch_db_name_check(h.database, err, sizeof(err)) == 0);
    nwb__ch_http_close(&h);
    return 0;
}
