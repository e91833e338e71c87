/* `optimal` planner (baselines.md "Further planners"): hand-checked tiny
 * optima, mu = 0 against a brute force over every replica placement, the
 * weighted cost falling as mu grows, valid plans and TAOT / ECHO / LLEP never
 * beating it on random small records, determinism (also under parallel load),
 * the binary cap and the node budget. */
#include <criterion/criterion.h>
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "test_options.h"
#include "evaluate.h"
#include "optimal.h"
#include "planner.h"
#include "registry.h"
#include "random_records.h"

/* ---- a planner with its topology, plan and evaluator ---- */

typedef struct {
    tsim_topology topo;
    tsim_planner p;
    tsim_plan plan;
    tsim_evaluator ev;
    tsim_metrics m;
} rig;

/* The MIP solver rig_try gives `optimal`: the default, GLPK (CBC is tested
 * in test_optimal_solvers.c); the node-count tests set it explicitly. */
static int rig_solver = TSIM_OPTIMAL_GLPK;

static int rig_try(rig *g, const char *name, int R, int E, int rpn, int K, double mu, int node_limit,
                   tsim_error *err)
{
    memset(g, 0, sizeof *g);
    cr_assert_eq(tsim_topology_init(&g->topo, R, E, rpn, K, NULL, err), 0, "%s", err->msg);
    g->p.desc = tsim_planner_find(name);
    cr_assert(g->p.desc != NULL, "planner %s is not registered", name);
    snprintf(g->p.label, sizeof g->p.label, "%s", name);
    tsim_test_defaults(&g->p);
    if (g->p.desc == &tsim_planner_optimal) {
        TSIM_OWN(g->p, optimal)->mu = mu;
        TSIM_OWN(g->p, optimal)->node_limit = node_limit;
        TSIM_OWN(g->p, optimal)->solver = rig_solver;
    }
    int rc = tsim_planner_start(&g->p, &g->topo, err);
    if (rc) {
        tsim_topology_free(&g->topo);
        return rc;
    }
    cr_assert_eq(tsim_plan_init(&g->plan, R, R * (K > 0 ? K : 1), err), 0);
    cr_assert_eq(tsim_evaluator_init(&g->ev, &g->topo, err), 0);
    return 0;
}

static void rig_start(rig *g, const char *name, int R, int E, int rpn, int K, double mu)
{
    tsim_error err = {0};
    int rc = rig_try(g, name, R, E, rpn, K, mu, 1000000, &err);
    cr_assert_eq(rc, 0, "%s init (R %d, E %d, rpn %d, K %d): %s", name, R, E, rpn, K, err.msg);
}

/* Plans and evaluates one record with lambda_eval = lambda_plan (3). */
static void rig_plan(rig *g, const tsim_record *rec)
{
    tsim_error err = {0};
    cr_assert_eq(g->p.desc->plan(g->p.state, rec, &g->plan, &err), 0, "%s plan: %s", g->p.label, err.msg);
    cr_assert_eq(tsim_evaluate(&g->ev, rec, &g->plan, g->p.common.lambda_plan, g->p.label, &g->m, &err), 0,
                 "%s evaluate: %s", g->p.label, err.msg);
}

static void rig_stop(rig *g)
{
    tsim_evaluator_free(&g->ev);
    tsim_plan_free(&g->plan);
    tsim_planner_stop(&g->p);
    tsim_topology_free(&g->topo);
}

static int64_t max_load(const rig *g)
{
    int64_t mx = 0;
    for (int r = 0; r < g->topo.ranks; r++)
        mx = g->ev.load_after[r] > mx ? g->ev.load_after[r] : mx;
    return mx;
}

static tsim_optimal_stats stats(const rig *g)
{
    tsim_optimal_stats st;
    tsim_optimal_stats_get(g->p.state, &st);
    return st;
}

/* The paper's objective from the evaluator's metrics. */
static double objective(const rig *g, double mu)
{
    return g->m.v[TSIM_M_RHO_AFTER] + mu * g->m.v[TSIM_M_WEIGHTED];
}

/* A record from per-expert totals, split over the sources evenly (model.md). */
static void record_from_totals(tsim_record *rec, int R, int E, const int64_t *tpe)
{
    cr_assert_eq(tsim_record_alloc(rec, R, E, NULL), 0);
    tsim_record_split_even(rec, tpe);
}

/* ---- hand-checked optima ---- */

/* R = 2, E = 2, K = 1, tpe = [100, 20]: mean 60, rho_before 2/3. The one useful
 * replica moves 40 tokens of expert 0 to rank 1 (loads 60 / 60, rho 0) and
 * costs mu * W, so it is worth it exactly while mu * W < 2/3. */
