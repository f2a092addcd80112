/* SPDX-License-Identifier: MIT */
/*
 * test_http_request.c - unit tests of the request parser (http_request.c),
 * fed raw bytes without sockets: events, bounds at their edges, the strict
 * checks added on top of llhttp, pipelining and split reads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "server_int.h"

struct sink {
    char body[4096];
    size_t len;
    int fail_status;
};

static int sink_body(void *ctx, const char *at, size_t len)
{
    struct sink *s = ctx;

    if (s->fail_status != 0) {
        return s->fail_status;
    }
    if (s->len + len > sizeof(s->body)) {
        return 413;
    }
    memcpy(s->body + s->len, at, len);
    s->len += len;
    return 0;
}

struct run {
    int heads;
    int dones;
    int error; /* status, 0 when none */
};

/* Feed @p data in pieces of @p step bytes, following the events the way http_conn.c does. */
static struct run feed(struct nwb__http_req *r, const char *data, size_t len, size_t step)
{
    struct run out = {0, 0, 0};
    size_t off = 0;

    while (off < len || step == 0) {
        size_t piece = step == 0 || len - off < step ? len - off : step;
        size_t pos = 0;

        for (;;) {
            size_t used;
            int ev = nwb__http_req_feed(r, data + off + pos, piece - pos, &used);

            pos += used;
            if (ev == NWB__HTTP_ERROR) {
                out.error = r->status;
                return out;
            }
            if (ev == NWB__HTTP_MORE) {
                break;
            }
            if (ev == NWB__HTTP_HEAD) {
                out.heads++;
            } else {
                out.dones++;
            }
        }
        off += piece;
        if (step == 0) {
            break;
        }
    }
    return out;
}

static const struct nwb__http_limits limits = {16384, 64};

static void test_get_reports_head_then_done(void **state)
{
    static const char req[] = "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n";
    struct nwb__http_req r;
    size_t used;

    (void)state;
    nwb__http_req_init(&r, &limits, NULL, NULL);
    assert_int_equal(nwb__http_req_feed(&r, req, sizeof(req) - 1, &used), NWB__HTTP_HEAD);
    assert_int_equal(used, sizeof(req) - 1);
    assert_int_equal(r.method, HTTP_GET);
    assert_memory_equal(r.url, "/v1/health", 10);
    assert_int_equal(r.url_len, 10);
    assert_true(r.keep_alive);
    assert_int_equal(nwb__http_req_feed(&r, req + used, 0, &used), NWB__HTTP_DONE);
    assert_int_equal(used, 0);
}

static const char post_req[] = "POST /v1/log HTTP/1.1\r\n"
                               "Host: 127.0.0.1\r\n"
                               "Content-Type: Text/Plain; charset=utf-8\r\n"
                               "X-NWB-Program: mygame  \r\n"
                               "x-nwb-run: abc123\r\n"
                               "X-NWB-Seq: 17\r\n"
                               "X-NWB-Program: second\r\n"
                               "Content-Length: 11\r\n"
                               "\r\n"
                               "hello\nworld";

static void check_post(const struct nwb__http_req *r, const struct sink *s)
{
    assert_int_equal(r->method, HTTP_POST);
    assert_true(r->has_length);
    assert_int_equal(r->content_length, 11);
    assert_true(r->has_program);
    assert_int_equal(r->program_len, 6); /* trailing blanks trimmed, the first field won */
    assert_memory_equal(r->program, "mygame", 6);
    assert_int_equal(r->run_len, 6);
    assert_memory_equal(r->run, "abc123", 6);
    assert_int_equal(r->seq_len, 2);
    assert_memory_equal(r->seq, "17", 2);
    assert_true(nwb__http_req_ctype_is(r, "text/plain"));
    assert_false(nwb__http_req_ctype_is(r, "text/plai"));
    assert_int_equal(s->len, 11);
    assert_memory_equal(s->body, "hello\nworld", 11);
}

static void test_post_split_at_every_size_gives_same_request(void **state)
{
    (void)state;
    for (size_t step = 1; step <= sizeof(post_req); step++) {
        struct nwb__http_req r;
        struct sink s = {{0}, 0, 0};
        struct run res;

        nwb__http_req_init(&r, &limits, sink_body, &s);
        res = feed(&r, post_req, sizeof(post_req) - 1, step);
        assert_int_equal(res.error, 0);
        assert_int_equal(res.heads, 1);
        assert_int_equal(res.dones, 1);
        check_post(&r, &s);
    }
}

