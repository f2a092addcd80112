/* SPDX-License-Identifier: MIT */
/* tel_names.c - the report spellings of the telemetry format's kinds and enumerations. */
#include "nwb/telemetry_format.h"

/* The kind table must stay contiguous from 1: as many rows as NWB_TEL_KIND_COUNT, each value
 * within 1..NWB_TEL_KIND_LAST (the switch below refuses duplicates), so every value is used. */
#define XX(sym, val, key) +1
_Static_assert(0 NWB_TEL_KIND_MAP(XX) == NWB_TEL_KIND_COUNT, "kind count drifted from the map");
#undef XX
_Static_assert(NWB_TEL_KIND_COUNT == NWB_TEL_KIND_LAST, "core kinds must be contiguous from 1");
#define XX(sym, val, key)                                                                          \
    _Static_assert((val) >= 1 && (val) <= NWB_TEL_KIND_LAST, "kind " #sym " out of range");
NWB_TEL_KIND_MAP(XX)
#undef XX

const char *nwb_tel_kind_name(unsigned kind)
{
    switch (kind) {
#define XX(sym, val, key)                                                                          \
    case (val):                                                                                    \
        return key;
        NWB_TEL_KIND_MAP(XX)
#undef XX
    default:
        return NULL;
    }
}

const char *nwb_tel_queue_type_name(unsigned t)
{
    static const char *const names[] = {"graphics", "compute", "transfer", "other"};

    return t < NWB_ARRAY_SIZE(names) ? names[t] : "?";
}

const char *nwb_tel_mem_source_name(unsigned s)
{
    static const char *const names[] = {"arena", "heapBacking", "explicitScope"};

    return s < NWB_ARRAY_SIZE(names) ? names[s] : "?";
}

const char *nwb_tel_peak_basis_name(unsigned b)
{
    static const char *const names[] = {"largestArena", "sampledHeap", "scope"};

    return b < NWB_ARRAY_SIZE(names) ? names[b] : "?";
}

const char *nwb_tel_severity_name(unsigned s)
{
    static const char *const names[] = {"info", "warning", "error", "fatal"};

    return s < NWB_ARRAY_SIZE(names) ? names[s] : "?";
}
