/* ECHO planner (baselines.md "echo"): the worked example, every spec vector,
 * hand-checked steps (spill, bucket formula, FIFO tail, greedy overlap and
 * top-K), and properties over 10,000 random records. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "echo.h"
#include "test_options.h"
#include "evaluate.h"
#include "plan.h"
#include "planner.h"
#include "registry.h"
#include "random_records.h"
#include "record.h"
#include "topology.h"
#include "planner_fixture.h"
#include "vector_check.h"

/* A topology, an ECHO state on it, a plan and an evaluator. */
typedef tsim_test_fixture fixture;

static void fixture_open(fixture *f, int R, int E, int rpn, int K)
{
    tsim_fixture_open(f, &tsim_planner_echo, R, E, rpn, K, NULL, R * (K > 0 ? K : 1));
}

static void fixture_close(fixture *f)
{
    tsim_fixture_close(f);
}

static void plan_and_evaluate(fixture *f, const tsim_record *rec, tsim_metrics *m)
{
    tsim_fixture_plan(f, rec, m);
    cr_assert(f->plan.slot_limited);
}

static int64_t row_sum(const tsim_plan *p, int i)
{
    int64_t s = 0;
    const int64_t *row = tsim_plan_alloc_row_c(p, i);
    for (int r = 0; r < p->ranks; r++)
        s += row[r];
    return s;
}

Test(echo, worked_example_16_experts_4_ranks)
{
    fixture f;
    fixture_open(&f, 4, 16, 8, 1);
    const int64_t tpe[16] = {100, 50, 10, 5, 20, 20, 10, 10, 5, 5, 5, 5, 30, 10, 10, 5};
    tsim_record rec;
    cr_assert_eq(tsim_record_alloc(&rec, 4, 16, NULL), 0);
    tsim_record_split_even(&rec, tpe);
    tsim_metrics m;
    plan_and_evaluate(&f, &rec, &m);
    /* avg 75; rank 0 spills 90 of expert 0 (bucket 0). Spares: rank 2 55, rank 3
     * 20, rank 1 15. Rank 2 takes 55 (35 left, bucket 5), rank 3 20 (15 left,
     * bucket 7), rank 1 the last 15. */
    tsim_plan_sort(&f.plan);
    cr_assert_eq(f.plan.count, 3);
    tsim_fixture_assert_replica(&f.plan, 0, 0, 1, 0, 15, NULL);
    tsim_fixture_assert_replica(&f.plan, 1, 0, 2, 0, 55, NULL);
    tsim_fixture_assert_replica(&f.plan, 2, 0, 3, 0, 20, NULL);
    for (int r = 0; r < 4; r++)
        cr_assert_eq(f.ev.load_after[r], 75, "rank %d load %lld", r, (long long)f.ev.load_after[r]);
    cr_assert_eq(m.v[TSIM_M_RHO_AFTER], 0.0);
    cr_assert_eq(m.v[TSIM_M_INTRA], 3.0);
    /* Split: 25 per source. Floors of 0.25 * d: 3, 13 and 5 per source, which
     * leaves 4 per source; the leftover demands (3 for rank 1, 3 for rank 2)
     * are then laid against sources in rank order: 3 from source 0 to rank 1,
     * 1 from source 0 and 2 from source 1 to rank 2. */
    const int64_t w1[4] = {6, 3, 3, 3}, w2[4] = {14, 15, 13, 13}, w3[4] = {5, 5, 5, 5};
    for (int r = 0; r < 4; r++) {
        cr_assert_eq(tsim_plan_alloc_row_c(&f.plan, 0)[r], w1[r], "rank 1 source %d", r);
        cr_assert_eq(tsim_plan_alloc_row_c(&f.plan, 1)[r], w2[r], "rank 2 source %d", r);
        cr_assert_eq(tsim_plan_alloc_row_c(&f.plan, 2)[r], w3[r], "rank 3 source %d", r);
    }
    tsim_record_free(&rec);
    fixture_close(&f);
}

Test(echo, spec_vectors)
{
    static char paths[64][1024];
    int n = tsim_test_vector_files("echo", paths, 64);
    cr_assert_geq(n, 8, "expected the 8 ECHO vectors, found %d", n);
    for (int i = 0; i < n; i++)
        tsim_test_check_vector(paths[i]);
}

