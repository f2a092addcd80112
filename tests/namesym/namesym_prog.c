/* SPDX-License-Identifier: MIT */
/*
 * namesym_prog.c - a workload for name-symbol capture and decoding: makes a
 * few names (assets, scopes, arena owners) and logs them through
 * nwb_name_str(). A BUILDMODE build prints the strings and writes
 * <exe>.namesym at exit; a normal build logs tokens that the server decodes.
 * Usage: nwb_namesym_prog [--no-logserver | --logserver=HOST:PORT] [--run ID]
 */
#include <stdio.h>
#include <string.h>

#include "nwb/client.h"
#include "nwb/log.h"
#include "nwb/name.h"

static const char *const names[] = {
    "textures/hero_diffuse.png", "render/shadow_pass", "core/task/cpu/scheduler",
    "arena/level_geometry",      "audio/music_bank",   "ui/hud",
};

int main(int argc, char **argv)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *client = NULL;
    char err[256];

    cfg.program = "namesym_prog";
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--run") == 0) {
            cfg.run_id = argv[i + 1];
        }
    }
    if (nwb_client_config_args(&cfg, &argc, argv, err, sizeof(err)) != 0 ||
        nwb_client_create(&cfg, &client, err, sizeof(err)) != 0) {
        fprintf(stderr, "namesym_prog: %s\n", err);
        return 1;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char buf[NWB_NAME_TOKEN_SIZE];
        const nwb_name_t n = nwb_name_make(names[i]);

        NWB_LOGGER_ESSENTIAL_INFO("name %zu is %s (owner=%s)", i, nwb_name_str(n, buf),
                                  nwb_name_str(n, buf));
    }
    {
        char a[NWB_NAME_TOKEN_SIZE], b[NWB_NAME_TOKEN_SIZE];

        NWB_LOGGER_ESSENTIAL_INFO("adjacent %s%s end", nwb_name_str(nwb_name_make("ui/hud"), a),
                                  nwb_name_str(nwb_name_make("audio/music_bank"), b));
        NWB_LOGGER_ESSENTIAL_INFO("never made: %s", nwb_name_str(0x00000000000000ffull, a));
    }
    if (nwb_client_flush(client, 10000) != 0) {
        fprintf(stderr, "namesym_prog: flush timed out\n");
    }
    nwb_client_destroy(client);
    return 0;
}
