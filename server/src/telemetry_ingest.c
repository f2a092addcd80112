/* SPDX-License-Identifier: MIT */
/*
 * telemetry_ingest.c - POST /v1/telemetry: zstd decompression under caps (output bytes and
 * window size; the frame's claimed content size is never trusted), strict validation as one
 * segment, append to the run's telemetry.nwbs once per seq, and an atomic rebuild of
 * telemetry.json (temporary file, fsync, rename). Runs on a server worker thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "nwb/alloc.h"
#include "nwb/byte_order.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "nwb/json.h"
#include "nwb/telemetry_report.h"
#include "telemetry_int.h"

#define PATH_CAP 4096

void nwb__tel_ingest_metrics_init(struct nwb__tel_ingest_metrics *m)
{
    atomic_init(&m->uploads, 0);
    atomic_init(&m->accepted, 0);
    atomic_init(&m->duplicates, 0);
    atomic_init(&m->rejected, 0);
    atomic_init(&m->too_large, 0);
    atomic_init(&m->unsupported, 0);
    atomic_init(&m->failures, 0);
    atomic_init(&m->bytes_received, 0);
    atomic_init(&m->bytes_stored, 0);
    atomic_init(&m->events, 0);
}

size_t nwb__tel_ingest_metrics_format(const struct nwb__tel_ingest_metrics *m, char *buf,
                                      size_t cap)
{
    const int n = snprintf(
        buf, cap,
        "# TYPE nwb_telemetry_uploads_total counter\n"
        "nwb_telemetry_uploads_total %llu\n"
        "# TYPE nwb_telemetry_uploads_accepted_total counter\n"
        "nwb_telemetry_uploads_accepted_total %llu\n"
        "# TYPE nwb_telemetry_uploads_duplicate_total counter\n"
        "nwb_telemetry_uploads_duplicate_total %llu\n"
        "# TYPE nwb_telemetry_uploads_rejected_total counter\n"
        "nwb_telemetry_uploads_rejected_total{reason=\"malformed\"} %llu\n"
        "nwb_telemetry_uploads_rejected_total{reason=\"too_large\"} %llu\n"
        "nwb_telemetry_uploads_rejected_total{reason=\"unsupported_encoding\"} %llu\n"
        "nwb_telemetry_uploads_rejected_total{reason=\"server_error\"} %llu\n"
        "# TYPE nwb_telemetry_bytes_received_total counter\n"
        "nwb_telemetry_bytes_received_total %llu\n"
        "# TYPE nwb_telemetry_bytes_stored_total counter\n"
        "nwb_telemetry_bytes_stored_total %llu\n"
        "# TYPE nwb_telemetry_events_total counter\n"
        "nwb_telemetry_events_total %llu\n",
        (unsigned long long)atomic_load(&m->uploads), (unsigned long long)atomic_load(&m->accepted),
        (unsigned long long)atomic_load(&m->duplicates),
        (unsigned long long)atomic_load(&m->rejected),
        (unsigned long long)atomic_load(&m->too_large),
        (unsigned long long)atomic_load(&m->unsupported),
        (unsigned long long)atomic_load(&m->failures),
        (unsigned long long)atomic_load(&m->bytes_received),
        (unsigned long long)atomic_load(&m->bytes_stored),
        (unsigned long long)atomic_load(&m->events));

    if (n < 0 || cap == 0) {
        return 0;
    }
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

/* Metrics are optional: @p m may be NULL (tests, tools). */
#define COUNT(m, field, v)                                                                         \
    do {                                                                                           \
        if ((m) != NULL) {                                                                         \
            atomic_fetch_add_explicit(&(m)->field, (v), memory_order_relaxed);                     \
        }                                                                                          \
    } while (0)

/* An answer: a few numbers, two short texts and an echoed Content-Encoding. */
#define ANSWER_MAX 4096u

void nwb__tel_ingest_res_init(struct nwb__tel_ingest_res *res)
{
    memset(res, 0, sizeof(*res));
    res->http_status = 500;
    nwb_buf_init(&res->body, ANSWER_MAX);
}

void nwb__tel_ingest_res_cleanup(struct nwb__tel_ingest_res *res)
{
    if (res != NULL) {
        nwb_buf_cleanup(&res->body);
    }
}

