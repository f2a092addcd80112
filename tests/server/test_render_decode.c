/* SPDX-License-Identifier: MIT */
/*
 * test_render_decode.c - unit tests of the log worker's #token decoding
 * (nwb_log_line_format_names() through log_render.c): byte for byte the line
 * nwb_log_line_format() makes of nwb_namesym_decode()'s output, and its
 * counts, wherever the decoded message fits NWB__DECODE_MSG_MAX (every edge
 * of the token rule, random mixes of tokens, near-tokens and long names); at
 * the bound the message stays within it, decoded tokens first and the rest
 * left as they were; a decoded record renders into the worker's buffer;
 * '#'s in file names and binary fields are no tokens; without a '#' the
 * message is passed through untouched; whole batches render the same lines
 * as decoding each message then formatting it, also when records are held
 * over between buffers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/log.h"
#include "server_int.h"
#include "server_test_util.h"

struct fx {
    nwb_namesym_table_t *t;
    char *longname; /* NWB_NAMESYM_MAX_STRING bytes */
    char tok_long[NWB_NAME_TOKEN_SIZE], tok_a[NWB_NAME_TOKEN_SIZE], tok_b[NWB_NAME_TOKEN_SIZE];
    char *dst;
    char *ref;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    nwb_namesym_builder_t b;
    nwb_namesym_view_t v;
    uint8_t *img = NULL;
    size_t len = 0;
    char err[256];

    if (f == NULL) {
        return -1;
    }
    f->longname = malloc(NWB_NAMESYM_MAX_STRING + 1);
    f->dst = malloc(NWB_LOG_LINE_FIXED_MAX + 64 + 4 * (size_t)NWB__DECODE_MSG_MAX);
    f->ref = malloc(64u << 20);
    if (f->longname == NULL || f->dst == NULL || f->ref == NULL) {
        return -1;
    }
    for (size_t i = 0; i < NWB_NAMESYM_MAX_STRING; i++) {
        f->longname[i] = (char)('a' + i % 26);
    }
    f->longname[NWB_NAMESYM_MAX_STRING] = '\0';
    nwb_namesym_builder_init(&b);
    if (nwb_namesym_builder_add(&b, f->longname, NWB_NAMESYM_MAX_STRING) != 0 ||
        nwb_namesym_builder_add(&b, "alpha", 5) != 0 || nwb_namesym_builder_add(&b, "b", 1) != 0 ||
        nwb_namesym_builder_serialize(&b, "t", &img, &len, err, sizeof(err)) != 0 ||
        nwb_namesym_view_open(&v, img, len, NULL, NULL) != 0 ||
        nwb_namesym_table_create(&f->t) != 0 ||
        nwb_namesym_table_add(f->t, &v, "t", NULL, NULL) != 3) {
        return -1;
    }
    nwb_namesym_builder_cleanup(&b);
    nwb_free(img);
    nwb_name_token(nwb_name_hash(f->longname, NWB_NAMESYM_MAX_STRING), f->tok_long);
    nwb_name_token(nwb_name_hash("alpha", 5), f->tok_a);
    nwb_name_token(nwb_name_hash("b", 1), f->tok_b);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    nwb_namesym_table_destroy(f->t);
    free(f->longname);
    free(f->dst);
    free(f->ref);
    free(f);
    return 0;
}

/* A record for @p msg at a fixed time, thread, level and file. */
static nwb_log_record_t msg_record(const char *msg, size_t len)
{
    nwb_log_record_t r;

    memset(&r, 0, sizeof(r));
    r.time_ns = 1764576000123456789ull;
    r.thread_id = 7;
    r.file = "f.c";
    r.file_len = 3;
    r.line = 9;
    r.msg = msg;
    r.msg_len = (uint32_t)len;
    return r;
}

/* The line of @p msg decoded while formatted, into f->dst; its length. */
static size_t line_decoded(struct fx *f, const char *msg, size_t len, uint64_t *dec, uint64_t *unk)
{
    nwb_log_line_clock_t clock = NWB_LOG_LINE_CLOCK_INIT;
    const nwb_log_record_t r = msg_record(msg, len);
    const size_t cap = NWB_LOG_LINE_FIXED_MAX + 1 + 4 * 3 + 4 * (size_t)NWB__DECODE_MSG_MAX;

    return nwb_log_line_format_names(f->dst, cap, &clock, &r, "p", 1, f->t, NWB__DECODE_MSG_MAX,
                                     dec, unk);
}

