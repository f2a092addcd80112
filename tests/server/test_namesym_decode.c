/* SPDX-License-Identifier: MIT */
/*
 * test_namesym_decode.c - #token decoding end to end through the real
 * nwb-logserver: tokens of names in a --namesym-dir sidecar are replaced in
 * log.txt for binary batches and text/plain, every edge of the token rule
 * (start, end, adjacent, ##, 15 and 17 digits, upper-case hex, a token in a
 * longer hex run), unknown tokens and file names untouched, the per-run and
 * total counts in /metrics, and big bodies pipelined on one connection kept
 * apart (short head reads, pooled body buffers).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "namesym_test_util.h"
#include "server_test_util.h"

#define BATCH NWB_LOG_BATCH_CONTENT_TYPE

struct fx {
    char dir[512];
    char syms[600];
    struct nwb_test_server srv;
    char a[NWB_NAME_TOKEN_SIZE], b[NWB_NAME_TOKEN_SIZE], r[NWB_NAME_TOKEN_SIZE];
};

static int setup(void **state)
{
    static const char *const names[] = {"alpha", "beta", "render/shadow_pass", NULL};
    struct fx *f = calloc(1, sizeof(*f));
    char path[700];

    if (f == NULL || nwb_test_tmpdir("nsdecode", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->syms, sizeof(f->syms), "%s/syms", f->dir);
    snprintf(path, sizeof(path), "%s/game.namesym", f->syms);
    if (mkdir(f->syms, 0755) != 0 || nsu_sidecar(path, names) != 0) {
        free(f);
        return -1;
    }
    nsu_token("alpha", f->a);
    nsu_token("beta", f->b);
    nsu_token("render/shadow_pass", f->r);
    {
        const char *const extra[] = {"--namesym-dir", f->syms, NULL};

        if (tu_start(&f->srv, f->dir, 0, extra) != 0) {
            free(f);
            return -1;
        }
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    tu_stop(&f->srv, SIGTERM, 10000);
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* @p tok with its hex digits upper-cased. */
static void upper(char *dst, const char *tok)
{
    for (size_t i = 0; tok[i] != '\0'; i++) {
        dst[i] = (char)toupper((unsigned char)tok[i]);
    }
    dst[strlen(tok)] = '\0';
}

/* The log line whose message starts with "<tag>:" (the rest of it, up to the newline). */
static void line_of(const char *log, const char *tag, char *out, size_t cap)
{
    char key[64];
    const char *p, *e;

    snprintf(key, sizeof(key), " %s:", tag);
    p = strstr(log, key);
    if (p == NULL) {
        fail_msg("no line tagged %s in:\n%s", tag, log);
    }
    p += strlen(key);
    e = strchr(p, '\n');
    assert_non_null(e);
    snprintf(out, cap, "%.*s", (int)(e - p), p);
}

static void expect_line(const char *log, const char *tag, const char *want)
{
    char got[1024];

    line_of(log, tag, got, sizeof(got));
    if (strcmp(got, want) != 0) {
        fail_msg("%s: got \"%s\", want \"%s\"", tag, got, want);
    }
}

