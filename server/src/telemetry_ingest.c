/* SPDX-License-Identifier: MIT */
/*
 * telemetry_ingest.c - POST /v1/telemetry in O(upload): the run from the cache (its report
 * state, index and outcomes in memory), a duplicate told by the index of acknowledged seqs,
 * zstd decompression under caps, one atomic feed into the report state (which validates the
 * upload as one segment), the zstd frame stored as received (an identity upload compressed
 * once), the index record, the outcome line, and telemetry.json rewritten from the state
 * (temporary file, fsync, rename). Runs on a pool thread; one upload per run at a time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <zstd.h>

#include "nwb/alloc.h"
#include "nwb/byte_order.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "nwb/json.h"
#include "nwb/telemetry_report.h"
#include "tel_run_int.h"

_Static_assert((64u << 20) == NWB_TEL_ZSTD_FRAME_MAX && 23u == NWB_TEL_ZSTD_WINDOW_LOG,
               "NWB__TEL_INGEST_LIMITS_INIT must be the telemetry library's zstd caps");

void nwb__tel_ingest_metrics_init(struct nwb__tel_ingest_metrics *m)
{
    atomic_init(&m->uploads, 0);
    atomic_init(&m->accepted, 0);
    atomic_init(&m->unstored, 0);
    atomic_init(&m->duplicates, 0);
    atomic_init(&m->rejected, 0);
    atomic_init(&m->too_large, 0);
    atomic_init(&m->unsupported, 0);
    atomic_init(&m->failures, 0);
    atomic_init(&m->bytes_received, 0);
    atomic_init(&m->bytes_stored, 0);
    atomic_init(&m->events, 0);
    atomic_init(&m->rebuilds, 0);
    atomic_init(&m->evictions, 0);
    atomic_init(&m->cached_runs, 0);
    atomic_init(&m->cached_bytes, 0);
}

#define LOAD(field) (unsigned long long)atomic_load(&m->field)

size_t nwb__tel_ingest_metrics_format(const struct nwb__tel_ingest_metrics *m, char *buf,
                                      size_t cap)
{
    const int n =
        snprintf(buf, cap,
                 "# TYPE nwb_telemetry_uploads_total counter\n"
                 "nwb_telemetry_uploads_total %llu\n"
                 "# TYPE nwb_telemetry_uploads_accepted_total counter\n"
                 "nwb_telemetry_uploads_accepted_total %llu\n"
                 "# TYPE nwb_telemetry_uploads_unstored_total counter\n"
                 "nwb_telemetry_uploads_unstored_total %llu\n"
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
                 "nwb_telemetry_events_total %llu\n"
                 "# TYPE nwb_telemetry_state_rebuilds_total counter\n"
                 "nwb_telemetry_state_rebuilds_total %llu\n"
                 "# TYPE nwb_telemetry_state_evictions_total counter\n"
                 "nwb_telemetry_state_evictions_total %llu\n"
                 "# TYPE nwb_telemetry_cached_runs gauge\n"
                 "nwb_telemetry_cached_runs %llu\n"
                 "# TYPE nwb_telemetry_cached_bytes gauge\n"
                 "nwb_telemetry_cached_bytes %llu\n",
                 LOAD(uploads), LOAD(accepted), LOAD(unstored), LOAD(duplicates), LOAD(rejected),
                 LOAD(too_large), LOAD(unsupported), LOAD(failures), LOAD(bytes_received),
                 LOAD(bytes_stored), LOAD(events), LOAD(rebuilds), LOAD(evictions),
                 LOAD(cached_runs), LOAD(cached_bytes));

    if (n < 0 || cap == 0) {
        return 0;
    }
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

#undef LOAD

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

/* 200: {"seq":N,"duplicate":true} or {"seq":N,"duplicate":false,"bytes":B,"stored":S}. */
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
        nwb_json_key(&j, "stored");
        nwb_json_bool(&j, res->stored);
    }
    answer_finish(res, &j);
}

