/* SPDX-License-Identifier: MIT */
/*
 * symbolize_lookup.c - a module's files by GNU build id under the symbols folder, in the
 * layout GDB and debuginfod use (.build-id/ab/cdef... and .build-id/ab/cdef....debug), which
 * POST /v1/symbols writes. A file is used only when it is a regular ELF file whose own build
 * id note matches: a stale or hostile file is refused with a reason, never trusted by name.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

#include "symbolize.h"

void nwb_sym_hex(const uint8_t *id, size_t len, char *out)
{
    static const char hex[] = "0123456789abcdef";

    for (size_t i = 0; i < len; i++) {
        out[2 * i] = hex[id[i] >> 4];
        out[2 * i + 1] = hex[id[i] & 15];
    }
    out[2 * len] = '\0';
}

int nwb_sym_check_fd(int fd, const char *label, const uint8_t *id, size_t len, char *why,
                     size_t why_size)
{
    struct stat sb;
    const void *note = NULL;
    ssize_t nlen;
    Elf *elf;

    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(why, why_size, "%s: not a regular file", label);
        return -1;
    }
    elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (elf == NULL || elf_kind(elf) != ELF_K_ELF) {
        snprintf(why, why_size, "%s: not an ELF file", label);
        elf_end(elf);
        return -1;
    }
    nlen = dwelf_elf_gnu_build_id(elf, &note);
    if (nlen <= 0) {
        snprintf(why, why_size, "%s: no GNU build id note", label);
    } else if ((size_t)nlen != len || memcmp(note, id, len) != 0) {
        snprintf(why, why_size, "%s: build id mismatch", label);
        nlen = -1;
    }
    elf_end(elf);
    return nlen > 0 ? 0 : -1;
}

/* Open @p path when it is a regular ELF file with build id @p id; else -1 and a reason. */
static int open_checked(const char *path, const uint8_t *id, size_t len, char *why, size_t why_size)
{
    /* Links are followed (GDB's layout links the executable); only a regular file is read,
     * opened non-blocking so a FIFO planted there cannot hang the symboliser. */
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

    if (fd < 0) {
        if (errno != ENOENT) {
            snprintf(why, why_size, "%s: %s", path, strerror(errno));
        }
        return -1;
    }
    if (nwb_sym_check_fd(fd, path, id, len, why, why_size) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int nwb_sym_lookup(const char *symbols_dir, const uint8_t *id, size_t len, int *exe_fd,
                   int *debug_fd, char *why, size_t why_size)
{
    char hex[NWB_SYM_BUILD_ID_HEX + 1];
    char path[NWB_SYM_PATH_MAX];
    char why_exe[NWB_SYM_PATH_MAX + 64] = "", why_debug[NWB_SYM_PATH_MAX + 64] = "";
    int n;

    *exe_fd = -1;
    *debug_fd = -1;
    if (len < 2 || len > NWB_CRASH_CAPTURE_BUILD_ID_MAX) {
        snprintf(why, why_size, "no build id");
        return -ENOENT;
    }
    nwb_sym_hex(id, len, hex);
    n = snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s", symbols_dir, hex, hex + 2);
    if (n < 0 || (size_t)n + sizeof(".debug") > sizeof(path)) {
        snprintf(why, why_size, "symbols folder path too long");
        return -ENOENT;
    }
    *exe_fd = open_checked(path, id, len, why_exe, sizeof(why_exe));
    memcpy(path + n, ".debug", sizeof(".debug"));
    *debug_fd = open_checked(path, id, len, why_debug, sizeof(why_debug));
    if (*exe_fd >= 0 || *debug_fd >= 0) {
        return 0;
    }
    if (why_debug[0] != '\0' || why_exe[0] != '\0') {
        /* The folder is the operator's; a reason names the file without it. */
        const char *w = why_debug[0] != '\0' ? why_debug : why_exe;
        const char *rel = strstr(w, "/.build-id/");

        snprintf(why, why_size, "symbols refused (%s), build id %s", rel != NULL ? rel + 1 : w,
                 hex);
    } else {
        snprintf(why, why_size, "no symbols: build id %s", hex);
    }
    return -ENOENT;
}
