/* SPDX-License-Identifier: MIT */
/* file_io.c - write all, read a whole capped file, mkdir -p (nwb/file_io.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/file_io.h"

int nwb_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n > 0) {
        const ssize_t w = write(fd, c, n);

        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -errno;
        }
        if (w == 0) {
            return -EIO;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int nwb_pwrite_all(int fd, const void *p, size_t n, off_t at)
{
    const char *c = p;

    while (n > 0) {
        const ssize_t w = pwrite(fd, c, n, at);

        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -errno;
        }
        if (w == 0) {
            return -EIO;
        }
        c += w;
        n -= (size_t)w;
        at += w;
    }
    return 0;
}

int nwb_file_read_fd(int fd, size_t max, uint8_t **out, size_t *len)
{
    struct stat st;
    uint8_t *buf;
    size_t off = 0;

    *out = NULL;
    *len = 0;
    if (fstat(fd, &st) != 0) {
        return -errno;
    }
    if (!S_ISREG(st.st_mode)) {
        return NWB_ENOTREG;
    }
    if (st.st_size < 0 || (uint64_t)st.st_size > (uint64_t)max) {
        return NWB_ETOOBIG;
    }
    buf = nwb_malloc((size_t)st.st_size + 1);
    if (buf == NULL) {
        return -ENOMEM;
    }
    while (off < (size_t)st.st_size) {
        const ssize_t r = read(fd, buf + off, (size_t)st.st_size - off);

        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            const int err = -errno;

            nwb_free(buf);
            return err;
        }
        if (r == 0) {
            break; /* shrank meanwhile: the caller sees what was there */
        }
        off += (size_t)r;
    }
    buf[off] = 0;
    *out = buf;
    *len = off;
    return 0;
}

int nwb_file_read_at(int dirfd, const char *path, size_t max, uint8_t **out, size_t *len)
{
    const int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    int err;

    *out = NULL;
    *len = 0;
    if (fd < 0) {
        return -errno;
    }
    err = nwb_file_read_fd(fd, max, out, len);
    close(fd);
    return err;
}

int nwb_file_read(const char *path, size_t max, uint8_t **out, size_t *len)
{
    return nwb_file_read_at(AT_FDCWD, path, max, out, len);
}

int nwb_mkdir_p(const char *path, mode_t mode)
{
    char tmp[PATH_MAX];
    const size_t len = strlen(path);

    if (len == 0) {
        return -ENOENT;
    }
    if (len >= sizeof(tmp)) {
        return -ENAMETOOLONG;
    }
    memcpy(tmp, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (tmp[i] == '/' || tmp[i] == '\0') {
            const char saved = tmp[i];

            tmp[i] = '\0';
            if (mkdir(tmp, mode) != 0 && errno != EEXIST) {
                return -errno;
            }
            tmp[i] = saved;
        }
    }
    /* EEXIST above also covers a file of that name: the path must end in a directory. */
    {
        struct stat st;

        if (stat(path, &st) != 0) {
            return -errno;
        }
        return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
    }
}
