/* SPDX-License-Identifier: MIT */
/*
 * symbolize_output.c - nwb-symbolize's three outputs, written one thread at a time (crashing
 * thread first): stack.txt for a person, stack.json (docs/protocol.md, "stack.json") for
 * tools, and frames.tsv, the line format the server reads back for the grouping signature
 * and the crash's JSON (docs/crash.md, "Symbolisation"). Every string is bounded here and
 * control bytes never reach the text formats.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/buf.h"
#include "nwb/json.h"

#include "crash_frame_json.h"
#include "symbolize.h"

struct json_state {
    nwb_buf_t buf;
    nwb_json_t j;
};

/* @p s (at most @p max bytes of @p len) into @p out with tab, newline and other control bytes
 * as '?': one field of a text line. Returns the length. */
static size_t field(const char *s, size_t len, size_t max, char *out)
{
    size_t n = 0;

    if (s == NULL) {
        out[0] = '\0';
        return 0;
    }
    for (; n < len && n < max && s[n] != '\0'; n++) {
        const unsigned char c = (unsigned char)s[n];

        out[n] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    out[n] = '\0';
    return n;
}

size_t nwb_sym_format_frame(const struct nwb_sym_frame *f, unsigned index, char *out, size_t cap)
{
    char module[NWB_SYM_MODULE_MAX + 1], function[NWB_SYM_FUNCTION_MAX + 1];
    char file[NWB_SYM_FILE_MAX + 1];
    int n;

    if (field(f->module, f->module_len, NWB_SYM_MODULE_MAX, module) == 0) {
        snprintf(module, sizeof(module), "?");
    }
    field(f->function, SIZE_MAX, NWB_SYM_FUNCTION_MAX, function);
    field(f->file, SIZE_MAX, NWB_SYM_FILE_MAX, file);
    if (!f->symbolized) {
        n = snprintf(out, cap, "#%u 0x%016" PRIx64 " %s+0x%" PRIx64 " (%s)", index, f->pc, module,
                     f->offset, f->why != NULL ? f->why : "no symbols");
    } else if (file[0] != '\0') {
        n = snprintf(out, cap, "#%u 0x%016" PRIx64 " %s (%s:%u) %s+0x%" PRIx64 "%s", index, f->pc,
                     function[0] != '\0' ? function : "??", file, f->line, module, f->offset,
                     f->inlined ? " (inlined)" : "");
    } else {
        n = snprintf(out, cap, "#%u 0x%016" PRIx64 " %s %s+0x%" PRIx64 "%s", index, f->pc,
                     function[0] != '\0' ? function : "??", module, f->offset,
                     f->inlined ? " (inlined)" : "");
    }
    if (n < 0) {
        out[0] = '\0';
        return 0;
    }
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

int nwb_sym_out_begin(struct nwb_sym_out *o, const nwb_crash_capture_view_t *cap, FILE *text,
                      FILE *tsv, FILE *json)
{
    char note[NWB_CRASH_CAPTURE_NOTE_MAX + 1];
    const char *method = cap->method == NWB_CRASH_CAPTURE_PTRACE ? "ptrace" : "in-process";

    memset(o, 0, sizeof(*o));
    o->text = text;
    o->tsv = tsv;
    o->json = json;
    field(cap->note, cap->note_len, NWB_CRASH_CAPTURE_NOTE_MAX, note);
    if (text != NULL) {
        fprintf(text, "capture: %s, pid %" PRIu32 ", %zu thread%s, %zu module%s%s%s\n\n", method,
                cap->pid, cap->nthreads, cap->nthreads == 1 ? "" : "s", cap->nmodules,
                cap->nmodules == 1 ? "" : "s", note[0] != '\0' ? ": " : "", note);
    }
    if (tsv != NULL) {
        fprintf(tsv, NWB_SYM_FRAMES_MAGIC "\n");
    }
    if (json != NULL) {
        struct json_state *js = nwb_calloc(1, sizeof(*js));

        if (js == NULL) {
            return -ENOMEM;
        }
        nwb_buf_init(&js->buf, 1u << 20);
        nwb_json_init(&js->j, &js->buf, json);
        nwb_json_obj_begin(&js->j);
        nwb_json_key(&js->j, "version");
        nwb_json_u64(&js->j, 1);
        nwb_json_key(&js->j, "method");
        nwb_json_cstr(&js->j, method);
        nwb_json_key(&js->j, "note");
        nwb_json_str(&js->j, cap->note != NULL ? cap->note : "", cap->note_len);
        nwb_json_key(&js->j, "pid");
        nwb_json_u64(&js->j, cap->pid);
        nwb_json_key(&js->j, "crashedTid");
        nwb_json_u64(&js->j, cap->crashed_tid);
        nwb_json_key(&js->j, "threads");
        nwb_json_arr_begin(&js->j);
        o->json_w = js;
    }
    return 0;
}

/* strlen(@p s) but at most @p max; 0 for NULL. */
static size_t bounded_len(const char *s, size_t max)
{
    size_t n = 0;

    while (s != NULL && n < max && s[n] != '\0') {
        n++;
    }
    return n;
}

static void json_str_or_null(nwb_json_t *j, const char *s, size_t max)
{
    if (s == NULL) {
        nwb_json_null(j);
    } else {
        const size_t len = strlen(s);

        nwb_json_str(j, s, len < max ? len : max);
    }
}

static void json_thread(nwb_json_t *j, const struct nwb_sym_thread *t)
{
    nwb_json_obj_begin(j);
    nwb_json_key(j, "tid");
    nwb_json_u64(j, t->tid);
    nwb_json_key(j, "name");
    nwb_json_cstr(j, t->name);
    nwb_json_key(j, "crashed");
    nwb_json_bool(j, t->crashed);
    nwb_json_key(j, "truncated");
    nwb_json_bool(j, t->truncated);
    nwb_json_key(j, "stopped");
    json_str_or_null(j, t->stop_why, 256);
    nwb_json_key(j, "frames");
    nwb_json_arr_begin(j);
    for (size_t i = 0; i < t->nframes; i++) {
        const struct nwb_sym_frame *f = &t->frames[i];
        const struct nwb_crash_frame_json fj = {
            f->pc,
            f->module,
            f->module_len,
            f->build_id,
            f->build_id != NULL ? strlen(f->build_id) : 0,
            f->offset,
            f->function,
            bounded_len(f->function, NWB_SYM_FUNCTION_MAX),
            f->file,
            bounded_len(f->file, NWB_SYM_FILE_MAX),
            f->line,
            f->inlined,
            f->symbolized,
            f->why,
            bounded_len(f->why, 256),
        };

        nwb_crash_frame_json_write(j, &fj);
    }
    nwb_json_arr_end(j);
    nwb_json_obj_end(j);
}

void nwb_sym_out_thread(struct nwb_sym_out *o, const struct nwb_sym_thread *t)
{
    char name[NWB_CRASH_CAPTURE_NAME_MAX + 1];

    field(t->name, NWB_CRASH_CAPTURE_NAME_MAX, NWB_CRASH_CAPTURE_NAME_MAX, name);
    if (o->text != NULL) {
        char line[NWB_SYM_MODULE_MAX + NWB_SYM_FUNCTION_MAX + NWB_SYM_FILE_MAX + 512];

        fprintf(o->text, "thread %" PRIu32 " [%s]%s\n", t->tid, name,
                t->crashed ? " (crashed)" : "");
        for (size_t i = 0; i < t->nframes; i++) {
            nwb_sym_format_frame(&t->frames[i], (unsigned)i, line, sizeof(line));
            fprintf(o->text, "%s\n", line);
        }
        if (t->truncated) {
            fprintf(o->text, "   (more frames not shown: at most %u per thread, %u in all)\n",
                    NWB_SYM_FRAMES_MAX, NWB_SYM_TOTAL_FRAMES_MAX);
        } else if (t->stop_why != NULL) {
            char why[257];

            field(t->stop_why, 256, 256, why);
            fprintf(o->text, "   (unwinding stopped: %s)\n", why);
        }
        fprintf(o->text, "\n");
    }
    if (o->tsv != NULL) {
        fprintf(o->tsv, "thread\t%" PRIu32 "\t%d\t%s\n", t->tid, t->crashed, name);
        for (size_t i = 0; i < t->nframes; i++) {
            const struct nwb_sym_frame *f = &t->frames[i];
            char module[NWB_SYM_MODULE_MAX + 1], function[NWB_SYM_FUNCTION_MAX + 1];
            char file[NWB_SYM_FILE_MAX + 1];

            field(f->module, f->module_len, NWB_SYM_MODULE_MAX, module);
            field(f->function, SIZE_MAX, NWB_SYM_FUNCTION_MAX, function);
            field(f->file, SIZE_MAX, NWB_SYM_FILE_MAX, file);
            fprintf(o->tsv, "frame\t%" PRIx64 "\t%s\t%s\t%" PRIx64 "\t%s\t%s\t%u\t%d\t%d\n", f->pc,
                    module, f->build_id != NULL ? f->build_id : "", f->offset, function, file,
                    file[0] != '\0' ? f->line : 0, f->inlined, f->symbolized);
        }
    }
    if (o->json_w != NULL) {
        json_thread(&((struct json_state *)o->json_w)->j, t);
    }
}

int nwb_sym_out_end(struct nwb_sym_out *o, const struct nwb_sym_missing *missing, size_t n)
{
    int err = 0;

    if (o->text != NULL && n > 0) {
        fprintf(o->text, "missing symbols:\n");
        for (size_t i = 0; i < n; i++) {
            fprintf(o->text, "  %s: %s\n", missing[i].module, missing[i].why);
        }
    }
    if (o->tsv != NULL) {
        for (size_t i = 0; i < n; i++) {
            char module[NWB_SYM_MODULE_MAX + 1];

            field(missing[i].module, sizeof(missing[i].module), NWB_SYM_MODULE_MAX, module);
            fprintf(o->tsv, "missing\t%s\t%s\n", missing[i].build_id, module);
        }
    }
    if (o->json_w != NULL) {
        struct json_state *js = o->json_w;

        nwb_json_arr_end(&js->j);
        nwb_json_key(&js->j, "missing");
        nwb_json_arr_begin(&js->j);
        for (size_t i = 0; i < n; i++) {
            nwb_json_obj_begin(&js->j);
            nwb_json_key(&js->j, "buildId");
            nwb_json_cstr(&js->j, missing[i].build_id);
            nwb_json_key(&js->j, "module");
            nwb_json_cstr(&js->j, missing[i].module);
            nwb_json_key(&js->j, "reason");
            nwb_json_cstr(&js->j, missing[i].why);
            nwb_json_obj_end(&js->j);
        }
        nwb_json_arr_end(&js->j);
        nwb_json_obj_end(&js->j);
        nwb_json_space(&js->j, "\n", 1);
        if (nwb_json_finish(&js->j) != 0) {
            err = -EIO;
        }
        nwb_buf_cleanup(&js->buf);
        nwb_free(js);
        o->json_w = NULL;
    }
    if ((o->text != NULL && (fflush(o->text) != 0 || ferror(o->text))) ||
        (o->tsv != NULL && (fflush(o->tsv) != 0 || ferror(o->tsv))) ||
        (o->json != NULL && (fflush(o->json) != 0 || ferror(o->json)))) {
        err = -EIO;
    }
    return err;
}
