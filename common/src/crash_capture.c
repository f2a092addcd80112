/* SPDX-License-Identifier: MIT */
/*
 * crash_capture.c - the strict reader of the crash capture file
 * (threads.nwbc, docs/crash-capture-format.md): checks every field and
 * bound, and fills views that borrow the caller's buffer.
 */
#include "nwb/crash_capture.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/byte_order.h"

#define HEADER_SIZE 32u
#define THREAD_SIZE 40u
#define MODULE_SIZE 32u

typedef struct reader {
    const uint8_t *p;
    size_t len;
    size_t off;
    char *why;
    size_t why_size;
} reader_t;

static int reject(reader_t *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int reject(reader_t *r, int code, const char *fmt, ...)
{
    if (r->why != NULL && r->why_size > 0) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(r->why, r->why_size, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* 1 when @p n more bytes are in the buffer at the read offset. */
static int have(const reader_t *r, size_t n)
{
    return n <= r->len - r->off;
}

static unsigned arch_nregs(unsigned arch)
{
    switch (arch) {
    case NWB_CRASH_ARCH_X86_64:
        return NWB_CRASH_REGS_X86_64;
    case NWB_CRASH_ARCH_AARCH64:
        return NWB_CRASH_REGS_AARCH64;
    default:
        return 0;
    }
}

static int read_thread(reader_t *r, unsigned nregs_want, size_t index, nwb_crash_thread_view_t *t)
{
    const uint8_t *h;
    unsigned nregs;
    uint32_t stack_len;
    size_t name_len;

    if (!have(r, THREAD_SIZE)) {
        return reject(r, -EINVAL, "thread %zu: record truncated at offset %zu", index, r->off);
    }
    h = r->p + r->off;
    t->tid = nwb_le32_load(h);
    t->flags = nwb_le32_load(h + 4);
    if ((t->flags & ~(uint32_t)(NWB_CRASH_THREAD_CRASHED | NWB_CRASH_THREAD_SIGNAL_REGS)) != 0) {
        return reject(r, -EINVAL, "thread %zu: unknown flags 0x%x", index, (unsigned)t->flags);
    }
    name_len = strnlen((const char *)h + 8, NWB_CRASH_CAPTURE_NAME_MAX + 1);
    if (name_len > NWB_CRASH_CAPTURE_NAME_MAX) {
        return reject(r, -EINVAL, "thread %zu: name not NUL-terminated in 16 bytes", index);
    }
    for (size_t i = name_len; i <= NWB_CRASH_CAPTURE_NAME_MAX; i++) {
        if (h[8 + i] != 0) {
            return reject(r, -EINVAL, "thread %zu: name padding not NUL", index);
        }
    }
    memcpy(t->name, h + 8, name_len);
    t->name[name_len] = '\0';
    nregs = nwb_le16_load(h + 24);
    if (nregs != nregs_want) {
        return reject(r, -EINVAL, "thread %zu: nregs %u, the arch has %u", index, nregs,
                      nregs_want);
    }
    if (nwb_le16_load(h + 26) != 0) {
        return reject(r, -EINVAL, "thread %zu: reserved field not 0", index);
    }
    stack_len = nwb_le32_load(h + 28);
    if (stack_len > NWB_CRASH_CAPTURE_STACK_MAX) {
        return reject(r, -E2BIG, "thread %zu: stack_len %u over %u", index, (unsigned)stack_len,
                      NWB_CRASH_CAPTURE_STACK_MAX);
    }
    t->stack_start = nwb_le64_load(h + 32);
    if (t->stack_start > UINT64_MAX - stack_len) {
        return reject(r, -EINVAL, "thread %zu: stack_start + stack_len wraps", index);
    }
    r->off += THREAD_SIZE;
    if (!have(r, (size_t)nregs * 8u)) {
        return reject(r, -EINVAL, "thread %zu: registers truncated at offset %zu", index, r->off);
    }
    t->nregs = nregs;
    for (unsigned i = 0; i < nregs; i++) {
        t->regs[i] = nwb_le64_load(r->p + r->off + (size_t)i * 8u);
    }
    r->off += (size_t)nregs * 8u;
    if (!have(r, stack_len)) {
        return reject(r, -EINVAL, "thread %zu: stack truncated at offset %zu", index, r->off);
    }
    t->stack = r->p + r->off;
    t->stack_len = stack_len;
    r->off += stack_len;
    return 0;
}

static int read_module(reader_t *r, size_t index, nwb_crash_module_view_t *m)
{
    const uint8_t *h;

    if (!have(r, MODULE_SIZE)) {
        return reject(r, -EINVAL, "module %zu: record truncated at offset %zu", index, r->off);
    }
    h = r->p + r->off;
    m->start = nwb_le64_load(h);
    m->end = nwb_le64_load(h + 8);
    m->file_offset = nwb_le64_load(h + 16);
    m->build_id_len = nwb_le16_load(h + 24);
    m->path_len = nwb_le16_load(h + 26);
    if (m->end <= m->start) {
        return reject(r, -EINVAL, "module %zu: end 0x%llx not above start 0x%llx", index,
                      (unsigned long long)m->end, (unsigned long long)m->start);
    }
    if (m->build_id_len > NWB_CRASH_CAPTURE_BUILD_ID_MAX) {
        return reject(r, -E2BIG, "module %zu: build_id_len %zu over %u", index, m->build_id_len,
                      NWB_CRASH_CAPTURE_BUILD_ID_MAX);
    }
    if (m->path_len == 0) {
        return reject(r, -EINVAL, "module %zu: empty path", index);
    }
    if (m->path_len > NWB_CRASH_CAPTURE_PATH_MAX) {
        return reject(r, -E2BIG, "module %zu: path_len %zu over %u", index, m->path_len,
                      NWB_CRASH_CAPTURE_PATH_MAX);
    }
    if (nwb_le32_load(h + 28) != 0) {
        return reject(r, -EINVAL, "module %zu: reserved field not 0", index);
    }
    r->off += MODULE_SIZE;
    if (!have(r, m->build_id_len + m->path_len)) {
        return reject(r, -EINVAL, "module %zu: build id or path truncated at offset %zu", index,
                      r->off);
    }
    m->build_id = m->build_id_len != 0 ? r->p + r->off : NULL;
    r->off += m->build_id_len;
    m->path = (const char *)r->p + r->off;
    if (memchr(m->path, '\0', m->path_len) != NULL) {
        return reject(r, -EINVAL, "module %zu: NUL byte in path", index);
    }
    r->off += m->path_len;
    return 0;
}

static int check_threads(reader_t *r, const nwb_crash_capture_view_t *v)
{
    for (size_t i = 0; i < v->nthreads; i++) {
        const nwb_crash_thread_view_t *t = &v->threads[i];
        int crashed = (t->flags & NWB_CRASH_THREAD_CRASHED) != 0;

        if (i == 0 && !crashed) {
            return reject(r, -EINVAL, "thread 0 (tid %u) is not the crashed thread",
                          (unsigned)t->tid);
        }
        if (i > 0 && crashed) {
            return reject(r, -EINVAL, "thread %zu (tid %u): a second crashed thread", i,
                          (unsigned)t->tid);
        }
        if (i == 0 && t->tid != v->crashed_tid) {
            return reject(r, -EINVAL, "crashed thread tid %u, header says %u", (unsigned)t->tid,
                          (unsigned)v->crashed_tid);
        }
        for (size_t j = 0; j < i; j++) {
            if (v->threads[j].tid == t->tid) {
                return reject(r, -EINVAL, "thread %zu: duplicate tid %u", i, (unsigned)t->tid);
            }
        }
    }
    return 0;
}

static int parse(reader_t *r, nwb_crash_capture_view_t *v)
{
    const uint8_t *h = r->p;
    unsigned version, nregs;
    uint32_t nthreads, nmodules, note_len;
    int rc;

    if (r->len > NWB_CRASH_CAPTURE_FILE_MAX) {
        return reject(r, -E2BIG, "file of %zu bytes over %u", r->len, NWB_CRASH_CAPTURE_FILE_MAX);
    }
    if (r->len < 4 || nwb_le32_load(h) != NWB_CRASH_CAPTURE_MAGIC) {
        return reject(r, -EINVAL, r->len < 4 ? "file shorter than the magic" : "bad magic");
    }
    if (r->len < HEADER_SIZE) {
        return reject(r, -EINVAL, "header truncated (%zu of %u bytes)", r->len, HEADER_SIZE);
    }
    version = nwb_le16_load(h + 4);
    if (version != NWB_CRASH_CAPTURE_VERSION) {
        return reject(r, -EINVAL, "unknown version %u", version);
    }
    v->arch = nwb_le16_load(h + 6);
    nregs = arch_nregs(v->arch);
    if (nregs == 0) {
        return reject(r, -EINVAL, "unknown arch %u", v->arch);
    }
    v->method = nwb_le16_load(h + 8);
    if (v->method != NWB_CRASH_CAPTURE_PTRACE && v->method != NWB_CRASH_CAPTURE_IN_PROCESS) {
        return reject(r, -EINVAL, "unknown method %u", v->method);
    }
    if (nwb_le16_load(h + 10) != 0) {
        return reject(r, -EINVAL, "header reserved field not 0");
    }
    v->pid = nwb_le32_load(h + 12);
    v->crashed_tid = nwb_le32_load(h + 16);
    nthreads = nwb_le32_load(h + 20);
    nmodules = nwb_le32_load(h + 24);
    note_len = nwb_le32_load(h + 28);
    if (nthreads == 0) {
        return reject(r, -EINVAL, "no thread records");
    }
    if (nthreads > NWB_CRASH_CAPTURE_THREADS_MAX) {
        return reject(r, -E2BIG, "nthreads %u over %u", (unsigned)nthreads,
                      NWB_CRASH_CAPTURE_THREADS_MAX);
    }
    if (nmodules > NWB_CRASH_CAPTURE_MODULES_MAX) {
        return reject(r, -E2BIG, "nmodules %u over %u", (unsigned)nmodules,
                      NWB_CRASH_CAPTURE_MODULES_MAX);
    }
    if (note_len > NWB_CRASH_CAPTURE_NOTE_MAX) {
        return reject(r, -E2BIG, "note_len %u over %u", (unsigned)note_len,
                      NWB_CRASH_CAPTURE_NOTE_MAX);
    }
    r->off = HEADER_SIZE;
    if (!have(r, note_len)) {
        return reject(r, -EINVAL, "note truncated at offset %zu", r->off);
    }
    v->note = (const char *)h + r->off;
    v->note_len = note_len;
    if (memchr(v->note, '\0', note_len) != NULL) {
        return reject(r, -EINVAL, "NUL byte in the note");
    }
    r->off += note_len;

    /* Every thread record is at least THREAD_SIZE + 8 * nregs bytes: refuse a count the file
     * cannot hold before allocating for it. */
    if ((r->len - r->off) / (THREAD_SIZE + 8u * nregs) < nthreads) {
        return reject(r, -EINVAL, "%u thread records do not fit in the file", (unsigned)nthreads);
    }
    v->threads = nwb_calloc(nthreads, sizeof(*v->threads));
    if (v->threads == NULL) {
        return reject(r, -ENOMEM, "out of memory for %u threads", (unsigned)nthreads);
    }
    v->nthreads = nthreads;
    for (size_t i = 0; i < nthreads; i++) {
        if ((rc = read_thread(r, nregs, i, &v->threads[i])) != 0) {
            return rc;
        }
    }
    if ((rc = check_threads(r, v)) != 0) {
        return rc;
    }

    if ((r->len - r->off) / (MODULE_SIZE + 1u) < nmodules) {
        return reject(r, -EINVAL, "%u module records do not fit in the file", (unsigned)nmodules);
    }
    if (nmodules > 0) {
        v->modules = nwb_calloc(nmodules, sizeof(*v->modules));
        if (v->modules == NULL) {
            return reject(r, -ENOMEM, "out of memory for %u modules", (unsigned)nmodules);
        }
    }
    v->nmodules = nmodules;
    for (size_t i = 0; i < nmodules; i++) {
        if ((rc = read_module(r, i, &v->modules[i])) != 0) {
            return rc;
        }
        if (i > 0 && v->modules[i].start < v->modules[i - 1].end) {
            return reject(r, -EINVAL, "module %zu: start 0x%llx not after module %zu's end 0x%llx",
                          i, (unsigned long long)v->modules[i].start, i - 1,
                          (unsigned long long)v->modules[i - 1].end);
        }
    }
    if (r->off != r->len) {
        return reject(r, -EINVAL, "%zu trailing bytes after the last module", r->len - r->off);
    }
    return 0;
}

int nwb_crash_capture_parse(const void *buf, size_t len, nwb_crash_capture_view_t *out, char *why,
                            size_t why_size)
{
    reader_t r = {.p = buf, .len = len, .off = 0, .why = why, .why_size = why_size};
    int rc;

    if (why != NULL && why_size > 0) {
        why[0] = '\0';
    }
    if (out == NULL) {
        return -EINVAL;
    }
    memset(out, 0, sizeof(*out));
    if (buf == NULL && len > 0) {
        return reject(&r, -EINVAL, "no buffer");
    }
    rc = parse(&r, out);
    if (rc != 0) {
        nwb_crash_capture_view_free(out);
    }
    return rc;
}

void nwb_crash_capture_view_free(nwb_crash_capture_view_t *view)
{
    if (view == NULL) {
        return;
    }
    nwb_free(view->threads);
    nwb_free(view->modules);
    memset(view, 0, sizeof(*view));
}
