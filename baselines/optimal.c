/* `optimal` (baselines.md "Further planners"): the paper's objective, residual
 * imbalance plus mu times the weighted expert-communication cost with at most
 * K guests per rank, solved exactly as a mixed-integer program by GLPK's branch
 * and bound under a node budget. It is the yardstick for small R and E: how far
 * each heuristic is from the best plan its constraints allow.
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
 * Why this shape: the matrix depends only on the topology, and per record
 * only bounds and the E * (R - 1) link coefficients of the y columns change
 * (tpe / mean). It is still built per record, within the plan call: GLPK keeps
 * its memory in a per-thread environment, and replay -j starts an instance on
 * one thread and plans with it on others, so a problem kept in the state
 * would be used and deleted on another thread than its own, which aborts
 * GLPK ("glp_free: memory allocation error"); the calling thread's
 * environment is freed before the call returns. GLPK's presolve is on and
 * rebuilds its own working copy per record, so a record's plan never depends on
 * the records before it; GLPK is single-threaded and nothing randomised is
 * enabled, and the search is bounded by a count of subproblems rather than by
 * the clock, so the same record gives the same plan on any machine under any
 * load and at any -j (GLPK's own tm_lim is left off: a wall-clock limit made
 * the incumbent depend on how far a loaded machine got). Our own buffers are
 * allocated once in init; GLPK allocates the problem and, in glp_intopt, its
 * presolve copy and search tree per record.
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
 * Node budget (--optimal-node-limit N, per record): GLPK asks the callback to
 * select every subproblem before it processes it (GLP_ISELECT, the root
 * included); the N+1-th request terminates the search, so at most N
 * subproblems are solved. Then the best integer solution found so far is the
 * plan, and when none was found the plan is empty (no replicas: the native
 * placement, always valid). Either way the plan carries TSIM_NOTE_NODE_LIMIT,
 * and optimal.h counts both (tsim_optimal_stats_get), with the gap GLPK had
 * left and the subproblems it solved on the last record. Solver failures come
 * back as TSIM_E_INTERNAL; GLPK's terminal output is off.
 *
 * Size: init refuses E * (R - 1) > TSIM_OPTIMAL_MAX_BINARIES. Below that, the
 * big-M link makes the relaxation weak (a fractional y pays mu W f / tpe), so
 * the search is what grows: measured on one core, R = 4 and E <= 16 are proven
 * within a few hundred subproblems (milliseconds), while R = 8, E = 32 (224
 * binaries, default mu) is not proven within the default budget, and the
 * incumbent at the budget is the plan. */
#include "optimal.h"

#include <stddef.h>
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "split.h"

typedef struct {
    int R, E, K, rpn, P;    /* P = E * (R - 1) pairs */
    double mu, lambda;
    int node_limit;         /* subproblems per record */
    int32_t *home;          /* [E] */
    int32_t *pair_guest;    /* [P] guest of pair p = e * (R - 1) + j */
    int64_t *tpe;           /* [E] */
    int64_t *load0;         /* [R] */
    int64_t *moved;         /* [P] integer tokens of each pair */
    double *frac;           /* [P] fractional part left after the floor */
    int col_ind[3];         /* one y column: link row, slot row (1-based) */
    double col_val[3];
    glp_prob *lp;           /* only within a plan call (header comment) */
    tsim_split_scratch split;
    tsim_optimal_stats stats;
} optimal_state;

/* 1-based GLPK indices of the layout in the header comment. */
static int col_y(const optimal_state *s, int p) { (void)s; return p + 1; }
static int col_f(const optimal_state *s, int p) { return s->P + p + 1; }
static int col_t(const optimal_state *s) { return 2 * s->P + 1; }
static int row_link(const optimal_state *s, int p) { (void)s; return p + 1; }
static int row_expert(const optimal_state *s, int e) { return s->P + e + 1; }
static int row_load(const optimal_state *s, int r) { return s->P + s->E + r + 1; }
static int row_slots(const optimal_state *s, int g) { return s->P + s->E + s->R + g + 1; }

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
    free(s->home);
    free(s->pair_guest);
    free(s->tpe);
    free(s->load0);
    free(s->moved);
    free(s->frac);
    free(s);
}

/* Builds the constraint matrix and the objective (per record, in
 * optimal_plan's thread); load_record sets the record's bounds. */
