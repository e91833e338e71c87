/* Plan validation and every metric of model.md: the only place metrics are
 * computed. Exact 64-bit integer arithmetic for loads and token counts. */
#ifndef TSIM_EVALUATE_H
#define TSIM_EVALUATE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "plan.h"
#include "record.h"
#include "topology.h"

typedef enum {
    TSIM_M_RHO_BEFORE,
    TSIM_M_RHO_AFTER,
    /* mean load / max load over ranks (1 = even, 0 for an empty record): the
     * form vLLM and SGLang log, beside rho. */
    TSIM_M_BALANCEDNESS_BEFORE,
    TSIM_M_BALANCEDNESS_AFTER,
    TSIM_M_IMPROVE_PP,
    TSIM_M_INTRA,
    TSIM_M_INTER,
    TSIM_M_WEIGHTED,
    TSIM_M_OFFLOADED,
    TSIM_M_TRAFFIC_INTER_BEFORE,
    TSIM_M_TRAFFIC_INTER_AFTER,
    TSIM_M_PLAN_NS,
    TSIM_M_STEP_MS, /* step-time model estimate (only when a model is set) */
    TSIM_M_SPEEDUP, /* step time of `none` over this plan's (model) */
    /* Experts whose home' differs from the placement this planner used for
     * the layer's previous record (eplb.md 1.2): weight moves, reported beside
     * weighted, never inside it. 0 for planners that never re-home. */
    TSIM_M_REHOMED_INTRA,
    TSIM_M_REHOMED_INTER,
    /* --bounds (issue 23): rho_after minus the least rho_after any plan of
     * the same weighted cost can reach, and weighted minus the least cost of
     * any plan with the same rho_after (proven lower bounds, src/bound).
     * Filled by the session, not here; NaN for plans outside the bounds'
     * model (no slot limit, or re-homed experts). */
    TSIM_M_EXCESS_IMBALANCE,
    TSIM_M_EXCESS_COST,
    /* Capacity-limited dispatch (only with a capacity factor C > 0): tokens
     * above floor(C * mean) on a rank, summed over ranks, before and after. */
    TSIM_M_DROPPED_BEFORE,
    TSIM_M_DROPPED_AFTER,
    /* The raw terms of vLLM's balancedness (sum of means / sum of maxima,
     * over layers): the mean load over ranks and the largest load. */
    TSIM_M_LOAD_MEAN,
    TSIM_M_LOAD_MAX_BEFORE,
    TSIM_M_LOAD_MAX_AFTER,
    TSIM_M_COUNT
} tsim_metric_id;

/* Names as in the JSON schema of cli.md. */
extern const char *const tsim_metric_names[TSIM_M_COUNT];

typedef struct {
    double v[TSIM_M_COUNT];
} tsim_metrics;

typedef struct {
    const tsim_topology *topo;
    int64_t *load_before; /* [R] native loads */
    int64_t *load_after;  /* [R] loads after the last evaluated plan */
    int64_t *sent;        /* [R * E] tokens of (source, expert) sent to replicas */
    int32_t *slot_owner;  /* [R * K] expert in each guest slot, -1 free */
    int64_t *pair_keys;   /* scratch for the (guest, expert) duplicate check */
    int64_t *guest_tokens; /* [R] tokens each rank computes in its guest slots */
    int32_t *guest_intra;  /* [R] replicas each rank hosts from its own node */
    int32_t *guest_inter;  /* [R] replicas each rank hosts from other nodes */
    int32_t *natives;      /* [R] experts with home' on each rank (plans with a placement) */
    int32_t *guests;       /* [R] replicas each rank hosts (plans with a placement) */
    const int32_t *home_used; /* [E] the home' of the last evaluated plan (topo->home without a placement) */
    size_t pair_cap;
    double capacity_factor; /* C of dropped_before/_after; 0: no capacity limit (both 0) */
} tsim_evaluator;

int tsim_evaluator_init(tsim_evaluator *ev, const tsim_topology *topo, tsim_error *err);
void tsim_evaluator_free(tsim_evaluator *ev);

/* Native loads and rho_before of a record (no plan). */
void tsim_native_loads(const tsim_topology *topo, const tsim_record *rec, int64_t *load);
double tsim_imbalance(const int64_t *load, int ranks);
/* mean / max of the loads; 0 when every load is 0 (vLLM's convention). */
double tsim_balancedness(const int64_t *load, int ranks);
/* Capacity-limited dispatch: each rank computes at most
 * floor(capacity_factor * total / ranks) tokens (total: the sum of the
 * loads, so the mean is that of this record); returns the tokens above it,
 * summed over ranks. 0 when capacity_factor <= 0 (no limit). */
int64_t tsim_dropped(const int64_t *load, int ranks, double capacity_factor);
/* The capacity itself: floor(capacity_factor * total / ranks). */
int64_t tsim_capacity(int64_t total, int ranks, double capacity_factor);

/* Checks the plan against every rule of model.md and fills all metrics but
 * plan_ns, step_ms and speedup (left 0). On a broken rule returns TSIM_E_INTERNAL with a message
 * naming the planner label, the record and the rule. */
int tsim_evaluate(tsim_evaluator *ev, const tsim_record *rec, const tsim_plan *plan, double lambda_eval,
                  const char *label, tsim_metrics *out, tsim_error *err);

/* The same, for planners that may re-home experts (eplb.md section 1):
 * previous[E] is the placement the same planner used for the previous record
 * of this layer, NULL for the static map (a layer's first record). A plan
 * with a placement is validated by 1.3 and scored with home'; rho_before and
 * traffic_inter_before stay on the static map; rehomed_intra/_inter compare
 * home' (the static map without a placement) with previous. Without a
 * placement and with previous NULL this is exactly tsim_evaluate. */
int tsim_evaluate_placed(tsim_evaluator *ev, const tsim_record *rec, const tsim_plan *plan, const int32_t *previous,
                         double lambda_eval, const char *label, tsim_metrics *out, tsim_error *err);

/* Break-even lambda between planners A and B given mean intra/inter; returns
 * 0 and sets *lambda_star, or -1 when the denominator is zero. */
int tsim_break_even(double intra_a, double inter_a, double intra_b, double inter_b, double *lambda_star);

#endif
