/* FasterMoE dynamic shadowing (baselines.md "Further planners", fastermoe):
 * the stopping rule checked by hand, ties, zero loads, the E - 1 bound, a
 * hand-computed plan, the all-zero record, R = 1, option validation, and
 * properties over 10,000 random records against a plain re-derivation that
 * accumulates the step time the way the released policy does. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "evaluate.h"
#include "fastermoe.h"
#include "plan.h"
#include "planner.h"
#include "registry.h"
#include "planner_fixture.h"
#include "random_records.h"
#include "record.h"
#include "topology.h"

typedef tsim_test_fixture fixture;

static tsim_fastermoe_options fm(double comp, double feat, double model)
{
    return (tsim_fastermoe_options){.comp_us = comp, .feat_us = feat, .model_us = model};
}

static void fixture_open(fixture *f, int R, int E, int rpn, tsim_fastermoe_options o)
{
    tsim_planner_options opts;
    tsim_planner_options_default(&opts);
    opts.fastermoe = o;
    /* Deliberately small plan: no slot limit, the plan must grow. */
    tsim_fixture_open(f, &tsim_planner_fastermoe, R, E, rpn, 2, &opts, 1);
}

static void fixture_close(fixture *f)
{
    tsim_fixture_close(f);
}

static void plan_and_evaluate(fixture *f, const tsim_record *rec, tsim_metrics *m)
{
    tsim_fixture_plan(f, rec, m);
    cr_assert(!f->plan.slot_limited, "fastermoe plans have no slot limit");
}

/* Fills rec (allocated R x E) from a row-major R x E table. */
static void record_from_table(tsim_record *rec, int R, int E, const int64_t *table)
{
    cr_assert_eq(tsim_record_alloc(rec, R, E, NULL), 0);
    memcpy(rec->counts, table, sizeof *table * (size_t)R * (size_t)E);
}

Test(fastermoe, stopping_rule_by_hand)
{
    /* comp 1, feat 0.5: 3*1 + 4*0.5 = 5 us per token (exact in binary). */
    const int64_t b[8] = {200, 150, 120, 119, 50, 0, 0, 0};
    tsim_fastermoe_options o = fm(1.0, 0.5, 100.0);
    /* T(k) = 5 * B_{k+1} + 100 k: 1000, 850, 800, 895, 650, 500, ... */
    cr_assert_eq(tsim_fastermoe_step_us(b, 8, 0, &o), 1000.0);
    cr_assert_eq(tsim_fastermoe_step_us(b, 8, 1, &o), 850.0);
    cr_assert_eq(tsim_fastermoe_step_us(b, 8, 2, &o), 800.0);
    cr_assert_eq(tsim_fastermoe_step_us(b, 8, 3, &o), 895.0);
    cr_assert_eq(tsim_fastermoe_step_us(b, 8, 4, &o), 650.0);
    cr_assert(isnan(tsim_fastermoe_step_us(b, 8, 8, &o)), "T(E) does not exist");
    /* 850 < 1000, 800 < 850, 895 >= 800: stop at 2, although T(4) = 650 is
     * lower again (greedy: the first non-decrease ends it). */
    cr_assert_eq(tsim_fastermoe_shadow_count(b, 8, &o), 2);

    /* model 4: T = 1000, 754, 608, 607, 266, 20, 24: five shadows; the sixth
     * would shadow a zero-load expert. */
    o.model_us = 4.0;
    cr_assert_eq(tsim_fastermoe_shadow_count(b, 8, &o), 5);
    /* model 0: every strict gap is worth it, zero loads never. */
    o.model_us = 0.0;
    cr_assert_eq(tsim_fastermoe_shadow_count(b, 8, &o), 5);
    /* model above the first gain (5 * 50 = 250): nothing. */
    o.model_us = 250.0;
    cr_assert_eq(tsim_fastermoe_shadow_count(b, 8, &o), 0);
    o.model_us = 249.5;
    cr_assert_eq(tsim_fastermoe_shadow_count(b, 8, &o), 1, "T(1) = 999.5 < 1000; T(2) = 1099 is not");

    /* Equal is not lower: 5 * (200 - 180) = 100 = model, T(1) = T(0). */
    const int64_t eq[4] = {200, 180, 170, 0};
    o.model_us = 100.0;
    cr_assert_eq(tsim_fastermoe_step_us(eq, 4, 0, &o), tsim_fastermoe_step_us(eq, 4, 1, &o));
    cr_assert_eq(tsim_fastermoe_shadow_count(eq, 4, &o), 0);
    o.model_us = 99.75;
    cr_assert_eq(tsim_fastermoe_shadow_count(eq, 4, &o), 1, "gain 100 > 99.75, then gain 50 is not");

    /* comp and feat enter only as 3 comp + 4 feat: the same decisions from
     * other splits of 5 us per token. */
    tsim_fastermoe_options o2 = fm(0.0, 1.25, 100.0);
    cr_assert_eq(tsim_fastermoe_shadow_count(b, 8, &o2), 2);
    o2 = fm(5.0 / 3.0, 0.0, 100.0);
    cr_assert_eq(tsim_fastermoe_shadow_count(b, 8, &o2), 2);
}

