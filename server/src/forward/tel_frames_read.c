/* SPDX-License-Identifier: MIT */
/* tel_frames_read.c - perfFrame durations of a run's stored uploads (tel_frames_read.h). */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/telemetry_format.h"

#include "../tel_run_int.h"
#include "tel_frames_read.h"

struct visit {
    nwb__fwd_frame_fn fn;
    void *ctx;
    int stopped; /* fn's nonzero return */
};

static int on_event(void *ctx, const nwb_tel_event_t *ev, size_t offset)
{
    struct visit *v = ctx;

    (void)offset;
    if (ev->known && ev->kind == NWB_TEL_KIND_PERF_FRAME) {
        v->stopped = v->fn(v->ctx, ev->frame, ev->u.perf.frame_duration_ns);
        if (v->stopped != 0) {
            return -ECANCELED;
        }
    }
    return 0;
}

int nwb__fwd_tel_frames(int run_dir_fd, uint32_t *next, uint32_t max_records, nwb__fwd_frame_fn fn,
                        void *ctx, const char **why)
{
    const struct nwb__tel_ingest_limits lim = NWB__TEL_INGEST_LIMITS_INIT;
    const nwb_tel_visitor_t visitor = {NULL, on_event};
    int index_fd, stream_fd = -1;
    int rc = 0;

    *why = NULL;
    index_fd = openat(run_dir_fd, NWB_TEL_INDEX_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (index_fd < 0) {
        return -errno;
    }
    for (uint32_t walked = 0;; walked++) {
        struct nwb__tel_rec r;
        struct visit v = {fn, ctx, 0};
        nwb_tel_decode_result_t res;
        uint8_t *raw;
        size_t len;
        int err;

        if (walked == max_records) {
            rc = 1;
            break;
        }
        err = nwb__tel_index_record_at(index_fd, *next, &r);
        if (err == 1) {
            break; /* no more (or not yet whole) */
        }
        if (err != 0) {
            *why = "telemetry.index is not one this server writes";
            rc = err;
            break;
        }
        if ((r.flags & NWB__TEL_REC_STORED) == 0 || (r.flags & NWB__TEL_REC_FRAMES) == 0) {
            (*next)++;
            continue;
        }
        if (stream_fd < 0) {
            stream_fd =
                openat(run_dir_fd, NWB_TEL_STREAM_ZST_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
            if (stream_fd < 0) {
                *why = "telemetry.nwbs.zst cannot be opened";
                rc = -errno;
                break;
            }
        }
        err = nwb__tel_upload_read(stream_fd, &r, &lim, &raw, &len, why);
        if (err != 0) {
            if (err != -ENOMEM) {
                (*next)++; /* a damaged upload is stepped over, not retried forever */
            }
            rc = err;
            break;
        }
        (void)nwb_tel_stream_decode(raw, len, 0, &visitor, &v, &res);
        nwb_free(raw);
        if (v.stopped != 0) {
            rc = v.stopped;
            break;
        }
        if (res.status != 0) {
            *why = "a stored upload does not decode (its frames before the fault were handed)";
            (*next)++;
            rc = res.status;
            break;
        }
        (*next)++;
    }
    if (stream_fd >= 0) {
        close(stream_fd);
    }
    close(index_fd);
    return rc;
}
