/* SPDX-License-Identifier: MIT */
/*
 * log_line_parse.c - log.txt lines back into columns (log_line_parse.h):
 *   2026-12-01T07:34:00.123456789Z INFO    4242[render] mygame main.c:42: message
 */
#include <string.h>

#include "nwb/error.h"

#include "../read_int.h"
#include "log_line_parse.h"

static const char *const level_text[] = {"INFO    ", "WARNING ", "ERROR   ", "FATAL   "};

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

    return era * 146097 + (int64_t)doe - 719468;
}

static int days_in_month(long y, long m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

    return m == 2 ? 28 + leap : days[m - 1];
}

/* "YYYY-mm-ddTHH:MM:SS.nnnnnnnnnZ" (30 bytes). 0, or -1. */
static int parse_time(const char *p, struct nwb__fwd_line *out)
{
    const long y = nwb__decimal_digits(p, 4), mo = nwb__decimal_digits(p + 5, 2);
    const long d = nwb__decimal_digits(p + 8, 2), h = nwb__decimal_digits(p + 11, 2);
    const long mi = nwb__decimal_digits(p + 14, 2), s = nwb__decimal_digits(p + 17, 2);
    const long ns = nwb__decimal_digits(p + 20, 9);
    int64_t sec;

    if (p[4] != '-' || p[7] != '-' || p[10] != 'T' || p[13] != ':' || p[16] != ':' ||
        p[19] != '.' || p[29] != 'Z' || y < 1970 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 ||
        mi < 0 || mi > 59 || s < 0 || s > 59 || ns < 0 || d > days_in_month(y, mo)) {
        return -1;
    }
    sec = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + s;
    /* The server's times are u64 nanoseconds: later than 2554 cannot be one of its lines. */
    if ((uint64_t)sec > (UINT64_MAX - (uint64_t)ns) / 1000000000u) {
        return -1;
    }
    out->time_s = (uint64_t)sec;
    out->time_ns = (uint32_t)ns;
    return 0;
}

/* "DIGITS:" at @p p..@p end ending at end[-1] == ':'; the number, or -1 (none, too big). */
static int64_t parse_file_line(const char *word, size_t len, size_t *file_len)
{
    size_t i;
    uint64_t v = 0;

    if (len < 4 || word[len - 1] != ':') {
        return -1;
    }
    i = len - 1;
    while (i > 0 && word[i - 1] >= '0' && word[i - 1] <= '9') {
        i--;
    }
    if (i == len - 1 || i < 2 || word[i - 1] != ':' || len - 1 - i > 10) {
        return -1;
    }
    for (size_t k = i; k < len - 1; k++) {
        v = v * 10 + (uint64_t)(word[k] - '0');
    }
    if (v > UINT32_MAX) {
        return -1;
    }
    *file_len = i - 1;
    return (int64_t)v;
}

int nwb__fwd_line_parse(const char *text, size_t len, struct nwb__fwd_line *out, const char **why)
{
    const char *p, *end = text + len;
    unsigned level;

    memset(out, 0, sizeof(*out));
    if (len > NWB__FWD_LINE_MAX) {
        *why = "line longer than 1052832 bytes";
        return NWB_EPROTO;
    }
    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)text[i];

        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            *why = "unescaped control byte in the line";
            return NWB_EPROTO;
        }
    }
    if (len < 31 || parse_time(text, out) != 0 || text[30] != ' ') {
        *why = "no UTC time (YYYY-mm-ddTHH:MM:SS.nnnnnnnnnZ) at the start";
        return NWB_EPROTO;
    }
    p = text + 31;
    for (level = 0; level < 4; level++) {
        if ((size_t)(end - p) >= 8 && memcmp(p, level_text[level], 8) == 0) {
            break;
        }
    }
    if (level == 4) {
        *why = "no level (INFO, WARNING, ERROR, FATAL) after the time";
        return NWB_EPROTO;
    }
    out->level = level;
    p += 8;
    {
        const char *const d0 = p;
        uint64_t id = 0;

        while (p < end && *p >= '0' && *p <= '9') {
            const unsigned dig = (unsigned)(*p - '0');

            if (id > (UINT64_MAX - dig) / 10) {
                *why = "thread id past 2^64";
                return NWB_EPROTO;
            }
            id = id * 10 + dig;
            p++;
        }
        if (p == d0 || p - d0 > 20) {
            *why = "no thread id after the level";
            return NWB_EPROTO;
        }
        out->thread_id = id;
    }
    if (p < end && *p == '[') {
        const char *close = memchr(p + 1, ']', (size_t)(end - p - 1));

        if (close == NULL || close == p + 1) {
            *why = "thread name without its closing ']'";
            return NWB_EPROTO;
        }
        out->thread_name = p + 1;
        out->thread_name_len = (size_t)(close - p - 1);
        for (size_t i = 0; i < out->thread_name_len; i++) {
            if (out->thread_name[i] == ' ' || out->thread_name[i] == '[') {
                *why = "unescaped space or '[' in the thread name";
                return NWB_EPROTO;
            }
        }
        p = close + 1;
    }
    if (p >= end || *p != ' ') {
        *why = "no space after the thread";
        return NWB_EPROTO;
    }
    p++;
    out->program = p;
    while (p < end && *p != ' ') {
        p++;
    }
    out->program_len = (size_t)(p - out->program);
    if (out->program_len == 0 || p >= end) {
        *why = "no program after the thread";
        return NWB_EPROTO;
    }
    p++;
    {
        const char *sp = memchr(p, ' ', (size_t)(end - p));

        if (sp != NULL) {
            size_t file_len = 0;
            const int64_t line = parse_file_line(p, (size_t)(sp - p), &file_len);

            if (line >= 0) {
                out->file = p;
                out->file_len = file_len;
                out->line = (uint32_t)line;
                p = sp + 1;
            }
        }
    }
    out->msg = p;
    out->msg_len = (size_t)(end - p);
    return 0;
}
