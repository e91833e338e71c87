/* `optimal` on its two MIP solvers (issue 23): the mip.h backends on models
 * with a known answer, CBC proving the same optimum as GLPK on random small
 * records, and a search stopped at its node budget reporting its incumbent,
 * a proven bound at or below it (and below the true optimum), and the gap
 * between them on the plan that replay counts. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "coin.h"
#include "evaluate.h"
#include "mip.h"
#include "optimal.h"
#include "planner.h"
#include "random_records.h"
#include "registry.h"
#include "test_options.h"

/* ---- the mip.h backends ---- */

/* max 5a + 4b + 3c subject to 2a + 3b + c <= 5, 4a + b + 2c <= 11,
 * 3a + 4b + 2c <= 8, all whole and >= 0: the optimum is 13 (a 2, c 1), the
 * LP relaxation's 13 too, so it is written as min -(...). */
static void small_model(tsim_lp *lp, bool *integer)
{
    tsim_error err = {0};
    tsim_lp_init(lp);
    cr_assert_eq(tsim_lp_reserve(lp, 3, 3, 9, &err), 0);
    tsim_lp_add_row(lp, -HUGE_VAL, 5.0);
    tsim_lp_add_row(lp, -HUGE_VAL, 11.0);
    tsim_lp_add_row(lp, -HUGE_VAL, 8.0);
    static const int rows[] = {0, 1, 2};
    static const double a[] = {2, 4, 3}, b[] = {3, 1, 4}, c[] = {1, 2, 2};
    tsim_lp_add_col(lp, -5.0, 0.0, HUGE_VAL, 3, rows, a);
    tsim_lp_add_col(lp, -4.0, 0.0, HUGE_VAL, 3, rows, b);
    tsim_lp_add_col(lp, -3.0, 0.0, HUGE_VAL, 3, rows, c);
    integer[0] = integer[1] = integer[2] = true;
}

Test(mip, both_solvers_prove_a_known_optimum)
{
    static const tsim_mip_solver solvers[] = {TSIM_MIP_CBC, TSIM_MIP_GLPK};
    for (int k = 0; k < 2; k++) {
        tsim_lp lp;
        bool integer[3];
        double x[3];
        small_model(&lp, integer);
        tsim_mip_result r;
        tsim_error err = {0};
        cr_assert_eq(tsim_mip_solve(&lp, integer, solvers[k], 100, x, &r, &err), 0, "%s", err.msg);
        const char *name = tsim_mip_solver_name(solvers[k]);
        cr_assert_eq(r.status, TSIM_MIP_OPTIMAL, "%s: status %d", name, r.status);
        cr_assert_float_eq(r.incumbent, -13.0, 1e-9, "%s: %g", name, r.incumbent);
        cr_assert_float_eq(r.bound, r.incumbent, 1e-12);
        cr_assert_eq(tsim_mip_gap(&r), 0.0);
        cr_assert_float_eq(5 * x[0] + 4 * x[1] + 3 * x[2], 13.0, 1e-9, "%s", name);
        tsim_lp_free(&lp);
    }
}

Test(mip, both_solvers_prove_infeasibility)
{
    static const tsim_mip_solver solvers[] = {TSIM_MIP_CBC, TSIM_MIP_GLPK};
    for (int k = 0; k < 2; k++) {
        /* 2x = 1 with x whole. */
        tsim_lp lp;
        tsim_error err = {0};
        tsim_lp_init(&lp);
        cr_assert_eq(tsim_lp_reserve(&lp, 1, 1, 1, &err), 0);
        tsim_lp_add_row(&lp, 1.0, 1.0);
        static const int row[] = {0};
        static const double two[] = {2.0};
        tsim_lp_add_col(&lp, 1.0, 0.0, 10.0, 1, row, two);
        bool integer[] = {true};
        double x[1];
        tsim_mip_result r;
        cr_assert_eq(tsim_mip_solve(&lp, integer, solvers[k], 100, x, &r, &err), 0, "%s", err.msg);
        cr_assert_eq(r.status, TSIM_MIP_INFEASIBLE, "%s: status %d", tsim_mip_solver_name(solvers[k]), r.status);
        cr_assert(isinf(tsim_mip_gap(&r)));
        tsim_lp_free(&lp);
    }
}

/* CBC and CLP are loaded at the first solve (coin.h): both tables load
 * here, and a library or a function that is not there is a clear error,
 * not a crash. */