static int build_problem(optimal_state *s, tsim_error *err)
{
    const int P = s->P, E = s->E, R = s->R;
    glp_prob *lp = glp_create_prob();
    if (!lp)
        return tsim_error_set(err, TSIM_E_INTERNAL, "optimal: GLPK could not create a problem");
    s->lp = lp;
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_rows(lp, P + E + 2 * R);
    glp_add_cols(lp, 2 * P + 1);
    for (int p = 0; p < P; p++) {
        int e = p / (R - 1), g = s->pair_guest[p];
        glp_set_col_kind(lp, col_y(s, p), GLP_BV);
        double w = s->home[e] / s->rpn == g / s->rpn ? 1.0 : s->lambda;
        glp_set_obj_coef(lp, col_y(s, p), s->mu * w);
        glp_set_col_bnds(lp, col_f(s, p), GLP_LO, 0.0, 0.0);
        glp_set_row_bnds(lp, row_link(s, p), GLP_UP, 0.0, 0.0);
    }
    glp_set_col_bnds(lp, col_t(s), GLP_LO, 0.0, 0.0);
    glp_set_obj_coef(lp, col_t(s), 1.0);
    for (int e = 0; e < E; e++)
        glp_set_row_bnds(lp, row_expert(s, e), GLP_UP, 0.0, 0.0);
    for (int r = 0; r < R; r++) {
        glp_set_row_bnds(lp, row_load(s, r), GLP_UP, 0.0, 0.0);
        glp_set_row_bnds(lp, row_slots(s, r), GLP_UP, 0.0, (double)s->K);
    }

    /* Triplets (1-based): per pair, f in link, expert, guest load and home load
     * rows, y in link (placeholder -1, set per record) and slot rows; t in
     * every load row. */
    const int nnz = 6 * P + R;
    int *ia = malloc(sizeof *ia * (size_t)(nnz + 1));
    int *ja = malloc(sizeof *ja * (size_t)(nnz + 1));
    double *ar = malloc(sizeof *ar * (size_t)(nnz + 1));
    if (!ia || !ja || !ar) {
        free(ia);
        free(ja);
        free(ar);
        return tsim_error_set(err, TSIM_E_INTERNAL, "optimal: out of memory building the MIP");
    }
    int n = 0;
#define PUT(row, col, v) (n++, ia[n] = (row), ja[n] = (col), ar[n] = (v))
    for (int p = 0; p < P; p++) {
        int e = p / (R - 1), g = s->pair_guest[p];
        PUT(row_link(s, p), col_f(s, p), 1.0);
        PUT(row_link(s, p), col_y(s, p), -1.0);
        PUT(row_expert(s, e), col_f(s, p), 1.0);
        PUT(row_load(s, g), col_f(s, p), 1.0);
        PUT(row_load(s, s->home[e]), col_f(s, p), -1.0);
        PUT(row_slots(s, g), col_y(s, p), 1.0);
    }
    for (int r = 0; r < R; r++)
        PUT(row_load(s, r), col_t(s), -1.0);
#undef PUT
    glp_load_matrix(lp, n, ia, ja, ar);
    free(ia);
    free(ja);
    free(ar);
    return TSIM_OK;
}

static int optimal_init(void **state, const tsim_topology *topo, const tsim_planner_options *opts, tsim_error *err)
{
    *state = NULL;
    const int R = topo->ranks, E = topo->experts, K = topo->slots;
    const int64_t pairs = (int64_t)E * (int64_t)(R - 1);
    if (pairs > TSIM_OPTIMAL_MAX_BINARIES)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "optimal: %d experts on %d ranks need %lld binaries (E * (R - 1)), more than the cap "
                              "of %d: the MIP yardstick is for small R and E",
                              E, R, (long long)pairs, TSIM_OPTIMAL_MAX_BINARIES);
    const tsim_optimal_options *o = &opts->optimal;
    if (!isfinite(o->mu) || o->mu < 0.0)
        return tsim_error_set(err, TSIM_E_INPUT, "optimal: --optimal-mu must be a finite number >= 0, got %g", o->mu);
    if (o->node_limit < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "optimal: --optimal-node-limit must be at least 1, got %d",
                              o->node_limit);
    if (!isfinite(opts->lambda_plan) || opts->lambda_plan < 0.0)
        return tsim_error_set(err, TSIM_E_INPUT, "optimal: lambda_plan must be a finite number >= 0, got %g",
                              opts->lambda_plan);

    optimal_state *s = calloc(1, sizeof *s);
    if (!s)
        return tsim_error_set(err, TSIM_E_INTERNAL, "optimal: out of memory");
    s->R = R;
    s->E = E;
    s->K = K;
    s->rpn = topo->ranks_per_node;
    s->P = (int)pairs;
    s->mu = o->mu;
    s->lambda = opts->lambda_plan;
    s->node_limit = o->node_limit;
    size_t np = s->P > 0 ? (size_t)s->P : 1;
    s->home = malloc(sizeof *s->home * (size_t)E);
    s->pair_guest = malloc(sizeof *s->pair_guest * np);
    s->tpe = malloc(sizeof *s->tpe * (size_t)E);
    s->load0 = malloc(sizeof *s->load0 * (size_t)R);
    s->moved = malloc(sizeof *s->moved * np);
    s->frac = malloc(sizeof *s->frac * np);
    if (!s->home || !s->pair_guest || !s->tpe || !s->load0 || !s->moved || !s->frac) {
        optimal_free(s);
        return tsim_error_set(err, TSIM_E_INTERNAL, "optimal: out of memory");
    }
    memcpy(s->home, topo->home, sizeof *s->home * (size_t)E);
    for (int e = 0, p = 0; e < E; e++)
        for (int g = 0; g < R; g++)
            if (g != s->home[e])
                s->pair_guest[p++] = g;
    int rc = tsim_split_scratch_init(&s->split, R, R * (K > 0 ? K : 1), err);
    if (rc) {
        optimal_free(s);
        return rc;
    }
    *state = s;
    return TSIM_OK;
}

