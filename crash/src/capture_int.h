/* SPDX-License-Identifier: MIT */
/*
 * capture_int.h - private declarations shared by crash/'s files: the state
 * nwb_crash_install() prepares for the handler, the async-signal-safe text
 * writer, the package folder writer, module lookup, and the helper spawn.
 * Everything marked "AS-safe" may run inside the fatal-signal handler.
 */
#ifndef NWB_CRASH_CAPTURE_INT_H
#define NWB_CRASH_CAPTURE_INT_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "nwb/crash.h"
#include "nwb/file_io.h"
#include "nwb/safe_name.h"

/* Defaults (docs/crash.md). */
#define NWB__CRASH_DEF_PENDING_COUNT 16u
#define NWB__CRASH_DEF_PENDING_BYTES (64ull * 1024u * 1024u)
#define NWB__CRASH_DEF_TIMEOUT_MS    10000u
#define NWB__CRASH_DEF_WATCHDOG_S    10u
#define NWB__CRASH_DEF_SERVER        "127.0.0.1:7650"
#define NWB__CRASH_DEF_DIR           "nwb-crashes"
#define NWB__CRASH_CRASHTXT_MAX      (256u * 1024u) /* crash.txt bytes kept */
#define NWB__CRASH_SIGNALS           7

/* Everything the handler reads, prepared at install time. */
struct nwb__crash_state {
    atomic_int installed;
    char program[NWB_SAFE_NAME_MAX + 1];
    char version[64];
    char build_config[16];
    char build_id[96];
    char run_id[NWB_SAFE_NAME_MAX + 1];
    char crash_dir[NWB_CRASH_PATH_MAX];
    char pending_dir[NWB_CRASH_PATH_MAX + 16];
    char server[256];
    char upload_log[NWB_CRASH_PATH_MAX + 16]; /* the helper's stderr */
    char exe_path[NWB_CRASH_PATH_MAX];
    char cmdline[NWB_CRASH_CMDLINE_MAX]; /* NUL-separated, as in /proc */
    size_t cmdline_len;
    int cmdline_cut;
    uint64_t start_time_ns;
    int main_tid;
    unsigned pending_max_count;
    unsigned watchdog_s;
    void (*on_crash)(int fd, void *arg);
    void *on_crash_arg;
    int lock_fd; /* <pending>/.lock, opened at install (O_CLOEXEC) */
    /* The helper's argv, built once; args[] point into argbuf. */
    int have_helper;
    int helper_lock_arg; /* index of the "--lock-fd" value in helper_argv */
    char *helper_argv[24];
    char helper_argbuf[4 * NWB_CRASH_PATH_MAX + 1024];
    atomic_uint package_seq;
};

extern struct nwb__crash_state nwb__crash_g;

/* ---- async-signal-safe text writer (crash_sigsafe.c) ---- */

/* Buffered writer to an fd with a byte limit; a cut output ends in "\n[truncated]\n". */
struct nwb__sw {
    int fd;
    int err;
    size_t limit;
    size_t total;
    size_t used;
    int cut;
    char buf[4096];
};

void nwb__sw_init(struct nwb__sw *w, int fd, size_t limit);             /* AS-safe */
void nwb__sw_mem(struct nwb__sw *w, const void *p, size_t n);           /* AS-safe */
void nwb__sw_str(struct nwb__sw *w, const char *s);                     /* AS-safe */
void nwb__sw_chr(struct nwb__sw *w, char c);                            /* AS-safe */
void nwb__sw_u64(struct nwb__sw *w, uint64_t v);                        /* AS-safe */
void nwb__sw_i64(struct nwb__sw *w, int64_t v);                         /* AS-safe */
void nwb__sw_hex(struct nwb__sw *w, uint64_t v, int digits);            /* AS-safe, "0x" + digits */
void nwb__sw_esc(struct nwb__sw *w, const char *p, size_t n);           /* AS-safe, \\ and \xNN */
void nwb__sw_kv(struct nwb__sw *w, const char *key, const char *value); /* "key=value\n" */
void nwb__sw_time(struct nwb__sw *w, uint64_t time_ns);                 /* ISO-8601 UTC, ns */
int nwb__sw_flush(struct nwb__sw *w);                                   /* AS-safe; 0 or -1 */

