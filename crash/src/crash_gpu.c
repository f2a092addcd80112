/* SPDX-License-Identifier: MIT */
/*
 * crash_gpu.c - nwb_crash_capture_gpu(): a GPU (device-lost) package made
 * like a process crash but without killing the process. gpu_crash.txt is
 * always written, last, so it can report what happened to every other file;
 * vendor dumps keep their conventional names.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nwb/error.h"

#include "capture_int.h"

/* One capture path's outcome, for its line in gpu_crash.txt. */
struct path_result {
    char text[256];
};

struct gpu_errors {
    char lines[16][160];
    unsigned count;
    unsigned dropped;
};

static void note_error(struct gpu_errors *e, const char *file, int err)
{
    if (e->count == NWB_ARRAY_SIZE(e->lines)) {
        e->dropped++;
        return;
    }
    snprintf(e->lines[e->count++], sizeof(e->lines[0]), "writing %s: %s", file, strerror(err));
}

/* Write a blob as @p file; the result line says what happened. Returns bytes written or -1. */
static long write_blob(struct nwb__crash_pkg *pkg, const char *file, const void *bytes, size_t len,
                       struct gpu_errors *errs)
{
    const size_t keep = len > NWB_CRASH_GPU_BLOB_MAX ? NWB_CRASH_GPU_BLOB_MAX : len;
    const int fd = nwb__crash_pkg_open(pkg, file);

    if (fd < 0) {
        note_error(errs, file, errno);
        return -1;
    }
    if (nwb_write_all(fd, bytes, keep) != 0) {
        note_error(errs, file, errno);
        close(fd);
        return -1;
    }
    if (close(fd) != 0) {
        note_error(errs, file, errno);
        return -1;
    }
    return (long)keep;
}

static void describe_blob(struct path_result *r, const char *file, long written, size_t len,
                          const char *status)
{
    if (written >= 0) {
        snprintf(r->text, sizeof(r->text), "written %s (%ld bytes%s)", file, written,
                 (size_t)written < len ? ", truncated" : "");
    } else if (len > 0) {
        snprintf(r->text, sizeof(r->text), "failed: could not write %s (see errors)", file);
    } else {
        snprintf(r->text, sizeof(r->text), "unavailable: %s",
                 status != NULL ? status : "not supplied by the application");
    }
}

static const char *vendor_name(uint32_t id)
{
    switch (id) {
    case 0x1002:
        return "AMD";
    case 0x10de:
        return "NVIDIA";
    case 0x8086:
        return "Intel";
    case 0x13b5:
        return "ARM";
    case 0x5143:
        return "Qualcomm";
    case 0x106b:
        return "Apple";
    case 0:
        return "unknown";
    default:
        return "other";
    }
}

static const char *or_unknown(const char *s)
{
    return s != NULL && s[0] != '\0' ? s : "unknown";
}

static void write_manifest(struct nwb__crash_pkg *pkg, const nwb_crash_gpu_info_t *in,
                           struct gpu_errors *errs)
{
    struct nwb__sw w;
    const int fd = nwb__crash_pkg_open(pkg, NWB_CRASH_MANIFEST_NAME);

    if (fd < 0) {
        note_error(errs, NWB_CRASH_MANIFEST_NAME, errno);
        return;
    }
    nwb__sw_init(&w, fd, 64u * 1024u);
    nwb__crash_pkg_manifest_common(&w, "gpu", pkg->time_ns);
    nwb__sw_kv(&w, "signal", "none");
    nwb__sw_kv(&w, "gpu_api", or_unknown(in->api));
    nwb__sw_kv(&w, "gpu_reporting_call", or_unknown(in->reporting_call));
    nwb__sw_kv(&w, "gpu_result", or_unknown(in->result));
    nwb__sw_kv(&w, "gpu_device", or_unknown(in->device_name));
    if (nwb__sw_flush(&w) != 0) {
        note_error(errs, NWB_CRASH_MANIFEST_NAME, EIO);
    }
    close(fd);
}

