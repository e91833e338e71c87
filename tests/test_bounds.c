/* The lower bounds of src/bound (issue 23): hand-checked small cases, the
 * bounds never above the proven optimum of `optimal` nor above any in-model
 * planner's plan on random small records (and the check catches a wrong
 * bound), the frontier monotone in the budget, CLP and GLPK agreeing, and
 * input errors. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bound.h"
#include "evaluate.h"
#include "optimal.h"
#include "planner.h"
#include "random_records.h"
#include "registry.h"
#include "test_options.h"

/* ---- helpers ---- */

static void record_from_totals(tsim_record *rec, int R, int E, const int64_t *tpe)
{
    cr_assert_eq(tsim_record_alloc(rec, R, E, NULL), 0);
    tsim_record_split_even(rec, tpe);
}

typedef struct {
    tsim_topology topo;
    tsim_bounder *b;
} bound_rig;

/* The optional room rows change the LP: the validity test runs both ways. */
static bool with_room_rows;

static void bound_start(bound_rig *g, int R, int E, int rpn, int K, double lambda, bool integer_tokens,
                        tsim_lp_solver solver)
{
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(&g->topo, R, E, rpn, K, NULL, &err), 0, "%s", err.msg);
    tsim_bound_options o;
    tsim_bound_options_default(&o);
    o.lambda = lambda;
    o.integer_tokens = integer_tokens;
    o.solver = solver;
    o.lp_limit = 40;
    o.room_rows = with_room_rows;
    cr_assert_eq(tsim_bounder_new(&g->b, &g->topo, &o, &err), 0, "%s", err.msg);
}

static void bound_stop(bound_rig *g)
{
    tsim_bounder_free(g->b);
    tsim_topology_free(&g->topo);
}

static double objective_bound(bound_rig *g, const tsim_record *rec, double mu, tsim_bound_result *r)
{
    tsim_error err = {0};
    cr_assert_eq(tsim_bound_objective(g->b, rec, mu, r, &err), 0, "%s", err.msg);
    return r->value;
}

static double min_rho(bound_rig *g, const tsim_record *rec, double budget)
{
    tsim_error err = {0};
    tsim_bound_result r;
    cr_assert_eq(tsim_bound_min_rho(g->b, rec, budget, &r, &err), 0, "%s", err.msg);
    return r.value;
}

static double min_cost(bound_rig *g, const tsim_record *rec, double rho)
{
    tsim_error err = {0};
    tsim_bound_result r;
    cr_assert_eq(tsim_bound_min_cost(g->b, rec, rho, &r, &err), 0, "%s", err.msg);
    return r.value;
}

/* ---- hand-checked ---- */

Test(bound, round_cost_takes_the_next_reachable_cost)
{
    cr_assert_float_eq(tsim_bound_round_cost(0.0, 3.0), 0.0, 1e-12);
    cr_assert_float_eq(tsim_bound_round_cost(0.2, 3.0), 1.0, 1e-12);
    cr_assert_float_eq(tsim_bound_round_cost(2.5, 3.0), 3.0, 1e-12);
    cr_assert_float_eq(tsim_bound_round_cost(3.5, 3.0), 4.0, 1e-12);
    cr_assert_float_eq(tsim_bound_round_cost(5.2, 2.5), 5.5, 1e-12);
    cr_assert_float_eq(tsim_bound_round_cost(4.9, 2.5), 5.0, 1e-12);
    cr_assert_float_eq(tsim_bound_round_cost(1.7, 0.0), 2.0, 1e-12);
    /* A hair above a reachable value is that value (solver noise). */
    cr_assert_float_eq(tsim_bound_round_cost(3.0 + 1e-11, 3.0), 3.0, 1e-12);
}

/* R = 2 on two nodes (rpn 1), E = 2, K = 1, tpe = [100, 20]: mean 60,
 * rho_before 2/3. One replica of expert 0 on rank 1 (cost lambda = 3)
 * balances at 60 / 60. */
