/* SPDX-License-Identifier: MIT */
/*
 * fuzz_log_render.c - fuzz target for the server's POST /v1/log body rendering (log_render.c,
 * nwb_log_line_format_names()): a body as a binary batch or text/plain, its records' #tokens
 * decoded with a name table, formatted into log.txt lines through a buffer of the smallest
 * allowed size and more. Lines must be exactly one per record, escaped, within the buffer; a
 * record's decoded line must be the one nwb_log_line_format() makes of nwb_namesym_decode()'s
 * output. NWB_FUZZ_LOG_RENDER_SEEDS=DIR writes the seeds instead;
 * NWB_FUZZ_LOG_RENDER_PRINT=1 prints the lines.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/log.h"
#include "nwb/log_batch.h"
#include "nwb/log_line.h"
#include "nwb/name.h"
#include "nwb/namesym.h"

#include "server_int.h"

/*
 * Input layout: byte 0 is the control byte, the rest is the body.
 *   bit 0: text/plain (1) or binary batch (0);  bit 1: decode names (1) or not (0);
 *   bits 2-7: the render buffer is the smallest allowed plus (b >> 2) * 997 bytes.
 */
#define CTRL_TEXT  0x01u
#define CTRL_NAMES 0x02u
#define PROGRAM    "fuzz"
/* The largest line a record can make once its message is decoded: the worker's minimum. */
#define LINE_MAX_BYTES                                                                             \
    (NWB_LOG_LINE_FIXED_MAX + sizeof(PROGRAM) - 1 + 4u * NWB_LOG_RECORD_FILE_MAX +                 \
     4u * NWB__DECODE_MSG_MAX)
#define BUF_BYTES (LINE_MAX_BYTES + 63u * 997u)

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_log_render: check failed at line %d: %s\n", __LINE__, #cond);    \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* The names the table knows: short, long, with '#' and hex inside (decoding is not
 * recursive), UTF-8, and one at the string bound. */
static const char *const names_short[] = {
    "a", "Player", "weapon.fire", "#0123456789abcdef", "caf\xc3\xa9", "line\nbreak", "%s%n",
};

static nwb_namesym_table_t *table;
static uint8_t *sidecar;
static char *buf;
static char *line;     /* LINE_MAX_BYTES: a decoded line */
static char *line_ref; /* LINE_MAX_BYTES: the reference's */
static char *ref;
static char long_name[NWB_NAMESYM_MAX_STRING];
static int print_lines; /* NWB_FUZZ_LOG_RENDER_PRINT=1: the rendered lines on stderr */

static void setup_once(void)
{
    nwb_namesym_builder_t b;
    nwb_namesym_view_t v;
    size_t len = 0;
    char err[256];

    if (table != NULL) {
        return;
    }
    print_lines = getenv("NWB_FUZZ_LOG_RENDER_PRINT") != NULL;
    memset(long_name, 'L', sizeof(long_name));
    nwb_namesym_builder_init(&b);
    for (size_t i = 0; i < sizeof(names_short) / sizeof(names_short[0]); i++) {
        FUZZ_CHECK(nwb_namesym_builder_add(&b, names_short[i], strlen(names_short[i])) == 0);
    }
    FUZZ_CHECK(nwb_namesym_builder_add(&b, long_name, sizeof(long_name)) == 0);
    FUZZ_CHECK(nwb_namesym_builder_serialize(&b, "fuzz", &sidecar, &len, err, sizeof(err)) == 0);
    nwb_namesym_builder_cleanup(&b);
    FUZZ_CHECK(nwb_namesym_view_open(&v, sidecar, len, NULL, NULL) == 0);
    FUZZ_CHECK(nwb_namesym_table_create(&table) == 0);
    FUZZ_CHECK(nwb_namesym_table_add(table, &v, "fuzz", NULL, NULL) > 0);
    buf = malloc(BUF_BYTES);
    line = malloc(LINE_MAX_BYTES);
    line_ref = malloc(LINE_MAX_BYTES);
    ref = malloc(nwb_namesym_decode_max(table, NWB_LOG_RECORD_MSG_MAX));
    FUZZ_CHECK(buf != NULL && line != NULL && line_ref != NULL && ref != NULL);
}

