/* SPDX-License-Identifier: MIT */
/*
 * profile_threads_prog.c (nwb-test-profile-threads) - the program telemetry.profile_threads
 * runs: a frame thread and three named threads ("render", "audio", "physics") recording nested
 * NWB_PROFILE_SCOPEs and a counter each frame, a mark at frame 10, uploads through the logger
 * client to the server in $NWB_LOGSERVER (program "profile-threads", run "pt1" or
 * $NWB_TEST_RUN_ID). No sidecar: in dbg and opt builds the names travel in the stream's string
 * tables.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/client.h"
#include "nwb/profile.h"
#include "nwb/telemetry_client.h"

#define FRAMES 30

static pthread_barrier_t go, done;

static void render(int f)
{
    NWB_PROFILE_SCOPE("render/frame");
    {
        NWB_PROFILE_SCOPE("render/shadows");
    }
    NWB_PROFILE_COUNTER("render.draw_calls", 100 + f);
}

static void audio(int f)
{
    NWB_PROFILE_SCOPE("audio/mix");
    {
        NWB_PROFILE_SCOPE("audio/voices");
    }
    NWB_PROFILE_COUNTER("audio.voices", 8 + f % 4);
}

static void physics(int f)
{
    NWB_PROFILE_BEGIN("physics/step");
    NWB_PROFILE_BEGIN("physics/contacts");
    NWB_PROFILE_END();
    NWB_PROFILE_END();
    NWB_PROFILE_COUNTER("physics.bodies", 50 + f);
}

static void *thread_main(void *arg)
{
    const char *name = arg;

    nwb_tel_thread_name(name);
    for (int f = 0; f < FRAMES; f++) {
        pthread_barrier_wait(&go);
        if (strcmp(name, "render") == 0) {
            render(f);
        } else if (strcmp(name, "audio") == 0) {
            audio(f);
        } else {
            physics(f);
        }
        pthread_barrier_wait(&done);
    }
    return NULL;
}

int main(void)
{
    static char names[3][8] = {"render", "audio", "physics"};
    nwb_client_config_t ccfg = NWB_CLIENT_CONFIG_INIT;
    nwb_tel_recorder_config_t rcfg = NWB_TEL_RECORDER_CONFIG_INIT;
    nwb_client_t *client;
    nwb_tel_recorder_t *rec;
    nwb_tel_uploader_t *up;
    pthread_t th[3];
    char err[256];
    const char *run = getenv("NWB_TEST_RUN_ID") != NULL ? getenv("NWB_TEST_RUN_ID") : "pt1";

    ccfg.program = "profile-threads";
    ccfg.run_id = run;
    ccfg.mode = NWB_CLIENT_MODE_SERVER;
    ccfg.console = 0;
    if (nwb_client_create(&ccfg, &client, err, sizeof(err)) != 0) {
        fprintf(stderr, "profile-threads: client: %s\n", err);
        return 1;
    }
    rcfg.program = "profile-threads";
    rcfg.run_id = run;
    if (nwb_tel_recorder_create(&rcfg, &rec) != 0 ||
        nwb_tel_client_uploader_create(client, &up) != 0 ||
        nwb_tel_recorder_set_upload(rec, 1, nwb_tel_uploader_sink(up)) != 0) {
        fprintf(stderr, "profile-threads: telemetry could not start\n");
        return 1;
    }
    nwb_tel_recorder_set_capture(rec, NWB_TEL_CAPTURE_ALL);
    nwb_tel_thread_name("main");
    pthread_barrier_init(&go, NULL, 4);
    pthread_barrier_init(&done, NULL, 4);
    for (int i = 0; i < 3; i++) {
        pthread_create(&th[i], NULL, thread_main, names[i]);
    }
    for (int f = 0; f < FRAMES; f++) {
        nwb_tel_frame_begin(rec, (uint64_t)f, 0);
        {
            NWB_PROFILE_SCOPE("main/frame");
            pthread_barrier_wait(&go);
            pthread_barrier_wait(&done);
        }
        if (f == 10) {
            nwb_tel_mark("level loaded");
        }
        nwb_tel_frame_end(rec, 0);
        if (f % 10 == 9) {
            nwb_tel_flush_upload(rec);
        }
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
    }
    nwb_tel_flush_upload(rec);
    if (nwb_tel_uploader_flush(up, 10000) != 0) {
        fprintf(stderr, "profile-threads: uploads not delivered in 10 s\n");
        return 1;
    }
    {
        nwb_tel_uploader_stats_t st;

        nwb_tel_uploader_stats_get(up, &st);
        if (st.delivered != st.submitted || st.submitted == 0) {
            fprintf(stderr, "profile-threads: %llu of %llu uploads delivered\n",
                    (unsigned long long)st.delivered, (unsigned long long)st.submitted);
            return 1;
        }
    }
    nwb_tel_uploader_destroy(up);
    nwb_tel_recorder_destroy(rec);
    nwb_client_destroy(client);
    printf("profile-threads: %d frames\n", FRAMES);
    return 0;
}