static void two_ranks_case(int rpn, double mu, bool expect_replica)
{
    static const int64_t tpe[] = {100, 20};
    tsim_record rec;
    record_from_totals(&rec, 2, 2, tpe);
    rig g;
    rig_start(&g, "optimal", 2, 2, rpn, 1, mu);
    rig_plan(&g, &rec);
    if (expect_replica) {
        cr_assert_eq(g.plan.count, 1, "rpn %d mu %g: %d replicas", rpn, mu, g.plan.count);
        const tsim_replica *x = &g.plan.replicas[0];
        cr_assert(x->expert == 0 && x->guest == 1 && x->slot == 0 && x->planned == 40,
                  "rpn %d mu %g: replica (%d, %d, %d) planned %lld", rpn, mu, x->expert, x->guest, x->slot,
                  (long long)x->planned);
        cr_assert(g.ev.load_after[0] == 60 && g.ev.load_after[1] == 60);
        /* Source split: 50 tokens from each source rank, 40 sent in total. */
        const int64_t *row = tsim_plan_alloc_row_c(&g.plan, 0);
        cr_assert_eq(row[0] + row[1], 40);
        cr_assert_float_eq(g.m.v[TSIM_M_WEIGHTED], rpn == 2 ? 1.0 : 3.0, 1e-12);
    } else {
        cr_assert_eq(g.plan.count, 0, "rpn %d mu %g: %d replicas, expected none", rpn, mu, g.plan.count);
    }
    cr_assert_eq(stats(&g).last_status, TSIM_OPTIMAL_SOLVED);
    rig_stop(&g);
    tsim_record_free(&rec);
}

Test(optimal, one_hot_expert_two_ranks_mu_against_lambda)
{
    /* Across nodes W = lambda = 3: worth it below mu = 2/9. */
    two_ranks_case(1, 0.1, true);
    two_ranks_case(1, 0.3, false);
    /* Within a node W = 1: worth it below mu = 2/3. */
    two_ranks_case(2, 0.3, true);
    two_ranks_case(2, 0.7, false);
    two_ranks_case(2, 0.0, true);
}

/* R = 3, E = 3, one node, K = 1, tpe = [90, 30, 0], mean 40. One replica of
 * expert 0 on the coldest rank 2 moves half the difference (45): loads 45, 30,
 * 45, rho 1/8. A second one on rank 1 reaches rho 0 for another mu. */
Test(optimal, one_hot_expert_goes_half_way_to_the_coldest_rank)
{
    static const int64_t tpe[] = {90, 30, 0};
    tsim_record rec;
    record_from_totals(&rec, 3, 3, tpe);
    rig g;
    rig_start(&g, "optimal", 3, 3, 4, 1, 0.2);
    rig_plan(&g, &rec);
    cr_assert_eq(g.plan.count, 1, "%d replicas", g.plan.count);
    cr_assert(g.plan.replicas[0].expert == 0 && g.plan.replicas[0].guest == 2 && g.plan.replicas[0].planned == 45);
    cr_assert(g.ev.load_after[0] == 45 && g.ev.load_after[1] == 30 && g.ev.load_after[2] == 45);
    cr_assert_float_eq(stats(&g).last_objective, 5.0 / 40.0 + 0.2, 1e-9);
    rig_stop(&g);

    rig_start(&g, "optimal", 3, 3, 4, 1, 0.05);
    rig_plan(&g, &rec);
    cr_assert_eq(g.plan.count, 2, "%d replicas", g.plan.count);
    for (int r = 0; r < 3; r++)
        cr_assert_eq(g.ev.load_after[r], 40, "rank %d load %lld", r, (long long)g.ev.load_after[r]);
    cr_assert_float_eq(stats(&g).last_objective, 0.1, 1e-9);
    rig_stop(&g);
    tsim_record_free(&rec);
}

/* R = 4, two nodes of 2, K = 1, tpe = [100, 40, 0, 40], mean 45. Within the
 * node rank 1 (W = 1): move 30, max 70, rho 5/9. Across to the coldest rank 2
 * (W = 3): move 50, max 50, rho 1/9. Across wins while 2 mu < 4/9. (Two or more
 * replicas cost 4 mu and up for rho >= 1/27: never best at these mu.) */
Test(optimal, mu_chooses_between_a_near_warm_rank_and_a_far_cold_one)
{
    static const int64_t tpe[] = {100, 40, 0, 40};
    static const struct {
        double mu;
        int guest;
        int64_t planned;
        double weighted;
    } cases[] = {{0.15, 2, 50, 3.0}, {0.3, 1, 30, 1.0}, {0.6, 1, 30, 1.0}};
    tsim_record rec;
    record_from_totals(&rec, 4, 4, tpe);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rig g;
        rig_start(&g, "optimal", 4, 4, 2, 1, cases[i].mu);
        rig_plan(&g, &rec);
        cr_assert_eq(g.plan.count, 1, "mu %g: %d replicas", cases[i].mu, g.plan.count);
        const tsim_replica *x = &g.plan.replicas[0];
        cr_assert(x->expert == 0 && x->guest == cases[i].guest && x->planned == cases[i].planned,
                  "mu %g: replica of %d on %d planned %lld", cases[i].mu, x->expert, x->guest, (long long)x->planned);
        cr_assert_float_eq(g.m.v[TSIM_M_WEIGHTED], cases[i].weighted, 1e-12);
        rig_stop(&g);
    }
    /* mu = 0.7: even the near replica (0.556 + 0.7) loses to none (rho 11/9). */
    rig g;
    rig_start(&g, "optimal", 4, 4, 2, 1, 0.7);
    rig_plan(&g, &rec);
    cr_assert_eq(g.plan.count, 0);
    rig_stop(&g);
    tsim_record_free(&rec);
}

