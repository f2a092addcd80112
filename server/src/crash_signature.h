/* SPDX-License-Identifier: MIT */
/*
 * crash_signature.h - a crash's grouping signature: the signal plus the top frames of the
 * crashing thread that are not runtime or library frames (abort, raise, __libc_*, the crash
 * handler, ...), each normalised so the same bug in the same code gives the same text on
 * every machine (no absolute addresses, no compiler clone suffixes). Crashes with equal
 * signatures form a group; its id is the first 64 bits of SHA-256(signature) in hex.
 *
 * docs/crash.md ("Grouping") states the rules. Pure functions over caller memory: no I/O.
 */
#ifndef NWB_SERVER_CRASH_SIGNATURE_H
#define NWB_SERVER_CRASH_SIGNATURE_H

#include <stddef.h>
#include <stdint.h>

#define NWB_CRASH_SIG_FRAMES       3u    /* frames a signature names */
#define NWB_CRASH_SIG_MAX          1024u /* bytes of a signature, the NUL excluded */
#define NWB_CRASH_SIG_FRAME_MAX    256u  /* bytes one normalised frame contributes */
#define NWB_CRASH_GROUP_ID_LEN     16u   /* lowercase hex digits */
#define NWB_CRASH_SKIP_PATTERNS    256u  /* patterns a skip list holds */
#define NWB_CRASH_SKIP_PATTERN_MAX 128u  /* bytes of one pattern */

/* One frame as the symboliser gave it. Either string may be NULL/0 (unknown). */
struct nwb_crash_sig_frame {
    const char *function; /* the function (outermost of an inlined chain first is fine) */
    size_t function_len;
    const char *module; /* the module's path or file name */
    size_t module_len;
    uint64_t module_offset; /* the pc's offset inside the module, used when function is unknown */
};

/*
 * Patterns of frames a signature passes over: "name" matches the function exactly, "name*"
 * any function starting with "name"; a frame without a function is matched by its module's
 * file name ("libc.so*"). Built-in defaults (nwb_crash_skip_defaults) plus any the
 * operator adds (--crash-skip-frames FILE).
 */
struct nwb_crash_skip {
    char patterns[NWB_CRASH_SKIP_PATTERNS][NWB_CRASH_SKIP_PATTERN_MAX + 1];
    unsigned count;
};

/* @p skip holds the built-in patterns. */
void nwb_crash_skip_defaults(struct nwb_crash_skip *skip);

/*
 * Add the patterns of @p text (one per line; blank lines and lines starting with '#' are
 * ignored; surrounding blanks trimmed). 0, or -EINVAL with a reason in @p why naming the line
 * (a pattern longer than NWB_CRASH_SKIP_PATTERN_MAX, a byte outside printable ASCII, a '*'
 * anywhere but at the end), or -E2BIG past NWB_CRASH_SKIP_PATTERNS. @p skip is unchanged on
 * error.
 */
int nwb_crash_skip_add_text(struct nwb_crash_skip *skip, const char *text, size_t len, char *why,
                            size_t why_size);

/* 1 when @p function (normalised) matches a pattern of @p skip. */
int nwb_crash_skip_matches(const struct nwb_crash_skip *skip, const char *function, size_t len);

/*
 * The signature of a crash: "@p signal_name | f1 | f2 | f3" with up to NWB_CRASH_SIG_FRAMES
 * frames of @p frames (crashing thread, innermost first) that @p skip does not match. A frame
 * reads as its normalised function name, or "module+0xOFFSET" (the module's file name) when
 * the function is unknown (a frame with neither is left out). When every frame is skipped, the
 * innermost frames are used anyway (a crash inside abort() still groups). Writes a NUL-terminated
 * string of at most NWB_CRASH_SIG_MAX bytes into @p out (@p cap >= NWB_CRASH_SIG_MAX + 1) and
 * returns its length.
 */
size_t nwb_crash_signature(const char *signal_name, const struct nwb_crash_sig_frame *frames,
                           size_t n, const struct nwb_crash_skip *skip, char *out, size_t cap);

/* The group id of @p sig: 16 lowercase hex digits and a NUL. */
void nwb_crash_group_id(const char *sig, size_t len, char out[NWB_CRASH_GROUP_ID_LEN + 1]);

/*
 * Normalise one function name into @p out (cap >= NWB_CRASH_SIG_FRAME_MAX + 1): drop a
 * parameter list "(...)" and anything after it, a "+0x..." offset, GCC clone suffixes
 * (".cold", ".isra.N", ".constprop.N", ".part.N", ".lto_priv.N"), and map bytes outside
 * printable ASCII and '|' to '?'. Returns the length.
 */
size_t nwb_crash_sig_normalise(const char *function, size_t len, char *out, size_t cap);

#endif /* NWB_SERVER_CRASH_SIGNATURE_H */
