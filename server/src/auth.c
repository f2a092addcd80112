/* SPDX-License-Identifier: MIT */
/*
 * auth.c - access control: the --token-file token (read once at start-up by
 * common's token reader, nwb/token.h, plus the server's mode and minimum-length
 * rules), the constant-time token compare, the Authorization: Bearer check of a
 * request head, and the 401 answer given before any body byte is read.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "nwb/error.h"
#include "nwb/token.h"
#include "server_int.h"

static const char auth_scheme[] = "Bearer";

int nwb__auth_load(struct nwb__auth *a, const char *path, char *errbuf, size_t errlen)
{
    char token[NWB_TOKEN_MAX + 1];
    struct stat st;
    size_t len;
    int err;

    memset(a, 0, sizeof(*a));
    /* The server's rule before the secret is read: not for group or others. A stat() that
     * fails is the reader's to report (with its errno), as is a file that is not regular. */
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & NWB__TOKEN_FILE_MODE) != 0) {
        snprintf(errbuf, errlen,
                 "the token file %s: readable or writable by group or others (mode %04o); "
                 "chmod 600 it",
                 path, (unsigned)(st.st_mode & 07777));
        return NWB_ECONFIG;
    }
    err = nwb_token_file_read(path, token, sizeof(token), errbuf, errlen);
    if (err != 0) {
        return err;
    }
    len = strlen(token);
    if (len < NWB__TOKEN_MIN) {
        snprintf(errbuf, errlen, "the token file %s: the token is shorter than %u bytes", path,
                 NWB__TOKEN_MIN);
        err = NWB_ECONFIG;
    } else {
        memcpy(a->token, token, len);
        a->len = len;
        a->required = 1;
    }
    nwb__auth_wipe(token, sizeof(token)); /* the token does not linger on the stack */
    return err;
}

void nwb__auth_wipe(void *p, size_t n)
{
    volatile unsigned char *v = p;

    for (size_t i = 0; i < n; i++) {
        v[i] = 0;
    }
}

int nwb__auth_token_equal(const struct nwb__auth *a, const unsigned char *given, size_t given_len)
{
    const volatile unsigned char *g = given;
    size_t diff = given_len ^ a->len;
    unsigned acc = 0;

    /* Every byte of the token is looked at, whatever the earlier ones were: no early exit. */
    for (size_t i = 0; i < a->len; i++) {
        acc |= (unsigned)(g[i] ^ a->token[i]);
    }
    /* Fold a length difference into bit 0 without a branch: (d | -d) has its top bit set
     * exactly when d != 0. */
    acc |= (unsigned)((diff | (0u - diff)) >> (sizeof(diff) * 8u - 1u));
    /* acc <= 0xff: acc - 1 wraps to all ones (bit 8 set) only when acc is 0. */
    return (int)(((acc - 1u) >> 8) & 1u);
}

int nwb__auth_check_request(const struct nwb__auth *a, const struct nwb__http_req *r,
                            const char **reason)
{
    /* Zero-padded copy: the compare always reads a->len bytes (constant time). */
    unsigned char given[NWB__AUTH_VALUE_MAX];
    const size_t slen = sizeof(auth_scheme) - 1;
    size_t p = slen;
    size_t n;
    int ok;

    if (!r->has_auth) {
        *reason = "missing Authorization: Bearer <token> header";
        return 401;
    }
    if (r->auth_long) {
        *reason = "Authorization header too long";
        return 401;
    }
    if (r->auth_len <= slen || strncasecmp(r->auth, auth_scheme, slen) != 0 ||
        (r->auth[slen] != ' ' && r->auth[slen] != '\t')) {
        *reason = "Authorization scheme is not Bearer";
        return 401;
    }
    while (p < r->auth_len && (r->auth[p] == ' ' || r->auth[p] == '\t')) {
        p++;
    }
    n = r->auth_len - p;
    memset(given, 0, sizeof(given));
    memcpy(given, r->auth + p, n);
    ok = nwb__auth_token_equal(a, given, n);
    nwb__auth_wipe(given, sizeof(given));
    if (!ok) {
        *reason = "wrong bearer token";
        return 401;
    }
    return 0;
}

int nwb__auth_addr_is_loopback(const char *addr)
{
    unsigned char b[16];
    static const unsigned char v6_loop[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

    if (addr == NULL) {
        return 0;
    }
    if (uv_inet_pton(AF_INET, addr, b) == 0) {
        return b[0] == 127;
    }
    if (uv_inet_pton(AF_INET6, addr, b) == 0) {
        return memcmp(b, v6_loop, 16) == 0 || (memcmp(b, v4_mapped, 12) == 0 && b[12] == 127);
    }
    return 0;
}

int nwb__auth_reject(struct nwb__conn *c)
{
    static const char extra[] = "WWW-Authenticate: Bearer realm=\"nwb-logserver\"\r\n";
    const char *reason = NULL;
    char body[96];
    int status;
    int n;

    if (!c->srv->auth.required || (c->route != NULL && nwb__router_route_is_public(c->route))) {
        return 0;
    }
    status = nwb__auth_check_request(&c->srv->auth, &c->req, &reason);
    if (status == 0) {
        return 0;
    }
    /* Answer and close: the body (if any) is never read, let alone queued. */
    n = snprintf(body, sizeof(body), "%s\n", reason);
    uv_timer_stop(&c->timer);
    c->state = NWB__CONN_HANDLING;
    c->close_after = 1;
    nwb__conn_respond(c, status, "text/plain; charset=utf-8", body, (size_t)n, 0, extra);
    return 1;
}

int nwb__server_check_access(const nwb_server_config_t *cfg, char *errbuf, size_t errlen)
{
    if (cfg->token_file == NULL && !nwb__auth_addr_is_loopback(cfg->bind_addr)) {
        snprintf(errbuf, errlen,
                 "--bind %s is not a loopback address: listening there needs --token-file FILE "
                 "(every request must then carry Authorization: Bearer <token>)",
                 cfg->bind_addr != NULL ? cfg->bind_addr : "(none)");
        return NWB_ECONFIG;
    }
    return 0;
}
