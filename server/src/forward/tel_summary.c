/* SPDX-License-Identifier: MIT */
/*
 * tel_summary.c - the frame count, p50 and p99 of a run's telemetry.json (tel_summary.h): a
 * string- and depth-aware scan for the top-level "frames" object, then its three scalars.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"

#include "tel_summary.h"

/* Bytes of one number's text. */
#define NUMBER_MAX 40u

/* The index just past the string starting at json[i] (a '"'), or len when it is unterminated. */
static size_t skip_string(const char *json, size_t len, size_t i)
{
    for (i++; i < len; i++) {
        if (json[i] == '\\') {
            i++;
        } else if (json[i] == '"') {
            return i + 1;
        }
    }
    return len;
}

static size_t skip_space(const char *json, size_t len, size_t i)
{
    while (i < len && (json[i] == ' ' || json[i] == '\n' || json[i] == '\r' || json[i] == '\t')) {
        i++;
    }
    return i;
}

/* The number at json[i] into @p *v; 0, or -1 when there is none. */
static int number_at(const char *json, size_t len, size_t i, double *v)
{
    char text[NUMBER_MAX + 1];
    size_t n = 0;
    char *end;

    while (i + n < len && n < NUMBER_MAX && strchr("+-.0123456789eE", json[i + n]) != NULL &&
           json[i + n] != '\0') {
        n++;
    }
    if (n == 0 || n == NUMBER_MAX || i + n == len) {
        return -1; /* none, too long, or cut off by the read's bound: maybe more digits */
    }
    memcpy(text, json + i, n);
    text[n] = '\0';
    *v = strtod(text, &end);
    return end == text + n ? 0 : -1;
}

/* 1 when the string json[a..b) (quotes included) is @p key. */
static int is_key(const char *json, size_t a, size_t b, const char *key)
{
    const size_t n = strlen(key);

    return b - a == n + 2 && memcmp(json + a + 1, key, n) == 0;
}

int nwb__tel_summary_parse(const char *json, size_t len, struct nwb__ch_tel_summary *out,
                           const char **why)
{
    unsigned depth = 0, frames_depth = 0; /* frames_depth: depth inside "frames", 0 outside */
    int have_count = 0, have_p50 = 0, have_p99 = 0;
    size_t i = 0;

    memset(out, 0, sizeof(*out));
    *why = NULL;
    while (i < len) {
        const char c = json[i];

        if (c == '"') {
            const size_t end = skip_string(json, len, i);
            const size_t after = skip_space(json, len, end);

            if (after < len && json[after] == ':') {
                const size_t value = skip_space(json, len, after + 1);
                double v;

                if (frames_depth == 0 && depth == 1 && is_key(json, i, end, "frames") &&
                    value < len && json[value] == '{') {
                    frames_depth = depth + 1;
                } else if (frames_depth != 0 && depth == frames_depth &&
                           number_at(json, len, value, &v) == 0) {
                    if (is_key(json, i, end, "count") && v >= 0) {
                        out->frames = (uint64_t)v;
                        have_count = 1;
                    } else if (is_key(json, i, end, "p50Ms")) {
                        out->p50_ms = v;
                        have_p50 = 1;
                    } else if (is_key(json, i, end, "p99Ms")) {
                        out->p99_ms = v;
                        have_p99 = 1;
                    }
                }
                if (have_count && have_p50 && have_p99) {
                    return 0;
                }
                i = value;
                continue;
            }
            i = end;
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0) {
                break;
            }
            if (frames_depth != 0 && depth == frames_depth) {
                break; /* the end of "frames" without all three */
            }
            depth--;
        }
        i++;
    }
    *why = frames_depth == 0 ? "no top-level \"frames\" object"
           : !have_count     ? "\"frames\" has no \"count\""
           : !have_p50       ? "\"frames\" has no \"p50Ms\""
                             : "\"frames\" has no \"p99Ms\"";
    memset(out, 0, sizeof(*out));
    return NWB_EPROTO;
}

int nwb__tel_summary_read(int run_dir_fd, struct nwb__ch_tel_summary *out, const char **why)
{
    const int fd =
        openat(run_dir_fd, "telemetry.json", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    char *text;
    size_t got = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    *why = NULL;
    if (fd < 0) {
        return -errno;
    }
    text = nwb_malloc(NWB__FWD_TEL_JSON_READ_MAX);
    if (text == NULL) {
        close(fd);
        return -ENOMEM;
    }
    while (got < NWB__FWD_TEL_JSON_READ_MAX) {
        const ssize_t n = pread(fd, text + got, NWB__FWD_TEL_JSON_READ_MAX - got, (off_t)got);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
    }
    close(fd);
    rc = nwb__tel_summary_parse(text, got, out, why);
    nwb_free(text);
    return rc;
}
