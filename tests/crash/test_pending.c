/* SPDX-License-Identifier: MIT */
/*
 * test_pending.c - the capture side outside the dying process: packing a
 * package folder in every format (and reading it back), the pending folder's
 * count and byte caps (oldest pruned first), recovery of a folder a handler
 * never finished, a server that is down (everything stays, in order), the
 * uploader lock, and the nwb-crash command line.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nwb/crash.h"
#include "nwb/error.h"

#include "crash_test_archive.h"
#include "crash_test_run.h"
#include "test_support.h"

struct fixture {
    char base[512];
    char crash_dir[600];
    char pending[700];
    char server[64];
    int closed_fd;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    int port;

    if (f == NULL || nwb_test_tmpdir("pending", f->base, sizeof(f->base)) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->crash_dir, sizeof(f->crash_dir), "%s/crashes", f->base);
    snprintf(f->pending, sizeof(f->pending), "%s/pending", f->crash_dir);
    mkdir(f->crash_dir, 0700);
    mkdir(f->pending, 0700);
    port = crash_closed_port(&f->closed_fd);
    if (port < 0) {
        free(f);
        return -1;
    }
    snprintf(f->server, sizeof(f->server), "127.0.0.1:%d", port);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    close(f->closed_fd);
    nwb_test_rmtree(f->base);
    free(f);
    return 0;
}

/* A package folder <pending>/<name> with a manifest and @p extra_bytes of filler. */
static void make_package(struct fixture *f, const char *name, size_t extra_bytes)
{
    char dir[800], p[900];
    char *filler = malloc(extra_bytes + 1);
    static const char manifest[] = "nwb-crash-manifest 1\nkind=signal\nprogram=pend_prog\n"
                                   "run=feedfacefeedface\nsignal=SIGSEGV\n";

    assert_non_null(filler);
    /* Incompressible filler, so archive sizes follow it. */
    for (size_t i = 0; i < extra_bytes; i++) {
        filler[i] = (char)((i * 2654435761u) >> 13);
    }
    snprintf(dir, sizeof(dir), "%s/%s", f->pending, name);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(p, sizeof(p), "%s/manifest.txt", dir);
    assert_int_equal(ta_write_file(p, manifest, sizeof(manifest) - 1), 0);
    snprintf(p, sizeof(p), "%s/crash.txt", dir);
    assert_int_equal(ta_write_file(p, filler, extra_bytes), 0);
    free(filler);
}

static nwb_crash_pending_stats_t process(struct fixture *f, unsigned max_count, uint64_t max_bytes,
                                         int expect)
{
    nwb_crash_pending_opts_t o = NWB_CRASH_PENDING_OPTS_INIT;
    nwb_crash_pending_stats_t st;

    o.crash_dir = f->crash_dir;
    o.server = f->server;
    o.timeout_ms = 5000;
    o.max_count = max_count;
    o.max_bytes = max_bytes;
    assert_int_equal(nwb_crash_pending_process(&o, &st), expect);
    return st;
}

static size_t list(struct fixture *f, nwb_crash_pending_entry_t *e, size_t cap)
{
    size_t n = 0;

    assert_int_equal(nwb_crash_pending_list(f->crash_dir, 1, 10000, e, cap, &n), 0);
    return n;
}

static void test_pending_pack_round_trips_every_format(void **state)
{
    static const char *const names[] = {"p.tar.zst", "p.tar.gz", "p.tar", "p.zip"};
    struct fixture *f = *state;
    char dir[800];

    make_package(f, "20260101-000000.000000001_x_1_0_signal", 5000);
    snprintf(dir, sizeof(dir), "%s/20260101-000000.000000001_x_1_0_signal", f->pending);
    for (size_t i = 0; i < NWB_ARRAY_SIZE(names); i++) {
        char out[800], unpack[800], why[256], p[900];
        char *m;

        snprintf(out, sizeof(out), "%s/%s", f->base, names[i]);
        snprintf(unpack, sizeof(unpack), "%s/u%zu", f->base, i);
        assert_int_equal(mkdir(unpack, 0700), 0);
        assert_int_equal(nwb_crash_pack_dir(dir, out, why, sizeof(why)), 0);
        assert_int_equal(ta_extract(out, unpack), 2);
        snprintf(p, sizeof(p), "%s/manifest.txt", unpack);
        m = nwb_test_read_file(p, NULL);
        assert_non_null(m);
        assert_non_null(strstr(m, "program=pend_prog"));
        free(m);
    }
    /* No temporary file is left beside the outputs. */
    assert_int_equal(ta_count_dir(f->base), 1 + 4 + 4);
}

static void test_pending_pack_refuses_a_missing_or_empty_folder(void **state)
{
    struct fixture *f = *state;
    char out[800], empty[800], why[256];

    snprintf(out, sizeof(out), "%s/x.tar.zst", f->base);
    snprintf(empty, sizeof(empty), "%s/empty", f->base);
    assert_int_equal(mkdir(empty, 0700), 0);
    assert_true(nwb_crash_pack_dir("/nonexistent/nwb", out, why, sizeof(why)) < 0);
    assert_int_equal(nwb_crash_pack_dir(empty, out, why, sizeof(why)), -ENOENT);
    assert_non_null(strstr(why, "empty package folder"));
    assert_false(ta_exists(out));
}