static const char *intopt_error(int rc)
{
    switch (rc) {
    case GLP_EBOUND: return "inconsistent bounds";
    case GLP_EROOT: return "no optimal basis for the relaxation";
    case GLP_ENOPFS: return "the relaxation has no primal feasible solution";
    case GLP_ENODFS: return "the relaxation has no dual feasible solution";
    case GLP_EFAIL: return "solver failure";
    case GLP_EMIPGAP: return "gap tolerance reached";
    case GLP_ESTOP: return "search stopped";
    default: return "unknown error";
    }
}

/* What the branch-and-bound callback counts and keeps for one record. */
typedef struct {
    int limit;    /* subproblems the search may solve */
    int selected; /* subproblems handed out so far */
    double gap;   /* GLPK's relative gap (incumbent vs best bound) */
} search_budget;

/* Branch-and-bound callback. GLPK asks for a selection once before each
 * subproblem it processes (the root included): the request past the budget
 * stops the search, which depends only on the record, never on the clock. It
 * also keeps the gap, so a record cut short says how far from proven it may
 * be. */
static void search_callback(glp_tree *tree, void *info)
{
    search_budget *b = info;
    int reason = glp_ios_reason(tree);
    if (reason == GLP_ISELECT) {
        b->gap = glp_ios_mip_gap(tree);
        if (b->selected >= b->limit) {
            glp_ios_terminate(tree);
            return;
        }
        b->selected++;
    } else if (reason == GLP_IBINGO) {
        b->gap = glp_ios_mip_gap(tree);
    }
}

