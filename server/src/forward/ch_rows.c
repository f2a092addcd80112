/* SPDX-License-Identifier: MIT */
/* ch_rows.c - TabSeparated rows of the forwarded tables (ch_rows.h). */
#include <inttypes.h>
#include <string.h>

#include "nwb/error.h"

#include "../crash_int.h"
#include "../read_int.h"
#include "ch_rows.h"

static const char *const level_name[] = {"INFO", "WARNING", "ERROR", "FATAL"};

int nwb__ch_tsv_str(nwb_buf_t *b, const char *s, size_t len)
{
    const size_t start = b->len;
    size_t plain = 0;

    for (size_t i = 0; i < len; i++) {
        const char c = s[i];
        char esc = 0;

        switch (c) {
        case '\\':
            esc = '\\';
            break;
        case '\t':
            esc = 't';
            break;
        case '\n':
            esc = 'n';
            break;
        case '\r':
            esc = 'r';
            break;
        case '\0':
            esc = '0';
            break;
        case '\b':
            esc = 'b';
            break;
        case '\f':
            esc = 'f';
            break;
        case '\'':
            esc = '\'';
            break;
        default:
            continue;
        }
        const char pair[2] = {'\\', esc};

        if (nwb_buf_append(b, s + plain, i - plain) != 0 || nwb_buf_append(b, pair, 2) != 0) {
            b->len = start;
            return NWB_ETOOBIG;
        }
        plain = i + 1;
    }
    if (nwb_buf_append(b, s + plain, len - plain) != 0) {
        b->len = start;
        return NWB_ETOOBIG;
    }
    return 0;
}

/* "program\trun\thost\trun_dir", the first four columns of every table's rows. */
static int put_ident(nwb_buf_t *b, const struct nwb__ch_run_ident *run)
{
    int err = 0;

    err |= nwb__ch_tsv_str(b, run->program, strlen(run->program));
    err |= nwb_buf_append(b, "\t", 1);
    err |= nwb__ch_tsv_str(b, run->run, strlen(run->run));
    err |= nwb_buf_append(b, "\t", 1);
    err |= nwb__ch_tsv_str(b, run->host, strlen(run->host));
    err |= nwb_buf_append(b, "\t", 1);
    err |= nwb__ch_tsv_str(b, run->run_dir, strlen(run->run_dir));
    return err;
}

int nwb__ch_log_row(nwb_buf_t *b, const struct nwb__ch_run_ident *run, uint64_t offset,
                    const struct nwb__fwd_line *l)
{
    const size_t start = b->len;
    const char *const level = l->level < 4 ? level_name[l->level] : "INFO";
    int err = 0;

    err |= put_ident(b, run);
    /* time as Unix seconds: read as UTC whatever the server's own time zone. */
    err |= nwb_buf_appendf(b, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu32 "\t%s\t%" PRIu64 "\t", offset,
                           l->time_s, l->time_ns, level, l->thread_id);
    err |= nwb__ch_tsv_str(b, l->thread_name, l->thread_name_len);
    err |= nwb_buf_append(b, "\t", 1);
    err |= nwb__ch_tsv_str(b, l->file, l->file_len);
    err |= nwb_buf_appendf(b, "\t%" PRIu32 "\t", l->line);
    err |= nwb__ch_tsv_str(b, l->msg, l->msg_len);
    err |= nwb_buf_append(b, "\n", 1);
    if (err != 0) {
        b->len = start;
        return NWB_ETOOBIG;
    }
    return 0;
}

int nwb__ch_run_row(nwb_buf_t *b, const struct nwb__ch_run_ident *run,
                    const struct nwb__run_info *info, const struct nwb__ch_tel_summary *tel,
                    uint64_t updated_ns)
{
    const size_t start = b->len;
    int err = 0;

    err |= put_ident(b, run);
    err |= nwb_buf_appendf(b,
                           "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
                           "\t%" PRIu64 "\t%.6f\t%.6f\t%" PRIu64 "\t%" PRIu64 "\n",
                           info->started_ns / 1000000000u, info->last_activity_ns / 1000000000u,
                           info->records, info->drops, info->log_bytes, tel->frames, tel->p50_ms,
                           tel->p99_ms, info->crashes, updated_ns);
    if (err != 0) {
        b->len = start;
        return NWB_ETOOBIG;
    }
    return 0;
}

/* @p s TabSeparated-escaped and a tab after it. */
static int put_field(nwb_buf_t *b, const char *s, size_t len)
{
    return nwb__ch_tsv_str(b, s, len) | nwb_buf_append(b, "\t", 1);
}

int nwb__ch_crash_row(nwb_buf_t *b, const char *host, const struct nwb__crash_row *c,
                      uint64_t updated_ns)
{
    const size_t start = b->len;
    int err = 0;

    err |= put_field(b, c->id, strlen(c->id));
    err |= nwb_buf_appendf(b, "%" PRIu64 "\t", c->received_ns / 1000000000u);
    err |= put_field(b, c->program, strlen(c->program));
    err |= put_field(b, c->run, strlen(c->run));
    err |= put_field(b, host, strlen(host));
    err |= put_field(b, c->signal, strlen(c->signal));
    err |= put_field(b, c->signature, c->sig_len);
    err |= put_field(b, c->group, strlen(c->group));
    err |= put_field(b, c->status, strlen(c->status));
    err |= nwb_buf_appendf(b, "%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n", c->archive_bytes,
                           c->package_bytes, updated_ns);
    if (err != 0) {
        b->len = start;
        return NWB_ETOOBIG;
    }
    return 0;
}

int nwb__ch_frame_row(nwb_buf_t *b, const struct nwb__ch_run_ident *run, uint64_t started_s,
                      uint64_t frame, uint64_t duration_ns)
{
    const size_t start = b->len;
    int err = 0;

    err |= put_field(b, run->program, strlen(run->program));
    err |= put_field(b, run->run, strlen(run->run));
    err |= put_field(b, run->host, strlen(run->host));
    err |= nwb_buf_appendf(b, "%" PRIu64 "\t%" PRIu64 "\t%.6f\n", started_s, frame,
                           (double)duration_ns / 1e6);
    if (err != 0) {
        b->len = start;
        return NWB_ETOOBIG;
    }
    return 0;
}
