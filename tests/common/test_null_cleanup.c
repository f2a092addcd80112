/* SPDX-License-Identifier: MIT */
/*
 * test_null_cleanup.c - every destructor and cleanup in nwb accepts NULL (the style guide's
 * rule; zstd, SQLite): the public ones of each module's header, and the cross-file internal
 * ones of the client and telemetry. Caller-storage cleanups are idempotent too. A crash
 * here is the failure.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "nwb/alloc.h"
#include "nwb/buf.h"
#include "nwb/client.h"
#include "nwb/crash.h"
#include "nwb/log.h"
#include "nwb/namesym.h"
#include "nwb/server.h"
#include "nwb/telemetry.h"

/* Internal declarations (client/src, telemetry/src). */
#include "client_core.h"
#include "client_ring.h"
#include "net_int.h"
#include "tel_int.h"
#include "tel_rec_int.h"

static void test_null_cleanup_common(void **state)
{
    nwb_namesym_builder_t builder;
    nwb_buf_t b = NWB_BUF_INIT(64);

    (void)state;
    nwb_free(NULL);
    nwb_buf_reset(NULL);
    nwb_buf_cleanup(NULL);
    nwb_namesym_builder_cleanup(NULL);
    nwb_namesym_table_destroy(NULL);
    assert_int_equal(nwb_logger_unregister(NULL), 0);

    /* Caller storage: cleanup twice, and the object is usable again after it. */
    nwb_namesym_builder_init(&builder);
    assert_int_equal(nwb_namesym_builder_add(&builder, "name", 4), 0);
    nwb_namesym_builder_cleanup(&builder);
    nwb_namesym_builder_cleanup(&builder);
    assert_int_equal(nwb_namesym_builder_add(&builder, "again", 5), 0);
    nwb_namesym_builder_cleanup(&builder);
    assert_int_equal(nwb_buf_append(&b, "x", 1), 0);
    nwb_buf_cleanup(&b);
    nwb_buf_cleanup(&b);
}

static void test_null_cleanup_client(void **state)
{
    (void)state;
    nwb_client_destroy(NULL);
    nwb_client_startup_failed(NULL);
    assert_int_equal(nwb_client_flush(NULL, 0), 0);
    /* Internal. */
    nwb__worker_stop(NULL);
    nwb__ring_destroy(NULL);
    nwb__server_stop(NULL);
    nwb__spool_destroy(NULL);
    nwb__spool_reader_close(NULL, 0);
    nwb__spool_reader_close(NULL, 1);
}

static void test_null_cleanup_server(void **state)
{
    (void)state;
    assert_int_equal(nwb_server_destroy(NULL), 0);
}

static void test_null_cleanup_telemetry(void **state)
{
    (void)state;
    nwb_tel_recorder_destroy(NULL);
    nwb_tel_uploader_destroy(NULL);
    /* A memory source whose registration failed. */
    nwb_tel_mem_alloc(NULL, 100);
    nwb_tel_mem_free(NULL, 100);
    nwb_tel_mem_set_reserved(NULL, 100);
    /* Internal. */
    nwb__hist_cleanup(NULL);
    nwb__tel_scopes_free(NULL);
    nwb__tel_contrib_destroy(NULL);
    nwb__tel_fg_tables_free(NULL);
    nwb__tel_mem_free_all(NULL);
}

static void test_null_cleanup_crash_without_install(void **state)
{
    (void)state;
    /* Nothing installed, no alternate stack prepared: both are no-ops, and stay so. */
    nwb_crash_uninstall();
    nwb_crash_uninstall();
    nwb_crash_thread_release();
    nwb_crash_thread_release();
    assert_int_equal(nwb_crash_thread_prepare(), 0);
    nwb_crash_thread_release();
    nwb_crash_thread_release();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_null_cleanup_common),
        cmocka_unit_test(test_null_cleanup_client),
        cmocka_unit_test(test_null_cleanup_server),
        cmocka_unit_test(test_null_cleanup_telemetry),
        cmocka_unit_test(test_null_cleanup_crash_without_install),
    };

    return cmocka_run_group_tests_name("common.null_cleanup", tests, NULL, NULL);
}
