/* SPDX-License-Identifier: MIT */
/*
 * main.c - the install test's consumer: a game that found nwb through find_package(nwb) or
 * pkg-config nwb-client, logs an essential and an ordinary line in standalone mode
 * (--no-logserver) into the directory it is given, checks that the essential line landed in a
 * file there and the ordinary one exactly when the build it links is not final, and prints the
 * build facts it was compiled with (NWB_TELEMETRY_LEVEL, NWB_IS_FINAL) for
 * run_install_test.cmake to compare with the build's.
 * Usage: nwb_consumer LOG_DIR --no-logserver
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nwb/build_config.h"
#include "nwb/client.h"
#include "nwb/log.h"

/* Bounds on the search for the log file: directory depth and bytes read per file. */
#define FIND_DEPTH_MAX 8
#define FIND_FILE_MAX  (4L * 1024 * 1024)

/* 1 when the regular file @p path contains @p needle. */
static int file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t n;
    int found;

    if (f == NULL) {
        return 0;
    }
    buf = malloc(FIND_FILE_MAX + 1);
    if (buf == NULL) {
        fclose(f);
        return 0;
    }
    n = fread(buf, 1, FIND_FILE_MAX, f);
    fclose(f);
    buf[n] = '\0';
    found = strstr(buf, needle) != NULL;
    free(buf);
    return found;
}

/* Search @p dir recursively for a file containing @p needle; its path goes to @p hit. */
static int find_line(const char *dir, const char *needle, int depth, char *hit, size_t hitlen)
{
    DIR *d;
    struct dirent *e;
    int found = 0;

    if (depth > FIND_DEPTH_MAX) {
        return 0;
    }
    d = opendir(dir);
    if (d == NULL) {
        return 0;
    }
    while (!found && (e = readdir(d)) != NULL) {
        char path[4096];
        struct stat st;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (lstat(path, &st) != 0) {
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            found = find_line(path, needle, depth + 1, hit, hitlen);
        } else if (S_ISREG(st.st_mode) && file_contains(path, needle)) {
            snprintf(hit, hitlen, "%s", path);
            found = 1;
        }
    }
    closedir(d);
    return found;
}

int main(int argc, char **argv)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *client = NULL;
    char err[256] = "";
    char run[32];
    char needle[128];
    char ordinary[128];
    char hit[4096];
    int ordinary_found;

    if (nwb_client_config_args(&cfg, &argc, argv, err, sizeof(err)) != 0) {
        fprintf(stderr, "nwb_consumer: bad arguments: %s\n", err);
        return 1;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: nwb_consumer LOG_DIR --no-logserver\n");
        return 2;
    }
    cfg.log_dir = argv[1];
    cfg.program = "nwb_consumer";
    cfg.console = 0;
    if (nwb_client_create(&cfg, &client, err, sizeof(err)) != 0) {
        fprintf(stderr, "nwb_consumer: nwb_client_create failed: %s\n", err);
        return 1;
    }
    if (nwb_client_is_server_mode(client)) {
        fprintf(stderr, "nwb_consumer: --no-logserver did not select standalone mode\n");
        nwb_client_destroy(client);
        return 1;
    }
    snprintf(run, sizeof(run), "%s", nwb_client_run_id(client));
    snprintf(needle, sizeof(needle), "consumer %s frame %d took %.2f ms", run, 42, 16.67);
    snprintf(ordinary, sizeof(ordinary), "consumer %s ordinary info", run);
    NWB_LOGGER_ESSENTIAL_INFO("consumer %s frame %d took %.2f ms", run, 42, 16.67);
    /* Compiled out when the installed build is final (NWB_FINAL=1 from the package). */
    NWB_LOGGER_INFO("consumer %s ordinary info", run);
    nwb_client_destroy(client);

    if (!find_line(argv[1], needle, 0, hit, sizeof(hit))) {
        fprintf(stderr, "nwb_consumer: no file under %s contains \"%s\"\n", argv[1], needle);
        return 1;
    }
    printf("nwb_consumer: found \"%s\" in %s\n", needle, hit);
    ordinary_found = find_line(argv[1], ordinary, 0, hit, sizeof(hit));
    if (ordinary_found == NWB_IS_FINAL) {
        fprintf(stderr, "nwb_consumer: the ordinary NWB_LOGGER_INFO line was %s, NWB_IS_FINAL=%d\n",
                ordinary_found ? "written" : "not written", NWB_IS_FINAL);
        return 1;
    }
    printf("nwb_consumer: ordinary NWB_LOGGER_INFO line %s\n",
           ordinary_found ? "written" : "compiled out");
    printf("nwb_consumer: NWB_TELEMETRY_LEVEL=%d NWB_IS_FINAL=%d\n", NWB_TELEMETRY_LEVEL,
           NWB_IS_FINAL);
    return 0;
}
