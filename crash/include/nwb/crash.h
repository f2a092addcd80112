/* SPDX-License-Identifier: MIT */
/*
 * nwb/crash.h - crash capture for a game or tool: fatal-signal handlers that
 * write a crash package with async-signal-safe calls only, alternate signal
 * stacks for the engine's threads, GPU (device-lost) capture, and the
 * pending folder whose packages are archived and POSTed to nwb-logserver
 * outside the dying process. docs/crash.md describes the package and bounds.
 */
#ifndef NWB_CRASH_H
#define NWB_CRASH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "nwb/common.h"
#include "nwb/crash_manifest.h" /* NWB_CRASH_MANIFEST_NAME, NWB_CRASH_MANIFEST_MAGIC */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- bounds (docs/crash.md) ---- */

#define NWB_CRASH_ALTSTACK_BYTES (128u * 1024u)        /* per thread, plus one guard page */
#define NWB_CRASH_FRAMES_MAX     128u                  /* backtrace frames written */
#define NWB_CRASH_MODULES_MAX    1024u                 /* executable mappings resolved */
#define NWB_CRASH_MAPS_MAX       (1024u * 1024u)       /* bytes of /proc/self/maps copied */
#define NWB_CRASH_CMDLINE_MAX    8192u                 /* bytes of the command line kept */
#define NWB_CRASH_APP_MAX        (256u * 1024u)        /* bytes the on_crash hook may write */
#define NWB_CRASH_GPU_BLOB_MAX   (64u * 1024u * 1024u) /* each GPU vendor/metadata blob */
#define NWB_CRASH_PATH_MAX       1024u                 /* crash_dir and helper paths */
#define NWB_CRASH_ID_MAX         64u                   /* server ids ("id" in the 200 answer) */

/**
 * Capture settings. Strings are copied by nwb_crash_install(). Every NULL or
 * zero field takes the default in its comment.
 */
typedef struct nwb_crash_config {
    const char *program;      /* NULL: the executable's file name */
    const char *version;      /* NULL: NWB_VERSION_STRING */
    const char *build_config; /* NULL: the nwb build's config ("dbg", "opt", "fin") */
    const char *run_id;       /* NULL: $NWB_RUN_ID, else 16 random hex digits */
    const char *crash_dir;    /* NULL: $NWB_CRASH_DIR, else ./nwb-crashes (made absolute) */
    const char *server;       /* "HOST:PORT"; NULL: $NWB_LOGSERVER, else 127.0.0.1:7650 */
    /* The uploader (the nwb-crash tool). NULL: $NWB_CRASH_HELPER, else nwb-crash in the
     * executable's folder. "" disables uploading: packages stay pending. */
    const char *helper_exe;
    unsigned pending_max_count; /* 0: 16 packages waiting; the handler writes no more */
    uint64_t pending_max_bytes; /* 0: 64 MiB of waiting archives; oldest pruned beyond */
    unsigned upload_timeout_ms; /* 0: 10000, per upload attempt in the helper */
    unsigned watchdog_s;        /* 0: 10; a handler still running then is killed (SIGALRM) */
    int no_upload_at_start;     /* 1: install does not start the helper for old packages */
    /* Called from the signal handler after the package's own files are written, with a
     * file (app.txt, at most NWB_CRASH_APP_MAX bytes kept) to describe the application's
     * state. Must be async-signal-safe. NULL: no app.txt. */
    void (*on_crash)(int fd, void *arg);
    void *on_crash_arg;
} nwb_crash_config_t;

#define NWB_CRASH_CONFIG_INIT                                                                      \
    {                                                                                              \
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0u, 0u, 0u, 0u, 0, NULL, NULL                    \
    }

/**
 * Install the handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP
 * and SIGSYS on an alternate stack for the calling (main) thread. Meant to be
 * the first call in main(), before argument parsing and logging: it reads the
 * command line from /proc/self/cmdline and allocates everything the handler
 * needs now, so the handler itself never allocates. @p cfg may be NULL.
 *
 * When old packages are pending (and an uploader is configured) it starts the
 * uploader as a detached process; it never waits on the network itself.
 *
 * Returns 0; NWB_ECONFIG when already installed or a path is too long; a
 * negated errno when the crash folder or the alternate stack cannot be made.
 * Not thread-safe: call once, before other threads exist.
 */