/* The bytes of a line before its message (time, level, thread, program, file:line). */
static size_t line_head_len(void)
{
    nwb_log_line_clock_t clock = NWB_LOG_LINE_CLOCK_INIT;
    const nwb_log_record_t r = msg_record("", 0);
    char line[256];

    return nwb_log_line_format(line, sizeof(line), &clock, &r, "p", 1) - 1;
}

/* Decode @p msg both ways and require the same line and counts. */
static void same_as_reference(struct fx *f, const char *msg, size_t len)
{
    nwb_log_line_clock_t clock = NWB_LOG_LINE_CLOCK_INIT;
    uint64_t d1 = 0, u1 = 0, d2 = 0, u2 = 0;
    nwb_log_record_t r;
    size_t n1, n2;
    char *want;

    assert_true(nwb_namesym_decode_max(f->t, len) <= (64u << 20));
    n1 = nwb_namesym_decode(f->t, msg, len, f->ref, &d1, &u1);
    assert_true(n1 <= NWB__DECODE_MSG_MAX); /* the cases here fit */
    r = msg_record(f->ref, n1);
    want = malloc(nwb_log_line_max(&r, 1));
    assert_non_null(want);
    n1 = nwb_log_line_format(want, nwb_log_line_max(&r, 1), &clock, &r, "p", 1);
    n2 = line_decoded(f, msg, len, &d2, &u2);
    assert_int_equal(n2, n1);
    assert_memory_equal(f->dst, want, n1);
    assert_int_equal(d2, d1);
    assert_int_equal(u2, u1);
    free(want);
}

/* Append the pieces (NULL-terminated) to @p buf at @p *len. */
static void cat(char *buf, size_t *len, const char *const *pieces)
{
    for (; *pieces != NULL; pieces++) {
        const size_t n = strlen(*pieces);

        memcpy(buf + *len, *pieces, n);
        *len += n;
    }
}

