/* SPDX-License-Identifier: MIT */
/*
 * nwb/token.h - the bearer token a client sends to an nwb-logserver started
 * with --token-file: its byte rule, reading it from a file, and finding it
 * in the environment ($NWB_LOGSERVER_TOKEN, $NWB_LOGSERVER_TOKEN_FILE).
 * Shared by the log client, nwb-log and the crash uploader.
 */
#ifndef NWB_TOKEN_H
#define NWB_TOKEN_H

#include <stddef.h>

#include "nwb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest token in bytes (the server's limit too); buffers hold one more for the NUL. */
#define NWB_TOKEN_MAX 255u

/** 1 when @p s (@p len bytes) is 1..NWB_TOKEN_MAX visible ASCII bytes (0x21..0x7e), else 0. */
NWB_API int nwb_token_valid(const char *s, size_t len);

/**
 * Read the token in file @p path, as nwb-logserver reads --token-file: a
 * regular file (symbolic links followed, never blocking on a FIFO); one
 * trailing LF or CRLF is dropped, the rest must pass nwb_token_valid().
 * @p dst gets it NUL-terminated (@p cap >= NWB_TOKEN_MAX + 1). Returns 0, or
 * NWB_ECONFIG with "the token file PATH: <reason>" in @p errbuf (may be
 * NULL): the errno's text and name when it cannot be read ("No such file or
 * directory (ENOENT)"), not a regular file, empty, longer than
 * NWB_TOKEN_MAX, or which byte is not visible ASCII.
 */
NWB_API int nwb_token_file_read(const char *path, char *dst, size_t cap, char *errbuf,
                                size_t errlen);

/**
 * The token from the environment: $NWB_LOGSERVER_TOKEN when set and not
 * empty, else the content of the file $NWB_LOGSERVER_TOKEN_FILE names. 0 with
 * an empty @p dst when neither is set; NWB_ECONFIG with a reason when the one
 * found is unusable.
 */
NWB_API int nwb_token_from_env(char *dst, size_t cap, char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* NWB_TOKEN_H */