/* A GET whose head is exactly @p total bytes (padding in one header). */
static size_t make_head(char *buf, size_t total)
{
    static const char pre[] = "GET /v1/health HTTP/1.1\r\nX-Pad: ";
    static const char post[] = "\r\n\r\n";
    const size_t fixed = sizeof(pre) - 1 + sizeof(post) - 1;
    size_t pad = total - fixed;

    memcpy(buf, pre, sizeof(pre) - 1);
    memset(buf + sizeof(pre) - 1, 'a', pad);
    memcpy(buf + sizeof(pre) - 1 + pad, post, sizeof(post));
    return total;
}

static void test_head_at_byte_limit_passes_one_more_is_431(void **state)
{
    static char buf[20000];
    struct nwb__http_req r;
    struct run res;
    size_t n;

    (void)state;
    n = make_head(buf, 16384);
    nwb__http_req_init(&r, &limits, NULL, NULL);
    res = feed(&r, buf, n, 1000);
    assert_int_equal(res.error, 0);
    assert_int_equal(res.dones, 1);

    n = make_head(buf, 16385);
    nwb__http_req_init(&r, &limits, NULL, NULL);
    res = feed(&r, buf, n, 1000);
    assert_int_equal(res.error, 431);
    assert_int_equal(res.dones, 0);

    /* A head that never ends is refused once it passes the limit. */
    memset(buf, 'a', sizeof(buf));
    memcpy(buf, "GET / HTTP/1.1\r\nX: ", 19);
    nwb__http_req_init(&r, &limits, NULL, NULL);
    res = feed(&r, buf, sizeof(buf), 4096);
    assert_int_equal(res.error, 431);
}

static void test_header_count_at_limit_passes_one_more_is_431(void **state)
{
    char buf[4096];
    struct nwb__http_req r;
    struct run res;

    (void)state;
    for (int count = 64; count <= 65; count++) {
        size_t n = (size_t)snprintf(buf, sizeof(buf), "GET /metrics HTTP/1.1\r\n");

        for (int i = 0; i < count; i++) {
            n += (size_t)snprintf(buf + n, sizeof(buf) - n, "X-H%d: v\r\n", i);
        }
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\r\n");
        nwb__http_req_init(&r, &limits, NULL, NULL);
        res = feed(&r, buf, n, 0);
        if (count == 64) {
            assert_int_equal(res.error, 0);
            assert_int_equal(res.dones, 1);
        } else {
            assert_int_equal(res.error, 431);
        }
    }
}

static int status_of(const char *req, size_t len, size_t step)
{
    struct nwb__http_req r;
    struct sink s = {{0}, 0, 0};
    struct run res;

    nwb__http_req_init(&r, &limits, sink_body, &s);
    res = feed(&r, req, len, step);
    return res.error != 0 ? res.error : (res.dones == 1 ? 200 : -1);
}

#define STATUS_OF(lit, step) status_of(lit, sizeof(lit) - 1, step)

