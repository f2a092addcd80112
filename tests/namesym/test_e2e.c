/* SPDX-License-Identifier: MIT */
/*
 * test_e2e.c - name symbols end to end: the BUILDMODE build of a program
 * writes its .namesym sidecar at exit; the normal build of the same program
 * logs tokens to a real nwb-logserver that loaded that sidecar; the run's
 * log.txt shows the readable names, and unknown tokens stay as they were.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nwb/name.h"
#include "test_support.h"

/* Run @p argv with NWB_LOG_DIR=@p log_dir; returns its exit status or -1. */
static int run(const char *const *argv, const char *log_dir)
{
    int status = -1;
    const pid_t pid = fork();

    if (pid == 0) {
        char *av[16];
        int i;

        for (i = 0; argv[i] != NULL && i < 15; i++) {
            av[i] = (char *)(uintptr_t)argv[i];
        }
        av[i] = NULL;
        setenv("NWB_LOG_DIR", log_dir, 1);
        unsetenv("NWB_LOGSERVER");
        execv(av[0], av);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int copy_file(const char *from, const char *to)
{
    size_t len = 0;
    char *data = nwb_test_read_file(from, &len);
    FILE *f;
    int ok;

    if (data == NULL) {
        return -1;
    }
    f = fopen(to, "wb");
    ok = f != NULL && fwrite(data, 1, len, f) == len;
    if (f != NULL) {
        ok = fclose(f) == 0 && ok;
    }
    free(data);
    return ok ? 0 : -1;
}

static void
test_e2e_tokens_from_an_optimized_build_are_decoded_with_the_buildmode_sidecar(void **state)
{
    char work[512], syms[600], sidecar[600], dst[700], addr[80], logpath[1024];
    char tok[NWB_NAME_TOKEN_SIZE];
    struct nwb_test_server srv;
    char *text;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("namesym-e2e", work, sizeof(work)), 0);
    snprintf(syms, sizeof(syms), "%s/syms", work);
    assert_int_equal(mkdir(syms, 0755), 0);

    /* 1. The BUILDMODE build: readable names, and the sidecar at exit. */
    snprintf(sidecar, sizeof(sidecar), "%s.namesym", NWB_TEST_PROG_BM);
    unlink(sidecar);
    {
        const char *argv[] = {NWB_TEST_PROG_BM, "--no-logserver", "--run", "bm000001", NULL};

        assert_int_equal(run(argv, work), 0);
    }
    assert_int_equal(access(sidecar, R_OK), 0);
    assert_int_equal(
        nwb_test_find_run_log(work, "namesym_prog", "bm000001", logpath, sizeof(logpath)), 0);
    text = nwb_test_read_file(logpath, NULL);
    assert_non_null(
        strstr(text, "name 0 is textures/hero_diffuse.png (owner=textures/hero_diffuse.png)"));
    free(text);

    /* 2. The server loads the sidecar; the normal build logs tokens to it. */
    snprintf(dst, sizeof(dst), "%s/namesym_prog.namesym", syms);
    assert_int_equal(copy_file(sidecar, dst), 0);
    {
        const char *extra[] = {"--namesym-dir", syms, NULL};

        assert_int_equal(nwb_test_server_start(&srv, NULL, work, 0, extra), 0);
    }
    snprintf(addr, sizeof(addr), "--logserver=127.0.0.1:%d", srv.port);
    {
        const char *argv[] = {NWB_TEST_PROG, addr, "--run", "opt00001", NULL};

        assert_int_equal(run(argv, work), 0);
    }
    assert_int_equal(
        nwb_test_find_run_log(work, "namesym_prog", "opt00001", logpath, sizeof(logpath)), 0);
    text = nwb_test_read_file(logpath, NULL);
    assert_non_null(text);
    assert_non_null(
        strstr(text, "name 0 is textures/hero_diffuse.png (owner=textures/hero_diffuse.png)"));
    assert_non_null(strstr(text, "name 2 is core/task/cpu/scheduler"));
    assert_non_null(strstr(text, "adjacent ui/hudaudio/music_bank end"));
    /* A token no sidecar knows stays exactly as it was. */
    assert_non_null(strstr(text, "never made: #00000000000000ff"));
    nwb_name_token(nwb_name_hash("render/shadow_pass", 18), tok);
    assert_null(strstr(text, tok));
    free(text);
    assert_true(WIFEXITED(nwb_test_server_stop(&srv, SIGTERM, 10000)));
    unlink(sidecar);
    nwb_test_rmtree(work);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_e2e_tokens_from_an_optimized_build_are_decoded_with_the_buildmode_sidecar),
    };

    return cmocka_run_group_tests_name("namesym.e2e", tests, NULL, NULL);
}
