/* SPDX-License-Identifier: MIT */
/*
 * fuzz_elf_check.c - fuzz target for the symbol store's ELF checker (server/src/elf_check.c):
 * any byte string must be accepted or refused with a reason, never read outside the input
 * (the read callback checks every range it is asked for). An accepted file has a build id
 * within the bounds, as lowercase hex of twice its length, and at most
 * NWB__ELF_SECTIONS_MAX sections.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/error.h"

#include "elf_check.h"

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_elf_check: check failed at line %d: %s\n", __LINE__, #cond);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

struct input {
    const uint8_t *data;
    size_t size;
};

/* Every read must lie inside the input. */
static int checked_read(void *ctx, uint64_t off, void *buf, size_t len)
{
    const struct input *in = ctx;

    FUZZ_CHECK(off <= in->size && len <= in->size - off);
    memcpy(buf, in->data + off, len);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct input in = {data, size};
    struct nwb__elf_info info;
    const char *reason = NULL;
    const int err = nwb__elf_check(checked_read, &in, size, &info, &reason);

    if (err != 0) {
        FUZZ_CHECK(err == NWB_EPROTO || err == -ENOMEM);
        FUZZ_CHECK(err != NWB_EPROTO ||
                   (reason != NULL && reason[0] != '\0' && strchr(reason, '\n') == NULL));
        return 0;
    }
    FUZZ_CHECK(reason == NULL);
    FUZZ_CHECK(info.build_id_len >= NWB__ELF_BUILD_ID_MIN &&
               info.build_id_len <= NWB__ELF_BUILD_ID_MAX);
    FUZZ_CHECK(strlen(info.build_id_hex) == 2 * info.build_id_len);
    FUZZ_CHECK(strspn(info.build_id_hex, "0123456789abcdef") == 2 * info.build_id_len);
    FUZZ_CHECK(info.sections <= NWB__ELF_SECTIONS_MAX);
    FUZZ_CHECK(info.has_debug_info == 0 || info.has_debug_info == 1);
    return 0;
}
