/* The synthetic trace generator (gen.c): determinism, distinct top-k picks,
 * the hotspot injection, the calibration and parameter validation. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_rng.h>

#include "evaluate.h"
#include "gen.h"
#include "gen_fixture.h"
#include "topology.h"

static void setup(void)
{
    gsl_set_error_handler_off();
}

TestSuite(gen, .init = setup);

/* A small shape: 32 experts on 4 ranks (8 each), top-4, 256 tokens per rank. */
static tsim_gen_params small_params(void)
{
    return tsim_test_small_gen_params();
}

static tsim_gen *open_gen(const tsim_gen_params *p)
{
    tsim_gen *g = NULL;
    tsim_error err = {0};
    int rc = tsim_gen_open(&g, p, &err);
    cr_assert_eq(rc, TSIM_OK, "tsim_gen_open: %s", err.msg);
    return g;
}

/* All records of a trace, concatenated: [records * R * E]. */
static int64_t *all_counts(const tsim_gen_params *p)
{
    tsim_gen *g = open_gen(p);
    const size_t cells = (size_t)p->ep * (size_t)p->experts;
    const int64_t n = tsim_gen_record_count(p);
    int64_t *out = malloc(sizeof *out * cells * (size_t)n);
    cr_assert_not_null(out);
    const tsim_record *rec;
    int64_t i = 0;
    while (tsim_gen_next(g, &rec, NULL) == 1) {
        cr_assert_lt(i, n);
        memcpy(out + (size_t)i * cells, rec->counts, sizeof *out * cells);
        i++;
    }
    cr_assert_eq(i, n);
    tsim_gen_close(g);
    return out;
}

Test(gen, defaults_are_the_cli_defaults)
{
    tsim_gen_params p;
    tsim_gen_params_default(&p);
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_params_check(&p, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(p.experts, 128);
    cr_assert_eq(p.ep, 16);
    cr_assert_eq(p.ranks_per_node, 8);
    cr_assert_eq(p.topk, 8);
    cr_assert_eq(p.tokens, 4096);
    cr_assert_eq(p.microbatches, 32);
    cr_assert_eq(p.layers, 4);
    cr_assert_eq(p.hot_ranks, 1);
    cr_assert_float_eq(p.concentration, 200.0, 1e-12);
    cr_assert_eq(p.seed, 1);
    cr_assert_eq(tsim_gen_record_count(&p), 128);
}

Test(gen, records_come_in_microbatch_major_order)
{
    tsim_gen_params p = small_params();
    tsim_gen *g = open_gen(&p);
    const tsim_record *rec;
    int64_t i = 0;
    while (tsim_gen_next(g, &rec, NULL) == 1) {
        cr_assert_eq(rec->index, i);
        cr_assert_eq(rec->microbatch, i / p.layers);
        cr_assert_eq(rec->layer, i % p.layers);
        cr_assert_eq(rec->ranks, p.ep);
        cr_assert_eq(rec->experts, p.experts);
        i++;
    }
    cr_assert_eq(i, 6);
    cr_assert_eq(tsim_gen_next(g, &rec, NULL), 0, "stays at the end");
    tsim_gen_close(g);
}

Test(gen, same_parameters_same_records_other_seed_differs)
{
    tsim_gen_params p = small_params();
    const size_t bytes = sizeof(int64_t) * (size_t)p.ep * (size_t)p.experts * (size_t)tsim_gen_record_count(&p);
    int64_t *a = all_counts(&p);
    int64_t *b = all_counts(&p);
    cr_assert(memcmp(a, b, bytes) == 0, "two runs with the same parameters differ");
    p.seed = 8;
    int64_t *c = all_counts(&p);
    cr_assert(memcmp(a, c, bytes) != 0, "seeds 7 and 8 gave the same trace");
    /* Every record differs, not only the first. */
    const size_t cells = (size_t)p.ep * (size_t)p.experts;
    for (int64_t i = 0; i < tsim_gen_record_count(&p); i++)
        cr_assert(memcmp(a + (size_t)i * cells, c + (size_t)i * cells, cells * sizeof *a) != 0,
                  "record %lld is the same under both seeds", (long long)i);
    free(a);
    free(b);
    free(c);
}

Test(gen, rewind_replays_the_same_records)
{
    tsim_gen_params p = small_params();
    int64_t *first = all_counts(&p);
    tsim_gen *g = open_gen(&p);
    const tsim_record *rec;
    while (tsim_gen_next(g, &rec, NULL) == 1)
        ;
    tsim_gen_rewind(g, 0.6);
    while (tsim_gen_next(g, &rec, NULL) == 1)
        ;
    tsim_gen_rewind(g, p.hot_fraction);
    const size_t cells = (size_t)p.ep * (size_t)p.experts;
    int64_t i = 0;
    while (tsim_gen_next(g, &rec, NULL) == 1) {
        cr_assert(memcmp(rec->counts, first + (size_t)i * cells, cells * sizeof *first) == 0,
                  "record %lld differs after rewinding", (long long)i);
        i++;
    }
    tsim_gen_close(g);
    free(first);
}

/* Every token adds k distinct experts: rows sum to T k, and no expert gets more
 * than T tokens from one rank. */
static void check_rows(const tsim_gen_params *p)
{
    tsim_gen *g = open_gen(p);
    const tsim_record *rec;
    while (tsim_gen_next(g, &rec, NULL) == 1) {
        for (int r = 0; r < p->ep; r++) {
            int64_t sum = 0;
            for (int e = 0; e < p->experts; e++) {
                int64_t c = tsim_count(rec, r, e);
                cr_assert_geq(c, 0);
                cr_assert_leq(c, p->tokens, "record %lld rank %d expert %d: %lld > T", (long long)rec->index, r, e,
                              (long long)c);
                sum += c;
            }
            cr_assert_eq(sum, (int64_t)p->tokens * p->topk, "record %lld rank %d sums to %lld",
                         (long long)rec->index, r, (long long)sum);
        }
    }
    tsim_gen_close(g);
}

Test(gen, rows_sum_to_tokens_times_topk)
{
    tsim_gen_params p = small_params();
    double fractions[] = {0.0, 0.1, 0.55, 1.0};
    for (int i = 0; i < 4; i++) {
        p.hot_fraction = fractions[i];
        check_rows(&p); /* hot set of 8 >= k = 4 */
        p.topk = 10;    /* hot set of 8 < k */
        check_rows(&p);
        p.topk = 4;
    }
    p.concentration = 0.01; /* a few experts hold nearly all the mass */
    p.hot_ranks = 2;
    check_rows(&p);
}

/* With k = E a token must take every expert once: any repeated pick would
 * leave some expert below T. Also under a very skewed popularity. */
Test(gen, topk_picks_are_distinct)
{
    tsim_gen_params p = small_params();
    p.experts = 8;
    p.ep = 2;
    p.topk = 8;
    double conc[] = {200.0, 0.01};
    double fractions[] = {0.0, 0.5};
    for (int a = 0; a < 2; a++) {
        for (int b = 0; b < 2; b++) {
            p.concentration = conc[a];
            p.hot_fraction = fractions[b];
            tsim_gen *g = open_gen(&p);
            const tsim_record *rec;
            while (tsim_gen_next(g, &rec, NULL) == 1)
                for (int r = 0; r < p.ep; r++)
                    for (int e = 0; e < p.experts; e++)
                        cr_assert_eq(tsim_count(rec, r, e), p.tokens, "c %g f %g: expert %d got %lld", conc[a],
                                     fractions[b], e, (long long)tsim_count(rec, r, e));
            tsim_gen_close(g);
        }
    }
    /* k = E - 1: every token leaves out exactly one expert. */
    p.topk = 7;
    p.concentration = 0.05;
    p.hot_fraction = 0.0;
    check_rows(&p);
}

/* Fewer hot experts than k (like EP32: 4 per rank, top-8): with f = 1 every
 * token takes all of them. */
Test(gen, hot_tokens_take_every_hot_expert_when_fewer_than_k)
{
    tsim_gen_params p = small_params();
    p.experts = 32;
    p.ep = 16; /* 2 experts per rank */
    p.topk = 4;
    p.hot_fraction = 1.0;
    tsim_gen *g = open_gen(&p);
    const tsim_record *rec;
    while (tsim_gen_next(g, &rec, NULL) == 1)
        for (int r = 0; r < p.ep; r++)
            for (int e = 0; e < 2; e++)
                cr_assert_eq(tsim_count(rec, r, e), p.tokens);
    tsim_gen_close(g);
}

static void rank_loads(const tsim_gen_params *p, int64_t *load /* [records * R] */)
{
    tsim_topology topo;
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(&topo, p->ep, p->experts, p->ranks_per_node, 0, NULL, &err), TSIM_OK);
    tsim_gen *g = open_gen(p);
    const tsim_record *rec;
    while (tsim_gen_next(g, &rec, NULL) == 1)
        tsim_native_loads(&topo, rec, load + (size_t)rec->index * (size_t)p->ep);
    tsim_gen_close(g);
    tsim_topology_free(&topo);
}

