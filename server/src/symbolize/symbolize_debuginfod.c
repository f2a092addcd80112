/* SPDX-License-Identifier: MIT */
/*
 * symbolize_debuginfod.c - a module's files from debuginfod servers (elfutils' libdebuginfod),
 * for build ids the symbols folder does not have, when nwb-symbolize is given
 * --debuginfod-urls. Every lookup is time-bounded (per module and in total) and every file
 * received is checked like a stored one (regular ELF, its own build id matching) before use.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>

#include "nwb/alloc.h"
#include "nwb/deadline.h"

#include "symbolize.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
/* libdebuginfod 0.188 (Debian 12) leaks a FILE per cache config read (fdopen, then close
 * without fclose: elfutils PR29696, fixed in 0.189). Third-party, bounded by the queries of one
 * short-lived process: leak checking skips what a query allocates, and nothing else. */
#define THIRD_PARTY_BEGIN() __lsan_disable()
#define THIRD_PARTY_END()   __lsan_enable()
#else
#define THIRD_PARTY_BEGIN() ((void)0)
#define THIRD_PARTY_END()   ((void)0)
#endif

struct nwb_sym_debuginfod {
    debuginfod_client *client;
    nwb_deadline_t total;  /* all lookups together */
    nwb_deadline_t lookup; /* the query running now: the sooner of its module's and the total */
    int cancelled;         /* the progress callback stopped the query at its deadline */
};

/* Variables libdebuginfod reads that nwb-symbolize does not set: cleared, so the server's
 * environment never changes what a lookup does (docs/operations.md, "Symbolisation"). */
static const char *const cleared_env[] = {
    DEBUGINFOD_PROGRESS_ENV_VAR,
    DEBUGINFOD_VERBOSE_ENV_VAR,
    DEBUGINFOD_HEADERS_FILE_ENV_VAR,
};

/* Called by libdebuginfod while a query runs; non-zero cancels it (-ECANCELED). */
static int on_progress(debuginfod_client *c, long done, long total)
{
    struct nwb_sym_debuginfod *d = debuginfod_get_user_data(c);

    (void)done, (void)total;
    if (d != NULL && nwb_deadline_expired(&d->lookup)) {
        d->cancelled = 1;
        return 1;
    }
    return 0;
}

int nwb_sym_debuginfod_create(const char *urls, const char *cache_dir, unsigned total_ms,
                              struct nwb_sym_debuginfod **out, char *why, size_t why_size)
{
    struct nwb_sym_debuginfod *d;
    char size[32];

    *out = NULL;
    if (urls == NULL || urls[0] == '\0' || strlen(urls) > NWB_SYM_DEBUGINFOD_URLS_MAX) {
        snprintf(why, why_size, "--debuginfod-urls: empty or longer than %u bytes",
                 NWB_SYM_DEBUGINFOD_URLS_MAX);
        return -1;
    }
    if (cache_dir == NULL || cache_dir[0] == '\0') {
        snprintf(why, why_size, "--debuginfod-cache is needed with --debuginfod-urls");
        return -1;
    }
    if (total_ms == 0 || total_ms > NWB_SYM_DEBUGINFOD_TOTAL_MS_MAX) {
        snprintf(why, why_size, "--debuginfod-timeout-ms: not in 1..%u",
                 NWB_SYM_DEBUGINFOD_TOTAL_MS_MAX);
        return -1;
    }
    for (size_t i = 0; i < sizeof(cleared_env) / sizeof(cleared_env[0]); i++) {
        (void)unsetenv(cleared_env[i]);
    }
    snprintf(size, sizeof(size), "%u", NWB_SYM_DEBUGINFOD_MAX_BYTES);
    if (setenv(DEBUGINFOD_URLS_ENV_VAR, urls, 1) != 0 ||
        setenv(DEBUGINFOD_CACHE_PATH_ENV_VAR, cache_dir, 1) != 0 ||
        setenv(DEBUGINFOD_MAXSIZE_ENV_VAR, size, 1) != 0 ||
        /* One attempt per query: a retry (two by default) would run past the query's
         * deadline, and the crash can be symbolised again later. */
        setenv(DEBUGINFOD_RETRY_LIMIT_ENV_VAR, "0", 1) != 0) {
        snprintf(why, why_size, "debuginfod: cannot set its environment: %s", strerror(errno));
        return -1;
    }
    d = nwb_calloc(1, sizeof(*d));
    if (d == NULL) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    d->client = debuginfod_begin();
    if (d->client == NULL) {
        snprintf(why, why_size, "debuginfod: cannot start the client");
        nwb_free(d);
        return -1;
    }
    debuginfod_set_user_data(d->client, d);
    debuginfod_set_progressfn(d->client, on_progress);
    d->total = nwb_deadline_in_ms(total_ms);
    *out = d;
    return 0;
}