/* Close the answer's document; one that cannot be built is left empty (see telemetry_int.h). */
static void answer_finish(struct nwb__tel_ingest_res *res, nwb_json_t *j)
{
    nwb_json_obj_end(j);
    if (nwb_json_finish(j) != 0) {
        nwb_buf_reset(&res->body);
    }
}

void nwb__tel_ingest_res_error(struct nwb__tel_ingest_res *res, int http, int status,
                               const char *what, const char *reason)
{
    nwb_json_t j;

    res->http_status = http;
    res->status = status;
    nwb_buf_reset(&res->body);
    nwb_json_init(&j, &res->body, NULL);
    nwb_json_obj_begin(&j);
    nwb_json_key(&j, "error");
    nwb_json_cstr(&j, what);
    nwb_json_key(&j, "status");
    nwb_json_cstr(&j, status == 0 ? "ok" : nwb_err_name(status));
    nwb_json_key(&j, "code");
    nwb_json_i64(&j, status);
    nwb_json_key(&j, "offset");
    nwb_json_u64(&j, res->offset);
    nwb_json_key(&j, "reason");
    nwb_json_cstr(&j, reason != NULL ? reason : "");
    answer_finish(res, &j);
}

/* 200: {"seq":N,"duplicate":true} or {"seq":N,"duplicate":false,"bytes":B}. */
static void answer_stored(struct nwb__tel_ingest_res *res, size_t bytes)
{
    nwb_json_t j;

    res->http_status = 200;
    res->status = 0;
    nwb_buf_reset(&res->body);
    nwb_json_init(&j, &res->body, NULL);
    nwb_json_obj_begin(&j);
    nwb_json_key(&j, "seq");
    nwb_json_u64(&j, res->seq);
    nwb_json_key(&j, "duplicate");
    nwb_json_bool(&j, res->duplicate);
    if (!res->duplicate) {
        nwb_json_key(&j, "bytes");
        nwb_json_u64(&j, bytes);
    }
    answer_finish(res, &j);
}

/* nwb__tel_unzstd() (telemetry_int.h; tests/fuzz/fuzz_tel_unzstd.c fuzzes it). */
int nwb__tel_unzstd(const uint8_t *in, size_t in_len, size_t max, unsigned wlog, uint8_t **out,
                    size_t *out_len, const char **why)
{
    ZSTD_DCtx *d = ZSTD_createDCtx();
    const ZSTD_bounds wb = ZSTD_dParam_getBounds(ZSTD_d_windowLogMax);
    ZSTD_inBuffer ib = {in, in_len, 0};
    uint8_t *buf = NULL;
    size_t cap = 0;
    size_t len = 0;
    int err = 0;
    int done = 0;

    *out = NULL;
    *out_len = 0;
    if (d == NULL) {
        *why = "out of memory";
        return -ENOMEM;
    }
    /* zstd takes windowLogMax 0 as "the default" (2^27): refuse it and any value outside
     * zstd's range ourselves, so a cap is never silently widened (fuzz_tel_unzstd found it). */
    if (ZSTD_isError(wb.error) || wlog > 64u || (int)wlog < wb.lowerBound ||
        (int)wlog > wb.upperBound ||
        ZSTD_isError(ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, (int)wlog))) {
        ZSTD_freeDCtx(d);
        *why = "zstd window limit rejected";
        return NWB_ECONFIG;
    }
    while (!done) {
        ZSTD_outBuffer ob;
        size_t r;

        if (len == cap) {
            /* Grow by what has been produced so far (the claimed size is ignored), never past
             * max + 1: one byte beyond the cap proves the frame is too big. */
            size_t ncap = cap == 0 ? (in_len * 4 < 65536 ? 65536 : in_len * 4) : cap * 2;
            uint8_t *p;

            if (ncap > max + 1) {
                ncap = max + 1;
            }
            if (ncap <= cap) {
                err = NWB_ETOOBIG;
                *why = "decompressed upload exceeds the cap";
                break;
            }
            p = nwb_realloc(buf, ncap);
            if (p == NULL) {
                err = -ENOMEM;
                *why = "out of memory";
                break;
            }
            buf = p;
            cap = ncap;
        }
        ob.dst = buf;
        ob.size = cap;
        ob.pos = len;
        r = ZSTD_decompressStream(d, &ob, &ib);
        len = ob.pos;
        if (ZSTD_isError(r)) {
            if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge) {
                err = NWB_ETOOBIG;
                *why = "zstd window larger than the cap";
            } else {
                err = NWB_ECOMPRESS;
                *why = "corrupt zstd data";
            }
            break;
        }
        if (len > max) {
            err = NWB_ETOOBIG;
            *why = "decompressed upload exceeds the cap";
            break;
        }
        if (r == 0) {
            done = 1;
        } else if (ib.pos == ib.size && ob.pos < ob.size) {
            /* All input consumed, room left, frame not finished: truncated. */
            err = NWB_ECOMPRESS;
            *why = "zstd frame is truncated";
            break;
        }
    }
    ZSTD_freeDCtx(d);
    if (err == 0 && ib.pos != ib.size) {
        err = NWB_ECOMPRESS;
        *why = "data after the zstd frame (one frame per upload)";
    }
    if (err != 0) {
        nwb_free(buf);
        return err;
    }
    *out = buf;
    *out_len = len;
    return 0;
}

