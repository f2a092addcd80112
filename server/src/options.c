/* SPDX-License-Identifier: MIT */
/*
 * options.c - the nwb-logserver command line, read from its one table
 * (NWB_SERVER_OPTIONS in nwb/server.h: flag, field, kind, default, range, help):
 * parsing, the range check nwb_server_create() applies to any config, and the
 * --help text generated from the rows. A non-loopback --bind needs --token-file
 * (docs/operations.md, "Access control").
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "nwb/error.h"
#include "server_int.h"

#define DEF_STR(def)     .def_str = (def)
#define DEF_BIND(def)    .def_str = (def)
#define DEF_TOKEN(def)   .def_str = (def)
#define DEF_NAMESYM(def) .def_str = (def)
#define DEF_INT(def)     .def_num = (unsigned long long)(def)
#define DEF_UINT(def)    .def_num = (unsigned long long)(def)
#define DEF_SIZE(def)    .def_num = (unsigned long long)(def)

/* (The parameters are not named like the members: a macro parameter would replace them.) */
#define OPT_ROW(flag, field, k, def, lo, hi, metavar, text)                                        \
    {.name = (flag),                                                                               \
     .kind = NWB__OPT_##k,                                                                         \
     .offset = offsetof(nwb_server_config_t, field),                                               \
     DEF_##k(def),                                                                                 \
     .min = (lo),                                                                                  \
     .max = (hi),                                                                                  \
     .meta = (metavar),                                                                            \
     .help = (text)},

static const struct nwb__opt opts[] = {NWB_SERVER_OPTIONS(OPT_ROW)};

const struct nwb__opt *nwb__server_options(size_t *count)
{
    *count = NWB_ARRAY_SIZE(opts);
    return opts;
}

static int is_number(const struct nwb__opt *o)
{
    return o->kind == NWB__OPT_INT || o->kind == NWB__OPT_UINT || o->kind == NWB__OPT_SIZE;
}

/* ---- --help ---- */

#define USAGE_WIDTH  79u /* columns of the generated text */
#define USAGE_INDENT 31u /* where the help of an option starts */
#define USAGE_MAX    12288u

static const char usage_intro[] =
    "usage: nwb-logserver [options]\n"
    "\n"
    "Receives log batches (POST /v1/log), telemetry (POST /v1/telemetry) and crash\n"
    "archives (POST /v1/crash) over HTTP; writes one log per run under\n"
    "OUT/runs/<program>_<YYYYmmdd-HHMMSS>_<run>/log.txt, #tokens decoded with the\n"
    ".namesym sidecars (SIGHUP reloads them). docs/operations.md has details.\n"
    "\n";
static const char usage_tail[] = "  --help                       this text\n"
                                 "  --version                    print the version\n";

struct usage {
    char text[USAGE_MAX];
    size_t len;
};

static void usage_put(struct usage *u, const char *s, size_t n)
{
    /* The table is fixed: a text that does not fit is a bug the options test catches. */
    if (n > sizeof(u->text) - 1 - u->len) {
        n = sizeof(u->text) - 1 - u->len;
    }
    memcpy(u->text + u->len, s, n);
    u->len += n;
    u->text[u->len] = '\0';
}

/* @p words wrapped into the help column; @p col is where the current line is. */
static void usage_wrap(struct usage *u, const char *words, size_t col)
{
    static const char pad[USAGE_INDENT + 1] = "                               ";
    const char *p = words;

    while (*p != '\0') {
        const char *sp = strchr(p, ' ');
        const size_t wlen = sp != NULL ? (size_t)(sp - p) : strlen(p);

        if (col > USAGE_INDENT && col + 1 + wlen > USAGE_WIDTH) {
            usage_put(u, "\n", 1);
            col = 0;
        }
        if (col < USAGE_INDENT) {
            usage_put(u, pad, USAGE_INDENT - col);
            col = USAGE_INDENT;
        } else {
            usage_put(u, " ", 1);
            col++;
        }
        usage_put(u, p, wlen);
        col += wlen;
        p += wlen;
        while (*p == ' ') {
            p++;
        }
    }
    usage_put(u, "\n", 1);
}

static void usage_option(struct usage *u, const struct nwb__opt *o)
{
    char head[64];
    char words[512];
    int n = snprintf(head, sizeof(head), "  %s %s", o->name, o->meta);
    const size_t hlen = n > 0 ? (size_t)n : 0;

    usage_put(u, head, hlen);
    if (is_number(o)) {
        snprintf(words, sizeof(words), "%s (default %llu; %llu..%llu)", o->help, o->def_num, o->min,
                 o->max);
    } else if (o->def_str != NULL) {
        snprintf(words, sizeof(words), "%s (default %s)", o->help, o->def_str);
    } else {
        snprintf(words, sizeof(words), "%s", o->help);
    }
    if (hlen + 1 > USAGE_INDENT) {
        /* A name too long for the column: the help starts on the next line. */
        usage_put(u, "\n", 1);
        usage_wrap(u, words, 0);
    } else {
        usage_wrap(u, words, hlen);
    }
}

