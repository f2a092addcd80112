/* SPDX-License-Identifier: MIT */
/* safe_name.c - sanitising untrusted names into file-name parts, and run ids. */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include "nwb/safe_name.h"

size_t nwb_safe_name(char *dst, const char *src, size_t len, const char *fallback)
{
    size_t n = 0;

    for (size_t i = 0; i < len && n < NWB_SAFE_NAME_MAX; i++) {
        const unsigned char c = (unsigned char)src[i];
        const int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-' || (c == '.' && n > 0);

        dst[n++] = ok ? (char)c : '_';
    }
    if (n == 0) {
        n = strlen(fallback);
        if (n > NWB_SAFE_NAME_MAX) {
            n = NWB_SAFE_NAME_MAX;
        }
        memcpy(dst, fallback, n);
    }
    dst[n] = '\0';
    return n;
}

void nwb_run_id_generate(char out[17])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t bytes[8];

    if (getrandom(bytes, sizeof(bytes), GRND_NONBLOCK) != (ssize_t)sizeof(bytes)) {
        /* No entropy yet (early boot): time and pid still make a run unique enough. */
        struct timespec ts;
        uint64_t v;

        clock_gettime(CLOCK_REALTIME, &ts);
        v = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
            ((uint64_t)getpid() << 40);
        for (int i = 0; i < 8; i++) {
            bytes[i] = (uint8_t)(v >> (8 * i));
        }
    }
    for (int i = 0; i < 8; i++) {
        out[2 * i] = hex[bytes[i] >> 4];
        out[2 * i + 1] = hex[bytes[i] & 15];
    }
    out[16] = '\0';
}
