/* A mixed-integer program on the LP container of lp.h (some columns
 * integer) and the two branch-and-bound solvers that can run it: COIN-OR
 * CBC and GLPK's glp_intopt. Used by the `optimal` planner; the search is
 * limited by a count of branch-and-bound nodes, never by the clock, so a
 * model gives the same answer on any machine. Solvers never print. */
#ifndef TSIM_MIP_H
#define TSIM_MIP_H

#include <stdbool.h>

#include "error.h"
#include "lp.h"

typedef enum {
    TSIM_MIP_CBC = 0,  /* COIN-OR CBC: presolve, cuts and heuristics at its defaults, one thread */
    TSIM_MIP_GLPK = 1, /* GLPK glp_intopt with its MIP presolver */
} tsim_mip_solver;

typedef enum {
    TSIM_MIP_OPTIMAL = 0,      /* the incumbent is proven optimal */
    TSIM_MIP_STOPPED = 1,      /* the node limit stopped the search with an incumbent */
    TSIM_MIP_NO_INCUMBENT = 2, /* the node limit stopped it before any integer solution */
    TSIM_MIP_INFEASIBLE = 3,   /* proven: no integer point */
} tsim_mip_status;

typedef struct {
    tsim_mip_status status;
    double incumbent; /* objective of x (OPTIMAL, STOPPED); INFINITY otherwise */
    double bound;     /* proven lower bound on the optimum (= incumbent when OPTIMAL; -INFINITY when the
                       * search stopped before it had one) */
    int nodes;        /* branch-and-bound nodes the solver counted */
} tsim_mip_result;

/* minimize over lp with columns j where integer[j] integral. node_limit >= 1
 * caps the nodes (GLPK: subproblems solved, the root included; CBC: its
 * maximum node count). x[ncols] gets the incumbent when there is one.
 * Errors (TSIM_E_INTERNAL) only for solver failures. Calls are serialised
 * process-wide for CBC, whose solver driver is not safe on several threads. */
int tsim_mip_solve(const tsim_lp *lp, const bool *integer, tsim_mip_solver solver, int node_limit, double *x,
                   tsim_mip_result *out, tsim_error *err);

/* Absolute gap incumbent - bound in the objective's own units (at least 0;
 * 0 when proven, INFINITY without an incumbent or without a bound). Absolute
 * because `optimal`'s objective, rho_after + mu * weighted, can be 0. */
double tsim_mip_gap(const tsim_mip_result *r);

const char *tsim_mip_solver_name(tsim_mip_solver s);

#endif