struct seg_probe {
    uint64_t seq;
    uint64_t want;
    int found;
    size_t last_offset; /* where the last segment header starts */
};

static int probe_segment(void *ctx, const nwb_tel_header_t *h, size_t offset)
{
    struct seg_probe *p = ctx;

    p->last_offset = offset;
    p->seq = h->seq;
    if (h->seq == p->want) {
        p->found = 1;
    }
    return 1; /* headers only matter here */
}

static int path_join(char *dst, const char *dir, const char *name)
{
    const int n = snprintf(dst, PATH_CAP, "%s/%s", dir, name);

    return n > 0 && n < PATH_CAP ? 0 : NWB_ETOOBIG;
}

/* Read the whole file (at most @p max bytes) plus @p extra spare capacity. Missing = empty. */
static int read_stream(int fd, size_t max, size_t extra, nwb_buf_t *b)
{
    struct stat st;
    size_t off = 0;
    int err;

    if (fstat(fd, &st) != 0) {
        return -errno;
    }
    if ((uint64_t)st.st_size > max) {
        return NWB_ETOOBIG;
    }
    err = nwb_buf_reserve(b, (size_t)st.st_size + extra);
    if (err != 0) {
        return err;
    }
    while (off < (size_t)st.st_size) {
        const ssize_t r = pread(fd, b->data + off, (size_t)st.st_size - off, (off_t)off);

        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            return -errno;
        }
        if (r == 0) {
            break; /* shrank meanwhile: use what is there */
        }
        off += (size_t)r;
    }
    b->len = off;
    return 0;
}

/* Build the report of @p stream and replace run_dir/telemetry.json atomically. */
static int write_report(const char *run_dir, const uint8_t *stream, size_t len,
                        const nwb_namesym_table_t *names)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    nwb_tel_ingest_summary_t ingest;
    char path[PATH_CAP];
    char tmp[PATH_CAP];
    nwb_buf_t json;
    int fd;
    int err;

    err = path_join(path, run_dir, NWB_TEL_INGEST_LOG_NAME);
    if (err == 0) {
        err = nwb_tel_ingest_log_load(path, &ingest);
    }
    if (err != 0) {
        return err;
    }
    ro.names = names;
    ro.ingest = &ingest;
    nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
    err = nwb_tel_report_build(stream, len, &ro, &json, NULL);
    if (err != 0) {
        nwb_buf_cleanup(&json);
        return err;
    }
    if (path_join(path, run_dir, NWB_TEL_REPORT_FILE) != 0 ||
        path_join(tmp, run_dir, NWB_TEL_REPORT_FILE ".tmp") != 0) {
        nwb_buf_cleanup(&json);
        return NWB_ETOOBIG;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        err = -errno;
        nwb_buf_cleanup(&json);
        return err;
    }
    err = nwb_write_all(fd, json.data, json.len);
    if (err == 0 && fsync(fd) != 0) {
        err = -errno;
    }
    if (close(fd) != 0 && err == 0) {
        err = -errno;
    }
    nwb_buf_cleanup(&json);
    if (err == 0 && rename(tmp, path) != 0) {
        err = -errno;
    }
    if (err != 0) {
        unlink(tmp);
    }
    return err;
}

