/* SPDX-License-Identifier: MIT */
/*
 * crash_frames.c - the strict reader of frames.tsv (crash_frames.h), nwb-symbolize's
 * machine-readable output: every line checked field by field within its bounds before a
 * callback sees it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "crash_frames.h"

#define FIELDS_MAX 10

/* Split @p line (no newline) at tabs into at most FIELDS_MAX fields; the count, or -1 when
 * there are more. */
static int split(const char *line, size_t len, struct nwb_crash_str *f)
{
    int n = 0;
    size_t start = 0;

    for (size_t i = 0; i <= len; i++) {
        if (i == len || line[i] == '\t') {
            if (n == FIELDS_MAX) {
                return -1;
            }
            f[n].s = line + start;
            f[n].len = i - start;
            n++;
            start = i + 1;
        }
    }
    return n;
}

static int is_hex_digit(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* 1..16 lowercase hex digits. */
static int parse_hex(struct nwb_crash_str f, uint64_t *v)
{
    *v = 0;
    if (f.len == 0 || f.len > 16) {
        return -1;
    }
    for (size_t i = 0; i < f.len; i++) {
        const char c = f.s[i];

        if (!is_hex_digit(c)) {
            return -1;
        }
        *v = *v << 4 | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    return 0;
}

/* A decimal number of 1..10 digits no larger than @p max. */
static int parse_dec(struct nwb_crash_str f, uint64_t max, uint64_t *v)
{
    *v = 0;
    if (f.len == 0 || f.len > 10) {
        return -1;
    }
    for (size_t i = 0; i < f.len; i++) {
        if (f.s[i] < '0' || f.s[i] > '9') {
            return -1;
        }
        *v = *v * 10 + (uint64_t)(f.s[i] - '0');
    }
    return *v <= max ? 0 : -1;
}

static int parse_flag(struct nwb_crash_str f, int *v)
{
    if (f.len != 1 || (f.s[0] != '0' && f.s[0] != '1')) {
        return -1;
    }
    *v = f.s[0] == '1';
    return 0;
}

/* A text field: at most @p max bytes, no control bytes. */
static int text_ok(struct nwb_crash_str f, size_t max)
{
    if (f.len > max) {
        return 0;
    }
    for (size_t i = 0; i < f.len; i++) {
        const unsigned char c = (unsigned char)f.s[i];

        if (c < 0x20 || c == 0x7f) {
            return 0;
        }
    }
    return 1;
}

/* Empty, or an even number (2..NWB_CRASH_FRAMES_BUILD_ID_MAX) of lowercase hex digits. */
static int build_id_ok(struct nwb_crash_str f)
{
    if (f.len % 2 != 0 || f.len > NWB_CRASH_FRAMES_BUILD_ID_MAX) {
        return 0;
    }
    for (size_t i = 0; i < f.len; i++) {
        if (!is_hex_digit(f.s[i])) {
            return 0;
        }
    }
    return 1;
}

static int field_is(struct nwb_crash_str f, const char *word)
{
    return f.len == strlen(word) && memcmp(f.s, word, f.len) == 0;
}

int nwb_crash_frames_parse(const char *text, size_t len, const struct nwb_crash_frames_cb *cb,
                           char *why, size_t why_size)
{
    const size_t magic_len = sizeof(NWB_CRASH_FRAMES_MAGIC) - 1;
    unsigned threads = 0, frames = 0, thread_frames = 0, missing = 0, lineno = 1;
    size_t pos;

    if (len > NWB_CRASH_FRAMES_TEXT_MAX) {
        snprintf(why, why_size, "frames file larger than %u bytes", NWB_CRASH_FRAMES_TEXT_MAX);
        return -E2BIG;
    }
    if (len < magic_len + 1 || memcmp(text, NWB_CRASH_FRAMES_MAGIC, magic_len) != 0 ||
        text[magic_len] != '\n') {
        snprintf(why, why_size, "line 1: not \"" NWB_CRASH_FRAMES_MAGIC "\"");
        return -EINVAL;
    }
    for (pos = magic_len + 1; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        const size_t end = nl != NULL ? (size_t)(nl - text) : len;
        struct nwb_crash_str f[FIELDS_MAX];
        const int n = split(text + pos, end - pos, f);
        int rc = 0;

        lineno++;
        pos = end + 1;
        if (nl == NULL) {
            snprintf(why, why_size, "line %u: no newline at the end", lineno);
            return -EINVAL;
        }
        if (n >= 4 && field_is(f[0], "thread")) {
            uint64_t tid;
            int crashed;

            if (n != 4 || parse_dec(f[1], UINT32_MAX, &tid) != 0 ||
                parse_flag(f[2], &crashed) != 0 || !text_ok(f[3], NWB_CRASH_FRAMES_NAME_MAX)) {
                snprintf(why, why_size, "line %u: bad thread record", lineno);
                return -EINVAL;
            }
            if (crashed && threads != 0) {
                snprintf(why, why_size, "line %u: only the first thread can be the crashed one",
                         lineno);
                return -EINVAL;
            }
            if (++threads > NWB_CRASH_FRAMES_THREADS_MAX) {
                snprintf(why, why_size, "line %u: more than %u threads", lineno,
                         NWB_CRASH_FRAMES_THREADS_MAX);
                return -EINVAL;
            }
            thread_frames = 0;
            rc = cb->thread != NULL ? cb->thread(cb->ctx, (uint32_t)tid, crashed, f[3]) : 0;
        } else if (n >= 1 && field_is(f[0], "frame")) {
            struct nwb_crash_frame_rec r;
            uint64_t line;

            memset(&r, 0, sizeof(r));
            if (n != 10 || parse_hex(f[1], &r.pc) != 0 ||
                !text_ok(f[2], NWB_CRASH_FRAMES_MODULE_MAX) || !build_id_ok(f[3]) ||
                parse_hex(f[4], &r.offset) != 0 || !text_ok(f[5], NWB_CRASH_FRAMES_FUNCTION_MAX) ||
                !text_ok(f[6], NWB_CRASH_FRAMES_FILE_MAX) ||
                parse_dec(f[7], UINT32_MAX, &line) != 0 || parse_flag(f[8], &r.inlined) != 0 ||
                parse_flag(f[9], &r.symbolized) != 0) {
                snprintf(why, why_size, "line %u: bad frame record", lineno);
                return -EINVAL;
            }
            if (threads == 0) {
                snprintf(why, why_size, "line %u: a frame before any thread", lineno);
                return -EINVAL;
            }
            if (++thread_frames > NWB_CRASH_FRAMES_PER_THREAD ||
                ++frames > NWB_CRASH_FRAMES_TOTAL_MAX) {
                snprintf(why, why_size, "line %u: more than %u frames in a thread or %u in all",
                         lineno, NWB_CRASH_FRAMES_PER_THREAD, NWB_CRASH_FRAMES_TOTAL_MAX);
                return -EINVAL;
            }
            r.module = f[2];
            r.build_id = f[3];
            r.function = f[5];
            r.file = f[6];
            r.line = (unsigned)line;
            rc = cb->frame != NULL ? cb->frame(cb->ctx, &r) : 0;
        } else if (n >= 1 && field_is(f[0], "missing")) {
            if (n != 3 || f[1].len == 0 || !build_id_ok(f[1]) ||
                !text_ok(f[2], NWB_CRASH_FRAMES_MODULE_MAX)) {
                snprintf(why, why_size, "line %u: bad missing record", lineno);
                return -EINVAL;
            }
            if (++missing > NWB_CRASH_FRAMES_MISSING_MAX) {
                snprintf(why, why_size, "line %u: more than %u missing modules", lineno,
                         NWB_CRASH_FRAMES_MISSING_MAX);
                return -EINVAL;
            }
            rc = cb->missing != NULL ? cb->missing(cb->ctx, f[1], f[2]) : 0;
        } else {
            snprintf(why, why_size, "line %u: unknown record", lineno);
            return -EINVAL;
        }
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}
