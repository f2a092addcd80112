/* SPDX-License-Identifier: MIT */
/*
 * test_thread_capture.c - threads.nwbc from real crashes: crash_prog with two named threads
 * dereferences NULL on its main thread; its package's threads.nwbc parses strictly, says
 * ptrace (method 1), lists every thread with its name, the crashed one first with the signal
 * context's pc inside crash_prog and non-empty stacks, and crash_prog among the modules with
 * the build id readelf reads. Under a seccomp filter that fails ptrace with EPERM the package
 * carries the in-process capture (method 2) with the reason; so it does when the helper hangs
 * (the handler gives up at its 2 s timeout, not later) or ends without a status. The stack
 * budget keeps the largest capture within the file bound, and "nwb-crash capture" refuses bad
 * arguments and bad register messages with a one-line reason. Also measures the time from the
 * signal to the process's end (package written) with and without the ptrace capture.
 */
#define _GNU_SOURCE
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
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "nwb/byte_order.h"

#include "nwb/crash_capture.h"

#include "capture_int.h"
#include "crash_test_archive.h"
#include "crash_test_run.h"
#include "test_support.h"

#ifndef NWB_CRASH_HELPER_EXE
#define NWB_CRASH_HELPER_EXE "nwb-crash"
#endif

#define TIMING_RUNS 5

struct fixture {
    char base[512];
    char crash_dir[600];
    char unpacked[600];
    char server[64];
    int closed_fd;
    struct crash_run run;
    char *manifest;
    uint8_t *file;
    size_t file_len;
    nwb_crash_capture_view_t view;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    int port;

    if (f == NULL || nwb_test_tmpdir("thread_capture", f->base, sizeof(f->base)) != 0) {
        free(f);
        return -1;
    }
    port = crash_closed_port(&f->closed_fd);
    if (port < 0) {
        free(f);
        return -1;
    }
    snprintf(f->server, sizeof(f->server), "127.0.0.1:%d", port);
    *state = f;
    return 0;
}

static void run_cleanup(struct fixture *f)
{
    nwb_crash_capture_view_free(&f->view);
    free(f->file);
    free(f->manifest);
    f->file = NULL;
    f->manifest = NULL;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    run_cleanup(f);
    close(f->closed_fd);
    nwb_test_rmtree(f->base);
    free(f);
    return 0;
}

static uint64_t realtime_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Run crash_prog threads_null (with @p extra_env), expect SIGSEGV, unpack its one package and
 * parse threads.nwbc strictly into f->view. Returns the ns from the handler's crash_time_ns
 * to the test seeing the process gone.
 */
static uint64_t crash_and_parse(struct fixture *f, int round, const char *extra_env)
{
    char archive[1024], path[700], why[256];
    const char *t;
    uint64_t crash_ns, end_ns;
    int rc;

    run_cleanup(f);
    snprintf(f->crash_dir, sizeof(f->crash_dir), "%s/crashes%d", f->base, round);
    snprintf(f->unpacked, sizeof(f->unpacked), "%s/unpacked%d", f->base, round);
    assert_int_equal(mkdir(f->unpacked, 0700), 0);
    assert_int_equal(crash_run("threads_null", f->crash_dir, f->server, NWB_CRASH_HELPER_EXE,
                               extra_env, &f->run),
                     0);
    end_ns = realtime_ns();
    if (!WIFSIGNALED(f->run.status) || WTERMSIG(f->run.status) != SIGSEGV) {
        fail_msg("status 0x%x, expected death by SIGSEGV", f->run.status);
    }
    assert_int_equal(crash_pending_archive(f->crash_dir, archive, sizeof(archive)), 0);
    assert_true(ta_extract(archive, f->unpacked) >= 6);
    snprintf(path, sizeof(path), "%s/manifest.txt", f->unpacked);
    f->manifest = nwb_test_read_file(path, NULL);
    assert_non_null(f->manifest);
    snprintf(path, sizeof(path), "%s/%s", f->unpacked, NWB_CRASH_CAPTURE_FILE);
    f->file = (uint8_t *)nwb_test_read_file(path, &f->file_len);
    if (f->file == NULL) {
        fail_msg("no %s in the package", NWB_CRASH_CAPTURE_FILE);
    }
    rc = nwb_crash_capture_parse(f->file, f->file_len, &f->view, why, sizeof(why));
    if (rc != 0) {
        fail_msg("threads.nwbc refused: %s", why);
    }
    t = strstr(f->manifest, "\ncrash_time_ns=");
    assert_non_null(t);
    crash_ns = strtoull(t + 15, NULL, 10);
    assert_true(end_ns > crash_ns);
    return end_ns - crash_ns;
}

