/* The trace index (issue 26): seek points land on record starts, blocked
 * gzip members hold whole records, the index round-trips through its file,
 * and a changed trace is detected as stale. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "gen.h"
#include "gzline.h"
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

/* ---- parallel parsing (replay -j) --------------------------------------------- */

/* A small PRNG of its own so every run sees the same files. */
static uint64_t par_rand(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* A JSON Lines trace (EP4, 8 experts) of n record lines in every shape the
 * reader meets: plain records (the fast path), spellings only cJSON takes
 * (escapes, spaces, a fraction-free exponent), unknown keys (warnings),
 * expert_counts, dataset tags, blank lines; with `bad` > 0 the bad-th record
 * line is broken in one of several ways, so the error and where it stops
 * are checked too. */
static void write_mixed(const char *path, uint64_t seed, int n, int bad)
{
    FILE *fp = fopen(path, "w");
    cr_assert_not_null(fp);
    fprintf(fp, "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":8,\"ep\":4,\"ranks_per_node\":2}\n");
    uint64_t s = seed;
    for (int i = 1; i <= n; i++) {
        int kind = (int)(par_rand(&s) % 10);
        if (par_rand(&s) % 13 == 0)
            fprintf(fp, "   \n");
        if (i == bad) {
            switch (par_rand(&s) % 4) {
            case 0: fprintf(fp, "{\"microbatch\":%d,\"layer\":0,\"counts\":[[1,2]]}\n", i); break;
            case 1: fprintf(fp, "{\"microbatch\":%d,\"layer\":0,\"counts\":[[1,2,\n", i); break;
            case 2: fprintf(fp, "{\"microbatch\":0,\"layer\":0,\"expert_counts\":[1,2,3,4,5,6,7,8]}\n"); break;
            default: fprintf(fp, "[1,2,3]\n"); break;
            }
            continue;
        }
        const char *mb = kind == 1 ? "\"micro\\u0062atch\"" : "\"microbatch\"";
        fprintf(fp, "{%s%s:%d,\"layer\":%d", mb, kind == 2 ? " " : "", i, i % 3);
        if (kind == 3)
            fprintf(fp, ",\"note%d\":1", (int)(par_rand(&s) % 5));
        if (kind == 4)
            fprintf(fp, ",\"dataset\":\"%s\"", par_rand(&s) % 2 ? "a" : "b");
        if (kind == 5) {
            fprintf(fp, ",\"expert_counts\":[");
            for (int e = 0; e < 8; e++)
                fprintf(fp, "%s%llu", e ? "," : "", (unsigned long long)(par_rand(&s) % 1000));
            fprintf(fp, "]}\n");
            continue;
        }
        fprintf(fp, ",\"counts\":[");
        for (int r = 0; r < 4; r++) {
            fprintf(fp, "%s[", r ? "," : "");
            for (int e = 0; e < 8; e++)
                fprintf(fp, "%s%llu%s", e ? "," : "", (unsigned long long)(par_rand(&s) % 500),
                        kind == 6 && e == 3 ? "e0" : "");
            fprintf(fp, "]");
        }
        fprintf(fp, "]}\n");
    }
    fclose(fp);
}

/* A thread of the caller's sharing the parsing (tsim_reader_share_parsing). */
typedef struct {
    tsim_reader *r;
    atomic_bool stop;
} sharer;

static void *share_loop(void *arg)
{
    sharer *h = arg;
    while (!atomic_load(&h->stop))
        if (!tsim_reader_help(h->r))
            sched_yield();
    return NULL;
}

/* Everything a reader hands out, as text: each record's fields and counts,
 * each warning where it came, and the final status and message. threads > 0:
 * that many parsing threads of the reader's own; < 0: -threads of ours share
 * the parsing, and we take every record's counts buffer, handing the reader
 * one full of garbage (it must rewrite every cell). */
static char *read_all(const char *path, const tsim_read_options *o, int threads)
{
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    out[0] = '\0';
#define PUT(...)                                                                                                       \
    do {                                                                                                               \
        char line_[512];                                                                                               \
        int k_ = snprintf(line_, sizeof line_, __VA_ARGS__);                                                           \
        while (n + (size_t)k_ + 1 > cap)                                                                               \
            out = realloc(out, cap *= 2);                                                                              \
        memcpy(out + n, line_, (size_t)k_ + 1);                                                                        \
        n += (size_t)k_;                                                                                               \
    } while (0)
    tsim_reader *r;
    tsim_error err = {0};
    int rc = tsim_reader_open(&r, path, o, &err);
    cr_assert_eq(rc, TSIM_OK, "%s", err.msg);
    sharer h = {.r = r};
    pthread_t tids[4];
    const int sharers = threads < 0 ? -threads : 0;
    atomic_init(&h.stop, false);
    if (threads >= 0) {
        cr_assert_eq(tsim_reader_set_threads(r, threads, &err), TSIM_OK, "%s", err.msg);
    } else {
        cr_assert_eq(tsim_reader_share_parsing(r, sharers, &err), TSIM_OK, "%s", err.msg);
        cr_assert(tsim_reader_lends_counts(r));
        for (int i = 0; i < sharers; i++)
            cr_assert_eq(pthread_create(&tids[i], NULL, share_loop, &h), 0);
    }
    int64_t *spare = NULL;
    const tsim_record *rec;
    const char *w;
    while ((rc = tsim_reader_next(r, &rec, &err)) == 1) {
        PUT("%lld %lld %ld %s %lld:", (long long)rec->microbatch, (long long)rec->layer, rec->line, rec->tag,
            (long long)rec->index);
        const size_t cells = (size_t)rec->ranks * (size_t)rec->experts;
        for (size_t i = 0; i < cells; i++)
            PUT(" %lld", (long long)rec->counts[i]);
        PUT("\n");
        while ((w = tsim_reader_take_warning(r)))
            PUT("warning: %s\n", w);
        if (sharers) {
            if (!spare)
                spare = malloc(sizeof *spare * cells);
            memset(spare, 0xab, sizeof *spare * cells);
            int64_t *taken = rec->counts;
            tsim_reader_replace_counts(r, spare);
            spare = taken;
        }
    }
    atomic_store(&h.stop, true);
    for (int i = 0; i < sharers; i++)
        pthread_join(tids[i], NULL);
    free(spare);
    PUT("end %d %s\n", rc, rc ? err.msg : "");
    while ((w = tsim_reader_take_warning(r)))
        PUT("warning: %s\n", w);
    /* a second call after the end or an error says the same */
    rc = tsim_reader_next(r, &rec, &err);
    PUT("again %d %s\n", rc, rc ? err.msg : "");
    tsim_reader_close(r);
#undef PUT
    return out;
}

static void le32_put(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

enum {
    HARM_NONE,
    HARM_DATA,      /* a flipped bit in the deflate data */
    HARM_CRC,       /* a wrong CRC-32 */
    HARM_ISIZE,     /* a wrong length in the trailer */
    HARM_LONGER,    /* the subfield says one byte more */
    HARM_SHORTER,   /* the subfield says one byte less */
    HARM_PLAIN,     /* a member without the subfield (another writer) */
    HARM_EMPTY,     /* an empty member before it */
    HARM_TRUNCATED, /* the file ends inside it */
    HARM_GARBAGE,   /* text after the last member */
    HARM_LONE_1F,   /* one 0x1f byte after the last member */
    HARM_KINDS
};

/* Writes text as gzip members of `member` text bytes each, cut anywhere
 * (mid-line too), each with taotsim's length subfield, and does `harm` to
 * member `at`: this is the test's own writer of the format, so the reader is
 * checked against the format and not only against trace_write.c. */
static void write_members(const char *path, const char *text, size_t len, size_t member, int harm, int at)
{
    FILE *fp = fopen(path, "wb");
    cr_assert_not_null(fp);
    size_t cap = compressBound((uLong)member) + 64;
    unsigned char *z = malloc(cap);
    int k = 0;
    for (size_t off = 0; off < len; off += member, k++) {
        size_t n = len - off < member ? len - off : member;
        if (k == at && harm == HARM_EMPTY) {
            n = 0;
            off -= member; /* the text continues in the next member */
        }
        z_stream zs = {0};
        int plain = k == at && harm == HARM_PLAIN;
        cr_assert_eq(deflateInit2(&zs, 6, Z_DEFLATED, plain ? 15 + 16 : -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
        zs.next_in = (Bytef *)(text + off);
        zs.avail_in = (uInt)n;
        zs.next_out = z;
        zs.avail_out = (uInt)cap;
        cr_assert_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
        size_t zlen = cap - zs.avail_out;
        deflateEnd(&zs);
        if (plain) {
            fwrite(z, 1, zlen, fp);
            continue;
        }
        unsigned char head[TSIM_GZ_MEMBER_HEADER] = {0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 3, 8, 0,
                                                     TSIM_GZ_SUBFIELD_ID1, TSIM_GZ_SUBFIELD_ID2, 4, 0};
        uint32_t total = (uint32_t)(sizeof head + zlen + 8);
        le32_put(head + 16, total + (k == at && harm == HARM_LONGER) - (k == at && harm == HARM_SHORTER));
        unsigned char tail[8];
        le32_put(tail, (uint32_t)crc32(0, (const Bytef *)text + off, (uInt)n) ^ (k == at && harm == HARM_CRC));
        le32_put(tail + 4, (uint32_t)n + (k == at && harm == HARM_ISIZE));
        if (k == at && harm == HARM_DATA)
            z[zlen / 2] ^= 0x10;
        fwrite(head, 1, sizeof head, fp);
        if (k == at && harm == HARM_TRUNCATED) {
            fwrite(z, 1, zlen / 2, fp);
            break;
        }
        fwrite(z, 1, zlen, fp);
        fwrite(tail, 1, sizeof tail, fp);
    }
    if (harm == HARM_GARBAGE)
        fputs("not gzip data\n", fp);
    if (harm == HARM_LONE_1F)
        fputc(0x1f, fp);
    free(z);
    fclose(fp);
}

/* The same records, warnings and errors at 1, 2 and 4 threads, over random
 * mixed traces, plain, gzip and blocked gzip (intact and damaged), with and without rebucketing and a dataset
 * filter. */
Test(index, parallel_parsing_reads_what_one_thread_reads)
{
    char path[256], gz[256];
    temp_path(path, sizeof path, "mixed.jsonl");
    temp_path(gz, sizeof gz, "mixed.jsonl.gz");
    for (int trial = 0; trial < 24; trial++) {
        uint64_t s = 1000 + (uint64_t)trial;
        int n = 1 + (int)(par_rand(&s) % 400);
        int bad = trial % 3 == 0 ? 0 : 1 + (int)(par_rand(&s) % (uint64_t)n);
        write_mixed(path, s, n, bad);
        tsim_read_options opts[3] = {{0}, {.ep = 2}, {.dataset = "a"}};
        const tsim_read_options *o = &opts[trial % 3];
        const char *file = path;
        if (trial % 4 == 1) {
            size_t len;
            char *text = slurp(path, &len);
            gzFile z = gzopen(gz, "wb");
            cr_assert_eq(gzwrite(z, text, (unsigned)len), (int)len);
            gzclose(z);
            free(text);
            file = gz;
        } else if (trial % 4 == 3) {
            /* blocked gzip with the length subfield: members inflated in parallel */
            size_t len;
            char *text = slurp(path, &len);
            write_members(gz, text, len, 200 + (size_t)(par_rand(&s) % 3000), (int)(par_rand(&s) % HARM_KINDS),
                          (int)(par_rand(&s) % 8));
            free(text);
            file = gz;
        }
        char *one = read_all(file, o, 0);
        for (int t = 1; t <= 3; t += 2) {
            char *many = read_all(file, o, t);
            cr_assert_str_eq(many, one, "trial %d, %d more threads", trial, t);
            free(many);
            char *shared = read_all(file, o, -t);
            cr_assert_str_eq(shared, one, "trial %d, %d sharing threads", trial, t);
            free(shared);
        }
        free(one);
    }
    unlink(path);
    unlink(gz);
}

/* ---- parallel inflation of members that carry their length ----------------------- */

/* A thread that only inflates members (tsim_gzline_help) until told to stop. */
typedef struct {
    tsim_gzline *s;
    atomic_bool stop;
    atomic_int inflated;
} inflater;

static void *inflate_loop(void *arg)
{
    inflater *h = arg;
    while (!atomic_load(&h->stop)) {
        if (tsim_gzline_help(h->s))
            atomic_fetch_add(&h->inflated, 1);
        else
            sched_yield();
    }
    return NULL;
}

static void count_wake(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

/* Lines, their numbers and the final status and message of a gzline, with
 * (helper) or without parallel inflation; progress never goes back and ends
 * at the file's size. */
static char *read_lines(const char *path, bool helper, int *inflated)
{
    tsim_gzline s;
    tsim_error err = {0};
    cr_assert_eq(tsim_gzline_open(&s, path, true, 0, &err), TSIM_OK, "%s", err.msg);
    atomic_int wakes;
    atomic_init(&wakes, 0);
    inflater h = {.s = &s};
    atomic_init(&h.stop, false);
    atomic_init(&h.inflated, 0);
    pthread_t tid;
    if (helper) {
        cr_assert_eq(tsim_gzline_members_start(&s, 3, count_wake, &wakes, &err), TSIM_OK);
        cr_assert_eq(pthread_create(&tid, NULL, inflate_loop, &h), 0);
    }
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    char *line;
    size_t len;
    int rc;
    int64_t last = 0;
    while ((rc = tsim_gzline_next(&s, &line, &len, &err)) == 1) {
        while (n + len + 32 > cap)
            out = realloc(out, cap *= 2);
        n += (size_t)sprintf(out + n, "%ld ", s.line);
        memcpy(out + n, line, len);
        n += len;
        out[n++] = '\n';
        int64_t at = tsim_gzline_offset(&s);
        cr_assert_geq(at, last);
        cr_assert_leq(at, s.file_size);
        last = at;
    }
    if (rc == 0)
        cr_assert_eq(tsim_gzline_offset(&s), s.file_size);
    if (helper) {
        atomic_store(&h.stop, true);
        pthread_join(tid, NULL);
        *inflated = atomic_load(&h.inflated);
        cr_assert(*inflated == 0 || atomic_load(&wakes) > 0, "helpers inflated members nobody woke them for");
    }
    while (n + TSIM_ERROR_MSG_MAX + 32 > cap)
        out = realloc(out, cap *= 2);
    sprintf(out + n, "end %d %s\n", rc, rc < 0 || rc > 1 ? err.msg : "");
    tsim_gzline_close(&s);
    return out;
}

/* Members with the length subfield give the same lines, line numbers and
 * errors (with their messages) whether a helper inflates them or not, intact
 * or damaged in every way a member can be; an intact multi-member file is
 * really inflated by the helper. */
Test(index, parallel_inflation_reads_what_one_thread_reads)
{
    char path[256], gz[256];
    temp_path(path, sizeof path, "members.jsonl");
    temp_path(gz, sizeof gz, "members.jsonl.gz");
    for (int trial = 0; trial < 5 * HARM_KINDS; trial++) {
        uint64_t s = 5000 + (uint64_t)trial;
        /* from the third round on, files are large: megabytes of text in members of up to
         * 200 KiB, so the one-thread path's buffers fill and wrap many times */
        bool large = trial / HARM_KINDS >= 2;
        write_mixed(path, s, large ? 5000 + (int)(par_rand(&s) % 5000) : 50 + (int)(par_rand(&s) % 300), 0);
        size_t len;
        char *text = slurp(path, &len);
        size_t member = large ? 20000 + (size_t)(par_rand(&s) % 200000) : 300 + (size_t)(par_rand(&s) % 4000);
        int members = (int)((len + member - 1) / member);
        int harm = trial % HARM_KINDS;
        int at = (int)(par_rand(&s) % (uint64_t)members);
        write_members(gz, text, len, member, harm, at);
        char *one = read_lines(gz, false, NULL);
        int inflated = 0;
        char *many = read_lines(gz, true, &inflated);
        cr_assert_str_eq(many, one, "trial %d, harm %d at member %d of %d: %s VS %s", trial, harm, at, members, many + strlen(many) - (strlen(many) > 150 ? 150 : strlen(many)), one + strlen(one) - 150);
        /* a lying subfield is the member threads' problem only: gzip ignores it */
        bool fine = harm == HARM_NONE || harm == HARM_PLAIN || harm == HARM_EMPTY || harm == HARM_LONGER ||
                    harm == HARM_SHORTER;
        const char *end = strstr(one, "\nend ");
        cr_assert_not_null(end);
        cr_assert_eq(strcmp(end, "\nend 0 \n") == 0, fine, "trial %d, harm %d: %s", trial, harm, end);
        free(one);
        free(many);
        free(text);
    }
    unlink(path);
    unlink(gz);
}

/* The helper takes members from the reader: with members of a few hundred
 * bytes and a helper spinning for work, some are inflated off the reading
 * thread (the test would be blind if the parallel path never engaged). */
Test(index, a_helper_inflates_members)
{
    char path[256], gz[256];
    temp_path(path, sizeof path, "helped.jsonl");
    temp_path(gz, sizeof gz, "helped.jsonl.gz");
    write_mixed(path, 77, 4000, 0);
    size_t len;
    char *text = slurp(path, &len);
    write_members(gz, text, len, 2000, HARM_NONE, -1);
    char *one = read_lines(gz, false, NULL);
    int inflated = 0;
    char *many = read_lines(gz, true, &inflated);
    cr_assert_str_eq(many, one);
    cr_assert_gt(inflated, 0, "of %zu members, the helper inflated none", len / 2000);
    free(one);
    free(many);
    free(text);
    unlink(path);
    unlink(gz);
}

/* ---- shards reading their range (replay --shard with an index) ----------------------- */

/* Records lo..hi-1 read through the index are the records a full read gives
 * there (values, numbers, lines), and the index's records hash is the hash
 * of a full read: plain (with blank lines, so line numbers drift from record
 * numbers) and blocked gzip, from every kind of starting point. */
Test(index, seek_range_reads_what_a_full_read_reads)
{
    char path[256], gz[256];
    temp_path(path, sizeof path, "range.jsonl");
    temp_path(gz, sizeof gz, "range.jsonl.gz");
    write_trace(gz);
    /* a plain copy with a blank line after every 7th record */
    tsim_reader *r;
    tsim_error err = {0};
    cr_assert_eq(tsim_reader_open(&r, gz, NULL, &err), TSIM_OK, "%s", err.msg);
    tsim_trace_header h;
    cr_assert_eq(tsim_trace_header_copy(&h, tsim_reader_header(r), &err), TSIM_OK);
    tsim_reader_close(r);
    gzFile z = gzopen(gz, "rb");
    FILE *out = fopen(path, "w");
    char *line = malloc(1 << 22);
    for (int n = 0; gzgets(z, line, 1 << 22); n++) {
        fputs(line, out);
        if (n > 0 && n % 7 == 0)
            fputs("  \n", out);
    }
    gzclose(z);
    fclose(out);
    free(line);
    tsim_trace_header_free(&h);

    const char *files[2] = {path, gz};
    for (int f = 0; f < 2; f++) {
        tsim_trace_index ix;
        cr_assert_eq(tsim_index_build(files[f], 64, &ix, &err), TSIM_OK, "%s", err.msg);
        /* the full read: every record's hash, line and first count */
        int64_t *lines = calloc(2000, sizeof *lines);
        uint64_t *hashes = calloc(2000, sizeof *hashes);
        tsim_trace_digest all;
        tsim_trace_digest_init(&all);
        cr_assert_eq(tsim_reader_open(&r, files[f], NULL, &err), TSIM_OK);
        const tsim_record *rec;
        for (int i = 0; tsim_reader_next(r, &rec, &err) == 1; i++) {
            tsim_trace_digest one;
            tsim_trace_digest_init(&one);
            tsim_trace_digest_add(&one, rec);
            tsim_trace_digest_add(&all, rec);
            hashes[i] = one.hash;
            lines[i] = rec->line;
        }
        tsim_reader_close(r);
        cr_assert_eq(all.hash, ix.digest.hash);
        cr_assert_eq(all.records, ix.digest.records);
        const int64_t starts[] = {0, 1, 63, 64, 65, 700, 1999, 2000};
        for (size_t s = 0; s < sizeof starts / sizeof *starts; s++) {
            int64_t lo = starts[s], hi = lo + 150 > 2000 ? 2000 : lo + 150;
            cr_assert_eq(tsim_reader_open(&r, files[f], NULL, &err), TSIM_OK);
            cr_assert_eq(tsim_index_seek_range(&ix, r, files[f], lo, hi, &err), TSIM_OK, "%s", err.msg);
            cr_assert_eq(tsim_reader_set_threads(r, (int)(s % 3), &err), TSIM_OK);
            for (int64_t i = lo; i < hi; i++) {
                cr_assert_eq(tsim_reader_next(r, &rec, &err), 1, "%s: record %lld: %s", files[f], (long long)i,
                             err.msg);
                tsim_trace_digest one;
                tsim_trace_digest_init(&one);
                tsim_trace_digest_add(&one, rec);
                cr_assert_eq(one.hash, hashes[i], "%s: record %lld from %lld", files[f], (long long)i, (long long)lo);
                cr_assert_eq(rec->line, lines[i], "%s: record %lld", files[f], (long long)i);
                cr_assert_eq(rec->index, i);
            }
            tsim_reader_close(r);
        }
        free(lines);
        free(hashes);
        tsim_index_free(&ix);
    }
    unlink(path);
    unlink(gz);
}
