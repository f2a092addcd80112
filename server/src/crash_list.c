/* SPDX-License-Identifier: MIT */
/*
 * crash_list.c - the crash ingest's JSON views, GET /v1/crashes[?group=G], GET
 * /v1/crashes/<id> and GET /v1/crash-groups (docs/crash.md): every crash of the store merged
 * over its categories, with what its manifest, queue marker, reason file and the server's
 * analysis (its grouping signature) say. Written with the one JSON writer (nwb/json.h),
 * so text from archives and clients can never break the document.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/buf.h"
#include "nwb/crash_manifest.h"
#include "nwb/file_io.h"
#include "nwb/json.h"

#include "crash_frame_json.h"
#include "crash_frames.h"
#include "crash_ingest_int.h"
#include "crash_signature.h"
#include "read_int.h"

#define FILE_PATH_MAX  4096u /* a package file's relative path in the listing */
#define GROUP_LIST_MAX 16u   /* programs and build ids listed per group ("more..." beyond) */

/* One crash as the views describe it. */
struct record {
    char id[NWB_CRASH_INGEST_ID_LEN + 1];
    uint64_t received_ns;
    int has[NWB__CRASH_CATS];
    int queued;
    uint64_t raw_bytes;
};

static int cmp_id(const void *a, const void *b)
{
    return strcmp(((const struct record *)a)->id, ((const struct record *)b)->id);
}

static int cmp_received(const void *a, const void *b)
{
    const struct record *x = a, *y = b;

    if (x->received_ns != y->received_ns) {
        return x->received_ns < y->received_ns ? -1 : 1;
    }
    return strcmp(x->id, y->id);
}

/* Merge the records of equal ids (sorted by id) into one; returns the new count. */
static size_t merge_by_id(struct record *recs, size_t n)
{
    size_t w = 0;

    for (size_t i = 0; i < n; i++) {
        struct record *m = w > 0 ? &recs[w - 1] : NULL;

        if (m == NULL || strcmp(m->id, recs[i].id) != 0) {
            recs[w++] = recs[i];
            continue;
        }
        for (int c = 0; c < NWB__CRASH_CATS; c++) {
            m->has[c] |= recs[i].has[c];
        }
        if (recs[i].raw_bytes != 0) {
            m->raw_bytes = recs[i].raw_bytes;
        }
        if (recs[i].received_ns < m->received_ns) {
            m->received_ns = recs[i].received_ns;
        }
    }
    return w;
}

/* Every crash known in any category, merged by id, oldest first. */
static int collect(const struct nwb__crash_store *st, struct record **out, size_t *count)
{
    struct nwb__crash_entry *lists[NWB__CRASH_CATS] = {NULL, NULL, NULL};
    size_t ns[NWB__CRASH_CATS] = {0, 0, 0}, n = 0;
    struct record *recs = NULL;
    int err = 0;

    *out = NULL;
    *count = 0;
    for (int c = 0; c < NWB__CRASH_CATS && err == 0; c++) {
        err = nwb__crash_store_scan(st, (enum nwb__crash_cat)c, &lists[c], &ns[c]);
    }
    if (err == 0) {
        recs = nwb_calloc(ns[0] + ns[1] + ns[2] + 1, sizeof(*recs));
        err = recs == NULL ? -ENOMEM : 0;
    }
    for (int c = 0; c < NWB__CRASH_CATS; c++) {
        for (size_t i = 0; recs != NULL && i < ns[c]; i++) {
            struct record *r = &recs[n++];

            memcpy(r->id, lists[c][i].id, sizeof(r->id));
            r->received_ns = lists[c][i].mtime_ns;
            r->has[c] = 1;
            r->raw_bytes = c != NWB__CRASH_PACKAGES ? lists[c][i].size : 0;
        }
        nwb_free(lists[c]);
    }
    if (err != 0) {
        return err;
    }
    qsort(recs, n, sizeof(*recs), cmp_id);
    n = merge_by_id(recs, n);
    for (size_t i = 0; i < n; i++) {
        recs[i].queued = nwb__crash_store_is_queued(st, recs[i].id);
    }
    qsort(recs, n, sizeof(*recs), cmp_received);
    *out = recs;
    *count = n;
    return 0;
}

