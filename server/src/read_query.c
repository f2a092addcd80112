/* SPDX-License-Identifier: MIT */
/*
 * read_query.c - the read API's request-target parsing (read_int.h): query parameters with
 * strict percent-decoding and bounded values, decimal parameters with ranges, path segments,
 * and run ids checked before they name anything under --out.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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

/* Percent-decode @p len bytes ('+' is a space, as in forms) into @p out (at most @p cap
 * bytes). Returns the decoded length, or -1 for a bad escape, a NUL, or more than @p cap. */
static long pct_decode(const char *s, size_t len, char *out, size_t cap)
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
        } else if (c == '+') {
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
            const long n = pct_decode(v, vlen, out, NWB__QUERY_VALUE_MAX);

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
    if (vlen == 0 || vlen > 20) {
        return -1;
    }
    for (size_t i = 0; i < vlen; i++) {
        const unsigned d = (unsigned)(v[i] - '0');

        if (d > 9 || x > (UINT64_MAX - d) / 10) {
            return -1;
        }
        x = x * 10 + d;
    }
    if (x < min || x > max) {
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

int nwb__read_run_dir(const char *out_dir, const char *id, size_t len, char *dir, size_t cap)
{
    struct stat st;
    int n;

    if (!nwb__run_id_valid(id, len)) {
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
