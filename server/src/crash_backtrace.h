/* SPDX-License-Identifier: MIT */
/*
 * crash_backtrace.h - the [backtrace] section of a package's crash.txt (the in-process
 * backtrace the handler writes, docs/crash.md): "#N 0xPC MODULE+0xOFFSET" or "#N 0xPC ?" per
 * frame. The text comes from a client, so it is parsed strictly within bounds: the frames it
 * yields feed the fallback grouping signature of a crash that has no symbolised stack.
 */
#ifndef NWB_SERVER_CRASH_BACKTRACE_H
#define NWB_SERVER_CRASH_BACKTRACE_H

#include <stddef.h>
#include <stdint.h>

#define NWB_CRASH_BT_FRAMES_MAX 128u           /* frames taken (the handler writes at most 128) */
#define NWB_CRASH_BT_TEXT_MAX   (256u * 1024u) /* bytes of crash.txt looked at */
#define NWB_CRASH_BT_MODULE_MAX 4096u          /* bytes of one module path */

struct nwb_crash_bt_frame {
    uint64_t pc;
    const char *module; /* borrowed from the text; NULL for "?" */
    size_t module_len;
    uint64_t offset;
};

/*
 * Parse the [backtrace] section of @p text (the first NWB_CRASH_BT_TEXT_MAX bytes count)
 * into @p frames (@p max of them). Frames must be numbered 0, 1, 2, ... in order; comment
 * lines ("# ...") are skipped; the section ends at a blank line, the next "[section]" or the
 * end. Returns the frame count (0 when there is no section), or -1 with a reason in @p why
 * for a malformed frame line (bad number, bad hex, a module without "+0x", a module path
 * longer than NWB_CRASH_BT_MODULE_MAX or with control bytes).
 */
int nwb_crash_bt_parse(const char *text, size_t len, struct nwb_crash_bt_frame *frames, size_t max,
                       char *why, size_t why_size);

#endif /* NWB_SERVER_CRASH_BACKTRACE_H */