/* Bytes in the regular files below @p name in @p dir_fd. */
static uint64_t tree_bytes_at(int dir_fd, const char *name, unsigned depth)
{
    const int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    const struct dirent *e;
    uint64_t sum = 0;

    if (d == NULL) {
        if (fd >= 0) {
            close(fd);
        }
        return 0;
    }
    while ((e = readdir(d)) != NULL) {
        struct stat sb;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            fstatat(fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
            continue;
        }
        if (S_ISDIR(sb.st_mode) && depth < NWB__CRASH_SCAN_DEPTH) {
            sum += tree_bytes_at(fd, e->d_name, depth + 1);
        } else if (S_ISREG(sb.st_mode)) {
            sum += (uint64_t)sb.st_size;
        }
    }
    closedir(d);
    return sum;
}

/* The files below @p dir_fd, whose relative path is @p path[0..plen). */
static void files_walk(int dir_fd, char *path, size_t plen, unsigned depth, nwb_json_t *j)
{
    DIR *d = nwb__crash_dir_open(dir_fd);
    const struct dirent *e;

    if (d == NULL) {
        return;
    }
    while ((e = readdir(d)) != NULL) {
        const size_t nlen = strlen(e->d_name);
        const size_t len = plen + (plen > 0) + nlen;
        struct stat sb;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || len >= FILE_PATH_MAX ||
            fstatat(dir_fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
            continue;
        }
        if (plen > 0) {
            path[plen] = '/';
        }
        memcpy(path + len - nlen, e->d_name, nlen + 1);
        if (S_ISDIR(sb.st_mode) && depth < NWB__CRASH_SCAN_DEPTH) {
            const int sub =
                openat(dir_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

            if (sub >= 0) {
                files_walk(sub, path, len, depth + 1, j);
                close(sub);
            }
        } else if (S_ISREG(sb.st_mode)) {
            nwb_json_obj_begin(j);
            nwb_json_key(j, "path");
            nwb_json_str(j, path, len);
            nwb_json_key(j, "bytes");
            nwb_json_u64(j, (uint64_t)sb.st_size);
            nwb_json_obj_end(j);
        }
    }
    closedir(d);
}

void nwb__crash_files_json(int dir_fd, nwb_json_t *j)
{
    char path[FILE_PATH_MAX];

    path[0] = '\0';
    nwb_json_arr_begin(j);
    files_walk(dir_fd, path, 0, 0, j);
    nwb_json_arr_end(j);
}

static void json_u64_or_null(nwb_json_t *j, int has, uint64_t v)
{
    if (has) {
        nwb_json_u64(j, v);
    } else {
        nwb_json_null(j);
    }
}

/*
 * What @p r's manifest (extracted), reason file (invalid) or queue marker (queued) says about
 * it into @p m; the reason file's text into @p *reason (nwb_malloc'd, returned-owned; NULL
 * when there is none).
 */
static void identify(const struct nwb__crash_store *st, const struct record *r,
                     struct nwb__crash_manifest *m, char **reason, size_t *reason_len)
{
    const int pkg_fd = st->cat_fd[NWB__CRASH_PACKAGES];

    memset(m, 0, sizeof(*m));
    *reason = NULL;
    *reason_len = 0;
    if (r->has[NWB__CRASH_PACKAGES]) {
        char path[NWB_CRASH_INGEST_ID_LEN + sizeof("/" NWB_CRASH_MANIFEST_NAME)];

        snprintf(path, sizeof(path), "%s/" NWB_CRASH_MANIFEST_NAME, r->id);
        (void)nwb__crash_manifest_read(pkg_fd, path, m);
    } else if (r->has[NWB__CRASH_INVALID]) {
        if (nwb__crash_store_reason_read(st, r->id, reason, reason_len) == 0) {
            nwb_crash_manifest_value(*reason, *reason_len, "program", m->program);
            nwb_crash_manifest_value(*reason, *reason_len, "run", m->run);
        }
    } else if (r->queued) {
        struct nwb__crash_job job;

        if (nwb__crash_store_marker_read(st, r->id, &job) == 0) {
            memcpy(m->program, job.program, sizeof(m->program));
            memcpy(m->run, job.run, sizeof(m->run));
        }
    }
}

/* "signature" and "group" of an extracted crash the server analysed; null otherwise. */
static void write_group(const struct nwb__crash_store *st, const struct record *r, nwb_json_t *j)
{
    char sig[NWB_CRASH_SIG_MAX + 2];
    char group[NWB_CRASH_GROUP_ID_LEN + 1];
    const int n = r->has[NWB__CRASH_PACKAGES]
                      ? nwb__crash_analysis_signature(st, r->id, sig, sizeof(sig))
                      : -ENOENT;

    nwb_json_key(j, "signature");
    if (n > 0) {
        nwb_json_str(j, sig, (size_t)n);
        nwb_crash_group_id(sig, (size_t)n, group);
        nwb_json_key(j, "group");
        nwb_json_cstr(j, group);
    } else {
        nwb_json_null(j);
        nwb_json_key(j, "group");
        nwb_json_null(j);
    }
}

/* frames.tsv as the "threads" and "missing" of the symbolization object. */
struct frames_json {
    nwb_json_t *j;
    int in_thread;
    int missing_open;
};

static int fj_thread(void *ctx, uint32_t tid, int crashed, struct nwb_crash_str name)
{
    struct frames_json *fj = ctx;

    if (fj->in_thread) {
        nwb_json_arr_end(fj->j);
        nwb_json_obj_end(fj->j);
    }
    fj->in_thread = 1;
    nwb_json_obj_begin(fj->j);
    nwb_json_key(fj->j, "tid");
    nwb_json_u64(fj->j, tid);
    nwb_json_key(fj->j, "name");
    nwb_json_str(fj->j, name.s, name.len);
    nwb_json_key(fj->j, "crashed");
    nwb_json_bool(fj->j, crashed);
    nwb_json_key(fj->j, "frames");
    nwb_json_arr_begin(fj->j);
    return 0;
}

static int fj_frame(void *ctx, const struct nwb_crash_frame_rec *f)
{
    struct frames_json *fj = ctx;
    const struct nwb_crash_frame_json out = {
        f->pc,
        f->module.len > 0 ? f->module.s : NULL,
        f->module.len,
        f->build_id.s,
        f->build_id.len,
        f->offset,
        f->function.s,
        f->function.len,
        f->file.s,
        f->file.len,
        f->line,
        f->inlined,
        f->symbolized,
        NULL,
        0,
    };

    nwb_crash_frame_json_write(fj->j, &out);
    return 0;
}

static int fj_missing(void *ctx, struct nwb_crash_str build_id, struct nwb_crash_str module)
{
    struct frames_json *fj = ctx;

    if (fj->in_thread) {
        nwb_json_arr_end(fj->j);
        nwb_json_obj_end(fj->j);
        fj->in_thread = 0;
    }
    if (!fj->missing_open) {
        nwb_json_arr_end(fj->j); /* threads */
        nwb_json_key(fj->j, "missing");
        nwb_json_arr_begin(fj->j);
        fj->missing_open = 1;
    }
    nwb_json_obj_begin(fj->j);
    nwb_json_key(fj->j, "buildId");
    nwb_json_str(fj->j, build_id.s, build_id.len);
    nwb_json_key(fj->j, "module");
    nwb_json_str(fj->j, module.s, module.len);
    nwb_json_obj_end(fj->j);
    return 0;
}

/*
 * "symbolization": {"state","reason","threads","missing"} of an extracted crash: "none"
 * without a capture, "done" once frames.tsv exists, "failed" when the last run failed
 * (symbolize_failed.txt; threads of an earlier run that succeeded are still shown), else
 * "pending". A frames.tsv that does not read back strictly shows no threads and says why.
 */
static void write_symbolization(const struct nwb__crash_store *st, const struct record *r,
                                nwb_json_t *j)
{
    char path[NWB_CRASH_INGEST_ID_LEN + 32];
    char reason[512] = "";
    uint8_t *text = NULL, *failed = NULL;
    size_t len = 0, flen = 0;
    const int capture = nwb__crash_has_capture(st, r->id);
    int have_frames = 0;

    snprintf(path, sizeof(path), "%s/" NWB_CRASH_SYMBOLIZE_FAILED_FILE, r->id);
    if (nwb_file_read_at(st->analysis_fd, path, 8192, &failed, &flen) == 0) {
        const char *nl = memchr(failed, '\n', flen);
        size_t n = nl != NULL ? (size_t)(nl - (const char *)failed) : flen;

        n = n < sizeof(reason) - 1 ? n : sizeof(reason) - 1;
        memcpy(reason, failed, n);
        reason[n] = '\0';
        if (n == 0) {
            snprintf(reason, sizeof(reason), "unknown");
        }
        nwb_free(failed);
    }
    snprintf(path, sizeof(path), "%s/" NWB_CRASH_FRAMES_FILE, r->id);
    have_frames =
        nwb_file_read_at(st->analysis_fd, path, NWB_CRASH_FRAMES_TEXT_MAX, &text, &len) == 0;
    nwb_json_key(j, "symbolization");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "state");
    nwb_json_cstr(j, reason[0] != '\0' ? "failed"
                     : have_frames     ? "done"
                     : capture         ? "pending"
                                       : "none");
    nwb_json_key(j, "reason");
    if (reason[0] != '\0') {
        nwb_json_cstr(j, reason);
    } else {
        nwb_json_null(j);
    }
    nwb_json_key(j, "threads");
    nwb_json_arr_begin(j);
    if (have_frames) {
        struct frames_json fj = {j, 0, 0};
        const struct nwb_crash_frames_cb cb = {fj_thread, fj_frame, fj_missing, &fj};
        char why[160];
        /* A first pass checks the whole file, so a bad one never leaves half a document. */
        const struct nwb_crash_frames_cb check = {NULL, NULL, NULL, NULL};
        const int ok =
            nwb_crash_frames_parse((const char *)text, len, &check, why, sizeof(why)) == 0;

        if (ok) {
            (void)nwb_crash_frames_parse((const char *)text, len, &cb, why, sizeof(why));
        }
        if (fj.in_thread) {
            nwb_json_arr_end(j);
            nwb_json_obj_end(j);
        }
        if (!fj.missing_open) {
            nwb_json_arr_end(j);
            nwb_json_key(j, "missing");
            nwb_json_arr_begin(j);
        }
        nwb_json_arr_end(j);
        if (!ok) {
            nwb_json_key(j, "invalid");
            nwb_json_cstr(j, why);
        }
    } else {
        nwb_json_arr_end(j);
        nwb_json_key(j, "missing");
        nwb_json_arr_begin(j);
        nwb_json_arr_end(j);
    }
    nwb_json_obj_end(j);
    nwb_free(text);
}

