/* SPDX-License-Identifier: MIT */
/*
 * elf_check.h - the symbol store's own small ELF checker (no libelf): is an uploaded file a
 * 64-bit little-endian ELF whose headers, section names and GNU build id note all lie inside
 * it, what is its build id, and does it carry DWARF (.debug_info). It reads through a
 * callback in bounded pieces, so a 512 MiB upload is never held in memory. Any thread.
 * docs/protocol.md, "POST /v1/symbols", lists the rules and the reasons.
 */
#ifndef NWB_ELF_CHECK_H
#define NWB_ELF_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* ---- bounds (docs/protocol.md, "POST /v1/symbols") ---- */
#define NWB__ELF_SECTIONS_MAX     65535u          /* more (extended numbering): refused */
#define NWB__ELF_SEGMENTS_MAX     65535u          /* program headers (e_phnum is 16 bits) */
#define NWB__ELF_SHSTRTAB_MAX     (1024u * 1024u) /* a larger section name table: refused */
#define NWB__ELF_NOTE_SCAN_MAX    (64u * 1024u)   /* bytes of one note area looked at */
#define NWB__ELF_BUILD_ID_MIN     2u              /* bytes: .build-id/<2 hex>/<rest> */
#define NWB__ELF_BUILD_ID_MAX     64u             /* bytes */
#define NWB__ELF_BUILD_ID_HEX_MAX (2u * NWB__ELF_BUILD_ID_MAX)

/* Read @p len bytes at @p off into @p buf (the checker keeps off + len within the size it was
 * given). 0, or a negative code (passed through). */
typedef int (*nwb__elf_read_fn)(void *ctx, uint64_t off, void *buf, size_t len);

struct nwb__elf_info {
    uint8_t build_id[NWB__ELF_BUILD_ID_MAX];
    size_t build_id_len;
    char build_id_hex[NWB__ELF_BUILD_ID_HEX_MAX + 1]; /* lowercase */
    int has_debug_info; /* a .debug_info section with bytes in the file */
    unsigned sections;  /* section headers */
};

/*
 * Check the ELF file of @p size bytes that @p read gives. Returns 0 with @p *out filled; or
 * NWB_EPROTO with @p *reason a static one-line reason ("not an ELF file", "truncated section
 * headers", "too many sections", "no GNU build id", ...); or a negative code of @p read.
 */
int nwb__elf_check(nwb__elf_read_fn read, void *ctx, uint64_t size, struct nwb__elf_info *out,
                   const char **reason);

/* nwb__elf_check() over @p size bytes in memory. */
int nwb__elf_check_mem(const void *data, size_t size, struct nwb__elf_info *out,
                       const char **reason);

/* Read exactly @p len bytes of @p fd at @p off (pread, EINTR retried): 0, NWB_ETRUNCATED when
 * the file ends first, or a negative errno. What nwb__elf_check_fd() reads with. */
int nwb__elf_pread_exact(int fd, void *buf, size_t len, uint64_t off);

/* nwb__elf_check() over the first @p size bytes of the open file @p fd (pread). */
int nwb__elf_check_fd(int fd, uint64_t size, struct nwb__elf_info *out, const char **reason);

#endif /* NWB_ELF_CHECK_H */
