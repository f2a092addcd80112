/* SPDX-License-Identifier: MIT */
/* log_line.c - the one-line text form of a record (nwb/log_line.h) and time helpers. */
#include <string.h>
#include <time.h>

#include "nwb/log.h"
#include "nwb/log_line.h"

uint64_t nwb_time_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t nwb_time_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static char *put_digits(char *p, unsigned v, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return p + width;
}

static void civil_from_seconds(int64_t sec, struct tm *tm)
{
    const time_t t = (time_t)sec;

    gmtime_r(&t, tm);
}

void nwb_time_compact(uint64_t time_ns, char out[16])
{
    struct tm tm;
    char *p = out;

    civil_from_seconds((int64_t)(time_ns / 1000000000u), &tm);
    p = put_digits(p, (unsigned)(tm.tm_year + 1900), 4);
    p = put_digits(p, (unsigned)(tm.tm_mon + 1), 2);
    p = put_digits(p, (unsigned)tm.tm_mday, 2);
    *p++ = '-';
    p = put_digits(p, (unsigned)tm.tm_hour, 2);
    p = put_digits(p, (unsigned)tm.tm_min, 2);
    p = put_digits(p, (unsigned)tm.tm_sec, 2);
    *p = '\0';
}

static void clock_update(nwb_log_line_clock_t *clock, int64_t sec)
{
    struct tm tm;
    char *p = clock->text;

    civil_from_seconds(sec, &tm);
    p = put_digits(p, (unsigned)(tm.tm_year + 1900), 4);
    *p++ = '-';
    p = put_digits(p, (unsigned)(tm.tm_mon + 1), 2);
    *p++ = '-';
    p = put_digits(p, (unsigned)tm.tm_mday, 2);
    *p++ = 'T';
    p = put_digits(p, (unsigned)tm.tm_hour, 2);
    *p++ = ':';
    p = put_digits(p, (unsigned)tm.tm_min, 2);
    *p++ = ':';
    p = put_digits(p, (unsigned)tm.tm_sec, 2);
    *p = '\0';
    clock->sec = sec;
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

/* Nonzero when any byte of @p w is below 0x20 or equal to 0x7f (SWAR, Hacker's Delight 6-1). */
static inline uint64_t word_needs_escape(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    const uint64_t del = w ^ (0x7full * ones);

    return ((w - 0x20u * ones) & ~w & highs) | ((del - ones) & ~del & highs);
}

/* Copy the message, escaping bytes that would break the one-line form. Most
 * messages have none: whole 8-byte words are checked and copied at once. */
static char *put_escaped(char *p, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0;

    while (i < len) {
        unsigned char c;

        if (i + 8 <= len) {
            uint64_t w;

            memcpy(&w, u + i, 8);
            if (word_needs_escape(w) == 0) {
                i += 8;
                continue;
            }
        }
        c = u[i];
        if (NWB_LIKELY(c >= 0x20 && c != 0x7f) || c == '\t') {
            i++;
            continue;
        }
        memcpy(p, s + run, i - run);
        p += i - run;
        run = i + 1;
        *p++ = '\\';
        if (c == '\n') {
            *p++ = 'n';
        } else if (c == '\r') {
            *p++ = 'r';
        } else {
            *p++ = 'x';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 15];
        }
        i++;
    }
    memcpy(p, s + run, len - run);
    return p + (len - run);
}

size_t nwb_log_line_format(char *dst, size_t cap, nwb_log_line_clock_t *clock,
                           const nwb_log_record_t *rec, const char *program, size_t program_len)
{
    static const char *const levels[NWB_LOG_LEVEL_COUNT] = {"INFO    ", "WARNING ", "ERROR   ",
                                                            "FATAL   "};
    const int64_t sec = (int64_t)(rec->time_ns / 1000000000u);
    const unsigned nsec = (unsigned)(rec->time_ns % 1000000000u);
    char *p = dst;

    (void)cap; /* the caller sized dst with nwb_log_line_max() */
    if (clock->sec != sec) {
        clock_update(clock, sec);
    }
    memcpy(p, clock->text, 19);
    p += 19;
    *p++ = '.';
    p = put_digits(p, nsec, 9);
    *p++ = 'Z';
    *p++ = ' ';
    memcpy(p, levels[rec->level < NWB_LOG_LEVEL_COUNT ? rec->level : 0], 8);
    p += 8;
    p = put_u64(p, rec->thread_id);
    *p++ = ' ';
    memcpy(p, program, program_len);
    p += program_len;
    *p++ = ' ';
    if (rec->file_len > 0) {
        p = put_escaped(p, rec->file, rec->file_len);
        *p++ = ':';
        p = put_u64(p, rec->line);
        *p++ = ':';
        *p++ = ' ';
    }
    p = put_escaped(p, rec->msg, rec->msg_len);
    *p++ = '\n';
    return (size_t)(p - dst);
}
