/* SPDX-License-Identifier: MIT */
/*
 * crash_sigsafe.c - text output that is safe inside a fatal-signal handler:
 * a buffered writer over write(2) with a byte cap, number and time
 * formatting without stdio or locale, and signal / si_code names.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../capture_int.h"

static const char truncated_mark[] = "\n[truncated]\n";

size_t nwb__crash_strlen(const char *s)
{
    size_t n = 0;

    while (s[n] != '\0') {
        n++;
    }
    return n;
}

size_t nwb__crash_strlcpy(char *dst, const char *src, size_t cap)
{
    size_t n = 0;

    if (cap == 0) {
        return 0;
    }
    while (src[n] != '\0' && n + 1 < cap) {
        dst[n] = src[n];
        n++;
    }
    dst[n] = '\0';
    return n;
}

void nwb__sw_init(struct nwb__sw *w, int fd, size_t limit)
{
    w->fd = fd;
    w->err = fd < 0;
    w->limit = limit;
    w->total = 0;
    w->used = 0;
    w->cut = 0;
}

static void sw_drain(struct nwb__sw *w)
{
    if (w->used > 0 && !w->err && nwb_write_all(w->fd, w->buf, w->used) != 0) {
        w->err = 1;
    }
    w->used = 0;
}

void nwb__sw_mem(struct nwb__sw *w, const void *p, size_t n)
{
    const char *c = p;

    if (w->err || w->cut) {
        return;
    }
    if (w->total + n > w->limit) {
        n = w->limit - w->total;
        w->cut = 1;
    }
    w->total += n;
    while (n > 0) {
        const size_t room = sizeof(w->buf) - w->used;
        const size_t k = n < room ? n : room;

        memcpy(w->buf + w->used, c, k);
        w->used += k;
        c += k;
        n -= k;
        if (w->used == sizeof(w->buf)) {
            sw_drain(w);
        }
    }
}

void nwb__sw_str(struct nwb__sw *w, const char *s)
{
    nwb__sw_mem(w, s, nwb__crash_strlen(s));
}

void nwb__sw_chr(struct nwb__sw *w, char c)
{
    nwb__sw_mem(w, &c, 1);
}

void nwb__sw_u64(struct nwb__sw *w, uint64_t v)
{
    char tmp[20];
    int n = 0;

    do {
        tmp[sizeof(tmp) - 1 - (size_t)n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    nwb__sw_mem(w, tmp + sizeof(tmp) - (size_t)n, (size_t)n);
}

void nwb__sw_i64(struct nwb__sw *w, int64_t v)
{
    if (v < 0) {
        nwb__sw_chr(w, '-');
        nwb__sw_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        nwb__sw_u64(w, (uint64_t)v);
    }
}

void nwb__sw_hex(struct nwb__sw *w, uint64_t v, int digits)
{
    static const char hex[] = "0123456789abcdef";
    char tmp[18];
    int n = 0;

    if (digits < 1) {
        digits = 1;
    }
    if (digits > 16) {
        digits = 16;
    }
    while (v != 0 || n < digits) {
        tmp[sizeof(tmp) - 1 - (size_t)n++] = hex[v & 15];
        v >>= 4;
    }
    tmp[sizeof(tmp) - 1 - (size_t)n++] = 'x';
    tmp[sizeof(tmp) - 1 - (size_t)n++] = '0';
    nwb__sw_mem(w, tmp + sizeof(tmp) - (size_t)n, (size_t)n);
}

void nwb__sw_esc(struct nwb__sw *w, const char *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)p[i];

        if (c == '\\') {
            nwb__sw_mem(w, "\\\\", 2);
        } else if (c < 0x20 || c == 0x7f) {
            const char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};

            nwb__sw_mem(w, e, 4);
        } else {
            nwb__sw_chr(w, (char)c);
        }
    }
}

void nwb__sw_kv(struct nwb__sw *w, const char *key, const char *value)
{
    nwb__sw_str(w, key);
    nwb__sw_chr(w, '=');
    nwb__sw_esc(w, value, nwb__crash_strlen(value));
    nwb__sw_chr(w, '\n');
}

/* Civil date from days since 1970-01-01 (H. Hinnant's algorithm), no libc state. */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    {
        const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
        const unsigned doe = (unsigned)(z - era * 146097);
        const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        const unsigned mp = (5 * doy + 2) / 153;

        *d = doy - (153 * mp + 2) / 5 + 1;
        *m = mp < 10 ? mp + 3 : mp - 9;
        *y = (int64_t)yoe + era * 400 + (*m <= 2);
    }
}

struct civil {
    int64_t year;
    unsigned mon, day, hour, min, sec;
    unsigned nsec;
};

