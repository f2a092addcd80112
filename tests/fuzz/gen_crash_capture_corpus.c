/* SPDX-License-Identifier: MIT */
/*
 * gen_crash_capture_corpus.c - writes the seed corpus tests/fuzz/corpus/crash_capture/: valid
 * threads.nwbc files made with the real writer (valid_*: x86_64 with threads and modules, a
 * minimal aarch64 one), and broken ones made from them (bad_*: magic, version, truncation,
 * trailing bytes, two crashed threads, unsorted modules). Each seed is checked against the
 * reader as it is written: valid_* must parse, every other one must be refused.
 * Usage: fuzz_crash_capture_corpus_gen OUTDIR   (creates OUTDIR; commit what changed)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "nwb/byte_order.h"
#include "nwb/crash_capture.h"
#include "nwb/crash_capture_write.h"

static uint8_t buf[8192];
static const char *outdir;
static int failures;

static void emit(const char *name, const uint8_t *data, size_t len, int want_valid)
{
    nwb_crash_capture_view_t v;
    char why[128], path[512];
    const int rc = nwb_crash_capture_parse(data, len, &v, why, sizeof why);
    FILE *f;

    nwb_crash_capture_view_free(&v);
    if ((rc == 0) != want_valid) {
        fprintf(stderr, "gen: seed %s: parse gave %d (%s)\n", name, rc, why);
        failures++;
    }
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "gen: cannot write %s\n", path);
        failures++;
    }
}

/* x86_64, three threads (the crashed one first), three modules. */
static size_t build_x86(void)
{
    static const char note[] = "ptrace: attached 3 threads in 1.2 ms";
    nwb_crash_capture_writer_t w;
    uint64_t regs[NWB_CRASH_REGS_X86_64];
    uint8_t stack[64], bid[20];

    for (unsigned i = 0; i < sizeof stack; i++) {
        stack[i] = (uint8_t)(i * 7);
    }
    for (unsigned i = 0; i < sizeof bid; i++) {
        bid[i] = (uint8_t)(0x10 + i);
    }
    nwb_crash_capture_writer_init(&w, buf, sizeof buf);
    nwb_crash_capture_write_header(&w, NWB_CRASH_ARCH_X86_64, NWB_CRASH_CAPTURE_PTRACE, 4242, 4243,
                                   3, 3, note, sizeof note - 1);
    for (unsigned t = 0; t < 3; t++) {
        static const char *const names[] = {"render", "main", "audio"};

        for (unsigned i = 0; i < NWB_CRASH_REGS_X86_64; i++) {
            regs[i] = 0x7f0000000000ull + t * 0x1000 + i;
        }
        nwb_crash_capture_write_thread(
            &w, 4243 + t, t == 0 ? NWB_CRASH_THREAD_CRASHED | NWB_CRASH_THREAD_SIGNAL_REGS : 0,
            names[t], regs, NWB_CRASH_REGS_X86_64, regs[7], stack, t == 2 ? 0 : sizeof stack);
    }
    nwb_crash_capture_write_module(&w, 0x555555554000ull, 0x555555560000ull, 0, bid, sizeof bid,
                                   "/opt/game/bin/game", 18);
    nwb_crash_capture_write_module(&w, 0x7ffff7c00000ull, 0x7ffff7e00000ull, 0, bid, 16,
                                   "/usr/lib/x86_64-linux-gnu/libc.so.6", 35);
    nwb_crash_capture_write_module(&w, 0x7ffff7fc0000ull, 0x7ffff7fc8000ull, 0, NULL, 0, "[vdso]",
                                   6);
    return (size_t)nwb_crash_capture_writer_finish(&w);
}

int main(int argc, char **argv)
{
    uint8_t copy[sizeof buf];
    size_t n;

    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    outdir = argv[1];
    if (mkdir(outdir, 0755) != 0 && errno != EEXIST) {
        perror(outdir);
        return 1;
    }
    n = build_x86();
    emit("valid_x86_64", buf, n, 1);
    {
        nwb_crash_capture_writer_t w;
        uint64_t regs[NWB_CRASH_REGS_AARCH64] = {0};
        uint8_t small[512];
        static const char note[] = "ptrace: EPERM (ptrace_scope 3); in-process fallback";

        nwb_crash_capture_writer_init(&w, small, sizeof small);
        nwb_crash_capture_write_header(&w, NWB_CRASH_ARCH_AARCH64, NWB_CRASH_CAPTURE_IN_PROCESS, 7,
                                       7, 1, 0, note, sizeof note - 1);
        nwb_crash_capture_write_thread(&w, 7, NWB_CRASH_THREAD_CRASHED, "main", regs,
                                       NWB_CRASH_REGS_AARCH64, 0, NULL, 0);
        emit("valid_aarch64_fallback", small, (size_t)nwb_crash_capture_writer_finish(&w), 1);
    }
    memcpy(copy, buf, n);
    copy[3] = 'X';
    emit("bad_magic", copy, n, 0);
    memcpy(copy, buf, n);
    nwb_le16_store(copy + 4, 2);
    emit("bad_version", copy, n, 0);
    emit("bad_truncated_header", buf, 20, 0);
    emit("bad_truncated_thread", buf, 200, 0);
    emit("bad_truncated_module", buf, n - 3, 0);
    memcpy(copy, buf, n);
    copy[n] = 0;
    emit("bad_trailing", copy, n + 1, 0);
    memcpy(copy, buf, n);
    nwb_le32_store(copy + 20, 1024); /* more threads than the file holds */
    emit("bad_nthreads", copy, n, 0);
    {
        /* The second thread record says crashed too (its flags sit after the first record). */
        const size_t t1 = 32 + 36 + 40 + 8 * NWB_CRASH_REGS_X86_64 + 64;

        memcpy(copy, buf, n);
        nwb_le32_store(copy + t1 + 4, NWB_CRASH_THREAD_CRASHED);
        emit("bad_two_crashed", copy, n, 0);
    }
    return failures == 0 ? 0 : 1;
}
