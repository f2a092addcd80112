/* SPDX-License-Identifier: MIT */
/*
 * symbols_int.h - the symbol store: ELF files kept by GNU build id under --symbols-dir in the
 * GDB/debuginfod layout, filled by POST /v1/symbols and asked by GET /v1/symbols/<build id>
 * (docs/protocol.md; docs/operations.md, "Symbol store"). symbols_store.c is the disk side
 * (thread pool, and the start-up sweep), symbols_endpoint.c the HTTP side (loop thread).
 */
#ifndef NWB_SYMBOLS_INT_H
#define NWB_SYMBOLS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "elf_check.h"

struct nwb_server;
struct nwb__conn;

/* Uploads in progress are <dir>/.upload-<pid>-<n>.tmp; the start-up sweep removes leftovers. */
#define NWB__SYMBOLS_TMP_PREFIX ".upload-"
#define NWB__SYMBOLS_TMP_SUFFIX ".tmp"
/* Longest --symbols-dir: its longest file name (a 128-digit build id, ".debug") fits PATH_MAX. */
#define NWB__SYMBOLS_DIR_MAX   3800u
#define NWB__SYMBOLS_PATH_MAX  4096u
#define NWB__SYMBOLS_FILE_MODE 0644 /* stored files: readable by gdb/debuginfod on the host */

/* 1 when @p hex (@p len bytes) is a build id the store takes: lowercase hex, an even count,
 * 2 * NWB__ELF_BUILD_ID_MIN .. 2 * NWB__ELF_BUILD_ID_MAX digits. */
int nwb__symbols_id_valid(const char *hex, size_t len);

/* <dir>/.build-id/<first 2 digits>/<rest>, with ".debug" when @p debug. 0, or -ENAMETOOLONG. */
int nwb__symbols_path(const char *dir, const char *hex, int debug, char *out, size_t cap);

/* At start: make @p dir and remove temporary files a killed server left there. 0, or a
 * negative errno with the reason in @p errbuf. */
int nwb__symbols_dir_prepare(const char *dir, char *errbuf, size_t errlen);

struct nwb__symbols_result {
    int status;         /* 200 (identical file already stored), 201 (stored), 400, 500 */
    const char *reason; /* 400: why the file was refused (static) */
    char error[192];    /* 500: what failed */
    struct nwb__elf_info info;
    uint64_t size;
    int stored;
};

/*
 * Check the upload in @p fd (@p size bytes, the temporary file @p tmp_path under @p dir) and
 * put it in place: fsync, ELF check, @p want_id ("" or the ?build_id=) compared, then the
 * build-id path: an identical file there is kept (200, stored 0), else the upload is renamed
 * over it (201, stored 1). Afterwards @p tmp_path is gone in every case (renamed or removed);
 * @p fd stays open for the caller to close. Pool thread.
 */
void nwb__symbols_store(const char *dir, const char *tmp_path, int fd, uint64_t size,
                        const char *want_id, struct nwb__symbols_result *res);

/* The stored file for @p hex: the .debug one when there is one, else the stripped one. 0 with
 * @p *size and @p *has_debug_info, -ENOENT, or another negative errno. Pool thread. */
int nwb__symbols_lookup(const char *dir, const char *hex, uint64_t *size, int *has_debug_info);

/* ---- symbols_endpoint.c: the routes (router.c) ---- */

size_t nwb__symbols_body_limit(const struct nwb_server *srv);
int nwb__symbols_on_head(struct nwb__conn *c);
void nwb__symbols_post_handle(struct nwb__conn *c);
void nwb__symbols_get_handle(struct nwb__conn *c);

#endif /* NWB_SYMBOLS_INT_H */
