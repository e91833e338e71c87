/* libFuzzer target: the Megatron router trace reader. The input is a
 * directory: its first byte picks 1 to 3 ranks, and the rest is split into
 * router_trace_rank{N}.jsonl files at each 0x1e byte (the ASCII record
 * separator; missing parts are empty files). Each directory is read with the
 * experts inferred, with --experts 8, for --block mtp, and rebucketed. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"

#define MAX_RANKS 3

static char dir[256];

static void remove_dir(void)
{
    char path[300];
    for (int i = 0; i < MAX_RANKS; i++) {
        snprintf(path, sizeof path, "%s/router_trace_rank%d.jsonl", dir, i);
        unlink(path);
    }
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !*tmp)
            tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(dir, sizeof dir, "%s/tsim-fuzz-megatron-%ld", tmp, (long)getpid());
        if (mkdir(dir, 0755) != 0)
            fuzz_fail("cannot make %s", dir);
        atexit(remove_dir);
    }
    int ranks = size ? 1 + data[0] % MAX_RANKS : 1;
    const uint8_t *p = size ? data + 1 : data, *end = data + size;
    char path[300];
    for (int i = 0; i < MAX_RANKS; i++) {
        snprintf(path, sizeof path, "%s/router_trace_rank%d.jsonl", dir, i);
        unlink(path);
        if (i >= ranks)
            continue;
        const uint8_t *sep = i + 1 < ranks ? memchr(p, 0x1e, (size_t)(end - p)) : NULL;
        const uint8_t *stop = sep ? sep : (i + 1 < ranks ? p : end);
        FILE *f = fopen(path, "wb");
        if (!f)
            fuzz_fail("cannot write %s", path);
        if (stop > p && fwrite(p, 1, (size_t)(stop - p), f) != (size_t)(stop - p))
            fuzz_fail("short write to %s", path);
        fclose(f);
        p = sep ? sep + 1 : stop;
    }
    fuzz_read_trace(dir, &(tsim_read_options){0});
    fuzz_read_trace(dir, &(tsim_read_options){.experts = 8});
    fuzz_read_trace(dir, &(tsim_read_options){.block = "mtp"});
    fuzz_read_trace(dir, &(tsim_read_options){.ep = 1, .ranks_per_node = 2});
    return 0;
}
