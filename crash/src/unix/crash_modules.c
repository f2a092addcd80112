/* SPDX-License-Identifier: MIT */
/*
 * crash_modules.c - reads /proc/self/maps inside the signal handler: copies
 * it into the package and keeps the executable mappings in static tables, so
 * each backtrace frame can be written as module + ELF virtual address (what
 * addr2line -e MODULE expects). No allocation, no stdio.
 */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "../capture_int.h"

#define PATH_POOL_BYTES (96u * 1024u)
#define LINE_MAX_BYTES  4096u

struct exec_range {
    uintptr_t lo, hi;   /* the executable mapping */
    uintptr_t base;     /* start of the same file's offset-0 mapping (its ELF header) */
    uintptr_t base_len; /* length of that mapping */
    uint32_t path_off;  /* into path_pool */
    int base_readable;
};

/* One file's adjacent mappings (a module of threads.nwbc), kept when one of them is executable. */
struct file_span {
    uintptr_t lo, hi;   /* lowest mapped address, one past the highest */
    uintptr_t file_off; /* file offset mapped at lo */
    uint32_t path_off;  /* into path_pool */
    int has_exec;
};

static struct exec_range ranges[NWB_CRASH_MODULES_MAX];
static unsigned range_count;
static struct file_span spans[NWB_CRASH_MODULES_MAX];
static unsigned span_count;
static char path_pool[PATH_POOL_BYTES];
static size_t pool_used;

/* Per-file state while scanning (mappings of one file are adjacent). */
static uint32_t cur_path_off;
static size_t cur_path_len;
static uintptr_t cur_base, cur_base_len;
static int cur_base_readable, cur_valid;

static int parse_hex(const char **pp, const char *end, uintptr_t *out)
{
    const char *p = *pp;
    uintptr_t v = 0;
    int any = 0;

    while (p < end) {
        const char c = *p;
        unsigned d;

        if (c >= '0' && c <= '9') {
            d = (unsigned)(c - '0');
        } else if (c >= 'a' && c <= 'f') {
            d = (unsigned)(c - 'a' + 10);
        } else if (c >= 'A' && c <= 'F') {
            d = (unsigned)(c - 'A' + 10);
        } else {
            break;
        }
        v = (v << 4) | d;
        any = 1;
        p++;
    }
    *pp = p;
    *out = v;
    return any ? 0 : -1;
}

static const char *skip_field(const char *p, const char *end)
{
    while (p < end && *p != ' ') {
        p++;
    }
    while (p < end && *p == ' ') {
        p++;
    }
    return p;
}

static uint32_t pool_add(const char *path, size_t len)
{
    uint32_t off;

    if (cur_valid && cur_path_len == len && memcmp(path_pool + cur_path_off, path, len) == 0) {
        return cur_path_off;
    }
    if (pool_used + len + 1 > sizeof(path_pool)) {
        return UINT32_MAX;
    }
    off = (uint32_t)pool_used;
    memcpy(path_pool + pool_used, path, len);
    path_pool[pool_used + len] = '\0';
    pool_used += len + 1;
    return off;
}

static void parse_line(const char *line, size_t len)
{
    const char *p = line, *end = line + len;
    uintptr_t lo, hi, off;
    const char *perms, *path;
    size_t path_len;
    int same_file;

    if (parse_hex(&p, end, &lo) != 0 || p >= end || *p != '-') {
        return;
    }
    p++;
    if (parse_hex(&p, end, &hi) != 0) {
        return;
    }
    p = skip_field(p, end);
    perms = p;
    if (end - perms < 4) {
        return;
    }
    p = skip_field(p, end);
    if (parse_hex(&p, end, &off) != 0) {
        return;
    }
    while (p < end && *p == ' ') {
        p++;
    }
    p = skip_field(p, end); /* dev */
    p = skip_field(p, end); /* inode */
    path = p;
    path_len = (size_t)(end - p);
    if (path_len == 0) {
        cur_valid = 0;
        return;
    }
    same_file = cur_valid && cur_path_len == path_len &&
                memcmp(path_pool + cur_path_off, path, path_len) == 0;
    if (!same_file || off == 0) {
        const uint32_t po = pool_add(path, path_len);

        if (po == UINT32_MAX) {
            cur_valid = 0;
            return;
        }
        cur_path_off = po;
        cur_path_len = path_len;
        cur_valid = 1;
        cur_base = off == 0 ? lo : 0;
        cur_base_len = off == 0 ? hi - lo : 0;
        cur_base_readable = off == 0 && perms[0] == 'r';
        /* A new file starts a new span; the previous one is dropped unless it held code. */
        if (span_count > 0 && !spans[span_count - 1].has_exec) {
            span_count--;
        }
        if (span_count < NWB_CRASH_MODULES_MAX) {
            struct file_span *sp = &spans[span_count++];

            sp->lo = lo;
            sp->hi = hi;
            sp->file_off = off;
            sp->path_off = po;
            sp->has_exec = 0;
        }
    } else if (span_count > 0) {
        spans[span_count - 1].hi = hi;
    }
    if (perms[2] == 'x' && span_count > 0) {
        spans[span_count - 1].has_exec = 1;
    }
    if (perms[2] == 'x' && range_count < NWB_CRASH_MODULES_MAX) {
        struct exec_range *r = &ranges[range_count++];

        r->lo = lo;
        r->hi = hi;
        r->base = cur_base != 0 ? cur_base : lo - off;
        r->base_len = cur_base_len;
        r->base_readable = cur_base_readable;
        r->path_off = cur_path_off;
    }
}