Test(bound, two_ranks_hand_checked)
{
    static const int64_t tpe[] = {100, 20};
    tsim_record rec;
    record_from_totals(&rec, 2, 2, tpe);
    for (int solver = 0; solver < 2; solver++) {
        bound_rig g;
        bound_start(&g, 2, 2, 1, 1, 3.0, true, (tsim_lp_solver)solver);
        cr_assert_float_eq(min_cost(&g, &rec, 0.0), 3.0, 1e-9);
        cr_assert_float_eq(min_cost(&g, &rec, 2.0 / 3.0), 0.0, 1e-12);
        cr_assert_float_eq(min_rho(&g, &rec, 0.0), 2.0 / 3.0, 1e-9);
        cr_assert_float_eq(min_rho(&g, &rec, 2.9), 2.0 / 3.0, 1e-9);
        cr_assert_float_eq(min_rho(&g, &rec, 3.0), 0.0, 1e-12);
        tsim_bound_result r;
        /* mu 0.1: the replica (0 + 0.3) beats none (2/3). mu 0.3: none. */
        cr_assert_float_eq(objective_bound(&g, &rec, 0.1, &r), 0.3, 1e-9);
        cr_assert_eq(r.status, TSIM_BOUND_DONE);
        cr_assert_float_eq(objective_bound(&g, &rec, 0.3, &r), 2.0 / 3.0, 1e-9);
        bound_stop(&g);
    }
    tsim_record_free(&rec);
}

/* Integer tokens: total 7 on R = 2 cannot do better than 4 / 3.5; the
 * rounding bound. tpe = [7, 0], K = 1, one node. */
Test(bound, integer_tokens_round_the_max_load_up)
{
    static const int64_t tpe[] = {7, 0};
    tsim_record rec;
    record_from_totals(&rec, 2, 2, tpe);
    bound_rig g;
    bound_start(&g, 2, 2, 2, 1, 3.0, true, TSIM_LP_CLP);
    cr_assert_float_eq(min_rho(&g, &rec, 10.0), 0.5 / 3.5, 1e-12);
    cr_assert_float_eq(min_cost(&g, &rec, 0.5 / 3.5), 1.0, 1e-9);
    cr_assert(isinf(min_cost(&g, &rec, 0.0)));
    bound_stop(&g);
    bound_start(&g, 2, 2, 2, 1, 3.0, false, TSIM_LP_CLP);
    cr_assert_float_eq(min_rho(&g, &rec, 10.0), 0.0, 1e-9);
    cr_assert_float_eq(min_cost(&g, &rec, 0.0), 1.0, 1e-9);
    bound_stop(&g);
    tsim_record_free(&rec);
}

/* K = 0: nothing can move; the bounds are the native placement's. */
Test(bound, no_slots_and_empty_records)
{
    static const int64_t hot[] = {90, 10, 0, 0};
    static const int64_t zero[] = {0, 0, 0, 0};
    tsim_record rec;
    record_from_totals(&rec, 2, 4, hot);
    bound_rig g;
    bound_start(&g, 2, 4, 2, 0, 3.0, true, TSIM_LP_CLP);
    cr_assert_float_eq(min_rho(&g, &rec, 100.0), 1.0, 1e-12);
    cr_assert(isinf(min_cost(&g, &rec, 0.5)));
    tsim_bound_result r;
    cr_assert_float_eq(objective_bound(&g, &rec, 0.01, &r), 1.0, 1e-12);
    bound_stop(&g);
    tsim_record_free(&rec);
    record_from_totals(&rec, 2, 4, zero);
    bound_start(&g, 2, 4, 2, 2, 3.0, true, TSIM_LP_CLP);
    cr_assert_float_eq(min_rho(&g, &rec, 0.0), 0.0, 1e-12);
    cr_assert_float_eq(min_cost(&g, &rec, 0.0), 0.0, 1e-12);
    cr_assert_float_eq(objective_bound(&g, &rec, 0.01, &r), 0.0, 1e-12);
    cr_assert_eq(r.status, TSIM_BOUND_EXACT);
    bound_stop(&g);
    tsim_record_free(&rec);
}

