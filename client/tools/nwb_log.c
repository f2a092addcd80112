/* SPDX-License-Identifier: MIT */
/*
 * nwb_log.c - the nwb-log tool: log a message (its arguments) or every line
 * of stdin through the logger client, for scripts and tests. Exits 0 once
 * everything is acknowledged by the server, spooled, or written (standalone).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/client.h"
#include "nwb/error.h"
#include "nwb/log.h"
#include "nwb/log_batch.h"
#include "nwb/token.h"

#define EXIT_USAGE 2
/* How long to wait for delivery (or spooling) before giving up, unless --timeout-ms says. */
#define DEFAULT_TIMEOUT_MS 10000u
/* A producer waits this long for ring space instead of dropping (a tool can afford it). */
#define BLOCK_TIMEOUT_US 5000000u

static const char usage[] =
    "usage: nwb-log [--level info|warning|error] [--program NAME] [--run ID]\n"
    "               [--no-logserver] [--logserver=HOST:PORT] [--log-dir DIR]\n"
    "               [--token-file FILE] [--timeout-ms N] [--] [MESSAGE...]\n"
    "\n"
    "Logs MESSAGE (the arguments joined by spaces) as one record, or, without\n"
    "arguments, every line of stdin as one record, through the nwb logger client.\n"
    "\n"
    "  --level L            info (default), warning or error\n"
    "  --program NAME       program name (default: the executable's name, nwb-log)\n"
    "  --run ID             run id, up to 16 characters [A-Za-z0-9_.-] (default: random)\n"
    "  --no-logserver       standalone: write the per-run file under the log dir\n"
    "  --logserver=H:P      send to nwb-logserver at H:P (default: $NWB_LOGSERVER, or\n"
    "                       127.0.0.1:7650 when it answers, else standalone)\n"
    "  --log-dir DIR        standalone output and spool root (default: $NWB_LOG_DIR or\n"
    "                       ./nwb-logs)\n"
    "  --token-file FILE    send FILE's content (one trailing newline dropped) as the\n"
    "                       bearer token (default: $NWB_LOGSERVER_TOKEN, else the file\n"
    "                       $NWB_LOGSERVER_TOKEN_FILE names)\n"
    "  --timeout-ms N       wait at most N ms for delivery or spooling (default 10000)\n"
    "  --help               this text\n"
    "\n"
    "Exit status: 0 when every record was delivered, spooled for a later run, or\n"
    "written; 1 when some could not be; 2 for a bad command line.\n";

/* Sites without a source file, so the lines show only the message. */
static nwb_log_site_t sites[3] = {
    {NULL, "", 0, NWB_LOG_INFO, NWB_LOG_SITE_RAW, 0, 0, {0}, 0, 0, 0},
    {NULL, "", 0, NWB_LOG_WARNING, NWB_LOG_SITE_RAW, 0, 0, {0}, 0, 0, 0},
    {NULL, "", 0, NWB_LOG_ERROR, NWB_LOG_SITE_RAW, 0, 0, {0}, 0, 0, 0},
};

static int parse_level(const char *s)
{
    if (strcmp(s, "info") == 0) {
        return NWB_LOG_INFO;
    }
    if (strcmp(s, "warning") == 0) {
        return NWB_LOG_WARNING;
    }
    if (strcmp(s, "error") == 0) {
        return NWB_LOG_ERROR;
    }
    return -1;
}

/* The value of "--name VALUE" or "--name=VALUE" at argv[*i]; NULL when absent. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, int *missing)
{
    const size_t n = strlen(name);
    const char *a = argv[*i];

    if (strncmp(a, name, n) != 0) {
        return NULL;
    }
    if (a[n] == '=') {
        return a + n + 1;
    }
    if (a[n] != '\0') {
        return NULL;
    }
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    (*i)++;
    return argv[*i];
}

/* Log @p len bytes of @p msg, in pieces of at most the record bound (nothing is cut off). */
static void log_text(int level, char *msg, size_t len)
{
    do {
        const size_t n = len > NWB_LOG_RECORD_MSG_MAX ? NWB_LOG_RECORD_MSG_MAX : len;
        const char saved = msg[n];

        msg[n] = '\0';
        nwb_log_write_raw(&sites[level], msg);
        msg[n] = saved;
        msg += n;
        len -= n;
    } while (len > 0);
}

static int log_args(int level, int argc, char **argv, int first)
{
    size_t total = 0;
    char *buf;
    char *p;

    for (int i = first; i < argc; i++) {
        total += strlen(argv[i]) + 1;
    }
    buf = malloc(total + 1);
    if (buf == NULL) {
        fprintf(stderr, "nwb-log: out of memory\n");
        return -1;
    }
    p = buf;
    for (int i = first; i < argc; i++) {
        const size_t n = strlen(argv[i]);

        if (i > first) {
            *p++ = ' ';
        }
        memcpy(p, argv[i], n);
        p += n;
    }
    *p = '\0';
    log_text(level, buf, (size_t)(p - buf));
    free(buf);
    return 0;
}

/* 1 when @p dir holds a spool file of @p program's run @p run (docs/spool.md names them). */
static int run_spooled(const char *dir, const char *program, const char *run)
{
    char prefix[128];
    DIR *d = opendir(dir);
    struct dirent *de;
    int found = 0;

    if (d == NULL) {
        return 0;
    }
    snprintf(prefix, sizeof(prefix), "%s_%s.", program, run);
    while (!found && (de = readdir(d)) != NULL) {
        const size_t n = strlen(de->d_name);

        found = strncmp(de->d_name, prefix, strlen(prefix)) == 0 && n > 6 &&
                strcmp(de->d_name + n - 6, ".spool") == 0;
    }
    closedir(d);
    return found;
}

