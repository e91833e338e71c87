/* `optimal` (baselines.md "Further planners"): the paper's objective, residual
 * imbalance plus mu times the weighted expert-communication cost with at most
 * K guests per rank, solved exactly as a mixed-integer program by branch and
 * bound (GLPK or CBC, src/bound/mip.c) under a node budget. It is the
 * yardstick for small R and E: how far each heuristic is from the best plan
 * its constraints allow.
 *
 * The MIP, for every expert e and guest rank g != home(e) (a "pair"), with all
 * token amounts divided by mean = sum_r load0(r) / R so that coefficients stay
 * near 1 whatever the record's scale (traces reach 2^40 tokens):
 *   y[e][g] in {0,1}   a replica of e on g
 *   f[e][g] >= 0       tokens of e computed on g (continuous, / mean)
 *   t >= 0             the largest load (/ mean)
 *   link    f[e][g] - tpe[e] y[e][g] <= 0           no tokens without a replica
 *   expert  sum_g f[e][g] <= tpe[e]                   never more than e has
 *   load(r) sum_{e: g=r} f[e][r] - sum_{e home r} sum_g f[e][g] - t <= -load0(r)
 *   slots   sum_e y[e][g] <= K
 *   minimize t + mu * sum W(home(e), g) y[e][g],  W = 1 within a node, lambda_plan across.
 * t - 1 is the residual imbalance (max - mean) / mean, so the objective is the
 * paper's up to the constant 1, and mu keeps its meaning: weighted-cost units
 * traded for one unit of imbalance, the same scale as rho_after + mu * weighted
 * from the evaluator. Which source ranks send the tokens does not change any
 * load, so it is left to the shared split (taot.md section 3) afterwards.
 *
 * Why this shape: the matrix depends only on the topology; per record only
 * bounds and the E * (R - 1) link coefficients of the y columns change
 * (tpe / mean). The model is rebuilt in place per record in our own
 * tsim_lp (allocated once in init) and handed to src/bound/mip.c, which
 * loads it into a fresh solver problem each time: a record's plan never
 * depends on the records before it, and no solver object outlives a call or
 * crosses threads (GLPK keeps per-thread memory; CBC's driver is serialised
 * there). Both solvers are single-threaded, nothing randomised is seeded
 * from the clock, and the search is bounded by a count of nodes rather than
 * by time, so the same record gives the same plan on any machine under any
 * load and at any -j.
 *
 * Integer tokens: the MIP's f are fractional. Per expert, each replica first
 * gets floor(f) tokens, then the total moved is restored to round(sum_g f)
 * (never more than tpe) by giving one more token to the replicas with the
 * largest fractional parts (ties: lower guest rank). The expert's total moved
 * thus matches the MIP within half a token, and each replica is within one
 * token of its f; the max load can exceed t by a few tokens (at most K on a
 * guest, half a token per home expert on a home rank). Replicas left with 0
 * tokens are dropped (a dynamic planner), the rest take their guest's slots
 * 0, 1, ... in increasing expert order, and planned = the integer count.
 *
 * Node budget (--optimal-node-limit N, per record) and solver
 * (--optimal-solver glpk|cbc): GLPK counts subproblems (the N+1-th selection
 * ends the search), CBC its own nodes. Where the budget stops the search,
 * the best integer solution found so far is the plan, and when none was
 * found the plan is empty (no replicas: the native placement, always
 * valid). Either way the plan carries TSIM_NOTE_NODE_LIMIT and its search
 * outcome (tsim_plan.search, with the gap incumbent - proven bound), which
 * replay sums per planner; optimal.h's stats keep the last record's
 * incumbent, bound, gap and nodes. GLPK is the default: measured per record
 * it is 15 to 200 times faster for the same plans, while CBC proves a few
 * more records per node and leaves a smaller gap (docs/planners.md).
 *
 * Size: init refuses E * (R - 1) > TSIM_OPTIMAL_MAX_BINARIES. Below that, the
 * big-M link makes the relaxation weak (a fractional y pays mu W f / tpe), so
 * the search is what grows: measured on one core, R = 4 and E <= 16 are proven
 * within a few hundred subproblems (milliseconds), while R = 8, E = 32 (224
 * binaries, default mu) is not proven within the default budget, and the
 * incumbent at the budget is the plan. */
#include "optimal.h"

#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mip.h"
#include "split.h"