/* Slots go to each guest's replicas in increasing expert order. R = 2, E = 6:
 * rank 0 holds experts 0..2 with 40 tokens each, rank 1 nothing; leveling at
 * 60 needs two replicas (no expert has 60), both on rank 1. */
Test(optimal, slots_in_increasing_expert_order)
{
    static const int64_t tpe[] = {40, 40, 40, 0, 0, 0};
    tsim_record rec;
    record_from_totals(&rec, 2, 6, tpe);
    rig g;
    rig_start(&g, "optimal", 2, 6, 2, 2, 0.001);
    rig_plan(&g, &rec);
    cr_assert(g.ev.load_after[0] == 60 && g.ev.load_after[1] == 60);
    cr_assert_eq(g.plan.count, 2);
    for (int i = 0; i < g.plan.count; i++) {
        const tsim_replica *x = &g.plan.replicas[i];
        cr_assert_eq(x->guest, 1);
        int before = 0;
        for (int j = 0; j < g.plan.count; j++)
            before += g.plan.replicas[j].expert < x->expert;
        cr_assert_eq(x->slot, before, "expert %d in slot %d", x->expert, x->slot);
    }
    rig_stop(&g);
    tsim_record_free(&rec);
}

Test(optimal, empty_record_and_no_slots_give_the_empty_plan)
{
    static const int64_t zero[] = {0, 0, 0, 0};
    static const int64_t hot[] = {100, 0, 0, 0};
    tsim_record rec;
    record_from_totals(&rec, 2, 4, zero);
    rig g;
    rig_start(&g, "optimal", 2, 4, 2, 2, 0.001);
    rig_plan(&g, &rec);
    cr_assert_eq(g.plan.count, 0);
    cr_assert_eq(stats(&g).last_status, TSIM_OPTIMAL_TRIVIAL);
    rig_stop(&g);
    tsim_record_free(&rec);

    record_from_totals(&rec, 2, 4, hot);
    rig_start(&g, "optimal", 2, 4, 2, 0, 0.001);
    rig_plan(&g, &rec);
    cr_assert_eq(g.plan.count, 0);
    rig_stop(&g);
    tsim_record_free(&rec);
}

/* ---- mu = 0 against a brute force over every placement ---- */

/* For a fixed placement the least fractional max load is, by max-flow min-cut,
 * the largest tpe(X) / |ranks X can reach| over expert subsets X (each expert
 * reaches its home and its replicas); with integer tokens it is the ceiling. */
typedef struct {
    int R, E, K;
    const int32_t *home;
    const int64_t *tpe;
    unsigned guest_set[4]; /* per guest: bit e set = replica of e there */
    double best_frac;
} brute;

static double placement_bound(const brute *b)
{
    double worst = 0.0;
    for (unsigned X = 1; X < (1u << b->E); X++) {
        int64_t tokens = 0;
        unsigned reach = 0;
        for (int e = 0; e < b->E; e++)
            if (X & (1u << e)) {
                tokens += b->tpe[e];
                reach |= 1u << b->home[e];
                for (int g = 0; g < b->R; g++)
                    if (b->guest_set[g] & (1u << e))
                        reach |= 1u << g;
            }
        double ratio = (double)tokens / (double)__builtin_popcount(reach);
        worst = ratio > worst ? ratio : worst;
    }
    return worst;
}

static void brute_guest(brute *b, int g)
{
    if (g == b->R) {
        double v = placement_bound(b);
        b->best_frac = v < b->best_frac ? v : b->best_frac;
        return;
    }
    for (unsigned set = 0; set < (1u << b->E); set++) {
        if (__builtin_popcount(set) > b->K)
            continue;
        bool foreign = true;
        for (int e = 0; e < b->E; e++)
            if ((set & (1u << e)) && b->home[e] == g)
                foreign = false;
        if (!foreign)
            continue;
        b->guest_set[g] = set;
        brute_guest(b, g + 1);
    }
}