/* Record a refused upload in the log and the report (the stored stream is not touched). */
static void record_refusal(const struct nwb__tel_ingest_req *req,
                           const struct nwb__tel_ingest_limits *lim,
                           const struct nwb__tel_ingest_res *res, const char *reason)
{
    char path[PATH_CAP];
    nwb_buf_t cur;
    int fd;

    if (path_join(path, req->run_dir, NWB_TEL_INGEST_LOG_NAME) != 0 ||
        nwb_tel_ingest_log_append(path, "rejected", res->seq, res->status, res->offset,
                                  req->body_len, reason) != 0) {
        return;
    }
    nwb_buf_init(&cur, lim->run_stream_max);
    if (path_join(path, req->run_dir, NWB_TEL_STREAM_FILE) != 0) {
        return;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)read_stream(fd, lim->run_stream_max, 0, &cur);
        close(fd);
    }
    (void)write_report(req->run_dir, cur.data != NULL ? cur.data : (const uint8_t *)"", cur.len,
                       req->names);
    nwb_buf_cleanup(&cur);
}

static int encoding_is(const char *enc, const char *name)
{
    return enc != NULL && strcasecmp(enc, name) == 0;
}

void nwb__tel_ingest(const struct nwb__tel_ingest_req *req,
                     const struct nwb__tel_ingest_limits *lim, struct nwb__tel_ingest_metrics *m,
                     struct nwb__tel_ingest_res *res)
{
    static const struct nwb__tel_ingest_limits defaults = NWB__TEL_INGEST_LIMITS_INIT;
    const nwb_tel_visitor_t probe_v = {probe_segment, NULL};
    struct seg_probe probe = {0, 0, 0, 0};
    nwb_tel_decode_result_t dr;
    uint8_t *owned = NULL;
    const uint8_t *raw;
    size_t raw_len;
    const char *why = NULL;
    nwb_buf_t cur;
    char path[PATH_CAP];
    uint64_t up_events;
    off_t old_size;
    int fd = -1;
    int err;

    nwb__tel_ingest_res_init(res);
    res->seq = req->has_seq ? req->seq : 0;
    if (lim == NULL) {
        lim = &defaults;
    }
    nwb_buf_init(&cur, lim->run_stream_max);
    COUNT(m, uploads, 1);
    COUNT(m, bytes_received, req->body_len);

    /* 1. Content-Encoding. */
    if (req->content_encoding == NULL || req->content_encoding[0] == '\0' ||
        encoding_is(req->content_encoding, "identity")) {
        raw = req->body;
        raw_len = req->body_len;
        if (raw_len > lim->decompressed_max) {
            nwb__tel_ingest_res_error(res, 413, NWB_ETOOBIG, "telemetry upload too large",
                                      "upload exceeds the cap");
            COUNT(m, too_large, 1);
            record_refusal(req, lim, res, "upload exceeds the cap");
            goto out;
        }
    } else if (encoding_is(req->content_encoding, "zstd")) {
        err = nwb__tel_unzstd(req->body, req->body_len, lim->decompressed_max, lim->window_log_max,
                              &owned, &raw_len, &why);
        if (err != 0) {
            const int http = err == NWB_ETOOBIG ? 413 : (err == -ENOMEM ? 500 : 400);

            nwb__tel_ingest_res_error(
                res, http, err,
                http == 413 ? "telemetry upload too large" : "bad zstd telemetry upload", why);
            if (http == 413) {
                COUNT(m, too_large, 1);
            } else if (http == 500) {
                COUNT(m, failures, 1);
            } else {
                COUNT(m, rejected, 1);
            }
            if (http != 500) {
                record_refusal(req, lim, res, why);
            }
            goto out;
        }
        raw = owned;
    } else {
        char reason[128];

        /* The client's own text, quoted back (the JSON writer escapes it). */
        snprintf(reason, sizeof(reason), "Content-Encoding \"%.64s\": use zstd or identity",
                 req->content_encoding);
        nwb__tel_ingest_res_error(res, 415, NWB_EPROTO, "unsupported Content-Encoding", reason);
        COUNT(m, unsupported, 1);
        goto out;
    }