Test(echo, bucket_formula)
{
    /* avg 75: step 10. */
    cr_assert_eq(tsim_echo_bucket(75, 75), 0);
    cr_assert_eq(tsim_echo_bucket(900, 75), 0);
    cr_assert_eq(tsim_echo_bucket(74, 75), 1);  /* 1/10 + 1 */
    cr_assert_eq(tsim_echo_bucket(66, 75), 1);  /* 9/10 + 1 */
    cr_assert_eq(tsim_echo_bucket(65, 75), 2);  /* 10/10 + 1 */
    cr_assert_eq(tsim_echo_bucket(35, 75), 5);  /* 40/10 + 1 */
    cr_assert_eq(tsim_echo_bucket(15, 75), 7);  /* 60/10 + 1 */
    cr_assert_eq(tsim_echo_bucket(6, 75), 7);   /* 69/10 + 1 */
    cr_assert_eq(tsim_echo_bucket(1, 75), 7);   /* 74/10 + 1 = 8, capped */
    /* avg 6: step = 6/7 = 0, treated as 1. */
    cr_assert_eq(tsim_echo_bucket(5, 6), 2);
    cr_assert_eq(tsim_echo_bucket(2, 6), 5);
    cr_assert_eq(tsim_echo_bucket(1, 6), 6);
    cr_assert_eq(tsim_echo_bucket(6, 6), 0);
    /* avg 14: step 2. */
    cr_assert_eq(tsim_echo_bucket(13, 14), 1);
    cr_assert_eq(tsim_echo_bucket(12, 14), 2);
    cr_assert_eq(tsim_echo_bucket(1, 14), 7);
    /* avg 0 (fewer tokens than ranks): everything is >= avg. */
    cr_assert_eq(tsim_echo_bucket(1, 0), 0);
}

Test(echo, spill_against_integer_average)
{
    fixture f;
    fixture_open(&f, 2, 6, 8, 1);
    /* Rank 0: experts 0..2 = 50, 100, 10 (load 160); rank 1: 0, 1, 0 (load 1).
     * avg = floor(161 / 2) = 80 (a float average would be 80.5). Ascending
     * 10, 50, 100: running sums 10, 60, 160, minus 80 and clamped: 0, 0, 80. */
    int64_t tpe[6] = {50, 100, 10, 0, 1, 0}, load[2], spill[6], spare[2];
    int64_t avg = tsim_echo_spill(f.state, tpe, load, spill, spare);
    cr_assert_eq(avg, 80);
    cr_assert_eq(load[0], 160);
    cr_assert_eq(load[1], 1);
    cr_assert_eq(spare[0], 0);
    cr_assert_eq(spare[1], 79);
    const int64_t want[6] = {0, 80, 0, 0, 0, 0};
    for (int e = 0; e < 6; e++)
        cr_assert_eq(spill[e], want[e], "expert %d spills %lld", e, (long long)spill[e]);
    /* Equal tpe: ascending ties by expert index, so the last expert carries most.
     * Loads 90 and 0: avg 45; running 30, 60, 90 -> 0, 15, 45. */
    int64_t tpe2[6] = {30, 30, 30, 0, 0, 0};
    avg = tsim_echo_spill(f.state, tpe2, load, spill, spare);
    cr_assert_eq(avg, 45);
    cr_assert_eq(spill[0], 0);
    cr_assert_eq(spill[1], 15);
    cr_assert_eq(spill[2], 30);
    cr_assert_eq(spare[1], 45);
    fixture_close(&f);
}

