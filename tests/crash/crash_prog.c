/* SPDX-License-Identifier: MIT */
/*
 * crash_prog.c - a program that crashes on command, for the crash tests.
 * nwb_crash_install() is its first call (settings from the environment:
 * NWB_CRASH_DIR, NWB_LOGSERVER, NWB_CRASH_HELPER); then it writes log lines
 * into the crash log tail the way the client worker does, and dies as
 * CRASH_PROG_MODE says: null, abort, stack_main, stack_thread, fpe,
 * thread_signal, early (before any logging), double_fault (the on_crash hook
 * faults too), race (four threads fault at once), handler_hang (the hook never returns), trap,
 * threads_null (two named threads wait while the main thread dereferences NULL); or
 * ok, gpu, gpu_vendor (no crash, exit 0). CRASH_PROG_PENDING_MAX sets pending_max_count,
 * CRASH_PROG_WATCHDOG watchdog_s. CRASH_PROG_DENY_PTRACE=1 installs a seccomp filter first
 * that fails ptrace(2) with EPERM, for this process and the helpers it starts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nwb/crash.h"
#include "nwb/log.h"
#include "nwb/log_tail.h"

/* Read through volatiles so the compiler cannot prove the crashes away. */
static volatile int never = -1;
static int *volatile null_ptr;
static volatile int zero;
static volatile int one = 1;
static volatile int sink;

NWB_NOINLINE void crash_prog_null_deref(void);
NWB_NOINLINE void crash_prog_abort(void);
NWB_NOINLINE int crash_prog_recurse(volatile char *prev, int depth);
NWB_NOINLINE void *crash_prog_thread_recurse(void *arg);
NWB_NOINLINE void crash_prog_fpe(void);
NWB_NOINLINE void *crash_prog_thread_raise(void *arg);
NWB_NOINLINE void crash_prog_early(void);
NWB_NOINLINE void crash_prog_trap(void);
NWB_NOINLINE void *crash_prog_race_fault(void *arg);

NWB_NOINLINE void crash_prog_null_deref(void)
{
    *null_ptr = 42;
    sink = 1; /* not a tail position: the frame stays */
}

NWB_NOINLINE void crash_prog_abort(void)
{
    abort();
}

NWB_NOINLINE int crash_prog_recurse(volatile char *prev, int depth)
{
    volatile char frame[1024];

    frame[0] = (char)depth;
    frame[sizeof(frame) - 1] = prev != NULL ? prev[0] : 0;
    if (depth == never) {
        return 0;
    }
    return crash_prog_recurse(frame, depth + 1) + frame[7];
}

NWB_NOINLINE void *crash_prog_thread_recurse(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "nwb-deep");
    sink = crash_prog_recurse(NULL, 0);
    return NULL;
}

NWB_NOINLINE void crash_prog_fpe(void)
{
    sink = one / zero; /* both volatile: gcc turns 1 / x into a compare */
    sink = 2;
}

NWB_NOINLINE void *crash_prog_thread_raise(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "nwb-worker");
    raise(SIGBUS);
    sink = 3;
    return NULL;
}

NWB_NOINLINE void crash_prog_early(void)
{
    *null_ptr = 7;
    sink = 4;
}

NWB_NOINLINE void crash_prog_trap(void)
{
    raise(SIGTRAP);
    sink = 5;
}

static pthread_barrier_t race_barrier;

NWB_NOINLINE void *crash_prog_race_fault(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "nwb-racer");
    pthread_barrier_wait(&race_barrier);
    *null_ptr = 11;
    sink = 6;
    return NULL;
}

/* Four threads released together, each dereferencing NULL. */
static int race(void)
{
    pthread_t t[4];

    pthread_barrier_init(&race_barrier, NULL, 4);
    for (int i = 0; i < 4; i++) {
        if (nwb_crash_thread_create(&t[i], NULL, crash_prog_race_fault, NULL) != 0) {
            return 1;
        }
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
    }
    return 0;
}