NWB_API int nwb_crash_install(const nwb_crash_config_t *cfg);

/**
 * Restore the signal dispositions that were current before install and free
 * the main thread's alternate stack (tests, or a tool that hands crash
 * handling to something else). Safe when not installed.
 */
NWB_API void nwb_crash_uninstall(void);

/** The run id packages carry (give it to the logger client as its run_id). "" before install. */
NWB_API const char *nwb_crash_run_id(void);

/** The absolute crash folder in use ("" before install); packages wait in <dir>/pending. */
NWB_API const char *nwb_crash_dir(void);

/* ---- threads ---- */

/**
 * Give the calling thread its own alternate signal stack, so a stack
 * overflow on it is still caught. Threads do not inherit the main thread's
 * alternate stack: every thread the engine creates should call this first
 * (or be started with nwb_crash_thread_create()). The stack is released
 * when the thread exits. Idempotent. Returns 0 or a negated errno.
 */
NWB_API int nwb_crash_thread_prepare(void);

/** Release the calling thread's alternate stack now (before it exits). */
NWB_API void nwb_crash_thread_release(void);

/**
 * pthread_create() whose thread calls nwb_crash_thread_prepare() before
 * @p fn. Returns 0 or a negated errno (never a positive pthread code).
 */
NWB_API int nwb_crash_thread_create(pthread_t *thread, const pthread_attr_t *attr,
                                    void *(*fn)(void *), void *arg);

/**
 * nwb_crash_thread_create() that also names the thread: the new thread sets
 * its OS name (pthread_setname_np, the first 15 bytes of @p name; NULL or ""
 * keeps the inherited one) before it prepares its stack and calls @p fn.
 * The telemetry recorder reads that name when the thread first records
 * (its track in reports and traces), and a crash capture lists it.
 */
NWB_API int nwb_crash_thread_create_named(pthread_t *thread, const pthread_attr_t *attr,
                                          const char *name, void *(*fn)(void *), void *arg);

/* ---- GPU crash capture ---- */

/**
 * What the application knows at device loss. Every field may be NULL / 0;
 * then the report says it was not supplied. Byte blobs are copied into the
 * package (at most NWB_CRASH_GPU_BLOB_MAX each).
 */
typedef struct nwb_crash_gpu_info {
    const char *api;            /* "vulkan", ... */
    const char *reporting_call; /* the call that reported device loss, "vkQueueSubmit2" */
    const char *result;         /* "VK_ERROR_DEVICE_LOST" */
    const char *device_name;
    uint32_t vendor_id; /* PCI ids */
    uint32_t device_id;
    const char *driver_name;
    const char *driver_version;
    /* Vendor dumps. A NULL blob with a status says why it is unavailable. */
    const void *rgd_bytes; /* AMD Radeon GPU Detective / device-fault bytes: gpu_crash.rgd */
    size_t rgd_len;
    const char *rgd_status;
    const void *aftermath_bytes; /* NVIDIA Aftermath dump: gpu_crash.nv-gpudmp */
    size_t aftermath_len;
    const char *aftermath_status;
    /* VK_EXT_device_fault: the application's formatted description (vk_device_fault.txt)
     * and the vendor binary (vk_device_fault.bin). */
    const char *device_fault_text;
    const void *device_fault_bytes;
    size_t device_fault_len;
    const char *device_fault_status;
    /* Breadcrumbs: the last marker paths (checkpoints, buffer markers, internal). */
    const char *const *marker_paths;
    size_t marker_count;
    const char *breadcrumbs_status;
    /* GPU debug metadata (shader hashes, pipeline names...): gpu_debug_metadata.txt. */
    const void *debug_metadata;
    size_t debug_metadata_len;
    /* Errors the application met while collecting the above. */
    const char *const *errors;
    size_t error_count;
} nwb_crash_gpu_info_t;