/* 1 when @p r is an extracted crash of group @p group. */
static int in_group(const struct nwb__crash_store *st, const struct record *r, const char *group)
{
    char sig[NWB_CRASH_SIG_MAX + 2];
    char id[NWB_CRASH_GROUP_ID_LEN + 1];
    const int n = r->has[NWB__CRASH_PACKAGES]
                      ? nwb__crash_analysis_signature(st, r->id, sig, sizeof(sig))
                      : -ENOENT;

    if (n <= 0) {
        return 0;
    }
    nwb_crash_group_id(sig, (size_t)n, id);
    return strcmp(id, group) == 0;
}

/* The crash's state as the views name it. */
static const char *status_of(const struct record *r)
{
    return r->queued                     ? "queued"
           : r->has[NWB__CRASH_PACKAGES] ? "extracted"
           : r->has[NWB__CRASH_INVALID]  ? "invalid"
                                         : "stored";
}

/* One crash object; @p detail adds "reason" (invalid) and "files" (extracted). */
static void describe(const struct nwb__crash_store *st, const struct record *r, int detail,
                     nwb_json_t *j)
{
    const int pkg_fd = st->cat_fd[NWB__CRASH_PACKAGES];
    const char *status = status_of(r);
    struct nwb__crash_manifest m;
    char *reason;
    size_t reason_len;

    identify(st, r, &m, &reason, &reason_len);
    nwb_json_obj_begin(j);
    nwb_json_key(j, "id");
    nwb_json_cstr(j, r->id);
    nwb_json_key(j, "received");
    nwb__json_time(j, r->received_ns);
    nwb_json_key(j, "program");
    nwb_json_cstr(j, m.program);
    nwb_json_key(j, "run");
    nwb_json_cstr(j, m.run);
    nwb_json_key(j, "signal");
    nwb_json_cstr(j, m.signal);
    nwb_json_key(j, "status");
    nwb_json_cstr(j, status);
    nwb_json_key(j, "buildId");
    nwb_json_cstr(j, m.build_id);
    write_group(st, r, j);
    nwb_json_key(j, "sizes");
    nwb_json_obj_begin(j);
    nwb_json_key(j, "archive");
    json_u64_or_null(j, r->has[NWB__CRASH_RAW] || r->has[NWB__CRASH_INVALID], r->raw_bytes);
    nwb_json_key(j, "extracted");
    json_u64_or_null(j, r->has[NWB__CRASH_PACKAGES],
                     r->has[NWB__CRASH_PACKAGES] ? tree_bytes_at(pkg_fd, r->id, 0) : 0);
    nwb_json_obj_end(j);
    if (detail && r->has[NWB__CRASH_INVALID]) {
        /* The reason is the file's first line. */
        const char *nl = reason != NULL ? memchr(reason, '\n', reason_len) : NULL;

        nwb_json_key(j, "reason");
        nwb_json_str(j, reason != NULL ? reason : "",
                     nl != NULL ? (size_t)(nl - reason) : reason_len);
    }
    if (detail && r->has[NWB__CRASH_PACKAGES]) {
        const int fd = openat(pkg_fd, r->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        write_symbolization(st, r, j);
        nwb_json_key(j, "files");
        if (fd >= 0) {
            nwb__crash_files_json(fd, j);
            close(fd);
        } else {
            nwb_json_arr_begin(j);
            nwb_json_arr_end(j);
        }
    }
    nwb_json_obj_end(j);
    nwb_free(reason);
}

/* The document in @p b as a NUL-terminated nwb_malloc'd string, or an error. */
static int finish_doc(nwb_json_t *j, nwb_buf_t *b, char **json, size_t *len)
{
    int err;

    nwb_json_space(j, "\n", 1);
    err = nwb_json_finish(j);
    if (err == 0) {
        err = nwb_buf_append(b, "", 1); /* the NUL, not counted in *len */
    }
    if (err != 0) {
        nwb_buf_cleanup(b);
        return err;
    }
    *json = (char *)b->data;
    *len = b->len - 1;
    return 0;
}

int nwb__crash_list_json(const struct nwb__crash_store *st, const char *id, const char *group,
                         char **json, size_t *len)
{
    nwb_buf_t b = NWB_BUF_INIT(NWB__CRASH_JSON_MAX);
    struct record *recs;
    nwb_json_t j;
    size_t n;
    int err;

    *json = NULL;
    *len = 0;
    if (id != NULL && !nwb__crash_id_valid(id)) {
        return -EINVAL;
    }
    err = collect(st, &recs, &n);
    if (err != 0) {
        return err;
    }
    nwb_json_init(&j, &b, NULL);
    if (id == NULL) {
        nwb_json_obj_begin(&j);
        nwb_json_key(&j, "crashes");
        nwb_json_arr_begin(&j);
        for (size_t i = 0; i < n; i++) {
            if (group == NULL || in_group(st, &recs[i], group)) {
                describe(st, &recs[i], 0, &j);
            }
        }
        nwb_json_arr_end(&j);
        nwb_json_obj_end(&j);
    } else {
        const struct record *r = NULL;

        for (size_t i = 0; i < n && r == NULL; i++) {
            r = strcmp(recs[i].id, id) == 0 ? &recs[i] : NULL;
        }
        if (r == NULL) {
            nwb_free(recs);
            return -ENOENT;
        }
        describe(st, r, 1, &j);
    }
    nwb_free(recs);
    return finish_doc(&j, &b, json, len);
}

/* One group while the view is built: its crashes are recs[first..] with the same signature. */
struct group_acc {
    char sig[NWB_CRASH_SIG_MAX + 2];
    size_t sig_len;
    size_t rec; /* index of the crash in the record array */
};

static int cmp_group_acc(const void *a, const void *b)
{
    const struct group_acc *x = a, *y = b;
    const int c = strcmp(x->sig, y->sig);

    return c != 0 ? c : x->rec < y->rec ? -1 : x->rec > y->rec; /* oldest first inside */
}

/* The summary of a run of equal signatures acc[a..b) (records oldest first). */
struct group_summary {
    size_t a, b;
    uint64_t last_ns;
};

static int cmp_summary(const void *x, const void *y)
{
    const struct group_summary *p = x, *q = y;
    const size_t np = p->b - p->a, nq = q->b - q->a;

    if (np != nq) {
        return np > nq ? -1 : 1;
    }
    if (p->last_ns != q->last_ns) {
        return p->last_ns > q->last_ns ? -1 : 1;
    }
    return 0;
}

/* Append @p v to the first @p *n entries of @p list (capacity GROUP_LIST_MAX) if new;
 * returns 1 when it did not fit. */
static int list_add(char (*list)[NWB_SAFE_NAME_MAX + 1], size_t *n, const char *v)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp(list[i], v) == 0) {
            return 0;
        }
    }
    if (*n == GROUP_LIST_MAX) {
        return 1;
    }
    snprintf(list[(*n)++], NWB_SAFE_NAME_MAX + 1, "%s", v);
    return 0;
}

