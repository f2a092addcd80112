/* SPDX-License-Identifier: MIT */
/*
 * options.c - the nwb-logserver command line: one table row per option with
 * its range, so --help, parsing and docs/operations.md list the same things.
 * A non-loopback --bind needs --token-file (docs/operations.md, "Access control").
 */
#include <stdio.h>
#include <string.h>

#include "nwb/error.h"
#include "server_int.h"

enum { OPT_STR, OPT_INT, OPT_UINT, OPT_SIZE, OPT_BIND, OPT_NAMESYM, OPT_TOKEN };

struct opt {
    const char *name;
    int kind;
    size_t offset; /* into nwb_server_config_t */
    unsigned long long min, max;
};

#define CFG(field) offsetof(nwb_server_config_t, field)

static const struct opt opts[] = {
    {"--bind", OPT_BIND, CFG(bind_addr), 0, 0},
    {"--port", OPT_INT, CFG(port), 0, 65535},
    {"--out", OPT_STR, CFG(out_dir), 0, 0},
    {"--token-file", OPT_TOKEN, 0, 0, 0},
    {"--namesym-dir", OPT_NAMESYM, 0, 0, 0},
    {"--crash-retain-packages", OPT_UINT, CFG(crash_retain_packages), 0, 1000000},
    {"--crash-retain-raw", OPT_UINT, CFG(crash_retain_raw), 0, 1000000},
    {"--crash-retain-invalid", OPT_UINT, CFG(crash_retain_invalid), 0, 1000000},
    {"--crash-max-archive-bytes", OPT_SIZE, CFG(crash_max_archive_bytes), 1, 1073741824},
    {"--crash-max-entries", OPT_UINT, CFG(crash_max_entries), 1, 1000000},
    {"--crash-max-path-bytes", OPT_UINT, CFG(crash_max_path_bytes), 1, 4096},
    {"--crash-max-path-depth", OPT_UINT, CFG(crash_max_path_depth), 1, 64},
    {"--crash-max-entry-bytes", OPT_SIZE, CFG(crash_max_entry_bytes), 1, 1ull << 40},
    {"--crash-max-total-bytes", OPT_SIZE, CFG(crash_max_total_bytes), 1, 1ull << 40},
    {"--crash-max-ratio", OPT_UINT, CFG(crash_max_ratio), 1, 1000000},
    {"--crash-max-queue", OPT_UINT, CFG(crash_max_queue), 1, 65536},
    {"--max-header-bytes", OPT_SIZE, CFG(max_header_bytes), 256, 1048576},
    {"--max-headers", OPT_UINT, CFG(max_headers), 1, 1024},
    {"--max-body-bytes", OPT_SIZE, CFG(max_body_bytes), 1, 1073741824},
    {"--request-timeout-ms", OPT_UINT, CFG(request_timeout_ms), 1, 86400000},
    {"--idle-timeout-ms", OPT_UINT, CFG(idle_timeout_ms), 1, 86400000},
    {"--max-connections", OPT_UINT, CFG(max_connections), 1, 65536},
    {"--queue-max-jobs", OPT_UINT, CFG(queue_max_jobs), 1, 65536},
    {"--max-buffered-bytes", OPT_SIZE, CFG(max_buffered_bytes), 1, 1ull << 40},
    {"--max-open-runs", OPT_UINT, CFG(max_open_runs), 1, 65536},
};

const char *nwb_server_usage(void)
{
    return "usage: nwb-logserver [options]\n"
           "\n"
           "Receives log batches (POST /v1/log), telemetry (POST /v1/telemetry) and crash\n"
           "archives (POST /v1/crash) over HTTP; writes one log per run under\n"
           "OUT/runs/<program>_<YYYYmmdd-HHMMSS>_<run>/log.txt, #tokens decoded with the\n"
           ".namesym sidecars (SIGHUP reloads them). docs/operations.md has details.\n"
           "\n"
           "  --bind ADDR                  listen address, IPv4 or IPv6 literal (127.0.0.1);\n"
           "                               one outside 127.0.0.0/8 and ::1 needs --token-file\n"
           "  --port N                     listen port; 0 picks a free one (7650)\n"
           "  --out DIR                    output root (./nwb-logs)\n"
           "  --token-file FILE            every request needs Authorization: Bearer <token>,\n"
           "                               the token being FILE's content (16..255 visible\n"
           "                               ASCII bytes, one trailing newline ignored; FILE\n"
           "                               not accessible by group or others); else 401\n"
           "  --namesym-dir DIR            load .namesym sidecars from DIR; repeatable, at most\n"
           "                               16; replaces the default (the executable's folder)\n"
           "  --crash-retain-packages N    extracted crash packages kept; 0 = all (256)\n"
           "  --crash-retain-raw N         raw crash archives kept; 0 = all (256)\n"
           "  --crash-retain-invalid N     invalid crash archives kept; 0 = all (64)\n"
           "  --crash-max-archive-bytes N  POST /v1/crash body, bytes; beyond: 413 (67108864)\n"
           "  --crash-max-entries N        entries in one archive (4096)\n"
           "  --crash-max-path-bytes N     bytes of one entry's path (256)\n"
           "  --crash-max-path-depth N     folders in one entry's path, 1..64 (8)\n"
           "  --crash-max-entry-bytes N    bytes extracted for one file (67108864)\n"
           "  --crash-max-total-bytes N    bytes extracted for one package (268435456)\n"
           "  --crash-max-ratio N          extracted / archive bytes (200)\n"
           "  --crash-max-queue N          archives stored, not yet extracted; beyond: 503\n"
           "                               (256)\n"
           "  --max-header-bytes N         request line + headers, bytes; beyond: 431 (16384)\n"
           "  --max-headers N              header fields per request; beyond: 431 (64)\n"
           "  --max-body-bytes N           request body, bytes; beyond: 413 (16777216)\n"
           "  --request-timeout-ms N       a request's first byte to its last; beyond: 408 "
           "(10000)\n"
           "  --idle-timeout-ms N          keep-alive connection without a request is closed\n"
           "                               (60000)\n"
           "  --max-connections N          open connections; beyond: 503 and close (4096)\n"
           "  --queue-max-jobs N           log jobs queued or being written; beyond: reading\n"
           "                               pauses (1024)\n"
           "  --max-buffered-bytes N       request bodies held in memory, bytes; beyond:\n"
           "                               requests wait (268435456)\n"
           "  --max-open-runs N            run logs kept open (256)\n"
           "  --help                       this text\n"
           "  --version                    print the version\n";
}