static const nwb_crash_module_view_t *module_of(const nwb_crash_capture_view_t *v, const char *path)
{
    for (size_t i = 0; i < v->nmodules; i++) {
        const nwb_crash_module_view_t *m = &v->modules[i];

        if (m->path_len == strlen(path) && memcmp(m->path, path, m->path_len) == 0) {
            return m;
        }
    }
    return NULL;
}

/* The GNU build id of @p exe as readelf -n prints it, lowercase hex. */
static void readelf_build_id(const char *exe, char *out, size_t cap)
{
    char cmd[1200], line[512];
    FILE *p;

    out[0] = '\0';
    snprintf(cmd, sizeof(cmd), "readelf -n '%s'", exe);
    p = popen(cmd, "r");
    assert_non_null(p);
    while (fgets(line, sizeof(line), p) != NULL) {
        const char *b = strstr(line, "Build ID: ");

        if (b != NULL) {
            snprintf(out, cap, "%.*s", (int)strcspn(b + 10, " \r\n"), b + 10);
        }
    }
    pclose(p);
    assert_true(out[0] != '\0');
}

static void hex_of(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(out + 2 * i, 3, "%02x", p[i]);
    }
    out[2 * n] = '\0';
}

/* The crashed thread (first, the manifest's thread_id), its pc and the executable's module. */
static void check_crashed_thread_and_exe(struct fixture *f)
{
    const nwb_crash_capture_view_t *v = &f->view;
    const nwb_crash_thread_view_t *c = &v->threads[0];
    const unsigned pc_index = v->arch == NWB_CRASH_ARCH_X86_64 ? 16 : 32;
    const nwb_crash_module_view_t *exe = module_of(v, CRASH_PROG_EXE);
    char want[200], got[200], key[64];

    snprintf(key, sizeof(key), "\nthread_id=%u\n", (unsigned)v->crashed_tid);
    if (strstr(f->manifest, key) == NULL) {
        fail_msg("crashed_tid %u is not the manifest's thread_id", (unsigned)v->crashed_tid);
    }
    assert_int_equal(c->tid, v->crashed_tid);
    assert_int_equal(c->flags, NWB_CRASH_THREAD_CRASHED | NWB_CRASH_THREAD_SIGNAL_REGS);
    assert_string_equal(c->name, "crash_prog");
    assert_true(c->stack_len > 0);
    if (exe == NULL) {
        fail_msg("%s is not among the %zu modules", CRASH_PROG_EXE, v->nmodules);
    }
    if (c->regs[pc_index] < exe->start || c->regs[pc_index] >= exe->end) {
        fail_msg("pc 0x%llx is outside %s [0x%llx, 0x%llx)", (unsigned long long)c->regs[pc_index],
                 CRASH_PROG_EXE, (unsigned long long)exe->start, (unsigned long long)exe->end);
    }
    readelf_build_id(CRASH_PROG_EXE, want, sizeof(want));
    assert_true(exe->build_id_len > 0 && exe->build_id_len < 64);
    hex_of(exe->build_id, exe->build_id_len, got);
    assert_string_equal(got, want);
}

static int has_thread(const nwb_crash_capture_view_t *v, const char *name)
{
    for (size_t i = 0; i < v->nthreads; i++) {
        if (strcmp(v->threads[i].name, name) == 0) {
            return 1;
        }
    }
    return 0;
}

