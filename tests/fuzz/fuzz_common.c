#include "fuzz_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topology.h"

void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

#define MAX_SUFFIXES 8
static struct {
    char suffix[16];
    char path[256];
} scratch[MAX_SUFFIXES];

static void remove_scratch(void)
{
    for (int i = 0; i < MAX_SUFFIXES; i++)
        if (scratch[i].path[0])
            unlink(scratch[i].path);
}

const char *fuzz_write_file(const char *suffix, const uint8_t *data, size_t size)
{
    int slot = -1;
    for (int i = 0; i < MAX_SUFFIXES && slot < 0; i++)
        if (scratch[i].path[0] && strcmp(scratch[i].suffix, suffix) == 0)
            slot = i;
    if (slot < 0) {
        for (int i = 0; i < MAX_SUFFIXES && slot < 0; i++)
            if (!scratch[i].path[0])
                slot = i;
        if (slot < 0)
            fuzz_fail("too many scratch suffixes");
        const char *dir = getenv("TMPDIR");
        if (!dir || !*dir)
            dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(scratch[slot].suffix, sizeof scratch[slot].suffix, "%s", suffix);
        snprintf(scratch[slot].path, sizeof scratch[slot].path, "%s/tsim-fuzz-%ld-%d%s", dir, (long)getpid(), slot,
                 suffix);
        static int registered;
        if (!registered++)
            atexit(remove_scratch);
    }
    FILE *fp = fopen(scratch[slot].path, "wb");
    if (!fp)
        fuzz_fail("cannot write %s", scratch[slot].path);
    if (size && fwrite(data, 1, size, fp) != size)
        fuzz_fail("short write to %s", scratch[slot].path);
    if (fclose(fp) != 0)
        fuzz_fail("cannot close %s", scratch[slot].path);
    return scratch[slot].path;
}

static void check_error(const char *path, int rc, const tsim_error *err, const char *what)
{
    if (rc != TSIM_E_INPUT)
        fuzz_fail("%s returned %d (expected TSIM_E_INPUT for bad input): %s", what, rc, err->msg);
    if (strncmp(err->msg, path, strlen(path)) != 0)
        fuzz_fail("%s error does not name the file: %s", what, err->msg);
}

void fuzz_read_trace(const char *path, const tsim_read_options *opts)
{
    tsim_reader *r = NULL;
    tsim_error err = {0};
    int rc = tsim_reader_open(&r, path, opts, &err);
    if (rc) {
        check_error(path, rc, &err, "tsim_reader_open");
        if (r)
            fuzz_fail("tsim_reader_open failed but returned a reader");
        return;
    }
    const tsim_trace_header *h = tsim_reader_header(r);
    if (h->experts < 1 || h->experts > TSIM_MAX_EXPERTS || h->ep < 1 || h->ep > TSIM_MAX_RANKS ||
        h->experts % h->ep != 0 || h->ranks_per_node < 1)
        fuzz_fail("header out of limits: E=%d R=%d rpn=%d", h->experts, h->ep, h->ranks_per_node);
    if (h->home) {
        for (int e = 0; e < h->experts; e++)
            if (h->home[e] < 0 || h->home[e] >= h->ep)
                fuzz_fail("home[%d] = %d outside 0..%d", e, h->home[e], h->ep - 1);
    }
    tsim_trace_header copy;
    if (tsim_trace_header_copy(&copy, h, &err) == TSIM_OK)
        tsim_trace_header_free(&copy);
    while (tsim_reader_take_warning(r))
        ;
    int64_t n = 0;
    for (;;) {
        const tsim_record *rec = NULL;
        rc = tsim_reader_next(r, &rec, &err);
        while (tsim_reader_take_warning(r))
            ;
        if (rc == 0)
            break;
        if (rc != 1) {
            check_error(path, rc, &err, "tsim_reader_next");
            /* errors stick: the next call says the same */
            tsim_error again = {0};
            if (tsim_reader_next(r, &rec, &again) != rc)
                fuzz_fail("reader error did not stick");
            break;
        }
        if (rec->ranks != h->ep || rec->experts != h->experts)
            fuzz_fail("record %lld is %dx%d, header says %dx%d", (long long)n, rec->ranks, rec->experts, h->ep,
                      h->experts);
        if (rec->index != n)
            fuzz_fail("record index %lld, expected %lld", (long long)rec->index, (long long)n);
        if (rec->microbatch < 0 || rec->layer < 0)
            fuzz_fail("negative microbatch or layer");
        size_t cells = (size_t)rec->ranks * (size_t)rec->experts;
        for (size_t i = 0; i < cells; i++)
            if (rec->counts[i] < 0 || rec->counts[i] > TSIM_MAX_COUNT)
                fuzz_fail("record %lld: count %lld outside 0..2^40", (long long)n, (long long)rec->counts[i]);
        if (strnlen(rec->tag, TSIM_TAG_MAX) == TSIM_TAG_MAX)
            fuzz_fail("record tag not terminated");
        n++;
        if (tsim_reader_count(r) != n)
            fuzz_fail("tsim_reader_count %lld, expected %lld", (long long)tsim_reader_count(r), (long long)n);
    }
    int64_t done, total;
    tsim_reader_progress(r, &done, &total);
    (void)tsim_reader_bytes(r);
    (void)tsim_reader_source_ep(r);
    (void)tsim_reader_rebucketed(r);
    tsim_reader_close(r);
}
