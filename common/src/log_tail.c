/* SPDX-License-Identifier: MIT */
/*
 * log_tail.c - a fixed ring of the most recent log lines for crash packages.
 * The writer publishes its position with release stores; the crash handler
 * reads the ring with plain loads and write(2), which is all a signal
 * handler may do.
 */
#include <stdatomic.h>
#include <string.h>

#include "nwb/file_io.h"
#include "nwb/log.h"
#include "nwb/log_tail.h"

static char tail_ring[NWB_LOG_TAIL_BYTES];
static atomic_uint_fast64_t tail_head; /* total bytes ever appended */
static atomic_int tail_on;

void nwb_log_tail_enable(int on)
{
    atomic_store_explicit(&tail_on, on != 0, memory_order_relaxed);
}

int nwb_log_tail_enabled(void)
{
    return atomic_load_explicit(&tail_on, memory_order_relaxed);
}

static char *put_u64(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0) {
        *p++ = tmp[--n];
    }
    return p;
}

static void ring_put(uint64_t at, const char *src, size_t len)
{
    const size_t off = (size_t)(at % NWB_LOG_TAIL_BYTES);
    const size_t first = len < NWB_LOG_TAIL_BYTES - off ? len : NWB_LOG_TAIL_BYTES - off;

    memcpy(tail_ring + off, src, first);
    memcpy(tail_ring, src + first, len - first);
}

void nwb_log_tail_append(const nwb_log_record_t *rec)
{
    char line[NWB_LOG_TAIL_LINE_MAX + 160];
    const char *level = nwb_log_level_name(rec->level);
    size_t msg = rec->msg_len, file = rec->file_len > 128 ? 128 : rec->file_len;
    char *p = line;
    uint64_t head;

    p = put_u64(p, rec->time_ns);
    *p++ = ' ';
    memcpy(p, level, strlen(level));
    p += strlen(level);
    *p++ = ' ';
    p = put_u64(p, rec->thread_id);
    *p++ = ' ';
    if (file > 0) {
        memcpy(p, rec->file, file);
        p += file;
        *p++ = ':';
        p = put_u64(p, rec->line);
        *p++ = ':';
        *p++ = ' ';
    }
    if (msg > NWB_LOG_TAIL_LINE_MAX) {
        msg = NWB_LOG_TAIL_LINE_MAX;
    }
    for (size_t i = 0; i < msg; i++) {
        const char c = rec->msg[i];

        *p++ = (c == '\n' || c == '\r') ? ' ' : c;
    }
    if (msg < rec->msg_len) {
        memcpy(p, "...", 3);
        p += 3;
    }
    *p++ = '\n';
    head = atomic_load_explicit(&tail_head, memory_order_relaxed);
    ring_put(head, line, (size_t)(p - line));
    atomic_store_explicit(&tail_head, head + (uint64_t)(p - line), memory_order_release);
}

static size_t tail_start(uint64_t head, size_t *len)
{
    /* Skip the partial line at the oldest end once the ring has wrapped. */
    if (head <= NWB_LOG_TAIL_BYTES) {
        *len = (size_t)head;
        return 0;
    }
    {
        size_t skip = 0;
        const size_t start = (size_t)(head % NWB_LOG_TAIL_BYTES);

        while (skip < NWB_LOG_TAIL_BYTES &&
               tail_ring[(start + skip) % NWB_LOG_TAIL_BYTES] != '\n') {
            skip++;
        }
        skip = skip < NWB_LOG_TAIL_BYTES ? skip + 1 : 0;
        *len = NWB_LOG_TAIL_BYTES - skip;
        return (start + skip) % NWB_LOG_TAIL_BYTES;
    }
}

long nwb_log_tail_write_fd(int fd)
{
    const uint64_t head = atomic_load_explicit(&tail_head, memory_order_acquire);
    size_t len;
    const size_t start = tail_start(head, &len);
    const size_t first = len < NWB_LOG_TAIL_BYTES - start ? len : NWB_LOG_TAIL_BYTES - start;

    /* nwb_write_all is async-signal-safe: the crash handler calls this. */
    if (nwb_write_all(fd, tail_ring + start, first) != 0 ||
        nwb_write_all(fd, tail_ring, len - first) != 0) {
        return -1;
    }
    return (long)len;
}

size_t nwb_log_tail_copy(char *dst, size_t cap)
{
    const uint64_t head = atomic_load_explicit(&tail_head, memory_order_acquire);
    size_t len;
    size_t start = tail_start(head, &len);
    size_t first;

    if (len > cap) { /* keep the newest bytes */
        start = (start + (len - cap)) % NWB_LOG_TAIL_BYTES;
        len = cap;
    }
    first = len < NWB_LOG_TAIL_BYTES - start ? len : NWB_LOG_TAIL_BYTES - start;
    memcpy(dst, tail_ring + start, first);
    memcpy(dst + first, tail_ring, len - first);
    return len;
}

void nwb_log_tail_reset(void)
{
    atomic_store(&tail_head, 0);
}
