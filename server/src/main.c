/* SPDX-License-Identifier: MIT */
/*
 * main.c - the nwb-logserver executable: parse the command line, set the
 * process up (signals, descriptor limit), run the server on the default
 * loop, print the listening line once it listens. Exit 0 after a clean
 * stop, 1 when the server cannot start, 2 for a bad command line (a bad
 * --token-file, or a non-loopback --bind without one, included).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "nwb/error.h"
#include "nwb/server.h"

/* Connections and open run logs need descriptors; take what the hard limit allows. */
static void raise_fd_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int main(int argc, char **argv)
{
    nwb_server_config_t cfg = NWB_SERVER_CONFIG_INIT;
    nwb_server_t *srv = NULL;
    uv_loop_t *loop;
    char err[512];
    char addr[128];
    int rc;

    err[0] = '\0';
    rc = nwb_server_config_parse(&cfg, argc, argv, err, sizeof(err));
    if (rc == NWB_SERVER_ARGS_HELP) {
        fputs(nwb_server_usage(), stdout);
        return 0;
    }
    if (rc == NWB_SERVER_ARGS_VERSION) {
        printf("nwb-logserver %s\n", NWB_VERSION_STRING);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "nwb-logserver: %s (see --help)\n", err);
        return 2;
    }
    /* Socket errors come back as EPIPE; a write past RLIMIT_FSIZE as EFBIG (answered 503). */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    raise_fd_limit();
    cfg.handle_signals = 1;
    loop = uv_default_loop();
    rc = nwb_server_create(loop, &cfg, &srv, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "nwb-logserver: %s\n", err);
        uv_run(loop, UV_RUN_DEFAULT);
        uv_loop_close(loop);
        return rc == NWB_ECONFIG ? 2 : 1; /* a bad setting (token file included): as argv */
    }
    printf("nwb-logserver %s listening on http://%s\n", NWB_VERSION_STRING,
           nwb_server_address(srv, addr, sizeof(addr)));
    fflush(stdout);
    uv_run(loop, UV_RUN_DEFAULT);
    rc = nwb_server_destroy(srv);
    uv_loop_close(loop);
    return rc == 0 ? 0 : 1;
}
