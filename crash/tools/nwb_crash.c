/* SPDX-License-Identifier: MIT */
/*
 * nwb_crash.c - the nwb-crash tool: pack a package folder into an archive,
 * upload archives (or a whole crash folder) to nwb-logserver, list what is
 * pending, "submit", the uploader the crash handler and
 * nwb_crash_install() start outside the dying process, "capture", the ptrace
 * helper the handler starts and waits for (threads.nwbc), and "symbols upload",
 * which publishes ELF files to the server's symbol store (a build machine's step).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nwb/crash.h"
#include "nwb/error.h"
#include "nwb/file_io.h"

#define UPLOAD_LOG_MAX (1024L * 1024L) /* submit truncates its log (its stderr) beyond this */
#define LIST_MAX       4096u

static const char usage_text[] =
    "usage: nwb-crash pack DIR -o FILE        archive a package folder (.tar.zst, .tar.gz,\n"
    "                                         .tar or .zip by FILE's name)\n"
    "       nwb-crash upload FILE|DIR [--server HOST:PORT] [--timeout-ms N]\n"
    "                                         POST an archive, a package folder, or every\n"
    "                                         pending package of a crash folder to /v1/crash\n"
    "       nwb-crash pending [--dir DIR] [--no-wait] [--wait-ms N]\n"
    "                                         list what waits in DIR/pending, oldest first\n"
    "       nwb-crash submit [--dir DIR] [--server HOST:PORT] [--timeout-ms N]\n"
    "                        [--max-count N] [--max-bytes N] [--lock-fd FD]\n"
    "                                         archive, prune and upload DIR's pending\n"
    "                                         packages (what the crash handler starts)\n"
    "       nwb-crash capture --pid PID --tid TID --dir PKG --regs-fd FD --status-fd FD\n"
    "                         [--timeout-ms N]\n"
    "                                         (the crash handler's helper) write PKG/threads.nwbc\n"
    "                                         from every thread of PID, with ptrace\n"
    "       nwb-crash symbols upload [--server HOST:PORT] [--token T] [--timeout-ms N] FILE...\n"
    "                                         POST each ELF file to /v1/symbols (stored by its\n"
    "                                         GNU build id); prints \"uploaded ID FILE\" or\n"
    "                                         \"exists ID FILE\"\n"
    "DIR defaults to $NWB_CRASH_DIR, else ./nwb-crashes; the server to $NWB_LOGSERVER,\n"
    "else 127.0.0.1:7650. Exit status: 0 done, 1 failed or still pending, 2 usage.\n";

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "nwb-crash: %s%s%s\n%s", what, arg != NULL ? " " : "", arg != NULL ? arg : "",
            usage_text);
    return 2;
}

struct args {
    const char *positional;
    const char *out;
    const char *dir;
    const char *server;
    unsigned timeout_ms;
    unsigned wait_ms;
    unsigned max_count;
    unsigned long long max_bytes;
    int lock_fd;
    int no_wait;
    int pid, tid, regs_fd, status_fd; /* capture */
};

static int parse_num(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    unsigned long long v;

    if (s == NULL || s[0] < '0' || s[0] > '9') {
        return -1;
    }
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max) {
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
    memset(a, 0, sizeof(*a));
    a->lock_fd = -1;
    a->wait_ms = 60000;
    a->regs_fd = -1;
    a->status_fd = -1;
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long n;

        if (strcmp(o, "--no-wait") == 0) {
            a->no_wait = 1;
            continue;
        }
        if (o[0] != '-') {
            if (a->positional != NULL) {
                return usage_error("unexpected argument", o);
            }
            a->positional = o;
            continue;
        }
        if (v == NULL) {
            return usage_error("missing value for", o);
        }
        i++;
        if (strcmp(o, "-o") == 0 || strcmp(o, "--out") == 0) {
            a->out = v;
        } else if (strcmp(o, "--dir") == 0) {
            a->dir = v;
        } else if (strcmp(o, "--server") == 0) {
            a->server = v;
        } else if (strcmp(o, "--timeout-ms") == 0 && parse_num(v, 3600000u, &n) == 0) {
            a->timeout_ms = (unsigned)n;
        } else if (strcmp(o, "--wait-ms") == 0 && parse_num(v, 3600000u, &n) == 0) {
            a->wait_ms = (unsigned)n;
        } else if (strcmp(o, "--max-count") == 0 && parse_num(v, 1000000u, &n) == 0) {
            a->max_count = (unsigned)n;
        } else if (strcmp(o, "--max-bytes") == 0 && parse_num(v, 1ull << 50, &n) == 0) {
            a->max_bytes = n;
        } else if (strcmp(o, "--pid") == 0 && parse_num(v, 1u << 30, &n) == 0) {
            a->pid = (int)n;
        } else if (strcmp(o, "--tid") == 0 && parse_num(v, 1u << 30, &n) == 0) {
            a->tid = (int)n;
        } else if (strcmp(o, "--regs-fd") == 0 && parse_num(v, 1000000u, &n) == 0) {
            a->regs_fd = (int)n;
        } else if (strcmp(o, "--status-fd") == 0 && parse_num(v, 1000000u, &n) == 0) {
            a->status_fd = (int)n;
        } else if (strcmp(o, "--lock-fd") == 0) {
            if (strcmp(v, "-1") == 0) {
                a->lock_fd = -1;
            } else if (parse_num(v, 1000000u, &n) == 0) {
                a->lock_fd = (int)n;
            } else {
                return usage_error("bad value for --lock-fd:", v);
            }
        } else {
            return usage_error("unknown option or bad value:", o);
        }
    }
    return 0;
}

