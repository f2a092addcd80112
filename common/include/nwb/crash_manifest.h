/* SPDX-License-Identifier: MIT */
/*
 * nwb/crash_manifest.h - the crash package's manifest contract: crash/ writes it as the first
 * file of every package, the server's crash ingest refuses a package without it and reads its
 * keys for the listing (docs/crash.md). Both include this header, so the contract is spelled
 * once.
 */
#ifndef NWB_CRASH_MANIFEST_H
#define NWB_CRASH_MANIFEST_H

#include <string.h>

#include "nwb/common.h"
#include "nwb/safe_name.h"

/* The package's required top-level file and its first line. */
#define NWB_CRASH_MANIFEST_NAME  "manifest.txt"
#define NWB_CRASH_MANIFEST_MAGIC "nwb-crash-manifest 1"

/* Bytes of a manifest read back for its keys: the keys readers need (program, run, kind,
 * signal) come first, before the command line and the module list. */
#define NWB_CRASH_MANIFEST_READ_MAX (16u * 1024u)

/**
 * The value of the first "key=value" line for @p key in @p len bytes of manifest text @p text
 * (lines end in '\n', the last one may not), sanitised by nwb_safe_name() into @p out, which
 * holds NWB_SAFE_NAME_MAX + 1 bytes; "" when the key is missing. The server's queue markers
 * and reason files use the same line form and are read with it too.
 */
static inline void nwb_crash_manifest_value(const char *text, size_t len, const char *key,
                                            char *out)
{
    const size_t klen = strlen(key);

    out[0] = '\0';
    for (size_t i = 0; i < len;) {
        size_t end = i;

        while (end < len && text[end] != '\n') {
            end++;
        }
        if (end - i > klen && memcmp(text + i, key, klen) == 0 && text[i + klen] == '=') {
            nwb_safe_name(out, text + i + klen + 1, end - i - klen - 1, "");
            return;
        }
        i = end + 1;
    }
}

#endif /* NWB_CRASH_MANIFEST_H */