Test(fastermoe, ties_stop_shadowing)
{
    tsim_fastermoe_options o = fm(1.0, 0.5, 1.0);
    /* Two equally hot experts: shadowing one leaves the other as the bound. */
    const int64_t top_tie[3] = {100, 100, 10};
    cr_assert_eq(tsim_fastermoe_shadow_count(top_tie, 3, &o), 0);
    o.model_us = 0.0;
    cr_assert_eq(tsim_fastermoe_shadow_count(top_tie, 3, &o), 0, "a zero gain never beats even a free shadow");
    /* A tie after the first: one shadow, then the tie stops it. */
    const int64_t later_tie[5] = {300, 100, 100, 10, 1};
    o.model_us = 1.0;
    cr_assert_eq(tsim_fastermoe_shadow_count(later_tie, 5, &o), 1);

    /* In a plan: experts 6 and 1 tie at the top (R = 2, E = 8; comp 1, feat
     * 0.5 and a free shadow): nothing is shadowed whatever the order. */
    fixture f;
    fixture_open(&f, 2, 8, 8, fm(1.0, 0.5, 0.0));
    const int64_t table[16] = {0, 40, 3, 0, 0, 0, 10, 0, /* source 0 */
                               0, 10, 0, 0, 0, 2, 40, 0 /* source 1 */};
    tsim_record rec;
    record_from_table(&rec, 2, 8, table);
    tsim_metrics m;
    plan_and_evaluate(&f, &rec, &m);
    cr_assert_eq(f.plan.count, 0, "tied hottest experts: no shadow");
    /* Break the tie by one token: loads e6 51, e1 50, e2 3, e5 2, then zeros.
     * Gaps 1, 47, 1, 2, 0 with a free shadow: e6, e1, e2, e5 are shadowed.
     * Homes: experts 0..3 on rank 0, 4..7 on rank 1. Only sources with tokens
     * away from home get a replica: e6 on rank 0 (10), e1 on rank 1 (10); e2
     * has no token on rank 1 and e5 none on rank 0, so they list nothing. */
    rec.counts[1 * 8 + 6] = 41;
    plan_and_evaluate(&f, &rec, &m);
    tsim_plan_sort(&f.plan);
    cr_assert_eq(f.plan.count, 2);
    tsim_fixture_assert_replica(&f.plan, 0, 1, 1, 0, 10, (const int64_t[]){0, 10});
    tsim_fixture_assert_replica(&f.plan, 1, 6, 0, 0, 10, (const int64_t[]){10, 0});
    tsim_fixture_assert_loads(&f, (const int64_t[]){40 + 3 + 10, 2 + 41 + 10});
    tsim_record_free(&rec);
    fixture_close(&f);
}

Test(fastermoe, zero_loads_and_the_e_minus_one_bound)
{
    tsim_fastermoe_options o = fm(1.0, 0.5, 0.0);
    const int64_t one_hot[4] = {100, 0, 0, 0};
    cr_assert_eq(tsim_fastermoe_shadow_count(one_hot, 4, &o), 1, "the zero-load experts are never shadowed");
    const int64_t none[4] = {0, 0, 0, 0};
    cr_assert_eq(tsim_fastermoe_shadow_count(none, 4, &o), 0);
    /* Every expert loaded, every gap worth it: at most E - 1 shadows, since
     * T(E) would need a B_{E+1}. */
    o.model_us = 1.0;
    const int64_t all[3] = {300, 200, 100};
    cr_assert_eq(tsim_fastermoe_shadow_count(all, 3, &o), 2);
    cr_assert_eq(tsim_fastermoe_shadow_count(all, 2, &o), 1);
    cr_assert_eq(tsim_fastermoe_shadow_count(all, 1, &o), 0);
    cr_assert_eq(tsim_fastermoe_shadow_count(all, 0, &o), 0);
    /* The same loads followed by a zero: the third becomes shadowable. */
    const int64_t all0[4] = {300, 200, 100, 0};
    cr_assert_eq(tsim_fastermoe_shadow_count(all0, 4, &o), 3);
}

