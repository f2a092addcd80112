/* SPDX-License-Identifier: MIT */
/*
 * net_stub.c - TEMPORARY link fallback for the network half of the client
 * (HTTP output, probe, launcher) until client/net_sources.cmake provides the
 * real files. Built only when NWB_CLIENT_NET_SOURCES is empty: no server
 * answers the probe, launching fails, and server mode cannot be created.
 */
#include <stdio.h>
#include <string.h>

#include "nwb/error.h"

#include "client_int.h"

int nwb__http_out_create(const struct nwb__settings *s, struct nwb__stats *st,
                         struct nwb__out **out, char *errbuf, size_t errlen)
{
    (void)s;
    (void)st;
    *out = NULL;
    snprintf(errbuf, errlen, "server mode is not built into this client (no HTTP output)");
    return NWB_ECONFIG;
}

int nwb__server_probe(const char *host, const char *port, unsigned timeout_ms)
{
    (void)host;
    (void)port;
    (void)timeout_ms;
    return 0;
}

int nwb__server_launch(const char *exe, const char *log_dir, unsigned timeout_ms,
                       struct nwb__launched *l, char *addr, size_t addrlen, char *errbuf,
                       size_t errlen)
{
    (void)exe;
    (void)log_dir;
    (void)timeout_ms;
    memset(l, 0, sizeof(*l));
    if (addrlen > 0) {
        addr[0] = '\0';
    }
    snprintf(errbuf, errlen, "launching is not built into this client");
    return NWB_ECONFIG;
}

void nwb__server_stop(struct nwb__launched *l)
{
    memset(l, 0, sizeof(*l));
}
