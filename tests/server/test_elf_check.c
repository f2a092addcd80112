/* SPDX-License-Identifier: MIT */
/*
 * test_elf_check.c - the symbol store's ELF checker (server/src/elf_check.c) on real files:
 * this test's own executable, a stripped copy (objcopy --strip-all) and a debug-only copy
 * (objcopy --only-keep-debug), all with the build id nwb_build_id() reads; the hand-laid tiny
 * seeds of the fuzz corpus (a note section, .debug_info, a PT_NOTE segment only, extended
 * numbering); and hostile edits of them: truncated at several offsets, not ELF, a huge
 * e_shnum, extended numbering just over and at NWB__ELF_SECTIONS_MAX, the section header
 * table past the end, a truncated build id note, a name outside .shstrtab, a wrong class or
 * byte order. Each refusal has its one-line reason.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nwb/build_id.h"
#include "nwb/byte_order.h"
#include "nwb/error.h"
#include "test_support.h"

#include "elf_check.h"

#ifndef NWB_ELF_CORPUS_DIR
#error "NWB_ELF_CORPUS_DIR must name tests/fuzz/corpus/elf_check"
#endif

#define SEED_ID "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3"

struct file {
    uint8_t *data;
    size_t len;
};

static struct file load(const char *path)
{
    struct file f;

    f.data = (uint8_t *)nwb_test_read_file(path, &f.len);
    if (f.data == NULL) {
        fail_msg("cannot read %s", path);
    }
    return f;
}

static struct file seed(const char *name)
{
    char path[1024];

    snprintf(path, sizeof(path), "%s/%s", NWB_ELF_CORPUS_DIR, name);
    return load(path);
}

/* Check @p len bytes of @p data: 0 with @p info, or the reason (NULL when accepted). */
static const char *check(const void *data, size_t len, struct nwb__elf_info *info)
{
    const char *reason = NULL;
    const int err = nwb__elf_check_mem(data, len, info, &reason);

    if (err == 0) {
        assert_null(reason);
        return NULL;
    }
    assert_int_equal(err, NWB_EPROTO);
    assert_non_null(reason);
    assert_null(strchr(reason, '\n'));
    return reason;
}

static void expect_refused(const void *data, size_t len, const char *want)
{
    struct nwb__elf_info info;
    const char *reason = check(data, len, &info);

    if (reason == NULL || strcmp(reason, want) != 0) {
        fail_msg("%zu bytes: wanted \"%s\", got \"%s\"", len, want,
                 reason != NULL ? reason : "(accepted)");
    }
    assert_int_equal(info.build_id_len, 0); /* nothing half-filled */
}

/* 1 when readelf lists a .debug_info section in @p path (the independent opinion). */
static int readelf_has_debug_info(const char *path)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "readelf -S -W '%s' 2>/dev/null | grep -q ' \\.debug_info '", path);
    return system(cmd) == 0;
}

struct copies {
    char dir[512];
    char self[600];
    char stripped[600];
    char debug[600];
};

static int setup(void **state)
{
    struct copies *c = calloc(1, sizeof(*c));
    char cmd[4096];
    ssize_t n;

    if (c == NULL || nwb_test_tmpdir("elfcheck", c->dir, sizeof(c->dir)) != 0) {
        free(c);
        return -1;
    }
    n = readlink("/proc/self/exe", c->self, sizeof(c->self) - 1);
    if (n <= 0) {
        free(c);
        return -1;
    }
    c->self[n] = '\0';
    snprintf(c->stripped, sizeof(c->stripped), "%s/stripped", c->dir);
    snprintf(c->debug, sizeof(c->debug), "%s/only.debug", c->dir);
    snprintf(cmd, sizeof(cmd),
             "objcopy --strip-all '%s' '%s' && objcopy --only-keep-debug '%s' '%s'", c->self,
             c->stripped, c->self, c->debug);
    if (system(cmd) != 0) {
        fprintf(stderr, "objcopy failed (binutils is in the test packages)\n");
        free(c);
        return -1;
    }
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    struct copies *c = *state;

    nwb_test_rmtree(c->dir);
    free(c);
    return 0;
}