Test(gen, hotspot_raises_the_hot_ranks_load)
{
    tsim_gen_params p = small_params();
    p.experts = 64;
    p.ep = 8;
    const int64_t n = tsim_gen_record_count(&p);
    int64_t *cold = malloc(sizeof *cold * (size_t)(n * p.ep));
    int64_t *hot = malloc(sizeof *hot * (size_t)(n * p.ep));
    cr_assert(cold && hot);
    p.hot_fraction = 0.0;
    rank_loads(&p, cold);
    p.hot_fraction = 0.2;
    rank_loads(&p, hot);
    /* 0.2 * 256 tokens of each of 8 ranks move to rank 0: it gains about
     * 410 * 4 * (1 - 1/8) picks. */
    for (int64_t i = 0; i < n; i++) {
        const int64_t *c = cold + i * p.ep, *h = hot + i * p.ep;
        cr_assert_gt(h[0] - c[0], 1200, "record %lld: rank 0 went from %lld to %lld", (long long)i,
                     (long long)c[0], (long long)h[0]);
        for (int r = 1; r < p.ep; r++)
            cr_assert_leq(h[r], c[r], "record %lld: cold rank %d gained load", (long long)i, r);
    }
    /* Spread over two ranks, both gain and share the hotspot. */
    p.hot_ranks = 2;
    rank_loads(&p, hot);
    for (int64_t i = 0; i < n; i++) {
        const int64_t *c = cold + i * p.ep, *h = hot + i * p.ep;
        cr_assert_gt(h[0] - c[0], 400);
        cr_assert_gt(h[1] - c[1], 400);
        for (int r = 2; r < p.ep; r++)
            cr_assert_leq(h[r], c[r]);
    }
    free(cold);
    free(hot);
}

/* One more hot token moves exactly one token of one source rank (H mod R):
 * the property that makes the mean imbalance nearly continuous in f. */
Test(gen, one_more_hot_token_changes_one_token)
{
    tsim_gen_params p = small_params();
    const int64_t n_tokens = (int64_t)p.tokens * p.ep;
    const int64_t hs[] = {0, 13, 401, n_tokens - 1};
    const size_t cells = (size_t)p.ep * (size_t)p.experts;
    for (int t = 0; t < 4; t++) {
        int64_t h = hs[t];
        p.hot_fraction = (double)h / (double)n_tokens;
        cr_assert_eq(tsim_gen_hot_tokens(&p), h);
        int64_t *a = all_counts(&p);
        p.hot_fraction = (double)(h + 1) / (double)n_tokens;
        int64_t *b = all_counts(&p);
        const int moved_rank = (int)(h % p.ep);
        for (int64_t i = 0; i < tsim_gen_record_count(&p); i++) {
            int64_t diff = 0;
            for (int r = 0; r < p.ep; r++)
                for (int e = 0; e < p.experts; e++) {
                    size_t at = (size_t)i * cells + (size_t)r * (size_t)p.experts + (size_t)e;
                    int64_t d = llabs(a[at] - b[at]);
                    if (r != moved_rank)
                        cr_assert_eq(d, 0, "H %lld -> %lld changed rank %d", (long long)h, (long long)h + 1, r);
                    diff += d;
                }
            cr_assert_leq(diff, 2 * p.topk, "H %lld -> %lld moved %lld picks", (long long)h, (long long)h + 1,
                          (long long)diff);
        }
        free(a);
        free(b);
    }
}

Test(gen, hot_tokens_round_f_times_all_tokens)
{
    tsim_gen_params p = small_params(); /* 4 x 256 = 1024 tokens per record */
    p.hot_fraction = 0.0;
    cr_assert_eq(tsim_gen_hot_tokens(&p), 0);
    p.hot_fraction = 0.1;
    cr_assert_eq(tsim_gen_hot_tokens(&p), 102);
    p.hot_fraction = 1.0;
    cr_assert_eq(tsim_gen_hot_tokens(&p), 1024);
}

/* Popularity per layer is Dirichlet(c): a smaller c gives a more uneven base
 * routing and a higher base imbalance. */
Test(gen, concentration_controls_the_base_imbalance)
{
    tsim_gen_params p = small_params();
    p.hot_fraction = 0.0;
    p.tokens = 2048;
    tsim_error err = {0};
    double flat, skewed;
    p.concentration = 1e6;
    cr_assert_eq(tsim_gen_mean_imbalance(&p, &flat, NULL, NULL, &err), TSIM_OK);
    p.concentration = 2.0;
    cr_assert_eq(tsim_gen_mean_imbalance(&p, &skewed, NULL, NULL, &err), TSIM_OK);
    cr_assert_lt(flat, 0.03, "near-uniform routing gave %.3f", flat);
    cr_assert_gt(skewed, 2.0 * flat + 0.05, "c = 2 gave %.3f, c = 1e6 %.3f", skewed, flat);
}

/* Squared coefficient of variation of the expert totals of one record. */
static double cv2(const tsim_record *rec)
{
    const int E = rec->experts;
    int64_t *tpe = malloc(sizeof *tpe * (size_t)E);
    cr_assert_not_null(tpe);
    tsim_record_expert_totals(rec, tpe);
    double mean = 0.0, var = 0.0;
    for (int e = 0; e < E; e++)
        mean += (double)tpe[e];
    mean /= E;
    for (int e = 0; e < E; e++)
        var += ((double)tpe[e] - mean) * ((double)tpe[e] - mean);
    free(tpe);
    return var / E / (mean * mean);
}