Test(optimal, mu_zero_matches_a_brute_force_over_placements)
{
    static const int shapes[][3] = {{2, 2, 1}, {2, 4, 1}, {2, 4, 2}, {3, 3, 1}, {3, 6, 1}, {3, 6, 2}, {4, 4, 1},
                                    {4, 4, 2}};
    uint64_t seed = 0x0b7101;
    int checked = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int R = shapes[s][0], E = shapes[s][1], K = shapes[s][2];
        rig g;
        rig_start(&g, "optimal", R, E, 2, K, 0.0);
        for (int trial = 0; trial < 12; trial++) {
            tsim_random_shape shape = {R, E, K, 2};
            tsim_record rec;
            tsim_random_record(&seed, &shape, &rec);
            rig_plan(&g, &rec);
            int64_t tpe[8];
            tsim_record_expert_totals(&rec, tpe);
            brute b = {.R = R, .E = E, .K = K, .home = g.topo.home, .tpe = tpe, .best_frac = INFINITY};
            brute_guest(&b, 0);
            int64_t total = 0;
            for (int e = 0; e < E; e++)
                total += tpe[e];
            tsim_optimal_stats st = stats(&g);
            if (total == 0) {
                cr_assert_eq(g.plan.count, 0);
                tsim_record_free(&rec);
                continue;
            }
            /* The MIP's fractional max load is the brute-force optimum. */
            cr_assert_eq(st.last_status, TSIM_OPTIMAL_SOLVED);
            cr_assert(fabs(st.last_max_load - b.best_frac) <= 1e-6 * (1.0 + b.best_frac),
                      "R %d E %d K %d trial %d: MIP max load %.9g, brute force %.9g", R, E, K, trial,
                      st.last_max_load, b.best_frac);
            /* The integer plan: never below the integer optimum (nothing can
             * be), and within the rounding slack (K on a guest, half a token
             * per home expert) above it. */
            int64_t floor_opt = (int64_t)ceil(b.best_frac - 1e-9);
            int64_t got = max_load(&g);
            cr_assert(got >= floor_opt && got <= floor_opt + K + E / R,
                      "R %d E %d K %d trial %d: max load %lld, integer optimum %lld", R, E, K, trial, (long long)got,
                      (long long)floor_opt);
            checked++;
            tsim_record_free(&rec);
        }
        rig_stop(&g);
    }
    cr_assert(checked >= 60, "only %d non-empty records checked", checked);
}

/* ---- mu: weighted cost never rises as mu grows ---- */

Test(optimal, larger_mu_never_increases_weighted_cost)
{
    static const double mus[] = {0.0, 0.001, 0.01, 0.05, 0.2, 1.0};
    enum { NMU = sizeof mus / sizeof mus[0] };
    uint64_t seed = 0x5eed0002;
    int decreased = 0;
    for (int trial = 0; trial < 40; trial++) {
        static const int rpns[] = {1, 2, 4};
        const int R = (int)tsim_rand_range(&seed, 2, 4), E = R * (int)tsim_rand_range(&seed, 1, 2);
        const int K = (int)tsim_rand_range(&seed, 1, 2), rpn = rpns[tsim_rand_range(&seed, 0, 2)];
        tsim_random_shape shape = {R, E, K, rpn};
        tsim_record rec;
        tsim_random_record(&seed, &shape, &rec);
        double prev_cost = INFINITY, prev_weighted = INFINITY;
        for (int i = 0; i < NMU; i++) {
            rig g;
            rig_start(&g, "optimal", R, E, rpn, K, mus[i]);
            rig_plan(&g, &rec);
            tsim_optimal_stats st = stats(&g);
            /* The MIP's cost: monotone for exact optima (swap the two
             * optimality inequalities); the plan can only drop replicas. */
            cr_assert(st.last_cost <= prev_cost + 1e-9, "trial %d mu %g: cost %g after %g", trial, mus[i],
                      st.last_cost, prev_cost);
            cr_assert(g.m.v[TSIM_M_WEIGHTED] <= st.last_cost + 1e-9);
            if (mus[i] > 0.0)
                cr_assert(g.m.v[TSIM_M_WEIGHTED] <= prev_weighted + 1e-9 || i == 1,
                          "trial %d mu %g: weighted %g after %g", trial, mus[i], g.m.v[TSIM_M_WEIGHTED],
                          prev_weighted);
            decreased += st.last_cost < prev_cost - 1e-9 && i > 0;
            prev_cost = st.last_cost;
            prev_weighted = g.m.v[TSIM_M_WEIGHTED];
            rig_stop(&g);
        }
        tsim_record_free(&rec);
    }
    cr_assert(decreased > 0, "mu never changed the cost: the test shows nothing");
}

/* ---- random records: valid plans, never beaten ---- */

typedef struct {
    double sum, max;
    int n;
} gap;

