/* Extremes (the hardening issue): every planner either plans a record the
 * evaluator accepts or refuses it with TSIM_E_INPUT and a message naming the
 * problem, never a crash and never TSIM_E_INTERNAL, on all-zero records, one
 * expert holding every token, R = 1, rpn > R, rpn not dividing R, K = 0,
 * E = R, counts of 2^40 and E = 65536. Also the bounded-memory series of
 * stats.h against the exact one, and the inputs the fuzzers found. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluate.h"
#include "planner.h"
#include "planner_configs.h"
#include "registry.h"
#include "random_records.h"
#include "record.h"
#include "session.h"
#include "stats.h"
#include "topology.h"

/* Every registered planner with its choice and flag variants (from the
 * registry: planner_configs.h), expensive ones on a small search budget, plus
 * FasterMoE with free shadows (a number, which no variant covers). */
#define MAX_SPECS 128
static tsim_config_spec spec_text[MAX_SPECS];
static const char *planner_specs[MAX_SPECS + 1];

/* An expensive planner's entry with --NAME-node-limit=200 added. */
static const tsim_planner_desc *spec_desc(const char *spec)
{
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner p;
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_spec_parse(&p, spec, &base, &err), TSIM_OK, "%s: %s", spec, err.msg);
    return p.desc;
}

static bool spec_is_expensive(const char *spec)
{
    return planner_is_expensive(spec_desc(spec));
}

static void small_budget(tsim_config_spec spec)
{
    if (!spec_is_expensive(spec))
        return;
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner p;
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_spec_parse(&p, spec, &base, &err), TSIM_OK);
    char budget[TSIM_CONFIG_SPEC_MAX];
    if (strchr(spec, '='))
        snprintf(budget, sizeof budget, "%s:--%s-node-limit=200", spec, p.desc->name);
    else
        snprintf(budget, sizeof budget, "%s=%s:--%s-node-limit=200", spec, spec, p.desc->name);
    memcpy(spec, budget, sizeof budget);
}

static void specs_init(void)
{
    int n = tsim_registry_configs(spec_text, MAX_SPECS - 1, true);
    snprintf(spec_text[n++], sizeof spec_text[0], "fastermoe-eager=fastermoe:--fastermoe-model-us=0");
    for (int i = 0; i < n; i++) {
        small_budget(spec_text[i]);
        planner_specs[i] = spec_text[i];
    }
    planner_specs[n] = NULL;
}

TestSuite(extremes, .init = specs_init);

typedef struct {
    int rc;               /* TSIM_OK: every record planned and accepted */
    char msg[TSIM_ERROR_MSG_MAX];
    tsim_metrics last;    /* metrics of the last record when rc == TSIM_OK */
} outcome;

/* Runs one planner spec over records of one topology through a session (init,
 * plan, evaluate), the path replay takes. */
static outcome run_planner(const char *spec, int R, int E, int rpn, int K, const int32_t *home,
                           const tsim_record *recs, int n)
{
    outcome o = {0};
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner p;
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_spec_parse(&p, spec, &base, &err), 0, "%s: %s", spec, err.msg);
    tsim_session s;
    o.rc = tsim_session_init(&s, R, E, rpn, K, home, &p, 1, 3.0, &err);
    if (o.rc) {
        snprintf(o.msg, sizeof o.msg, "%s", err.msg);
        return o;
    }
    for (int i = 0; i < n && o.rc == TSIM_OK; i++)
        o.rc = tsim_session_record(&s, &recs[i], &err);
    if (o.rc)
        snprintf(o.msg, sizeof o.msg, "%s", err.msg);
    else
        for (int m = 0; m < TSIM_M_COUNT; m++)
            o.last.v[m] = s.results[0].metrics[m].values[n - 1];
    tsim_session_free(&s);
    return o;
}

/* True when msg contains one of the '|'-separated words (none when NULL). */
static bool names_any(const char *msg, const char *words)
{
    while (words && *words) {
        const char *bar = strchr(words, '|');
        size_t len = bar ? (size_t)(bar - words) : strlen(words);
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)len, words);
        if (strstr(msg, word))
            return true;
        words = bar ? bar + 1 : NULL;
    }
    return false;
}

/* The contract of the issue: handled (the evaluator accepted every plan) or
 * refused as bad input with a message that says what is wrong. */
