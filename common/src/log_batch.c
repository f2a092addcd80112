/* SPDX-License-Identifier: MIT */
/* log_batch.c - encoder and strict reader for the log-batch wire format (docs/protocol.md). */
#include <string.h>

#include "nwb/byte_order.h"
#include "nwb/error.h"
#include "nwb/log.h"
#include "nwb/log_batch.h"

/*
 * Batch header (16 bytes)      Record header (32 bytes)
 *  0 u32 magic "NWBL"           0 u32 record_size (header + file + msg + extensions)
 *  4 u16 version (1)            4 u8  level
 *  6 u16 header_size (16)       5 u8  flags
 *  8 u32 record_count           6 u16 file_len
 * 12 u32 payload_bytes          8 u64 time_ns
 *                              16 u64 thread_id
 *                              24 u32 line
 *                              28 u32 msg_len
 */

void nwb_log_batch_header_write(uint8_t *dst)
{
    nwb_le32_store(dst, NWB_LOG_BATCH_MAGIC);
    nwb_le16_store(dst + 4, NWB_LOG_BATCH_VERSION);
    nwb_le16_store(dst + 6, NWB_LOG_BATCH_HEADER_SIZE);
    nwb_le32_store(dst + 8, 0);
    nwb_le32_store(dst + 12, 0);
}

void nwb_log_batch_header_finish(uint8_t *batch, uint32_t record_count, uint32_t payload_bytes)
{
    nwb_le32_store(batch + 8, record_count);
    nwb_le32_store(batch + 12, payload_bytes);
}

size_t nwb_log_record_encode(uint8_t *dst, const nwb_log_record_t *rec)
{
    const size_t size = nwb_log_record_encoded_size(rec);
    const size_t body = nwb_log_record_wire_size(rec->file_len, rec->msg_len);

    nwb_le32_store(dst, (uint32_t)size);
    dst[4] = rec->level;
    dst[5] = (uint8_t)(rec->flags & ~NWB_LOG_RECORD_TAGGED);
    nwb_le16_store(dst + 6, rec->file_len);
    nwb_le64_store(dst + 8, rec->time_ns);
    nwb_le64_store(dst + 16, rec->thread_id);
    nwb_le32_store(dst + 24, rec->line);
    nwb_le32_store(dst + 28, rec->msg_len);
    if (rec->file_len > 0) {
        memcpy(dst + NWB_LOG_RECORD_HEADER_SIZE, rec->file, rec->file_len);
    }
    if (rec->msg_len > 0) {
        memcpy(dst + NWB_LOG_RECORD_HEADER_SIZE + rec->file_len, rec->msg, rec->msg_len);
    }
    if (rec->thread_name_len > 0) {
        dst[5] |= NWB_LOG_RECORD_TAGGED;
        dst[body] = NWB_LOG_TAG_THREAD_NAME;
        dst[body + 1] = rec->thread_name_len;
        memcpy(dst + body + 2, rec->thread_name, rec->thread_name_len);
    }
    return size;
}

static int fail(nwb_log_batch_reader_t *r, int code, const char *why)
{
    r->why = why;
    return code;
}

/*
 * The tagged fields of a TAGGED record, @p p .. @p end: each u8 tag, u8 len, len bytes, ending
 * exactly at @p end. Sets @p out's thread name; returns 0 or a code with r->why and r->off
 * (the bad field's offset) set.
 */
static int tags_parse(nwb_log_batch_reader_t *r, const uint8_t *p, const uint8_t *end,
                      nwb_log_record_t *out)
{
    while (p < end) {
        const size_t left = (size_t)(end - p);
        unsigned tag, len;

        if (left < 2) {
            r->off = (size_t)(p - r->data);
            return fail(r, NWB_ETRUNCATED, "tagged field header runs past record_size");
        }
        tag = p[0];
        len = p[1];
        if (len > left - 2) {
            r->off = (size_t)(p - r->data);
            return fail(r, NWB_ETRUNCATED, "tagged field runs past record_size");
        }
        if (tag == NWB_LOG_TAG_THREAD_NAME) {
            if (len == 0 || len > NWB_LOG_THREAD_NAME_MAX) {
                r->off = (size_t)(p - r->data);
                return fail(r, NWB_ERANGE, "thread name not 1 to 15 bytes");
            }
            out->thread_name = (const char *)p + 2;
            out->thread_name_len = (uint8_t)len;
        }
        p += 2 + len; /* unknown tags: skipped by their length */
    }
    return 0;
}

