/* SPDX-License-Identifier: MIT */
/*
 * nwb/namesym.h - the .namesym sidecar format (version 1, docs/namesym.md)
 * and the decoding table built from sidecars.
 *
 * A sidecar maps 64-bit name hashes to strings: a header, entries sorted by
 * hash (so it can be searched in place) and a string area. The reader is
 * strict and gives a distinct reason for every defect. A table merges any
 * number of sidecars (first string wins on a collision, which is reported)
 * and replaces "#" + 16-hex-digit tokens in text.
 */
#ifndef NWB_NAMESYM_H
#define NWB_NAMESYM_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/common.h"
#include "nwb/name.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NWB_NAMESYM_MAGIC       "NWBNSYM\0"
#define NWB_NAMESYM_VERSION     1u
#define NWB_NAMESYM_HEADER_SIZE 64u
#define NWB_NAMESYM_ENTRY_SIZE  16u
/* Reader bounds. */
#define NWB_NAMESYM_MAX_ENTRIES (16u * 1024u * 1024u)
#define NWB_NAMESYM_MAX_STRING  4096u
#define NWB_NAMESYM_MAX_BUILD   256u

/** Writer: an in-memory list of (string) entries. Caller storage. */
typedef struct nwb_namesym_builder {
    struct nwb__namesym_entry *entries; /* owned */
    size_t count;
    size_t cap;
    size_t string_bytes;
} nwb_namesym_builder_t;

NWB_API void nwb_namesym_builder_init(nwb_namesym_builder_t *b);
/** Add @p s (@p len bytes, copied). Duplicated strings are kept once. Returns 0 or UV_ENOMEM-style
 * -ENOMEM. */
NWB_API int nwb_namesym_builder_add(nwb_namesym_builder_t *b, const char *s, size_t len);
/**
 * Sort and serialise into a nwb_malloc'd buffer (@p *out, returned-owned,
 * @p *out_len). Two different strings with one hash: NWB_EDUPLICATE with
 * both strings described in @p errbuf. Returns 0 or a negative code.
 */
NWB_API int nwb_namesym_builder_serialize(nwb_namesym_builder_t *b, const char *build_id,
                                          uint8_t **out, size_t *out_len, char *errbuf,
                                          size_t errlen);
/** Write atomically to @p path (temporary file in the same folder, fsync, rename). */
NWB_API int nwb_namesym_builder_write(nwb_namesym_builder_t *b, const char *build_id,
                                      const char *path, char *errbuf, size_t errlen);
/** Free the entries; the builder is empty and reusable. NULL-safe, idempotent. */
NWB_API void nwb_namesym_builder_cleanup(nwb_namesym_builder_t *b);

/** A validated sidecar image (borrows the bytes). */
typedef struct nwb_namesym_view {
    const uint8_t *data;
    size_t len;
    uint32_t count;
    const uint8_t *entries;
    const uint8_t *strings;
    uint64_t strings_size;
    uint64_t created_ns;
    const char *build_id; /* not NUL-terminated */
    uint32_t build_id_len;
} nwb_namesym_view_t;

/**
 * Validate @p len bytes at @p data as a version-1 sidecar. Returns 0, or one
 * of NWB_EMAGIC, NWB_EVERSION, NWB_ETRUNCATED, NWB_ERANGE (offset or length
 * out of range), NWB_EUNSORTED, NWB_EDUPLICATE, NWB_EPROTO (other header
 * defect) with a static reason in @p *why and the offending byte offset in
 * @p *bad_offset (either may be NULL).
 */
NWB_API int nwb_namesym_view_open(nwb_namesym_view_t *v, const void *data, size_t len,
                                  const char **why, size_t *bad_offset);

/** Entry @p i: its hash, and its raw string bytes (borrowed; may be invalid UTF-8). */
NWB_API void nwb_namesym_view_entry(const nwb_namesym_view_t *v, uint32_t i, nwb_name_t *hash,
                                    const char **s, uint32_t *len);

/** Binary search in place. Returns 1 and the string, or 0. */
NWB_API int nwb_namesym_view_find(const nwb_namesym_view_t *v, nwb_name_t hash, const char **s,
                                  uint32_t *len);

/**
 * Copy @p len bytes into @p dst as valid UTF-8: each invalid sequence becomes
 * U+FFFD; control bytes become '?'. @p dst holds 3 * @p len bytes. Returns the
 * bytes written.
 */
NWB_API size_t nwb_utf8_sanitize(char *dst, const char *src, size_t len);

/** A decoding table merged from sidecars. Opaque. */
typedef struct nwb_namesym_table nwb_namesym_table_t;

/** Callback for collisions found while adding a sidecar: first string wins. */
typedef void (*nwb_namesym_collision_fn)(void *ctx, nwb_name_t hash, const char *kept,
                                         const char *kept_source, const char *dropped,
                                         const char *dropped_source);

NWB_API int nwb_namesym_table_create(nwb_namesym_table_t **out);
/** Free the table and every string in it. NULL-safe. */
NWB_API void nwb_namesym_table_destroy(nwb_namesym_table_t *t);

/**
 * Add every entry of the validated view @p v (strings re-sanitised and
 * copied), naming it @p source in collision reports. Returns the number of
 * new names added (>= 0) or a negative code.
 */
NWB_API long nwb_namesym_table_add(nwb_namesym_table_t *t, const nwb_namesym_view_t *v,
                                   const char *source, nwb_namesym_collision_fn on_collision,
                                   void *ctx);

/**
 * Read, validate and add the sidecar file at @p path. Returns names added or
 * a negative code with a reason in @p errbuf.
 */
NWB_API long nwb_namesym_table_add_file(nwb_namesym_table_t *t, const char *path,
                                        nwb_namesym_collision_fn on_collision, void *ctx,
                                        char *errbuf, size_t errlen);

NWB_API size_t nwb_namesym_table_count(const nwb_namesym_table_t *t);

/** The sanitised string of @p hash, or NULL. */
NWB_API const char *nwb_namesym_table_find(const nwb_namesym_table_t *t, nwb_name_t hash,
                                           size_t *len);

/**
 * Token rule: '#' then exactly 16 lowercase hex digits, where the '#' is not
 * preceded by '#' and the 16 digits are not followed by another hex digit
 * ([0-9a-fA-F]). Everything else is left as it is.
 *
 * Copy @p len bytes of @p text to @p dst replacing known tokens with their
 * strings. @p dst must hold nwb_namesym_decode_max(t, len) bytes. Counts go
 * to @p decoded and @p unknown (may be NULL). Returns the bytes written.
 */
NWB_API size_t nwb_namesym_decode(const nwb_namesym_table_t *t, const char *text, size_t len,
                                  char *dst, uint64_t *decoded, uint64_t *unknown);

/** Upper bound of nwb_namesym_decode()'s output for @p len input bytes. */
NWB_API size_t nwb_namesym_decode_max(const nwb_namesym_table_t *t, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* NWB_NAMESYM_H */