Test(optimal, valid_and_never_beaten_by_taot_echo_llep)
{
    static const char *const rivals[] = {"taot", "echo", "llep"};
    enum { NRIVAL = 3 };
    static const double mus[] = {0.0, 0.001, 0.01, 0.05};
    gap gaps[NRIVAL] = {{0}};
    int llep_unslotted = 0, planned = 0;
    double plan_s = 0.0;
    uint64_t seed = 0x5eed0003;
    for (int trial = 0; trial < 300; trial++) {
        static const int rpns[] = {1, 2, 4};
        const int R = (int)tsim_rand_range(&seed, 2, 4);
        const int E = R * (int)tsim_rand_range(&seed, 1, 8 / R);
        const int K = (int)tsim_rand_range(&seed, 1, 3), rpn = rpns[tsim_rand_range(&seed, 0, 2)];
        const double mu = mus[tsim_rand_range(&seed, 0, 3)];
        tsim_random_shape shape = {R, E, K, rpn};
        tsim_record rec;
        tsim_random_record(&seed, &shape, &rec);

        rig opt;
        rig_start(&opt, "optimal", R, E, rpn, K, mu);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rig_plan(&opt, &rec);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        plan_s += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        planned++;
        tsim_optimal_stats st = stats(&opt);
        cr_assert(st.last_status == TSIM_OPTIMAL_SOLVED || st.last_status == TSIM_OPTIMAL_TRIVIAL,
                  "trial %d: status %d", trial, st.last_status);
        cr_assert(st.last_gap == 0.0);
        int64_t total = 0;
        for (int r = 0; r < R; r++)
            total += opt.ev.load_before[r];
        const double slack = total > 0 ? (double)(K + E / R) * (double)R / (double)total : 0.0;
        const double opt_obj = objective(&opt, mu);
        /* The plan's own objective is the MIP's within the rounding slack. */
        if (st.last_status == TSIM_OPTIMAL_SOLVED)
            cr_assert(opt_obj <= st.last_objective + slack + 1e-9 && opt_obj >= st.last_objective - 1e-6 - slack,
                      "trial %d: plan objective %.9g, MIP %.9g", trial, opt_obj, st.last_objective);

        for (int i = 0; i < NRIVAL; i++) {
            rig h;
            rig_start(&h, rivals[i], R, E, rpn, K, mu);
            rig_plan(&h, &rec);
            /* LLEP has no slot limit: a plan with more than K replicas on a
             * rank is outside the MIP's feasible set. */
            bool within = true;
            int per_guest[4] = {0};
            for (int k = 0; k < h.plan.count; k++)
                within &= ++per_guest[h.plan.replicas[k].guest] <= K;
            if (!within) {
                llep_unslotted++;
                rig_stop(&h);
                continue;
            }
            const double obj = objective(&h, mu);
            if (st.last_status == TSIM_OPTIMAL_SOLVED)
                cr_assert(st.last_objective <= obj + 1e-6, "trial %d: %s objective %.9g below the MIP's %.9g",
                          trial, rivals[i], obj, st.last_objective);
            cr_assert(opt_obj <= obj + slack + 1e-6,
                      "trial %d (R %d E %d K %d rpn %d mu %g): %s objective %.9g beats optimal's %.9g", trial, R, E,
                      K, rpn, mu, rivals[i], obj, opt_obj);
            double d = obj - opt_obj;
            gaps[i].sum += d;
            gaps[i].max = d > gaps[i].max ? d : gaps[i].max;
            gaps[i].n++;
            rig_stop(&h);
        }
        rig_stop(&opt);
        tsim_record_free(&rec);
    }
    for (int i = 0; i < NRIVAL; i++)
        fprintf(stderr, "optimal gap: %s - optimal objective over %d records: mean %.4f, max %.4f\n", rivals[i],
                gaps[i].n, gaps[i].n ? gaps[i].sum / gaps[i].n : 0.0, gaps[i].max);
    fprintf(stderr, "optimal: llep plans over K per rank (not compared): %d; mean plan time %.3f ms\n",
            llep_unslotted, 1e3 * plan_s / planned);
    cr_assert(gaps[0].n > 0 && gaps[1].n > 0);
}

/* ---- determinism ---- */

Test(optimal, same_record_same_plan_whatever_came_before)
{
    uint64_t seed = 0x5eed0004;
    tsim_random_shape shape = {4, 8, 2, 2};
    tsim_record a, b;
    tsim_random_record(&seed, &shape, &a);
    do {
        tsim_record_free(&a);
        tsim_random_record(&seed, &shape, &a);
    } while (a.counts[0] == a.counts[1]); /* a skewed record, not a flat one */
    tsim_random_record(&seed, &shape, &b);

    rig fresh, used;
    rig_start(&fresh, "optimal", 4, 8, 2, 2, 0.001);
    rig_start(&used, "optimal", 4, 8, 2, 2, 0.001);
    rig_plan(&fresh, &a);
    rig_plan(&used, &b);
    rig_plan(&used, &a);
    cr_assert(tsim_plan_equal(&fresh.plan, &used.plan), "the plan of a record depends on the record before it");
    rig_plan(&used, &a);
    cr_assert(tsim_plan_equal(&fresh.plan, &used.plan));
    rig_stop(&fresh);
    rig_stop(&used);
    tsim_record_free(&a);
    tsim_record_free(&b);
}

/* ---- limits ---- */

