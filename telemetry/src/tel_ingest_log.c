/* SPDX-License-Identifier: MIT */
/*
 * tel_ingest_log.c - telemetry.ingest.log: one line per upload outcome (accepted, duplicate,
 * unstored past the run's stream limit, rejected with the decoder's status and offset),
 * appended by the ingest and summarised into the report's "uploads" section. Reading is
 * streamed in bounded memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "nwb/error.h"
#include "nwb/file_io.h"
#include "nwb/log_line.h"
#include "nwb/telemetry_report.h"

#define LINE_MAX_BYTES 512

static int parse_line(const char *line, nwb_tel_ingest_summary_t *s);

int nwb_tel_ingest_log_append(const char *path, const char *outcome, uint64_t seq, int status,
                              uint64_t offset, uint64_t bytes, const char *reason)
{
    return nwb_tel_ingest_log_record(path, NULL, outcome, seq, status, offset, bytes, reason);
}

int nwb_tel_ingest_log_record(const char *path, nwb_tel_ingest_summary_t *s, const char *outcome,
                              uint64_t seq, int status, uint64_t offset, uint64_t bytes,
                              const char *reason)
{
    char line[LINE_MAX_BYTES];
    char clean[NWB_TEL_REASON_MAX];
    struct stat st;
    size_t n = 0;
    int len;
    int fd;
    int err;

    if (reason == NULL) {
        reason = "";
    }
    /* One line per outcome: control bytes in the reason would split it. */
    for (const char *p = reason; *p != '\0' && n + 1 < sizeof(clean); p++) {
        clean[n++] = ((unsigned char)*p < 0x20 || *p == 0x7f) ? ' ' : *p;
    }
    clean[n] = '\0';
    len = snprintf(line, sizeof(line),
                   "%s seq=%llu code=%d status=%s offset=%llu bytes=%llu time=%llu reason=%s\n",
                   outcome, (unsigned long long)seq, status,
                   status == 0 ? "ok" : nwb_err_name(status), (unsigned long long)offset,
                   (unsigned long long)bytes, (unsigned long long)nwb_time_now_ns(), clean);
    if (len < 0 || (size_t)len >= sizeof(line)) {
        return NWB_ETOOBIG;
    }
    /* As the reader: a FIFO or a symlink in its place must neither hang nor redirect the write. */
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0644);
    if (fd < 0) {
        return -errno;
    }
    if (fstat(fd, &st) != 0) {
        err = -errno;
    } else if (!S_ISREG(st.st_mode)) {
        err = NWB_ENOTREG;
    } else {
        err = nwb_write_all(fd, line, (size_t)len);
    }
    if (close(fd) != 0 && err == 0) {
        err = -errno;
    }
    if (err == 0 && s != NULL) {
        /* The very line written, counted as nwb_tel_ingest_log_load() would count it. */
        s->present = 1;
        if (!parse_line(line, s)) {
            s->bad_lines++;
        }
    }
    return err;
}

/* The value after "key=" in @p line, or NULL. */
static const char *field(const char *line, const char *key)
{
    const size_t klen = strlen(key);
    const char *p = line;

    while ((p = strstr(p, key)) != NULL) {
        if ((p == line || p[-1] == ' ') && p[klen] == '=') {
            return p + klen + 1;
        }
        p += klen;
    }
    return NULL;
}

static int u64_field(const char *line, const char *key, uint64_t *out)
{
    const char *v = field(line, key);
    char *end;

    if (v == NULL || *v < '0' || *v > '9') {
        return 0;
    }
    errno = 0;
    *out = strtoull(v, &end, 10);
    return errno == 0 && (*end == ' ' || *end == '\n' || *end == '\0');
}

static int parse_line(const char *line, nwb_tel_ingest_summary_t *s)
{
    nwb_tel_rejection_t r;
    const char *reason;
    const char *code;
    char *end;
    long code_l;

    if (strncmp(line, "accepted ", 9) == 0) {
        s->accepted++;
        return 1;
    }
    if (strncmp(line, "duplicate ", 10) == 0) {
        s->duplicates++;
        return 1;
    }
    if (strncmp(line, "unstored ", 9) == 0) {
        s->unstored++;
        return 1;
    }
    if (strncmp(line, "rejected ", 9) != 0) {
        return 0;
    }
    memset(&r, 0, sizeof(r));
    code = field(line, "code");
    if (!u64_field(line, "seq", &r.seq) || !u64_field(line, "offset", &r.offset) ||
        !u64_field(line, "bytes", &r.bytes) || !u64_field(line, "time", &r.time_ns) ||
        code == NULL) {
        return 0;
    }
    errno = 0;
    code_l = strtol(code, &end, 10);
    if (errno != 0 || *end != ' ' || code_l > 0 || code_l < -100000) {
        return 0;
    }
    r.status = (int)code_l;
    reason = field(line, "reason");
    if (reason != NULL) {
        size_t n = strcspn(reason, "\n");

        if (n >= sizeof(r.reason)) {
            n = sizeof(r.reason) - 1;
        }
        memcpy(r.reason, reason, n);
        r.reason[n] = '\0';
    }
    s->rejected++;
    if (s->recent_count == NWB_TEL_REPORT_REJECTIONS) {
        memmove(&s->recent[0], &s->recent[1], sizeof(s->recent[0]) * (s->recent_count - 1));
        s->recent_count--;
    }
    s->recent[s->recent_count++] = r;
    return 1;
}

int nwb_tel_ingest_log_load(const char *path, nwb_tel_ingest_summary_t *out)
{
    char line[LINE_MAX_BYTES];
    struct stat st;
    FILE *f;
    int skipping = 0;
    int err = 0;
    int fd;

    memset(out, 0, sizeof(*out));
    /* O_NONBLOCK and a regular file only: a FIFO in its place must not hang the reader. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return errno == ENOENT ? 0 : -errno;
    }
    if (fstat(fd, &st) != 0) {
        err = -errno;
    } else if (!S_ISREG(st.st_mode)) {
        err = NWB_ENOTREG;
    }
    if (err != 0) {
        close(fd);
        return err;
    }
    f = fdopen(fd, "r");
    if (f == NULL) {
        err = -errno;
        close(fd);
        return err;
    }
    out->present = 1;
    while (fgets(line, sizeof(line), f) != NULL) {
        const size_t n = strlen(line);
        const int complete = n > 0 && line[n - 1] == '\n';

        if (skipping) {
            /* The rest of an over-long line. */
            skipping = !complete;
            continue;
        }
        if (!complete && !feof(f)) {
            out->bad_lines++;
            skipping = 1;
            continue;
        }
        if (!parse_line(line, out)) {
            out->bad_lines++;
        }
    }
    if (ferror(f)) {
        err = -EIO;
    }
    fclose(f);
    return err;
}