static outcome expect_handled_or_rejected(const char *what, const char *spec, int R, int E, int rpn, int K,
                                          const int32_t *home, const tsim_record *recs, int n,
                                          const char *reject_word)
{
    outcome o = run_planner(spec, R, E, rpn, K, home, recs, n);
    if (getenv("TSIM_EXTREMES_VERBOSE"))
        fprintf(stderr, "%-18s %-40s %s\n", what, spec, o.rc ? o.msg : "handled");
    cr_assert(o.rc == TSIM_OK || o.rc == TSIM_E_INPUT, "%s, %s: status %d (%s)", what, spec, o.rc, o.msg);
    if (o.rc == TSIM_E_INPUT) {
        cr_assert(o.msg[0], "%s, %s: refused without a message", what, spec);
        cr_assert(names_any(o.msg, reject_word), "%s, %s: refusal does not name the problem (%s): %s", what, spec,
                  reject_word ? reject_word : "no refusal expected", o.msg);
    } else {
        for (int m = 0; m < TSIM_M_COUNT; m++)
            cr_assert(isfinite(o.last.v[m]), "%s, %s: %s is %g", what, spec, tsim_metric_names[m], o.last.v[m]);
    }
    return o;
}

static void records_alloc(tsim_record *recs, int n, int R, int E)
{
    for (int i = 0; i < n; i++) {
        cr_assert_eq(tsim_record_alloc(&recs[i], R, E, NULL), 0);
        recs[i].index = i;
        recs[i].microbatch = i;
    }
}

static void records_free(tsim_record *recs, int n)
{
    for (int i = 0; i < n; i++)
        tsim_record_free(&recs[i]);
}

/* A skewed record: rank 0's home experts hot, the rest light. */
static void fill_skewed(tsim_record *rec, int64_t hot, int64_t cold, int hot_experts)
{
    for (int r = 0; r < rec->ranks; r++)
        for (int e = 0; e < rec->experts; e++)
            rec->counts[(size_t)r * (size_t)rec->experts + (size_t)e] = e < hot_experts ? hot : cold + (r + e) % 3;
}

Test(extremes, all_zero_records)
{
    tsim_record recs[2];
    records_alloc(recs, 2, 16, 128);
    for (const char *const *p = planner_specs; *p; p++) {
        outcome o = expect_handled_or_rejected("all-zero", *p, 16, 128, 8, 2, NULL, recs, 2, NULL);
        cr_expect_eq(o.last.v[TSIM_M_RHO_BEFORE], 0.0, "%s", *p);
        cr_expect_eq(o.last.v[TSIM_M_RHO_AFTER], 0.0, "%s", *p);
        cr_expect_eq(o.last.v[TSIM_M_OFFLOADED], 0.0, "%s", *p);
    }
    records_free(recs, 2);
}

Test(extremes, one_expert_holds_every_token)
{
    /* every source rank sends all of its tokens to expert 5, then all tokens
     * of the record sit on one source rank and one expert */
    tsim_record recs[2];
    records_alloc(recs, 2, 16, 128);
    for (int r = 0; r < 16; r++)
        recs[0].counts[(size_t)r * 128 + 5] = 4096;
    recs[1].counts[(size_t)15 * 128 + 127] = 65536;
    for (const char *const *p = planner_specs; *p; p++) {
        outcome o = expect_handled_or_rejected("one hot expert", *p, 16, 128, 8, 2, NULL, recs, 2, NULL);
        cr_expect(o.last.v[TSIM_M_RHO_AFTER] <= o.last.v[TSIM_M_RHO_BEFORE] + 1e-12, "%s made it worse", *p);
    }
    records_free(recs, 2);
}

Test(extremes, one_rank)
{
    /* R = 1: no other rank to host a replica (and rpn 8 > R) */
    tsim_record recs[1];
    records_alloc(recs, 1, 1, 8);
    fill_skewed(&recs[0], 1000, 3, 2);
    for (const char *const *p = planner_specs; *p; p++) {
        outcome o = expect_handled_or_rejected("R = 1", *p, 1, 8, 8, 2, NULL, recs, 1, "rank|node|graph");
        if (o.rc == TSIM_OK) {
            cr_expect_eq(o.last.v[TSIM_M_INTRA] + o.last.v[TSIM_M_INTER], 0.0, "%s: replicas with one rank", *p);
            cr_expect_eq(o.last.v[TSIM_M_RHO_AFTER], 0.0, "%s", *p);
        }
    }
    records_free(recs, 1);
}

