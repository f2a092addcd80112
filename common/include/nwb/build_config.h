/* SPDX-License-Identifier: MIT */
/*
 * nwb/build_config.h - the compile-time build facts every nwb header agrees on: the telemetry
 * level (NWB_TELEMETRY_LEVEL: NWB_TELEMETRY_OFF, _STATS or _FULL) and whether this is a final
 * build (NWB_FINAL). CMake sets both on the exported targets and nwb-client.pc carries them;
 * a value outside the documented set is an #error here, never a silent guess.
 */
#ifndef NWB_BUILD_CONFIG_H
#define NWB_BUILD_CONFIG_H

/* NWB_TELEMETRY=OFF|STATS|FULL (CMake) becomes NWB_TELEMETRY_LEVEL=0|1|2. */
#define NWB_TELEMETRY_OFF   0
#define NWB_TELEMETRY_STATS 1
#define NWB_TELEMETRY_FULL  2

#ifndef NWB_TELEMETRY_LEVEL
#define NWB_TELEMETRY_LEVEL NWB_TELEMETRY_FULL
#endif
#if NWB_TELEMETRY_LEVEL != NWB_TELEMETRY_OFF && NWB_TELEMETRY_LEVEL != NWB_TELEMETRY_STATS &&  \
    NWB_TELEMETRY_LEVEL != NWB_TELEMETRY_FULL
#error "NWB_TELEMETRY_LEVEL must be 0 (OFF), 1 (STATS) or 2 (FULL)"
#endif

#endif /* NWB_BUILD_CONFIG_H */
