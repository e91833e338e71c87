/* Trace I/O: readers (JSON, JSONL, JSONL.gz, CSV), writers, the even split,
 * rebucketing, and every class of bad input with its exact message. Each test
 * runs in its own mkdtemp directory (Criterion forks per test), so file names
 * and therefore messages are short and stable. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cjson/cJSON.h>

#include "bench_read.h"
#include "json_strict.h"
#include "random_records.h"
#include "topology.h"
#include "record_set.h"
#include "trace.h"
#include "trace_internal.h"
#include "tsim_config.h"

static char tmpdir[256];

static void enter_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tsim-trace-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
    cr_assert_eq(chdir(tmpdir), 0);
}

static void leave_tmp(void)
{
    DIR *d = opendir(tmpdir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                unlink(e->d_name);
        closedir(d);
    }
    if (chdir("/") == 0)
        rmdir(tmpdir);
}

TestSuite(trace, .init = enter_tmp, .fini = leave_tmp);

/* ---- helpers -------------------------------------------------------------- */

static const char *source_path(const char *rel)
{
    static char buf[4096];
    const char *root = getenv("TSIM_SOURCE_ROOT");
    snprintf(buf, sizeof buf, "%s/%s", root ? root : TSIM_SOURCE_ROOT, rel);
    return buf;
}

static void write_file(const char *name, const char *content)
{
    FILE *f = fopen(name, "wb");
    cr_assert_not_null(f);
    fputs(content, f);
    cr_assert_eq(fclose(f), 0);
}

static char *slurp(const char *name, size_t *len)
{
    FILE *f = fopen(name, "rb");
    cr_assert_not_null(f, "cannot open %s", name);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void assert_same_bytes(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    cr_assert_eq(na, nb, "%s has %zu bytes, %s has %zu", a, na, b, nb);
    cr_assert(memcmp(x, y, na) == 0, "%s and %s differ", a, b);
    free(x);
    free(y);
}

static void write_gz(const char *name, const char *content)
{
    gzFile g = gzopen(name, "wb");
    cr_assert_not_null(g);
    cr_assert_eq(gzputs(g, content), (int)strlen(content));
    cr_assert_eq(gzclose(g), Z_OK);
}

/* Reads a whole trace; returns the status (0 ok) with the message in err. */
static int read_all(const char *path, const tsim_read_options *opts, int64_t *records, tsim_error *err)
{
    tsim_reader *r;
    tsim_error_clear(err);
    int rc = tsim_reader_open(&r, path, opts, err);
    if (rc)
        return rc;
    const tsim_record *rec;
    while ((rc = tsim_reader_next(r, &rec, err)) == 1)
        ;
    if (records)
        *records = tsim_reader_count(r);
    tsim_reader_close(r);
    return rc;
}

static void expect_error_opts(const char *name, const char *content, const tsim_read_options *opts, const char *message)
{
    write_file(name, content);
    tsim_error err;
    int rc = read_all(name, opts, NULL, &err);
    cr_assert_eq(rc, TSIM_E_INPUT, "%s: status %d (%s), expected an input error", name, rc, err.msg);
    cr_assert_str_eq(err.msg, message);
}

static void expect_error(const char *name, const char *content, const char *message)
{
    expect_error_opts(name, content, NULL, message);
}

/* Copies every record of in to out; returns the status. */
static int convert(const char *in, const char *out, const tsim_read_options *opts)
{
    tsim_error err;
    tsim_reader *r;
    tsim_writer *w;
    int rc = tsim_reader_open(&r, in, opts, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    rc = tsim_writer_open(&w, out, tsim_reader_header(r), &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    const tsim_record *rec;
    while ((rc = tsim_reader_next(r, &rec, &err)) == 1)
        cr_assert_eq(tsim_writer_write(w, rec, &err), 0, "%s", err.msg);
    cr_assert_eq(rc, 0, "%s", err.msg);
    tsim_reader_close(r);
    cr_assert_eq(tsim_writer_close(w, true, &err), 0, "%s", err.msg);
    return 0;
}

#define HDR4 "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2}\n"
#define REC(mb, l) "{\"microbatch\":" #mb ",\"layer\":" #l ",\"counts\":[[1,2,3,4],[5,6,7,8]]}\n"

/* ---- formats, the sample trace, the even split ---------------------------- */

Test(trace, format_from_path)
{
    tsim_trace_format f;
    cr_assert_eq(tsim_trace_format_from_path("a.json", &f, NULL), 0);
    cr_assert_eq(f, TSIM_FMT_JSON);
    cr_assert_eq(tsim_trace_format_from_path("dir.x/a.jsonl", &f, NULL), 0);
    cr_assert_eq(f, TSIM_FMT_JSONL);
    cr_assert_eq(tsim_trace_format_from_path("a.JSONL.gz", &f, NULL), 0);
    cr_assert_eq(f, TSIM_FMT_JSONL_GZ);
    cr_assert_eq(tsim_trace_format_from_path("a.csv.gz", &f, NULL), 0);
    cr_assert_eq(f, TSIM_FMT_CSV);
    cr_assert_eq(tsim_trace_format_from_path("a.npy", &f, NULL), 0);
    cr_assert_eq(f, TSIM_FMT_NPY);
    cr_assert_eq(tsim_trace_format_from_path("a.SafeTensors", &f, NULL), 0);
    cr_assert_eq(f, TSIM_FMT_SAFETENSORS);
    cr_assert(tsim_trace_format_import_only(TSIM_FMT_NPY) && tsim_trace_format_import_only(TSIM_FMT_MEGATRON));
    cr_assert(!tsim_trace_format_import_only(TSIM_FMT_JSONL_GZ));
    tsim_error err;
    cr_assert_eq(tsim_trace_format_from_path("a.json.gz", &f, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "a.json.gz: cannot tell the trace format from the name: expected .json, .jsonl, "
                              ".jsonl.gz, .csv, .csv.gz, .npy, .npz, .pt, .safetensors or a Megatron router trace directory");
}

Test(trace, tiny_sample)
{
    tsim_error err;
    tsim_reader *r;
    cr_assert_eq(tsim_reader_open(&r, source_path("traces/tiny-4rank.json"), NULL, &err), 0, "%s", err.msg);
    const tsim_trace_header *h = tsim_reader_header(r);
    cr_assert_eq(h->experts, 16);
    cr_assert_eq(h->ep, 4);
    cr_assert_eq(h->ranks_per_node, 2);
    cr_assert_eq(h->topk, 2);
    cr_assert_null(h->home);
    cr_assert_not_null(h->meta);
    cr_assert_str_eq(cJSON_GetObjectItem(h->meta, "model")->valuestring, "hand-made");
    cr_assert_not(tsim_reader_rebucketed(r));
    cr_assert_null(tsim_reader_take_warning(r));

    const tsim_record *rec;
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1);
    cr_assert_eq(rec->microbatch, 0);
    cr_assert_eq(rec->layer, 0);
    cr_assert_eq(rec->index, 0);
    cr_assert_eq(rec->line, 11);
    cr_assert_eq(rec->ranks, 4);
    cr_assert_eq(tsim_count(rec, 0, 0), 30);
    cr_assert_eq(tsim_count(rec, 3, 15), 3);
    cr_assert_eq(tsim_count(rec, 2, 8), 4);

    /* expert_counts [120, 95, 80, ...] split over 4 ranks */
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1);
    cr_assert_eq(rec->layer, 1);
    cr_assert_eq(rec->line, 16);
    const int64_t want_e1[4] = {24, 24, 24, 23}; /* 95 = 4 * 23 + 3 */
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(tsim_count(rec, k, 0), 30);
        cr_assert_eq(tsim_count(rec, k, 1), want_e1[k]);
    }
    int n = 2;
    while (tsim_reader_next(r, &rec, &err) == 1)
        n++;
    cr_assert_eq(n, 6);
    cr_assert_eq(tsim_reader_count(r), 6);
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 0, "the end stays the end");
    tsim_reader_close(r);
}

Test(trace, even_split)
{
    write_file("split.jsonl", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":4}\n"
                              "{\"microbatch\":0,\"layer\":0,\"expert_counts\":[10,3,0,7]}\n");
    tsim_error err;
    tsim_reader *r;
    cr_assert_eq(tsim_reader_open(&r, "split.jsonl", NULL, &err), 0, "%s", err.msg);
    const tsim_record *rec;
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1, "%s", err.msg);
    /* floor(tpe/R) each, the remainder one token each to ranks 0, 1, 2, ... */
    const int64_t want[4][4] = {{3, 1, 0, 2}, {3, 1, 0, 2}, {2, 1, 0, 2}, {2, 0, 0, 1}};
    for (int k = 0; k < 4; k++)
        for (int e = 0; e < 4; e++)
            cr_assert_eq(tsim_count(rec, k, e), want[k][e], "rank %d expert %d", k, e);
    tsim_reader_close(r);
}

/* ---- rebucketing and options ---------------------------------------------- */

static void expert_totals_of_file(const char *path, int64_t totals[][16], int *n)
{
    tsim_error err;
    tsim_reader *r;
    cr_assert_eq(tsim_reader_open(&r, path, NULL, &err), 0, "%s", err.msg);
    const tsim_record *rec;
    *n = 0;
    while (tsim_reader_next(r, &rec, &err) == 1)
        tsim_record_expert_totals(rec, totals[(*n)++]);
    tsim_reader_close(r);
}

Test(trace, rebucket)
{
    const char *tiny = source_path("traces/tiny-4rank.json");
    int64_t totals[6][16];
    int n;
    expert_totals_of_file(tiny, totals, &n);
    cr_assert_eq(n, 6);
    const int eps[] = {2, 8, 16, 1};
    for (size_t i = 0; i < sizeof eps / sizeof eps[0]; i++) {
        tsim_read_options o = {.ep = eps[i], .ranks_per_node = 0, .dataset = NULL};
        tsim_error err;
        tsim_reader *r;
        cr_assert_eq(tsim_reader_open(&r, tiny, &o, &err), 0, "%s", err.msg);
        cr_assert(tsim_reader_rebucketed(r));
        cr_assert_eq(tsim_reader_source_ep(r), 4);
        cr_assert_eq(tsim_reader_header(r)->ep, eps[i]);
        cr_assert_eq(tsim_reader_header(r)->ranks_per_node, 2);
        const tsim_record *rec;
        int k = 0;
        while (tsim_reader_next(r, &rec, &err) == 1) {
            cr_assert_eq(rec->ranks, eps[i]);
            int64_t tpe[16];
            tsim_record_expert_totals(rec, tpe);
            for (int e = 0; e < 16; e++) {
                cr_assert_eq(tpe[e], totals[k][e], "ep %d record %d expert %d", eps[i], k, e);
                /* the even rule: ranks differ by at most one, the larger ones first */
                for (int q = 1; q < rec->ranks; q++) {
                    int64_t d = tsim_count(rec, q - 1, e) - tsim_count(rec, q, e);
                    cr_assert(d == 0 || d == 1);
                }
            }
            k++;
        }
        cr_assert_eq(k, 6);
        tsim_reader_close(r);
    }
    /* the same EP as the file is not a rebucketing */
    tsim_read_options same = {.ep = 4, .ranks_per_node = 1, .dataset = NULL};
    tsim_error err;
    tsim_reader *r;
    cr_assert_eq(tsim_reader_open(&r, tiny, &same, &err), 0, "%s", err.msg);
    cr_assert_not(tsim_reader_rebucketed(r));
    cr_assert_eq(tsim_reader_header(r)->ranks_per_node, 1, "--rpn overrides");
    tsim_reader_close(r);

    tsim_read_options bad = {.ep = 3, .ranks_per_node = 0, .dataset = NULL};
    cr_assert_eq(tsim_reader_open(&r, tiny, &bad, &err), TSIM_E_INPUT);
    char want[4200];
    snprintf(want, sizeof want, "%s: experts 16 is not divisible by --ep 3", tiny);
    cr_assert_str_eq(err.msg, want);
}