static void test_render_decode_matches_the_reference_with_short_and_long_names(void **state)
{
    struct fx *f = *state;
    char tok_a_up[NWB_NAME_TOKEN_SIZE];
    const size_t cap = NWB_LOG_RECORD_MSG_MAX;
    char *msg = malloc(cap + 64);
    size_t len = 0;
    unsigned seed = 12345;

    assert_non_null(msg);
    for (size_t i = 0; i < sizeof(tok_a_up); i++) {
        tok_a_up[i] =
            (char)(f->tok_a[i] >= 'a' && f->tok_a[i] <= 'f' ? f->tok_a[i] - 32 : f->tok_a[i]);
    }
    /* Short, fast path: every edge of the token rule. */
    {
        const char *const p[] = {f->tok_a,
                                 " ",
                                 "#",
                                 f->tok_a,
                                 " ",
                                 f->tok_a,
                                 f->tok_b,
                                 " x",
                                 f->tok_a,
                                 "0 ",
                                 f->tok_a,
                                 "#",
                                 f->tok_b,
                                 " ",
                                 tok_a_up,
                                 " #0123 ",
                                 "#00000000000000ff",
                                 " ",
                                 f->tok_long,
                                 NULL};

        len = 0;
        cat(msg, &len, p);
        same_as_reference(f, msg, len);
    }
    /* Each digit position with each byte at or just past the edges of '0'-'9' and 'a'-'f'
     * (and non-ASCII): a token only where every digit is one, the same as the reference. */
    {
        static const char edge[] = "/09:`afgAF@G \x7f\x80\xb0\xff";

        for (int pos = 1; pos <= 16; pos++) {
            for (size_t e = 0; e < sizeof(edge) - 1; e++) {
                len = 0;
                memcpy(msg, "x ", 2);
                memcpy(msg + 2, f->tok_a, NWB_NAME_TOKEN_LEN);
                msg[2 + pos] = edge[e];
                memcpy(msg + 2 + NWB_NAME_TOKEN_LEN, " ", 1);
                len = 3 + NWB_NAME_TOKEN_LEN;
                same_as_reference(f, msg, len);
                /* And by the rule itself (the decoders share their digit parser): a token, and
                 * decoded, only when the byte is a lower-case hex digit equal to the original
                 * (another digit makes another, unknown hash). */
                {
                    uint64_t d = 0, u = 0;
                    const unsigned char c = (unsigned char)edge[e];
                    const int digit = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                    const int same = c == (unsigned char)f->tok_a[pos];

                    nwb_namesym_decode(f->t, msg, len, f->ref, &d, &u);
                    assert_int_equal(d, digit && same);
                    assert_int_equal(u, digit && !same);
                }
            }
        }
    }
    /* Only unknown tokens and near-tokens: nothing to copy, counts still right. */
    {
        const char *const p[] = {"#00000000000000ff ", "##", f->tok_a + 1, " #", tok_a_up, NULL};

        len = 0;
        cat(msg, &len, p);
        same_as_reference(f, msg, len);
    }
    /*
     * Near 64 KiB with the 4096-byte name among others: the worst case would pass the bound,
     * but with at most 30 long names the result fits and must be identical. Random filler of
     * '#', hex digits and letters puts tokens and near-tokens at every offset.
     */
    for (int round = 0; round < 40; round++) {
        int longs = 0;

        len = 0;
        while (len < cap - 40) {
            const unsigned r = (seed = seed * 1103515245u + 12345u) >> 16;
            const char *piece;
            char filler[2] = {0, 0};

            switch (r % 12) {
            case 0:
                piece = longs < 30 ? f->tok_long : f->tok_a;
                longs += piece == f->tok_long;
                break;
            case 1:
                piece = f->tok_a;
                break;
            case 2:
                piece = f->tok_b;
                break;
            case 3:
                piece = "#";
                break;
            case 4:
                piece = "##";
                break;
            case 5:
                piece = "#00000000000000ff";
                break;
            default:
                filler[0] = "0123456789abcdefXyz #"[r % 21];
                piece = filler;
                break;
            }
            if (len + strlen(piece) > cap) {
                break;
            }
            memcpy(msg + len, piece, strlen(piece));
            len += strlen(piece);
        }
        assert_true(nwb_namesym_decode_max(f->t, len) > NWB__DECODE_MSG_MAX);
        same_as_reference(f, msg, len);
    }
    free(msg);
}

/*
 * The table is keyed by the text of a token's 16 digits and any 16 bytes after
 * a '#' are looked up as they are: bytes that equal an empty slot's (16 NULs),
 * or a stored token's digits in upper case, must not match, and a known
 * token next to them still decodes.
 */
static void test_render_decode_digits_are_matched_as_text(void **state)
{
    struct fx *f = *state;
    char msg[128];
    uint64_t d = 0, u = 0;
    size_t len = 0;

    msg[len++] = '#';
    memset(msg + len, 0, 16);
    len += 16;
    msg[len++] = ' ';
    memcpy(msg + len, f->tok_a, NWB_NAME_TOKEN_LEN);
    len += NWB_NAME_TOKEN_LEN;
    msg[len++] = ' ';
    for (size_t i = 0; i < NWB_NAME_TOKEN_LEN; i++) {
        const char c = f->tok_b[i];

        msg[len++] = (char)(c >= 'a' && c <= 'f' ? c - 32 : c);
    }
    same_as_reference(f, msg, len);
    (void)line_decoded(f, msg, len, &d, &u);
    assert_int_equal(d, 1);
    assert_int_equal(u, 0);
    d = u = 0;
    nwb_namesym_decode(f->t, msg, len, f->ref, &d, &u);
    assert_int_equal(d, 1);
    assert_int_equal(u, 0);
}

