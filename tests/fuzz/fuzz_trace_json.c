/* libFuzzer target: the JSON document reader (.json). Each input is read
 * as stored and again rebucketed to EP 2 with one rank per node. */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file(".json", data, size);
    fuzz_read_trace(path, &(tsim_read_options){0});
    fuzz_read_trace(path, &(tsim_read_options){.ep = 2, .ranks_per_node = 1});
    return 0;
}
