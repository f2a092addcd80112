/* SPDX-License-Identifier: MIT */
/*
 * fuzz_log_batch.c - fuzz target for the log-batch reader (nwb/log_batch.h): any bytes must
 * decode or fail with a documented code and reason, never read outside the input. A batch that
 * decodes is re-encoded: in the canonical encoding (16-byte header, no record extensions) the
 * bytes must round-trip exactly; otherwise the re-encoding must decode to the same records.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/byte_order.h"
#include "nwb/error.h"
#include "nwb/log.h"
#include "nwb/log_batch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_log_batch: check failed at line %d: %s\n", __LINE__, #cond);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A failure must carry a documented code, a reason, and an offset inside the input. */
static void check_failure(const nwb_log_batch_reader_t *r, int rc, const void *data, size_t size)
{
    const char *why = NULL;
    size_t bad = 0;

    FUZZ_CHECK(rc == NWB_EMAGIC || rc == NWB_EVERSION || rc == NWB_ETRUNCATED || rc == NWB_ERANGE ||
               rc == NWB_EPROTO);
    FUZZ_CHECK(r->why != NULL && r->why[0] != '\0');
    FUZZ_CHECK(r->off <= size);
    /* The one-call validator must agree with the step-by-step reader. */
    FUZZ_CHECK(nwb_log_batch_validate(data, size, &why, &bad) == rc);
    FUZZ_CHECK(bad == r->off && why != NULL && strcmp(why, r->why) == 0);
}

/* Every field of a decoded record is within the bounds the reader promises. */
static void check_record(const nwb_log_record_t *rec, const uint8_t *data, size_t size)
{
    const uintptr_t lo = (uintptr_t)data;
    const uintptr_t hi = lo + size;

    FUZZ_CHECK(rec->level < NWB_LOG_LEVEL_COUNT);
    FUZZ_CHECK(rec->file_len <= NWB_LOG_RECORD_FILE_MAX);
    FUZZ_CHECK(rec->msg_len <= NWB_LOG_RECORD_MSG_MAX);
    FUZZ_CHECK((uintptr_t)rec->file >= lo + NWB_LOG_BATCH_HEADER_SIZE);
    FUZZ_CHECK((uintptr_t)rec->file + rec->file_len <= hi);
    FUZZ_CHECK((uintptr_t)rec->msg == (uintptr_t)rec->file + rec->file_len);
    FUZZ_CHECK((uintptr_t)rec->msg + rec->msg_len <= hi);
    if (rec->thread_name_len > 0) {
        FUZZ_CHECK(rec->flags & NWB_LOG_RECORD_TAGGED);
        FUZZ_CHECK(rec->thread_name_len <= NWB_LOG_THREAD_NAME_MAX);
        FUZZ_CHECK((uintptr_t)rec->thread_name >= (uintptr_t)rec->msg + rec->msg_len);
        FUZZ_CHECK((uintptr_t)rec->thread_name + rec->thread_name_len <= hi);
    } else {
        FUZZ_CHECK(rec->thread_name == NULL);
    }
}

static int records_equal(const nwb_log_record_t *a, const nwb_log_record_t *b)
{
    return a->time_ns == b->time_ns && a->thread_id == b->thread_id && a->line == b->line &&
           a->level == b->level &&
           (a->flags & ~NWB_LOG_RECORD_TAGGED) == (b->flags & ~NWB_LOG_RECORD_TAGGED) &&
           a->file_len == b->file_len && a->msg_len == b->msg_len &&
           memcmp(a->file, b->file, a->file_len) == 0 && memcmp(a->msg, b->msg, a->msg_len) == 0 &&
           a->thread_name_len == b->thread_name_len &&
           (a->thread_name_len == 0 ||
            memcmp(a->thread_name, b->thread_name, a->thread_name_len) == 0);
}

/* Both batches must decode completely to the same records. */
static void check_same_records(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    nwb_log_batch_reader_t ra;
    nwb_log_batch_reader_t rb;
    nwb_log_record_t reca;
    nwb_log_record_t recb;
    int rca;
    int rcb;

    FUZZ_CHECK(nwb_log_batch_reader_init(&ra, a, alen) == 0);
    FUZZ_CHECK(nwb_log_batch_reader_init(&rb, b, blen) == 0);
    FUZZ_CHECK(ra.count == rb.count);
    do {
        rca = nwb_log_batch_reader_next(&ra, &reca);
        rcb = nwb_log_batch_reader_next(&rb, &recb);
        FUZZ_CHECK(rca == rcb);
        FUZZ_CHECK(rca == 0 || rca == 1);
        if (rca == 1) {
            FUZZ_CHECK(records_equal(&reca, &recb));
        }
    } while (rca == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nwb_log_batch_reader_t r;
    nwb_log_record_t rec;
    uint8_t *out;
    size_t out_len = NWB_LOG_BATCH_HEADER_SIZE;
    int canonical;
    int rc = nwb_log_batch_reader_init(&r, data, size);

    if (rc != 0) {
        check_failure(&r, rc, data, size);
        return 0;
    }
    FUZZ_CHECK(size >= NWB_LOG_BATCH_HEADER_SIZE && r.off <= size);
    canonical = nwb_le16_load(data + 6) == NWB_LOG_BATCH_HEADER_SIZE;

    /* Every re-encoded record is at most as long as the one it came from. */
    out = nwb_malloc(size);
    if (out == NULL) {
        return 0;
    }
    nwb_log_batch_header_write(out);
    for (;;) {
        const size_t rec_off = r.off;
        size_t wire;

        rc = nwb_log_batch_reader_next(&r, &rec);
        if (rc != 1) {
            break;
        }
        check_record(&rec, data, size);
        FUZZ_CHECK(r.off > rec_off && r.off <= size);
        wire = nwb_log_record_encoded_size(&rec);
        if (wire != nwb_le32_load(data + rec_off)) {
            canonical = 0; /* the record carries extension bytes the reader skipped */
        }
        FUZZ_CHECK(out_len + wire <= size);
        FUZZ_CHECK(nwb_log_record_encode(out + out_len, &rec) == wire);
        if (wire == nwb_le32_load(data + rec_off) && memcmp(out + out_len, data + rec_off, wire)) {
            canonical = 0; /* same size, other bytes: unknown tags, or TAGGED with no name */
        }
        out_len += wire;
    }
    if (rc != 0) {
        check_failure(&r, rc, data, size);
        nwb_free(out);
        return 0;
    }
    FUZZ_CHECK(r.index == r.count && r.off == size);
    FUZZ_CHECK(nwb_log_batch_validate(data, size, NULL, NULL) == 0);
    nwb_log_batch_header_finish(out, r.count, (uint32_t)(out_len - NWB_LOG_BATCH_HEADER_SIZE));
    if (canonical) {
        FUZZ_CHECK(out_len == size && memcmp(out, data, size) == 0);
    } else {
        check_same_records(data, size, out, out_len);
    }
    nwb_free(out);
    return 0;
}
