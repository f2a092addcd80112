/* SPDX-License-Identifier: MIT */
/*
 * client_core.h - private declarations of the client core: the client
 * object, the producer side (client_producer.c: the logger behind the
 * NWB_LOGGER_* macros), the worker (client_worker.c), settings resolution
 * (client_config.c) and the hooks unit tests use to isolate a part.
 */
#ifndef NWB_CLIENT_CORE_H
#define NWB_CLIENT_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "nwb/log.h"

#include "client_clock.h"
#include "client_int.h"
#include "client_ring.h"

/* Bounds and timeouts of the core (docs/client.md). */
#define NWB__FATAL_FLUSH_MS    2000u /* NWB_LOGGER_FATAL waits this long before abort() */
#define NWB__CLOSE_DEADLINE_MS 5000u /* shutdown: drain and deliver for at most this long */
#define NWB__PROBE_TIMEOUT_MS  200u  /* MODE_AUTO probe of 127.0.0.1:7650 */
#define NWB__LAUNCH_TIMEOUT_MS 5000u /* waiting for a launched server's listening line */
#define NWB__LAZY_SLEEP_MS     10u   /* an idle worker looks at the rings this often ... */
#define NWB__DEEP_AFTER_MS     1000u /* ... until nothing came for this long, then sleeps deeply */
#define NWB__DEFAULT_HOST      "127.0.0.1"
#define NWB__DEFAULT_PORT      "7650"

struct nwb__worker;

/*
 * nwb_client.sleeping. Awake: producers never wake it. Lazy: a timed sleep
 * (NWB__LAZY_SLEEP_MS); a producer wakes it only when its ring is more than
 * half full. Deep: no timeout; the next record wakes it (one eventfd write).
 */
#define NWB__SLEEP_AWAKE 0
#define NWB__SLEEP_LAZY  1
#define NWB__SLEEP_DEEP  2

struct nwb_client {
    uint64_t gen; /* unique per client in this process; producers compare it */
    /* The calls' stamps (client_clock.h): producers read clock.tsc, the worker owns the rest. */
    struct nwb__clock clock;
    struct nwb__settings s;
    struct nwb__stats st;
    struct nwb__out *out;
    struct nwb__launched launched;
    nwb_logger_guard_t guard;
    char launch_note[256]; /* why launching a server failed, logged once running */
    char run_dir[1200];    /* standalone: the run's directory (nwb_client_run_dir) */

    /* The producers' rings. */
    pthread_mutex_t ring_lock;
    struct nwb__ring *rings;   /* list, under ring_lock */
    atomic_uint rings_gen;     /* bumped on every change of the list */
    uint64_t retired_accepted; /* counters of rings already freed, under ring_lock */
    uint64_t retired_dropped;

    /* The worker. */
    struct nwb__worker *w;
    pthread_t thread;
    int efd;             /* eventfd that wakes the worker */
    atomic_int sleeping; /* NWB__SLEEP_*: what the worker is (about to be) doing in poll */
    atomic_int stop;     /* destroy: drain everything, close the output, exit */
    atomic_int closing;  /* destroy started: producers waiting for room give up */

    /* nwb_client_set_line_tap(): ctx is stored before fn (release), read after it. */
    _Atomic(nwb_client_line_tap_fn) tap;
    _Atomic(void *) tap_ctx;

    /* nwb_client_flush(). */
    pthread_mutex_t flush_lock;
    pthread_cond_t flush_cond;      /* on CLOCK_MONOTONIC */
    atomic_uint_fast64_t flush_req; /* highest generation asked for */
    uint64_t flush_ack;             /* highest generation done, under flush_lock */
};

/* ---- client_producer.c ---- */

/* Once per process: the thread-exit key and the barrier mode. Returns 0 or a negative code. */
int nwb__producer_global_init(void);

/*
 * Reserve the single live-client slot and hand out a generation no other
 * client of this process had. Returns 0, or NWB_ECONFIG when a client is live.
 */
int nwb__producer_claim(uint64_t *gen);
void nwb__producer_unclaim(void);

/* The logger to register; its ops reach the live client, never a freed one. */
nwb_logger_t *nwb__producer_logger(void);

/* Make @p c the client every producer call goes to (after its worker runs). */
void nwb__producer_publish(struct nwb_client *c);

/*
 * Stop routing calls to the live client and wait until no thread is inside a
 * call that could still touch it. Calls made afterwards go to stderr.
 */
void nwb__producer_retire(struct nwb_client *c);

/* The calling thread is the worker: its own records never wait for room. */
void nwb__producer_mark_worker(void);

/* The heavy side of the producer/worker barrier pair (membarrier, or a fence). */
void nwb__barrier_heavy(void);

/* Wake the worker if it sleeps at all (or unconditionally with @p force). */
void nwb__worker_wake(struct nwb_client *c, int force);

/* ---- client_worker.c ---- */

/* Start the worker thread (after c->out, c->efd and the locks exist). Returns 0 or -errno. */
int nwb__worker_start(struct nwb_client *c);

/* Ask the worker to drain everything, close the output and exit; join it. */
void nwb__worker_stop(struct nwb_client *c);

/* ---- client_config.c ---- */

/*
 * Resolve @p cfg (may be NULL for defaults) and the environment into @p s;
 * mode stays as configured (AUTO included). *@p explicit_server is set when a
 * server address came from the config or $NWB_LOGSERVER. Returns 0, or
 * NWB_ECONFIG with a message in @p errbuf.
 */
int nwb__settings_resolve(const nwb_client_config_t *cfg, struct nwb__settings *s,
                          int *explicit_server, char *errbuf, size_t errlen);

/*
 * Decide SERVER or STANDALONE for an AUTO @p s (probe, then maybe launch a
 * server, whose handle goes to @p l). @p note receives why a launch failed.
 */
void nwb__mode_resolve(const nwb_client_config_t *cfg, struct nwb__settings *s, int explicit_server,
                       struct nwb__launched *l, char *note, size_t notelen);

/* Split "HOST:PORT" or "[V6]:PORT". Returns 0, or NWB_ECONFIG with a message. */
int nwb__hostport_parse(const char *addr, char *host, size_t hostcap, char *port, size_t portcap,
                        char *errbuf, size_t errlen);

/* ---- test hooks (unit tests only) ---- */

/*
 * When set, nwb_client_create() builds its output with this instead of the
 * file or HTTP output (a test's capturing output). Set it before create.
 */
typedef int (*nwb__out_factory_fn)(const struct nwb__settings *s, struct nwb__stats *st,
                                   struct nwb__out **out, char *errbuf, size_t errlen);
extern nwb__out_factory_fn nwb__client_test_out_factory;

/* Rings the client holds right now (test hook: exited threads' rings get freed). */
size_t nwb__client_ring_count(nwb_client_t *c);

/* Replace the file output's descriptor (test hook; takes ownership of @p fd). */
void nwb__file_out_swap_fd(struct nwb__out *o, int fd);

#endif /* NWB_CLIENT_CORE_H */
