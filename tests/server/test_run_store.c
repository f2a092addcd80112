/* SPDX-License-Identifier: MIT */
/*
 * test_run_store.c - unit tests of run_store.c on a real temporary
 * directory: the layout, duplicate state across a "restart" (a new store on
 * the same files), recovery from every point a SIGKILL can hit, refusal of
 * symlinks, the open-run bound, undoing a failed write (RLIMIT_FSIZE), and making
 * the output root with its parents.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/byte_order.h"
#include "server_int.h"
#include "test_support.h"

#define NOW_NS 1764574440000000000ull /* 2025-12-01T07:34:00Z */

struct fx {
    char dir[512];
    struct nwb__run_store *s;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    char err[256];

    if (f == NULL || nwb_test_tmpdir("runstore", f->dir, sizeof(f->dir)) != 0 ||
        nwb__run_store_open(f->dir, 8, &f->s, err, sizeof(err)) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    nwb__run_store_close(f->s);
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* Close and reopen the store: what a restarted server sees. */
static void restart(struct fx *f)
{
    char err[256];

    nwb__run_store_close(f->s);
    f->s = NULL;
    assert_int_equal(nwb__run_store_open(f->dir, 8, &f->s, err, sizeof(err)), 0);
}

static void path_of(const struct fx *f, const struct nwb__run *r, const char *file, char *out,
                    size_t len)
{
    snprintf(out, len, "%s/runs/%s/%s", f->dir, nwb__run_dir_name(r), file);
}

static long file_size(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static struct nwb__run *get(struct fx *f, const char *program, const char *run, uint64_t now)
{
    struct nwb__run *r = NULL;

    assert_int_equal(nwb__run_store_get(f->s, program, run, now, &r), 0);
    assert_non_null(r);
    return r;
}

static void write_batch(struct fx *f, struct nwb__run *r, int has_seq, uint64_t seq,
                        const char *text)
{
    nwb__run_batch_begin(r, has_seq, seq);
    assert_int_equal(nwb__run_batch_append(f->s, r, text, strlen(text), 1), 0);
    nwb__run_batch_commit(r);
}

static void test_new_run_gets_program_time_run_directory(void **state)
{
    struct fx *f = *state;
    struct nwb__run *r = get(f, "game", "r1", NOW_NS);
    char path[1024];
    char *text;

    assert_string_equal(nwb__run_dir_name(r), "game_20251201-073400_r1");
    write_batch(f, r, 1, 1, "one\ntwo\n");
    path_of(f, r, "log.txt", path, sizeof(path));
    text = nwb_test_read_file(path, NULL);
    assert_non_null(text);
    assert_string_equal(text, "one\ntwo\n");
    free(text);
    path_of(f, r, ".nwb-state", path, sizeof(path));
    assert_int_equal(file_size(path), 48);
    /* The same key is the same run; another key is another. */
    assert_ptr_equal(get(f, "game", "r1", NOW_NS + 5000000000ull), r);
    assert_string_equal(nwb__run_dir_name(get(f, "game", "r2", NOW_NS)), "game_20251201-073400_r2");
}

static void test_seq_at_or_below_last_is_seen_above_is_new(void **state)
{
    struct fx *f = *state;
    struct nwb__run *r = get(f, "game", "r1", NOW_NS);
    int has;

    assert_false(nwb__run_seq_seen(r, 1, 0));
    write_batch(f, r, 1, 5, "five\n");
    assert_true(nwb__run_seq_seen(r, 1, 4));
    assert_true(nwb__run_seq_seen(r, 1, 5));
    assert_false(nwb__run_seq_seen(r, 1, 6));
    assert_false(nwb__run_seq_seen(r, 0, 5)); /* no X-NWB-Seq: never a duplicate */
    write_batch(f, r, 0, 0, "unnumbered\n");
    assert_int_equal(nwb__run_last_seq(r, &has), 5);
    assert_true(has);
}

static void test_restart_finds_the_directory_and_last_seq(void **state)
{
    struct fx *f = *state;
    struct nwb__run *r = get(f, "game", "r1", NOW_NS);
    char path[1024];
    char *text;

    write_batch(f, r, 1, 7, "before\n");
    restart(f);
    r = get(f, "game", "r1", NOW_NS + 3600ull * 1000000000ull);
    assert_string_equal(nwb__run_dir_name(r), "game_20251201-073400_r1");
    assert_true(nwb__run_seq_seen(r, 1, 7));
    assert_false(nwb__run_seq_seen(r, 1, 8));
    write_batch(f, r, 1, 8, "after\n");
    path_of(f, r, "log.txt", path, sizeof(path));
    text = nwb_test_read_file(path, NULL);
    assert_string_equal(text, "before\nafter\n");
    free(text);
}

/* Overwrite the state file with a pending batch, as a SIGKILL would leave it. */
static void plant_state(struct fx *f, struct nwb__run *r, uint64_t last, uint64_t seq,
                        uint64_t start, uint64_t end, unsigned flags)
{
    uint8_t b[48];
    uint64_t h = 0xcbf29ce484222325ull;
    char path[1024];
    int fd;

    nwb_le32_store(b, 0x5342574Eu);
    nwb_le16_store(b + 4, 1);
    nwb_le16_store(b + 6, (uint16_t)flags);
    nwb_le64_store(b + 8, last);
    nwb_le64_store(b + 16, seq);
    nwb_le64_store(b + 24, start);
    nwb_le64_store(b + 32, end);
    for (int i = 0; i < 40; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    nwb_le64_store(b + 40, h);
    path_of(f, r, ".nwb-state", path, sizeof(path));
    fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, b, sizeof(b), 0), 48);
    close(fd);
}

static void append_raw(struct fx *f, struct nwb__run *r, const char *text)
{
    char path[1024];
    int fd;

    path_of(f, r, "log.txt", path, sizeof(path));
    fd = open(path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static char *log_text(struct fx *f, struct nwb__run *r)
{
    char path[1024];

    path_of(f, r, "log.txt", path, sizeof(path));
    return nwb_test_read_file(path, NULL);
}

#define F_LAST  1u
#define F_PEND  2u
#define F_PSEQ  4u
#define F_FINAL 8u

static void test_kill_after_state_before_write_means_not_landed(void **state)
{
    struct fx *f = *state;
    struct nwb__run *r = get(f, "game", "r1", NOW_NS);

    write_batch(f, r, 1, 5, "five\n"); /* 5 bytes */
    plant_state(f, r, 5, 6, 5, 5 + 4, F_LAST | F_PEND | F_PSEQ | F_FINAL);
    restart(f);
    r = get(f, "game", "r1", NOW_NS);
    assert_true(nwb__run_seq_seen(r, 1, 5));
    assert_false(nwb__run_seq_seen(r, 1, 6)); /* the resend will be written */
}

static void test_kill_after_full_write_before_answer_means_landed(void **state)
{
    struct fx *f = *state;
    struct nwb__run *r = get(f, "game", "r1", NOW_NS);
    char *text;

    write_batch(f, r, 1, 5, "five\n");
    plant_state(f, r, 5, 6, 5, 5 + 4, F_LAST | F_PEND | F_PSEQ | F_FINAL);
    append_raw(f, r, "six\n");
    restart(f);
    r = get(f, "game", "r1", NOW_NS);
    assert_true(nwb__run_seq_seen(r, 1, 6)); /* the resend is a duplicate */
    text = log_text(f, r);
    assert_string_equal(text, "five\nsix\n");
    free(text);
}

static void test_kill_during_write_truncates_the_partial_batch(void **state)
{
    struct fx *f = *state;
    struct nwb__run *r = get(f, "game", "r1", NOW_NS);
    char *text;

    write_batch(f, r, 1, 5, "five\n");
    plant_state(f, r, 5, 6, 5, 5 + 100, F_LAST | F_PEND | F_PSEQ | F_FINAL);
    append_raw(f, r, "six-part");
    restart(f);
    r = get(f, "game", "r1", NOW_NS);
    assert_false(nwb__run_seq_seen(r, 1, 6));
    text = log_text(f, r);
    assert_string_equal(text, "five\n");
    free(text);
    write_batch(f, r, 1, 6, "six\n");
    text = log_text(f, r);
    assert_string_equal(text, "five\nsix\n");
    free(text);
}

static void test_kill_between_pieces_of_a_big_batch_truncates_all_pieces(void **state)
{
    struct fx *f = *state;
    struct nwb__run *r = get(f, "game", "r1", NOW_NS);
    char *text;

    write_batch(f, r, 1, 5, "five\n");
    nwb__run_batch_begin(r, 1, 6);
    assert_int_equal(nwb__run_batch_append(f->s, r, "piece-1\n", 8, 0), 0);
    assert_int_equal(nwb__run_batch_append(f->s, r, "piece-2\n", 8, 0), 0);
    /* no final piece, no commit: the process died here */
    restart(f);
    r = get(f, "game", "r1", NOW_NS);
    assert_false(nwb__run_seq_seen(r, 1, 6));
    assert_true(nwb__run_seq_seen(r, 1, 5));
    text = log_text(f, r);
    assert_string_equal(text, "five\n");
    free(text);
}

static void test_damaged_state_starts_afresh_without_touching_the_log(void **state)
{
    struct fx *f = *state;
    struct nwb__run *r = get(f, "game", "r1", NOW_NS);
    char path[1024];
    char *text;
    int fd;

    write_batch(f, r, 1, 5, "five\n");
    path_of(f, r, ".nwb-state", path, sizeof(path));
    fd = open(path, O_WRONLY);
    assert_int_equal(pwrite(fd, "X", 1, 20), 1); /* breaks the checksum */
    close(fd);
    restart(f);
    r = get(f, "game", "r1", NOW_NS);
    assert_false(nwb__run_seq_seen(r, 1, 5));
    text = log_text(f, r);
    assert_string_equal(text, "five\n");
    free(text);
}

static void test_symlinks_in_the_run_tree_are_refused(void **state)
{
    struct fx *f = *state;
    struct nwb__run *r = NULL;
    char outside[512];
    char link[1024];
    char target[1024];
    char *text;

    assert_int_equal(nwb_test_tmpdir("outside", outside, sizeof(outside)), 0);
    /* A run directory that is a symlink to elsewhere. */
    snprintf(link, sizeof(link), "%s/runs/evil_20250101-000000_r", f->dir);
    assert_int_equal(symlink(outside, link), 0);
    assert_true(nwb__run_store_get(f->s, "evil", "r", NOW_NS, &r) < 0);
    /* A log.txt that is a symlink. */
    snprintf(link, sizeof(link), "%s/runs/evil2_20250101-000000_r", f->dir);
    assert_int_equal(mkdir(link, 0755), 0);
    snprintf(target, sizeof(target), "%s/victim.txt", outside);
    snprintf(link, sizeof(link), "%s/runs/evil2_20250101-000000_r/log.txt", f->dir);
    assert_int_equal(symlink(target, link), 0);
    assert_true(nwb__run_store_get(f->s, "evil2", "r", NOW_NS, &r) < 0);
    /* A FIFO in place of log.txt neither blocks nor is written. */
    snprintf(link, sizeof(link), "%s/runs/evil3_20250101-000000_r", f->dir);
    assert_int_equal(mkdir(link, 0755), 0);
    snprintf(link, sizeof(link), "%s/runs/evil3_20250101-000000_r/log.txt", f->dir);
    assert_int_equal(mkfifo(link, 0644), 0);
    assert_true(nwb__run_store_get(f->s, "evil3", "r", NOW_NS, &r) < 0);
    text = nwb_test_read_file(target, NULL);
    assert_null(text);
    nwb_test_rmtree(outside);
}

static void test_open_run_bound_evicts_and_reopens_with_state(void **state)
{
    struct fx *f = *state;
    char name[16];
    struct nwb__run *r;

    for (int i = 0; i < 20; i++) { /* the store holds 8 */
        snprintf(name, sizeof(name), "r%d", i);
        r = get(f, "game", name, NOW_NS);
        write_batch(f, r, 1, (uint64_t)(100 + i), "x\n");
    }
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof(name), "r%d", i);
        r = get(f, "game", name, NOW_NS + 7000000000ull);
        assert_true(nwb__run_seq_seen(r, 1, (uint64_t)(100 + i)));
        assert_false(nwb__run_seq_seen(r, 1, (uint64_t)(101 + i)));
    }
}

static void test_failed_write_leaves_nothing_partial_and_retry_works(void **state)
{
    struct fx *f = *state;
    struct nwb__run *r = get(f, "game", "r1", NOW_NS);
    struct rlimit old, lim;
    char big[4096];
    char *text;

    write_batch(f, r, 1, 1, "first\n"); /* 6 bytes */
    memset(big, 'b', sizeof(big));
    big[sizeof(big) - 1] = '\n';
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 1000; /* the write crosses it: a short write, then EFBIG */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    nwb__run_batch_begin(r, 1, 2);
    assert_int_equal(nwb__run_batch_append(f->s, r, big, sizeof(big), 1), -EFBIG);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    text = log_text(f, r);
    assert_string_equal(text, "first\n");
    free(text);
    assert_false(nwb__run_seq_seen(r, 1, 2));
    /* After a restart the state agrees: batch 2 did not land. */
    restart(f);
    r = get(f, "game", "r1", NOW_NS);
    assert_false(nwb__run_seq_seen(r, 1, 2));
    write_batch(f, r, 1, 2, "second\n");
    text = log_text(f, r);
    assert_string_equal(text, "first\nsecond\n");
    free(text);
}

/* The output root is made with its parents (nwb_mkdir_p); a failure names the folder. */
static void test_open_makes_missing_parents_and_names_a_failure(void **state)
{
    struct fx *f = *state;
    struct nwb__run_store *s = NULL;
    char deep[700];
    char below[700];
    char want[800];
    char err[512];
    struct stat st;

    snprintf(deep, sizeof(deep), "%s/a/b/c", f->dir);
    assert_int_equal(nwb__run_store_open(deep, 8, &s, err, sizeof(err)), 0);
    nwb__run_store_close(s);
    snprintf(want, sizeof(want), "%s/runs", deep);
    assert_int_equal(stat(want, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    /* Under a regular file: ENOTDIR, and the message names the folder. */
    snprintf(below, sizeof(below), "%s/a/file", f->dir);
    assert_int_equal(nwb_test_write_file(below, "x", 1, 0600), 0);
    snprintf(below, sizeof(below), "%s/a/file/out", f->dir);
    s = (struct nwb__run_store *)(uintptr_t)1;
    assert_int_equal(nwb__run_store_open(below, 8, &s, err, sizeof(err)), -ENOTDIR);
    assert_null(s);
    snprintf(want, sizeof(want), "cannot create %s/runs: ", below);
    assert_non_null(strstr(err, want));
    nwb__run_store_close(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_new_run_gets_program_time_run_directory, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_seq_at_or_below_last_is_seen_above_is_new, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_restart_finds_the_directory_and_last_seq, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kill_after_state_before_write_means_not_landed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kill_after_full_write_before_answer_means_landed,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill_during_write_truncates_the_partial_batch, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_kill_between_pieces_of_a_big_batch_truncates_all_pieces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_state_starts_afresh_without_touching_the_log,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlinks_in_the_run_tree_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_run_bound_evicts_and_reopens_with_state, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_failed_write_leaves_nothing_partial_and_retry_works,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_makes_missing_parents_and_names_a_failure, setup,
                                        teardown),
    };

    return cmocka_run_group_tests_name("server.run_store", tests, NULL, NULL);
}
