/* SPDX-License-Identifier: MIT */
/*
 * namesym_test_util.h - helpers for the server's name-symbol tests: writing
 * .namesym sidecars (through the real builder, or byte by byte for hash
 * collisions the builder refuses), tokens of names, and waiting for a line
 * on a test server's stderr with poll(2) and a timeout. Header-only.
 */
#ifndef NWB_NAMESYM_TEST_UTIL_H
#define NWB_NAMESYM_TEST_UTIL_H

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nwb/byte_order.h"
#include "nwb/name.h"
#include "nwb/namesym.h"
#include "test_support.h"

/* "#" + 16 hex digits of the name @p s. */
static inline const char *nsu_token(const char *s, char tok[NWB_NAME_TOKEN_SIZE])
{
    nwb_name_token(nwb_name_hash(s, strlen(s)), tok);
    return tok;
}

/* Write a sidecar of the NULL-terminated @p names with the real builder (atomic). 0 or -1. */
static inline int nsu_sidecar(const char *path, const char *const *names)
{
    nwb_namesym_builder_t b;
    char err[256];
    int rc = 0;

    nwb_namesym_builder_init(&b);
    for (; *names != NULL && rc == 0; names++) {
        rc = nwb_namesym_builder_add(&b, *names, strlen(*names));
    }
    if (rc == 0) {
        rc = nwb_namesym_builder_write(&b, "test", path, err, sizeof(err));
    }
    nwb_namesym_builder_cleanup(&b);
    return rc == 0 ? 0 : -1;
}

/*
 * Write a version-1 sidecar byte by byte: @p n entries (@p hashes strictly
 * increasing, any strings, so a hash may be given a string it is not the
 * FNV-1a of). 0 or -1.
 */
static inline int nsu_sidecar_raw(const char *path, const uint64_t *hashes, const char *const *strs,
                                  uint32_t n)
{
    size_t strings = 4; /* the build id "test" */
    size_t off, len;
    uint8_t *buf;
    FILE *f;
    int ok;

    for (uint32_t i = 0; i < n; i++) {
        strings += strlen(strs[i]);
    }
    len = NWB_NAMESYM_HEADER_SIZE + (size_t)n * NWB_NAMESYM_ENTRY_SIZE + strings;
    buf = calloc(1, len);
    if (buf == NULL) {
        return -1;
    }
    memcpy(buf, NWB_NAMESYM_MAGIC, 8);
    nwb_le16_store(buf + 8, NWB_NAMESYM_VERSION);
    nwb_le16_store(buf + 10, NWB_NAMESYM_HEADER_SIZE);
    nwb_le16_store(buf + 12, NWB_NAMESYM_ENTRY_SIZE);
    nwb_le32_store(buf + 16, n);
    nwb_le32_store(buf + 20, 4);
    nwb_le64_store(buf + 24, NWB_NAMESYM_HEADER_SIZE);
    nwb_le64_store(buf + 32, NWB_NAMESYM_HEADER_SIZE + (uint64_t)n * NWB_NAMESYM_ENTRY_SIZE);
    nwb_le64_store(buf + 40, strings);
    nwb_le64_store(buf + 48, 1764576000000000000ull);
    off = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *e = buf + NWB_NAMESYM_HEADER_SIZE + (size_t)i * NWB_NAMESYM_ENTRY_SIZE;
        const size_t sl = strlen(strs[i]);

        nwb_le64_store(e, hashes[i]);
        nwb_le32_store(e + 8, (uint32_t)off);
        nwb_le32_store(e + 12, (uint32_t)sl);
        memcpy(buf + NWB_NAMESYM_HEADER_SIZE + (size_t)n * NWB_NAMESYM_ENTRY_SIZE + off, strs[i],
               sl);
        off += sl;
    }
    nwb_le32_store(buf + 56, (uint32_t)off);
    memcpy(buf + NWB_NAMESYM_HEADER_SIZE + (size_t)n * NWB_NAMESYM_ENTRY_SIZE + off, "test", 4);
    f = fopen(path, "wb");
    ok = f != NULL && fwrite(buf, 1, len, f) == len;
    if (f != NULL) {
        ok = fclose(f) == 0 && ok;
    }
    free(buf);
    return ok ? 0 : -1;
}

/* What a test server wrote on stderr so far, accumulated across calls. */
struct nsu_stderr {
    char text[65536];
    size_t len;
};

/*
 * Read the server's stderr into @p acc until it contains @p needle or
 * @p timeout_ms pass (poll(2), no sleeping). Returns 1 when found.
 */
static inline int nsu_wait_stderr(struct nwb_test_server *srv, struct nsu_stderr *acc,
                                  const char *needle, int timeout_ms)
{
    const long long deadline = nwb_test_now_ms() + timeout_ms;

    for (;;) {
        struct pollfd p = {srv->stderr_fd, POLLIN, 0};
        long long left;

        acc->len += nwb_test_server_stderr(srv, acc->text + acc->len, sizeof(acc->text) - acc->len);
        if (strstr(acc->text, needle) != NULL) {
            return 1;
        }
        left = deadline - nwb_test_now_ms();
        if (left <= 0 || acc->len + 1 >= sizeof(acc->text)) {
            return 0;
        }
        if (poll(&p, 1, (int)left) <= 0 || (p.revents & (POLLHUP | POLLERR)) != 0) {
            acc->len +=
                nwb_test_server_stderr(srv, acc->text + acc->len, sizeof(acc->text) - acc->len);
            return strstr(acc->text, needle) != NULL;
        }
    }
}

#endif /* NWB_NAMESYM_TEST_UTIL_H */
