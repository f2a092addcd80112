/* SPDX-License-Identifier: MIT */
/*
 * test_run_state_end.c - how much of a log.txt the forwarder may send, by the run's
 * .nwb-state (nwb__run_state_durable_end(), server/src/run_store.c), for each seed of the
 * fuzz corpus (tests/fuzz/corpus/run_state/: 8 bytes of log size, then the state bytes).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "server_int.h"
#include "test_support.h"

static uint64_t end_of(const char *seed)
{
    char path[1024];
    size_t len = 0;
    unsigned char *b;
    uint64_t size = 0, end;

    snprintf(path, sizeof path, "%s/tests/fuzz/corpus/run_state/%s", NWB_TEST_SOURCE_DIR, seed);
    b = (unsigned char *)nwb_test_read_file(path, &len);
    assert_non_null(b);
    assert_true(len >= 8);
    for (int i = 7; i >= 0; i--) {
        size = size << 8 | b[i];
    }
    end = nwb__run_state_durable_end(b + 8, len - 8, size);
    free(b);
    return end;
}

static void test_run_state_end_each_case(void **state)
{
    (void)state;
    assert_true(end_of("no_state") == 1000);         /* an older run: all of it */
    assert_true(end_of("landed") == 1000);           /* the last batch is all there */
    assert_true(end_of("landed_then_more") == 1000); /* bytes of a batch not yet announced */
    assert_true(end_of("writing") == 900);           /* being written: up to its start */
    assert_true(end_of("piece_not_last") == 900);    /* a middle piece of a large batch */
    assert_true(end_of("damaged_checksum") == 1000); /* damaged: the file as it is */
    assert_true(end_of("short_state") == 1000);
    assert_true(end_of("not_pending") == 1000);
    assert_true(end_of("start_past_size") == 100); /* never past the file */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_state_end_each_case),
    };

    return cmocka_run_group_tests_name("forward.run_state_end", tests, NULL, NULL);
}