/* Writing all of a buffer is nwb_write_all() (nwb/file_io.h), which is AS-safe. */
/* strlen / bounded copy without libc state. AS-safe. */
size_t nwb__crash_strlen(const char *s);
size_t nwb__crash_strlcpy(char *dst, const char *src, size_t cap);
/* "YYYYmmdd-HHMMSS" (15 chars + NUL) from a Unix time in ns. AS-safe. */
void nwb__crash_time_compact(char out[16], uint64_t time_ns);
/* Realtime clock in ns. AS-safe. */
uint64_t nwb__crash_now_ns(void);
/* "SIGSEGV" etc., or NULL. AS-safe. */
const char *nwb__crash_signal_name(int sig);
/* "SEGV_MAPERR" etc. for @p sig / @p code, or NULL. AS-safe. */
const char *nwb__crash_sigcode_name(int sig, int code);

/* ---- package folders (crash_package.c) ---- */

/* One package being written: <pending>/<name>.tmp, renamed to <name> when done. */
struct nwb__crash_pkg {
    char name[160];
    char tmp_path[NWB_CRASH_PATH_MAX + 200];
    char final_path[NWB_CRASH_PATH_MAX + 200];
    int dir_fd;
    uint64_t time_ns;
};

/*
 * Start a package of @p kind ("signal" or "gpu"). Refuses (NWB_EFULL) when the
 * pending folder already holds pending_max_count entries. AS-safe.
 */
int nwb__crash_pkg_begin(struct nwb__crash_pkg *pkg, const char *kind_tag, uint64_t time_ns);
/* Create @p file in the package for writing; returns an fd or -1. AS-safe. */
int nwb__crash_pkg_open(struct nwb__crash_pkg *pkg, const char *file);
/* Write the manifest's common keys (format, kind, program, run, times...). AS-safe. */
void nwb__crash_pkg_manifest_common(struct nwb__sw *w, const char *kind, uint64_t time_ns);
/* Write log_tail.txt (the client's last log lines). AS-safe. */
void nwb__crash_pkg_write_tail(struct nwb__crash_pkg *pkg);
/* Close the folder and rename it to its final name. AS-safe. 0 or -1. */
int nwb__crash_pkg_finish(struct nwb__crash_pkg *pkg);
/* Count the entries in the pending folder (getdents64). AS-safe. -1 on error. */
long nwb__crash_pending_count(const char *pending_dir);

/* ---- modules and the memory map (crash_modules.c) ---- */

/*
 * Read /proc/self/maps once: copy it to @p maps_fd (if >= 0, at most
 * NWB_CRASH_MAPS_MAX bytes) and load the executable mappings for
 * nwb__crash_module_find(). AS-safe (static tables, no allocation).
 */
void nwb__crash_modules_load(int maps_fd);
/* The module holding @p pc: its path and the ELF virtual address of @p pc in it. AS-safe. */
int nwb__crash_module_find(uintptr_t pc, const char **path, uintptr_t *rel);

/*
 * The mapped files that hold code, from the last nwb__crash_modules_load(): each one's
 * adjacent mappings as one span (lowest address, one past the highest, the file offset
 * mapped at the lowest, the path). Sorted by address, not overlapping. AS-safe.
 */
unsigned nwb__crash_module_file_count(void);
int nwb__crash_module_file(unsigned i, uint64_t *lo, uint64_t *hi, uint64_t *file_off,
                           const char **path);

/* ---- threads.nwbc: every thread's registers and stack (docs/crash.md, "Thread capture") ---- */

