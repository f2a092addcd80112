/* SPDX-License-Identifier: MIT */
/*
 * tel_dump.c - nwb-telemetry dump: one human-readable line per segment and per event, names
 * read from the stream's string tables (gathered in a first pass), then the sidecar.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nwb/error.h"
#include "nwb/log.h"
#include "nwb/telemetry_report.h"
#include "tel_int.h"

struct dump {
    FILE *out;
    struct nwb__tel_strings strings;
    struct nwb__tel_names names;
    nwb_buf_t tmp;
};

/* Write @p s as a JSON-escaped quoted string (names decoded for text). */
static void quoted(struct dump *d, const char *s, size_t len, int decode)
{
    nwb_json_t j;

    d->tmp.len = 0;
    nwb_json_init(&j, &d->tmp, NULL);
    if (decode) {
        nwb_buf_t scratch;

        nwb_buf_init(&scratch, 1u << 20);
        nwb__tel_json_text(&j, &d->names, s, len, &scratch);
        nwb_buf_cleanup(&scratch);
    } else {
        nwb_json_str(&j, s, len);
    }
    if (j.err == 0) {
        fwrite(d->tmp.data, 1, d->tmp.len, d->out);
    } else {
        fputs("\"?\"", d->out);
    }
}

static void name(struct dump *d, nwb_name_t n)
{
    char tok[NWB_NAME_TOKEN_SIZE];
    size_t len = 0;
    const char *s = nwb__tel_name_find(&d->names, n, &len);

    if (s == NULL) {
        nwb_name_token(n, tok);
        s = tok;
        len = NWB_NAME_TOKEN_LEN;
    }
    quoted(d, s, len, 0);
}

static int on_segment(void *ctx, const nwb_tel_header_t *h, size_t offset)
{
    struct dump *d = ctx;

    fprintf(d->out, "@%zu segment v%u seq=%" PRIu64 " program=", offset, (unsigned)h->version,
            h->seq);
    quoted(d, h->program, h->program_len, 0);
    fputs(" run=", d->out);
    quoted(d, h->run, h->run_len, 0);
    fputs(" build=", d->out);
    quoted(d, h->build_id, h->build_id_len, 0);
    fprintf(d->out, " dropped=%" PRIu64 "/%" PRIu64 "/%" PRIu64 "\n", h->dropped_events,
            h->dropped_scopes, h->dropped_uploads);
    return 0;
}