/* R = 4, E = 8 (experts 2r, 2r+1 on rank r), rpn 2, comp 1, feat 0.5, model
 * 100. Loads: e5 200, e0 150, e6 120, e2 119, e7 50, e1 = e3 = e4 = 0, the
 * sorted list of the stopping-rule test: k = 2, experts 5 and 0. */
static const int64_t hand_table[32] = {
    /*        e0  e1  e2   e3 e4 e5   e6  e7 */
    /* s0 */ 50, 0, 119, 0, 0, 60, 30, 0,
    /* s1 */ 30, 0, 0, 0, 0, 0, 30, 0,
    /* s2 */ 0, 0, 0, 0, 0, 40, 30, 0,
    /* s3 */ 70, 0, 0, 0, 0, 100, 30, 50,
};

Test(fastermoe, hand_computed_plan)
{
    fixture f;
    fixture_open(&f, 4, 8, 2, fm(1.0, 0.5, 100.0));
    tsim_record rec;
    record_from_table(&rec, 4, 8, hand_table);
    tsim_metrics m;
    plan_and_evaluate(&f, &rec, &m);
    /* Expert 5 (home 2) first: rank 0 (60, slot 0) and rank 3 (100, slot 0);
     * rank 1 has no token of it, so no replica and no slot used. Expert 0
     * (home 0) next: rank 1 (30, slot 0: its first listed shadow), rank 3
     * (70, slot 1); rank 2 has none. Each source computes its own tokens. */
    cr_assert_eq(f.plan.count, 4);
    /* Planner order: shadows in descending load, guests ascending. */
    cr_assert(f.plan.replicas[0].expert == 5 && f.plan.replicas[0].guest == 0);
    cr_assert(f.plan.replicas[1].expert == 5 && f.plan.replicas[1].guest == 3);
    cr_assert(f.plan.replicas[2].expert == 0 && f.plan.replicas[2].guest == 1);
    cr_assert(f.plan.replicas[3].expert == 0 && f.plan.replicas[3].guest == 3);
    tsim_plan_sort(&f.plan);
    tsim_fixture_assert_replica(&f.plan, 0, 0, 1, 0, 30, (const int64_t[]){0, 30, 0, 0});
    tsim_fixture_assert_replica(&f.plan, 1, 0, 3, 1, 70, (const int64_t[]){0, 0, 0, 70});
    tsim_fixture_assert_replica(&f.plan, 2, 5, 0, 0, 60, (const int64_t[]){60, 0, 0, 0});
    tsim_fixture_assert_replica(&f.plan, 3, 5, 3, 0, 100, (const int64_t[]){0, 0, 0, 100});
    /* Before: 150, 119, 200, 170. After: rank 0 keeps 50 of e0 + 60 of e5;
     * rank 1 119 + 30; rank 2 keeps its own 40 of e5; rank 3 170 + 100 + 70. */
    tsim_fixture_assert_loads(&f, (const int64_t[]){110, 149, 40, 340});
    /* Nodes {0, 1}, {2, 3}: e0 on 1 intra, on 3 inter; e5 on 0 inter, on 3 intra. */
    cr_assert_eq(m.v[TSIM_M_INTRA], 2.0);
    cr_assert_eq(m.v[TSIM_M_INTER], 2.0);
    cr_assert_eq(m.v[TSIM_M_OFFLOADED], 260.0);
    tsim_record_free(&rec);
    fixture_close(&f);
}

