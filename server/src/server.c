/* SPDX-License-Identifier: MIT */
/*
 * server.c - the server's lifecycle: settings check, loading the name
 * symbols, the log worker, the listener, the run index, the event bus of
 * GET /v1/events, the crash ingest, signals (SIGHUP reloads the name
 * symbols), and the graceful stop (stop accepting, answer what is complete,
 * stop the crash worker, then drain and join the log worker, write the run
 * index's counters, close every handle).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "crash_int.h"
#include "events_int.h"
#include "forward/forward_config.h"
#include "forward/forwarder.h"
#include "read_int.h"
#include "server_int.h"
#include "symbols_int.h"

static void on_handle_closed(uv_handle_t *h)
{
    struct nwb_server *srv = h->data;

    srv->handles_open--;
}

static void close_handle(struct nwb_server *srv, uv_handle_t *h)
{
    if (h->data == srv && !uv_is_closing(h)) {
        uv_close(h, on_handle_closed);
    }
}

static void srv_free(struct nwb_server *srv)
{
    nwb__tel_cache_destroy(srv->tel_cache);
    nwb_free(srv->read_buf);
    nwb_free(srv->out_dir);
    nwb_free(srv->bind_addr);
    nwb_free(srv->symbols_dir);
    for (unsigned i = 0; i < NWB_SERVER_NAMESYM_DIRS_MAX; i++) {
        nwb_free(srv->namesym_dirs[i]);
    }
    nwb__run_index_destroy(srv->runs);
    nwb__auth_wipe(&srv->auth, sizeof(srv->auth));
    nwb_free(srv);
}

/* The log worker returned a job: a connection's, or the name-table switch. */
static void on_job_done(void *ctx, struct nwb__log_job *job)
{
    struct nwb_server *srv = ctx;

    nwb__flow_job_returned(srv);
    if (job == &srv->reload.job) {
        nwb__names_reload_switched(srv, job);
    } else {
        nwb__run_index_log_job(srv->runs, job);
        if (job->status == NWB__JOB_WRITTEN) {
            nwb__forwarder_mark(srv->forwarder, job->dir);
        }
        nwb__conn_job_finished(NWB_CONTAINER_OF(job, struct nwb__conn, job));
    }
    nwb__server_maybe_finish(srv);
}

/* A run's counters file was written: the forwarder's next pass sends its nwb_runs row. */
static void on_run_saved(void *ctx, const char *dir)
{
    struct nwb_server *srv = ctx;

    nwb__forwarder_mark(srv->forwarder, dir);
}

static void on_connection(uv_stream_t *listener, int status)
{
    struct nwb_server *srv = listener->data;

    if (status < 0) {
        /* Once per kind (EMFILE can repeat for every connection attempt). */
        if (srv->accept_err_reported != status) {
            nwb__console("warning: accepting connections failed: %s; retrying",
                         uv_strerror(status));
            srv->accept_err_reported = status;
        }
        return;
    }
    srv->accept_err_reported = 0;
    nwb__conn_accept(srv);
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct nwb_server *srv = h->data;

    if (signum == SIGHUP) {
        nwb__names_reload_start(srv);
        return;
    }
    if (srv->stopping) {
        nwb__console("signal %d: already stopping, finishing in-flight requests", signum);
        return;
    }
    nwb_server_shutdown(srv);
}

static void on_stop_async(uv_async_t *h)
{
    nwb_server_shutdown(h->data);
}

/*
 * Descriptors kept out of the connection cap: the server's own (loop, listener,
 * stdio, threads), the open runs' log and state files, crash and telemetry
 * work, /metrics folder scans. Beyond the cap a connection gets a clean 503;
 * past the descriptor limit it could only be accepted and closed unanswered
 * (libuv's EMFILE fallback), and run files could not be opened.
 */
#define FD_RESERVE         64
#define FD_MIN_CONNECTIONS 16

/* Lower the connection cap to what RLIMIT_NOFILE leaves (main.c raised the soft limit to the
 * hard one already), and say so once. */
