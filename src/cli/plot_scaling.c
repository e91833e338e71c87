/* scaling's figures (plot.h): residual imbalance and weighted cost
 * against each axis (EP size, imbalance, slots). */
#include "plot_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* scaling: per axis, residual imbalance and weighted cost against the axis
 * value. Values per planner: rho_after mean %, std %, weighted mean, std. */
int plot_scaling(plotset *ps, study *s)
{
    enum { NV = 4 };
    static const char *const axes[3] = {"ep", "imbalance", "slots"};
    static const char *const axis_label[3] = {"EP size (ranks)", "initial imbalance (%)", "guest slots per rank (K)"};
    static const char *const axis_title[3] = {"EP size", "initial imbalance", "guest slots per rank"};
    tsim_error *err = s->err;
    strset parts = {0};
    int rc = TSIM_OK;
    char where[64];
    for (int i = 0; i < s->n && !rc; i++) {
        const cJSON *res;
        long p = 0;
        const char *axis = NULL;
        if ((rc = plot_result_at(s, i, &res, where, sizeof where, &p)) || p < 0 ||
            (rc = plot_need_string(res, where, "axis", &axis, err)))
            continue;
        int a = -1;
        for (int k = 0; k < 3; k++)
            if (strcmp(axis, axes[k]) == 0)
                a = k;
        if (a < 0) {
            char *shown = plot_label_dup(axis);
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: unknown \"axis\" '%s' (expected ep, imbalance or slots)", where,
                                shown ? shown : "?");
            free(shown);
            break;
        }
        double x = 0, rho = 0, rho_std = 0;
        if ((rc = plot_need_number(res, where, axes[a], &x, err)))
            break;
        long part = plot_strset_index(&parts, axis);
        cell *c = part < 0 ? NULL : plot_new_cell(s, i, p);
        if (!c) {
            rc = part < 0 ? plot_oom(err) : err->code;
            break;
        }
        c->part = part;
        c->x = a == 1 ? 100 * x : x;
        if ((rc = plot_need_metric(res, where, "rho_after", &rho, &rho_std, err)) ||
            (rc = plot_need_metric(res, where, "weighted", &c->v[2], &c->v[3], err)))
            break;
        c->v[0] = 100 * rho;
        c->v[1] = 100 * rho_std;
    }
    if (!rc)
        rc = plot_make_labels(s);
    for (size_t part = 0; part < parts.n && !rc; part++) {
        int a = 0;
        for (int k = 0; k < 3; k++)
            if (strcmp(parts.v[part], axes[k]) == 0)
                a = k;
        curves cv;
        double *m = NULL;
        text *d = NULL;
        char name[64], data[80], fig[96], title[160];
        snprintf(name, sizeof name, "scaling_%s", axes[a]);
        snprintf(data, sizeof data, "%s.dat", name);
        rc = plot_curves_make(s, (long)part, &cv);
        char same[32];
        snprintf(same, sizeof same, "axis and %s", axes[a]);
        if (!rc && !(m = plot_matrix(s, (long)part, cv.xs.n, cv.ncols, cv.col, NV, same)))
            rc = err->code;
        if (!rc && !(d = plot_add_dat(ps, name)))
            rc = err->code;
        if (!rc) {
            plot_text_add(d, "# taotsim plot: scaling along %s: mean and std; %srho_after in %%\n", axes[a],
                          a == 1 ? "imbalance and " : "");
            plot_write_na(d, s);
            plot_text_add(d, "# %s", axes[a]);
            for (size_t j = 0; j < cv.ncols; j++) {
                const char *l = cv.labels[j];
                plot_text_add(d, " %s:rho_after %s:rho_after_std %s:weighted %s:weighted_std", l, l, l, l);
            }
            plot_text_add(d, "\n");
            plot_write_curve_rows(d, &cv, m, NV);
        }
        /* A log2 axis for EP sizes and slot counts (powers of two, mostly). */
        bool logx = a != 1 && cv.xs.n > 0 && cv.xs.v[0] > 0;
        for (int f = 0; f < 2 && !rc; f++) {
            snprintf(fig, sizeof fig, "%s_%s", name, f == 0 ? "residual" : "weighted");
            snprintf(title, sizeof title, "%s vs %s (mean ± std)",
                     f == 0 ? "Residual imbalance" : "Weighted communication cost", axis_title[a]);
            text *v = plot_add_figure(ps, fig, f == 0 ? "scaling_residual" : "scaling_weighted", data, title);
            if (!v) {
                rc = err->code;
                break;
            }
            plot_text_add(v, "XLABEL = \"%s\"\nLOGX = %d\n", axis_label[a], logx ? 1 : 0);
            plot_vars_planners(v, cv.labels, cv.ncols);
        }
        free(m);
        plot_curves_free(&cv);
    }
    plot_strset_free(&parts);
    return rc;
}
