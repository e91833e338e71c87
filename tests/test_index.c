/* The trace index (issue 26): seek points land on record starts, blocked
 * gzip members hold whole records, the index round-trips through its file,
 * and a changed trace is detected as stale. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "gen.h"
#include "trace.h"
#include "trace_index.h"

/* Writes a generated trace (EP8, 64 experts, 2000 records: about 3 MiB of
 * text, so a .jsonl.gz has several members) to path. */
static void write_trace(const char *path)
{
    tsim_gen_params p;
    tsim_gen_params_default(&p);
    p.experts = 64;
    p.ep = 8;
    p.tokens = 64;
    p.microbatches = 500;
    p.layers = 4;
    p.hot_fraction = 0.05;
    tsim_gen *g;
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_open(&g, &p, &err), TSIM_OK, "%s", err.msg);
    tsim_trace_header h = {.experts = p.experts, .ep = p.ep, .ranks_per_node = 8, .topk = p.topk};
    tsim_writer *w;
    cr_assert_eq(tsim_writer_open(&w, path, &h, &err), TSIM_OK, "%s", err.msg);
    const tsim_record *rec;
    while (tsim_gen_next(g, &rec, NULL) == 1)
        cr_assert_eq(tsim_writer_write(w, rec, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(tsim_writer_close(w, true, &err), TSIM_OK, "%s", err.msg);
    tsim_gen_close(g);
}

static char *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp);
    fseek(fp, 0, SEEK_END);
    *n = (size_t)ftell(fp);
    rewind(fp);
    char *d = malloc(*n + 1);
    cr_assert_eq(fread(d, 1, *n, fp), *n);
    fclose(fp);
    d[*n] = '\0';
    return d;
}

static void temp_path(char *buf, size_t n, const char *suffix)
{
    snprintf(buf, n, "/tmp/tsim_index_%d_%s", (int)getpid(), suffix);
}

Test(index, plain_blocks_start_at_every_nth_record)
{
    char path[256];
    temp_path(path, sizeof path, "t.jsonl");
    write_trace(path);
    tsim_trace_index ix;
    tsim_error err = {0};
    cr_assert_eq(tsim_index_build(path, 100, &ix, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(ix.records, 2000);
    cr_assert_eq(ix.n_layers, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(ix.layers[i].records, 500);
    cr_assert_eq(ix.n_blocks, 20);
    size_t n;
    char *d = slurp(path, &n);
    for (int64_t b = 1; b < ix.n_blocks; b++) {
        cr_assert_eq(ix.blocks[b].first_record, 100 * b);
        /* Record r is microbatch r / 4, layer r % 4: the seek point starts it. */
        char want[64];
        snprintf(want, sizeof want, "{\"microbatch\":%lld,\"layer\":%lld,", (long long)(ix.blocks[b].first_record / 4),
                 (long long)(ix.blocks[b].first_record % 4));
        cr_assert(strncmp(d + ix.blocks[b].offset, want, strlen(want)) == 0, "block %lld", (long long)b);
        cr_assert_eq(d[ix.blocks[b].offset - 1], '\n');
    }
    free(d);
    cr_assert_eq(tsim_index_check(&ix, path, &err), TSIM_OK, "%s", err.msg);
    tsim_index_free(&ix);
    unlink(path);
}

Test(index, gzip_members_hold_whole_records_and_decode_alone)
{
    char path[256];
    temp_path(path, sizeof path, "t.jsonl.gz");
    write_trace(path);
    tsim_trace_index ix;
    tsim_error err = {0};
    cr_assert_eq(tsim_index_build(path, TSIM_INDEX_DEFAULT_EVERY, &ix, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(ix.records, 2000);
    cr_assert_gt(ix.n_blocks, 1, "a 3 MiB trace is written as more than one gzip member");
    size_t n;
    char *d = slurp(path, &n);
    int64_t records = 0;
    for (int64_t b = 0; b < ix.n_blocks; b++) {
        /* Each member inflates on its own to whole lines. */
        z_stream z;
        memset(&z, 0, sizeof z);
        cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
        size_t cap = (size_t)8 << 20;
        unsigned char *out = malloc(cap);
        z.next_in = (unsigned char *)d + ix.blocks[b].offset;
        z.avail_in = (uInt)ix.blocks[b].bytes;
        z.next_out = out;
        z.avail_out = (uInt)cap;
        cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END, "block %lld is one whole member", (long long)b);
        cr_assert_eq(z.avail_in, 0u);
        size_t len = cap - z.avail_out;
        cr_assert_eq(out[len - 1], '\n');
        int64_t lines = 0;
        for (size_t i = 0; i < len; i++)
            lines += out[i] == '\n';
        if (b > 0) {
            char want[64];
            snprintf(want, sizeof want, "{\"microbatch\":%lld,\"layer\":%lld,",
                     (long long)(ix.blocks[b].first_record / 4), (long long)(ix.blocks[b].first_record % 4));
            cr_assert(strncmp((char *)out, want, strlen(want)) == 0);
        }
        cr_assert_eq(lines - (b == 0), ix.blocks[b].records);
        records += ix.blocks[b].records;
        inflateEnd(&z);
        free(out);
    }
    cr_assert_eq(records, 2000);
    free(d);
    tsim_index_free(&ix);
    unlink(path);
}

Test(index, round_trips_and_detects_a_stale_trace)
{
    char path[256], ipath[300];
    temp_path(path, sizeof path, "s.jsonl");
    snprintf(ipath, sizeof ipath, "%s%s", path, TSIM_INDEX_SUFFIX);
    write_trace(path);
    tsim_trace_index ix, back;
    tsim_error err = {0};
    cr_assert_eq(tsim_index_build(path, 64, &ix, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(tsim_index_write(&ix, ipath, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(tsim_index_read(ipath, &back, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(back.records, ix.records);
    cr_assert_eq(back.trace_hash, ix.trace_hash);
    cr_assert_eq(back.n_blocks, ix.n_blocks);
    cr_assert(memcmp(back.blocks, ix.blocks, sizeof *ix.blocks * (size_t)ix.n_blocks) == 0);
    cr_assert_eq(tsim_index_check(&back, path, &err), TSIM_OK, "%s", err.msg);

    /* One digit changed, same size: the block holding it is stale. */
    size_t n;
    char *d = slurp(path, &n);
    size_t at = (size_t)ix.blocks[3].offset + 40;
    while (d[at] < '0' || d[at] > '8')
        at++;
    d[at]++;
    FILE *fp = fopen(path, "wb");
    cr_assert_eq(fwrite(d, 1, n, fp), n);
    fclose(fp);
    cr_assert_eq(tsim_index_check(&back, path, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "block 3") && strstr(err.msg, "stale"), "%s", err.msg);

    /* A shorter trace: its size says so before any hashing. */
    fp = fopen(path, "wb");
    cr_assert_eq(fwrite(d, 1, n / 2, fp), n / 2);
    fclose(fp);
    cr_assert_eq(tsim_index_check(&back, path, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "stale"), "%s", err.msg);
    free(d);

    /* Not an index. */
    fp = fopen(ipath, "wb");
    fputs("{\"format\":\"something else\"}\n", fp);
    fclose(fp);
    tsim_trace_index junk;
    cr_assert_eq(tsim_index_read(ipath, &junk, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "not a taotsim trace index"), "%s", err.msg);
    tsim_index_free(&ix);
    tsim_index_free(&back);
    unlink(path);
    unlink(ipath);
}