Test(echo, bin_packing_remainder_goes_to_the_tail)
{
    fixture f;
    fixture_open(&f, 8, 8, 8, 1);
    tsim_error err = {0};
    /* avg 70 (step 10). Expert 0 spills 100 (bucket 0), 1 spills 30 and 2
     * spills 28 (both bucket 5, in that order). Spares: ranks 4..7 = 75, 30, 20, 10.
     * Rank 4 takes 75 of expert 0; its 25 left fall in bucket 5 BEHIND 1 and 2.
     * Rank 5 takes expert 1 (30), rank 6 20 of expert 2 (8 left -> bucket 7),
     * rank 7 the head of bucket 5, expert 0: 10. (Head insertion would give
     * rank 5 expert 0.) */
    const int64_t spill[8] = {100, 30, 28, 0, 0, 0, 0, 0};
    const int64_t spare[8] = {0, 0, 0, 0, 75, 30, 20, 10};
    cr_assert_eq(tsim_echo_assign(f.state, spill, spare, 70, &f.plan, &err), 0);
    cr_assert_eq(f.plan.count, 4);
    tsim_fixture_assert_replica(&f.plan, 0, 0, 4, 0, 75, NULL);
    tsim_fixture_assert_replica(&f.plan, 1, 1, 5, 0, 30, NULL);
    tsim_fixture_assert_replica(&f.plan, 2, 2, 6, 0, 20, NULL);
    tsim_fixture_assert_replica(&f.plan, 3, 0, 7, 0, 10, NULL);
    fixture_close(&f);
}

Test(echo, bin_packing_lowest_bucket_first_and_stops_when_empty)
{
    fixture f;
    fixture_open(&f, 8, 8, 8, 1);
    tsim_error err = {0};
    /* avg 70. Sorted spills: expert 2 (40, bucket 4), expert 0 (12, bucket 6),
     * expert 1 (12, bucket 6; equal spills keep index order). Spares sorted:
     * rank 6 (50), rank 4 (30, before rank 7 on the tie), rank 7 (30), rank 5 (5).
     * Rank 6 takes all 40 of expert 2; rank 4 the 12 of expert 0; rank 7 the
     * 12 of expert 1; then every bucket is empty and rank 5 gets nothing. */
    const int64_t spill[8] = {12, 12, 40, 0, 0, 0, 0, 0};
    const int64_t spare[8] = {0, 0, 0, 0, 30, 5, 50, 30};
    cr_assert_eq(tsim_echo_assign(f.state, spill, spare, 70, &f.plan, &err), 0);
    cr_assert_eq(f.plan.count, 3);
    tsim_fixture_assert_replica(&f.plan, 0, 2, 6, 0, 40, NULL);
    tsim_fixture_assert_replica(&f.plan, 1, 0, 4, 0, 12, NULL);
    tsim_fixture_assert_replica(&f.plan, 2, 1, 7, 0, 12, NULL);
    fixture_close(&f);
}

Test(echo, bin_packing_unplaced_spill_stays_home)
{
    fixture f;
    fixture_open(&f, 4, 4, 8, 1);
    tsim_error err = {0};
    /* One rank of spare 10 and a spill of 50: it takes 10; 40 stays home. */
    const int64_t spill[4] = {50, 0, 0, 0};
    const int64_t spare[4] = {0, 0, 10, 0};
    cr_assert_eq(tsim_echo_assign(f.state, spill, spare, 70, &f.plan, &err), 0);
    cr_assert_eq(f.plan.count, 1);
    tsim_fixture_assert_replica(&f.plan, 0, 0, 2, 0, 10, NULL);
    fixture_close(&f);
}

Test(echo, greedy_interval_overlap)
{
    fixture f;
    fixture_open(&f, 8, 8, 8, 2);
    tsim_error err = {0};
    /* Spills laid out: e0 [0,50) e1 [50,80) e2 [80,100) e3 [100,110).
     * Spares: r4 [0,60) r5 [60,85) r6 [85,110). Overlaps: r4: e0 50, e1 10;
     * r5: e1 20, e2 5; r6: e2 15, e3 10. Largest piece of each rank in slot 0. */
    const int64_t spill[8] = {50, 30, 20, 10, 0, 0, 0, 0};
    const int64_t spare[8] = {0, 0, 0, 0, 60, 25, 25, 0};
    cr_assert_eq(tsim_echo_assign(f.state, spill, spare, 100, &f.plan, &err), 0);
    tsim_plan_sort(&f.plan);
    cr_assert_eq(f.plan.count, 6);
    tsim_fixture_assert_replica(&f.plan, 0, 0, 4, 0, 50, NULL);
    tsim_fixture_assert_replica(&f.plan, 1, 1, 4, 1, 10, NULL);
    tsim_fixture_assert_replica(&f.plan, 2, 1, 5, 0, 20, NULL);
    tsim_fixture_assert_replica(&f.plan, 3, 2, 5, 1, 5, NULL);
    tsim_fixture_assert_replica(&f.plan, 4, 2, 6, 0, 15, NULL);
    tsim_fixture_assert_replica(&f.plan, 5, 3, 6, 1, 10, NULL);
    fixture_close(&f);
}