Test(extremes, ranks_per_node_above_ranks)
{
    tsim_record recs[2];
    records_alloc(recs, 2, 4, 16);
    fill_skewed(&recs[0], 500, 5, 4);
    fill_skewed(&recs[1], 7, 90, 1);
    for (const char *const *p = planner_specs; *p; p++) {
        outcome o = expect_handled_or_rejected("rpn 8 > R 4", *p, 4, 16, 8, 2, NULL, recs, 2, "rank|node|graph");
        if (o.rc == TSIM_OK)
            cr_expect_eq(o.last.v[TSIM_M_INTER], 0.0, "%s: one node, yet inter-node replicas", *p);
    }
    records_free(recs, 2);
}

Test(extremes, ranks_per_node_not_dividing_ranks)
{
    /* R = 6, rpn = 4: nodes of 4 and 2 ranks */
    tsim_record recs[2];
    records_alloc(recs, 2, 6, 24);
    fill_skewed(&recs[0], 800, 10, 4);
    fill_skewed(&recs[1], 3, 40, 0);
    for (const char *const *p = planner_specs; *p; p++)
        expect_handled_or_rejected("rpn 4 not dividing R 6", *p, 6, 24, 4, 2, NULL, recs, 2, "rank|node|graph");
    records_free(recs, 2);
}

Test(extremes, no_guest_slots)
{
    tsim_record recs[1];
    records_alloc(recs, 1, 16, 128);
    fill_skewed(&recs[0], 2000, 20, 8);
    for (const char *const *p = planner_specs; *p; p++) {
        outcome o = expect_handled_or_rejected("K = 0", *p, 16, 128, 8, 0, NULL, recs, 1, "slot|--slots|K");
        /* LLEP has no slot limit (model.md); every other planner has nowhere to put a replica */
        if (o.rc == TSIM_OK && strncmp(*p, "llep", 4) != 0)
            cr_expect_eq(o.last.v[TSIM_M_INTRA] + o.last.v[TSIM_M_INTER], 0.0, "%s: replicas with K = 0", *p);
    }
    records_free(recs, 1);
}

Test(extremes, one_expert_per_rank)
{
    tsim_record recs[2];
    records_alloc(recs, 2, 16, 16);
    fill_skewed(&recs[0], 3000, 30, 1);
    fill_skewed(&recs[1], 100, 100, 0);
    for (const char *const *p = planner_specs; *p; p++)
        expect_handled_or_rejected("E = R", *p, 16, 16, 8, 2, NULL, recs, 2, "expert");
    records_free(recs, 2);
}

Test(extremes, counts_of_two_to_the_forty)
{
    /* every cell at the 2^40 limit, then one hot expert at the limit over
     * light ones: loads reach 2^51 and must stay exact */
    const int64_t top = TSIM_MAX_COUNT;
    tsim_record recs[2];
    records_alloc(recs, 2, 16, 128);
    for (size_t c = 0; c < (size_t)16 * 128; c++)
        recs[0].counts[c] = top;
    fill_skewed(&recs[1], top, 1, 1);
    for (const char *const *p = planner_specs; *p; p++) {
        outcome o = expect_handled_or_rejected("2^40 counts", *p, 16, 128, 8, 2, NULL, recs, 2, NULL);
        cr_expect(o.last.v[TSIM_M_RHO_BEFORE] > 0.5, "%s: rho_before %g", *p, o.last.v[TSIM_M_RHO_BEFORE]);
        cr_expect(o.last.v[TSIM_M_OFFLOADED] >= 0 && o.last.v[TSIM_M_OFFLOADED] <= 16.0 * 0x1p40, "%s", *p);
    }
    /* the first record alone, perfectly balanced, against the same shape at
     * 1000 tokens a cell: the planners are scale-free, so any difference is
     * overflow or lost precision beyond the rounding of whole tokens (LPLB's interior point leaves a little
     * imbalance on a flat load at any scale) */
    tsim_record small[1];
    records_alloc(small, 1, 16, 128);
    for (size_t c = 0; c < (size_t)16 * 128; c++)
        small[0].counts[c] = 1000;
    for (const char *const *p = planner_specs; *p; p++) {
        outcome o = expect_handled_or_rejected("2^40 flat", *p, 16, 128, 8, 2, NULL, recs, 1, NULL);
        outcome ref = expect_handled_or_rejected("1000 flat", *p, 16, 128, 8, 2, NULL, small, 1, NULL);
        cr_expect_eq(o.last.v[TSIM_M_RHO_BEFORE], 0.0, "%s", *p);
        cr_expect(fabs(o.last.v[TSIM_M_RHO_AFTER] - ref.last.v[TSIM_M_RHO_AFTER]) < 1e-3,
                  "%s: rho_after %.17g at 2^40, %.17g at 1000", *p, o.last.v[TSIM_M_RHO_AFTER],
                  ref.last.v[TSIM_M_RHO_AFTER]);
        cr_expect(o.last.v[TSIM_M_RHO_AFTER] < 0.01, "%s: rho_after %g on a flat load", *p,
                  o.last.v[TSIM_M_RHO_AFTER]);
    }
    records_free(small, 1);
    records_free(recs, 2);
}