Test(fastermoe, all_zero_record_and_single_rank)
{
    fixture f;
    fixture_open(&f, 4, 8, 8, fm(1.0, 0.5, 0.0));
    tsim_record rec;
    cr_assert_eq(tsim_record_alloc(&rec, 4, 8, NULL), 0);
    tsim_metrics m;
    plan_and_evaluate(&f, &rec, &m);
    cr_assert_eq(f.plan.count, 0, "an all-zero record shadows nothing");
    cr_assert_eq(m.v[TSIM_M_RHO_AFTER], 0.0);
    /* A plan, then the all-zero record again: nothing leaks from the last. */
    memcpy(rec.counts, hand_table, sizeof hand_table);
    plan_and_evaluate(&f, &rec, &m);
    cr_assert_gt(f.plan.count, 0);
    memset(rec.counts, 0, sizeof hand_table);
    plan_and_evaluate(&f, &rec, &m);
    cr_assert_eq(f.plan.count, 0);
    tsim_record_free(&rec);
    fixture_close(&f);

    /* R = 1: one very hot expert would be shadowed, but there is no other rank. */
    fixture_open(&f, 1, 4, 8, fm(1.0, 0.5, 0.0));
    const int64_t one[4] = {5000, 1, 0, 7};
    record_from_table(&rec, 1, 4, one);
    plan_and_evaluate(&f, &rec, &m);
    cr_assert_eq(f.plan.count, 0, "R = 1 keeps everything home");
    const int64_t sorted[4] = {5000, 7, 1, 0};
    cr_assert_gt(tsim_fastermoe_shadow_count(sorted, 4, &f.opts.fastermoe), 0, "the rule alone would shadow");
    tsim_record_free(&rec);
    fixture_close(&f);
}

Test(fastermoe, bad_options_and_shapes_are_rejected)
{
    tsim_topology topo;
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(&topo, 2, 4, 8, 2, NULL, &err), 0);
    const tsim_fastermoe_options bad[] = {fm(-1, 0.02, 380), fm(0.063, -0.5, 380), fm(0.063, 0.02, -1),
                                          fm(NAN, 0.02, 380), fm(0.063, INFINITY, 380), fm(0.063, 0.02, NAN)};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tsim_planner_options o;
        tsim_planner_options_default(&o);
        o.fastermoe = bad[i];
        void *s = (void *)1;
        cr_assert_eq(tsim_planner_fastermoe.init(&s, &topo, &o, &err), TSIM_E_INPUT, "bad option set %zu", i);
        cr_assert_null(s);
        cr_assert(strstr(err.msg, "fastermoe") != NULL, "%s", err.msg);
    }
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    void *s = NULL;
    cr_assert_eq(tsim_planner_fastermoe.init(&s, &topo, &o, &err), 0, "%s", err.msg);
    tsim_record rec;
    cr_assert_eq(tsim_record_alloc(&rec, 2, 8, NULL), 0);
    tsim_plan plan;
    cr_assert_eq(tsim_plan_init(&plan, 2, 4, &err), 0);
    cr_assert_eq(tsim_planner_fastermoe.plan(s, &rec, &plan, &err), TSIM_E_INPUT, "a 2 x 8 record on 2 x 4");
    tsim_plan_free(&plan);
    tsim_record_free(&rec);
    tsim_planner_fastermoe.free(s);
    tsim_topology_free(&topo);
}

Test(fastermoe, larger_model_cost_means_fewer_shadows)
{
    /* The hand record: sorted loads e5 200, e0 150, e6 120, e2 119, e7 50,
     * then zeros; gaps 50, 30, 1, 69, 50, worth 250, 150, 5, 345, 250 us at
     * 5 us a token. A free shadow takes all five; raising model past each
     * gain cuts the prefix at the first gain not above it. Replicas: e5 on
     * ranks 0 and 3, e0 on 1 and 3, e6 on 0, 1 and 2, e2 on 0 (all its tokens
     * come from source 0), e7 none (its tokens are all on its home). */
    static const struct {
        double model;
        int experts; /* distinct experts with a replica */
        int replicas;
    } steps[] = {
        {0.0, 4, 8},   {4.0, 4, 8},   {5.0, 2, 4},   {100.0, 2, 4}, {149.0, 2, 4},
        {150.0, 1, 2}, {249.0, 1, 2}, {250.0, 0, 0}, {1e9, 0, 0},
    };
    tsim_record rec;
    record_from_table(&rec, 4, 8, hand_table);
    int last = 1 << 30;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        fixture f;
        fixture_open(&f, 4, 8, 2, fm(1.0, 0.5, steps[i].model));
        tsim_metrics m;
        plan_and_evaluate(&f, &rec, &m);
        int seen[8] = {0}, distinct = 0;
        for (int j = 0; j < f.plan.count; j++)
            if (!seen[f.plan.replicas[j].expert]++)
                distinct++;
        cr_assert_eq(f.plan.count, steps[i].replicas, "model %g: %d replicas, expected %d", steps[i].model,
                     f.plan.count, steps[i].replicas);
        cr_assert_eq(distinct, steps[i].experts, "model %g: %d experts shadowed, expected %d", steps[i].model,
                     distinct, steps[i].experts);
        cr_assert_leq(f.plan.count, last, "a costlier shadow never adds replicas");
        last = f.plan.count;
        fixture_close(&f);
    }
    tsim_record_free(&rec);
}