/* Two named threads that wait for good: the capture must list them beside the main thread. */
static pthread_barrier_t named_barrier;

static void *named_wait(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&named_barrier);
    for (;;) {
        pause();
    }
    return NULL;
}

/* Not inlined: at -O2 GCC would merge its call of crash_prog_null_deref() with main's (mode
 * null), and the symbolised stack of either would name both. */
NWB_NOINLINE static int threads_null(void)
{
    static const char *const names[] = {"nwb-render", "nwb-audio"};
    pthread_t t;

    pthread_barrier_init(&named_barrier, NULL, 3);
    for (int i = 0; i < 2; i++) {
        if (nwb_crash_thread_create_named(&t, NULL, names[i], named_wait, NULL) != 0) {
            return 1;
        }
    }
    pthread_barrier_wait(&named_barrier); /* both are running (and named) */
    crash_prog_null_deref();
    return 0;
}

/* seccomp: ptrace(2) fails with EPERM; everything else is allowed. Inherited across execve. */
static int deny_ptrace(void)
{
#if defined(__x86_64__)
#define CRASH_PROG_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define CRASH_PROG_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CRASH_PROG_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = (unsigned short)(sizeof(filter) / sizeof(filter[0])),
                              .filter = filter};

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("crash_prog: seccomp");
        return -1;
    }
    return 0;
}

static void fault_in_hook(int fd, void *arg)
{
    (void)arg;
    (void)write(fd, "about to fault again\n", 21);
    *null_ptr = 9;
}

static void hang_in_hook(int fd, void *arg)
{
    (void)arg;
    (void)write(fd, "hanging\n", 8);
    for (;;) {
        sink++; /* a handler stuck for good: only the watchdog ends this */
    }
}

static void app_hook(int fd, void *arg)
{
    (void)arg;
    (void)write(fd, "level=intro\n", 12);
}

/* What the client worker does with every record it takes. */
static void tail_line(const char *msg)
{
    struct timespec ts;
    nwb_log_record_t rec;

    clock_gettime(CLOCK_REALTIME, &ts);
    memset(&rec, 0, sizeof(rec));
    rec.time_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    rec.thread_id = (uint64_t)gettid();
    rec.level = NWB_LOG_INFO;
    rec.file = __FILE__;
    rec.file_len = (uint16_t)strlen(__FILE__);
    rec.line = (uint32_t)__LINE__;
    rec.msg = msg;
    rec.msg_len = (uint32_t)strlen(msg);
    nwb_log_tail_append(&rec);
}

static int start_thread(void *(*fn)(void *))
{
    pthread_attr_t attr;
    pthread_t t;
    int err;

    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256u * 1024u);
    err = nwb_crash_thread_create(&t, &attr, fn, NULL);
    pthread_attr_destroy(&attr);
    if (err != 0) {
        fprintf(stderr, "crash_prog: thread: %d\n", err);
        return 1;
    }
    pthread_join(t, NULL);
    return 0;
}

