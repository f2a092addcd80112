/* SPDX-License-Identifier: MIT */
/*
 * crash_frame_json.h - one symbolised frame as JSON, the object both stack.json (nwb-symbolize)
 * and the "symbolization" of GET /v1/crashes/<id> (the server) are made of, written in one
 * place so the two cannot drift (docs/protocol.md, "stack.json"). A small library of its own
 * (nwb_crash_frame_json): the symboliser and the server link it, not each other.
 */
#ifndef NWB_SERVER_CRASH_FRAME_JSON_H
#define NWB_SERVER_CRASH_FRAME_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "nwb/json.h"

/* A frame's fields; a string with s NULL (or len 0 where noted) is written as null. */
struct nwb_crash_frame_json {
    uint64_t pc;
    const char *module; /* null when NULL */
    size_t module_len;
    const char *build_id; /* "" when NULL */
    size_t build_id_len;
    uint64_t offset;
    const char *function; /* null when NULL or empty */
    size_t function_len;
    const char *file; /* null when NULL or empty; then line is null too */
    size_t file_len;
    unsigned line; /* null when 0 */
    int inlined;
    int symbolized;
    const char *reason; /* "reason" is written only when !symbolized and this is not NULL */
    size_t reason_len;
};

/* {"pc","module","buildId","offset","function","file","line","inlined","symbolized"[,"reason"]}
 * into @p j, pc and offset as "0x..." strings. */
void nwb_crash_frame_json_write(nwb_json_t *j, const struct nwb_crash_frame_json *f);

#endif /* NWB_SERVER_CRASH_FRAME_JSON_H */
