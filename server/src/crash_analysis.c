/* SPDX-License-Identifier: MIT */
/*
 * crash_analysis.c - what the server derives from a stored crash package, kept beside it in
 * crashes/analysis/<id>/ (the client's package stays byte for byte what it sent): the
 * symbolised stack (crash_symbolize.c runs nwb-symbolize when the package has a threads.nwbc)
 * and the grouping signature, signature.txt. The signature's frames come from the symbolised
 * stack when there is one (frames.tsv: function names of the crashing thread), else from the
 * in-process backtrace of crash.txt (module+offset frames, system libraries skipped). Runs on
 * the crash worker thread, after a package is published, when a re-run is asked for, and at
 * start for packages whose analysis is missing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/crash_manifest.h"
#include "nwb/error.h"
#include "nwb/file_io.h"

#include "crash_analysis.h"
#include "crash_backtrace.h"
#include "crash_frames.h"
#include "crash_ingest_int.h"

int nwb__crash_analysis_signature_from_text(const char *signal, const char *text, size_t len,
                                            const struct nwb_crash_skip *skip, char *sig,
                                            size_t cap)
{
    struct nwb_crash_bt_frame bt[NWB_CRASH_BT_FRAMES_MAX];
    struct nwb_crash_sig_frame frames[NWB_CRASH_BT_FRAMES_MAX];
    char why[160];
    const int n = nwb_crash_bt_parse(text, len, bt, NWB_CRASH_BT_FRAMES_MAX, why, sizeof(why));

    if (n < 0) {
        return -EINVAL;
    }
    for (int i = 0; i < n; i++) {
        frames[i].function = NULL;
        frames[i].function_len = 0;
        frames[i].module = bt[i].module;
        frames[i].module_len = bt[i].module_len;
        frames[i].module_offset = bt[i].offset;
    }
    return (int)nwb_crash_signature(signal, frames, (size_t)n, skip, sig, cap);
}

/* The crashing thread's frames of a frames.tsv, as signature frames (they borrow the text). */
struct sig_frames {
    struct nwb_crash_sig_frame frames[NWB_CRASH_FRAMES_PER_THREAD];
    size_t n;
    unsigned threads;
};

static int sig_thread(void *ctx, uint32_t tid, int crashed, struct nwb_crash_str name)
{
    struct sig_frames *sf = ctx;

    (void)tid, (void)crashed, (void)name;
    sf->threads++;
    return sf->threads > 1 ? 1 : 0; /* the first thread is the crashing one: stop after it */
}

static int sig_frame(void *ctx, const struct nwb_crash_frame_rec *f)
{
    struct sig_frames *sf = ctx;
    struct nwb_crash_sig_frame *o;

    if (sf->n >= NWB_CRASH_FRAMES_PER_THREAD) {
        return 0;
    }
    o = &sf->frames[sf->n++];
    o->function = f->function.len > 0 ? f->function.s : NULL;
    o->function_len = f->function.len;
    o->module = f->module.len > 0 ? f->module.s : NULL;
    o->module_len = f->module.len;
    o->module_offset = f->offset;
    return 0;
}

int nwb__crash_analysis_signature_from_frames(const char *signal, const char *text, size_t len,
                                              const struct nwb_crash_skip *skip, char *sig,
                                              size_t cap)
{
    struct sig_frames *sf = nwb_calloc(1, sizeof(*sf));
    struct nwb_crash_frames_cb cb = {sig_thread, sig_frame, NULL, NULL};
    char why[160];
    int rc;

    if (sf == NULL) {
        return -ENOMEM;
    }
    cb.ctx = sf;
    rc = nwb_crash_frames_parse(text, len, &cb, why, sizeof(why));
    if ((rc != 0 && rc != 1) || sf->threads == 0) {
        nwb_free(sf);
        return -EINVAL;
    }
    rc = (int)nwb_crash_signature(signal, sf->frames, sf->n, skip, sig, cap);
    nwb_free(sf);
    return rc;
}

int nwb__crash_has_frames(const struct nwb__crash_store *st, const char *id)
{
    char path[NWB_CRASH_INGEST_ID_LEN + sizeof("/" NWB_CRASH_FRAMES_FILE)];
    struct stat sb;

    snprintf(path, sizeof(path), "%s/" NWB_CRASH_FRAMES_FILE, id);
    return fstatat(st->analysis_fd, path, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode);
}

static int has_failed(const struct nwb__crash_store *st, const char *id)
{
    char path[NWB_CRASH_INGEST_ID_LEN + sizeof("/" NWB_CRASH_SYMBOLIZE_FAILED_FILE)];
    struct stat sb;

    snprintf(path, sizeof(path), "%s/" NWB_CRASH_SYMBOLIZE_FAILED_FILE, id);
    return fstatat(st->analysis_fd, path, &sb, AT_SYMLINK_NOFOLLOW) == 0;
}

struct miss_find {
    const char *build_id;
    size_t len;
};

static int miss_cb(void *ctx, struct nwb_crash_str build_id, struct nwb_crash_str module)
{
    const struct miss_find *m = ctx;

    (void)module;
    return build_id.len == m->len && memcmp(build_id.s, m->build_id, m->len) == 0 ? 1 : 0;
}

