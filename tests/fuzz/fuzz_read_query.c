/* SPDX-License-Identifier: MIT */
/*
 * fuzz_read_query.c - fuzz target for the read API's request-target parsing (read_query.c):
 * the input is a request target ("/v1/runs/<id>/log?offset=..."), split into path and query;
 * every key the endpoints read goes through nwb__query_get() / nwb__query_u64(), every path
 * segment through nwb__path_segment(), nwb__run_id_valid() and nwb__run_id_parse(), the crash
 * file name through nwb__pct_decode() and nwb__read_file_path_valid(), and the path through
 * the router. Each result is checked against what read_int.h promises (abort() otherwise).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/log_line.h"

#include "read_int.h"
#include "server_int.h"

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_read_query: check failed at line %d: %s\n", __LINE__, #cond);    \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static const char *const keys[] = {"offset", "limit", "tail", "program", "from", "", "a"};
static const char *const prefixes[] = {"/v1/runs/", "/v1/crashes/", "/"};

static int digit(char c)
{
    return c >= '0' && c <= '9';
}

static void check_query(const struct nwb__target *t)
{
    const int valid = nwb__query_check(t->query, t->query_len) == 0;

    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        char v[NWB__QUERY_VALUE_MAX + 1];
        size_t vlen = 12345;
        uint64_t x = 77;
        int present = -1;
        const int got = nwb__query_get(t->query, t->query_len, keys[k], v, &vlen);
        int rc;

        FUZZ_CHECK(got >= -1 && got <= 1);
        /* A query that checks out never fails a lookup. */
        FUZZ_CHECK(!valid || got >= 0);
        if (got == 1) {
            FUZZ_CHECK(vlen <= NWB__QUERY_VALUE_MAX);
            FUZZ_CHECK(v[vlen] == '\0');
            FUZZ_CHECK(memchr(v, '\0', vlen) == NULL);
        }
        rc = nwb__query_u64(t->query, t->query_len, keys[k], 3, 1000000, &x, &present);
        FUZZ_CHECK(rc == 0 || rc == -1);
        if (rc != 0 || !present) {
            FUZZ_CHECK(present == 0);
            FUZZ_CHECK(x == 77);
            /* Absent only when the lookup found nothing. */
            FUZZ_CHECK(rc != 0 || got == 0);
            continue;
        }
        /* Present: the value was plain digits naming x, within the range. */
        FUZZ_CHECK(got == 1 && x >= 3 && x <= 1000000);
        {
            uint64_t back = 0;

            for (size_t i = 0; i < vlen; i++) {
                FUZZ_CHECK(digit(v[i]));
                back = back * 10 + (uint64_t)(v[i] - '0');
            }
            FUZZ_CHECK(back == x);
        }
        rc = nwb__query_u64(t->query, t->query_len, keys[k], 0, UINT64_MAX, &x, &present);
        FUZZ_CHECK(rc == 0 && present);
    }
}

static void check_run_id(const char *seg, size_t len)
{
    struct nwb__run_name rn;
    const int valid = nwb__run_id_valid(seg, len);

    if (valid) {
        FUZZ_CHECK(len >= 1 && len <= NWB__RUN_ID_MAX && seg[0] != '.');
        FUZZ_CHECK(memchr(seg, '/', len) == NULL && memchr(seg, '%', len) == NULL);
    }
    if (!nwb__run_id_parse(seg, len, &rn)) {
        return;
    }
    /* Parsed: a valid id, split at "_<time>_" into two non-empty names of bounded length,
     * and the time reads back as the id's digits. */
    FUZZ_CHECK(valid);
    FUZZ_CHECK(rn.program == seg && rn.program_len >= 1 && rn.program_len <= NWB_SAFE_NAME_MAX);
    FUZZ_CHECK(rn.run_len >= 1 && rn.run_len <= NWB_SAFE_NAME_MAX + 7);
    FUZZ_CHECK(rn.program_len + 17 + rn.run_len == len);
    FUZZ_CHECK(rn.run == seg + rn.program_len + 17);
    FUZZ_CHECK(seg[rn.program_len] == '_' && seg[rn.program_len + 16] == '_');
    {
        char ts[16];

        nwb_time_compact(rn.started_ns, ts);
        FUZZ_CHECK(memcmp(ts, seg + rn.program_len + 1, 15) == 0);
    }
}

static void check_file_name(const char *s, size_t len)
{
    char name[NWB__URL_MAX + 1];
    const long n = nwb__pct_decode(s, len, 0, name, NWB__URL_MAX);
    const long nf = nwb__pct_decode(s, len, 1, name, NWB__URL_MAX);

    FUZZ_CHECK(n >= -1 && (n == -1) == (nf == -1));
    if (n < 0) {
        return;
    }
    nwb__pct_decode(s, len, 0, name, NWB__URL_MAX);
    FUZZ_CHECK((size_t)n <= len && memchr(name, '\0', (size_t)n) == NULL);
    if (!nwb__read_file_path_valid(name, (size_t)n)) {
        return;
    }
    /* Valid: relative, and no component that leaves the package. */
    FUZZ_CHECK(n > 0 && name[0] != '/' && name[n - 1] != '/');
    for (long i = 0; i < n; i++) {
        const int start = i == 0 || name[i - 1] == '/';

        FUZZ_CHECK((unsigned char)name[i] >= 0x20 && name[i] != 0x7f && name[i] != '\\');
        if (start && name[i] == '.') {
            const int one = i + 1 == n || name[i + 1] == '/';
            const int two = i + 1 < n && name[i + 1] == '.' && (i + 2 == n || name[i + 2] == '/');

            FUZZ_CHECK(!one && !two);
        }
    }
}

static void check_path(const struct nwb__target *t)
{
    (void)nwb__router_match(t->path, t->path_len);
    for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++) {
        const unsigned count = nwb__path_segments(t->path, t->path_len, prefixes[p]);

        for (unsigned i = 0; i < count + 2 && i < 64; i++) {
            const char *seg = NULL;
            size_t len = 0;
            const int has = nwb__path_segment(t->path, t->path_len, prefixes[p], i, &seg, &len);

            FUZZ_CHECK(has == (i < count));
            if (!has) {
                continue;
            }
            FUZZ_CHECK(seg >= t->path && seg + len <= t->path + t->path_len);
            FUZZ_CHECK(memchr(seg, '/', len) == NULL);
            check_run_id(seg, len);
            /* The rest of the path from this segment on, as a crash file name. */
            check_file_name(seg, (size_t)(t->path + t->path_len - seg));
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct nwb__target t;
    /* An exact-size copy: a read past the input is a finding. */
    char *url = malloc(size > 0 ? size : 1);

    if (url == NULL) {
        return 0;
    }
    memcpy(url, data, size);
    nwb__target_split(url, size, &t);
    FUZZ_CHECK(t.path == url && t.path_len <= size);
    FUZZ_CHECK(t.query_len == 0 || (t.path_len < size && url[t.path_len] == '?'));
    FUZZ_CHECK(t.path_len + (t.path_len < size) + t.query_len == size);
    FUZZ_CHECK(memchr(t.path, '?', t.path_len) == NULL);
    check_query(&t);
    check_path(&t);
    free(url);
    return 0;
}
