/* SPDX-License-Identifier: MIT */
/*
 * crash_elf_note.c - finds an ELF64 image's GNU build id (NT_GNU_BUILD_ID in a PT_NOTE
 * segment) through a caller's read function, either in the file (p_offset) or in a mapped
 * image (p_vaddr less the load bias). Used by the ptrace capture helper on the crashed
 * process's files and by the handler's in-process fallback on its own memory, so it uses
 * static buffers and no libc: async-signal-safe. Every read is bounded.
 */
#include <elf.h>
#include <string.h>

#include "../capture_int.h"

#define PHDRS_MAX     128u  /* program headers looked at */
#define NOTE_READ_MAX 4096u /* bytes of one PT_NOTE segment looked at */

static int is_elf64_le(const Elf64_Ehdr *eh)
{
    return eh->e_ident[EI_MAG0] == ELFMAG0 && eh->e_ident[EI_MAG1] == ELFMAG1 &&
           eh->e_ident[EI_MAG2] == ELFMAG2 && eh->e_ident[EI_MAG3] == ELFMAG3 &&
           eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_ident[EI_DATA] == ELFDATA2LSB;
}

/* The GNU build id among the notes in @p p (@p n bytes), or 0. */
static size_t scan_notes(const uint8_t *p, size_t n, uint8_t *out, size_t cap)
{
    size_t off = 0;

    while (n - off >= sizeof(Elf64_Nhdr)) {
        Elf64_Nhdr nh;
        size_t name_sz, desc_sz;

        memcpy(&nh, p + off, sizeof(nh));
        off += sizeof(nh);
        name_sz = ((size_t)nh.n_namesz + 3u) & ~(size_t)3u;
        desc_sz = ((size_t)nh.n_descsz + 3u) & ~(size_t)3u;
        if (nh.n_namesz > n || name_sz > n - off || nh.n_descsz > n ||
            desc_sz > n - off - name_sz) {
            return 0;
        }
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(p + off, "GNU", 4) == 0) {
            const size_t len = nh.n_descsz < cap ? nh.n_descsz : cap;

            memcpy(out, p + off + name_sz, len);
            return len;
        }
        off += name_sz + desc_sz;
    }
    return 0;
}

size_t nwb__crash_elf_build_id(nwb__crash_read_fn read, void *ctx, int mapped, uint8_t *out,
                               size_t cap)
{
    static Elf64_Ehdr eh;
    static Elf64_Phdr ph[PHDRS_MAX];
    static uint8_t notes[NOTE_READ_MAX];
    uint64_t bias = 0;
    unsigned nph;

    if (read(ctx, 0, &eh, sizeof(eh)) != (long)sizeof(eh) || !is_elf64_le(&eh) ||
        eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0) {
        return 0;
    }
    nph = eh.e_phnum < PHDRS_MAX ? eh.e_phnum : PHDRS_MAX;
    if (read(ctx, eh.e_phoff, ph, nph * sizeof(Elf64_Phdr)) != (long)(nph * sizeof(Elf64_Phdr))) {
        return 0;
    }
    if (mapped) {
        /* The image starts at the first PT_LOAD's page: addresses are p_vaddr - that page. */
        for (unsigned i = 0; i < nph; i++) {
            if (ph[i].p_type == PT_LOAD) {
                const uint64_t align = ph[i].p_align > 1 ? ph[i].p_align : 4096u;

                bias = ph[i].p_vaddr & ~(align - 1);
                break;
            }
        }
    }
    for (unsigned i = 0; i < nph; i++) {
        uint64_t where;
        size_t n;
        long got;

        if (ph[i].p_type != PT_NOTE) {
            continue;
        }
        if (mapped && ph[i].p_vaddr < bias) {
            continue;
        }
        where = mapped ? ph[i].p_vaddr - bias : ph[i].p_offset;
        n = ph[i].p_filesz < NOTE_READ_MAX ? (size_t)ph[i].p_filesz : NOTE_READ_MAX;
        got = read(ctx, where, notes, n);
        if (got > 0) {
            const size_t len = scan_notes(notes, (size_t)got, out, cap);

            if (len > 0) {
                return len;
            }
        }
    }
    return 0;
}