static struct usage usage;
static pthread_once_t usage_once = PTHREAD_ONCE_INIT;

static void usage_build(void)
{
    usage_put(&usage, usage_intro, sizeof(usage_intro) - 1);
    for (size_t i = 0; i < NWB_ARRAY_SIZE(opts); i++) {
        usage_option(&usage, &opts[i]);
    }
    usage_put(&usage, usage_tail, sizeof(usage_tail) - 1);
}

const char *nwb_server_usage(void)
{
    pthread_once(&usage_once, usage_build);
    return usage.text;
}

/* ---- parsing ---- */

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

static void number_store(nwb_server_config_t *cfg, const struct nwb__opt *o, unsigned long long v)
{
    char *base = (char *)cfg;

    if (o->kind == NWB__OPT_INT) {
        const int iv = (int)v;

        memcpy(base + o->offset, &iv, sizeof(iv));
    } else if (o->kind == NWB__OPT_UINT) {
        const unsigned uv = (unsigned)v;

        memcpy(base + o->offset, &uv, sizeof(uv));
    } else {
        const size_t sv = (size_t)v;

        memcpy(base + o->offset, &sv, sizeof(sv));
    }
}

unsigned long long nwb__server_option_number(const nwb_server_config_t *cfg,
                                             const struct nwb__opt *o, int *negative)
{
    const char *base = (const char *)cfg;

    *negative = 0;
    if (o->kind == NWB__OPT_INT) {
        int iv;

        memcpy(&iv, base + o->offset, sizeof(iv));
        *negative = iv < 0;
        return iv < 0 ? 0 : (unsigned long long)iv;
    }
    if (o->kind == NWB__OPT_UINT) {
        unsigned uv;

        memcpy(&uv, base + o->offset, sizeof(uv));
        return uv;
    }
    {
        size_t sv;

        memcpy(&sv, base + o->offset, sizeof(sv));
        return sv;
    }
}

static int apply(nwb_server_config_t *cfg, const struct nwb__opt *o, const char *value,
                 char *errbuf, size_t errlen)
{
    char *base = (char *)cfg;
    unsigned long long v;

    if (!is_number(o) && value[0] == '\0') {
        snprintf(errbuf, errlen, "%s: the value is empty", o->name);
        return NWB_ECONFIG;
    }
    switch (o->kind) {
    case NWB__OPT_BIND:
        if (!is_ip_literal(value)) {
            snprintf(errbuf, errlen, "%s: '%s' is not an IPv4 or IPv6 address literal", o->name,
                     value);
            return NWB_ECONFIG;
        }
        /* fall through */
    case NWB__OPT_STR:
    case NWB__OPT_TOKEN:
        memcpy(base + o->offset, &value, sizeof(value));
        return 0;
    case NWB__OPT_NAMESYM:
        if (cfg->namesym_dir_count >= NWB_SERVER_NAMESYM_DIRS_MAX) {
            snprintf(errbuf, errlen, "%s: given more than %u times", o->name,
                     NWB_SERVER_NAMESYM_DIRS_MAX);
            return NWB_ECONFIG;
        }
        cfg->namesym_dirs[cfg->namesym_dir_count++] = value;
        return 0;
    default:
        break;
    }
    if (parse_number(value, &v) != 0 || v < o->min || v > o->max) {
        snprintf(errbuf, errlen, "%s: '%s' is not a whole number in %llu..%llu", o->name, value,
                 o->min, o->max);
        return NWB_ECONFIG;
    }
    number_store(cfg, o, v);
    return 0;
}

int nwb__server_config_check(const nwb_server_config_t *cfg, char *errbuf, size_t errlen)
{
    if (cfg->bind_addr == NULL || cfg->out_dir == NULL || cfg->out_dir[0] == '\0') {
        snprintf(errbuf, errlen, "bind address and output directory are required");
        return NWB_ECONFIG;
    }
    if (cfg->namesym_dir_count > NWB_SERVER_NAMESYM_DIRS_MAX) {
        snprintf(errbuf, errlen, "more than %u --namesym-dir folders", NWB_SERVER_NAMESYM_DIRS_MAX);
        return NWB_ECONFIG;
    }
    for (size_t i = 0; i < NWB_ARRAY_SIZE(opts); i++) {
        const struct nwb__opt *o = &opts[i];
        int negative;
        unsigned long long v;

        if (!is_number(o)) {
            continue;
        }
        v = nwb__server_option_number(cfg, o, &negative);
        if (negative) {
            snprintf(errbuf, errlen, "%s: a negative value is not in %llu..%llu", o->name, o->min,
                     o->max);
            return NWB_ECONFIG;
        }
        if (v < o->min || v > o->max) {
            snprintf(errbuf, errlen, "%s: %llu is not in %llu..%llu", o->name, v, o->min, o->max);
            return NWB_ECONFIG;
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

int nwb_server_config_parse(nwb_server_config_t *cfg, int argc, char **argv, char *errbuf,
                            size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *eq = strchr(arg, '=');
        const size_t nlen = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
        const struct nwb__opt *o = NULL;
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
    return nwb__server_config_check(cfg, errbuf, errlen);
}
