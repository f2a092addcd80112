/* SPDX-License-Identifier: MIT */
/*
 * nwb_telemetry.c - the nwb-telemetry tool: report (the same telemetry.json the server
 * writes, streamed through the incremental report state), dump (one line per event), chrome
 * (Chrome trace JSON for Perfetto) and synth (a deterministic synthetic stream, any length, in
 * bounded memory) over telemetry streams, raw (.nwbs) or zstd frames (.nwbs.zst), told apart
 * by their magic.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <zstd.h>

#include "nwb/alloc.h"
#include "nwb/common.h"
#include "nwb/error.h"
#include "nwb/namesym.h"
#include "nwb/telemetry_report.h"

#define TOOL_INPUT_MAX   ((size_t)1 << 30) /* largest stream dump and chrome read: 1 GiB */
#define TOOL_ZSTD_LEVEL  3                 /* synth .zst frames, as the uploader writes them */
#define TOOL_NAMESYM_MAX 16

static const char usage_text[] =
    "usage: nwb-telemetry <command> [options]\n"
    "\n"
    "commands:\n"
    "  report FILE [-o OUT.json] [--namesym F]... [--stats]\n"
    "                        the run report (telemetry.json), in bounded memory; reads\n"
    "                        telemetry.ingest.log beside FILE when present; --stats prints\n"
    "                        the pieces read, the report state's memory, time and peak RSS\n"
    "  dump FILE [--namesym F]...                   one line per segment and event\n"
    "  chrome FILE -o TRACE.json [--namesym F]...   Chrome trace events (Perfetto)\n"
    "  synth -o FILE [--zstd] [--seed N] [--frames N] [--scopes N] [--gpu N] [--arenas N]\n"
    "        [--logs N] [--frames-per-upload N] [--frame-graph-every N]\n"
    "        [--diagnostics-every N] [--unknown-kinds] [--no-profiler]\n"
    "        [--namesym-out F.namesym]\n"
    "                        a deterministic synthetic stream (same options, same bytes),\n"
    "                        with every event kind (--no-profiler: without the format 1.1\n"
    "                        thread, stringTable, counterFrame and mark events),\n"
    "                        written one upload at a time; --zstd or a FILE ending in .zst\n"
    "                        writes one zstd frame per upload (telemetry.nwbs.zst)\n"
    "\n"
    "FILE is a raw stream (telemetry.nwbs) or its uploads' zstd frames concatenated\n"
    "(telemetry.nwbs.zst), told apart by the magic.\n"
    "exit status: 0 ok; 1 the stream failed to decode or a zstd frame could not be read\n"
    "(report/dump/chrome still written, the failure is described in them); 2 usage or I/O\n"
    "error.\n";

struct opts {
    const char *cmd;
    const char *input;
    const char *output;
    const char *namesym[TOOL_NAMESYM_MAX];
    unsigned nnamesym;
    const char *namesym_out;
    int zstd;
    int stats;
    nwb_tel_synth_config_t synth;
};

static int parse_u32(const char *s, uint32_t *out)
{
    char *end;
    unsigned long v;

    if (s == NULL || *s < '0' || *s > '9') {
        return -1;
    }
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > UINT32_MAX) {
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    static const nwb_tel_synth_config_t synth_init = NWB_TEL_SYNTH_CONFIG_INIT;

    memset(o, 0, sizeof(*o));
    o->synth = synth_init;
    if (argc < 2) {
        return -1;
    }
    o->cmd = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint32_t *u32 = NULL;

        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (v == NULL) {
                return -1;
            }
            o->output = v;
            i++;
        } else if (strcmp(a, "--namesym") == 0) {
            if (v == NULL || o->nnamesym == TOOL_NAMESYM_MAX) {
                return -1;
            }
            o->namesym[o->nnamesym++] = v;
            i++;
        } else if (strcmp(a, "--namesym-out") == 0) {
            if (v == NULL) {
                return -1;
            }
            o->namesym_out = v;
            i++;
        } else if (strcmp(a, "--zstd") == 0) {
            o->zstd = 1;
        } else if (strcmp(a, "--stats") == 0) {
            o->stats = 1;
        } else if (strcmp(a, "--unknown-kinds") == 0) {
            o->synth.unknown_kinds = 1;
        } else if (strcmp(a, "--no-profiler") == 0) {
            o->synth.profiler = 0;
        } else if (strcmp(a, "--seed") == 0) {
            uint32_t seed;

            if (parse_u32(v, &seed) != 0) {
                return -1;
            }
            o->synth.seed = seed;
            i++;
        } else if (strcmp(a, "--frames") == 0) {
            u32 = &o->synth.frames;
        } else if (strcmp(a, "--scopes") == 0) {
            u32 = &o->synth.scopes_per_frame;
        } else if (strcmp(a, "--gpu") == 0) {
            u32 = &o->synth.gpu_scopes;
        } else if (strcmp(a, "--arenas") == 0) {
            u32 = &o->synth.arenas;
        } else if (strcmp(a, "--logs") == 0) {
            u32 = &o->synth.logs_per_frame;
        } else if (strcmp(a, "--frames-per-upload") == 0) {
            u32 = &o->synth.frames_per_upload;
        } else if (strcmp(a, "--frame-graph-every") == 0) {
            u32 = &o->synth.frame_graph_every;
        } else if (strcmp(a, "--diagnostics-every") == 0) {
            u32 = &o->synth.diagnostics_every;
        } else if (a[0] == '-') {
            fprintf(stderr, "nwb-telemetry: unknown option %s\n", a);
            return -1;
        } else if (o->input == NULL) {
            o->input = a;
        } else {
            fprintf(stderr, "nwb-telemetry: unexpected argument %s\n", a);
            return -1;
        }
        if (u32 != NULL) {
            if (parse_u32(v, u32) != 0) {
                fprintf(stderr, "nwb-telemetry: %s needs a number\n", a);
                return -1;
            }
            i++;
        }
    }
    return 0;
}

