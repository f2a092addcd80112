/* SPDX-License-Identifier: MIT */
/*
 * nwb/log_batch.h - the log-batch wire format (POST /v1/log,
 * Content-Type: application/x-nwb-log-batch), version 1.
 *
 * docs/protocol.md has the byte tables. All integers are little-endian. A
 * batch is a 16-byte header followed by records; each record is a 32-byte
 * header, the source file name and the message. record_size covers the whole
 * record, so a reader skips fields a newer writer appended.
 */
#ifndef NWB_LOG_BATCH_H
#define NWB_LOG_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NWB_LOG_BATCH_MAGIC        0x4C42574Eu /* "NWBL" as bytes */
#define NWB_LOG_BATCH_VERSION      1u
#define NWB_LOG_BATCH_HEADER_SIZE  16u
#define NWB_LOG_RECORD_HEADER_SIZE 32u
#define NWB_LOG_BATCH_CONTENT_TYPE "application/x-nwb-log-batch"

/* Bounds a reader enforces (a writer truncates to them). */
#define NWB_LOG_RECORD_FILE_MAX 1024u
#define NWB_LOG_RECORD_MSG_MAX  (64u * 1024u)

/* Record flags. */
#define NWB_LOG_RECORD_ESSENTIAL 0x01u /* from an ESSENTIAL call */
#define NWB_LOG_RECORD_TRUNCATED 0x02u /* the message was cut to fit a bound */
#define NWB_LOG_RECORD_DROPNOTE  0x04u /* a "records dropped here" line made by the client */
/* Tagged fields (u8 tag, u8 len, len bytes) fill the record from the end of the message to
 * record_size. Without this flag the bytes there are an unknown extension and skipped; an old
 * reader ignores the flag and skips them by record_size. */
#define NWB_LOG_RECORD_TAGGED 0x08u

/* Tags of the tagged fields. Unknown tags are skipped by their length. */
#define NWB_LOG_TAG_THREAD_NAME 1u /* the thread's name (the kernel's comm), 1..15 bytes */
/** Longest thread name a tag carries (the kernel's comm without its NUL). */
#define NWB_LOG_THREAD_NAME_MAX 15u

/** A decoded record. Pointers are borrowed from the batch buffer. */
typedef struct nwb_log_record {
    uint64_t time_ns;   /* wall clock, ns since the Unix epoch (UTC) */
    uint64_t thread_id; /* OS thread id (gettid) */
    uint32_t line;
    uint8_t level; /* nwb_log_level_t */
    uint8_t flags; /* NWB_LOG_RECORD_* */
    uint16_t file_len;
    uint32_t msg_len;
    const char *file; /* not NUL-terminated; may be empty */
    const char *msg;  /* not NUL-terminated */
    /* The thread's name (NWB_LOG_TAG_THREAD_NAME), not NUL-terminated and untrusted when read
     * from a batch; thread_name_len 0 = none. The encoder writes the tag when it is set. */
    const char *thread_name;
    uint8_t thread_name_len; /* at most NWB_LOG_THREAD_NAME_MAX */
} nwb_log_record_t;

/** Bytes one record takes on the wire (file and msg lengths already bounded), no tags. */
static inline size_t nwb_log_record_wire_size(size_t file_len, size_t msg_len)
{
    return NWB_LOG_RECORD_HEADER_SIZE + file_len + msg_len;
}

/** Bytes @p rec takes on the wire with its tagged fields (a thread name when it has one). */
static inline size_t nwb_log_record_encoded_size(const nwb_log_record_t *rec)
{
    return nwb_log_record_wire_size(rec->file_len, rec->msg_len) +
           (rec->thread_name_len > 0 ? 2u + (size_t)rec->thread_name_len : 0u);
}

/** Write an empty batch header into @p dst (NWB_LOG_BATCH_HEADER_SIZE bytes). */
NWB_API void nwb_log_batch_header_write(uint8_t *dst);

/**
 * Encode @p rec at @p dst, which has room for nwb_log_record_encoded_size().
 * file_len, msg_len and thread_name_len must already be within the bounds
 * above. A thread name is written as a tagged field and sets
 * NWB_LOG_RECORD_TAGGED. Returns the bytes written.
 */
NWB_API size_t nwb_log_record_encode(uint8_t *dst, const nwb_log_record_t *rec);

/** Patch the record count and payload size into the header at @p batch. */
NWB_API void nwb_log_batch_header_finish(uint8_t *batch, uint32_t record_count,
                                         uint32_t payload_bytes);

/** Sequential reader over one batch. Caller storage; borrows the bytes. */
typedef struct nwb_log_batch_reader {
    const uint8_t *data;
    size_t len;
    size_t off;      /* offset of the next record; on error, of the bad structure */
    uint32_t count;  /* records the header announces */
    uint32_t index;  /* records returned so far */
    const char *why; /* static reason after an error */
} nwb_log_batch_reader_t;

/**
 * Check the header. Returns 0, or NWB_EMAGIC, NWB_EVERSION, NWB_ETRUNCATED,
 * NWB_ERANGE (header sizes disagree with @p len); reader->why says which.
 */
NWB_API int nwb_log_batch_reader_init(nwb_log_batch_reader_t *reader, const void *data, size_t len);

/**
 * Decode the next record into @p out. Returns 1 when a record was decoded, 0
 * at the end (all announced records read and no bytes left), or a negative
 * code (NWB_ETRUNCATED, NWB_ERANGE, NWB_EPROTO) with reader->why and
 * reader->off describing the bad record.
 */
NWB_API int nwb_log_batch_reader_next(nwb_log_batch_reader_t *reader, nwb_log_record_t *out);

/** Validate a whole batch without keeping anything. Same codes as the reader. */
NWB_API int nwb_log_batch_validate(const void *data, size_t len, const char **why,
                                   size_t *bad_offset);

#ifdef __cplusplus
}
#endif

#endif /* NWB_LOG_BATCH_H */