static void test_real_files_have_our_build_id(void **state)
{
    const struct copies *c = *state;
    const char *paths[] = {c->self, c->stripped, c->debug};
    char want[128];
    const int want_debug[] = {readelf_has_debug_info(c->self), 0, readelf_has_debug_info(c->debug)};

    nwb_build_id(want, sizeof(want));
    assert_int_equal(strlen(want), 40); /* ld's sha1 build id, Debian's default */
    assert_true(want_debug[0]);         /* every configuration builds with -g */
    for (size_t i = 0; i < 3; i++) {
        struct file f = load(paths[i]);
        struct nwb__elf_info info;
        const char *reason = check(f.data, f.len, &info);
        struct stat st;
        int fd;

        if (reason != NULL) {
            fail_msg("%s refused: %s", paths[i], reason);
        }
        assert_string_equal(info.build_id_hex, want);
        assert_int_equal(info.build_id_len, 20);
        assert_int_equal(info.has_debug_info, want_debug[i]);
        assert_true(info.sections > 0);
        /* The same through a file descriptor (what the server uses). */
        fd = open(paths[i], O_RDONLY);
        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        memset(&info, 0, sizeof(info));
        assert_int_equal(nwb__elf_check_fd(fd, (uint64_t)st.st_size, &info, &reason), 0);
        assert_string_equal(info.build_id_hex, want);
        close(fd);
        free(f.data);
    }
}

static void test_tiny_seeds(void **state)
{
    static const struct {
        const char *name;
        int debug;
        unsigned sections;
    } seeds[] = {
        {"tiny_note_section.elf", 0, 3},
        {"tiny_debug_info.elf", 1, 4},
        {"tiny_pt_note.elf", 0, 0},
        {"tiny_xnum.elf", 0, 3},
    };

    (void)state;
    for (size_t i = 0; i < NWB_ARRAY_SIZE(seeds); i++) {
        struct file f = seed(seeds[i].name);
        struct nwb__elf_info info;
        const char *reason = check(f.data, f.len, &info);

        if (reason != NULL) {
            fail_msg("%s refused: %s", seeds[i].name, reason);
        }
        assert_string_equal(info.build_id_hex, SEED_ID);
        assert_int_equal(info.has_debug_info, seeds[i].debug);
        assert_int_equal(info.sections, seeds[i].sections);
        free(f.data);
    }
}

static void test_hostile_seeds(void **state)
{
    static const struct {
        const char *name, *reason;
    } seeds[] = {
        {"bad_not_elf.txt", "not an ELF file"},
        {"bad_truncated_header.elf", "truncated ELF header"},
        {"bad_truncated_note.elf", "truncated note"},
        {"bad_name_outside.elf", "section name outside .shstrtab"},
        {"bad_no_build_id.elf", "no GNU build id"},
    };

    (void)state;
    for (size_t i = 0; i < NWB_ARRAY_SIZE(seeds); i++) {
        struct file f = seed(seeds[i].name);

        expect_refused(f.data, f.len, seeds[i].reason);
        free(f.data);
    }
}

static void test_truncated_at_every_structure(void **state)
{
    const struct copies *c = *state;
    struct file f = load(c->stripped);
    const uint64_t shoff = nwb_le64_load(f.data + 40);
    struct nwb__elf_info info;

    expect_refused(f.data, 0, "not an ELF file");
    expect_refused(f.data, 3, "not an ELF file");
    expect_refused(f.data, 4, "truncated ELF header");
    expect_refused(f.data, 63, "truncated ELF header");
    expect_refused(f.data, f.len - 1, "truncated section headers");
    expect_refused(f.data, (size_t)shoff + 1, "truncated section headers");
    expect_refused(f.data, (size_t)shoff, "truncated section headers");
    /* Cut inside the sections' bytes: the header table is gone first (it is at the end). */
    for (size_t cut = 64; cut < f.len; cut += f.len / 7) {
        assert_non_null(check(f.data, cut, &info));
    }
    /* Whole: accepted (the edits above never touched the bytes). */
    assert_null(check(f.data, f.len, &info));
    free(f.data);
}