static int load_names(const struct opts *o, nwb_namesym_table_t **out)
{
    char err[256];

    *out = NULL;
    if (o->nnamesym == 0) {
        return 0;
    }
    if (nwb_namesym_table_create(out) != 0) {
        return -ENOMEM;
    }
    for (unsigned i = 0; i < o->nnamesym; i++) {
        const long n =
            nwb_namesym_table_add_file(*out, o->namesym[i], NULL, NULL, err, sizeof(err));

        if (n < 0) {
            fprintf(stderr, "nwb-telemetry: %s: %s\n", o->namesym[i], err);
            nwb_namesym_table_destroy(*out);
            *out = NULL;
            return (int)n;
        }
    }
    return 0;
}

static FILE *open_out(const char *path)
{
    FILE *f;

    if (path == NULL || strcmp(path, "-") == 0) {
        return stdout;
    }
    f = fopen(path, "we");
    if (f == NULL) {
        fprintf(stderr, "nwb-telemetry: %s: %s\n", path, strerror(errno));
    }
    return f;
}

static int close_out(FILE *f, const char *path)
{
    if (f == stdout) {
        return fflush(f) == 0 ? 0 : -EIO;
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "nwb-telemetry: %s: %s\n", path, strerror(errno));
        return -EIO;
    }
    return 0;
}

/* Say why @p path could not be opened as a stream. */
static void open_error(const char *path, int err)
{
    char msg[128];

    fprintf(stderr, "nwb-telemetry: %s: %s\n", path, nwb_strerror_r(err, msg, sizeof(msg)));
}

