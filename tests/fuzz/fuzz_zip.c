/* libFuzzer target: the zip layer and the readers above it. Each input is
 * read as an .npz (the zip layer, array choice, the .npy behind it) with and
 * without --array, and as a .pt (zip layer, unpickler, SGLang layouts). */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_read_trace(fuzz_write_file(".npz", data, size), &(tsim_read_options){.ep = 2});
    fuzz_read_trace(fuzz_write_file(".npz", data, size), &(tsim_read_options){.ep = 1, .array = "counts"});
    fuzz_read_trace(fuzz_write_file(".pt", data, size), &(tsim_read_options){.ep = 2});
    return 0;
}
