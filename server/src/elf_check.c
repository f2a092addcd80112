/* SPDX-License-Identifier: MIT */
/*
 * elf_check.c - checks an uploaded symbol file (elf_check.h): the ELF header, the section
 * header table and its name table, each section's bounds, and the NT_GNU_BUILD_ID note of a
 * SHT_NOTE section or, when the sections have none, of a PT_NOTE segment. Everything is read
 * through the caller's callback in bounded pieces; every offset and length from the file is
 * checked against its size before it is used. The first problem found is the reason.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/byte_order.h"
#include "nwb/error.h"

#include "elf_check.h"

#define EHDR_SIZE  64u /* Elf64_Ehdr */
#define SHDR_SIZE  64u /* Elf64_Shdr */
#define PHDR_SIZE  56u /* Elf64_Phdr */
#define SHDR_BATCH 64u /* section headers read at once */

#define SHT_STRTAB      3u
#define SHT_NOTE        7u
#define SHT_NOBITS      8u
#define PT_NOTE         4u
#define SHN_XINDEX      0xffffu
#define NT_GNU_BUILD_ID 3u

struct elf {
    nwb__elf_read_fn read;
    void *ctx;
    uint64_t size;
    struct nwb__elf_info *out;
    const char *reason;
    int found; /* the build id is in out */
};

/* [off, off + len) lies inside the file. */
static int in_file(const struct elf *e, uint64_t off, uint64_t len)
{
    return off <= e->size && len <= e->size - off;
}

static int refuse(struct elf *e, const char *reason)
{
    e->reason = reason;
    return NWB_EPROTO;
}

static uint64_t pad_to(uint64_t v, uint64_t align)
{
    return (v + align - 1) & ~(align - 1);
}

/*
 * Look for the GNU build id among the notes of [off, off + len) (inside the file), @p align
 * being the area's alignment (8 or else 4). Only the first NWB__ELF_NOTE_SCAN_MAX bytes are
 * looked at; a note cut by that limit ends the scan, one cut by the area's end is refused.
 */
static int scan_notes(struct elf *e, uint64_t off, uint64_t len, uint64_t align)
{
    const size_t n = len < NWB__ELF_NOTE_SCAN_MAX ? (size_t)len : NWB__ELF_NOTE_SCAN_MAX;
    const int cut = len > n;
    const uint64_t a = align == 8 ? 8 : 4;
    uint8_t *buf;
    uint64_t pos = 0;
    int err;

    if (n == 0) {
        return 0;
    }
    buf = nwb_malloc(n);
    if (buf == NULL) {
        return -ENOMEM;
    }
    err = e->read(e->ctx, off, buf, n);
    while (err == 0 && pos + 12 <= n) {
        const uint32_t namesz = nwb_le32_load(buf + pos);
        const uint32_t descsz = nwb_le32_load(buf + pos + 4);
        const uint32_t type = nwb_le32_load(buf + pos + 8);
        const uint64_t name_off = pos + 12;
        const uint64_t desc_off = pad_to(name_off + namesz, a);

        if (desc_off > n || descsz > n - desc_off) {
            if (!cut) {
                err = refuse(e, "truncated note");
            }
            break;
        }
        if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(buf + name_off, "GNU", 4) == 0) {
            if (descsz < NWB__ELF_BUILD_ID_MIN || descsz > NWB__ELF_BUILD_ID_MAX) {
                err = refuse(e, "bad GNU build id length");
                break;
            }
            memcpy(e->out->build_id, buf + desc_off, descsz);
            e->out->build_id_len = descsz;
            e->found = 1;
            break;
        }
        pos = pad_to(desc_off + descsz, a);
    }
    nwb_free(buf);
    return err;
}