int nwb_log_batch_reader_init(nwb_log_batch_reader_t *r, const void *data, size_t len)
{
    const uint8_t *p = data;
    uint32_t header_size;
    uint32_t payload;

    memset(r, 0, sizeof(*r));
    r->data = p;
    r->len = len;
    r->why = "";
    if (len < 8) {
        return fail(r, NWB_ETRUNCATED, "batch shorter than its header");
    }
    if (nwb_le32_load(p) != NWB_LOG_BATCH_MAGIC) {
        return fail(r, NWB_EMAGIC, "bad batch magic (expected \"NWBL\")");
    }
    if (nwb_le16_load(p + 4) != NWB_LOG_BATCH_VERSION) {
        return fail(r, NWB_EVERSION, "unsupported batch version");
    }
    header_size = nwb_le16_load(p + 6);
    if (header_size < NWB_LOG_BATCH_HEADER_SIZE) {
        return fail(r, NWB_EPROTO, "batch header_size smaller than 16");
    }
    if (len < header_size) {
        return fail(r, NWB_ETRUNCATED, "batch shorter than its header");
    }
    r->count = nwb_le32_load(p + 8);
    payload = nwb_le32_load(p + 12);
    if ((uint64_t)header_size + payload != len) {
        r->off = 12;
        return fail(r, NWB_ERANGE, "payload_bytes does not match the body length");
    }
    /* Every record needs at least its header: a lying count fails here, before any work. */
    if ((uint64_t)r->count * NWB_LOG_RECORD_HEADER_SIZE > payload) {
        r->off = 8;
        return fail(r, NWB_ERANGE, "record_count larger than the payload can hold");
    }
    r->off = header_size;
    return 0;
}

int nwb_log_batch_reader_next(nwb_log_batch_reader_t *r, nwb_log_record_t *out)
{
    const uint8_t *p;
    size_t left;
    uint32_t size;

    if (r->index == r->count) {
        if (r->off != r->len) {
            return fail(r, NWB_EPROTO, "bytes after the last record");
        }
        return 0;
    }
    left = r->len - r->off;
    if (left < NWB_LOG_RECORD_HEADER_SIZE) {
        return fail(r, NWB_ETRUNCATED, "record header truncated");
    }
    p = r->data + r->off;
    size = nwb_le32_load(p);
    out->level = p[4];
    out->flags = p[5];
    out->file_len = nwb_le16_load(p + 6);
    out->time_ns = nwb_le64_load(p + 8);
    out->thread_id = nwb_le64_load(p + 16);
    out->line = nwb_le32_load(p + 24);
    out->msg_len = nwb_le32_load(p + 28);
    if (size > left) {
        return fail(r, NWB_ETRUNCATED, "record_size runs past the end of the batch");
    }
    if (out->level >= NWB_LOG_LEVEL_COUNT) {
        return fail(r, NWB_EPROTO, "unknown log level");
    }
    if (out->file_len > NWB_LOG_RECORD_FILE_MAX) {
        return fail(r, NWB_ERANGE, "file name longer than 1024 bytes");
    }
    if (out->msg_len > NWB_LOG_RECORD_MSG_MAX) {
        return fail(r, NWB_ERANGE, "message longer than 65536 bytes");
    }
    if ((uint64_t)NWB_LOG_RECORD_HEADER_SIZE + out->file_len + out->msg_len > size) {
        return fail(r, NWB_ERANGE, "file_len + msg_len exceed record_size");
    }
    out->file = (const char *)p + NWB_LOG_RECORD_HEADER_SIZE;
    out->msg = out->file + out->file_len;
    out->thread_name = NULL;
    out->thread_name_len = 0;
    if (out->flags & NWB_LOG_RECORD_TAGGED) {
        const size_t at = r->off;
        const int rc = tags_parse(r, (const uint8_t *)out->msg + out->msg_len, p + size, out);

        if (rc != 0) {
            return rc;
        }
        r->off = at;
    }
    r->off += size;
    r->index++;
    return 1;
}

int nwb_log_batch_validate(const void *data, size_t len, const char **why, size_t *bad_offset)
{
    nwb_log_batch_reader_t r;
    nwb_log_record_t rec;
    int rc = nwb_log_batch_reader_init(&r, data, len);

    while (rc == 0) {
        rc = nwb_log_batch_reader_next(&r, &rec);
        if (rc != 1) {
            break;
        }
        rc = 0;
    }
    if (why != NULL) {
        *why = r.why;
    }
    if (bad_offset != NULL) {
        *bad_offset = r.off;
    }
    return rc;
}
