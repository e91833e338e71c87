/* The LP container and its two backends (lp.h). Each solve loads the model
 * afresh into the solver, so a result depends only on the model, never on
 * what was solved before: the same record gives the same bound in any order. */
#include "lp.h"

#include "coin.h"

#include <float.h>
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void tsim_lp_init(tsim_lp *lp)
{
    memset(lp, 0, sizeof *lp);
}

void tsim_lp_free(tsim_lp *lp)
{
    free(lp->obj);
    free(lp->col_lo);
    free(lp->col_hi);
    free(lp->row_lo);
    free(lp->row_hi);
    free(lp->start);
    free(lp->index);
    free(lp->value);
    memset(lp, 0, sizeof *lp);
}

void tsim_lp_clear(tsim_lp *lp)
{
    lp->ncols = lp->nrows = lp->nnz = 0;
    if (lp->start)
        lp->start[0] = 0;
}

static int grow(void **p, size_t elem, int n)
{
    void *q = realloc(*p, elem * (size_t)(n > 0 ? n : 1));
    if (!q)
        return -1;
    *p = q;
    return 0;
}

int tsim_lp_reserve(tsim_lp *lp, int cols, int rows, int nnz, tsim_error *err)
{
    int bad = 0;
    if (cols > lp->cap_cols) {
        bad |= grow((void **)&lp->obj, sizeof(double), cols);
        bad |= grow((void **)&lp->col_lo, sizeof(double), cols);
        bad |= grow((void **)&lp->col_hi, sizeof(double), cols);
        bad |= grow((void **)&lp->start, sizeof(int), cols + 1);
        if (!bad)
            lp->cap_cols = cols;
    }
    if (rows > lp->cap_rows) {
        bad |= grow((void **)&lp->row_lo, sizeof(double), rows);
        bad |= grow((void **)&lp->row_hi, sizeof(double), rows);
        if (!bad)
            lp->cap_rows = rows;
    }
    if (nnz > lp->cap_nnz) {
        bad |= grow((void **)&lp->index, sizeof(int), nnz);
        bad |= grow((void **)&lp->value, sizeof(double), nnz);
        if (!bad)
            lp->cap_nnz = nnz;
    }
    if (bad || !lp->start)
        return tsim_error_set(err, TSIM_E_INTERNAL, "bound: out of memory for an LP of %d columns, %d rows", cols,
                              rows);
    if (lp->ncols == 0)
        lp->start[0] = 0;
    return TSIM_OK;
}

int tsim_lp_add_row(tsim_lp *lp, double lo, double hi)
{
    lp->row_lo[lp->nrows] = lo;
    lp->row_hi[lp->nrows] = hi;
    return lp->nrows++;
}

int tsim_lp_add_col(tsim_lp *lp, double obj, double lo, double hi, int n, const int *rows, const double *vals)
{
    int j = lp->ncols++;
    lp->obj[j] = obj;
    lp->col_lo[j] = lo;
    lp->col_hi[j] = hi;
    for (int k = 0; k < n; k++) {
        lp->index[lp->nnz] = rows[k];
        lp->value[lp->nnz] = vals[k];
        lp->nnz++;
    }
    lp->start[j + 1] = lp->nnz;
    return j;
}

const char *tsim_lp_solver_name(tsim_lp_solver s)
{
    return s == TSIM_LP_GLPK ? "glpk" : "clp";
}

/* CLP wants its own infinity and index type. */
static double clp_inf(double v)
{
    return isinf(v) ? (v > 0 ? DBL_MAX : -DBL_MAX) : v;
}

static int solve_clp(tsim_lp *lp, int iteration_limit, tsim_lp_status *status, double *objective, int *iterations,
                     tsim_error *err)
{
    const tsim_clp_api *clp = tsim_coin_clp(err);
    if (!clp)
        return err->code;
    CoinBigIndex *start = malloc(sizeof *start * (size_t)(lp->ncols + 1));
    double *buf = malloc(sizeof *buf * (size_t)(2 * (lp->ncols + lp->nrows) + 1));
    Clp_Simplex *m = clp->newModel();
    if (!start || !buf || !m) {
        free(start);
        free(buf);
        if (m)
            clp->deleteModel(m);
        return tsim_error_set(err, TSIM_E_INTERNAL, "bound: out of memory starting CLP");
    }
    for (int j = 0; j <= lp->ncols; j++)
        start[j] = lp->start[j];
    double *clo = buf, *chi = clo + lp->ncols, *rlo = chi + lp->ncols, *rhi = rlo + lp->nrows;
    for (int j = 0; j < lp->ncols; j++) {
        clo[j] = clp_inf(lp->col_lo[j]);
        chi[j] = clp_inf(lp->col_hi[j]);
    }
    for (int i = 0; i < lp->nrows; i++) {
        rlo[i] = clp_inf(lp->row_lo[i]);
        rhi[i] = clp_inf(lp->row_hi[i]);
    }
    clp->setLogLevel(m, 0);
    clp->loadProblem(m, lp->ncols, lp->nrows, start, lp->index, lp->value, clo, chi, lp->obj, rlo, rhi);
    if (iteration_limit > 0)
        clp->setMaximumIterations(m, iteration_limit);
    clp->dual(m, 0);
    int st = clp->status(m);
    *iterations = clp->numberIterations(m);
    if (st == 0 && clp->isProvenOptimal(m)) {
        *status = TSIM_LP_OPTIMAL;
        *objective = clp->objectiveValue(m);
    } else if (st == 1 && clp->isProvenPrimalInfeasible(m)) {
        *status = TSIM_LP_INFEASIBLE;
    } else {
        *status = TSIM_LP_LIMIT;
    }
    clp->deleteModel(m);
    free(start);
    free(buf);
    return TSIM_OK;
}