/* --rpn: whole nodes (a divisor of the EP size after --ep), or one node
 * when at least the EP size; --rpn 3 on ep 4 was accepted. */
Test(trace, rpn_must_divide_the_ranks)
{
    const char *tiny = source_path("traces/tiny-4rank.json");
    tsim_error err;
    tsim_reader *r;
    const int ok[][2] = {{4, 1}, {4, 2}, {4, 4}, {4, 5}, {4, 64}, {2, 3}, {8, 4}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        tsim_read_options o = {.ep = ok[i][0], .ranks_per_node = ok[i][1]};
        cr_assert_eq(tsim_reader_open(&r, tiny, &o, &err), 0, "ep %d rpn %d: %s", ok[i][0], ok[i][1], err.msg);
        cr_assert_eq(tsim_reader_header(r)->ranks_per_node, ok[i][1]);
        tsim_reader_close(r);
    }
    const int bad[][2] = {{4, 3}, {8, 3}, {8, 6}, {16, 12}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tsim_read_options o = {.ep = bad[i][0], .ranks_per_node = bad[i][1]};
        cr_assert_eq(tsim_reader_open(&r, tiny, &o, &err), TSIM_E_INPUT, "ep %d rpn %d", bad[i][0], bad[i][1]);
        char want[4400];
        snprintf(want, sizeof want,
                 "%s: --rpn %d does not divide ep %d: nodes hold whole groups of ranks (give a divisor of %d, or %d "
                 "or more for one node)",
                 tiny, bad[i][1], bad[i][0], bad[i][0], bad[i][0]);
        cr_assert_str_eq(err.msg, want);
    }
}

Test(trace, rebucket_drops_home)
{
    write_file("home.json", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,"
                            "\"home\":[1,0,0,1],\"records\":[{\"microbatch\":0,\"layer\":0,\"counts\":"
                            "[[1,2,3,4],[5,6,7,8]]}]}");
    tsim_error err;
    tsim_reader *r;
    cr_assert_eq(tsim_reader_open(&r, "home.json", NULL, &err), 0, "%s", err.msg);
    const int32_t *home = tsim_reader_header(r)->home;
    cr_assert_not_null(home);
    cr_assert(home[0] == 1 && home[1] == 0 && home[2] == 0 && home[3] == 1);
    tsim_reader_close(r);
    tsim_read_options o = {.ep = 4, .ranks_per_node = 0, .dataset = NULL};
    cr_assert_eq(tsim_reader_open(&r, "home.json", &o, &err), 0, "%s", err.msg);
    cr_assert_null(tsim_reader_header(r)->home, "the home map names ranks of the old EP size");
    const tsim_record *rec;
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1);
    /* expert totals 6, 8, 10, 12 over 4 ranks */
    cr_assert_eq(tsim_count(rec, 0, 0), 2);
    cr_assert_eq(tsim_count(rec, 2, 0), 1);
    cr_assert_eq(tsim_count(rec, 3, 3), 3);
    tsim_reader_close(r);
}

/* ---- round trips ------------------------------------------------------------ */

Test(trace, round_trips_are_byte_identical)
{
    const char *tiny = source_path("traces/tiny-4rank.json");
    convert(tiny, "a.json", NULL);
    convert("a.json", "b.jsonl", NULL);
    convert("b.jsonl", "c.jsonl.gz", NULL);
    convert("c.jsonl.gz", "d.json", NULL);
    convert("d.json", "e.jsonl", NULL);
    convert("e.jsonl", "f.jsonl.gz", NULL);
    assert_same_bytes("a.json", "d.json");
    assert_same_bytes("b.jsonl", "e.jsonl");
    assert_same_bytes("c.jsonl.gz", "f.jsonl.gz");
    /* same input, same bytes */
    convert(tiny, "a2.json", NULL);
    assert_same_bytes("a.json", "a2.json");

    /* and the records survive: compare the sample with its gzip copy */
    tsim_error err;
    tsim_reader *x, *y;
    cr_assert_eq(tsim_reader_open(&x, tiny, NULL, &err), 0);
    cr_assert_eq(tsim_reader_open(&y, "f.jsonl.gz", NULL, &err), 0);
    cr_assert_str_eq(cJSON_GetObjectItem(tsim_reader_header(y)->meta, "model")->valuestring, "hand-made");
    cr_assert_eq(tsim_reader_header(y)->topk, 2);
    const tsim_record *a, *b;
    int n = 0;
    while (tsim_reader_next(x, &a, &err) == 1) {
        cr_assert_eq(tsim_reader_next(y, &b, &err), 1);
        cr_assert_eq(a->microbatch, b->microbatch);
        cr_assert_eq(a->layer, b->layer);
        cr_assert(memcmp(a->counts, b->counts, sizeof *a->counts * 64) == 0, "record %d", n);
        cr_assert_eq(b->line, n + 2, "JSONL records start on line 2");
        n++;
    }
    cr_assert_eq(n, 6);
    cr_assert_eq(tsim_reader_next(y, &b, &err), 0);
    tsim_reader_close(x);
    tsim_reader_close(y);
}