static void write_group_summary(const struct nwb__crash_store *st, const struct group_acc *acc,
                                const struct record *recs, const struct group_summary *g,
                                nwb_json_t *j)
{
    char programs[GROUP_LIST_MAX][NWB_SAFE_NAME_MAX + 1];
    char builds[GROUP_LIST_MAX][NWB_SAFE_NAME_MAX + 1];
    char group[NWB_CRASH_GROUP_ID_LEN + 1];
    size_t np = 0, nb = 0;
    int more_programs = 0, more_builds = 0;
    const struct record *first = &recs[acc[g->a].rec];
    const struct record *newest = &recs[acc[g->b - 1].rec];

    for (size_t i = g->a; i < g->b; i++) {
        struct nwb__crash_manifest m;
        char *reason;
        size_t reason_len;

        identify(st, &recs[acc[i].rec], &m, &reason, &reason_len);
        nwb_free(reason);
        if (m.program[0] != '\0') {
            more_programs |= list_add(programs, &np, m.program);
        }
        if (m.build_id[0] != '\0') {
            more_builds |= list_add(builds, &nb, m.build_id);
        }
    }
    nwb_crash_group_id(acc[g->a].sig, acc[g->a].sig_len, group);
    nwb_json_obj_begin(j);
    nwb_json_key(j, "group");
    nwb_json_cstr(j, group);
    nwb_json_key(j, "signature");
    nwb_json_str(j, acc[g->a].sig, acc[g->a].sig_len);
    nwb_json_key(j, "count");
    nwb_json_u64(j, g->b - g->a);
    nwb_json_key(j, "firstSeen");
    nwb__json_time(j, first->received_ns);
    nwb_json_key(j, "lastSeen");
    nwb__json_time(j, newest->received_ns);
    nwb_json_key(j, "newest");
    nwb_json_cstr(j, newest->id);
    nwb_json_key(j, "programs");
    nwb_json_arr_begin(j);
    for (size_t i = 0; i < np; i++) {
        nwb_json_cstr(j, programs[i]);
    }
    nwb_json_arr_end(j);
    nwb_json_key(j, "morePrograms");
    nwb_json_bool(j, more_programs);
    nwb_json_key(j, "buildIds");
    nwb_json_arr_begin(j);
    for (size_t i = 0; i < nb; i++) {
        nwb_json_cstr(j, builds[i]);
    }
    nwb_json_arr_end(j);
    nwb_json_key(j, "moreBuildIds");
    nwb_json_bool(j, more_builds);
    nwb_json_obj_end(j);
}