static void test_thread_capture_ptrace_lists_every_named_thread(void **state)
{
    struct fixture *f = *state;
    const nwb_crash_capture_view_t *v = &f->view;

    (void)crash_and_parse(f, 0, NULL);
    if (v->method != NWB_CRASH_CAPTURE_PTRACE) {
        fail_msg("method %u, note: %.*s", v->method, (int)v->note_len, v->note);
    }
    assert_true(v->note_len > 0 && strncmp(v->note, "ptrace: attached 3 threads", 26) == 0);
    assert_int_equal(v->nthreads, 3);
    assert_true(has_thread(v, "nwb-render"));
    assert_true(has_thread(v, "nwb-audio"));
    for (size_t i = 1; i < v->nthreads; i++) {
        const unsigned sp_index = v->arch == NWB_CRASH_ARCH_X86_64 ? 7 : 31;

        assert_int_equal(v->threads[i].flags, 0);
        assert_true(v->threads[i].stack_len > 0);
        assert_true(v->threads[i].stack_len <= NWB__CRASH_CAPTURE_STACK_BYTES);
        assert_int_equal(v->threads[i].stack_start, v->threads[i].regs[sp_index]);
    }
    check_crashed_thread_and_exe(f);
}

static void test_thread_capture_falls_back_in_process_when_ptrace_is_denied(void **state)
{
    struct fixture *f = *state;
    const nwb_crash_capture_view_t *v = &f->view;
    static const char reason[] = "ptrace: EPERM (";
    static const char tail[] = "; in-process fallback";

    (void)crash_and_parse(f, 0, "CRASH_PROG_DENY_PTRACE=1");
    assert_int_equal(v->method, NWB_CRASH_CAPTURE_IN_PROCESS);
    if (v->note_len < sizeof(reason) - 1 || memcmp(v->note, reason, sizeof(reason) - 1) != 0 ||
        v->note_len < sizeof(tail) - 1 ||
        memcmp(v->note + v->note_len - (sizeof(tail) - 1), tail, sizeof(tail) - 1) != 0) {
        fail_msg("note: %.*s", (int)v->note_len, v->note);
    }
    assert_int_equal(v->nthreads, 1);
    check_crashed_thread_and_exe(f);
}

/* A helper that runs the real nwb-crash for everything but "capture", which does @p action. */
static void write_fake_helper(struct fixture *f, const char *action, char *path, size_t cap)
{
    char script[2048];

    snprintf(path, cap, "%s/fake-nwb-crash", f->base);
    snprintf(script, sizeof(script),
             "#!/bin/sh\nif [ \"$1\" = capture ]; then %s; fi\nexec '%s' \"$@\"\n", action,
             NWB_CRASH_HELPER_EXE);
    assert_int_equal(nwb_test_write_file(path, script, strlen(script), 0755), 0);
}

static void assert_note(const nwb_crash_capture_view_t *v, const char *want)
{
    if (v->note_len != strlen(want) || memcmp(v->note, want, v->note_len) != 0) {
        fail_msg("note \"%.*s\", expected \"%s\"", (int)v->note_len, v->note, want);
    }
}

static void test_thread_capture_hung_helper_is_given_up_at_the_timeout(void **state)
{
    struct fixture *f = *state;
    char helper[700], env[800];
    uint64_t took;

    write_fake_helper(f, "exec sleep 30", helper, sizeof(helper));
    snprintf(env, sizeof(env), "NWB_CRASH_HELPER=%s", helper);
    took = crash_and_parse(f, 0, env);
    assert_int_equal(f->view.method, NWB_CRASH_CAPTURE_IN_PROCESS);
    assert_note(&f->view,
                "ptrace: the capture helper took longer than 2000 ms; in-process fallback");
    /* The wait is the timeout, not the helper's 30 s: at least 2 s, well under 30. */
    if (took < 2000000000ull || took > 8000000000ull) {
        fail_msg("signal to process end took %.1f ms", (double)took / 1e6);
    }
    check_crashed_thread_and_exe(f);
}

