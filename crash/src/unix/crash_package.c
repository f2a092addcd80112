/* SPDX-License-Identifier: MIT */
/*
 * crash_package.c - the package folder, written with async-signal-safe calls
 * only: <crash_dir>/pending/<name>.tmp is filled and then renamed to <name>,
 * so an uploader never sees half a package. Also the manifest's common keys
 * and the pending-folder count that keeps a crash loop from filling the disk.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nwb/error.h"
#include "nwb/log_tail.h"

#include "../capture_int.h"

/* struct linux_dirent64 as the kernel writes it. */
struct dirent64_raw {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

long nwb__crash_pending_count(const char *pending_dir)
{
    char buf[4096];
    long count = 0;
    const int fd = open(pending_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0) {
        return -1;
    }
    for (;;) {
        const long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));

        if (n <= 0) {
            break;
        }
        for (long off = 0; off < n;) {
            const struct dirent64_raw *d = (const struct dirent64_raw *)(void *)(buf + off);

            /* Hidden names are the lock and the packer's temporary files. */
            if (d->d_name[0] != '.') {
                count++;
            }
            off += d->d_reclen;
        }
    }
    close(fd);
    return count;
}

static char *put_str(char *p, char *end, const char *s)
{
    while (*s != '\0' && p < end) {
        *p++ = *s++;
    }
    return p;
}

static char *put_dec(char *p, char *end, uint64_t v)
{
    char tmp[20];
    int n = 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0 && p < end) {
        *p++ = tmp[--n];
    }
    return p;
}

int nwb__crash_pkg_begin(struct nwb__crash_pkg *pkg, const char *kind_tag, uint64_t time_ns)
{
    struct nwb__crash_state *g = &nwb__crash_g;
    char stamp[16];
    char *p = pkg->name, *end = pkg->name + sizeof(pkg->name) - 1;
    const unsigned seq = atomic_fetch_add(&g->package_seq, 1u);
    const long count = nwb__crash_pending_count(g->pending_dir);
    uint64_t ns = time_ns % 1000000000u;
    char nsbuf[10];

    pkg->dir_fd = -1;
    pkg->time_ns = time_ns;
    if (count < 0) {
        return -errno;
    }
    if ((unsigned long)count >= g->pending_max_count) {
        return NWB_EFULL;
    }
    /* <YYYYmmdd-HHMMSS>.<ns>_<program>_<pid>_<seq>_<kind>: sorts oldest first. */
    nwb__crash_time_compact(stamp, time_ns);
    for (int i = 8; i >= 0; i--) {
        nsbuf[i] = (char)('0' + ns % 10);
        ns /= 10;
    }
    nsbuf[9] = '\0';
    p = put_str(p, end, stamp);
    p = put_str(p, end, ".");
    p = put_str(p, end, nsbuf);
    p = put_str(p, end, "_");
    p = put_str(p, end, g->program);
    p = put_str(p, end, "_");
    p = put_dec(p, end, (uint64_t)getpid());
    p = put_str(p, end, "_");
    p = put_dec(p, end, seq);
    p = put_str(p, end, "_");
    p = put_str(p, end, kind_tag);
    *p = '\0';

    p = pkg->final_path;
    end = pkg->final_path + sizeof(pkg->final_path) - 1;
    p = put_str(p, end, g->pending_dir);
    p = put_str(p, end, "/");
    p = put_str(p, end, pkg->name);
    *p = '\0';
    nwb__crash_strlcpy(pkg->tmp_path, pkg->final_path, sizeof(pkg->tmp_path) - 4);
    p = pkg->tmp_path + nwb__crash_strlen(pkg->tmp_path);
    p = put_str(p, pkg->tmp_path + sizeof(pkg->tmp_path) - 1, ".tmp");
    *p = '\0';
    if (mkdir(pkg->tmp_path, 0700) != 0) {
        return -errno;
    }
    pkg->dir_fd = open(pkg->tmp_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return pkg->dir_fd >= 0 ? 0 : -errno;
}

int nwb__crash_pkg_open(struct nwb__crash_pkg *pkg, const char *file)
{
    if (pkg->dir_fd < 0) {
        return -1;
    }
    return openat(pkg->dir_fd, file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
}

void nwb__crash_pkg_manifest_common(struct nwb__sw *w, const char *kind, uint64_t time_ns)
{
    const struct nwb__crash_state *g = &nwb__crash_g;
    size_t i = 0;
    unsigned argc = 0;

    nwb__sw_str(w, NWB_CRASH_MANIFEST_MAGIC "\n");
    nwb__sw_kv(w, "kind", kind);
    nwb__sw_kv(w, "program", g->program);
    nwb__sw_kv(w, "run", g->run_id);
    nwb__sw_kv(w, "version", g->version);
    nwb__sw_kv(w, "build_config", g->build_config);
    nwb__sw_kv(w, "build_id", g->build_id);
    nwb__sw_kv(w, "executable", g->exe_path);
    nwb__sw_str(w, "pid=");
    nwb__sw_u64(w, (uint64_t)getpid());
    nwb__sw_str(w, "\nstart_time=");
    nwb__sw_time(w, g->start_time_ns);
    nwb__sw_str(w, "\nstart_time_ns=");
    nwb__sw_u64(w, g->start_time_ns);
    nwb__sw_str(w, "\ncrash_time=");
    nwb__sw_time(w, time_ns);
    nwb__sw_str(w, "\ncrash_time_ns=");
    nwb__sw_u64(w, time_ns);
    nwb__sw_chr(w, '\n');
    while (i < g->cmdline_len) {
        size_t n = 0;

        while (i + n < g->cmdline_len && g->cmdline[i + n] != '\0') {
            n++;
        }
        nwb__sw_str(w, "arg");
        nwb__sw_u64(w, argc++);
        nwb__sw_chr(w, '=');
        nwb__sw_esc(w, g->cmdline + i, n);
        nwb__sw_chr(w, '\n');
        i += n + 1;
    }
    nwb__sw_str(w, "argc=");
    nwb__sw_u64(w, argc);
    nwb__sw_chr(w, '\n');
    if (g->cmdline_cut) {
        nwb__sw_str(w, "cmdline_truncated=1\n");
    }
}

void nwb__crash_pkg_write_tail(struct nwb__crash_pkg *pkg)
{
    const int fd = nwb__crash_pkg_open(pkg, "log_tail.txt");

    if (fd >= 0) {
        (void)nwb_log_tail_write_fd(fd);
        close(fd);
    }
}

int nwb__crash_pkg_finish(struct nwb__crash_pkg *pkg)
{
    if (pkg->dir_fd >= 0) {
        close(pkg->dir_fd);
        pkg->dir_fd = -1;
    }
    return rename(pkg->tmp_path, pkg->final_path) == 0 ? 0 : -1;
}