int nwb__crash_groups_json(const struct nwb__crash_store *st, char **json, size_t *len)
{
    nwb_buf_t b = NWB_BUF_INIT(NWB__CRASH_JSON_MAX);
    struct record *recs;
    struct group_acc *acc;
    struct group_summary *groups;
    size_t n, na = 0, ng = 0;
    nwb_json_t j;
    int err;

    *json = NULL;
    *len = 0;
    err = collect(st, &recs, &n);
    if (err != 0) {
        return err;
    }
    acc = nwb_calloc(n + 1, sizeof(*acc));
    groups = nwb_calloc(n + 1, sizeof(*groups));
    if (acc == NULL || groups == NULL) {
        nwb_free(acc);
        nwb_free(groups);
        nwb_free(recs);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const int sl =
            recs[i].has[NWB__CRASH_PACKAGES]
                ? nwb__crash_analysis_signature(st, recs[i].id, acc[na].sig, sizeof(acc[na].sig))
                : -ENOENT;

        if (sl > 0) {
            acc[na].sig_len = (size_t)sl;
            acc[na].rec = i;
            na++;
        }
    }
    qsort(acc, na, sizeof(*acc), cmp_group_acc);
    for (size_t i = 0; i < na; i++) {
        if (i == 0 || strcmp(acc[i].sig, acc[i - 1].sig) != 0) {
            groups[ng].a = i;
            ng++;
        }
        groups[ng - 1].b = i + 1;
        groups[ng - 1].last_ns = recs[acc[i].rec].received_ns;
    }
    qsort(groups, ng, sizeof(*groups), cmp_summary);
    nwb_json_init(&j, &b, NULL);
    nwb_json_obj_begin(&j);
    nwb_json_key(&j, "groups");
    nwb_json_arr_begin(&j);
    for (size_t i = 0; i < ng; i++) {
        write_group_summary(st, acc, recs, &groups[i], &j);
    }
    nwb_json_arr_end(&j);
    nwb_json_obj_end(&j);
    nwb_free(groups);
    nwb_free(acc);
    nwb_free(recs);
    return finish_doc(&j, &b, json, len);
}

