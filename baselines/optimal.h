/* The `optimal` planner (baselines.md "Further planners"): the paper's
 * objective solved exactly as a mixed-integer program (GLPK or CBC), the yardstick
 * for every heuristic. The planner itself is tsim_planner_optimal in the
 * registry; this header exposes how each record was solved (proven, cut short
 * by the node budget, or without any solution) and how far the search got:
 * the plan's TSIM_NOTE_NODE_LIMIT only says that the budget cut it. */
#ifndef TSIM_OPTIMAL_H
#define TSIM_OPTIMAL_H

#include <stdint.h>

#include "planner.h"

/* The `optimal` MIP yardstick's own options block. */
typedef struct {
    double mu;           /* weight of the weighted cost against imbalance (0.001) */
    int node_limit;      /* branch-and-bound nodes per record (20000); deterministic, unlike a clock */
    int solver;          /* TSIM_OPTIMAL_GLPK (default, measured faster) or TSIM_OPTIMAL_CBC */
} tsim_optimal_options;

/* --optimal-solver values (the index in its choices "cbc|glpk"). */
enum { TSIM_OPTIMAL_CBC = 0, TSIM_OPTIMAL_GLPK = 1 };

extern const tsim_planner_desc tsim_planner_optimal;

/* Most binaries y[e][g] (E * (R - 1)) init accepts: the MIP is a yardstick for
 * small R and E, and branch and bound beyond this would only run into the node
 * budget on every record. */
#define TSIM_OPTIMAL_MAX_BINARIES 4096

/* How the last record was solved. */
enum {
    TSIM_OPTIMAL_TRIVIAL = 0,     /* nothing to solve: empty record, K = 0 or R = 1; empty plan */
    TSIM_OPTIMAL_SOLVED = 1,      /* the solver proved the integer optimum */
    TSIM_OPTIMAL_NODE_LIMIT = 2,  /* node budget spent; the best integer solution found is the plan */
    TSIM_OPTIMAL_NO_SOLUTION = 3, /* node budget spent before any integer solution: empty plan */
};

typedef struct {
    /* Counters over every record planned since init. */
    int64_t records;
    int64_t solved;      /* TSIM_OPTIMAL_SOLVED */
    int64_t node_limit;  /* TSIM_OPTIMAL_NODE_LIMIT */
    int64_t no_solution; /* TSIM_OPTIMAL_NO_SOLUTION */
    /* The last record, as the MIP saw it before integer rounding (objective,
     * max load and cost are 0 when trivial or without a solution). */
    int last_status;
    double last_objective; /* (t - mean) / mean + mu * sum W(home(e), g) y[e][g] */
    double last_max_load;  /* t, in tokens */
    double last_cost;      /* sum W(home(e), g) y[e][g] with W across nodes = lambda_plan */
    double last_gap;       /* last_objective - last_bound: 0 when proven or trivial, INFINITY without a
                            * solution or a bound */
    double last_bound;     /* proven lower bound on the objective (= last_objective when proven; -INFINITY
                            * when the search stopped before it had one) */
    int last_nodes;        /* branch-and-bound nodes the solver counted (GLPK: subproblems solved, at most
                            * the node limit; 0 when trivial) */
} tsim_optimal_stats;

/* state is what tsim_planner_optimal.init made (tsim_planner.state). */
void tsim_optimal_stats_get(const void *state, tsim_optimal_stats *out);

#endif
