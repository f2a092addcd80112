/* SPDX-License-Identifier: MIT */
/*
 * nwb_namesym.c - the nwb-namesym tool: hash names, build, dump, merge and
 * check .namesym sidecars, and decode name tokens in text offline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "nwb/namesym.h"

static void usage(FILE *f)
{
    fputs("usage: nwb-namesym hash NAME...\n"
          "       nwb-namesym build --out FILE [--build-id ID] [NAME...]   (names from stdin if "
          "none)\n"
          "       nwb-namesym dump FILE\n"
          "       nwb-namesym merge --out FILE IN...\n"
          "       nwb-namesym check FILE\n"
          "       nwb-namesym decode --sidecar FILE [--sidecar FILE...] < text\n",
          f);
}

/* The largest file that can be a valid sidecar (nwb_namesym_table_add_file's bound). */
#define SIDECAR_FILE_MAX                                                                           \
    ((uint64_t)NWB_NAMESYM_HEADER_SIZE +                                                           \
     (uint64_t)NWB_NAMESYM_MAX_ENTRIES * (NWB_NAMESYM_ENTRY_SIZE + NWB_NAMESYM_MAX_STRING))

static int open_view(const char *path, nwb_namesym_view_t *v, uint8_t **buf)
{
    size_t len = 0, bad = 0;
    const char *why = "";
    int rc;

    rc = nwb_file_read(path, SIDECAR_FILE_MAX < SIZE_MAX ? (size_t)SIDECAR_FILE_MAX : SIZE_MAX, buf,
                       &len);
    if (rc != 0) {
        char msg[128];

        fprintf(stderr, "nwb-namesym: %s: %s\n", path,
                rc == NWB_ETOOBIG ? "larger than any valid sidecar"
                                  : nwb_strerror_r(rc, msg, sizeof(msg)));
        return -1;
    }
    rc = nwb_namesym_view_open(v, *buf, len, &why, &bad);
    if (rc != 0) {
        fprintf(stderr, "nwb-namesym: %s: invalid: %s (%s, at byte %zu)\n", path, why,
                nwb_err_name(rc), bad);
        nwb_free(*buf);
        *buf = NULL;
        return -1;
    }
    return 0;
}

static int cmd_hash(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        char tok[NWB_NAME_TOKEN_SIZE];

        nwb_name_token(nwb_name_hash(argv[i], strlen(argv[i])), tok);
        printf("%s %s\n", tok, argv[i]);
    }
    return 0;
}

static int cmd_build(int argc, char **argv)
{
    const char *out = NULL, *build = "";
    nwb_namesym_builder_t b;
    char err[512];
    int rc = 0, named = 0;

    nwb_namesym_builder_init(&b);
    for (int i = 0; i < argc && rc == 0; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(argv[i], "--build-id") == 0 && i + 1 < argc) {
            build = argv[++i];
        } else {
            rc = nwb_namesym_builder_add(&b, argv[i], strlen(argv[i]));
            named = 1;
        }
    }
    if (out == NULL) {
        usage(stderr);
        nwb_namesym_builder_cleanup(&b);
        return 2;
    }
    if (!named) {
        char line[NWB_NAMESYM_MAX_STRING + 2];

        while (rc == 0 && fgets(line, sizeof(line), stdin) != NULL) {
            size_t n = strcspn(line, "\r\n");

            if (n > 0) {
                rc = nwb_namesym_builder_add(&b, line, n);
            }
        }
    }
    if (rc == 0) {
        rc = nwb_namesym_builder_write(&b, build, out, err, sizeof(err));
        if (rc != 0) {
            fprintf(stderr, "nwb-namesym: %s\n", err);
        }
    } else {
        fprintf(stderr, "nwb-namesym: adding a name failed: %s\n", nwb_err_name(rc));
    }
    nwb_namesym_builder_cleanup(&b);
    return rc == 0 ? 0 : 1;
}

static int cmd_dump(int argc, char **argv)
{
    nwb_namesym_view_t v;
    uint8_t *buf;

    if (argc != 1) {
        usage(stderr);
        return 2;
    }
    if (open_view(argv[0], &v, &buf) != 0) {
        return 1;
    }
    printf("# nwb namesym v1, %u names, build %.*s\n", v.count, (int)v.build_id_len, v.build_id);
    for (uint32_t i = 0; i < v.count; i++) {
        char tok[NWB_NAME_TOKEN_SIZE];
        char clean[NWB_NAMESYM_MAX_STRING * 3 + 1];
        nwb_name_t h;
        const char *s;
        uint32_t len;
        size_t n;

        nwb_namesym_view_entry(&v, i, &h, &s, &len);
        n = nwb_utf8_sanitize(clean, s, len);
        clean[n] = '\0';
        nwb_name_token(h, tok);
        printf("%s %s\n", tok, clean);
    }
    nwb_free(buf);
    return 0;
}

