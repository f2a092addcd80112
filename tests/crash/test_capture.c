/* SPDX-License-Identifier: MIT */
/*
 * test_capture.c - crash capture seen from outside: crash_prog dies on
 * command (null dereference, abort, stack overflow on the main and a worker
 * thread, SIGFPE, a signal raised on a worker, a crash before logging, a
 * fault inside the handler) with no server answering; each time the exit
 * status shows the signal, one archive is left pending, its crash data names
 * the crashing function after symbolisation with the binary, it holds the
 * last log lines, and the server's ingest routine accepts it. Also GPU
 * capture, and the pending folder's bounds under a crash loop.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nwb/crash.h"

#include "crash_ingest_int.h"
#include "crash_test_archive.h"
#include "crash_test_run.h"
#include "test_support.h"

/* AddressSanitizer's runtime (in crash_prog through the sanitized library) turns core dumps
 * off (disable_coredump=1): its shadow memory would make them enormous. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#ifndef NWB_CRASH_HELPER_EXE
#define NWB_CRASH_HELPER_EXE "nwb-crash"
#endif

struct fixture {
    char base[512];
    char crash_dir[600];
    char unpacked[600];
    char server[64];
    int closed_fd;
    struct crash_run run;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    int port;

    if (f == NULL || nwb_test_tmpdir("capture", f->base, sizeof(f->base)) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->crash_dir, sizeof(f->crash_dir), "%s/crashes", f->base);
    snprintf(f->unpacked, sizeof(f->unpacked), "%s/unpacked", f->base);
    mkdir(f->unpacked, 0700);
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

static char *read_unpacked(struct fixture *f, const char *file)
{
    char p[700];

    snprintf(p, sizeof(p), "%s/%s", f->unpacked, file);
    return nwb_test_read_file(p, NULL);
}

static void assert_contains(const char *text, const char *needle)
{
    if (text == NULL || strstr(text, needle) == NULL) {
        fail_msg("\"%s\" not found in:\n%s", needle, text != NULL ? text : "(no file)");
    }
}

/* Run @p mode, expect death by @p sig, and unpack the one pending archive. */
static void crash_and_unpack(struct fixture *f, const char *mode, int sig, const char *extra_env)
{
    char archive[1024];

    assert_int_equal(
        crash_run(mode, f->crash_dir, f->server, NWB_CRASH_HELPER_EXE, extra_env, &f->run), 0);
    if (!WIFSIGNALED(f->run.status) || WTERMSIG(f->run.status) != sig) {
        fail_msg("%s: status 0x%x, expected death by signal %d", mode, f->run.status, sig);
    }
    assert_int_equal(crash_pending_archive(f->crash_dir, archive, sizeof(archive)), 0);
    assert_true(ta_extract(archive, f->unpacked) >= 5);
}

/* The pending archive is a package the server's ingest accepts. */
static void assert_ingest_accepts(struct fixture *f)
{
    static const struct nwb_crash_caps caps = NWB_CRASH_CAPS_INIT;
    char archive[1024], why[1024], stage[700];
    struct nwb__crash_extract_info info;
    struct stat st;
    int src, dst;

    assert_int_equal(crash_pending_archive(f->crash_dir, archive, sizeof(archive)), 0);
    snprintf(stage, sizeof(stage), "%s/stage", f->base);
    assert_int_equal(mkdir(stage, 0700), 0);
    src = open(archive, O_RDONLY);
    dst = open(stage, O_RDONLY | O_DIRECTORY);
    assert_true(src >= 0 && dst >= 0 && fstat(src, &st) == 0);
    if (nwb__crash_extract(NULL, src, (uint64_t)st.st_size, dst, &caps, NULL, &info, why,
                           sizeof(why)) != 0) {
        fail_msg("ingest refused the package: %s", why);
    }
    assert_string_equal(info.manifest.program, "crash_prog");
    close(src);
    close(dst);
}

