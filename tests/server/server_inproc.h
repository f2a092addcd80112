/* SPDX-License-Identifier: MIT */
/*
 * server_inproc.h - the server library in-process for unit tests (test_server_loop.c,
 * test_events.c): nwb_server_create() on a private loop with port 0 and a fresh --out, and
 * the end that checks every handle was released. Header-only (static inline); the caller
 * runs the loop on its own thread. Needs cmocka and test_support.h.
 */
#ifndef NWB_SERVER_INPROC_H
#define NWB_SERVER_INPROC_H

#include <pthread.h>

#include <uv.h>

#include "nwb/server.h"
#include "test_support.h"

/*
 * Initialise @p loop and create a server on it (cfg->port 0, cfg->out_dir a fresh directory
 * tagged @p tag, written into @p dir of @p cap bytes) in @p *srv; fails the test otherwise.
 * Returns the port. The loop is not running yet: the caller can add its own handles first.
 */
static inline int tu_inproc_create(uv_loop_t *loop, const char *tag, nwb_server_config_t *cfg,
                                   char *dir, size_t cap, nwb_server_t **srv)
{
    char err[256];

    assert_int_equal(nwb_test_tmpdir(tag, dir, cap), 0);
    assert_int_equal(uv_loop_init(loop), 0);
    cfg->port = 0;
    cfg->out_dir = dir;
    if (nwb_server_create(loop, cfg, srv, err, sizeof(err)) != 0) {
        fail_msg("nwb_server_create: %s", err);
    }
    assert_true(nwb_server_port(*srv) > 0);
    return nwb_server_port(*srv);
}

/* After the server was asked to stop: join @p thread (which ran the loop), free the server,
 * close the loop (UV_EBUSY would be a leaked handle) and remove @p dir. */
static inline void tu_inproc_join(pthread_t thread, nwb_server_t *srv, uv_loop_t *loop,
                                  const char *dir)
{
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(nwb_server_destroy(srv), 0);
    assert_int_equal(uv_loop_close(loop), 0);
    nwb_test_rmtree(dir);
}

#endif /* NWB_SERVER_INPROC_H */