static void test_render_decode_stops_decoding_at_the_bound(void **state)
{
    struct fx *f = *state;
    const size_t ntok = NWB_LOG_RECORD_MSG_MAX / NWB_NAME_TOKEN_LEN;
    const size_t len = ntok * NWB_NAME_TOKEN_LEN;
    const size_t head = line_head_len();
    char *msg = malloc(len);
    uint64_t dec = 0, unk = 0;
    size_t n, k, tail;
    const char *m;

    assert_non_null(msg);
    for (size_t i = 0; i < ntok; i++) {
        memcpy(msg + i * NWB_NAME_TOKEN_LEN, f->tok_long, NWB_NAME_TOKEN_LEN);
    }
    n = line_decoded(f, msg, len, &dec, &unk);
    assert_true(n > head + 1);
    assert_int_equal(f->dst[n - 1], '\n');
    m = f->dst + head;
    n -= head + 1; /* the message */
    assert_true(n <= NWB__DECODE_MSG_MAX);
    k = (size_t)dec;
    assert_true(k > 0 && k < ntok);
    assert_int_equal(unk, 0);
    /* k names, then the remaining tokens exactly as they were. */
    for (size_t i = 0; i < k; i++) {
        assert_memory_equal(m + i * NWB_NAMESYM_MAX_STRING, f->longname, NWB_NAMESYM_MAX_STRING);
    }
    tail = n - k * NWB_NAMESYM_MAX_STRING;
    assert_int_equal(tail, (ntok - k) * NWB_NAME_TOKEN_LEN);
    assert_memory_equal(m + k * NWB_NAMESYM_MAX_STRING, msg + k * NWB_NAME_TOKEN_LEN, tail);
    /* As many as fit: one more name would have passed the bound with the rest kept raw. */
    assert_true(n + NWB_NAMESYM_MAX_STRING - NWB_NAME_TOKEN_LEN > NWB__DECODE_MSG_MAX);
    free(msg);
}

/* A line that does not fit is not written and nothing is counted. */
static void test_render_decode_line_that_does_not_fit_counts_nothing(void **state)
{
    struct fx *f = *state;
    nwb_log_line_clock_t clock = NWB_LOG_LINE_CLOCK_INIT;
    char msg[2 * NWB_NAME_TOKEN_LEN + 8];
    nwb_log_record_t r;
    uint64_t dec = 0, unk = 0;
    size_t len;

    len = (size_t)snprintf(msg, sizeof(msg), "%s %s", f->tok_long, f->tok_a);
    r = msg_record(msg, len);
    /* Room for the raw line, not for the 4096-byte name. */
    assert_int_equal(nwb_log_line_format_names(f->dst, nwb_log_line_max(&r, 1), &clock, &r, "p", 1,
                                               f->t, NWB__DECODE_MSG_MAX, &dec, &unk),
                     0);
    assert_int_equal(dec + unk, 0);
    /* Below the raw line's bound nothing is tried. */
    assert_int_equal(nwb_log_line_format_names(f->dst, nwb_log_line_max(&r, 1) - 1, &clock, &r, "p",
                                               1, f->t, NWB__DECODE_MSG_MAX, &dec, &unk),
                     0);
    assert_int_equal(dec + unk, 0);
}

static void test_render_decode_record_renders_into_the_worker_buffer(void **state)
{
    struct fx *f = *state;
    const size_t ntok = NWB_LOG_RECORD_MSG_MAX / NWB_NAME_TOKEN_LEN;
    char *text = malloc(ntok * NWB_NAME_TOKEN_LEN + 1);
    char *buf = malloc(NWB__RENDER_BUF_SIZE);
    struct nwb__rec_iter it;
    struct nwb__render rd;
    size_t len = 0;
    int end = 0;

    assert_non_null(text);
    assert_non_null(buf);
    for (size_t i = 0; i < ntok; i++) {
        memcpy(text + i * NWB_NAME_TOKEN_LEN, f->tok_long, NWB_NAME_TOKEN_LEN);
    }
    /* Two records: the first decodes to near NWB__DECODE_MSG_MAX, the second is plain. */
    text[ntok * NWB_NAME_TOKEN_LEN - 1] = '\n';
    nwb__rec_iter_text(&it, text, ntok * NWB_NAME_TOKEN_LEN, 1764576000000000000ull);
    nwb__render_init(&rd, "p", 1);
    nwb__render_set_names(&rd, f->t);
    assert_int_equal(nwb__render_fill(&rd, &it, buf, NWB__RENDER_BUF_SIZE, &len, &end), 0);
    assert_int_equal(end, 1);
    assert_int_equal(rd.records, 1);
    assert_true(rd.decoded > 0);
    assert_true(len > NWB__DECODE_MSG_MAX / 2 && len < NWB__RENDER_BUF_SIZE);
    assert_int_equal(buf[len - 1], '\n');
    free(text);
    free(buf);
}

