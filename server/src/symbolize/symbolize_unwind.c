/* SPDX-License-Identifier: MIT */
/*
 * symbolize_unwind.c - unwinding and symbolising a crash capture with elfutils libdwfl: each
 * captured module with symbols under the symbols folder is reported at its load address, the
 * captured threads are attached as a Dwfl process state (registers in DWARF order, memory
 * from the captured stack bytes and the modules' file-backed segments), every thread is
 * unwound by CFI, and each pc becomes function, file:line and inlined frames.
 */
#define _GNU_SOURCE
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include "nwb/alloc.h"

#include "symbolize.h"

/* One captured module as the session sees it. */
struct sym_module {
    const nwb_crash_module_view_t *view;
    char build_id[NWB_SYM_BUILD_ID_HEX + 1];
    const char *file; /* last path component of the captured path */
    size_t file_len;
    Dwfl_Module *mod; /* NULL: not reported (no symbols) */
    int debug_fd;     /* the .debug file, handed to libdwfl by find_debuginfo */
    char why[NWB_SYM_PATH_MAX + 96];
};

struct sym_session {
    const nwb_crash_capture_view_t *cap;
    struct sym_module *mods;
    Dwfl *dwfl;
    size_t next_thread; /* next_thread's cursor */
    size_t current;     /* the thread being unwound: its stack is searched first */
    /* The frames of the thread being unwound. */
    struct nwb_sym_frame frames[NWB_SYM_FRAMES_MAX];
    size_t nframes;
    size_t total_frames;
    int truncated;
    char stop_why[256];
};

/* ---- libdwfl callbacks: modules ---- */

static int find_no_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                       char **file_name, Elf **elfp)
{
    (void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)elfp;
    return -1; /* every module is reported with its file already open */
}

/* The .debug file found by build id, if the reported file has no DWARF of its own. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                          const char *file_name, const char *debuglink_file,
                          GElf_Word debuglink_crc, char **debuginfo_file_name)
{
    struct sym_module *m = *userdata;
    int fd;

    (void)mod, (void)modname, (void)base, (void)file_name, (void)debuglink_file;
    (void)debuglink_crc, (void)debuginfo_file_name;
    if (m == NULL || m->debug_fd < 0) {
        return -1;
    }
    fd = m->debug_fd; /* consumed by libdwfl */
    m->debug_fd = -1;
    return fd;
}

