/* --bounds (issue 23): the two excess metrics of every plan, from the proven
 * lower bounds of src/bound:
 *   excess_imbalance = rho_after - (least rho_after of any plan whose
 *                      weighted cost is at most this plan's);
 *   excess_cost      = weighted - (least weighted cost of any plan whose
 *                      rho_after is at most this plan's).
 * Both are >= 0 for every plan inside the bounds' model, and computed at the
 * planner's own slot budget K with the session's lambda_eval. A plan outside
 * the model (no slot limit like LLEP, or a placement that re-homes experts)
 * gets NaN and its planner is reported n/a with the reason.
 * Work is limited by LP counts, never by time: the same record gives the same
 * values on any machine and at any -j. */
#ifndef TSIM_STUDY_BOUNDS_H
#define TSIM_STUDY_BOUNDS_H

#include "error.h"
#include "evaluate.h"
#include "plan.h"
#include "record.h"
#include "topology.h"

/* LPs per plan for the least imbalance (a bisection over max loads; about
 * log2 of the native max load minus the mean, in tokens, settles it); the
 * least cost takes one more. */
#define TSIM_BOUNDS_LPS 12

/* Why a planner's excess metrics are n/a. */
typedef enum {
    TSIM_BOUNDS_IN_MODEL = 0,
    TSIM_BOUNDS_NO_SLOT_LIMIT = 1, /* LLEP, FasterMoE: K does not bound them */
    TSIM_BOUNDS_REHOMES = 2,       /* a placement moved experts: weighted omits those moves */
} tsim_bounds_fit;

/* "no slot limit", "re-homes experts" ("" in model). */
const char *tsim_bounds_fit_text(int fit);

/* Whether plan is inside the model. */
tsim_bounds_fit tsim_bounds_plan_fit(const tsim_plan *plan);

typedef struct tsim_bounds tsim_bounds;

/* For the topologies of up to n planners (their own K); lambda_eval prices
 * the cross-node replicas as the evaluator does. */
int tsim_bounds_new(tsim_bounds **out, int n, double lambda_eval, tsim_error *err);
void tsim_bounds_free(tsim_bounds *b);

/* Sets m's excess metrics for planner i's plan of rec (planned on topo, its
 * own K), from m's rho_after and weighted; NaN when the plan is outside the
 * model (*fit says why). */
int tsim_bounds_fill(tsim_bounds *b, int i, const tsim_topology *topo, const tsim_record *rec,
                     const tsim_plan *plan, tsim_metrics *m, tsim_bounds_fit *fit, tsim_error *err);



/* The frontier of a cell, for the --bounds figure: at each budget B[j], the
 * mean over the records of the least rho_after any plan of weighted cost
 * <= B[j] can reach (each record's bound read off a curve of
 * TSIM_BOUNDS_CURVE_POINTS LPs, src/bound's tsim_bound_curve). topo carries
 * the slot budget K. */
#define TSIM_BOUNDS_CURVE_POINTS 10
int tsim_bounds_cell_frontier(const tsim_record *recs, int n, const tsim_topology *topo, double lambda,
                              const double *budgets, int nb, double *rho, tsim_error *err);

#endif
