/* The `exact` LPLB solver (baselines.md, `lplb`, "Solvers"): the group's
 * min-max LP solved to optimality with GLPK's primal simplex, the bound LPLB's
 * five-step ipm approaches.
 *
 * The LP is stated in tokens kept rather than shares, z_k = Wb_k x_k in
 * [0, Wb_k], so the constraint matrix is the same for every record and only the
 * bounds change:
 *   rank row i:  sum_d z_(i,d) - sum_d z_(o,d) - t <= -F[i] - sum_d Wb[o][d]   (o = r2o[i][d])
 * which is F[i] + sum_d Wb[i][d] x_(i,d) + sum_d Wb[o][d] (1 - x_(o,d)) <= t.
 * GLPK is told never to print; every failure comes back as a status. */
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lplb.h"

/* GLPK keeps its memory in a per-thread environment, and replay -j starts an
 * instance on one thread and plans with it on others: a problem used or
 * deleted on another thread than its own aborts GLPK ("glp_free: memory
 * allocation error"). So the problem lives within one solve call, and the
 * calling thread's environment is freed before it returns (no GLPK object
 * outlives a call anywhere). Building it costs far less than the simplex. */
static int build_lp(const tsim_lplb_exact *w, glp_prob **out, tsim_error *err)
{
    const int G = w->G, D = w->D, GD = G * D;
    glp_term_out(GLP_OFF);
    glp_prob *lp = glp_create_prob();
    if (!lp)
        return tsim_error_set(err, TSIM_E_INTERNAL, "GLPK could not create a problem");
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_rows(lp, G);
    glp_add_cols(lp, GD + 1);
    for (int k = 1; k <= GD; k++)
        glp_set_col_bnds(lp, k, GLP_FX, 0.0, 0.0);
    glp_set_col_bnds(lp, GD + 1, GLP_FR, 0.0, 0.0);
    glp_set_obj_coef(lp, GD + 1, 1.0);

    /* Row i: +1 on its own bundles, -1 on the bundles it hosts, -1 on t.
     * GLPK's arrays are 1-based; a row has at most 2D + 1 entries. */
    int *ind = malloc(sizeof *ind * (size_t)(2 * D + 2));
    double *val = malloc(sizeof *val * (size_t)(2 * D + 2));
    if (!ind || !val) {
        free(ind);
        free(val);
        glp_delete_prob(lp);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the lplb exact solver");
    }
    for (int i = 0; i < G; i++) {
        int n = 0;
        for (int d = 0; d < D; d++) {
            ind[++n] = i * D + d + 1;
            val[n] = 1.0;
        }
        for (int d = 0; d < D; d++) {
            ind[++n] = w->r2o[i * D + d] * D + d + 1;
            val[n] = -1.0;
        }
        ind[++n] = GD + 1;
        val[n] = -1.0;
        glp_set_mat_row(lp, i + 1, n, ind, val);
        glp_set_row_bnds(lp, i + 1, GLP_UP, 0.0, 0.0);
    }
    free(ind);
    free(val);
    *out = lp;
    return TSIM_OK;
}

int tsim_lplb_exact_init(tsim_lplb_exact *w, const tsim_lplb_graph *g, tsim_error *err)
{
    (void)err;
    memset(w, 0, sizeof *w);
    w->G = g->group_size;
    w->D = g->dups;
    w->r2o = g->r2o;
    return TSIM_OK;
}

void tsim_lplb_exact_free(tsim_lplb_exact *w)
{
    memset(w, 0, sizeof *w);
}

static const char *simplex_error(int rc)
{
    switch (rc) {
    case GLP_EBADB: return "invalid initial basis";
    case GLP_ESING: return "singular basis";
    case GLP_ECOND: return "ill-conditioned basis";
    case GLP_EBOUND: return "inconsistent bounds";
    case GLP_EFAIL: return "solver failure";
    case GLP_EOBJLL: case GLP_EOBJUL: return "objective limit reached";
    case GLP_EITLIM: return "iteration limit reached";
    case GLP_ETMLIM: return "time limit reached";
    case GLP_ENOPFS: return "no primal feasible solution";
    case GLP_ENODFS: return "no dual feasible solution";
    default: return "unknown error";
    }
}

static int solve_lp(glp_prob *lp, const tsim_lplb_exact *w, const double *wb, const double *f, double *x,
                    double *t, tsim_error *err)
{
    const int G = w->G, D = w->D, GD = G * D;
    for (int k = 0; k < GD; k++) {
        if (!(wb[k] >= 0.0) || !isfinite(wb[k]))
            return tsim_error_set(err, TSIM_E_INTERNAL, "lplb exact: bundle %d has load %g", k, wb[k]);
        /* GLPK rejects a double bound with lb == ub, so an empty bundle is fixed. */
        if (wb[k] > 0.0)
            glp_set_col_bnds(lp, k + 1, GLP_DB, 0.0, wb[k]);
        else
            glp_set_col_bnds(lp, k + 1, GLP_FX, 0.0, 0.0);
    }
    for (int i = 0; i < G; i++) {
        double rhs = -f[i];
        for (int d = 0; d < D; d++)
            rhs -= wb[w->r2o[i * D + d] * D + d];
        if (!isfinite(rhs))
            return tsim_error_set(err, TSIM_E_INTERNAL, "lplb exact: rank row %d has bound %g", i, rhs);
        glp_set_row_bnds(lp, i + 1, GLP_UP, 0.0, rhs);
    }
    /* Start every record from the same basis, so its plan does not depend on
     * the records before it. */
    glp_std_basis(lp);
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_OFF;
    int rc = glp_simplex(lp, &parm);
    if (rc != 0)
        return tsim_error_set(err, TSIM_E_INTERNAL, "lplb exact: GLPK simplex failed: %s (%d)", simplex_error(rc), rc);
    int status = glp_get_status(lp);
    if (status != GLP_OPT)
        return tsim_error_set(err, TSIM_E_INTERNAL, "lplb exact: GLPK found no optimum (status %d)", status);
    for (int k = 0; k < GD; k++)
        x[k] = wb[k] > 0.0 ? glp_get_col_prim(lp, k + 1) / wb[k] : 1.0;
    *t = glp_get_col_prim(lp, GD + 1);
    return TSIM_OK;
}

int tsim_lplb_exact_solve(tsim_lplb_exact *w, const double *wb, const double *f, double *x, double *t,
                          tsim_error *err)
{
    glp_prob *lp = NULL;
    int rc = build_lp(w, &lp, err);
    if (rc == TSIM_OK)
        rc = solve_lp(lp, w, wb, f, x, t, err);
    if (lp)
        glp_delete_prob(lp);
    glp_free_env();
    return rc;
}
