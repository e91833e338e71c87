/* The excess metrics of --bounds (bounds.h). */
#include "bounds.h"

#include <math.h>
#include <stdlib.h>

#include "bound.h"

struct tsim_bounds {
    int n;
    double lambda;
    tsim_bounder **bounders; /* [n] one per planner, made on its first plan (its own K) */
};

const char *tsim_bounds_fit_text(int fit)
{
    return fit == TSIM_BOUNDS_NO_SLOT_LIMIT ? "no slot limit" : fit == TSIM_BOUNDS_REHOMES ? "re-homes experts" : "";
}

tsim_bounds_fit tsim_bounds_plan_fit(const tsim_plan *plan)
{
    if (!plan->slot_limited)
        return TSIM_BOUNDS_NO_SLOT_LIMIT;
    if (tsim_plan_has_placement(plan))
        return TSIM_BOUNDS_REHOMES;
    return TSIM_BOUNDS_IN_MODEL;
}

int tsim_bounds_new(tsim_bounds **out, int n, double lambda_eval, tsim_error *err)
{
    *out = NULL;
    tsim_bounds *b = calloc(1, sizeof *b);
    if (!b || !(b->bounders = calloc((size_t)(n > 0 ? n : 1), sizeof *b->bounders))) {
        free(b);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for --bounds");
    }
    b->n = n;
    b->lambda = lambda_eval;
    *out = b;
    return TSIM_OK;
}

void tsim_bounds_free(tsim_bounds *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->n; i++)
        tsim_bounder_free(b->bounders[i]);
    free(b->bounders);
    free(b);
}

/* value - bound, which a valid bound keeps >= 0: a plan below its bound is a
 * bug in the bound, reported rather than hidden. Rounding in rho_after's
 * division may put a plan a hair under; that hair is 0. */
static int excess(const tsim_record *rec, const char *what, double value, double bound, double *out, tsim_error *err)
{
    const double d = value - bound;
    if (d < -1e-9 * (1.0 + fabs(value)))
        return tsim_error_set(err, TSIM_E_INTERNAL, "--bounds: record %lld: a plan's %s %.12g is below its proven "
                              "lower bound %.12g", (long long)rec->index, what, value, bound);
    *out = d > 0.0 ? d : 0.0;
    return TSIM_OK;
}

int tsim_bounds_fill(tsim_bounds *b, int i, const tsim_topology *topo, const tsim_record *rec,
                     const tsim_plan *plan, tsim_metrics *m, tsim_bounds_fit *fit, tsim_error *err)
{
    m->v[TSIM_M_EXCESS_IMBALANCE] = m->v[TSIM_M_EXCESS_COST] = NAN;
    *fit = tsim_bounds_plan_fit(plan);
    if (*fit != TSIM_BOUNDS_IN_MODEL)
        return TSIM_OK;
    if (i < 0 || i >= b->n)
        return tsim_error_set(err, TSIM_E_INTERNAL, "--bounds: no planner %d", i);
    int rc;
    if (!b->bounders[i]) {
        tsim_bound_options o;
        tsim_bound_options_default(&o);
        o.lambda = b->lambda;
        o.lp_limit = TSIM_BOUNDS_LPS;
        if ((rc = tsim_bounder_new(&b->bounders[i], topo, &o, err)))
            return rc;
    }
    const double rho = m->v[TSIM_M_RHO_AFTER], weighted = m->v[TSIM_M_WEIGHTED];
    tsim_bound_result r;
    if ((rc = tsim_bound_min_rho(b->bounders[i], rec, weighted, &r, err)))
        return rc;
    if ((rc = excess(rec, "rho_after", rho, r.value, &m->v[TSIM_M_EXCESS_IMBALANCE], err)))
        return rc;
    if ((rc = tsim_bound_min_cost(b->bounders[i], rec, rho, &r, err)))
        return rc;
    if (isinf(r.value))
        return tsim_error_set(err, TSIM_E_INTERNAL, "--bounds: record %lld: the bound says no plan reaches "
                              "rho_after %.9g, which a plan did", (long long)rec->index, rho);
    return excess(rec, "weighted", weighted, r.value, &m->v[TSIM_M_EXCESS_COST], err);
    return TSIM_OK;
}

int tsim_bounds_cell_frontier(const tsim_record *recs, int n, const tsim_topology *topo, double lambda,
                              const double *budgets, int nb, double *rho, tsim_error *err)
{
    for (int j = 0; j < nb; j++)
        rho[j] = 0.0;
    tsim_bound_options o;
    tsim_bound_options_default(&o);
    o.lambda = lambda;
    tsim_bounder *b = NULL;
    int rc = tsim_bounder_new(&b, topo, &o, err);
    tsim_bound_curve c = {0};
    for (int i = 0; i < n && rc == TSIM_OK; i++) {
        rc = tsim_bound_curve_build(b, &recs[i], TSIM_BOUNDS_CURVE_POINTS, &c, err);
        for (int j = 0; j < nb && rc == TSIM_OK; j++) {
            tsim_bound_result r;
            rc = tsim_bound_curve_min_rho(b, &recs[i], &c, budgets[j], 0, &r, err);
            rho[j] += r.value / n;
        }
    }
    tsim_bound_curve_free(&c);
    tsim_bounder_free(b);
    return rc;
}