void nwb_sym_debuginfod_destroy(struct nwb_sym_debuginfod *d)
{
    if (d == NULL) {
        return;
    }
    debuginfod_end(d->client);
    nwb_free(d);
}

/* A failed query's reason: libdebuginfod answers a negated errno. */
static void query_reason(const struct nwb_sym_debuginfod *d, int rc, char *out, size_t cap)
{
    if (d->cancelled || rc == -ETIME || rc == -ETIMEDOUT) {
        snprintf(out, cap, "timed out");
    } else if (rc == -ENOENT) {
        snprintf(out, cap, "not found (404)");
    } else if (rc == -EFBIG) {
        snprintf(out, cap, "file larger than %u bytes", NWB_SYM_DEBUGINFOD_MAX_BYTES);
    } else {
        snprintf(out, cap, "%s", strerror(-rc));
    }
}

/* One query (@p find: debuginfod_find_debuginfo or _executable) bounded by @p module; the
 * checked file's descriptor, or -1 with the reason alone ("timed out") in @p why. */
static int query(struct nwb_sym_debuginfod *d, const nwb_deadline_t *module,
                 int (*find)(debuginfod_client *, const unsigned char *, int, char **),
                 const char *what, const uint8_t *id, size_t len, char *why, size_t why_size)
{
    const long long module_left = nwb_deadline_left_ms(module);
    const long long total_left = nwb_deadline_left_ms(&d->total);
    const long long left = module_left < total_left ? module_left : total_left;
    char seconds[24], reason[160];
    char *path = NULL;
    int fd;

    /* libdebuginfod's bounds are whole seconds: DEBUGINFOD_TIMEOUT for the connection and a
     * stalled transfer, DEBUGINFOD_MAXTIME for the whole download, rounded down so a query
     * never runs past its deadline; with less than a second left none is started. The
     * progress callback ends a transfer at the deadline itself. */
    if (left < 1000) {
        snprintf(why, why_size, "timed out");
        return -1;
    }
    snprintf(seconds, sizeof(seconds), "%lld", left / 1000);
    if (setenv(DEBUGINFOD_TIMEOUT_ENV_VAR, seconds, 1) != 0 ||
        setenv(DEBUGINFOD_MAXTIME_ENV_VAR, seconds, 1) != 0) {
        snprintf(why, why_size, "cannot set its environment: %s", strerror(errno));
        return -1;
    }
    d->lookup = nwb_deadline_in_ms(left);
    d->cancelled = 0;
    THIRD_PARTY_BEGIN();
    fd = find(d->client, id, (int)len, &path);
    THIRD_PARTY_END();
    free(path); /* malloc'd by libdebuginfod */
    if (fd < 0) {
        query_reason(d, fd, why, why_size);
        return -1;
    }
    if (nwb_sym_check_fd(fd, what, id, len, reason, sizeof(reason)) != 0) {
        snprintf(why, why_size, "refused (%s)", reason + strlen(what) + 2); /* "<what>: " */
        close(fd);
        return -1;
    }
    return fd;
}

int nwb_sym_debuginfod_find(struct nwb_sym_debuginfod *d, const uint8_t *id, size_t len,
                            int *exe_fd, int *debug_fd, char *why, size_t why_size)
{
    const nwb_deadline_t module = nwb_deadline_in_ms(NWB_SYM_DEBUGINFOD_MODULE_MS);
    char why_debug[192] = "", why_exe[192] = "";

    *exe_fd = -1;
    *debug_fd = -1;
    if (len < 2 || len > NWB_CRASH_CAPTURE_BUILD_ID_MAX) {
        snprintf(why, why_size, "debuginfod: no build id");
        return -1;
    }
    *debug_fd = query(d, &module, debuginfod_find_debuginfo, "debuginfo", id, len, why_debug,
                      sizeof(why_debug));
    *exe_fd = query(d, &module, debuginfod_find_executable, "executable", id, len, why_exe,
                    sizeof(why_exe));
    if (*exe_fd >= 0 || *debug_fd >= 0) {
        return 0;
    }
    /* Both failed: one reason when they agree (the usual 404 or refused connection). */
    if (strcmp(why_debug, why_exe) == 0) {
        snprintf(why, why_size, "debuginfod: %s", why_debug);
    } else {
        snprintf(why, why_size, "debuginfod: debuginfo %s; executable %s", why_debug, why_exe);
    }
    return -1;
}