static int cmd_check(int argc, char **argv)
{
    nwb_namesym_view_t v;
    uint8_t *buf;
    uint32_t mismatched = 0;

    if (argc != 1) {
        usage(stderr);
        return 2;
    }
    if (open_view(argv[0], &v, &buf) != 0) {
        return 1;
    }
    for (uint32_t i = 0; i < v.count; i++) {
        nwb_name_t h;
        const char *s;
        uint32_t len;

        nwb_namesym_view_entry(&v, i, &h, &s, &len);
        mismatched += nwb_name_hash(s, len) != h;
    }
    printf("%s: valid, %u names, build %.*s", argv[0], v.count, (int)v.build_id_len, v.build_id);
    if (mismatched > 0) {
        printf(" (note: %u hashes are not FNV-1a of their string)", mismatched);
    }
    printf("\n");
    nwb_free(buf);
    return 0;
}

struct collision_report {
    unsigned count;
};

static void report_collision(void *ctx, nwb_name_t h, const char *kept, const char *ks,
                             const char *dropped, const char *ds)
{
    struct collision_report *r = ctx;
    char tok[NWB_NAME_TOKEN_SIZE];

    nwb_name_token(h, tok);
    fprintf(stderr, "nwb-namesym: collision %s: \"%s\" (%s) kept, \"%s\" (%s) dropped\n", tok, kept,
            ks, dropped, ds);
    r->count++;
}

static int cmd_merge(int argc, char **argv)
{
    const char *out = NULL;
    nwb_namesym_builder_t b;
    nwb_namesym_table_t *seen;
    struct collision_report rep = {0};
    char err[512];
    int rc = 0, inputs = 0;

    if (nwb_namesym_table_create(&seen) != 0) {
        return 1;
    }
    nwb_namesym_builder_init(&b);
    for (int i = 0; i < argc && rc == 0; i++) {
        nwb_namesym_view_t v;
        uint8_t *buf;

        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            out = argv[++i];
            continue;
        }
        inputs++;
        if (open_view(argv[i], &v, &buf) != 0) {
            rc = 1;
            break;
        }
        for (uint32_t k = 0; k < v.count && rc == 0; k++) {
            nwb_name_t h;
            const char *s;
            uint32_t len;

            nwb_namesym_view_entry(&v, k, &h, &s, &len);
            if (nwb_namesym_table_find(seen, h, NULL) == NULL) {
                rc = nwb_namesym_builder_add(&b, s, len);
            }
        }
        if (rc == 0 && nwb_namesym_table_add(seen, &v, argv[i], report_collision, &rep) < 0) {
            rc = 1;
        }
        nwb_free(buf);
    }
    if (rc == 0 && (out == NULL || inputs == 0)) {
        usage(stderr);
        rc = 2;
    }
    if (rc == 0) {
        rc = nwb_namesym_builder_write(&b, "merged", out, err, sizeof(err));
        if (rc != 0) {
            fprintf(stderr, "nwb-namesym: %s\n", err);
            rc = 1;
        } else {
            printf("%s: %zu names from %d files, %u collisions\n", out,
                   nwb_namesym_table_count(seen), inputs, rep.count);
        }
    }
    nwb_namesym_builder_cleanup(&b);
    nwb_namesym_table_destroy(seen);
    return rc;
}

static int cmd_decode(int argc, char **argv)
{
    nwb_namesym_table_t *t;
    struct collision_report rep = {0};
    char *line = NULL, *out = NULL;
    size_t cap = 0, out_cap = 0;
    int rc = 0;

    if (nwb_namesym_table_create(&t) != 0) {
        return 1;
    }
    for (int i = 0; i < argc; i++) {
        char err[512];

        if (strcmp(argv[i], "--sidecar") == 0 && i + 1 < argc) {
            if (nwb_namesym_table_add_file(t, argv[++i], report_collision, &rep, err, sizeof(err)) <
                0) {
                fprintf(stderr, "nwb-namesym: %s\n", err);
                rc = 1;
            }
        } else {
            usage(stderr);
            rc = 2;
        }
    }
    if (rc != 0) {
        nwb_namesym_table_destroy(t);
        return rc;
    }
    /* Tokens never span lines, so decode line by line. */
    for (;;) {
        const ssize_t n = getline(&line, &cap, stdin);
        size_t w;

        if (n <= 0) {
            break;
        }
        if (nwb_namesym_decode_max(t, (size_t)n) > out_cap) {
            char *nb = nwb_realloc(out, nwb_namesym_decode_max(t, (size_t)n));

            if (nb == NULL) {
                rc = 1;
                break;
            }
            out = nb;
            out_cap = nwb_namesym_decode_max(t, (size_t)n);
        }
        w = nwb_namesym_decode(t, line, (size_t)n, out, NULL, NULL);
        fwrite(out, 1, w, stdout);
    }
    free(line);
    nwb_free(out);
    nwb_namesym_table_destroy(t);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "hash") == 0) {
        return cmd_hash(argc - 2, argv + 2);
    }
    if (strcmp(argv[1], "build") == 0) {
        return cmd_build(argc - 2, argv + 2);
    }
    if (strcmp(argv[1], "dump") == 0) {
        return cmd_dump(argc - 2, argv + 2);
    }
    if (strcmp(argv[1], "merge") == 0) {
        return cmd_merge(argc - 2, argv + 2);
    }
    if (strcmp(argv[1], "check") == 0) {
        return cmd_check(argc - 2, argv + 2);
    }
    if (strcmp(argv[1], "decode") == 0) {
        return cmd_decode(argc - 2, argv + 2);
    }
    fprintf(stderr, "nwb-namesym: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
