/* SPDX-License-Identifier: MIT */
/*
 * net_util.c - small helpers of the client's network side: batch buffers,
 * CRC-32C for the spool, one-line reports to stderr, bounded formatting.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"

#include "net_int.h"

struct nwb__batch *nwb__batch_alloc(uint32_t cap)
{
    struct nwb__batch *b = nwb_malloc(sizeof(*b) + cap);

    if (b == NULL) {
        return NULL;
    }
    memset(b, 0, sizeof(*b));
    b->cap = cap;
    return b;
}

int nwb__batch_reserve(struct nwb__batch **b, uint32_t cap)
{
    struct nwb__batch *nb;

    if ((*b)->cap >= cap) {
        return 0;
    }
    nb = nwb_realloc(*b, sizeof(*nb) + cap);
    if (nb == NULL) {
        return NWB_EFULL;
    }
    nb->cap = cap;
    *b = nb;
    return 0;
}

size_t nwb__batch_cost(const struct nwb__batch *b)
{
    return sizeof(*b) + b->cap;
}

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;

        for (int k = 0; k < 8; k++) {
            c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        }
        crc_table[i] = c;
    }
}

uint32_t nwb__crc32c(uint32_t crc, const void *data, size_t len)
{
    const uint8_t *p = data;

    pthread_once(&crc_once, crc_table_init);
    crc = ~crc;
    for (size_t i = 0; i < len; i++) {
        crc = crc_table[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
    }
    return ~crc;
}

void nwb__net_report(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int n = snprintf(buf, sizeof(buf), "nwb-client: ");
    int m;

    va_start(ap, fmt);
    m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0) {
        m = 0;
    }
    n += m;
    if ((size_t)n > sizeof(buf) - 2) {
        n = (int)sizeof(buf) - 2;
    }
    buf[n++] = '\n';
    /* One write so concurrent reports do not interleave; a failing stderr is ignored. */
    if (write(STDERR_FILENO, buf, (size_t)n) < 0) {
        return;
    }
}

int nwb__fmt(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap) {
        return NWB_ETOOBIG;
    }
    return 0;
}
