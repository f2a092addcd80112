/* SPDX-License-Identifier: MIT */
/*
 * fuzz_crash_signature.c - fuzz target for the crash grouping inputs the server reads from
 * clients: crash.txt's [backtrace] section (crash_backtrace.c) turned into a signature
 * (crash_signature.c), and an operator's skip-list text. Byte 0 chooses: even = the rest is
 * crash.txt, odd = the rest is a skip list (then used on a fixed backtrace). Checks: the frame
 * count stays within the bound and frames lie inside the input; a signature is within
 * NWB_CRASH_SIG_MAX, one line of printable ASCII, its group id 16 hex digits; a refused skip
 * list leaves the list unchanged.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crash_analysis.h"
#include "crash_backtrace.h"
#include "crash_signature.h"

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_crash_signature: check failed at line %d: %s\n", __LINE__,       \
                    #cond);                                                                        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static struct nwb_crash_skip skip_defaults;
static struct nwb_crash_skip skip_work;

static void check_signature(const char *sig, int n)
{
    char group[NWB_CRASH_GROUP_ID_LEN + 1];

    FUZZ_CHECK(n > 0 && (size_t)n <= NWB_CRASH_SIG_MAX);
    FUZZ_CHECK(strlen(sig) == (size_t)n);
    for (int i = 0; i < n; i++) {
        FUZZ_CHECK(sig[i] >= 0x20 && sig[i] <= 0x7e);
    }
    nwb_crash_group_id(sig, (size_t)n, group);
    FUZZ_CHECK(strspn(group, "0123456789abcdef") == NWB_CRASH_GROUP_ID_LEN);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char fixed[] = "[backtrace]\n#0 0x1 /a/b/game+0x10\n#1 0x2 ?\n"
                                "#2 0x3 /lib/libc.so.6+0x20\n#3 0x4 /a/b/game+0x30\n";
    char sig[NWB_CRASH_SIG_MAX + 2];
    char why[256];
    const char *text = (const char *)data + 1;
    const size_t len = size > 0 ? size - 1 : 0;
    int n;

    if (skip_defaults.count == 0) {
        nwb_crash_skip_defaults(&skip_defaults);
    }
    if (size == 0) {
        return 0;
    }
    if ((data[0] & 1u) == 0) {
        struct nwb_crash_bt_frame frames[NWB_CRASH_BT_FRAMES_MAX];
        const int nf =
            nwb_crash_bt_parse(text, len, frames, NWB_CRASH_BT_FRAMES_MAX, why, sizeof(why));

        FUZZ_CHECK(nf >= -1 && nf <= (int)NWB_CRASH_BT_FRAMES_MAX);
        for (int i = 0; i < nf; i++) {
            FUZZ_CHECK(frames[i].module == NULL ||
                       (frames[i].module >= text &&
                        frames[i].module + frames[i].module_len <= text + len &&
                        frames[i].module_len <= NWB_CRASH_BT_MODULE_MAX));
        }
        n = nwb__crash_analysis_signature_from_text("SIGSEGV", text, len, &skip_defaults, sig,
                                                    sizeof(sig));
        FUZZ_CHECK((n < 0) == (nf < 0));
        if (n > 0) {
            check_signature(sig, n);
        }
        return 0;
    }
    skip_work = skip_defaults;
    if (nwb_crash_skip_add_text(&skip_work, text, len, why, sizeof(why)) != 0) {
        FUZZ_CHECK(memcmp(&skip_work, &skip_defaults, sizeof(skip_work)) == 0);
        FUZZ_CHECK(why[0] != '\0');
    } else {
        FUZZ_CHECK(skip_work.count >= skip_defaults.count &&
                   skip_work.count <= NWB_CRASH_SKIP_PATTERNS);
    }
    n = nwb__crash_analysis_signature_from_text("SIGABRT", fixed, sizeof(fixed) - 1, &skip_work,
                                                sig, sizeof(sig));
    check_signature(sig, n);
    return 0;
}