/* ---- A plain re-derivation for the property test: qsort instead of the
 * merge sort, and the step time accumulated the way the released policy does
 * (lat_base, shadow_time), over per-expert loads. ---- */

static const int64_t *ref_key;
static int ref_cmp_expert(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (ref_key[x] != ref_key[y])
        return ref_key[x] > ref_key[y] ? -1 : 1;
    return x - y;
}

/* Returns the number of shadowed experts; fills want, and in_prefix[e] for
 * the shadowed experts, after checking that their loads strictly decrease and
 * strictly exceed every other expert's. */
static int ref_fastermoe(const tsim_topology *t, const tsim_fastermoe_options *o, const tsim_record *rec,
                         tsim_plan *want, bool *in_prefix)
{
    const int R = t->ranks, E = t->experts;
    tsim_plan_reset(want);
    int64_t *tpe = calloc((size_t)E, sizeof *tpe);
    int *order = malloc(sizeof *order * (size_t)E);
    int *received = calloc((size_t)R, sizeof *received);
    for (int r = 0; r < R; r++)
        for (int e = 0; e < E; e++)
            tpe[e] += tsim_count(rec, r, e);
    for (int e = 0; e < E; e++)
        order[e] = e;
    ref_key = tpe;
    qsort(order, (size_t)E, sizeof *order, ref_cmp_expert);
    double lat_base = 3 * o->comp_us * (double)tpe[order[0]] + 4 * o->feat_us * (double)tpe[order[0]];
    double shadow_time = 0;
    int k = 0;
    for (int i = 0; i + 1 < E; i++) {
        if (tpe[order[i]] == 0)
            break;
        double bk = (double)tpe[order[i + 1]];
        shadow_time += o->model_us;
        double lat_new = 3 * o->comp_us * bk + 4 * o->feat_us * bk + shadow_time;
        if (!(lat_new < lat_base))
            break;
        lat_base = lat_new;
        k++;
    }
    for (int e = 0; e < E; e++)
        in_prefix[e] = false;
    for (int i = 0; i < k; i++) {
        in_prefix[order[i]] = true;
        cr_assert_gt(tpe[order[i]], tpe[order[i + 1]], "a shadowed expert ties with the next one");
    }
    if (R > 1) {
        for (int i = 0; i < k; i++) {
            int e = order[i];
            for (int g = 0; g < R; g++) {
                int64_t c = tsim_count(rec, g, e);
                if (g == t->home[e] || c == 0)
                    continue;
                int idx = tsim_plan_add(want, e, g, received[g]++, c);
                cr_assert_geq(idx, 0);
                tsim_plan_alloc_row(want, idx)[g] = c;
            }
        }
    }
    free(tpe);
    free(order);
    free(received);
    return k;
}

/* The planner lists shadows in descending load and each shadow's guests in
 * ascending order, as the re-derivation does, so the plans compare entry by
 * entry; sorting them first (insertion sort, thousands of replicas) took
 * most of this suite's time. */
static void assert_plans_equal_in_order(const tsim_plan *got, const tsim_plan *want, const char *label)
{
    cr_assert_eq(got->count, want->count, "%s: %d replicas, expected %d", label, got->count, want->count);
    for (int i = 0; i < got->count; i++) {
        const tsim_replica *g = &got->replicas[i], *w = &want->replicas[i];
        cr_assert(g->expert == w->expert && g->guest == w->guest && g->slot == w->slot && g->planned == w->planned,
                  "%s: replica %d is [%d,%d,%d,%lld], expected [%d,%d,%d,%lld]", label, i, g->expert, g->guest,
                  g->slot, (long long)g->planned, w->expert, w->guest, w->slot, (long long)w->planned);
        cr_assert(!memcmp(tsim_plan_alloc_row_c(got, i), tsim_plan_alloc_row_c(want, i),
                          sizeof(int64_t) * (size_t)got->ranks),
                  "%s: replica %d (expert %d on rank %d) has other sources", label, i, g->expert, g->guest);
    }
}