static int on_event(void *ctx, const nwb_tel_event_t *ev, size_t offset)
{
    struct dump *d = ctx;
    const char *kind = nwb_tel_kind_name(ev->kind);

    fprintf(d->out, "@%zu %s v%u size=%" PRIu32 " ts=%" PRIu64 " frame=%" PRIu64, offset,
            kind != NULL ? kind : "unknown", (unsigned)ev->version, ev->payload_size,
            ev->timestamp_ns, ev->frame);
    if (!ev->known) {
        fprintf(d->out, " kind=%u skipped\n", (unsigned)ev->kind);
        return 0;
    }
    switch (ev->kind) {
    case NWB_TEL_KIND_TEXT_LOG:
        fprintf(d->out, " %s thread=%" PRIu32 " ", nwb_log_level_name(ev->u.text.level),
                ev->u.text.thread);
        quoted(d, ev->u.text.msg, ev->u.text.len, 1);
        break;
    case NWB_TEL_KIND_DIAGNOSTIC: {
        nwb_tel_kv_t kv;
        size_t pos = 0;

        fputs(" code=", d->out);
        name(d, ev->u.diag.code);
        fprintf(d->out, " %s", nwb_tel_severity_name(ev->u.diag.severity));
        while (nwb_tel_diag_pair_next(&ev->u.diag, &pos, &kv)) {
            fputc(' ', d->out);
            quoted(d, kv.key, kv.key_len, 0);
            fputc('=', d->out);
            quoted(d, kv.value, kv.value_len, 0);
        }
        break;
    }
    case NWB_TEL_KIND_FRAME_GRAPH:
        fprintf(d->out, " queues=%" PRIu32 " packets=%" PRIu32 " passes=%" PRIu32 " edges=%" PRIu32,
                ev->u.fg.queue_count, ev->u.fg.packet_count, ev->u.fg.pass_count,
                ev->u.fg.edge_count);
        break;
    case NWB_TEL_KIND_PERF_FRAME:
        fprintf(d->out, " duration_ms=%.3f cpu=%" PRIu32 " gpu=%" PRIu32,
                (double)ev->u.perf.frame_duration_ns / 1e6, ev->u.perf.cpu_count,
                ev->u.perf.gpu_count);
        break;
    case NWB_TEL_KIND_MEMORY_FRAME:
        fprintf(d->out, " records=%" PRIu32 " arena_used=%" PRIu64 " heap_backing_used=%" PRIu64,
                ev->u.mem.count, ev->u.mem.arena_used_bytes, ev->u.mem.heap_used_bytes);
        break;
    case NWB_TEL_KIND_THREAD:
        fprintf(d->out, " thread=%" PRIu32 " name=", ev->u.thread.thread);
        if (ev->u.thread.name_len > 0) {
            quoted(d, ev->u.thread.name, ev->u.thread.name_len, 0);
        } else {
            fputs("null", d->out);
        }
        fprintf(d->out, " records=%" PRIu64 " dropped=%" PRIu64 " malformed=%" PRIu64,
                ev->u.thread.records, ev->u.thread.dropped, ev->u.thread.malformed);
        break;
    case NWB_TEL_KIND_STRING_TABLE: {
        nwb_tel_string_t e;
        size_t pos = 0;

        fprintf(d->out, " count=%" PRIu32, ev->u.strings.count);
        while (nwb_tel_string_next(&ev->u.strings, &pos, &e)) {
            fputc(' ', d->out);
            quoted(d, e.str, e.len, 0);
        }
        break;
    }
    case NWB_TEL_KIND_COUNTER_FRAME:
        fprintf(d->out, " count=%" PRIu32, ev->u.counters.count);
        for (uint32_t i = 0; i < ev->u.counters.count; i++) {
            nwb_tel_counter_t c;

            nwb_tel_counter_at(&ev->u.counters, i, &c);
            fputc(' ', d->out);
            name(d, c.name);
            fprintf(d->out, "=%.9g@%" PRIu32, c.value, c.thread);
        }
        break;
    case NWB_TEL_KIND_MARK:
        fprintf(d->out, " thread=%" PRIu32 " ", ev->u.mark.thread);
        quoted(d, ev->u.mark.text, ev->u.mark.len, 0);
        break;
    default:
        break;
    }
    fputc('\n', d->out);
    return 0;
}

/* First pass: the stream's strings. Out of memory, the rest of the names stay sidecar/tokens. */
static int gather_strings(void *ctx, const nwb_tel_event_t *ev, size_t offset)
{
    struct dump *d = ctx;

    (void)offset;
    if (ev->known && ev->kind == NWB_TEL_KIND_STRING_TABLE) {
        (void)nwb__tel_strings_add(&d->strings, &ev->u.strings);
    }
    return 0;
}

int nwb_tel_dump(const uint8_t *stream, size_t len, const nwb_namesym_table_t *names, FILE *out)
{
    const nwb_tel_visitor_t gather = {NULL, gather_strings};
    const nwb_tel_visitor_t v = {on_segment, on_event};
    nwb_tel_decode_result_t res;
    struct dump d;

    d.out = out;
    nwb__tel_strings_init(&d.strings);
    d.names.strings = &d.strings;
    d.names.sym = names;
    nwb_buf_init(&d.tmp, 1u << 20);
    /* The strings first, so a name reads the same wherever its table is in the stream. */
    nwb_tel_stream_decode(stream, len, 0, &gather, &d, &res);
    nwb_tel_stream_decode(stream, len, 0, &v, &d, &res);
    if (res.status == 0) {
        fprintf(out,
                "status=ok bytes=%zu segments=%" PRIu32 " events=%" PRIu64 " unknown=%" PRIu64 "\n",
                len, res.segments, res.events, res.unknown);
    } else {
        fprintf(out, "status=%s offset=%zu consumed=%zu events=%" PRIu64 " reason=%s\n",
                nwb_err_name(res.status), res.error_offset, res.consumed, res.events,
                res.reason != NULL ? res.reason : "");
    }
    nwb_buf_cleanup(&d.tmp);
    nwb__tel_strings_cleanup(&d.strings);
    return res.status;
}