static void fit_connections_to_fd_limit(struct nwb_server *srv)
{
    struct rlimit rl;
    rlim_t room;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
        return;
    }
    room = rl.rlim_cur > FD_RESERVE + FD_MIN_CONNECTIONS ? rl.rlim_cur - FD_RESERVE
                                                         : FD_MIN_CONNECTIONS;
    if (srv->max_connections > room) {
        nwb__console("note: --max-connections %u lowered to %u: the descriptor limit "
                     "(RLIMIT_NOFILE) is %llu and %d are kept for files",
                     srv->max_connections, (unsigned)room, (unsigned long long)rl.rlim_cur,
                     FD_RESERVE);
        srv->max_connections = (unsigned)room;
    }
}

static int copy_config(struct nwb_server *srv, const nwb_server_config_t *cfg)
{
    srv->cfg = *cfg;
    srv->out_dir = nwb_strdup(cfg->out_dir);
    srv->bind_addr = nwb_strdup(cfg->bind_addr);
    if (srv->out_dir == NULL || srv->bind_addr == NULL) {
        return -ENOMEM;
    }
    srv->cfg.out_dir = srv->out_dir;
    srv->cfg.bind_addr = srv->bind_addr;
    if (cfg->symbols_dir != NULL && cfg->symbols_dir[0] != '\0') {
        srv->symbols_dir = nwb_strdup(cfg->symbols_dir);
    } else {
        const size_t n = strlen(cfg->out_dir) + sizeof("/symbols");

        srv->symbols_dir = nwb_malloc(n);
        if (srv->symbols_dir != NULL) {
            snprintf(srv->symbols_dir, n, "%s/symbols", cfg->out_dir);
        }
    }
    if (srv->symbols_dir == NULL) {
        return -ENOMEM;
    }
    srv->cfg.symbols_dir = srv->symbols_dir;
    for (unsigned i = 0; i < cfg->namesym_dir_count; i++) {
        srv->namesym_dirs[i] = nwb_strdup(cfg->namesym_dirs[i]);
        if (srv->namesym_dirs[i] == NULL) {
            return -ENOMEM;
        }
        srv->cfg.namesym_dirs[i] = srv->namesym_dirs[i];
    }
    srv->namesym_dir_count = cfg->namesym_dir_count;
    srv->http_limits.max_header_bytes = cfg->max_header_bytes;
    srv->http_limits.max_headers = cfg->max_headers;
    srv->max_body_bytes = cfg->max_body_bytes;
    srv->request_timeout_ms = cfg->request_timeout_ms;
    srv->idle_timeout_ms = cfg->idle_timeout_ms;
    srv->max_connections = cfg->max_connections;
    fit_connections_to_fd_limit(srv);
    srv->queue_max_jobs = cfg->queue_max_jobs;
    srv->max_buffered_bytes = cfg->max_buffered_bytes;
    return 0;
}

static int listen_on(struct nwb_server *srv, char *errbuf, size_t errlen)
{
    struct sockaddr_storage ss;
    int namelen = (int)sizeof(ss);
    int err;

    srv->ipv6 = strchr(srv->bind_addr, ':') != NULL;
    if (srv->ipv6) {
        err = uv_ip6_addr(srv->bind_addr, srv->cfg.port, (struct sockaddr_in6 *)(void *)&ss);
    } else {
        err = uv_ip4_addr(srv->bind_addr, srv->cfg.port, (struct sockaddr_in *)(void *)&ss);
    }
    if (err) {
        snprintf(errbuf, errlen, "--bind '%s' is not an IPv4 or IPv6 address", srv->bind_addr);
        return NWB_ECONFIG;
    }
    err = uv_tcp_init(srv->loop, &srv->listener);
    if (err) {
        snprintf(errbuf, errlen, "uv_tcp_init: %s", uv_strerror(err));
        return err;
    }
    srv->listener.data = srv;
    srv->handles_open++;
    err = uv_tcp_bind(&srv->listener, (const struct sockaddr *)&ss, 0);
    if (err == 0) {
        err = uv_listen((uv_stream_t *)&srv->listener, 511, on_connection);
    }
    if (err == 0) {
        err = uv_tcp_getsockname(&srv->listener, (struct sockaddr *)&ss, &namelen);
    }
    if (err) {
        snprintf(errbuf, errlen, "cannot listen on %s port %d: %s", srv->bind_addr, srv->cfg.port,
                 uv_strerror(err));
        return err;
    }
    srv->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)(void *)&ss)->sin6_port)
                                         : ntohs(((struct sockaddr_in *)(void *)&ss)->sin_port);
    return 0;
}