static void check_package(struct fixture *f, const char *signame, const char *function,
                          const char *mode, int with_log)
{
    char names[8192], line[128];
    char *manifest = read_unpacked(f, "manifest.txt");
    char *crash = read_unpacked(f, "crash.txt");
    char *tail = read_unpacked(f, "log_tail.txt");
    char *maps = read_unpacked(f, "maps.txt");
    char *app = read_unpacked(f, "app.txt");
    char crash_path[700];

    assert_contains(manifest, "nwb-crash-manifest 1\n");
    assert_contains(manifest, "\nkind=signal\n");
    assert_contains(manifest, "\nprogram=crash_prog\n");
    assert_contains(manifest, "\nversion=9.8.7-test\n");
    assert_contains(manifest, "\nbuild_config=");
    assert_contains(manifest, "\nbuild_id=");
    assert_contains(manifest, "\narg1=arg one\narg2=--flag\nargc=3\n");
    assert_contains(manifest, "\nstart_time=20");
    assert_contains(manifest, "\ncrash_time=20");
    snprintf(line, sizeof(line), "\nsignal=%s\n", signame);
    assert_contains(manifest, line);
    assert_true(strncmp(crash, line + 1, strlen(line + 1)) == 0);
    if (f->run.run_id[0] != '\0') {
        snprintf(line, sizeof(line), "\nrun=%s\n", f->run.run_id);
        assert_contains(manifest, line);
    }
    assert_contains(crash, "\n[registers]\n");
    assert_contains(crash, "\n[backtrace]\n# frame 0 is the interrupted pc");
    assert_contains(crash, "\n#0 0x");
    assert_contains(maps, CRASH_PROG_EXE);
    assert_contains(app, "level=intro\n");

    snprintf(crash_path, sizeof(crash_path), "%s/crash.txt", f->unpacked);
    assert_true(crash_symbolise(crash_path, CRASH_PROG_EXE, names, sizeof(names)) > 0);
    snprintf(line, sizeof(line), "%s\n", function);
    if (strstr(names, line) == NULL) {
        fail_msg("%s is not among the symbolised frames:\n%s\ncrash.txt:\n%s", function, names,
                 crash);
    }
    if (with_log) {
        snprintf(line, sizeof(line), "crash_prog step 4 before %s\n", mode);
        assert_contains(tail, line);
        assert_contains(tail, "crash_prog step 0 before");
    } else {
        assert_non_null(tail);
        assert_int_equal(strlen(tail), 0);
    }
    free(manifest);
    free(crash);
    free(tail);
    free(maps);
    free(app);
    assert_ingest_accepts(f);
}

static void test_capture_null_dereference_is_packaged(void **state)
{
    struct fixture *f = *state;

    crash_and_unpack(f, "null", SIGSEGV, NULL);
    check_package(f, "SIGSEGV", "crash_prog_null_deref", "null", 1);
    {
        char *crash = read_unpacked(f, "crash.txt");

        assert_contains(crash, "\ncode=SEGV_MAPERR\n");
        assert_contains(crash, "\naddress=0x0000000000000000\n");
        assert_contains(crash, "\nmain_thread=1\n");
        free(crash);
    }
}

static void test_capture_abort_is_packaged(void **state)
{
    struct fixture *f = *state;

    crash_and_unpack(f, "abort", SIGABRT, NULL);
    check_package(f, "SIGABRT", "crash_prog_abort", "abort", 1);
}

static void test_capture_stack_overflow_on_main_thread_is_packaged(void **state)
{
    struct fixture *f = *state;

    crash_and_unpack(f, "stack_main", SIGSEGV, NULL);
    check_package(f, "SIGSEGV", "crash_prog_recurse", "stack_main", 1);
}

static void test_capture_stack_overflow_on_worker_thread_is_packaged(void **state)
{
    struct fixture *f = *state;
    char *crash;

    crash_and_unpack(f, "stack_thread", SIGSEGV, NULL);
    check_package(f, "SIGSEGV", "crash_prog_recurse", "stack_thread", 1);
    crash = read_unpacked(f, "crash.txt");
    assert_contains(crash, "\nthread_name=nwb-deep\nmain_thread=0\n");
    free(crash);
}

static void test_capture_sigfpe_is_packaged(void **state)
{
    struct fixture *f = *state;
    char *crash;

    crash_and_unpack(f, "fpe", SIGFPE, NULL);
    check_package(f, "SIGFPE", "crash_prog_fpe", "fpe", 1);
    crash = read_unpacked(f, "crash.txt");
    assert_contains(crash, "\ncode=FPE_INTDIV\n");
    free(crash);
}