typedef struct {
    int R, E, K, rpn, P;    /* P = E * (R - 1) pairs */
    double mu, lambda;
    int node_limit;         /* nodes per record */
    tsim_mip_solver solver;
    int32_t *home;          /* [E] */
    int32_t *pair_guest;    /* [P] guest of pair p = e * (R - 1) + j */
    int64_t *tpe;           /* [E] */
    int64_t *load0;         /* [R] */
    int64_t *moved;         /* [P] integer tokens of each pair */
    double *frac;           /* [P] fractional part left after the floor */
    tsim_lp lp;             /* the record's MIP, rebuilt in place per record */
    bool *integer;          /* [2P + 1] which columns are integer (the y) */
    double *x;              /* [2P + 1] the incumbent */
    int *t_rows;            /* [R] the t column's rows and values */
    double *t_vals;
    tsim_split_scratch split;
    tsim_optimal_stats stats;
} optimal_state;

/* 0-based indices of the layout in the header comment. */
static int col_y(const optimal_state *s, int p) { (void)s; return p; }
static int col_f(const optimal_state *s, int p) { return s->P + p; }
static int col_t(const optimal_state *s) { return 2 * s->P; }
static int row_link(const optimal_state *s, int p) { (void)s; return p; }
static int row_expert(const optimal_state *s, int e) { return s->P + e; }
static int row_load(const optimal_state *s, int r) { return s->P + s->E + r; }
static int row_slots(const optimal_state *s, int g) { return s->P + s->E + s->R + g; }

static int pair_of(const optimal_state *s, int e, int g)
{
    int h = s->home[e];
    return e * (s->R - 1) + (g < h ? g : g - 1);
}

static void optimal_free(void *state)
{
    optimal_state *s = state;
    if (!s)
        return;
    tsim_split_scratch_free(&s->split);
    tsim_lp_free(&s->lp);
    free(s->home);
    free(s->pair_guest);
    free(s->tpe);
    free(s->load0);
    free(s->moved);
    free(s->frac);
    free(s->integer);
    free(s->x);
    free(s->t_rows);
    free(s->t_vals);
    free(s);
}

/* The record's MIP (amounts / mean) into s->lp, in the layout of the header
 * comment; init reserved the memory. */
static void build_record(optimal_state *s, double mean)
{
    const int P = s->P, E = s->E, R = s->R;
    tsim_lp *lp = &s->lp;
    tsim_lp_clear(lp);
    for (int p = 0; p < P; p++)
        tsim_lp_add_row(lp, -HUGE_VAL, 0.0);
    for (int e = 0; e < E; e++)
        tsim_lp_add_row(lp, -HUGE_VAL, (double)s->tpe[e] / mean);
    for (int r = 0; r < R; r++)
        tsim_lp_add_row(lp, -HUGE_VAL, -(double)s->load0[r] / mean);
    for (int r = 0; r < R; r++)
        tsim_lp_add_row(lp, -HUGE_VAL, (double)s->K);
    int rows[4];
    double vals[4];
    for (int p = 0; p < P; p++) {
        int e = p / (R - 1), g = s->pair_guest[p];
        /* An expert with nothing to move has both its columns fixed at 0. */
        const double cap = (double)s->tpe[e] / mean, hi = s->tpe[e] > 0 ? 1.0 : 0.0;
        const double w = s->home[e] / s->rpn == g / s->rpn ? 1.0 : s->lambda;
        rows[0] = row_link(s, p), vals[0] = s->tpe[e] > 0 ? -cap : -1.0;
        rows[1] = row_slots(s, g), vals[1] = 1.0;
        tsim_lp_add_col(lp, s->mu * w, 0.0, hi, 2, rows, vals);
    }
    for (int p = 0; p < P; p++) {
        int e = p / (R - 1), g = s->pair_guest[p];
        rows[0] = row_link(s, p), vals[0] = 1.0;
        rows[1] = row_expert(s, e), vals[1] = 1.0;
        rows[2] = row_load(s, g), vals[2] = 1.0;
        rows[3] = row_load(s, s->home[e]), vals[3] = -1.0;
        tsim_lp_add_col(lp, 0.0, 0.0, (double)s->tpe[e] / mean, 4, rows, vals);
    }
    for (int r = 0; r < R; r++)
        s->t_rows[r] = row_load(s, r), s->t_vals[r] = -1.0;
    tsim_lp_add_col(lp, 1.0, 0.0, HUGE_VAL, R, s->t_rows, s->t_vals);
}