static void write_report(struct nwb__crash_pkg *pkg, const nwb_crash_gpu_info_t *in,
                         const struct path_result paths[5], struct gpu_errors *errs)
{
    static const char *const path_names[5] = {"vendor_dump.amd_rgd", "vendor_dump.nv_aftermath",
                                              "device_fault_query", "breadcrumbs",
                                              "debug_metadata"};
    struct nwb__sw w;
    const int fd = nwb__crash_pkg_open(pkg, "gpu_crash.txt");

    if (fd < 0) {
        return;
    }
    nwb__sw_init(&w, fd, 1024u * 1024u);
    nwb__sw_str(&w, "nwb gpu crash report 1\n");
    nwb__sw_kv(&w, "package", pkg->name);
    nwb__sw_kv(&w, "program", nwb__crash_g.program);
    nwb__sw_kv(&w, "run", nwb__crash_g.run_id);
    nwb__sw_str(&w, "pid=");
    nwb__sw_u64(&w, (uint64_t)getpid());
    nwb__sw_str(&w, "\ntime=");
    nwb__sw_time(&w, pkg->time_ns);
    nwb__sw_chr(&w, '\n');
    nwb__sw_kv(&w, "api", or_unknown(in->api));
    nwb__sw_kv(&w, "reporting_call", or_unknown(in->reporting_call));
    nwb__sw_kv(&w, "result", or_unknown(in->result));
    nwb__sw_kv(&w, "device", or_unknown(in->device_name));
    nwb__sw_str(&w, "vendor_id=");
    nwb__sw_hex(&w, in->vendor_id, 4);
    nwb__sw_str(&w, " (");
    nwb__sw_str(&w, vendor_name(in->vendor_id));
    nwb__sw_str(&w, ")\ndevice_id=");
    nwb__sw_hex(&w, in->device_id, 4);
    nwb__sw_chr(&w, '\n');
    nwb__sw_kv(&w, "driver", or_unknown(in->driver_name));
    nwb__sw_kv(&w, "driver_version", or_unknown(in->driver_version));
    nwb__sw_str(&w, "\n[capture paths]\n");
    for (int i = 0; i < 5; i++) {
        nwb__sw_kv(&w, path_names[i], paths[i].text);
    }
    nwb__sw_str(&w, "\n[marker paths]\n");
    for (size_t i = 0; i < in->marker_count && in->marker_paths != NULL; i++) {
        const char *m = in->marker_paths[i];

        nwb__sw_u64(&w, i);
        nwb__sw_str(&w, ": ");
        nwb__sw_esc(&w, m != NULL ? m : "(null)", m != NULL ? strlen(m) : 6);
        nwb__sw_chr(&w, '\n');
    }
    nwb__sw_str(&w, "\n[errors]\n");
    for (size_t i = 0; i < in->error_count && in->errors != NULL; i++) {
        const char *e = in->errors[i];

        nwb__sw_str(&w, "application: ");
        nwb__sw_esc(&w, e != NULL ? e : "(null)", e != NULL ? strlen(e) : 6);
        nwb__sw_chr(&w, '\n');
    }
    for (unsigned i = 0; i < errs->count; i++) {
        nwb__sw_str(&w, "capture: ");
        nwb__sw_str(&w, errs->lines[i]);
        nwb__sw_chr(&w, '\n');
    }
    if (errs->dropped > 0) {
        nwb__sw_str(&w, "capture: ");
        nwb__sw_u64(&w, errs->dropped);
        nwb__sw_str(&w, " more errors not listed\n");
    }
    (void)nwb__sw_flush(&w);
    close(fd);
}

/* One capture at a time: the module tables and the package sequence are shared. */
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;

static int capture(const nwb_crash_gpu_info_t *info, char *name_out, size_t name_cap);

int nwb_crash_capture_gpu(const nwb_crash_gpu_info_t *info, char *name_out, size_t name_cap)
{
    int err;

    pthread_mutex_lock(&capture_lock);
    err = capture(info, name_out, name_cap);
    pthread_mutex_unlock(&capture_lock);
    return err;
}