Test(extremes, sixty_five_thousand_experts, .timeout = 600)
{
    /* E = 65536 (the limit) with R = 4: 2 MiB per record */
    const int R = 4, E = 65536;
    tsim_record recs[1];
    records_alloc(recs, 1, R, E);
    uint64_t seed = 42;
    for (int r = 0; r < R; r++)
        for (int e = 0; e < E; e++)
            recs[0].counts[(size_t)r * E + (size_t)e] = e < E / R ? tsim_rand_range(&seed, 0, 40) : tsim_rand_range(&seed, 0, 3);
    for (const char *const *p = planner_specs; *p; p++)
        expect_handled_or_rejected("E = 65536, R = 4", *p, R, E, 2, 2, NULL, recs, 1, "expert|rank|node|graph");
    records_free(recs, 1);
    /* R = 8 on one node of 8: LPLB's default graph applies too (4 MiB per record) */
    records_alloc(recs, 1, 8, E);
    for (int r = 0; r < 8; r++)
        for (int e = 0; e < E; e++)
            recs[0].counts[(size_t)r * E + (size_t)e] = e < E / 8 ? tsim_rand_range(&seed, 0, 40) : tsim_rand_range(&seed, 0, 3);
    for (const char *const *p = planner_specs; *p; p++) {
        /* only an expensive planner (the MIP yardstick) may refuse (too many binaries) */
        outcome o = expect_handled_or_rejected("E = 65536, R = 8", *p, 8, E, 8, 2, NULL, recs, 1,
                                               spec_is_expensive(*p) ? "binaries" : NULL);
        /* FasterMoE with its default costs may rightly decide that no shadow
         * pays; a planner with per-layer memory (prime) may plan a layer's
         * first record from no history (EPLB keeps the static map), but
         * never makes it worse */
        bool memory = spec_desc(*p)->prime != NULL;
        if (o.rc == TSIM_OK && strcmp(*p, "none") != 0 && strcmp(*p, "fastermoe") != 0 && !memory)
            cr_expect(o.last.v[TSIM_M_RHO_AFTER] < o.last.v[TSIM_M_RHO_BEFORE], "%s: no improvement", *p);
        if (o.rc == TSIM_OK && memory)
            cr_expect(o.last.v[TSIM_M_RHO_AFTER] <= o.last.v[TSIM_M_RHO_BEFORE], "%s: made it worse", *p);
    }
    records_free(recs, 1);
}

Test(extremes, experts_above_the_limit_refused)
{
    tsim_topology t;
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(&t, 2, TSIM_MAX_EXPERTS * 2, 2, 2, NULL, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "65536"), "%s", err.msg);
    cr_assert_eq(tsim_topology_init(&t, TSIM_MAX_RANKS * 2, TSIM_MAX_RANKS * 2, 8, 2, NULL, &err), TSIM_E_INPUT);
    cr_assert(err.msg[0]);
}