Test(trace, writer_output_shape)
{
    tsim_trace_header h = {4, 2, 8, 0, NULL, NULL};
    int32_t home[4] = {1, 1, 0, 0};
    h.home = home;
    tsim_error err;
    tsim_writer *w;
    cr_assert_eq(tsim_writer_open(&w, "w.jsonl", &h, &err), 0, "%s", err.msg);
    tsim_record rec;
    cr_assert_eq(tsim_record_alloc(&rec, 2, 4, &err), 0);
    for (int i = 0; i < 8; i++)
        rec.counts[i] = i * 1000;
    rec.microbatch = 3;
    rec.layer = 7;
    snprintf(rec.tag, sizeof rec.tag, "a\"b");
    cr_assert_eq(tsim_writer_write(w, &rec, &err), 0, "%s", err.msg);
    cr_assert_eq(tsim_writer_close(w, true, &err), 0, "%s", err.msg);
    size_t n;
    char *text = slurp("w.jsonl", &n);
    cr_assert_str_eq(text,
                     "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"ranks_per_node\":8,"
                     "\"home\":[1,1,0,0]}\n"
                     "{\"microbatch\":3,\"layer\":7,\"dataset\":\"a\\\"b\",\"counts\":[[0,1000,2000,3000],"
                     "[4000,5000,6000,7000]]}\n");
    free(text);

    /* the dataset tag reads back, and filters */
    tsim_read_options o = {.ep = 0, .ranks_per_node = 0, .dataset = "a\"b"};
    int64_t records;
    cr_assert_eq(read_all("w.jsonl", &o, &records, &err), 0, "%s", err.msg);
    cr_assert_eq(records, 1);

    /* a record of the wrong shape is a bug in the caller */
    cr_assert_eq(tsim_writer_open(&w, "x.json", &h, &err), 0);
    tsim_record small;
    tsim_record_alloc(&small, 1, 4, &err);
    cr_assert_eq(tsim_writer_write(w, &small, &err), TSIM_E_INTERNAL);
    cr_assert_str_eq(err.msg, "x.json: record 1 is 1 x 4, the trace is 2 x 4");
    cr_assert_eq(tsim_writer_close(w, false, &err), 0);
    cr_assert_eq(access("x.json", F_OK), -1, "an aborted writer leaves nothing");
    DIR *d = opendir(".");
    struct dirent *e;
    while ((e = readdir(d)))
        cr_assert(strncmp(e->d_name, "x.json", 6) != 0, "left behind: %s", e->d_name);
    closedir(d);
    tsim_record_free(&small);
    tsim_record_free(&rec);

    cr_assert_eq(tsim_writer_open(&w, "x.csv", &h, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "x.csv: CSV is an import format only; write .json, .jsonl or .jsonl.gz");
}

/* ---- the header at close (gen's one pass) ---------------------------------- */

/* Names in the test's directory, "." and ".." aside. */
static int dir_entries(void)
{
    DIR *d = opendir(".");
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

/* The same header and records through tsim_writer_open and through the body
 * writer whose header comes at close: the same file, byte for byte. */
static void write_both_ways(const char *ext, int records)
{
    tsim_random_shape s = {16, 64, 2, 4};
    int32_t home[64];
    uint64_t seed = 7;
    tsim_random_home(&seed, &s, home);
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddStringToObject(meta, "source", "synthetic \"q\" \xff");
    cJSON_AddNumberToObject(meta, "imbalance_achieved", 0.123456789012345678);
    tsim_trace_header h = {64, 16, 4, 2, home, meta};
    char a[32], b[32];
    snprintf(a, sizeof a, "open.%s", ext);
    snprintf(b, sizeof b, "body.%s", ext);
    cr_assert(tsim_writer_can_defer_header(b));
    tsim_error err;
    tsim_writer *wa, *wb;
    cr_assert_eq(tsim_writer_open(&wa, a, &h, &err), 0, "%s", err.msg);
    cr_assert_eq(tsim_writer_open_body(&wb, b, 16, 64, &err), 0, "%s", err.msg);
    cr_assert_eq(tsim_writer_set_gzip_level(wb, 1, &err), 0, "%s", err.msg);
    for (int i = 0; i < records; i++) {
        tsim_record rec;
        tsim_random_record(&seed, &s, &rec);
        rec.microbatch = i / 3;
        rec.layer = i % 3;
        if (i % 5 == 1)
            snprintf(rec.tag, sizeof rec.tag, "set\t%d", i);
        cr_assert_eq(tsim_writer_write(wa, &rec, &err), 0, "%s", err.msg);
        cr_assert_eq(tsim_writer_write(wb, &rec, &err), 0, "%s", err.msg);
        tsim_record_free(&rec);
    }
    cr_assert_eq(tsim_writer_close(wa, true, &err), 0, "%s", err.msg);
    cr_assert_eq(tsim_writer_close_with_header(wb, &h, true, &err), 0, "%s", err.msg);
    assert_same_bytes(a, b);
    struct stat st;
    cr_assert_eq(stat(b, &st), 0);
    cr_assert(records < 400 || st.st_size > (1 << 20), "%s: %lld bytes", b, (long long)st.st_size);
    cr_assert_eq(dir_entries(), 2, "only the two outputs are left");
    unlink(a);
    unlink(b);
    cJSON_Delete(meta);
}

Test(trace, writer_header_at_close_same_bytes)
{
    /* 400 records of 16 x 64 are about 1.4 MB: more than one 1 MiB copy */
    const int counts[] = {0, 1, 400};
    for (int i = 0; i < 3; i++) {
        write_both_ways("json", counts[i]);
        write_both_ways("jsonl", counts[i]);
    }
}

/* An aborted body writer, or one whose close fails, leaves no file at all. */
Test(trace, writer_header_at_close_abort)
{
    tsim_trace_header h = {8, 4, 4, 0, NULL, NULL};
    tsim_record rec;
    tsim_error err;
    cr_assert_eq(tsim_record_alloc(&rec, 4, 8, &err), 0);
    const char *const paths[] = {"x.json", "x.jsonl"};
    for (int mode = 0; mode < 4; mode++)
        for (int i = 0; i < 2; i++) {
            tsim_writer *w;
            cr_assert_eq(tsim_writer_open_body(&w, paths[i], 4, 8, &err), 0, "%s", err.msg);
            cr_assert_eq(tsim_writer_write(w, &rec, &err), 0, "%s", err.msg);
            cr_assert_eq(dir_entries(), 1, "the scratch file");
            if (mode == 0) {
                cr_assert_eq(tsim_writer_close_with_header(w, &h, false, &err), 0);
            } else if (mode == 1) {
                tsim_trace_header other = h;
                other.ep = 2; /* not the records' shape */
                cr_assert_eq(tsim_writer_close_with_header(w, &other, true, &err), TSIM_E_INTERNAL);
            } else if (mode == 2) {
                tsim_trace_header bad = h;
                bad.topk = 9; /* more than the experts */
                cr_assert_eq(tsim_writer_close_with_header(w, &bad, true, &err), TSIM_E_INPUT);
            } else {
                cr_assert_eq(tsim_writer_close(w, true, &err), TSIM_E_INTERNAL, "the header is missing");
            }
            cr_assert_eq(dir_entries(), 0, "mode %d, %s: nothing is left", mode, paths[i]);
        }
    tsim_record_free(&rec);
}

/* Where the header cannot come last, and outputs that cannot be written:
 * errors, not crashes, and nothing left behind. */
Test(trace, writer_header_at_close_unwritable)
{
    cr_assert(!tsim_writer_can_defer_header("x.jsonl.gz"));
    cr_assert(!tsim_writer_can_defer_header("-"));
    cr_assert(!tsim_writer_can_defer_header(""));
    cr_assert(!tsim_writer_can_defer_header(NULL));
    cr_assert(!tsim_writer_can_defer_header("x.csv"));
    cr_assert(!tsim_writer_can_defer_header("/dev/null"));
    tsim_error err;
    tsim_writer *w = (tsim_writer *)&err;
    cr_assert_eq(tsim_writer_open_body(&w, "x.jsonl.gz", 4, 8, &err), TSIM_E_INTERNAL);
    cr_assert_null(w);
    cr_assert_eq(tsim_writer_open_body(&w, "x.jsonl", 3, 8, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "x.jsonl: experts 8 is not divisible by ep 3");
    cr_assert_eq(tsim_writer_open_body(&w, "no/such/dir/x.jsonl", 4, 8, &err), TSIM_E_INPUT);
    cr_assert_null(w);
    cr_assert(strstr(err.msg, "no/such/dir/x.jsonl: cannot create") == err.msg, "%s", err.msg);

    /* the output's name turns into a directory while the records are written:
     * the scratch file is removed, the error names the output */
    tsim_trace_header h = {8, 4, 4, 0, NULL, NULL};
    tsim_record rec;
    cr_assert_eq(tsim_record_alloc(&rec, 4, 8, &err), 0);
    cr_assert_eq(tsim_writer_open_body(&w, "late.jsonl", 4, 8, &err), 0, "%s", err.msg);
    cr_assert_eq(tsim_writer_write(w, &rec, &err), 0, "%s", err.msg);
    cr_assert_eq(mkdir("late.jsonl", 0755), 0);
    cr_assert_eq(tsim_writer_close_with_header(w, &h, true, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "late.jsonl: is a directory, not a file to write");
    cr_assert_eq(rmdir("late.jsonl"), 0);
    cr_assert_eq(dir_entries(), 0, "nothing is left");

    tsim_record_free(&rec);
}

/* Writes that fail (a file size limit): in the records' scratch file, or in
 * the output when the header goes in. An error each time, nothing left. */
Test(trace, writer_header_at_close_write_fails)
{
    signal(SIGXFSZ, SIG_IGN); /* write() fails with EFBIG instead */
    struct rlimit lim = {(rlim_t)1 << 16, (rlim_t)1 << 16};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    tsim_record rec;
    tsim_error err;
    cr_assert_eq(tsim_record_alloc(&rec, 4, 8, &err), 0);
    for (int i = 0; i < 32; i++)
        rec.counts[i] = 1000000 + i;
    /* the records overflow the scratch file */
    tsim_writer *w;
    cr_assert_eq(tsim_writer_open_body(&w, "big.jsonl", 4, 8, &err), 0, "%s", err.msg);
    int rc = TSIM_OK;
    for (int i = 0; i < 3000 && !rc; i++)
        rc = tsim_writer_write(w, &rec, &err);
    tsim_trace_header h = {8, 4, 4, 0, NULL, NULL};
    if (!rc)
        rc = tsim_writer_close_with_header(w, &h, true, &err);
    else
        tsim_writer_close_with_header(w, &h, false, &err);
    cr_assert_eq(rc, TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "big.jsonl: write failed: ") == err.msg, "%s", err.msg);
    cr_assert_eq(dir_entries(), 0, "nothing is left");

    /* the records fit, the header (a long meta) does not */
    char *text = malloc(100000);
    memset(text, 'm', 99999);
    text[99999] = '\0';
    h.meta = cJSON_CreateObject();
    cJSON_AddStringToObject(h.meta, "note", text);
    cr_assert_eq(tsim_writer_open_body(&w, "head.json", 4, 8, &err), 0, "%s", err.msg);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(tsim_writer_write(w, &rec, &err), 0, "%s", err.msg);
    cr_assert_eq(tsim_writer_close_with_header(w, &h, true, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "head.json: write failed: ") == err.msg, "%s", err.msg);
    cr_assert_eq(dir_entries(), 0, "nothing is left");
    cJSON_Delete(h.meta);
    free(text);
    tsim_record_free(&rec);
}

/* The strict fast parser and cJSON must read the same records: the second
 * file spells one key with an escape, which only cJSON takes. */
Test(trace, fast_path_matches_cjson)
{
    uint64_t seed = 42;
    tsim_random_shape s = {8, 32, 2, 4};
    tsim_trace_header h = {32, 8, 4, 0, NULL, NULL};
    tsim_error err;
    tsim_writer *w;
    cr_assert_eq(tsim_writer_open(&w, "fast.jsonl", &h, &err), 0);
    for (int i = 0; i < 200; i++) {
        tsim_record rec;
        tsim_random_record(&seed, &s, &rec);
        rec.microbatch = i / 10;
        rec.layer = i % 10;
        cr_assert_eq(tsim_writer_write(w, &rec, &err), 0, "%s", err.msg);
        tsim_record_free(&rec);
    }
    cr_assert_eq(tsim_writer_close(w, true, &err), 0);
    size_t n;
    char *text = slurp("fast.jsonl", &n);
    FILE *out = fopen("slow.jsonl", "wb");
    for (char *p = text; *p;) {
        char *nl = strchr(p, '\n');
        *nl = '\0';
        if (strncmp(p, "{\"microbatch\":", 14) == 0)
            fprintf(out, "{\"micro\\u0062atch\" : %s\r\n", p + 14);
        else
            fprintf(out, "%s\n", p);
        p = nl + 1;
    }
    fclose(out);
    free(text);

    tsim_reader *a, *b;
    cr_assert_eq(tsim_reader_open(&a, "fast.jsonl", NULL, &err), 0);
    cr_assert_eq(tsim_reader_open(&b, "slow.jsonl", NULL, &err), 0);
    const tsim_record *x, *y;
    int count = 0;
    while (tsim_reader_next(a, &x, &err) == 1) {
        cr_assert_eq(tsim_reader_next(b, &y, &err), 1, "%s", err.msg);
        cr_assert_eq(x->microbatch, y->microbatch);
        cr_assert_eq(x->layer, y->layer);
        cr_assert(memcmp(x->counts, y->counts, sizeof *x->counts * 8 * 32) == 0);
        count++;
    }
    cr_assert_eq(count, 200);
    tsim_reader_close(a);
    tsim_reader_close(b);
}

/* ---- CSV ---------------------------------------------------------------- */

Test(trace, csv_import)
{
    const char *csv = source_path("tests/data/trace/routing.csv");
    tsim_read_options o = {.ep = 4, .ranks_per_node = 2, .dataset = NULL};
    tsim_error err;
    tsim_reader *r;
    cr_assert_eq(tsim_reader_open(&r, csv, &o, &err), 0, "%s", err.msg);
    const tsim_trace_header *h = tsim_reader_header(r);
    cr_assert_eq(h->experts, 8);
    cr_assert_eq(h->ep, 4);
    cr_assert_eq(h->ranks_per_node, 2);
    cr_assert_eq(h->topk, 0);
    cr_assert_not(tsim_reader_rebucketed(r));
    cr_assert_str_eq(cJSON_GetObjectItem(h->meta, "file")->valuestring, "routing.csv");
    const tsim_record *rec;
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1, "%s", err.msg);
    cr_assert_str_eq(rec->tag, "gsm8k");
    cr_assert_eq(rec->line, 2);
    /* 40 over 4 ranks, 9 = 3+2+2+2 */
    cr_assert_eq(tsim_count(rec, 0, 0), 10);
    cr_assert_eq(tsim_count(rec, 0, 2), 3);
    cr_assert_eq(tsim_count(rec, 3, 2), 2);
    int n = 1;
    while (tsim_reader_next(r, &rec, &err) == 1) {
        if (++n == 4) {
            cr_assert_str_eq(rec->tag, "wiki, en", "a quoted dataset with a comma");
            cr_assert_eq(rec->microbatch, 0);
        }
        if (n == 5)
            cr_assert_eq(tsim_count(rec, 0, 0), 3, "12.0 reads as 12");
    }
    cr_assert_eq(n, 5);
    tsim_reader_close(r);

    tsim_read_options f = {.ep = 2, .ranks_per_node = 0, .dataset = "gsm8k"};
    int64_t records;
    cr_assert_eq(read_all(csv, &f, &records, &err), 0, "%s", err.msg);
    cr_assert_eq(records, 3);
    tsim_read_options none = {.ep = 2, .ranks_per_node = 0, .dataset = "nope"};
    cr_assert_eq(read_all(csv, &none, &records, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "routing.csv: no records with dataset \"nope\" (of 5 records)"));

    o.ep = 2;
    cr_assert_eq(read_all(source_path("tests/data/trace/routing-noindex.csv"), &o, &records, &err), 0, "%s", err.msg);
    cr_assert_eq(records, 3);
}

#define CSVH "dataset,iteration,layer_idx,0,1,2,3\n"

Test(trace, csv_errors)
{
    tsim_read_options ep2 = {.ep = 2, .ranks_per_node = 0, .dataset = NULL};
    expect_error("a.csv", CSVH "d,0,0,1,2,3,4\n",
                 "a.csv: a CSV trace carries no EP size: give --ep N (the number of ranks, dividing the number of "
                 "experts)");
    tsim_read_options ep3 = {.ep = 3, .ranks_per_node = 0, .dataset = NULL};
    expect_error_opts("b.csv", CSVH "d,0,0,1,2,3,4\n", &ep3,
                      "b.csv: experts 4 (CSV columns) is not divisible by --ep 3");
    expect_error_opts("c.csv", CSVH "d,0,0,1,-2,3,4\n", &ep2,
                      "c.csv:2:9: record 1: expert 1 is -2, expected a non-negative integer");
    expect_error_opts("d.csv", CSVH "d,0,0,1,2,3.5,4\n", &ep2,
                      "d.csv:2:11: record 1: expert 2 is 3.5, expected a non-negative integer");
    expect_error_opts("e.csv", CSVH "d,0,0,1,2,x,4\n", &ep2,
                      "e.csv:2:11: record 1: expert 2 is \"x\", expected a non-negative integer");
    expect_error_opts("f.csv", CSVH "d,0,0,1,2,,4\n", &ep2,
                      "f.csv:2:11: record 1: expert 2 is empty, expected a non-negative integer");
    expect_error_opts("g.csv", CSVH "d,0,0,1,2,3,1099511627777\n", &ep2,
                      "g.csv:2:13: record 1: expert 3 is 1099511627777, above the limit of 2^40");
    expect_error_opts("h.csv", CSVH "d,0,0,1,2,3,4\nd,0,1,1,2,3\n", &ep2,
                      "h.csv:3: record 2: row has 6 fields, expected 7 (as in the header)");
    expect_error_opts("i.csv", "dataset,iter,layer_idx,0,1\n", &ep2,
                      "i.csv:1:9: CSV header: column 2 is \"iter\", expected \"iteration\" (the header is "
                      "\"[index,]TAG,iteration,layer_idx[,rank],0,1,...\" (TAG: any name))");
    expect_error_opts("j.csv", "dataset,iteration,layer_idx,0,2\n", &ep2,
                      "j.csv:1:31: CSV header: column 5 is \"2\", expected expert \"1\"");
    expect_error_opts("k.csv", CSVH "d,-1,0,1,2,3,4\n", &ep2,
                      "k.csv:2:3: record 1: \"iteration\" is -1, expected a non-negative integer");
    expect_error_opts("l.csv", CSVH "d,0,0,1,2,3,4\nd,1,0,1,2,3,4\nd,1,0,4,3,2,1\n", &ep2,
                      "l.csv:4: record 3: duplicate record: microbatch 1, layer 0 of dataset \"d\" already appeared "
                      "as record 2");
    expect_error_opts("m.csv", CSVH, &ep2, "m.csv: empty trace: no records");
    expect_error_opts("o.csv", CSVH "\"d,0,0,1,2,3,4\n", &ep2, "o.csv:2:1: record 1: unterminated quoted field");
    expect_error_opts("p.csv", CSVH "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa,0,0,1,2,3,4\n", &ep2,
                      "p.csv:2:1: record 1: \"dataset\" is longer than 63 bytes");
    expect_error_opts("q.csv", "index,dataset,iteration\n", &ep2,
                      "q.csv:1: CSV header: expected \"[index,]TAG,iteration,layer_idx[,rank],0,1,...\" (TAG: any "
                      "name), the row ends before \"layer_idx\"");
    expect_error_opts("r.csv", "dataset,iteration,layer_idx\n", &ep2,
                      "r.csv:1: CSV header: no expert columns after \"layer_idx\"");
    expect_error_opts("n.csv", "", &ep2, "n.csv:1: expected the CSV header row on line 1");

    /* the same (iteration, layer) in two datasets is no duplicate */
    write_file("ok.csv", CSVH "a,0,0,1,2,3,4\nb,0,0,1,2,3,4\n");
    int64_t records;
    tsim_error err;
    cr_assert_eq(read_all("ok.csv", &ep2, &records, &err), 0, "%s", err.msg);
    cr_assert_eq(records, 2);
}

/* Cells are read exactly as written: no text after a closing quote ("a"b
 * was read as ab), counts that are integers in decimal, not ones that round
 * to an integer as a double (5.0000000000000001 was read as 5), and tags in
 * UTF-8 (an invalid one converted into a JSONL trace no reader accepts). */
Test(trace, csv_cells_are_read_exactly)
{
    const tsim_read_options ep2 = {.ep = 2};
    expect_error_opts("a.csv", CSVH "\"a\"b,0,0,1,2,3,4\n", &ep2,
                      "a.csv:2:4: record 1: text after the closing quote of a quoted field (a quote inside one is "
                      "written \"\")");
    expect_error_opts("b.csv", CSVH "d,0,0,1,\"2\"0,3,4\n", &ep2,
                      "b.csv:2:12: record 1: text after the closing quote of a quoted field (a quote inside one is "
                      "written \"\")");
    expect_error_opts("c.csv", "\"dataset\"x,iteration,layer_idx,0,1,2,3\n", &ep2,
                      "c.csv:1:10: CSV header: text after the closing quote of a quoted field (a quote inside one is "
                      "written \"\")");
    expect_error_opts("d.csv", CSVH "d,0,0,1,5.0000000000000001,3,4\n", &ep2,
                      "d.csv:2:9: record 1: expert 1 is 5.0000000000000001, expected a non-negative integer");
    expect_error_opts("e.csv", CSVH "d,0,0,1,2,3,4\nd,1.0000000000000000001,0,1,2,3,4\n", &ep2,
                      "e.csv:3:3: record 2: \"iteration\" is 1.0000000000000000001, expected a non-negative integer");
    expect_error_opts("f.csv", CSVH "d,0,0,1,2,1e-1,4\n", &ep2,
                      "f.csv:2:11: record 1: expert 2 is 1e-1, expected a non-negative integer");
    expect_error_opts("g.csv", CSVH "d,0,0,1,2,3,1e13\n", &ep2,
                      "g.csv:2:13: record 1: expert 3 is 1e13, above the limit of 2^40");
    expect_error_opts("h.csv", CSVH "d,0,0,1,2,3,1e999999999999\n", &ep2,
                      "h.csv:2:13: record 1: expert 3 is 1e999999999999, above the limit of 2^40");
    expect_error_opts("i.csv", CSVH "d,0,0,1,2,3,1.2.3\n", &ep2,
                      "i.csv:2:13: record 1: expert 3 is \"1.2.3\", expected a non-negative integer");
    expect_error_opts("j.csv", CSVH "d,0,0,1,2,3,1e\n", &ep2,
                      "j.csv:2:13: record 1: expert 3 is \"1e\", expected a non-negative integer");
    expect_error_opts("k.csv", CSVH "ok,0,0,1,2,3,4\nx\xff\xfey,0,1,1,2,3,4\n", &ep2,
                      "k.csv:3:1: record 2: \"dataset\" is not valid UTF-8 (byte 2 of the value is 0xff): tags are "
                      "JSON strings");
    expect_error_opts("l.csv", "da\xc3\x28,iteration,layer_idx,0,1,2,3\nd,0,0,1,2,3,4\n", &ep2,
                      "l.csv:1:1: CSV header: the name of column 1 is not valid UTF-8");

    /* what is an integer stays one, whatever its spelling */
    write_file("ok.csv", CSVH "\"a\"\"b\" ,0,0,12.0,1e3,+5,1.5e1\n"
                              "caf\xc3\xa9,1.,0,0.0,0e999999,-0,000000000000000000000000000007.000000000000000000000\n");
    tsim_reader *r;
    tsim_error err;
    cr_assert_eq(tsim_reader_open(&r, "ok.csv", &ep2, &err), 0, "%s", err.msg);
    const tsim_record *rec;
    static const int64_t want[2][4] = {{12, 1000, 5, 15}, {0, 0, 0, 7}};
    static const char *const tags[2] = {"a\"b", "caf\xc3\xa9"};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(tsim_reader_next(r, &rec, &err), 1, "%s", err.msg);
        int64_t tpe[4];
        tsim_record_expert_totals(rec, tpe);
        cr_assert_arr_eq(tpe, want[i], sizeof want[i], "record %d", i);
        cr_assert_str_eq(rec->tag, tags[i]);
        cr_assert_eq(rec->microbatch, i);
    }
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 0, "%s", err.msg);
    tsim_reader_close(r);
}

