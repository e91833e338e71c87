/* LLEP planner (baselines.md "llep"): the worked example, every spec vector,
 * hand-checked rules (capacity edge cases, threshold, min-chunk skip, forced
 * remainder and its merge, slot order, global source ranges), and properties
 * over 10,000 random records against a plain re-derivation of the rules. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "evaluate.h"
#include "test_options.h"
#include "llep.h"
#include "plan.h"
#include "planner.h"
#include "registry.h"
#include "planner_fixture.h"
#include "random_records.h"
#include "record.h"
#include "topology.h"
#include "vector_check.h"

typedef tsim_test_fixture fixture;

static void fixture_open(fixture *f, int R, int E, int rpn, double alpha, int64_t min_chunk, double threshold)
{
    tsim_planner_options opts;
    tsim_planner_options_default(&opts);
    TSIM_OPTS(opts, llep)->alpha = alpha;
    TSIM_OPTS(opts, llep)->min_chunk = min_chunk;
    TSIM_OPTS(opts, llep)->threshold = threshold;
    /* Deliberately small plan: LLEP has no slot limit and must grow it. */
    tsim_fixture_open(f, &tsim_planner_llep, R, E, rpn, 2, &opts, 1);
}

static void fixture_close(fixture *f)
{
    tsim_fixture_close(f);
}

static void plan_and_evaluate(fixture *f, const tsim_record *rec, tsim_metrics *m)
{
    tsim_fixture_plan(f, rec, m);
    cr_assert(!f->plan.slot_limited, "LLEP plans have no slot limit");
}

static void record_from_totals(tsim_record *rec, int R, int E, const int64_t *tpe)
{
    cr_assert_eq(tsim_record_alloc(rec, R, E, NULL), 0);
    tsim_record_split_even(rec, tpe);
}

Test(llep, worked_example_16_experts_4_ranks)
{
    fixture f;
    fixture_open(&f, 4, 16, 8, 1.0, 1, 0.0);
    const int64_t tpe[16] = {100, 50, 10, 5, 20, 20, 10, 10, 5, 5, 5, 5, 30, 10, 10, 5};
    tsim_record rec;
    record_from_totals(&rec, 4, 16, tpe);
    tsim_metrics m;
    plan_and_evaluate(&f, &rec, &m);
    /* cap 75. Expert 0: pending of rank 0 drops to 65, so it keeps 10; 90 spill
     * to rank 2 (eff 20: 55), rank 3 (55: 20), rank 1 (60: 15). Global order:
     * 25 per source; home keeps source 0's first 10. */
    tsim_plan_sort(&f.plan);
    cr_assert_eq(f.plan.count, 3);
    tsim_fixture_assert_replica(&f.plan, 0, 0, 1, 0, 15, (const int64_t[]){0, 0, 0, 15});
    tsim_fixture_assert_replica(&f.plan, 1, 0, 2, 0, 55, (const int64_t[]){15, 25, 15, 0});
    tsim_fixture_assert_replica(&f.plan, 2, 0, 3, 0, 20, (const int64_t[]){0, 0, 10, 10});
    tsim_fixture_assert_loads(&f, (const int64_t[]){75, 75, 75, 75});
    cr_assert_eq(m.v[TSIM_M_RHO_AFTER], 0.0);
    cr_assert_eq(f.plan.notes, 0u);
    tsim_record_free(&rec);
    fixture_close(&f);
}

Test(llep, spec_vectors)
{
    static char paths[64][1024];
    int n = tsim_test_vector_files("llep", paths, 64);
    cr_assert_geq(n, 6, "expected the 6 LLEP vectors, found %d", n);
    for (int i = 0; i < n; i++)
        tsim_test_check_vector(paths[i]);
}

