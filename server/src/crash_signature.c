/* SPDX-License-Identifier: MIT */
/*
 * crash_signature.c - grouping signatures of crashes (crash_signature.h): the skip list of
 * runtime and library frames, function-name normalisation and the group id.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "crash_ingest_int.h"
#include "crash_signature.h"

/*
 * Frames that say how a process dies, not where the bug is: the C library's abort and
 * signal paths, assertion reporting, the thread start-up code, and nwb's own handler.
 */
static const char *const default_skip[] = {
    "abort",
    "raise",
    "gsignal",
    "__GI_*",
    "__libc_*",
    "__pthread_kill*",
    "pthread_kill*",
    "__restore_rt",
    "__assert_fail*",
    "__assert_perror_fail",
    "__stack_chk_fail",
    "__fortify_fail",
    "__chk_fail",
    "__kill",
    "kill",
    "tgkill",
    "start_thread",
    "clone",
    "clone3",
    "__clone*",
    "_start",
    "nwb_crash_*",
    "nwb__crash_*",
    /* Modules, for frames without a function name (matched against the file name). */
    "libc.so*",
    "libc-*",
    "libpthread.so*",
    "ld-linux*",
    "libgcc_s.so*",
    "libstdc++.so*",
    "libasan.so*",
    "libubsan.so*",
    "libtsan.so*",
};