/* The drift keeps the popularity Dirichlet(c) at every microbatch: the spread
 * of the expert totals late in the trace matches the first microbatch (a
 * convex mix with fresh draws would shrink it to about a third at drift 0.5),
 * while drift 0 freezes the popularity and drift 1 forgets it. */
Test(gen, drift_keeps_the_spread_and_moves_the_popularity)
{
    tsim_gen_params p;
    tsim_gen_params_default(&p);
    p.experts = 64;
    p.ep = 1;
    p.topk = 1;
    p.tokens = 20000;
    p.layers = 8;
    p.microbatches = 12;
    p.concentration = 2.0;
    p.drift = 0.5;
    tsim_gen *g = open_gen(&p);
    const tsim_record *rec;
    double early = 0.0, late = 0.0;
    while (tsim_gen_next(g, &rec, NULL) == 1) {
        if (rec->microbatch == 0)
            early += cv2(rec);
        if (rec->microbatch == p.microbatches - 1)
            late += cv2(rec);
    }
    tsim_gen_close(g);
    cr_assert_gt(late / early, 0.6, "spread fell from %.3f to %.3f", early / 8, late / 8);
    cr_assert_lt(late / early, 1.6, "spread rose from %.3f to %.3f", early / 8, late / 8);

    /* Correlation of layer 0's expert totals between the first and the last
     * microbatch. */
    double drifts[] = {0.0, 1.0};
    double corr[2];
    p.layers = 1;
    for (int d = 0; d < 2; d++) {
        p.drift = drifts[d];
        int64_t first[64], last[64];
        g = open_gen(&p);
        while (tsim_gen_next(g, &rec, NULL) == 1) {
            if (rec->microbatch == 0)
                tsim_record_expert_totals(rec, first);
            tsim_record_expert_totals(rec, last);
        }
        tsim_gen_close(g);
        double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
        for (int e = 0; e < 64; e++) {
            ma += (double)first[e] / 64;
            mb += (double)last[e] / 64;
        }
        for (int e = 0; e < 64; e++) {
            sab += ((double)first[e] - ma) * ((double)last[e] - mb);
            saa += ((double)first[e] - ma) * ((double)first[e] - ma);
            sbb += ((double)last[e] - mb) * ((double)last[e] - mb);
        }
        corr[d] = sab / sqrt(saa * sbb);
    }
    cr_assert_gt(corr[0], 0.95, "drift 0: correlation %.3f", corr[0]);
    cr_assert_lt(corr[1], 0.6, "drift 1: correlation %.3f", corr[1]);
}

static tsim_gen_params calib_params(void)
{
    tsim_gen_params p;
    tsim_gen_params_default(&p);
    p.experts = 64;
    p.ep = 8;
    p.topk = 4;
    p.tokens = 512;
    p.microbatches = 4;
    p.layers = 2;
    p.seed = 3;
    return p;
}

Test(gen, calibration_meets_the_target_on_the_full_trace)
{
    tsim_gen_params p = calib_params();
    const double targets[] = {0.15, 0.3, 0.6, 1.5};
    for (int i = 0; i < 4; i++) {
        tsim_gen_calibration cal;
        tsim_error err = {0};
        int rc = tsim_gen_calibrate(&p, targets[i], &cal, NULL, NULL, &err);
        cr_assert_eq(rc, TSIM_OK, "target %.2f: %s", targets[i], err.msg);
        cr_assert_leq(fabs(cal.achieved - targets[i]), TSIM_GEN_TOLERANCE, "target %.3f achieved %.4f",
                      targets[i], cal.achieved);
        cr_assert_gt(cal.hot_fraction, 0.0);
        cr_assert_lt(cal.base, targets[i]);
        cr_assert_eq(tsim_gen_hot_tokens(&(tsim_gen_params){.tokens = p.tokens, .ep = p.ep,
                                                              .hot_fraction = cal.hot_fraction}),
                     cal.hot_tokens);
        /* Regenerating with the calibrated f gives exactly the same mean. */
        tsim_gen_params q = p;
        q.hot_fraction = cal.hot_fraction;
        double mean;
        cr_assert_eq(tsim_gen_mean_imbalance(&q, &mean, NULL, NULL, &err), TSIM_OK);
        cr_assert(mean == cal.achieved, "regenerated mean %.17g, calibrated %.17g", mean, cal.achieved);
        /* And again, bit for bit. */
        tsim_gen_calibration again;
        cr_assert_eq(tsim_gen_calibrate(&p, targets[i], &again, NULL, NULL, &err), TSIM_OK);
        cr_assert_eq(again.hot_tokens, cal.hot_tokens);
        cr_assert_eq(again.trials, cal.trials);
    }
}

Test(gen, calibration_with_fewer_hot_experts_than_k_and_two_hot_ranks)
{
    tsim_gen_params p = calib_params();
    p.ep = 32; /* 2 experts per rank, k = 4 */
    p.tokens = 256;
    tsim_gen_calibration cal;
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_calibrate(&p, 0.5, &cal, NULL, NULL, &err), TSIM_OK, "%s", err.msg);
    cr_assert_leq(fabs(cal.achieved - 0.5), TSIM_GEN_TOLERANCE);
    p.ep = 8;
    p.hot_ranks = 2;
    cr_assert_eq(tsim_gen_calibrate(&p, 0.4, &cal, NULL, NULL, &err), TSIM_OK, "%s", err.msg);
    cr_assert_leq(fabs(cal.achieved - 0.4), TSIM_GEN_TOLERANCE);
}

static void count_progress(void *ctx, int trial, int64_t done, int64_t total)
{
    int *calls = ctx;
    cr_assert_gt(trial, 0);
    cr_assert_geq(done, 1);
    cr_assert_leq(done, total);
    (*calls)++;
}

Test(gen, calibration_reports_progress)
{
    tsim_gen_params p = calib_params();
    tsim_gen_calibration cal;
    tsim_error err = {0};
    int calls = 0;
    cr_assert_eq(tsim_gen_calibrate(&p, 0.3, &cal, count_progress, &calls, &err), TSIM_OK);
    cr_assert_eq(calls, cal.trials * tsim_gen_record_count(&p));
}

Test(gen, target_below_the_base_routing_fails)
{
    tsim_gen_params p = calib_params();
    p.concentration = 5.0; /* uneven base routing */
    double base;
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_mean_imbalance(&p, &base, NULL, NULL, &err), TSIM_OK);
    cr_assert_gt(base, 0.05);
    tsim_gen_calibration cal;
    int rc = tsim_gen_calibrate(&p, base - 0.02, &cal, NULL, NULL, &err);
    cr_assert_eq(rc, TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "below") && strstr(err.msg, "base routing"), "%s", err.msg);
    /* Within the tolerance of the base, f = 0 is the answer. */
    cr_assert_eq(tsim_gen_calibrate(&p, base - 0.004, &cal, NULL, NULL, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(cal.hot_tokens, 0);
}

Test(gen, target_above_every_token_hot_fails)
{
    tsim_gen_params p = calib_params();
    p.ep = 4;
    p.experts = 16;
    /* With every token on rank 0 the imbalance is R - 1 = 3. */
    tsim_gen_calibration cal;
    tsim_error err = {0};
    int rc = tsim_gen_calibrate(&p, 3.2, &cal, NULL, NULL, &err);
    cr_assert_eq(rc, TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "above"), "%s", err.msg);
    cr_assert_eq(tsim_gen_calibrate(&p, 2.9, &cal, NULL, NULL, &err), TSIM_OK, "%s", err.msg);
}

