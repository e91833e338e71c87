#include "bench_read.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "trace.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int tsim_bench_read(const char *path, tsim_bench_read_result *out, tsim_error *err)
{
    *out = (tsim_bench_read_result){0};
    struct stat st;
    if (stat(path, &st) == 0)
        out->file_bytes = (int64_t)st.st_size;

    /* Opening counts too: for a JSON document it is where the file is read. */
    double t0 = now_seconds();
    tsim_reader *r;
    int rc = tsim_reader_open(&r, path, NULL, err);
    if (rc)
        return rc;
    const tsim_record *rec;
    while ((rc = tsim_reader_next(r, &rec, err)) == 1)
        ;
    double t1 = now_seconds();
    if (rc == 0) {
        out->records = tsim_reader_count(r);
        out->bytes = tsim_reader_bytes(r);
        out->seconds = t1 - t0;
        if (out->seconds > 0) {
            out->mb_per_s = (double)out->bytes / 1e6 / out->seconds;
            out->records_per_s = (double)out->records / out->seconds;
        }
    }
    tsim_reader_close(r);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        out->peak_rss_kb = ru.ru_maxrss;
    return rc;
}
