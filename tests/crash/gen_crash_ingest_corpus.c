/* SPDX-License-Identifier: MIT */
/*
 * gen_crash_ingest_corpus.c - writes the seed corpus of the crash-ingest fuzz
 * target (tests/fuzz/corpus/crash_ingest/) and checks every seed against the
 * extractor with the fuzz target's caps: valid_* must be accepted, bad_* must
 * be refused. Run by CTest into the build tree; run by hand into the source
 * tree after a format change:  gen_crash_ingest_corpus tests/fuzz/corpus/crash_ingest
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/error.h"

#include "../fuzz/fuzz_crash_ingest_caps.h"
#include "crash_ingest_int.h"
#include "crash_test_archive.h"

static const struct nwb_crash_caps fuzz_caps = NWB_FUZZ_CRASH_CAPS;

static const char manifest[] = "nwb-crash-manifest 1\nkind=signal\nprogram=seed\nrun=0\n"
                               "signal=SIGSEGV\n";

#define M                                                                                          \
    {                                                                                              \
        "manifest.txt", TA_FILE, manifest, sizeof(manifest) - 1, 0, 0, NULL                        \
    }
#define F(path, text)                                                                              \
    {                                                                                              \
        path, TA_FILE, text, sizeof(text) - 1, 0, 0, NULL                                          \
    }

static int failures;
static int stage_root = -1; /* a temporary folder the seeds are extracted under */

static void seed(const char *dir, const char *name, const void *data, size_t len)
{
    char path[4096], reason[1024];
    struct nwb__crash_extract_info info;
    int dfd, rc;
    const int want_ok = strncmp(name, "valid_", 6) == 0;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (ta_write_file(path, data, len) != 0) {
        fprintf(stderr, "gen: cannot write %s\n", path);
        failures++;
        return;
    }
    (void)nwb__crash_rmtree_at(stage_root, "s");
    if (mkdirat(stage_root, "s", 0700) != 0 ||
        (dfd = openat(stage_root, "s", O_RDONLY | O_DIRECTORY)) < 0) {
        fprintf(stderr, "gen: cannot make a staging folder\n");
        failures++;
        return;
    }
    rc = nwb__crash_extract(len > 0 ? data : "", -1, len, dfd, &fuzz_caps, NULL, &info, reason,
                            sizeof(reason));
    close(dfd);
    (void)nwb__crash_rmtree_at(stage_root, "s");
    if ((rc == 0) != want_ok || (rc != 0 && rc != NWB_EARCHIVE)) {
        fprintf(stderr, "gen: %s: extract returned %d (%s)\n", name, rc, reason);
        failures++;
    } else {
        printf("%-28s %6zu bytes  %s\n", name, len, rc == 0 ? "accepted" : reason);
    }
}

static void build(const char *dir, const char *name, const char *format, const struct ta_entry *e,
                  size_t n)
{
    size_t len;
    void *a = ta_build(format, e, n, &len);

    if (a == NULL) {
        fprintf(stderr, "gen: cannot build %s\n", name);
        failures++;
        return;
    }
    seed(dir, name, a, len);
    free(a);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "corpus_crash_ingest";
    const struct ta_entry pkg[] = {M, F("crash.txt", "signal=SIGSEGV\n#0 0x1 prog+0x1\n"),
                                   F("sub/log_tail.txt", "1 INFO 1 a.c:1: hello\n")};
    const struct ta_entry traversal[] = {M, F("../escape", "x")};
    const struct ta_entry absolute[] = {M, F("/tmp/abs", "x")};
    const struct ta_entry symlink[] = {M, {"l", TA_SYMLINK, NULL, 0, 0, 0, "/etc"}};
    const struct ta_entry hardlink[] = {M, {"h", TA_HARDLINK, NULL, 0, 0, 0, "/etc/passwd"}};
    const struct ta_entry device[] = {M, {"d", TA_CHARDEV, NULL, 0, 0, 0, NULL}};
    const struct ta_entry fifo[] = {M, {"p", TA_FIFO, NULL, 0, 0, 0, NULL}};
    const struct ta_entry bomb[] = {M, {"z", TA_FILE, NULL, 0, 8u << 20, 0, NULL}};
    const struct ta_entry badname[] = {M, F("n\xff\xfe", "x")};
    const struct ta_entry longname[] = {
        M, F("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
             "x")};
    const struct ta_entry deep[] = {M, F("a/b/c/d/e/f/g", "x")};
    const struct ta_entry dup[] = {M, M};
    const struct ta_entry none[] = {F("crash.txt", "x")};
    struct ta_entry many[70];
    char names[70][8];
    size_t len;
    unsigned char *a;
    unsigned char noise[1024];

    char stage[256];
    const char *tmp = getenv("TMPDIR");

    snprintf(stage, sizeof(stage), "%s/nwb-gen-crash-XXXXXX", tmp != NULL ? tmp : "/tmp");
    if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || mkdtemp(stage) == NULL ||
        (stage_root = open(stage, O_RDONLY | O_DIRECTORY)) < 0) {
        fprintf(stderr, "gen: cannot create %s or %s: %s\n", dir, stage, strerror(errno));
        return 1;
    }
    build(dir, "valid_tar", "tar", pkg, 3);
    build(dir, "valid_ustar", "ustar", pkg, 3);
    build(dir, "valid_tar_gz", "tar.gz", pkg, 3);
    build(dir, "valid_tar_zst", "tar.zst", pkg, 3);
    build(dir, "valid_zip", "zip", pkg, 3);
    build(dir, "bad_traversal", "tar", traversal, 2);
    build(dir, "bad_absolute", "tar.zst", absolute, 2);
    build(dir, "bad_symlink", "tar", symlink, 2);
    build(dir, "bad_hardlink", "tar", hardlink, 2);
    build(dir, "bad_device", "tar", device, 2);
    build(dir, "bad_fifo", "tar", fifo, 2);
    build(dir, "bad_bomb", "tar.zst", bomb, 2);
    build(dir, "bad_non_utf8_name", "zip", badname, 2);
    build(dir, "bad_long_name", "tar", longname, 2);
    build(dir, "bad_deep", "tar", deep, 2);
    build(dir, "bad_duplicate", "tar", dup, 2);
    build(dir, "bad_no_manifest", "tar.gz", none, 1);
    build(dir, "bad_nested_compression", "gz.tar.zst", pkg, 3);
    many[0] = (struct ta_entry)M;
    for (int i = 1; i < 70; i++) {
        snprintf(names[i], sizeof(names[i]), "f%02d", i);
        many[i] = (struct ta_entry){names[i], TA_FILE, "x", 1, 0, 0, NULL};
    }
    build(dir, "bad_many_entries", "tar.zst", many, 70);
    a = ta_build("tar.zst", pkg, 3, &len);
    if (a != NULL) {
        seed(dir, "bad_truncated", a, len / 2);
        free(a);
    }
    for (size_t i = 0; i < sizeof(noise); i++) {
        noise[i] = (unsigned char)((i * 2654435761u) >> 11);
    }
    seed(dir, "bad_random", noise, sizeof(noise));
    seed(dir, "bad_empty", "", 0);
    close(stage_root);
    rmdir(stage);
    return failures == 0 ? 0 : 1;
}