static void expect_invalid(tsim_gen_params p, const char *word)
{
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_params_check(&p, &err), TSIM_E_INPUT, "expected a complaint about %s", word);
    cr_assert(strstr(err.msg, word), "message '%s' does not name %s", err.msg, word);
    tsim_gen *g = NULL;
    cr_assert_eq(tsim_gen_open(&g, &p, &err), TSIM_E_INPUT);
    cr_assert_null(g);
}

Test(gen, invalid_parameters_are_rejected)
{
    tsim_gen_params p = small_params();
    tsim_gen_params q;
    q = p, q.experts = 0, expect_invalid(q, "--experts");
    q = p, q.experts = 30, expect_invalid(q, "divisible");
    q = p, q.ep = 0, expect_invalid(q, "--ep");
    q = p, q.ep = 5000, expect_invalid(q, "--ep");
    q = p, q.ranks_per_node = 0, expect_invalid(q, "--rpn");
    q = p, q.topk = 0, expect_invalid(q, "--topk");
    q = p, q.topk = 33, expect_invalid(q, "--topk");
    q = p, q.tokens = 0, expect_invalid(q, "--tokens");
    q = p, q.microbatches = 0, expect_invalid(q, "--microbatches");
    q = p, q.layers = 0, expect_invalid(q, "--layers");
    q = p, q.microbatches = 100000, q.layers = 1000, expect_invalid(q, "records");
    q = p, q.concentration = 0.0, expect_invalid(q, "--concentration");
    q = p, q.concentration = NAN, expect_invalid(q, "--concentration");
    q = p, q.drift = 1.5, expect_invalid(q, "--drift");
    q = p, q.hot_ranks = 0, expect_invalid(q, "--hot-ranks");
    q = p, q.hot_ranks = 5, expect_invalid(q, "--hot-ranks");
    q = p, q.hot_fraction = -0.1, expect_invalid(q, "--hot-fraction");
    q = p, q.hot_fraction = 1.1, expect_invalid(q, "--hot-fraction");
    q = p, q.seed = TSIM_GEN_MAX_SEED + 1, expect_invalid(q, "--seed");
    q = p, q.experts = 65536 * 2, expect_invalid(q, "--experts");
    q = p, q.experts = 65536, q.ep = 4096, expect_invalid(q, "counts a record");

    tsim_gen_calibration cal;
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_calibrate(&p, -0.1, &cal, NULL, NULL, &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_gen_calibrate(&p, NAN, &cal, NULL, NULL, &err), TSIM_E_INPUT);
    q = p, q.topk = 0;
    cr_assert_eq(tsim_gen_calibrate(&q, 0.3, &cal, NULL, NULL, &err), TSIM_E_INPUT);
}

Test(gen, meta_records_the_generator_and_every_parameter)
{
    tsim_gen_params p = small_params();
    tsim_gen_calibration cal = {.target = 0.3, .hot_fraction = 0.1, .hot_tokens = 102, .achieved = 0.301,
                                .base = 0.05, .trials = 4};
    cJSON *meta = tsim_gen_meta(&p, &cal, 0.301);
    cr_assert_not_null(meta);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(meta, "source")), "synthetic");
    cJSON *gen = cJSON_GetObjectItem(meta, "generator");
    cr_assert(cJSON_IsObject(gen));
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(gen, "name")), TSIM_GEN_NAME);
    const char *keys[] = {"version", "seed", "experts", "ep", "ranks_per_node", "topk", "tokens", "microbatches",
                          "layers", "concentration", "drift", "hot_ranks", "hot_fraction",
                          "hot_tokens_per_record", "imbalance_achieved", "imbalance_target", "imbalance_base",
                          "calibration_trials"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(gen, keys[i])), "meta.generator lacks %s", keys[i]);
    cr_assert_float_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(gen, "seed")), 7.0, 0);
    cr_assert_float_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(gen, "hot_tokens_per_record")), 102.0, 0);
    cr_assert_float_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(gen, "imbalance_target")), 0.3, 0);
    cJSON_Delete(meta);
    /* Without a calibration, no target. */
    meta = tsim_gen_meta(&p, NULL, 0.2);
    cr_assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(meta, "generator"), "imbalance_target"));
    cJSON_Delete(meta);
}

/* ---- regimes: hot-rank placement, hot experts, hot skew ------------------- */

static tsim_gen_params parsed(const char *spec)
{
    tsim_gen_params p;
    tsim_gen_params_default(&p);
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_hot_ranks_parse(spec, &p, &err), TSIM_OK, "'%s': %s", spec, err.msg);
    return p;
}

Test(gen, hot_ranks_parse_and_format_round_trip)
{
    tsim_gen_params p = parsed("3");
    cr_assert_eq(p.hot_placement, TSIM_HOT_FIRST);
    cr_assert_eq(p.hot_ranks, 3);
    p = parsed("per-node:2");
    cr_assert_eq(p.hot_placement, TSIM_HOT_PER_NODE);
    cr_assert_eq(p.hot_ranks, 2);
    p = parsed("24,0,16,8");
    cr_assert_eq(p.hot_placement, TSIM_HOT_LIST);
    cr_assert_eq(p.n_hot_list, 4);
    const int want[] = {0, 8, 16, 24};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(p.hot_list[i], want[i], "sorted: [%d] = %d", i, p.hot_list[i]);
    p = parsed("ranks:5");
    cr_assert_eq(p.hot_placement, TSIM_HOT_LIST);
    cr_assert_eq(p.n_hot_list, 1);
    cr_assert_eq(p.hot_list[0], 5);

    const char *specs[] = {"1", "7", "per-node:1", "per-node:3", "0,8,16,24", "ranks:5", "2,3"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        p = parsed(specs[i]);
        char buf[64];
        tsim_gen_hot_ranks_format(&p, buf, sizeof buf);
        cr_assert_str_eq(buf, specs[i]);
        tsim_gen_params q = parsed(buf);
        cr_assert_eq(q.hot_placement, p.hot_placement);
        cr_assert_eq(q.hot_ranks, p.hot_ranks);
        cr_assert_eq(q.n_hot_list, p.n_hot_list);
    }
    tsim_gen_params q = parsed("8,0");
    char buf[64];
    tsim_gen_hot_ranks_format(&q, buf, sizeof buf);
    cr_assert_str_eq(buf, "0,8");

    const char *bad[] = {"", "0", "-1", "x", "per-node:", "per-node:0", "per-node:x", "1,1", "1,", ",1",
                         "a,b", "-1,2", "ranks:", "ranks:x", "2.5", "1 2", "per-node:1,2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tsim_gen_params_default(&p);
        tsim_error err = {0};
        cr_assert_eq(tsim_gen_hot_ranks_parse(bad[i], &p, &err), TSIM_E_INPUT, "'%s' was accepted", bad[i]);
        cr_assert(strstr(err.msg, "--hot-ranks"), "'%s': message '%s' does not name the option", bad[i], err.msg);
    }
}

