/* SPDX-License-Identifier: MIT */
/*
 * gen_log_batch_corpus.c - writes the seed corpus tests/fuzz/corpus/log_batch/: valid batches
 * made with the real encoder (valid_*), and broken ones made from them: truncated (trunc_*),
 * lying lengths and counts (lie_*), bad header fields (bad_*). Each seed is checked against the
 * reader as it is written: valid_* must validate, every other one must be rejected.
 * Usage: fuzz_log_batch_corpus_gen OUTDIR   (creates OUTDIR's last part; commit what changed)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "nwb/byte_order.h"
#include "nwb/error.h"
#include "nwb/log.h"
#include "nwb/log_batch.h"

/* Large enough for the biggest seed: one record with a maximal message. */
#define GEN_BUF_MAX                                                                                \
    (NWB_LOG_BATCH_HEADER_SIZE + 2u * NWB_LOG_RECORD_HEADER_SIZE + NWB_LOG_RECORD_FILE_MAX +       \
     NWB_LOG_RECORD_MSG_MAX + 64u)

static uint8_t buf[GEN_BUF_MAX];
static char big[NWB_LOG_RECORD_MSG_MAX + 1];
static const char *outdir;
static int failures;

struct batch {
    size_t len;
    uint32_t count;
};

static void batch_start(struct batch *b)
{
    nwb_log_batch_header_write(buf);
    b->len = NWB_LOG_BATCH_HEADER_SIZE;
    b->count = 0;
}

/* Appends a record and returns its offset in buf. */
static size_t batch_add(struct batch *b, int level, unsigned flags, const char *file,
                        size_t file_len, const char *msg, size_t msg_len)
{
    nwb_log_record_t rec;
    const size_t off = b->len;

    memset(&rec, 0, sizeof(rec));
    rec.time_ns = 1700000000123456789ull + b->count * 1000u;
    rec.thread_id = 4242u + b->count;
    rec.line = 17u + b->count;
    rec.level = (uint8_t)level;
    rec.flags = (uint8_t)flags;
    rec.file_len = (uint16_t)file_len;
    rec.msg_len = (uint32_t)msg_len;
    rec.file = file;
    rec.msg = msg;
    b->len += nwb_log_record_encode(buf + b->len, &rec);
    b->count++;
    return off;
}

static size_t add_str(struct batch *b, int level, unsigned flags, const char *file, const char *msg)
{
    return batch_add(b, level, flags, file, strlen(file), msg, strlen(msg));
}

/* Appends @p len raw bytes of tagged fields to the record at @p off (the last one), sets TAGGED. */
static void tags_add(struct batch *b, size_t off, const void *tags, size_t len)
{
    memcpy(buf + b->len, tags, len);
    b->len += len;
    nwb_le32_store(buf + off, nwb_le32_load(buf + off) + (uint32_t)len);
    buf[off + 5] |= NWB_LOG_RECORD_TAGGED;
}

static void batch_finish(const struct batch *b)
{
    nwb_log_batch_header_finish(buf, b->count, (uint32_t)(b->len - NWB_LOG_BATCH_HEADER_SIZE));
}

static void emit(const char *name, const uint8_t *data, size_t len)
{
    const int want_valid = strncmp(name, "valid_", 6) == 0;
    const char *why = "";
    size_t bad = 0;
    const int rc = nwb_log_batch_validate(data, len, &why, &bad);
    char path[4096];
    FILE *f;

    if ((rc == 0) != want_valid) {
        fprintf(stderr, "gen_log_batch_corpus: %s: validate returned %d (%s at %zu)\n", name, rc,
                why, bad);
        failures++;
    }

    snprintf(path, sizeof(path), "%s/%s", outdir, name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "gen_log_batch_corpus: cannot write %s: %s\n", path, strerror(errno));
        failures++;
        return;
    }
    printf("%-28s %6zu bytes  %s%s%s\n", name, len, rc == 0 ? "valid" : nwb_err_name(rc),
           rc == 0 ? "" : ": ", rc == 0 ? "" : why);
}

/* Emit the first @p len bytes of buf with payload_bytes patched to agree with the cut. */
static void trunc_patched(const char *name, size_t len)
{
    static uint8_t cut[GEN_BUF_MAX];

    memcpy(cut, buf, len);
    nwb_le32_store(cut + 12, (uint32_t)(len - NWB_LOG_BATCH_HEADER_SIZE));
    emit(name, cut, len);
}

/* The three-record batch most broken seeds start from; returns the second record's offset. */
static size_t make_three(struct batch *b)
{
    size_t second;

    batch_start(b);
    add_str(b, NWB_LOG_INFO, 0, "game/main.c", "frame 1 took 16.67 ms");
    second = add_str(b, NWB_LOG_WARNING, 0, "render/gpu.c", "vram at 93%");
    add_str(b, NWB_LOG_ERROR, NWB_LOG_RECORD_ESSENTIAL, "", "disk full");
    batch_finish(b);
    return second;
}