static int check_sections(struct elf *e, const uint8_t *eh)
{
    const uint64_t shoff = nwb_le64_load(eh + 40);
    const unsigned shentsize = nwb_le16_load(eh + 58);
    uint64_t shnum = nwb_le16_load(eh + 60);
    uint64_t shstrndx = nwb_le16_load(eh + 62);
    uint8_t hdrs[SHDR_BATCH * SHDR_SIZE];
    char *names = NULL;
    uint64_t names_len;
    int err;

    if (shoff == 0) {
        return 0; /* no section header table: the segments must have the note */
    }
    if (shentsize != SHDR_SIZE) {
        return refuse(e, "bad section header size");
    }
    if (!in_file(e, shoff, SHDR_SIZE)) {
        return refuse(e, "truncated section headers");
    }
    err = e->read(e->ctx, shoff, hdrs, SHDR_SIZE);
    if (err != 0) {
        return err;
    }
    if (shnum == 0) {
        shnum = nwb_le64_load(hdrs + 32); /* extended numbering: section 0's sh_size */
    }
    if (shstrndx == SHN_XINDEX) {
        shstrndx = nwb_le32_load(hdrs + 40); /* ... and its sh_link */
    }
    if (shnum > NWB__ELF_SECTIONS_MAX) {
        return refuse(e, "too many sections");
    }
    if (!in_file(e, shoff, shnum * SHDR_SIZE)) {
        return refuse(e, "truncated section headers");
    }
    e->out->sections = (unsigned)shnum;
    if (shnum == 0) {
        return 0;
    }
    if (shstrndx == 0 || shstrndx >= shnum) {
        return refuse(e, "bad .shstrtab index");
    }
    err = e->read(e->ctx, shoff + shstrndx * SHDR_SIZE, hdrs, SHDR_SIZE);
    if (err != 0) {
        return err;
    }
    names_len = nwb_le64_load(hdrs + 32);
    if (nwb_le32_load(hdrs + 4) != SHT_STRTAB) {
        return refuse(e, ".shstrtab is not a string table");
    }
    if (!in_file(e, nwb_le64_load(hdrs + 24), names_len)) {
        return refuse(e, "truncated .shstrtab");
    }
    if (names_len > NWB__ELF_SHSTRTAB_MAX) {
        return refuse(e, ".shstrtab too large");
    }
    names = nwb_malloc((size_t)names_len + 1);
    if (names == NULL) {
        return -ENOMEM;
    }
    err = names_len > 0 ? e->read(e->ctx, nwb_le64_load(hdrs + 24), names, (size_t)names_len) : 0;
    for (uint64_t i = 0; err == 0 && i < shnum; i += SHDR_BATCH) {
        const uint64_t batch = shnum - i < SHDR_BATCH ? shnum - i : SHDR_BATCH;

        err = e->read(e->ctx, shoff + i * SHDR_SIZE, hdrs, (size_t)(batch * SHDR_SIZE));
        for (uint64_t k = i == 0 ? 1 : 0; err == 0 && k < batch; k++) {
            const uint8_t *sh = hdrs + k * SHDR_SIZE;
            const uint32_t name = nwb_le32_load(sh);
            const uint32_t type = nwb_le32_load(sh + 4);
            const uint64_t off = nwb_le64_load(sh + 24);
            const uint64_t len = nwb_le64_load(sh + 32);

            if (name >= names_len || memchr(names + name, '\0', names_len - name) == NULL) {
                err = refuse(e, "section name outside .shstrtab");
            } else if (type != SHT_NOBITS && !in_file(e, off, len)) {
                err = refuse(e, "section outside the file");
            } else if (type != SHT_NOBITS && len > 0 && strcmp(names + name, ".debug_info") == 0) {
                e->out->has_debug_info = 1;
            } else if (type == SHT_NOTE && !e->found) {
                err = scan_notes(e, off, len, nwb_le64_load(sh + 48));
            }
        }
    }
    nwb_free(names);
    return err;
}

