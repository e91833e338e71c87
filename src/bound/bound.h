/* Proven lower bounds for one record (issue 23): how good can any plan be
 * that keeps homes fixed and puts at most K guests on each rank (the
 * topology's slots), with the weighted cost sum W(home(e), g) over replicas,
 * W = 1 within a node and lambda across.
 *
 *   tsim_bound_min_cost: the least weighted cost of any plan whose rho_after
 *     is at most a target;
 *   tsim_bound_min_rho: the least rho_after of any plan whose weighted cost is
 *     at most a budget (the cost-imbalance frontier);
 *   tsim_bound_objective: the least rho_after + mu * weighted (the objective
 *     of `optimal`).
 *
 * Each value is a lower bound: no plan in the model does better. Planners
 * outside the model (no slot limit like LLEP, or re-homing experts) are not
 * bounded by it.
 *
 * How. The core is an LP, C(T): the least cost of a fractional placement
 * whose loads all stay at or below T (tokens divided by mean), with y in
 * [0, 1] a replica of e on g, f >= 0 its tokens, and these rows:
 *   link      f <= min(tpe(e), T) y  (a guest holds at most T: a tight big-M)
 *   expert    sum_g f <= tpe(e)
 *   load      load0(r) - out(r) + in(r) <= T
 *   slots     sum_e y <= K per guest
 *   shed      sum of y leaving rank h >= n_h(T), the fewest replicas that can
 *             carry h's excess load0(h) - T when each carries at most
 *             min(tpe(e), T); the same per node for the replicas crossing
 *             to other nodes, and per expert for tpe(e) > T.
 * C(T) never increases with T (every row loosens), and any plan with max
 * load <= T costs at least C(T), rounded up to the next value a + lambda b
 * (a, b whole numbers) that a cost can take. With integer tokens (the
 * evaluator's plans), loads are whole and T is a token count, so each step
 * of a search over T gains a whole token.
 *   min_rho(B): the largest T with C(T) > B is found by bisection; every plan
 *     within budget has max load above it.
 *   min_cost(rho): C at T = (1 + rho) mean.
 *   objective: a search over intervals of T: an interval [a, b] bounds every
 *     plan with max load in it by (a - 1) + mu C(b); the interval with the
 *     least bound is split, until the LP budget is spent.
 * Work is limited by counts (LP solves, simplex iterations), never by time,
 * so the same record gives the same bound on any machine. An LP cut short by
 * the iteration limit proves nothing and counts as cost 0.
 *
 * Solver: CLP by default, measured (bench/bound_timing, CPU time, K 2):
 * R 16 E 128 ep16-imb50, 8 records, the objective bound takes 1.08 s with
 * GLPK and about 0.65 s with CLP for the same values (~45 ms per LP, CLP 1.7x
 * faster on every query). Per record with CLP: R 16 0.65 s, R 32 (E 128)
 * 1.9 s, R 64 (E 256) 35 s for 21 LPs. CBC's root cuts on the same model
 * took minutes per record at R 16, so integrality is used only where it is
 * cheap: whole tokens in T and the reachable-cost rounding. */
#ifndef TSIM_BOUND_H
#define TSIM_BOUND_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "lp.h"
#include "record.h"
#include "topology.h"

typedef struct {
    double lambda;         /* cost across nodes (lambda_eval of the plans compared) */
    bool integer_tokens;   /* true: plans move whole tokens (the evaluator's); false: fractional tokens (the
                            * MIP of `optimal`) */
    tsim_lp_solver solver;
    int lp_limit;          /* LP solves per call (>= 1) */
    int iteration_limit;   /* simplex iterations per LP (0: none) */
    bool room_rows;        /* add the room rows (bound.c build_lp): measured at R = 16, E = 128, 5x the time
                            * for a bound about 10% higher, so off by default */
} tsim_bound_options;

/* CLP, integer tokens, lambda 3, 24 LPs, 200000 iterations, no room rows. */
void tsim_bound_options_default(tsim_bound_options *o);

typedef enum {
    TSIM_BOUND_EXACT = 0,   /* nothing to search: the value is the trivial one and it is exact (empty record,
                             * K = 0, or the target already met) */
    TSIM_BOUND_DONE = 1,    /* the search converged */
    TSIM_BOUND_BUDGET = 2,  /* the LP budget ran out first: still a bound, maybe a weaker one */
    TSIM_BOUND_INFEASIBLE = 3, /* min_cost only: no plan reaches the target (value INFINITY) */
} tsim_bound_status;

typedef struct {
    double value;    /* the bound */
    double trivial;  /* the trivial bound: rho from rounding alone (ceil(total / R)), cost 0 */
    tsim_bound_status status;
    int lps;         /* LPs solved */
    int lp_limited;  /* of those, cut by the iteration limit (counted as proving nothing) */
    long iterations; /* simplex iterations in all */
} tsim_bound_result;

typedef struct tsim_bounder tsim_bounder;

/* Set up for a topology (R, E, rpn, K = topo->slots, homes). */
int tsim_bounder_new(tsim_bounder **out, const tsim_topology *topo, const tsim_bound_options *opts,
                     tsim_error *err);
void tsim_bounder_free(tsim_bounder *b);

int tsim_bound_min_cost(tsim_bounder *b, const tsim_record *rec, double rho_target, tsim_bound_result *out,
                        tsim_error *err);
int tsim_bound_min_rho(tsim_bounder *b, const tsim_record *rec, double budget, tsim_bound_result *out,
                       tsim_error *err);
int tsim_bound_objective(tsim_bounder *b, const tsim_record *rec, double mu, tsim_bound_result *out,
                         tsim_error *err);

/* The frontier of one record as a curve of proven points (T, C(T)): C at a
 * grid of max loads between ceil(mean) and the native max load, denser near
 * the low end where planners land. Built once per record and slot budget,
 * then queried per plan: each query reads the grid and refines only inside
 * its own bracket with at most refine_lps LPs of its own, so a plan's
 * answer never depends on which other plans were queried. */
typedef struct {
    int n, cap;
    double *T, *C;       /* [cap] ascending T (tokens), C(T) rounded to a reachable cost */
    double mean, lmin, lmax;
    int64_t record_index; /* the record the curve is for (queries check it) */
    int lps;             /* LPs the grid took */
} tsim_bound_curve;

void tsim_bound_curve_free(tsim_bound_curve *c);
/* C at `points` max loads (>= 2) of rec. */
int tsim_bound_curve_build(tsim_bounder *b, const tsim_record *rec, int points, tsim_bound_curve *c,
                           tsim_error *err);
/* The least rho_after of any plan of cost <= budget: the grid's bracket, then
 * bisection inside it with at most refine_lps LPs. rec must be the curve's. */
int tsim_bound_curve_min_rho(tsim_bounder *b, const tsim_record *rec, const tsim_bound_curve *c, double budget,
                             int refine_lps, tsim_bound_result *out, tsim_error *err);
/* The least cost of any plan with rho_after <= rho: one LP at the plan's own
 * max load (a grid point when one is there). */
int tsim_bound_curve_min_cost(tsim_bounder *b, const tsim_record *rec, const tsim_bound_curve *c, double rho,
                              tsim_bound_result *out, tsim_error *err);

/* The least value a + lambda * b (a, b >= 0 whole) at or above x: the costs a
 * plan can have. */
double tsim_bound_round_cost(double x, double lambda);

#endif