#define NWB__CRASH_CAPTURE_TIMEOUT_MS  2000u /* the handler waits this long for the helper */
#define NWB__CRASH_CAPTURE_STACK_BYTES (64u * 1024u) /* stack bytes taken from each thread's sp */
#define NWB__CRASH_CAPTURE_REASON_MAX  256u          /* the helper's status line */

/* Read @p n bytes at @p where (a file offset or an address); returns bytes read or -1. */
typedef long (*nwb__crash_read_fn)(void *ctx, uint64_t where, void *buf, size_t n);

/*
 * The GNU build id of the ELF64 image @p read sees: a file (@p mapped 0: notes at p_offset)
 * or an image mapped at address 0 of @p read (@p mapped 1: notes at p_vaddr - first load
 * page). Copies at most @p cap bytes into @p out; returns the length, 0 when none. AS-safe.
 */
size_t nwb__crash_elf_build_id(nwb__crash_read_fn read, void *ctx, int mapped, uint8_t *out,
                               size_t cap);

/*
 * The signal context's general registers in DWARF order (docs/crash-capture-format.md) into
 * @p regs (NWB_CRASH_REGS_MAX); sets @p *arch. Returns the count, 0 on an unknown arch. AS-safe.
 */
unsigned nwb__crash_context_regs(const void *ucontext, uint64_t *regs, unsigned *arch);

/*
 * Handler: write threads.nwbc into @p pkg. Starts "nwb-crash capture" (ptrace, every thread)
 * and waits for it at most NWB__CRASH_CAPTURE_TIMEOUT_MS; when ptrace is unavailable or the
 * helper fails, writes the in-process capture (the crashing thread only) with the reason.
 * AS-safe.
 */
void nwb__crash_capture_threads(struct nwb__crash_pkg *pkg, const void *ucontext, int tid,
                                const char *tname);

/*
 * Handler fallback: threads.nwbc (method 2) in @p dir_fd with the crashing thread's signal
 * registers, up to NWB__CRASH_CAPTURE_STACK_BYTES of its stack from sp, and the code
 * modules of the last nwb__crash_modules_load(). @p note says why. AS-safe. 0 or -1.
 */
int nwb__crash_inproc_capture(int dir_fd, const uint64_t *regs, unsigned nregs, unsigned arch,
                              int tid, const char *tname, const char *note, size_t note_len);

/* Read this process's memory without faulting (process_vm_readv on itself). AS-safe. */
long nwb__crash_self_read(uint64_t addr, void *buf, size_t n);

/* ---- the capture helper (nwb-crash capture, crash_ptrace.c, crash_proc_modules.c) ---- */

struct nwb__crash_capture_args {
    int pid;             /* the crashed process */
    int tid;             /* the thread that took the signal */
    const char *dir;     /* the package folder being written (<name>.tmp) */
    int regs_fd;         /* the handler's signal registers arrive here */
    unsigned timeout_ms; /* for the whole capture */
};

/*
 * Attach to every thread of args->pid with PTRACE_SEIZE + PTRACE_INTERRUPT, read registers,
 * names and stacks, the code modules with build ids, detach, and write <dir>/threads.nwbc
 * (method 1). Returns 0 with a note for the file in @p note, or -1 with a one-line reason.
 */
int nwb__crash_ptrace_capture(const struct nwb__crash_capture_args *args, char *note,
                              size_t note_cap);

/*
 * The stack bytes taken from each of @p nthreads threads: NWB__CRASH_CAPTURE_STACK_BYTES, less
 * when the file would pass NWB_CRASH_CAPTURE_FILE_MAX with @p nmodules modules and every
 * other field at its bound.
 */
size_t nwb__crash_capture_stack_budget(size_t nthreads, size_t nmodules);

/* One module of the capture helper's list: a file's adjacent mappings holding code. */
struct nwb__crash_proc_module {
    uint64_t start, end, file_offset;
    uint8_t build_id[64];
    size_t build_id_len;
    char *path; /* nwb_malloc'd */
    size_t path_len;
};

