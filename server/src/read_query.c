/* SPDX-License-Identifier: MIT */
/*
 * read_query.c - the read API's request-target parsing (read_int.h): query parameters with
 * strict percent-decoding and bounded values, decimal parameters with ranges, path segments,
 * run ids (and their parts) checked before they name anything under --out, crash file names,
 * and the RFC 3339 times the answers carry.
 */
#define _GNU_SOURCE /* timegm */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nwb/error.h"
#include "read_int.h"

void nwb__target_split(const char *url, size_t len, struct nwb__target *t)
{
    const char *q = memchr(url, '?', len);

    t->path = url;
    t->path_len = q != NULL ? (size_t)(q - url) : len;
    t->query = q != NULL ? q + 1 : url + len;
    t->query_len = q != NULL ? len - t->path_len - 1 : 0;
}

static int hex_val(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

long nwb__pct_decode(const char *s, size_t len, int form, char *out, size_t cap)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        char c = s[i];

        if (c == '%') {
            int hi, lo;

            if (i + 2 >= len) {
                return -1;
            }
            hi = hex_val(s[i + 1]);
            lo = hex_val(s[i + 2]);
            if (hi < 0 || lo < 0) {
                return -1;
            }
            c = (char)(hi * 16 + lo);
            i += 2;
        } else if (c == '+' && form) {
            c = ' ';
        }
        if (c == '\0' || n >= cap) {
            return -1;
        }
        out[n++] = c;
    }
    return (long)n;
}

/* Every %XX escape of the query is well formed. */
static int query_escapes_ok(const char *q, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (q[i] == '%' && (i + 2 >= len || hex_val(q[i + 1]) < 0 || hex_val(q[i + 2]) < 0)) {
            return 0;
        }
    }
    return 1;
}

int nwb__query_check(const char *query, size_t len)
{
    char v[NWB__QUERY_VALUE_MAX];
    size_t i = 0;

    while (i < len) {
        const char *amp = memchr(query + i, '&', len - i);
        const size_t end = amp != NULL ? (size_t)(amp - query) : len;
        const char *eq = memchr(query + i, '=', end - i);
        const size_t vstart = eq != NULL ? (size_t)(eq - query) + 1 : end;

        if (!query_escapes_ok(query + i, end - i) ||
            nwb__pct_decode(query + vstart, end - vstart, 1, v, sizeof(v)) < 0) {
            return -1;
        }
        i = end + 1;
    }
    return 0;
}

int nwb__query_get(const char *query, size_t len, const char *key, char *out, size_t *out_len)
{
    const size_t klen = strlen(key);
    size_t i = 0;

    if (!query_escapes_ok(query, len)) {
        return -1;
    }
    while (i < len) {
        const char *amp = memchr(query + i, '&', len - i);
        const size_t end = amp != NULL ? (size_t)(amp - query) : len;
        const char *pair = query + i;
        const size_t plen = end - i;
        const char *eq = memchr(pair, '=', plen);
        const size_t nlen = eq != NULL ? (size_t)(eq - pair) : plen;

        if (nlen == klen && memcmp(pair, key, klen) == 0) {
            const char *v = eq != NULL ? eq + 1 : pair + plen;
            const size_t vlen = eq != NULL ? plen - nlen - 1 : 0;
            const long n = nwb__pct_decode(v, vlen, 1, out, NWB__QUERY_VALUE_MAX);

            if (n < 0) {
                return -1;
            }
            out[n] = '\0';
            *out_len = (size_t)n;
            return 1;
        }
        i = end + 1;
    }
    return 0;
}

int nwb__parse_u64(const char *s, size_t len, uint64_t *out)
{
    uint64_t x = 0;

    if (len == 0 || len > 20) {
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        const unsigned d = (unsigned)(s[i] - '0');

        if (d > 9 || x > (UINT64_MAX - d) / 10) {
            return -1;
        }
        x = x * 10 + d;
    }
    *out = x;
    return 0;
}

int nwb__query_u64(const char *query, size_t len, const char *key, uint64_t min, uint64_t max,
                   uint64_t *out, int *present)
{
    char v[NWB__QUERY_VALUE_MAX + 1];
    size_t vlen = 0;
    uint64_t x = 0;
    const int found = nwb__query_get(query, len, key, v, &vlen);

    *present = 0;
    if (found < 0) {
        return -1;
    }
    if (found == 0) {
        return 0;
    }
    if (nwb__parse_u64(v, vlen, &x) != 0 || x < min || x > max) {
        return -1;
    }
    *out = x;
    *present = 1;
    return 0;
}

int nwb__path_segment(const char *path, size_t len, const char *prefix, unsigned index,
                      const char **seg, size_t *seg_len)
{
    const size_t plen = strlen(prefix);
    size_t i;

    if (len < plen || memcmp(path, prefix, plen) != 0) {
        return 0;
    }
    i = plen;
    for (unsigned k = 0;; k++) {
        const char *slash = memchr(path + i, '/', len - i);
        const size_t end = slash != NULL ? (size_t)(slash - path) : len;

        if (k == index) {
            *seg = path + i;
            *seg_len = end - i;
            return 1;
        }
        if (slash == NULL) {
            return 0;
        }
        i = end + 1;
    }
}