Test(coin, loads_cbc_and_clp_and_names_what_is_missing)
{
    tsim_error err = {0};
    const tsim_cbc_api *cbc = tsim_coin_cbc(&err);
    cr_assert_not_null(cbc, "%s", err.msg);
    cr_assert(cbc->newModel && cbc->secondaryStatus, "every CBC function resolved");
    const tsim_clp_api *clp = tsim_coin_clp(&err);
    cr_assert_not_null(clp, "%s", err.msg);
    cr_assert(clp->newModel && clp->objectiveValue, "every CLP function resolved");
    cr_assert_eq(tsim_coin_cbc(&err), cbc, "loaded once");

    void (*fns[2])(void);
    static const char *const absent[] = {"libtaotsim-no-such-solver.so.9"};
    static const char *const names[] = {"Cbc_newModel", "Cbc_solve"};
    memset(&err, 0, sizeof err);
    cr_assert_eq(tsim_coin_load("CBC", absent, 1, names, 2, fns, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "CBC is needed here but could not be loaded") &&
                  strstr(err.msg, "libtaotsim-no-such-solver.so.9"),
              "%s", err.msg);

    static const char *const libc[] = {"libc.so.6"};
    static const char *const wrong[] = {"malloc", "Cbc_newModel"};
    memset(&err, 0, sizeof err);
    cr_assert_eq(tsim_coin_load("CBC", libc, 1, wrong, 2, fns, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "libc.so.6 has no function Cbc_newModel"), "%s", err.msg);
}

Test(mip, refuses_a_node_limit_below_one)
{
    tsim_lp lp;
    bool integer[3];
    double x[3];
    small_model(&lp, integer);
    tsim_mip_result r;
    tsim_error err = {0};
    cr_assert_eq(tsim_mip_solve(&lp, integer, TSIM_MIP_CBC, 0, x, &r, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "node limit") != NULL, "%s", err.msg);
    tsim_lp_free(&lp);
}

/* ---- optimal on both solvers ---- */

typedef struct {
    tsim_topology topo;
    tsim_planner p;
    tsim_plan plan;
    tsim_evaluator ev;
    tsim_metrics m;
} rig;

static void rig_start(rig *g, int R, int E, int rpn, int K, double mu, int solver, int node_limit)
{
    tsim_error err = {0};
    memset(g, 0, sizeof *g);
    cr_assert_eq(tsim_topology_init(&g->topo, R, E, rpn, K, NULL, &err), 0, "%s", err.msg);
    g->p.desc = tsim_planner_find("optimal");
    cr_assert(g->p.desc != NULL);
    snprintf(g->p.label, sizeof g->p.label, "optimal");
    tsim_test_defaults(&g->p);
    TSIM_OWN(g->p, optimal)->mu = mu;
    TSIM_OWN(g->p, optimal)->node_limit = node_limit;
    TSIM_OWN(g->p, optimal)->solver = solver;
    cr_assert_eq(tsim_planner_start(&g->p, &g->topo, &err), 0, "%s", err.msg);
    cr_assert_eq(tsim_plan_init(&g->plan, R, R * (K > 0 ? K : 1), &err), 0);
    cr_assert_eq(tsim_evaluator_init(&g->ev, &g->topo, &err), 0);
}

static tsim_optimal_stats rig_plan(rig *g, const tsim_record *rec)
{
    tsim_error err = {0};
    cr_assert_eq(g->p.desc->plan(g->p.state, rec, &g->plan, &err), 0, "plan: %s", err.msg);
    cr_assert_eq(tsim_evaluate(&g->ev, rec, &g->plan, g->p.common.lambda_plan, "optimal", &g->m, &err), 0,
                 "evaluate: %s", err.msg);
    tsim_optimal_stats st;
    tsim_optimal_stats_get(g->p.state, &st);
    return st;
}

static void rig_stop(rig *g)
{
    tsim_evaluator_free(&g->ev);
    tsim_plan_free(&g->plan);
    tsim_planner_stop(&g->p);
    tsim_topology_free(&g->topo);
}

/* Random records R 2..8: where both solvers prove their optimum, the optima
 * agree (the plans may differ: ties), and both plans are valid. CBC must
 * prove at least as many as GLPK within the same node budget. */
Test(optimal_solvers, cbc_proves_the_same_optimum_as_glpk, .timeout = 900)
{
    static const double mus[] = {0.0, 0.001, 0.01};
    uint64_t seed = 0x5eed2301;
    int both = 0, cbc_proved = 0, glpk_proved = 0;
    for (int trial = 0; trial < 60; trial++) {
        static const int Rs[] = {2, 3, 4, 4, 6, 8};
        const int R = Rs[tsim_rand_range(&seed, 0, 5)];
        const int E = R * (int)tsim_rand_range(&seed, 1, R <= 4 ? 3 : 1);
        const int K = (int)tsim_rand_range(&seed, 1, 2), rpn = R % 2 == 0 ? 2 : 1;
        const double mu = mus[tsim_rand_range(&seed, 0, 2)];
        tsim_random_shape shape = {R, E, K, rpn};
        tsim_record rec;
        tsim_random_record(&seed, &shape, &rec);
        rig cbc, glpk;
        rig_start(&cbc, R, E, rpn, K, mu, TSIM_OPTIMAL_CBC, 2000);
        rig_start(&glpk, R, E, rpn, K, mu, TSIM_OPTIMAL_GLPK, 2000);
        tsim_optimal_stats a = rig_plan(&cbc, &rec), b = rig_plan(&glpk, &rec);
        cbc_proved += a.last_status == TSIM_OPTIMAL_SOLVED;
        glpk_proved += b.last_status == TSIM_OPTIMAL_SOLVED;
        if (a.last_status == TSIM_OPTIMAL_SOLVED && b.last_status == TSIM_OPTIMAL_SOLVED) {
            both++;
            cr_assert(fabs(a.last_objective - b.last_objective) <= 1e-6 * (1.0 + fabs(b.last_objective)),
                      "trial %d (R %d E %d K %d mu %g): CBC %.10g, GLPK %.10g", trial, R, E, K, mu,
                      a.last_objective, b.last_objective);
            cr_assert_eq(a.last_gap, 0.0);
            cr_assert_eq(cbc.plan.search, TSIM_SEARCH_PROVED);
        }
        if (a.last_status == TSIM_OPTIMAL_TRIVIAL)
            cr_assert_eq(cbc.plan.search, TSIM_SEARCH_PROVED, "a trivial record is proven by definition");
        rig_stop(&cbc);
        rig_stop(&glpk);
        tsim_record_free(&rec);
    }
    fprintf(stderr, "optimal solvers: 60 records R 2..8, 2000 nodes: CBC proved %d, GLPK %d, both %d\n", cbc_proved,
            glpk_proved, both);
    cr_assert(both >= 20, "only %d records proven by both: the check compares little", both);
    cr_assert(cbc_proved >= glpk_proved, "CBC proved %d, GLPK %d", cbc_proved, glpk_proved);
}

