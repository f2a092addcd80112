/* SPDX-License-Identifier: MIT */
/*
 * crash_install.c - nwb_crash_install(): resolves the settings, captures
 * everything the handler will need (program, ids, command line, paths, the
 * uploader's argv), creates the crash folder, loads the unwinder, sets the
 * main thread's alternate stack and the handlers, and starts the uploader
 * for packages left by an earlier run. Runs in normal context.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nwb/build_id.h"
#include "nwb/error.h"
#include "nwb/log_tail.h"

#include "../capture_int.h"

#ifndef NWB_CONFIG_NAME
#define NWB_CONFIG_NAME "unknown"
#endif

struct nwb__crash_state nwb__crash_g = {.lock_fd = -1};

static const char *pick(const char *given, const char *env, const char *fallback)
{
    const char *e;

    if (given != NULL) {
        return given;
    }
    e = env != NULL ? getenv(env) : NULL;
    return e != NULL && e[0] != '\0' ? e : fallback;
}

static int absolute_path(const char *in, char *out, size_t cap)
{
    int n;

    if (in[0] == '/') {
        n = snprintf(out, cap, "%s", in);
    } else {
        char cwd[NWB_CRASH_PATH_MAX];

        if (getcwd(cwd, sizeof(cwd)) == NULL) {
            return -errno;
        }
        n = snprintf(out, cap, "%s/%s", cwd, in);
    }
    if (n < 0 || (size_t)n >= cap) {
        return NWB_ECONFIG;
    }
    /* Drop trailing slashes so joined paths look clean. */
    while (n > 1 && out[n - 1] == '/') {
        out[--n] = '\0';
    }
    return 0;
}

static void read_cmdline(struct nwb__crash_state *g)
{
    const int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    size_t used = 0;

    g->cmdline_len = 0;
    g->cmdline_cut = 0;
    if (fd < 0) {
        return;
    }
    while (used < sizeof(g->cmdline)) {
        const ssize_t n = read(fd, g->cmdline + used, sizeof(g->cmdline) - used);

        if (n <= 0) {
            break;
        }
        used += (size_t)n;
    }
    if (used == sizeof(g->cmdline)) {
        char probe;

        g->cmdline_cut = read(fd, &probe, 1) > 0;
    }
    close(fd);
    g->cmdline_len = used;
}

static void copy_bounded(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src);
}

/* Build the helper's argv once, so the handler only has to fork and exec. */
static int build_helper_argv(struct nwb__crash_state *g, const char *helper, unsigned timeout_ms,
                             uint64_t max_bytes)
{
    char *p = g->helper_argbuf;
    char *const end = g->helper_argbuf + sizeof(g->helper_argbuf);
    int argc = 0;
    char num[32];

#define ARG(s)                                                                                     \
    do {                                                                                           \
        const size_t len_ = strlen(s) + 1;                                                         \
        if ((size_t)(end - p) < len_ || argc >= (int)NWB_ARRAY_SIZE(g->helper_argv) - 1) {         \
            return NWB_ECONFIG;                                                                    \
        }                                                                                          \
        memcpy(p, (s), len_);                                                                      \
        g->helper_argv[argc++] = p;                                                                \
        p += len_;                                                                                 \
    } while (0)

    ARG(helper);
    ARG("submit");
    ARG("--dir");
    ARG(g->crash_dir);
    ARG("--server");
    ARG(g->server);
    snprintf(num, sizeof(num), "%u", timeout_ms);
    ARG("--timeout-ms");
    ARG(num);
    snprintf(num, sizeof(num), "%u", g->pending_max_count);
    ARG("--max-count");
    ARG(num);
    snprintf(num, sizeof(num), "%llu", (unsigned long long)max_bytes);
    ARG("--max-bytes");
    ARG(num);
    ARG("--lock-fd");
    g->helper_lock_arg = argc;
    ARG("-1");
#undef ARG
    g->helper_argv[argc] = NULL;
    return 0;
}

static int resolve_helper(struct nwb__crash_state *g, const nwb_crash_config_t *cfg, char *out,
                          size_t cap)
{
    const char *h = cfg->helper_exe != NULL ? cfg->helper_exe : getenv("NWB_CRASH_HELPER");
    int n;

    if (h != NULL) {
        if (h[0] == '\0') {
            return 0; /* disabled */
        }
        n = snprintf(out, cap, "%s", h);
    } else {
        const char *slash = strrchr(g->exe_path, '/');

        if (slash == NULL) {
            return 0;
        }
        n = snprintf(out, cap, "%.*s/nwb-crash", (int)(slash - g->exe_path), g->exe_path);
    }
    if (n < 0 || (size_t)n >= cap) {
        return NWB_ECONFIG;
    }
    return access(out, X_OK) == 0 ? 1 : 0;
}

int nwb__crash_start_uploader(void)
{
    struct nwb__crash_state *g = &nwb__crash_g;
    int fd, rc = 0;

    if (!g->have_helper) {
        return 0;
    }
    /* A fresh open file description: the lock then belongs to the helper alone once this
     * process closes its copy, and does not outlive the helper. */
    fd = nwb__crash_lock_open(g->pending_dir);
    if (fd < 0) {
        return fd;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        rc = nwb__crash_spawn_helper(fd) == 0 ? 1 : -ECHILD;
    }
    close(fd);
    return rc;
}

