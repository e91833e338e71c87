/* `frontier` (issue 23, item 3): a planner of our own, designed from the
 * structure of the cost-balance frontier. Homes stay fixed, at most K guests
 * per rank. Every rank is brought down to one level L near the mean:
 *   1. cross-node first, but only what the node totals force: a node whose
 *      ranks together exceed L * (its ranks) exports that surplus in as few
 *      pieces as it can (hottest rank, its largest expert, best-fit receiver);
 *      a piece is kept only if the drop of the sender node's level it buys,
 *      in units of the mean, exceeds mu * lambda_plan;
 *   2. then node-local pieces (cost 1) water-fill every node to its level.
 * The cross-node pieces are chosen without looking at lambda_plan, which only
 * filters them, so more lambda_plan never gives more cross-node replicas.
 * Stateless: each record is planned from its own counts alone. */
#ifndef TSIM_FRONTIER_H
#define TSIM_FRONTIER_H

#include "error.h"
#include "plan.h"
#include "record.h"
#include "topology.h"

typedef struct {
    /* What one unit of weighted cost is worth in imbalance (rho, as a
     * fraction of the mean), as in the objective rho + mu * weighted.
     * Default 1e-4: one cross-node replica at lambda 10 is worth 0.1 pp, the
     * imbalance tolerance of issue 23's goals. Also the intra tolerance: the
     * level is ceil(mean) + floor(mu * mean). */
    double mu;
} tsim_frontier_options;

typedef struct tsim_frontier tsim_frontier;

void tsim_frontier_options_default(tsim_frontier_options *opt);

/* Checks the configuration (slots >= 0, lambda_plan >= 1 and finite, mu >= 0
 * and finite) and allocates all scratch for this topology. */
int tsim_frontier_init(tsim_frontier **out, const tsim_topology *topo, int slots, double lambda_plan,
                       const tsim_frontier_options *opt, tsim_error *err);

/* Plans one record into plan (reset here). plan->ranks must be R. */
int tsim_frontier_plan(tsim_frontier *f, const tsim_record *rec, tsim_plan *plan, tsim_error *err);

void tsim_frontier_free(tsim_frontier *f);

#endif