/**
 * Write a GPU crash package without killing the process: always a
 * gpu_crash.txt (ids, time, the reporting call, device and driver, one line
 * per capture path with its result or why it was unavailable, the marker
 * paths, collection errors), plus gpu_crash.rgd / gpu_crash.nv-gpudmp /
 * vk_device_fault.* / gpu_debug_metadata.txt when given, the manifest and the
 * log tail; then starts the uploader. Call it on device loss before any error
 * log that may debug-trap. Needs nwb_crash_install(). Blocks only on local
 * file writes. The package's folder name goes to @p name_out (may be NULL).
 * Returns 0, NWB_ECLOSED when not installed, NWB_EFULL when the pending
 * folder is at its count cap, or a negated errno.
 */
NWB_API int nwb_crash_capture_gpu(const nwb_crash_gpu_info_t *info, char *name_out,
                                  size_t name_cap);

/* ---- packaging, upload and the pending folder (outside the dying process) ---- */

/**
 * "nwb-crash capture": attach to every thread of the crashed process @p pid with ptrace,
 * read registers, names and up to 64 KiB of stack each, and the code modules with build ids,
 * detach, and write threads.nwbc (docs/crash-capture-format.md, method 1) into the package
 * folder @p pkg_dir. The crashed thread @p tid's registers are the signal context's, read
 * from @p regs_fd (arch u16, nregs u16, nregs u64, little-endian; the handler writes them).
 * Takes at most @p timeout_ms. Returns 0 with the file's note in @p note, or -1 with a
 * one-line reason there ("ptrace: EPERM (Yama ptrace_scope 3)"). Not for the dying process
 * itself: the crash handler starts it (docs/crash.md, "Thread capture").
 */
NWB_API int nwb_crash_capture_process(int pid, int tid, const char *pkg_dir, int regs_fd,
                                      unsigned timeout_ms, char *note, size_t note_cap);

/**
 * Archive the package directory @p dir into @p out_file (regular files only,
 * sorted, names relative to @p dir). The format follows the name: .tar.zst
 * (default for any other name), .tar.gz, .tar or .zip. Written to a temporary
 * file and renamed. Returns 0, NWB_EARCHIVE, or a negated errno; @p errbuf
 * (may be NULL) gets a reason.
 */
NWB_API int nwb_crash_pack_dir(const char *dir, const char *out_file, char *errbuf, size_t errlen);

/** Result of one upload. */
typedef struct nwb_crash_upload_result {
    int http_status;               /* 0 when no answer */
    char id[NWB_CRASH_ID_MAX + 1]; /* the server's id on 200 */
} nwb_crash_upload_result_t;

/**
 * POST the archive @p file to http://@p server/v1/crash ("HOST:PORT"; NULL:
 * $NWB_LOGSERVER, else 127.0.0.1:7650) with X-NWB-Program / X-NWB-Run taken
 * from its manifest. Blocking, at most @p timeout_ms in total. Returns 0 on
 * a 200 with an id; NWB_EHTTP for any other answer (status in @p res);
 * NWB_ETIMEOUT; or a negated errno (-ECONNREFUSED when no server listens).
 */
NWB_API int nwb_crash_upload_file(const char *file, const char *server, unsigned timeout_ms,
                                  nwb_crash_upload_result_t *res, char *errbuf, size_t errlen);

/* Longest build id in hex the symbol store takes (64 bytes). */
#define NWB_CRASH_SYMBOLS_ID_MAX 128

/** Result of one symbol upload. */
typedef struct nwb_crash_symbols_result {
    int http_status;                             /* 0 when no answer */
    int stored;                                  /* 201: newly stored; 200: already there */
    char build_id[NWB_CRASH_SYMBOLS_ID_MAX + 1]; /* the server's answer on 200/201 */
    char reason[256];                            /* the server's reason for any other answer */
} nwb_crash_symbols_result_t;