Test(trace, crlf_gzip_csv_and_progress)
{
    write_gz("r.csv.gz", "index,dataset,iteration,layer_idx,0,1\r\n0,x,0,0,3,1\r\n1,x,0,1,0,2\r\n");
    tsim_read_options o = {.ep = 2, .ranks_per_node = 0, .dataset = NULL};
    tsim_error err;
    int64_t records;
    cr_assert_eq(read_all("r.csv.gz", &o, &records, &err), 0, "%s", err.msg);
    cr_assert_eq(records, 2);

    write_file("crlf.jsonl", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2}\r\n"
                             "{\"microbatch\":0,\"layer\":0,\"counts\":[[1,2,3,4],[5,6,7,8]]}\r\n");
    tsim_reader *r;
    cr_assert_eq(tsim_reader_open(&r, "crlf.jsonl", NULL, &err), 0, "%s", err.msg);
    const tsim_record *rec;
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1, "%s", err.msg);
    cr_assert_eq(tsim_count(rec, 1, 3), 8);
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 0);
    int64_t done, total;
    tsim_reader_progress(r, &done, &total);
    cr_assert_eq(total, 122);
    cr_assert_eq(done, total);
    cr_assert_eq(tsim_reader_bytes(r), 122);
    tsim_reader_close(r);
}

/* ---- bad input: one test per class of trace-format.md ---------------------- */

Test(trace, malformed_json)
{
    expect_error("a.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"counts\":[[1,2,3,4],[5,6,7,8]]\n",
                 "a.jsonl:2:57: record 1: malformed JSON: unexpected end of input after \"s\":[[1,2,3,4],[5,6,7,8]]\"");
    expect_error("b.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"counts\":[[1,2,3,4],[5,6 7,8]]}\n",
                 "b.jsonl:2:52: record 1: malformed JSON near \"7,8]]}\"");
    expect_error("c.jsonl", HDR4 REC(0, 0) "{\"microbatch\":0,\"layer\":1,\"counts\":[[1,2,3,4],[5,6,7,8]]} x\n",
                 "c.jsonl:3:59: record 2: malformed JSON near \"x\"");
    expect_error("d.jsonl", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2\n",
                 "d.jsonl:1:61: malformed JSON: unexpected end of input after \"on\":1,\"experts\":4,\"ep\":2\"");
    expect_error("e.json",
                 "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\n\"records\":[\n" REC(
                     0, 0) ",\n{\"microbatch\":0,\"layer\":1,\"counts\":[[1,2,3,4],[5,6,7,8]]]\n]}\n",
                 "e.json:5:57: record 2: malformed JSON near \"]\"");
    expect_error("f.json", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2\n\"records\":[]}\n",
                 "f.json:2:1: malformed JSON: expected ',' or '}' after a value");
    expect_error(
        "g.json",
        "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"records\":[\n" REC(0, 0) ",\n]}\n",
        "g.json:4:1: malformed JSON: expected a record after ',' (no trailing commas in JSON)");
    expect_error(
        "h.json",
        "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"records\":[\n" REC(0, 0) "]} {}\n",
        "h.json:3:4: malformed JSON: expected nothing after the trace object");
    expect_error("i.json",
                 "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\n  \"records\":[\n" REC(0, 0),
                 "i.json:2:13: malformed JSON: the \"records\" array opened here is never closed");
    expect_error("j.json", "[1, 2]", "j.json:1:1: malformed JSON: expected '{' to open the trace object");
    expect_error("k.json", "{\"format\": \"moe-routing-trace\", \"version\": tru}",
                 "k.json:1:44: malformed JSON near \"tru}\"");
    expect_error("l.jsonl", HDR4 "[1,2]\n", "l.jsonl:2: record 1: expected a record object, got an array");
}