static int start_signals(struct nwb_server *srv, char *errbuf, size_t errlen)
{
    uv_signal_t *hs[3] = {&srv->sigint, &srv->sigterm, &srv->sighup};
    const int nums[3] = {SIGINT, SIGTERM, SIGHUP};

    for (int i = 0; i < 3; i++) {
        int err = uv_signal_init(srv->loop, hs[i]);

        if (err) {
            snprintf(errbuf, errlen, "uv_signal_init: %s", uv_strerror(err));
            return err;
        }
        hs[i]->data = srv;
        srv->handles_open++;
        err = uv_signal_start(hs[i], on_signal, nums[i]);
        if (err) {
            snprintf(errbuf, errlen, "uv_signal_start: %s", uv_strerror(err));
            return err;
        }
    }
    return 0;
}

/* The run index or the event bus closed its handles (each counts as one of handles_open);
 * after a failed create the last handle frees the server. */
static void on_part_closed(void *ctx)
{
    struct nwb_server *srv = ctx;

    if (--srv->handles_open == 0 && srv->failed) {
        srv_free(srv);
    }
}

static void close_own_handles(struct nwb_server *srv)
{
    nwb__events_close(srv->events, on_part_closed, srv);
    srv->events = NULL;
    close_handle(srv, (uv_handle_t *)&srv->listener);
    close_handle(srv, (uv_handle_t *)&srv->stop_async);
    close_handle(srv, (uv_handle_t *)&srv->sigint);
    close_handle(srv, (uv_handle_t *)&srv->sigterm);
    close_handle(srv, (uv_handle_t *)&srv->sighup);
}

/*
 * The folders sidecars come from: the --namesym-dir ones, or (none given) the
 * executable's own folder. Then the first load; a --namesym-dir that cannot
 * be read fails the start.
 */
static int names_start(struct nwb_server *srv, char *errbuf, size_t errlen)
{
    const int explicit_dirs = srv->namesym_dir_count > 0;

    if (!explicit_dirs) {
        char dir[4096];
        char ebuf[96];
        const int err = nwb__names_exe_dir(dir, sizeof(dir));

        if (err == 0) {
            srv->namesym_dirs[0] = nwb_strdup(dir);
            if (srv->namesym_dirs[0] == NULL) {
                snprintf(errbuf, errlen, "out of memory");
                return -ENOMEM;
            }
            srv->namesym_dir_count = 1;
        } else {
            nwb__console("warning: namesym: cannot find the executable's folder: %s; no "
                         "sidecars are loaded",
                         nwb_strerror_r(err, ebuf, sizeof(ebuf)));
        }
    }
    return nwb__names_load(srv->namesym_dirs, srv->namesym_dir_count, explicit_dirs, &srv->names,
                           errbuf, errlen);
}

/* Every crash archive stored or settled (crash_int.h; the submitting thread or the crash
 * worker): the run index counts settled ones, the event bus announces each change. */
static void on_crash_change(void *ctx, const struct nwb__crash_settled *s)
{
    struct nwb_server *srv = ctx;
    const char *const status = s->queued ? "queued" : s->extracted ? "extracted" : "invalid";

    nwb__run_index_crash_settled(srv->runs, s);
    nwb__events_crash_note(srv->events, s->id, status, s->program, s->run);
}

/* The run index saw a run change (loop thread): a crash attributed to it is a run event. */
static void on_run_change(void *ctx, const struct nwb__run_info *info, unsigned what)
{
    struct nwb_server *srv = ctx;

    if (what & NWB__RUN_CHANGE_CRASH) {
        nwb__events_run_changed(srv->events, info->id, info->program, info->run, "crash");
    }
    if (what & NWB__RUN_CHANGE_ENDED) {
        nwb__events_run_changed(srv->events, info->id, info->program, info->run, "ended");
    }
    if (what & NWB__RUN_CHANGE_RESUMED) {
        nwb__events_run_changed(srv->events, info->id, info->program, info->run, "active");
    }
}

