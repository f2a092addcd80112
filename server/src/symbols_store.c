/* SPDX-License-Identifier: MIT */
/*
 * symbols_store.c - the symbol store's disk side (symbols_int.h): build-id paths, the start-up
 * sweep of temporary files, checking an upload and renaming it into place (or keeping the
 * identical file already there), and looking a build id up. Everything but the sweep runs on
 * the thread pool.
 *
 * Naming (docs/operations.md, "Symbol store"): a file with a .debug_info section (a debug
 * file from objcopy --only-keep-debug, or an unstripped binary) is
 * .build-id/<2 hex>/<rest>.debug; one without (a stripped executable, still useful for its
 * CFI) is .build-id/<2 hex>/<rest>. Both may exist for one build id; a lookup prefers .debug.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/file_io.h"

#include "server_int.h"
#include "symbols_int.h"

#define COMPARE_CHUNK (64u * 1024u)

int nwb__symbols_id_valid(const char *hex, size_t len)
{
    if (len < 2 * NWB__ELF_BUILD_ID_MIN || len > NWB__ELF_BUILD_ID_HEX_MAX || len % 2 != 0) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f'))) {
            return 0;
        }
    }
    return 1;
}

int nwb__symbols_path(const char *dir, const char *hex, int debug, char *out, size_t cap)
{
    const int n =
        snprintf(out, cap, "%s/.build-id/%.2s/%s%s", dir, hex, hex + 2, debug ? ".debug" : "");

    return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

int nwb__symbols_dir_prepare(const char *dir, char *errbuf, size_t errlen)
{
    const size_t plen = sizeof(NWB__SYMBOLS_TMP_PREFIX) - 1;
    const size_t slen = sizeof(NWB__SYMBOLS_TMP_SUFFIX) - 1;
    char ebuf[48];
    DIR *d;
    int err;

    if (strlen(dir) > NWB__SYMBOLS_DIR_MAX) {
        snprintf(errbuf, errlen, "--symbols-dir is longer than %u bytes", NWB__SYMBOLS_DIR_MAX);
        return -ENAMETOOLONG;
    }
    err = nwb_mkdir_p(dir, 0755);
    if (err != 0) {
        snprintf(errbuf, errlen, "cannot make the symbol store %s: %s", dir,
                 nwb__err_label(err, ebuf, sizeof(ebuf)));
        return err;
    }
    d = opendir(dir);
    if (d == NULL) {
        err = -errno;
        snprintf(errbuf, errlen, "cannot read the symbol store %s: %s", dir,
                 nwb__err_label(err, ebuf, sizeof(ebuf)));
        return err;
    }
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        const size_t n = strlen(e->d_name);

        /* An upload the previous server process never finished: never acknowledged. */
        if (n > plen + slen && memcmp(e->d_name, NWB__SYMBOLS_TMP_PREFIX, plen) == 0 &&
            memcmp(e->d_name + n - slen, NWB__SYMBOLS_TMP_SUFFIX, slen) == 0) {
            (void)unlinkat(dirfd(d), e->d_name, 0);
        }
    }
    closedir(d);
    return 0;
}

/* 1 when the regular file @p path holds exactly the @p size bytes of @p fd, 0 when it differs
 * or is missing, or a negative errno. */
static int same_content(const char *path, int fd, uint64_t size)
{
    char *a, *b;
    struct stat st;
    uint64_t off = 0;
    int other, result = 1;

    other = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (other < 0) {
        return errno == ENOENT ? 0 : -errno;
    }
    if (fstat(other, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size) {
        close(other);
        return 0;
    }
    a = nwb_malloc(COMPARE_CHUNK);
    b = nwb_malloc(COMPARE_CHUNK);
    if (a == NULL || b == NULL) {
        result = -ENOMEM;
    }
    while (result == 1 && off < size) {
        const size_t want = size - off < COMPARE_CHUNK ? (size_t)(size - off) : COMPARE_CHUNK;

        result = nwb__elf_pread_exact(fd, a, want, off);
        if (result == 0) {
            result = nwb__elf_pread_exact(other, b, want, off);
        }
        if (result == 0) {
            result = memcmp(a, b, want) == 0 ? 1 : 0;
        } else if (result == NWB_ETRUNCATED) {
            result = 0;
        }
        off += want;
    }
    nwb_free(a);
    nwb_free(b);
    close(other);
    return result;
}

static void fail_500(struct nwb__symbols_result *res, const char *what, int err)
{
    char ebuf[48];

    res->status = 500;
    snprintf(res->error, sizeof(res->error), "%s: %s", what,
             nwb__err_label(err, ebuf, sizeof(ebuf)));
}

/* fsync the folder holding a renamed file, so the name survives a power loss too. */
static void sync_dir(const char *dir)
{
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

void nwb__symbols_store(const char *dir, const char *tmp_path, int fd, uint64_t size,
                        const char *want_id, struct nwb__symbols_result *res)
{
    char sub[NWB__SYMBOLS_PATH_MAX], dest[NWB__SYMBOLS_PATH_MAX];
    const char *hex;
    int err;

    memset(res, 0, sizeof(*res));
    res->size = size;
    if (fsync(fd) != 0) {
        fail_500(res, "cannot sync the upload", -errno);
        goto remove;
    }
    err = nwb__elf_check_fd(fd, size, &res->info, &res->reason);
    if (err == NWB_EPROTO) {
        res->status = 400;
        goto remove;
    }
    if (err != 0) {
        fail_500(res, "cannot read the upload", err);
        goto remove;
    }
    hex = res->info.build_id_hex;
    if (want_id[0] != '\0' && strcmp(want_id, hex) != 0) {
        res->status = 400;
        res->reason = "build id mismatch";
        goto remove;
    }
    if (snprintf(sub, sizeof(sub), "%s/.build-id/%.2s", dir, hex) >= (int)sizeof(sub) ||
        nwb__symbols_path(dir, hex, res->info.has_debug_info, dest, sizeof(dest)) != 0) {
        fail_500(res, "cannot name the symbol file", -ENAMETOOLONG);
        goto remove;
    }
    err = nwb_mkdir_p(sub, 0755);
    if (err != 0) {
        fail_500(res, "cannot make the build-id folder", err);
        goto remove;
    }
    err = same_content(dest, fd, size);
    if (err < 0) {
        fail_500(res, "cannot compare with the stored file", err);
        goto remove;
    }
    if (err == 1) {
        res->status = 200; /* the same file again: nothing to do */
        goto remove;
    }
    if (fchmod(fd, NWB__SYMBOLS_FILE_MODE) != 0 || rename(tmp_path, dest) != 0) {
        fail_500(res, "cannot store the symbol file", -errno);
        goto remove;
    }
    sync_dir(sub);
    res->status = 201;
    res->stored = 1;
    return;

remove:
    (void)unlink(tmp_path);
}

int nwb__symbols_lookup(const char *dir, const char *hex, uint64_t *size, int *has_debug_info)
{
    char path[NWB__SYMBOLS_PATH_MAX];

    for (int debug = 1; debug >= 0; debug--) {
        struct stat st;

        if (nwb__symbols_path(dir, hex, debug, path, sizeof(path)) != 0) {
            return -ENAMETOOLONG;
        }
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            *size = (uint64_t)st.st_size;
            *has_debug_info = debug;
            return 0;
        }
        if (errno != ENOENT) {
            return -errno;
        }
    }
    return -ENOENT;
}