Test(llep, capacity_edge_cases)
{
    cr_assert_eq(tsim_llep_capacity(300, 4, 1.0), 75);
    cr_assert_eq(tsim_llep_capacity(303, 4, 1.0), 75);   /* floor(total / R) first */
    cr_assert_eq(tsim_llep_capacity(300, 4, 0.9), 67);   /* floor(67.5) */
    cr_assert_eq(tsim_llep_capacity(4904, 8, 1.1), 674); /* floor(1.1 * 613) */
    cr_assert_eq(tsim_llep_capacity(300, 4, 1.5), 112);
    /* floor(total / R) = 0: cap = total, as the published code does. */
    cr_assert_eq(tsim_llep_capacity(3, 4, 1.0), 3);
    cr_assert_eq(tsim_llep_capacity(3, 4, 0.01), 3);
    cr_assert_eq(tsim_llep_capacity(0, 4, 1.0), 0);
    /* floor(alpha * 1) = 0 is lifted to 1. */
    cr_assert_eq(tsim_llep_capacity(4, 4, 0.5), 1);
    cr_assert_eq(tsim_llep_capacity(7, 4, 0.99), 1);
    /* A cap at or above the total changes nothing, so it is held at the total
     * (alpha up to 1e9 must not overflow). */
    cr_assert_eq(tsim_llep_capacity(INT64_C(1) << 45, 4, 1e9), INT64_C(1) << 45);
    cr_assert_eq(tsim_llep_capacity(400, 4, 4.0), 400);
    cr_assert_eq(tsim_llep_capacity(400, 4, 3.99), 399);
}

Test(llep, activation_threshold)
{
    const int64_t flat[4] = {100, 100, 100, 100}, hot[4] = {130, 100, 70, 100}, warm[4] = {129, 101, 70, 100};
    const int64_t empty[4] = {0, 0, 0, 0};
    cr_assert(tsim_llep_active(flat, 4, 0.0), "threshold off: always plan");
    cr_assert(!tsim_llep_active(empty, 4, 0.0), "an empty record never plans");
    cr_assert(!tsim_llep_active(empty, 4, 1.3));
    cr_assert(tsim_llep_active(hot, 4, 1.3), "130 / 100 reaches 1.3 exactly");
    cr_assert(!tsim_llep_active(warm, 4, 1.3), "129 / 100 does not");
    cr_assert(!tsim_llep_active(flat, 4, 1.0000001));
    cr_assert(tsim_llep_active(flat, 4, 1.0));
}

Test(llep, threshold_skip_plans_nothing_and_notes_it)
{
    /* R = 4, one expert per rank. Loads 130, 100, 70, 100 (mean 100): ratio 1.3. */
    const int64_t tpe[4] = {129, 101, 70, 100};
    tsim_record rec;
    record_from_totals(&rec, 4, 4, tpe);
    tsim_metrics m;
    fixture f;
    fixture_open(&f, 4, 4, 8, 1.0, 1, 1.3);
    plan_and_evaluate(&f, &rec, &m);
    cr_assert_eq(f.plan.count, 0);
    cr_assert(f.plan.notes & TSIM_NOTE_THRESHOLD_SKIP);
    /* 130 reaches it: rank 0 sheds 30 to rank 2. */
    const int64_t tpe2[4] = {130, 100, 70, 100};
    tsim_record_split_even(&rec, tpe2);
    plan_and_evaluate(&f, &rec, &m);
    cr_assert_eq(f.plan.notes, 0u, "the note must not leak from the previous record");
    tsim_plan_sort(&f.plan);
    cr_assert_eq(f.plan.count, 1);
    tsim_fixture_assert_replica(&f.plan, 0, 0, 2, 0, 30, (const int64_t[]){0, 0, 0, 30});
    /* An empty record with the threshold on is a skip too; with it off it is
     * simply nothing to plan. */
    memset(rec.counts, 0, sizeof *rec.counts * 16);
    plan_and_evaluate(&f, &rec, &m);
    cr_assert_eq(f.plan.count, 0);
    cr_assert(f.plan.notes & TSIM_NOTE_THRESHOLD_SKIP);
    fixture_close(&f);

    fixture_open(&f, 4, 4, 8, 1.0, 1, 0.0);
    plan_and_evaluate(&f, &rec, &m);
    cr_assert_eq(f.plan.count, 0);
    cr_assert_eq(f.plan.notes, 0u);
    /* Threshold off: the 129 record plans (cap 100): expert 0 sends 29 to rank
     * 2 (eff 70), then expert 1 keeps 100 and sends its last token to rank 2
     * (eff 99), that rank's second replica (slot 1). */
    tsim_record_split_even(&rec, tpe);
    plan_and_evaluate(&f, &rec, &m);
    tsim_plan_sort(&f.plan);
    cr_assert_eq(f.plan.count, 2);
    tsim_fixture_assert_replica(&f.plan, 0, 0, 2, 0, 29, (const int64_t[]){0, 0, 0, 29});
    tsim_fixture_assert_replica(&f.plan, 1, 1, 2, 1, 1, (const int64_t[]){0, 0, 0, 1});
    fixture_close(&f);
    tsim_record_free(&rec);
}