static void print_line(void *arg, const char *line)
{
    FILE *f = arg;
    char stamp[32];
    const time_t t = time(NULL);
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(f, "%s nwb-crash: %s\n", stamp, line);
    fflush(f);
}

static int cmd_pack(const struct args *a)
{
    char why[512];
    int err;

    if (a->positional == NULL || a->out == NULL) {
        return usage_error("pack needs DIR and -o FILE", NULL);
    }
    err = nwb_crash_pack_dir(a->positional, a->out, why, sizeof(why));
    if (err != 0) {
        fprintf(stderr, "nwb-crash: pack %s: %s\n", a->positional, why);
        return 1;
    }
    printf("%s\n", a->out);
    return 0;
}

static int upload_one(const struct args *a, const char *file)
{
    nwb_crash_upload_result_t res;
    char why[512];
    const int err = nwb_crash_upload_file(file, a->server, a->timeout_ms, &res, why, sizeof(why));

    if (err != 0) {
        fprintf(stderr, "nwb-crash: upload %s: %s\n", file, why);
        return 1;
    }
    printf("id %s %s\n", res.id, file);
    return 0;
}

static int run_pending(const struct args *a, const char *dir, int lock_fd, FILE *log)
{
    nwb_crash_pending_opts_t o = NWB_CRASH_PENDING_OPTS_INIT;
    nwb_crash_pending_stats_t st;
    int err;

    o.crash_dir = dir;
    o.server = a->server;
    o.timeout_ms = a->timeout_ms;
    o.max_count = a->max_count;
    o.max_bytes = a->max_bytes;
    o.lock_fd = lock_fd;
    o.report = print_line;
    o.report_arg = log;
    err = nwb_crash_pending_process(&o, &st);
    fprintf(log, "nwb-crash: %u archived, %u uploaded, %u refused, %u pruned, %u pending\n",
            st.packed, st.uploaded, st.rejected, st.pruned, st.left);
    return err == 0 ? 0 : 1;
}

static int cmd_upload(const struct args *a)
{
    char manifest[4096];
    struct stat st;

    if (a->positional == NULL) {
        return usage_error("upload needs FILE or DIR", NULL);
    }
    if (stat(a->positional, &st) != 0) {
        fprintf(stderr, "nwb-crash: %s: %s\n", a->positional, strerror(errno));
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        return upload_one(a, a->positional);
    }
    snprintf(manifest, sizeof(manifest), "%s/%s", a->positional, NWB_CRASH_MANIFEST_NAME);
    if (access(manifest, R_OK) == 0) {
        /* A package folder: archive it beside the system's temporary files, then upload. */
        const char *tmpdir = getenv("TMPDIR");
        char file[4096], why[512];
        int rc;

        snprintf(file, sizeof(file), "%s/nwb-crash-upload-%ld.tar.zst",
                 tmpdir != NULL ? tmpdir : "/tmp", (long)getpid());
        if (nwb_crash_pack_dir(a->positional, file, why, sizeof(why)) != 0) {
            fprintf(stderr, "nwb-crash: pack %s: %s\n", a->positional, why);
            return 1;
        }
        rc = upload_one(a, file);
        unlink(file);
        return rc;
    }
    return run_pending(a, a->positional, -1, stdout);
}

static const char *kind_name(int kind)
{
    switch (kind) {
    case NWB_CRASH_PENDING_DIR:
        return "package";
    case NWB_CRASH_PENDING_ARCHIVE:
        return "archive";
    default:
        return "partial";
    }
}

static int cmd_pending(const struct args *a)
{
    static nwb_crash_pending_entry_t entries[LIST_MAX];
    const char *dir = a->dir != NULL ? a->dir : a->positional;
    size_t n = 0;
    const int err = nwb_crash_pending_list(dir, !a->no_wait, a->wait_ms, entries, LIST_MAX, &n);

    if (err != 0) {
        char tmp[128];

        fprintf(stderr, "nwb-crash: pending: %s\n", nwb_strerror_r(err, tmp, sizeof(tmp)));
        return 1;
    }
    for (size_t i = 0; i < n && i < LIST_MAX; i++) {
        printf("%s %llu %s\n", kind_name(entries[i].kind), (unsigned long long)entries[i].bytes,
               entries[i].name);
    }
    printf("%zu pending\n", n);
    return 0;
}

