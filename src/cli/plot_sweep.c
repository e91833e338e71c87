/* sweep's figures (plot.h): weighted cost against lambda_eval per
 * lambda_plan, break-even lambdas as dashed lines. */
#include "plot_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One break-even entry of a sweep. */
typedef struct {
    const char *a, *b;
    double lambda_plan; /* NaN: every lambda_plan */
    double lambda_star; /* NaN: the costs never cross */
} break_even;

static int read_break_even(const cJSON *root, break_even **out, size_t *n, tsim_error *err)
{
    *out = NULL;
    *n = 0;
    const cJSON *be = plot_field(root, "break_even");
    if (!be || cJSON_IsNull(be))
        return TSIM_OK;
    if (!cJSON_IsArray(be))
        return tsim_error_set(err, TSIM_E_INPUT, "\"break_even\" is not an array");
    int count = cJSON_GetArraySize(be);
    if (count == 0)
        return TSIM_OK;
    break_even *list = calloc((size_t)count, sizeof *list);
    if (!list)
        return plot_oom(err);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, be)
    {
        char where[48];
        snprintf(where, sizeof where, "break_even[%d]", i);
        break_even *b = &list[i++];
        int rc = TSIM_OK;
        if (!cJSON_IsObject(e))
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: not an object", where);
        if (!rc && !(rc = plot_need_string(e, where, "a", &b->a, err)))
            rc = plot_need_string(e, where, "b", &b->b, err);
        b->lambda_plan = NAN;
        if (!rc && plot_field(e, "lambda_plan"))
            rc = plot_need_number(e, where, "lambda_plan", &b->lambda_plan, err);
        const cJSON *star = plot_field(e, "lambda_star");
        b->lambda_star = NAN;
        if (!rc && !star)
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: missing \"lambda_star\" (a number or null)", where);
        if (!rc && !cJSON_IsNull(star)) {
            if (cJSON_IsNumber(star))
                b->lambda_star = star->valuedouble;
            else
                rc = tsim_error_set(err, TSIM_E_INPUT, "%s: \"lambda_star\" is neither a number nor null", where);
        }
        if (rc) {
            free(list);
            return rc;
        }
    }
    *out = list;
    *n = (size_t)count;
    return TSIM_OK;
}

/* sweep: per lambda_plan, weighted cost (mean, std) against lambda_eval. */
int plot_sweep(plotset *ps, study *s, const cJSON *root)
{
    enum { NV = 2 };
    tsim_error *err = s->err;
    numset parts = {0};
    int rc = TSIM_OK;
    char where[64];
    for (int i = 0; i < s->n && !rc; i++) {
        const cJSON *res;
        long p = 0;
        double lp = 0, le = 0;
        if ((rc = plot_result_at(s, i, &res, where, sizeof where, &p)) || p < 0 ||
            (rc = plot_need_number(res, where, "lambda_plan", &lp, err)) ||
            (rc = plot_need_number(res, where, "lambda_eval", &le, err)))
            continue;
        long part = plot_numset_index(&parts, lp);
        cell *c = part < 0 ? NULL : plot_new_cell(s, i, p);
        if (!c) {
            rc = part < 0 ? plot_oom(err) : err->code;
            break;
        }
        c->part = part;
        c->x = le;
        rc = plot_need_metric(res, where, "weighted", &c->v[0], &c->v[1], err);
    }
    break_even *be = NULL;
    size_t nbe = 0;
    if (!rc)
        rc = read_break_even(root, &be, &nbe, err);
    if (!rc)
        rc = plot_make_labels(s);
    for (size_t part = 0; part < parts.n && !rc; part++) {
        double lp = parts.v[part];
        curves cv;
        double *m = NULL;
        text *d = NULL, *v = NULL;
        char name[64], title[320];
        snprintf(name, sizeof name, "sweep_lp%.6g", lp);
        rc = plot_curves_make(s, (long)part, &cv);
        if (!rc && !(m = plot_matrix(s, (long)part, cv.xs.n, cv.ncols, cv.col, NV, "lambda_plan and lambda_eval")))
            rc = err->code;
        if (!rc && !(d = plot_add_dat(ps, name)))
            rc = err->code;
        if (!rc) {
            plot_text_add(d, "# taotsim plot: sweep at lambda_plan = %.6g: weighted cost per record, mean and std\n",
                          lp);
            bool any = false;
            for (size_t k = 0; k < nbe; k++) {
                if (!isnan(be[k].lambda_plan) && be[k].lambda_plan != lp)
                    continue;
                char *a = plot_label_dup(be[k].a), *b = plot_label_dup(be[k].b);
                if (a && b) {
                    plot_text_add(d, "%s %s/%s ", any ? "," : "# break-even lambda* (equal weighted cost):", a, b);
                    if (isnan(be[k].lambda_star))
                        plot_text_add(d, "none");
                    else
                        plot_text_num(d, be[k].lambda_star);
                } else {
                    d->oom = true;
                }
                free(a);
                free(b);
                any = true;
            }
            if (any)
                plot_text_add(d, "\n");
            plot_write_na(d, s);
            plot_text_add(d, "# lambda_eval");
            for (size_t j = 0; j < cv.ncols; j++)
                plot_text_add(d, " %s:weighted %s:weighted_std", cv.labels[j], cv.labels[j]);
            plot_text_add(d, "\n");
            plot_write_curve_rows(d, &cv, m, NV);
            char ctx[192];
            plot_study_context(s, ctx, sizeof ctx);
            snprintf(title, sizeof title, "Weighted cost vs λ_eval at λ_plan = %.6g (%s%smean ± std)", lp, ctx,
                     ctx[0] ? "; " : "");
            char data[80];
            snprintf(data, sizeof data, "%s.dat", name);
            if (!(v = plot_add_figure(ps, name, "sweep", data, title)))
                rc = err->code;
        }
        if (!rc) {
            plot_vars_planners_only(v, cv.labels, cv.ncols);
            /* Break-even marks inside the plotted lambda_eval range. */
            size_t marks = 0;
            for (size_t k = 0; k < nbe; k++) {
                double x = be[k].lambda_star;
                if ((!isnan(be[k].lambda_plan) && be[k].lambda_plan != lp) || isnan(x) || x < cv.xs.v[0] ||
                    x > cv.xs.v[cv.xs.n - 1])
                    continue;
                marks++;
                plot_text_add(v, "BE_X%zu = ", marks);
                plot_text_num(v, x);
                char *a = plot_label_dup(be[k].a), *b = plot_label_dup(be[k].b);
                if (!a || !b) {
                    free(a);
                    free(b);
                    rc = plot_oom(err);
                    break;
                }
                char label[160];
                snprintf(label, sizeof label, "λ* %s/%s = %.3g", a, b, x);
                plot_text_add(v, "\nBE_LABEL%zu = ", marks);
                plot_text_gp_string(v, label);
                plot_text_add(v, "\n");
                free(a);
                free(b);
            }
            plot_text_add(v, "NBE = %zu\n", marks);
            plot_vars_styles(v, cv.labels, cv.ncols);
        }
        free(m);
        plot_curves_free(&cv);
    }
    free(be);
    plot_numset_free(&parts);
    return rc;
}
