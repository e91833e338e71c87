/* Megatron parallel layouts and TensorRT-LLM statistics (issue 25): the
 * rank grid of --megatron-parallel, checked as a property over random
 * layouts, and the readers against the JSON Lines their fixtures were
 * written with (tests/import/make_megatron_fixtures.py,
 * tests/import/make_trtllm_fixtures.py). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "trace.h"
#include "crc32_fast.h"
#include "trace_megatron_layout.h"
#include "tsim_config.h"

static const char *fixture(const char *name)
{
    static char path[4][1024];
    static int turn;
    const char *root = getenv("TSIM_SOURCE_ROOT");
    char *p = path[turn++ % 4];
    snprintf(p, sizeof path[0], "%s/tests/import/%s", root ? root : TSIM_SOURCE_ROOT, name);
    return p;
}

Test(layout, parse_defaults_and_keys)
{
    tsim_megatron_layout l;
    tsim_error err = {0};
    cr_assert_eq(tsim_megatron_layout_parse("tp=2,pp=4,ep=8", &l, &err), 0, "%s", err.msg);
    cr_expect(l.tp == 2 && l.pp == 4 && l.ep == 8 && l.cp == 1 && l.etp == 2 && !l.tp_same);
    cr_expect(memcmp(l.order, "TCEDP", 5) == 0);
    cr_assert_eq(tsim_megatron_layout_parse("ep=2,pp=1,tp=4,etp=1,cp=2,order=tp-cp-dp-ep-pp,tokens=same", &l, &err),
                 0, "%s", err.msg);
    cr_expect(l.etp == 1 && l.cp == 2 && l.tp_same && memcmp(l.order, "TCDEP", 5) == 0);
    const char *bad[] = {"tp=2,pp=2", "tp=2,pp=2,ep=2,vpp=2", "tp=2,pp=2,ep=x", "tp=2,pp=2,ep=2,order=tp-cp-ep-dp",
                         "tp=2,pp=2,ep=2,order=tp-cp-ep-dp-pp-tp", "tp=2,pp=2,ep=2,order=tp-tp-ep-dp-pp", "tp2",
                         "tp=2,pp=2,ep=2,tokens=", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_neq(tsim_megatron_layout_parse(bad[i], &l, &err), 0, "accepted '%s'", bad[i]);
}

/* Megatron's default order: TP fastest, then EP, expert DP, PP (docs/import.md's example). */
Test(layout, default_order_places)
{
    tsim_megatron_layout l;
    tsim_error err = {0};
    cr_assert_eq(tsim_megatron_layout_parse("tp=2,pp=2,ep=4", &l, &err), 0);
    tsim_megatron_place p[16];
    int groups = 0;
    cr_assert_eq(tsim_megatron_layout_map(&l, 16, p, &groups, &err), 0, "%s", err.msg);
    cr_expect_eq(groups, 1);
    for (int g = 0; g < 16; g++) {
        cr_expect_eq(p[g].etp_rank, g % 2);
        cr_expect_eq(p[g].ep_rank, g / 2 % 4);
        cr_expect_eq(p[g].stage, g / 8);
        cr_expect_eq(p[g].group, 0);
    }
    cr_expect_neq(tsim_megatron_layout_map(&l, 24, p, &groups, &err), 0);
}

/* Property: for random sizes and orders, the places are a bijection of the
 * world onto the grid etp x ep x groups x pp. */
Test(layout, places_are_a_bijection)
{
    static const char *orders[] = {"tp-cp-ep-dp-pp", "tp-ep-cp-dp-pp", "pp-dp-ep-cp-tp", "ep-tp-dp-pp-cp",
                                   "dp-pp-tp-cp-ep"};
    srand(25);
    for (int trial = 0; trial < 300; trial++) {
        const int tp = 1 + rand() % 4, pp = 1 + rand() % 4, ep = 1 + rand() % 4, groups = 1 + rand() % 3;
        char spec[128];
        snprintf(spec, sizeof spec, "tp=%d,pp=%d,ep=%d,order=%s", tp, pp, ep, orders[trial % 5]);
        tsim_megatron_layout l;
        tsim_error err = {0};
        cr_assert_eq(tsim_megatron_layout_parse(spec, &l, &err), 0, "%s", err.msg);
        const int world = tp * ep * pp * groups;
        tsim_megatron_place *p = calloc((size_t)world, sizeof *p);
        char *seen = calloc((size_t)world, 1);
        int got = 0;
        if (tsim_megatron_layout_map(&l, world, p, &got, &err) != 0) {
            /* only the dense grid (tp x pp) may fail to divide the world */
            cr_expect_neq(world % (tp * pp), 0, "%s on %d ranks: %s", spec, world, err.msg);
        } else {
            cr_expect_eq(got, groups, "%s", spec);
            for (int g = 0; g < world; g++) {
                cr_assert(p[g].etp_rank < tp && p[g].ep_rank < ep && p[g].group < groups && p[g].stage < pp);
                const int cell = ((p[g].stage * groups + p[g].group) * ep + p[g].ep_rank) * tp + p[g].etp_rank;
                cr_expect_eq(seen[cell]++, 0, "%s: rank %d shares its place", spec, g);
            }
        }
        free(p);
        free(seen);
    }
}

