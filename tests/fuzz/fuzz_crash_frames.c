/* SPDX-License-Identifier: MIT */
/*
 * fuzz_crash_frames.c - fuzz target for frames.tsv (crash_frames.c), the symbolised stack the
 * server reads back from nwb-symbolize, and the signature built from it. Checks: every field a
 * callback sees lies inside the input, within its bound and free of control bytes; counts stay
 * within their bounds; a parse that succeeds gives a signature within NWB_CRASH_SIG_MAX that is
 * one line of printable ASCII; a refused file says why in one line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crash_analysis.h"
#include "crash_frames.h"
#include "crash_signature.h"

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_crash_frames: check failed at line %d: %s\n", __LINE__, #cond);  \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

struct seen {
    const char *text;
    size_t len;
    unsigned threads, frames, missing;
};

static void check_str(const struct seen *s, struct nwb_crash_str f, size_t max)
{
    FUZZ_CHECK(f.len <= max);
    if (f.len > 0) {
        FUZZ_CHECK(f.s >= s->text && f.s + f.len <= s->text + s->len);
    }
    for (size_t i = 0; i < f.len; i++) {
        FUZZ_CHECK((unsigned char)f.s[i] >= 0x20 && f.s[i] != 0x7f);
    }
}

static int on_thread(void *ctx, uint32_t tid, int crashed, struct nwb_crash_str name)
{
    struct seen *s = ctx;

    (void)tid;
    FUZZ_CHECK(crashed == 0 || (crashed == 1 && s->threads == 0));
    check_str(s, name, NWB_CRASH_FRAMES_NAME_MAX);
    FUZZ_CHECK(++s->threads <= NWB_CRASH_FRAMES_THREADS_MAX);
    return 0;
}

static int on_frame(void *ctx, const struct nwb_crash_frame_rec *f)
{
    struct seen *s = ctx;

    FUZZ_CHECK(s->threads > 0);
    check_str(s, f->module, NWB_CRASH_FRAMES_MODULE_MAX);
    check_str(s, f->build_id, NWB_CRASH_FRAMES_BUILD_ID_MAX);
    check_str(s, f->function, NWB_CRASH_FRAMES_FUNCTION_MAX);
    check_str(s, f->file, NWB_CRASH_FRAMES_FILE_MAX);
    FUZZ_CHECK(f->inlined == 0 || f->inlined == 1);
    FUZZ_CHECK(f->symbolized == 0 || f->symbolized == 1);
    FUZZ_CHECK(++s->frames <= NWB_CRASH_FRAMES_TOTAL_MAX);
    return 0;
}

static int on_missing(void *ctx, struct nwb_crash_str build_id, struct nwb_crash_str module)
{
    struct seen *s = ctx;

    check_str(s, build_id, NWB_CRASH_FRAMES_BUILD_ID_MAX);
    FUZZ_CHECK(build_id.len > 0);
    check_str(s, module, NWB_CRASH_FRAMES_MODULE_MAX);
    FUZZ_CHECK(++s->missing <= NWB_CRASH_FRAMES_MISSING_MAX);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct nwb_crash_skip skip;
    static int ready;
    struct seen s = {(const char *)data, size, 0, 0, 0};
    const struct nwb_crash_frames_cb cb = {on_thread, on_frame, on_missing, &s};
    char why[256], sig[NWB_CRASH_SIG_MAX + 2];
    int rc, n;

    if (!ready) {
        nwb_crash_skip_defaults(&skip);
        ready = 1;
    }
    why[0] = '\0';
    rc = nwb_crash_frames_parse((const char *)data, size, &cb, why, sizeof(why));
    if (rc != 0) {
        FUZZ_CHECK(why[0] != '\0' && strchr(why, '\n') == NULL);
        return 0;
    }
    n = nwb__crash_analysis_signature_from_frames("SIGSEGV", (const char *)data, size, &skip, sig,
                                                  sizeof(sig));
    FUZZ_CHECK(n != 0);
    if (n > 0) {
        FUZZ_CHECK((size_t)n <= NWB_CRASH_SIG_MAX && strlen(sig) == (size_t)n);
        for (int i = 0; i < n; i++) {
            FUZZ_CHECK(sig[i] >= 0x20 && sig[i] <= 0x7e);
        }
    } else {
        FUZZ_CHECK(s.threads == 0); /* a valid file without threads has no signature */
    }
    return 0;
}