int nwb__crash_frames_miss(const struct nwb__crash_store *st, const char *id, const char *build_id)
{
    char path[NWB_CRASH_INGEST_ID_LEN + sizeof("/" NWB_CRASH_FRAMES_FILE)];
    struct miss_find m = {build_id, strlen(build_id)};
    const struct nwb_crash_frames_cb cb = {NULL, NULL, miss_cb, &m};
    uint8_t *text = NULL;
    size_t len = 0;
    char why[160];
    int rc;

    snprintf(path, sizeof(path), "%s/" NWB_CRASH_FRAMES_FILE, id);
    if (nwb_file_read_at(st->analysis_fd, path, NWB_CRASH_FRAMES_TEXT_MAX, &text, &len) != 0) {
        return 0;
    }
    rc = nwb_crash_frames_parse((const char *)text, len, &cb, why, sizeof(why));
    nwb_free(text);
    return rc == 1;
}

int nwb__crash_analyse(struct nwb__crash_store *st, const char *id,
                       const struct nwb_crash_skip *skip, const struct nwb_crash_symbolize_cfg *sym,
                       const atomic_int *cancel)
{
    const int pkg_fd = st->cat_fd[NWB__CRASH_PACKAGES];
    char path[NWB_CRASH_INGEST_ID_LEN + 32];
    char tmp[NWB_CRASH_INGEST_ID_LEN + 32];
    char sig[NWB_CRASH_SIG_MAX + 2];
    struct nwb__crash_manifest m;
    const char *signal;
    uint8_t *text = NULL;
    size_t len = 0;
    int dir, err, n = -EINVAL;

    snprintf(path, sizeof(path), "%s/" NWB_CRASH_MANIFEST_NAME, id);
    if (nwb__crash_manifest_read(pkg_fd, path, &m) != 0) {
        return -EINVAL;
    }
    if (sym != NULL && nwb__crash_symbolize(st, id, sym, cancel) == NWB_ECLOSED) {
        return NWB_ECLOSED; /* the server stops: redone at the next start */
    }
    signal = m.signal[0] != '\0' ? m.signal : "gpu";
    /* The symbolised stack first: function names group better than module offsets. */
    snprintf(path, sizeof(path), "%s/" NWB_CRASH_FRAMES_FILE, id);
    if (nwb_file_read_at(st->analysis_fd, path, NWB_CRASH_FRAMES_TEXT_MAX, &text, &len) == 0) {
        n = nwb__crash_analysis_signature_from_frames(signal, (const char *)text, len, skip, sig,
                                                      sizeof(sig));
        nwb_free(text);
        text = NULL;
    }
    if (n <= 0) {
        snprintf(path, sizeof(path), "%s/crash.txt", id);
        err = nwb_file_read_at(pkg_fd, path, NWB_CRASH_BT_TEXT_MAX, &text, &len);
        if (err != 0 && err != -ENOENT && err != NWB_ETOOBIG) {
            return err;
        }
        /* A GPU package has no signal and no crash.txt: its signature is "gpu". A crash.txt
         * beyond the bound (the handler writes at most 256 KiB) gives the signal alone. */
        n = nwb__crash_analysis_signature_from_text(signal, text != NULL ? (const char *)text : "",
                                                    text != NULL ? len : 0, skip, sig, sizeof(sig));
        nwb_free(text);
    }
    if (n <= 0) {
        return n < 0 ? n : -EINVAL;
    }
    sig[n++] = '\n';
    if (mkdirat(st->analysis_fd, id, 0755) != 0 && errno != EEXIST) {
        return -errno;
    }
    dir = openat(st->analysis_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0) {
        return -errno;
    }
    snprintf(tmp, sizeof(tmp), "%s.signature.txt", id);
    err = nwb__crash_store_file_as(st, tmp, dir, "signature.txt", sig, (size_t)n);
    close(dir);
    return err;
}

void nwb__crash_analyse_missing(struct nwb__crash_store *st, const struct nwb_crash_skip *skip,
                                const struct nwb_crash_symbolize_cfg *sym, const atomic_int *cancel)
{
    struct nwb__crash_entry *list;
    size_t n;

    if (nwb__crash_store_scan(st, NWB__CRASH_PACKAGES, &list, &n) != 0) {
        return;
    }
    for (size_t i = 0; i < n && (cancel == NULL || !atomic_load(cancel)); i++) {
        char sig[NWB_CRASH_SIG_MAX + 2];
        const int unsymbolized =
            sym != NULL && sym->symbolizer[0] != '\0' && nwb__crash_has_capture(st, list[i].id) &&
            !nwb__crash_has_frames(st, list[i].id) && !has_failed(st, list[i].id);

        if (unsymbolized ||
            nwb__crash_analysis_signature(st, list[i].id, sig, sizeof(sig)) == -ENOENT) {
            (void)nwb__crash_analyse(st, list[i].id, skip, unsymbolized ? sym : NULL, cancel);
        }
    }
    nwb_free(list);
}