/* Say why a piece of @p r could not be read: what came before it is still reported. */
static void piece_error(const char *path, const nwb_tel_file_reader_t *r, int err)
{
    fprintf(stderr,
            "nwb-telemetry: %s: %s at byte %llu (%s); the output covers what came "
            "before it\n",
            path, nwb_err_name(err), (unsigned long long)nwb_tel_file_reader_offset(r),
            nwb_tel_file_reader_reason(r) != NULL ? nwb_tel_file_reader_reason(r) : "");
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* report --stats: what reading the stream cost (stderr, one line). */
static void print_stats(const nwb_tel_file_reader_t *r, const nwb_tel_report_state_t *s,
                        double seconds)
{
    nwb_tel_decode_result_t res;
    struct rusage ru;
    uint64_t first = 0;
    uint64_t last = 0;

    nwb_tel_report_state_decode_result(s, &res);
    (void)nwb_tel_report_state_frame_range(s, &first, &last);
    getrusage(RUSAGE_SELF, &ru);
    fprintf(
        stderr,
        "nwb-telemetry: stats: %llu pieces (%s), %llu segments, %llu events, frames %llu..%llu, "
        "state %zu bytes, %.3f s, peak RSS %ld KiB\n",
        (unsigned long long)nwb_tel_file_reader_pieces(r),
        nwb_tel_file_reader_format(r) == NWB_TEL_FILE_ZSTD ? "zstd frames" : "raw segments",
        (unsigned long long)res.segments, (unsigned long long)res.events, (unsigned long long)first,
        (unsigned long long)last, nwb_tel_report_state_memory_bytes(s), seconds, ru.ru_maxrss);
}

static int cmd_report(const struct opts *o, const nwb_namesym_table_t *names)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    nwb_tel_ingest_summary_t ingest;
    nwb_tel_decode_result_t res;
    nwb_tel_report_state_t *state = NULL;
    nwb_tel_file_reader_t *reader = NULL;
    nwb_buf_t json;
    char logpath[4096];
    char msg[128];
    const char *slash = strrchr(o->input, '/');
    FILE *f;
    double t0;
    int read_err;
    int err;

    err = nwb_tel_file_reader_open(o->input, &reader);
    if (err != 0) {
        open_error(o->input, err);
        return 2;
    }
    if (slash != NULL) {
        snprintf(logpath, sizeof(logpath), "%.*s/%s", (int)(slash - o->input), o->input,
                 NWB_TEL_INGEST_LOG_NAME);
    } else {
        snprintf(logpath, sizeof(logpath), "%s", NWB_TEL_INGEST_LOG_NAME);
    }
    err = nwb_tel_ingest_log_load(logpath, &ingest);
    if (err != 0) {
        fprintf(stderr, "nwb-telemetry: %s: cannot read (%s); reporting without it\n", logpath,
                nwb_strerror_r(err, msg, sizeof(msg)));
        memset(&ingest, 0, sizeof(ingest));
    }
    ro.names = names;
    ro.ingest = &ingest;
    nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
    err = nwb_tel_report_state_create(&state);
    t0 = now_s();
    read_err = err == 0 ? nwb_tel_report_state_feed_reader(state, reader) : 0;
    if (read_err != 0 && read_err != -ENOMEM) {
        piece_error(o->input, reader, read_err);
    }
    if (o->stats && err == 0) {
        print_stats(reader, state, now_s() - t0);
    }
    nwb_tel_file_reader_destroy(reader);
    if (err == 0) {
        err = nwb_tel_report_state_write(state, &ro, &json);
        nwb_tel_report_state_decode_result(state, &res);
    }
    nwb_tel_report_state_destroy(state);
    if (err != 0) {
        fprintf(stderr, "nwb-telemetry: report: %s\n", nwb_strerror_r(err, msg, sizeof(msg)));
        nwb_buf_cleanup(&json);
        return 2;
    }
    f = open_out(o->output);
    if (f == NULL) {
        nwb_buf_cleanup(&json);
        return 2;
    }
    if (fwrite(json.data, 1, json.len, f) != json.len) {
        err = -EIO;
    }
    nwb_buf_cleanup(&json);
    if (close_out(f, o->output) != 0 || err != 0) {
        return 2;
    }
    return res.status == 0 ? 0 : 1;
}

/*
 * The whole stream of @p path (raw or .zst) in @p out (at most TOOL_INPUT_MAX bytes), for the
 * commands that need it at once. Returns 0, 1 (a piece could not be read: @p out holds what
 * came before it, the error is said) or 2 (nothing usable).
 */
static int read_stream(const char *path, nwb_buf_t *out)
{
    nwb_tel_file_reader_t *r = NULL;
    const uint8_t *data;
    size_t len;
    int rc = nwb_tel_file_reader_open(path, &r);

    nwb_buf_init(out, TOOL_INPUT_MAX);
    if (rc != 0) {
        open_error(path, rc);
        return 2;
    }
    for (;;) {
        rc = nwb_tel_file_reader_next(r, &data, &len);
        if (rc != 1) {
            break;
        }
        rc = nwb_buf_append(out, data, len);
        if (rc != 0) {
            fprintf(stderr, "nwb-telemetry: %s: larger than the 1 GiB this command reads\n", path);
            nwb_tel_file_reader_destroy(r);
            return 2;
        }
    }
    if (rc != 0) {
        piece_error(path, r, rc);
    }
    nwb_tel_file_reader_destroy(r);
    return rc == 0 ? 0 : 1;
}

static int cmd_chrome(const struct opts *o, const uint8_t *data, size_t len,
                      const nwb_namesym_table_t *names)
{
    nwb_tel_decode_result_t res;
    FILE *f;
    int err;

    if (o->output == NULL) {
        fprintf(stderr, "nwb-telemetry: chrome needs -o TRACE.json\n");
        return 2;
    }
    f = open_out(o->output);
    if (f == NULL) {
        return 2;
    }
    err = nwb_tel_chrome_write(data, len, names, f, &res);
    if (close_out(f, o->output) != 0 || err != 0) {
        return 2;
    }
    if (res.status != 0) {
        fprintf(stderr, "nwb-telemetry: stream stops at offset %zu: %s (%s)\n", res.error_offset,
                nwb_err_name(res.status), res.reason != NULL ? res.reason : "");
        return 1;
    }
    return 0;
}

struct synth_out {
    FILE *f;
    ZSTD_CCtx *cctx; /* NULL: raw */
    uint8_t *zbuf;
    size_t zcap;
};

/* One upload to the file: as it is, or as one independent zstd frame (what the server stores
 * in telemetry.nwbs.zst). */
