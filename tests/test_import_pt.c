/* SGLang .pt dumps and NumPy .npz (issue 25): the restricted unpickler, the
 * zip layer, and the readers. The fixtures in tests/import/pt were written
 * by torch.save and np.savez (tests/import/make_pt_fixtures.py); each must
 * read as the same records as the .npy written from the same counts. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"
#include "trace.h"
#include "tsim_config.h"
#include "zip_reader.h"

static const char *fixture(const char *name)
{
    static char path[4][1024];
    static int turn;
    const char *root = getenv("TSIM_SOURCE_ROOT");
    char *p = path[turn++ % 4];
    snprintf(p, sizeof path[0], "%s/tests/import/pt/%s", root ? root : TSIM_SOURCE_ROOT, name);
    return p;
}

/* ---- the unpickler ---- */

static int load(tsim_pickle *pk, const char *bytes, size_t len, tsim_error *err)
{
    return tsim_pickle_load(pk, (const unsigned char *)bytes, len, "t.pt: entry 'a/data.pkl'", err);
}

Test(pickle, plain_values)
{
    /* {'a': [1, -2, 300, 2.5, True, None], 'b': ('x',)} at protocol 2 */
    static const char p[] = "\200\002}q\000(X\001\000\000\000aq\001]q\002(K\001J\376\377\377\377M,\001G@\004\000"
                            "\000\000\000\000\000\210Nh\001eX\001\000\000\000bX\001\000\000\000x\205u.";
    tsim_pickle pk;
    tsim_error err = {0};
    cr_assert_eq(load(&pk, p, sizeof p - 1, &err), TSIM_OK, "%s", err.msg);
    const tsim_pk *a = tsim_pk_get(pk.root, "a");
    cr_assert(a && a->kind == TSIM_PK_LIST && a->n == 7);
    cr_expect_eq(a->items[0]->i, 1);
    cr_expect_eq(a->items[1]->i, -2);
    cr_expect_eq(a->items[2]->i, 300);
    cr_expect_eq(a->items[3]->f, 2.5);
    cr_expect_eq(a->items[4]->kind, TSIM_PK_BOOL);
    cr_expect_eq(a->items[5]->kind, TSIM_PK_NONE);
    cr_expect_str_eq(a->items[6]->s, "a"); /* memo BINGET */
    const tsim_pk *b = tsim_pk_get(pk.root, "b");
    cr_assert(b && b->kind == TSIM_PK_TUPLE && b->n == 1);
    cr_expect_str_eq(b->items[0]->s, "x");
    tsim_pickle_free(&pk);
}

Test(pickle, ordered_dict_and_long1)
{
    /* collections.OrderedDict() with one item, and LONG1 2^40 */
    static const char p[] = "\200\002ccollections\012OrderedDict\012)R(X\001\000\000\000k\212\006\000\000\000\000\000\001u.";
    tsim_pickle pk;
    tsim_error err = {0};
    cr_assert_eq(load(&pk, p, sizeof p - 1, &err), TSIM_OK, "%s", err.msg);
    const tsim_pk *k = tsim_pk_get(pk.root, "k");
    cr_assert(k && k->kind == TSIM_PK_INT);
    cr_expect_eq(k->i, INT64_C(1) << 40);
    tsim_pickle_free(&pk);
}

static void expect_refused(const char *p, size_t len, const char *want)
{
    tsim_pickle pk;
    tsim_error err = {0};
    cr_assert_eq(load(&pk, p, len, &err), TSIM_E_INPUT);
    cr_expect(strstr(err.msg, want) != NULL, "message '%s' lacks '%s'", err.msg, want);
    cr_expect(strstr(err.msg, "t.pt: entry 'a/data.pkl': pickle byte ") == err.msg, "%s", err.msg);
}

Test(pickle, forbidden_globals_and_opcodes)
{
    expect_refused("\200\002cos\012system\012X\002\000\000\000id\205R.", 31, "global 'os.system' is not allowed");
    expect_refused("\200\004\214\010builtins\214\004eval\223.", 20, "global 'builtins.eval' is not allowed");
    expect_refused("\200\002ctorch\012load\012.", 15, "global 'torch.load' is not allowed");
    expect_refused("\200\002}b.", 5, "opcode BUILD (0x62) is not allowed");
    expect_refused("\200\002(S'x'\012.", 9, "opcode STRING");
    expect_refused("\200\002\377.", 4, "unknown opcode 0xff");
    /* a storage class may be named but never called */
    expect_refused("\200\002ctorch\012IntStorage\012)R.", 22, "REDUCE calls a class");
}

Test(pickle, malformed)
{
    expect_refused("\200\002}", 3, "ends without STOP");
    expect_refused("\200\002X\377\000\000\000ab.", 10, "runs past the end");
    expect_refused("\200\002h\005.", 5, "memo index 5 was never stored");
    expect_refused("\200\002K\001K\002.", 7, "STOP with 2 items");
    expect_refused("\200\002\205.", 4, "TUPLE1 on a stack of 0");
    expect_refused("\200\002K\001s.", 6, "SETITEMS without a dict");
    expect_refused("\200\011.", 3, "protocol 9");
}

/* ---- the zip layer ---- */

Test(zip, garbage_and_empty)
{
    tsim_zip *z;
    tsim_error err = {0};
    cr_expect_eq(tsim_zip_open_buffer(&z, "g.npz", "not a zip at all", 16, &err), TSIM_E_INPUT);
    cr_expect(strstr(err.msg, "g.npz: ") == err.msg, "%s", err.msg);
    cr_expect_eq(tsim_zip_open(&z, fixture("truncated.pt"), &err), TSIM_E_INPUT);
    cr_expect(strstr(err.msg, "truncated.pt: not a zip archive") != NULL, "%s", err.msg);
}