/* Skewed records on 4 ranks x 16 experts: a budget of a node or two stops
 * the search, a large one proves them quickly. */
static void hard_record(uint64_t *seed, tsim_record *rec)
{
    cr_assert_eq(tsim_record_alloc(rec, 4, 16, NULL), 0);
    for (int r = 0; r < 4; r++)
        for (int e = 0; e < 16; e++)
            rec->counts[r * 16 + e] = tsim_rand_range(seed, 0, 400) * (e < 3 ? 9 : 1) + (e % 5) * 37;
}

/* A search stopped at its budget reports incumbent >= bound, the gap
 * incumbent - bound (the plan carries it for replay), and the bound is a
 * true bound: at or below the optimum a large budget proves. The plan's own
 * objective is the incumbent's within integer rounding. */
static void stopped_search_case(int solver, int limit)
{
    uint64_t seed = 0x5eed2302;
    int stopped = 0;
    for (int i = 0; i < 6; i++) {
        tsim_record rec;
        hard_record(&seed, &rec);
        rig cut, full;
        rig_start(&cut, 4, 16, 2, 2, 0.001, solver, limit);
        tsim_optimal_stats st = rig_plan(&cut, &rec);
        cr_assert(st.last_status != TSIM_OPTIMAL_TRIVIAL);
        if (st.last_status == TSIM_OPTIMAL_SOLVED) {
            cr_assert_eq(cut.plan.search, TSIM_SEARCH_PROVED);
            rig_stop(&cut);
            tsim_record_free(&rec);
            continue;
        }
        cr_assert(cut.plan.notes & TSIM_NOTE_NODE_LIMIT);
        if (st.last_status == TSIM_OPTIMAL_NO_SOLUTION) {
            cr_assert_eq(cut.plan.search, TSIM_SEARCH_NO_INCUMBENT);
            cr_assert(isinf(st.last_gap) && cut.plan.count == 0);
        } else {
            stopped++;
            cr_assert_eq(cut.plan.search, TSIM_SEARCH_STOPPED);
            cr_assert(isfinite(st.last_bound), "solver %d limit %d: no bound", solver, limit);
            cr_assert(st.last_bound <= st.last_objective + 1e-12, "bound %.10g above incumbent %.10g",
                      st.last_bound, st.last_objective);
            cr_assert_float_eq(st.last_gap, st.last_objective - st.last_bound, 1e-12);
            cr_assert_eq(cut.plan.search_gap, st.last_gap);
        }
        rig_start(&full, 4, 16, 2, 2, 0.001, TSIM_OPTIMAL_GLPK, 1000000);
        tsim_optimal_stats best = rig_plan(&full, &rec);
        cr_assert_eq(best.last_status, TSIM_OPTIMAL_SOLVED, "record %d not proven", i);
        if (isfinite(st.last_bound))
            cr_assert(st.last_bound <= best.last_objective + 1e-7, "record %d: bound %.10g above the optimum %.10g",
                      i, st.last_bound, best.last_objective);
        if (st.last_status == TSIM_OPTIMAL_NODE_LIMIT)
            cr_assert(st.last_objective >= best.last_objective - 1e-7, "record %d: incumbent %.10g below the "
                      "optimum %.10g", i, st.last_objective, best.last_objective);
        rig_stop(&full);
        rig_stop(&cut);
        tsim_record_free(&rec);
    }
    cr_assert(stopped >= 1, "solver %d, %d nodes: no search stopped with an incumbent", solver, limit);
}

Test(optimal_solvers, cbc_stopped_reports_incumbent_bound_and_gap, .timeout = 900)
{
    stopped_search_case(TSIM_OPTIMAL_CBC, 1);
}

Test(optimal_solvers, glpk_stopped_reports_incumbent_bound_and_gap, .timeout = 900)
{
    stopped_search_case(TSIM_OPTIMAL_GLPK, 20);
}
