/* SPDX-License-Identifier: MIT */
/* forward_config.c - --forward-clickhouse and its credentials into a forwarder. */
#include <stdio.h>
#include <string.h>

#include "nwb/error.h"

#include "../server_int.h"
#include "forward_config.h"
#include "forwarder.h"

int nwb__forward_start(const nwb_server_config_t *cfg, const char *out_dir,
                       struct nwb__crash_ingest *crashes, struct nwb__forwarder **out, char *errbuf,
                       size_t errlen)
{
    struct nwb__fwd_config fc = {cfg->forward_clickhouse, NULL, NULL, out_dir, NULL, crashes,
                                 cfg->forward_ca_file};
    struct nwb__auth cred;
    char user[NWB_TOKEN_MAX + 1], reason[512];
    char *colon;
    int err;

    *out = NULL;
    if (cfg->forward_clickhouse == NULL) {
        if (cfg->forward_credentials_file != NULL) {
            snprintf(errbuf, errlen, "--forward-credentials needs --forward-clickhouse");
            return NWB_ECONFIG;
        }
        if (cfg->forward_ca_file != NULL) {
            snprintf(errbuf, errlen, "--forward-ca-file needs an https --forward-clickhouse");
            return NWB_ECONFIG;
        }
        return 0;
    }
    memset(&cred, 0, sizeof(cred));
    if (cfg->forward_credentials_file != NULL) {
        err = nwb__auth_load(&cred, cfg->forward_credentials_file, reason, sizeof(reason));
        if (err != 0) {
            snprintf(errbuf, errlen, "--forward-credentials: %s", reason);
            return NWB_ECONFIG;
        }
        memcpy(user, cred.token, cred.len);
        user[cred.len] = '\0';
        nwb__auth_wipe(&cred, sizeof(cred));
        colon = strchr(user, ':');
        if (colon == NULL || colon == user) {
            nwb__auth_wipe(user, sizeof(user));
            snprintf(errbuf, errlen,
                     "--forward-credentials %s: not USER:PASSWORD (no ':' after a user)",
                     cfg->forward_credentials_file);
            return NWB_ECONFIG;
        }
        *colon = '\0';
        fc.user = user;
        fc.password = colon + 1;
    }
    err = nwb__forwarder_start(&fc, out, reason, sizeof(reason));
    nwb__auth_wipe(user, sizeof(user));
    if (err == NWB_ECONFIG) {
        snprintf(errbuf, errlen, "--forward-clickhouse %.256s: %s", cfg->forward_clickhouse,
                 reason);
    } else if (err != 0) {
        snprintf(errbuf, errlen, "cannot start the ClickHouse forwarder");
    }
    return err;
}
