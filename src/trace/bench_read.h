/* Trace read throughput benchmark (issue: JSONL read >= 50 MB/s, flat RSS). */
#ifndef TSIM_BENCH_READ_H
#define TSIM_BENCH_READ_H

#include <stdint.h>
#include <stdio.h>

#include "error.h"

typedef struct {
    int64_t records;
    int64_t bytes;          /* uncompressed bytes parsed */
    int64_t file_bytes;     /* bytes on disk */
    double seconds;
    double mb_per_s;        /* uncompressed MB (1e6 bytes) per second */
    double records_per_s;
    long peak_rss_kb;       /* getrusage ru_maxrss after the run */
} tsim_bench_read_result;

/* Reads every record of path once, timing it. */
int tsim_bench_read(const char *path, tsim_bench_read_result *out, tsim_error *err);

#endif
