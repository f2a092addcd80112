/* SPDX-License-Identifier: MIT */
/*
 * client_int.h - private declarations shared by the client's files.
 *
 * The worker (client_worker.c) drains the producers' rings, renders each record's
 * message, and hands records to one output: the HTTP output (http_out.c,
 * server mode) or the file output (file_out.c, standalone). The output
 * interface below is the seam between them; everything an output does runs
 * on the worker thread.
 */
#ifndef NWB_CLIENT_INT_H
#define NWB_CLIENT_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "nwb/client.h"
#include "nwb/log_batch.h"
#include "nwb/safe_name.h"

/* Resolved settings, owned by the client, read-only once the worker runs. */
struct nwb__settings {
    char program[NWB_SAFE_NAME_MAX + 1];
    char run_id[17];
    int mode;         /* NWB_CLIENT_MODE_SERVER or _STANDALONE after resolution */
    char host[256];   /* server host (IPv4/IPv6 literal or name) */
    char port[8];     /* server port */
    char server[272]; /* "host:port" as given */
    char log_dir[1024];
    char spool_dir[1024];
    char token[256]; /* empty: no Authorization header */
    size_t ring_bytes;
    int full_policy;
    unsigned block_timeout_us;
    int console;
    size_t memory_bytes;
    size_t spool_bytes;
    size_t batch_bytes;
    unsigned flush_interval_ms;
    uint64_t start_time_ns; /* the run's start, for the standalone file name */
};

/* Counters shared between producers, the worker and nwb_client_stats_get(). */
struct nwb__stats {
    atomic_uint_fast64_t records_accepted;
    atomic_uint_fast64_t records_dropped;
    atomic_uint_fast64_t records_written;
    atomic_uint_fast64_t batches_sent;
    atomic_uint_fast64_t batches_resent;
    atomic_uint_fast64_t batches_spooled;
    atomic_uint_fast64_t batches_dropped;
    atomic_uint_fast64_t write_errors;
    atomic_uint_fast64_t connects;
};

struct nwb__out;

/* An output. All calls happen on the worker thread. */
struct nwb__out_ops {
    /*
     * Take one record. rec->msg and rec->file are borrowed for the call only
     * (copy them). Never blocks. Returns 0, or NWB_EFULL when the output holds
     * as much as its bounds allow; the worker then stops draining the rings
     * until a later service() made room (backpressure onto producers).
     */
    int (*append)(struct nwb__out *o, const nwb_log_record_t *rec);
    /*
     * End of a drain round. Seal buffered records into a batch when it is big
     * enough, when @p force is set (flush, shutdown), or when its oldest
     * record is older than the flush interval.
     */
    void (*commit)(struct nwb__out *o, uint64_t now_mono_ns, int force);
    /*
     * What to wait for: returns an fd to poll (or -1) with @p *events set, and
     * lowers @p *timeout_ms (-1 = none) to when service() must run anyway
     * (reconnect backoff, batch age).
     */
    int (*poll_prepare)(struct nwb__out *o, short *events, int *timeout_ms);
    /* Non-blocking progress after poll; @p revents is 0 on a timeout. */
    void (*service)(struct nwb__out *o, short revents, uint64_t now_mono_ns);
    /* 1 when everything appended so far is durable (acknowledged, written or spooled). */
    int (*settled)(struct nwb__out *o);
    /*
     * Shutdown: keep delivering until everything is settled or
     * @p deadline_mono_ns passes, then move whatever is left to durable
     * storage (the spool). Blocks the worker only, never a producer.
     */
    void (*close)(struct nwb__out *o, uint64_t deadline_mono_ns);
    void (*destroy)(struct nwb__out *o);
};

struct nwb__out {
    const struct nwb__out_ops *ops;
};

/* Both borrow @p s and @p st for their lifetime. */
int nwb__http_out_create(const struct nwb__settings *s, struct nwb__stats *st,
                         struct nwb__out **out, char *errbuf, size_t errlen);
/* The standalone run directory <log_dir>/runs/<program>_<YYYYmmdd-HHMMSS>_<run> (snprintf's
 * result). */
int nwb__run_dir_format(const struct nwb__settings *s, char *dst, size_t cap);
int nwb__file_out_create(const struct nwb__settings *s, struct nwb__stats *st,
                         struct nwb__out **out, char *errbuf, size_t errlen);

/*
 * Quick start-up probe: 1 when a server accepts a TCP connection at
 * host:port within @p timeout_ms, else 0. Used by MODE_AUTO.
 */
int nwb__server_probe(const char *host, const char *port, unsigned timeout_ms);

/*
 * Launching a server for this run (launcher.c). nwb__server_launch() finds
 * nwb-logserver (@p exe, else next to /proc/self/exe, else $PATH), starts it
 * with --port 0 and waits up to @p timeout_ms for its listening
 * line, then writes the real "host:port" into @p addr. nwb__server_stop()
 * sends SIGTERM and reaps it (bounded wait, then SIGKILL).
 */
struct nwb__launched {
    int pid; /* 0 when nothing was launched */
    int detach;
};
int nwb__server_launch(const char *exe, const char *log_dir, unsigned timeout_ms,
                       struct nwb__launched *l, char *addr, size_t addrlen, char *errbuf,
                       size_t errlen);
void nwb__server_stop(struct nwb__launched *l);

#endif /* NWB_CLIENT_INT_H */