Test(gen, hot_rank_lists_per_placement)
{
    tsim_gen_params p = parsed("per-node:1");
    p.ep = 32;
    p.ranks_per_node = 8;
    int ranks[64];
    int n = tsim_gen_hot_rank_list(&p, ranks);
    cr_assert_eq(n, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(ranks[i], 8 * i);
    p = parsed("per-node:2");
    p.ep = 16;
    n = tsim_gen_hot_rank_list(&p, ranks);
    const int want16[] = {0, 1, 8, 9};
    cr_assert_eq(n, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(ranks[i], want16[i]);
    /* A last node with fewer ranks than the others keeps what it has. */
    p.ep = 9;
    p.experts = 72;
    n = tsim_gen_hot_rank_list(&p, ranks);
    cr_assert_eq(n, 3);
    cr_assert_eq(ranks[2], 8);
    p = parsed("3");
    p.ep = 16;
    cr_assert_eq(tsim_gen_hot_rank_list(&p, NULL), 3);
    cr_assert(tsim_gen_default_regime(&p));
    p.hot_skew = 1.0;
    cr_assert_not(tsim_gen_default_regime(&p));
    p = parsed("0,1");
    cr_assert_not(tsim_gen_default_regime(&p), "a list is recorded as a regime even when it equals N");
}

Test(gen, regime_parameters_are_checked)
{
    tsim_gen_params p = small_params(); /* EP4, 32 experts, rpn 2 */
    tsim_gen_params q;
    q = p, q.hot_placement = TSIM_HOT_PER_NODE, q.hot_ranks = 3, expect_invalid(q, "per-node:3");
    q = p, q.hot_placement = TSIM_HOT_PER_NODE, q.hot_ranks = 0, expect_invalid(q, "per-node");
    q = p, q.hot_placement = TSIM_HOT_LIST, q.n_hot_list = 1, q.hot_list[0] = 4, expect_invalid(q, "rank 4");
    q = p, q.hot_placement = TSIM_HOT_LIST, q.n_hot_list = 0, expect_invalid(q, "--hot-ranks");
    q = p, q.hot_placement = TSIM_HOT_LIST, q.n_hot_list = 2, q.hot_list[0] = 2, q.hot_list[1] = 1,
    expect_invalid(q, "ascending");
    q = p, q.hot_experts = 9, expect_invalid(q, "--hot-experts");
    q = p, q.hot_experts = -1, expect_invalid(q, "--hot-experts");
    q = p, q.hot_skew = -0.5, expect_invalid(q, "--hot-skew");
    q = p, q.hot_skew = NAN, expect_invalid(q, "--hot-skew");
    q = p, q.hot_skew = TSIM_GEN_MAX_SKEW + 1, expect_invalid(q, "--hot-skew");
    tsim_error err = {0};
    q = p, q.hot_placement = TSIM_HOT_PER_NODE, q.hot_ranks = 2, q.hot_experts = 8, q.hot_skew = 16;
    cr_assert_eq(tsim_gen_params_check(&q, &err), TSIM_OK, "%s", err.msg);
}

/* Counts of one expert summed over source ranks, per record. */
static int64_t expert_total(const int64_t *all, const tsim_gen_params *p, int64_t record, int expert)
{
    int64_t sum = 0;
    const size_t cells = (size_t)p->ep * (size_t)p->experts;
    for (int r = 0; r < p->ep; r++)
        sum += all[(size_t)record * cells + (size_t)r * (size_t)p->experts + (size_t)expert];
    return sum;
}

/* The hot experts of p (by rank list and M): hot[e] true. */
static void hot_set(const tsim_gen_params *p, bool *hot)
{
    int ranks[TSIM_MAX_RANKS];
    int n = tsim_gen_hot_rank_list(p, ranks);
    int per_rank = p->experts / p->ep, m = tsim_gen_hot_experts_per_rank(p);
    memset(hot, 0, sizeof *hot * (size_t)p->experts);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++)
            hot[ranks[i] * per_rank + j] = true;
}

/* The hot load lands on the hot set and nowhere else: with at least k hot
 * experts, a hot token takes only hot experts and the base tokens are a
 * prefix of the f = 0 base tokens, so every other expert loses or keeps its
 * count, record by record; the hot experts of every hot rank together gain at
 * least min_gain (skipped when negative: with a large hot set, the base picks
 * the hot tokens replace may outweigh what they add). */
static void check_hot_placement(const tsim_gen_params *base, double f, int64_t min_gain)
{
    tsim_gen_params p = *base;
    p.hot_fraction = 0.0;
    int64_t *cold = all_counts(&p);
    p.hot_fraction = f;
    int64_t *hot = all_counts(&p);
    bool in_set[256];
    cr_assert_leq(p.experts, 256);
    hot_set(&p, in_set);
    const int per_rank = p.experts / p.ep;
    for (int64_t i = 0; i < tsim_gen_record_count(&p); i++) {
        for (int r = 0; r < p.ep; r++) {
            int64_t gain = 0;
            bool hot_rank = false;
            for (int e = r * per_rank; e < (r + 1) * per_rank; e++) {
                int64_t c = expert_total(cold, &p, i, e), h = expert_total(hot, &p, i, e);
                if (in_set[e]) {
                    hot_rank = true;
                    gain += h - c;
                } else {
                    cr_assert_leq(h, c, "record %lld: cold expert %d went from %lld to %lld", (long long)i, e,
                                  (long long)c, (long long)h);
                }
            }
            if (hot_rank && min_gain >= 0)
                cr_assert_geq(gain, min_gain, "record %lld: the hot experts of rank %d gained %lld", (long long)i, r,
                              (long long)gain);
        }
    }
    free(cold);
    free(hot);
}

Test(gen, hot_load_lands_on_the_listed_and_per_node_ranks)
{
    tsim_gen_params p = small_params();
    p.experts = 64;
    p.ep = 8; /* 8 experts per rank, k = 4 */
    p.ranks_per_node = 4;
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_hot_ranks_parse("2,5", &p, &err), TSIM_OK);
    /* 0.3 * 256 * 8 = 614 hot tokens, 4 picks each over 2 ranks: ~1230 per
     * hot rank, less the ~300 base picks of the tokens they replace. */
    check_hot_placement(&p, 0.3, 600);
    cr_assert_eq(tsim_gen_hot_ranks_parse("per-node:1", &p, &err), TSIM_OK); /* ranks 0 and 4 */
    check_hot_placement(&p, 0.3, 600);
    cr_assert_eq(tsim_gen_hot_ranks_parse("per-node:2", &p, &err), TSIM_OK); /* 0, 1, 4, 5: +1024 - 512 each */
    check_hot_placement(&p, 0.5, 300);
    cr_assert_eq(tsim_gen_hot_ranks_parse("ranks:7", &p, &err), TSIM_OK); /* +1638 - 205 */
    check_hot_placement(&p, 0.2, 1200);
}

