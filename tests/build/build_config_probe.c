/* SPDX-License-Identifier: MIT */
/*
 * build_config_probe.c - compiled alone (syntax only, never linked) by the build.header_* tests
 * with one -DNWB_FINAL / -DNWB_TELEMETRY_LEVEL each (tests/build/CMakeLists.txt). An accepted
 * value must give NWB_IS_FINAL == NWB_PROBE_EXPECT_FINAL and NWB_TELEMETRY_LEVEL ==
 * NWB_PROBE_EXPECT_LEVEL; any other value must stop at nwb/build_config.h's #error.
 */
#include "nwb/build_config.h"

#ifdef NWB_PROBE_EXPECT_FINAL
_Static_assert(NWB_IS_FINAL == NWB_PROBE_EXPECT_FINAL, "NWB_IS_FINAL is not the expected value");
#endif
#ifdef NWB_PROBE_EXPECT_LEVEL
_Static_assert(NWB_TELEMETRY_LEVEL == NWB_PROBE_EXPECT_LEVEL,
               "NWB_TELEMETRY_LEVEL is not the expected value");
#endif

/* ISO C forbids an empty translation unit. */
typedef int nwb_build_config_probe_t;
