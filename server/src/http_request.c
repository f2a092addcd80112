/* SPDX-License-Identifier: MIT */
/*
 * http_request.c - parses one HTTP/1.x request at a time with llhttp (no
 * lenient flags) and adds the checks llhttp's loose build lets through: bare
 * LF line ends in the head, versions other than 1.x, several Content-Length
 * fields, any Transfer-Encoding but one "chunked" (501, RFC 9112 section 6.1).
 * Enforces the head bounds (bytes, field count) and keeps only the
 * header values the server uses (run identity, Content-Type, Expect,
 * Content-Encoding, Authorization, Last-Event-ID), in fixed buffers. No sockets: tests feed
 * it bytes directly.
 */
#include <string.h>
#include <strings.h>

#include "server_int.h"

enum { PH_HEAD = 0, PH_BODY, PH_DONE, PH_DEAD };

enum {
    H_OTHER = 0,
    H_PROGRAM,
    H_RUN,
    H_SEQ,
    H_CTYPE,
    H_EXPECT,
    H_CLENGTH,
    H_CENC,
    H_AUTH,
    H_TE,
    H_LAST_EVENT_ID,
    H_IF_NONE_MATCH,
};

/* The one transfer coding the server implements (RFC 9112 section 6.1: others are 501). */
static const char te_chunked[] = "chunked";
static const char te_unsupported[] =
    "Transfer-Encoding other than one \"chunked\" is not implemented";

static struct nwb__http_req *req_of(llhttp_t *p)
{
    return NWB_CONTAINER_OF(p, struct nwb__http_req, parser);
}

static int fail(struct nwb__http_req *r, int status, const char *reason)
{
    r->status = status;
    r->reason = reason;
    return HPE_USER;
}

static void append(char *dst, size_t cap, size_t *len, const char *at, size_t n)
{
    size_t room = cap - *len;

    if (n > room) {
        n = room;
    }
    memcpy(dst + *len, at, n);
    *len += n;
}

static int on_url(llhttp_t *p, const char *at, size_t n)
{
    struct nwb__http_req *r = req_of(p);

    if (r->url_len + n > sizeof(r->url)) {
        r->url_long = 1;
    }
    append(r->url, sizeof(r->url), &r->url_len, at, n);
    return 0;
}