Test(trace, missing_keys_and_types)
{
    expect_error("a.jsonl", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4}\n" REC(0, 0),
                 "a.jsonl:1: header: missing required key \"ep\"");
    expect_error("b.json", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2}",
                 "b.json:1: header: missing required key \"records\"");
    expect_error("c.json", "{\"version\":1,\"experts\":4,\"ep\":2,\"records\":[]}",
                 "c.json:1: header: missing required key \"format\" (expected \"moe-routing-trace\")");
    expect_error("d.jsonl", HDR4 "{\"microbatch\":0,\"counts\":[[1,2,3,4],[5,6,7,8]]}\n",
                 "d.jsonl:2: record 1: missing required key \"layer\"");
    expect_error("e.json",
                 "{\"format\":\"moe-routing-trace\",\"version\":1,\n\"experts\":\"4\",\"ep\":2,\"records\":[]}",
                 "e.json:2: header: \"experts\" must be an integer, got a string");
    expect_error("f.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"counts\":{}}\n",
                 "f.jsonl:2: record 1: \"counts\" must be an array of 2 rows (ep) of 4 numbers, got an object");
    expect_error("g.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"counts\":[[1,2,3,4],7]}\n",
                 "g.jsonl:2: record 1: \"counts\" row 1 must be an array of 4 numbers, got a number");
    expect_error("h.jsonl", HDR4 "{\"microbatch\":\"0\",\"layer\":0,\"counts\":[[1,2,3,4],[5,6,7,8]]}\n",
                 "h.jsonl:2: record 1: \"microbatch\" must be a non-negative integer, got a string");
    expect_error("i.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"expert_counts\":null}\n",
                 "i.jsonl:2: record 1: \"expert_counts\" must be an array of 4 numbers, got null");
    expect_error("j.jsonl", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"meta\":[]}\n",
                 "j.jsonl:1: header: \"meta\" must be an object, got an array");
    expect_error("k.jsonl", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"ep\":4}\n",
                 "k.jsonl:1: header: key \"ep\" appears twice");
    expect_error("l.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"layer\":1,\"counts\":[[1,2,3,4],[5,6,7,8]]}\n",
                 "l.jsonl:2: record 1: key \"layer\" appears twice");
    expect_error("m.jsonl", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"topk\":9}\n",
                 "m.jsonl:1: header: \"topk\" is 9, above the number of experts of 4");
    expect_error("n.jsonl", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"records\":[]}\n",
                 "n.jsonl:1: header: \"records\" does not belong in a JSON Lines header (records follow, one per "
                 "line); is this a JSON document named .jsonl?");
}

Test(trace, bad_counts)
{
    expect_error("a.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"counts\":[[1,2,3,4],[5,-6,7,8]]}\n",
                 "a.jsonl:2: record 1: \"counts\"[1][1] is -6, expected a non-negative integer");
    expect_error("b.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"counts\":[[1,2,3.5,4],[5,6,7,8]]}\n",
                 "b.jsonl:2: record 1: \"counts\"[0][2] is 3.5, expected a non-negative integer");
    expect_error("c.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"counts\":[[1,2,3,\"4\"],[5,6,7,8]]}\n",
                 "c.jsonl:2: record 1: \"counts\"[0][3] must be a non-negative integer, got a string");
    expect_error("d.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"counts\":[[1,2,3,4],[5,6,7,1099511627777]]}\n",
                 "d.jsonl:2: record 1: \"counts\"[1][3] is 1099511627777, above the limit of 2^40");
    expect_error("e.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"expert_counts\":[1,2,1e300,4]}\n",
                 "e.jsonl:2: record 1: \"expert_counts\"[2] is 1e+300, above the limit of 2^40");
    expect_error("f.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"expert_counts\":[1,2,true,4]}\n",
                 "f.jsonl:2: record 1: \"expert_counts\"[2] must be a non-negative integer, got a boolean");
    /* exactly 2^40 is allowed, and 1e1 is the integer 10 */
    write_file("ok.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"expert_counts\":[1099511627776,1e1,0,4]}\n");
    tsim_error err;
    tsim_reader *r;
    cr_assert_eq(tsim_reader_open(&r, "ok.jsonl", NULL, &err), 0, "%s", err.msg);
    const tsim_record *rec;
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1, "%s", err.msg);
    cr_assert_eq(tsim_count(rec, 0, 0), INT64_C(1) << 39);
    cr_assert_eq(tsim_count(rec, 1, 1), 5);
    tsim_reader_close(r);
}

Test(trace, shape_and_limits)
{
    expect_error("a.jsonl", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":6,\"ep\":4}\n" REC(0, 0),
                 "a.jsonl:1: header: \"experts\" 6 is not divisible by \"ep\" 4");
    expect_error("b.jsonl", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":8192,\"ep\":8192}\n",
                 "b.jsonl:1: header: \"ep\" is 8192, above the limit of 4096");
    expect_error("c.jsonl", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":0,\"ep\":1}\n",
                 "c.jsonl:1: header: \"experts\" is 0, expected at least 1");
    expect_error("d.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"counts\":[[1,2,3,4],[5,6,7,8],[1,1,1,1]]}\n",
                 "d.jsonl:2: record 1: \"counts\" has 3 rows, expected 2 (ep)");
    expect_error("e.jsonl", HDR4 REC(0, 0) REC(0, 1) "{\"microbatch\":0,\"layer\":2,\"counts\":[[1,2,3,4],[5,6,7]]}\n",
                 "e.jsonl:4: record 3: \"counts\" row 1 has 3 numbers, expected 4");
    expect_error("f.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"expert_counts\":[1,2,3]}\n",
                 "f.jsonl:2: record 1: \"expert_counts\" has 3 numbers, expected 4 (experts)");
    expect_error("g.json",
                 "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"ranks_per_node\":0,"
                 "\"records\":[]}",
                 "g.json:1: header: \"ranks_per_node\" is 0, expected at least 1");
}

/* The limits come before any allocation sized by the input: with the
 * address space capped, a 2e9-expert header still gets the limit message. */
Test(trace, limits_before_allocation)
{
#ifndef __SANITIZE_ADDRESS__
    struct rlimit lim = {(rlim_t)1 << 30, (rlim_t)1 << 30};
    cr_assert_eq(setrlimit(RLIMIT_AS, &lim), 0);
#endif
    expect_error("a.json",
                 "{\"format\":\"moe-routing-trace\",\"version\":1,\n\"experts\":2000000000,\"ep\":1,\"records\":[]}",
                 "a.json:2: header: \"experts\" is 2000000000, above the limit of 65536");
    expect_error("b.jsonl", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":64,\"ep\":1e12}\n",
                 "b.jsonl:1: header: \"ep\" is 1000000000000, above the limit of 4096");
    /* a CSV header wider than the limit */
    FILE *f = fopen("wide.csv", "w");
    fputs("dataset,iteration,layer_idx", f);
    for (int e = 0; e < TSIM_MAX_EXPERTS + 1; e++)
        fprintf(f, ",%d", e);
    fputs("\n", f);
    fclose(f);
    tsim_read_options o = {.ep = 1, .ranks_per_node = 0, .dataset = NULL};
    tsim_error err;
    cr_assert_eq(read_all("wide.csv", &o, NULL, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "wide.csv:1: CSV header: 65537 expert columns, above the limit of 65536");
}

Test(trace, bad_home)
{
#define HOME_DOC(h)                                                                                                    \
    "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"home\":" h ",\"records\":[]}"
    expect_error("a.json", HOME_DOC("[0,1,0]"),
                 "a.json:1: header: \"home\" has 3 entries, expected 4 (one per expert)");
    expect_error("b.json", HOME_DOC("[0,1,2,1]"), "b.json:1: header: \"home\"[2] is 2, not a rank in 0..1");
    expect_error("c.json", HOME_DOC("[0,1,0,0]"),
                 "c.json:1: header: \"home\" gives rank 0 more than 2 experts (every rank needs experts/ep = 2)");
    expect_error("d.json", HOME_DOC("[0,1,0.5,1]"), "d.json:1: header: \"home\"[2] is 0.5, not a rank in 0..1");
    expect_error("e.json", HOME_DOC("{}"),
                 "e.json:1: header: \"home\" must be an array of 4 ranks or null, got an object");
#undef HOME_DOC
}

Test(trace, bad_gzip)
{
    /* enough records that the compressed stream spans many input buffers */
    size_t cap = 1 << 20, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap, HDR4);
    for (int i = 0; len + 200 < cap; i++)
        len +=
            (size_t)snprintf(text + len, cap - len,
                             "{\"microbatch\":%d,\"layer\":0,\"counts\":[[%d,2,3,4],[5,%d,7,8]]}\n", i, i % 97, i % 89);
    write_gz("good.jsonl.gz", text);
    free(text);
    tsim_error err;
    int64_t records;
    cr_assert_eq(read_all("good.jsonl.gz", NULL, &records, &err), 0, "%s", err.msg);
    cr_assert_gt(records, 10000);

    size_t n;
    char *gz = slurp("good.jsonl.gz", &n);
    FILE *f = fopen("cut.jsonl.gz", "wb");
    fwrite(gz, 1, n / 2, f);
    fclose(f);
    cr_assert_eq(read_all("cut.jsonl.gz", NULL, NULL, &err), TSIM_E_INPUT);
    cr_assert(strncmp(err.msg, "cut.jsonl.gz:", 13) == 0, "%s", err.msg);
    cr_assert(strstr(err.msg, ": truncated gzip file (the compressed data ends early)"), "%s", err.msg);

    gz[n - 6] ^= 0x55; /* inside the CRC32 trailer */
    f = fopen("crc.jsonl.gz", "wb");
    fwrite(gz, 1, n, f);
    fclose(f);
    cr_assert_eq(read_all("crc.jsonl.gz", NULL, NULL, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, ": corrupt gzip data: incorrect data check"), "%s", err.msg);

    for (size_t i = n / 3; i < n / 3 + 64; i++)
        gz[i] = (char)0xff;
    f = fopen("junk.jsonl.gz", "wb");
    fwrite(gz, 1, n, f);
    fclose(f);
    cr_assert_eq(read_all("junk.jsonl.gz", NULL, NULL, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, ": corrupt gzip data: "), "%s", err.msg);
    free(gz);

    expect_error("plain.jsonl.gz", HDR4 REC(0, 0), "plain.jsonl.gz:1: not a gzip file, though its name ends in .gz");
    write_gz("hidden.jsonl", HDR4 REC(0, 0));
    cr_assert_eq(read_all("hidden.jsonl", NULL, NULL, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "hidden.jsonl:1: the file is gzip-compressed; name it with a .gz suffix to read it");
}

Test(trace, empty_traces)
{
    expect_error("a.json", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"records\":[ ]}",
                 "a.json: empty trace: no records");
    expect_error("b.jsonl", HDR4 "\n\n", "b.jsonl: empty trace: no records");
    expect_error("c.jsonl", "", "c.jsonl:1: empty file: expected the header object on line 1");
    expect_error("d.json", " \n", "d.json:1: empty file: expected a JSON trace object");
    write_gz("e.jsonl.gz", HDR4);
    tsim_error err;
    cr_assert_eq(read_all("e.jsonl.gz", NULL, NULL, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "e.jsonl.gz: empty trace: no records");
}

Test(trace, format_and_version)
{
    expect_error("a.jsonl", "{\"format\":\"moe-trace\",\"version\":1,\"experts\":4,\"ep\":2}\n",
                 "a.jsonl:1: header: \"format\" is \"moe-trace\", expected \"moe-routing-trace\"");
    expect_error("b.json", "{\"format\":\"moe-routing-trace\",\n\"version\":2,\"experts\":4,\"ep\":2,\"records\":[]}",
                 "b.json:2: header: unsupported \"version\" 2 (this reader reads version 1)");
    expect_error("c.jsonl", "{\"format\":7,\"version\":1,\"experts\":4,\"ep\":2}\n",
                 "c.jsonl:1: header: \"format\" must be a string, got a number");
}

Test(trace, counts_xor_expert_counts)
{
    expect_error("a.jsonl",
                 HDR4 "{\"microbatch\":0,\"layer\":0,\"counts\":[[1,2,3,4],[5,6,7,8]],\"expert_counts\":[1,2,3,4]}\n",
                 "a.jsonl:2: record 1: has both \"counts\" and \"expert_counts\"; a record takes exactly one");
    expect_error("b.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0}\n",
                 "b.jsonl:2: record 1: has neither \"counts\" nor \"expert_counts\"");
}

Test(trace, negative_microbatch_and_layer)
{
    expect_error("a.jsonl", HDR4 "{\"microbatch\":-1,\"layer\":0,\"counts\":[[1,2,3,4],[5,6,7,8]]}\n",
                 "a.jsonl:2: record 1: \"microbatch\" is -1, expected a non-negative integer");
    expect_error("b.json",
                 "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"records\":[\n" REC(
                     0, 0) ",\n\n  {\"microbatch\":0,\"layer\":-2,\"counts\":[[1,2,3,4],[5,6,7,8]]}]}",
                 "b.json:5: record 2: \"layer\" is -2, expected a non-negative integer");
    expect_error("c.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0.5,\"counts\":[[1,2,3,4],[5,6,7,8]]}\n",
                 "c.jsonl:2: record 1: \"layer\" is 0.5, expected a non-negative integer");
}

Test(trace, duplicates)
{
    expect_error("a.jsonl", HDR4 REC(0, 0) REC(0, 0),
                 "a.jsonl:3: record 2: duplicate record: microbatch 0, layer 0 already appeared as record 1");
    expect_error("b.jsonl", HDR4 REC(0, 0) REC(0, 1) REC(0, 2) REC(0, 1),
                 "b.jsonl:5: record 4: duplicate record: microbatch 0, layer 1 already appeared as record 2");
    expect_error("c.json",
                 "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"records\":[\n" REC(
                     3, 5) ",\n" REC(3, 5) "]}",
                 "c.json:4: record 2: duplicate record: microbatch 3, layer 5 already appeared as record 1");
    /* many layers in one microbatch: the set grows and still finds the first */
    size_t cap = 1 << 20, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap, HDR4);
    for (int l = 0; l < 1000; l++)
        len += (size_t)snprintf(text + len, cap - len, "{\"microbatch\":7,\"layer\":%d,\"expert_counts\":[1,1,1,1]}\n",
                                l * 7919);
    len += (size_t)snprintf(text + len, cap - len, "{\"microbatch\":7,\"layer\":%d,\"expert_counts\":[1,1,1,1]}\n",
                            500 * 7919);
    expect_error(
        "d.jsonl", text,
        "d.jsonl:1002: record 1001: duplicate record: microbatch 7, layer 3959500 already appeared as record 501");
    free(text);
    /* a record repeated after another microbatch is still found */
    expect_error("far.jsonl", HDR4 REC(0, 0) REC(0, 1) REC(1, 0) REC(1, 1) REC(0, 0),
                 "far.jsonl:6: record 5: duplicate record: microbatch 0, layer 0 already appeared as record 1");
    /* the same layer in different microbatches is no duplicate */
    write_file("ok.jsonl", HDR4 REC(0, 0) REC(0, 1) REC(1, 0) REC(1, 1) REC(2, 0));
    tsim_error err;
    int64_t records;
    cr_assert_eq(read_all("ok.jsonl", NULL, &records, &err), 0, "%s", err.msg);
    cr_assert_eq(records, 5);
}

Test(trace, unknown_keys_warn_once_per_name)
{
    write_file("w.jsonl", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"creator\":\"x\"}\n"
                          "{\"microbatch\":0,\"layer\":0,\"weight\":1,\"counts\":[[1,2,3,4],[5,6,7,8]]}\n"
                          "{\"microbatch\":0,\"layer\":1,\"weight\":2,\"extra\":{},\"counts\":[[1,2,3,4],[5,6,7,8]]}\n"
                          "{\"microbatch\":0,\"layer\":2,\"creator\":3,\"counts\":[[1,2,3,4],[5,6,7,8]]}\n");
    tsim_error err;
    tsim_reader *r;
    cr_assert_eq(tsim_reader_open(&r, "w.jsonl", NULL, &err), 0, "%s", err.msg);
    cr_assert_str_eq(tsim_reader_take_warning(r), "w.jsonl:1: unknown key \"creator\" in the header ignored");
    cr_assert_null(tsim_reader_take_warning(r));
    const tsim_record *rec;
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1);
    cr_assert_str_eq(tsim_reader_take_warning(r), "w.jsonl:2: record 1: unknown key \"weight\" in a record ignored");
    cr_assert_null(tsim_reader_take_warning(r));
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1);
    cr_assert_str_eq(tsim_reader_take_warning(r), "w.jsonl:3: record 2: unknown key \"extra\" in a record ignored");
    cr_assert_null(tsim_reader_take_warning(r));
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1);
    cr_assert_null(tsim_reader_take_warning(r), "\"creator\" was already reported");
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 0);
    tsim_reader_close(r);

    /* the JSON document gives each key its own line */
    write_file("w.json", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\n"
                         "\"records\":[" REC(0, 0) "],\n"
                                                   "\"note\":\"after the records\"}");
    cr_assert_eq(tsim_reader_open(&r, "w.json", NULL, &err), 0, "%s", err.msg);
    cr_assert_str_eq(tsim_reader_take_warning(r), "w.json:4: unknown key \"note\" in the header ignored");
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1);
    cr_assert_eq(rec->line, 2);
    tsim_reader_close(r);
}

