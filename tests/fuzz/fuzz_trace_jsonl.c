/* libFuzzer target: the JSON Lines reader (.jsonl, and .jsonl.gz when the
 * input starts with the gzip magic, so corrupt and truncated streams are
 * covered). Each input is read as stored and rebucketed to EP 2. */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bool gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    const char *path = fuzz_write_file(gz ? ".jsonl.gz" : ".jsonl", data, size);
    fuzz_read_trace(path, &(tsim_read_options){0});
    fuzz_read_trace(path, &(tsim_read_options){.ep = 2, .ranks_per_node = 3});
    return 0;
}