static int capture(const nwb_crash_gpu_info_t *info, char *name_out, size_t name_cap)
{
    static const nwb_crash_gpu_info_t empty;
    const nwb_crash_gpu_info_t *in = info != NULL ? info : &empty;
    struct nwb__crash_pkg pkg;
    struct path_result paths[5];
    struct gpu_errors errs;
    long w;
    int err, fd;

    if (!atomic_load(&nwb__crash_g.installed)) {
        return NWB_ECLOSED;
    }
    memset(&errs, 0, sizeof(errs));
    err = nwb__crash_pkg_begin(&pkg, "gpu", nwb__crash_now_ns());
    if (err != 0) {
        return err;
    }
    if (name_out != NULL && name_cap > 0) {
        snprintf(name_out, name_cap, "%s", pkg.name);
    }
    write_manifest(&pkg, in, &errs);

    w = in->rgd_bytes != NULL && in->rgd_len > 0
            ? write_blob(&pkg, "gpu_crash.rgd", in->rgd_bytes, in->rgd_len, &errs)
            : -1;
    describe_blob(&paths[0], "gpu_crash.rgd", w, in->rgd_bytes != NULL ? in->rgd_len : 0,
                  in->rgd_status);
    w = in->aftermath_bytes != NULL && in->aftermath_len > 0
            ? write_blob(&pkg, "gpu_crash.nv-gpudmp", in->aftermath_bytes, in->aftermath_len, &errs)
            : -1;
    describe_blob(&paths[1], "gpu_crash.nv-gpudmp", w,
                  in->aftermath_bytes != NULL ? in->aftermath_len : 0, in->aftermath_status);

    if (in->device_fault_text != NULL || in->device_fault_bytes != NULL) {
        long t = -1, b = -1;

        if (in->device_fault_text != NULL) {
            t = write_blob(&pkg, "vk_device_fault.txt", in->device_fault_text,
                           strlen(in->device_fault_text), &errs);
        }
        if (in->device_fault_bytes != NULL && in->device_fault_len > 0) {
            b = write_blob(&pkg, "vk_device_fault.bin", in->device_fault_bytes,
                           in->device_fault_len, &errs);
        }
        snprintf(paths[2].text, sizeof(paths[2].text), "%s%s%s%s",
                 t >= 0 ? "written vk_device_fault.txt" : "", t >= 0 && b >= 0 ? ", " : "",
                 b >= 0 ? "written vk_device_fault.bin" : "",
                 t < 0 && b < 0 ? "failed: could not write the fault details (see errors)" : "");
    } else {
        describe_blob(&paths[2], "vk_device_fault.txt", -1, 0, in->device_fault_status);
    }
    if (in->marker_count > 0 && in->marker_paths != NULL) {
        snprintf(paths[3].text, sizeof(paths[3].text), "%zu marker paths (listed below)%s%s",
                 in->marker_count, in->breadcrumbs_status != NULL ? "; " : "",
                 in->breadcrumbs_status != NULL ? in->breadcrumbs_status : "");
    } else {
        describe_blob(&paths[3], "", -1, 0, in->breadcrumbs_status);
    }
    w = in->debug_metadata != NULL && in->debug_metadata_len > 0
            ? write_blob(&pkg, "gpu_debug_metadata.txt", in->debug_metadata, in->debug_metadata_len,
                         &errs)
            : -1;
    describe_blob(&paths[4], "gpu_debug_metadata.txt", w,
                  in->debug_metadata != NULL ? in->debug_metadata_len : 0, NULL);

    fd = nwb__crash_pkg_open(&pkg, "maps.txt");
    nwb__crash_modules_load(fd);
    if (fd >= 0) {
        close(fd);
    }
    nwb__crash_pkg_write_tail(&pkg);
    write_report(&pkg, in, paths, &errs);
    if (nwb__crash_pkg_finish(&pkg) != 0) {
        return -errno;
    }
    (void)nwb__crash_start_uploader();
    return 0;
}