/* Render @p body (a batch) to a NUL-terminated string. */
static char *render_batch(struct fx *f, const uint8_t *body, size_t len, uint64_t *dec,
                          uint64_t *unk)
{
    char *buf = malloc(NWB__RENDER_BUF_SIZE + 1);
    struct nwb__rec_iter it;
    struct nwb__render rd;
    size_t n = 0;
    int end = 0;

    assert_non_null(buf);
    nwb__rec_iter_batch(&it, body, len);
    nwb__render_init(&rd, "p", 1);
    nwb__render_set_names(&rd, f->t);
    assert_int_equal(nwb__render_fill(&rd, &it, buf, NWB__RENDER_BUF_SIZE, &n, &end), 0);
    assert_int_equal(end, 1);
    buf[n] = '\0';
    *dec = rd.decoded;
    *unk = rd.unknown;
    return buf;
}

static void test_render_decode_hashes_outside_messages_are_no_tokens(void **state)
{
    struct fx *f = *state;
    /* '#'s in file names, in binary header fields (line 35 = 0x23), messages with and without
     * tokens, tokens at the very start and end of messages, an empty message. */
    char m[8][128];
    const char *files[8] = {"#a.c", "", "x#", f->tok_a, "", "#", "b.c", ""};
    const char *msgs[8];
    uint8_t body[8192];
    nwb_log_record_t rec;
    size_t off = NWB_LOG_BATCH_HEADER_SIZE;
    uint64_t d1, u1;
    char *a;

    snprintf(m[0], sizeof(m[0]), "%s", f->tok_a);
    snprintf(m[1], sizeof(m[1]), "no token here");
    snprintf(m[2], sizeof(m[2]), "x%s y #00000000000000ff", f->tok_b);
    snprintf(m[3], sizeof(m[3]), "%s", "");
    snprintf(m[4], sizeof(m[4]), "##%s #%.15s", f->tok_a, f->tok_a + 1);
    snprintf(m[5], sizeof(m[5]), "end %s", f->tok_a);
    snprintf(m[6], sizeof(m[6]), "plain");
    snprintf(m[7], sizeof(m[7]), "%s%s", f->tok_b, f->tok_a);
    nwb_log_batch_header_write(body);
    for (int i = 0; i < 8; i++) {
        msgs[i] = m[i];
        memset(&rec, 0, sizeof(rec));
        rec.time_ns = 0x2323232323232323ull + (uint64_t)i;
        rec.thread_id = 0x23;
        rec.line = 35;
        rec.file = files[i];
        rec.file_len = (uint16_t)strlen(files[i]);
        rec.msg = msgs[i];
        rec.msg_len = (uint32_t)strlen(msgs[i]);
        off += nwb_log_record_encode(body + off, &rec);
    }
    nwb_log_batch_header_finish(body, 8, (uint32_t)(off - NWB_LOG_BATCH_HEADER_SIZE));
    a = render_batch(f, body, off, &d1, &u1);
    assert_int_equal(d1, 5); /* m0, m2, m5, and both of m7 */
    assert_int_equal(u1, 1); /* #00000000000000ff */
    assert_non_null(strstr(a, "p #a.c:35: alpha\n"));
    free(a);
}

/*
 * Batches whose messages hold 0..7 names, with control bytes around the tokens, rendered into a
 * buffer that holds only a few lines at a time (records held over): the same text as decoding each
 * message with nwb_namesym_decode() and formatting it with nwb_log_line_format().
 */
