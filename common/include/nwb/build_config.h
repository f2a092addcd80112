/* SPDX-License-Identifier: MIT */
/*
 * nwb/build_config.h - the compile-time build facts every nwb header agrees on: the telemetry
 * level (NWB_TELEMETRY_LEVEL: NWB_TELEMETRY_OFF, _STATS or _FULL) and whether this is a final
 * build (NWB_FINAL, read through NWB_IS_FINAL). CMake sets both on the exported targets and
 * nwb-client.pc carries them; a value outside the documented set is an #error here, never a
 * silent guess.
 */
#ifndef NWB_BUILD_CONFIG_H
#define NWB_BUILD_CONFIG_H

/*
 * Value checks that see through what #if cannot: NWB__BC_ACCEPTS(prefix, v) pastes the
 * expanded v onto prefix and is 1 only when that names one of the NWB__BC_*_<value> markers
 * below. Anything else - an empty definition, 2, ON, yes - pastes to an undefined name, which
 * the selection drops without #if ever evaluating it, so the answer is 0 with no -Wundef noise.
 * A plain `#if NWB_FINAL != 0 && NWB_FINAL != 1` would read -DNWB_FINAL=ON as 0 (not final).
 */
#define NWB__BC_SECOND(a, b, ...)  b
#define NWB__BC_SELECT(...)        NWB__BC_SECOND(__VA_ARGS__)
#define NWB__BC_PASTE(prefix, v)   NWB__BC_SELECT(prefix##v, 0, ~)
#define NWB__BC_ACCEPTS(prefix, v) NWB__BC_PASTE(prefix, v)
#define NWB__BC_FINAL_0            ~, 1
#define NWB__BC_FINAL_1            ~, 1
#define NWB__BC_TELEMETRY_0        ~, 1
#define NWB__BC_TELEMETRY_1        ~, 1
#define NWB__BC_TELEMETRY_2        ~, 1

/* NWB_TELEMETRY=OFF|STATS|FULL (CMake) becomes NWB_TELEMETRY_LEVEL=0|1|2. */
#define NWB_TELEMETRY_OFF   0
#define NWB_TELEMETRY_STATS 1
#define NWB_TELEMETRY_FULL  2

#ifndef NWB_TELEMETRY_LEVEL
#define NWB_TELEMETRY_LEVEL NWB_TELEMETRY_FULL
#endif
#if !NWB__BC_ACCEPTS(NWB__BC_TELEMETRY_, NWB_TELEMETRY_LEVEL)
#error "NWB_TELEMETRY_LEVEL must be 0 (OFF), 1 (STATS) or 2 (FULL), or left undefined (FULL)"
#endif

/*
 * NWB_FINAL: undefined or 0 is not final, 1 is final (ordinary NWB_LOGGER_INFO/WARNING/ERROR
 * compile out). Any other definition, the empty one included, is an error: a game linking a fin
 * build must not quietly get dbg behaviour, nor the reverse. Code tests NWB_IS_FINAL (0 or 1)
 * with #if, never NWB_FINAL with #ifdef.
 */
#if defined(NWB_IS_FINAL)
#error "NWB_IS_FINAL is derived from NWB_FINAL: define NWB_FINAL=0 or 1 instead"
#elif !defined(NWB_FINAL)
#define NWB_IS_FINAL 0
#elif !NWB__BC_ACCEPTS(NWB__BC_FINAL_, NWB_FINAL)
#error "NWB_FINAL must be 0 (not final) or 1 (final), or left undefined (not final)"
#elif NWB_FINAL
#define NWB_IS_FINAL 1
#else
#define NWB_IS_FINAL 0
#endif

#endif /* NWB_BUILD_CONFIG_H */