int nwb__tel_report_write(const struct nwb__tel_run *run, const nwb_namesym_table_t *names)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    char path[NWB__TEL_PATH_MAX];
    char tmp[NWB__TEL_PATH_MAX];
    nwb_buf_t json;
    int fd;
    int err;

    if (nwb__tel_path(path, run->dir, NWB_TEL_REPORT_FILE) != 0 ||
        nwb__tel_path(tmp, run->dir, NWB_TEL_REPORT_FILE ".tmp") != 0) {
        return NWB_ETOOBIG;
    }
    ro.names = names;
    ro.ingest = &run->ingest;
    nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
    err = nwb_tel_report_state_write(run->state, &ro, &json);
    if (err != 0) {
        nwb_buf_cleanup(&json);
        return err;
    }
    /* O_NONBLOCK: a FIFO put in its place fails the write (ENXIO), never hangs a thread. */
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
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

/* One outcome line in telemetry.ingest.log, counted in the run's summary as a load of the
 * file would count it. A failure only loses the line (the report still counts it). */
static void note_outcome(struct nwb__tel_run *run, const char *outcome,
                         const struct nwb__tel_ingest_res *res, uint64_t bytes, const char *reason)
{
    char path[NWB__TEL_PATH_MAX];

    if (nwb__tel_path(path, run->dir, NWB_TEL_INGEST_LOG_NAME) == 0) {
        (void)nwb_tel_ingest_log_record(path, &run->ingest, outcome, res->seq, res->status,
                                        res->offset, bytes, reason);
    }
}

/* A refused upload: recorded in the log and the report; the stored stream is not touched. */
static void record_refusal(struct nwb__tel_run *run, const struct nwb__tel_ingest_req *req,
                           const struct nwb__tel_ingest_res *res, const char *reason)
{
    note_outcome(run, "rejected", res, req->body_len, reason);
    (void)nwb__tel_report_write(run, req->names);
}

/* The seq was acknowledged before: 200, counted once more as a duplicate. */
static void answer_duplicate(struct nwb__tel_run *run, const struct nwb__tel_ingest_req *req,
                             struct nwb__tel_ingest_res *res, struct nwb__tel_ingest_metrics *m)
{
    res->duplicate = 1;
    answer_stored(res, 0);
    COUNT(m, duplicates, 1);
    note_outcome(run, "duplicate", res, req->body_len, NULL);
    (void)nwb__tel_report_write(run, req->names);
}

static int encoding_is(const char *enc, const char *name)
{
    return enc != NULL && strcasecmp(enc, name) == 0;
}

/* The upload's decompressed bytes: @p req->body itself (identity) or *@p owned (zstd).
 * Returns 0, or with @p res the error answer (recorded in the run when @p run). */
static int upload_bytes(struct nwb__tel_run *run, const struct nwb__tel_ingest_req *req,
                        const struct nwb__tel_ingest_limits *lim, struct nwb__tel_ingest_metrics *m,
                        struct nwb__tel_ingest_res *res, uint8_t **owned, const uint8_t **raw,
                        size_t *raw_len)
{
    const char *why = NULL;
    int err;
    int http;

    *owned = NULL;
    if (!encoding_is(req->content_encoding, "zstd")) {
        *raw = req->body;
        *raw_len = req->body_len;
        if (*raw_len <= lim->decompressed_max) {
            return 0;
        }
        nwb__tel_ingest_res_error(res, 413, NWB_ETOOBIG, "telemetry upload too large",
                                  "upload exceeds the cap");
        COUNT(m, too_large, 1);
        record_refusal(run, req, res, "upload exceeds the cap");
        return NWB_ETOOBIG;
    }
    err = nwb_tel_unzstd(req->body, req->body_len, lim->decompressed_max, lim->window_log_max,
                         owned, raw_len, &why);
    if (err == 0) {
        *raw = *owned;
        return 0;
    }
    http = err == NWB_ETOOBIG ? 413 : (err == -ENOMEM ? 500 : 400);
    nwb__tel_ingest_res_error(
        res, http, err, http == 413 ? "telemetry upload too large" : "bad zstd telemetry upload",
        why);
    if (http == 413) {
        COUNT(m, too_large, 1);
    } else if (http == 500) {
        COUNT(m, failures, 1);
    } else {
        COUNT(m, rejected, 1);
    }
    if (http != 500) {
        record_refusal(run, req, res, why);
    }
    return err;
}

