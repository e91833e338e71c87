/* The two branch-and-bound backends of mip.h. Each solve loads the model
 * afresh, so a result depends only on the model and the node limit. */
#include "mip.h"

#include "coin.h"

#include <float.h>
#include <glpk.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

const char *tsim_mip_solver_name(tsim_mip_solver s)
{
    return s == TSIM_MIP_GLPK ? "glpk" : "cbc";
}

double tsim_mip_gap(const tsim_mip_result *r)
{
    if (r->status == TSIM_MIP_OPTIMAL)
        return 0.0;
    if (r->status != TSIM_MIP_STOPPED || !isfinite(r->bound))
        return INFINITY;
    double g = r->incumbent - r->bound;
    return g > 0.0 ? g : 0.0;
}

static double coin_inf(double v)
{
    return isinf(v) ? (v > 0 ? DBL_MAX : -DBL_MAX) : v;
}

/* CBC's driver (CbcMain) keeps static state: one solve at a time. */
static pthread_mutex_t cbc_lock = PTHREAD_MUTEX_INITIALIZER;

static int solve_cbc(const tsim_lp *lp, const bool *integer, int node_limit, double *x, tsim_mip_result *out,
                     tsim_error *err)
{
    const tsim_cbc_api *cbc = tsim_coin_cbc(err);
    if (!cbc)
        return err->code;
    const int n = lp->ncols, m = lp->nrows;
    CoinBigIndex *start = malloc(sizeof *start * (size_t)(n + 1));
    double *buf = malloc(sizeof *buf * (size_t)(2 * (n + m) + 1));
    if (!start || !buf) {
        free(start);
        free(buf);
        return tsim_error_set(err, TSIM_E_INTERNAL, "mip: out of memory starting CBC");
    }
    for (int j = 0; j <= n; j++)
        start[j] = lp->start[j];
    double *clo = buf, *chi = clo + n, *rlo = chi + n, *rhi = rlo + m;
    for (int j = 0; j < n; j++) {
        clo[j] = coin_inf(lp->col_lo[j]);
        chi[j] = coin_inf(lp->col_hi[j]);
    }
    for (int i = 0; i < m; i++) {
        rlo[i] = coin_inf(lp->row_lo[i]);
        rhi[i] = coin_inf(lp->row_hi[i]);
    }
    pthread_mutex_lock(&cbc_lock);
    Cbc_Model *model = cbc->newModel();
    int rc = TSIM_OK;
    if (!model) {
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "mip: CBC could not create a model");
        goto done;
    }
    cbc->loadProblem(model, n, m, start, lp->index, lp->value, clo, chi, lp->obj, rlo, rhi);
    for (int j = 0; j < n; j++)
        if (integer[j])
            cbc->setInteger(model, j);
    cbc->setLogLevel(model, 0);
    cbc->setParameter(model, "log", "0");
    cbc->setParameter(model, "slog", "0");
    cbc->setParameter(model, "threads", "0");
    cbc->setMaximumNodes(model, node_limit);
    int st = cbc->solve(model);
    out->nodes = cbc->getNodeCount(model);
    const double *sol = cbc->bestSolution(model);
    if (cbc->isProvenOptimal(model) && sol) {
        out->status = TSIM_MIP_OPTIMAL;
        out->incumbent = out->bound = cbc->getObjValue(model);
    } else if (cbc->isProvenInfeasible(model)) {
        out->status = TSIM_MIP_INFEASIBLE;
    } else if (cbc->isNodeLimitReached(model) || st == 1) {
        out->status = sol ? TSIM_MIP_STOPPED : TSIM_MIP_NO_INCUMBENT;
        if (sol)
            out->incumbent = cbc->getObjValue(model);
        double b = cbc->getBestPossibleObjValue(model);
        out->bound = isfinite(b) && fabs(b) < 1e50 ? b : -INFINITY;
        if (sol && out->bound > out->incumbent)
            out->bound = out->incumbent;
    } else {
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "mip: CBC stopped with status %d (secondary %d)", st,
                            cbc->secondaryStatus(model));
    }
    if (!rc && sol && out->status != TSIM_MIP_INFEASIBLE)
        for (int j = 0; j < n; j++)
            x[j] = sol[j];
    cbc->deleteModel(model);
