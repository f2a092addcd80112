/* SPDX-License-Identifier: MIT */
/*
 * crash_proc_modules.c - the capture helper's module list of another process: the files
 * holding code in /proc/PID/maps, each file's adjacent mappings as one module (lowest start,
 * highest end, the file offset at the start), with its GNU build id read from the very file
 * that is mapped (/proc/PID/map_files/LO-HI, else the path; [vdso] from the process's
 * memory). Bounded: NWB_CRASH_CAPTURE_MODULES_MAX modules, paths of
 * NWB_CRASH_CAPTURE_PATH_MAX bytes, a few KiB read from each file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/crash_capture.h"

#include "../capture_int.h"

#define MAPS_LINE_MAX 8192u /* longer lines (paths past PATH_MAX) are skipped */

struct mem_ctx {
    int pid;
    uint64_t base;
};

static long file_read(void *ctx, uint64_t where, void *buf, size_t n)
{
    const ssize_t r = pread(*(const int *)ctx, buf, n, (off_t)where);

    return r < 0 ? -1 : (long)r;
}

static long mem_read(void *ctx, uint64_t where, void *buf, size_t n)
{
    const struct mem_ctx *m = ctx;
    struct iovec local = {.iov_base = buf, .iov_len = n};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)(m->base + where), .iov_len = n};

    return (long)process_vm_readv(m->pid, &local, 1, &remote, 1, 0);
}

static void read_build_id(int pid, struct nwb__crash_proc_module *m, uint64_t first_hi)
{
    char p[96];
    int fd;

    if (m->path[0] != '/') {
        struct mem_ctx mc = {.pid = pid, .base = m->start};

        if (m->file_offset == 0) {
            m->build_id_len =
                nwb__crash_elf_build_id(mem_read, &mc, 1, m->build_id, sizeof(m->build_id));
        }
        return;
    }
    snprintf(p, sizeof(p), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, m->start, first_hi);
    fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    }
    if (fd < 0) {
        return;
    }
    m->build_id_len = nwb__crash_elf_build_id(file_read, &fd, 0, m->build_id, sizeof(m->build_id));
    close(fd);
}

void nwb__crash_proc_modules_free(struct nwb__crash_proc_module *m, size_t n)
{
    if (m == NULL) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        nwb_free(m[i].path);
    }
    nwb_free(m);
}

/* One maps line: "lo-hi perms offset dev inode   path". 0 when it parsed. */
static int parse_maps_line(const char *line, uint64_t *lo, uint64_t *hi, char perms[5],
                           uint64_t *off, const char **path)
{
    int consumed = 0;

    if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %*s %*s %n", lo, hi, perms, off,
               &consumed) != 4 ||
        consumed == 0) {
        return -1;
    }
    *path = line + consumed;
    return 0;
}

long nwb__crash_proc_modules(int pid, struct nwb__crash_proc_module **out)
{
    struct nwb__crash_proc_module *mods;
    uint64_t first_hi[NWB_CRASH_CAPTURE_MODULES_MAX];
    static unsigned char has_code[NWB_CRASH_CAPTURE_MODULES_MAX];
    int open_group = 0;
    size_t n = 0;
    char path[64];
    char *line;
    FILE *f;

    *out = NULL;
    snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    f = fopen(path, "re");
    if (f == NULL) {
        return -errno;
    }
    mods = nwb_calloc(NWB_CRASH_CAPTURE_MODULES_MAX, sizeof(*mods));
    line = nwb_malloc(MAPS_LINE_MAX);
    if (mods == NULL || line == NULL) {
        nwb_free(mods);
        nwb_free(line);
        fclose(f);
        return -ENOMEM;
    }
    while (fgets(line, (int)MAPS_LINE_MAX, f) != NULL) {
        size_t len = strlen(line);
        uint64_t lo, hi, off;
        char perms[5] = {0};
        const char *p;

        if (len == 0 || line[len - 1] != '\n') {
            /* Longer than the line bound: skip the rest of it, and end the group. */
            int c;

            while (len > 0 && (c = fgetc(f)) != EOF && c != '\n') {
            }
            open_group = 0;
            continue;
        }
        line[--len] = '\0';
        if (parse_maps_line(line, &lo, &hi, perms, &off, &p) != 0 || *p == '\0') {
            open_group = 0; /* anonymous memory ends a file's run of mappings */
            continue;
        }
        len = strlen(p);
        if (open_group && mods[n - 1].path_len == len && memcmp(mods[n - 1].path, p, len) == 0 &&
            off != 0) {
            mods[n - 1].end = hi;
        } else {
            if (n > 0 && !has_code[n - 1]) {
                nwb_free(mods[--n].path); /* the previous file held no code */
                memset(&mods[n], 0, sizeof(mods[n]));
            }
            open_group = 0;
            if (n == NWB_CRASH_CAPTURE_MODULES_MAX || len > NWB_CRASH_CAPTURE_PATH_MAX) {
                continue;
            }
            mods[n].path = nwb_malloc(len + 1);
            if (mods[n].path == NULL) {
                continue;
            }
            memcpy(mods[n].path, p, len + 1);
            mods[n].path_len = len;
            mods[n].start = lo;
            mods[n].end = hi;
            mods[n].file_offset = off;
            first_hi[n] = hi;
            has_code[n] = 0;
            n++;
            open_group = 1;
        }
        if (perms[2] == 'x' && open_group) {
            has_code[n - 1] = 1;
        }
    }
    if (n > 0 && !has_code[n - 1]) {
        nwb_free(mods[--n].path);
        mods[n].path = NULL;
    }
    nwb_free(line);
    fclose(f);
    for (size_t i = 0; i < n; i++) {
        read_build_id(pid, &mods[i], first_hi[i]);
    }
    *out = mods;
    return (long)n;
}
