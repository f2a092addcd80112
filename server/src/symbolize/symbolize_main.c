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
#include <string.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/crash_capture.h"
#include "nwb/file_io.h"

#include "symbolize.h"

static const char usage[] =
    "usage: nwb-symbolize --capture FILE --symbols-dir DIR --out DIR\n"
    "  writes DIR/stack.txt, DIR/stack.json and DIR/" NWB_SYM_FRAMES_FILE " from the crash\n"
    "  capture FILE (threads.nwbc) with symbols found by build id under\n"
    "  DIR/.build-id/xx/rest[.debug]\n";

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

int main(int argc, char **argv)
{
    static struct nwb_sym_missing missing[NWB_CRASH_CAPTURE_MODULES_MAX];
    const char *capture = NULL, *symbols = NULL, *out_dir = NULL;
    nwb_crash_capture_view_t view;
    char why[NWB_SYM_PATH_MAX + 128];
    FILE *text, *tsv, *json;
    uint8_t *data = NULL;
    size_t len = 0, nmissing = 0;
    struct run r;
    int dir_fd, err, rc = 1;

    for (int i = 1; i < argc; i++) {
        const char **slot = strcmp(argv[i], "--capture") == 0       ? &capture
                            : strcmp(argv[i], "--symbols-dir") == 0 ? &symbols
                            : strcmp(argv[i], "--out") == 0         ? &out_dir
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
    err = nwb_file_read(capture, NWB_CRASH_CAPTURE_FILE_MAX, &data, &len);
    if (err != 0) {
        return fail(capture, err == -ENOENT ? "no such file" : "cannot be read (or too large)");
    }
    if (nwb_crash_capture_parse(data, len, &view, why, sizeof(why)) != 0) {
        nwb_free(data);
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
    } else if (nwb_sym_unwind(&view, symbols, on_thread, &r, missing,
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
    return rc;
}
