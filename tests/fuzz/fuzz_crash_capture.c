/* SPDX-License-Identifier: MIT */
/*
 * fuzz_crash_capture.c - fuzz target for the threads.nwbc reader (common/src/crash_capture.c,
 * docs/crash-capture-format.md), which the server runs on files from crashed games. Checks on
 * every accepted input: each view lies inside the input, every count and length is within its
 * bound, the crashed thread is first and alone, tids are unique, modules are sorted without
 * overlap; a refused input leaves the view empty and gives a one-line reason.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/crash_capture.h"

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_crash_capture: check failed at line %d: %s\n", __LINE__, #cond); \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static int inside(const uint8_t *data, size_t size, const void *p, size_t n)
{
    const uint8_t *q = p;

    return n == 0 || (q >= data && n <= size && (size_t)(q - data) <= size - n);
}

static void check_view(const uint8_t *data, size_t size, const nwb_crash_capture_view_t *v)
{
    FUZZ_CHECK(v->nthreads >= 1 && v->nthreads <= NWB_CRASH_CAPTURE_THREADS_MAX);
    FUZZ_CHECK(v->nmodules <= NWB_CRASH_CAPTURE_MODULES_MAX);
    FUZZ_CHECK(v->note_len <= NWB_CRASH_CAPTURE_NOTE_MAX);
    FUZZ_CHECK(inside(data, size, v->note, v->note_len));
    FUZZ_CHECK(v->arch == NWB_CRASH_ARCH_X86_64 || v->arch == NWB_CRASH_ARCH_AARCH64);
    for (size_t i = 0; i < v->nthreads; i++) {
        const nwb_crash_thread_view_t *t = &v->threads[i];

        FUZZ_CHECK(((t->flags & NWB_CRASH_THREAD_CRASHED) != 0) == (i == 0));
        FUZZ_CHECK(t->nregs == (v->arch == NWB_CRASH_ARCH_X86_64 ? NWB_CRASH_REGS_X86_64
                                                                 : NWB_CRASH_REGS_AARCH64));
        FUZZ_CHECK(strlen(t->name) <= NWB_CRASH_CAPTURE_NAME_MAX);
        FUZZ_CHECK(t->stack_len <= NWB_CRASH_CAPTURE_STACK_MAX);
        FUZZ_CHECK(inside(data, size, t->stack, t->stack_len));
        for (size_t j = 0; j < i; j++) {
            FUZZ_CHECK(v->threads[j].tid != t->tid);
        }
    }
    FUZZ_CHECK(v->threads[0].tid == v->crashed_tid);
    for (size_t i = 0; i < v->nmodules; i++) {
        const nwb_crash_module_view_t *m = &v->modules[i];

        FUZZ_CHECK(m->end > m->start);
        FUZZ_CHECK(i == 0 || m->start >= v->modules[i - 1].end);
        FUZZ_CHECK(m->build_id_len <= NWB_CRASH_CAPTURE_BUILD_ID_MAX);
        FUZZ_CHECK(m->path_len >= 1 && m->path_len <= NWB_CRASH_CAPTURE_PATH_MAX);
        FUZZ_CHECK(inside(data, size, m->build_id, m->build_id_len));
        FUZZ_CHECK(inside(data, size, m->path, m->path_len));
        FUZZ_CHECK(memchr(m->path, '\0', m->path_len) == NULL);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nwb_crash_capture_view_t v;
    char why[128];
    const int rc = nwb_crash_capture_parse(data, size, &v, why, sizeof why);

    if (rc == 0) {
        check_view(data, size, &v);
        nwb_crash_capture_view_free(&v);
    } else {
        FUZZ_CHECK(rc < 0);
        FUZZ_CHECK(v.threads == NULL && v.modules == NULL && v.nthreads == 0);
        FUZZ_CHECK(why[0] != '\0' && strchr(why, '\n') == NULL);
    }
    return 0;
}