Test(gen, hot_experts_limit_the_hotspot_to_the_first_m)
{
    tsim_gen_params p = small_params();
    p.experts = 64;
    p.ep = 8;
    p.ranks_per_node = 4;
    p.topk = 4;
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_hot_ranks_parse("per-node:1", &p, &err), TSIM_OK);
    p.hot_experts = 2; /* 4 hot experts, k = 4: every hot token takes all four */
    check_hot_placement(&p, 0.25, 2 * 512 - 300); /* 512 hot tokens; ~128 base picks lost per rank */
    /* M = 1 with one hot rank: 1 hot expert < k, taken by every hot token
     * (the other k - 1 picks come from the base popularity). */
    cr_assert_eq(tsim_gen_hot_ranks_parse("ranks:3", &p, &err), TSIM_OK);
    p.hot_experts = 1;
    p.hot_fraction = 0.25;
    int64_t *all = all_counts(&p);
    const int64_t hot_tokens = tsim_gen_hot_tokens(&p); /* 512 */
    for (int64_t i = 0; i < tsim_gen_record_count(&p); i++)
        cr_assert_geq(expert_total(all, &p, i, 24), hot_tokens, "record %lld", (long long)i);
    free(all);
    /* hot_experts = E / R names every expert: the same records as 0 (all). */
    p.hot_experts = 0;
    int64_t *a = all_counts(&p);
    p.hot_experts = 8;
    int64_t *b = all_counts(&p);
    const size_t bytes = sizeof *a * (size_t)p.ep * (size_t)p.experts * (size_t)tsim_gen_record_count(&p);
    cr_assert(memcmp(a, b, bytes) == 0);
    free(a);
    free(b);
}

Test(gen, a_list_equal_to_the_first_n_ranks_gives_the_same_records)
{
    tsim_gen_params p = small_params();
    p.hot_ranks = 2;
    int64_t *a = all_counts(&p);
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_hot_ranks_parse("1,0", &p, &err), TSIM_OK);
    int64_t *b = all_counts(&p);
    p.hot_skew = 0.0; /* explicit 0: still the even spread */
    const size_t bytes = sizeof *a * (size_t)p.ep * (size_t)p.experts * (size_t)tsim_gen_record_count(&p);
    cr_assert(memcmp(a, b, bytes) == 0, "ranks 0,1 differ from --hot-ranks 2");
    free(a);
    free(b);
}

/* Hot picks per position j of the hot experts within their rank, summed over
 * the trace (hot minus cold counts: the base part cancels up to the tail
 * tokens the hot ones replace, which spread evenly). */
static void hot_gain_by_position(const tsim_gen_params *base, double *gain /* [per_rank] */)
{
    tsim_gen_params p = *base;
    const int per_rank = p.experts / p.ep;
    p.hot_fraction = 0.0;
    int64_t *cold = all_counts(&p);
    p.hot_fraction = base->hot_fraction;
    int64_t *hot = all_counts(&p);
    int ranks[TSIM_MAX_RANKS];
    int n = tsim_gen_hot_rank_list(&p, ranks);
    for (int j = 0; j < per_rank; j++) {
        gain[j] = 0;
        for (int64_t i = 0; i < tsim_gen_record_count(&p); i++)
            for (int h = 0; h < n; h++) {
                int e = ranks[h] * per_rank + j;
                gain[j] += (double)(expert_total(hot, &p, i, e) - expert_total(cold, &p, i, e));
            }
    }
    free(cold);
    free(hot);
}

Test(gen, hot_skew_piles_the_hotspot_onto_the_first_experts)
{
    tsim_gen_params p = small_params();
    p.experts = 64;
    p.ep = 4; /* 16 experts per rank */
    p.topk = 2;
    p.tokens = 1024;
    p.hot_fraction = 0.5;
    double even[16], skewed[16];
    hot_gain_by_position(&p, even);
    p.hot_skew = 2.0;
    hot_gain_by_position(&p, skewed);
    /* Even: no position takes more than twice another's share. */
    double lo = even[0], hi = even[0];
    for (int j = 1; j < 16; j++) {
        lo = even[j] < lo ? even[j] : lo;
        hi = even[j] > hi ? even[j] : hi;
    }
    cr_assert_lt(hi, 2.0 * lo, "S = 0: gains from %.0f to %.0f", lo, hi);
    /* S = 2: weights 1, 1/4, 1/9, ... The first expert is taken by most hot
     * tokens (it cannot exceed one pick per token), the last rarely. */
    cr_assert_gt(skewed[0], 3.0 * skewed[3], "S = 2: %.0f vs %.0f", skewed[0], skewed[3]);
    cr_assert_gt(skewed[3], skewed[15], "S = 2: %.0f vs %.0f", skewed[3], skewed[15]);
    cr_assert_gt(skewed[0], skewed[1]);
    cr_assert_gt(skewed[1], skewed[2]);
}

static void expect_calibrated(tsim_gen_params p, double target)
{
    tsim_gen_calibration cal, again;
    tsim_error err = {0};
    char spec[64];
    tsim_gen_hot_ranks_format(&p, spec, sizeof spec);
    int rc = tsim_gen_calibrate(&p, target, &cal, NULL, NULL, &err);
    cr_assert_eq(rc, TSIM_OK, "hot ranks %s, M %d, S %g, target %.2f: %s", spec, p.hot_experts, p.hot_skew, target,
                 err.msg);
    cr_assert_leq(fabs(cal.achieved - target), TSIM_GEN_TOLERANCE, "hot ranks %s, M %d, S %g: target %.3f got %.4f",
                  spec, p.hot_experts, p.hot_skew, target, cal.achieved);
    tsim_gen_params q = p;
    q.hot_fraction = cal.hot_fraction;
    double mean;
    cr_assert_eq(tsim_gen_mean_imbalance(&q, &mean, NULL, NULL, &err), TSIM_OK);
    cr_assert(mean == cal.achieved, "regenerated mean %.17g, calibrated %.17g", mean, cal.achieved);
    cr_assert_eq(tsim_gen_calibrate(&p, target, &again, NULL, NULL, &err), TSIM_OK);
    cr_assert_eq(again.hot_tokens, cal.hot_tokens, "calibration is not deterministic");
}

Test(gen, calibration_meets_the_target_in_every_mode)
{
    tsim_gen_params p = calib_params(); /* EP8, 64 experts, k = 4, 512 tokens */
    p.ranks_per_node = 4;
    const char *specs[] = {"per-node:1", "per-node:2", "1,6", "ranks:5", "3"};
    const int experts[] = {0, 1, 2};
    const double skews[] = {0.0, 1.5};
    const double targets[] = {0.2, 0.6};
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++)
        for (int m = 0; m < 3; m++)
            for (int k = 0; k < 2; k++) {
                tsim_error err = {0};
                cr_assert_eq(tsim_gen_hot_ranks_parse(specs[s], &p, &err), TSIM_OK);
                p.hot_experts = experts[m];
                p.hot_skew = skews[k];
                if (experts[m] == 1 && skews[k] > 0) /* refused: one hot expert per rank has no order */
                    continue;
                for (int t = 0; t < 2; t++)
                    expect_calibrated(p, targets[t]);
            }
}

/* Random regimes: rows always sum to T k, picks stay distinct (count <= T),
 * the hot load never reaches an expert outside the hot set when the set has
 * more than k experts (or k and no skew), and the same parameters give the
 * same records. */
