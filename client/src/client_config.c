/* SPDX-License-Identifier: MIT */
/*
 * client_config.c - turning nwb_client_config_t, the environment
 * ($NWB_LOGSERVER, $NWB_LOG_DIR, $NWB_LOGSERVER_TOKEN, $NWB_LOGSERVER_TOKEN_FILE) and a tool's argv
 * (--no-logserver, --logserver=HOST:PORT) into resolved settings, and
 * choosing server or standalone mode (probe, then maybe launch a server).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nwb/error.h"
#include "nwb/log_line.h"
#include "nwb/safe_name.h"
#include "nwb/token.h"

#include "client_core.h"

static int config_error(char *errbuf, size_t errlen, const char *fmt, const char *a, const char *b)
{
    if (errbuf != NULL && errlen > 0) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        snprintf(errbuf, errlen, fmt, a, b);
#pragma GCC diagnostic pop
    }
    return NWB_ECONFIG;
}

int nwb__hostport_parse(const char *addr, char *host, size_t hostcap, char *port, size_t portcap,
                        char *errbuf, size_t errlen)
{
    const char *h;
    const char *hend;
    const char *p;
    size_t hlen;
    unsigned long v = 0;
    size_t plen;

    if (addr == NULL || addr[0] == '\0') {
        return config_error(errbuf, errlen, "empty server address%s%s", "", "");
    }
    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');

        if (close == NULL || close[1] != ':') {
            return config_error(errbuf, errlen, "server address '%s': expected [V6]:PORT%s", addr,
                                "");
        }
        h = addr + 1;
        hend = close;
        p = close + 2;
    } else {
        const char *colon = strrchr(addr, ':');

        if (colon == NULL) {
            return config_error(errbuf, errlen, "server address '%s': expected HOST:PORT%s", addr,
                                "");
        }
        if (memchr(addr, ':', (size_t)(colon - addr)) != NULL) {
            return config_error(errbuf, errlen,
                                "server address '%s': an IPv6 host needs brackets, [V6]:PORT%s",
                                addr, "");
        }
        h = addr;
        hend = colon;
        p = colon + 1;
    }
    hlen = (size_t)(hend - h);
    if (hlen == 0 || hlen >= hostcap) {
        return config_error(errbuf, errlen, "server address '%s': bad host length%s", addr, "");
    }
    for (size_t i = 0; i < hlen; i++) {
        const unsigned char ch = (unsigned char)h[i];

        if (ch <= 0x20 || ch == 0x7f || strchr("/?#@[]", ch) != NULL) {
            return config_error(errbuf, errlen, "server address '%s': bad character in host%s",
                                addr, "");
        }
    }
    plen = strlen(p);
    if (plen == 0 || plen > 5 || plen >= portcap) {
        return config_error(errbuf, errlen, "server address '%s': bad port%s", addr, "");
    }
    for (size_t i = 0; i < plen; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return config_error(errbuf, errlen, "server address '%s': bad port%s", addr, "");
        }
        v = v * 10u + (unsigned long)(p[i] - '0');
    }
    if (v == 0 || v > 65535u) {
        return config_error(errbuf, errlen, "server address '%s': port must be 1..65535%s", addr,
                            "");
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    memcpy(port, p, plen + 1u);
    return 0;
}

int nwb_client_config_args(nwb_client_config_t *cfg, int *argc, char **argv, char *errbuf,
                           size_t errlen)
{
    static const char opt_server[] = "--logserver=";
    char host[256];
    char port[8];
    int keep = 1;
    int i;

    if (errbuf != NULL && errlen > 0) {
        errbuf[0] = '\0';
    }
    if (cfg == NULL || argc == NULL || argv == NULL) {
        return config_error(errbuf, errlen, "nwb_client_config_args: NULL argument%s%s", "", "");
    }
    if (*argc < 1) {
        return 0;
    }
    /* Validate first, so a bad value leaves argv and cfg untouched. */
    for (i = 1; i < *argc && argv[i] != NULL && strcmp(argv[i], "--") != 0; i++) {
        if (strncmp(argv[i], opt_server, sizeof(opt_server) - 1u) == 0) {
            char why[320];

            if (nwb__hostport_parse(argv[i] + sizeof(opt_server) - 1u, host, sizeof(host), port,
                                    sizeof(port), why, sizeof(why)) != 0) {
                return config_error(errbuf, errlen, "--logserver: %s%s", why, "");
            }
        } else if (strcmp(argv[i], "--logserver") == 0) {
            return config_error(errbuf, errlen,
                                "--logserver needs a value: --logserver=HOST:PORT%s%s", "", "");
        }
    }
    for (i = 1; i < *argc && argv[i] != NULL; i++) {
        if (strcmp(argv[i], "--") == 0) {
            break;
        }
        if (strcmp(argv[i], "--no-logserver") == 0) {
            cfg->mode = NWB_CLIENT_MODE_STANDALONE;
            continue;
        }
        if (strncmp(argv[i], opt_server, sizeof(opt_server) - 1u) == 0) {
            cfg->mode = NWB_CLIENT_MODE_SERVER;
            cfg->server = argv[i] + sizeof(opt_server) - 1u;
            continue;
        }
        argv[keep++] = argv[i];
    }
    for (; i < *argc && argv[i] != NULL; i++) {
        argv[keep++] = argv[i]; /* everything from "--" on is the tool's */
    }
    argv[keep] = NULL;
    *argc = keep;
    return 0;
}

