/* FasterMoE dynamic shadowing (baselines.md "Further planners", fastermoe): its
 * decision rule exposed for the unit tests. The planner itself is
 * tsim_planner_fastermoe; the semantics are documented in fastermoe.c. */
#ifndef TSIM_FASTERMOE_H
#define TSIM_FASTERMOE_H

#include <stdint.h>

#include "planner.h"

/* FasterMoE dynamic shadowing cost model, per token / per expert, in
 * microseconds (only their ratios matter): fastermoe's own options block. */
typedef struct {
    double comp_us;      /* compute one token of one expert (0.063) */
    double feat_us;      /* send one token's features to another rank (0.02) */
    double model_us;     /* send one expert's weights (shadow) to every rank (380) */
} tsim_fastermoe_options;

extern const tsim_planner_desc tsim_planner_fastermoe;

/* Estimated step time (us) with the k heaviest experts shadowed, for loads
 * sorted descending: b[0] is the largest (B_1 in 1-based notation), n entries.
 * T(k) = 3*comp*B_{k+1} + 4*feat*B_{k+1} + k*model = (3 comp + 4 feat) * b[k]
 * + k * model, for 0 <= k < n. */
double tsim_fastermoe_step_us(const int64_t *b, int n, int k, const tsim_fastermoe_options *o);

/* How many of the heaviest experts FasterMoE shadows, for loads b[0..n)
 * sorted descending (n = E, zero loads included): the first k with
 * T(k + 1) >= T(k) (the first non-decrease), at most n - 1, and never an
 * expert with zero load. */
int tsim_fastermoe_shadow_count(const int64_t *b, int n, const tsim_fastermoe_options *o);

#endif