void nwb__crash_modules_load(int maps_fd)
{
    static char line[LINE_MAX_BYTES];
    static char buf[4096];
    size_t line_len = 0;
    size_t copied = 0;
    int cut = 0;
    const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

    range_count = 0;
    span_count = 0;
    pool_used = 0;
    cur_valid = 0;
    if (fd < 0) {
        return;
    }
    for (;;) {
        const ssize_t n = read(fd, buf, sizeof(buf));

        if (n <= 0) {
            break;
        }
        if (maps_fd >= 0 && !cut) {
            size_t k = (size_t)n;

            if (copied + k > NWB_CRASH_MAPS_MAX) {
                k = NWB_CRASH_MAPS_MAX - copied;
                cut = 1;
            }
            if (nwb_write_all(maps_fd, buf, k) != 0) {
                cut = 1;
            }
            copied += k;
        }
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n') {
                parse_line(line, line_len);
                line_len = 0;
            } else if (line_len < sizeof(line)) {
                line[line_len++] = buf[i];
            }
        }
    }
    if (line_len > 0) {
        parse_line(line, line_len);
    }
    if (span_count > 0 && !spans[span_count - 1].has_exec) {
        span_count--;
    }
    if (cut && maps_fd >= 0) {
        (void)nwb_write_all(maps_fd, "[truncated]\n", 12);
    }
    close(fd);
}

/* Load bias of the ELF image whose header is mapped at @p base: the first PT_LOAD's page. */
static uintptr_t elf_bias(const struct exec_range *r)
{
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)r->base;
    uintptr_t first_load = UINTPTR_MAX;

    if (!r->base_readable || r->base_len < sizeof(ElfW(Ehdr)) ||
        memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_phentsize != sizeof(ElfW(Phdr)) ||
        eh->e_phoff > r->base_len ||
        (uintptr_t)eh->e_phnum * sizeof(ElfW(Phdr)) > r->base_len - eh->e_phoff) {
        return r->base;
    }
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(r->base + eh->e_phoff + i * sizeof(*ph));

        if (ph->p_type == PT_LOAD) {
            const uintptr_t align = ph->p_align > 1 ? (uintptr_t)ph->p_align : 4096u;

            first_load = (uintptr_t)ph->p_vaddr & ~(align - 1);
            break;
        }
    }
    if (first_load == UINTPTR_MAX) {
        return r->base;
    }
    if (first_load > r->base) {
        return 0; /* not relocated (should not happen): report absolute addresses */
    }
    return r->base - first_load;
}

int nwb__crash_module_find(uintptr_t pc, const char **path, uintptr_t *rel)
{
    for (unsigned i = 0; i < range_count; i++) {
        const struct exec_range *r = &ranges[i];

        if (pc >= r->lo && pc < r->hi) {
            *path = path_pool + r->path_off;
            *rel = pc - elf_bias(r);
            return 0;
        }
    }
    return -1;
}

unsigned nwb__crash_module_file_count(void)
{
    return span_count;
}

int nwb__crash_module_file(unsigned i, uint64_t *lo, uint64_t *hi, uint64_t *file_off,
                           const char **path)
{
    if (i >= span_count) {
        return -1;
    }
    *lo = spans[i].lo;
    *hi = spans[i].hi;
    *file_off = spans[i].file_off;
    *path = path_pool + spans[i].path_off;
    return 0;
}