/* --debuginfod-urls, --debuginfod-cache and --debuginfod-timeout-ms, after sym->symbols_dir
 * and sym->timeout_ms are set. The lookups get at most half the symboliser's wall-clock cap,
 * so a crash whose servers all hang is still symbolised from what was found. */
static int debuginfod_config(const nwb_server_config_t *cfg, struct nwb_crash_symbolize_cfg *sym,
                             char *errbuf, size_t errlen)
{
    const unsigned half = sym->timeout_ms / 2 > 0 ? sym->timeout_ms / 2 : 1;
    const unsigned total = cfg->debuginfod_timeout_ms < half ? cfg->debuginfod_timeout_ms : half;
    int n;

    sym->debuginfod_urls[0] = '\0';
    sym->debuginfod_cache[0] = '\0';
    snprintf(sym->debuginfod_timeout_ms, sizeof(sym->debuginfod_timeout_ms), "%u", total);
    if (cfg->debuginfod_urls == NULL || cfg->debuginfod_urls[0] == '\0') {
        return 0;
    }
    n = snprintf(sym->debuginfod_urls, sizeof(sym->debuginfod_urls), "%s", cfg->debuginfod_urls);
    if (n < 0 || (size_t)n >= sizeof(sym->debuginfod_urls)) {
        snprintf(errbuf, errlen, "--debuginfod-urls: longer than %u bytes",
                 NWB_CRASH_SYMBOLIZE_PATH_MAX - 1);
        return NWB_ECONFIG;
    }
    n = cfg->debuginfod_cache != NULL && cfg->debuginfod_cache[0] != '\0'
            ? snprintf(sym->debuginfod_cache, sizeof(sym->debuginfod_cache), "%s",
                       cfg->debuginfod_cache)
            : snprintf(sym->debuginfod_cache, sizeof(sym->debuginfod_cache), "%s/.debuginfod-cache",
                       sym->symbols_dir);
    if (n < 0 || (size_t)n >= sizeof(sym->debuginfod_cache)) {
        snprintf(errbuf, errlen, "--debuginfod-cache: path longer than %u bytes",
                 NWB_CRASH_SYMBOLIZE_PATH_MAX - 1);
        return NWB_ECONFIG;
    }
    n = nwb_mkdir_p(sym->debuginfod_cache, 0755);
    if (n != 0) {
        char ebuf[96];

        snprintf(errbuf, errlen, "--debuginfod-cache %s: cannot be created: %s",
                 sym->debuginfod_cache, nwb_strerror_r(n, ebuf, sizeof(ebuf)));
        return n;
    }
    return 0;
}