Test(llep, single_rank_and_tiny_records_stay_home)
{
    fixture f;
    fixture_open(&f, 1, 4, 8, 1.0, 1, 0.0);
    const int64_t tpe[4] = {500, 1, 0, 7};
    tsim_record rec;
    record_from_totals(&rec, 1, 4, tpe);
    tsim_metrics m;
    plan_and_evaluate(&f, &rec, &m);
    cr_assert_eq(f.plan.count, 0, "R = 1 keeps everything home");
    tsim_record_free(&rec);
    fixture_close(&f);

    /* 3 tokens over 4 ranks: floor(total / R) = 0, cap = total, all stays home. */
    fixture_open(&f, 4, 4, 8, 1.0, 1, 0.0);
    const int64_t tiny[4] = {3, 0, 0, 0};
    record_from_totals(&rec, 4, 4, tiny);
    plan_and_evaluate(&f, &rec, &m);
    cr_assert_eq(f.plan.count, 0);
    tsim_record_free(&rec);
    fixture_close(&f);
}

Test(llep, min_chunk_skip_then_forced_remainder)
{
    /* R = 4, one expert per rank, totals 70, 24, 29, 0 (123; cap 30), m = 8.
     * Expert 0 keeps 30 and spills 40: rank 3 (eff 0) takes 30; rank 1 (24)
     * could take 6 < 8 with 10 left, skipped; rank 2 (29) 1, skipped; forced:
     * all 10 on rank 1 (least loaded). Expert 2 keeps its 29. Expert 1 keeps
     * 20 (rank 1 now holds 10) and spills 4: rank 2 could take 1 < 8 with 4
     * left, skipped; forced onto rank 2. */
    fixture f;
    fixture_open(&f, 4, 4, 8, 1.0, 8, 0.0);
    const int64_t tpe[4] = {70, 24, 29, 0};
    tsim_record rec;
    record_from_totals(&rec, 4, 4, tpe);
    tsim_metrics m;
    plan_and_evaluate(&f, &rec, &m);
    /* Expert 0 = 18, 18, 17, 17 per source: home 18 + 12, rank 3 6 + 17 + 7,
     * rank 1 the last 10 of source 3. Expert 1 = 6 each: home the first 20,
     * rank 2 source 3's last 4. */
    tsim_plan_sort(&f.plan);
    cr_assert_eq(f.plan.count, 3);
    tsim_fixture_assert_replica(&f.plan, 0, 0, 1, 0, 10, (const int64_t[]){0, 0, 0, 10});
    tsim_fixture_assert_replica(&f.plan, 1, 0, 3, 0, 30, (const int64_t[]){0, 6, 17, 7});
    tsim_fixture_assert_replica(&f.plan, 2, 1, 2, 0, 4, (const int64_t[]){0, 0, 0, 4});
    tsim_fixture_assert_loads(&f, (const int64_t[]){30, 30, 33, 30});
    fixture_close(&f);

    /* The same record with m = 1: rank 1 takes 6, rank 2 takes 1, and the last
     * 3 are forced onto rank 1 (every other rank at 30, ties to the lower
     * rank), joining its replica of expert 0: one replica, two token ranges.
     * Expert 2 keeps 29 (rank 2 holds 1); expert 1 keeps 21 and forces 3 onto
     * rank 0. */
    fixture_open(&f, 4, 4, 8, 1.0, 1, 0.0);
    plan_and_evaluate(&f, &rec, &m);
    tsim_plan_sort(&f.plan);
    cr_assert_eq(f.plan.count, 4);
    tsim_fixture_assert_replica(&f.plan, 0, 0, 1, 0, 9, (const int64_t[]){0, 0, 0, 9});
    tsim_fixture_assert_replica(&f.plan, 1, 0, 2, 0, 1, (const int64_t[]){0, 0, 0, 1});
    tsim_fixture_assert_replica(&f.plan, 2, 0, 3, 0, 30, (const int64_t[]){0, 6, 17, 7});
    tsim_fixture_assert_replica(&f.plan, 3, 1, 0, 0, 3, (const int64_t[]){0, 0, 0, 3});
    tsim_fixture_assert_loads(&f, (const int64_t[]){33, 30, 30, 30});
    fixture_close(&f);
    tsim_record_free(&rec);
}