/* Sets bounds and the y link coefficients for this record (amounts / mean). */
static void load_record(optimal_state *s, double mean)
{
    glp_prob *lp = s->lp;
    const int R = s->R;
    for (int e = 0; e < s->E; e++) {
        const double cap = (double)s->tpe[e] / mean;
        glp_set_row_bnds(lp, row_expert(s, e), GLP_UP, 0.0, cap);
        for (int j = 0; j < R - 1; j++) {
            int p = e * (R - 1) + j;
            if (s->tpe[e] > 0) {
                glp_set_col_bnds(lp, col_y(s, p), GLP_DB, 0.0, 1.0);
                glp_set_col_bnds(lp, col_f(s, p), GLP_DB, 0.0, cap);
                s->col_val[1] = -cap;
            } else {
                /* Nothing to move: fix both (GLPK rejects a DB with lb == ub). */
                glp_set_col_bnds(lp, col_y(s, p), GLP_FX, 0.0, 0.0);
                glp_set_col_bnds(lp, col_f(s, p), GLP_FX, 0.0, 0.0);
                s->col_val[1] = -1.0;
            }
            s->col_ind[1] = row_link(s, p);
            s->col_ind[2] = row_slots(s, s->pair_guest[p]);
            s->col_val[2] = 1.0;
            glp_set_mat_col(lp, col_y(s, p), 2, s->col_ind, s->col_val);
        }
    }
    for (int r = 0; r < R; r++)
        glp_set_row_bnds(lp, row_load(s, r), GLP_UP, 0.0, -(double)s->load0[r] / mean);
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
        if (glp_mip_col_val(s->lp, col_y(s, p)) < 0.5)
            continue;
        double f = glp_mip_col_val(s->lp, col_f(s, p)) * mean;
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

static int optimal_solve(optimal_state *s, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
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
    st->last_objective = st->last_max_load = st->last_cost = st->last_gap = 0.0;
    st->last_nodes = 0;

    tsim_record_expert_totals(rec, s->tpe);
    int64_t total = 0;
    for (int r = 0; r < R; r++)
        s->load0[r] = 0;
    for (int e = 0; e < E; e++)
        s->load0[s->home[e]] += s->tpe[e];
    for (int r = 0; r < R; r++)
        total += s->load0[r];
    if (total == 0 || s->P == 0 || s->K == 0)
        return TSIM_OK; /* nothing can move: the empty plan */
    const double mean = (double)total / (double)R;

    int rc = build_problem(s, err);
    if (rc)
        return rc;
    load_record(s, mean);
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_ON;
    /* tm_lim stays at GLPK's default (none): the budget below is the limit. */
    search_budget budget = {.limit = s->node_limit, .selected = 0, .gap = 0.0};
    parm.cb_func = search_callback;
    parm.cb_info = &budget;
    rc = glp_intopt(s->lp, &parm);
    int mip = glp_mip_status(s->lp);
    st->last_nodes = budget.selected;
    st->last_gap = budget.gap;
    /* Only our callback stops the search (GLP_ESTOP). */
    const bool cut = rc == GLP_ESTOP;
    if (cut)
        out->notes |= TSIM_NOTE_NODE_LIMIT; /* counted by replay and the studies */
    if (cut && mip != GLP_FEAS && mip != GLP_OPT) {
        st->no_solution++;
        st->last_status = TSIM_OPTIMAL_NO_SOLUTION;
        st->last_gap = INFINITY;
        return TSIM_OK; /* no incumbent within the budget: the empty plan */
    }
    if (rc != 0 && !cut)
        return tsim_error_set(err, TSIM_E_INTERNAL, "optimal: record %lld: GLPK branch and bound failed: %s (%d)",
                              (long long)rec->index, intopt_error(rc), rc);
    if (rc == 0 && mip != GLP_OPT)
        return tsim_error_set(err, TSIM_E_INTERNAL, "optimal: record %lld: GLPK found no integer optimum (status %d)",
                              (long long)rec->index, mip);
    if (rc == 0) {
        st->solved++;
        st->last_status = TSIM_OPTIMAL_SOLVED;
        st->last_gap = 0.0; /* proven; the callback saw the gap before the last node closed it */
    } else {
        st->node_limit++;
        st->last_status = TSIM_OPTIMAL_NODE_LIMIT;
    }
    const double t = glp_mip_col_val(s->lp, col_t(s));
    double cost = 0.0;
    for (int p = 0; p < s->P; p++)
        if (glp_mip_col_val(s->lp, col_y(s, p)) >= 0.5)
            cost += s->home[p / (R - 1)] / s->rpn == s->pair_guest[p] / s->rpn ? 1.0 : s->lambda;
    st->last_max_load = t * mean;
    st->last_cost = cost;
    st->last_objective = (t - 1.0) + s->mu * cost;

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
    rc = tsim_split_plan(rec, s->tpe, s->K, out, &s->split, err);
    if (rc)
        return rc;
    tsim_plan_drop_empty(out);
    return TSIM_OK;
}

/* The problem lives within this call, on the calling thread (header comment). */
static int optimal_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    optimal_state *s = state;
    glp_term_out(GLP_OFF);
    int rc = optimal_solve(s, rec, out, err);
    if (s->lp)
        glp_delete_prob(s->lp);
    s->lp = NULL;
    glp_free_env();
    return rc;
}

void tsim_optimal_stats_get(const void *state, tsim_optimal_stats *out)
{
    const optimal_state *s = state;
    *out = s->stats;
}

/* --optimal-* options: parsed, defaulted and listed in --help from here. */
static const tsim_option_spec optimal_options[] = {
    {.name = "optimal-mu", .type = TSIM_OPTION_DOUBLE, .offset = offsetof(tsim_planner_options, optimal.mu), .lo = 0, .hi = 1000000000.0, .arg = "X", .def = "0.001", .help = "optimal: weight of the weighted cost against imbalance"},
    {.name = "optimal-node-limit", .type = TSIM_OPTION_INT, .offset = offsetof(tsim_planner_options, optimal.node_limit), .lo = 1, .hi = 1000000000, .arg = "N", .def = "20000", .help = "optimal: branch-and-bound subproblems per record"},
    {0},
};

const tsim_planner_desc tsim_planner_optimal = {
    .name = "optimal",
    .options = optimal_options,
    .summary = "exact MIP (GLPK) of imbalance + mu * weighted cost, K guests per rank: the yardstick for small R, E",
    .init = optimal_init,
    .plan = optimal_plan,
    .free = optimal_free,
};