/* --symbolizer, --symbols-dir and the limits (docs/operations.md, "Symbolisation"). */
static int symbolize_config(const struct nwb_server *srv, struct nwb_crash_symbolize_cfg *sym,
                            char *errbuf, size_t errlen)
{
    const nwb_server_config_t *cfg = &srv->cfg;
    int n, err;

    sym->timeout_ms = cfg->symbolize_timeout_ms;
    sym->max_memory_bytes = cfg->symbolize_memory_bytes;
    sym->max_cpu_s = cfg->symbolize_cpu_s;
    n = cfg->symbols_dir != NULL
            ? snprintf(sym->symbols_dir, sizeof(sym->symbols_dir), "%s", cfg->symbols_dir)
            : snprintf(sym->symbols_dir, sizeof(sym->symbols_dir), "%s/symbols", srv->out_dir);
    if (n < 0 || (size_t)n >= sizeof(sym->symbols_dir)) {
        snprintf(errbuf, errlen, "--symbols-dir: path longer than %u bytes",
                 NWB_CRASH_SYMBOLIZE_PATH_MAX - 1);
        return NWB_ECONFIG;
    }
    err = debuginfod_config(cfg, sym, errbuf, errlen);
    if (err != 0) {
        return err;
    }
    if (cfg->symbolizer != NULL) {
        n = snprintf(sym->symbolizer, sizeof(sym->symbolizer), "%s", cfg->symbolizer);
        if (n < 0 || (size_t)n >= sizeof(sym->symbolizer) || access(sym->symbolizer, X_OK) != 0) {
            snprintf(errbuf, errlen, "--symbolizer %s: not an executable file", cfg->symbolizer);
            return NWB_ECONFIG;
        }
        return 0;
    }
    /* The default sits beside the server's executable (both are built and installed together);
     * when it is missing, a crash's symbolisation fails and says so. */
    n = (int)readlink("/proc/self/exe", sym->symbolizer, sizeof(sym->symbolizer) - 1);
    if (n <= 0) {
        n = 0;
    }
    sym->symbolizer[n] = '\0';
    {
        char *slash = strrchr(sym->symbolizer, '/');
        const size_t at = slash != NULL ? (size_t)(slash - sym->symbolizer) + 1 : 0;

        if (at + sizeof("nwb-symbolize") > sizeof(sym->symbolizer)) {
            snprintf(errbuf, errlen, "the server's own path is too long");
            return NWB_ECONFIG;
        }
        memcpy(sym->symbolizer + at, "nwb-symbolize", sizeof("nwb-symbolize"));
    }
    return 0;
}

static int crash_start(struct nwb_server *srv, char *errbuf, size_t errlen)
{
    const nwb_server_config_t *cfg = &srv->cfg;
    struct nwb_crash_caps caps = NWB_CRASH_CAPS_INIT;
    char ebuf[96];
    int err;

    caps.max_archive_bytes = cfg->crash_max_archive_bytes;
    caps.max_entries = cfg->crash_max_entries;
    caps.max_path_bytes = cfg->crash_max_path_bytes;
    caps.max_path_depth = cfg->crash_max_path_depth;
    caps.max_entry_bytes = cfg->crash_max_entry_bytes;
    caps.max_total_bytes = cfg->crash_max_total_bytes;
    caps.max_ratio = cfg->crash_max_ratio;
    caps.max_queue = cfg->crash_max_queue;
    caps.retain_packages = cfg->crash_retain_packages;
    caps.retain_raw = cfg->crash_retain_raw;
    caps.retain_invalid = cfg->crash_retain_invalid;
    err = symbolize_config(srv, &caps.symbolize, errbuf, errlen);
    if (err != 0) {
        return err;
    }
    err = nwb__crash_ingest_create(srv->out_dir, &caps, &srv->crash);
    if (err) {
        snprintf(errbuf, errlen, "cannot start the crash ingest under %s/crashes: %s", srv->out_dir,
                 nwb_strerror_r(err, ebuf, sizeof(ebuf)));
    }
    return err;
}

/* After the log worker is joined: the tables it and the loop held. */
static void names_release(struct nwb_server *srv)
{
    nwb__names_unref(srv->worker_names);
    srv->worker_names = NULL;
    nwb__names_unref(srv->names);
    srv->names = NULL;
}

/* Failed create: close what was opened; the memory goes once the handles closed. */
static void on_failed_closed(uv_handle_t *h)
{
    struct nwb_server *srv = h->data;

    if (--srv->handles_open == 0) {
        srv_free(srv);
    }
}

static void fail_cleanup(struct nwb_server *srv)
{
    uv_handle_t *hs[5] = {(uv_handle_t *)&srv->listener, (uv_handle_t *)&srv->stop_async,
                          (uv_handle_t *)&srv->sigint, (uv_handle_t *)&srv->sigterm,
                          (uv_handle_t *)&srv->sighup};

    nwb__forwarder_stop(srv->forwarder);
    srv->forwarder = NULL;
    nwb__crash_ingest_stop(srv->crash);
    srv->crash = NULL;
    if (srv->worker != NULL) {
        nwb__log_worker_stop(srv->worker);
        srv->worker = NULL;
    }
    names_release(srv);
    if (srv->handles_open == 0) {
        srv_free(srv);
        return;
    }
    srv->failed = 1;
    if (srv->runs != NULL) {
        nwb__run_index_close(srv->runs, on_part_closed, srv);
    }
    nwb__events_close(srv->events, on_part_closed, srv);
    srv->events = NULL;
    for (int i = 0; i < 5; i++) {
        if (hs[i]->data == srv && !uv_is_closing(hs[i])) {
            uv_close(hs[i], on_failed_closed);
        }
    }
}

