/* SPDX-License-Identifier: MIT */
/*
 * crash_capture_write.c - the async-signal-safe encoder of threads.nwbc
 * (docs/crash-capture-format.md): byte loops into a caller's buffer, no
 * allocation, no libc.
 */
#include "nwb/crash_capture_write.h"

#include "nwb/crash_capture.h"

static uint8_t *room(nwb_crash_capture_writer_t *w, size_t n)
{
    uint8_t *p;

    if (w->overflow || n > w->cap - w->len) {
        w->overflow = 1;
        return NULL;
    }
    p = w->buf + w->len;
    w->len += n;
    return p;
}

static void put_bytes(nwb_crash_capture_writer_t *w, const void *src, size_t n)
{
    uint8_t *p = room(w, n);
    const uint8_t *s = src;

    if (p == NULL) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        p[i] = s != NULL ? s[i] : 0;
    }
}

static void put_le(nwb_crash_capture_writer_t *w, uint64_t v, unsigned size)
{
    uint8_t *p = room(w, size);

    if (p == NULL) {
        return;
    }
    for (unsigned i = 0; i < size; i++) {
        p[i] = (uint8_t)(v >> (8u * i));
    }
}

void nwb_crash_capture_writer_init(nwb_crash_capture_writer_t *w, void *buf, size_t cap)
{
    w->buf = buf;
    w->cap = buf != NULL ? cap : 0;
    w->len = 0;
    w->overflow = 0;
}

void nwb_crash_capture_write_header(nwb_crash_capture_writer_t *w, unsigned arch, unsigned method,
                                    uint32_t pid, uint32_t crashed_tid, uint32_t nthreads,
                                    uint32_t nmodules, const char *note, size_t note_len)
{
    put_le(w, NWB_CRASH_CAPTURE_MAGIC, 4);
    put_le(w, NWB_CRASH_CAPTURE_VERSION, 2);
    put_le(w, arch, 2);
    put_le(w, method, 2);
    put_le(w, 0, 2);
    put_le(w, pid, 4);
    put_le(w, crashed_tid, 4);
    put_le(w, nthreads, 4);
    put_le(w, nmodules, 4);
    put_le(w, note_len, 4);
    put_bytes(w, note, note_len);
}

void nwb_crash_capture_write_thread(nwb_crash_capture_writer_t *w, uint32_t tid, uint32_t flags,
                                    const char *name, const uint64_t *regs, unsigned nregs,
                                    uint64_t stack_start, const void *stack, size_t stack_len)
{
    uint8_t *p;

    put_le(w, tid, 4);
    put_le(w, flags, 4);
    p = room(w, NWB_CRASH_CAPTURE_NAME_MAX + 1);
    if (p != NULL) {
        size_t i = 0;

        for (; name != NULL && i < NWB_CRASH_CAPTURE_NAME_MAX && name[i] != '\0'; i++) {
            p[i] = (uint8_t)name[i];
        }
        for (; i <= NWB_CRASH_CAPTURE_NAME_MAX; i++) {
            p[i] = 0;
        }
    }
    put_le(w, nregs, 2);
    put_le(w, 0, 2);
    put_le(w, stack_len, 4);
    put_le(w, stack_start, 8);
    for (unsigned i = 0; i < nregs; i++) {
        put_le(w, regs[i], 8);
    }
    put_bytes(w, stack, stack_len);
}

void nwb_crash_capture_write_module(nwb_crash_capture_writer_t *w, uint64_t start, uint64_t end,
                                    uint64_t file_offset, const uint8_t *build_id,
                                    size_t build_id_len, const char *path, size_t path_len)
{
    put_le(w, start, 8);
    put_le(w, end, 8);
    put_le(w, file_offset, 8);
    put_le(w, build_id_len, 2);
    put_le(w, path_len, 2);
    put_le(w, 0, 4);
    put_bytes(w, build_id, build_id_len);
    put_bytes(w, path, path_len);
}

long nwb_crash_capture_writer_finish(const nwb_crash_capture_writer_t *w)
{
    return w->overflow ? -1 : (long)w->len;
}