static void test_pending_server_down_keeps_everything_oldest_first(void **state)
{
    struct fixture *f = *state;
    nwb_crash_pending_entry_t e[8];
    nwb_crash_pending_stats_t st;

    make_package(f, "20260101-000003.000000000_b_3_0_signal", 100);
    make_package(f, "20260101-000001.000000000_a_1_0_signal", 100);
    make_package(f, "20260101-000002.000000000_c_2_0_signal", 100);
    st = process(f, 16, 1u << 30, NWB_EFULL);
    assert_int_equal(st.packed, 3);
    assert_int_equal(st.uploaded, 0);
    assert_int_equal(st.left, 3);
    assert_int_equal(list(f, e, 8), 3);
    assert_string_equal(e[0].name, "20260101-000001.000000000_a_1_0_signal.tar.zst");
    assert_string_equal(e[1].name, "20260101-000002.000000000_c_2_0_signal.tar.zst");
    assert_string_equal(e[2].name, "20260101-000003.000000000_b_3_0_signal.tar.zst");
    for (int i = 0; i < 3; i++) {
        assert_int_equal(e[i].kind, NWB_CRASH_PENDING_ARCHIVE);
    }
    /* Trying again changes nothing. */
    st = process(f, 16, 1u << 30, NWB_EFULL);
    assert_int_equal(st.packed, 0);
    assert_int_equal(list(f, e, 8), 3);
}

static void test_pending_count_cap_prunes_oldest(void **state)
{
    struct fixture *f = *state;
    nwb_crash_pending_entry_t e[8];
    nwb_crash_pending_stats_t st;

    for (int i = 0; i < 6; i++) {
        char name[64];

        snprintf(name, sizeof(name), "20260101-00000%d.000000000_p_%d_0_signal", i, i);
        make_package(f, name, 100);
    }
    st = process(f, 4, 1u << 30, NWB_EFULL);
    assert_int_equal(st.pruned, 2);
    assert_int_equal(list(f, e, 8), 4);
    assert_string_equal(e[0].name, "20260101-000002.000000000_p_2_0_signal.tar.zst");
    assert_string_equal(e[3].name, "20260101-000005.000000000_p_5_0_signal.tar.zst");
}

static void test_pending_byte_cap_prunes_oldest_at_its_edge(void **state)
{
    struct fixture *f = *state;
    nwb_crash_pending_entry_t e[8];
    uint64_t total = 0, newest_two;

    for (int i = 0; i < 4; i++) {
        char name[64];

        snprintf(name, sizeof(name), "20260101-00000%d.000000000_p_%d_0_signal", i, i);
        make_package(f, name, 20000);
    }
    (void)process(f, 16, 1u << 30, NWB_EFULL);
    assert_int_equal(list(f, e, 8), 4);
    for (int i = 0; i < 4; i++) {
        total += e[i].bytes;
    }
    newest_two = e[2].bytes + e[3].bytes;
    /* Exactly the total: nothing goes. One byte less: the oldest goes. */
    (void)process(f, 16, total, NWB_EFULL);
    assert_int_equal(list(f, e, 8), 4);
    (void)process(f, 16, total - 1, NWB_EFULL);
    assert_int_equal(list(f, e, 8), 3);
    assert_string_equal(e[0].name, "20260101-000001.000000000_p_1_0_signal.tar.zst");
    (void)process(f, 16, newest_two, NWB_EFULL);
    assert_int_equal(list(f, e, 8), 2);
    assert_string_equal(e[0].name, "20260101-000002.000000000_p_2_0_signal.tar.zst");
}

static void test_pending_partial_of_a_dead_writer_is_recovered(void **state)
{
    struct fixture *f = *state;
    nwb_crash_pending_entry_t e[8];
    char p[900];
    pid_t dead;
    int status;

    /* A pid that is certainly gone: a child that already exited and was reaped. */
    dead = fork();
    if (dead == 0) {
        _exit(0);
    }
    assert_true(dead > 0 && waitpid(dead, &status, 0) == dead);
    snprintf(p, sizeof(p), "20260101-000000.000000000_p_%d_0_signal.tmp", (int)dead);
    make_package(f, p, 10);
    /* One without a manifest is dropped; one of a live writer (us) is left alone. */
    snprintf(p, sizeof(p), "%s/20260101-000001.000000000_p_%d_0_signal.tmp", f->pending, (int)dead);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "20260101-000002.000000000_p_%d_0_signal.tmp", (int)getpid());
    make_package(f, p, 10);
    (void)process(f, 16, 1u << 30, NWB_EFULL);
    assert_int_equal(list(f, e, 8), 2);
    assert_int_equal(e[0].kind, NWB_CRASH_PENDING_ARCHIVE);
    assert_null(strstr(e[0].name, ".tmp"));
    assert_int_equal(e[1].kind, NWB_CRASH_PENDING_PARTIAL);
}