Test(extremes, both_limits_at_once_refused_as_input)
{
    /* ep 4096 x 65536 experts is within each limit but 2^28 cells: 2 GiB per
     * count matrix. Found by hand: the evaluator's allocation failed and the
     * CLI called it an internal error (exit 3). Now a clear input error. */
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner p;
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_spec_parse(&p, "none", &base, &err), 0);
    tsim_session s;
    cr_assert_eq(tsim_session_init(&s, TSIM_MAX_RANKS, TSIM_MAX_EXPERTS, 8, 2, NULL, &p, 1, 3.0, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "ep 4096 x experts 65536") && strstr(err.msg, "limit"), "%s", err.msg);
    /* ep 4096 with 1024 guest slots: plans of 2^34 token counts (128 GiB); it
     * was an "internal error" (exit 3) from the plan's allocation */
    cr_assert_eq(tsim_session_init(&s, TSIM_MAX_RANKS, TSIM_MAX_RANKS, 8, 1024, NULL, &p, 1, 3.0, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "slots") && strstr(err.msg, "limit"), "%s", err.msg);
    cr_assert_eq(tsim_session_init(&s, TSIM_MAX_RANKS, TSIM_MAX_RANKS, 8, 4, NULL, &p, 1, 3.0, &err), TSIM_OK,
                 "%s", err.msg);
    tsim_session_free(&s);
    /* the largest allowed product still initialises */
    cr_assert_eq(tsim_session_init(&s, 256, TSIM_MAX_EXPERTS, 8, 2, NULL, &p, 1, 3.0, &err), TSIM_OK, "%s", err.msg);
    tsim_session_free(&s);
}

/* ---- the bounded-memory series (stats.h) ---- */

static double value_at(uint64_t *seed, int i)
{
    switch (i % 5) {
    case 0:
        return (double)tsim_rand_range(seed, 0, 40);               /* small integers */
    case 1:
        return tsim_rand_unit(seed) * 3.0;                          /* rho-like */
    case 2:
        return -tsim_rand_unit(seed) * 250.0;                       /* improve_pp-like */
    case 3:
        return (double)tsim_rand_range(seed, 1000, 5000000);        /* plan_ns-like */
    default:
        return 0.0;
    }
}

Test(extremes, bounded_series_agrees_with_exact)
{
    tsim_series exact = {0}, bounded = {0};
    tsim_series_bound(&bounded, 1000);
    uint64_t seed = 9;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double v = value_at(&seed, i * 7 / 3);
        cr_assert_eq(tsim_series_push(&exact, v), 0);
        cr_assert_eq(tsim_series_push(&bounded, v), 0);
    }
    cr_assert(!tsim_series_exact(&bounded));
    cr_assert_null(bounded.values, "a bounded series keeps no values");
    cr_assert_eq(bounded.n, (size_t)n);
    tsim_summary a = tsim_series_summary(&exact), b = tsim_series_summary(&bounded);
    cr_assert_eq(a.n, b.n);
    cr_assert_eq(a.mean, b.mean, "mean: same sum in the same order (%.17g vs %.17g)", a.mean, b.mean);
    cr_assert_eq(tsim_series_mean(&bounded), a.mean);
    cr_assert_eq(a.min, b.min);
    cr_assert_eq(a.max, b.max);
    cr_assert(fabs(a.std - b.std) <= 1e-9 * a.std, "std %.17g vs %.17g", a.std, b.std);
    cr_assert(b.p50 <= a.p50 && a.p50 - b.p50 <= 0.01 * fabs(a.p50), "p50 %g vs %g", a.p50, b.p50);
    cr_assert(b.p95 <= a.p95 && a.p95 - b.p95 <= 0.01 * fabs(a.p95), "p95 %g vs %g", a.p95, b.p95);
    tsim_series_free(&exact);
    tsim_series_free(&bounded);
}

Test(extremes, bounded_series_quantiles_of_small_integers_are_exact)
{
    tsim_series exact = {0}, bounded = {0};
    tsim_series_bound(&bounded, 10);
    uint64_t seed = 3;
    for (int i = 0; i < 50000; i++) {
        double v = (double)tsim_rand_range(&seed, -99, 99);
        tsim_series_push(&exact, v);
        tsim_series_push(&bounded, v);
    }
    tsim_summary a = tsim_series_summary(&exact), b = tsim_series_summary(&bounded);
    cr_assert_eq(a.p50, b.p50);
    cr_assert_eq(a.p95, b.p95);
    tsim_series_free(&exact);
    tsim_series_free(&bounded);
}

