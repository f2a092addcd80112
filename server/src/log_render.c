/* SPDX-License-Identifier: MIT */
/*
 * log_render.c - turns a POST /v1/log body into records (binary batch or
 * text/plain lines) and formats them as log.txt lines into the log worker's
 * buffer, many lines per write, decoding the #tokens of each message with
 * the name table in the formatter's own escape scan
 * (nwb_log_line_format_names(): no decoded copy of the message, and a
 * message without a '#' costs what it would without names). Runs on the log
 * worker thread. The body is read in place: no per-line copies besides the
 * formatted output.
 */
#include <string.h>

#include "nwb/error.h"
#include "nwb/log.h"
#include "server_int.h"
#include "thread_names.h"

void nwb__rec_iter_batch(struct nwb__rec_iter *it, const void *body, size_t len)
{
    memset(it, 0, sizeof(*it));
    it->kind = NWB__JOB_BATCH;
    /* Validated on the loop thread; a failure here is reported by _next(). */
    (void)nwb_log_batch_reader_init(&it->reader, body, len);
}

void nwb__rec_iter_text(struct nwb__rec_iter *it, const void *body, size_t len, uint64_t time_ns)
{
    memset(it, 0, sizeof(*it));
    it->kind = NWB__JOB_TEXT;
    it->cur = body;
    it->end = it->cur + len;
    it->time_ns = time_ns;
}

/* The longest prefix of @p s not above @p max bytes that does not cut a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t len, size_t max)
{
    size_t n = max;

    if (len <= max) {
        return len;
    }
    /* Back up over at most 3 continuation bytes (10xxxxxx) to a sequence start. */
    for (int i = 0; i < 3 && n > 0 && ((unsigned char)s[n] & 0xC0u) == 0x80u; i++) {
        n--;
    }
    return n > 0 ? n : max;
}

static int text_next(struct nwb__rec_iter *it, nwb_log_record_t *rec)
{
    while (it->cur < it->end) {
        const char *start = it->cur;
        const size_t left = (size_t)(it->end - start);
        const char *nl = memchr(start, '\n', left);
        size_t line = nl != NULL ? (size_t)(nl - start) : left;
        size_t take;

        if (line > NWB_LOG_RECORD_MSG_MAX) {
            /* A long line becomes several records; the rest stays for the next call. */
            take = utf8_cut(start, line, NWB_LOG_RECORD_MSG_MAX);
            it->cur = start + take;
        } else {
            it->cur = nl != NULL ? nl + 1 : it->end;
            take = line;
            if (take > 0 && start[take - 1] == '\r') {
                take--;
            }
            if (take == 0) {
                continue; /* empty line */
            }
        }
        memset(rec, 0, sizeof(*rec));
        rec->time_ns = it->time_ns;
        rec->level = NWB_LOG_INFO;
        rec->msg = start;
        rec->msg_len = (uint32_t)take;
        rec->file = "";
        return 1;
    }
    return 0;
}

int nwb__rec_iter_next(struct nwb__rec_iter *it, nwb_log_record_t *rec)
{
    if (it->kind == NWB__JOB_TEXT) {
        return text_next(it, rec);
    }
    if (it->reader.why != NULL && it->reader.why[0] != '\0') {
        return NWB_EPROTO;
    }
    return nwb_log_batch_reader_next(&it->reader, rec);
}

void nwb__render_init(struct nwb__render *rd, const char *program, size_t program_len)
{
    const nwb_log_line_clock_t clock = NWB_LOG_LINE_CLOCK_INIT;

    memset(rd, 0, sizeof(*rd));
    rd->clock = clock;
    rd->program = program;
    rd->program_len = program_len;
}

void nwb__render_set_names(struct nwb__render *rd, const nwb_namesym_table_t *names)
{
    rd->names = names;
}

void nwb__render_set_thread_names(struct nwb__render *rd, struct nwb__thread_names *map)
{
    rd->thread_names = map;
}

/* Record @p rec's tagged name in the run's map, then give @p rec the name its tid has there. */
static void thread_name_apply(struct nwb__render *rd, nwb_log_record_t *rec)
{
    if (rd->thread_names == NULL) {
        rec->thread_name = NULL;
        rec->thread_name_len = 0;
        return;
    }
    if (rec->thread_name_len > 0) {
        (void)nwb__thread_names_set(rd->thread_names, rec->thread_id, rec->thread_name,
                                    rec->thread_name_len); /* full: counted, tid alone */
    }
    rec->thread_name =
        nwb__thread_names_get(rd->thread_names, rec->thread_id, &rec->thread_name_len);
}

int nwb__render_fill(struct nwb__render *rd, struct nwb__rec_iter *it, char *buf, size_t cap,
                     size_t *len, int *end)
{
    size_t used = 0;

    *end = 0;
    for (;;) {
        nwb_log_record_t rec;
        size_t n = 0;

        if (rd->has_held) {
            rec = rd->held;
            rd->has_held = 0;
        } else {
            int rc = nwb__rec_iter_next(it, &rec);

            if (rc < 0) {
                *len = used;
                return rc;
            }
            if (rc == 0) {
                *end = 1;
                break;
            }
            thread_name_apply(rd, &rec);
        }
        if (cap - used >= nwb_log_line_max(&rec, rd->program_len)) {
            /* With names, the #tokens are decoded in the formatter's own scan; 0 when the
             * names make the line too long for what is left of the buffer. */
            n = rd->names != NULL && rec.msg_len >= NWB_NAME_TOKEN_LEN
                    ? nwb_log_line_format_names(buf + used, cap - used, &rd->clock, &rec,
                                                rd->program, rd->program_len, rd->names,
                                                NWB__DECODE_MSG_MAX, &rd->decoded, &rd->unknown)
                    : nwb_log_line_format(buf + used, cap - used, &rd->clock, &rec, rd->program,
                                          rd->program_len);
        }
        if (n == 0) {
            if (used == 0) {
                /* cap is sized for the largest line; this cannot happen. */
                *len = 0;
                return NWB_ETOOBIG;
            }
            rd->held = rec; /* not counted yet: decoded when it is formatted */
            rd->has_held = 1;
            break;
        }
        used += n;
        rd->records++;
        if (rec.flags & NWB_LOG_RECORD_DROPNOTE) {
            rd->drops++;
        }
    }
    *len = used;
    return 0;
}