static void test_capture_signal_raised_on_worker_thread_is_packaged(void **state)
{
    struct fixture *f = *state;
    char *crash;

    crash_and_unpack(f, "thread_signal", SIGBUS, NULL);
    check_package(f, "SIGBUS", "crash_prog_thread_raise", "thread_signal", 1);
    crash = read_unpacked(f, "crash.txt");
    assert_contains(crash, "\ncode=SI_TKILL\n");
    assert_contains(crash, "\nthread_name=nwb-worker\nmain_thread=0\n");
    free(crash);
}

static void test_capture_crash_before_logging_is_packaged(void **state)
{
    struct fixture *f = *state;

    crash_and_unpack(f, "early", SIGSEGV, NULL);
    assert_string_equal(f->run.run_id, ""); /* it died before printing anything */
    check_package(f, "SIGSEGV", "crash_prog_early", "early", 0);
}

static void test_capture_sigtrap_is_raised_again(void **state)
{
    struct fixture *f = *state;

    /* A trap resumes after the instruction if the handler just returned. */
    crash_and_unpack(f, "trap", SIGTRAP, NULL);
    check_package(f, "SIGTRAP", "crash_prog_trap", "trap", 1);
}

static void test_capture_fault_inside_handler_ends_process(void **state)
{
    struct fixture *f = *state;
    const long long t0 = nwb_test_now_ms();
    char *manifest, *app;

    char archive[1024];
    nwb_crash_pending_entry_t e[4];
    size_t n = 0;

    /* The on_crash hook faults: the process must still die of SIGSEGV, promptly. */
    assert_int_equal(
        crash_run("double_fault", f->crash_dir, f->server, NWB_CRASH_HELPER_EXE, NULL, &f->run), 0);
    assert_true(WIFSIGNALED(f->run.status) && WTERMSIG(f->run.status) == SIGSEGV);
    assert_true(nwb_test_now_ms() - t0 < 20000);
    /* The handler never finished, so no uploader started: the folder is still partial. */
    assert_int_equal(nwb_crash_pending_list(f->crash_dir, 1, 30000, e, 4, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(e[0].kind, NWB_CRASH_PENDING_PARTIAL);
    /* The next start runs the uploader, which recovers what was written, marked incomplete. */
    assert_int_equal(crash_run("ok", f->crash_dir, f->server, NWB_CRASH_HELPER_EXE, NULL, &f->run),
                     0);
    assert_true(WIFEXITED(f->run.status) && WEXITSTATUS(f->run.status) == 0);
    assert_int_equal(crash_pending_archive(f->crash_dir, archive, sizeof(archive)), 0);
    assert_true(ta_extract(archive, f->unpacked) >= 4);
    manifest = read_unpacked(f, "manifest.txt");
    app = read_unpacked(f, "app.txt");
    assert_contains(manifest, "\nincomplete=1\n");
    assert_contains(manifest, "\nsignal=SIGSEGV\n");
    assert_contains(app, "about to fault again\n");
    free(manifest);
    free(app);
}

static void test_capture_only_the_first_of_racing_faults_is_handled(void **state)
{
    struct fixture *f = *state;
    char *crash;

    /* Four threads fault at once: one package, one death by SIGSEGV, no hang. */
    crash_and_unpack(f, "race", SIGSEGV, NULL);
    check_package(f, "SIGSEGV", "crash_prog_race_fault", "race", 1);
    crash = read_unpacked(f, "crash.txt");
    assert_contains(crash, "\nthread_name=nwb-racer\nmain_thread=0\n");
    free(crash);
}

static void test_capture_hung_handler_is_ended_by_the_watchdog(void **state)
{
    struct fixture *f = *state;
    const long long t0 = nwb_test_now_ms();

    /* The hook never returns; the 1 s watchdog (SIGALRM, default action) ends the process. */
    assert_int_equal(crash_run("handler_hang", f->crash_dir, f->server, NWB_CRASH_HELPER_EXE,
                               "CRASH_PROG_WATCHDOG=1", &f->run),
                     0);
    assert_true(WIFSIGNALED(f->run.status));
    assert_int_equal(WTERMSIG(f->run.status), SIGALRM);
    assert_true(nwb_test_now_ms() - t0 < 15000);
}

static void test_capture_core_dump_is_what_it_would_have_been(void **state)
{
    struct fixture *f = *state;
    char pattern[256] = "";
    char *text = nwb_test_read_file("/proc/sys/kernel/core_pattern", NULL);

    if (text != NULL) {
        snprintf(pattern, sizeof(pattern), "%s", text);
        free(text);
    }
    if (pattern[0] == '|' || UNDER_ASAN) {
        print_message("cores are piped to a program or disabled by ASan: only the status is "
                      "checked\n");
    }
    crash_run_core_dir = f->unpacked;
    assert_int_equal(crash_run("null", f->crash_dir, f->server, "", NULL, &f->run), 0);
    assert_true(WIFSIGNALED(f->run.status));
    assert_int_equal(WTERMSIG(f->run.status), SIGSEGV);
    /* Re-raised with the default action: the kernel still dumps core (when it may). */
    if (pattern[0] != '|' && !UNDER_ASAN) {
        assert_true(WCOREDUMP(f->run.status));
    }
}

static void test_capture_crash_loop_stays_within_pending_count(void **state)
{
    struct fixture *f = *state;
    nwb_crash_pending_entry_t e[16];
    size_t n = 0;

    /* Without an uploader the handler itself stops writing at the count cap... */
    for (int i = 0; i < 5; i++) {
        assert_int_equal(
            crash_run("null", f->crash_dir, f->server, "", "CRASH_PROG_PENDING_MAX=3", &f->run), 0);
        assert_true(WIFSIGNALED(f->run.status) && WTERMSIG(f->run.status) == SIGSEGV);
    }
    assert_int_equal(nwb_crash_pending_list(f->crash_dir, 1, 30000, e, 16, &n), 0);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(e[i].kind, NWB_CRASH_PENDING_DIR);
        assert_true(e[i].bytes < 2u * 1024u * 1024u); /* each package is bounded too */
    }
    /* ...and with one, archives never exceed it either (the oldest are pruned). */
    for (int i = 0; i < 4; i++) {
        assert_int_equal(crash_run("abort", f->crash_dir, f->server, NWB_CRASH_HELPER_EXE,
                                   "CRASH_PROG_PENDING_MAX=3", &f->run),
                         0);
        assert_true(WIFSIGNALED(f->run.status) && WTERMSIG(f->run.status) == SIGABRT);
    }
    assert_int_equal(nwb_crash_pending_list(f->crash_dir, 1, 30000, e, 16, &n), 0);
    assert_true(n <= 3);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(e[i].kind, NWB_CRASH_PENDING_ARCHIVE);
    }
}