Test(trace, line_limit)
{
    tsim_trace_set_max_line(40);
    expect_error("a.jsonl", HDR4, "a.jsonl:1: line is longer than the limit of 40 bytes");
    /* the header has 61 bytes, the records 57 and 63 */
    const char *text = HDR4 REC(0, 0) "{\"microbatch\":0,\"layer\":1,      \"counts\":[[1,2,3,4],[5,6,7,8]]}\n";
    tsim_trace_set_max_line(62);
    expect_error("b.jsonl", text, "b.jsonl:3: line is longer than the limit of 62 bytes");
    tsim_trace_set_max_line(63);
    tsim_error err;
    int64_t records;
    cr_assert_eq(read_all("b.jsonl", NULL, &records, &err), 0, "a line of exactly the limit is fine: %s", err.msg);
    cr_assert_eq(records, 2);
    tsim_trace_set_max_line(0);
}

Test(trace, sticky_errors)
{
    write_file("s.jsonl", HDR4 REC(0, 0) "{\"microbatch\":0}\n" REC(0, 2));
    tsim_error err;
    tsim_reader *r;
    cr_assert_eq(tsim_reader_open(&r, "s.jsonl", NULL, &err), 0);
    const tsim_record *rec;
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1);
    cr_assert_eq(tsim_reader_next(r, &rec, &err), TSIM_E_INPUT);
    char first[TSIM_ERROR_MSG_MAX];
    snprintf(first, sizeof first, "%s", err.msg);
    tsim_error_clear(&err);
    cr_assert_eq(tsim_reader_next(r, &rec, &err), TSIM_E_INPUT, "no reading past an error");
    cr_assert_str_eq(err.msg, first);
    tsim_reader_close(r);
}

/* Every prefix of a valid trace, and every single-byte change to it, reads
 * either cleanly or with an input error naming the file: no crash, no
 * internal error, no other status. */
/* Rewrites name from scratch: unlinking first spares ext4 its flush on a
 * truncating rewrite, which would make thousands of rewrites slow. */