Test(optimal, refuses_topologies_past_the_binary_cap)
{
    rig g;
    tsim_error err = {0};
    /* 64 ranks, 128 experts: 128 * 63 = 8064 binaries. */
    int rc = rig_try(&g, "optimal", 64, 128, 8, 2, 0.001, 100, &err);
    cr_assert_eq(rc, TSIM_E_INPUT, "rc %d", rc);
    cr_assert(strstr(err.msg, "8064 binaries") && strstr(err.msg, "small R and E"), "%s", err.msg);
    /* At the cap exactly: 4096 = 64 * 64 is 65 ranks, not a divisor; 16 ranks,
     * 272 experts = 4080 binaries is under it and builds. */
    rc = rig_try(&g, "optimal", 16, 272, 8, 2, 0.001, 100, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    rig_stop(&g);
}

Test(optimal, refuses_bad_options)
{
    rig g;
    tsim_error err = {0};
    cr_assert_eq(rig_try(&g, "optimal", 2, 2, 2, 1, -1.0, 100, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "optimal-mu") != NULL, "%s", err.msg);
    cr_assert_eq(rig_try(&g, "optimal", 2, 2, 2, 1, 0.1, 0, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "optimal-node-limit") != NULL, "%s", err.msg);
    cr_assert_eq(rig_try(&g, "optimal", 2, 2, 2, 1, 0.1, -3, &err), TSIM_E_INPUT);

    /* The CLI form: a whole number of subproblems, at least 1. The wall-clock
     * limit is gone: it made plans depend on machine load. */
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    cr_assert_eq(TSIM_OPTS(o, optimal)->node_limit, 20000);
    cr_assert_eq(TSIM_OPTS(o, optimal)->solver, TSIM_OPTIMAL_GLPK);
    bool solver_known = false;
    cr_assert_eq(tsim_planner_options_set(&o, "optimal-solver", "cbc", &solver_known, &err), 0, "%s", err.msg);
    cr_assert(solver_known);
    cr_assert_eq(TSIM_OPTS(o, optimal)->solver, TSIM_OPTIMAL_CBC);
    cr_assert_eq(tsim_planner_options_set(&o, "optimal-solver", "clp", &solver_known, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "--optimal-solver") != NULL, "%s", err.msg);
    bool known = false;
    cr_assert_eq(tsim_planner_options_set(&o, "optimal-node-limit", "250", &known, &err), 0, "%s", err.msg);
    cr_assert(known);
    cr_assert_eq(TSIM_OPTS(o, optimal)->node_limit, 250);
    static const char *const bad[] = {"0", "-1", "1.5", "1e12", "many", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(tsim_planner_options_set(&o, "optimal-node-limit", bad[i], &known, &err), TSIM_E_INPUT,
                     "'%s' accepted", bad[i]);
        cr_assert(strstr(err.msg, "--optimal-node-limit") != NULL, "%s", err.msg);
    }
    cr_assert_eq(TSIM_OPTS(o, optimal)->node_limit, 250);
    cr_assert_eq(tsim_planner_options_set(&o, "optimal-time-limit", "10", &known, &err), TSIM_E_INPUT);
    cr_assert(!known);
    cr_assert(tsim_planner_option_exists("optimal-node-limit"));
    cr_assert(!tsim_planner_option_exists("optimal-time-limit"));
}

Test(optimal, rejects_a_record_of_another_shape)
{
    static const int64_t tpe[] = {1, 2, 3, 4, 5, 6};
    tsim_record rec;
    record_from_totals(&rec, 3, 6, tpe);
    rig g;
    rig_start(&g, "optimal", 2, 4, 2, 1, 0.001);
    tsim_error err = {0};
    cr_assert_eq(g.p.desc->plan(g.p.state, &rec, &g.plan, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "3 x 6") != NULL, "%s", err.msg);
    rig_stop(&g);
    tsim_record_free(&rec);
}

/* ---- the node budget ---- */

/* Skewed records on 8 ranks x 64 experts (448 binaries): no small budget
 * proves them. */
static void hard_record(uint64_t *seed, tsim_record *rec)
{
    cr_assert_eq(tsim_record_alloc(rec, 8, 64, NULL), 0);
    for (int r = 0; r < 8; r++)
        for (int e = 0; e < 64; e++)
            rec->counts[r * 64 + e] = tsim_rand_range(seed, 0, 400) * (e < 8 ? 9 : 1) + (e % 5) * 37;
}

/* A budget of N subproblems (GLPK: its budget counts subproblems solved):
 * the search is cut after exactly N, whatever comes back (incumbent or the
 * empty plan) is a valid plan, carries the note and is counted, with the gap
 * left. */
Test(optimal, node_limit_cuts_after_exactly_n_subproblems)
{
    rig_solver = TSIM_OPTIMAL_GLPK;
    static const int limits[] = {1, 2, 7, 40};
    uint64_t seed = 0x5eed0005;
    for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++) {
        rig g;
        tsim_error err = {0};
        cr_assert_eq(rig_try(&g, "optimal", 8, 64, 4, 2, 0.0001, limits[l], &err), 0, "%s", err.msg);
        int cut = 0;
        for (int i = 0; i < 4; i++) {
            tsim_record rec;
            hard_record(&seed, &rec);
            rig_plan(&g, &rec); /* evaluated: a valid plan */
            tsim_optimal_stats st = stats(&g);
            cr_assert(st.last_status == TSIM_OPTIMAL_NODE_LIMIT || st.last_status == TSIM_OPTIMAL_NO_SOLUTION,
                      "limit %d record %d: status %d, a 448-binary search proven within the budget", limits[l], i,
                      st.last_status);
            cut++;
            cr_assert_eq(st.last_nodes, limits[l], "limit %d: %d subproblems solved", limits[l], st.last_nodes);
            cr_assert(g.plan.notes & TSIM_NOTE_NODE_LIMIT, "a plan cut short carries no note");
            if (st.last_status == TSIM_OPTIMAL_NO_SOLUTION)
                cr_assert(g.plan.count == 0 && isinf(st.last_gap));
            else
                cr_assert(st.last_gap > 0.0, "cut short with a zero gap");
            tsim_record_free(&rec);
        }
        tsim_optimal_stats st = stats(&g);
        cr_assert_eq(st.records, 4);
        cr_assert_eq(st.solved, 0);
        cr_assert_eq(st.node_limit + st.no_solution, cut);
        rig_stop(&g);
    }
}