static void gpu_run(struct fixture *f, const char *mode)
{
    char archive[1024];

    assert_int_equal(crash_run(mode, f->crash_dir, f->server, NWB_CRASH_HELPER_EXE, NULL, &f->run),
                     0);
    /* No crash: the process goes on after the capture and exits normally. */
    assert_true(WIFEXITED(f->run.status));
    assert_int_equal(WEXITSTATUS(f->run.status), 0);
    assert_non_null(strstr(f->run.stdout_text, "package "));
    assert_int_equal(crash_pending_archive(f->crash_dir, archive, sizeof(archive)), 0);
    assert_true(ta_extract(archive, f->unpacked) >= 3);
}

static void test_capture_gpu_without_vendor_bytes_writes_minimal_report(void **state)
{
    struct fixture *f = *state;
    char *report, *manifest, p[700];

    gpu_run(f, "gpu");
    report = read_unpacked(f, "gpu_crash.txt");
    manifest = read_unpacked(f, "manifest.txt");
    assert_contains(report, "nwb gpu crash report 1\n");
    assert_contains(report, "\nreporting_call=vkQueueSubmit2\n");
    assert_contains(report, "\nresult=VK_ERROR_DEVICE_LOST\n");
    assert_contains(report, "\ndevice=Test GPU 9000\n");
    assert_contains(report, "\ndriver_version=23.1.9\n");
    assert_contains(report, "\nvendor_dump.amd_rgd=unavailable: RGD layer not loaded\n");
    assert_contains(report,
                    "\nvendor_dump.nv_aftermath=unavailable: not supplied by the application\n");
    assert_contains(report,
                    "\ndevice_fault_query=unavailable: VK_EXT_device_fault not supported\n");
    assert_contains(report, "\nbreadcrumbs=unavailable: not supplied by the application\n");
    assert_contains(manifest, "\nkind=gpu\n");
    snprintf(p, sizeof(p), "%s/gpu_crash.rgd", f->unpacked);
    assert_false(ta_exists(p));
    snprintf(p, sizeof(p), "%s/gpu_crash.nv-gpudmp", f->unpacked);
    assert_false(ta_exists(p));
    free(report);
    free(manifest);
    assert_ingest_accepts(f);
}

