/* SPDX-License-Identifier: MIT */
/*
 * test_fwd_dirty.c - the forwarder's set of marked runs (server/src/forward/fwd_dirty.h) at
 * its bounds: NWB__FWD_DIRTY_MAX distinct names fit, one more sets the overflow flag (the
 * next pass scans runs/), a name marked twice is held once, a name of NWB__RUN_DIR_MAX bytes
 * fits and one byte more overflows, and clearing empties it for reuse.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward/fwd_dirty.h"

static void test_holds_max_names_then_overflows(void **state)
{
    struct nwb__fwd_dirty *d = calloc(1, sizeof(*d));
    char name[64];

    (void)state;
    assert_non_null(d);
    for (unsigned i = 0; i < NWB__FWD_DIRTY_MAX; i++) {
        snprintf(name, sizeof name, "prog-20261203T170000Z-run%05u", i);
        nwb__fwd_dirty_add(d, name);
        nwb__fwd_dirty_add(d, name); /* twice: held once */
    }
    assert_int_equal(d->count, NWB__FWD_DIRTY_MAX);
    assert_int_equal(d->overflow, 0);
    assert_string_equal(d->name[0], "prog-20261203T170000Z-run00000");
    /* A name already held still fits in a full set. */
    nwb__fwd_dirty_add(d, "prog-20261203T170000Z-run00007");
    assert_int_equal(d->overflow, 0);
    nwb__fwd_dirty_add(d, "prog-20261203T170000Z-one-more");
    assert_int_equal(d->count, NWB__FWD_DIRTY_MAX);
    assert_int_equal(d->overflow, 1);
    nwb__fwd_dirty_clear(d);
    assert_int_equal(d->count, 0);
    assert_int_equal(d->overflow, 0);
    nwb__fwd_dirty_add(d, "prog-20261203T170000Z-run00000");
    assert_int_equal(d->count, 1);
    free(d);
}

static void test_name_length_edge(void **state)
{
    struct nwb__fwd_dirty *d = calloc(1, sizeof(*d));
    char name[NWB__RUN_DIR_MAX + 2];

    (void)state;
    assert_non_null(d);
    memset(name, 'a', NWB__RUN_DIR_MAX);
    name[NWB__RUN_DIR_MAX] = '\0';
    nwb__fwd_dirty_add(d, name);
    assert_int_equal(d->count, 1);
    assert_int_equal(d->overflow, 0);
    assert_string_equal(d->name[0], name);
    name[NWB__RUN_DIR_MAX] = 'a';
    name[NWB__RUN_DIR_MAX + 1] = '\0';
    nwb__fwd_dirty_add(d, name);
    assert_int_equal(d->count, 1);
    assert_int_equal(d->overflow, 1);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_holds_max_names_then_overflows),
        cmocka_unit_test(test_name_length_edge),
    };

    return cmocka_run_group_tests_name("forward.fwd_dirty", tests, NULL, NULL);
}