static int log_stdin(int level)
{
    /* One record's worth plus the newline; longer lines continue in the next read. */
    static char line[NWB_LOG_RECORD_MSG_MAX + 2];

    while (fgets(line, sizeof(line), stdin) != NULL) {
        size_t n = strlen(line);

        if (n > 0 && line[n - 1] == '\n') {
            n--;
            if (n > 0 && line[n - 1] == '\r') {
                n--;
            }
        }
        log_text(level, line, n);
    }
    if (ferror(stdin)) {
        fprintf(stderr, "nwb-log: reading stdin failed: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_stats_t st;
    nwb_client_t *client = NULL;
    char err[512];
    unsigned long timeout_ms = DEFAULT_TIMEOUT_MS;
    int level = NWB_LOG_INFO;
    int first = argc;
    char spool_dir[4096];
    char program[80];
    char run[32];
    char token[NWB_TOKEN_MAX + 1];
    int server_mode;
    int ok;
    int rc;

    err[0] = '\0';
    if (nwb_client_config_args(&cfg, &argc, argv, err, sizeof(err)) != 0) {
        fprintf(stderr, "nwb-log: %s\n", err);
        return EXIT_USAGE;
    }
    for (int i = 1; i < argc; i++) {
        const char *v;
        int missing = 0;

        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--") == 0) {
            first = i + 1;
            break;
        }
        if (argv[i][0] != '-' || argv[i][1] == '\0') {
            first = i;
            break;
        }
        if ((v = opt_value(argc, argv, &i, "--level", &missing)) != NULL) {
            level = parse_level(v);
            if (level < 0) {
                fprintf(stderr, "nwb-log: --level must be info, warning or error, not '%s'\n", v);
                return EXIT_USAGE;
            }
        } else if ((v = opt_value(argc, argv, &i, "--program", &missing)) != NULL) {
            cfg.program = v;
        } else if ((v = opt_value(argc, argv, &i, "--run", &missing)) != NULL) {
            cfg.run_id = v;
        } else if ((v = opt_value(argc, argv, &i, "--log-dir", &missing)) != NULL) {
            cfg.log_dir = v;
        } else if ((v = opt_value(argc, argv, &i, "--token-file", &missing)) != NULL) {
            char why[512];

            if (nwb_token_file_read(v, token, sizeof(token), why, sizeof(why)) != 0) {
                fprintf(stderr, "nwb-log: --token-file: %s\n", why);
                return EXIT_USAGE;
            }
            cfg.token = token;
        } else if ((v = opt_value(argc, argv, &i, "--timeout-ms", &missing)) != NULL) {
            char *end = NULL;

            errno = 0;
            timeout_ms = strtoul(v, &end, 10);
            if (errno != 0 || end == v || *end != '\0' || timeout_ms > 3600000ul) {
                fprintf(stderr, "nwb-log: --timeout-ms needs a number of ms up to 3600000\n");
                return EXIT_USAGE;
            }
        } else if (missing) {
            fprintf(stderr, "nwb-log: %s needs a value\n", argv[i]);
            return EXIT_USAGE;
        } else {
            fprintf(stderr, "nwb-log: unknown option '%s' (see --help)\n", argv[i]);
            return EXIT_USAGE;
        }
        if (missing) {
            fprintf(stderr, "nwb-log: %s needs a value\n", argv[i]);
            return EXIT_USAGE;
        }
    }
    cfg.full_policy = NWB_CLIENT_FULL_BLOCK;
    cfg.block_timeout_us = BLOCK_TIMEOUT_US;
    /* The spool directory is made explicit (the client's default) so we can look in it. */
    {
        const char *env = getenv("NWB_LOG_DIR");
        const char *root = cfg.log_dir != NULL             ? cfg.log_dir
                           : env != NULL && env[0] != '\0' ? env
                                                           : "./nwb-logs";

        if ((size_t)snprintf(spool_dir, sizeof(spool_dir), "%s/spool", root) >= sizeof(spool_dir)) {
            fprintf(stderr, "nwb-log: the log directory path is too long\n");
            return EXIT_USAGE;
        }
        cfg.spool_dir = spool_dir;
    }
    rc = nwb_client_create(&cfg, &client, err, sizeof(err));
    if (rc != 0) {
        char ebuf[128];

        fprintf(stderr, "nwb-log: cannot start the logger client: %s\n",
                err[0] != '\0' ? err : nwb_strerror_r(rc, ebuf, sizeof(ebuf)));
        return 1;
    }
    rc = first < argc ? log_args(level, argc, argv, first) : log_stdin(level);
    ok = rc == 0;
    rc = nwb_client_flush(client, (unsigned)timeout_ms);
    nwb_client_stats_get(client, &st);
    server_mode = nwb_client_is_server_mode(client);
    snprintf(program, sizeof(program), "%s", nwb_client_program(client));
    snprintf(run, sizeof(run), "%s", nwb_client_run_id(client));
    if (st.records_dropped > 0) {
        ok = 0;
        fprintf(stderr, "nwb-log: %" PRIu64 " of %" PRIu64 " records were dropped\n",
                st.records_dropped, st.records_accepted + st.records_dropped);
    }
    /* Shutdown delivers what it can and spools the rest (the server is not answering). */
    nwb_client_destroy(client);
    if (rc != 0) {
        if (server_mode && run_spooled(spool_dir, program, run)) {
            fprintf(stderr,
                    "nwb-log: the server did not acknowledge within %lu ms; the records are "
                    "spooled in %s and the next run of %s delivers them\n",
                    timeout_ms, spool_dir, program);
        } else {
            ok = 0;
            fprintf(stderr, "nwb-log: the records could not be %s within %lu ms\n",
                    server_mode ? "delivered or spooled" : "written", timeout_ms);
        }
    }
    return ok ? 0 : 1;
}
