/* SPDX-License-Identifier: MIT */
/* test_logger.c - logger registration guards and macro dispatch (raw vs formatted). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "nwb/error.h"
#include "nwb/log.h"

struct capture {
    int calls;
    int raw_calls;
    int flushes;
    char last[256];
    nwb_log_site_t *site;
};

static void cap_write(void *self, nwb_log_site_t *site, va_list ap)
{
    struct capture *c = self;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    vsnprintf(c->last, sizeof(c->last), site->fmt, ap);
#pragma GCC diagnostic pop
    c->calls++;
    c->site = site;
}

static void cap_write_raw(void *self, nwb_log_site_t *site, const char *msg, size_t len)
{
    struct capture *c = self;

    snprintf(c->last, sizeof(c->last), "%.*s", (int)len, msg);
    c->raw_calls++;
    c->site = site;
}

static void cap_flush(void *self)
{
    ((struct capture *)self)->flushes++;
}

/* The C macros' non-variadic entry: counted with the va_list one (both are formatted calls). */
static void cap_write_args(void *self, nwb_log_site_t *site, uint64_t types,
                           const nwb_log_arg_t *args, unsigned nargs)
{
    struct capture *c = self;

    assert_true(nwb_log_format_args(c->last, sizeof(c->last), site->fmt, types, args, nargs) >= 0);
    c->calls++;
    c->site = site;
}

static const nwb_logger_ops_t cap_ops = {cap_write, cap_write_raw, cap_flush, cap_write_args};

static void test_logger_register_and_unregister_restore_previous(void **state)
{
    struct capture a = {0}, b = {0};
    nwb_logger_t la = {&cap_ops, &a}, lb = {&cap_ops, &b};
    nwb_logger_guard_t ga, gb;

    (void)state;
    assert_null(nwb_logger_current());
    assert_int_equal(nwb_logger_register(&la, &ga), 0);
    assert_ptr_equal(nwb_logger_current(), &la);
    assert_int_equal(nwb_logger_register(&lb, &gb), 0);
    assert_ptr_equal(nwb_logger_current(), &lb);
    /* out of order: refused, nothing changes */
    assert_int_equal(nwb_logger_unregister(&ga), NWB_ECONFIG);
    assert_ptr_equal(nwb_logger_current(), &lb);
    assert_int_equal(nwb_logger_unregister(&gb), 0);
    assert_ptr_equal(nwb_logger_current(), &la);
    assert_int_equal(nwb_logger_unregister(&gb), 0); /* released twice: no-op */
    assert_int_equal(nwb_logger_unregister(&ga), 0);
    assert_null(nwb_logger_current());
    assert_int_equal(nwb_logger_register(NULL, &ga), NWB_ECONFIG);
}

static void test_logger_one_argument_is_raw_and_more_are_formatted(void **state)
{
    struct capture c = {0};
    nwb_logger_t l = {&cap_ops, &c};
    nwb_logger_guard_t g;
    const char *dynamic = "100% %s %d raw";

    (void)state;
    assert_int_equal(nwb_logger_register(&l, &g), 0);
    NWB_LOGGER_ESSENTIAL_INFO("50%% literal %d");
    assert_int_equal(c.raw_calls, 1);
    assert_string_equal(c.last, "50%% literal %d");
    assert_true(c.site->flags & NWB_LOG_SITE_RAW);
    NWB_LOGGER_ESSENTIAL_WARNING(dynamic);
    assert_string_equal(c.last, "100% %s %d raw");
    NWB_LOGGER_ESSENTIAL_ERROR("x=%d y=%s", 7, "why");
    assert_int_equal(c.calls, 1);
    assert_string_equal(c.last, "x=7 y=why");
    assert_int_equal(c.site->level, NWB_LOG_ERROR);
    assert_non_null(strstr(c.site->file, "test_logger.c"));
    /* Plain calls reach the logger except in fin, where they compile out. */
    NWB_LOGGER_INFO("plain %d", 1);
    NWB_LOGGER_WARNING("plain raw");
#if NWB_IS_FINAL
    assert_int_equal(c.calls, 1);
    assert_int_equal(c.raw_calls, 2);
#else
    assert_int_equal(c.calls, 2);
    assert_int_equal(c.raw_calls, 3);
    assert_string_equal(c.last, "plain raw");
#endif
    NWB_LOGGER_ESSENTIAL_INFO("essential %u", 3u);
    assert_true(c.site->flags & NWB_LOG_SITE_ESSENTIAL);
    assert_string_equal(c.last, "essential 3");
    nwb_log_flush();
    assert_int_equal(c.flushes, 1);
    assert_int_equal(nwb_logger_unregister(&g), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logger_register_and_unregister_restore_previous),
        cmocka_unit_test(test_logger_one_argument_is_raw_and_more_are_formatted),
    };

    return cmocka_run_group_tests_name("common.logger", tests, NULL, NULL);
}