/* The decoding formatter agrees with decoding by nwb_namesym_decode(), then formatting. */
static void check_decode(const nwb_log_record_t *rec)
{
    nwb_log_line_clock_t c1 = NWB_LOG_LINE_CLOCK_INIT, c2 = NWB_LOG_LINE_CLOCK_INIT;
    uint64_t d1 = 0, u1 = 0, d2 = 0, u2 = 0;
    nwb_log_record_t r = *rec;
    size_t rlen, n1, n2;

    rlen = nwb_namesym_decode(table, rec->msg, rec->msg_len, ref, &d1, &u1);
    n2 = nwb_log_line_format_names(line, LINE_MAX_BYTES, &c2, rec, PROGRAM, sizeof(PROGRAM) - 1,
                                   table, NWB__DECODE_MSG_MAX, &d2, &u2);
    FUZZ_CHECK(n2 > 0 && n2 <= LINE_MAX_BYTES && line[n2 - 1] == '\n');
    if (rlen <= NWB__DECODE_MSG_MAX) {
        /* Within the bound the line is the reference's, byte for byte, counts too. */
        r.msg = ref;
        r.msg_len = (uint32_t)rlen;
        n1 = nwb_log_line_format(line_ref, LINE_MAX_BYTES, &c1, &r, PROGRAM, sizeof(PROGRAM) - 1);
        FUZZ_CHECK(n1 == n2 && d2 == d1 && u2 == u1);
        FUZZ_CHECK(memcmp(line, line_ref, n1) == 0);
    } else {
        FUZZ_CHECK(d2 <= d1);
    }
}

/* The oracle's own byte loops need no coverage feedback (it costs most of the time). */
#if defined(__clang__)
#define NO_COVERAGE __attribute__((noinline, no_sanitize("coverage")))
#else
#define NO_COVERAGE
#endif

/* One rendered chunk: whole lines, each ending in '\n', no other control byte but tab. */
NO_COVERAGE static uint64_t check_chunk(const char *p, size_t len)
{
    uint64_t lines = 0;

    FUZZ_CHECK(len == 0 || p[len - 1] == '\n');
    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)p[i];

        if (c == '\n') {
            lines++;
        } else {
            FUZZ_CHECK((c >= 0x20 && c != 0x7f) || c == '\t'); /* tab is kept */
        }
    }
    return lines;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct nwb__rec_iter it;
    struct nwb__render rd;
    nwb_log_record_t rec;
    const uint8_t *body = data + 1;
    size_t body_len, cap, len;
    uint64_t lines = 0, records = 0;
    unsigned ctrl;
    int end = 0;
    int rc;
    int valid;
    uint32_t count = 0;

    if (size < 1) {
        return 0;
    }
    setup_once();
    ctrl = data[0];
    body_len = size - 1;
    cap = LINE_MAX_BYTES + (size_t)(ctrl >> 2) * 997u;

    /* Reference pass: the records, and the decoders on each message. */
    if (ctrl & CTRL_TEXT) {
        nwb__rec_iter_text(&it, body, body_len, 1764547200000000000ull);
        valid = 1;
    } else {
        nwb__rec_iter_batch(&it, body, body_len);
        valid = nwb_log_batch_validate(body, body_len, NULL, NULL) == 0;
    }
    while ((rc = nwb__rec_iter_next(&it, &rec)) == 1) {
        FUZZ_CHECK(rec.msg_len <= NWB_LOG_RECORD_MSG_MAX &&
                   rec.file_len <= NWB_LOG_RECORD_FILE_MAX);
        FUZZ_CHECK((const uint8_t *)rec.msg >= body &&
                   (const uint8_t *)rec.msg + rec.msg_len <= body + body_len);
        if (ctrl & CTRL_TEXT) {
            FUZZ_CHECK(rec.msg_len > 0 && rec.level == NWB_LOG_INFO);
            FUZZ_CHECK(memchr(rec.msg, '\n', rec.msg_len) == NULL);
        }
        if ((ctrl & CTRL_NAMES) && memchr(rec.msg, '#', rec.msg_len) != NULL) {
            check_decode(&rec);
        }
        count++;
    }
    FUZZ_CHECK(rc == 0 || (rc < 0 && !valid));
    FUZZ_CHECK(valid || rc < 0);

    /* The worker's pass: fills until the end or the batch's error. */
    if (ctrl & CTRL_TEXT) {
        nwb__rec_iter_text(&it, body, body_len, 1764547200000000000ull);
    } else {
        nwb__rec_iter_batch(&it, body, body_len);
    }
    nwb__render_init(&rd, PROGRAM, sizeof(PROGRAM) - 1);
    nwb__render_set_names(&rd, (ctrl & CTRL_NAMES) ? table : NULL);
    for (unsigned fills = 0; !end; fills++) {
        FUZZ_CHECK(fills <= count + 1u); /* every fill but the last writes a line */
        rc = nwb__render_fill(&rd, &it, buf, cap, &len, &end);
        FUZZ_CHECK(len <= cap);
        lines += check_chunk(buf, len);
        if (print_lines) {
            fwrite(buf, 1, len, stderr);
        }
        if (rc != 0) {
            FUZZ_CHECK(rc < 0 && !valid);
            break;
        }
    }
    records = rd.records;
    FUZZ_CHECK(lines == records);
    FUZZ_CHECK(valid ? (end && records == count) : records <= count);
    FUZZ_CHECK(rd.drops <= records);
    return 0;
}