static int optimal_init(void **state, const tsim_topology *topo, const tsim_planner_common *common,
                       const void *own, tsim_error *err)
{
    *state = NULL;
    const int R = topo->ranks, E = topo->experts, K = topo->slots;
    const int64_t pairs = (int64_t)E * (int64_t)(R - 1);
    if (pairs > TSIM_OPTIMAL_MAX_BINARIES)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "optimal: %d experts on %d ranks need %lld binaries (E * (R - 1)), more than the cap "
                              "of %d: the MIP yardstick is for small R and E",
                              E, R, (long long)pairs, TSIM_OPTIMAL_MAX_BINARIES);
    const tsim_optimal_options *o = own;
    if (!isfinite(o->mu) || o->mu < 0.0)
        return tsim_error_set(err, TSIM_E_INPUT, "optimal: --optimal-mu must be a finite number >= 0, got %g", o->mu);
    if (o->node_limit < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "optimal: --optimal-node-limit must be at least 1, got %d",
                              o->node_limit);
    if (o->solver != TSIM_OPTIMAL_CBC && o->solver != TSIM_OPTIMAL_GLPK)
        return tsim_error_set(err, TSIM_E_INPUT, "optimal: --optimal-solver must be cbc or glpk");
    if (!isfinite(common->lambda_plan) || common->lambda_plan < 0.0)
        return tsim_error_set(err, TSIM_E_INPUT, "optimal: lambda_plan must be a finite number >= 0, got %g",
                              common->lambda_plan);

    optimal_state *s = calloc(1, sizeof *s);
    if (!s)
        return tsim_error_set(err, TSIM_E_INTERNAL, "optimal: out of memory");
    s->R = R;
    s->E = E;
    s->K = K;
    s->rpn = topo->ranks_per_node;
    s->P = (int)pairs;
    s->mu = o->mu;
    s->lambda = common->lambda_plan;
    s->node_limit = o->node_limit;
    s->solver = o->solver == TSIM_OPTIMAL_GLPK ? TSIM_MIP_GLPK : TSIM_MIP_CBC;
    tsim_lp_init(&s->lp);
    size_t np = s->P > 0 ? (size_t)s->P : 1, ncols = 2 * (size_t)s->P + 1;
    s->home = malloc(sizeof *s->home * (size_t)E);
    s->pair_guest = malloc(sizeof *s->pair_guest * np);
    s->tpe = malloc(sizeof *s->tpe * (size_t)E);
    s->load0 = malloc(sizeof *s->load0 * (size_t)R);
    s->moved = malloc(sizeof *s->moved * np);
    s->frac = malloc(sizeof *s->frac * np);
    s->integer = malloc(sizeof *s->integer * ncols);
    s->x = malloc(sizeof *s->x * ncols);
    s->t_rows = malloc(sizeof *s->t_rows * (size_t)R);
    s->t_vals = malloc(sizeof *s->t_vals * (size_t)R);
    if (!s->home || !s->pair_guest || !s->tpe || !s->load0 || !s->moved || !s->frac || !s->integer || !s->x ||
        !s->t_rows || !s->t_vals) {
        optimal_free(s);
        return tsim_error_set(err, TSIM_E_INTERNAL, "optimal: out of memory");
    }
    memcpy(s->home, topo->home, sizeof *s->home * (size_t)E);
    for (int e = 0, p = 0; e < E; e++)
        for (int g = 0; g < R; g++)
            if (g != s->home[e])
                s->pair_guest[p++] = g;
    for (size_t j = 0; j < ncols; j++)
        s->integer[j] = j < (size_t)s->P; /* the y columns */
    int rc = tsim_lp_reserve(&s->lp, (int)ncols, s->P + E + 2 * R, 6 * s->P + R, err);
    if (!rc)
        rc = tsim_split_scratch_init(&s->split, R, R * (K > 0 ? K : 1), err);
    if (rc) {
        optimal_free(s);
        return rc;
    }
    *state = s;
    return TSIM_OK;
}