/*
 * The code modules of process @p pid from /proc/PID/maps (at most
 * NWB_CRASH_CAPTURE_MODULES_MAX), with each one's build id read from its file (through
 * /proc/PID/map_files, else the path). Fills a nwb_malloc'd array into @p *out.
 * Returns the count or a negated errno. Not AS-safe (the helper's side).
 */
long nwb__crash_proc_modules(int pid, struct nwb__crash_proc_module **out);
void nwb__crash_proc_modules_free(struct nwb__crash_proc_module *m, size_t n);

/* ---- the uploader process (crash_spawn.c) ---- */

/*
 * Start the helper (nwb-crash submit ...) as a detached grandchild, with
 * @p lock_fd (may be -1) handed over as fd 3 already locked, stdin/stdout on
 * /dev/null and stderr appended to <crash_dir>/upload.log. AS-safe (raw
 * fork via syscall, execve, waitpid). Returns 0 or -1.
 */
int nwb__crash_spawn_helper(int lock_fd);

/*
 * Start "nwb-crash capture" as a direct child (so the handler can name it with
 * PR_SET_PTRACER and reap it) with @p regs_fd as its fd 3 and @p status_fd as its fd 4,
 * stderr appended to upload.log. @p pkg_dir, @p pid and @p tid go on its command line.
 * Returns the child's pid or -1. AS-safe.
 */
int nwb__crash_spawn_capture(const char *pkg_dir, int pid, int tid, int regs_fd, int status_fd);

/* ---- handlers (crash_handler.c) ---- */

/* Install the fatal-signal handlers, saving the previous actions. 0 or a negated errno. */
int nwb__crash_handlers_set(void);
/* Put the saved actions back. */
void nwb__crash_handlers_restore(void);

/* ---- install (crash_install.c) ---- */

/*
 * Normal context: take the pending lock on a fresh file description without
 * waiting and start the helper with it. Returns 1 when started, 0 when no
 * helper is configured or an uploader already holds the lock, or a negated errno.
 */
int nwb__crash_start_uploader(void);

/* ---- the pending folder (crash_pending.c) ---- */

/* Open <pending>/.lock (O_CLOEXEC), creating it. Returns the fd or a negated errno. */
int nwb__crash_lock_open(const char *pending_dir);

/* ---- archives (crash_pack.c) ---- */

/* "<dir>/.<base>.part<pid>": a temporary name beside @p path that listings skip. */
int nwb__crash_hidden_tmp(const char *path, char *out, size_t cap);
/* fsync(2) a file or folder by path. 0 or a negated errno. */
int nwb__crash_fsync_path(const char *path);
/*
 * program= and run= from the manifest inside the archive @p file, sanitised;
 * each buffer holds NWB_SAFE_NAME_MAX + 1 bytes. 0, -ENOENT (no manifest) or
 * NWB_EARCHIVE.
 */
int nwb__crash_archive_identity(const char *file, char *program, char *run);

/* ---- upload (crash_http.c) ---- */

/*
 * Blocking HTTP/1.1 POST of @p body_len bytes read from @p body_fd to
 * http://@p server@p path, with @p headers ("Name: value\r\n"...). The whole
 * exchange takes at most @p timeout_ms. The answer's status goes to
 * @p *status and its body (NUL-terminated, cut to @p resp_cap) to @p resp.
 * Returns 0 when an answer was read, NWB_ETIMEOUT, NWB_EPROTO (a malformed
 * answer), NWB_ECONFIG (bad HOST:PORT) or a negated errno.
 */
int nwb__crash_http_post(const char *server, const char *path, const char *headers, int body_fd,
                         uint64_t body_len, unsigned timeout_ms, int *status, char *resp,
                         size_t resp_cap);

#endif /* NWB_CRASH_CAPTURE_INT_H */