int nwb_crash_install(const nwb_crash_config_t *cfg_in)
{
    static const nwb_crash_config_t defaults = NWB_CRASH_CONFIG_INIT;
    const nwb_crash_config_t *cfg = cfg_in != NULL ? cfg_in : &defaults;
    struct nwb__crash_state *g = &nwb__crash_g;
    char helper[NWB_CRASH_PATH_MAX];
    const char *s;
    ssize_t n;
    int err, has;
    uint64_t max_bytes;
    unsigned timeout_ms;

    if (atomic_load(&g->installed)) {
        return NWB_ECONFIG;
    }
    g->start_time_ns = nwb__crash_now_ns();
    g->main_tid = (int)syscall(SYS_gettid);
    g->pending_max_count =
        cfg->pending_max_count != 0 ? cfg->pending_max_count : NWB__CRASH_DEF_PENDING_COUNT;
    g->watchdog_s = cfg->watchdog_s != 0 ? cfg->watchdog_s : NWB__CRASH_DEF_WATCHDOG_S;
    max_bytes = cfg->pending_max_bytes != 0 ? cfg->pending_max_bytes : NWB__CRASH_DEF_PENDING_BYTES;
    timeout_ms = cfg->upload_timeout_ms != 0 ? cfg->upload_timeout_ms : NWB__CRASH_DEF_TIMEOUT_MS;
    g->on_crash = cfg->on_crash;
    g->on_crash_arg = cfg->on_crash_arg;

    n = readlink("/proc/self/exe", g->exe_path, sizeof(g->exe_path) - 1);
    g->exe_path[n > 0 ? n : 0] = '\0';
    s = cfg->program;
    if (s == NULL) {
        const char *slash = strrchr(g->exe_path, '/');

        s = slash != NULL ? slash + 1 : g->exe_path;
    }
    nwb_safe_name(g->program, s, strlen(s), "program");
    s = pick(cfg->run_id, "NWB_RUN_ID", NULL);
    if (s != NULL) {
        nwb_safe_name(g->run_id, s, strlen(s), "run");
    } else {
        char id[17];

        nwb_run_id_generate(id);
        copy_bounded(g->run_id, sizeof(g->run_id), id);
    }
    copy_bounded(g->version, sizeof(g->version), pick(cfg->version, NULL, NWB_VERSION_STRING));
    copy_bounded(g->build_config, sizeof(g->build_config),
                 pick(cfg->build_config, NULL, NWB_CONFIG_NAME));
    nwb_build_id(g->build_id, sizeof(g->build_id));
    copy_bounded(g->server, sizeof(g->server),
                 pick(cfg->server, "NWB_LOGSERVER", NWB__CRASH_DEF_SERVER));
    read_cmdline(g);

    err = absolute_path(pick(cfg->crash_dir, "NWB_CRASH_DIR", NWB__CRASH_DEF_DIR), g->crash_dir,
                        sizeof(g->crash_dir));
    if (err != 0) {
        return err;
    }
    if (snprintf(g->pending_dir, sizeof(g->pending_dir), "%s/pending", g->crash_dir) >=
            (int)sizeof(g->pending_dir) ||
        snprintf(g->upload_log, sizeof(g->upload_log), "%s/upload.log", g->crash_dir) >=
            (int)sizeof(g->upload_log)) {
        return NWB_ECONFIG; /* the crash folder's path is too long */
    }
    err = nwb_mkdir_p(g->pending_dir, 0700); /* crash packages are private */
    if (err != 0) {
        return err;
    }
    has = resolve_helper(g, cfg, helper, sizeof(helper));
    if (has < 0) {
        return has;
    }
    g->have_helper = 0;
    if (has) {
        err = build_helper_argv(g, helper, timeout_ms, max_bytes);
        if (err != 0) {
            return err;
        }
        g->have_helper = 1;
    }
    g->lock_fd = nwb__crash_lock_open(g->pending_dir);
    if (g->lock_fd < 0) {
        return g->lock_fd;
    }

    /* glibc loads the unwinder (libgcc_s) on the first backtrace(): do it now, not in the
     * handler, where dlopen() is not allowed. */
    {
        void *warm[4];

        (void)backtrace(warm, 4);
    }
    err = nwb_crash_thread_prepare();
    if (err != 0) {
        goto fail_lock;
    }
    err = nwb__crash_handlers_set();
    if (err != 0) {
        goto fail_stack;
    }
    atomic_store(&g->installed, 1);
    nwb_log_tail_enable(1); /* from now on the client worker keeps the last lines for packages */

    if (!cfg->no_upload_at_start && g->have_helper &&
        nwb__crash_pending_count(g->pending_dir) > 0) {
        (void)nwb__crash_start_uploader();
    }
    return 0;

fail_stack:
    nwb_crash_thread_release();
fail_lock:
    close(g->lock_fd);
    g->lock_fd = -1;
    return err;
}

void nwb_crash_uninstall(void)
{
    struct nwb__crash_state *g = &nwb__crash_g;

    if (!atomic_load(&g->installed)) {
        return;
    }
    nwb__crash_handlers_restore();
    nwb_crash_thread_release();
    if (g->lock_fd >= 0) {
        close(g->lock_fd);
        g->lock_fd = -1;
    }
    atomic_store(&g->installed, 0);
}

const char *nwb_crash_run_id(void)
{
    return nwb__crash_g.run_id;
}

const char *nwb_crash_dir(void)
{
    return nwb__crash_g.crash_dir;
}