static void test_pending_list_waits_for_the_uploader_lock(void **state)
{
    struct fixture *f = *state;
    nwb_crash_pending_entry_t e[4];
    char lock[800];
    size_t n = 0;
    int fd;
    long long t0;

    snprintf(lock, sizeof(lock), "%s/.lock", f->pending);
    fd = open(lock, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    t0 = nwb_test_now_ms();
    assert_int_equal(nwb_crash_pending_list(f->crash_dir, 1, 300, e, 4, &n), NWB_ETIMEOUT);
    assert_true(nwb_test_now_ms() - t0 >= 300);
    /* Without waiting it answers at once. */
    assert_int_equal(nwb_crash_pending_list(f->crash_dir, 0, 0, e, 4, &n), 0);
    close(fd);
    assert_int_equal(nwb_crash_pending_list(f->crash_dir, 1, 300, e, 4, &n), 0);
}

static void test_pending_upload_to_a_closed_port_is_refused(void **state)
{
    struct fixture *f = *state;
    nwb_crash_upload_result_t res;
    char dir[800], out[800], why[256];

    make_package(f, "20260101-000000.000000000_u_1_0_signal", 10);
    snprintf(dir, sizeof(dir), "%s/20260101-000000.000000000_u_1_0_signal", f->pending);
    snprintf(out, sizeof(out), "%s/u.tar.zst", f->base);
    assert_int_equal(nwb_crash_pack_dir(dir, out, why, sizeof(why)), 0);
    assert_int_equal(nwb_crash_upload_file(out, f->server, 2000, &res, why, sizeof(why)),
                     -ECONNREFUSED);
    assert_int_equal(res.http_status, 0);
    assert_int_equal(nwb_crash_upload_file(out, "no-port", 2000, &res, why, sizeof(why)),
                     NWB_ECONFIG);
}

/* Run nwb-crash with @p args (NULL-terminated); its stdout goes to @p out. Returns the status. */
static int tool(char *out, size_t cap, const char *const *args)
{
    char cmd[4096];
    size_t used = 0;
    FILE *p;

    used += (size_t)snprintf(cmd, sizeof(cmd), "'%s'", NWB_CRASH_HELPER_EXE);
    for (int i = 0; args[i] != NULL && used < sizeof(cmd); i++) {
        used += (size_t)snprintf(cmd + used, sizeof(cmd) - used, " '%s'", args[i]);
    }
    snprintf(cmd + used, sizeof(cmd) - used, " 2>/dev/null");
    p = popen(cmd, "r");
    assert_non_null(p);
    used = fread(out, 1, cap - 1, p);
    out[used] = '\0';
    return pclose(p);
}

static void test_pending_tool_packs_lists_and_rejects_bad_usage(void **state)
{
    struct fixture *f = *state;
    char out[4096], dir[800], file[800];
    int st;

    make_package(f, "20260101-000000.000000000_t_1_0_signal", 10);
    snprintf(dir, sizeof(dir), "%s/20260101-000000.000000000_t_1_0_signal", f->pending);
    snprintf(file, sizeof(file), "%s/t.zip", f->base);
    st = tool(out, sizeof(out), (const char *const[]){"pack", dir, "-o", file, NULL});
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_true(ta_exists(file));
    st = tool(out, sizeof(out), (const char *const[]){"pending", "--dir", f->crash_dir, NULL});
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_non_null(strstr(out, "package "));
    assert_non_null(strstr(out, "20260101-000000.000000000_t_1_0_signal\n1 pending\n"));
    st = tool(out, sizeof(out), (const char *const[]){"upload", file, "--server", f->server, NULL});
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    st = tool(out, sizeof(out),
              (const char *const[]){"submit", "--dir", f->crash_dir, "--server", f->server, NULL});
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1); /* still pending: server down */
    st = tool(out, sizeof(out), (const char *const[]){"pending", "--dir", f->crash_dir, NULL});
    assert_non_null(strstr(out, "archive "));
    st = tool(out, sizeof(out), (const char *const[]){"frobnicate", NULL});
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    st = tool(out, sizeof(out), (const char *const[]){"pack", dir, NULL});
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    st = tool(out, sizeof(out), (const char *const[]){"submit", "--max-count", "x", NULL});
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    st = tool(out, sizeof(out), (const char *const[]){"--help", NULL});
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_non_null(strstr(out, "usage: nwb-crash pack"));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_pending_pack_round_trips_every_format),
        T(test_pending_pack_refuses_a_missing_or_empty_folder),
        T(test_pending_server_down_keeps_everything_oldest_first),
        T(test_pending_count_cap_prunes_oldest),
        T(test_pending_byte_cap_prunes_oldest_at_its_edge),
        T(test_pending_partial_of_a_dead_writer_is_recovered),
        T(test_pending_list_waits_for_the_uploader_lock),
        T(test_pending_upload_to_a_closed_port_is_refused),
        T(test_pending_tool_packs_lists_and_rejects_bad_usage),
    };
#undef T

    return cmocka_run_group_tests_name("crash.pending", tests, NULL, NULL);
}