static int gpu(int vendor)
{
    static const char rgd[] = "RGD-DUMP-BYTES\x01\x02\x03";
    static const char nv[] = "NV-AFTERMATH\x00\xff";
    static const char *const markers[] = {"Frame 12/Shadows/Cascade 2", "Frame 12/GBuffer/Terrain"};
    static const char *const errors[] = {"vkGetDeviceFaultInfoEXT returned VK_INCOMPLETE"};
    nwb_crash_gpu_info_t info;
    char name[256];
    int err;

    memset(&info, 0, sizeof(info));
    info.api = "vulkan";
    info.reporting_call = "vkQueueSubmit2";
    info.result = "VK_ERROR_DEVICE_LOST";
    info.device_name = "Test GPU 9000";
    info.vendor_id = vendor ? 0x1002 : 0;
    info.device_id = 0x744c;
    info.driver_name = "radv";
    info.driver_version = "23.1.9";
    if (vendor) {
        info.rgd_bytes = rgd;
        info.rgd_len = sizeof(rgd) - 1;
        info.aftermath_bytes = nv;
        info.aftermath_len = sizeof(nv) - 1;
        info.device_fault_text = "address 0x1000 page fault (read)\n";
        info.marker_paths = markers;
        info.marker_count = 2;
        info.debug_metadata = "pipeline=terrain shader=0xabc\n";
        info.debug_metadata_len = strlen("pipeline=terrain shader=0xabc\n");
        info.errors = errors;
        info.error_count = 1;
    } else {
        info.rgd_status = "RGD layer not loaded";
        info.device_fault_status = "VK_EXT_device_fault not supported";
    }
    tail_line("device lost, capturing GPU crash");
    err = nwb_crash_capture_gpu(&info, name, sizeof(name));
    if (err != 0) {
        fprintf(stderr, "crash_prog: gpu capture: %d\n", err);
        return 1;
    }
    printf("package %s\n", name);
    tail_line("still running after the GPU capture");
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = getenv("CRASH_PROG_MODE");
    nwb_crash_config_t cfg = NWB_CRASH_CONFIG_INIT;
    char line[128];
    int err;

    mode = mode != NULL ? mode : "ok";
    if (getenv("CRASH_PROG_DENY_PTRACE") != NULL && deny_ptrace() != 0) {
        return 4;
    }
    cfg.version = "9.8.7-test";
    if (getenv("CRASH_PROG_PENDING_MAX") != NULL) {
        cfg.pending_max_count = (unsigned)atoi(getenv("CRASH_PROG_PENDING_MAX"));
    }
    cfg.on_crash = strcmp(mode, "double_fault") == 0   ? fault_in_hook
                   : strcmp(mode, "handler_hang") == 0 ? hang_in_hook
                                                       : app_hook;
    if (getenv("CRASH_PROG_WATCHDOG") != NULL) {
        cfg.watchdog_s = (unsigned)atoi(getenv("CRASH_PROG_WATCHDOG"));
    }
    err = nwb_crash_install(&cfg);
    if (err != 0) {
        fprintf(stderr, "crash_prog: nwb_crash_install: %d\n", err);
        return 3;
    }
    if (strcmp(mode, "early") == 0) {
        crash_prog_early();
    }
    (void)argc;
    (void)argv;
    for (int i = 0; i < 5; i++) {
        snprintf(line, sizeof(line), "crash_prog step %d before %s", i, mode);
        tail_line(line);
    }
    printf("run %s\n", nwb_crash_run_id());
    fflush(stdout);
    if (strcmp(mode, "null") == 0 || strcmp(mode, "double_fault") == 0 ||
        strcmp(mode, "handler_hang") == 0) {
        crash_prog_null_deref();
    } else if (strcmp(mode, "abort") == 0) {
        crash_prog_abort();
    } else if (strcmp(mode, "stack_main") == 0) {
        sink = crash_prog_recurse(NULL, 0);
    } else if (strcmp(mode, "stack_thread") == 0) {
        return start_thread(crash_prog_thread_recurse);
    } else if (strcmp(mode, "fpe") == 0) {
        crash_prog_fpe();
    } else if (strcmp(mode, "thread_signal") == 0) {
        return start_thread(crash_prog_thread_raise);
    } else if (strcmp(mode, "race") == 0) {
        return race();
    } else if (strcmp(mode, "threads_null") == 0) {
        return threads_null();
    } else if (strcmp(mode, "trap") == 0) {
        crash_prog_trap();
    } else if (strcmp(mode, "gpu") == 0 || strcmp(mode, "gpu_vendor") == 0) {
        return gpu(strcmp(mode, "gpu_vendor") == 0);
    } else if (strcmp(mode, "ok") != 0) {
        fprintf(stderr, "crash_prog: unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
