/* SPDX-License-Identifier: MIT */
/*
 * test_format_mismatch.c - compiled, never linked: a format that does not
 * match its argument. core.cmake expects this compile to FAIL with a format
 * diagnostic under the project's warning flags (and with NWB_FINAL, where
 * the call compiles out but must still be type-checked).
 */
#include "nwb/log.h"

void nwb_test_format_mismatch(void);

void nwb_test_format_mismatch(void)
{
    NWB_LOGGER_INFO("%d", "str");
}