Test(bound, bad_input_is_an_error_never_a_crash)
{
    static const int64_t tpe[] = {10, 20, 30, 40};
    tsim_record rec;
    record_from_totals(&rec, 2, 4, tpe);
    bound_rig g;
    bound_start(&g, 4, 4, 2, 1, 3.0, true, TSIM_LP_CLP);
    tsim_error err = {0};
    tsim_bound_result r;
    cr_assert_eq(tsim_bound_min_rho(g.b, &rec, 1.0, &r, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "2 x 4") != NULL, "%s", err.msg);
    bound_stop(&g);
    bound_start(&g, 2, 4, 2, 1, 3.0, true, TSIM_LP_CLP);
    cr_assert_eq(tsim_bound_min_rho(g.b, &rec, -1.0, &r, &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_bound_min_rho(g.b, &rec, NAN, &r, &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_bound_objective(g.b, &rec, -0.5, &r, &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_bound_min_cost(g.b, &rec, INFINITY, &r, &err), TSIM_E_INPUT);
    bound_stop(&g);
    tsim_bound_options o;
    tsim_bound_options_default(&o);
    o.lambda = -1.0;
    tsim_topology topo;
    cr_assert_eq(tsim_topology_init(&topo, 2, 4, 2, 1, NULL, &err), 0);
    tsim_bounder *b = NULL;
    cr_assert_eq(tsim_bounder_new(&b, &topo, &o, &err), TSIM_E_INPUT);
    cr_assert(b == NULL);
    tsim_topology_free(&topo);
    tsim_record_free(&rec);
}

/* ---- validity against `optimal` and every in-model planner ---- */

/* Planners inside the bounds' model: slot-limited, homes fixed. (LLEP and
 * FasterMoE have no slot limit; EPLB re-homes experts.) */
static const char *const in_model[] = {"none", "taot", "echo", "lplb", "frontier", "optimal"};
enum { NPLANNER = sizeof in_model / sizeof in_model[0] };

typedef struct {
    tsim_topology topo;
    tsim_planner p;
    tsim_plan plan;
    tsim_evaluator ev;
    tsim_metrics m;
} rig;

/* False when the planner refuses the shape (LPLB needs a torus of ranks):
 * only LPLB may. */
static bool rig_start(rig *g, const char *name, const tsim_random_shape *s, double mu)
{
    tsim_error err = {0};
    memset(g, 0, sizeof *g);
    cr_assert_eq(tsim_topology_init(&g->topo, s->ranks, s->experts, s->ranks_per_node, s->slots, NULL, &err), 0);
    g->p.desc = tsim_planner_find(name);
    cr_assert(g->p.desc != NULL, "planner %s is not registered", name);
    snprintf(g->p.label, sizeof g->p.label, "%s", name);
    tsim_test_defaults(&g->p);
    if (strcmp(name, "optimal") == 0) {
        TSIM_OWN(g->p, optimal)->mu = mu;
        TSIM_OWN(g->p, optimal)->node_limit = 1000000;
    }
    if (tsim_planner_start(&g->p, &g->topo, &err) != 0) {
        cr_assert(strcmp(name, "lplb") == 0, "%s: %s", name, err.msg);
        tsim_topology_free(&g->topo);
        return false;
    }
    cr_assert_eq(tsim_plan_init(&g->plan, s->ranks, s->ranks * s->slots, &err), 0);
    cr_assert_eq(tsim_evaluator_init(&g->ev, &g->topo, &err), 0);
    return true;
}

/* Plans and evaluates with lambda_eval = lambda_plan. */
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

/* The check every bound must pass: never above what a plan in the model
 * reaches. Returns false and names the first value it exceeds. */
static bool bound_holds(double bound, const double *reached, int n, char *why, size_t why_len)
{
    for (int i = 0; i < n; i++)
        if (bound > reached[i] + 1e-7 * (1.0 + fabs(reached[i]))) {
            snprintf(why, why_len, "bound %.12g above %.12g (value %d)", bound, reached[i], i);
            return false;
        }
    return true;
}

/* One random record: the objective bounds against `optimal`'s proven MIP
 * optimum (fractional tokens, as its MIP) and against every in-model plan
 * (integer tokens, as the evaluator), and the frontier bounds against every
 * plan's (weighted, rho_after). Wrong bounds must fail the same check. */
typedef struct {
    int records, plans, proven, beats_trivial, wrong_caught, wrong_tried;
    double gap_sum, gap_max;
    int tight; /* bound within 1e-6 of the optimum */
    int trivial_at_proven; /* proven records where the bound is the trivial one */
} tally;

static void check_record(const tsim_random_shape *s, const tsim_record *rec, double mu, tally *t)
{
    char why[256];
    rig planners[NPLANNER];
    bool ran[NPLANNER];
    double obj[NPLANNER], weighted[NPLANNER], rho[NPLANNER];
    for (int i = 0; i < NPLANNER; i++) {
        ran[i] = rig_start(&planners[i], in_model[i], s, mu);
        if (!ran[i]) {
            /* Out of the comparison: the values of `none` (always valid). */
            obj[i] = obj[0], weighted[i] = weighted[0], rho[i] = rho[0];
            continue;
        }
        t->plans++;
        rig_plan(&planners[i], rec);
        obj[i] = planners[i].m.v[TSIM_M_RHO_AFTER] + mu * planners[i].m.v[TSIM_M_WEIGHTED];
        weighted[i] = planners[i].m.v[TSIM_M_WEIGHTED];
        rho[i] = planners[i].m.v[TSIM_M_RHO_AFTER];
    }
    tsim_optimal_stats st;
    tsim_optimal_stats_get(planners[NPLANNER - 1].p.state, &st);
    t->records++;

    bound_rig frac, whole;
    bound_start(&frac, s->ranks, s->experts, s->ranks_per_node, s->slots, 3.0, false, TSIM_LP_CLP);
    bound_start(&whole, s->ranks, s->experts, s->ranks_per_node, s->slots, 3.0, true, TSIM_LP_CLP);
    tsim_bound_result r;
    if (st.last_status == TSIM_OPTIMAL_SOLVED) {
        double b = objective_bound(&frac, rec, mu, &r);
        cr_assert(bound_holds(b, &st.last_objective, 1, why, sizeof why), "record %lld, proven optimum: %s",
                  (long long)rec->index, why);
        double wrong = st.last_objective + 1e-5;
        t->wrong_tried++;
        t->wrong_caught += !bound_holds(wrong, &st.last_objective, 1, why, sizeof why);
        double gap = st.last_objective - b;
        t->gap_sum += gap;
        t->gap_max = gap > t->gap_max ? gap : t->gap_max;
        t->tight += gap <= 1e-6;
        t->trivial_at_proven += b <= r.trivial + 1e-12;
        t->proven++;
    }
    double b = objective_bound(&whole, rec, mu, &r);
    cr_assert(bound_holds(b, obj, NPLANNER, why, sizeof why), "record %lld (R %d E %d K %d rpn %d mu %g): %s",
              (long long)rec->index, s->ranks, s->experts, s->slots, s->ranks_per_node, mu, why);
    t->beats_trivial += b > r.trivial + 1e-12;
    /* A bound a hair above the best plan's objective must fail. */
    double best = obj[0];
    for (int i = 1; i < NPLANNER; i++)
        best = obj[i] < best ? obj[i] : best;
    t->wrong_tried++;
    t->wrong_caught += !bound_holds(best + 1e-5, obj, NPLANNER, why, sizeof why);

    /* The frontier at each plan's own cost and imbalance. */
    for (int i = 0; i < NPLANNER; i++) {
        double lo_rho = min_rho(&whole, rec, weighted[i]);
        cr_assert(bound_holds(lo_rho, &rho[i], 1, why, sizeof why), "record %lld: %s at weighted %g: %s",
                  (long long)rec->index, in_model[i], weighted[i], why);
        double lo_cost = min_cost(&whole, rec, rho[i]);
        cr_assert(bound_holds(lo_cost, &weighted[i], 1, why, sizeof why), "record %lld: %s at rho %g: %s",
                  (long long)rec->index, in_model[i], rho[i], why);
    }
    bound_stop(&frac);
    bound_stop(&whole);
    for (int i = 0; i < NPLANNER; i++)
        if (ran[i])
            rig_stop(&planners[i]);
}

Test(bound, never_above_the_optimum_nor_any_in_model_plan)
{
    static const double mus[] = {0.0, 0.001, 0.01, 0.05};
    static const int rpns[] = {1, 2, 4};
    uint64_t seed = 0xb0a5d23;
    tally t = {0};
    for (int trial = 0; trial < 120; trial++) {
        const int R = (int)tsim_rand_range(&seed, 2, 4);
        const int E = R * (int)tsim_rand_range(&seed, 1, 8 / R);
        tsim_random_shape s = {R, E, (int)tsim_rand_range(&seed, 1, 2), rpns[tsim_rand_range(&seed, 0, 2)]};
        const double mu = mus[tsim_rand_range(&seed, 0, 3)];
        tsim_record rec;
        tsim_random_record(&seed, &s, &rec);
        rec.index = trial;
        with_room_rows = trial % 2 == 1;
        check_record(&s, &rec, mu, &t);
        tsim_record_free(&rec);
    }
    fprintf(stderr, "bound: %d records, %d plans, %d with a proven optimum: gap optimum - bound mean %.6f, max %.6f, "
                    "tight on %d, trivial on %d; integer-token objective bound above the trivial one on %d\n",
            t.records, t.plans, t.proven, t.proven ? t.gap_sum / t.proven : 0.0, t.gap_max, t.tight,
            t.trivial_at_proven, t.beats_trivial);
    /* Not vacuous: the check rejects every wrong bound, and the bound says
     * more than rounding on a good share of the records. */
    cr_assert_eq(t.wrong_caught, t.wrong_tried, "a wrong bound passed the check");
    cr_assert(t.proven >= 60, "only %d proven optima", t.proven);
    cr_assert(t.beats_trivial >= t.records / 4, "the bound beats the trivial one on only %d of %d records",
              t.beats_trivial, t.records);
}

/* ---- the frontier ---- */

Test(bound, more_budget_never_raises_the_least_imbalance)
{
    static const double budgets[] = {0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24};
    enum { NB = sizeof budgets / sizeof budgets[0] };
    uint64_t seed = 0xf4011e7;
    int moved = 0;
    for (int trial = 0; trial < 40; trial++) {
        tsim_random_shape s;
        tsim_random_shape_draw(&seed, 8, &s);
        tsim_record rec;
        tsim_random_record(&seed, &s, &rec);
        for (int whole = 0; whole < 2; whole++) {
            bound_rig g;
            bound_start(&g, s.ranks, s.experts, s.ranks_per_node, s.slots, 3.0, whole, TSIM_LP_CLP);
            double prev = INFINITY;
            for (int i = 0; i < NB; i++) {
                double v = min_rho(&g, &rec, budgets[i]);
                cr_assert(v <= prev + 1e-12, "trial %d: budget %g gives rho >= %.12g, budget %g gave %.12g", trial,
                          budgets[i], v, budgets[i - 1], prev);
                moved += v < prev - 1e-12 && i > 0;
                prev = v;
            }
            /* And the other direction: a looser target never costs more. */
            double prev_cost = INFINITY;
            for (double rho = 0.0; rho <= 1.0; rho += 0.05) {
                double c = min_cost(&g, &rec, rho);
                cr_assert(c <= prev_cost + 1e-9, "trial %d: rho %g costs >= %g after %g", trial, rho, c, prev_cost);
                prev_cost = c;
            }
            bound_stop(&g);
        }
        tsim_record_free(&rec);
    }
    cr_assert(moved > 10, "the frontier moved only %d times: the test shows nothing", moved);
}

/* CLP and GLPK solve the same LPs: the bounds agree. */
Test(bound, clp_and_glpk_agree)
{
    uint64_t seed = 0xc1f9;
    for (int trial = 0; trial < 20; trial++) {
        tsim_random_shape s;
        tsim_random_shape_draw(&seed, 8, &s);
        tsim_record rec;
        tsim_random_record(&seed, &s, &rec);
        bound_rig a, b;
        bound_start(&a, s.ranks, s.experts, s.ranks_per_node, s.slots, 3.0, true, TSIM_LP_CLP);
        bound_start(&b, s.ranks, s.experts, s.ranks_per_node, s.slots, 3.0, true, TSIM_LP_GLPK);
        tsim_bound_result ra, rb;
        cr_assert_float_eq(objective_bound(&a, &rec, 0.01, &ra), objective_bound(&b, &rec, 0.01, &rb), 1e-7,
                           "trial %d", trial);
        cr_assert_float_eq(min_rho(&a, &rec, 4.0), min_rho(&b, &rec, 4.0), 1e-9, "trial %d", trial);
        double ca = min_cost(&a, &rec, 0.02), cb = min_cost(&b, &rec, 0.02);
        cr_assert((isinf(ca) && isinf(cb)) || fabs(ca - cb) <= 1e-7, "trial %d: clp %g, glpk %g", trial, ca, cb);
        bound_stop(&a);
        bound_stop(&b);
        tsim_record_free(&rec);
    }
}

/* The same record gives the same bound whatever was bounded before. */
Test(bound, same_record_same_bound)
{
    uint64_t seed = 0xde7e;
    tsim_random_shape s = {8, 32, 2, 4};
    tsim_record a, b;
    tsim_random_record(&seed, &s, &a);
    tsim_random_record(&seed, &s, &b);
    bound_rig g;
    bound_start(&g, 8, 32, 4, 2, 3.0, true, TSIM_LP_CLP);
    tsim_bound_result r1, r2;
    double first = objective_bound(&g, &a, 0.001, &r1);
    objective_bound(&g, &b, 0.001, &r2);
    double again = objective_bound(&g, &a, 0.001, &r2);
    cr_assert(first == again && r1.lps == r2.lps && r1.iterations == r2.iterations);
    bound_stop(&g);
    tsim_record_free(&a);
    tsim_record_free(&b);
}

/* ---- the curve (one grid per record, refined per query) ---- */

/* With room to settle, the curve's answers are the direct searches' (the
 * threshold of a monotone C is unique); with no refinement they are weaker
 * or equal, never stronger, and still monotone in the budget. */
Test(bound, curve_answers_match_the_direct_searches)
{
    static const double budgets[] = {0, 1, 2, 3, 4, 6, 9, 14};
    uint64_t seed = 0xc0ffee23;
    int differs = 0;
    for (int trial = 0; trial < 30; trial++) {
        tsim_random_shape s;
        tsim_random_shape_draw(&seed, 8, &s);
        tsim_record rec;
        tsim_random_record(&seed, &s, &rec);
        rec.index = trial;
        bound_rig g;
        bound_start(&g, s.ranks, s.experts, s.ranks_per_node, s.slots, 3.0, true, TSIM_LP_CLP);
        tsim_bound_curve c = {0};
        tsim_error err = {0};
        cr_assert_eq(tsim_bound_curve_build(g.b, &rec, 6, &c, &err), 0, "%s", err.msg);
        double prev = INFINITY;
        for (size_t i = 0; i < sizeof budgets / sizeof budgets[0]; i++) {
            tsim_bound_result fine, coarse;
            cr_assert_eq(tsim_bound_curve_min_rho(g.b, &rec, &c, budgets[i], 40, &fine, &err), 0, "%s", err.msg);
            cr_assert_eq(tsim_bound_curve_min_rho(g.b, &rec, &c, budgets[i], 0, &coarse, &err), 0, "%s", err.msg);
            double direct = min_rho(&g, &rec, budgets[i]);
            cr_assert(fabs(fine.value - direct) <= 1e-12, "trial %d budget %g: curve %.12g, direct %.12g", trial,
                      budgets[i], fine.value, direct);
            cr_assert(coarse.value <= fine.value + 1e-12 && coarse.lps == 0);
            cr_assert(coarse.value <= prev + 1e-12, "trial %d: the coarse curve rises with the budget", trial);
            differs += coarse.value < fine.value - 1e-12;
            prev = coarse.value;
        }
        for (double rho = 0.0; rho <= 0.6; rho += 0.1) {
            tsim_bound_result r;
            cr_assert_eq(tsim_bound_curve_min_cost(g.b, &rec, &c, rho, &r, &err), 0, "%s", err.msg);
            double direct = min_cost(&g, &rec, rho);
            cr_assert((isinf(direct) && isinf(r.value)) || fabs(r.value - direct) <= 1e-9,
                      "trial %d rho %g: curve %g, direct %g", trial, rho, r.value, direct);
        }
        /* A curve answers for its own record only. */
        tsim_record other = rec;
        other.index = trial + 1000;
        tsim_bound_result r;
        cr_assert_eq(tsim_bound_curve_min_rho(g.b, &other, &c, 1.0, 4, &r, &err), TSIM_E_INTERNAL);
        tsim_bound_curve_free(&c);
        bound_stop(&g);
        tsim_record_free(&rec);
    }
    cr_assert(differs > 0, "refinement never mattered: the test shows nothing");
}

/* ---- --bounds in a session: the excess metrics ---- */

#include "session.h"

/* taot, frontier and echo are in the model: excess >= 0 and equal to the
 * plan's metric minus the direct bound; llep is n/a (no slot limit). */
Test(bound, session_excess_metrics)
{
    uint64_t seed = 0x5e55b0;
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner pl[4];
    int n = 0;
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_list_parse("taot,frontier,echo,llep", &base, pl, 4, &n, &err), 0, "%s", err.msg);
    int checked = 0, positive = 0;
    for (int trial = 0; trial < 12; trial++) {
        tsim_random_shape s;
        tsim_random_shape_draw(&seed, 8, &s);
        tsim_session ses;
        cr_assert_eq(tsim_session_init(&ses, s.ranks, s.experts, s.ranks_per_node, s.slots, NULL, pl, n, 3.0, &err),
                     0, "%s", err.msg);
        cr_assert_eq(tsim_session_enable_bounds(&ses, &err), 0, "%s", err.msg);
        bound_rig g;
        bound_start(&g, s.ranks, s.experts, s.ranks_per_node, s.slots, 3.0, true, TSIM_LP_CLP);
        tsim_record rec;
        tsim_random_record(&seed, &s, &rec);
        cr_assert_eq(tsim_session_record(&ses, &rec, &err), 0, "%s", err.msg);
        for (int p = 0; p < 3; p++) {
            const tsim_series *m = ses.results[p].metrics;
            cr_assert(tsim_session_planner_metric_on(&ses, p, TSIM_M_EXCESS_IMBALANCE));
            double rho = m[TSIM_M_RHO_AFTER].values[0], w = m[TSIM_M_WEIGHTED].values[0];
            double ei = m[TSIM_M_EXCESS_IMBALANCE].values[0], ec = m[TSIM_M_EXCESS_COST].values[0];
            cr_assert(ei >= 0 && ec >= 0, "trial %d planner %d: excess %g, %g", trial, p, ei, ec);
            double lo_rho = min_rho(&g, &rec, w), lo_cost = min_cost(&g, &rec, rho);
            cr_assert(fabs(ei - fmax(0.0, rho - lo_rho)) <= 1e-9, "trial %d planner %d: %g vs %g", trial, p, ei,
                      rho - lo_rho);
            cr_assert(fabs(ec - fmax(0.0, w - lo_cost)) <= 1e-9, "trial %d planner %d: %g vs %g", trial, p, ec,
                      w - lo_cost);
            checked++;
            positive += ei > 0 || ec > 0;
        }
        cr_assert_eq(ses.bounds_fit[3], TSIM_BOUNDS_NO_SLOT_LIMIT);
        cr_assert(!tsim_session_planner_metric_on(&ses, 3, TSIM_M_EXCESS_COST));
        cr_assert(isnan(ses.results[3].metrics[TSIM_M_EXCESS_COST].values[0]));
        bound_stop(&g);
        tsim_record_free(&rec);
        tsim_session_free(&ses);
    }
    cr_assert(positive > 0, "no plan was ever off the bound in %d: the test shows nothing", checked);
}