int nwb__crash_list_each(const struct nwb__crash_store *st, nwb__crash_settled_fn fn, void *ctx)
{
    struct record *recs;
    size_t n;
    const int err = collect(st, &recs, &n);

    if (err != 0) {
        return err;
    }
    for (size_t i = 0; i < n; i++) {
        const struct record *r = &recs[i];
        struct nwb__crash_settled s;
        struct nwb__crash_manifest m;
        char *reason;
        size_t reason_len;

        if (!r->has[NWB__CRASH_PACKAGES] && !r->has[NWB__CRASH_INVALID]) {
            continue; /* stored, not settled yet: its settle notice follows */
        }
        identify(st, r, &m, &reason, &reason_len);
        nwb_free(reason);
        s.id = r->id;
        s.extracted = r->has[NWB__CRASH_PACKAGES];
        s.program = m.program;
        s.run = m.run;
        s.queued = 0;
        fn(ctx, &s);
    }
    nwb_free(recs);
    return 0;
}

int nwb__crash_list_rows(const struct nwb__crash_store *st, nwb__crash_row_fn fn, void *ctx)
{
    const int pkg_fd = st->cat_fd[NWB__CRASH_PACKAGES];
    struct record *recs;
    size_t n;
    int err = collect(st, &recs, &n);

    if (err != 0) {
        return err;
    }
    for (size_t i = 0; i < n && err == 0; i++) {
        const struct record *r = &recs[i];
        char sig[NWB_CRASH_SIG_MAX + 2];
        char group[NWB_CRASH_GROUP_ID_LEN + 1] = "";
        struct nwb__crash_manifest m;
        struct nwb__crash_row row;
        char *reason;
        size_t reason_len;
        const int sig_len = r->has[NWB__CRASH_PACKAGES]
                                ? nwb__crash_analysis_signature(st, r->id, sig, sizeof(sig))
                                : -ENOENT;

        identify(st, r, &m, &reason, &reason_len);
        nwb_free(reason);
        if (sig_len > 0) {
            nwb_crash_group_id(sig, (size_t)sig_len, group);
        }
        row.id = r->id;
        row.received_ns = r->received_ns;
        row.program = m.program;
        row.run = m.run;
        row.signal = m.signal;
        row.status = status_of(r);
        row.signature = sig_len > 0 ? sig : "";
        row.sig_len = sig_len > 0 ? (size_t)sig_len : 0;
        row.group = group;
        row.archive_bytes = r->has[NWB__CRASH_RAW] || r->has[NWB__CRASH_INVALID] ? r->raw_bytes : 0;
        row.package_bytes = r->has[NWB__CRASH_PACKAGES] ? tree_bytes_at(pkg_fd, r->id, 0) : 0;
        err = fn(ctx, &row);
    }
    nwb_free(recs);
    return err;
}
