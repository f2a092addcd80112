/* SPDX-License-Identifier: MIT */
/*
 * fuzz_replay.c - a main() that feeds files to a fuzz target's LLVMFuzzerTestOneInput without
 * libFuzzer, so CTest replays tests/fuzz/corpus/<target>/ in every build (zstd's
 * regression_driver.c). Each argument is a file or a directory whose regular files are
 * replayed in name order. Fails when an input cannot be read or nothing was replayed.
 * It uses plain malloc, not nwb_malloc: the driver links no nwb library and must hand the
 * target exact-size blocks the way libFuzzer does.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Largest input replayed; libFuzzer's own default -max_len is far below it. */
#define REPLAY_INPUT_MAX (64u * 1024u * 1024u)
/* Most files replayed from one directory. */
#define REPLAY_DIR_MAX 100000u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional, as in libFuzzer: a target may define it to set itself up once. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static unsigned long replayed;

/*
 * Read @p path into a buffer of exactly its size (so AddressSanitizer sees any read past the
 * end, as under libFuzzer) and run the target on it. Returns 0, or -1 after a message.
 */
static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    struct stat st;
    size_t got;

    if (f == NULL) {
        fprintf(stderr, "fuzz_replay: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (fstat(fileno(f), &st) != 0 || st.st_size < 0) {
        fprintf(stderr, "fuzz_replay: cannot stat %s: %s\n", path, strerror(errno));
        goto fail;
    }
    if ((uint64_t)st.st_size > REPLAY_INPUT_MAX) {
        fprintf(stderr, "fuzz_replay: %s is larger than %u bytes\n", path, REPLAY_INPUT_MAX);
        goto fail;
    }
    /* malloc(0) may return NULL; one spare byte keeps the empty input apart from failure. */
    buf = malloc((size_t)st.st_size + 1u);
    if (buf == NULL) {
        fprintf(stderr, "fuzz_replay: out of memory for %s\n", path);
        goto fail;
    }
    got = fread(buf, 1, (size_t)st.st_size, f);
    if (got != (size_t)st.st_size || ferror(f)) {
        fprintf(stderr, "fuzz_replay: short read on %s\n", path);
        goto fail;
    }
    fclose(f);
    f = NULL;
    if (got > 0) {
        /* Move the bytes to an exact-size block so an over-read is caught. */
        uint8_t *exact = malloc(got);

        if (exact == NULL) {
            fprintf(stderr, "fuzz_replay: out of memory for %s\n", path);
            goto fail;
        }
        memcpy(exact, buf, got);
        free(buf);
        buf = exact;
    }
    fprintf(stderr, "fuzz_replay: %s (%zu bytes)\n", path, got);
    LLVMFuzzerTestOneInput(buf, got);
    free(buf);
    replayed++;
    return 0;

fail:
    free(buf);
    if (f != NULL) {
        fclose(f);
    }
    return -1;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay every regular file directly inside @p dir, in name order. Returns 0 or -1. */
static int replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    char **names = NULL;
    size_t count = 0;
    size_t cap = 0;
    int rc = 0;
    struct dirent *e;

    if (d == NULL) {
        fprintf(stderr, "fuzz_replay: cannot open directory %s: %s\n", dir, strerror(errno));
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        if (count == REPLAY_DIR_MAX) {
            fprintf(stderr, "fuzz_replay: more than %u files in %s\n", REPLAY_DIR_MAX, dir);
            rc = -1;
            break;
        }
        if (count == cap) {
            const size_t ncap = cap ? cap * 2 : 64;
            char **n = realloc(names, ncap * sizeof(*names));

            if (n == NULL) {
                rc = -1;
                break;
            }
            names = n;
            cap = ncap;
        }
        names[count] = malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (names[count] == NULL) {
            rc = -1;
            break;
        }
        sprintf(names[count], "%s/%s", dir, e->d_name);
        count++;
    }
    closedir(d);
    if (rc == 0 && count > 0) {
        qsort(names, count, sizeof(*names), compare_names);
    }
    for (size_t i = 0; i < count; i++) {
        struct stat st;

        if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            rc = replay_file(names[i]);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    int failed = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    if (LLVMFuzzerInitialize != NULL) {
        LLVMFuzzerInitialize(&argc, &argv);
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;

        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "fuzz_replay: %s: %s\n", argv[i], strerror(errno));
            failed = 1;
        } else if (S_ISDIR(st.st_mode)) {
            failed |= replay_dir(argv[i]) != 0;
        } else {
            failed |= replay_file(argv[i]) != 0;
        }
    }
    if (replayed == 0) {
        fprintf(stderr, "fuzz_replay: no input replayed (an empty corpus tests nothing)\n");
        return 1;
    }
    printf("fuzz_replay: %lu inputs replayed%s\n", replayed, failed ? ", some unreadable" : "");
    return failed;
}
