/* SPDX-License-Identifier: MIT */
/*
 * nwb_telemetry.c - the nwb-telemetry tool: report (the same telemetry.json the server
 * writes), dump (one line per event), chrome (Chrome trace JSON for Perfetto) and synth (a
 * deterministic synthetic stream) over .nwbs telemetry streams.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/common.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "nwb/namesym.h"
#include "nwb/telemetry_report.h"

#define TOOL_INPUT_MAX   ((size_t)1 << 30) /* largest stream the tool reads: 1 GiB */
#define TOOL_NAMESYM_MAX 16

static const char usage_text[] =
    "usage: nwb-telemetry <command> [options]\n"
    "\n"
    "commands:\n"
    "  report FILE.nwbs [-o OUT.json] [--namesym F]...   the run report (telemetry.json);\n"
    "                        reads telemetry.ingest.log beside FILE when present\n"
    "  dump FILE.nwbs [--namesym F]...                   one line per segment and event\n"
    "  chrome FILE.nwbs -o TRACE.json [--namesym F]...   Chrome trace events (Perfetto)\n"
    "  synth -o FILE.nwbs [--seed N] [--frames N] [--scopes N] [--gpu N] [--arenas N]\n"
    "        [--logs N] [--frames-per-upload N] [--frame-graph-every N]\n"
    "        [--diagnostics-every N] [--unknown-kinds] [--namesym-out F.namesym]\n"
    "                        a deterministic synthetic stream (same options, same bytes)\n"
    "\n"
    "exit status: 0 ok; 1 the stream failed to decode (report/dump/chrome still written,\n"
    "the failure is described in them); 2 usage or I/O error.\n";

struct opts {
    const char *cmd;
    const char *input;
    const char *output;
    const char *namesym[TOOL_NAMESYM_MAX];
    unsigned nnamesym;
    const char *namesym_out;
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
        } else if (strcmp(a, "--unknown-kinds") == 0) {
            o->synth.unknown_kinds = 1;
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

static int cmd_report(const struct opts *o, const uint8_t *data, size_t len,
                      const nwb_namesym_table_t *names)
{
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    nwb_tel_ingest_summary_t ingest;
    nwb_tel_decode_result_t res;
    nwb_buf_t json;
    char logpath[4096];
    const char *slash = strrchr(o->input, '/');
    FILE *f;
    int err;

    if (slash != NULL) {
        snprintf(logpath, sizeof(logpath), "%.*s/%s", (int)(slash - o->input), o->input,
                 NWB_TEL_INGEST_LOG_NAME);
    } else {
        snprintf(logpath, sizeof(logpath), "%s", NWB_TEL_INGEST_LOG_NAME);
    }
    err = nwb_tel_ingest_log_load(logpath, &ingest);
    if (err != 0) {
        char msg[128];

        fprintf(stderr, "nwb-telemetry: %s: cannot read (%s); reporting without it\n", logpath,
                nwb_strerror_r(err, msg, sizeof(msg)));
        memset(&ingest, 0, sizeof(ingest));
    }
    ro.names = names;
    ro.ingest = &ingest;
    nwb_buf_init(&json, NWB_TEL_REPORT_JSON_MAX);
    err = nwb_tel_report_build(data, len, &ro, &json, &res);
    if (err != 0) {
        char msg[128];

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

static int cmd_synth(const struct opts *o)
{
    nwb_namesym_builder_t names;
    nwb_buf_t out;
    char errbuf[256];
    FILE *f;
    int err;

    if (o->output == NULL) {
        fprintf(stderr, "nwb-telemetry: synth needs -o FILE.nwbs\n");
        return 2;
    }
    nwb_namesym_builder_init(&names);
    nwb_buf_init(&out, TOOL_INPUT_MAX);
    err = nwb_tel_synth(&o->synth, &out, o->namesym_out != NULL ? &names : NULL);
    if (err != 0) {
        fprintf(stderr, "nwb-telemetry: synth: %s\n", nwb_strerror_r(err, errbuf, sizeof(errbuf)));
        goto fail;
    }
    f = open_out(o->output);
    if (f == NULL) {
        goto fail;
    }
    if (fwrite(out.data, 1, out.len, f) != out.len) {
        fprintf(stderr, "nwb-telemetry: %s: write failed\n", o->output);
        close_out(f, o->output);
        goto fail;
    }
    if (close_out(f, o->output) != 0) {
        goto fail;
    }
    if (o->namesym_out != NULL && nwb_namesym_builder_write(&names, "synth-build-1", o->namesym_out,
                                                            errbuf, sizeof(errbuf)) != 0) {
        fprintf(stderr, "nwb-telemetry: %s: %s\n", o->namesym_out, errbuf);
        goto fail;
    }
    nwb_namesym_builder_cleanup(&names);
    nwb_buf_cleanup(&out);
    return 0;
fail:
    nwb_namesym_builder_cleanup(&names);
    nwb_buf_cleanup(&out);
    return 2;
}

int main(int argc, char **argv)
{
    nwb_namesym_table_t *names = NULL;
    struct opts o;
    uint8_t *data = NULL;
    size_t len = 0;
    int rc;
    int err;

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
    err = nwb_file_read(o.input, TOOL_INPUT_MAX, &data, &len);
    if (err != 0) {
        char msg[128];

        fprintf(stderr, "nwb-telemetry: %s: %s\n", o.input,
                err == NWB_ETOOBIG ? "larger than the 1 GiB the tool reads"
                                   : nwb_strerror_r(err, msg, sizeof(msg)));
        return 2;
    }
    if (load_names(&o, &names) != 0) {
        nwb_free(data);
        return 2;
    }
    if (strcmp(o.cmd, "report") == 0) {
        rc = cmd_report(&o, data, len, names);
    } else if (strcmp(o.cmd, "chrome") == 0) {
        rc = cmd_chrome(&o, data, len, names);
    } else {
        rc = nwb_tel_dump(data, len, names, stdout) == 0 ? 0 : 1;
        if (fflush(stdout) != 0) {
            rc = 2;
        }
    }
    nwb_namesym_table_destroy(names);
    nwb_free(data);
    return rc;
}