static int parse_number(const char *s, unsigned long long *out)
{
    unsigned long long v = 0;

    if (*s == '\0') {
        return -1;
    }
    for (; *s != '\0'; s++) {
        const unsigned d = (unsigned)(*s - '0');

        if (d > 9 || v > (~0ull - d) / 10) {
            return -1;
        }
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int is_ip_literal(const char *s)
{
    unsigned char buf[16];

    return uv_inet_pton(AF_INET, s, buf) == 0 || uv_inet_pton(AF_INET6, s, buf) == 0;
}

static int apply(nwb_server_config_t *cfg, const struct opt *o, const char *value, char *errbuf,
                 size_t errlen)
{
    char *base = (char *)cfg;
    unsigned long long v;

    switch (o->kind) {
    case OPT_STR:
        if (value[0] == '\0') {
            snprintf(errbuf, errlen, "%s: the value is empty", o->name);
            return NWB_ECONFIG;
        }
        memcpy(base + o->offset, &value, sizeof(value));
        return 0;
    case OPT_BIND:
        if (!is_ip_literal(value)) {
            snprintf(errbuf, errlen, "%s: '%s' is not an IPv4 or IPv6 address literal", o->name,
                     value);
            return NWB_ECONFIG;
        }
        cfg->bind_addr = value;
        return 0;
    case OPT_NAMESYM:
        if (value[0] == '\0') {
            snprintf(errbuf, errlen, "%s: the value is empty", o->name);
            return NWB_ECONFIG;
        }
        if (cfg->namesym_dir_count >= NWB_SERVER_NAMESYM_DIRS_MAX) {
            snprintf(errbuf, errlen, "%s: given more than %u times", o->name,
                     NWB_SERVER_NAMESYM_DIRS_MAX);
            return NWB_ECONFIG;
        }
        cfg->namesym_dirs[cfg->namesym_dir_count++] = value;
        return 0;
    case OPT_TOKEN:
        if (value[0] == '\0') {
            snprintf(errbuf, errlen, "%s: the value is empty", o->name);
            return NWB_ECONFIG;
        }
        cfg->token_file = value;
        return 0;
    default:
        break;
    }
    if (parse_number(value, &v) != 0 || v < o->min || v > o->max) {
        snprintf(errbuf, errlen, "%s: '%s' is not a whole number in %llu..%llu", o->name, value,
                 o->min, o->max);
        return NWB_ECONFIG;
    }
    if (o->kind == OPT_INT) {
        const int iv = (int)v;

        memcpy(base + o->offset, &iv, sizeof(iv));
    } else if (o->kind == OPT_UINT) {
        const unsigned uv = (unsigned)v;

        memcpy(base + o->offset, &uv, sizeof(uv));
    } else {
        const size_t sv = (size_t)v;

        memcpy(base + o->offset, &sv, sizeof(sv));
    }
    return 0;
}

int nwb_server_config_parse(nwb_server_config_t *cfg, int argc, char **argv, char *errbuf,
                            size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *eq = strchr(arg, '=');
        const size_t nlen = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
        const struct opt *o = NULL;
        const char *value;
        int err;

        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            return NWB_SERVER_ARGS_HELP;
        }
        if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0) {
            return NWB_SERVER_ARGS_VERSION;
        }
        for (size_t k = 0; k < NWB_ARRAY_SIZE(opts); k++) {
            if (strlen(opts[k].name) == nlen && strncmp(opts[k].name, arg, nlen) == 0) {
                o = &opts[k];
                break;
            }
        }
        if (o == NULL) {
            snprintf(errbuf, errlen, "unknown %s '%s'", arg[0] == '-' ? "option" : "argument", arg);
            return NWB_ECONFIG;
        }
        if (eq != NULL) {
            value = eq + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            snprintf(errbuf, errlen, "%s needs a value", o->name);
            return NWB_ECONFIG;
        }
        err = apply(cfg, o, value, errbuf, errlen);
        if (err) {
            return err;
        }
    }
    if (cfg->max_body_bytes > cfg->max_buffered_bytes) {
        snprintf(errbuf, errlen,
                 "--max-body-bytes (%zu) must not exceed --max-buffered-bytes (%zu)",
                 cfg->max_body_bytes, cfg->max_buffered_bytes);
        return NWB_ECONFIG;
    }
    return nwb__server_check_access(cfg, errbuf, errlen);
}
