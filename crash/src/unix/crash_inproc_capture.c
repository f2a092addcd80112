/* SPDX-License-Identifier: MIT */
/*
 * crash_inproc_capture.c - the handler's fallback threads.nwbc (method 2), written from
 * inside the dying process when no helper could attach: the crashing thread only, with the
 * signal context's registers, up to NWB__CRASH_CAPTURE_STACK_BYTES of its stack read from sp
 * without faulting (process_vm_readv on itself), and the code modules crash_modules.c found
 * with build ids read from their mapped ELF headers. Static buffers, no allocation, no
 * stdio: async-signal-safe.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nwb/byte_order.h"
#include "nwb/crash_capture.h"
#include "nwb/crash_capture_write.h"

#include "../capture_int.h"

/* One module record at most: 32 + build id + path. */
#define SCRATCH_BYTES (32u + NWB_CRASH_CAPTURE_BUILD_ID_MAX + NWB_CRASH_CAPTURE_PATH_MAX + 512u)

static uint8_t scratch[SCRATCH_BYTES];
static uint8_t stack_copy[NWB__CRASH_CAPTURE_STACK_BYTES];

long nwb__crash_self_read(uint64_t addr, void *buf, size_t n)
{
    struct iovec local = {.iov_base = buf, .iov_len = n};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = n};

    /* A bad address is EFAULT (or a short count), never a fault in the handler. */
    return syscall(SYS_process_vm_readv, (long)getpid(), &local, 1L, &remote, 1L, 0L);
}

static long image_read(void *ctx, uint64_t where, void *buf, size_t n)
{
    return nwb__crash_self_read(*(const uint64_t *)ctx + where, buf, n);
}

/* Up to the stack bound from @p sp; a page at a time so the part below an unmapped page counts. */
static size_t read_stack(uint64_t sp)
{
    size_t got = 0;

    while (got < sizeof(stack_copy)) {
        const uint64_t at = sp + got;
        size_t n = 4096u - (size_t)(at & 4095u);
        long r;

        if (n > sizeof(stack_copy) - got) {
            n = sizeof(stack_copy) - got;
        }
        r = nwb__crash_self_read(at, stack_copy + got, n);
        if (r <= 0) {
            break;
        }
        got += (size_t)r;
        if ((size_t)r < n) {
            break;
        }
    }
    return got;
}

static int flush_scratch(int fd, const nwb_crash_capture_writer_t *w)
{
    const long n = nwb_crash_capture_writer_finish(w);

    return n >= 0 && nwb_write_all(fd, scratch, (size_t)n) == 0 ? 0 : -1;
}

int nwb__crash_inproc_capture(int dir_fd, const uint64_t *regs, unsigned nregs, unsigned arch,
                              int tid, const char *tname, const char *note, size_t note_len)
{
    nwb_crash_capture_writer_t w;
    const unsigned nmodules = nwb__crash_module_file_count();
    const uint64_t sp = regs[arch == NWB_CRASH_ARCH_X86_64 ? 7 : 31];
    const size_t stack_len = read_stack(sp);
    int rc = 0;
    const int fd = openat(dir_fd, NWB_CRASH_CAPTURE_FILE,
                          O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

    if (fd < 0) {
        return -1;
    }
    if (note_len > NWB_CRASH_CAPTURE_NOTE_MAX) {
        note_len = NWB_CRASH_CAPTURE_NOTE_MAX;
    }
    nwb_crash_capture_writer_init(&w, scratch, sizeof(scratch));
    nwb_crash_capture_write_header(&w, arch, NWB_CRASH_CAPTURE_IN_PROCESS, (uint32_t)getpid(),
                                   (uint32_t)tid, 1, nmodules, note, note_len);
    rc |= flush_scratch(fd, &w);
    /* The record without its stack, then stack_len patched in and the bytes from stack_copy:
     * the scratch buffer need not hold the stack twice. */
    nwb_crash_capture_writer_init(&w, scratch, sizeof(scratch));
    nwb_crash_capture_write_thread(&w, (uint32_t)tid,
                                   NWB_CRASH_THREAD_CRASHED | NWB_CRASH_THREAD_SIGNAL_REGS, tname,
                                   regs, nregs, sp, NULL, 0);
    nwb_le32_store(scratch + 28, (uint32_t)stack_len);
    rc |= flush_scratch(fd, &w);
    if (stack_len > 0 && nwb_write_all(fd, stack_copy, stack_len) != 0) {
        rc = -1;
    }
    for (unsigned i = 0; i < nmodules; i++) {
        static uint8_t build_id[NWB_CRASH_CAPTURE_BUILD_ID_MAX];
        uint64_t lo = 0, hi = 0, off = 0;
        const char *path = "?";
        size_t path_len, bid_len = 0;

        (void)nwb__crash_module_file(i, &lo, &hi, &off, &path);
        path_len = nwb__crash_strlen(path);
        if (path_len > NWB_CRASH_CAPTURE_PATH_MAX) {
            path_len = NWB_CRASH_CAPTURE_PATH_MAX;
        }
        if (off == 0) {
            bid_len = nwb__crash_elf_build_id(image_read, &lo, 1, build_id, sizeof(build_id));
        }
        nwb_crash_capture_writer_init(&w, scratch, sizeof(scratch));
        nwb_crash_capture_write_module(&w, lo, hi, off, build_id, bid_len, path,
                                       path_len > 0 ? path_len : 1);
        rc |= flush_scratch(fd, &w);
    }
    close(fd);
    return rc == 0 ? 0 : -1;
}