void nwb_crash_skip_defaults(struct nwb_crash_skip *skip)
{
    skip->count = 0;
    for (size_t i = 0; i < sizeof(default_skip) / sizeof(default_skip[0]); i++) {
        snprintf(skip->patterns[skip->count++], sizeof(skip->patterns[0]), "%s", default_skip[i]);
    }
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

int nwb_crash_skip_add_text(struct nwb_crash_skip *skip, const char *text, size_t len, char *why,
                            size_t why_size)
{
    struct nwb_crash_skip next = *skip;
    size_t pos = 0;
    unsigned line = 0;

    while (pos < len) {
        const char *eol = memchr(text + pos, '\n', len - pos);
        size_t end = eol != NULL ? (size_t)(eol - text) : len;
        size_t a = pos, b = end;

        line++;
        pos = end + 1;
        while (a < b && is_blank(text[a])) {
            a++;
        }
        while (b > a && is_blank(text[b - 1])) {
            b--;
        }
        if (a == b || text[a] == '#') {
            continue;
        }
        if (b - a > NWB_CRASH_SKIP_PATTERN_MAX) {
            snprintf(why, why_size, "line %u: pattern longer than %u bytes", line,
                     NWB_CRASH_SKIP_PATTERN_MAX);
            return -EINVAL;
        }
        for (size_t i = a; i < b; i++) {
            const unsigned char c = (unsigned char)text[i];

            if (c < 0x21 || c > 0x7e || c == '|') {
                snprintf(why, why_size, "line %u: byte 0x%02x is not allowed in a pattern", line,
                         c);
                return -EINVAL;
            }
            if (c == '*' && i + 1 != b) {
                snprintf(why, why_size, "line %u: '*' only at the end of a pattern", line);
                return -EINVAL;
            }
        }
        if (next.count == NWB_CRASH_SKIP_PATTERNS) {
            snprintf(why, why_size, "line %u: more than %u patterns", line,
                     NWB_CRASH_SKIP_PATTERNS);
            return -E2BIG;
        }
        memcpy(next.patterns[next.count], text + a, b - a);
        next.patterns[next.count][b - a] = '\0';
        next.count++;
    }
    *skip = next;
    return 0;
}

int nwb_crash_skip_matches(const struct nwb_crash_skip *skip, const char *function, size_t len)
{
    for (unsigned i = 0; i < skip->count; i++) {
        const char *p = skip->patterns[i];
        const size_t plen = strlen(p);

        if (plen > 0 && p[plen - 1] == '*') {
            if (len >= plen - 1 && memcmp(function, p, plen - 1) == 0) {
                return 1;
            }
        } else if (len == plen && memcmp(function, p, plen) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The length of @p s without a trailing GCC clone suffix, if it has one. */
static size_t strip_clone_suffix(const char *s, size_t len)
{
    static const char *const suffixes[] = {".cold", ".isra", ".constprop", ".part", ".lto_priv"};
    int again = 1;

    while (again) {
        size_t end = len;

        again = 0;
        /* A numbered suffix: ".isra.0". */
        while (end > 0 && s[end - 1] >= '0' && s[end - 1] <= '9') {
            end--;
        }
        if (end < len && end > 0 && s[end - 1] == '.') {
            end--;
        } else {
            end = len;
        }
        for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
            const size_t sl = strlen(suffixes[i]);

            if (end > sl && memcmp(s + end - sl, suffixes[i], sl) == 0) {
                len = end - sl;
                again = 1;
                break;
            }
        }
    }
    return len;
}

size_t nwb_crash_sig_normalise(const char *function, size_t len, char *out, size_t cap)
{
    size_t n = 0;

    if (cap == 0) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        if (function[i] == '(' && i > 0) {
            len = i;
            break;
        }
        if (function[i] == '+' && i + 2 < len && function[i + 1] == '0' && function[i + 2] == 'x') {
            len = i;
            break;
        }
    }
    len = strip_clone_suffix(function, len);
    while (len > 0 && is_blank(function[len - 1])) {
        len--;
    }
    for (size_t i = 0; i < len && n < NWB_CRASH_SIG_FRAME_MAX && n + 1 < cap; i++) {
        const unsigned char c = (unsigned char)function[i];

        out[n++] = c < 0x20 || c > 0x7e || c == '|' ? '?' : (char)c;
    }
    out[n] = '\0';
    return n;
}

/* The module's last path component. */
static const char *module_file(const struct nwb_crash_sig_frame *f, size_t *len)
{
    const char *m = f->module != NULL ? f->module : "";
    size_t mlen = f->module != NULL ? f->module_len : 0;

    for (size_t i = mlen; i > 0; i--) {
        if (m[i - 1] == '/') {
            *len = mlen - i;
            return m + i;
        }
    }
    *len = mlen;
    return m;
}

/* "file+0xOFFSET" of an unsymbolised frame: the module's last path component. */
static size_t module_frame(const struct nwb_crash_sig_frame *f, char *out, size_t cap)
{
    const char *m = f->module != NULL ? f->module : "";
    size_t mlen = f->module != NULL ? f->module_len : 0;
    char name[NWB_CRASH_SIG_FRAME_MAX + 1];
    size_t n;
    int w;

    for (size_t i = mlen; i > 0; i--) {
        if (m[i - 1] == '/') {
            m += i;
            mlen -= i;
            break;
        }
    }
    n = nwb_crash_sig_normalise(m, mlen, name, sizeof(name) - 24);
    w = snprintf(out, cap, "%s+0x%llx", n > 0 ? name : "?", (unsigned long long)f->module_offset);
    return w < 0 ? 0 : (size_t)w < cap ? (size_t)w : cap - 1;
}

size_t nwb_crash_signature(const char *signal_name, const struct nwb_crash_sig_frame *frames,
                           size_t n, const struct nwb_crash_skip *skip, char *out, size_t cap)
{
    char frame[NWB_CRASH_SIG_FRAME_MAX + 32];
    size_t len, used = 0;
    int pass;

    len = nwb_crash_sig_normalise(signal_name != NULL ? signal_name : "",
                                  signal_name != NULL ? strlen(signal_name) : 0, out,
                                  cap < NWB_CRASH_SIG_FRAME_MAX ? cap : NWB_CRASH_SIG_FRAME_MAX);
    if (len == 0 && cap > 1) {
        len = (size_t)snprintf(out, cap, "?");
    }
    /* Pass 0 takes the frames the skip list lets through; pass 1, only if none did, any. */
    for (pass = 0; pass < 2 && used == 0; pass++) {
        for (size_t i = 0; i < n && used < NWB_CRASH_SIG_FRAMES; i++) {
            const struct nwb_crash_sig_frame *f = &frames[i];
            size_t flen;

            if (f->function != NULL && f->function_len > 0) {
                flen = nwb_crash_sig_normalise(f->function, f->function_len, frame, sizeof(frame));
                if (pass == 0 && skip != NULL && nwb_crash_skip_matches(skip, frame, flen)) {
                    continue;
                }
            } else {
                size_t mlen;
                const char *m = module_file(f, &mlen);

                if (mlen == 0) {
                    continue; /* no function, no module: nothing stable to name */
                }
                if (pass == 0 && skip != NULL && mlen > 0 &&
                    nwb_crash_skip_matches(skip, m, mlen)) {
                    continue;
                }
                flen = module_frame(f, frame, sizeof(frame));
            }
            if (flen == 0 || len + 3 + flen > NWB_CRASH_SIG_MAX || len + 3 + flen + 1 > cap) {
                continue;
            }
            memcpy(out + len, " | ", 3);
            memcpy(out + len + 3, frame, flen);
            len += 3 + flen;
            out[len] = '\0';
            used++;
        }
    }
    return len;
}

void nwb_crash_group_id(const char *sig, size_t len, char out[NWB_CRASH_GROUP_ID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t digest[32];

    nwb__crash_sha256(sig, len, digest);
    for (unsigned i = 0; i < NWB_CRASH_GROUP_ID_LEN / 2; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[NWB_CRASH_GROUP_ID_LEN] = '\0';
}
