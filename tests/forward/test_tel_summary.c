/* SPDX-License-Identifier: MIT */
/*
 * test_tel_summary.c - the nwb_runs telemetry summary read from telemetry.json
 * (server/src/forward/tel_summary.c): the top-level "frames" object's count, p50Ms and p99Ms;
 * a "frames" inside a string or a nested object is never taken; a missing key is a one-line
 * reason; the read bound NWB__FWD_TEL_JSON_READ_MAX at its edge (the last digit's delimiter
 * inside the bound: found; one byte later: not).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forward/tel_summary.h"
#include "nwb/error.h"
#include "nwb/file_io.h"
#include "test_support.h"

static void test_tel_summary_top_level_frames_only(void **state)
{
    static const char doc[] =
        "{\"schema\":1,\"run\":{\"program\":\"g\\\"frames\\\":{\\\"count\\\":9\",\"frames\":"
        "{\"count\":5,\"p50Ms\":1,\"p99Ms\":2}},\"events\":{\"perfFrame\":240},\n"
        "\"frames\" : {\"count\": 240, \"meanMs\": 16.7, \"p50Ms\": 16.742010, "
        "\"p99Ms\":1.7484070e1, \"worst\":[{\"count\":1}]}}";
    struct nwb__ch_tel_summary t;
    const char *why = "x";

    (void)state;
    assert_int_equal(nwb__tel_summary_parse(doc, sizeof doc - 1, &t, &why), 0);
    assert_null(why);
    assert_int_equal(t.frames, 240);
    assert_true(t.p50_ms > 16.742009 && t.p50_ms < 16.742011);
    assert_true(t.p99_ms > 17.484069 && t.p99_ms < 17.484071);
}

static void test_tel_summary_missing_keys_say_why(void **state)
{
    static const char none[] = "{\"run\":{\"frames\":{\"count\":1,\"p50Ms\":1,\"p99Ms\":1}}}";
    static const char no_p99[] = "{\"frames\":{\"count\":3,\"p50Ms\":1},\"p99Ms\":2}";
    static const char cut[] = "{\"frames\":{\"count\":3,\"p50Ms\":1,\"p99Ms\":2";
    struct nwb__ch_tel_summary t;
    const char *why = NULL;

    (void)state;
    assert_int_equal(nwb__tel_summary_parse(none, sizeof none - 1, &t, &why), NWB_EPROTO);
    assert_string_equal(why, "no top-level \"frames\" object");
    assert_int_equal(t.frames, 0);
    assert_int_equal(nwb__tel_summary_parse(no_p99, sizeof no_p99 - 1, &t, &why), NWB_EPROTO);
    assert_string_equal(why, "\"frames\" has no \"p99Ms\"");
    assert_int_equal(t.frames, 0);
    /* The last number reaches the end: it may have more digits, so it is not taken. */
    assert_int_equal(nwb__tel_summary_parse(cut, sizeof cut - 1, &t, &why), NWB_EPROTO);
    assert_string_equal(why, "\"frames\" has no \"p99Ms\"");
    assert_int_equal(nwb__tel_summary_parse("", 0, &t, &why), NWB_EPROTO);
}

/* A telemetry.json whose "frames" delimiter after p99Ms sits at byte @p end_at (0-based). */
static int summary_of_file(const char *dir, size_t end_at, struct nwb__ch_tel_summary *t)
{
    static const char head[] = "{\"pad\":\"";
    static const char tail[] = "\",\"frames\":{\"count\":7,\"p50Ms\":3,\"p99Ms\":4}}";
    const size_t pad = end_at - (sizeof head - 1) - (sizeof tail - 1) + 2; /* "}}" after it */
    char path[700];
    char *text = malloc(end_at + 8);
    const char *why = NULL;
    int fd, rc;

    assert_non_null(text);
    memcpy(text, head, sizeof head - 1);
    memset(text + sizeof head - 1, 'x', pad);
    memcpy(text + sizeof head - 1 + pad, tail, sizeof tail - 1);
    assert_int_equal(text[end_at], '}');
    snprintf(path, sizeof path, "%s/telemetry.json", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(nwb_write_all(fd, text, sizeof head - 1 + pad + sizeof tail - 1), 0);
    close(fd);
    free(text);
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    rc = nwb__tel_summary_read(fd, t, &why);
    close(fd);
    return rc;
}

static void test_tel_summary_read_bound_edge(void **state)
{
    char dir[512];
    struct nwb__ch_tel_summary t;
    const char *why = NULL;
    int fd;

    (void)state;
    assert_int_equal(nwb_test_tmpdir("tel-summary", dir, sizeof dir), 0);
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_int_equal(nwb__tel_summary_read(fd, &t, &why), -ENOENT);
    close(fd);
    assert_int_equal(summary_of_file(dir, NWB__FWD_TEL_JSON_READ_MAX - 1, &t), 0);
    assert_int_equal(t.frames, 7);
    assert_int_equal(summary_of_file(dir, NWB__FWD_TEL_JSON_READ_MAX, &t), NWB_EPROTO);
    assert_int_equal(t.frames, 0);
    nwb_test_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tel_summary_top_level_frames_only),
        cmocka_unit_test(test_tel_summary_missing_keys_say_why),
        cmocka_unit_test(test_tel_summary_read_bound_edge),
    };

    return cmocka_run_group_tests_name("forward.tel_summary", tests, NULL, NULL);
}