done:
    pthread_mutex_unlock(&cbc_lock);
    free(start);
    free(buf);
    return rc;
}

/* What the GLPK callback counts and keeps. */
typedef struct {
    int limit, selected;
    double bound; /* the best active node's bound at the last selection */
} glpk_budget;

/* GLPK asks for a selection once before each subproblem it processes (the
 * root included): the request past the budget stops the search. The best
 * active node's bound then is a bound on every plan not yet ruled out. */
static void glpk_callback(glp_tree *tree, void *info)
{
    glpk_budget *b = info;
    if (glp_ios_reason(tree) != GLP_ISELECT)
        return;
    int best = glp_ios_best_node(tree);
    b->bound = best ? glp_ios_node_bound(tree, best) : -INFINITY;
    if (b->selected >= b->limit) {
        glp_ios_terminate(tree);
        return;
    }
    b->selected++;
}

/* GLPK keeps its memory in a per-thread environment, freed before return, so
 * nothing of a solve outlives the call or crosses threads. */
static int solve_glpk(const tsim_lp *lp, const bool *integer, int node_limit, double *x, tsim_mip_result *out,
                      tsim_error *err)
{
    glp_term_out(GLP_OFF);
    glp_prob *p = glp_create_prob();
    int rc = p ? tsim_lp_load_glpk(p, lp, integer, err)
               : tsim_error_set(err, TSIM_E_INTERNAL, "mip: GLPK could not create a problem");
    if (rc)
        goto done;
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_ON;
    glpk_budget budget = {.limit = node_limit, .selected = 0, .bound = -INFINITY};
    parm.cb_func = glpk_callback;
    parm.cb_info = &budget;
    int ret = glp_intopt(p, &parm);
    int mip = glp_mip_status(p);
    out->nodes = budget.selected;
    const bool have = mip == GLP_FEAS || mip == GLP_OPT;
    if (ret == 0 && mip == GLP_OPT) {
        out->status = TSIM_MIP_OPTIMAL;
        out->incumbent = out->bound = glp_mip_obj_val(p);
    } else if ((ret == 0 && mip == GLP_NOFEAS) || ret == GLP_ENOPFS) {
        out->status = TSIM_MIP_INFEASIBLE;
    } else if (ret == GLP_ESTOP) {
        out->status = have ? TSIM_MIP_STOPPED : TSIM_MIP_NO_INCUMBENT;
        if (have)
            out->incumbent = glp_mip_obj_val(p);
        out->bound = budget.bound;
        if (have && out->bound > out->incumbent)
            out->bound = out->incumbent;
    } else {
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "mip: GLPK branch and bound failed (code %d, status %d)", ret,
                            mip);
    }
    if (!rc && have)
        for (int j = 0; j < lp->ncols; j++)
            x[j] = glp_mip_col_val(p, j + 1);
done:
    if (p)
        glp_delete_prob(p);
    glp_free_env();
    return rc;
}

int tsim_mip_solve(const tsim_lp *lp, const bool *integer, tsim_mip_solver solver, int node_limit, double *x,
                   tsim_mip_result *out, tsim_error *err)
{
    out->status = TSIM_MIP_NO_INCUMBENT;
    out->incumbent = INFINITY;
    out->bound = -INFINITY;
    out->nodes = 0;
    if (node_limit < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "mip: the node limit must be at least 1, got %d", node_limit);
    if (solver == TSIM_MIP_GLPK)
        return solve_glpk(lp, integer, node_limit, x, out, err);
    return solve_cbc(lp, integer, node_limit, x, out, err);
}
