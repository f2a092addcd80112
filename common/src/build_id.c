/* SPDX-License-Identifier: MIT */
/* build_id.c - reads the main executable's GNU build-id note through dl_iterate_phdr. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "nwb/build_id.h"

struct search {
    char *out;
    size_t cap;
    size_t len;
};

static int scan_object(struct dl_phdr_info *info, size_t size, void *data)
{
    struct search *s = data;

    (void)size;
    /* The first object reported is the main program. */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        const char *p, *end;

        if (ph->p_type != PT_NOTE) {
            continue;
        }
        p = (const char *)(info->dlpi_addr + ph->p_vaddr);
        end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            ElfW(Nhdr) nh;
            const char *name, *desc;

            memcpy(&nh, p, sizeof(nh));
            name = p + sizeof(nh);
            desc = name + ((nh.n_namesz + 3u) & ~3u);
            if (desc + nh.n_descsz > end) {
                break;
            }
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                static const char hex[] = "0123456789abcdef";
                const unsigned char *d = (const unsigned char *)desc;
                size_t n = 0;

                for (size_t k = 0; k < nh.n_descsz && n + 2 < s->cap; k++) {
                    s->out[n++] = hex[d[k] >> 4];
                    s->out[n++] = hex[d[k] & 15];
                }
                s->out[n] = '\0';
                s->len = n;
                return 1;
            }
            p = desc + ((nh.n_descsz + 3u) & ~3u);
        }
    }
    return 1; /* only the main program */
}

size_t nwb_build_id(char *out, size_t cap)
{
    struct search s = {out, cap, 0};

    if (cap == 0) {
        return 0;
    }
    dl_iterate_phdr(scan_object, &s);
    if (s.len == 0) {
        snprintf(out, cap, "none");
        s.len = strlen(out);
    }
    return s.len;
}
