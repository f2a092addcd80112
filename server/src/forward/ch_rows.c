/* SPDX-License-Identifier: MIT */
/* ch_rows.c - TabSeparated nwb_logs rows (ch_rows.h). */
#include <inttypes.h>
#include <string.h>

#include "nwb/error.h"

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
                    const struct nwb__run_info *info, uint64_t updated_ns)
{
    const size_t start = b->len;
    int err = 0;

    err |= put_ident(b, run);
    err |= nwb_buf_appendf(b,
                           "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
                           "\t0\t0\t0\t%" PRIu64 "\t%" PRIu64 "\n",
                           info->started_ns / 1000000000u, info->last_activity_ns / 1000000000u,
                           info->records, info->drops, info->log_bytes, info->crashes, updated_ns);
    if (err != 0) {
        b->len = start;
        return NWB_ETOOBIG;
    }
    return 0;
}
