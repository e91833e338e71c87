/* libFuzzer target: the safetensors reader (header length, the JSON header
 * and its offsets, then the tensor's data). Each input is read for the
 * default tensor "counts" as stored and at EP 2, and for a tensor "w". */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file(".safetensors", data, size);
    fuzz_read_trace(path, &(tsim_read_options){0});
    fuzz_read_trace(path, &(tsim_read_options){.ep = 2});
    fuzz_read_trace(path, &(tsim_read_options){.ep = 1, .tensor = "w"});
    return 0;
}