static void test_namesym_decode_binary_batch_follows_the_token_rule(void **state)
{
    struct fx *f = *state;
    char m[16][256], want[16][256], up[NWB_NAME_TOKEN_SIZE], file_tok[64];
    const char *msgs[16];
    uint8_t batch[16384];
    nwb_log_record_t rec;
    size_t off = NWB_LOG_BATCH_HEADER_SIZE;
    char *log;
    int n = 0;

    upper(up, f->a);
    assert_string_not_equal(up, f->a); /* the token has a-f digits to upper-case */
#define CASE(...) snprintf(m[n], sizeof(m[n]), __VA_ARGS__)
#define WANT(...) snprintf(want[n++], sizeof(want[0]), __VA_ARGS__)
    /* decoded: 6 tokens */
    CASE("%s", f->a); /* the whole message is one token */
    WANT("alpha");
    CASE("start:%s at start", f->a);
    WANT("start:alpha at start");
    CASE("end:at the end %s", f->r);
    WANT("end:at the end render/shadow_pass");
    CASE("adjacent:%s%s.", f->a, f->b);
    WANT("adjacent:alphabeta.");
    CASE("after-hex:ff%s", f->b);
    WANT("after-hex:ffbeta");
    /* left alone */
    CASE("double:#%s", f->a);
    WANT("double:#%s", f->a);
    CASE("digits15:%.16s", f->a);
    WANT("digits15:%.16s", f->a);
    CASE("digits17:%s0", f->a);
    WANT("digits17:%s0", f->a);
    CASE("hexrun:%sdeadbeef", f->a);
    WANT("hexrun:%sdeadbeef", f->a);
    CASE("upper:%s", up);
    WANT("upper:%s", up);
    CASE("unknown:#00000000000000ff");
    WANT("unknown:#00000000000000ff");
    CASE("hashes:# ## #x #0123 100%%");
    WANT("hashes:# ## #x #0123 100%%");
    CASE("plain:no hash sign at all");
    WANT("plain:no hash sign at all");
#undef CASE
#undef WANT
    assert_true(n <= 16);
    nwb_log_batch_header_write(batch);
    snprintf(file_tok, sizeof(file_tok), "src/%s.c", f->a);
    for (int i = 0; i < n; i++) {
        msgs[i] = m[i];
        memset(&rec, 0, sizeof(rec));
        rec.time_ns = 1764576000123456789ull + (uint64_t)i;
        rec.thread_id = 7;
        rec.line = (uint32_t)i;
        rec.file = i == 0 ? file_tok : "game.c";
        rec.file_len = (uint16_t)strlen(rec.file);
        rec.msg = msgs[i];
        rec.msg_len = (uint32_t)strlen(msgs[i]);
        off += nwb_log_record_encode(batch + off, &rec);
    }
    nwb_log_batch_header_finish(batch, (uint32_t)n, (uint32_t)(off - NWB_LOG_BATCH_HEADER_SIZE));
    assert_int_equal(tu_post(f->srv.port, BATCH, "game", "bin1", 1, batch, off, NULL, 0), 200);
    log = tu_run_log(f->dir, "game", "bin1");
    assert_non_null(log);
    /* The file name keeps its token; the message of that record is decoded. */
    {
        char want0[128];

        snprintf(want0, sizeof(want0), " game src/%s.c:0: alpha\n", f->a);
        if (strstr(log, want0) == NULL) {
            fail_msg("want \"%s\" in:\n%s", want0, log);
        }
    }
    for (int i = 1; i < n; i++) {
        char tag[32];
        const char *colon = strchr(want[i], ':');

        snprintf(tag, sizeof(tag), "%.*s", (int)(colon - want[i]), want[i]);
        expect_line(log, tag, colon + 1);
    }
    free(log);
    /* Counted per run and in total: 6 decoded (the message, start, end, 2 adjacent,
     * after-hex), 1 unknown (#00000000000000ff); the rest are not tokens. */
    assert_int_equal(
        tu_metric(f->srv.port,
                  "nwb_namesym_run_tokens_total{program=\"game\",run=\"bin1\",result=\"decoded\"}"),
        6);
    assert_int_equal(
        tu_metric(f->srv.port,
                  "nwb_namesym_run_tokens_total{program=\"game\",run=\"bin1\",result=\"unknown\"}"),
        1);
    assert_int_equal(tu_metric(f->srv.port, "nwb_namesym_tokens_total{result=\"decoded\"}"), 6);
    assert_int_equal(tu_metric(f->srv.port, "nwb_namesym_tokens_total{result=\"unknown\"}"), 1);
    assert_int_equal(tu_metric(f->srv.port, "nwb_namesym_names"), 3);
    assert_int_equal(tu_metric(f->srv.port, "nwb_namesym_sidecars"), 1);
}

static void test_namesym_decode_text_plain_lines(void **state)
{
    struct fx *f = *state;
    char body[1024];
    char want[256];
    char *log;
    int len;

    len = snprintf(body, sizeof(body),
                   "t1:owner %s passes %s\r\n"
                   "t2:%s\n"
                   "t3:unknown #0123456789abcdef stays\n"
                   "t4:last %s without newline",
                   f->a, f->r, f->b, f->a);
    assert_int_equal(
        tu_post(f->srv.port, "text/plain", "game", "txt1", 1, body, (size_t)len, NULL, 0), 200);
    log = tu_run_log(f->dir, "game", "txt1");
    assert_non_null(log);
    expect_line(log, "t1", "owner alpha passes render/shadow_pass");
    expect_line(log, "t2", "beta");
    expect_line(log, "t3", "unknown #0123456789abcdef stays");
    expect_line(log, "t4", "last alpha without newline");
    snprintf(want, sizeof(want), "%s", f->a);
    assert_null(strstr(log, want)); /* no known token is left */
    free(log);
    assert_int_equal(
        tu_metric(f->srv.port,
                  "nwb_namesym_run_tokens_total{program=\"game\",run=\"txt1\",result=\"decoded\"}"),
        4);
    assert_int_equal(
        tu_metric(f->srv.port,
                  "nwb_namesym_run_tokens_total{program=\"game\",run=\"txt1\",result=\"unknown\"}"),
        1);
}