static int check_segments(struct elf *e, const uint8_t *eh)
{
    const uint64_t phoff = nwb_le64_load(eh + 32);
    const unsigned phentsize = nwb_le16_load(eh + 54);
    const uint64_t phnum = nwb_le16_load(eh + 56);
    uint8_t ph[PHDR_SIZE];
    int err = 0;

    if (phoff == 0 || phnum == 0) {
        return 0;
    }
    if (phentsize != PHDR_SIZE) {
        return refuse(e, "bad program header size");
    }
    if (!in_file(e, phoff, phnum * PHDR_SIZE)) {
        return refuse(e, "truncated program headers");
    }
    for (uint64_t i = 0; err == 0 && i < phnum && !e->found; i++) {
        uint64_t off, len;

        err = e->read(e->ctx, phoff + i * PHDR_SIZE, ph, PHDR_SIZE);
        if (err != 0 || nwb_le32_load(ph) != PT_NOTE) {
            continue;
        }
        off = nwb_le64_load(ph + 8);
        len = nwb_le64_load(ph + 32);
        if (!in_file(e, off, len)) {
            return refuse(e, "note segment outside the file");
        }
        err = scan_notes(e, off, len, nwb_le64_load(ph + 48));
    }
    return err;
}

int nwb__elf_check(nwb__elf_read_fn read, void *ctx, uint64_t size, struct nwb__elf_info *out,
                   const char **reason)
{
    static const char hex[] = "0123456789abcdef";
    struct elf e = {read, ctx, size, out, NULL, 0};
    uint8_t eh[EHDR_SIZE];
    int err;

    memset(out, 0, sizeof(*out));
    *reason = NULL;
    if (size < 4) {
        *reason = "not an ELF file";
        return NWB_EPROTO;
    }
    err = read(ctx, 0, eh, size < EHDR_SIZE ? (size_t)size : EHDR_SIZE);
    if (err != 0) {
        return err;
    }
    if (memcmp(eh,
               "\x7f"
               "ELF",
               4) != 0) {
        err = refuse(&e, "not an ELF file");
    } else if (size < EHDR_SIZE) {
        err = refuse(&e, "truncated ELF header");
    } else if (eh[4] != 2) {
        err = refuse(&e, "not a 64-bit ELF file");
    } else if (eh[5] != 1) {
        err = refuse(&e, "not a little-endian ELF file");
    } else if (eh[6] != 1) {
        err = refuse(&e, "unsupported ELF version");
    } else {
        err = check_sections(&e, eh);
        if (err == 0 && !e.found) {
            err = check_segments(&e, eh);
        }
        if (err == 0 && !e.found) {
            err = refuse(&e, "no GNU build id");
        }
    }
    if (err != 0) {
        *reason = e.reason;
        memset(out, 0, sizeof(*out));
        return err;
    }
    for (size_t i = 0; i < out->build_id_len; i++) {
        out->build_id_hex[2 * i] = hex[out->build_id[i] >> 4];
        out->build_id_hex[2 * i + 1] = hex[out->build_id[i] & 15];
    }
    out->build_id_hex[2 * out->build_id_len] = '\0';
    return 0;
}

struct mem_src {
    const uint8_t *data;
};

static int mem_read(void *ctx, uint64_t off, void *buf, size_t len)
{
    const struct mem_src *m = ctx;

    memcpy(buf, m->data + off, len);
    return 0;
}

int nwb__elf_check_mem(const void *data, size_t size, struct nwb__elf_info *out,
                       const char **reason)
{
    struct mem_src m = {data};

    return nwb__elf_check(mem_read, &m, size, out, reason);
}

int nwb__elf_pread_exact(int fd, void *buf, size_t len, uint64_t off)
{
    size_t done = 0;

    while (done < len) {
        const ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return -errno;
        }
        if (n == 0) {
            return NWB_ETRUNCATED; /* the file shrank under us */
        }
        done += (size_t)n;
    }
    return 0;
}

static int fd_read(void *ctx, uint64_t off, void *buf, size_t len)
{
    return nwb__elf_pread_exact(*(const int *)ctx, buf, len, off);
}

int nwb__elf_check_fd(int fd, uint64_t size, struct nwb__elf_info *out, const char **reason)
{
    return nwb__elf_check(fd_read, &fd, size, out, reason);
}
