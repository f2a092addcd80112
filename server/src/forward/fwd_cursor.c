/* SPDX-License-Identifier: MIT */
/* fwd_cursor.c - the per-run forwarding cursor file (fwd_cursor.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nwb/error.h"
#include "nwb/file_io.h"
#include "fwd_cursor.h"

static const char head[] = "nwb-forward 1\noffset=";

int nwb__fwd_cursor_parse(const char *text, size_t len, uint64_t *offset)
{
    const size_t h = sizeof(head) - 1;
    uint64_t v = 0;
    size_t i;

    if (len < h + 2 || len > NWB__FWD_CURSOR_MAX || memcmp(text, head, h) != 0 ||
        text[len - 1] != '\n' || len - 1 - h > 20) {
        return NWB_EPROTO;
    }
    for (i = h; i < len - 1; i++) {
        const unsigned d = (unsigned)(unsigned char)text[i] - '0';

        if (d > 9 || v > (UINT64_MAX - d) / 10) {
            return NWB_EPROTO;
        }
        v = v * 10 + d;
    }
    *offset = v;
    return 0;
}

int nwb__fwd_cursor_read(const char *run_dir, uint64_t *offset)
{
    return nwb__fwd_cursor_read_named(run_dir, NWB__FWD_CURSOR_NAME, offset);
}

int nwb__fwd_cursor_write(const char *run_dir, uint64_t offset)
{
    return nwb__fwd_cursor_write_named(run_dir, NWB__FWD_CURSOR_NAME, offset);
}

int nwb__fwd_cursor_read_named(const char *run_dir, const char *name, uint64_t *offset)
{
    char path[4096 + 300];
    char text[NWB__FWD_CURSOR_MAX + 1];
    ssize_t n;
    int fd;

    *offset = 0;
    snprintf(path, sizeof(path), "%s/%s", run_dir, name);
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        return errno == ENOENT ? 0 : -errno;
    }
    do {
        n = read(fd, text, sizeof(text));
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n < 0) {
        return -errno;
    }
    return nwb__fwd_cursor_parse(text, (size_t)n, offset);
}

int nwb__fwd_cursor_write_named(const char *run_dir, const char *name, uint64_t offset)
{
    char tmp[4096 + 300], path[4096 + 300];
    char text[NWB__FWD_CURSOR_MAX];
    const int len = snprintf(text, sizeof(text), "%s%" PRIu64 "\n", head, offset);
    int fd, err;

    snprintf(tmp, sizeof(tmp), "%s/%s.tmp", run_dir, name);
    snprintf(path, sizeof(path), "%s/%s", run_dir, name);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        return -errno;
    }
    err = nwb_write_all(fd, text, (size_t)len);
    if (close(fd) != 0 && err == 0) {
        err = -errno;
    }
    if (err == 0 && rename(tmp, path) != 0) {
        err = -errno;
    }
    if (err != 0) {
        unlink(tmp);
    }
    return err;
}
