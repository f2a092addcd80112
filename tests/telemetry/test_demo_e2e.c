/* SPDX-License-Identifier: MIT */
/*
 * test_demo_e2e.c - nwb-demo end to end, as the README's quick start runs it: against the real
 * nwb-logserver (its log.txt and telemetry.json must show what the demo says it recorded with
 * --record), standalone (log.txt, telemetry.nwbs, `nwb-telemetry report` and `chrome` of it,
 * parsed strictly), and its --crash modes (the packages they leave). argv[1] picks the group:
 * server (default), standalone or crash; $NWB_DEMO_E2E_SERVER overrides the server binary.
 * Nothing here skips: both server routes exist, so a 404 or a failed upload is a failure.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nwb/build_config.h" /* NWB_IS_FINAL, as nwb-demo was built */
#include "nwb/crash.h"
#include "json_check.h"
#include "test_support.h"

#ifndef NWB_DEMO_EXE
#define NWB_DEMO_EXE "nwb-demo"
#endif
#ifndef NWB_TELEMETRY_EXE
#define NWB_TELEMETRY_EXE "nwb-telemetry"
#endif
#ifndef NWB_DEMO_CRASH_HELPER_EXE
#define NWB_DEMO_CRASH_HELPER_EXE "nwb-crash"
#endif

#define DEMO_FRAMES    "120"
#define DEMO_FRAMES_N  120u
#define RUN_TIMEOUT_MS 60000
#define OUTPUT_MAX     (64u * 1024u) /* child output kept (the tail) */
#define REC_SCOPES_MAX 32u
#define REC_MEMORY_MAX 8u
#define CRASH_FRAME    "5"
#define WAIT_MS        30000 /* uploads and ingest that run after the demo exited */

/* The sanitizer runtimes must leave the fatal signals to the demo's crash handler. */
#define CRASH_ASAN_OPTIONS                                                                         \
    "ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0:"   \
    "detect_leaks=0:allow_user_segv_handler=1"

/* ---- What the demo says it recorded (--record FILE) ----------------------------------------- */

struct rec_scope {
    char type[8];
    char name[64];
    char token[24];
    unsigned long long samples;
};

struct rec_memory {
    char source[16];
    char name[64];
    char token[24];
    unsigned long long used, reserved, allocs;
};

struct demo_record {
    char program[64];
    char run[64];
    char mode[16];
    char run_dir[1024];
    unsigned long long frames, cpu_scopes, gpu_samples;
    unsigned long long ev_diag, ev_fg, ev_perf, ev_mem, ev_mark;
    unsigned long long draw_samples, jobs_samples; /* the two counters' samples */
    char draw_token[32], jobs_token[32];
    unsigned long long rec_events, rec_dropped_events, rec_dropped_scopes, rec_dropped_uploads;
    unsigned long long up_submitted, up_delivered, up_failed, up_refused;
    unsigned main_tid, worker_tid;
    struct rec_scope scopes[REC_SCOPES_MAX];
    unsigned nscopes;
    struct rec_memory mem[REC_MEMORY_MAX];
    unsigned nmem;
};