/* 10,000 random records (1,000 shapes x 10 records, option sets exact in
 * binary so both ways of evaluating T agree bit for bit, plus the defaults):
 * the evaluator accepts every plan; a fresh state gives the same plan; every
 * replica holds only its guest's own tokens, all of them; each guest's slots
 * are 0..n-1; only experts of the strict-gap prefix of the sorted loads are
 * shadowed; and the plan equals the re-derivation above. */
Test(fastermoe, properties_on_random_records, .timeout = 300)
{
    static const tsim_fastermoe_options sets[] = {
        {1.0, 0.5, 100.0}, {0.25, 0.125, 8.0}, {2.0, 1.0, 0.0}, {0.0, 0.0, 0.0},
        {0.5, 0.25, 1000.0}, {1.0, 0.0, 3.0}, {0.063, 0.02, 380.0},
    };
    const int nsets = (int)(sizeof sets / sizeof sets[0]);
    uint64_t seed = UINT64_C(0xFA57E4);
    tsim_error err = {0};
    int shadowed_records = 0, max_k = 0, zero_replicas_skipped = 0;
    for (int shape_i = 0; shape_i < 1000; shape_i++) {
        tsim_random_shape sh;
        tsim_random_shape_draw(&seed, 48, &sh);
        const int R = sh.ranks, E = sh.experts;
        fixture f;
        fixture_open(&f, R, E, sh.ranks_per_node, sets[tsim_rand_range(&seed, 0, nsets - 1)]);
        tsim_plan fresh_plan, want;
        cr_assert_eq(tsim_plan_init(&fresh_plan, R, 4, &err), 0);
        cr_assert_eq(tsim_plan_init(&want, R, 4, &err), 0);
        int *per_guest = calloc((size_t)R, sizeof *per_guest);
        int *slots_seen = calloc((size_t)R * (size_t)E, sizeof *slots_seen);
        bool *in_prefix = calloc((size_t)E, sizeof *in_prefix);
        bool *shadowed = calloc((size_t)E, sizeof *shadowed);
        for (int rec_i = 0; rec_i < 10; rec_i++) {
            tsim_record rec;
            tsim_random_record(&seed, &sh, &rec);
            tsim_metrics m;
            plan_and_evaluate(&f, &rec, &m);
            const tsim_plan *p = &f.plan;
            char label[64];
            snprintf(label, sizeof label, "shape %d record %d", shape_i, rec_i);

            void *fresh = NULL;
            cr_assert_eq(tsim_planner_fastermoe.init(&fresh, &f.topo, &f.opts, &err), 0);
            cr_assert_eq(tsim_planner_fastermoe.plan(fresh, &rec, &fresh_plan, &err), 0);
            cr_assert(tsim_plan_equal(p, &fresh_plan), "%s: plan differs from a fresh state", label);
            tsim_planner_fastermoe.free(fresh);

            int64_t before = 0, after = 0;
            for (int r = 0; r < R; r++) {
                before += f.ev.load_before[r];
                after += f.ev.load_after[r];
                per_guest[r] = 0;
            }
            cr_assert_eq(before, after, "%s: tokens not conserved", label);
            memset(slots_seen, 0, sizeof *slots_seen * (size_t)R * (size_t)E);
            memset(shadowed, 0, sizeof *shadowed * (size_t)E);
            for (int i = 0; i < p->count; i++) {
                const tsim_replica *rep = &p->replicas[i];
                const int64_t *row = tsim_plan_alloc_row_c(p, i);
                for (int r = 0; r < R; r++)
                    if (r != rep->guest)
                        cr_assert_eq(row[r], 0, "%s: source %d sends to a shadow on rank %d", label, r, rep->guest);
                cr_assert_gt(row[rep->guest], 0, "%s: a listed replica receives nothing", label);
                cr_assert_eq(row[rep->guest], tsim_count(&rec, rep->guest, rep->expert),
                             "%s: rank %d computes only part of its own tokens of expert %d", label, rep->guest,
                             rep->expert);
                cr_assert_eq(rep->planned, row[rep->guest]);
                cr_assert(rep->slot >= 0 && rep->slot < E, "%s: slot %d", label, rep->slot);
                cr_assert_eq(slots_seen[(size_t)rep->guest * (size_t)E + (size_t)rep->slot]++, 0,
                             "%s: rank %d slot %d used twice", label, rep->guest, rep->slot);
                per_guest[rep->guest]++;
                shadowed[rep->expert] = true;
            }
            for (int r = 0; r < R; r++)
                for (int k = 0; k < per_guest[r]; k++)
                    cr_assert_eq(slots_seen[(size_t)r * (size_t)E + (size_t)k], 1, "%s: rank %d slots not 0..%d",
                                 label, r, per_guest[r] - 1);
            int k = ref_fastermoe(&f.topo, &f.opts.fastermoe, &rec, &want, in_prefix);
            cr_assert_lt(k, E, "%s: at most E - 1 shadows", label);
            if (k > 0 && R > 1)
                shadowed_records++;
            if (k > max_k)
                max_k = k;
            /* Zero-token replicas are left out: count the records where that
             * happens, to be sure the case is exercised. */
            if (R > 1 && p->count < k * (R - 1))
                zero_replicas_skipped++;
            /* Only the strict-gap prefix of the sorted loads is shadowed. */
            for (int e = 0; e < E; e++)
                if (shadowed[e])
                    cr_assert(in_prefix[e], "%s: expert %d shadowed outside the prefix", label, e);
            assert_plans_equal_in_order(p, &want, label);
            tsim_record_free(&rec);
        }
        free(shadowed);
        free(in_prefix);
        free(slots_seen);
        free(per_guest);
        tsim_plan_free(&fresh_plan);
        tsim_plan_free(&want);
        fixture_close(&f);
    }
    cr_assert_gt(shadowed_records, 1000, "too few records shadow anything (%d)", shadowed_records);
    cr_assert_gt(max_k, 5, "the deepest shadowing was only %d experts", max_k);
    cr_assert_gt(zero_replicas_skipped, 100, "too few records leave out zero-token replicas (%d)",
                 zero_replicas_skipped);
}