static void to_civil(uint64_t time_ns, struct civil *c)
{
    const uint64_t secs = time_ns / 1000000000u;
    const uint64_t sod = secs % 86400u;

    c->nsec = (unsigned)(time_ns % 1000000000u);
    civil_from_days((int64_t)(secs / 86400u), &c->year, &c->mon, &c->day);
    c->hour = (unsigned)(sod / 3600u);
    c->min = (unsigned)(sod / 60u % 60u);
    c->sec = (unsigned)(sod % 60u);
}

static char *put_dec(char *p, unsigned v, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return p + width;
}

void nwb__sw_time(struct nwb__sw *w, uint64_t time_ns)
{
    struct civil c;
    char buf[40];
    char *p = buf;

    to_civil(time_ns, &c);
    p = put_dec(p, (unsigned)c.year, 4);
    *p++ = '-';
    p = put_dec(p, c.mon, 2);
    *p++ = '-';
    p = put_dec(p, c.day, 2);
    *p++ = 'T';
    p = put_dec(p, c.hour, 2);
    *p++ = ':';
    p = put_dec(p, c.min, 2);
    *p++ = ':';
    p = put_dec(p, c.sec, 2);
    *p++ = '.';
    p = put_dec(p, c.nsec, 9);
    *p++ = 'Z';
    nwb__sw_mem(w, buf, (size_t)(p - buf));
}

void nwb__crash_time_compact(char out[16], uint64_t time_ns)
{
    struct civil c;
    char *p = out;

    to_civil(time_ns, &c);
    p = put_dec(p, (unsigned)c.year, 4);
    p = put_dec(p, c.mon, 2);
    p = put_dec(p, c.day, 2);
    *p++ = '-';
    p = put_dec(p, c.hour, 2);
    p = put_dec(p, c.min, 2);
    p = put_dec(p, c.sec, 2);
    *p = '\0';
}

uint64_t nwb__crash_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int nwb__sw_flush(struct nwb__sw *w)
{
    const int cut = w->cut;

    sw_drain(w);
    if (cut && !w->err && nwb_write_all(w->fd, truncated_mark, sizeof(truncated_mark) - 1)) {
        w->err = 1;
    }
    w->cut = 0;
    return w->err ? -1 : 0;
}

const char *nwb__crash_signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV:
        return "SIGSEGV";
    case SIGBUS:
        return "SIGBUS";
    case SIGILL:
        return "SIGILL";
    case SIGFPE:
        return "SIGFPE";
    case SIGABRT:
        return "SIGABRT";
    case SIGTRAP:
        return "SIGTRAP";
    case SIGSYS:
        return "SIGSYS";
    default:
        return NULL;
    }
}

const char *nwb__crash_sigcode_name(int sig, int code)
{
    switch (code) {
    case SI_USER:
        return "SI_USER";
    case SI_QUEUE:
        return "SI_QUEUE";
    case SI_TKILL:
        return "SI_TKILL";
    case SI_KERNEL:
        return "SI_KERNEL";
    default:
        break;
    }
    switch (sig) {
    case SIGSEGV:
        return code == SEGV_MAPERR ? "SEGV_MAPERR" : code == SEGV_ACCERR ? "SEGV_ACCERR" : NULL;
    case SIGBUS:
        return code == BUS_ADRALN   ? "BUS_ADRALN"
               : code == BUS_ADRERR ? "BUS_ADRERR"
               : code == BUS_OBJERR ? "BUS_OBJERR"
                                    : NULL;
    case SIGILL:
        return code == ILL_ILLOPC   ? "ILL_ILLOPC"
               : code == ILL_ILLOPN ? "ILL_ILLOPN"
               : code == ILL_ILLADR ? "ILL_ILLADR"
               : code == ILL_ILLTRP ? "ILL_ILLTRP"
               : code == ILL_PRVOPC ? "ILL_PRVOPC"
               : code == ILL_PRVREG ? "ILL_PRVREG"
               : code == ILL_COPROC ? "ILL_COPROC"
               : code == ILL_BADSTK ? "ILL_BADSTK"
                                    : NULL;
    case SIGFPE:
        return code == FPE_INTDIV   ? "FPE_INTDIV"
               : code == FPE_INTOVF ? "FPE_INTOVF"
               : code == FPE_FLTDIV ? "FPE_FLTDIV"
               : code == FPE_FLTOVF ? "FPE_FLTOVF"
               : code == FPE_FLTUND ? "FPE_FLTUND"
               : code == FPE_FLTRES ? "FPE_FLTRES"
               : code == FPE_FLTINV ? "FPE_FLTINV"
               : code == FPE_FLTSUB ? "FPE_FLTSUB"
                                    : NULL;
    case SIGTRAP:
        return code == TRAP_BRKPT ? "TRAP_BRKPT" : code == TRAP_TRACE ? "TRAP_TRACE" : NULL;
    default:
        return NULL;
    }
}