int main(int argc, char **argv)
{
    struct batch b;
    size_t second;
    static uint8_t ext[GEN_BUF_MAX];

    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    outdir = argv[1];
    if (mkdir(outdir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "gen_log_batch_corpus: cannot create %s: %s\n", outdir, strerror(errno));
        return 1;
    }
    memset(big, 'm', sizeof(big));

    /* ---- valid ---- */
    batch_start(&b);
    batch_finish(&b);
    emit("valid_empty", buf, b.len);

    batch_start(&b);
    add_str(&b, NWB_LOG_INFO, 0, "game/main.c", "frame 7 took 16.67 ms");
    batch_finish(&b);
    emit("valid_one", buf, b.len);

    second = make_three(&b);
    emit("valid_three", buf, b.len);

    batch_start(&b);
    add_str(&b, NWB_LOG_FATAL, NWB_LOG_RECORD_ESSENTIAL, "crash.c", "fatal: \xe2\x9c\x93 utf-8");
    add_str(&b, NWB_LOG_INFO, NWB_LOG_RECORD_DROPNOTE, "", "12 records dropped");
    add_str(&b, NWB_LOG_INFO, NWB_LOG_RECORD_TRUNCATED, "a.c", "");
    add_str(&b, NWB_LOG_WARNING, 0xf8u, "b.c", "unknown flag bits");
    batch_finish(&b);
    emit("valid_flags_levels", buf, b.len);

    batch_start(&b);
    batch_add(&b, NWB_LOG_INFO, 0, big, NWB_LOG_RECORD_FILE_MAX, "max file name", 13);
    batch_finish(&b);
    emit("valid_max_file", buf, b.len);

    batch_start(&b);
    batch_add(&b, NWB_LOG_INFO, NWB_LOG_RECORD_TRUNCATED, "big.c", 5, big, NWB_LOG_RECORD_MSG_MAX);
    batch_finish(&b);
    emit("valid_max_msg", buf, b.len);

    /* A newer writer: 8 more header bytes, and a record with 8 extension bytes. */
    make_three(&b);
    memcpy(ext, buf, NWB_LOG_BATCH_HEADER_SIZE);
    memset(ext + NWB_LOG_BATCH_HEADER_SIZE, 0xee, 8);
    memcpy(ext + NWB_LOG_BATCH_HEADER_SIZE + 8, buf + NWB_LOG_BATCH_HEADER_SIZE,
           b.len - NWB_LOG_BATCH_HEADER_SIZE);
    nwb_le16_store(ext + 6, NWB_LOG_BATCH_HEADER_SIZE + 8);
    emit("valid_ext_header", ext, b.len + 8);

    batch_start(&b);
    add_str(&b, NWB_LOG_INFO, 0, "x.c", "has extension");
    memset(buf + b.len, 0xab, 8);
    nwb_le32_store(buf + NWB_LOG_BATCH_HEADER_SIZE,
                   nwb_le32_load(buf + NWB_LOG_BATCH_HEADER_SIZE) + 8);
    b.len += 8;
    add_str(&b, NWB_LOG_ERROR, 0, "y.c", "plain");
    batch_finish(&b);
    emit("valid_ext_record", buf, b.len);

    /* ---- tagged fields (thread names) ---- */
    {
        nwb_log_record_t rec;

        batch_start(&b);
        memset(&rec, 0, sizeof(rec));
        rec.thread_id = 77;
        rec.msg = "named";
        rec.msg_len = 5;
        rec.thread_name = "render-worker15"; /* 15 bytes: the longest */
        rec.thread_name_len = 15;
        b.len += nwb_log_record_encode(buf + b.len, &rec);
        b.count++;
        rec.thread_name = "r";
        rec.thread_name_len = 1;
        b.len += nwb_log_record_encode(buf + b.len, &rec);
        b.count++;
        add_str(&b, NWB_LOG_INFO, 0, "x.c", "no name");
        batch_finish(&b);
        emit("valid_tag_name", buf, b.len);
    }
    {
        const uint8_t unknown_then_name[] = {9, 3, 'a', 'b', 'c', 1, 4, 'm', 'a', 'i', 'n', 200, 0};
        const uint8_t name16[] = {1,   16,  'a', 'b', 'c', 'd', 'e', 'f', 'g',
                                  'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p'};
        const uint8_t name0[] = {1, 0};
        const uint8_t runs_past[] = {1, 9, 'a', 'b'};
        const uint8_t half_header[] = {1};
        const uint8_t ctl_name[] = {1, 5, '[', ']', ' ', '\n', 0x7f};
        size_t off;

        batch_start(&b);
        off = add_str(&b, NWB_LOG_INFO, 0, "x.c", "unknown tags skipped");
        tags_add(&b, off, unknown_then_name, sizeof(unknown_then_name));
        batch_finish(&b);
        emit("valid_tag_unknown", buf, b.len);

        batch_start(&b);
        off = add_str(&b, NWB_LOG_INFO, 0, "x.c", "forged name");
        tags_add(&b, off, ctl_name, sizeof(ctl_name));
        batch_finish(&b);
        emit("valid_tag_name_escapes", buf, b.len);

        batch_start(&b);
        add_str(&b, NWB_LOG_INFO, NWB_LOG_RECORD_TAGGED, "x.c", "tagged, no fields");
        batch_finish(&b);
        emit("valid_tag_none", buf, b.len);

        batch_start(&b);
        off = add_str(&b, NWB_LOG_INFO, 0, "x.c", "16-byte name");
        tags_add(&b, off, name16, sizeof(name16));
        batch_finish(&b);
        emit("bad_tag_name_16", buf, b.len);

        batch_start(&b);
        off = add_str(&b, NWB_LOG_INFO, 0, "x.c", "empty name");
        tags_add(&b, off, name0, sizeof(name0));
        batch_finish(&b);
        emit("bad_tag_name_empty", buf, b.len);

        batch_start(&b);
        off = add_str(&b, NWB_LOG_INFO, 0, "x.c", "field runs past");
        tags_add(&b, off, runs_past, sizeof(runs_past));
        batch_finish(&b);
        emit("trunc_tag_field", buf, b.len);

        batch_start(&b);
        off = add_str(&b, NWB_LOG_INFO, 0, "x.c", "half a tag header");
        tags_add(&b, off, half_header, sizeof(half_header));
        batch_finish(&b);
        emit("trunc_tag_header", buf, b.len);
    }

    /* ---- truncated ---- */
    make_three(&b);
    emit("trunc_0", buf, 0);
    emit("trunc_7", buf, 7);
    emit("trunc_header_12", buf, 12);
    emit("trunc_record_header", buf, second + 10);
    emit("trunc_record_body", buf, second + NWB_LOG_RECORD_HEADER_SIZE + 5);
    emit("trunc_last_byte", buf, b.len - 1);
    /* The same cuts with payload_bytes patched to match, so the record reader sees them. */
    trunc_patched("trunc_fixed_record_header", second + 10);
    trunc_patched("trunc_fixed_record_body", second + NWB_LOG_RECORD_HEADER_SIZE + 5);
    trunc_patched("trunc_fixed_last_byte", b.len - 1);

    /* ---- bad header fields ---- */
    make_three(&b);
    memcpy(ext, buf, b.len);
    ext[0] = 'X';
    emit("bad_magic", ext, b.len);
    memcpy(ext, buf, b.len);
    nwb_le16_store(ext + 4, 2);
    emit("bad_version", ext, b.len);
    memcpy(ext, buf, b.len);
    nwb_le16_store(ext + 6, 8);
    emit("bad_header_size_small", ext, b.len);
    memcpy(ext, buf, b.len);
    nwb_le16_store(ext + 6, 0xffff);
    emit("bad_header_size_huge", ext, b.len);
    memcpy(ext, buf, b.len);
    ext[second + 4] = 9;
    emit("bad_level", ext, b.len);

    /* ---- lying lengths and counts ---- */
    memcpy(ext, buf, b.len);
    nwb_le32_store(ext + 12, (uint32_t)(b.len - NWB_LOG_BATCH_HEADER_SIZE + 1));
    emit("lie_payload_long", ext, b.len);
    memcpy(ext, buf, b.len);
    nwb_le32_store(ext + 12, 0xffffffffu);
    emit("lie_payload_huge", ext, b.len);
    memcpy(ext, buf, b.len);
    nwb_le32_store(ext + 8, 0xffffffffu);
    emit("lie_count_huge", ext, b.len);
    memcpy(ext, buf, b.len);
    nwb_le32_store(ext + 8, 2);
    emit("lie_count_short", ext, b.len);
    memcpy(ext, buf, b.len);
    nwb_le32_store(ext + 8, 4);
    emit("lie_count_long", ext, b.len);
    memcpy(ext, buf, b.len);
    nwb_le32_store(ext + second, 0x7fffffffu);
    emit("lie_record_size_huge", ext, b.len);
    memcpy(ext, buf, b.len);
    nwb_le32_store(ext + second, 0);
    emit("lie_record_size_zero", ext, b.len);
    memcpy(ext, buf, b.len);
    nwb_le32_store(ext + second, NWB_LOG_RECORD_HEADER_SIZE + 4);
    emit("lie_record_size_short", ext, b.len);
    memcpy(ext, buf, b.len);
    nwb_le16_store(ext + second + 6, NWB_LOG_RECORD_FILE_MAX + 1);
    emit("lie_file_len_over_max", ext, b.len);
    memcpy(ext, buf, b.len);
    nwb_le32_store(ext + second + 28, NWB_LOG_RECORD_MSG_MAX + 1);
    emit("lie_msg_len_over_max", ext, b.len);
    memcpy(ext, buf, b.len);
    nwb_le32_store(ext + second + 28, 200);
    emit("lie_msg_len_past_record", ext, b.len);

    return failures ? 1 : 0;
}