/*
 * The stored header carries the seq that was acknowledged (X-NWB-Seq when given). Returns 1
 * when the header said otherwise and was set (the bytes now differ from the upload's), 0 when
 * it already did or does not decode (the feed then says why), -ENOMEM.
 */
static int header_seq_set(const struct nwb__tel_ingest_req *req, uint8_t **owned,
                          const uint8_t **raw, size_t raw_len, uint64_t seq)
{
    nwb_tel_header_t h;
    size_t used = 0;
    size_t bad = 0;
    const char *why = NULL;

    if (nwb_tel_header_decode(*raw, raw_len, &h, &used, &bad, &why) != 0 || h.seq == seq) {
        return 0;
    }
    if (*owned == NULL) {
        *owned = nwb_malloc(raw_len);
        if (*owned == NULL) {
            return -ENOMEM;
        }
        memcpy(*owned, req->body, raw_len);
        *raw = *owned;
    }
    nwb_le64_store(*owned + 24, seq);
    return 1;
}

/* The segment's seq without a full decode: 0 with *@p seq, or -1 when the header is bad. */
static int header_seq(const uint8_t *raw, size_t raw_len, uint64_t *seq)
{
    nwb_tel_header_t h;
    size_t used = 0;
    size_t bad = 0;
    const char *why = NULL;

    if (nwb_tel_header_decode(raw, raw_len, &h, &used, &bad, &why) != 0) {
        return -1;
    }
    *seq = h.seq;
    return 0;
}

void nwb__tel_ingest(struct nwb__tel_cache *cache, const struct nwb__tel_ingest_req *req,
                     const struct nwb__tel_ingest_limits *lim, struct nwb__tel_ingest_metrics *m,
                     struct nwb__tel_ingest_res *res)
{
    static const struct nwb__tel_ingest_limits defaults = NWB__TEL_INGEST_LIMITS_INIT;
    struct nwb__tel_run *run = NULL;
    nwb_tel_feed_result_t fr;
    struct nwb__tel_rec rec;
    uint8_t *owned = NULL;
    uint8_t *zowned = NULL;
    const uint8_t *raw = NULL;
    const uint8_t *z;
    size_t raw_len = 0;
    size_t zlen;
    int patched;
    int err;

    nwb__tel_ingest_res_init(res);
    res->seq = req->has_seq ? req->seq : 0;
    if (lim == NULL) {
        lim = &defaults;
    }
    COUNT(m, uploads, 1);
    COUNT(m, bytes_received, req->body_len);

    /* 1. Content-Encoding: an unknown one is refused before the run is looked at. */
    if (req->content_encoding != NULL && req->content_encoding[0] != '\0' &&
        !encoding_is(req->content_encoding, "identity") &&
        !encoding_is(req->content_encoding, "zstd")) {
        char reason[128];

        /* The client's own text, quoted back (the JSON writer escapes it). */
        snprintf(reason, sizeof(reason), "Content-Encoding \"%.64s\": use zstd or identity",
                 req->content_encoding);
        nwb__tel_ingest_res_error(res, 415, NWB_EPROTO, "unsupported Content-Encoding", reason);
        COUNT(m, unsupported, 1);
        return;
    }

    /* 2. The run: from the cache, or rebuilt once from its stored stream. */
    err = nwb__tel_cache_acquire(cache, req->run_dir, 1, &run);
    if (err != 0) {
        nwb__tel_ingest_res_error(res, 500, err, "telemetry storage failed",
                                  "cannot open the run's telemetry");
        COUNT(m, failures, 1);
        return;
    }

