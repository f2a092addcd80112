/* SPDX-License-Identifier: MIT */
/*
 * fuzz_run_state.c - fuzz target for reading a run's .nwb-state as the ClickHouse forwarder
 * does (nwb__run_state_durable_end(), server/src/run_store.c). The first 8 bytes are
 * log.txt's size (little-endian), the rest the state file's bytes: the durable end is never
 * past the size, and a missing or damaged state gives the size itself.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t file_size = 0;
    uint64_t end;

    if (size < 8) {
        return 0;
    }
    for (int i = 7; i >= 0; i--) {
        file_size = file_size << 8 | data[i];
    }
    end = nwb__run_state_durable_end(data + 8, size - 8, file_size);
    if (end > file_size || (size - 8 != NWB__RUN_STATE_SIZE && end != file_size)) {
        fprintf(stderr, "fuzz_run_state: durable end %llu for a %llu-byte log\n",
                (unsigned long long)end, (unsigned long long)file_size);
        abort();
    }
    return 0;
}