int nwb_server_create(uv_loop_t *loop, const nwb_server_config_t *cfg, nwb_server_t **out,
                      char *errbuf, size_t errlen)
{
    struct nwb_server *srv;
    char hex[17];
    int err;

    *out = NULL;
    /* Read the time zone once, before any thread starts: later gmtime_r / strftime calls and
     * libarchive's localtime calls on the crash worker then find it set and never re-read it
     * (glibc allocates on the first read, which TSan reports as a race between threads). */
    tzset();
    err = nwb__server_config_check(cfg, errbuf, errlen);
    if (err) {
        return err;
    }
    srv = nwb_calloc(1, sizeof(*srv));
    if (srv == NULL) {
        snprintf(errbuf, errlen, "out of memory");
        return -ENOMEM;
    }
    srv->loop = loop;
    srv->start_mono_ns = nwb_time_mono_ns();
    nwb__tel_ingest_metrics_init(&srv->tel_metrics);
    nwb_run_id_generate(hex);
    snprintf(srv->anon_run, sizeof(srv->anon_run), "anon-%s", hex);
    if (cfg->token_file != NULL) {
        err = nwb__auth_load(&srv->auth, cfg->token_file, errbuf, errlen);
        if (err != 0) {
            srv_free(srv);
            return err; /* NWB_ECONFIG: errbuf names the file and the cause */
        }
    }
    err = copy_config(srv, cfg);
    if (err == 0) {
        srv->read_buf = nwb_malloc(NWB__READ_BUF_SIZE);
        err = srv->read_buf == NULL ? -ENOMEM : 0;
    }
    if (err == 0) {
        const struct nwb__tel_ingest_limits tel = NWB__TEL_INGEST_LIMITS_INIT;

        srv->tel_limits = tel;
        srv->tel_limits.run_stream_max = cfg->telemetry_run_max_bytes;
        err = nwb__tel_cache_create(cfg->telemetry_cache_runs, cfg->telemetry_cache_bytes,
                                    &srv->tel_metrics, &srv->tel_cache);
    }
    if (err) {
        snprintf(errbuf, errlen, "out of memory");
        goto fail;
    }
    err = nwb__events_create(srv, &srv->events);
    if (err) {
        char ebuf[96];

        snprintf(errbuf, errlen, "cannot start the event bus: %s",
                 nwb_strerror_r(err, ebuf, sizeof(ebuf)));
        goto fail;
    }
    srv->handles_open++;
    err = names_start(srv, errbuf, errlen);
    if (err) {
        goto fail;
    }
    srv->worker_names = srv->names;
    nwb__names_ref(srv->worker_names);
    err = nwb__log_worker_create(loop, srv->out_dir, cfg->max_open_runs, srv->worker_names,
                                 on_job_done, srv, &srv->worker, errbuf, errlen);
    if (err) {
        goto fail;
    }
    err = listen_on(srv, errbuf, errlen);
    if (err) {
        goto fail;
    }
    /* After the log worker made runs/, before the crash ingest's worker settles anything. */
    err = nwb__run_index_create(loop, srv->out_dir, cfg->run_live_s, NWB__RUN_INDEX_MAX, &srv->runs,
                                errbuf, errlen);
    if (err) {
        goto fail;
    }
    srv->handles_open++;
    /* After listening: a second server started on the same --out by mistake fails above,
     * before the crash ingest's start-up cleanup could touch the first one's folders. */
    err = crash_start(srv, errbuf, errlen);
    if (err) {
        goto fail;
    }
    err = nwb__symbols_dir_prepare(srv->symbols_dir, errbuf, errlen);
    if (err) {
        goto fail;
    }
    nwb__run_index_attach_crashes(srv->runs, srv->crash);
    /* Then the ingest's one hook tells both the index and the event bus (the index's own,
     * set by attach, covered its start-up scan; no stream can be open yet). */
    nwb__crash_ingest_on_settled(srv->crash, on_crash_change, srv);
    nwb__run_index_watch(srv->runs, on_run_change, srv);
    /* Its own thread, reading only files: never on the ingest path (docs/operations.md,
     * "Forwarding to ClickHouse"). */
    err = nwb__forward_start(cfg, srv->out_dir, srv->crash, &srv->forwarder, errbuf, errlen);
    if (err) {
        goto fail;
    }
    nwb__run_index_on_saved(srv->runs, on_run_saved, srv);
    err = uv_async_init(loop, &srv->stop_async, on_stop_async);
    if (err) {
        snprintf(errbuf, errlen, "uv_async_init: %s", uv_strerror(err));
        goto fail;
    }
    srv->stop_async.data = srv;
    srv->handles_open++;
    if (cfg->handle_signals) {
        err = start_signals(srv, errbuf, errlen);
        if (err) {
            goto fail;
        }
    }
    *out = srv;
    return 0;

fail:
    fail_cleanup(srv);
    return err;
}