static void glpk_bounds(double lo, double hi, int *type, double *l, double *u)
{
    *l = isinf(lo) ? 0.0 : lo;
    *u = isinf(hi) ? 0.0 : hi;
    if (isinf(lo) && isinf(hi))
        *type = GLP_FR;
    else if (isinf(hi))
        *type = GLP_LO;
    else if (isinf(lo))
        *type = GLP_UP;
    else if (lo == hi)
        *type = GLP_FX;
    else
        *type = GLP_DB;
}

int tsim_lp_load_glpk(struct glp_prob *p, const tsim_lp *lp, const bool *integer, tsim_error *err)
{
    int *ia = malloc(sizeof *ia * (size_t)(lp->nnz + 1));
    int *ja = malloc(sizeof *ja * (size_t)(lp->nnz + 1));
    double *ar = malloc(sizeof *ar * (size_t)(lp->nnz + 1));
    if (!ia || !ja || !ar) {
        free(ia);
        free(ja);
        free(ar);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory loading the LP into GLPK");
    }
    glp_set_obj_dir(p, GLP_MIN);
    if (lp->nrows > 0)
        glp_add_rows(p, lp->nrows);
    if (lp->ncols > 0)
        glp_add_cols(p, lp->ncols);
    int type;
    double l, u;
    for (int i = 0; i < lp->nrows; i++) {
        glpk_bounds(lp->row_lo[i], lp->row_hi[i], &type, &l, &u);
        glp_set_row_bnds(p, i + 1, type, l, u);
    }
    for (int j = 0; j < lp->ncols; j++) {
        if (integer && integer[j])
            glp_set_col_kind(p, j + 1, GLP_IV);
        glpk_bounds(lp->col_lo[j], lp->col_hi[j], &type, &l, &u);
        glp_set_col_bnds(p, j + 1, type, l, u);
        glp_set_obj_coef(p, j + 1, lp->obj[j]);
        for (int k = lp->start[j]; k < lp->start[j + 1]; k++) {
            ia[k + 1] = lp->index[k] + 1;
            ja[k + 1] = j + 1;
            ar[k + 1] = lp->value[k];
        }
    }
    glp_load_matrix(p, lp->nnz, ia, ja, ar);
    free(ia);
    free(ja);
    free(ar);
    return TSIM_OK;
}

static int solve_glpk(tsim_lp *lp, int iteration_limit, tsim_lp_status *status, double *objective, int *iterations,
                      tsim_error *err)
{
    glp_term_out(GLP_OFF);
    glp_prob *p = glp_create_prob();
    if (!p)
        return tsim_error_set(err, TSIM_E_INTERNAL, "bound: GLPK could not create a problem");
    if (tsim_lp_load_glpk(p, lp, NULL, err)) {
        glp_delete_prob(p);
        return err->code;
    }
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.meth = GLP_DUALP;
    if (iteration_limit > 0)
        parm.it_lim = iteration_limit;
    int rc = glp_simplex(p, &parm);
    int st = glp_get_status(p);
    *iterations = glp_get_it_cnt(p);
    if (rc == 0 && st == GLP_OPT) {
        *status = TSIM_LP_OPTIMAL;
        *objective = glp_get_obj_val(p);
    } else if (rc == 0 && st == GLP_NOFEAS) {
        *status = TSIM_LP_INFEASIBLE;
    } else {
        *status = TSIM_LP_LIMIT;
    }
    glp_delete_prob(p);
    return TSIM_OK;
}

int tsim_lp_solve(tsim_lp *lp, tsim_lp_solver solver, int iteration_limit, tsim_lp_status *status,
                  double *objective, int *iterations, tsim_error *err)
{
    *status = TSIM_LP_LIMIT;
    *objective = 0.0;
    *iterations = 0;
    if (solver == TSIM_LP_GLPK)
        return solve_glpk(lp, iteration_limit, status, objective, iterations, err);
    return solve_clp(lp, iteration_limit, status, objective, iterations, err);
}