static void test_capture_gpu_with_vendor_bytes_names_vendor_files(void **state)
{
    struct fixture *f = *state;
    char p[700];
    char *report, *rgd, *nv, *fault, *meta, *tail;
    size_t rgd_len = 0, nv_len = 0;

    gpu_run(f, "gpu_vendor");
    report = read_unpacked(f, "gpu_crash.txt");
    snprintf(p, sizeof(p), "%s/gpu_crash.rgd", f->unpacked);
    rgd = nwb_test_read_file(p, &rgd_len);
    snprintf(p, sizeof(p), "%s/gpu_crash.nv-gpudmp", f->unpacked);
    nv = nwb_test_read_file(p, &nv_len);
    fault = read_unpacked(f, "vk_device_fault.txt");
    meta = read_unpacked(f, "gpu_debug_metadata.txt");
    tail = read_unpacked(f, "log_tail.txt");
    assert_non_null(rgd);
    assert_int_equal(rgd_len, 17);
    assert_memory_equal(rgd, "RGD-DUMP-BYTES\x01\x02\x03", 17);
    assert_non_null(nv);
    assert_int_equal(nv_len, 14);
    assert_memory_equal(nv, "NV-AFTERMATH\x00\xff", 14);
    assert_contains(fault, "page fault");
    assert_contains(meta, "pipeline=terrain");
    assert_contains(report, "\nvendor_id=0x1002 (AMD)\n");
    assert_contains(report, "\nvendor_dump.amd_rgd=written gpu_crash.rgd (17 bytes)\n");
    assert_contains(report, "\nvendor_dump.nv_aftermath=written gpu_crash.nv-gpudmp (14 bytes)\n");
    assert_contains(report, "\ndevice_fault_query=written vk_device_fault.txt\n");
    assert_contains(report, "\nbreadcrumbs=2 marker paths (listed below)\n");
    assert_contains(report, "\n0: Frame 12/Shadows/Cascade 2\n1: Frame 12/GBuffer/Terrain\n");
    assert_contains(report, "\napplication: vkGetDeviceFaultInfoEXT returned VK_INCOMPLETE\n");
    assert_contains(tail, "device lost, capturing GPU crash\n");
    free(report);
    free(rgd);
    free(nv);
    free(fault);
    free(meta);
    free(tail);
    assert_ingest_accepts(f);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_capture_null_dereference_is_packaged),
        T(test_capture_abort_is_packaged),
        T(test_capture_stack_overflow_on_main_thread_is_packaged),
        T(test_capture_stack_overflow_on_worker_thread_is_packaged),
        T(test_capture_sigfpe_is_packaged),
        T(test_capture_signal_raised_on_worker_thread_is_packaged),
        T(test_capture_crash_before_logging_is_packaged),
        T(test_capture_sigtrap_is_raised_again),
        T(test_capture_fault_inside_handler_ends_process),
        T(test_capture_only_the_first_of_racing_faults_is_handled),
        T(test_capture_hung_handler_is_ended_by_the_watchdog),
        T(test_capture_core_dump_is_what_it_would_have_been),
        T(test_capture_crash_loop_stays_within_pending_count),
        T(test_capture_gpu_without_vendor_bytes_writes_minimal_report),
        T(test_capture_gpu_with_vendor_bytes_names_vendor_files),
    };
#undef T

    return cmocka_run_group_tests_name("crash.capture", tests, NULL, NULL);
}