Test(gen, random_regimes_keep_the_invariants)
{
    uint64_t state = 12345;
    for (int trial = 0; trial < 40; trial++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t x = (uint32_t)(state >> 33);
        tsim_gen_params p = small_params();
        const int eps[] = {2, 4, 8};
        p.ep = eps[x % 3];
        p.experts = p.ep * (2 + (int)(x / 3 % 4)); /* 2..5 per rank */
        p.ranks_per_node = 1 + (int)(x / 12 % 4);
        p.topk = 1 + (int)(x / 48 % 4);
        p.tokens = 64;
        p.microbatches = 2;
        p.hot_fraction = (double)(x / 192 % 11) / 10.0;
        p.seed = x;
        const int per_rank = p.experts / p.ep;
        switch (x / 2112 % 3) {
        case 0:
            p.hot_placement = TSIM_HOT_FIRST;
            p.hot_ranks = 1 + (int)(x / 6336 % (uint32_t)p.ep);
            break;
        case 1: {
            int most = p.ranks_per_node < p.ep ? p.ranks_per_node : p.ep;
            p.hot_placement = TSIM_HOT_PER_NODE;
            p.hot_ranks = 1 + (int)(x / 6336 % (uint32_t)most);
            break;
        }
        default:
            p.hot_placement = TSIM_HOT_LIST;
            p.n_hot_list = 0;
            for (int r = 0; r < p.ep; r++)
                if ((x >> (r % 16)) & 1 || (r == p.ep - 1 && p.n_hot_list == 0))
                    p.hot_list[p.n_hot_list++] = r;
            break;
        }
        p.hot_experts = (int)(x / 7 % (uint32_t)(per_rank + 1));
        p.hot_skew = (double)(x / 11 % 4);
        if (tsim_gen_hot_experts_per_rank(&p) < 2)
            p.hot_skew = 0.0; /* refused: see skew_needs_two_hot_experts_per_rank */
        tsim_error err = {0};
        cr_assert_eq(tsim_gen_params_check(&p, &err), TSIM_OK, "trial %d: %s", trial, err.msg);
        check_rows(&p);
        const size_t bytes = sizeof(int64_t) * (size_t)p.ep * (size_t)p.experts * (size_t)tsim_gen_record_count(&p);
        int64_t *a = all_counts(&p);
        int64_t *b = all_counts(&p);
        cr_assert(memcmp(a, b, bytes) == 0, "trial %d: not deterministic", trial);
        free(a);
        free(b);
        int m = tsim_gen_hot_rank_list(&p, NULL) * tsim_gen_hot_experts_per_rank(&p);
        if ((m > p.topk || (m == p.topk && p.hot_skew == 0)) && p.hot_fraction > 0)
            check_hot_placement(&p, p.hot_fraction, -1);
    }
}

Test(gen, meta_records_the_regime)
{
    tsim_gen_params p = small_params();
    /* The default shape: no regime fields (the bundled traces keep their bytes). */
    cJSON *meta = tsim_gen_meta(&p, NULL, 0.2);
    cJSON *gen = cJSON_GetObjectItem(meta, "generator");
    cr_assert_null(cJSON_GetObjectItem(gen, "hot_placement"));
    cr_assert_null(cJSON_GetObjectItem(gen, "hot_rank_list"));
    cr_assert_null(cJSON_GetObjectItem(gen, "hot_experts"));
    cr_assert_null(cJSON_GetObjectItem(gen, "hot_skew"));
    cr_assert_float_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(gen, "hot_ranks")), 1.0, 0);
    cJSON_Delete(meta);

    tsim_error err = {0};
    p.ep = 8;
    p.experts = 64;
    p.ranks_per_node = 4;
    cr_assert_eq(tsim_gen_hot_ranks_parse("per-node:1", &p, &err), TSIM_OK);
    p.hot_experts = 3;
    p.hot_skew = 1.5;
    meta = tsim_gen_meta(&p, NULL, 0.2);
    gen = cJSON_GetObjectItem(meta, "generator");
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(gen, "hot_placement")), "per-node:1");
    cr_assert_float_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(gen, "hot_ranks")), 2.0, 0);
    cJSON *list = cJSON_GetObjectItem(gen, "hot_rank_list");
    cr_assert_eq(cJSON_GetArraySize(list), 2);
    cr_assert_float_eq(cJSON_GetNumberValue(cJSON_GetArrayItem(list, 0)), 0.0, 0);
    cr_assert_float_eq(cJSON_GetNumberValue(cJSON_GetArrayItem(list, 1)), 4.0, 0);
    cr_assert_float_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(gen, "hot_experts")), 3.0, 0);
    cr_assert_float_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(gen, "hot_skew")), 1.5, 0);
    cJSON_Delete(meta);
    /* Experts given explicitly are recorded even without a skew; all of them resolve to E / R. */
    p.hot_skew = 0.0;
    p.hot_experts = 0;
    meta = tsim_gen_meta(&p, NULL, 0.2);
    gen = cJSON_GetObjectItem(meta, "generator");
    cr_assert_float_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(gen, "hot_experts")), 8.0, 0);
    cJSON_Delete(meta);
}

/* tsim_gen_same_records says "same" exactly when the records are. */
Test(gen, same_records_matches_the_records)
{
    tsim_gen_params a = small_params(); /* EP4, 8 experts per rank, k = 4, rpn 2 */
    a.hot_fraction = 0.3;
    const size_t bytes = sizeof(int64_t) * (size_t)a.ep * (size_t)a.experts * (size_t)tsim_gen_record_count(&a);
    struct {
        const char *spec;
        int m;
        double skew;
    } v[] = {
        {"2", 0, 0}, {"0,1", 0, 0}, {"0,1", 8, 0}, {"per-node:1", 0, 0}, {"0,2", 0, 0}, {"2", 0, 1.0},
        {"2", 2, 1.0}, /* 4 hot experts = k: the skew acts on how often each is taken */
        {"2", 2, 0.0}, {"ranks:1", 1, 0.0}, {"ranks:1", 2, 3.0}, {"1", 0, 0},
        {"2", 2, 1e-320}, /* (j + 1)^-S rounds to 1: the same weights as S = 0 */
        {"1", 2, 1.0},    /* 2 hot experts < k */
        {"1", 2, 2.0},
    };
    const int n = sizeof v / sizeof v[0];
    tsim_gen_params p[16];
    int64_t *counts[16];
    for (int i = 0; i < n; i++) {
        p[i] = a;
        tsim_error err = {0};
        cr_assert_eq(tsim_gen_hot_ranks_parse(v[i].spec, &p[i], &err), TSIM_OK);
        p[i].hot_experts = v[i].m;
        p[i].hot_skew = v[i].skew;
        counts[i] = all_counts(&p[i]);
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            bool same = tsim_gen_same_records(&p[i], &p[j]);
            bool equal = memcmp(counts[i], counts[j], bytes) == 0;
            cr_assert_eq(same, equal, "%s M %d S %g vs %s M %d S %g: same_records %d, records equal %d", v[i].spec,
                         v[i].m, v[i].skew, v[j].spec, v[j].m, v[j].skew, same, equal);
        }
    cr_assert(tsim_gen_same_records(&p[0], &p[1]), "2 and 0,1 are the same ranks");
    cr_assert(tsim_gen_same_records(&p[3], &p[4]), "per-node:1 with 2 ranks per node is 0,2");
    cr_assert(tsim_gen_same_records(&p[1], &p[2]), "M = E / R is every expert");
    cr_assert_not(tsim_gen_same_records(&p[6], &p[7]), "a skew over k hot experts acts");
    cr_assert(tsim_gen_same_records(&p[7], &p[11]), "S = 1e-320 weighs as S = 0");
    cr_assert_not(tsim_gen_same_records(&p[12], &p[13]), "a skew over fewer than k hot experts acts");
    for (int i = 0; i < n; i++)
        free(counts[i]);
    tsim_gen_params b = p[0];
    b.seed = 8;
    cr_assert_not(tsim_gen_same_records(&p[0], &b));
    b = p[0];
    b.hot_fraction = 0.31;
    cr_assert_not(tsim_gen_same_records(&p[0], &b));
}

