/* SPDX-License-Identifier: MIT */
/* error.c - messages and names for nwb error codes and negated errno values. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nwb/error.h"

const char *nwb_strerror_r(int err, char *buf, size_t buflen)
{
    switch (err) {
#define XX(name, code, msg)                                                                        \
    case NWB_E##name:                                                                              \
        return msg;
        NWB_ERRNO_MAP(XX)
#undef XX
    default:
        break;
    }
    if (err < 0 && err > -4096) {
        /* XSI strerror_r under _POSIX_C_SOURCE=200809L returns int. */
        if (buf != NULL && buflen > 0 && strerror_r(-err, buf, buflen) == 0) {
            return buf;
        }
    }
    if (buf != NULL && buflen > 0) {
        snprintf(buf, buflen, "unknown error %d", err);
        return buf;
    }
    return "unknown error";
}

const char *nwb_err_name(int err)
{
    switch (err) {
#define XX(name, code, msg)                                                                        \
    case NWB_E##name:                                                                              \
        return "NWB_E" #name;
        NWB_ERRNO_MAP(XX)
#undef XX
    case -ENOENT:
        return "ENOENT";
    case -ENOMEM:
        return "ENOMEM";
    case -ENOSPC:
        return "ENOSPC";
    case -EIO:
        return "EIO";
    case -EINVAL:
        return "EINVAL";
    case -EAGAIN:
        return "EAGAIN";
    case -ECONNREFUSED:
        return "ECONNREFUSED";
    case -ECONNRESET:
        return "ECONNRESET";
    case -EPIPE:
        return "EPIPE";
    case -ETIMEDOUT:
        return "ETIMEDOUT";
    case -EACCES:
        return "EACCES";
    case -EEXIST:
        return "EEXIST";
    case -EADDRINUSE:
        return "EADDRINUSE";
    case -EFBIG:
        return "EFBIG";
    case -EDQUOT:
        return "EDQUOT";
    case -EROFS:
        return "EROFS";
    case -ELOOP:
        return "ELOOP";
    case -ENOTDIR:
        return "ENOTDIR";
    case -EISDIR:
        return "EISDIR";
    case -ENXIO:
        return "ENXIO";
    case -EMFILE:
        return "EMFILE";
    case -ENFILE:
        return "ENFILE";
    case -EBADF:
        return "EBADF";
    case -EPERM:
        return "EPERM";
    case -ENAMETOOLONG:
        return "ENAMETOOLONG";
    case -ECONNABORTED:
        return "ECONNABORTED";
    case -EHOSTUNREACH:
        return "EHOSTUNREACH";
    case -ENETUNREACH:
        return "ENETUNREACH";
    case -EINTR:
        return "EINTR";
    case -EBUSY:
        return "EBUSY";
    default:
        return "UNKNOWN";
    }
}