static void test_malformed_requests_are_400(void **state)
{
    (void)state;
    for (size_t step = 1; step <= 64; step += 63) {
        /* bare LF line ends, anywhere in the head (llhttp's loose build accepts some) */
        assert_int_equal(STATUS_OF("GET / HTTP/1.1\nHost: x\r\n\r\n", step), 400);
        assert_int_equal(STATUS_OF("GET / HTTP/1.1\r\nHost: x\nA: b\r\n\r\n", step), 400);
        assert_int_equal(STATUS_OF("GET / HTTP/1.1\r\nHost: x\r\n\n", step), 400);
        assert_int_equal(STATUS_OF("GET / HTTP/1.1\n\n", step), 400);
        /* framing conflicts */
        assert_int_equal(STATUS_OF("POST /v1/log HTTP/1.1\r\nContent-Length: 3\r\n"
                                   "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                                   step),
                         400);
        assert_int_equal(STATUS_OF("POST /v1/log HTTP/1.1\r\nContent-Length: 3\r\n"
                                   "Content-Length: 3\r\n\r\nabc",
                                   step),
                         400);
        assert_int_equal(
            STATUS_OF("POST /v1/log HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\nabc", step), 400);
        assert_int_equal(STATUS_OF("POST /v1/log HTTP/1.1\r\nContent-Length: -1\r\n\r\n", step),
                         400);
        /* bad chunks */
        assert_int_equal(STATUS_OF("POST /v1/log HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   "zz\r\nabc\r\n0\r\n\r\n",
                                   step),
                         400);
        assert_int_equal(STATUS_OF("POST /v1/log HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   "ffffffffffffffffff\r\nabc\r\n0\r\n\r\n",
                                   step),
                         400);
        assert_int_equal(STATUS_OF("POST /v1/log HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   "3\r\nabcX\r\n0\r\n\r\n",
                                   step),
                         400);
        assert_int_equal(STATUS_OF("POST /v1/log HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   "3\r\nabcdef\r\n0\r\n\r\n",
                                   step),
                         400);
        assert_int_equal(STATUS_OF("POST /v1/log HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   "3\r\nabc\n\n0\r\n\r\n",
                                   step),
                         400);
        /* garbage */
        assert_int_equal(STATUS_OF("\x01\x02garbage\r\n\r\n", step), 400);
        assert_int_equal(STATUS_OF("GET /a b HTTP/1.1\r\n\r\n", step), 400);
        assert_int_equal(STATUS_OF("GET / HTTP/1.1\r\nContent Length: 3\r\n\r\n", step), 400);
        assert_int_equal(STATUS_OF("GET / HTTP/1.1\r\nX-A: b\x01\r\n\r\n", step), 400);
        /* versions */
        assert_int_equal(STATUS_OF("GET / HTTP/2.0\r\n\r\n", step), 505);
        assert_int_equal(STATUS_OF("GET /\r\n\r\n", step), 505);
        /* and a correct one still parses the same way */
        assert_int_equal(STATUS_OF("GET / HTTP/1.1\r\nHost: x\r\n\r\n", step), 200);
    }
}

/* RFC 9112 section 6.1: only "chunked", alone and once, is implemented; any other coding, a
 * list, or a second field is 501 (and the connection closes, http_conn.c). */
static void test_transfer_codings_other_than_one_chunked_are_501(void **state)
{
    static const char *const bad[] = {
        "gzip, chunked", "identity",    "chunked, chunked", "x-unknown", "chunked, gzip",
        "gzip",          "chunked;q=1", "chunkedx",         "",
    };
    char req[256];

    (void)state;
    for (size_t step = 1; step <= 64; step += 63) {
        for (size_t i = 0; i < NWB_ARRAY_SIZE(bad); i++) {
            const int n = snprintf(req, sizeof(req),
                                   "POST /v1/log HTTP/1.1\r\nTransfer-Encoding: %s\r\n\r\n"
                                   "3\r\nabc\r\n0\r\n\r\n",
                                   bad[i]);

            if (status_of(req, (size_t)n, step) != 501) {
                fail_msg("Transfer-Encoding: '%s' (step %zu) is not 501", bad[i], step);
            }
        }
        /* Two fields, each "chunked": one list of two codings. */
        assert_int_equal(STATUS_OF("POST /v1/log HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                                   "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                                   step),
                         501);
        /* One "chunked", in any case, with blanks around it, is accepted. */
        assert_int_equal(STATUS_OF("POST /v1/log HTTP/1.1\r\nTransfer-Encoding:  ChUnKeD  \r\n"
                                   "\r\n3\r\nabc\r\n0\r\n\r\n",
                                   step),
                         200);
    }
}

static void test_nul_byte_in_header_value_is_400(void **state)
{
    static const char req[] = "GET / HTTP/1.1\r\nX-A: b\0c\r\n\r\n";

    (void)state;
    assert_int_equal(status_of(req, sizeof(req) - 1, 0), 400);
}

static void test_chunked_body_is_delivered_whole(void **state)
{
    static const char req[] = "POST /v1/log HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "5\r\nhello\r\n1;ext=1\r\n\n\r\n5\r\nworld\r\n0\r\n\r\n";

    (void)state;
    for (size_t step = 1; step < sizeof(req); step++) {
        struct nwb__http_req r;
        struct sink s = {{0}, 0, 0};
        struct run res;

        nwb__http_req_init(&r, &limits, sink_body, &s);
        res = feed(&r, req, sizeof(req) - 1, step);
        assert_int_equal(res.error, 0);
        assert_int_equal(res.dones, 1);
        assert_true(r.chunked);
        assert_false(r.has_length);
        assert_int_equal(s.len, 11);
        assert_memory_equal(s.body, "hello\nworld", 11);
    }
}

static void test_body_sink_status_fails_the_request(void **state)
{
    static const char req[] = "POST /v1/log HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
    struct nwb__http_req r;
    struct sink s = {{0}, 0, 413};
    struct run res;

    (void)state;
    nwb__http_req_init(&r, &limits, sink_body, &s);
    res = feed(&r, req, sizeof(req) - 1, 0);
    assert_int_equal(res.error, 413);
    /* The parser is dead afterwards. */
    assert_int_equal(feed(&r, "GET / HTTP/1.1\r\n\r\n", 18, 0).error, 413);
}

static void test_pipelined_requests_complete_in_order(void **state)
{
    static const char reqs[] = "GET /a HTTP/1.1\r\n\r\n"
                               "POST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
                               "GET /c HTTP/1.1\r\nConnection: close\r\n\r\n";
    const char *urls[3] = {"/a", "/b", "/c"};
    struct nwb__http_req r;
    struct sink s = {{0}, 0, 0};
    size_t off = 0;
    int done = 0;

    (void)state;
    nwb__http_req_init(&r, &limits, sink_body, &s);
    while (done < 3) {
        size_t used;
        int ev = nwb__http_req_feed(&r, reqs + off, sizeof(reqs) - 1 - off, &used);

        off += used;
        assert_true(ev == NWB__HTTP_HEAD || ev == NWB__HTTP_DONE);
        if (ev == NWB__HTTP_DONE) {
            assert_int_equal(r.url_len, 2);
            assert_memory_equal(r.url, urls[done], 2);
            assert_int_equal(r.keep_alive, done < 2);
            done++;
        }
    }
    assert_int_equal(off, sizeof(reqs) - 1);
    assert_int_equal(s.len, 2);
}

static void test_long_values_are_bounded(void **state)
{
    char req[8192];
    char big[2048];
    struct nwb__http_req r;
    struct run res;
    size_t n;

    (void)state;
    memset(big, 'r', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    n = (size_t)snprintf(req, sizeof(req),
                         "GET /%s HTTP/1.1\r\nX-NWB-Run: %s\r\nX-NWB-Seq: 1%s\r\n"
                         "X-A-Very-Long-Header-Name-That-Is-Ignored: 1\r\n\r\n",
                         big, big, big);
    nwb__http_req_init(&r, &limits, NULL, NULL);
    res = feed(&r, req, n, 100);
    assert_int_equal(res.error, 0);
    assert_int_equal(res.dones, 1);
    assert_true(r.url_long);
    assert_int_equal(r.url_len, NWB__URL_MAX);
    assert_int_equal(r.run_len, NWB__HTTP_VALUE_MAX);
    assert_true(r.seq_long);
}

static void test_content_type_matching_ignores_case_blanks_and_parameters(void **state)
{
    struct nwb__http_req r;
    static const char *const good[] = {"application/x-nwb-log-batch",
                                       " Application/X-NWB-Log-Batch ; v=1",
                                       "\tapplication/x-nwb-log-batch;"};
    static const char *const bad[] = {"application/x-nwb-log-batchx", "application/x-nwb-log", "",
                                      "text/plain"};

    (void)state;
    memset(&r, 0, sizeof(r));
    r.has_ctype = 1;
    for (size_t i = 0; i < NWB_ARRAY_SIZE(good); i++) {
        r.ctype_len = strlen(good[i]);
        memcpy(r.ctype, good[i], r.ctype_len);
        assert_true(nwb__http_req_ctype_is(&r, "application/x-nwb-log-batch"));
    }
    for (size_t i = 0; i < NWB_ARRAY_SIZE(bad); i++) {
        r.ctype_len = strlen(bad[i]);
        memcpy(r.ctype, bad[i], r.ctype_len);
        assert_false(nwb__http_req_ctype_is(&r, "application/x-nwb-log-batch"));
    }
    r.has_ctype = 0;
    assert_false(nwb__http_req_ctype_is(&r, "text/plain"));
}

static void test_http10_without_keep_alive_closes(void **state)
{
    static const char req[] = "GET /v1/health HTTP/1.0\r\n\r\n";
    static const char ka[] = "GET /v1/health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
    struct nwb__http_req r;

    (void)state;
    nwb__http_req_init(&r, &limits, NULL, NULL);
    assert_int_equal(feed(&r, req, sizeof(req) - 1, 0).dones, 1);
    assert_false(r.keep_alive);
    nwb__http_req_init(&r, &limits, NULL, NULL);
    assert_int_equal(feed(&r, ka, sizeof(ka) - 1, 0).dones, 1);
    assert_true(r.keep_alive);
}

/* @p value as If-None-Match of a GET: does it name the entity tag "\"abc\""? */
static int inm_matches(const char *value)
{
    char req[1024];
    struct nwb__http_req r;
    struct run res;
    const size_t n =
        (size_t)snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nIf-None-Match: %s\r\n\r\n", value);

    nwb__http_req_init(&r, &limits, NULL, NULL);
    res = feed(&r, req, n, 7);
    assert_int_equal(res.error, 0);
    assert_int_equal(res.dones, 1);
    return nwb__http_req_etag_matches(&r, "\"abc\"");
}

static void test_if_none_match_weak_comparison_and_bounds(void **state)
{
    static const char *const yes[] = {
        "\"abc\"", "*", "W/\"abc\"", "\"x\", \"abc\"", "\"x\",W/\"abc\" ,\"y\"", "  \"abc\"  "};
    static const char *const no[] = {"\"abd\"", "abc", "\"abc",     "W/abc",    "\"x\" \"abc\"",
                                     "",        "**",  "\"ab\"c\"", "w/\"abc\""};
    char big[NWB__IF_NONE_MATCH_MAX + 16];
    struct nwb__http_req r;

    (void)state;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (!inm_matches(yes[i])) {
            fail_msg("If-None-Match: %s should name \"abc\"", yes[i]);
        }
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        if (inm_matches(no[i])) {
            fail_msg("If-None-Match: %s should not name \"abc\"", no[i]);
        }
    }
    /* At the bound the tag is found; one byte more and the header matches nothing. */
    for (int extra = 0; extra <= 1; extra++) {
        const size_t len = NWB__IF_NONE_MATCH_MAX + (size_t)extra;

        memset(big, ' ', len - 5);
        memcpy(big + len - 5, "\"abc\"", 5);
        big[len] = '\0';
        big[0] = '"';
        big[1] = '"'; /* an empty tag first, then blanks: still one list */
        big[2] = ',';
        assert_int_equal(inm_matches(big), extra == 0);
    }
    /* Absent: no match. */
    nwb__http_req_init(&r, &limits, NULL, NULL);
    assert_int_equal(nwb__http_req_etag_matches(&r, "\"abc\""), 0);
}

static void test_response_head_formats_and_bounds(void **state)
{
    char head[512];
    char tiny[16];
    size_t n;

    (void)state;
    n = nwb__http_head_format(head, sizeof(head), 405, "text/plain", 5, "Allow: GET\r\n", 1);
    assert_int_equal(n, strlen(head));
    assert_string_equal(head, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 5\r\n"
                              "Content-Type: text/plain\r\n"
                              "Content-Security-Policy: default-src 'self'\r\n"
                              "X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n"
                              "Allow: GET\r\nConnection: close\r\n\r\n");
    assert_int_equal(nwb__http_head_format(tiny, sizeof(tiny), 200, NULL, 0, NULL, 0), 0);
    assert_string_equal(nwb__http_status_text(431), "Request Header Fields Too Large");
    /* A 304 carries no Content-Length: it would have to be the 200's. */
    n = nwb__http_head_format(head, sizeof(head), 304, NULL, 0, "ETag: \"e\"\r\n", 0);
    assert_int_equal(n, strlen(head));
    assert_string_equal(head, "HTTP/1.1 304 Not Modified\r\n"
                              "Content-Security-Policy: default-src 'self'\r\n"
                              "X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n"
                              "ETag: \"e\"\r\n\r\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_reports_head_then_done),
        cmocka_unit_test(test_post_split_at_every_size_gives_same_request),
        cmocka_unit_test(test_head_at_byte_limit_passes_one_more_is_431),
        cmocka_unit_test(test_header_count_at_limit_passes_one_more_is_431),
        cmocka_unit_test(test_malformed_requests_are_400),
        cmocka_unit_test(test_transfer_codings_other_than_one_chunked_are_501),
        cmocka_unit_test(test_nul_byte_in_header_value_is_400),
        cmocka_unit_test(test_chunked_body_is_delivered_whole),
        cmocka_unit_test(test_body_sink_status_fails_the_request),
        cmocka_unit_test(test_pipelined_requests_complete_in_order),
        cmocka_unit_test(test_long_values_are_bounded),
        cmocka_unit_test(test_content_type_matching_ignores_case_blanks_and_parameters),
        cmocka_unit_test(test_http10_without_keep_alive_closes),
        cmocka_unit_test(test_if_none_match_weak_comparison_and_bounds),
        cmocka_unit_test(test_response_head_formats_and_bounds),
    };

    return cmocka_run_group_tests_name("server.http_request", tests, NULL, NULL);
}