/**
 * POST the ELF file @p file (an executable, shared library or debug file) raw to
 * http://@p server/v1/symbols (NULL: $NWB_LOGSERVER, else 127.0.0.1:7650; "http://" and a
 * trailing "/" are allowed), with Authorization: Bearer @p token (NULL: the token from the
 * environment, nwb_token_from_env(); "" none). Blocking, at most @p timeout_ms in total (0:
 * 120000). Returns 0 on 200 (identical file already stored) or 201 (stored), with the build id
 * in @p res; NWB_EHTTP for any other answer (status and the server's reason in @p res);
 * NWB_ETIMEOUT; NWB_EPROTO for a 200/201 without a build id; or a negated errno. @p errbuf
 * (may be NULL) gets a one-line reason.
 */
NWB_API int nwb_crash_symbols_upload(const char *file, const char *server, const char *token,
                                     unsigned timeout_ms, nwb_crash_symbols_result_t *res,
                                     char *errbuf, size_t errlen);

/** Settings for processing a crash folder's pending packages. */
typedef struct nwb_crash_pending_opts {
    const char *crash_dir; /* NULL: $NWB_CRASH_DIR, else ./nwb-crashes */
    const char *server;    /* NULL: $NWB_LOGSERVER, else 127.0.0.1:7650 */
    unsigned timeout_ms;   /* 0: 10000 per upload */
    unsigned max_count;    /* 0: 16 */
    uint64_t max_bytes;    /* 0: 64 MiB */
    int lock_fd;           /* -1: take <dir>/pending/.lock; else an fd already locked */
    int no_upload;         /* 1: pack and prune only */
    void (*report)(void *arg, const char *line); /* progress lines; may be NULL */
    void *report_arg;
} nwb_crash_pending_opts_t;

#define NWB_CRASH_PENDING_OPTS_INIT                                                                \
    {                                                                                              \
        NULL, NULL, 0u, 0u, 0u, -1, 0, NULL, NULL                                                  \
    }

/** Counts from nwb_crash_pending_process(). */
typedef struct nwb_crash_pending_stats {
    unsigned packed;   /* package folders archived */
    unsigned uploaded; /* archives the server took (then deleted) */
    unsigned rejected; /* refused for good: 400, 413, 415, 422 (moved to <dir>/failed) */
    unsigned pruned;   /* archives deleted by the count/byte caps, oldest first */
    unsigned left;     /* archives still pending afterwards */
} nwb_crash_pending_stats_t;

/**
 * Under the pending lock (blocking until another uploader is done): recover
 * packages a handler could not finish, archive each package folder, prune to
 * the caps (oldest first), then upload the archives oldest first, deleting
 * each one the server took. Stops uploading at the first connection failure
 * or any answer but 200/400/413/415/422 (the rest stay pending). Returns 0 when nothing is left
 * pending, NWB_EFULL when something is (server down), or a negated errno.
 */
NWB_API int nwb_crash_pending_process(const nwb_crash_pending_opts_t *opts,
                                      nwb_crash_pending_stats_t *stats);

/** One pending entry, oldest first. */
typedef struct nwb_crash_pending_entry {
    char name[256];
    int kind; /* NWB_CRASH_PENDING_* */
    uint64_t bytes;
} nwb_crash_pending_entry_t;

#define NWB_CRASH_PENDING_DIR     1 /* a finished package folder, not yet archived */
#define NWB_CRASH_PENDING_ARCHIVE 2 /* an archive waiting for upload */
#define NWB_CRASH_PENDING_PARTIAL 3 /* a folder a handler is writing (or died writing) */

/**
 * List @p crash_dir's pending entries, oldest first, into @p out (at most
 * @p cap; the total goes to @p count). With @p wait, first waits (up to
 * @p wait_ms) for a running uploader to finish. Returns 0, NWB_ETIMEOUT, or a
 * negated errno.
 */
NWB_API int nwb_crash_pending_list(const char *crash_dir, int wait, unsigned wait_ms,
                                   nwb_crash_pending_entry_t *out, size_t cap, size_t *count);

#ifdef __cplusplus
}
#endif

#endif /* NWB_CRASH_H */