static int cmd_submit(const struct args *a)
{
    struct stat st;

    /* stderr is <crash_dir>/upload.log when the handler started us: keep it bounded. */
    if (fstat(STDERR_FILENO, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > UPLOAD_LOG_MAX) {
        (void)ftruncate(STDERR_FILENO, 0);
    }
    return run_pending(a, a->dir != NULL ? a->dir : a->positional, a->lock_fd, stderr);
}

/* The handler reads "ok <note>" or "fail <reason>" from the status pipe, then EOF. */
static int cmd_capture(const struct args *a)
{
    char note[512], line[600];
    int rc, n;

    if (a->pid <= 0 || a->tid <= 0 || a->dir == NULL || a->regs_fd < 0) {
        return usage_error("capture needs --pid, --tid, --dir and --regs-fd", NULL);
    }
    rc = nwb_crash_capture_process(a->pid, a->tid, a->dir, a->regs_fd,
                                   a->timeout_ms != 0 ? a->timeout_ms : 1500u, note, sizeof(note));
    n = snprintf(line, sizeof(line), "%s %s\n", rc == 0 ? "ok" : "fail", note);
    if (n > 0 && a->status_fd >= 0) {
        (void)nwb_write_all(a->status_fd, line,
                            (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
        close(a->status_fd);
    }
    fprintf(stderr, "nwb-crash: capture of pid %d: %s", a->pid, line);
    return rc == 0 ? 0 : 1;
}

/* One option value of "symbols upload" at argv[i + 1]; NULL when missing. */
static const char *symbols_value(int argc, char **argv, int i)
{
    return i + 1 < argc ? argv[i + 1] : NULL;
}

/* nwb-crash symbols upload [options] FILE...: one request per file, every file tried. */
static int cmd_symbols(int argc, char **argv)
{
    const char *server = NULL, *token = NULL;
    unsigned long long timeout_ms = 0;
    int files = 0, failed = 0;

    if (argc < 3 || strcmp(argv[2], "upload") != 0) {
        return usage_error("symbols needs the upload command", NULL);
    }
    for (int i = 3; i < argc; i++) {
        const char *o = argv[i];

        if (strcmp(o, "--server") == 0 || strcmp(o, "--token") == 0 ||
            strcmp(o, "--timeout-ms") == 0) {
            const char *v = symbols_value(argc, argv, i);

            if (v == NULL) {
                return usage_error("missing value for", o);
            }
            if (o[2] == 's') {
                server = v;
            } else if (o[2] == 't' && o[3] == 'o') {
                token = v;
            } else if (parse_num(v, 3600000u, &timeout_ms) != 0) {
                return usage_error("bad value for --timeout-ms:", v);
            }
            i++;
        } else if (o[0] == '-' && o[1] != '\0') {
            return usage_error("unknown option", o);
        } else {
            files++;
        }
    }
    if (files == 0) {
        return usage_error("symbols upload needs at least one FILE", NULL);
    }
    for (int i = 3; i < argc; i++) {
        nwb_crash_symbols_result_t res;
        char why[512];

        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            i++; /* an option and its value, checked above */
            continue;
        }
        if (nwb_crash_symbols_upload(argv[i], server, token, (unsigned)timeout_ms, &res, why,
                                     sizeof(why)) != 0) {
            fprintf(stderr, "nwb-crash: symbols upload %s: %s\n", argv[i], why);
            failed++;
            continue;
        }
        printf("%s %s %s\n", res.stored ? "uploaded" : "exists", res.build_id, argv[i]);
    }
    fflush(stdout);
    return failed == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    struct args a;
    int rc;

    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage_text, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("nwb-crash %s\n", NWB_VERSION_STRING);
        return 0;
    }
    if (strcmp(argv[1], "symbols") == 0) {
        return cmd_symbols(argc, argv);
    }
    rc = parse_args(argc, argv, &a);
    if (rc != 0) {
        return rc;
    }
    if (strcmp(argv[1], "pack") == 0) {
        return cmd_pack(&a);
    }
    if (strcmp(argv[1], "upload") == 0) {
        return cmd_upload(&a);
    }
    if (strcmp(argv[1], "pending") == 0) {
        return cmd_pending(&a);
    }
    if (strcmp(argv[1], "submit") == 0) {
        return cmd_submit(&a);
    }
    if (strcmp(argv[1], "capture") == 0) {
        return cmd_capture(&a);
    }
    return usage_error("unknown command", argv[1]);
}