static const Dwfl_Callbacks dwfl_callbacks = {
    .find_elf = find_no_elf,
    .find_debuginfo = find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

/* The load bias of @p fd's ELF mapped at @p start from file offset @p file_offset: start minus
 * the page-aligned p_vaddr of the PT_LOAD segment that maps that offset. */
static int load_bias(int fd, uint64_t start, uint64_t file_offset, uint64_t *bias)
{
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    size_t phnum = 0;
    int found = -1;

    if (elf == NULL || elf_getphdrnum(elf, &phnum) != 0) {
        elf_end(elf);
        return -1;
    }
    for (size_t i = 0; i < phnum && found != 0; i++) {
        GElf_Phdr ph;

        if (gelf_getphdr(elf, (int)i, &ph) == NULL || ph.p_type != PT_LOAD) {
            continue;
        }
        if ((ph.p_offset & ~(uint64_t)0xfff) == file_offset) {
            *bias = start - (ph.p_vaddr & ~(uint64_t)0xfff);
            found = 0;
        }
    }
    elf_end(elf);
    return found;
}

/* The files of module @p m: from the symbols folder, else from debuginfod when configured
 * (its reason appended to the folder's). 0, or -1 with the reason in m->why. */
static int find_module_files(struct sym_module *m, const char *symbols_dir,
                             struct nwb_sym_debuginfod *debuginfod, int *exe_fd, int *debug_fd)
{
    const nwb_crash_module_view_t *v = m->view;
    char why[256];
    size_t used;

    if (nwb_sym_lookup(symbols_dir, v->build_id, v->build_id_len, exe_fd, debug_fd, m->why,
                       sizeof(m->why)) == 0) {
        return 0;
    }
    if (debuginfod == NULL) {
        return -1;
    }
    if (nwb_sym_debuginfod_find(debuginfod, v->build_id, v->build_id_len, exe_fd, debug_fd, why,
                                sizeof(why)) == 0) {
        m->why[0] = '\0';
        return 0;
    }
    used = strlen(m->why);
    snprintf(m->why + used, sizeof(m->why) - used, "; %s", why);
    return -1;
}

/* Report module @p m when its symbols are found; else say why in m->why. */
static void report_module(struct sym_session *s, struct sym_module *m, const char *symbols_dir,
                          struct nwb_sym_debuginfod *debuginfod)
{
    const nwb_crash_module_view_t *v = m->view;
    char name[NWB_SYM_MODULE_MAX + 1];
    int exe_fd, debug_fd, main_fd;
    uint64_t bias = 0;
    void **userdata;

    if (find_module_files(m, symbols_dir, debuginfod, &exe_fd, &debug_fd) != 0) {
        return;
    }
    /* The executable carries .eh_frame and the loaded segments; a .debug file alone is used
     * as the main file only when it is all there is (an uploaded unstripped binary). */
    main_fd = exe_fd >= 0 ? exe_fd : debug_fd;
    if (main_fd == debug_fd) {
        debug_fd = -1;
    }
    if (load_bias(main_fd, v->start, v->file_offset, &bias) != 0) {
        snprintf(m->why, sizeof(m->why), "symbols refused (no segment maps offset 0x%llx)%s%s",
                 (unsigned long long)v->file_offset, ", build id ", m->build_id);
        close(main_fd);
        if (debug_fd >= 0) {
            close(debug_fd);
        }
        return;
    }
    snprintf(name, sizeof(name), "%.*s", (int)m->file_len, m->file);
    m->debug_fd = debug_fd;
    m->mod = dwfl_report_elf(s->dwfl, name, name, main_fd, bias, false);
    if (m->mod == NULL) {
        snprintf(m->why, sizeof(m->why), "symbols refused (%s), build id %s", dwfl_errmsg(-1),
                 m->build_id);
        close(main_fd); /* not consumed on failure */
        if (m->debug_fd >= 0) {
            close(m->debug_fd);
            m->debug_fd = -1;
        }
        return;
    }
    if (dwfl_module_info(m->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL) != NULL) {
        *userdata = m;
    }
}

/* ---- libdwfl callbacks: the process state ---- */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
    struct sym_session *s = arg;

    (void)dwfl;
    if (s->next_thread >= s->cap->nthreads) {
        return 0;
    }
    *thread_argp = &s->cap->threads[s->next_thread];
    return (pid_t)s->cap->threads[s->next_thread++].tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
    struct sym_session *s = arg;

    (void)dwfl;
    for (size_t i = 0; i < s->cap->nthreads; i++) {
        if ((pid_t)s->cap->threads[i].tid == tid) {
            *thread_argp = &s->cap->threads[i];
            return true;
        }
    }
    return false;
}

static int read_stack(const nwb_crash_thread_view_t *t, uint64_t addr, Dwarf_Word *out)
{
    if (addr < t->stack_start || t->stack_len < 8 || addr - t->stack_start > t->stack_len - 8) {
        return 0;
    }
    memcpy(out, t->stack + (addr - t->stack_start), 8); /* little-endian host (x86_64, arm64) */
    return 1;
}