Test(llep, forced_merge_native_keeps_nothing_and_slot_order)
{
    /* R = 3, two experts per rank: rank 0 = {40, 35}, rank 1 = {5, 5}, rank 2 =
     * {0, 0}; total 85, cap 28, m = 1.
     * Expert 0: pending of rank 0 is 35 > cap, so it keeps nothing; rank 2
     * (eff 0) takes 28, rank 1 (10) the last 12.
     * Expert 1: rank 0 keeps 28 and spills 7: rank 1 (22) takes 6 (its second
     * replica: slot 1); the last token finds every rank at 28 and is forced
     * onto rank 1 (ties to the lower rank), joining that replica.
     * Expert 2: rank 1 (pending 5, eff 24) keeps 4 and forces 1 onto rank 0.
     * Expert 3 stays home. */
    fixture f;
    fixture_open(&f, 3, 6, 8, 1.0, 1, 0.0);
    const int64_t tpe[6] = {40, 35, 5, 5, 0, 0};
    tsim_record rec;
    record_from_totals(&rec, 3, 6, tpe);
    tsim_metrics m;
    plan_and_evaluate(&f, &rec, &m);
    /* Expert 0 = 14, 13, 13: rank 2 takes 14 + 13 + 1, rank 1 the other 12 of
     * source 2. Expert 1 = 12, 12, 11: home 12 + 12 + 4, rank 1 source 2's
     * last 7. Expert 2 = 2, 2, 1: home 2 + 2, rank 0 source 2's 1. */
    tsim_plan_sort(&f.plan);
    cr_assert_eq(f.plan.count, 4);
    tsim_fixture_assert_replica(&f.plan, 0, 0, 1, 0, 12, (const int64_t[]){0, 0, 12});
    tsim_fixture_assert_replica(&f.plan, 1, 0, 2, 0, 28, (const int64_t[]){14, 13, 1});
    tsim_fixture_assert_replica(&f.plan, 2, 1, 1, 1, 7, (const int64_t[]){0, 0, 7});
    tsim_fixture_assert_replica(&f.plan, 3, 2, 0, 0, 1, (const int64_t[]){0, 0, 1});
    tsim_fixture_assert_loads(&f, (const int64_t[]){29, 28, 28});
    tsim_record_free(&rec);
    fixture_close(&f);
}

Test(llep, alpha_below_one_forces_over_capacity)
{
    /* R = 3, one expert per rank: 60, 20, 10 (90; cap floor(0.8 * 30) = 24), m = 1.
     * Expert 0 keeps 24, rank 2 takes 14, rank 1 takes 4, then every rank sits
     * at 24 and the last 18 are forced onto rank 1, joining its replica (22).
     * Expert 1: rank 1 keeps 2 and forces 18 onto rank 0 (24, before rank 2).
     * Expert 2: rank 2 keeps all 10. */
    fixture f;
    fixture_open(&f, 3, 3, 8, 0.8, 1, 0.0);
    const int64_t tpe[3] = {60, 20, 10};
    tsim_record rec;
    record_from_totals(&rec, 3, 3, tpe);
    tsim_metrics m;
    plan_and_evaluate(&f, &rec, &m);
    tsim_plan_sort(&f.plan);
    cr_assert_eq(f.plan.count, 3);
    /* Expert 0 = 20 per source: home 20 + 4; rank 2 14 of source 1; rank 1 the
     * last 2 of source 1 then all 20 of source 2 (its forced range follows). */
    tsim_fixture_assert_replica(&f.plan, 0, 0, 1, 0, 22, (const int64_t[]){0, 2, 20});
    tsim_fixture_assert_replica(&f.plan, 1, 0, 2, 0, 14, (const int64_t[]){0, 14, 0});
    /* Expert 1 = 7, 7, 6: home keeps source 0's first 2. */
    tsim_fixture_assert_replica(&f.plan, 2, 1, 0, 0, 18, (const int64_t[]){5, 7, 6});
    tsim_fixture_assert_loads(&f, (const int64_t[]){42, 24, 24});
    tsim_record_free(&rec);
    fixture_close(&f);
}