    /* 2. Strict validation as one segment, before anything is stored. */
    probe.want = UINT64_MAX;
    if (nwb_tel_stream_decode(raw, raw_len, NWB_TEL_DECODE_SINGLE_SEGMENT, &probe_v, &probe, &dr) !=
        0) {
        res->offset = dr.error_offset;
        if (!req->has_seq) {
            res->seq = probe.seq;
        }
        nwb__tel_ingest_res_error(res, 400, dr.status, "malformed telemetry stream", dr.reason);
        COUNT(m, rejected, 1);
        record_refusal(req, lim, res, dr.reason);
        goto out;
    }
    res->seq = req->has_seq ? req->seq : probe.seq;
    up_events = dr.events;

    /* 3. The run's stream: check for this seq, then append. */
    err = path_join(path, req->run_dir, NWB_TEL_STREAM_FILE);
    if (err == 0) {
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        err = fd < 0 ? -errno : 0;
    }
    if (err == 0) {
        err = read_stream(fd, lim->run_stream_max, raw_len, &cur);
    }
    if (err == NWB_ETOOBIG || (err == 0 && cur.len + raw_len > lim->run_stream_max)) {
        nwb__tel_ingest_res_error(res, 413, NWB_ETOOBIG, "run telemetry stream full",
                                  "the run's stream is at its cap");
        COUNT(m, too_large, 1);
        record_refusal(req, lim, res, "the run's stream is at its cap");
        goto out;
    }
    if (err != 0) {
        nwb__tel_ingest_res_error(res, 500, err, "telemetry storage failed",
                                  "cannot read the run's stream");
        COUNT(m, failures, 1);
        goto out;
    }
    probe.want = res->seq;
    probe.found = 0;
    nwb_tel_stream_decode(cur.data, cur.len, 0, &probe_v, &probe, &dr);
    if (dr.status == NWB_ETRUNCATED && dr.segments > 0) {
        /* A torn tail: appends are whole segments, so only a crash mid-append leaves one.
         * Cut back to the start of that last, incomplete segment so later uploads stay
         * decodable; every complete segment before it is kept. */
        if (ftruncate(fd, (off_t)probe.last_offset) == 0) {
            cur.len = probe.last_offset;
        }
    }
    if (probe.found) {
        res->duplicate = 1;
        answer_stored(res, 0);
        COUNT(m, duplicates, 1);
        if (path_join(path, req->run_dir, NWB_TEL_INGEST_LOG_NAME) == 0) {
            (void)nwb_tel_ingest_log_append(path, "duplicate", res->seq, 0, 0, req->body_len, NULL);
        }
        (void)write_report(req->run_dir, cur.data != NULL ? cur.data : (const uint8_t *)"", cur.len,
                           req->names);
        goto out;
    }

    /* The stored header carries the seq that was acknowledged (X-NWB-Seq when given): the
     * segment is patched in the spare room read_stream() left after the stream, then written. */
    memcpy(cur.data + cur.len, raw, raw_len);
    nwb_le64_store(cur.data + cur.len + 24, res->seq);
    old_size = (off_t)cur.len;
    err = nwb_pwrite_all(fd, cur.data + cur.len, raw_len, old_size);
    if (err == 0 && fdatasync(fd) != 0) {
        err = -errno;
    }
    if (err != 0) {
        /* Keep the earlier data intact: cut back whatever part of this upload landed. */
        (void)ftruncate(fd, old_size);
        nwb__tel_ingest_res_error(res, 500, err, "telemetry storage failed",
                                  "append to the run's stream failed");
        COUNT(m, failures, 1);
        goto out;
    }
    cur.len += raw_len;
    COUNT(m, bytes_stored, raw_len);
    COUNT(m, events, up_events);
    if (path_join(path, req->run_dir, NWB_TEL_INGEST_LOG_NAME) == 0) {
        (void)nwb_tel_ingest_log_append(path, "accepted", res->seq, 0, 0, req->body_len, NULL);
    }

    /* 4. The report. A failure here is a 500: the client resends, the resend is a duplicate
     * (stored once), and the duplicate path rebuilds the report. */
    err = write_report(req->run_dir, cur.data, cur.len, req->names);
    if (err != 0) {
        nwb__tel_ingest_res_error(res, 500, err, "telemetry report failed",
                                  "cannot write telemetry.json");
        COUNT(m, failures, 1);
        goto out;
    }
    answer_stored(res, raw_len);
    COUNT(m, accepted, 1);
out:
    if (fd >= 0) {
        close(fd);
    }
    nwb_buf_cleanup(&cur);
    nwb_free(owned);
}
