/* Ranks, nodes, the home map and the cost matrix of model.md. */
#ifndef TSIM_TOPOLOGY_H
#define TSIM_TOPOLOGY_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

/* Hard limits of trace-format.md, checked before any allocation. */
#define TSIM_MAX_EXPERTS 65536
#define TSIM_MAX_RANKS 4096
#define TSIM_MAX_COUNT (INT64_C(1) << 40)
/* R x E cells of one count matrix: each is held several times (the record,
 * the evaluator's per-(source, expert) sends, planner scratch), so the two
 * limits above cannot both be reached at once. The same cap as gen's. */
#define TSIM_MAX_CELLS (INT64_C(1) << 24)
/* A plan holds up to R x K replicas with a row of R token counts each:
 * R x R x K cells (512 MiB at this limit). */
#define TSIM_MAX_PLAN_CELLS (INT64_C(1) << 26)

typedef struct {
    int ranks;            /* R: EP size */
    int experts;          /* E */
    int ranks_per_node;   /* rpn; node(r) = r / rpn */
    int slots;            /* K: guest slots per rank */
    int experts_per_rank; /* hpr = E / R */
    int32_t *home;        /* [E]: rank owning each expert */
    int32_t *rank_experts; /* [R * hpr]: each rank's home experts, ascending */
} tsim_topology;

/* home may be NULL (contiguous blocks). Validates R | E, the limits, and that a
 * given home map gives every rank exactly hpr experts. */
int tsim_topology_init(tsim_topology *t, int ranks, int experts, int ranks_per_node, int slots,
                       const int32_t *home, tsim_error *err);
void tsim_topology_free(tsim_topology *t);

static inline int tsim_node(const tsim_topology *t, int rank)
{
    return rank / t->ranks_per_node;
}

static inline bool tsim_same_node(const tsim_topology *t, int a, int b)
{
    return tsim_node(t, a) == tsim_node(t, b);
}

/* W[i][j]: 1 within a node (diagonal included), lambda across nodes. */
static inline double tsim_cost(const tsim_topology *t, int i, int j, double lambda)
{
    return tsim_same_node(t, i, j) ? 1.0 : lambda;
}

static inline const int32_t *tsim_home_experts(const tsim_topology *t, int rank)
{
    return t->rank_experts + (size_t)rank * (size_t)t->experts_per_rank;
}

#endif
