/* SPDX-License-Identifier: MIT */
/*
 * token.c - the client side of --token-file: the token's byte rule, reading
 * it from a file (bounded, one trailing newline dropped) and from the
 * environment. The server's stricter loader (file mode, 16-byte minimum) is
 * server/src/auth.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nwb/error.h"
#include "nwb/token.h"

int nwb_token_valid(const char *s, size_t len)
{
    if (len == 0 || len > NWB_TOKEN_MAX) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)s[i];

        if (c < 0x21 || c > 0x7e) {
            return 0;
        }
    }
    return 1;
}

static int token_error(char *errbuf, size_t errlen, const char *what, const char *path)
{
    if (errbuf != NULL && errlen > 0) {
        snprintf(errbuf, errlen, "the token file %s %s", path, what);
    }
    return NWB_ECONFIG;
}

int nwb_token_file_read(const char *path, char *dst, size_t cap, char *errbuf, size_t errlen)
{
    char buf[NWB_TOKEN_MAX + 3]; /* the longest token, CRLF, and one byte to see "too long" */
    size_t len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    int rc = 0;

    if (cap > 0) {
        dst[0] = '\0';
    }
    if (fd < 0) {
        char why[160];

        snprintf(why, sizeof(why), "cannot be opened: %s", strerror(errno));
        return token_error(errbuf, errlen, why, path);
    }
    while (len < sizeof(buf)) {
        const ssize_t n = read(fd, buf + len, sizeof(buf) - len);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            char why[160];

            snprintf(why, sizeof(why), "cannot be read: %s", strerror(errno));
            rc = token_error(errbuf, errlen, why, path);
            break;
        }
        if (n == 0) {
            break;
        }
        len += (size_t)n;
    }
    close(fd);
    if (rc == 0 && len > 0 && buf[len - 1] == '\n') {
        len--;
        if (len > 0 && buf[len - 1] == '\r') {
            len--;
        }
    }
    if (rc == 0 && (!nwb_token_valid(buf, len) || len >= cap)) {
        rc = token_error(errbuf, errlen,
                         "must hold 1..255 visible ASCII bytes (and at most one trailing newline)",
                         path);
    }
    if (rc == 0) {
        memcpy(dst, buf, len);
        dst[len] = '\0';
    }
    memset(buf, 0, sizeof(buf));
    return rc;
}

int nwb_token_from_env(char *dst, size_t cap, char *errbuf, size_t errlen)
{
    const char *tok = getenv("NWB_LOGSERVER_TOKEN");
    const char *path = getenv("NWB_LOGSERVER_TOKEN_FILE");

    if (cap > 0) {
        dst[0] = '\0';
    }
    if (tok != NULL && tok[0] != '\0') {
        const size_t n = strlen(tok);

        if (!nwb_token_valid(tok, n) || n >= cap) {
            if (errbuf != NULL && errlen > 0) {
                snprintf(errbuf, errlen,
                         "$NWB_LOGSERVER_TOKEN must hold 1..255 visible ASCII bytes");
            }
            return NWB_ECONFIG;
        }
        memcpy(dst, tok, n + 1);
        return 0;
    }
    if (path != NULL && path[0] != '\0') {
        return nwb_token_file_read(path, dst, cap, errbuf, errlen);
    }
    return 0;
}
