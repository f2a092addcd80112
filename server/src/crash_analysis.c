/* SPDX-License-Identifier: MIT */
/*
 * crash_analysis.c - what the server derives from a stored crash package, kept beside it in
 * crashes/analysis/<id>/ (the client's package stays byte for byte what it sent): today the
 * grouping signature, signature.txt. Without a symbolised stack the signature comes from the
 * in-process backtrace of crash.txt (module+offset frames, system libraries skipped). Runs on
 * the crash worker thread, after a package is published and at start for packages that have
 * no analysis yet.
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

int nwb__crash_analyse(struct nwb__crash_store *st, const char *id,
                       const struct nwb_crash_skip *skip)
{
    const int pkg_fd = st->cat_fd[NWB__CRASH_PACKAGES];
    char path[NWB_CRASH_INGEST_ID_LEN + 32];
    char tmp[NWB_CRASH_INGEST_ID_LEN + 32];
    char sig[NWB_CRASH_SIG_MAX + 2];
    struct nwb__crash_manifest m;
    uint8_t *text = NULL;
    size_t len = 0;
    int dir, err, n;

    snprintf(path, sizeof(path), "%s/" NWB_CRASH_MANIFEST_NAME, id);
    if (nwb__crash_manifest_read(pkg_fd, path, &m) != 0) {
        return -EINVAL;
    }
    snprintf(path, sizeof(path), "%s/crash.txt", id);
    err = nwb_file_read_at(pkg_fd, path, NWB_CRASH_BT_TEXT_MAX, &text, &len);
    if (err != 0 && err != -ENOENT && err != NWB_ETOOBIG) {
        return err;
    }
    /* A GPU package has no signal and no crash.txt: its signature is "gpu". A crash.txt
     * beyond the bound (the handler writes at most 256 KiB) gives the signal alone. */
    n = nwb__crash_analysis_signature_from_text(m.signal[0] != '\0' ? m.signal : "gpu",
                                                text != NULL ? (const char *)text : "",
                                                text != NULL ? len : 0, skip, sig, sizeof(sig));
    nwb_free(text);
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

void nwb__crash_analyse_missing(struct nwb__crash_store *st, const struct nwb_crash_skip *skip)
{
    struct nwb__crash_entry *list;
    size_t n;

    if (nwb__crash_store_scan(st, NWB__CRASH_PACKAGES, &list, &n) != 0) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char sig[NWB_CRASH_SIG_MAX + 2];

        if (nwb__crash_analysis_signature(st, list[i].id, sig, sizeof(sig)) == -ENOENT) {
            (void)nwb__crash_analyse(st, list[i].id, skip);
        }
    }
    nwb_free(list);
}