/* Integer tokens of expert e's pairs from the MIP's f (see the header comment). */
static void round_expert(optimal_state *s, int e, double mean)
{
    const int R = s->R, first = e * (R - 1);
    const double cap = (double)s->tpe[e];
    double total = 0.0;
    int64_t floors = 0;
    for (int j = 0; j < R - 1; j++) {
        int p = first + j;
        s->moved[p] = 0;
        s->frac[p] = -1.0;
        if (s->x[col_y(s, p)] < 0.5)
            continue;
        double f = s->x[col_f(s, p)] * mean;
        f = f < 0.0 ? 0.0 : (f > cap ? cap : f);
        /* A hair above the floor so a value like 39.9999999997 counts as 40. */
        double fl = floor(f + 1e-7);
        s->moved[p] = (int64_t)fl;
        s->frac[p] = f - fl;
        total += f;
        floors += s->moved[p];
    }
    int64_t target = llround(total);
    if (target > s->tpe[e])
        target = s->tpe[e];
    /* Rounding the parts up can never be needed past the total; rounding one
     * up and clamping the others can only overshoot tpe by a hair: trim. */
    for (int j = R - 2; j >= 0 && floors > s->tpe[e]; j--) {
        int p = first + j;
        int64_t cut = floors - s->tpe[e] < s->moved[p] ? floors - s->tpe[e] : s->moved[p];
        s->moved[p] -= cut;
        floors -= cut;
    }
    for (int64_t left = target - floors; left > 0; left--) {
        int best = -1;
        for (int j = 0; j < R - 1; j++) {
            int p = first + j;
            if (s->frac[p] > 0.0 && (best < 0 || s->frac[p] > s->frac[best]))
                best = p;
        }
        if (best < 0)
            break;
        s->moved[best]++;
        s->frac[best] = 0.0;
    }
}

/* Turns the incumbent s->x into the plan (the header comment). */
static int place_incumbent(optimal_state *s, const tsim_record *rec, double mean, tsim_plan *out, tsim_error *err)
{
    const int R = s->R, E = s->E;
    for (int e = 0; e < E; e++)
        round_expert(s, e, mean);
    /* Guest-major, experts ascending: slot k is the guest's k-th replica. */
    for (int g = 0; g < R; g++) {
        int slot = 0;
        for (int e = 0; e < E; e++) {
            if (s->home[e] == g)
                continue;
            int p = pair_of(s, e, g);
            if (s->moved[p] <= 0)
                continue;
            if (slot >= s->K)
                return tsim_error_set(err, TSIM_E_INTERNAL,
                                      "optimal: record %lld: the MIP put more than K = %d replicas on rank %d",
                                      (long long)rec->index, s->K, g);
            if (tsim_plan_add(out, e, g, slot, s->moved[p]) < 0)
                return tsim_error_set(err, TSIM_E_INTERNAL, "optimal: out of memory growing the plan");
            slot++;
        }
    }
    int rc = tsim_split_plan(rec, s->tpe, s->K, out, &s->split, err);
    if (rc)
        return rc;
    tsim_plan_drop_empty(out);
    return TSIM_OK;
}

/* Records the search's outcome in the stats and on the plan; the MIP's
 * objective t + mu * cost is the paper's plus 1, so the gap is the same in
 * both (header comment). */
static void record_outcome(optimal_state *s, const tsim_mip_result *res, tsim_plan *out)
{
    tsim_optimal_stats *st = &s->stats;
    st->last_nodes = res->nodes;
    st->last_gap = tsim_mip_gap(res);
    st->last_bound = isfinite(res->bound) ? res->bound - 1.0 : -INFINITY;
    if (res->status == TSIM_MIP_OPTIMAL) {
        st->solved++;
        st->last_status = TSIM_OPTIMAL_SOLVED;
        out->search = TSIM_SEARCH_PROVED;
        return;
    }
    out->notes |= TSIM_NOTE_NODE_LIMIT; /* counted by replay and the studies */
    if (res->status == TSIM_MIP_STOPPED) {
        st->node_limit++;
        st->last_status = TSIM_OPTIMAL_NODE_LIMIT;
        out->search = TSIM_SEARCH_STOPPED;
        out->search_gap = st->last_gap;
    } else {
        st->no_solution++;
        st->last_status = TSIM_OPTIMAL_NO_SOLUTION;
        out->search = TSIM_SEARCH_NO_INCUMBENT;
    }
}