static int rec_load(const char *path, struct demo_record *r)
{
    char *text = nwb_test_read_file(path, NULL);
    char *save = NULL;
    int magic = 0;

    memset(r, 0, sizeof(*r));
    if (text == NULL) {
        print_error("no record file %s\n", path);
        return -1;
    }
    for (char *l = strtok_r(text, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
        char key[32], k2[32];
        unsigned long long v;

        if (strcmp(l, "nwb-demo-record 1") == 0) {
            magic = 1;
        } else if (sscanf(l, "program %63s", r->program) == 1 ||
                   sscanf(l, "run_dir %1023s", r->run_dir) == 1 ||
                   sscanf(l, "run %63s", r->run) == 1 || sscanf(l, "mode %15s", r->mode) == 1) {
            /* run_dir before run: "run %s" would also match "run_dir ..." */
            continue;
        } else if (sscanf(l, "frames %llu", &r->frames) == 1 ||
                   sscanf(l, "cpu_scopes %llu", &r->cpu_scopes) == 1 ||
                   sscanf(l, "gpu_samples %llu", &r->gpu_samples) == 1) {
            continue;
        } else if (sscanf(l, "event %31s %llu", key, &v) == 2) {
            unsigned long long *const slot = strcmp(key, "mark") == 0              ? &r->ev_mark
                                             : strcmp(key, "diagnostic") == 0      ? &r->ev_diag
                                             : strcmp(key, "frameGraphFrame") == 0 ? &r->ev_fg
                                             : strcmp(key, "perfFrame") == 0       ? &r->ev_perf
                                             : strcmp(key, "memoryFrame") == 0     ? &r->ev_mem
                                                                                   : NULL;
            if (slot != NULL) {
                *slot = v;
            }
        } else if (strncmp(l, "scope ", 6) == 0 && r->nscopes < REC_SCOPES_MAX) {
            struct rec_scope *s = &r->scopes[r->nscopes];

            if (sscanf(l, "scope %7s %63s %23s %llu", s->type, s->name, s->token, &s->samples) ==
                4) {
                r->nscopes++;
            }
        } else if (strncmp(l, "memory ", 7) == 0 && r->nmem < REC_MEMORY_MAX) {
            struct rec_memory *m = &r->mem[r->nmem];

            if (sscanf(l, "memory %15s %63s %23s %llu %llu %llu", m->source, m->name, m->token,
                       &m->used, &m->reserved, &m->allocs) == 6) {
                r->nmem++;
            }
        } else if (sscanf(l,
                          "recorder frames %llu events %llu uploads %llu dropped_events %llu "
                          "dropped_scopes %llu dropped_uploads %llu",
                          &v, &r->rec_events, &v, &r->rec_dropped_events, &r->rec_dropped_scopes,
                          &r->rec_dropped_uploads) == 6) {
            continue;
        } else if (sscanf(l, "uploader submitted %llu delivered %llu failed %llu refused %llu",
                          &r->up_submitted, &r->up_delivered, &r->up_failed, &r->up_refused) == 4) {
            continue;
        } else if (sscanf(l, "thread %31s %llu", k2, &v) == 2) {
            if (strcmp(k2, "main") == 0) {
                r->main_tid = (unsigned)v;
            } else if (strcmp(k2, "worker") == 0) {
                r->worker_tid = (unsigned)v;
            }
        } else if (sscanf(l, "counter %31s %31s %llu", key, k2, &v) == 3) {
            if (strcmp(key, "render.draw_calls") == 0) {
                r->draw_samples = v;
                snprintf(r->draw_token, sizeof(r->draw_token), "%s", k2);
            } else if (strcmp(key, "worker.jobs_done") == 0) {
                r->jobs_samples = v;
                snprintf(r->jobs_token, sizeof(r->jobs_token), "%s", k2);
            }
        }
    }
    free(text);
    if (!magic) {
        print_error("%s is not an nwb-demo record\n", path);
        return -1;
    }
    return 0;
}

/* ---- Running the demo and the tool ---------------------------------------------------------- */

struct proc {
    int status; /* waitpid status */
    char out[OUTPUT_MAX + 1];
    size_t len;
};

/*
 * Run @p argv[0] with @p argv and the extra environment @p env ("NAME=value" strings, NULL
 * terminated; may be NULL), stdout and stderr into @p p->out (the last OUTPUT_MAX bytes). Waits
 * for EOF on its output and then for its exit, at most RUN_TIMEOUT_MS (then SIGKILL).
 */
static int proc_run(const char *const *argv, const char *const *env, struct proc *p)
{
    const long long deadline = nwb_test_now_ms() + RUN_TIMEOUT_MS;
    int fds[2];
    pid_t pid;

    memset(p, 0, sizeof(*p));
    if (pipe2(fds, O_CLOEXEC) != 0) {
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        const struct rlimit no_core = {0, 0};

        setrlimit(RLIMIT_CORE, &no_core); /* crashing on purpose: no core files */
        for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
            putenv((char *)(uintptr_t)env[i]);
        }
        unsetenv("NWB_LOGSERVER");
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        execv(argv[0], (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    close(fds[1]);
    for (;;) {
        struct pollfd pfd = {fds[0], POLLIN, 0};
        const long long left = deadline - nwb_test_now_ms();
        char buf[4096];
        ssize_t n;

        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) {
            print_error("%s did not finish in %d ms: killed\n", argv[0], RUN_TIMEOUT_MS);
            kill(pid, SIGKILL);
            break;
        }
        n = read(fds[0], buf, sizeof(buf));
        if (n <= 0) {
            break;
        }
        if (p->len + (size_t)n > OUTPUT_MAX) {
            const size_t drop = p->len + (size_t)n - OUTPUT_MAX;

            memmove(p->out, p->out + drop, p->len - drop);
            p->len -= drop;
        }
        memcpy(p->out + p->len, buf, (size_t)n);
        p->len += (size_t)n;
    }
    close(fds[0]);
    p->out[p->len] = '\0';
    while (waitpid(pid, &p->status, 0) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    return 0;
}

static int exited_ok(const struct proc *p)
{
    if (WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0) {
        return 1;
    }
    print_error("exit status 0x%x; output:\n%s\n", (unsigned)p->status, p->out);
    return 0;
}

/* ---- Reading the report --------------------------------------------------------------------- */

/* The bytes from @p open (included) to the next @p close after it, or NULL. */
static const char *section(const char *json, const char *open, const char *close, size_t *len)
{
    const char *s = strstr(json, open);
    const char *e;

    *len = 0;
    if (s == NULL) {
        return NULL;
    }
    e = strstr(s + strlen(open), close);
    if (e == NULL) {
        return NULL;
    }
    *len = (size_t)(e - s);
    return s;
}

/* The unsigned integer value of "key": in [s, s + len). Fails the test when missing. */
static unsigned long long num_in(const char *s, size_t len, const char *key)
{
    char k[80];
    const char *p;

    snprintf(k, sizeof(k), "\"%s\":", key);
    p = memmem(s, len, k, strlen(k));
    if (p == NULL) {
        print_error("key %s missing in: %.*s\n", key, (int)(len > 400 ? 400 : len), s);
        fail();
    }
    return strtoull(p + strlen(k), NULL, 10);
}

/* Count of "needle" in [s, s + len). */
static unsigned count_in(const char *s, size_t len, const char *needle)
{
    const size_t n = strlen(needle);
    unsigned c = 0;

    for (const char *p = memmem(s, len, needle, n); p != NULL;
         p = memmem(p + n, len - (size_t)(p + n - s), needle, n)) {
        c++;
    }
    return c;
}

/* The object {"name":"NAME"...} (by string or token) inside [s, s + len), up to its '}'. */
static const char *entry(const char *s, size_t len, const char *name, const char *token,
                         size_t *elen)
{
    char k[128];
    const char *p, *e;

    snprintf(k, sizeof(k), "{\"name\":\"%s\",", name);
    p = memmem(s, len, k, strlen(k));
    if (p == NULL) {
        snprintf(k, sizeof(k), "{\"name\":\"%s\",", token);
        p = memmem(s, len, k, strlen(k));
    }
    if (p == NULL) {
        print_error("no entry for %s (%s)\n", name, token);
        fail();
    }
    e = memchr(p, '}', len - (size_t)(p - s));
    assert_non_null(e);
    *elen = (size_t)(e - p);
    return p;
}

/* The report must show exactly what the demo recorded. */
static void check_report(const char *json, const struct demo_record *r)
{
    const size_t jlen = strlen(json);
    const char *sec;
    size_t len = 0, elen = 0;
    char want[160];
    unsigned cpu_nonzero = 0, gpu_nonzero = 0;

    assert_int_equal(nwb_test_json_check(json, jlen, NULL), 0);

    sec = section(json, "\"run\":{", "}", &len);
    assert_non_null(sec);
    snprintf(want, sizeof(want), "\"program\":\"%s\"", r->program);
    assert_non_null(memmem(sec, len, want, strlen(want)));
    snprintf(want, sizeof(want), "\"run\":\"%s\"", r->run);
    assert_non_null(memmem(sec, len, want, strlen(want)));

    sec = section(json, "\"decode\":{", "\"uploads\":{", &len);
    assert_non_null(sec);
    assert_non_null(memmem(sec, len, "\"status\":\"ok\"", 13));
    assert_int_equal(num_in(sec, len, "events"), r->rec_events);
    sec = section(json, "\"clientDrops\":{", "}", &len);
    assert_non_null(sec);
    assert_int_equal(num_in(sec, len, "events"), 0);
    assert_int_equal(num_in(sec, len, "scopes"), 0);
    assert_int_equal(num_in(sec, len, "uploads"), 0);

    sec = section(json, "\"events\":{\"textLog\"", "}", &len);
    assert_non_null(sec);
    /* textLog events come from the logger client's worker (nwb_tel_client_capture_logs): as
     * many as lines fell in recorded frames, which the demo cannot count; fin builds compile the
     * per-frame lines out. */
#if !NWB_IS_FINAL
    assert_true(num_in(sec, len, "textLog") >= 2);
#endif
    assert_int_equal(num_in(sec, len, "diagnostic"), r->ev_diag);
    assert_int_equal(num_in(sec, len, "frameGraphFrame"), r->ev_fg);
    assert_int_equal(num_in(sec, len, "perfFrame"), r->ev_perf);
    assert_int_equal(num_in(sec, len, "memoryFrame"), r->ev_mem);
    assert_int_equal(num_in(sec, len, "mark"), r->ev_mark);
    assert_true(num_in(sec, len, "thread") >= 2);       /* main and worker, named */
    assert_true(num_in(sec, len, "counterFrame") >= 1); /* the two counters */
    assert_int_equal(num_in(sec, len, "unknown"), 0);
    assert_int_equal(num_in(sec, len, "textLog") + num_in(sec, len, "diagnostic") +
                         num_in(sec, len, "frameGraphFrame") + num_in(sec, len, "perfFrame") +
                         num_in(sec, len, "memoryFrame") + num_in(sec, len, "thread") +
                         num_in(sec, len, "stringTable") + num_in(sec, len, "counterFrame") +
                         num_in(sec, len, "mark"),
                     r->rec_events);
    assert_true(r->ev_mark >= 1);

    /* Two named threads, each with its scopes; the counters with every sample; the mark. */
    sec = section(json, "\"threads\":[", "\"counters\":[", &len);
    assert_non_null(sec);
    snprintf(want, sizeof(want), "{\"thread\":%u,\"name\":\"main\"", r->main_tid);
    assert_non_null(memmem(sec, len, want, strlen(want)));
    snprintf(want, sizeof(want), "{\"thread\":%u,\"name\":\"worker\"", r->worker_tid);
    assert_non_null(memmem(sec, len, want, strlen(want)));
    sec = section(json, "\"counters\":[", "\"marks\":{", &len);
    assert_non_null(sec);
    {
        const char *e = entry(sec, len, "render.draw_calls", r->draw_token, &elen);

        assert_int_equal(num_in(e, elen, "samples"), r->draw_samples);
        assert_int_equal(num_in(e, elen, "min"), 800);
        e = entry(sec, len, "worker.jobs_done", r->jobs_token, &elen);
        assert_int_equal(num_in(e, elen, "samples"), r->jobs_samples);
    }
    assert_int_equal(r->draw_samples, r->frames);
    sec = section(json, "\"marks\":{", "\"profiler\":", &len);
    assert_non_null(sec);
    assert_int_equal(num_in(sec, len, "count"), r->ev_mark);
    assert_non_null(
        memmem(sec, len, "\"text\":\"level loaded\"", strlen("\"text\":\"level loaded\"")));
    sec = section(json, "\"profiler\":", "}", &len);
    assert_non_null(sec);
    assert_int_equal(num_in(sec, len, "dropped"), 0);
    assert_int_equal(num_in(sec, len, "malformed"), 0);

    sec = section(json, "\"frames\":{\"count\":", ",", &len);
    assert_non_null(sec);
    assert_int_equal(num_in(sec, len + 1, "count"), r->frames);

    for (unsigned i = 0; i < r->nscopes; i++) {
        const struct rec_scope *s = &r->scopes[i];
        const int gpu = strcmp(s->type, "gpu") == 0;
        const char *e;

        if (s->samples == 0) {
            continue;
        }
        sec = gpu ? section(json, "\"gpu\":[", "\"omittedSamples\":", &len)
                  : section(json, "\"cpu\":[", "\"gpu\":[", &len);
        assert_non_null(sec);
        e = entry(sec, len, s->name, s->token, &elen);
        assert_int_equal(num_in(e, elen, "samples"), s->samples);
        if (gpu) {
            gpu_nonzero++;
            assert_int_equal(num_in(e, elen, "reportedGpuSamples"), s->samples);
        } else {
            cpu_nonzero++;
        }
    }
    /* No scope the demo did not record. */
    sec = section(json, "\"cpu\":[", "\"gpu\":[", &len);
    assert_int_equal(count_in(sec, len, "{\"name\":"), cpu_nonzero);
    sec = section(json, "\"gpu\":[", "\"omittedSamples\":", &len);
    assert_int_equal(count_in(sec, len, "{\"name\":"), gpu_nonzero);
    assert_true(cpu_nonzero >= 10 && gpu_nonzero >= 2);

    sec = section(json, "\"memory\":{\"frames\":", ",", &len);
    assert_non_null(sec);
    assert_int_equal(num_in(sec, len + 1, "frames"), r->frames);
    assert_true(r->nmem >= 3);
    for (unsigned i = 0; i < r->nmem; i++) {
        const struct rec_memory *m = &r->mem[i];
        const int heap = strcmp(m->source, "heapBacking") == 0;
        const char *e;

        sec = heap ? section(json, "\"heapBacking\":[", "\"explicitScopes\":[", &len)
                   : section(json, "\"arenas\":[", "\"heapBacking\":[", &len);
        assert_non_null(sec);
        e = entry(sec, len, m->name, m->token, &elen);
        assert_int_equal(num_in(e, elen, "usedBytes"), m->used);
        assert_int_equal(num_in(e, elen, "reservedBytes"), m->reserved);
        assert_int_equal(num_in(e, elen, "allocations"), m->allocs);
        assert_int_equal(num_in(e, elen, "samples"), r->frames);
        assert_true(m->used > 0);
    }

    sec = section(json, "\"frameGraph\":{\"frames\":", ",", &len);
    assert_non_null(sec);
    assert_int_equal(num_in(sec, len + 1, "frames"), r->ev_fg);
    sec = section(json, "\"diagnostics\":{\"count\":", ",", &len);
    assert_non_null(sec);
    assert_int_equal(num_in(sec, len + 1, "count"), r->ev_diag);
}

/* log.txt must hold the demo's lines, at their levels, and the worker thread's. */
static void check_log(const char *log, const struct demo_record *r)
{
#if NWB_IS_FINAL
    /* INFO and WARNING calls compile out in fin builds: only the essential lines remain. */
    assert_non_null(strstr(log, "nwb-demo done: " DEMO_FRAMES " frames"));
    assert_non_null(strstr(log, r->run));
#else
    unsigned growth = 0;
    char tid[32];
    const char *hitch = strstr(log, " hitch: ");
    const char *bol;

    /* The frame thread's lines, at their levels (INFO start and growth, a WARNING hitch). */
    assert_non_null(strstr(log, ": " DEMO_FRAMES " frames at 60 Hz (fast), run "));
    for (const char *g = strstr(log, " grew to "); g != NULL; g = strstr(g + 1, " grew to ")) {
        for (bol = g; bol > log && bol[-1] != '\n'; bol--) {
        }
        assert_non_null(memmem(bol, (size_t)(g - bol), "INFO", 4));
        growth++;
    }
    assert_true(growth >= 2);
    assert_non_null(hitch);
    for (bol = hitch; bol > log && bol[-1] != '\n'; bol--) {
    }
    assert_non_null(memmem(bol, (size_t)(hitch - bol), "WARNING", 7));
    /* The frame thread's lines carry its name beside its id. */
    assert_non_null(memmem(bol, (size_t)(hitch - bol), "[main] nwb-demo ", 16));
    /* The worker logs on its own thread: its lines carry its thread id and name. */
    snprintf(tid, sizeof(tid), " %u[worker] nwb-demo ", r->worker_tid);
    {
        const char *w = strstr(log, "worker: 4 jobs in frame 30,");

        assert_non_null(w);
        for (bol = w; bol > log && bol[-1] != '\n'; bol--) {
        }
        assert_non_null(memmem(bol, (size_t)(w - bol), tid, strlen(tid)));
    }
    assert_non_null(strstr(log, "nwb-demo done: " DEMO_FRAMES " frames"));
#endif
}

/* ---- Fixture -------------------------------------------------------------------------------- */

struct fx {
    char dir[512];
    char log_env[600];
    char crash_env[600];
    char record[600];
    struct nwb_test_server srv;
    int srv_up;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL || nwb_test_tmpdir("demo-e2e", f->dir, sizeof(f->dir)) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->log_env, sizeof(f->log_env), "NWB_LOG_DIR=%s/logs", f->dir);
    snprintf(f->crash_env, sizeof(f->crash_env), "NWB_CRASH_DIR=%s/crash", f->dir);
    snprintf(f->record, sizeof(f->record), "%s/record.txt", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    if (f->srv_up) {
        nwb_test_server_stop(&f->srv, SIGKILL, 5000);
    }
    nwb_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* ---- Against the real server ---------------------------------------------------------------- */

static void test_demo_e2e_server_report_matches_what_was_recorded(void **state)
{
    struct fx *f = *state;
    static struct proc p;
    static struct demo_record r;
    char out[600], server_arg[64], log_path[1024], json_path[1100];
    const char *env[] = {f->log_env, f->crash_env, "NWB_CRASH_HELPER=", NULL};
    char *log, *json;
    int status;

    snprintf(out, sizeof(out), "%s/srv", f->dir);
    /* NWB_DEMO_E2E_SERVER overrides the binary (e.g. to run the demo against an installed one). */
    assert_int_equal(nwb_test_server_start(&f->srv, getenv("NWB_DEMO_E2E_SERVER"), out, 0, NULL),
                     0);
    f->srv_up = 1;
    snprintf(server_arg, sizeof(server_arg), "--logserver=127.0.0.1:%d", f->srv.port);
    {
        const char *argv[] = {NWB_DEMO_EXE, "--frames", DEMO_FRAMES, "--fast",
                              server_arg,   "--record", f->record,   NULL};

        assert_int_equal(proc_run(argv, env, &p), 0);
    }
    assert_true(exited_ok(&p));
    assert_int_equal(rec_load(f->record, &r), 0);
    assert_string_equal(r.mode, "server");
    assert_string_equal(r.program, "nwb-demo");
    assert_int_equal(r.frames, DEMO_FRAMES_N);
    assert_int_equal(r.cpu_scopes, DEMO_FRAMES_N * 17u);
    assert_int_equal(r.rec_dropped_events, 0);
    assert_int_equal(r.rec_dropped_scopes, 0);
    assert_non_null(strstr(p.out, "telemetry.json"));

    /* The log: nwb_client_destroy() waited for the server's acknowledgements. */
    assert_int_equal(nwb_test_find_run_log(out, "nwb-demo", r.run, log_path, sizeof(log_path)), 0);
    log = nwb_test_read_file(log_path, NULL);
    assert_non_null(log);
    check_log(log, &r);
    free(log);

    /* The report. The server routes POST /v1/telemetry: a failed upload is a failure (a probe
     * upload's status is printed to show why). */
    if (r.up_failed > 0) {
        const int code =
            nwb_test_http(f->srv.port, "POST", "/v1/telemetry",
                          "X-NWB-Program: probe\r\nX-NWB-Run: probe\r\n", "", 0, NULL, 0);

        print_error("%llu telemetry uploads failed, an empty probe upload gets %d\n%s\n",
                    r.up_failed, code, p.out);
        fail();
    }
    assert_true(r.up_submitted >= 2);
    assert_int_equal(r.up_delivered, r.up_submitted);
    snprintf(json_path, sizeof(json_path), "%.*s/telemetry.json",
             (int)(strrchr(log_path, '/') - log_path), log_path);
    json = nwb_test_read_file(json_path, NULL);
    assert_non_null(json);
    check_report(json, &r);
    {
        size_t len = 0;
        const char *sec = section(json, "\"uploads\":{", "\"recentRejections\"", &len);

        assert_non_null(sec);
        assert_int_equal(num_in(sec, len, "accepted"), r.up_delivered);
        assert_int_equal(num_in(sec, len, "rejected"), 0);
    }
    free(json);

    status = nwb_test_server_stop(&f->srv, SIGTERM, 10000);
    f->srv_up = 0;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* --crash segv with uploads on: the package goes through nwb-crash to the server's crash store. */
static void test_demo_e2e_server_crash_package_reaches_the_server(void **state)
{
    struct fx *f = *state;
    static struct proc p;
    char out[600], server_arg[64], crash_dir[600], path[1200], id[128], run[64];
    const char *env[] = {f->log_env, f->crash_env, "NWB_CRASH_HELPER=" NWB_DEMO_CRASH_HELPER_EXE,
                         CRASH_ASAN_OPTIONS, NULL};
    nwb_crash_pending_entry_t e[4];
    size_t n = 4;
    char *text, *last, *manifest, *tail, *log;
    int code;

    snprintf(out, sizeof(out), "%s/srv", f->dir);
    assert_int_equal(nwb_test_server_start(&f->srv, getenv("NWB_DEMO_E2E_SERVER"), out, 0, NULL),
                     0);
    f->srv_up = 1;
    /* The server has crash routes: anything but 200 here is a failure, never a skip. */
    code = nwb_test_http(f->srv.port, "GET", "/v1/crashes", NULL, NULL, 0, NULL, 0);
    assert_int_equal(code, 200);
    snprintf(server_arg, sizeof(server_arg), "--logserver=127.0.0.1:%d", f->srv.port);
    {
        const char *argv[] = {NWB_DEMO_EXE, "--frames", "20",   "--fast",
                              server_arg,   "--crash",  "segv", "--crash-frame",
                              CRASH_FRAME,  NULL};

        assert_int_equal(proc_run(argv, env, &p), 0);
    }
    if (!(WIFSIGNALED(p.status) && WTERMSIG(p.status) == SIGSEGV)) {
        print_error("status 0x%x\n%s\n", (unsigned)p.status, p.out);
        fail();
    }
    /* The handler started the uploader; it is done when the pending lock is free. */
    snprintf(crash_dir, sizeof(crash_dir), "%s/crash", f->dir);
    assert_int_equal(nwb_crash_pending_list(crash_dir, 1, WAIT_MS, e, 4, &n), 0);
    assert_int_equal(n, 0);
    snprintf(path, sizeof(path), "%s/upload.log", crash_dir);
    text = nwb_test_read_file(path, NULL);
    assert_non_null(text);
    last = NULL;
    for (char *q = strstr(text, ": id "); q != NULL; q = strstr(q + 1, ": id ")) {
        last = q;
    }
    if (last == NULL) {
        print_error("no upload in %s:\n%s\n", path, text);
        fail();
    }
    snprintf(id, sizeof(id), "%.*s", (int)strcspn(last + 5, " \n"), last + 5);
    free(text);

    snprintf(path, sizeof(path), "%s/crashes/packages/%s/manifest.txt", out, id);
    assert_true(nwb_test_wait_file_contains(path, "nwb-crash-manifest 1", WAIT_MS));
    manifest = nwb_test_read_file(path, NULL);
    assert_non_null(manifest);
    assert_non_null(strstr(manifest, "\nprogram=nwb-demo\n"));
    assert_non_null(strstr(manifest, "\nsignal=SIGSEGV\n"));
    assert_non_null(strstr(manifest, "\nrun="));
    snprintf(run, sizeof(run), "%.*s", (int)strcspn(strstr(manifest, "\nrun=") + 5, "\n"),
             strstr(manifest, "\nrun=") + 5);
    snprintf(path, sizeof(path), "%s/crashes/packages/%s/log_tail.txt", out, id);
    tail = nwb_test_read_file(path, NULL);
    assert_non_null(tail);
    assert_non_null(strstr(tail, "crashing on purpose: segv in frame " CRASH_FRAME));
    /* Same run id in the log: the line was flushed to the server before the crash. */
    assert_int_equal(nwb_test_find_run_log(out, "nwb-demo", run, path, sizeof(path)), 0);
    log = nwb_test_read_file(path, NULL);
    assert_non_null(log);
    assert_non_null(strstr(log, "crashing on purpose: segv in frame " CRASH_FRAME));
    free(manifest);
    free(tail);
    free(log);
}

/* ---- Standalone ----------------------------------------------------------------------------- */

static void test_demo_e2e_standalone_writes_log_and_stream_the_tool_reports(void **state)
{
    struct fx *f = *state;
    static struct proc p;
    static struct demo_record r;
    char path[1200], report[600], prefix[600];
    const char *env[] = {f->log_env, f->crash_env, "NWB_CRASH_HELPER=", NULL};
    struct stat st;
    char *log, *json;

    {
        const char *argv[] = {NWB_DEMO_EXE, "--no-logserver", "--frames", DEMO_FRAMES,
                              "--fast",     "--record",       f->record,  NULL};

        assert_int_equal(proc_run(argv, env, &p), 0);
    }
    assert_true(exited_ok(&p));
    assert_int_equal(rec_load(f->record, &r), 0);
    assert_string_equal(r.mode, "standalone");
    assert_int_equal(r.frames, DEMO_FRAMES_N);
    assert_int_equal(r.up_failed, 0);
    assert_int_equal(r.up_delivered, r.up_submitted);
    /* <NWB_LOG_DIR>/runs/nwb-demo_<stamp>_<run>, named in the summary. */
    snprintf(prefix, sizeof(prefix), "%s/logs/runs/nwb-demo_", f->dir);
    assert_memory_equal(r.run_dir, prefix, strlen(prefix));
    assert_non_null(strstr(r.run_dir, r.run));
    assert_non_null(strstr(p.out, r.run_dir));

    snprintf(path, sizeof(path), "%s/log.txt", r.run_dir);
    log = nwb_test_read_file(path, NULL);
    assert_non_null(log);
    check_log(log, &r);
    free(log);

    snprintf(path, sizeof(path), "%s/telemetry.nwbs", r.run_dir);
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > 0);
    snprintf(report, sizeof(report), "%s/report.json", f->dir);
    {
        const char *argv[] = {NWB_TELEMETRY_EXE, "report", path, "-o", report, NULL};

        assert_int_equal(proc_run(argv, NULL, &p), 0);
    }
    assert_true(exited_ok(&p));
    json = nwb_test_read_file(report, NULL);
    assert_non_null(json);
    check_report(json, &r);
    free(json);

    /* The Chrome trace of the same stream: strict JSON too. */
    snprintf(report, sizeof(report), "%s/trace.json", f->dir);
    {
        const char *argv[] = {NWB_TELEMETRY_EXE, "chrome", path, "-o", report, NULL};

        assert_int_equal(proc_run(argv, NULL, &p), 0);
    }
    assert_true(exited_ok(&p));
    {
        size_t len = 0, bad = 0;

        json = nwb_test_read_file(report, &len);
        assert_non_null(json);
        if (nwb_test_json_check(json, len, &bad) != 0) {
            fail_msg("trace.json is not valid JSON at byte %zu", bad);
        }
        assert_non_null(strstr(json, "\"traceEvents\":["));
        /* One named track per thread, the counters as "C" events, the mark as an instant. */
        {
            char want[96];

            snprintf(want, sizeof(want), "\"tid\":%u,", r.main_tid);
            assert_non_null(strstr(json, want));
            snprintf(want, sizeof(want), "\"tid\":%u,", r.worker_tid);
            assert_non_null(strstr(json, want));
        }
        assert_non_null(strstr(json, "\"args\":{\"name\":\"main\"}"));
        assert_non_null(strstr(json, "\"args\":{\"name\":\"worker\"}"));
        assert_non_null(strstr(json, "\"ph\":\"C\""));
        assert_non_null(strstr(json, "\"name\":\"level loaded\""));
#if !NWB_IS_FINAL
        assert_non_null(strstr(json, "\"name\":\"job.skin\""));
        assert_non_null(strstr(json, "\"name\":\"render.draw_calls\""));
#endif
        free(json);
    }
}

/* A bad command line is a usage error (2) with a message, before any frame runs. */
static void test_demo_e2e_bad_arguments_exit_2(void **state)
{
    struct fx *f = *state;
    static struct proc p;
    const char *env[] = {f->log_env, f->crash_env, "NWB_CRASH_HELPER=", NULL};
    static const char *const bad[][3] = {
        {"--frames", "0", "--frames"},
        {"--frames", "1000001", "--frames"},
        {"--hz", "0", "--hz"},
        {"--crash", "melt", "--crash"},
        {"--logserver=no-port", NULL, "--logserver"},
        {"--bogus", NULL, "unknown"},
        {"--record", NULL, "--record"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *argv[] = {NWB_DEMO_EXE, "--no-logserver", bad[i][0], bad[i][1], NULL};

        assert_int_equal(proc_run(argv, env, &p), 0);
        if (!(WIFEXITED(p.status) && WEXITSTATUS(p.status) == 2) ||
            strstr(p.out, bad[i][2]) == NULL) {
            print_error("%s %s: status 0x%x, output %s\n", bad[i][0],
                        bad[i][1] != NULL ? bad[i][1] : "", (unsigned)p.status, p.out);
            fail();
        }
    }
    {
        const char *argv[] = {NWB_DEMO_EXE, "--help", NULL};

        assert_int_equal(proc_run(argv, env, &p), 0);
        assert_true(exited_ok(&p));
        assert_non_null(strstr(p.out, "usage: nwb-demo"));
    }
}

/* ---- --crash -------------------------------------------------------------------------------- */

/* The one finished package folder in <dir>/crash/pending (uploads are off). */
static void package_find(const struct fx *f, char *out, size_t cap)
{
    char pending[600];
    DIR *d;
    struct dirent *e;
    int n = 0;

    snprintf(pending, sizeof(pending), "%s/crash/pending", f->dir);
    d = opendir(pending);
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        const size_t len = strlen(e->d_name);

        if (e->d_name[0] == '.' || (len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0)) {
            continue;
        }
        snprintf(out, cap, "%s/%s", pending, e->d_name);
        n++;
    }
    closedir(d);
    assert_int_equal(n, 1);
}

static char *package_file(const char *pkg, const char *name)
{
    char path[1200];
    char *text;

    snprintf(path, sizeof(path), "%s/%s", pkg, name);
    text = nwb_test_read_file(path, NULL);
    if (text == NULL) {
        print_error("package file %s missing\n", path);
        fail();
    }
    return text;
}

/* Run the demo with --crash @p mode in frame CRASH_FRAME; return its package folder. */
static void crash_run(struct fx *f, const char *mode, struct proc *p, char *pkg, size_t cap)
{
    const char *env[] = {f->log_env, f->crash_env, "NWB_CRASH_HELPER=", CRASH_ASAN_OPTIONS, NULL};
    const char *argv[] = {NWB_DEMO_EXE, "--no-logserver", "--frames", "20",
                          "--fast",     "--crash",        mode,       "--crash-frame",
                          CRASH_FRAME,  "--record",       f->record,  NULL};

    assert_int_equal(proc_run(argv, env, p), 0);
    package_find(f, pkg, cap);
}

static void check_signal_package(const char *pkg, const char *signal, int main_thread,
                                 const char *mode)
{
    char want[128];
    char *manifest = package_file(pkg, "manifest.txt");
    char *app = package_file(pkg, "app.txt");
    char *crash = package_file(pkg, "crash.txt");
    char *tail = package_file(pkg, "log_tail.txt");

    assert_memory_equal(manifest, "nwb-crash-manifest 1\n", 21);
    assert_non_null(strstr(manifest, "\nkind=signal\n"));
    assert_non_null(strstr(manifest, "\nprogram=nwb-demo\n"));
    snprintf(want, sizeof(want), "\nsignal=%s\n", signal);
    assert_non_null(strstr(manifest, want));
    assert_non_null(strstr(manifest, main_thread ? "\nmain_thread=1\n" : "\nmain_thread=0\n"));
    if (!main_thread) {
        assert_non_null(strstr(manifest, "\nthread_name=worker\n"));
    }
    assert_non_null(strstr(app, "nwb-demo frame=" CRASH_FRAME "\n"));
    assert_non_null(strstr(crash, "[backtrace]"));
    snprintf(want, sizeof(want), "crashing on purpose: %s in frame " CRASH_FRAME, mode);
    assert_non_null(strstr(tail, want)); /* an essential line: also in fin builds */
    free(manifest);
    free(app);
    free(crash);
    free(tail);
}

static void test_demo_e2e_crash_segv_leaves_a_signal_package(void **state)
{
    struct fx *f = *state;
    static struct proc p;
    char pkg[1024];

    crash_run(f, "segv", &p, pkg, sizeof(pkg));
    if (!(WIFSIGNALED(p.status) && WTERMSIG(p.status) == SIGSEGV)) {
        print_error("status 0x%x\n%s\n", (unsigned)p.status, p.out);
        fail();
    }
    check_signal_package(pkg, "SIGSEGV", 1, "segv");
}

static void test_demo_e2e_crash_abort_leaves_a_signal_package(void **state)
{
    struct fx *f = *state;
    static struct proc p;
    char pkg[1024];

    crash_run(f, "abort", &p, pkg, sizeof(pkg));
    if (!(WIFSIGNALED(p.status) && WTERMSIG(p.status) == SIGABRT)) {
        print_error("status 0x%x\n%s\n", (unsigned)p.status, p.out);
        fail();
    }
    check_signal_package(pkg, "SIGABRT", 1, "abort");
}

static void test_demo_e2e_crash_stack_overflow_on_the_worker_is_captured(void **state)
{
    struct fx *f = *state;
    static struct proc p;
    char pkg[1024];

    crash_run(f, "stack", &p, pkg, sizeof(pkg));
    if (!(WIFSIGNALED(p.status) && WTERMSIG(p.status) == SIGSEGV)) {
        print_error("status 0x%x\n%s\n", (unsigned)p.status, p.out);
        fail();
    }
    check_signal_package(pkg, "SIGSEGV", 0, "stack");
}

static void test_demo_e2e_crash_gpu_writes_a_package_and_keeps_running(void **state)
{
    struct fx *f = *state;
    static struct proc p;
    static struct demo_record r;
    char pkg[1024], path[1200];
    char *manifest, *gpu, *rgd, *log;

    crash_run(f, "gpu", &p, pkg, sizeof(pkg));
    assert_true(exited_ok(&p));
    assert_int_equal(rec_load(f->record, &r), 0);
    assert_int_equal(r.frames, 20); /* it kept running to the end */
    manifest = package_file(pkg, "manifest.txt");
    assert_non_null(strstr(manifest, "\nkind=gpu\n"));
    assert_non_null(strstr(manifest, "\nprogram=nwb-demo\n"));
    snprintf(path, sizeof(path), "\nrun=%s\n", r.run); /* one run id for log and packages */
    assert_non_null(strstr(manifest, path));
    gpu = package_file(pkg, "gpu_crash.txt");
    assert_non_null(strstr(gpu, "VK_ERROR_DEVICE_LOST"));
    assert_non_null(strstr(gpu, "frame/render/render.lighting"));
    rgd = package_file(pkg, "gpu_crash.rgd");
    assert_memory_equal(rgd, "RGD-FAKE\x01\x02\x03\x04", 12);
    snprintf(path, sizeof(path), "%s/log.txt", r.run_dir);
    log = nwb_test_read_file(path, NULL);
    assert_non_null(log);
    assert_non_null(strstr(log, "gpu: device lost in frame " CRASH_FRAME " (simulated)"));
    free(manifest);
    free(gpu);
    free(rgd);
    free(log);
}

int main(int argc, char **argv)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest server[] = {
        T(test_demo_e2e_server_report_matches_what_was_recorded),
        T(test_demo_e2e_server_crash_package_reaches_the_server),
    };
    const struct CMUnitTest standalone[] = {
        T(test_demo_e2e_standalone_writes_log_and_stream_the_tool_reports),
        T(test_demo_e2e_bad_arguments_exit_2),
    };
    const struct CMUnitTest crash[] = {
        T(test_demo_e2e_crash_segv_leaves_a_signal_package),
        T(test_demo_e2e_crash_abort_leaves_a_signal_package),
        T(test_demo_e2e_crash_stack_overflow_on_the_worker_is_captured),
        T(test_demo_e2e_crash_gpu_writes_a_package_and_keeps_running),
    };
#undef T
    const char *group = argc > 1 ? argv[1] : "server";

    if (strcmp(group, "standalone") == 0) {
        return cmocka_run_group_tests_name("telemetry.demo_standalone", standalone, NULL, NULL);
    }
    if (strcmp(group, "crash") == 0) {
        return cmocka_run_group_tests_name("telemetry.demo_crash", crash, NULL, NULL);
    }
    return cmocka_run_group_tests_name("telemetry.demo_e2e", server, NULL, NULL);
}
