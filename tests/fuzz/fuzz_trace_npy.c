/* libFuzzer target: the NumPy .npy reader (header parser and the dense array
 * reader behind it). Each input is read as stored (a [T,L,R,E] array needs
 * no options), at EP 2 (totals need an EP size) and rebucketed to EP 1. */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file(".npy", data, size);
    fuzz_read_trace(path, &(tsim_read_options){0});
    fuzz_read_trace(path, &(tsim_read_options){.ep = 2});
    fuzz_read_trace(path, &(tsim_read_options){.ep = 1, .ranks_per_node = 2});
    return 0;
}