    /* 3. A resend named by X-NWB-Seq is known from the index: nothing is decoded. */
    if (req->has_seq && nwb__tel_store_has_seq(run->store, req->seq)) {
        answer_duplicate(run, req, res, m);
        goto out;
    }
    if (upload_bytes(run, req, lim, m, res, &owned, &raw, &raw_len) != 0) {
        goto out;
    }
    if (!req->has_seq && header_seq(raw, raw_len, &res->seq) == 0 &&
        nwb__tel_store_has_seq(run->store, res->seq)) {
        answer_duplicate(run, req, res, m);
        goto out;
    }
    if (nwb__tel_store_uploads(run->store) >= lim->run_uploads_max) {
        nwb__tel_ingest_res_error(res, 413, NWB_ETOOBIG, "run telemetry index full",
                                  "the run has the most uploads one run may hold");
        COUNT(m, too_large, 1);
        record_refusal(run, req, res, "the run's index is full");
        goto out;
    }
    patched = header_seq_set(req, &owned, &raw, raw_len, res->seq);
    if (patched < 0) {
        nwb__tel_ingest_res_error(res, 500, patched, "telemetry storage failed", "out of memory");
        COUNT(m, failures, 1);
        goto out;
    }

    /* 4. The one decode: validated as one segment and, only when it is whole, added. */
    err = nwb_tel_report_state_feed(run->state, raw, raw_len,
                                    NWB_TEL_FEED_ATOMIC | NWB_TEL_DECODE_SINGLE_SEGMENT, &fr);
    if (err != 0) {
        run->broken = 1;
        nwb__tel_ingest_res_error(res, 500, err, "telemetry report failed", "out of memory");
        COUNT(m, failures, 1);
        goto out;
    }
    if (fr.status != 0 || !fr.applied) {
        res->offset = fr.error_offset;
        nwb__tel_ingest_res_error(res, 400, fr.status != 0 ? fr.status : NWB_EPROTO,
                                  "malformed telemetry stream",
                                  fr.reason != NULL ? fr.reason : "not applied");
        COUNT(m, rejected, 1);
        record_refusal(run, req, res, fr.reason);
        goto out;
    }

    /* 5. Stored as received: the upload's own zstd frame, unless its bytes had to change. */
    if (encoding_is(req->content_encoding, "zstd") && !patched) {
        z = req->body;
        zlen = req->body_len;
    } else {
        const size_t zcap = ZSTD_compressBound(raw_len);

        zowned = nwb_malloc(zcap);
        zlen = zowned != NULL ? ZSTD_compress(zowned, zcap, raw, raw_len, NWB__TEL_STORE_ZSTD_LEVEL)
                              : 0;
        if (zowned == NULL || ZSTD_isError(zlen)) {
            run->broken = 1;
            nwb__tel_ingest_res_error(res, 500, zowned == NULL ? -ENOMEM : NWB_ECOMPRESS,
                                      "telemetry storage failed", "cannot compress the upload");
            COUNT(m, failures, 1);
            goto out;
        }
        z = zowned;
    }
    res->stored = nwb__tel_store_bytes(run->store) + zlen <= lim->run_stream_max;
    memset(&rec, 0, sizeof(rec));
    rec.seq = res->seq;
    rec.raw_len = (uint32_t)raw_len;
    rec.events = fr.events;
    if (fr.frames > 0) {
        rec.flags = NWB__TEL_REC_FRAMES;
        rec.frame_min = fr.frame_min;
        rec.frame_max = fr.frame_max;
    }
    err = nwb__tel_store_append(run->store, res->stored ? z : NULL, zlen, &rec);
    if (err != 0) {
        /* The state has the upload, the files do not: rebuilt from them at the next use. */
        run->broken = 1;
        nwb__tel_ingest_res_error(res, 500, err, "telemetry storage failed",
                                  "append to the run's stream failed");
        COUNT(m, failures, 1);
        goto out;
    }
    if (res->stored) {
        COUNT(m, bytes_stored, zlen);
    } else {
        COUNT(m, unstored, 1);
    }
    COUNT(m, events, fr.events);
    COUNT(m, accepted, 1);
    note_outcome(run, res->stored ? "accepted" : "unstored", res, req->body_len, NULL);

    /* 6. The report. A failure here is a 500: the client resends, the resend is a duplicate
     * (acknowledged once), and the duplicate path writes the report again. */
    err = nwb__tel_report_write(run, req->names);
    if (err != 0) {
        nwb__tel_ingest_res_error(res, 500, err, "telemetry report failed",
                                  "cannot write telemetry.json");
        COUNT(m, failures, 1);
        goto out;
    }
    answer_stored(res, raw_len);
out:
    nwb__tel_cache_release(cache, run);
    nwb_free(owned);
    nwb_free(zowned);
}
