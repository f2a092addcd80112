/* SPDX-License-Identifier: MIT */
/*
 * fuzz_crash_ingest_caps.h - the small crash caps of the crash-ingest fuzz target
 * (fuzz_crash_ingest.c), so the fuzzer reaches every limit quickly; the seed generator
 * (tests/crash/gen_crash_ingest_corpus.c) checks its seeds against the same values.
 */
#ifndef NWB_FUZZ_CRASH_INGEST_CAPS_H
#define NWB_FUZZ_CRASH_INGEST_CAPS_H

#include "crash_int.h"

#define NWB_FUZZ_CRASH_CAPS                                                                        \
    {                                                                                              \
        .max_archive_bytes = 1u << 20, .max_entries = 64u, .max_path_bytes = 128u,                 \
        .max_path_depth = 6u, .max_entry_bytes = 256u * 1024u, .max_total_bytes = 1u << 20,        \
        .max_ratio = 50u, .ratio_floor_bytes = 64u * 1024u, .max_queue = 4u,                       \
    }

#endif /* NWB_FUZZ_CRASH_INGEST_CAPS_H */