static void rewrite(const char *name, const char *text, size_t n)
{
    unlink(name);
    FILE *f = fopen(name, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(text, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static void mutate_all(const char *name, const char *text, size_t n)
{
    static const char subst[] = {'}', ']', ',', '"', '-', '9', ' ', '\n', 'x', '\0'};
    tsim_error err;
    for (size_t cut = 0; cut <= n; cut++) {
        rewrite(name, text, cut);
        int rc = read_all(name, NULL, NULL, &err);
        cr_assert(rc == 0 || rc == TSIM_E_INPUT, "%s cut at %zu: status %d: %s", name, cut, rc, err.msg);
        if (rc)
            cr_assert(strncmp(err.msg, name, strlen(name)) == 0, "%s", err.msg);
    }
    char *copy = malloc(n);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < sizeof subst; k++) {
            memcpy(copy, text, n);
            copy[i] = subst[k];
            rewrite(name, copy, n);
            int rc = read_all(name, NULL, NULL, &err);
            cr_assert(rc == 0 || rc == TSIM_E_INPUT, "%s byte %zu = %d: status %d: %s", name, i, subst[k], rc,
                      err.msg);
        }
    }
    free(copy);
}

Test(trace, prefixes_and_mutations_never_crash)
{
    convert(source_path("traces/tiny-4rank.json"), "t.jsonl", NULL);
    size_t n;
    char *doc = slurp(source_path("traces/tiny-4rank.json"), &n);
    mutate_all("m.json", doc, n);
    free(doc);
    char *lines = slurp("t.jsonl", &n);
    mutate_all("m.jsonl", lines, n);
    free(lines);
    char *csv = slurp(source_path("tests/data/trace/routing.csv"), &n);
    tsim_read_options o = {.ep = 4, .ranks_per_node = 0, .dataset = NULL};
    tsim_error err;
    for (size_t cut = 0; cut <= n; cut++) {
        rewrite("m.csv", csv, cut);
        int rc = read_all("m.csv", &o, NULL, &err);
        cr_assert(rc == 0 || rc == TSIM_E_INPUT, "csv cut at %zu: %s", cut, err.msg);
    }
    free(csv);
}

/* ---- issue 10: NUL bytes, strict JSON, the document size limit, CSV tags --- */

static void write_bytes(const char *name, const char *data, size_t n)
{
    FILE *f = fopen(name, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

/* Content with NUL bytes: the length comes from the array, not strlen. */
#define EXPECT_BYTES(name, text, opts, message)                                                                        \
    do {                                                                                                               \
        static const char content_[] = text;                                                                           \
        write_bytes(name, content_, sizeof content_ - 1);                                                              \
        tsim_error err_;                                                                                               \
        int rc_ = read_all(name, opts, NULL, &err_);                                                                   \
        cr_assert_eq(rc_, TSIM_E_INPUT, "%s: status %d (%s)", name, rc_, err_.msg);                                    \
        cr_assert_str_eq(err_.msg, message);                                                                           \
    } while (0)

#define NUL_MSG "NUL byte (text has none: is the file binary or damaged?)"

Test(trace, nul_byte_is_an_error_never_a_blank_line)
{
    tsim_read_options ep2 = {.ep = 2, .ranks_per_node = 0, .dataset = NULL};
    /* a line that starts with NUL used to pass as blank: one record fewer, exit 0 */
    EXPECT_BYTES("a.jsonl", HDR4 REC(0, 0) "\0" REC(0, 1), NULL, "a.jsonl:3:1: " NUL_MSG);
    EXPECT_BYTES("b.jsonl", HDR4 "{\"microbatch\":0,\"la\0yer\":0,\"counts\":[[1,2,3,4],[5,6,7,8]]}\n", NULL,
                 "b.jsonl:2:20: " NUL_MSG);
    /* a NUL after a complete record: the fast path would have stopped there */
    EXPECT_BYTES("c.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"counts\":[[1,2,3,4],[5,6,7,8]]}\0junk\n", NULL,
                 "c.jsonl:2:58: " NUL_MSG);
    EXPECT_BYTES("d.jsonl", "{\"format\":\"moe-routing-trace\"\0,\"version\":1}\n" REC(0, 0), NULL,
                 "d.jsonl:1:30: " NUL_MSG);
    EXPECT_BYTES("e.csv", CSVH "d,0,0,1,2,3,4\n\0d,0,1,1,2,3,4\n", &ep2, "e.csv:3:1: " NUL_MSG);
    EXPECT_BYTES("f.csv", CSVH "d,0,0,1,2,3,4\nd,0,1,1,2\0,3,4\n", &ep2, "f.csv:3:10: " NUL_MSG);
    EXPECT_BYTES("g.csv", "dataset,iteration,\0layer_idx,0,1,2,3\n", &ep2, "g.csv:1:19: " NUL_MSG);
    /* JSON documents: in a record (fast path), between records, in the header */
    EXPECT_BYTES("h.json",
                 "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"records\":[\n" REC(0, 0) ",\n"
                 "{\"microbatch\":0,\"layer\":1,\"counts\":[[1,2,3,4],[5,6,7,\0]]}]}\n",
                 NULL, "h.json:4:54: " NUL_MSG);
    EXPECT_BYTES("i.json", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"records\":[\n" REC(0, 0) "\0]}\n",
                 NULL, "i.json:3:1: " NUL_MSG);
    EXPECT_BYTES("j.json", "\0{}", NULL, "j.json:1:1: " NUL_MSG);

    /* .gz: the same, on the uncompressed text */
    static const char text[] = HDR4 REC(0, 0) "\0" REC(0, 1);
    gzFile g = gzopen("k.jsonl.gz", "wb");
    cr_assert_not_null(g);
    cr_assert_eq(gzwrite(g, text, sizeof text - 1), (int)(sizeof text - 1));
    cr_assert_eq(gzclose(g), Z_OK);
    tsim_error err;
    cr_assert_eq(read_all("k.jsonl.gz", NULL, NULL, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "k.jsonl.gz:3:1: " NUL_MSG);
    static const char csv[] = CSVH "\0d,0,0,1,2,3,4\n";
    g = gzopen("l.csv.gz", "wb");
    cr_assert_eq(gzwrite(g, csv, sizeof csv - 1), (int)(sizeof csv - 1));
    cr_assert_eq(gzclose(g), Z_OK);
    cr_assert_eq(read_all("l.csv.gz", &ep2, NULL, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "l.csv.gz:2:1: " NUL_MSG);
}

#define RECPFX "{\"microbatch\":0,\"layer\":0,\"counts\":[["
#define DOCPFX "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,"

Test(trace, json_follows_rfc_8259)
{
    /* numbers: no leading zeros, nothing that turns into 0 or infinity */
    expect_error("a.jsonl", HDR4 RECPFX "00012,2,3,4],[5,6,7,8]]}\n",
                 "a.jsonl:2:38: record 1: malformed JSON: number 00012 has a leading zero (not allowed in JSON)");
    expect_error("b.jsonl", HDR4 RECPFX "1e-400,2,3,4],[5,6,7,8]]}\n",
                 "b.jsonl:2:38: record 1: malformed JSON: number 1e-400 is too small for a double (it would read "
                 "as 0)");
    expect_error("c.jsonl", HDR4 RECPFX "1,2,3,4],[5,6,7,1E400]]}\n",
                 "c.jsonl:2:54: record 1: malformed JSON: number 1E400 is too large for a double");
    expect_error("d.jsonl", "{\"format\":\"moe-routing-trace\",\"version\":01,\"experts\":4,\"ep\":2}\n",
                 "d.jsonl:1:41: malformed JSON: number 01 has a leading zero (not allowed in JSON)");
    expect_error("e.jsonl", HDR4 RECPFX "1.,2,3,4],[5,6,7,8]]}\n", "e.jsonl:2:40: record 1: malformed JSON near \",2,3,4],[5,6,7,8]]}\"");
    expect_error("f.jsonl", HDR4 RECPFX "+1,2,3,4],[5,6,7,8]]}\n", "f.jsonl:2:38: record 1: malformed JSON near \"+1,2,3,4],[5,6,7,8]]}\"");
    /* whitespace: space, tab, CR and LF only */
    expect_error("g.jsonl", HDR4 "{\"microbatch\":0,\v\"layer\":0,\"counts\":[[1,2,3,4],[5,6,7,8]]}\n",
                 "g.jsonl:2:17: record 1: malformed JSON: byte 0x0b is not JSON whitespace (only space, tab, CR and "
                 "LF are)");
    expect_error("h.jsonl", HDR4 REC(0, 0) "\x01" REC(0, 1),
                 "h.jsonl:3:1: record 2: malformed JSON: byte 0x01 is not JSON whitespace (only space, tab, CR and LF "
                 "are)");
    expect_error("i.json", "{\"format\":\"moe-routing-trace\",\x01\"version\":1,\"experts\":4,\"ep\":2,\"records\":[]}",
                 "i.json:1:31: malformed JSON: byte 0x01 is not JSON whitespace (only space, tab, CR and LF are)");
    expect_error("j.json", DOCPFX "\"meta\":{\"a\":\f1},\"records\":[" REC(0, 0) "]}",
                 "j.json:1:74: malformed JSON: byte 0x0c is not JSON whitespace (only space, tab, CR and LF are)");
    expect_error("k.json", DOCPFX "\"records\":[\v" REC(0, 0) "]}",
                 "k.json:1:73: record 1: malformed JSON: byte 0x0b is not JSON whitespace (only space, tab, CR and LF are)");
    /* strings: no \u0000 (it cut "records\u0000x" to "records"), valid UTF-8 and escapes */
    expect_error("l.json", DOCPFX "\"records\\u0000x\":[]}",
                 "l.json:1:70: malformed JSON: \\u0000 (NUL) in a string is not supported");
    expect_error("m.jsonl", HDR4 "{\"microbatch\\u0000\":0,\"layer\":0,\"counts\":[[1,2,3,4],[5,6,7,8]]}\n",
                 "m.jsonl:2:13: record 1: malformed JSON: \\u0000 (NUL) in a string is not supported");
    expect_error("n.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"dataset\":\"a\xff\",\"counts\":[[1,2,3,4],[5,6,7,8]]}\n",
                 "n.jsonl:2:39: record 1: malformed JSON: invalid UTF-8 (byte 0xff) in a string");
    expect_error("o.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"dataset\":\"a\\ud800\",\"counts\":[[1,2,3,4],[5,6,7,8]]}\n",
                 "o.jsonl:2:39: record 1: malformed JSON: unpaired UTF-16 surrogate \\uD800 in a string");
    expect_error("p.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"dataset\":\"a\tb\",\"counts\":[[1,2,3,4],[5,6,7,8]]}\n",
                 "p.jsonl:2:39: record 1: malformed JSON: control character 0x09 in a string (JSON needs it escaped)");
    expect_error("q.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"dataset\":\"a\\x\",\"counts\":[[1,2,3,4],[5,6,7,8]]}\n",
                 "q.jsonl:2:39: record 1: malformed JSON: invalid escape \\x in a string");
    expect_error("r.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"dataset\":\"\xed\xa0\x80\",\"counts\":[[1,2,3,4],[5,6,7,8]]}\n",
                 "r.jsonl:2:38: record 1: malformed JSON: invalid UTF-8 (byte 0xed) in a string");
    /* nesting is bounded */
    char deep[2000];
    int n = snprintf(deep, sizeof deep, "%s", "{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4,\"ep\":2,\"meta\":{\"x\":");
    for (int i = 0; i < 600; i++)
        deep[n++] = '[';
    deep[n++] = '\n';
    deep[n] = '\0';
    expect_error("s.jsonl", deep, "s.jsonl:1:584: malformed JSON: nested deeper than 512 levels");

    /* what RFC 8259 allows still reads: escapes, UTF-8, surrogate pairs, exponents */
    write_file("ok.jsonl", HDR4 "{\"microbatch\":0,\"layer\":0,\"dataset\":\"g\\u00e9 \xc3\xa9 \\ud83d\\ude00\\n\","
                           "\"counts\":[[1e0,2.0E+0,3,4],[5,6,7,0.8e1]]}\r\n"
                           "\t{ \"microbatch\" : 0 , \"layer\" : 1 , \"counts\" : [ [ 1 , 2 , 3 , 4 ] , [ 5 , 6 , 7 , 8 ] ] }\n");
    tsim_reader *r;
    tsim_error err;
    cr_assert_eq(tsim_reader_open(&r, "ok.jsonl", NULL, &err), 0, "%s", err.msg);
    const tsim_record *rec;
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1, "%s", err.msg);
    cr_assert_str_eq(rec->tag, "g\xc3\xa9 \xc3\xa9 \xf0\x9f\x98\x80\n");
    cr_assert_eq(tsim_count(rec, 0, 1), 2);
    cr_assert_eq(tsim_count(rec, 1, 3), 8);
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1, "%s", err.msg);
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 0, "%s", err.msg);
    tsim_reader_close(r);
}

Test(trace, json_document_size_limit)
{
    /* a regular file: refused from its size, before reading */
    int fd = open("big.json", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (off_t)TSIM_JSON_DOC_MAX + 1), 0);
    close(fd);
    tsim_error err;
    cr_assert_eq(read_all("big.json", NULL, NULL, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "big.json: a JSON document trace may be at most 256 MiB (this one has 268435457 bytes); "
                              "convert it to JSON Lines (.jsonl), which streams");
    unlink("big.json");
    /* an endless input (it used to grow until memory ran out): stops at the limit */
    if (access("/dev/zero", R_OK) != 0)
        cr_skip_test("no /dev/zero");
    cr_assert_eq(symlink("/dev/zero", "zero.json"), 0);
    cr_assert_eq(read_all("zero.json", NULL, NULL, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "zero.json: a JSON document trace may be at most 256 MiB, and this input goes on beyond "
                              "that; convert it to JSON Lines (.jsonl), which streams");
    /* (time and memory are not asserted here: speed belongs in benchmarks, and
     * sanitizer builds multiply both; the limit itself is what is tested) */
}

Test(trace, csv_any_tag_column)
{
    tsim_read_options ep2 = {.ep = 2, .ranks_per_node = 0, .dataset = NULL};
    write_file("skew.csv", "skew,iteration,layer_idx,0,1,2,3\n0.5,0,0,1,2,3,4\n0.9,0,0,4,3,2,1\n");
    tsim_reader *r;
    tsim_error err;
    cr_assert_eq(tsim_reader_open(&r, "skew.csv", &ep2, &err), 0, "%s", err.msg);
    const tsim_trace_header *h = tsim_reader_header(r);
    cr_assert_str_eq(cJSON_GetObjectItem(h->meta, "tag_column")->valuestring, "skew");
    const tsim_record *rec;
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1, "%s", err.msg);
    cr_assert_str_eq(rec->tag, "0.5");
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1, "%s", err.msg);
    cr_assert_str_eq(rec->tag, "0.9");
    cr_assert_eq(tsim_count(rec, 0, 0), 2);
    tsim_reader_close(r);
    /* the filter takes the tag column's values */
    tsim_read_options only = {.ep = 2, .ranks_per_node = 0, .dataset = "0.9"};
    int64_t records;
    cr_assert_eq(read_all("skew.csv", &only, &records, &err), 0, "%s", err.msg);
    cr_assert_eq(records, 1);
    /* with an index column before it; "dataset" stays out of meta's tag_column */
    write_file("idx.csv", ",setting,iteration,layer_idx,0,1\n0,a,0,0,1,2\n1,a,1,0,3,4\n");
    cr_assert_eq(read_all("idx.csv", &ep2, &records, &err), 0, "%s", err.msg);
    cr_assert_eq(records, 2);
    cr_assert_eq(tsim_reader_open(&r, source_path("tests/data/trace/routing.csv"), &ep2, &err), 0, "%s", err.msg);
    cr_assert_null(cJSON_GetObjectItem(tsim_reader_header(r)->meta, "tag_column"));
    tsim_reader_close(r);

    expect_error_opts("a.csv", "foo,skew,iteration,layer_idx,0,1\n", &ep2,
                      "a.csv:1:1: CSV header: column 1 is \"foo\", expected an index column (\"index\", an empty name "
                      "or \"Unnamed: 0\") before the tag column (the header is \"[index,]TAG,iteration,layer_idx[,rank],"
                      "0,1,...\" (TAG: any name))");
    expect_error_opts("b.csv", "skew,iteration,layer_idx,0,1\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx,0,0,1,2\n",
                      &ep2, "b.csv:2:1: record 1: \"skew\" is longer than 63 bytes");
}

#define RANKH "dataset,iteration,layer_idx,rank,0,1,2,3\n"

Test(trace, csv_rank_column)
{
    /* one row per source rank, in any order within the record; no --ep needed */
    write_file("r.csv", RANKH "d,0,0,1,5,6,7,8\nd,0,0,0,1,2,3,4\nd,0,1,0,9,9,9,9\nd,0,1,1,0,0,0,1\n");
    tsim_reader *r;
    tsim_error err;
    cr_assert_eq(tsim_reader_open(&r, "r.csv", NULL, &err), 0, "%s", err.msg);
    const tsim_trace_header *h = tsim_reader_header(r);
    cr_assert_eq(h->ep, 2);
    cr_assert_eq(h->experts, 4);
    cr_assert_eq(tsim_reader_source_ep(r), 2);
    const tsim_record *rec;
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1, "%s", err.msg);
    cr_assert_eq(rec->line, 2);
    static const int64_t want0[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    cr_assert_arr_eq(rec->counts, want0, sizeof want0);
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1, "%s", err.msg);
    cr_assert_eq(rec->layer, 1);
    cr_assert_eq(rec->line, 4);
    static const int64_t want1[8] = {9, 9, 9, 9, 0, 0, 0, 1};
    cr_assert_arr_eq(rec->counts, want1, sizeof want1);
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 0, "%s", err.msg);
    tsim_reader_close(r);
    /* --ep 1 rebuckets: totals kept */
    tsim_read_options ep1 = {.ep = 1, .ranks_per_node = 0, .dataset = NULL};
    cr_assert_eq(tsim_reader_open(&r, "r.csv", &ep1, &err), 0, "%s", err.msg);
    cr_assert(tsim_reader_rebucketed(r));
    cr_assert_eq(tsim_reader_next(r, &rec, &err), 1, "%s", err.msg);
    static const int64_t tot[4] = {6, 8, 10, 12};
    cr_assert_arr_eq(rec->counts, tot, sizeof tot);
    tsim_reader_close(r);
    /* .gz and an index column */
    write_gz("r.csv.gz", "index,dataset,iteration,layer_idx,rank,0,1\n0,x,3,0,0,1,1\n1,x,3,0,1,2,2\n");
    int64_t records;
    cr_assert_eq(read_all("r.csv.gz", NULL, &records, &err), 0, "%s", err.msg);
    cr_assert_eq(records, 1);

    expect_error("a.csv", RANKH "d,0,0,0,1,2,3,4\nd,0,0,1,1,2,3,4\nd,0,1,1,1,2,3,4\nd,0,2,0,1,2,3,4\n",
                 "a.csv:4: record 2: rows for 1 of 2 ranks (rank 0 is missing); the rows of a record must follow each "
                 "other");
    expect_error("b.csv", RANKH "d,0,0,0,1,2,3,4\nd,0,0,1,1,2,3,4\nd,0,1,1,1,2,3,4\nd,0,1,1,1,2,3,4\n",
                 "b.csv:5: record 2: a second row for rank 1 (the record starts on line 4)");
    expect_error("c.csv", RANKH "d,0,0,0,1,2,3,4\nd,0,0,1,1,2,3,4\nd,0,1,2,1,2,3,4\n",
                 "c.csv:4: record 2: rank 2 is out of range 0..1 (the first record has rows for 2 ranks)");
    expect_error("d.csv", RANKH "d,0,0,0,1,2,3,4\nd,0,0,2,1,2,3,4\n",
                 "d.csv:2: record 1: rows for 2 ranks, but rank 1 is missing (ranks run 0..N-1)");
    expect_error("e.csv", RANKH "d,0,0,0,1,2,3,4\nd,0,0,0,1,2,3,4\n",
                 "e.csv:3: record 1: a second row for rank 0 (the record starts on line 2)");
    expect_error("f.csv", RANKH "d,0,0,0,1,2,3,4\nd,0,0,1,1,2,3,4\nd,0,0,2,1,2,3,4\n",
                 "f.csv: experts 4 (CSV columns) is not divisible by the 3 ranks of the \"rank\" column");
    expect_error("g.csv", RANKH "d,0,0,4096,1,2,3,4\n",
                 "g.csv:2:7: record 1: \"rank\" is 4096, above the limit of 4095");
    expect_error("h.csv", RANKH "d,0,0,0,1,2,3,4\nd,0,0,1,1,2,x,4\n",
                 "h.csv:3:13: record 1: expert 2 is \"x\", expected a non-negative integer");
    expect_error("i.csv", RANKH, "i.csv: empty trace: no records");
    expect_error("j.csv", RANKH "d,0,0,0,1,2,3,4\nd,0,0,1,1,2,3,4\nd,0,0,0,1,2,3,4\nd,0,0,1,1,2,3,4\n",
                 "j.csv:4: record 1: a second row for rank 0 (the record starts on line 2)");
    expect_error("k.csv", RANKH "d,0,0,0,1,2,3,4\nd,0,0,1,1,2,3,4\nd,0,1,0,1,2,3,4\nd,0,1,1,1,2,3,4\nd,0,0,0,1,2,3,4\nd,0,0,1,1,2,3,4\n",
                 "k.csv:6: record 3: duplicate record: microbatch 0, layer 0 of dataset \"d\" already appeared as "
                 "record 1");
}

