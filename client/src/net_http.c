/* SPDX-License-Identifier: MIT */
/*
 * net_http.c - the HTTP/1.1 side of the HTTP output: the head of each
 * `POST /v1/log` request, and a strict llhttp response parser that survives
 * responses split across any number of reads.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "nwb/error.h"
#include "nwb/log_batch.h"

#include "net_int.h"

int nwb__http_header_safe(const char *s, int allow_space)
{
    if (s == NULL || s[0] == '\0') {
        return 0;
    }
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if (*p < 0x21 || *p > 0x7E) {
            if (!(allow_space && *p == ' ')) {
                return 0;
            }
        }
    }
    return 1;
}

int nwb__http_request_head(char *dst, size_t cap, const char *host, const char *port,
                           const char *program, const char *run, uint64_t seq, size_t body_len,
                           const char *token)
{
    /* An IPv6 literal needs brackets in the Host header (RFC 7230 5.4). */
    const int v6 = strchr(host, ':') != NULL;
    int n = snprintf(dst, cap,
                     "POST /v1/log HTTP/1.1\r\n"
                     "Host: %s%s%s:%s\r\n"
                     "Content-Type: " NWB_LOG_BATCH_CONTENT_TYPE "\r\n"
                     "Content-Length: %zu\r\n"
                     "X-NWB-Program: %s\r\n"
                     "X-NWB-Run: %s\r\n"
                     "X-NWB-Seq: %" PRIu64 "\r\n"
                     "%s%s%s"
                     "\r\n",
                     v6 ? "[" : "", host, v6 ? "]" : "", port, body_len, program, run, seq,
                     token != NULL && token[0] != '\0' ? "Authorization: Bearer " : "",
                     token != NULL ? token : "", token != NULL && token[0] != '\0' ? "\r\n" : "");

    if (n < 0 || (size_t)n >= cap) {
        return NWB_ETOOBIG;
    }
    return n;
}

/* ---- response parser ---- */

static struct nwb__http_resp *resp_of(llhttp_t *p)
{
    return NWB_CONTAINER_OF(p, struct nwb__http_resp, parser);
}

static void header_reset(struct nwb__http_resp *r)
{
    r->field_len = 0;
    r->field_long = 0;
    r->in_retry_after = 0;
    r->value_len = 0;
    r->value_long = 0;
}

static int on_message_begin(llhttp_t *p)
{
    struct nwb__http_resp *r = resp_of(p);

    r->status = 0;
    r->retry_after_s = -1;
    r->complete = 0;
    header_reset(r);
    return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t len)
{
    struct nwb__http_resp *r = resp_of(p);

    /* Only short names matter (Retry-After); longer ones are just marked. */
    if (r->field_len + len > sizeof(r->field)) {
        r->field_long = 1;
        return 0;
    }
    memcpy(r->field + r->field_len, at, len);
    r->field_len += len;
    return 0;
}

static int on_header_field_complete(llhttp_t *p)
{
    struct nwb__http_resp *r = resp_of(p);

    r->in_retry_after = !r->field_long && r->field_len == strlen("retry-after") &&
                        strncasecmp(r->field, "retry-after", r->field_len) == 0;
    r->value_len = 0;
    r->value_long = 0;
    return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t len)
{
    struct nwb__http_resp *r = resp_of(p);

    if (!r->in_retry_after) {
        return 0;
    }
    if (r->value_len + len >= sizeof(r->value)) {
        r->value_long = 1;
        return 0;
    }
    memcpy(r->value + r->value_len, at, len);
    r->value_len += len;
    return 0;
}

static int on_header_value_complete(llhttp_t *p)
{
    struct nwb__http_resp *r = resp_of(p);

    if (r->in_retry_after && !r->value_long && r->value_len > 0) {
        long v = 0;
        size_t i = 0;

        /* delta-seconds only; an HTTP-date falls back to our own backoff. */
        while (i < r->value_len && r->value[i] >= '0' && r->value[i] <= '9' && v < 1000000) {
            v = v * 10 + (r->value[i] - '0');
            i++;
        }
        if (i == r->value_len) {
            r->retry_after_s = v;
        }
    }
    r->field_len = 0;
    r->field_long = 0;
    r->in_retry_after = 0;
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    struct nwb__http_resp *r = resp_of(p);
    const int status = p->status_code;

    if (status >= 100 && status < 200) {
        /* An interim response (100 Continue): the final one follows. */
        return 0;
    }
    r->status = status;
    r->keep_alive = llhttp_should_keep_alive(p);
    r->complete = 1;
    return HPE_PAUSED;
}

static const llhttp_settings_t resp_settings = {
    .on_message_begin = on_message_begin,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_header_field_complete = on_header_field_complete,
    .on_header_value_complete = on_header_value_complete,
    .on_message_complete = on_message_complete,
};

void nwb__http_resp_init(struct nwb__http_resp *r)
{
    memset(r, 0, sizeof(*r));
    llhttp_init(&r->parser, HTTP_RESPONSE, &resp_settings);
    r->retry_after_s = -1;
}

int nwb__http_resp_feed(struct nwb__http_resp *r, const char *data, size_t len, size_t *used)
{
    llhttp_errno_t err;

    *used = 0;
    if (r->complete) {
        return 0;
    }
    err = llhttp_execute(&r->parser, data, len);
    if (err == HPE_OK) {
        *used = len;
        r->bytes += len;
        return 0;
    }
    if (err == HPE_PAUSED) {
        const char *pos = llhttp_get_error_pos(&r->parser);

        *used = pos != NULL && pos >= data && pos <= data + len ? (size_t)(pos - data) : len;
        r->bytes += *used;
        return 0;
    }
    /* HPE_PAUSED_UPGRADE (a 101) and every parse error: not a response we can use. */
    return NWB_EPROTO;
}

int nwb__http_resp_eof(struct nwb__http_resp *r)
{
    if (r->complete) {
        return 0;
    }
    if (r->bytes == 0) {
        return NWB_EPROTO;
    }
    /* Completes a body delimited by the connection's end; anything else is an error. */
    if (llhttp_finish(&r->parser) != HPE_OK && !r->complete) {
        return NWB_EPROTO;
    }
    return r->complete ? 0 : NWB_EPROTO;
}

void nwb__http_resp_next(struct nwb__http_resp *r)
{
    if (r->complete) {
        r->complete = 0;
        llhttp_resume(&r->parser);
    }
}
