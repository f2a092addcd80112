/* SPDX-License-Identifier: MIT */
/*
 * console.c - the server's own diagnostics on stderr: one line per message,
 * written with a single write(2) so lines from the loop and the log worker
 * never interleave. Never writes into a run's files.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nwb/error.h"

#include "server_int.h"

void nwb__console(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n = snprintf(line, sizeof(line), "nwb-logserver: ");
    int m;

    va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
#pragma GCC diagnostic pop
    va_end(ap);
    if (m < 0) {
        return;
    }
    n += m;
    if ((size_t)n > sizeof(line) - 2) {
        n = (int)sizeof(line) - 2;
    }
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, (size_t)n) < 0) {
        /* Nothing sensible to do when stderr itself fails. */
    }
}

const char *nwb__err_label(int err, char *buf, size_t len)
{
    const char *name = nwb_err_name(err);

    if (strcmp(name, "UNKNOWN") != 0) {
        return name;
    }
    /* File-system failures nwb_err_name() does not list (yet). */
    switch (-err) {
    case EFBIG:
        return "EFBIG";
    case EDQUOT:
        return "EDQUOT";
    case EROFS:
        return "EROFS";
    case ELOOP:
        return "ELOOP";
    case ENOTDIR:
        return "ENOTDIR";
    case EISDIR:
        return "EISDIR";
    case ENXIO:
        return "ENXIO";
    case EMFILE:
        return "EMFILE";
    case ENFILE:
        return "ENFILE";
    default:
        snprintf(buf, len, "errno %d", -err);
        return buf;
    }
}