/* Memory a module's file maps read-only at @p addr (its text and constant data). */
static int read_module(struct sym_session *s, uint64_t addr, Dwarf_Word *out)
{
    Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, addr);
    GElf_Addr bias = 0;
    Elf *elf = mod != NULL ? dwfl_module_getelf(mod, &bias) : NULL;
    size_t phnum = 0, size = 0;
    const char *raw = elf != NULL ? elf_rawfile(elf, &size) : NULL;

    if (raw == NULL || elf_getphdrnum(elf, &phnum) != 0) {
        return 0;
    }
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        uint64_t at;

        if (gelf_getphdr(elf, (int)i, &ph) == NULL || ph.p_type != PT_LOAD ||
            (ph.p_flags & PF_W) != 0 || addr - bias < ph.p_vaddr) {
            continue;
        }
        at = addr - bias - ph.p_vaddr;
        if (ph.p_filesz >= 8 && at <= ph.p_filesz - 8 && ph.p_offset <= size &&
            at <= size - ph.p_offset && size - ph.p_offset - at >= 8) {
            memcpy(out, raw + ph.p_offset + at, 8);
            return 1;
        }
    }
    return 0;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    struct sym_session *s = arg;

    (void)dwfl;
    if (s->current < s->cap->nthreads && read_stack(&s->cap->threads[s->current], addr, result)) {
        return true;
    }
    for (size_t i = 0; i < s->cap->nthreads; i++) {
        if (read_stack(&s->cap->threads[i], addr, result)) {
            return true;
        }
    }
    return read_module(s, addr, result) != 0;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
    const nwb_crash_thread_view_t *t = thread_arg;
    Dwarf_Word regs[NWB_CRASH_REGS_MAX];

    for (unsigned i = 0; i < t->nregs && i < NWB_CRASH_REGS_MAX; i++) {
        regs[i] = t->regs[i];
    }
    /* x86_64: DWARF 0..16 with rip as 16 (the return-address column), as elfutils' own
     * x86_64 backend sets them. aarch64: x0..x30 and sp are DWARF 0..31; pc has no DWARF
     * number and is passed on its own. */
    if (t->nregs == NWB_CRASH_REGS_X86_64) {
        if (!dwfl_thread_state_registers(thread, 0, 17, regs)) {
            return false;
        }
        dwfl_thread_state_register_pc(thread, regs[16]);
        return true;
    }
    if (t->nregs == NWB_CRASH_REGS_AARCH64) {
        if (!dwfl_thread_state_registers(thread, 0, 32, regs)) {
            return false;
        }
        dwfl_thread_state_register_pc(thread, regs[32]);
        return true;
    }
    return false;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
};

/* A 64-byte ELF header naming the machine, so libdwfl picks the unwinder's backend even when
 * no module has symbols. */
static Elf *arch_elf(unsigned arch, unsigned char *hdr)
{
    GElf_Ehdr *e;

    memset(hdr, 0, 64);
    e = (GElf_Ehdr *)(void *)hdr;
    memcpy(e->e_ident, ELFMAG, SELFMAG);
    e->e_ident[EI_CLASS] = ELFCLASS64;
    e->e_ident[EI_DATA] = ELFDATA2LSB;
    e->e_ident[EI_VERSION] = EV_CURRENT;
    e->e_type = ET_CORE;
    e->e_machine = arch == NWB_CRASH_ARCH_AARCH64 ? EM_AARCH64 : EM_X86_64;
    e->e_version = EV_CURRENT;
    e->e_ehsize = 64;
    return elf_memory((char *)hdr, 64);
}

/* ---- symbolising one pc ---- */

static const struct sym_module *module_at(const struct sym_session *s, uint64_t pc)
{
    size_t lo = 0, hi = s->cap->nmodules;

    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const nwb_crash_module_view_t *v = s->mods[mid].view;

        if (pc < v->start) {
            hi = mid;
        } else if (pc >= v->end) {
            lo = mid + 1;
        } else {
            return &s->mods[mid];
        }
    }
    return NULL;
}

/* The name of an inlined subroutine or subprogram DIE, through its abstract origin. */
static const char *die_name(Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *name = NULL;

    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) != NULL) {
        name = dwarf_formstring(&attr);
    }
    if (name == NULL && dwarf_attr_integrate(die, DW_AT_name, &attr) != NULL) {
        name = dwarf_formstring(&attr);
    }
    return name;
}

static struct nwb_sym_frame *frame_add(struct sym_session *s)
{
    if (s->nframes >= NWB_SYM_FRAMES_MAX || s->total_frames >= NWB_SYM_TOTAL_FRAMES_MAX) {
        s->truncated = 1;
        return NULL;
    }
    s->total_frames++;
    return memset(&s->frames[s->nframes++], 0, sizeof(s->frames[0]));
}

