/* SPDX-License-Identifier: MIT */
/*
 * crash_frame_json.c - nwb_crash_frame_json_write() (crash_frame_json.h): the one writer of a
 * symbolised frame's JSON object.
 */
#include <inttypes.h>
#include <stdio.h>

#include "crash_frame_json.h"

static void hex(nwb_json_t *j, uint64_t v)
{
    char s[24];

    snprintf(s, sizeof(s), "0x%" PRIx64, v);
    nwb_json_cstr(j, s);
}

static void str_or_null(nwb_json_t *j, const char *s, size_t len)
{
    if (s == NULL || len == 0) {
        nwb_json_null(j);
    } else {
        nwb_json_str(j, s, len);
    }
}

void nwb_crash_frame_json_write(nwb_json_t *j, const struct nwb_crash_frame_json *f)
{
    const int has_file = f->file != NULL && f->file_len > 0;

    nwb_json_obj_begin(j);
    nwb_json_key(j, "pc");
    hex(j, f->pc);
    nwb_json_key(j, "module");
    if (f->module != NULL) {
        nwb_json_str(j, f->module, f->module_len);
    } else {
        nwb_json_null(j);
    }
    nwb_json_key(j, "buildId");
    nwb_json_str(j, f->build_id != NULL ? f->build_id : "",
                 f->build_id != NULL ? f->build_id_len : 0);
    nwb_json_key(j, "offset");
    hex(j, f->offset);
    nwb_json_key(j, "function");
    str_or_null(j, f->function, f->function_len);
    nwb_json_key(j, "file");
    str_or_null(j, f->file, f->file_len);
    nwb_json_key(j, "line");
    if (has_file && f->line > 0) {
        nwb_json_u64(j, f->line);
    } else {
        nwb_json_null(j);
    }
    nwb_json_key(j, "inlined");
    nwb_json_bool(j, f->inlined);
    nwb_json_key(j, "symbolized");
    nwb_json_bool(j, f->symbolized);
    if (!f->symbolized && f->reason != NULL) {
        nwb_json_key(j, "reason");
        nwb_json_str(j, f->reason, f->reason_len);
    }
    nwb_json_obj_end(j);
}
