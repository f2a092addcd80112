/* SPDX-License-Identifier: MIT */
/*
 * test_format_control.c - compiled, never linked: the control for
 * test_format_mismatch.c. Correct calls of every macro must compile cleanly
 * with the same flags, so a failure there means the format check fired.
 */
#include <stddef.h>

#include "nwb/log.h"

void nwb_test_format_control(const char *dynamic);

void nwb_test_format_control(const char *dynamic)
{
    NWB_LOGGER_INFO("%d", 1);
    NWB_LOGGER_INFO("%s %zu %f %p", "str", (size_t)2, 3.0, (void *)0);
    NWB_LOGGER_INFO("raw %d %s");
    NWB_LOGGER_INFO(dynamic);
    NWB_LOGGER_WARNING("%lld", 4LL);
    NWB_LOGGER_ERROR("%c", 'c');
    NWB_LOGGER_ESSENTIAL_INFO("%u", 5u);
    NWB_LOGGER_ESSENTIAL_WARNING("raw");
    NWB_LOGGER_ESSENTIAL_ERROR("%Lf", 1.0L);
}