/* Frames of @p pc (the unwound value) looked up at @p lookup (pc - 1 for callers). */
static int add_pc(struct sym_session *s, uint64_t pc, uint64_t lookup)
{
    const struct sym_module *m = module_at(s, lookup);
    struct nwb_sym_frame base, *f;
    Dwarf_Die *scopes = NULL;
    Dwarf_Addr cu_bias = 0;
    Dwarf_Die *cu;
    Dwfl_Line *line;
    int nscopes = 0;

    memset(&base, 0, sizeof(base));
    base.pc = pc;
    base.build_id = "";
    if (m != NULL) {
        base.module = m->file;
        base.module_len = m->file_len;
        base.build_id = m->build_id;
        /* The offset in the file mapping as the capture's module list places it. */
        base.offset = lookup - m->view->start + m->view->file_offset;
        if (pc != lookup) {
            base.offset++;
        }
    } else {
        base.offset = pc;
    }
    if (m == NULL || m->mod == NULL) {
        f = frame_add(s);
        if (f == NULL) {
            return -1;
        }
        *f = base;
        if (m != NULL) {
            f->why = m->why;
        } else {
            f->why = "no module at this address";
        }
        return 0;
    }
    {
        GElf_Addr mbias = 0;

        if (dwfl_module_getelf(m->mod, &mbias) != NULL) {
            base.offset = pc - mbias; /* the ELF's own address: what addr2line takes */
        }
    }
    base.symbolized = 1;
    base.function = dwfl_module_addrname(m->mod, lookup);
    line = dwfl_module_getsrc(m->mod, lookup);
    if (line != NULL) {
        int lineno = 0;
        const char *file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);

        if (file != NULL && lineno > 0) {
            base.file = file;
            base.line = (unsigned)lineno;
        }
    }
    cu = dwfl_module_addrdie(m->mod, lookup, &cu_bias);
    if (cu != NULL) {
        nscopes = dwarf_getscopes(cu, lookup - cu_bias, &scopes);
    }
    if (nscopes > 0) {
        /* Innermost first: every inlined subroutine is a frame of its own, located where the
         * next one (or the pc) is; the enclosing frame's location is its call site. */
        Dwarf_Files *files = NULL;
        const char *file = base.file;
        unsigned lineno = base.line;

        (void)dwarf_getsrcfiles(cu, &files, NULL);
        for (int i = 0; i < nscopes; i++) {
            const int tag = dwarf_tag(&scopes[i]);
            Dwarf_Attribute attr;
            Dwarf_Word v;

            if (tag != DW_TAG_inlined_subroutine) {
                continue;
            }
            f = frame_add(s);
            if (f == NULL) {
                free(scopes);
                return -1;
            }
            *f = base;
            f->function = die_name(&scopes[i]);
            f->file = file;
            f->line = lineno;
            f->inlined = 1;
            file = NULL;
            lineno = 0;
            if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &v) == 0 &&
                files != NULL) {
                file = dwarf_filesrc(files, (size_t)v, NULL, NULL);
            }
            if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &v) == 0) {
                lineno = (unsigned)v;
            }
            if (file == NULL) {
                lineno = 0;
            }
        }
        base.file = file;
        base.line = lineno;
        free(scopes);
    }
    f = frame_add(s);
    if (f == NULL) {
        return -1;
    }
    *f = base;
    return 0;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
    struct sym_session *s = arg;
    Dwarf_Addr pc;
    bool activation = false;

    if (!dwfl_frame_pc(state, &pc, &activation)) {
        snprintf(s->stop_why, sizeof(s->stop_why), "%s", dwfl_errmsg(-1));
        return DWARF_CB_ABORT;
    }
    /* A return address points after the call: look the caller up inside it. */
    if (add_pc(s, pc, activation || pc == 0 ? pc : pc - 1) != 0) {
        return DWARF_CB_ABORT;
    }
    return DWARF_CB_OK;
}

/* ---- the session ---- */

static void note_missing(const struct sym_session *s, struct nwb_sym_missing *missing, size_t cap,
                         size_t *n)
{
    for (size_t i = 0; i < s->cap->nmodules && *n < cap; i++) {
        const struct sym_module *m = &s->mods[i];

        if (m->mod != NULL || m->build_id[0] == '\0') {
            continue;
        }
        snprintf(missing[*n].build_id, sizeof(missing[*n].build_id), "%s", m->build_id);
        snprintf(missing[*n].module, sizeof(missing[*n].module), "%.*s", (int)m->file_len, m->file);
        snprintf(missing[*n].why, sizeof(missing[*n].why), "%.*s", (int)sizeof(missing[*n].why) - 1,
                 m->why);
        (*n)++;
    }
}