/* Every record of path (with opts) equals the reference JSON Lines trace's. */
static void same_records(const char *path, const tsim_read_options *opts, const char *ref)
{
    tsim_reader *a, *b;
    tsim_error err = {0};
    cr_assert_eq(tsim_reader_open(&a, fixture(path), opts, &err), 0, "%s", err.msg);
    cr_assert_eq(tsim_reader_open(&b, fixture(ref), NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(tsim_reader_header(a)->ep, tsim_reader_header(b)->ep);
    cr_assert_eq(tsim_reader_header(a)->experts, tsim_reader_header(b)->experts);
    const size_t cells = (size_t)tsim_reader_header(a)->ep * (size_t)tsim_reader_header(a)->experts;
    int64_t n = 0;
    for (;;) {
        const tsim_record *x, *y;
        int ra = tsim_reader_next(a, &x, &err);
        cr_assert_geq(ra, 0, "%s", err.msg);
        int rb = tsim_reader_next(b, &y, &err);
        cr_assert_eq(ra, rb, "%s: record %lld", path, (long long)n);
        if (ra == 0)
            break;
        cr_expect_eq(x->microbatch, y->microbatch);
        cr_expect_eq(x->layer, y->layer);
        cr_expect_str_eq(x->tag, y->tag);
        cr_expect_arr_eq(x->counts, y->counts, cells * sizeof *x->counts, "%s: record %lld", path, (long long)n);
        n++;
    }
    cr_expect_gt(n, 0);
    tsim_reader_close(a);
    tsim_reader_close(b);
}

Test(layout, megatron_fixtures_read_as_their_jsonl)
{
    tsim_read_options o = {.megatron_parallel = "tp=2,pp=2,ep=4"};
    same_records("megatron/tp2pp2ep4", &o, "megatron/tp2pp2ep4.jsonl");
    same_records("megatron/tp2pp2ep4x2", &o, "megatron/tp2pp2ep4x2.jsonl");
    tsim_read_options same = {.megatron_parallel = "tp=2,pp=2,ep=2,tokens=same"};
    same_records("megatron/tp2pp2ep2same", &same, "megatron/tp2pp2ep2same.jsonl");
    tsim_read_options dense = {.megatron_parallel = "tp=1,pp=2,ep=2", .num_layers = 6};
    same_records("megatron/pp2dense", &dense, "megatron/pp2dense.jsonl");
}

Test(layout, trtllm_fixtures_read_as_their_jsonl)
{
    same_records("trtllm/stats", NULL, "trtllm/stats.jsonl");
    same_records("trtllm/dispatch", NULL, "trtllm/dispatch.jsonl");
}

/* Property: the folding CRC equals zlib's for every length (below, at and
 * above the 64-byte lane block), alignment and starting value, and over a
 * buffer split anywhere. */
Test(crc32, equals_zlib)
{
    enum { N = 4096 + 64 };
    unsigned char *buf = malloc(N);
    srand(32);
    for (int i = 0; i < N; i++)
        buf[i] = (unsigned char)rand();
    for (int trial = 0; trial < 2000; trial++) {
        const size_t off = (size_t)(rand() % 64), len = (size_t)(trial < 300 ? trial : rand() % (N - 64));
        const uint32_t seed = trial % 3 == 0 ? 0 : (uint32_t)rand();
        const uint32_t want = (uint32_t)crc32_z(seed, buf + off, len);
        cr_assert_eq(tsim_crc32(seed, buf + off, len), want, "len %zu, offset %zu", len, off);
        const size_t cut = len ? (size_t)rand() % len : 0;
        cr_assert_eq(tsim_crc32(tsim_crc32(seed, buf + off, cut), buf + off + cut, len - cut), want,
                     "len %zu split at %zu", len, cut);
    }
    free(buf);
}