static void test_thread_capture_helper_without_status_falls_back(void **state)
{
    struct fixture *f = *state;
    char helper[700], env[800];

    write_fake_helper(f, "exit 3", helper, sizeof(helper));
    snprintf(env, sizeof(env), "NWB_CRASH_HELPER=%s", helper);
    (void)crash_and_parse(f, 0, env);
    assert_int_equal(f->view.method, NWB_CRASH_CAPTURE_IN_PROCESS);
    assert_note(&f->view, "ptrace: the capture helper ended without a status (exit 3); "
                          "in-process fallback");
    check_crashed_thread_and_exe(f);
}

/* The largest capture the helper can take stays within the file bound; a small one is 64 KiB. */
static void test_thread_capture_stack_budget_keeps_the_file_bound(void **state)
{
    const size_t max_rec = 40u + 8u * NWB_CRASH_REGS_MAX;
    const size_t max_mod = 32u + NWB_CRASH_CAPTURE_BUILD_ID_MAX + NWB_CRASH_CAPTURE_PATH_MAX;

    (void)state;
    assert_int_equal(nwb__crash_capture_stack_budget(3, 20), NWB__CRASH_CAPTURE_STACK_BYTES);
    assert_int_equal(nwb__crash_capture_stack_budget(1, 0), NWB__CRASH_CAPTURE_STACK_BYTES);
    for (size_t n = 900; n <= NWB_CRASH_CAPTURE_THREADS_MAX; n++) {
        const size_t per = nwb__crash_capture_stack_budget(n, NWB_CRASH_CAPTURE_MODULES_MAX);
        const size_t total = 32u + NWB_CRASH_CAPTURE_NOTE_MAX + n * (max_rec + per) +
                             NWB_CRASH_CAPTURE_MODULES_MAX * max_mod;

        assert_true(per <= NWB__CRASH_CAPTURE_STACK_BYTES);
        assert_true(total <= NWB_CRASH_CAPTURE_FILE_MAX);
        /* One byte more per thread would not fit: the budget is tight. */
        if (per < NWB__CRASH_CAPTURE_STACK_BYTES) {
            assert_true(total + n > NWB_CRASH_CAPTURE_FILE_MAX);
        }
    }
    assert_true(nwb__crash_capture_stack_budget(1024, 1024) > 56u * 1024u);
}

/*
 * Run "nwb-crash capture" for @p pid with @p msg on its register pipe (fd 3); its status line
 * (fd 4) into @p status. Returns its exit code.
 */
static int run_capture_cli(struct fixture *f, int pid, const void *msg, size_t len, char *status,
                           size_t cap)
{
    char pid_arg[16];
    int regs[2], st[2], wstatus;
    size_t used = 0;
    pid_t child;

    snprintf(pid_arg, sizeof(pid_arg), "%d", pid);
    assert_int_equal(pipe(regs), 0);
    assert_int_equal(pipe(st), 0);
    child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        dup2(regs[0], 3);
        dup2(st[1], 4);
        for (int fd = 5; fd < 1024; fd++) {
            close(fd); /* our write end of the register pipe among them: the helper sees EOF */
        }
        execl(NWB_CRASH_HELPER_EXE, NWB_CRASH_HELPER_EXE, "capture", "--pid", pid_arg, "--tid",
              pid_arg, "--dir", f->base, "--regs-fd", "3", "--status-fd", "4", "--timeout-ms",
              "1000", (char *)NULL);
        _exit(127);
    }
    close(regs[0]);
    close(st[1]);
    assert_int_equal(write(regs[1], msg, len), (ssize_t)len); /* under PIPE_BUF: one write */
    close(regs[1]);
    for (;;) {
        struct pollfd pfd = {st[0], POLLIN, 0};
        ssize_t n;

        assert_true(poll(&pfd, 1, 10000) == 1);
        n = read(st[0], status + used, cap - 1 - used);
        if (n <= 0) {
            break;
        }
        used += (size_t)n;
    }
    status[used] = '\0';
    close(st[0]);
    assert_int_equal(waitpid(child, &wstatus, 0), child);
    assert_true(WIFEXITED(wstatus));
    return WEXITSTATUS(wstatus);
}