Test(echo, greedy_keeps_top_k_and_drops_the_rest)
{
    fixture f;
    fixture_open(&f, 8, 8, 8, 2);
    tsim_error err = {0};
    /* Sorted spills: e0 40, e3 30, e1 10, e2 10 (tie: index order). Spares r4 85,
     * r5 10. r4 overlaps e0 40, e3 30, e1 10, e2 5 and keeps only e0 (slot 0)
     * and e3 (slot 1); r5 gets the other 5 of e2. */
    const int64_t spill[8] = {40, 10, 10, 30, 0, 0, 0, 0};
    const int64_t spare[8] = {0, 0, 0, 0, 85, 10, 0, 0};
    cr_assert_eq(tsim_echo_assign(f.state, spill, spare, 100, &f.plan, &err), 0);
    tsim_plan_sort(&f.plan);
    cr_assert_eq(f.plan.count, 3);
    tsim_fixture_assert_replica(&f.plan, 0, 0, 4, 0, 40, NULL);
    tsim_fixture_assert_replica(&f.plan, 1, 2, 5, 0, 5, NULL);
    tsim_fixture_assert_replica(&f.plan, 2, 3, 4, 1, 30, NULL);
    fixture_close(&f);
}

Test(echo, greedy_ties_go_to_the_lower_sorted_position)
{
    fixture f;
    fixture_open(&f, 8, 8, 8, 2);
    tsim_error err = {0};
    /* Three equal pieces of 20 on rank 4 with K = 2: experts 0 and 1 stay, in
     * that slot order; expert 2 is dropped. */
    const int64_t spill[8] = {20, 20, 20, 0, 0, 0, 0, 0};
    const int64_t spare[8] = {0, 0, 0, 0, 60, 0, 0, 0};
    cr_assert_eq(tsim_echo_assign(f.state, spill, spare, 100, &f.plan, &err), 0);
    tsim_plan_sort(&f.plan);
    cr_assert_eq(f.plan.count, 2);
    tsim_fixture_assert_replica(&f.plan, 0, 0, 4, 0, 20, NULL);
    tsim_fixture_assert_replica(&f.plan, 1, 1, 4, 1, 20, NULL);

    /* The larger piece takes slot 0 even when it comes later: spills e0 45
     * [0,45), e1 25 [45,70); spares r4 40 [0,40), r5 30 [40,70). r4 gets e0 40;
     * r5 gets e0 5 then e1 25, so e1 is in slot 0. */
    const int64_t spill2[8] = {45, 25, 0, 0, 0, 0, 0, 0};
    const int64_t spare2[8] = {0, 0, 0, 0, 40, 30, 0, 0};
    cr_assert_eq(tsim_echo_assign(f.state, spill2, spare2, 100, &f.plan, &err), 0);
    tsim_plan_sort(&f.plan);
    cr_assert_eq(f.plan.count, 3);
    tsim_fixture_assert_replica(&f.plan, 0, 0, 4, 0, 40, NULL);
    tsim_fixture_assert_replica(&f.plan, 1, 0, 5, 1, 5, NULL);
    tsim_fixture_assert_replica(&f.plan, 2, 1, 5, 0, 25, NULL);
    fixture_close(&f);
}