static void test_namesym_decode_long_names_fill_a_message_without_loss(void **state)
{
    struct fx *f = *state;
    /* A 64 KiB message of back-to-back tokens of "render/shadow_pass" (18 bytes each for 17):
     * decoded, every token, nothing cut. */
    const size_t ntok = NWB_LOG_RECORD_MSG_MAX / NWB_NAME_TOKEN_LEN;
    char *body = malloc(ntok * NWB_NAME_TOKEN_LEN + 8);
    char *log, *p;
    size_t count = 0;

    assert_non_null(body);
    memcpy(body, "long:", 5);
    for (size_t i = 0; i < ntok - 1; i++) {
        memcpy(body + 5 + i * NWB_NAME_TOKEN_LEN, f->r, NWB_NAME_TOKEN_LEN);
    }
    assert_int_equal(tu_post(f->srv.port, "text/plain", "game", "long1", 1, body,
                             5 + (ntok - 1) * NWB_NAME_TOKEN_LEN, NULL, 0),
                     200);
    log = tu_run_log(f->dir, "game", "long1");
    assert_non_null(log);
    p = strstr(log, " game long:");
    assert_non_null(p);
    count = (size_t)tu_count(p, "render/shadow_pass");
    assert_int_equal(count, ntok - 1);
    assert_null(strstr(log, f->r));
    free(log);
    free(body);
}

/*
 * Bodies of 20 KiB .. 200 KiB (read in place after a short head read; those of
 * 32-64 KiB in reused pooled buffers larger than the body) and small ones,
 * all pipelined on one keep-alive connection in one send: every request is
 * answered 200 in order, and every line lands once, decoded, so no body ran
 * into the next request's bytes.
 */
static void test_namesym_decode_pipelined_big_bodies_stay_apart(void **state)
{
    enum { REQS = 24 };
    static const size_t sizes[] = {20000, 40000, 65000, 65536, 200000, 900, 70000, 200};
    struct fx *f = *state;
    size_t total = 0, off = 0;
    char *wire, *log;
    int fd;

    for (int i = 0; i < REQS; i++) {
        total += sizes[i % 8] + 512;
    }
    wire = malloc(total);
    assert_non_null(wire);
    for (int i = 0; i < REQS; i++) {
        const size_t want = sizes[i % 8];
        char head[512];
        size_t blen = 0;
        int line = 0, hlen;
        char *body = wire + off + sizeof(head); /* built first, head put in front below */

        while (blen + 64 < want) {
            blen += (size_t)snprintf(body + blen, 64, "r%02d-l%05d %s x\n", i, line++, f->a);
        }
        hlen = snprintf(head, sizeof(head),
                        "POST /v1/log HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\n"
                        "X-NWB-Program: game\r\nX-NWB-Run: pipe1\r\nX-NWB-Seq: %d\r\n"
                        "Content-Length: %zu\r\n\r\n",
                        i + 1, blen);
        memmove(wire + off + (size_t)hlen, body, blen);
        memcpy(wire + off, head, (size_t)hlen);
        off += (size_t)hlen + blen;
    }
    fd = nwb_test_connect(f->srv.port);
    assert_true(fd >= 0);
    assert_int_equal(nwb_test_send_all(fd, wire, off), 0);
    /* The answers (empty bodies) arrive back to back: read until every head is in. */
    {
        static char resp[REQS * 256];
        size_t got = 0;
        int heads = 0;

        while (heads < REQS) {
            struct pollfd pfd = {fd, POLLIN, 0};
            ssize_t n;

            assert_true(poll(&pfd, 1, 20000) == 1);
            n = recv(fd, resp + got, sizeof(resp) - 1 - got, 0);
            assert_true(n > 0);
            got += (size_t)n;
            resp[got] = '\0';
            heads = 0;
            for (const char *h = strstr(resp, "\r\n\r\n"); h != NULL;
                 h = strstr(h + 4, "\r\n\r\n")) {
                heads++;
            }
        }
        assert_int_equal(heads, REQS);
        for (const char *h = resp; h != NULL && *h != '\0'; h = strstr(h + 1, "HTTP/1.1 ")) {
            if (strncmp(h, "HTTP/1.1 ", 9) == 0 && strncmp(h, "HTTP/1.1 200", 12) != 0) {
                fprintf(stderr, "unexpected answer: %.60s\n", h);
                fail();
            }
        }
    }
    close(fd);
    log = tu_run_log(f->dir, "game", "pipe1");
    assert_non_null(log);
    for (int i = 0; i < REQS; i++) {
        char tag[32];
        const char *at;

        /* First and last line of each body, decoded, exactly once. */
        snprintf(tag, sizeof(tag), " r%02d-l00000 alpha x\n", i);
        at = strstr(log, tag);
        if (at == NULL) {
            fprintf(stderr, "missing:%s(log %zu bytes, starts: %.200s)\n", tag, strlen(log), log);
        }
        assert_non_null(at);
        assert_null(strstr(at + 1, tag));
    }
    assert_null(strstr(log, f->a));
    assert_null(strstr(log, "POST"));
    free(log);
    free(wire);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_namesym_decode_binary_batch_follows_the_token_rule,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_namesym_decode_text_plain_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_namesym_decode_pipelined_big_bodies_stay_apart, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_namesym_decode_long_names_fill_a_message_without_loss,
                                        setup, teardown),
    };

    return cmocka_run_group_tests_name("server.namesym_decode", tests, NULL, tu_reap);
}
