/* SPDX-License-Identifier: MIT */
/*
 * crash_symbols.c - nwb_crash_symbols_upload(): one ELF file POSTed raw to /v1/symbols with
 * crash_http.c's client (the body streamed from the file), the answer's build id, "stored"
 * flag or refusal reason picked out of its JSON (docs/crash.md, "Publishing symbols"). For
 * build machines and tools, never the dying process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/crash.h"
#include "nwb/error.h"
#include "nwb/token.h"

#include "capture_int.h"

#define SYMBOLS_DEF_TIMEOUT_MS 120000u
#define SERVER_MAX             512u

/*
 * The string value of "key" in the flat JSON object @p json into @p out (escapes other than
 * \" and \\ kept as written; cut to @p cap). 0, or -1 when the key is missing.
 */
static int json_string(const char *json, const char *key, char *out, size_t cap)
{
    char pat[64];
    const char *p;
    size_t n = 0;

    snprintf(pat, sizeof(pat), "\"%s\"", key);
    p = strstr(json, pat);
    if (p == NULL) {
        return -1;
    }
    p += strlen(pat);
    p += strspn(p, " \t\r\n");
    if (*p++ != ':') {
        return -1;
    }
    p += strspn(p, " \t\r\n");
    if (*p++ != '"') {
        return -1;
    }
    while (*p != '\0' && *p != '"') {
        if (*p == '\\' && (p[1] == '"' || p[1] == '\\')) {
            p++;
        }
        if (n + 1 < cap) {
            out[n++] = *p;
        }
        p++;
    }
    out[n] = '\0';
    return *p == '"' ? 0 : -1;
}

/* "http://HOST:PORT/" or "HOST:PORT" as HOST:PORT in @p out. */
static void server_address(const char *server, char *out, size_t cap)
{
    size_t n;

    if (strncmp(server, "http://", 7) == 0) {
        server += 7;
    }
    n = strlen(server);
    while (n > 0 && server[n - 1] == '/') {
        n--;
    }
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), server);
}

/* The reason of a refusal: the JSON "error", else the text line the server sent. */
static void answer_reason(const char *body, char *out, size_t cap)
{
    if (json_string(body, "error", out, cap) == 0) {
        return;
    }
    snprintf(out, cap, "%.*s", (int)strcspn(body, "\r\n"), body);
}

int nwb_crash_symbols_upload(const char *file, const char *server, const char *token,
                             unsigned timeout_ms, nwb_crash_symbols_result_t *res, char *errbuf,
                             size_t errlen)
{
    char env_token[NWB_TOKEN_MAX + 1], addr[SERVER_MAX], headers[512], body[2048];
    struct stat st;
    int fd, err;

    memset(res, 0, sizeof(*res));
    env_token[0] = '\0';
    if (token == NULL) {
        err = nwb_token_from_env(env_token, sizeof(env_token), errbuf, errlen);
        if (err != 0) {
            return err;
        }
        token = env_token;
    }
    if (server == NULL) {
        server = getenv("NWB_LOGSERVER");
    }
    if (server == NULL || server[0] == '\0') {
        server = NWB__CRASH_DEF_SERVER;
    }
    server_address(server, addr, sizeof(addr));
    if (timeout_ms == 0) {
        timeout_ms = SYMBOLS_DEF_TIMEOUT_MS;
    }
    fd = open(file, O_RDONLY | O_CLOEXEC);
    err = fd < 0 || fstat(fd, &st) != 0 ? -errno : (S_ISREG(st.st_mode) ? 0 : NWB_ENOTREG);
    if (err != 0) {
        if (fd >= 0) {
            close(fd);
        }
        if (errbuf != NULL) {
            char tmp[128];

            snprintf(errbuf, errlen, "cannot read %s: %s", file,
                     nwb_strerror_r(err, tmp, sizeof(tmp)));
        }
        return err;
    }
    snprintf(headers, sizeof(headers), "Content-Type: application/octet-stream\r\n%s%s%s",
             token[0] != '\0' ? "Authorization: Bearer " : "", token,
             token[0] != '\0' ? "\r\n" : "");
    memset(env_token, 0, sizeof(env_token));
    err = nwb__crash_http_post(addr, "/v1/symbols", headers, fd, (uint64_t)st.st_size, timeout_ms,
                               &res->http_status, body, sizeof(body));
    memset(headers, 0, sizeof(headers));
    close(fd);
    if (err != 0) {
        if (errbuf != NULL) {
            char tmp[128];

            snprintf(errbuf, errlen, "POST http://%s/v1/symbols: %s", addr,
                     nwb_strerror_r(err, tmp, sizeof(tmp)));
        }
        return err;
    }
    if (res->http_status != 200 && res->http_status != 201) {
        answer_reason(body, res->reason, sizeof(res->reason));
        if (errbuf != NULL) {
            snprintf(errbuf, errlen, "HTTP %d: %s", res->http_status, res->reason);
        }
        return NWB_EHTTP;
    }
    res->stored = res->http_status == 201;
    if (json_string(body, "build_id", res->build_id, sizeof(res->build_id)) != 0 ||
        res->build_id[0] == '\0') {
        if (errbuf != NULL) {
            snprintf(errbuf, errlen, "HTTP %d without a build id: %.200s", res->http_status, body);
        }
        return NWB_EPROTO;
    }
    return 0;
}