/* The budget's edge: a record GLPK proves in n subproblems is proven (no note)
 * with a budget of n, and cut with n - 1. */
Test(optimal, node_limit_edge_proven_at_n_cut_at_n_minus_1)
{
    rig_solver = TSIM_OPTIMAL_GLPK;
    uint64_t seed = 0x5eed0006;
    int tried = 0;
    for (int trial = 0; trial < 200 && tried < 5; trial++) {
        tsim_random_shape shape = {4, 12, 2, 2};
        tsim_record rec;
        tsim_random_record(&seed, &shape, &rec);
        rig big;
        tsim_error err = {0};
        cr_assert_eq(rig_try(&big, "optimal", 4, 12, 2, 2, 0.001, 1000000, &err), 0, "%s", err.msg);
        rig_plan(&big, &rec);
        tsim_optimal_stats full = stats(&big);
        cr_assert_eq(big.plan.notes & TSIM_NOTE_NODE_LIMIT, 0u);
        const int n = full.last_nodes;
        if (full.last_status != TSIM_OPTIMAL_SOLVED || n < 2) {
            rig_stop(&big);
            tsim_record_free(&rec);
            continue; /* trivial, or proven at the root: no edge to test */
        }
        tried++;
        rig exact, short_by_one;
        cr_assert_eq(rig_try(&exact, "optimal", 4, 12, 2, 2, 0.001, n, &err), 0, "%s", err.msg);
        cr_assert_eq(rig_try(&short_by_one, "optimal", 4, 12, 2, 2, 0.001, n - 1, &err), 0, "%s", err.msg);
        rig_plan(&exact, &rec);
        rig_plan(&short_by_one, &rec);
        tsim_optimal_stats at_n = stats(&exact), below = stats(&short_by_one);
        cr_assert_eq(at_n.last_status, TSIM_OPTIMAL_SOLVED, "trial %d: budget %d = what it needs, status %d", trial,
                     n, at_n.last_status);
        cr_assert_eq(at_n.last_nodes, n);
        cr_assert(tsim_plan_equal(&exact.plan, &big.plan), "trial %d: same search, different plan", trial);
        cr_assert(below.last_status == TSIM_OPTIMAL_NODE_LIMIT || below.last_status == TSIM_OPTIMAL_NO_SOLUTION,
                  "trial %d: budget %d < %d needed, status %d", trial, n - 1, n, below.last_status);
        cr_assert_eq(below.last_nodes, n - 1);
        cr_assert(short_by_one.plan.notes & TSIM_NOTE_NODE_LIMIT);
        rig_stop(&exact);
        rig_stop(&short_by_one);
        rig_stop(&big);
        tsim_record_free(&rec);
    }
    cr_assert(tried >= 3, "only %d records needed more than the root", tried);
}

/* ---- the same plans at any -j, under any load ---- */

enum { DET_RECORDS = 5, DET_LIMIT = 150 };

typedef struct {
    const tsim_record *recs;
    int first;                    /* plans the records starting here, wrapping */
    tsim_plan plans[DET_RECORDS]; /* by record index */
    int nodes[DET_RECORDS];
    int status[DET_RECORDS];
    char error[TSIM_ERROR_MSG_MAX];
} det_job;

static volatile int det_stop_burning;

/* A thread that only eats CPU: the load a busy machine or a wide -j puts on
 * every planner thread. */
static void *det_burn(void *arg)
{
    (void)arg;
    volatile double x = 1.0;
    while (!det_stop_burning)
        for (int i = 0; i < 100000; i++)
            x = x * 1.0000001 + 1e-9;
    return NULL;
}

/* One planner on its own thread (as a grid point under -j): no criterion
 * asserts here, the main thread checks. */