/* RFC 9110 tchar: field names are tokens (llhttp's loose build lets a space through). */
static int is_tchar(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static int on_header_field(llhttp_t *p, const char *at, size_t n)
{
    struct nwb__http_req *r = req_of(p);

    for (size_t i = 0; i < n; i++) {
        char ch = at[i];

        if (!is_tchar((unsigned char)ch)) {
            return fail(r, 400, "invalid character in a header field name");
        }
        if (r->field_len >= sizeof(r->field)) {
            /* Longer than any name we use; remember only that it is long. */
            r->field_len = sizeof(r->field) + 1;
            continue;
        }
        if (ch >= 'A' && ch <= 'Z') {
            ch = (char)(ch - 'A' + 'a');
        }
        r->field[r->field_len++] = ch;
    }
    return 0;
}

static int field_is(const struct nwb__http_req *r, const char *name)
{
    const size_t n = strlen(name);

    return r->field_len == n && memcmp(r->field, name, n) == 0;
}

static int on_header_field_complete(llhttp_t *p)
{
    struct nwb__http_req *r = req_of(p);
    int id = H_OTHER;

    if (++r->header_count > r->limits->max_headers) {
        return fail(r, 431, "too many header fields");
    }
    if (field_is(r, "x-nwb-program")) {
        id = H_PROGRAM;
    } else if (field_is(r, "x-nwb-run")) {
        id = H_RUN;
    } else if (field_is(r, "x-nwb-seq")) {
        id = H_SEQ;
    } else if (field_is(r, "content-type")) {
        id = H_CTYPE;
    } else if (field_is(r, "expect")) {
        id = H_EXPECT;
    } else if (field_is(r, "content-length")) {
        id = H_CLENGTH;
    } else if (field_is(r, "content-encoding")) {
        id = H_CENC;
    } else if (field_is(r, "authorization")) {
        id = H_AUTH;
    } else if (field_is(r, "transfer-encoding")) {
        id = H_TE;
    } else if (field_is(r, "last-event-id")) {
        id = H_LAST_EVENT_ID;
    } else if (field_is(r, "if-none-match")) {
        id = H_IF_NONE_MATCH;
    }
    r->field_len = 0;
    if (id == H_TE && (r->seen & (1u << H_TE)) != 0) {
        /* Two fields are one list ("chunked, chunked"): chunked applied twice. */
        return fail(r, 501, te_unsupported);
    }
    if (id == H_CLENGTH) {
        /* llhttp rejects this too; checked here as well so no build of it can let it by. */
        if (r->seen & (1u << H_CLENGTH)) {
            return fail(r, 400, "duplicate Content-Length");
        }
        r->seen |= 1u << H_CLENGTH;
        id = H_OTHER;
    }
    /* The first field of a kind wins; repeats are ignored. */
    if (id != H_OTHER && (r->seen & (1u << id)) != 0) {
        id = H_OTHER;
    }
    r->cur_header = id;
    return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n)
{
    struct nwb__http_req *r = req_of(p);

    switch (r->cur_header) {
    case H_PROGRAM:
        append(r->program, sizeof(r->program), &r->program_len, at, n);
        break;
    case H_RUN:
        append(r->run, sizeof(r->run), &r->run_len, at, n);
        break;
    case H_SEQ:
        if (r->seq_len + n > sizeof(r->seq)) {
            r->seq_long = 1;
        }
        append(r->seq, sizeof(r->seq), &r->seq_len, at, n);
        break;
    case H_LAST_EVENT_ID:
        if (r->last_event_id_len + n > sizeof(r->last_event_id)) {
            r->last_event_id_long = 1;
        }
        append(r->last_event_id, sizeof(r->last_event_id), &r->last_event_id_len, at, n);
        break;
    case H_IF_NONE_MATCH:
        if (r->if_none_match_len + n > sizeof(r->if_none_match)) {
            r->if_none_match_long = 1;
        }
        append(r->if_none_match, sizeof(r->if_none_match), &r->if_none_match_len, at, n);
        break;
    case H_CTYPE:
        append(r->ctype, sizeof(r->ctype), &r->ctype_len, at, n);
        break;
    case H_EXPECT:
        append(r->expect, sizeof(r->expect), &r->expect_len, at, n);
        break;
    case H_CENC:
        if (r->cenc_len + n > sizeof(r->cenc)) {
            r->cenc_long = 1;
        }
        append(r->cenc, sizeof(r->cenc), &r->cenc_len, at, n);
        break;
    case H_TE:
        if (r->te_len + n > sizeof(r->te)) {
            r->te_long = 1;
        }
        append(r->te, sizeof(r->te), &r->te_len, at, n);
        break;
    case H_AUTH:
        /* Bounded: a longer value is remembered as too long (401), never kept. */
        if (r->auth_len + n > sizeof(r->auth)) {
            r->auth_long = 1;
        }
        append(r->auth, sizeof(r->auth), &r->auth_len, at, n);
        break;
    default:
        break;
    }
    return 0;
}

static void trim_right(const char *s, size_t *len)
{
    while (*len > 0 && (s[*len - 1] == ' ' || s[*len - 1] == '\t')) {
        (*len)--;
    }
}

static int on_header_value_complete(llhttp_t *p)
{
    struct nwb__http_req *r = req_of(p);

    switch (r->cur_header) {
    case H_PROGRAM:
        trim_right(r->program, &r->program_len);
        r->has_program = 1;
        break;
    case H_RUN:
        trim_right(r->run, &r->run_len);
        r->has_run = 1;
        break;
    case H_SEQ:
        trim_right(r->seq, &r->seq_len);
        r->has_seq = 1;
        break;
    case H_LAST_EVENT_ID:
        trim_right(r->last_event_id, &r->last_event_id_len);
        r->has_last_event_id = 1;
        break;
    case H_IF_NONE_MATCH:
        trim_right(r->if_none_match, &r->if_none_match_len);
        r->has_if_none_match = 1;
        break;
    case H_CTYPE:
        r->has_ctype = 1;
        break;
    case H_EXPECT:
        trim_right(r->expect, &r->expect_len);
        r->has_expect = 1;
        break;
    case H_CENC:
        trim_right(r->cenc, &r->cenc_len);
        r->has_cenc = 1;
        break;
    case H_AUTH:
        trim_right(r->auth, &r->auth_len);
        r->has_auth = 1;
        break;
    case H_TE:
        trim_right(r->te, &r->te_len);
        if (r->te_long || r->te_len != sizeof(te_chunked) - 1 ||
            strncasecmp(r->te, te_chunked, r->te_len) != 0) {
            return fail(r, 501, te_unsupported);
        }
        break;
    default:
        break;
    }
    if (r->cur_header != H_OTHER) {
        r->seen |= 1u << r->cur_header;
    }
    r->cur_header = H_OTHER;
    return 0;
}

static int on_headers_complete(llhttp_t *p)
{
    struct nwb__http_req *r = req_of(p);

    r->method = llhttp_get_method(p);
    r->http_major = llhttp_get_http_major(p);
    r->http_minor = llhttp_get_http_minor(p);
    if (r->http_major != 1) {
        return fail(r, 505, "only HTTP/1.0 and HTTP/1.1 are supported");
    }
    r->has_length = (p->flags & F_CONTENT_LENGTH) != 0;
    r->chunked = (p->flags & F_CHUNKED) != 0;
    if ((r->seen & (1u << H_TE)) != 0 && !r->chunked) {
        /* "chunked" followed by a tab: llhttp does not frame it as chunked; never guess. */
        return fail(r, 501, te_unsupported);
    }
    r->content_length = r->has_length ? p->content_length : 0;
    r->upgrade = llhttp_get_upgrade(p) != 0 || r->method == HTTP_CONNECT;
    r->keep_alive = llhttp_should_keep_alive(p) && !r->upgrade;
    r->phase = PH_BODY;
    /* Pause so the caller sees exactly where the head ends (head bytes, body start). */
    return HPE_PAUSED;
}

/* Check the CRLF that must follow chunk data, as far as this buffer holds it. */
static int check_chunk_crlf(struct nwb__http_req *r, const char *p)
{
    while (r->crlf_need > 0 && p < r->buf_end) {
        if (*p != "\r\n"[2 - r->crlf_need]) {
            return fail(r, 400, "chunk data not followed by CRLF");
        }
        r->crlf_need--;
        p++;
    }
    return 0;
}

static int on_chunk_header(llhttp_t *p)
{
    req_of(p)->chunk_left = p->content_length;
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    struct nwb__http_req *r = req_of(p);
    int status;

    if (r->chunked) {
        /* llhttp's loose build skips the 2 bytes after chunk data unchecked. */
        r->chunk_left -= n < r->chunk_left ? n : r->chunk_left;
        if (r->chunk_left == 0) {
            r->crlf_need = 2;
            if (check_chunk_crlf(r, at + n) != 0) {
                return HPE_USER;
            }
        }
    }
    if (r->body_fn == NULL) {
        return 0;
    }
    status = r->body_fn(r->body_ctx, at, n);
    if (status != 0) {
        return fail(r, status,
                    status == 413 ? "request body exceeds --max-body-bytes"
                                  : "request body rejected");
    }
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    struct nwb__http_req *r = req_of(p);

    r->phase = PH_DONE;
    return HPE_PAUSED;
}

static const llhttp_settings_t settings = {
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
    .on_header_field_complete = on_header_field_complete,
    .on_header_value_complete = on_header_value_complete,
    .on_chunk_header = on_chunk_header,
};

/* Forget the previous request; llhttp resets its own state between messages. */
static void req_reset(struct nwb__http_req *r)
{
    const size_t keep = offsetof(struct nwb__http_req, phase);

    memset((char *)r + keep, 0, sizeof(*r) - keep);
    r->phase = PH_HEAD;
}

void nwb__http_req_init(struct nwb__http_req *r, const struct nwb__http_limits *limits,
                        nwb__http_body_fn body_fn, void *body_ctx)
{
    memset(r, 0, sizeof(*r));
    llhttp_init(&r->parser, HTTP_REQUEST, &settings);
    r->limits = limits;
    r->body_fn = body_fn;
    r->body_ctx = body_ctx;
    req_reset(r);
}

/* Every LF of the head must follow a CR (llhttp's loose build accepts some bare ones). */
static int has_bare_lf(struct nwb__http_req *r, const char *data, size_t n)
{
    const char *p = data;
    const char *end = data + n;

    if (n == 0) {
        return 0;
    }
    while (p < end) {
        const char *lf = memchr(p, '\n', (size_t)(end - p));

        if (lf == NULL) {
            break;
        }
        if (lf == data ? !r->last_cr : lf[-1] != '\r') {
            return 1;
        }
        p = lf + 1;
    }
    r->last_cr = end[-1] == '\r';
    return 0;
}

static int dead(struct nwb__http_req *r, int status, const char *reason)
{
    r->phase = PH_DEAD;
    r->status = status;
    r->reason = reason;
    return NWB__HTTP_ERROR;
}

int nwb__http_req_feed(struct nwb__http_req *r, const char *data, size_t len, size_t *used)
{
    llhttp_errno_t err;
    int was_head;
    size_t n;

    *used = 0;
    if (r->phase == PH_DEAD) {
        return NWB__HTTP_ERROR;
    }
    if (r->phase == PH_DONE) {
        if (len == 0) {
            return NWB__HTTP_MORE; /* keep the finished request's fields */
        }
        req_reset(r);
    }
    was_head = r->phase == PH_HEAD;
    r->buf_end = data + len;
    if (r->crlf_need > 0 && check_chunk_crlf(r, data) != 0) {
        return dead(r, r->status, r->reason);
    }
    err = llhttp_execute(&r->parser, data, len);
    if (err == HPE_OK) {
        n = len;
    } else if (err == HPE_PAUSED) {
        n = (size_t)(llhttp_get_error_pos(&r->parser) - data);
        llhttp_resume(&r->parser);
    } else if (err == HPE_PAUSED_UPGRADE) {
        /* What follows an Upgrade/CONNECT request is not HTTP; the connection closes. */
        n = len;
    } else if (r->status != 0) {
        /* One of our callbacks refused (llhttp reports it as HPE_USER or HPE_CB_*). */
        return dead(r, r->status, r->reason);
    } else if (err == HPE_INVALID_TRANSFER_ENCODING) {
        /* llhttp's own refusal of a coding list (e.g. "chunked, gzip"): not implemented. */
        return dead(r, 501, te_unsupported);
    } else {
        const char *why = llhttp_get_error_reason(&r->parser);

        return dead(r, 400, why != NULL && why[0] != '\0' ? why : llhttp_errno_name(err));
    }
    *used = n;
    if (was_head) {
        if (has_bare_lf(r, data, n)) {
            return dead(r, 400, "bare LF line ending in the request head");
        }
        r->head_bytes += n;
        if (r->head_bytes > r->limits->max_header_bytes) {
            return dead(r, 431, "request head exceeds --max-header-bytes");
        }
        if (r->phase != PH_HEAD) {
            return NWB__HTTP_HEAD;
        }
        return NWB__HTTP_MORE;
    }
    if (r->phase == PH_DONE && err == HPE_PAUSED) {
        return NWB__HTTP_DONE;
    }
    return NWB__HTTP_MORE;
}

int nwb__http_req_ctype_is(const struct nwb__http_req *r, const char *type)
{
    const size_t tlen = strlen(type);
    size_t b = 0;
    size_t e;

    if (!r->has_ctype) {
        return 0;
    }
    e = r->ctype_len;
    for (size_t i = 0; i < r->ctype_len; i++) {
        if (r->ctype[i] == ';') {
            e = i;
            break;
        }
    }
    while (b < e && (r->ctype[b] == ' ' || r->ctype[b] == '\t')) {
        b++;
    }
    while (e > b && (r->ctype[e - 1] == ' ' || r->ctype[e - 1] == '\t')) {
        e--;
    }
    if (e - b != tlen) {
        return 0;
    }
    for (size_t i = 0; i < tlen; i++) {
        char ch = r->ctype[b + i];

        if (ch >= 'A' && ch <= 'Z') {
            ch = (char)(ch - 'A' + 'a');
        }
        if (ch != type[i]) {
            return 0;
        }
    }
    return 1;
}

/* A header value that must be a decimal u64: 0 with *out, or -1 (empty, too long, not digits). */
static int decimal_value(const char *s, size_t len, int too_long, uint64_t *out)
{
    uint64_t v = 0;

    if (too_long || len == 0) {
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        const unsigned d = (unsigned)(s[i] - '0');

        if (d > 9 || v > (UINT64_MAX - d) / 10) {
            return -1;
        }
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int nwb__http_req_seq(const struct nwb__http_req *r, int *has_seq, uint64_t *seq)
{
    *has_seq = 0;
    *seq = 0;
    if (!r->has_seq) {
        return 0;
    }
    if (decimal_value(r->seq, r->seq_len, r->seq_long, seq) != 0) {
        *seq = 0;
        return -1;
    }
    *has_seq = 1;
    return 0;
}

int nwb__http_req_last_event_id(const struct nwb__http_req *r, int *has_id, uint64_t *id)
{
    *has_id = 0;
    *id = 0;
    if (!r->has_last_event_id) {
        return 0;
    }
    if (decimal_value(r->last_event_id, r->last_event_id_len, r->last_event_id_long, id) != 0) {
        *id = 0;
        return -1;
    }
    *has_id = 1;
    return 0;
}

int nwb__http_req_etag_matches(const struct nwb__http_req *r, const char *etag)
{
    const size_t elen = strlen(etag);
    const char *p = r->if_none_match;
    const char *const end = r->if_none_match + r->if_none_match_len;

    if (!r->has_if_none_match || r->if_none_match_long) {
        return 0;
    }
    /* #entity-tag with optional whitespace around the commas; anything else matches nothing. */
    for (;;) {
        const char *tag;

        while (p < end && (*p == ' ' || *p == '\t' || *p == ',')) {
            p++;
        }
        if (p == end) {
            return 0;
        }
        if (*p == '*' && (p + 1 == end || p[1] == ' ' || p[1] == '\t' || p[1] == ',')) {
            return 1;
        }
        if (end - p >= 2 && p[0] == 'W' && p[1] == '/') {
            p += 2;
        }
        if (p == end || *p != '"') {
            return 0;
        }
        tag = p++;
        while (p < end && *p != '"') {
            p++;
        }
        if (p == end) {
            return 0;
        }
        p++;
        if ((size_t)(p - tag) == elen && memcmp(tag, etag, elen) == 0) {
            return 1;
        }
        while (p < end && (*p == ' ' || *p == '\t')) {
            p++;
        }
        if (p < end && *p != ',') {
            return 0;
        }
    }
}
