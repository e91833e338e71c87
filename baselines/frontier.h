/* `frontier` (issue 23, item 3): a planner of our own, designed from the
 * structure of the cost-balance frontier. Homes stay fixed, at most K guests
 * per rank; the objective is rho + mu * weighted (the paper's, as `optimal`).
 * Every rank is brought down to a level L >= ceil(mean):
 *   1. cross-node only what node totals force: a node whose ranks together
 *      exceed L * (its ranks) exports that surplus in as few pieces as it can
 *      (hottest rank, its largest expert, best-fit receiver on another node
 *      whose node still has net room). A piece of a tokens from a node of n
 *      ranks lowers that node's level by a / n, i.e. rho by a / (n * mean):
 *      it is kept only if that exceeds mu * lambda_plan, its price;
 *   2. then node-local pieces (cost 1) water-fill every node down to
 *      max(L, its own mean), hottest rank first, largest expert first,
 *      best-fit receiver (one already holding the expert takes more for
 *      free); a rank whose excess is below mu * mean is left, since fixing
 *      it costs a replica worth more than the imbalance it removes.
 * L is ceil(mean) + s * mu * mean, s searched over 0, 1, 2, 4, ... (up to the
 * replica count at s = 0: more slack never pays) and then halfway to the
 * best s's neighbours, for the least rho + mu * replicas, with every
 * cross-node piece kept and every replica at cost 1. So L and the whole
 * cross-node sequence never depend on lambda_plan, which only filters that
 * sequence: more lambda_plan never gives more cross-node replicas.
 * Tokens per source by the shared split (split.h). Stateless. */
#ifndef TSIM_FRONTIER_H
#define TSIM_FRONTIER_H

#include "error.h"
#include "plan.h"
#include "planner.h"
#include "record.h"
#include "topology.h"

typedef struct {
    /* What one unit of weighted cost is worth in imbalance (rho as a
     * fraction of the mean) in the objective rho + mu * weighted. Default
     * 0.001, `optimal`'s default mu (--optimal-mu). */
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

/* The registry entry: --frontier-mu, stateless, cheap, reads lambda_plan. */
extern const tsim_planner_desc tsim_planner_frontier;

#endif
