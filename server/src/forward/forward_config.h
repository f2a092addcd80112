/* SPDX-License-Identifier: MIT */
/*
 * forward_config.h - the server's --forward-clickhouse and --forward-credentials turned
 * into a running forwarder (forwarder.h), for server.c.
 */
#ifndef NWB_FORWARD_CONFIG_H
#define NWB_FORWARD_CONFIG_H

#include <stddef.h>

#include "nwb/server.h"

struct nwb__forwarder;
struct nwb__crash_ingest;

/**
 * Start the forwarder @p cfg asks for into @p *out (NULL when it asks for none): the
 * credentials file is read once, by --token-file's rules, as USER:PASSWORD; @p crashes (may
 * be NULL) is the store nwb_crashes rows come from. Returns 0, or
 * NWB_ECONFIG with a one-line reason naming the flag, or another negative code.
 */
int nwb__forward_start(const nwb_server_config_t *cfg, const char *out_dir,
                       struct nwb__crash_ingest *crashes, struct nwb__forwarder **out, char *errbuf,
                       size_t errlen);

#endif /* NWB_FORWARD_CONFIG_H */