static int synth_segment(void *ctx, const uint8_t *data, size_t len)
{
    struct synth_out *so = ctx;
    const uint8_t *out = data;
    size_t n = len;

    if (so->cctx != NULL) {
        const size_t bound = ZSTD_compressBound(len);

        if (bound > so->zcap) {
            uint8_t *p = nwb_realloc(so->zbuf, bound);

            if (p == NULL) {
                return -ENOMEM;
            }
            so->zbuf = p;
            so->zcap = bound;
        }
        n = ZSTD_compress2(so->cctx, so->zbuf, so->zcap, data, len);
        if (ZSTD_isError(n)) {
            return NWB_ECOMPRESS;
        }
        out = so->zbuf;
    }
    return fwrite(out, 1, n, so->f) == n ? 0 : -EIO;
}

static int ends_with(const char *s, const char *suffix)
{
    const size_t n = strlen(s);
    const size_t k = strlen(suffix);

    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int cmd_synth(const struct opts *o)
{
    struct synth_out so = {NULL, NULL, NULL, 0};
    nwb_namesym_builder_t names;
    char errbuf[256];
    int rc = 2;
    int err;

    if (o->output == NULL) {
        fprintf(stderr, "nwb-telemetry: synth needs -o FILE.nwbs\n");
        return 2;
    }
    nwb_namesym_builder_init(&names);
    if (o->zstd || ends_with(o->output, ".zst")) {
        so.cctx = ZSTD_createCCtx();
        if (so.cctx == NULL ||
            ZSTD_isError(
                ZSTD_CCtx_setParameter(so.cctx, ZSTD_c_compressionLevel, TOOL_ZSTD_LEVEL)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(so.cctx, ZSTD_c_checksumFlag, 1))) {
            fprintf(stderr, "nwb-telemetry: synth: zstd setup failed\n");
            goto out;
        }
    }
    so.f = open_out(o->output);
    if (so.f == NULL) {
        goto out;
    }
    err = nwb_tel_synth_run(&o->synth, synth_segment, &so, o->namesym_out != NULL ? &names : NULL);
    if (close_out(so.f, o->output) != 0) {
        goto out;
    }
    if (err != 0) {
        fprintf(stderr, "nwb-telemetry: synth: %s\n", nwb_strerror_r(err, errbuf, sizeof(errbuf)));
        goto out;
    }
    if (o->namesym_out != NULL && nwb_namesym_builder_write(&names, "synth-build-1", o->namesym_out,
                                                            errbuf, sizeof(errbuf)) != 0) {
        fprintf(stderr, "nwb-telemetry: %s: %s\n", o->namesym_out, errbuf);
        goto out;
    }
    rc = 0;
out:
    ZSTD_freeCCtx(so.cctx);
    nwb_free(so.zbuf);
    nwb_namesym_builder_cleanup(&names);
    return rc;
}

int main(int argc, char **argv)
{
    nwb_namesym_table_t *names = NULL;
    struct opts o;
    nwb_buf_t stream;
    int read_rc;
    int rc;

    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
        printf("nwb-telemetry %s (stream format %u)\n", NWB_VERSION_STRING, NWB_TEL_VERSION);
        return 0;
    }
    if (parse_args(argc, argv, &o) != 0) {
        fputs(usage_text, stderr);
        return 2;
    }
    if (strcmp(o.cmd, "synth") == 0) {
        return cmd_synth(&o);
    }
    if (strcmp(o.cmd, "report") != 0 && strcmp(o.cmd, "dump") != 0 &&
        strcmp(o.cmd, "chrome") != 0) {
        fprintf(stderr, "nwb-telemetry: unknown command %s\n", o.cmd);
        fputs(usage_text, stderr);
        return 2;
    }
    if (o.input == NULL) {
        fprintf(stderr, "nwb-telemetry: %s needs FILE.nwbs\n", o.cmd);
        return 2;
    }
    if (load_names(&o, &names) != 0) {
        return 2;
    }
    if (strcmp(o.cmd, "report") == 0) {
        rc = cmd_report(&o, names);
        nwb_namesym_table_destroy(names);
        return rc;
    }
    read_rc = read_stream(o.input, &stream);
    if (read_rc == 2) {
        rc = 2;
    } else if (strcmp(o.cmd, "chrome") == 0) {
        rc = cmd_chrome(&o, stream.data, stream.len, names);
    } else {
        rc = nwb_tel_dump(stream.data, stream.len, names, stdout) == 0 ? 0 : 1;
        if (fflush(stdout) != 0) {
            rc = 2;
        }
    }
    /* A piece that could not be read makes a complete output a partial one. */
    if (rc == 0 && read_rc == 1) {
        rc = 1;
    }
    nwb_namesym_table_destroy(names);
    nwb_buf_cleanup(&stream);
    return rc;
}