int nwb_sym_unwind(const nwb_crash_capture_view_t *cap, const char *symbols_dir,
                   struct nwb_sym_debuginfod *debuginfod, nwb_sym_thread_fn fn, void *ctx,
                   struct nwb_sym_missing *missing, size_t missing_cap, size_t *nmissing, char *why,
                   size_t why_size)
{
    struct sym_session *s = nwb_calloc(1, sizeof(*s));
    unsigned char hdr[64] __attribute__((aligned(8)));
    Elf *arch = NULL;
    int err = -1;

    *nmissing = 0;
    if (s == NULL) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    s->cap = cap;
    s->mods = nwb_calloc(cap->nmodules + 1, sizeof(*s->mods));
    elf_version(EV_CURRENT);
    s->dwfl = s->mods != NULL ? dwfl_begin(&dwfl_callbacks) : NULL;
    if (s->dwfl == NULL) {
        snprintf(why, why_size, "cannot start libdwfl: %s", dwfl_errmsg(-1));
        goto out;
    }
    dwfl_report_begin(s->dwfl);
    for (size_t i = 0; i < cap->nmodules; i++) {
        struct sym_module *m = &s->mods[i];
        const nwb_crash_module_view_t *v = &cap->modules[i];

        m->view = v;
        m->debug_fd = -1;
        m->file = v->path;
        m->file_len = v->path_len;
        for (size_t k = v->path_len; k > 0; k--) {
            if (v->path[k - 1] == '/') {
                m->file = v->path + k;
                m->file_len = v->path_len - k;
                break;
            }
        }
        if (m->file_len > NWB_SYM_MODULE_MAX) {
            m->file_len = NWB_SYM_MODULE_MAX;
        }
        nwb_sym_hex(v->build_id, v->build_id_len, m->build_id);
        if (v->build_id_len == 0) {
            snprintf(m->why, sizeof(m->why), "no symbols: no build id");
            continue;
        }
        report_module(s, m, symbols_dir, debuginfod);
    }
    dwfl_report_end(s->dwfl, NULL, NULL);
    note_missing(s, missing, missing_cap, nmissing);
    arch = arch_elf(cap->arch, hdr);
    if (arch == NULL || !dwfl_attach_state(s->dwfl, arch, (pid_t)cap->pid, &thread_callbacks, s)) {
        snprintf(why, why_size, "cannot attach the captured threads: %s", dwfl_errmsg(-1));
        goto out;
    }
    for (size_t i = 0; i < cap->nthreads; i++) {
        const nwb_crash_thread_view_t *t = &cap->threads[i];
        struct nwb_sym_thread out;
        int rc;

        s->current = i;
        s->nframes = 0;
        s->truncated = 0;
        s->stop_why[0] = '\0';
        rc = dwfl_getthread_frames(s->dwfl, (pid_t)t->tid, frame_cb, s);
        if (rc == -1 && s->stop_why[0] == '\0') {
            /* Often the usual end (the outermost frame has no CFI or no return address); a
             * module without symbols stops it early. Either way, said once per thread. */
            const int e = dwfl_errno();

            if (e != 0) {
                snprintf(s->stop_why, sizeof(s->stop_why), "%s", dwfl_errmsg(e));
            }
        }
        if (s->nframes == 0 && t->nregs > 0 && !s->truncated) {
            /* Not even the first frame: still say where the pc was. */
            const uint64_t pc = t->regs[t->nregs - 1];

            (void)add_pc(s, pc, pc);
        }
        out.tid = t->tid;
        out.name = t->name;
        out.crashed = (t->flags & NWB_CRASH_THREAD_CRASHED) != 0;
        out.frames = s->frames;
        out.nframes = s->nframes;
        out.truncated = s->truncated;
        out.stop_why = s->stop_why[0] != '\0' ? s->stop_why : NULL;
        if (fn(ctx, &out) != 0) {
            snprintf(why, why_size, "cannot write the output");
            goto out;
        }
    }
    err = 0;
out:
    if (s->dwfl != NULL) {
        dwfl_end(s->dwfl);
    }
    elf_end(arch);
    for (size_t i = 0; s->mods != NULL && i < cap->nmodules; i++) {
        if (s->mods[i].debug_fd >= 0) {
            close(s->mods[i].debug_fd);
        }
    }
    nwb_free(s->mods);
    nwb_free(s);
    return err;
}