unsigned nwb__path_segments(const char *path, size_t len, const char *prefix)
{
    const size_t plen = strlen(prefix);
    unsigned n = 1;

    if (len < plen || memcmp(path, prefix, plen) != 0) {
        return 0;
    }
    for (size_t i = plen; i < len; i++) {
        n += path[i] == '/';
    }
    return n;
}

int nwb__run_id_valid(const char *id, size_t len)
{
    if (len == 0 || len > NWB__RUN_ID_MAX || id[0] == '.') {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)id[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.')) {
            return 0;
        }
    }
    return 1;
}

int nwb__decimal_digits(const char *s, unsigned n)
{
    int v = 0;

    for (unsigned i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* "YYYYmmdd-HHMMSS" at @p s, a real UTC date and time whose ns since the epoch fit a u64
 * (1970-01-01T00:00:00Z to 2554-07-21T23:34:33Z): 1 with @p *ns. */
static int compact_time(const char *s, uint64_t *ns)
{
    const int year = nwb__decimal_digits(s, 4), mon = nwb__decimal_digits(s + 4, 2),
              day = nwb__decimal_digits(s + 6, 2);
    const int hour = nwb__decimal_digits(s + 9, 2), min = nwb__decimal_digits(s + 11, 2),
              sec = nwb__decimal_digits(s + 13, 2);
    struct tm tm, back;
    time_t t;

    if (s[8] != '-' || year < 1970 || mon < 1 || mon > 12 || day < 1 || day > 31 || hour < 0 ||
        hour > 23 || min < 0 || min > 59 || sec < 0 || sec > 59) {
        return 0;
    }
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = year - 1900;
    tm.tm_mon = mon - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = min;
    tm.tm_sec = sec;
    t = timegm(&tm);
    /* timegm() normalises 31 April to 1 May: a date that does not come back is not one. */
    if (t < 0 || (uint64_t)t > UINT64_MAX / 1000000000u || gmtime_r(&t, &back) == NULL ||
        back.tm_mday != day || back.tm_mon != mon - 1) {
        return 0;
    }
    *ns = (uint64_t)t * 1000000000u;
    return 1;
}

int nwb__run_id_parse(const char *id, size_t len, struct nwb__run_name *out)
{
    if (!nwb__run_id_valid(id, len)) {
        return 0;
    }
    /* "_" + 15 + "_": the first one with a real time splits the id. */
    for (size_t p = 1; p + 17 < len; p++) {
        uint64_t ns;

        if (id[p] != '_' || id[p + 16] != '_' || !compact_time(id + p + 1, &ns)) {
            continue;
        }
        if (p > NWB_SAFE_NAME_MAX || len - p - 17 > NWB_SAFE_NAME_MAX + 7) {
            return 0;
        }
        out->program = id;
        out->program_len = p;
        out->run = id + p + 17;
        out->run_len = len - p - 17;
        out->started_ns = ns;
        return 1;
    }
    return 0;
}

int nwb__read_run_dir(const char *out_dir, const char *id, size_t len, char *dir, size_t cap)
{
    struct nwb__run_name name;
    struct stat st;
    int n;

    if (!nwb__run_id_parse(id, len, &name)) {
        return NWB_EPROTO;
    }
    n = snprintf(dir, cap, "%s/runs/%.*s", out_dir, (int)len, id);
    if (n < 0 || (size_t)n >= cap) {
        return NWB_ETOOBIG;
    }
    if (fstatat(AT_FDCWD, dir, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return errno == ENOENT || errno == ENOTDIR ? -ENOENT : -errno;
    }
    return S_ISDIR(st.st_mode) ? 0 : -ENOENT;
}

int nwb__read_run_dirfd(const char *out_dir, const char *id, size_t len)
{
    char dir[4096];
    int fd;
    const int err = nwb__read_run_dir(out_dir, id, len, dir, sizeof(dir));

    if (err != 0) {
        return err;
    }
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? -ENOENT : -errno;
    }
    return fd;
}

int nwb__read_file_path_valid(const char *name, size_t len)
{
    unsigned depth = 0;
    size_t i = 0;

    if (len == 0) {
        return 0;
    }
    while (i <= len) {
        const char *slash = memchr(name + i, '/', len - i);
        const size_t end = slash != NULL ? (size_t)(slash - name) : len;
        const size_t clen = end - i;

        if (clen == 0 || clen > NWB__READ_FILE_NAME_MAX || ++depth > NWB__READ_FILE_DEPTH_MAX ||
            (clen == 1 && name[i] == '.') || (clen == 2 && name[i] == '.' && name[i + 1] == '.')) {
            return 0;
        }
        for (size_t k = i; k < end; k++) {
            const unsigned char c = (unsigned char)name[k];

            if (c < 0x20 || c == 0x7f || c == '\\') {
                return 0;
            }
        }
        i = end + 1;
    }
    return 1;
}

void nwb__json_time(nwb_json_t *j, uint64_t ns)
{
    const time_t secs = (time_t)(ns / 1000000000u);
    struct tm tm;
    char text[64];

    /* UTC needs no time zone: no strftime(), which re-reads it (tzset) on every call. */
    gmtime_r(&secs, &tm);
    snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (unsigned)(ns / 1000000u % 1000u));
    nwb_json_cstr(j, text);
}