/* The skew acted only when the hot experts outnumbered k: with m <= k every
 * hot token took all of them, so --hot-skew 2 wrote the bytes of skew 0 while
 * the meta said 2. Now the j-th hot expert of a rank gets a hot token with
 * probability (j + 1)^-S: about H, H/4, H/9, H/16 for S = 2. */
Test(gen, skew_acts_on_at_most_k_hot_experts)
{
    tsim_gen_params p = small_params(); /* EP4, 8 experts per rank, k = 4 */
    p.hot_fraction = 0.5;
    p.hot_experts = 4; /* m = 4 = k */
    p.microbatches = 1;
    p.layers = 1;
    int64_t *even = all_counts(&p);
    p.hot_skew = 2.0;
    int64_t *skewed = all_counts(&p);
    const size_t cells = (size_t)p.ep * (size_t)p.experts;
    cr_assert(memcmp(even, skewed, sizeof *even * cells) != 0, "--hot-skew 2 wrote the bytes of --hot-skew 0");
    /* 512 hot tokens: expert 0 takes every one (plus its base picks), expert
     * j about 512 / (j + 1)^2 more than its base share. */
    p.hot_fraction = 0.0;
    int64_t *cold = all_counts(&p);
    const double hot = 0.5 * 256 * 4;
    for (int j = 0; j < 4; j++) {
        double gain = (double)(expert_total(skewed, &p, 0, j) - expert_total(cold, &p, 0, j));
        double want = hot / ((j + 1) * (j + 1));
        cr_assert(fabs(gain - want) < 0.2 * hot / 4 + 40, "expert %d gained %g hot picks, want about %g", j, gain, want);
    }
    free(even);
    free(skewed);
    free(cold);
    /* Fewer hot experts than k: the same. */
    p = small_params();
    p.hot_experts = 2; /* m = 2 < k = 4 */
    int64_t *a = all_counts(&p);
    p.hot_skew = 1.0;
    int64_t *b = all_counts(&p);
    cr_assert(memcmp(a, b, sizeof *a * cells * (size_t)tsim_gen_record_count(&p)) != 0);
    free(a);
    free(b);
}

/* One hot expert per hot rank has no order for the skew to act on: refused. */
Test(gen, skew_needs_two_hot_experts_per_rank)
{
    tsim_gen_params p = small_params();
    p.hot_experts = 1;
    p.hot_skew = 2.0;
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_params_check(&p, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "--hot-skew 2 weighs the j-th hot expert of each hot rank by (j + 1)^-S, but each hot "
                              "rank has one hot expert (--hot-experts 1), so it would change nothing; drop "
                              "--hot-skew or give --hot-experts 2 or more");
    p.hot_experts = 0;
    p.experts = 4; /* one expert per rank: "all" is one */
    p.topk = 2;
    cr_assert_eq(tsim_gen_params_check(&p, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "(one expert per rank)") != NULL, "%s", err.msg);
    p.hot_skew = 0.0;
    cr_assert_eq(tsim_gen_params_check(&p, &err), TSIM_OK, "%s", err.msg);
}

/* Issue 26: the generator's own mt19937 gives GSL's outputs for every seed
 * (0 included, which both map to 4357), across several twists. */
Test(gen, own_mt19937_equals_gsl)
{
    const unsigned long seeds[] = {0, 1, 4357, 7, 0xffffffffUL, 123456789UL};
    enum { N = 3000 };
    static uint32_t want[N];
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
        cr_assert_not_null(r);
        gsl_rng_set(r, seeds[s]);
        for (int i = 0; i < N; i++)
            want[i] = (uint32_t)gsl_rng_get(r);
        gsl_rng_free(r);
        cr_assert_eq(tsim_gen_mt19937_check(seeds[s], want, N), -1, "seed %lu differs", seeds[s]);
    }
}

/* Issue 26: threads sample the source ranks; the records are the same at any
 * number of threads, for base, hot, skewed and rejection-heavy shapes. */
Test(gen, threads_give_the_same_records)
{
    tsim_gen_params shapes[3];
    shapes[0] = small_params();
    shapes[1] = small_params();
    shapes[1].hot_ranks = 2;
    shapes[1].hot_experts = 3;
    shapes[1].hot_skew = 1.5;
    shapes[1].hot_fraction = 0.4;
    shapes[2] = small_params();
    shapes[2].concentration = 0.01; /* very skewed: the exact scan takes over */
    shapes[2].experts = 8;
    shapes[2].topk = 6;
    for (int s = 0; s < 3; s++) {
        tsim_gen_params p = shapes[s];
        const size_t cells = (size_t)p.ep * (size_t)p.experts * (size_t)tsim_gen_record_count(&p);
        int64_t *one = all_counts(&p);
        const int threads[] = {2, 3, 4, 16};
        for (int t = 0; t < 4; t++) {
            p.threads = threads[t];
            int64_t *many = all_counts(&p);
            cr_assert(memcmp(one, many, sizeof *one * cells) == 0, "shape %d differs at -j %d", s, threads[t]);
            free(many);
        }
        free(one);
    }
}

/* --hot-move N: the hotspot of microbatch m sits on rank (m / N) mod R, and
 * records before the first move are those of a hotspot that never moves. */
Test(gen, hot_move_walks_the_hotspot_one_rank_per_period)
{
    tsim_gen_params p = small_params();
    p.experts = 64;
    p.ep = 8;
    p.layers = 1;
    p.microbatches = 20;
    p.hot_fraction = 0.2;
    p.hot_move = 2;
    const int64_t n = tsim_gen_record_count(&p);
    int64_t *moving = malloc(sizeof *moving * (size_t)(n * p.ep));
    int64_t *still = malloc(sizeof *still * (size_t)(n * p.ep));
    cr_assert(moving && still);
    rank_loads(&p, moving);
    p.hot_move = 0;
    rank_loads(&p, still);
    for (int64_t i = 0; i < n; i++) {
        const int64_t *l = moving + i * p.ep;
        const int hot = (int)((i / 2) % p.ep);
        for (int r = 0; r < p.ep; r++)
            if (r != hot)
                cr_assert_gt(l[hot], l[r], "microbatch %lld: rank %d (%lld) not below hot rank %d (%lld)",
                             (long long)i, r, (long long)l[r], hot, (long long)l[hot]);
        if (i < 2)
            cr_assert_arr_eq(l, still + i * p.ep, sizeof *l * (size_t)p.ep);
    }
    p.hot_move = -1;
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_params_check(&p, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "--hot-move -1 is negative");
    free(moving);
    free(still);
}
