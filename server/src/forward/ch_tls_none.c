/* SPDX-License-Identifier: MIT */
/*
 * ch_tls_none.c - ch_tls.h for a build without OpenSSL (libssl-dev missing at configure time):
 * an https --forward-clickhouse is refused at start with the reason; http keeps working.
 */
#include <stdio.h>

#include "nwb/error.h"

#include "ch_tls.h"

static const char no_tls[] = "this nwb-logserver was built without OpenSSL (libssl-dev): "
                             "https cannot be used, only http://";

int nwb__ch_tls_create(const char *ca_file, struct nwb__ch_tls **out, char *err, size_t errlen)
{
    (void)ca_file;
    *out = NULL;
    snprintf(err, errlen, "%s", no_tls);
    return NWB_ECONFIG;
}

int nwb__ch_tls_add_ca_pem(struct nwb__ch_tls *t, const void *pem, size_t len, char *err,
                           size_t errlen)
{
    (void)t;
    (void)pem;
    (void)len;
    snprintf(err, errlen, "%s", no_tls);
    return NWB_ECONFIG;
}

void nwb__ch_tls_destroy(struct nwb__ch_tls *t)
{
    (void)t;
}

int nwb__ch_tls_connect(struct nwb__ch_tls *t, int fd, const char *host,
                        struct nwb__ch_tls_conn **out, char *reason, size_t cap)
{
    (void)t;
    (void)fd;
    (void)host;
    *out = NULL;
    snprintf(reason, cap, "%s", no_tls);
    return NWB_ECONFIG;
}

int nwb__ch_tls_send(struct nwb__ch_tls_conn *c, const void *data, size_t len)
{
    (void)c;
    (void)data;
    (void)len;
    return NWB_ECONFIG;
}

ssize_t nwb__ch_tls_recv(struct nwb__ch_tls_conn *c, void *buf, size_t cap)
{
    (void)c;
    (void)buf;
    (void)cap;
    return NWB_ECONFIG;
}

void nwb__ch_tls_close(struct nwb__ch_tls_conn *c)
{
    (void)c;
}