/* ---- A plain re-derivation of the rules, for the property test: full
 * re-sorts instead of the planner's incremental order, whole-array scans. ---- */

static const int64_t *ref_eff_key;

static int ref_cmp_rank(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (ref_eff_key[x] != ref_eff_key[y])
        return ref_eff_key[x] < ref_eff_key[y] ? -1 : 1;
    return x - y;
}

static const int64_t *ref_tpe_key;
static int ref_cmp_expert(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (ref_tpe_key[x] != ref_tpe_key[y])
        return ref_tpe_key[x] > ref_tpe_key[y] ? -1 : 1;
    return x - y;
}

/* Builds the expected plan into want (sorted afterwards by the caller). */
static void ref_llep(const tsim_topology *t, const tsim_llep_options *o, const tsim_record *rec, tsim_plan *want,
                     bool *skipped, int *merges)
{
    const int R = t->ranks, E = t->experts;
    tsim_plan_reset(want);
    *skipped = false;
    int64_t *tpe = calloc((size_t)E, sizeof *tpe);
    int64_t *load0 = calloc((size_t)R, sizeof *load0);
    tsim_record_expert_totals(rec, tpe);
    int64_t total = 0, max = 0;
    for (int e = 0; e < E; e++) {
        load0[t->home[e]] += tpe[e];
        total += tpe[e];
    }
    for (int r = 0; r < R; r++)
        max = load0[r] > max ? load0[r] : max;
    bool active = total > 0 && (o->threshold <= 0 || (double)max / ((double)total / R) >= o->threshold);
    if (!active && o->threshold > 0)
        *skipped = true;
    if (active && R > 1) {
        int64_t cap = total / R == 0 ? total : (int64_t)floor(o->alpha * (double)(total / R));
        if (cap < 1)
            cap = 1;
        int64_t *eff = calloc((size_t)R, sizeof *eff);
        int *order = malloc(sizeof *order * (size_t)R);
        int *experts = malloc(sizeof *experts * (size_t)E);
        int *received = calloc((size_t)R, sizeof *received);
        int *rep_of = malloc(sizeof *rep_of * (size_t)R);
        int *seq_rep = malloc(sizeof *seq_rep * (size_t)(2 * R + 2));
        int64_t *seq_tok = malloc(sizeof *seq_tok * (size_t)(2 * R + 2));
        memcpy(eff, load0, sizeof *eff * (size_t)R); /* assigned 0 + pending */
        for (int e = 0; e < E; e++)
            experts[e] = e;
        ref_tpe_key = tpe;
        qsort(experts, (size_t)E, sizeof *experts, ref_cmp_expert);
        for (int i = 0; i < E && tpe[experts[i]] > 0; i++) {
            int e = experts[i], n = t->home[e];
            int64_t tt = tpe[e];
            eff[n] -= tt; /* pending drops */
            int64_t na = cap - eff[n];
            int64_t kept = na >= tt ? tt : (na > 0 ? na : 0);
            eff[n] += kept;
            int64_t rem = tt - kept;
            int nseq = 0;
            for (int r = 0; r < R; r++)
                rep_of[r] = -1;
            while (rem > 0) {
                for (int r = 0; r < R; r++)
                    order[r] = r;
                ref_eff_key = eff;
                qsort(order, (size_t)R, sizeof *order, ref_cmp_rank);
                int g = -1;
                int64_t c = 0;
                for (int p = 0; p < R && g < 0; p++) {
                    int cand = order[p];
                    int64_t cc = rem < cap - eff[cand] ? rem : cap - eff[cand];
                    if (cand != n && cc > 0 && !(cc < o->min_chunk && rem > cc)) {
                        g = cand;
                        c = cc;
                    }
                }
                if (g < 0) {
                    g = order[0] == n ? order[1] : order[0];
                    c = rem;
                }
                eff[g] += c;
                if (rep_of[g] < 0) {
                    rep_of[g] = tsim_plan_add(want, e, g, received[g]++, 0);
                    cr_assert_geq(rep_of[g], 0);
                } else {
                    cr_assert_eq(c, rem, "only a forced remainder may join an existing replica");
                    (*merges)++;
                }
                want->replicas[rep_of[g]].planned += c;
                seq_rep[nseq] = rep_of[g];
                seq_tok[nseq++] = c;
                rem -= c;
            }
            /* Global source order: the native's range, then each piece's. */
            int64_t skip = kept;
            int src = 0;
            int64_t src_left = tsim_count(rec, 0, e);
            for (int q = 0; q < nseq; q++) {
                int64_t need = seq_tok[q];
                while (need > 0) {
                    while (src_left == 0) {
                        src++;
                        src_left = tsim_count(rec, src, e);
                    }
                    int64_t take = skip > 0 ? (skip < src_left ? skip : src_left)
                                            : (need < src_left ? need : src_left);
                    if (skip > 0) {
                        skip -= take;
                    } else {
                        tsim_plan_alloc_row(want, seq_rep[q])[src] += take;
                        need -= take;
                    }
                    src_left -= take;
                }
            }
        }
        free(eff);
        free(order);
        free(experts);
        free(received);
        free(rep_of);
        free(seq_rep);
        free(seq_tok);
    }
    free(tpe);
    free(load0);
}

