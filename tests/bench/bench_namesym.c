/* SPDX-License-Identifier: MIT */
/*
 * bench_namesym.c - token decoding throughput: MB/s of log text with one
 * "#<16 hex>" token per ~100 bytes through nwb_namesym_decode(), beside a
 * plain memchr scan for '#' over the same bytes in the same run (the floor
 * any decoder pays to find its tokens).
 * usage: bench_namesym [--mb N] [--names N] [--repeat N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nwb/alloc.h"
#include "nwb/namesym.h"

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv)
{
    size_t mb = 64, names = 4096, repeat = 5, len = 0, lines = 0;
    nwb_namesym_builder_t b;
    nwb_namesym_view_t v;
    nwb_namesym_table_t *t;
    uint8_t *img;
    size_t img_len;
    char err[256], *text, *out;
    double best_dec = 1e9, best_scan = 1e9;
    uint64_t decoded = 0, unknown = 0, hashes = 0;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mb") == 0) {
            mb = strtoul(argv[i + 1], NULL, 10);
        } else if (strcmp(argv[i], "--names") == 0) {
            names = strtoul(argv[i + 1], NULL, 10);
        } else if (strcmp(argv[i], "--repeat") == 0) {
            repeat = strtoul(argv[i + 1], NULL, 10);
        }
    }
    nwb_namesym_builder_init(&b);
    for (size_t i = 0; i < names; i++) {
        char name[64];

        snprintf(name, sizeof(name), "render/pass_%zu/scope", i);
        nwb_namesym_builder_add(&b, name, strlen(name));
    }
    if (nwb_namesym_builder_serialize(&b, "bench", &img, &img_len, err, sizeof(err)) != 0 ||
        nwb_namesym_view_open(&v, img, img_len, NULL, NULL) != 0 ||
        nwb_namesym_table_create(&t) != 0 ||
        nwb_namesym_table_add(t, &v, "bench", NULL, NULL) < 0) {
        fprintf(stderr, "bench_namesym: setup failed\n");
        return 1;
    }
    text = malloc(mb << 20);
    /* ~100-byte lines, each with one token: 7 in 8 known, 1 in 8 unknown. */
    while (len + 200 < (mb << 20)) {
        char tok[NWB_NAME_TOKEN_SIZE], name[64];
        const uint64_t r = next_rand();

        snprintf(name, sizeof(name), "render/pass_%zu/scope", (size_t)(r % names));
        nwb_name_token((r & 7) == 0 ? r : nwb_name_hash(name, strlen(name)), tok);
        len +=
            (size_t)snprintf(text + len, 200,
                             "2026-12-01T07:34:00.123456789Z INFO    4242 game frame %06zu pass %s "
                             "took 0.123 ms\n",
                             lines++, tok);
    }
    out = malloc(nwb_namesym_decode_max(t, len));
    for (size_t r = 0; r < repeat; r++) {
        double t0 = now_s(), t1;
        const char *p = text, *end = text + len;

        while ((p = memchr(p, '#', (size_t)(end - p))) != NULL) {
            hashes++;
            p++;
        }
        t1 = now_s();
        best_scan = t1 - t0 < best_scan ? t1 - t0 : best_scan;
        t0 = now_s();
        nwb_namesym_decode(t, text, len, out, &decoded, &unknown);
        t1 = now_s();
        best_dec = t1 - t0 < best_dec ? t1 - t0 : best_dec;
    }
    printf(
        "namesym decode: %zu MiB of log text, %zu lines (one token per %.0f bytes), %zu names\n\n",
        len >> 20, lines, (double)len / (double)lines, names);
    printf("| what | MB/s |\n|---|---:|\n");
    printf("| memchr scan for '#' (peer floor) | %.0f |\n", (double)len / 1e6 / best_scan);
    printf("| nwb_namesym_decode | %.0f |\n", (double)len / 1e6 / best_dec);
    printf(
        "\ndecoded %llu, unknown %llu tokens over %zu runs (best run reported); decode = %.0f%% of "
        "the memchr floor's speed\n",
        (unsigned long long)decoded, (unsigned long long)unknown, repeat,
        100.0 * best_scan / best_dec);
    (void)hashes;
    nwb_free(img);
    nwb_namesym_builder_cleanup(&b);
    nwb_namesym_table_destroy(t);
    free(text);
    free(out);
    return 0;
}