static void *det_plan_all(void *arg)
{
    det_job *job = arg;
    tsim_topology topo;
    tsim_planner p = {0};
    tsim_error err = {0};
    if (tsim_topology_init(&topo, 8, 64, 4, 2, NULL, &err)) {
        snprintf(job->error, sizeof job->error, "topology: %s", err.msg);
        return NULL;
    }
    p.desc = tsim_planner_find("optimal");
    snprintf(p.label, sizeof p.label, "optimal");
    tsim_test_defaults(&p);
    TSIM_OWN(p, optimal)->mu = 0.0001;
    TSIM_OWN(p, optimal)->node_limit = DET_LIMIT;
    if (tsim_planner_start(&p, &topo, &err)) {
        snprintf(job->error, sizeof job->error, "start: %s", err.msg);
        tsim_topology_free(&topo);
        return NULL;
    }
    for (int k = 0; k < DET_RECORDS; k++) {
        const int i = (job->first + k) % DET_RECORDS;
        if (p.desc->plan(p.state, &job->recs[i], &job->plans[i], &err)) {
            snprintf(job->error, sizeof job->error, "record %d: %s", i, err.msg);
            break;
        }
        tsim_optimal_stats st;
        tsim_optimal_stats_get(p.state, &st);
        job->nodes[i] = st.last_nodes;
        job->status[i] = st.last_status;
    }
    tsim_planner_stop(&p);
    tsim_topology_free(&topo);
    /* GLPK keeps an environment per thread; this thread is done with it */
    glp_free_env();
    return NULL;
}

static void det_job_init(det_job *job, const tsim_record *recs, int first)
{
    memset(job, 0, sizeof *job);
    job->recs = recs;
    job->first = first;
    tsim_error err = {0};
    for (int i = 0; i < DET_RECORDS; i++)
        cr_assert_eq(tsim_plan_init(&job->plans[i], 8, 16, &err), 0);
}

static void det_job_free(det_job *job)
{
    for (int i = 0; i < DET_RECORDS; i++)
        tsim_plan_free(&job->plans[i]);
}

/* Records the budget cuts short, planned once alone and then by many planner
 * threads at once beside threads that only burn CPU: every thread gets the
 * plan, the status and the subproblem count of the quiet run. (A wall-clock
 * limit fails this: a loaded thread gets less far in the same time and keeps
 * a different incumbent.) */
Test(optimal, same_plans_under_parallel_load, .timeout = 600)
{
    uint64_t seed = 0x5eed0007;
    tsim_record recs[DET_RECORDS];
    for (int i = 0; i < DET_RECORDS; i++)
        hard_record(&seed, &recs[i]);

    det_job quiet;
    det_job_init(&quiet, recs, 0);
    det_plan_all(&quiet);
    cr_assert_str_eq(quiet.error, "");
    int cut = 0;
    for (int i = 0; i < DET_RECORDS; i++)
        cut += quiet.status[i] == TSIM_OPTIMAL_NODE_LIMIT || quiet.status[i] == TSIM_OPTIMAL_NO_SOLUTION;
    cr_assert(cut >= 3, "the budget cut only %d of %d records: the test would show nothing", cut, DET_RECORDS);

    int cpus = tsim_cpu_count();
    cpus = cpus < 1 ? 1 : (cpus > 16 ? 16 : cpus);
    const int planners = 2 * cpus + 2, burners = cpus;
    det_job *jobs = calloc((size_t)planners, sizeof *jobs);
    pthread_t *tid = calloc((size_t)(planners + burners), sizeof *tid);
    cr_assert(jobs && tid);
    det_stop_burning = 0;
    for (int b = 0; b < burners; b++)
        cr_assert_eq(pthread_create(&tid[planners + b], NULL, det_burn, NULL), 0);
    for (int t = 0; t < planners; t++) {
        det_job_init(&jobs[t], recs, t % DET_RECORDS);
        cr_assert_eq(pthread_create(&tid[t], NULL, det_plan_all, &jobs[t]), 0);
    }
    for (int t = 0; t < planners; t++)
        pthread_join(tid[t], NULL);
    det_stop_burning = 1;
    for (int b = 0; b < burners; b++)
        pthread_join(tid[planners + b], NULL);

    for (int t = 0; t < planners; t++) {
        cr_assert_str_eq(jobs[t].error, "", "thread %d: %s", t, jobs[t].error);
        for (int i = 0; i < DET_RECORDS; i++) {
            cr_assert_eq(jobs[t].status[i], quiet.status[i], "thread %d record %d: status %d, alone %d", t, i,
                         jobs[t].status[i], quiet.status[i]);
            cr_assert_eq(jobs[t].nodes[i], quiet.nodes[i], "thread %d record %d: %d subproblems, alone %d", t, i,
                         jobs[t].nodes[i], quiet.nodes[i]);
            cr_assert(tsim_plan_equal(&jobs[t].plans[i], &quiet.plans[i]),
                      "thread %d record %d: a different plan under load", t, i);
            cr_assert_eq(jobs[t].plans[i].notes, quiet.plans[i].notes);
        }
        det_job_free(&jobs[t]);
    }
    det_job_free(&quiet);
    free(jobs);
    free(tid);
    for (int i = 0; i < DET_RECORDS; i++)
        tsim_record_free(&recs[i]);
}
