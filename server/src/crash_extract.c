/* SPDX-License-Identifier: MIT */
/*
 * crash_extract.c - the extraction of one crash archive, for the crash worker
 * (crash_ingest.c) and the fuzz target. An archive (tar or zip, uncompressed,
 * gzip or zstd; never an external program) is unpacked into an empty folder
 * (crashes/.staging/<id>) through *at() calls on folder fds: only regular
 * files and folders are created, every path is checked before use, the caps
 * are counted on bytes actually written, and the package must hold the crash
 * manifest (nwb/crash_manifest.h), whose keys the views read back here too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "nwb/alloc.h"
#include "nwb/crash_manifest.h"
#include "nwb/error.h"
#include "nwb/file_io.h"

#include "crash_ingest_int.h"

#define NAME_MAX_BYTES 255u          /* one path component, as the file system allows */
#define DATA_BLOCK     (64u * 1024u) /* bytes read from libarchive per call */

/* ---- path checks ---- */

/* Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF. */
static int utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        const unsigned c = s[i];
        size_t len;
        uint32_t cp;

        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (i + len > n) {
            return 0;
        }
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) {
                return 0;
            }
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10ffff))) {
            return 0;
        }
        i += len;
    }
    return 1;
}

/* A short printable form of an untrusted name for reasons: at most 80 bytes, \xNN escapes. */
static void quote_name(const char *name, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;

    for (size_t i = 0; name[i] != '\0' && i < 80 && o + 5 < cap; i++) {
        const unsigned char c = (unsigned char)name[i];

        if (c < 0x20 || c >= 0x7f || c == '\\' || c == '"') {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        } else {
            out[o++] = (char)c;
        }
    }
    if (strlen(name) > 80 && o + 4 < cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

/* reason = @p pre + the quoted @p name (when not NULL) + @p post. Returns NWB_EARCHIVE. */
static int invalid(char *reason, size_t cap, const char *pre, const char *name, const char *post)
{
    char q[400];

    if (name != NULL) {
        quote_name(name, q, sizeof(q));
    }
    snprintf(reason, cap, "%s%s%s", pre, name != NULL ? q : "", post);
    return NWB_EARCHIVE;
}

/*
 * Check @p path: relative, no "..", each component valid UTF-8 without control bytes or
 * backslashes and at most NAME_MAX_BYTES, within the length and depth caps. "." and empty
 * components are ignored. Returns 0 or NWB_EARCHIVE with a reason.
 */
static int check_path(const char *path, const struct nwb_crash_caps *caps, char *reason, size_t cap)
{
    const size_t n = strlen(path);
    unsigned depth = 0;

    if (n == 0) {
        return invalid(reason, cap, "entry with an empty name", NULL, "");
    }
    if (n > caps->max_path_bytes) {
        snprintf(reason, cap, "entry path longer than %u bytes (%zu)", caps->max_path_bytes, n);
        return NWB_EARCHIVE;
    }
    if (path[0] == '/') {
        return invalid(reason, cap, "absolute path \"", path, "\"");
    }
    if (!utf8_valid((const unsigned char *)path, n)) {
        return invalid(reason, cap, "entry name is not valid UTF-8: \"", path, "\"");
    }
    for (size_t i = 0; i < n;) {
        size_t j = i;

        while (j < n && path[j] != '/') {
            const unsigned char c = (unsigned char)path[j];

            if (c < 0x20 || c == 0x7f || c == '\\') {
                return invalid(reason, cap, "control byte or backslash in entry name \"", path,
                               "\"");
            }
            j++;
        }
        if (j - i == 2 && path[i] == '.' && path[i + 1] == '.') {
            return invalid(reason, cap, "path traversal (\"..\") in \"", path, "\"");
        }
        if (j - i > NAME_MAX_BYTES) {
            return invalid(reason, cap, "name component longer than 255 bytes in \"", path, "\"");
        }
        if (j > i && !(j - i == 1 && path[i] == '.')) {
            depth++;
        }
        i = j + 1;
    }
    if (depth == 0) {
        return invalid(reason, cap, "entry names no file: \"", path, "\"");
    }
    if (depth > caps->max_path_depth) {
        snprintf(reason, cap, "entry path deeper than %u levels", caps->max_path_depth);
        return NWB_EARCHIVE;
    }
    return 0;
}

/* An errno from creating output: the archive's fault (conflicting names) or ours (disk). */
static int create_error(int err, const char *path, char *reason, size_t cap)
{
    char q[400];

    if (err == EEXIST || err == ENOTDIR || err == ELOOP || err == EISDIR || err == ENAMETOOLONG) {
        return invalid(reason, cap, "entry \"", path, "\" conflicts with an earlier entry");
    }
    quote_name(path, q, sizeof(q));
    snprintf(reason, cap, "cannot create \"%s\": %s", q, strerror(err));
    return -err;
}

struct comp {
    size_t off, len;
};

/* The components of @p path without "" and ".", at most @p max. Returns the count. */
static size_t split_path(const char *path, struct comp *c, size_t max)
{
    const size_t n = strlen(path);
    size_t count = 0;

    for (size_t i = 0; i < n && count < max;) {
        size_t j = i;

        while (j < n && path[j] != '/') {
            j++;
        }
        if (j > i && !(j - i == 1 && path[i] == '.')) {
            c[count].off = i;
            c[count].len = j - i;
            count++;
        }
        i = j + 1;
    }
    return count;
}

/*
 * Create the folders of @p path under @p root (all of them when @p is_dir, else all but the
 * last component) and, for a file, the file itself (O_EXCL, never following a link). Stores
 * the new file's fd in @p *fd_out. The path passed check_path(). Returns 0, NWB_EARCHIVE, or
 * a negated errno.
 */
static int create_path(int root, const char *path, int is_dir, int *fd_out, char *reason,
                       size_t cap)
{
    struct comp comps[NWB__CRASH_DEPTH_LIMIT];
    char name[NAME_MAX_BYTES + 1];
    const size_t count = split_path(path, comps, NWB_ARRAY_SIZE(comps));
    int cur = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int err = 0;

    *fd_out = -1;
    if (cur < 0) {
        return create_error(errno, path, reason, cap);
    }
    for (size_t i = 0; i < count && err == 0; i++) {
        memcpy(name, path + comps[i].off, comps[i].len);
        name[comps[i].len] = '\0';
        if (i + 1 == count && !is_dir) {
            const int fd =
                openat(cur, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);

            if (fd < 0) {
                err = create_error(errno, path, reason, cap);
            }
            *fd_out = fd;
            break;
        }
        if (mkdirat(cur, name, 0755) != 0 && errno != EEXIST) {
            err = create_error(errno, path, reason, cap);
            break;
        }
        {
            const int next = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

            if (next < 0) {
                err = create_error(errno == ENOENT ? ENOTDIR : errno, path, reason, cap);
                break;
            }
            close(cur);
            cur = next;
        }
    }
    close(cur);
    return err;
}

/* ---- extraction ---- */

struct run {
    struct archive *a;
    const struct nwb_crash_caps *caps;
    const atomic_int *cancel;
    uint64_t archive_len;
    struct nwb__crash_extract_info *info;
    char *reason;
    size_t reason_cap;
    char *buf; /* DATA_BLOCK */
};

static int archive_failure(struct run *r, const char *what)
{
    const char *msg = archive_error_string(r->a);

    snprintf(r->reason, r->reason_cap, "%s: %s", what, msg != NULL ? msg : "unknown error");
    return NWB_EARCHIVE;
}

static int copy_data(struct run *r, int fd, const char *path)
{
    uint64_t entry_bytes = 0;

    for (;;) {
        const la_ssize_t n = archive_read_data(r->a, r->buf, DATA_BLOCK);
        int err;

        if (r->cancel != NULL && atomic_load(r->cancel)) {
            return NWB_ECLOSED;
        }
        if (n == 0) {
            return 0;
        }
        if (n < 0) {
            return archive_failure(r, "corrupt or truncated entry data");
        }
        entry_bytes += (uint64_t)n;
        r->info->bytes_written += (uint64_t)n;
        if (entry_bytes > r->caps->max_entry_bytes) {
            char q[400];

            quote_name(path, q, sizeof(q));
            snprintf(r->reason, r->reason_cap, "entry \"%s\" exceeds %llu bytes", q,
                     (unsigned long long)r->caps->max_entry_bytes);
            return NWB_EARCHIVE;
        }
        if (r->info->bytes_written > r->caps->max_total_bytes) {
            snprintf(r->reason, r->reason_cap, "package exceeds %llu bytes in total",
                     (unsigned long long)r->caps->max_total_bytes);
            return NWB_EARCHIVE;
        }
        if (r->info->bytes_written > r->caps->ratio_floor_bytes &&
            r->info->bytes_written / (r->archive_len > 0 ? r->archive_len : 1) >=
                r->caps->max_ratio) {
            snprintf(r->reason, r->reason_cap,
                     "decompression bomb: %llu bytes written from a %llu-byte archive "
                     "(ratio cap %u)",
                     (unsigned long long)r->info->bytes_written, (unsigned long long)r->archive_len,
                     r->caps->max_ratio);
            return NWB_EARCHIVE;
        }
        err = nwb_write_all(fd, r->buf, (size_t)n);
        if (err != 0) {
            snprintf(r->reason, r->reason_cap, "cannot write extracted data: %s", strerror(-err));
            return err;
        }
    }
}

static int entry_type_error(struct run *r, mode_t type, const char *path)
{
    const char *what = type == AE_IFLNK    ? "symbolic link \""
                       : type == AE_IFCHR  ? "character device \""
                       : type == AE_IFBLK  ? "block device \""
                       : type == AE_IFIFO  ? "FIFO \""
                       : type == AE_IFSOCK ? "socket \""
                                           : "unsupported entry type for \"";

    return invalid(r->reason, r->reason_cap, what, path, "\"");
}

static int one_entry(struct run *r, struct archive_entry *e, int root)
{
    const char *path = archive_entry_pathname(e);
    const mode_t type = archive_entry_filetype(e);
    int fd, err;

    if (path == NULL) {
        return invalid(r->reason, r->reason_cap, "entry without a usable name", NULL, "");
    }
    if (archive_entry_hardlink(e) != NULL) {
        return invalid(r->reason, r->reason_cap, "hard link \"", path, "\"");
    }
    if (type != AE_IFREG && type != AE_IFDIR) {
        return entry_type_error(r, type, path);
    }
    err = check_path(path, r->caps, r->reason, r->reason_cap);
    if (err != 0) {
        return err;
    }
    err = create_path(root, path, type == AE_IFDIR, &fd, r->reason, r->reason_cap);
    if (err != 0 || type == AE_IFDIR) {
        return err;
    }
    r->info->files++;
    err = copy_data(r, fd, path);
    if (close(fd) != 0 && err == 0) {
        err = -errno;
        snprintf(r->reason, r->reason_cap, "cannot write extracted data: %s", strerror(errno));
    }
    return err;
}

int nwb__crash_manifest_read(int dirfd, const char *path, struct nwb__crash_manifest *m)
{
    static const char magic[] = NWB_CRASH_MANIFEST_MAGIC "\n";
    char text[NWB_CRASH_MANIFEST_READ_MAX];
    const int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    size_t used = 0;

    memset(m, 0, sizeof(*m));
    if (fd < 0) {
        return -errno;
    }
    /* Only the head: a manifest may be larger (command line, modules), its keys come first. */
    while (used < sizeof(text)) {
        const ssize_t n = read(fd, text + used, sizeof(text) - used);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        used += (size_t)n;
    }
    close(fd);
    if (used < sizeof(magic) - 1 || memcmp(text, magic, sizeof(magic) - 1) != 0) {
        return NWB_EARCHIVE;
    }
    nwb_crash_manifest_value(text, used, "program", m->program);
    nwb_crash_manifest_value(text, used, "run", m->run);
    nwb_crash_manifest_value(text, used, "signal", m->signal);
    nwb_crash_manifest_value(text, used, "build_id", m->build_id);
    return 0;
}

static int check_manifest(struct run *r, int root)
{
    const int err = nwb__crash_manifest_read(root, NWB_CRASH_MANIFEST_NAME, &r->info->manifest);

    if (err == NWB_EARCHIVE) {
        snprintf(r->reason, r->reason_cap,
                 "bad crash manifest: " NWB_CRASH_MANIFEST_NAME
                 " does not start with \"" NWB_CRASH_MANIFEST_MAGIC "\"");
        return NWB_EARCHIVE;
    }
    if (err != 0) {
        snprintf(r->reason, r->reason_cap,
                 "no crash manifest: the package needs " NWB_CRASH_MANIFEST_NAME
                 " at its top starting with \"" NWB_CRASH_MANIFEST_MAGIC "\"");
        return NWB_EARCHIVE;
    }
    return 0;
}

static int setup_reader(struct archive *a, char *reason, size_t cap)
{
    /* ARCHIVE_WARN from a filter means "through an external program": refused. */
    if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
        archive_read_support_format_zip(a) != ARCHIVE_OK ||
        archive_read_support_filter_gzip(a) != ARCHIVE_OK ||
        archive_read_support_filter_zstd(a) != ARCHIVE_OK) {
        snprintf(reason, cap, "libarchive lacks built-in tar/zip/gzip/zstd support: %s",
                 archive_error_string(a) != NULL ? archive_error_string(a) : "?");
        return -ENOTSUP;
    }
    return 0;
}

int nwb__crash_extract(const void *data, int src_fd, uint64_t len, int dst_dirfd,
                       const struct nwb_crash_caps *caps, const atomic_int *cancel,
                       struct nwb__crash_extract_info *info, char *reason, size_t reason_cap)
{
    struct run r;
    struct archive_entry *e;
    int err = 0, opened;

    memset(info, 0, sizeof(*info));
    reason[0] = '\0';
    if (len == 0) {
        return invalid(reason, reason_cap, "empty archive (no bytes)", NULL, "");
    }
    memset(&r, 0, sizeof(r));
    r.caps = caps;
    r.cancel = cancel;
    r.archive_len = len;
    r.info = info;
    r.reason = reason;
    r.reason_cap = reason_cap;
    r.buf = nwb_malloc(DATA_BLOCK);
    r.a = archive_read_new();
    if (r.buf == NULL || r.a == NULL) {
        snprintf(reason, reason_cap, "out of memory");
        err = -ENOMEM;
        goto out;
    }
    err = setup_reader(r.a, reason, reason_cap);
    if (err != 0) {
        goto out;
    }
    opened = data != NULL ? archive_read_open_memory(r.a, data, (size_t)len)
                          : archive_read_open_fd(r.a, src_fd, DATA_BLOCK);
    if (opened != ARCHIVE_OK) {
        err = archive_failure(&r, "not a tar or zip archive (plain, gzip or zstd)");
        goto out;
    }
    for (;;) {
        const int h = archive_read_next_header(r.a, &e);

        if (cancel != NULL && atomic_load(cancel)) {
            err = NWB_ECLOSED;
            break;
        }
        if (h == ARCHIVE_EOF) {
            break;
        }
        if (h != ARCHIVE_OK) {
            /* WARN included: libarchive warns about names it cannot represent, and a
             * package never needs anything it would warn about. */
            err = archive_failure(&r, info->entries == 0 ? "not a tar or zip archive"
                                                         : "corrupt or truncated archive");
            break;
        }
        if (info->entries == 0 && archive_filter_count(r.a) > 2) {
            err =
                invalid(reason, reason_cap,
                        "more than one compression layer (an archive inside an archive)", NULL, "");
            break;
        }
        if (++info->entries > caps->max_entries) {
            snprintf(reason, reason_cap, "more than %u entries", caps->max_entries);
            err = NWB_EARCHIVE;
            break;
        }
        err = one_entry(&r, e, dst_dirfd);
        if (err != 0) {
            break;
        }
    }
    if (err == 0 && info->entries == 0) {
        err = invalid(reason, reason_cap, "archive has no entries", NULL, "");
    }
    if (err == 0) {
        err = check_manifest(&r, dst_dirfd);
    }
out:
    if (r.a != NULL) {
        archive_read_free(r.a);
    }
    nwb_free(r.buf);
    return err;
}
