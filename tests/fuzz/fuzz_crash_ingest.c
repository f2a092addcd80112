/* SPDX-License-Identifier: MIT */
/*
 * fuzz_crash_ingest.c - any byte string given to the crash ingest's
 * extraction (server/src/crash_extract.c) must be accepted as a package or
 * refused as invalid, never crash or leak, and leave behind only regular
 * files and folders inside its own staging folder, within the caps; a sentinel
 * file beside that folder keeps its content and mtime, and nothing else appears
 * beside it. What was extracted, listed as GET /v1/crashes/<id> lists a
 * package's files (crash_list.c), is strict JSON naming every file. Seeds:
 * tests/fuzz/corpus/crash_ingest/ (written by tests/crash/gen_crash_ingest_corpus.c;
 * regress-* files are fuzzer findings).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/buf.h"
#include "nwb/crash_manifest.h"
#include "nwb/error.h"
#include "nwb/json.h"

#include "../support/json_check.h"
#include "crash_ingest_int.h"
#include "fuzz_crash_ingest_caps.h"

static const struct nwb_crash_caps fuzz_caps = NWB_FUZZ_CRASH_CAPS;

/* The sentinel's bytes; it lives beside the staging folders, outside every extraction root. */
static const char sentinel_text[] = "sentinel: extraction must never touch this file\n";
#define SENTINEL_LEN (sizeof(sentinel_text) - 1)

static char root[256];
static int root_fd = -1;
static unsigned long iteration;
static struct stat sentinel_st; /* as created: size, inode and mtime must never change */

static void fatal(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_crash_ingest: %s %s\n", what, detail != NULL ? detail : "");
    abort();
}

static void cleanup(void)
{
    if (root_fd >= 0) {
        (void)unlinkat(root_fd, "sentinel", 0);
        close(root_fd);
        (void)rmdir(root);
    }
}

static void init_once(void)
{
    const char *tmp = getenv("TMPDIR");
    int fd;

    if (root_fd >= 0) {
        return;
    }
    snprintf(root, sizeof(root), "%s/nwb-fuzz-crash-ingest-XXXXXX", tmp != NULL ? tmp : "/tmp");
    if (mkdtemp(root) == NULL) {
        fatal("mkdtemp failed", strerror(errno));
    }
    root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    fd = openat(root_fd, "sentinel", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (root_fd < 0 || fd < 0 || write(fd, sentinel_text, SENTINEL_LEN) != (ssize_t)SENTINEL_LEN ||
        fstat(fd, &sentinel_st) != 0) {
        fatal("cannot set up", root);
    }
    close(fd);
    atexit(cleanup);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    init_once();
    return 0;
}

/* Only regular files and folders below @p fd; returns the bytes in its files, counts them in
 * @p *files. */
static uint64_t check_tree(int fd, unsigned depth, size_t *files)
{
    const int dup_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    const struct dirent *e;
    uint64_t sum = 0;

    if (d == NULL) {
        fatal("cannot list the staging folder", NULL);
    }
    while ((e = readdir(d)) != NULL) {
        struct stat st;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            fatal("cannot stat", e->d_name);
        }
        if (S_ISDIR(st.st_mode)) {
            const int sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

            if (sub < 0 || depth > fuzz_caps.max_path_depth) {
                fatal("folder too deep or unreadable:", e->d_name);
            }
            sum += check_tree(sub, depth + 1, files);
            close(sub);
        } else if (S_ISREG(st.st_mode)) {
            if ((uint64_t)st.st_size > fuzz_caps.max_entry_bytes) {
                fatal("file over the entry cap:", e->d_name);
            }
            sum += (uint64_t)st.st_size;
            (*files)++;
        } else {
            fatal("not a regular file or folder:", e->d_name);
        }
    }
    closedir(d);
    return sum;
}

/* The sentinel is unchanged (inode, size, mtime, bytes) and is the only entry of the root
 * besides the staging folder @p staging (NULL: none). */
static void check_outside(const char *staging)
{
    const int dup_fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    const struct dirent *e;
    char buf[SENTINEL_LEN + 1];
    struct stat st;
    ssize_t got;
    int fd;

    if (fstatat(root_fd, "sentinel", &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_ino != sentinel_st.st_ino || st.st_size != (off_t)SENTINEL_LEN ||
        st.st_mtim.tv_sec != sentinel_st.st_mtim.tv_sec ||
        st.st_mtim.tv_nsec != sentinel_st.st_mtim.tv_nsec) {
        fatal("the sentinel changed (inode, size or mtime)", NULL);
    }
    fd = openat(root_fd, "sentinel", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    got = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
    if (fd >= 0) {
        close(fd);
    }
    if (got != (ssize_t)SENTINEL_LEN || memcmp(buf, sentinel_text, SENTINEL_LEN) != 0) {
        fatal("the sentinel's content changed", NULL);
    }
    if (d == NULL) {
        fatal("cannot list the root", root);
    }
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            strcmp(e->d_name, "sentinel") != 0 &&
            (staging == NULL || strcmp(e->d_name, staging) != 0)) {
            fatal("an entry appeared outside the extraction root:", e->d_name);
        }
    }
    closedir(d);
}

/* The package's file list, as the crash view writes it, is strict JSON with @p files entries. */
static void check_files_json(int dfd, size_t files)
{
    nwb_buf_t b = NWB_BUF_INIT(NWB__CRASH_JSON_MAX);
    nwb_json_t j;
    size_t bad = 0, paths = 0;

    nwb_json_init(&j, &b, NULL);
    nwb__crash_files_json(dfd, &j);
    if (nwb_json_finish(&j) != 0) {
        fatal("the file list cannot be written", NULL);
    }
    if (nwb_test_json_check((const char *)b.data, b.len, &bad) != 0) {
        fatal("the file list is not valid JSON", NULL);
    }
    for (size_t i = 0; i + 8 <= b.len; i++) {
        paths += memcmp(b.data + i, "{\"path\":", 8) == 0;
    }
    if (paths != files) {
        fatal("the file list does not name every file", NULL);
    }
    nwb_buf_cleanup(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct nwb__crash_extract_info info;
    struct nwb__crash_manifest manifest;
    char name[32], reason[1024];
    size_t files = 0;
    int dfd, rc;

    init_once();
    snprintf(name, sizeof(name), "s%lu", iteration++);
    if (mkdirat(root_fd, name, 0700) != 0) {
        fatal("mkdir failed", strerror(errno));
    }
    dfd = openat(root_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        fatal("open failed", strerror(errno));
    }
    rc = nwb__crash_extract(size > 0 ? (const void *)data : (const void *)"", -1, size, dfd,
                            &fuzz_caps, NULL, &info, reason, sizeof(reason));
    if (rc != 0 && rc != NWB_EARCHIVE) {
        fatal("neither accepted nor invalid:", reason);
    }
    if (rc == NWB_EARCHIVE && reason[0] == '\0') {
        fatal("invalid without a reason", NULL);
    }
    check_outside(name);
    if (check_tree(dfd, 0, &files) > fuzz_caps.max_total_bytes) {
        fatal("more bytes than the total cap", NULL);
    }
    if (rc == 0 && nwb__crash_manifest_read(dfd, NWB_CRASH_MANIFEST_NAME, &manifest) != 0) {
        fatal("accepted without a manifest", NULL);
    }
    check_files_json(dfd, files);
    close(dfd);
    if (nwb__crash_rmtree_at(root_fd, name) != 0) {
        fatal("cannot remove the staging folder", name);
    }
    /* Nothing was written beside the staging folder, and removing it left nothing behind. */
    check_outside(NULL);
    return 0;
}