/* 10,000 random records (1,000 shapes x 10 records, random alpha, m and
 * threshold): the evaluator accepts every plan and tokens are conserved; a
 * fresh state gives the same plan; every replica receives exactly its planned
 * tokens; each helper's slots are 0..n-1; the home rank keeps a prefix of the
 * expert's tokens in global source order; at most one piece per expert is
 * below m; and the plan equals the plain re-derivation above. */
Test(llep, properties_on_random_records, .timeout = 180)
{
    static const double alphas[] = {1.0, 1.0, 0.8, 1.2, 0.5};
    static const int64_t chunks[] = {1, 0, 16, 1024, 5};
    static const double thresholds[] = {0.0, 0.0, 1.3, 1.05};
    uint64_t seed = UINT64_C(0x11E9);
    tsim_error err = {0};
    int planned_records = 0, merged = 0, skipped_records = 0;
    for (int shape_i = 0; shape_i < 1000; shape_i++) {
        tsim_random_shape sh;
        tsim_random_shape_draw(&seed, 64, &sh);
        const int R = sh.ranks, E = sh.experts;
        fixture f;
        fixture_open(&f, R, E, sh.ranks_per_node, alphas[tsim_rand_range(&seed, 0, 4)],
                     chunks[tsim_rand_range(&seed, 0, 4)], thresholds[tsim_rand_range(&seed, 0, 3)]);
        tsim_plan fresh_plan, want;
        cr_assert_eq(tsim_plan_init(&fresh_plan, R, 4, &err), 0);
        cr_assert_eq(tsim_plan_init(&want, R, 4, &err), 0);
        int *slots_seen = calloc((size_t)R * 2 * (size_t)E, sizeof *slots_seen);
        int *per_guest = calloc((size_t)R, sizeof *per_guest);
        int *small = calloc((size_t)E, sizeof *small);
        int64_t *sent = calloc((size_t)R * (size_t)E, sizeof *sent);
        for (int rec_i = 0; rec_i < 10; rec_i++) {
            tsim_record rec;
            tsim_random_record(&seed, &sh, &rec);
            tsim_metrics m;
            plan_and_evaluate(&f, &rec, &m);
            const tsim_plan *p = &f.plan;
            if (p->count > 0)
                planned_records++;
            if (p->notes & TSIM_NOTE_THRESHOLD_SKIP) {
                skipped_records++;
                cr_assert_eq(p->count, 0);
            }

            void *fresh = NULL;
            cr_assert_eq(tsim_planner_init_with(&tsim_planner_llep, &fresh, &f.topo, &f.opts, &err), 0);
            cr_assert_eq(tsim_planner_llep.plan(fresh, &rec, &fresh_plan, &err), 0);
            cr_assert(tsim_plan_equal(p, &fresh_plan), "shape %d record %d: plan differs from a fresh state",
                      shape_i, rec_i);
            cr_assert_eq(p->notes, fresh_plan.notes);
            tsim_planner_llep.free(fresh);

            int64_t before = 0, after = 0;
            for (int r = 0; r < R; r++) {
                before += f.ev.load_before[r];
                after += f.ev.load_after[r];
                per_guest[r] = 0;
            }
            cr_assert_eq(before, after, "tokens not conserved");

            memset(sent, 0, sizeof *sent * (size_t)R * (size_t)E);
            memset(small, 0, sizeof *small * (size_t)E);
            memset(slots_seen, 0, sizeof *slots_seen * (size_t)R * 2 * (size_t)E);
            for (int i = 0; i < p->count; i++) {
                const tsim_replica *rep = &p->replicas[i];
                const int64_t *row = tsim_plan_alloc_row_c(p, i);
                int64_t s = 0;
                for (int r = 0; r < R; r++) {
                    s += row[r];
                    sent[(size_t)r * (size_t)E + (size_t)rep->expert] += row[r];
                }
                cr_assert_gt(rep->planned, 0);
                cr_assert_eq(s, rep->planned, "replica %d receives %lld, planned %lld", i, (long long)s,
                             (long long)rep->planned);
                cr_assert(rep->slot >= 0 && rep->slot < 2 * E);
                cr_assert_eq(slots_seen[(size_t)rep->guest * 2 * (size_t)E + (size_t)rep->slot]++, 0,
                             "rank %d slot %d used twice", rep->guest, rep->slot);
                per_guest[rep->guest]++;
                if (rep->planned < TSIM_OPTS(f.opts, llep)->min_chunk)
                    small[rep->expert]++;
            }
            for (int r = 0; r < R; r++)
                for (int k = 0; k < per_guest[r]; k++)
                    cr_assert_eq(slots_seen[(size_t)r * 2 * (size_t)E + (size_t)k], 1,
                                 "rank %d: slots are not 0..%d", r, per_guest[r] - 1);
            for (int e = 0; e < E; e++) {
                cr_assert_leq(small[e], 1, "expert %d has %d pieces below m", e, small[e]);
                /* The home's share is a prefix: once a source sends anything,
                 * every later source sends all of its tokens. */
                bool cut = false;
                for (int r = 0; r < R; r++) {
                    int64_t c = tsim_count(&rec, r, e), s = sent[(size_t)r * (size_t)E + (size_t)e];
                    if (cut)
                        cr_assert_eq(s, c, "expert %d: source %d keeps tokens after the home range ended", e, r);
                    if (s > 0)
                        cut = true;
                }
            }

            bool ref_skipped;
            ref_llep(&f.topo, TSIM_OPTS(f.opts, llep), &rec, &want, &ref_skipped, &merged);
            cr_assert_eq(ref_skipped, (p->notes & TSIM_NOTE_THRESHOLD_SKIP) != 0);
            tsim_plan copy;
            cr_assert_eq(tsim_plan_init(&copy, R, p->count > 0 ? p->count : 1, &err), 0);
            for (int i = 0; i < p->count; i++) {
                int k = tsim_plan_add(&copy, p->replicas[i].expert, p->replicas[i].guest, p->replicas[i].slot,
                                      p->replicas[i].planned);
                memcpy(tsim_plan_alloc_row(&copy, k), tsim_plan_alloc_row_c(p, i), sizeof(int64_t) * (size_t)R);
            }
            char label[64];
            snprintf(label, sizeof label, "shape %d record %d", shape_i, rec_i);
            tsim_test_assert_plans_equal(&copy, &want, label);
            tsim_plan_free(&copy);
            tsim_record_free(&rec);
        }
        free(slots_seen);
        free(per_guest);
        free(small);
        free(sent);
        tsim_plan_free(&fresh_plan);
        tsim_plan_free(&want);
        fixture_close(&f);
    }
    cr_assert_gt(merged, 10, "too few forced merges (%d) to exercise the rule", merged);
    cr_assert_gt(planned_records, 1000, "too few records produced a plan (%d)", planned_records);
    cr_assert_gt(skipped_records, 50, "too few threshold skips (%d)", skipped_records);
}
