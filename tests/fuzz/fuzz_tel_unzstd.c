/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tel_unzstd.c - fuzz target for the POST /v1/telemetry zstd body decoder
 * (nwb_tel_unzstd() in telemetry/src/tel_stream_file.c) under caps taken from the input: the
 * output buffer never exceeds cap + 1 bytes, success returns at most cap bytes equal to zstd's
 * one-shot decoding, and every failure has a documented code and a reason (abort() otherwise).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"

#include "nwb/telemetry_report.h"

/*
 * Input layout: byte 0 picks the window log cap (10 + b % 20, i.e. 10..29; 0xff gives 0 and
 * 0xfe gives 32, both out of zstd's range and refused), byte 1 the output cap
 * (caps[b & 7] + (b >> 3)), the rest is the body.
 */
#define FUZZ_PARAM_BYTES 2u
static const size_t caps[8] = {0u, 1u, 64u, 4096u, 65535u, 65536u, 100000u, 1u << 20};

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_tel_unzstd: check failed at line %d: %s\n", __LINE__, #cond);    \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A size header in front of each nwb allocation, so the peak of live bytes can be measured. */
#define HDR 16u
static size_t live_bytes;
static size_t peak_bytes;

static void account(size_t add, size_t sub)
{
    live_bytes = live_bytes - sub + add;
    if (live_bytes > peak_bytes) {
        peak_bytes = live_bytes;
    }
}

static void *count_malloc(size_t size)
{
    unsigned char *p = size <= SIZE_MAX - HDR ? malloc(size + HDR) : NULL;

    if (p == NULL) {
        return NULL;
    }
    memcpy(p, &size, sizeof(size));
    account(size, 0);
    return p + HDR;
}

static void count_free(void *ptr)
{
    unsigned char *p = ptr;
    size_t size;

    if (p == NULL) {
        return;
    }
    memcpy(&size, p - HDR, sizeof(size));
    account(0, size);
    free(p - HDR);
}

static void *count_realloc(void *ptr, size_t size)
{
    unsigned char *p;
    size_t old = 0;

    if (ptr == NULL) {
        return count_malloc(size);
    }
    memcpy(&old, (unsigned char *)ptr - HDR, sizeof(old));
    p = size <= SIZE_MAX - HDR ? realloc((unsigned char *)ptr - HDR, size + HDR) : NULL;
    if (p == NULL) {
        return NULL;
    }
    memcpy(p, &size, sizeof(size));
    account(size, old);
    return p + HDR;
}

static void *count_calloc(size_t count, size_t size)
{
    void *p;

    if (size != 0 && count > SIZE_MAX / size) {
        return NULL;
    }
    p = count_malloc(count * size);
    if (p != NULL) {
        memset(p, 0, count * size);
    }
    return p;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    FUZZ_CHECK(nwb_replace_allocator(count_malloc, count_realloc, count_calloc, count_free) == 0);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *body = data + FUZZ_PARAM_BYTES;
    size_t body_len;
    unsigned wlog;
    size_t cap;
    uint8_t *out = (uint8_t *)&out; /* must be set to NULL or a buffer */
    size_t out_len = (size_t)-1;
    const char *why = NULL;
    int rc;

    if (size < FUZZ_PARAM_BYTES) {
        return 0;
    }
    body_len = size - FUZZ_PARAM_BYTES;
    wlog = data[0] == 0xffu ? 0u : data[0] == 0xfeu ? 32u : 10u + data[0] % 20u;
    cap = caps[data[1] & 7u] + (data[1] >> 3);

    live_bytes = peak_bytes = 0;
    rc = nwb_tel_unzstd(body, body_len, cap, wlog, &out, &out_len, &why);
    /* The only nwb allocation is the output buffer: never past cap + 1 bytes. */
    FUZZ_CHECK(peak_bytes <= cap + 1u);
    if (rc != 0) {
        FUZZ_CHECK(rc == NWB_ETOOBIG || rc == NWB_ECOMPRESS || rc == NWB_ECONFIG || rc == -ENOMEM);
        FUZZ_CHECK(why != NULL && why[0] != '\0');
        FUZZ_CHECK(out == NULL && out_len == 0);
        FUZZ_CHECK(live_bytes == 0); /* nothing kept on failure */
        FUZZ_CHECK((rc == NWB_ECONFIG) == (wlog == 0u || wlog == 32u));
        return 0;
    }
    FUZZ_CHECK(wlog >= 10u && wlog <= 29u);
    FUZZ_CHECK(out != NULL && out_len <= cap);
    {
        /* One frame that consumed all the body: zstd's one-shot decoder must agree. */
        uint8_t *ref = malloc(cap + 1u);
        size_t n;

        FUZZ_CHECK(ref != NULL);
        n = ZSTD_decompress(ref, cap + 1u, body, body_len);
        FUZZ_CHECK(!ZSTD_isError(n) && n == out_len);
        FUZZ_CHECK(n == 0 || memcmp(ref, out, n) == 0);
        free(ref);
    }
    nwb_free(out);
    FUZZ_CHECK(live_bytes == 0);
    return 0;
}
