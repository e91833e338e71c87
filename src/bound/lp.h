/* A linear program in column-major form and the two solvers that can run it:
 * COIN-OR CLP and GLPK's simplex. The bound layer builds its models here so
 * that the solver is one switch, measured rather than assumed (bound.md in
 * the bound.h header comment). Solvers never print: logging is off. */
#ifndef TSIM_LP_H
#define TSIM_LP_H

#include <stdbool.h>

#include "error.h"

struct glp_prob;

typedef enum {
    TSIM_LP_CLP = 0,  /* COIN-OR CLP, dual simplex */
    TSIM_LP_GLPK = 1, /* GLPK glp_simplex, dual simplex */
} tsim_lp_solver;

/* Outcome of one solve. */
typedef enum {
    TSIM_LP_OPTIMAL = 0,
    TSIM_LP_INFEASIBLE = 1, /* proven: no point satisfies the rows and bounds */
    TSIM_LP_LIMIT = 2,      /* iteration limit or solver trouble: no valid value */
} tsim_lp_status;

/* minimize obj . x subject to row_lo <= A x <= row_hi, col_lo <= x <= col_hi.
 * A is column-major: column j holds entries start[j] .. start[j + 1] - 1 of
 * index (row) and value. Capacities grow with tsim_lp_reserve. */
typedef struct {
    int ncols, nrows, nnz;
    int cap_cols, cap_rows, cap_nnz;
    double *obj, *col_lo, *col_hi;
    double *row_lo, *row_hi;
    int *start; /* [cap_cols + 1] */
    int *index;
    double *value;
} tsim_lp;

void tsim_lp_init(tsim_lp *lp);
void tsim_lp_free(tsim_lp *lp);
/* Empties the model (keeps the memory). */
void tsim_lp_clear(tsim_lp *lp);
int tsim_lp_reserve(tsim_lp *lp, int cols, int rows, int nnz, tsim_error *err);
/* Adds a row lo <= . <= hi (use +-HUGE_VAL for none); returns its index. */
int tsim_lp_add_row(tsim_lp *lp, double lo, double hi);
/* Adds a column with n entries (rows must exist); returns its index. The
 * caller reserved room. */
int tsim_lp_add_col(tsim_lp *lp, double obj, double lo, double hi, int n, const int *rows, const double *vals);

/* Solves; *objective is set when the status is TSIM_LP_OPTIMAL.
 * iteration_limit > 0 caps simplex iterations (a deterministic work limit);
 * *iterations gets the count spent. Errors only for solver failures that are
 * not a status (out of memory). */
int tsim_lp_solve(tsim_lp *lp, tsim_lp_solver solver, int iteration_limit, tsim_lp_status *status,
                  double *objective, int *iterations, tsim_error *err);

const char *tsim_lp_solver_name(tsim_lp_solver s);

/* Loads lp into an empty GLPK problem p (minimise; rows, columns, bounds,
 * objective, matrix); columns with integer[j] set become integer (integer
 * may be NULL: an LP). The one place an LP is handed to GLPK. */
int tsim_lp_load_glpk(struct glp_prob *p, const tsim_lp *lp, const bool *integer, tsim_error *err);

#endif