Test(extremes, bounded_series_edge_values)
{
    /* below the threshold a bounded series is the exact one */
    tsim_series s = {0};
    tsim_series_bound(&s, 4);
    double few[] = {3, 1, 2};
    for (int i = 0; i < 3; i++)
        tsim_series_push(&s, few[i]);
    cr_assert(tsim_series_exact(&s));
    tsim_summary x = tsim_series_summary(&s);
    cr_assert_eq(x.p50, 2.0);
    /* huge, tiny and signed values, and one infinity, past the switch */
    double more[] = {1e300, -1e300, 1e-300, -1e-300, 0.0, INFINITY, 5e15, -5e15};
    for (int i = 0; i < 8; i++)
        tsim_series_push(&s, more[i]);
    cr_assert(!tsim_series_exact(&s));
    x = tsim_series_summary(&s);
    cr_assert_eq(x.n, 11);
    cr_assert_eq(x.min, -1e300);
    cr_assert_eq(x.max, INFINITY);
    /* sorted: -1e300 -5e15 -1e-300 0 1e-300 1 2 3 5e15 1e300 inf; rank 6 is 1 */
    cr_assert_eq(x.p50, 1.0);
    /* rank ceil(0.95 * 11) = 11: the infinity, counted above every bin */
    cr_assert_eq(x.p95, INFINITY);
    /* clear goes back to exact mode and keeps the bound */
    tsim_series_clear(&s);
    cr_assert(tsim_series_exact(&s));
    cr_assert_eq(s.exact_max, 4);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(tsim_series_push(&s, (double)i), 0);
    cr_assert(!tsim_series_exact(&s));
    x = tsim_series_summary(&s);
    cr_assert_eq(x.mean, 2.5);
    cr_assert_eq(x.p50, 2.0);
    tsim_series_free(&s);
}

Test(extremes, bounded_session_matches_exact_session)
{
    /* the same 600 random records through a session that switches after 64
     * and one that keeps everything: identical means, min and max */
    tsim_random_shape shape = {.ranks = 8, .experts = 32, .slots = 2, .ranks_per_node = 4};
    const int n = 600;
    tsim_record *recs = calloc((size_t)n, sizeof *recs);
    uint64_t seed = 11;
    for (int i = 0; i < n; i++) {
        tsim_random_record(&seed, &shape, &recs[i]);
        recs[i].index = i;
    }
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner ps[2];
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_spec_parse(&ps[0], "taot", &base, &err), 0);
    cr_assert_eq(tsim_planner_spec_parse(&ps[1], "llep", &base, &err), 0);
    tsim_session a, b;
    cr_assert_eq(tsim_session_init(&a, 8, 32, 4, 2, NULL, ps, 2, 3.0, &err), 0, "%s", err.msg);
    cr_assert_eq(tsim_session_init(&b, 8, 32, 4, 2, NULL, ps, 2, 3.0, &err), 0, "%s", err.msg);
    tsim_session_bound_memory(&b, 64);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(tsim_session_record(&a, &recs[i], &err), 0, "%s", err.msg);
        cr_assert_eq(tsim_session_record(&b, &recs[i], &err), 0, "%s", err.msg);
    }
    for (int p = 0; p < 2; p++)
        for (int m = 0; m < TSIM_M_COUNT; m++) {
            cr_assert(!tsim_series_exact(&b.results[p].metrics[m]));
            tsim_summary x = tsim_session_summary(&a, p, (tsim_metric_id)m);
            tsim_summary y = tsim_session_summary(&b, p, (tsim_metric_id)m);
            cr_assert_eq(x.mean, y.mean, "%s", tsim_metric_names[m]);
            cr_assert_eq(x.min, y.min, "%s", tsim_metric_names[m]);
            cr_assert_eq(x.max, y.max, "%s", tsim_metric_names[m]);
            cr_assert(fabs(x.p95 - y.p95) <= 0.01 * fabs(x.p95) + 1e-12, "%s p95 %g vs %g", tsim_metric_names[m],
                      x.p95, y.p95);
        }
    /* per-record output keeps every value: bounding is refused */
    tsim_session c;
    cr_assert_eq(tsim_session_init(&c, 8, 32, 4, 2, NULL, ps, 1, 3.0, &err), 0);
    c.keep_ids = true;
    tsim_session_bound_memory(&c, 1);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(tsim_session_record(&c, &recs[i], &err), 0);
    cr_assert(tsim_series_exact(&c.results[0].metrics[TSIM_M_RHO_AFTER]));
    tsim_session_free(&c);
    tsim_session_free(&a);
    tsim_session_free(&b);
    records_free(recs, n);
    free(recs);
}