static void test_render_decode_records_render_like_decode_then_format(void **state)
{
    struct fx *f = *state;
    enum { RECS = 64 };
    static uint8_t body[RECS * 512 + 64];
    static char msgs[RECS][400];
    static char want[RECS * 2048], got[RECS * 2048];
    char *buf = malloc(NWB__RENDER_BUF_SIZE);
    nwb_log_line_clock_t clock = NWB_LOG_LINE_CLOCK_INIT;
    struct nwb__rec_iter it;
    struct nwb__render rd;
    size_t off = NWB_LOG_BATCH_HEADER_SIZE, wlen = 0, glen = 0;
    uint64_t ref_dec = 0, ref_unk = 0;
    int end = 0;

    assert_non_null(buf);
    nwb_log_batch_header_write(body);
    for (int i = 0; i < RECS; i++) {
        nwb_log_record_t r;
        size_t len = 0;

        for (int t = 0; t < i % 8; t++) {
            const char *const parts[] = {t % 3 == 0 ? "\x01" : "x\t", t % 2 ? f->tok_a : f->tok_b,
                                         t == 2 ? "\n#00000000000000ff " : "", NULL};

            cat(msgs[i], &len, parts);
        }
        memcpy(msgs[i] + len, " end\x7f", 5);
        len += 5;
        memset(&r, 0, sizeof(r));
        r.time_ns = 1764576000000000000ull + (uint64_t)i * 333333333u;
        r.thread_id = 10 + (uint64_t)(i % 3);
        r.level = (uint8_t)(i % 4);
        r.line = (uint32_t)i;
        r.file = "a\x02.c";
        r.file_len = 4;
        r.msg = msgs[i];
        r.msg_len = (uint32_t)len;
        off += nwb_log_record_encode(body + off, &r);
        /* The reference: decode the whole message, then format it. */
        r.msg_len = (uint32_t)nwb_namesym_decode(f->t, msgs[i], len, f->ref, &ref_dec, &ref_unk);
        r.msg = f->ref;
        wlen += nwb_log_line_format(want + wlen, sizeof(want) - wlen, &clock, &r, "p", 1);
    }
    nwb_log_batch_header_finish(body, RECS, (uint32_t)(off - NWB_LOG_BATCH_HEADER_SIZE));
    assert_int_equal(nwb_log_batch_validate(body, off, NULL, NULL), 0);
    nwb__rec_iter_batch(&it, body, off);
    nwb__render_init(&rd, "p", 1);
    nwb__render_set_names(&rd, f->t);
    while (!end) {
        /* Room for a few of these lines only: records are held over between fills. */
        const size_t cap = NWB_LOG_LINE_FIXED_MAX + 1 + 4 * 4 + 4 * 400 + 600;
        size_t n = 0;

        assert_int_equal(nwb__render_fill(&rd, &it, buf, cap, &n, &end), 0);
        assert_true(glen + n <= sizeof(got));
        memcpy(got + glen, buf, n);
        glen += n;
    }
    assert_int_equal(rd.records, RECS);
    assert_int_equal(rd.decoded, ref_dec);
    assert_int_equal(rd.unknown, ref_unk);
    assert_true(ref_dec > 100);
    assert_int_equal(glen, wlen);
    assert_memory_equal(got, want, wlen);
    free(buf);
}

static void test_render_decode_message_without_hash_is_untouched(void **state)
{
    struct fx *f = *state;
    static const char body[] = "no tokens here at all, only text of some length\n";
    char *buf = malloc(NWB__RENDER_BUF_SIZE);
    struct nwb__rec_iter it;
    struct nwb__render rd;
    size_t len = 0;
    int end = 0;

    assert_non_null(buf);
    nwb__rec_iter_text(&it, body, sizeof(body) - 1, 1764576000000000000ull);
    nwb__render_init(&rd, "p", 1);
    nwb__render_set_names(&rd, f->t);
    assert_int_equal(nwb__render_fill(&rd, &it, buf, NWB__RENDER_BUF_SIZE, &len, &end), 0);
    assert_int_equal(rd.decoded + rd.unknown, 0);
    buf[len] = '\0';
    assert_non_null(strstr(buf, " p no tokens here at all, only text of some length\n"));
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render_decode_matches_the_reference_with_short_and_long_names),
        cmocka_unit_test(test_render_decode_digits_are_matched_as_text),
        cmocka_unit_test(test_render_decode_stops_decoding_at_the_bound),
        cmocka_unit_test(test_render_decode_line_that_does_not_fit_counts_nothing),
        cmocka_unit_test(test_render_decode_record_renders_into_the_worker_buffer),
        cmocka_unit_test(test_render_decode_hashes_outside_messages_are_no_tokens),
        cmocka_unit_test(test_render_decode_message_without_hash_is_untouched),
        cmocka_unit_test(test_render_decode_records_render_like_decode_then_format),
    };

    return cmocka_run_group_tests_name("server.render_decode", tests, setup, teardown);
}