Test(echo, k_zero_and_balanced_records_plan_nothing)
{
    const int64_t tpe[8] = {300, 10, 10, 10, 10, 10, 10, 10};
    for (int K = 0; K <= 2; K++) {
        fixture f;
        fixture_open(&f, 4, 8, 8, K);
        tsim_record rec;
        cr_assert_eq(tsim_record_alloc(&rec, 4, 8, NULL), 0);
        tsim_record_split_even(&rec, tpe);
        tsim_metrics m;
        plan_and_evaluate(&f, &rec, &m);
        if (K == 0)
            cr_assert_eq(f.plan.count, 0, "K = 0 has no guest slots");
        else
            cr_assert_gt(f.plan.count, 0);
        /* Every rank at the same load: no spill, no replica. */
        const int64_t flat[8] = {20, 20, 20, 20, 20, 20, 20, 20};
        tsim_record_split_even(&rec, flat);
        plan_and_evaluate(&f, &rec, &m);
        cr_assert_eq(f.plan.count, 0);
        tsim_record_free(&rec);
        fixture_close(&f);
    }
}

/* 10,000 random records (1,000 shapes x 10 records): the evaluator accepts
 * every plan; a fresh state gives the same plan; at most K guests per rank;
 * every listed replica receives exactly its planned tokens; a guest never
 * ends above the integer average; the maximum load never rises. */
Test(echo, properties_on_random_records, .timeout = 120)
{
    uint64_t seed = UINT64_C(0xEC40);
    tsim_error err = {0};
    int planned_records = 0;
    for (int shape_i = 0; shape_i < 1000; shape_i++) {
        tsim_random_shape sh;
        tsim_random_shape_draw(&seed, 64, &sh);
        fixture f;
        fixture_open(&f, sh.ranks, sh.experts, sh.ranks_per_node, sh.slots);
        tsim_plan fresh_plan;
        cr_assert_eq(tsim_plan_init(&fresh_plan, sh.ranks, sh.ranks * sh.slots, &err), 0);
        int *guests = calloc((size_t)sh.ranks, sizeof *guests);
        int64_t *tpe = malloc(sizeof *tpe * (size_t)sh.experts);
        for (int rec_i = 0; rec_i < 10; rec_i++) {
            tsim_record rec;
            tsim_random_record(&seed, &sh, &rec);
            tsim_metrics m;
            plan_and_evaluate(&f, &rec, &m);
            if (f.plan.count > 0)
                planned_records++;

            void *fresh = NULL;
            tsim_planner_options opts;
            tsim_planner_options_default(&opts);
            cr_assert_eq(tsim_planner_init_with(&tsim_planner_echo, &fresh, &f.topo, &opts, &err), 0);
            cr_assert_eq(tsim_planner_echo.plan(fresh, &rec, &fresh_plan, &err), 0);
            cr_assert(tsim_plan_equal(&f.plan, &fresh_plan), "shape %d record %d: plan differs from a fresh state",
                      shape_i, rec_i);
            tsim_planner_echo.free(fresh);

            tsim_record_expert_totals(&rec, tpe);
            int64_t total = 0, max_before = 0, max_after = 0;
            for (int r = 0; r < sh.ranks; r++) {
                total += f.ev.load_before[r];
                if (f.ev.load_before[r] > max_before)
                    max_before = f.ev.load_before[r];
                if (f.ev.load_after[r] > max_after)
                    max_after = f.ev.load_after[r];
                guests[r] = 0;
            }
            const int64_t avg = total / sh.ranks;
            cr_assert_leq(max_after, max_before, "shape %d record %d: max load rose", shape_i, rec_i);
            for (int i = 0; i < f.plan.count; i++) {
                const tsim_replica *rep = &f.plan.replicas[i];
                cr_assert_gt(rep->planned, 0);
                cr_assert_eq(row_sum(&f.plan, i), rep->planned, "replica %d gets other than its planned count", i);
                cr_assert(f.ev.load_before[rep->guest] < avg, "guest rank %d had no spare", rep->guest);
                guests[rep->guest]++;
            }
            for (int r = 0; r < sh.ranks; r++) {
                cr_assert_leq(guests[r], sh.slots, "rank %d hosts %d guests, K = %d", r, guests[r], sh.slots);
                if (guests[r] > 0)
                    cr_assert_leq(f.ev.load_after[r], avg, "guest rank %d ends above avg", r);
            }
            tsim_record_free(&rec);
        }
        free(tpe);
        free(guests);
        tsim_plan_free(&fresh_plan);
        fixture_close(&f);
    }
    cr_assert_gt(planned_records, 1000, "too few records produced a plan (%d): the test would prove little",
                 planned_records);
}