int nwb_server_port(const nwb_server_t *srv)
{
    return srv->port;
}

const char *nwb_server_address(const nwb_server_t *srv, char *buf, size_t len)
{
    snprintf(buf, len, srv->ipv6 ? "[%s]:%d" : "%s:%d", srv->bind_addr, srv->port);
    return buf;
}

void nwb_server_shutdown(nwb_server_t *srv)
{
    struct nwb__conn *c;
    struct nwb__conn *next;

    if (srv == NULL || srv->stopping) {
        return;
    }
    srv->stopping = 1;
    close_handle(srv, (uv_handle_t *)&srv->listener);
    /* conn_close only starts closing (memory goes in close callbacks): the list stays valid. */
    for (c = srv->conns; c != NULL; c = next) {
        next = c->next;
        nwb__conn_shutdown(c);
    }
    nwb__server_maybe_finish(srv);
}

void nwb__server_maybe_finish(struct nwb_server *srv)
{
    /* Connections with offloaded work are still counted; a reload holds the worker too. */
    if (!srv->stopping || srv->worker_stopped || srv->conn_count > 0 ||
        nwb__log_worker_outstanding(srv->worker) > 0 || srv->reload.state != 0) {
        return;
    }
    srv->worker_stopped = 1;
    /* The crash worker first (an extraction is abandoned at its next block and redone at the
     * next start: docs/operations.md, "Signals"), then the log worker drains and joins
     * (docs/architecture.md, "Shutdown order"). The forwarder, which lists the crash store,
     * lets go of it first. */
    nwb__forwarder_detach_crashes(srv->forwarder);
    nwb__crash_ingest_stop(srv->crash);
    srv->crash = NULL;
    nwb__log_worker_stop(srv->worker);
    srv->worker = NULL;
    /* Last: it only reads what the log worker wrote; what it has not sent yet is sent from
     * the cursors at the next start. */
    nwb__forwarder_stop(srv->forwarder);
    srv->forwarder = NULL;
    names_release(srv);
    /* Every job came back: the counters are final. */
    nwb__run_index_close(srv->runs, on_part_closed, srv);
    close_own_handles(srv);
}

void nwb_server_namesym_reload(nwb_server_t *srv)
{
    nwb__names_reload_start(srv);
}

void nwb_server_request_stop(nwb_server_t *srv)
{
    if (srv != NULL) {
        uv_async_send(&srv->stop_async);
    }
}

int nwb_server_destroy(nwb_server_t *srv)
{
    if (srv == NULL) {
        return 0;
    }
    if (srv->handles_open != 0 || srv->conn_count != 0 || srv->worker != NULL) {
        /* Not shut down: refuse to free memory libuv still points at. */
        return NWB_ECONFIG;
    }
    srv_free(srv);
    return 0;
}