/* ---- NWB_FUZZ_LOG_RENDER_SEEDS=DIR: write the seed corpus (tests/fuzz/corpus/log_render/) ---- */

static void write_seed(const char *dir, const char *name, unsigned ctrl, const void *p, size_t n)
{
    char path[1024];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(fputc((int)ctrl, f) != EOF && fwrite(p, 1, n, f) == n && fclose(f) == 0);
}

/* A batch of @p n records with messages @p msgs into @p out; returns its size. */
static size_t make_batch(uint8_t *out, const char *const *msgs, size_t n)
{
    size_t used = NWB_LOG_BATCH_HEADER_SIZE;

    nwb_log_batch_header_write(out);
    for (size_t i = 0; i < n; i++) {
        nwb_log_record_t r = {1764547200000000000ull + i,
                              4242,
                              (uint32_t)(10 + i),
                              (uint8_t)(i % NWB_LOG_LEVEL_COUNT),
                              0,
                              6,
                              0,
                              "main.c",
                              msgs[i],
                              NULL,
                              0};

        r.msg_len = (uint32_t)strlen(msgs[i]);
        used += nwb_log_record_encode(out + used, &r);
    }
    nwb_log_batch_header_finish(out, (uint32_t)n, (uint32_t)(used - NWB_LOG_BATCH_HEADER_SIZE));
    return used;
}

static void gen_seeds(const char *dir)
{
    static char text[8192];
    static char many[4096];
    static uint8_t batch[65536];
    char tok[8][NWB_NAME_TOKEN_SIZE];
    const char *msgs[4];
    size_t n = 0;

    for (size_t i = 0; i < sizeof(names_short) / sizeof(names_short[0]); i++) {
        nwb_name_token(nwb_name_hash(names_short[i], strlen(names_short[i])), tok[i]);
    }
    nwb_name_token(nwb_name_hash(long_name, sizeof(long_name)), tok[7]);
    n = (size_t)snprintf(
        text, sizeof(text),
        "hello %s and %s\r\nfire %s!\n\n%s%s adjacent\n##%s escaped\n%sf tail hex\n"
        "unknown #ffffffffffffffff\nutf8 %s %s\nlong %s\n",
        tok[0], tok[1], tok[2], tok[3], tok[4], tok[1], tok[2], tok[4], tok[5], tok[7]);
    write_seed(dir, "text_names", CTRL_TEXT | CTRL_NAMES, text, n);
    write_seed(dir, "text_plain", CTRL_TEXT, text, n);
    /* More names than pieces: the copy path. */
    n = 0;
    for (int i = 0; i < 12; i++) {
        n += (size_t)snprintf(many + n, sizeof(many) - n, "%s ", tok[i % 7]);
    }
    write_seed(dir, "text_many_names", CTRL_TEXT | CTRL_NAMES, many, n);
    /* Names that grow the message past NWB__DECODE_MSG_MAX: the long name 70 times. */
    n = 0;
    for (int i = 0; i < 70 && n + NWB_NAME_TOKEN_SIZE < sizeof(text); i++) {
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%s", tok[7]);
    }
    write_seed(dir, "text_decode_bound", CTRL_TEXT | CTRL_NAMES | (63u << 2), text, n);
    msgs[0] = "plain message";
    msgs[1] = many;
    msgs[2] = "ctl \x01\x7f bytes\ttab";
    msgs[3] = tok[6];
    n = make_batch(batch, msgs, 4);
    write_seed(dir, "batch_names", CTRL_NAMES, batch, n);
    write_seed(dir, "batch_plain", 0, batch, n);
    batch[NWB_LOG_BATCH_HEADER_SIZE + 4] = 0x55; /* the first record's level: out of range */
    write_seed(dir, "batch_bad_level", CTRL_NAMES, batch, n);
    write_seed(dir, "batch_truncated", CTRL_NAMES, batch, n - 3);
    write_seed(dir, "empty_text", CTRL_TEXT, "", 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("NWB_FUZZ_LOG_RENDER_SEEDS");

    (void)argc;
    (void)argv;
    setup_once();
    if (dir != NULL) {
        gen_seeds(dir);
        fprintf(stderr, "fuzz_log_render: seeds written to %s\n", dir);
        exit(0);
    }
    return 0;
}