static void test_thread_capture_cli_refuses_bad_input_with_a_reason(void **state)
{
    struct fixture *f = *state;
    uint8_t msg[4 + 8 * NWB_CRASH_REGS_MAX] = {0};
    char status[600];
    pid_t gone;
    int wstatus;

    /* A pid that no longer exists: a child already reaped. */
    gone = fork();
    assert_true(gone >= 0);
    if (gone == 0) {
        _exit(0);
    }
    assert_int_equal(waitpid(gone, &wstatus, 0), gone);

    assert_int_equal(run_capture_cli(f, gone, msg, 3, status, sizeof(status)), 1);
    assert_string_equal(status, "fail ptrace: no registers from the handler (3 bytes)\n");

    nwb_le16_store(msg, NWB_CRASH_ARCH_X86_64);
    nwb_le16_store(msg + 2, NWB_CRASH_REGS_AARCH64);
    assert_int_equal(run_capture_cli(f, gone, msg, sizeof(msg), status, sizeof(status)), 1);
    assert_string_equal(status,
                        "fail ptrace: bad register message (arch 1, 33 registers, 268 bytes)\n");

#if defined(__x86_64__)
    nwb_le16_store(msg + 2, NWB_CRASH_REGS_X86_64);
    assert_int_equal(
        run_capture_cli(f, gone, msg, 4 + 8 * NWB_CRASH_REGS_X86_64, status, sizeof(status)), 1);
    {
        char want[200];

        snprintf(want, sizeof(want), "fail ptrace: /proc/%d/task: No such file or directory\n",
                 (int)gone);
        assert_string_equal(status, want);
    }
#endif
    /* Missing arguments: usage, exit 2, the reason on one line first. */
    {
        char cmd[1200], line[256];
        FILE *p;

        snprintf(cmd, sizeof(cmd), "'%s' capture --pid 5 2>&1", NWB_CRASH_HELPER_EXE);
        p = popen(cmd, "r");
        assert_non_null(p);
        assert_non_null(fgets(line, sizeof(line), p));
        while (fgetc(p) != EOF) {
        }
        assert_int_equal(WEXITSTATUS(pclose(p)), 2);
        assert_string_equal(line, "nwb-crash: capture needs --pid, --tid, --dir and --regs-fd\n");
    }
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Not a bound, a figure for docs/performance.md: printed, and only checked against the timeout. */
static void test_thread_capture_time_from_signal_to_package(void **state)
{
    struct fixture *f = *state;
    uint64_t with[TIMING_RUNS], without[TIMING_RUNS];

    for (int i = 0; i < TIMING_RUNS; i++) {
        with[i] = crash_and_parse(f, 10 + i, NULL);
        assert_int_equal(f->view.method, NWB_CRASH_CAPTURE_PTRACE);
        without[i] = crash_and_parse(f, 20 + i, "CRASH_PROG_DENY_PTRACE=1");
        assert_int_equal(f->view.method, NWB_CRASH_CAPTURE_IN_PROCESS);
    }
    qsort(with, TIMING_RUNS, sizeof(with[0]), cmp_u64);
    qsort(without, TIMING_RUNS, sizeof(without[0]), cmp_u64);
    print_message("signal to process end, p50 of %d runs: ptrace capture %.1f ms, in-process "
                  "fallback %.1f ms (max %.1f / %.1f ms)\n",
                  TIMING_RUNS, (double)with[TIMING_RUNS / 2] / 1e6,
                  (double)without[TIMING_RUNS / 2] / 1e6, (double)with[TIMING_RUNS - 1] / 1e6,
                  (double)without[TIMING_RUNS - 1] / 1e6);
    /* The handler never waits for the helper past its timeout (2 s), plus the rest of it. */
    assert_true(with[TIMING_RUNS / 2] < 5000000000ull);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_thread_capture_ptrace_lists_every_named_thread),
        T(test_thread_capture_falls_back_in_process_when_ptrace_is_denied),
        T(test_thread_capture_hung_helper_is_given_up_at_the_timeout),
        T(test_thread_capture_helper_without_status_falls_back),
        T(test_thread_capture_stack_budget_keeps_the_file_bound),
        T(test_thread_capture_cli_refuses_bad_input_with_a_reason),
        T(test_thread_capture_time_from_signal_to_package),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