/* ---- readers: each fixture reads as its .npy ---- */

static int read_all(const char *path, const tsim_read_options *o, int64_t **out, int64_t *n, tsim_error *err)
{
    tsim_reader *r;
    int rc = tsim_reader_open(&r, path, o, err);
    if (rc)
        return rc;
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    const tsim_record *rec;
    while ((rc = tsim_reader_next(r, &rec, err)) == 1) {
        size_t cells = (size_t)rec->ranks * (size_t)rec->experts;
        *out = realloc(*out, (cap += cells + 2) * sizeof **out);
        (*out)[*n] = rec->microbatch;
        (*out)[*n + 1] = rec->layer;
        memcpy(*out + *n + 2, rec->counts, cells * sizeof **out);
        *n += (int64_t)cells + 2;
    }
    tsim_reader_close(r);
    return rc;
}

static void expect_same(const char *input, const char *npy, tsim_read_options o)
{
    int64_t *a, *b, na, nb;
    tsim_error err = {0};
    cr_assert_eq(read_all(fixture(input), &o, &a, &na, &err), 0, "%s: %s", input, err.msg);
    o.array = NULL;
    cr_assert_eq(read_all(fixture(npy), &o, &b, &nb, &err), 0, "%s: %s", npy, err.msg);
    cr_assert_gt(na, 0);
    cr_assert_eq(na, nb, "%s: %lld cells, %s %lld", input, (long long)na, npy, (long long)nb);
    cr_expect_eq(memcmp(a, b, (size_t)na * sizeof *a), 0, "%s differs from %s", input, npy);
    free(a);
    free(b);
}

Test(readers, same_records_as_the_npy)
{
    expect_same("expert_distribution_recorder_1700000000.0.pt", "stat.npy", (tsim_read_options){.ep = 4});
    expect_same("deflated.pt", "stat.npy", (tsim_read_options){.ep = 4});
    expect_same("per_pass", "per_pass.npy", (tsim_read_options){0});
    expect_same("per_token", "per_token.npy", (tsim_read_options){0});
    expect_same("stored.npz", "stored.npy", (tsim_read_options){.array = "counts"});
    expect_same("compressed.npz", "compressed.npy", (tsim_read_options){.ep = 2});
    expect_same("ultra", "ultra.npy", (tsim_read_options){0});
    expect_same("ultra4", "ultra4.npy", (tsim_read_options){.ep = 2});
}

Test(readers, per_source_ep)
{
    tsim_reader *r;
    tsim_error err = {0};
    cr_assert_eq(tsim_reader_open(&r, fixture("per_token"), NULL, &err), 0, "%s", err.msg);
    cr_expect_eq(tsim_reader_header(r)->ep, 2);
    cr_expect_eq(tsim_reader_header(r)->experts, 6);
    tsim_reader_close(r);
}

Test(readers, old_map_warns)
{
    tsim_reader *r;
    tsim_error err = {0};
    cr_assert_eq(tsim_reader_open(&r, fixture("old_map"), NULL, &err), 0, "%s", err.msg);
    const char *w = tsim_reader_take_warning(r);
    cr_assert_not_null(w);
    cr_expect(strstr(w, "4 tokens sit on physical slots") && strstr(w, "layer 1, slot 7"), "%s", w);
    tsim_reader_close(r);
}

static void expect_error(const char *input, tsim_read_options o, const char *want)
{
    int64_t *a = NULL, n;
    tsim_error err = {0};
    cr_expect_eq(read_all(fixture(input), &o, &a, &n, &err), TSIM_E_INPUT, "%s", input);
    cr_expect(strstr(err.msg, input) && strstr(err.msg, want), "%s: message '%s' lacks '%s'", input, err.msg, want);
    free(a);
}

Test(readers, malformed_inputs)
{
    expect_error("truncated.pt", (tsim_read_options){.ep = 2}, "not a zip archive");
    expect_error("crc.pt", (tsim_read_options){.ep = 2}, "entry 'expert_distribution_recorder_1700000000.0/data/0': CRC error");
    expect_error("bomb.npz", (tsim_read_options){.ep = 2}, "entry 'counts.npy': 67108992 bytes compressed to");
    expect_error("evil-global.pt", (tsim_read_options){0}, "pickle byte 2: global 'os.system' is not allowed");
    expect_error("evil-stack-global.pt", (tsim_read_options){0}, "global 'os.system' is not allowed");
    expect_error("bad-dtype.pt", (tsim_read_options){.ep = 2}, "dtype torch.HalfStorage");
    expect_error("stored.npz", (tsim_read_options){0}, "2 arrays ('counts', 'other'): choose one with --array");
    expect_error("stored.npz", (tsim_read_options){.array = "x"}, "no array 'x'");
    expect_error("stat.npy", (tsim_read_options){.array = "x"}, "--array applies to .npz files only");
}

Test(readers, format_from_the_name)
{
    tsim_trace_format f;
    cr_assert_eq(tsim_trace_format_from_path("d/x.pt", &f, NULL), 0);
    cr_expect_eq(f, TSIM_FMT_PT);
    cr_assert_eq(tsim_trace_format_from_path("x.npz", &f, NULL), 0);
    cr_expect_eq(f, TSIM_FMT_NPZ);
    cr_expect(tsim_trace_format_import_only(TSIM_FMT_PT) && tsim_trace_format_import_only(TSIM_FMT_NPZ));
    tsim_writer *w;
    tsim_trace_header h = {.experts = 4, .ep = 2, .ranks_per_node = 8};
    tsim_error err = {0};
    cr_expect_neq(tsim_writer_open(&w, "/tmp/never-written.npz", &h, &err), TSIM_OK);
}