/* Copy @p src into @p dst[cap]; NWB_ECONFIG naming @p what when it does not fit. */
static int copy_setting(char *dst, size_t cap, const char *src, const char *what, char *errbuf,
                        size_t errlen)
{
    const size_t n = strlen(src);

    if (n >= cap) {
        char limit[32];

        snprintf(limit, sizeof(limit), "%zu", cap - 1u);
        return config_error(errbuf, errlen, "%s is longer than %s bytes", what, limit);
    }
    memcpy(dst, src, n + 1u);
    return 0;
}

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0' ? v : NULL;
}

static void program_default(char *dst)
{
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1u);
    const char *base = exe;

    if (n <= 0) {
        nwb_safe_name(dst, "", 0, "program");
        return;
    }
    exe[n] = '\0';
    if (strrchr(exe, '/') != NULL) {
        base = strrchr(exe, '/') + 1;
    }
    nwb_safe_name(dst, base, strlen(base), "program");
}

int nwb__settings_resolve(const nwb_client_config_t *cfg_in, struct nwb__settings *s,
                          int *explicit_server, char *errbuf, size_t errlen)
{
    static const nwb_client_config_t defaults = NWB_CLIENT_CONFIG_INIT;
    const nwb_client_config_t *cfg = cfg_in != NULL ? cfg_in : &defaults;
    const char *server;
    const char *log_dir;
    const char *token;
    int rc;

    memset(s, 0, sizeof(*s));
    *explicit_server = 0;
    if (cfg->mode != NWB_CLIENT_MODE_AUTO && cfg->mode != NWB_CLIENT_MODE_SERVER &&
        cfg->mode != NWB_CLIENT_MODE_STANDALONE) {
        return config_error(errbuf, errlen, "mode is not AUTO, SERVER or STANDALONE%s%s", "", "");
    }
    s->mode = cfg->mode;
    if (cfg->full_policy != NWB_CLIENT_FULL_DROP && cfg->full_policy != NWB_CLIENT_FULL_BLOCK) {
        return config_error(errbuf, errlen, "full_policy is not DROP or BLOCK%s%s", "", "");
    }
    if (cfg->ring_bytes > NWB__RING_MAX) {
        return config_error(errbuf, errlen, "ring_bytes exceeds the bound of %s bytes%s",
                            "67108864", "");
    }

    if (cfg->program != NULL && cfg->program[0] != '\0') {
        nwb_safe_name(s->program, cfg->program, strlen(cfg->program), "program");
    } else {
        program_default(s->program);
    }
    if (cfg->run_id != NULL && cfg->run_id[0] != '\0') {
        char safe[NWB_SAFE_NAME_MAX + 1];

        if (strlen(cfg->run_id) > 16u) {
            return config_error(errbuf, errlen, "run_id '%s' is longer than 16 characters%s",
                                cfg->run_id, "");
        }
        nwb_safe_name(safe, cfg->run_id, strlen(cfg->run_id), "");
        memcpy(s->run_id, safe, strlen(safe) + 1u);
    } else {
        nwb_run_id_generate(s->run_id);
    }

    server = cfg->server != NULL ? cfg->server : env_nonempty("NWB_LOGSERVER");
    if (server != NULL && s->mode != NWB_CLIENT_MODE_STANDALONE) {
        char why[320];

        *explicit_server = 1;
        if (nwb__hostport_parse(server, s->host, sizeof(s->host), s->port, sizeof(s->port), why,
                                sizeof(why)) != 0) {
            return config_error(errbuf, errlen, "%s (from %s)", why,
                                cfg->server != NULL ? "config.server" : "$NWB_LOGSERVER");
        }
        rc = copy_setting(s->server, sizeof(s->server), server, "the server address", errbuf,
                          errlen);
        if (rc != 0) {
            return rc;
        }
    } else {
        memcpy(s->host, NWB__DEFAULT_HOST, sizeof(NWB__DEFAULT_HOST));
        memcpy(s->port, NWB__DEFAULT_PORT, sizeof(NWB__DEFAULT_PORT));
        snprintf(s->server, sizeof(s->server), "%s:%s", NWB__DEFAULT_HOST, NWB__DEFAULT_PORT);
    }

    log_dir = cfg->log_dir != NULL && cfg->log_dir[0] != '\0' ? cfg->log_dir
                                                              : env_nonempty("NWB_LOG_DIR");
    rc = copy_setting(s->log_dir, sizeof(s->log_dir), log_dir != NULL ? log_dir : "nwb-logs",
                      "log_dir", errbuf, errlen);
    if (rc != 0) {
        return rc;
    }
    if (cfg->spool_dir != NULL && cfg->spool_dir[0] != '\0') {
        rc = copy_setting(s->spool_dir, sizeof(s->spool_dir), cfg->spool_dir, "spool_dir", errbuf,
                          errlen);
    } else if (strlen(s->log_dir) + sizeof("/spool") > sizeof(s->spool_dir)) {
        rc = config_error(errbuf, errlen, "log_dir is too long to hold %s%s", "spool/", "");
    } else {
        const size_t n = strlen(s->log_dir);

        memcpy(s->spool_dir, s->log_dir, n);
        memcpy(s->spool_dir + n, "/spool", sizeof("/spool"));
    }
    if (rc != 0) {
        return rc;
    }

    /* The config's token, else the environment's (a token file only matters off standalone). */
    token = cfg->token != NULL ? cfg->token : env_nonempty("NWB_LOGSERVER_TOKEN");
    if (token != NULL) {
        if (!nwb_token_valid(token, strlen(token))) {
            return config_error(errbuf, errlen,
                                "the server token must be 1..255 visible ASCII bytes%s%s", "", "");
        }
        memcpy(s->token, token, strlen(token) + 1);
    } else if (s->mode != NWB_CLIENT_MODE_STANDALONE) {
        rc = nwb_token_from_env(s->token, sizeof(s->token), errbuf, errlen);
        if (rc != 0) {
            return rc;
        }
    }

    s->ring_bytes = (size_t)nwb__ring_size_round(cfg->ring_bytes);
    s->full_policy = cfg->full_policy;
    s->block_timeout_us = cfg->block_timeout_us;
    s->console = cfg->console != 0;
    s->memory_bytes = cfg->memory_bytes != 0 ? cfg->memory_bytes : defaults.memory_bytes;
    s->spool_bytes = cfg->spool_bytes != 0 ? cfg->spool_bytes : defaults.spool_bytes;
    s->batch_bytes = cfg->batch_bytes != 0 ? cfg->batch_bytes : defaults.batch_bytes;
    s->flush_interval_ms =
        cfg->flush_interval_ms != 0 ? cfg->flush_interval_ms : defaults.flush_interval_ms;
    s->start_time_ns = nwb_time_now_ns();
    return 0;
}

