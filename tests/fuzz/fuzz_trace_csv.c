/* libFuzzer target: the CSV importer (.csv, and .csv.gz when the input starts
 * with the gzip magic). CSV needs an EP size: each input is read at EP 4 with
 * every dataset, and at EP 1 keeping only dataset "a". */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bool gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    const char *path = fuzz_write_file(gz ? ".csv.gz" : ".csv", data, size);
    fuzz_read_trace(path, &(tsim_read_options){.ep = 4});
    fuzz_read_trace(path, &(tsim_read_options){.ep = 1, .ranks_per_node = 2, .dataset = "a"});
    return 0;
}
