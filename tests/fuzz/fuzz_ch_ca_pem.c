/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ch_ca_pem.c - fuzz target for --forward-ca-file's contents (server/src/forward/ch_tls.c,
 * nwb__ch_tls_add_ca_pem, OpenSSL's PEM and X.509 parsers behind it): any bytes add at least
 * one certificate or are refused with a one-line reason.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward/ch_tls.h"
#include "nwb/error.h"

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_ch_ca_pem: check failed at line %d: %s\n", __LINE__, #cond);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct nwb__ch_tls *t = NULL;
    char err[256];
    int n;

    err[0] = '\0';
    FUZZ_CHECK(nwb__ch_tls_create(NULL, &t, err, sizeof(err)) == 0);
    n = nwb__ch_tls_add_ca_pem(t, data, size, err, sizeof(err));
    if (n < 0) {
        FUZZ_CHECK(n == NWB_ECONFIG);
        FUZZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
    } else {
        FUZZ_CHECK(n >= 1);
    }
    nwb__ch_tls_destroy(t);
    return 0;
}