/* Property: whatever the strict checker accepts, cJSON reads, and cJSON's own
 * output of it is accepted again; whatever it refuses comes with a position
 * inside the text. Random texts over JSON's alphabet, many of them valid. */
Test(trace, strict_json_agrees_with_cjson)
{
    static const char *const tokens[] = {"{", "}", "[", "]", ",", ":", "\"a\"", "\"\\u00e9\"", "\"\\ud83d\\ude00\"",
                                         "0", "12", "-3", "1.5", "2e3", "1e-400", "00", "true", "false", "null",
                                         " ", "\t", "\n", "\v", "\"x", "\"\\q\"", "\"\xc3\xa9\"", "\"\xff\"", "-", "1."};
    const size_t ntok = sizeof tokens / sizeof tokens[0];
    uint64_t state = 11;
    int accepted = 0;
    for (int iter = 0; iter < 200000; iter++) {
        char text[256];
        size_t len = 0;
        int n = (int)tsim_rand_range(&state, 1, 12);
        for (int i = 0; i < n; i++) {
            const char *t = tokens[tsim_rand_range(&state, 0, (int64_t)ntok - 1)];
            size_t tl = strlen(t);
            if (len + tl >= sizeof text)
                break;
            memcpy(text + len, t, tl);
            len += tl;
        }
        text[len] = '\0';
        tsim_json_fault f;
        if (tsim_json_check_all(text, len, &f) == (size_t)-1) {
            cr_assert_leq(f.at, len, "%s", text);
            continue;
        }
        accepted++;
        cJSON *v = cJSON_ParseWithLength(text, len);
        cr_assert_not_null(v, "accepted but cJSON refuses: %s", text);
        char *again = cJSON_PrintUnformatted(v);
        cr_assert_neq(tsim_json_check_all(again, strlen(again), &f), (size_t)-1, "%s -> %s: %s", text, again, f.what);
        cJSON_free(again);
        cJSON_Delete(v);
    }
    cr_assert_gt(accepted, 1000, "too few valid texts to mean anything (%d)", accepted);
}

/* ---- read throughput (issue: >= 50 MB/s, peak RSS < 64 MB) ------------------- */

/* TSIM_BENCH_RECORDS sets the size (default 2000 records of EP32 x 128
 * experts, about 20 MB); TSIM_BENCH_READ_ASSERT=1 also enforces the
 * throughput target (left off by default: debug and sanitizer builds are slow). */
Test(bench, jsonl_read)
{
    enter_tmp();
    const char *env = getenv("TSIM_BENCH_RECORDS");
    long n = env ? atol(env) : 2000;
    tsim_trace_header h = {128, 32, 8, 8, NULL, NULL};
    tsim_error err;
    tsim_writer *w;
    cr_assert_eq(tsim_writer_open(&w, "bench.jsonl", &h, &err), 0, "%s", err.msg);
    tsim_record rec;
    cr_assert_eq(tsim_record_alloc(&rec, 32, 128, &err), 0);
    uint64_t state = 7;
    for (long i = 0; i < n; i++) {
        rec.microbatch = i / 64;
        rec.layer = i % 64;
        /* 4096 tokens x top-8 over 4096 cells: about 8 per cell, a few hot experts */
        for (int c = 0; c < 32 * 128; c++)
            rec.counts[c] = tsim_rand_range(&state, 0, (c % 128) < 8 ? 60 : 14);
        cr_assert_eq(tsim_writer_write(w, &rec, &err), 0, "%s", err.msg);
    }
    tsim_record_free(&rec);
    cr_assert_eq(tsim_writer_close(w, true, &err), 0, "%s", err.msg);

    tsim_bench_read_result res;
    cr_assert_eq(tsim_bench_read("bench.jsonl", &res, &err), 0, "%s", err.msg);
    fprintf(stderr, "bench jsonl_read: %lld records, %.1f MB, %.3f s: %.1f MB/s, %.0f records/s, peak RSS %.1f MB\n",
            (long long)res.records, (double)res.bytes / 1e6, res.seconds, res.mb_per_s, res.records_per_s,
            (double)res.peak_rss_kb / 1024.0);
    cr_assert_eq(res.records, n);
    cr_assert_eq(res.bytes, res.file_bytes);
#ifndef __SANITIZE_ADDRESS__
    cr_assert_lt(res.peak_rss_kb, 64 * 1024, "peak RSS %ld KB", res.peak_rss_kb);
#endif
    const char *strict = getenv("TSIM_BENCH_READ_ASSERT");
    if (strict && strcmp(strict, "1") == 0)
        cr_assert_geq(res.mb_per_s, 50.0, "%.1f MB/s", res.mb_per_s);
    leave_tmp();
}

/* A trace held in memory: records keep their own counts while the buffer
 * grows (and moves) under them; a record of another shape is refused. */
Test(record_set, growing_keeps_every_record)
{
    tsim_record_set rs;
    tsim_record_set_init(&rs, 3, 4, 1);
    tsim_record rec;
    tsim_error err = {0};
    cr_assert_eq(tsim_record_alloc(&rec, 3, 4, &err), TSIM_OK);
    for (int i = 0; i < 300; i++) {
        rec.index = i;
        rec.layer = i % 5;
        for (int c = 0; c < 12; c++)
            rec.counts[c] = i * 100 + c;
        cr_assert_eq(tsim_record_set_push(&rs, &rec, &err), TSIM_OK, "%s", err.msg);
    }
    cr_assert_eq(rs.n, 300);
    for (int i = 0; i < 300; i++) {
        cr_assert_eq(rs.recs[i].index, i);
        cr_assert_eq(rs.recs[i].layer, i % 5);
        for (int c = 0; c < 12; c++)
            cr_assert_eq(rs.recs[i].counts[c], i * 100 + c, "record %d cell %d", i, c);
    }
    tsim_record other;
    cr_assert_eq(tsim_record_alloc(&other, 4, 3, &err), TSIM_OK);
    cr_assert_eq(tsim_record_set_push(&rs, &other, &err), TSIM_E_INTERNAL);
    cr_assert_eq(rs.n, 300);
    tsim_record_free(&other);
    tsim_record_free(&rec);
    tsim_record_set_free(&rs);
    cr_assert_null(rs.recs);
}