void nwb__mode_resolve(const nwb_client_config_t *cfg, struct nwb__settings *s, int explicit_server,
                       struct nwb__launched *l, char *note, size_t notelen)
{
    char addr[272];
    char why[256] = "";

    memset(l, 0, sizeof(*l));
    note[0] = '\0';
    if (s->mode == NWB_CLIENT_MODE_STANDALONE) {
        return;
    }
    if (s->mode == NWB_CLIENT_MODE_AUTO && explicit_server) {
        s->mode = NWB_CLIENT_MODE_SERVER;
        return;
    }
    if (s->mode == NWB_CLIENT_MODE_SERVER && (cfg == NULL || !cfg->launch_server)) {
        return; /* the output keeps trying the configured server */
    }
    if (nwb__server_probe(s->host, s->port, NWB__PROBE_TIMEOUT_MS)) {
        s->mode = NWB_CLIENT_MODE_SERVER;
        return;
    }
    if (cfg != NULL && cfg->launch_server) {
        if (nwb__server_launch(cfg->server_exe, s->log_dir, NWB__LAUNCH_TIMEOUT_MS, l, addr,
                               sizeof(addr), why, sizeof(why)) == 0) {
            char host[256];
            char port[8];

            l->detach = cfg->detach_server != 0;
            if (nwb__hostport_parse(addr, host, sizeof(host), port, sizeof(port), why,
                                    sizeof(why)) == 0) {
                memcpy(s->host, host, sizeof(host));
                memcpy(s->port, port, sizeof(port));
                snprintf(s->server, sizeof(s->server), "%s", addr);
                s->mode = NWB_CLIENT_MODE_SERVER;
                return;
            }
            nwb__server_stop(l);
            memset(l, 0, sizeof(*l));
        }
        snprintf(note, notelen, "nwb: could not launch nwb-logserver (%s); %s", why,
                 s->mode == NWB_CLIENT_MODE_SERVER ? "retrying the configured server"
                                                   : "logging standalone");
    }
    if (s->mode == NWB_CLIENT_MODE_AUTO) {
        s->mode = NWB_CLIENT_MODE_STANDALONE;
    }
}