/* Monotone in the options on random loads: a dearer shadow never shadows
 * more, a dearer token never shadows fewer; and the stopping point is where
 * T first fails to fall. */
Test(fastermoe, options_move_the_decision_monotonically)
{
    uint64_t seed = UINT64_C(0x5AD0);
    int64_t b[64];
    int strictly_fewer = 0;
    for (int trial = 0; trial < 20000; trial++) {
        int n = (int)tsim_rand_range(&seed, 1, 64);
        int64_t scale = tsim_rand_range(&seed, 1, 3) == 1 ? 50 : 5000;
        for (int i = 0; i < n; i++)
            b[i] = tsim_rand_range(&seed, 0, 3) == 0 ? 0 : tsim_rand_range(&seed, 0, scale);
        /* Sort descending (insertion: n is small). */
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0 && b[j] > b[j - 1]; j--) {
                int64_t x = b[j];
                b[j] = b[j - 1];
                b[j - 1] = x;
            }
        tsim_fastermoe_options o = fm(0.063, 0.02, 380.0 * tsim_rand_unit(&seed));
        int k = tsim_fastermoe_shadow_count(b, n, &o);
        cr_assert(k >= 0 && k < (n > 0 ? n : 1));
        for (int i = 0; i < k; i++) {
            cr_assert_gt(b[i], 0);
            cr_assert_lt(tsim_fastermoe_step_us(b, n, i + 1, &o), tsim_fastermoe_step_us(b, n, i, &o));
        }
        if (k + 1 < n && b[k] > 0)
            cr_assert_geq(tsim_fastermoe_step_us(b, n, k + 1, &o), tsim_fastermoe_step_us(b, n, k, &o),
                          "stopped at %d although T still falls", k);
        tsim_fastermoe_options dear = o;
        dear.model_us = o.model_us * 2.0 + 1.0;
        int kd = tsim_fastermoe_shadow_count(b, n, &dear);
        cr_assert_leq(kd, k, "model %g shadows %d, model %g shadows %d", o.model_us, k, dear.model_us, kd);
        if (kd < k)
            strictly_fewer++;
        tsim_fastermoe_options slow = o;
        slow.comp_us = o.comp_us * 3.0;
        cr_assert_geq(tsim_fastermoe_shadow_count(b, n, &slow), k);
    }
    cr_assert_gt(strictly_fewer, 1000, "the model cost changed too few decisions (%d)", strictly_fewer);
}
