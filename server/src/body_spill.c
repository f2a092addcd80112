/* SPDX-License-Identifier: MIT */
/*
 * body_spill.c - the file side of a request body streamed to disk (nwb__spill, server_int.h):
 * append a window of body bytes at the file's end, opening the file on the first write. Runs
 * on the thread pool only; http_conn.c does the connection side.
 */
#include "nwb/file_io.h"

#include "server_int.h"

int nwb__spill_write(struct nwb__spill *sp, const void *data, size_t len)
{
    int err;

    if (sp->fd < 0) {
        err = sp->open(sp);
        if (err != 0) {
            return err;
        }
    }
    err = nwb_pwrite_all(sp->fd, data, len, (off_t)sp->written);
    if (err == 0) {
        sp->written += len;
    }
    return err;
}
