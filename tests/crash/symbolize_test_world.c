/* SPDX-License-Identifier: MIT */
/*
 * symbolize_test_world.c - the symbolisation tests' shared world (symbolize_test_world.h).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

#include "capture_ptrace.h"
#include "crash_test_archive.h"
#include "symbolize_test_world.h"
#include "test_support.h"

static const char hex_digits[] = "0123456789abcdef";

int sym_run(const char *const argv_c[], char *err, size_t cap)
{
    char *argv[16];
    int pipefd[2], status = -1;
    pid_t pid;
    size_t used = 0;

    for (size_t i = 0; i < 16; i++) {
        argv[i] = (char *)(uintptr_t)argv_c[i];
        if (argv_c[i] == NULL) {
            break;
        }
    }
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        const int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

        dup2(pipefd[1], 2);
        if (null_fd >= 0) {
            dup2(null_fd, 1); /* only stderr is kept */
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    close(pipefd[1]);
    for (;;) {
        const ssize_t n = read(pipefd[0], err + used, cap - 1 - used);

        if (n <= 0) {
            break;
        }
        used += (size_t)n;
        if (used == cap - 1) {
            break;
        }
    }
    err[used] = '\0';
    close(pipefd[0]);
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int sym_build_id_hex(const char *path, char *out)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    const void *id = NULL;
    ssize_t n = -1;
    Elf *elf;

    if (fd < 0) {
        return -1;
    }
    elf_version(EV_CURRENT);
    elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (elf != NULL) {
        n = dwelf_elf_gnu_build_id(elf, &id);
    }
    for (ssize_t i = 0; i < n && i < 64; i++) {
        out[2 * i] = hex_digits[((const unsigned char *)id)[i] >> 4];
        out[2 * i + 1] = hex_digits[((const unsigned char *)id)[i] & 15];
        out[2 * i + 2] = '\0';
    }
    elf_end(elf);
    close(fd);
    return n > 0 ? 0 : -1;
}

static unsigned line_of(const char *path, const char *needle)
{
    size_t len;
    char *text = nwb_test_read_file(path, &len);
    const char *at = text != NULL ? strstr(text, needle) : NULL;
    unsigned line = 1;

    for (const char *p = text; at != NULL && p < at; p++) {
        line += *p == '\n';
    }
    free(text);
    return at != NULL ? line : 0;
}

/* The path of @p name for the build id under the symbols folder, its xx/ folder made. */
void sym_world_symbol_path(const struct sym_world *w, const char *suffix, char *out, size_t cap)
{
    char sub[700];

    snprintf(sub, sizeof(sub), "%s/.build-id/%.2s", w->symbols, w->build_id);
    (void)mkdir(w->symbols, 0755);
    snprintf(out, cap, "%s/.build-id", w->symbols);
    (void)mkdir(out, 0755);
    (void)mkdir(sub, 0755);
    snprintf(out, cap, "%s/%s%s", sub, w->build_id + 2, suffix);
}

void sym_world_reset(struct sym_world *w)
{
    nwb_test_rmtree(w->symbols);
    nwb_test_rmtree(w->out);
    (void)mkdir(w->out, 0755);
}

int sym_copy_file(const char *from, const char *to, unsigned mode)
{
    size_t len;
    char *data = nwb_test_read_file(from, &len);
    const int rc = data != NULL ? nwb_test_write_file(to, data, len, mode) : -1;

    free(data);
    return rc;
}

int sym_world_setup(struct sym_world *w, const char *tag)
{
    char why[256];
    char *const argv[] = {(char *)(uintptr_t)CRASH_PROG_EXE, NULL};
    const char *const env[] = {"CRASH_PROG_MODE=null", "NWB_CRASH_HELPER=", NULL};
    char crash_dir[700];
    static char env_dir[800];
    const char *env2[4];

    memset(w, 0, sizeof(*w));
    if (nwb_test_tmpdir(tag, w->dir, sizeof(w->dir)) != 0) {
        return -1;
    }
    snprintf(w->capture, sizeof(w->capture), "%s/threads.nwbc", w->dir);
    snprintf(w->symbols, sizeof(w->symbols), "%s/symbols", w->dir);
    snprintf(w->out, sizeof(w->out), "%s/out", w->dir);
    snprintf(crash_dir, sizeof(crash_dir), "%s/crashes", w->dir);
    snprintf(env_dir, sizeof(env_dir), "NWB_CRASH_DIR=%s", crash_dir);
    env2[0] = env[0];
    env2[1] = env[1];
    env2[2] = env_dir;
    env2[3] = NULL;
    if (capture_ptrace_run(argv, env2, w->capture, why, sizeof(why)) != 0) {
        fprintf(stderr, "capture failed: %s\n", why);
        return -1;
    }
    if (sym_build_id_hex(CRASH_PROG_EXE, w->build_id) != 0) {
        return -1;
    }
    w->crash_line = line_of(NWB_SOURCE_DIR "/tests/crash/crash_prog.c", "*null_ptr = 42;");
    return w->crash_line > 0 ? 0 : -1;
}

void sym_world_teardown(struct sym_world *w)
{
    nwb_test_rmtree(w->dir);
}

/* A package of manifest.txt, crash.txt (no backtrace) and the captured threads.nwbc, tagged
 * so each test's archive gets its own id. */
void *sym_world_package(const struct sym_world *w, const char *tag, size_t *len)
{
    static const char manifest[] = "nwb-crash-manifest 1\nkind=signal\nprogram=crash_prog\n"
                                   "run=0123456789abcdef\nsignal=SIGSEGV\n";
    char crash[128];
    size_t cap_len;
    char *capture = nwb_test_read_file(w->capture, &cap_len);
    void *archive;

    if (capture == NULL) {
        return NULL;
    }
    snprintf(crash, sizeof(crash), "signal=SIGSEGV\ntag=%s\n", tag);
    {
        const struct ta_entry e[] = {
            {"manifest.txt", TA_FILE, manifest, sizeof(manifest) - 1, 0, 0, NULL},
            {"crash.txt", TA_FILE, crash, strlen(crash), 0, 0, NULL},
            {"threads.nwbc", TA_FILE, capture, cap_len, 0, 0, NULL},
        };

        archive = ta_build("tar.zst", e, 3, len);
    }
    free(capture);
    return archive;
}
