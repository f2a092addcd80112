/* SPDX-License-Identifier: MIT */
/*
 * crash_backtrace.c - a strict parser of crash.txt's [backtrace] section
 * (crash_backtrace.h).
 */
#include <stdio.h>
#include <string.h>

#include "crash_backtrace.h"

/* Hex digits "0x..." at @p s (@p len bytes, all of them): 0 and the value, or -1. */
static int parse_hex(const char *s, size_t len, uint64_t *out)
{
    uint64_t v = 0;

    if (len < 3 || len > 18 || s[0] != '0' || s[1] != 'x') {
        return -1;
    }
    for (size_t i = 2; i < len; i++) {
        const char c = s[i];
        unsigned d;

        if (c >= '0' && c <= '9') {
            d = (unsigned)(c - '0');
        } else if (c >= 'a' && c <= 'f') {
            d = (unsigned)(c - 'a' + 10);
        } else if (c >= 'A' && c <= 'F') {
            d = (unsigned)(c - 'A' + 10);
        } else {
            return -1;
        }
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* One frame line "#N 0xPC REST" where REST is "?" or "MODULE+0xOFF". 0 or -1 (@p why). */
static int parse_frame(const char *s, size_t len, unsigned want, struct nwb_crash_bt_frame *f,
                       char *why, size_t why_size)
{
    size_t i = 1;
    unsigned long n = 0;
    const char *sp;
    const char *rest;
    size_t rest_len;

    while (i < len && s[i] >= '0' && s[i] <= '9' && i < 6) {
        n = n * 10 + (unsigned long)(s[i] - '0');
        i++;
    }
    if (i == 1 || i >= len || s[i] != ' ' || n != want) {
        snprintf(why, why_size, "frame %u: expected \"#%u 0x...\"", want, want);
        return -1;
    }
    i++;
    sp = memchr(s + i, ' ', len - i);
    if (sp == NULL || parse_hex(s + i, (size_t)(sp - (s + i)), &f->pc) != 0) {
        snprintf(why, why_size, "frame %u: bad pc", want);
        return -1;
    }
    rest = sp + 1;
    rest_len = len - (size_t)(rest - s);
    if (rest_len == 1 && rest[0] == '?') {
        f->module = NULL;
        f->module_len = 0;
        f->offset = 0;
        return 0;
    }
    for (size_t k = rest_len; k >= 3; k--) {
        if (rest[k - 3] == '+' && rest[k - 2] == '0' && rest[k - 1] == 'x') {
            const size_t mlen = k - 3;

            if (mlen == 0 || mlen > NWB_CRASH_BT_MODULE_MAX ||
                parse_hex(rest + k - 2, rest_len - (k - 2), &f->offset) != 0) {
                break;
            }
            for (size_t c = 0; c < mlen; c++) {
                if ((unsigned char)rest[c] < 0x20 || rest[c] == 0x7f) {
                    snprintf(why, why_size, "frame %u: control byte in the module path", want);
                    return -1;
                }
            }
            f->module = rest;
            f->module_len = mlen;
            return 0;
        }
    }
    snprintf(why, why_size, "frame %u: expected \"MODULE+0xOFFSET\" or \"?\"", want);
    return -1;
}

int nwb_crash_bt_parse(const char *text, size_t len, struct nwb_crash_bt_frame *frames, size_t max,
                       char *why, size_t why_size)
{
    static const char header[] = "[backtrace]";
    size_t pos = 0, n = 0;
    int in_section = 0;

    if (len > NWB_CRASH_BT_TEXT_MAX) {
        len = NWB_CRASH_BT_TEXT_MAX;
    }
    if (max > NWB_CRASH_BT_FRAMES_MAX) {
        max = NWB_CRASH_BT_FRAMES_MAX;
    }
    while (pos < len) {
        const char *eol = memchr(text + pos, '\n', len - pos);
        const size_t end = eol != NULL ? (size_t)(eol - text) : len;
        const char *line = text + pos;
        size_t llen = end - pos;

        pos = end + 1;
        if (llen > 0 && line[llen - 1] == '\r') {
            llen--;
        }
        if (!in_section) {
            in_section = llen == sizeof(header) - 1 && memcmp(line, header, llen) == 0;
            continue;
        }
        if (llen == 0 || line[0] == '[') {
            break;
        }
        if (line[0] == '#' && llen > 1 && line[1] == ' ') {
            continue; /* a comment */
        }
        if (line[0] != '#') {
            snprintf(why, why_size, "frame %zu: a line that is not a frame", n);
            return -1;
        }
        if (n == max) {
            break; /* the bound: later frames do not change a signature */
        }
        if (parse_frame(line, llen, (unsigned)n, &frames[n], why, why_size) != 0) {
            return -1;
        }
        n++;
    }
    return (int)n;
}