static int optimal_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    optimal_state *s = state;
    tsim_plan_reset(out);
    out->slot_limited = true;
    if (rec->ranks != s->R || rec->experts != s->E)
        return tsim_error_set(err, TSIM_E_INPUT, "optimal: record %lld is %d x %d, planner set up for %d x %d",
                              (long long)rec->index, rec->ranks, rec->experts, s->R, s->E);
    if (out->ranks != s->R)
        return tsim_error_set(err, TSIM_E_INTERNAL, "optimal: plan rows have %d ranks, expected %d", out->ranks,
                              s->R);
    const int R = s->R, E = s->E;
    tsim_optimal_stats *st = &s->stats;
    st->records++;
    st->last_status = TSIM_OPTIMAL_TRIVIAL;
    st->last_objective = st->last_max_load = st->last_cost = st->last_gap = st->last_bound = 0.0;
    st->last_nodes = 0;

    tsim_record_expert_totals(rec, s->tpe);
    int64_t total = 0;
    for (int r = 0; r < R; r++)
        s->load0[r] = 0;
    for (int e = 0; e < E; e++)
        s->load0[s->home[e]] += s->tpe[e];
    for (int r = 0; r < R; r++)
        total += s->load0[r];
    if (total == 0 || s->P == 0 || s->K == 0) {
        out->search = TSIM_SEARCH_PROVED; /* nothing can move: the empty plan is optimal */
        return TSIM_OK;
    }
    const double mean = (double)total / (double)R;

    build_record(s, mean);
    tsim_mip_result res;
    int rc = tsim_mip_solve(&s->lp, s->integer, s->solver, s->node_limit, s->x, &res, err);
    if (rc)
        return rc;
    if (res.status == TSIM_MIP_INFEASIBLE)
        return tsim_error_set(err, TSIM_E_INTERNAL, "optimal: record %lld: the MIP is infeasible (a bug: no moves "
                              "is always a plan)", (long long)rec->index);
    record_outcome(s, &res, out);
    if (res.status == TSIM_MIP_NO_INCUMBENT) {
        st->last_gap = INFINITY;
        return TSIM_OK; /* no incumbent within the budget: the empty plan */
    }
    double cost = 0.0;
    for (int p = 0; p < s->P; p++)
        if (s->x[col_y(s, p)] >= 0.5)
            cost += s->home[p / (R - 1)] / s->rpn == s->pair_guest[p] / s->rpn ? 1.0 : s->lambda;
    const double t = s->x[col_t(s)];
    st->last_max_load = t * mean;
    st->last_cost = cost;
    st->last_objective = (t - 1.0) + s->mu * cost;
    return place_incumbent(s, rec, mean, out, err);
}

void tsim_optimal_stats_get(const void *state, tsim_optimal_stats *out)
{
    const optimal_state *s = state;
    *out = s->stats;
}

/* --optimal-* options: parsed, defaulted and listed in --help from here. */
static const tsim_option_spec optimal_options[] = {
    {.name = "optimal-mu", .type = TSIM_OPTION_DOUBLE, .offset = offsetof(tsim_optimal_options, mu), .lo = 0, .hi = 1000000000.0, .arg = "X", .def = "0.001", .help = "optimal: weight of the weighted cost against imbalance"},
    {.name = "optimal-node-limit", .type = TSIM_OPTION_INT, .offset = offsetof(tsim_optimal_options, node_limit), .lo = 1, .hi = 1000000000, .arg = "N", .def = "20000", .help = "optimal: branch-and-bound nodes per record"},
    {.name = "optimal-solver", .type = TSIM_OPTION_CHOICE, .offset = offsetof(tsim_optimal_options, solver), .choices = "cbc|glpk", .arg = "cbc|glpk", .def = "glpk", .help = "optimal: the MIP solver (GLPK, measured faster per record; or COIN-OR CBC)"},
    {0},
};

const tsim_planner_desc tsim_planner_optimal = {
    .name = "optimal",
    .source = "the TAOT paper's objective (arXiv 2608.03676), solved exactly with CBC or GLPK",
    .options_size = sizeof(tsim_optimal_options),
    .cost = TSIM_COST_EXPENSIVE,
    .reads_lambda_plan = true,
    .options = optimal_options,
    .summary = "exact MIP (CBC or GLPK) of imbalance + mu * weighted cost, K guests per rank: the yardstick for small R, E",
    .init = optimal_init,
    .plan = optimal_plan,
    .free = optimal_free,
};