static void test_hostile_headers(void **state)
{
    const struct copies *c = *state;
    struct file f = load(c->stripped);
    uint8_t *d = f.data;
    const uint64_t shoff = nwb_le64_load(d + 40);
    const uint16_t shnum = nwb_le16_load(d + 60);
    const uint16_t shstrndx = nwb_le16_load(d + 62);
    struct nwb__elf_info info;

    memcpy(d,
           "\x7f"
           "ELG",
           4);
    expect_refused(d, f.len, "not an ELF file");
    memcpy(d,
           "\x7f"
           "ELF",
           4);
    d[4] = 1;
    expect_refused(d, f.len, "not a 64-bit ELF file");
    d[4] = 2;
    d[5] = 2;
    expect_refused(d, f.len, "not a little-endian ELF file");
    d[5] = 1;
    d[6] = 0;
    expect_refused(d, f.len, "unsupported ELF version");
    d[6] = 1;

    /* e_shnum huge: the table would run past the end. */
    nwb_le16_store(d + 60, 0xffff);
    expect_refused(d, f.len, "truncated section headers");
    nwb_le16_store(d + 60, shnum);
    /* The section header table offset past the end, or wrapping. */
    nwb_le64_store(d + 40, f.len);
    expect_refused(d, f.len, "truncated section headers");
    nwb_le64_store(d + 40, UINT64_MAX - 8);
    expect_refused(d, f.len, "truncated section headers");
    nwb_le64_store(d + 40, shoff);
    nwb_le16_store(d + 58, 40);
    expect_refused(d, f.len, "bad section header size");
    nwb_le16_store(d + 58, 64);
    nwb_le16_store(d + 62, shnum);
    expect_refused(d, f.len, "bad .shstrtab index");
    nwb_le16_store(d + 62, shstrndx);
    assert_null(check(d, f.len, &info));
    free(f.data);
}

static void test_section_count_edge(void **state)
{
    /* Extended numbering: the count is section 0's sh_size. */
    struct file f = seed("tiny_xnum.elf");
    const uint64_t shoff = nwb_le64_load(f.data + 40);
    uint8_t *sh0_size = f.data + shoff + 32;
    struct nwb__elf_info info;

    (void)state;
    nwb_le64_store(sh0_size, NWB__ELF_SECTIONS_MAX + 1ull);
    expect_refused(f.data, f.len, "too many sections");
    nwb_le64_store(sh0_size, UINT64_MAX);
    expect_refused(f.data, f.len, "too many sections");
    /* At the bound: counted, then the table does not fit this file. */
    nwb_le64_store(sh0_size, NWB__ELF_SECTIONS_MAX);
    expect_refused(f.data, f.len, "truncated section headers");
    nwb_le64_store(sh0_size, 3);
    assert_null(check(f.data, f.len, &info));
    free(f.data);
}

static void test_build_id_note_bounds(void **state)
{
    /* tiny_note_section.elf: the note is at 64 (namesz, descsz, type, "GNU\0", 20 bytes). */
    struct file f = seed("tiny_note_section.elf");
    struct nwb__elf_info info;

    (void)state;
    nwb_le32_store(f.data + 68, 21); /* one byte past the note section */
    expect_refused(f.data, f.len, "truncated note");
    nwb_le32_store(f.data + 68, 0xffffffffu);
    expect_refused(f.data, f.len, "truncated note");
    nwb_le32_store(f.data + 68, 1); /* below NWB__ELF_BUILD_ID_MIN */
    expect_refused(f.data, f.len, "bad GNU build id length");
    nwb_le32_store(f.data + 68, NWB__ELF_BUILD_ID_MIN);
    assert_null(check(f.data, f.len, &info));
    assert_string_equal(info.build_id_hex, "a0a1");
    nwb_le32_store(f.data + 64, 0xfffffff0u); /* namesz */
    expect_refused(f.data, f.len, "truncated note");
    free(f.data);

    /* The PT_NOTE segment's bounds are checked too. */
    f = seed("tiny_pt_note.elf");
    {
        const uint64_t phoff = nwb_le64_load(f.data + 32);

        nwb_le64_store(f.data + phoff + 32, f.len); /* p_filesz */
        expect_refused(f.data, f.len, "note segment outside the file");
        nwb_le64_store(f.data + phoff + 8, UINT64_MAX); /* p_offset */
        expect_refused(f.data, f.len, "note segment outside the file");
    }
    free(f.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_files_have_our_build_id),
        cmocka_unit_test(test_tiny_seeds),
        cmocka_unit_test(test_hostile_seeds),
        cmocka_unit_test(test_truncated_at_every_structure),
        cmocka_unit_test(test_hostile_headers),
        cmocka_unit_test(test_section_count_edge),
        cmocka_unit_test(test_build_id_note_bounds),
    };

    return cmocka_run_group_tests_name("server.elf_check", tests, setup, teardown);
}
