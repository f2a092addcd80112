/* SPDX-License-Identifier: MIT */
/*
 * symbolize_main.c - nwb-symbolize: reads one crash capture (threads.nwbc) and a symbols
 * folder, writes stack.txt, stack.json and frames.tsv into an output folder. nwb-logserver
 * runs it in a child process with memory, CPU and wall-time limits for every crash that has a
 * capture (docs/crash.md, "Symbolisation"); it can be run by hand the same way.
 *
 * Exit status: 0 written; 1 the capture is refused or an output cannot be written (the reason
 * is stderr's one line); 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/crash_capture.h"
#include "nwb/file_io.h"

#include "symbolize.h"

static const char usage[] =
    "usage: nwb-symbolize --capture FILE --symbols-dir DIR --out DIR\n"
    "                     [--debuginfod-urls \"URL...\" --debuginfod-cache DIR\n"
    "                      [--debuginfod-timeout-ms N]]\n"
    "  writes DIR/stack.txt, DIR/stack.json and DIR/" NWB_SYM_FRAMES_FILE " from the crash\n"
    "  capture FILE (threads.nwbc) with symbols found by build id under\n"
    "  DIR/.build-id/xx/rest[.debug], else asked of the debuginfod servers URL... (space\n"
    "  separated; the environment's DEBUGINFOD_URLS is never used) within N ms in all\n"
    "  (default 20000, at most 3600000) and 10000 ms per module\n";

struct run {
    struct nwb_sym_out out;
};

static int on_thread(void *ctx, const struct nwb_sym_thread *t)
{
    struct run *r = ctx;

    nwb_sym_out_thread(&r->out, t);
    return 0;
}

static FILE *create_in(int dir_fd, const char *name)
{
    const int fd =
        openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);

    return fd >= 0 ? fdopen(fd, "w") : NULL;
}

static int fail(const char *what, const char *why)
{
    fprintf(stderr, "nwb-symbolize: %s: %s\n", what, why);
    return 1;
}

/* --debuginfod-timeout-ms: a whole number in 1..NWB_SYM_DEBUGINFOD_TOTAL_MS_MAX, else 0. */
static unsigned parse_total_ms(const char *text)
{
    unsigned long long v = 0;

    if (text[0] == '\0' || strlen(text) > 10) {
        return 0;
    }
    for (const char *p = text; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            return 0;
        }
        v = v * 10 + (unsigned)(*p - '0');
    }
    return v <= NWB_SYM_DEBUGINFOD_TOTAL_MS_MAX ? (unsigned)v : 0;
}

int main(int argc, char **argv)
{
    static struct nwb_sym_missing missing[NWB_CRASH_CAPTURE_MODULES_MAX];
    const char *capture = NULL, *symbols = NULL, *out_dir = NULL;
    const char *urls = NULL, *cache = NULL, *total_text = NULL;
    struct nwb_sym_debuginfod *debuginfod = NULL;
    unsigned total_ms = NWB_SYM_DEBUGINFOD_TOTAL_MS;
    nwb_crash_capture_view_t view;
    char why[NWB_SYM_PATH_MAX + 128];
    FILE *text, *tsv, *json;
    uint8_t *data = NULL;
    size_t len = 0, nmissing = 0;
    struct run r;
    int dir_fd, err, rc = 1;

    for (int i = 1; i < argc; i++) {
        const char **slot = strcmp(argv[i], "--capture") == 0                 ? &capture
                            : strcmp(argv[i], "--symbols-dir") == 0           ? &symbols
                            : strcmp(argv[i], "--out") == 0                   ? &out_dir
                            : strcmp(argv[i], "--debuginfod-urls") == 0       ? &urls
                            : strcmp(argv[i], "--debuginfod-cache") == 0      ? &cache
                            : strcmp(argv[i], "--debuginfod-timeout-ms") == 0 ? &total_text
                                                                              : NULL;

        if (strcmp(argv[i], "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        if (slot == NULL || i + 1 >= argc) {
            fprintf(stderr, "nwb-symbolize: %s: %s\n%s", argv[i],
                    slot == NULL ? "unknown option" : "needs a value", usage);
            return 2;
        }
        *slot = argv[++i];
    }
    if (capture == NULL || symbols == NULL || out_dir == NULL) {
        fprintf(stderr, "nwb-symbolize: --capture, --symbols-dir and --out are needed\n%s", usage);
        return 2;
    }
    if (total_text != NULL) {
        total_ms = parse_total_ms(total_text);
        if (total_ms == 0) {
            fprintf(stderr, "nwb-symbolize: --debuginfod-timeout-ms: '%s' is not in 1..%u\n",
                    total_text, NWB_SYM_DEBUGINFOD_TOTAL_MS_MAX);
            return 2;
        }
    }
    if ((urls == NULL) != (cache == NULL)) {
        fprintf(stderr, "nwb-symbolize: --debuginfod-urls and --debuginfod-cache go together\n");
        return 2;
    }
    /* Only what the command line says: libdebuginfod would read the inherited variable. */
    (void)unsetenv("DEBUGINFOD_URLS");
    if (urls != NULL &&
        nwb_sym_debuginfod_create(urls, cache, total_ms, &debuginfod, why, sizeof(why)) != 0) {
        fprintf(stderr, "nwb-symbolize: %s\n", why);
        return 2;
    }
    err = nwb_file_read(capture, NWB_CRASH_CAPTURE_FILE_MAX, &data, &len);
    if (err != 0) {
        nwb_sym_debuginfod_destroy(debuginfod);
        return fail(capture, err == -ENOENT ? "no such file" : "cannot be read (or too large)");
    }
    if (nwb_crash_capture_parse(data, len, &view, why, sizeof(why)) != 0) {
        nwb_free(data);
        nwb_sym_debuginfod_destroy(debuginfod);
        return fail("capture refused", why);
    }
    dir_fd = open(out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    text = dir_fd >= 0 ? create_in(dir_fd, "stack.txt") : NULL;
    tsv = dir_fd >= 0 ? create_in(dir_fd, NWB_SYM_FRAMES_FILE) : NULL;
    json = dir_fd >= 0 ? create_in(dir_fd, "stack.json") : NULL;
    if (text == NULL || tsv == NULL || json == NULL) {
        rc = fail(out_dir, strerror(errno));
    } else if (nwb_sym_out_begin(&r.out, &view, text, tsv, json) != 0) {
        rc = fail("output", "out of memory");
    } else if (nwb_sym_unwind(&view, symbols, debuginfod, on_thread, &r, missing,
                              sizeof(missing) / sizeof(missing[0]), &nmissing, why,
                              sizeof(why)) != 0) {
        (void)nwb_sym_out_end(&r.out, NULL, 0);
        rc = fail("unwind", why);
    } else if (nwb_sym_out_end(&r.out, missing, nmissing) != 0) {
        rc = fail(out_dir, "write failed");
    } else {
        rc = 0;
    }
    if (text != NULL) {
        fclose(text);
    }
    if (tsv != NULL) {
        fclose(tsv);
    }
    if (json != NULL && fclose(json) != 0 && rc == 0) {
        rc = fail(out_dir, "write failed");
    }
    if (dir_fd >= 0) {
        close(dir_fd);
    }
    nwb_crash_capture_view_free(&view);
    nwb_free(data);
    nwb_sym_debuginfod_destroy(debuginfod);
    return rc;
}
