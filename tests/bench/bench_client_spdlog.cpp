/* SPDX-License-Identifier: MIT */
/*
 * bench_client_spdlog.cpp - the spdlog peers (Debian libspdlog-dev): the async
 * logger (async_factory: default queue of 8192 entries, 1 worker thread,
 * overflow policy block) and the sync logger, both to basic_file_sink_mt.
 */
#include <cstdio>
#include <memory>
#include <string>

#include <spdlog/async.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "bench_client.h"
#include "bench_util.h"

namespace
{

void log_spdlog(void *self, uint64_t i)
{
    static_cast<spdlog::logger *>(self)->info(NWB_BENCH_FMT_FMTLIB, nwb_bench_arg_frame(i),
                                              nwb_bench_arg_ms(i), nwb_bench_arg_name(i));
}

int run(const nwb_bench_params *p, nwb_bench_result *r, bool async)
{
    const std::string path =
        std::string(p->dir) + (async ? "/spdlog_async.log" : "/spdlog_sync.log");
    std::shared_ptr<spdlog::logger> lg;
    uint64_t t0 = 0;
    size_t overrun = 0;
    int rc;

    try {
        if (async) {
            spdlog::init_thread_pool(spdlog::details::default_async_q_size, 1);
            lg = spdlog::basic_logger_mt<spdlog::async_factory>("bench_async", path, true);
            std::snprintf(r->note, sizeof(r->note),
                          "async_factory: queue %zu, 1 thread, overflow policy block",
                          spdlog::details::default_async_q_size);
        } else {
            lg = spdlog::basic_logger_mt("bench_sync", path, true);
            std::snprintf(r->note, sizeof(r->note), "sync basic_file_sink_mt, formats on caller");
        }
    } catch (const std::exception &e) {
        std::snprintf(r->error, sizeof(r->error), "spdlog setup: %s", e.what());
        return -1;
    }
    rc = nwb_bench_run_producers(p, log_spdlog, lg.get(), r, &t0);
    if (async) {
        overrun = spdlog::thread_pool()->overrun_counter();
    }
    /* Drain: the async queue is FIFO and the pool joins its thread only after the
     * queued records; the file sink closes (flushes) when the last reference goes. */
    lg->flush();
    lg.reset();
    spdlog::shutdown();
    r->wall_s = static_cast<double>(nwb_bench_now_ns() - t0) / 1e9;
    if (rc != 0) {
        return -1;
    }
    r->dropped = overrun;
    r->lines = nwb_bench_count_lines(p->dir, NWB_BENCH_MARKER);
    r->ok = 1;
    return 0;
}

} // namespace

extern "C" int nwb_bench_peer_spdlog_async(const nwb_bench_params *p, nwb_bench_result *r)
{
    return run(p, r, true);
}

extern "C" int nwb_bench_peer_spdlog_sync(const nwb_bench_params *p, nwb_bench_result *r)
{
    return run(p, r, false);
}
