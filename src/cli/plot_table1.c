/* table1's figures (plot.h): grouped bars of weighted cost and residual
 * imbalance per (EP, imbalance) on a two-level axis, and a Pareto figure per
 * cell. */
#include "plot_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A two-level x axis for table1's bar groups: imbalance ticks under each
 * group, the EP size centred under each run of groups with that EP size, a
 * gap and a dotted line between runs. Writes GX (the groups' x positions),
 * XTICS, XMIN, XMAX, OUTER_X, OUTER_LABELS and SEPS. */
static void vars_two_level_axis(text *v, const groupset *g)
{
    enum { GAP_TENTHS = 6 }; /* the gap between runs, in tenths of a group */
    size_t n = g->keys.n;
    text gx = {0}, ticks = {0}, outer_x = {0}, outer_l = {0}, seps = {0};
    long at = 0; /* x position in tenths */
    size_t run_start = 0;
    for (size_t i = 0; i <= n; i++) {
        bool run_ends = i == n || (i > 0 && g->coord[i][0] != g->coord[i - 1][0]);
        if (i > 0 && run_ends) {
            long first_x = at - 10 * (long)(i - run_start);
            double centre = (first_x + (at - 10)) / 20.0;
            plot_text_add(&outer_x, "%s%.6g", outer_x.len ? " " : "", centre);
            plot_text_add(&outer_l, "%sEP%.6g", outer_l.len ? " " : "", g->coord[i - 1][0]);
            if (i < n) {
                plot_text_add(&seps, "%s%.6g", seps.len ? " " : "", (at - 10 + at + GAP_TENTHS) / 20.0);
                at += GAP_TENTHS;
            }
            run_start = i;
        }
        if (i == n)
            break;
        plot_text_add(&gx, "%s%.6g", i ? " " : "", at / 10.0);
        plot_text_add(&ticks, "%s\"%.6g%%%%\" %.6g", i ? ", " : "", g->coord[i][1], at / 10.0);
        at += 10;
    }
    plot_text_add(v, "NG = %zu\nGX = \"%s\"\nXTICS = '(%s)'\nXMIN = -0.6\nXMAX = %.6g\n", n, gx.buf ? gx.buf : "",
                  ticks.buf ? ticks.buf : "", (at - 10) / 10.0 + 0.6);
    plot_text_add(v, "OUTER_X = \"%s\"\nOUTER_LABELS = \"%s\"\nSEPS = \"%s\"\n", outer_x.buf ? outer_x.buf : "",
                  outer_l.buf ? outer_l.buf : "", seps.buf ? seps.buf : "");
    if (gx.oom || ticks.oom || outer_x.oom || outer_l.oom || seps.oom)
        v->oom = true;
    plot_text_free(&gx);
    plot_text_free(&ticks);
    plot_text_free(&outer_x);
    plot_text_free(&outer_l);
    plot_text_free(&seps);
}

/* The paper's residual imbalance (%) of a table1 cell: its "rho_after" when
 * given, else the initial imbalance plus its improvement (pp); NaN: none. */
static int paper_residual(const cJSON *res, const char *where, double imbalance, double *out, tsim_error *err)
{
    double rho = NAN, improve = NAN;
    int rc = plot_paper_value(res, where, "rho_after", &rho, err);
    if (!rc)
        rc = plot_paper_value(res, where, "improve_pp", &improve, err);
    *out = !isnan(rho) ? 100 * rho : 100 * imbalance + improve;
    return rc;
}

/* One table1 cell's Pareto figure: residual imbalance (x) against weighted
 * cost (y), a point per planner with its std as error bars, the paper's
 * points hollow, our Pareto front dashed. cell_v: [np][NV] of the group. */
static int pareto_figure(plotset *ps, study *s, double ep, double imb_pct, const double *cell_v, size_t nv)
{
    tsim_error *err = s->err;
    size_t np = s->planners.n;
    char name[96], data[112], title[400];
    snprintf(name, sizeof name, "table1_pareto_ep%.6g_imb%.6g", ep, imb_pct);
    snprintf(data, sizeof data, "%s.dat", name);
    char ctx[192];
    plot_study_context(s, ctx, sizeof ctx);
    snprintf(title, sizeof title,
             "Table 1%s%s%s, EP%.6g at %.6g%% initial imbalance: residual imbalance vs weighted cost",
             ctx[0] ? " (" : "", ctx, ctx[0] ? ")" : "", ep, imb_pct);
    char **labels = calloc(np ? np : 1, sizeof *labels);
    const double **rows = calloc(np ? np : 1, sizeof *rows);
    bool *paper = calloc(np ? np : 1, sizeof *paper);
    if (!labels || !rows || !paper) {
        free(labels);
        free(rows);
        free(paper);
        return plot_oom(err);
    }
    size_t n = 0;
    for (size_t j = 0; j < np; j++) {
        const double *v = cell_v + j * nv;
        if (isnan(v[0]))
            continue; /* no result for this planner here */
        paper[n] = !isnan(v[4]) && !isnan(v[5]);
        labels[n] = s->labels[j];
        rows[n++] = v;
    }
    int rc = TSIM_OK;
    text *d = plot_add_dat(ps, name);
    if (!d)
        rc = err->code;
    if (!rc) {
        plot_text_add(d,
                      "# taotsim plot: table1 Pareto at EP%.6g, %.6g%% initial imbalance: residual imbalance (%%) and "
                      "weighted cost, mean and std; paper: the paper's Table 1 (residual: initial imbalance + its "
                      "improvement pp; NaN: none)\n",
                      ep, imb_pct);
        plot_write_na(d, s);
        plot_text_add(d, "# planner rho_after rho_after_std weighted weighted_std paper_rho_after paper_weighted\n");
        for (size_t k = 0; k < n; k++) {
            const double *v = rows[k];
            const double cols[6] = {v[2], v[3], v[0], v[1], v[5], v[4]};
            plot_text_add(d, "\"%s\"", labels[k]);
            for (int c = 0; c < 6; c++) {
                plot_text_add(d, " ");
                plot_text_num(d, cols[c]);
            }
            plot_text_add(d, "\n");
        }
        /* Index 1: the front, by residual imbalance. A planner is on it when
         * no other is at most as imbalanced and as costly, and better in one. */
        plot_text_add(d, "\n\n# Pareto front of ours: rho_after weighted\n");
        double last_x = NAN;
        for (;;) {
            long best = -1;
            for (size_t k = 0; k < n; k++) {
                const double *a = rows[k];
                bool dominated = false;
                for (size_t o = 0; o < n && !dominated; o++) {
                    const double *b = rows[o];
                    dominated = o != k && b[2] <= a[2] && b[0] <= a[0] && (b[2] < a[2] || b[0] < a[0]);
                }
                if (dominated || (!isnan(last_x) && a[2] <= last_x))
                    continue;
                if (best < 0 || a[2] < rows[best][2] || (a[2] == rows[best][2] && a[0] < rows[best][0]))
                    best = (long)k;
            }
            if (best < 0)
                break;
            plot_text_num(d, rows[best][2]);
            plot_text_add(d, " ");
            plot_text_num(d, rows[best][0]);
            plot_text_add(d, "\n");
            last_x = rows[best][2];
        }
    }
    text *v = NULL;
    if (!rc && !(v = plot_add_figure(ps, name, "table1_pareto", data, title)))
        rc = err->code;
    if (!rc) {
        plot_vars_planners(v, labels, n);
        plot_vars_index_list(v, "PAPER", paper, n);
    }
    free(labels);
    free(rows);
    free(paper);
    return rc;
}

/* table1: bars per (EP, imbalance) group, one per planner, and a Pareto
 * figure per group. Values per planner: weighted mean, std, rho_after mean
 * %, std %, paper weighted (the five in table1.dat), paper rho_after %. */
int plot_table1(plotset *ps, study *s)
{
    enum { NV = 6 };
    tsim_error *err = s->err;
    groupset groups = {0};
    int rc = TSIM_OK;
    char where[64];
    for (int i = 0; i < s->n && !rc; i++) {
        const cJSON *res;
        long p = 0;
        double ep = 0, imb = 0, rho = 0, rho_std = 0;
        if ((rc = plot_result_at(s, i, &res, where, sizeof where, &p)) || p < 0 ||
            (rc = plot_need_number(res, where, "ep", &ep, err)) ||
            (rc = plot_need_number(res, where, "imbalance", &imb, err)))
            continue;
        char label[64];
        snprintf(label, sizeof label, "EP%.6g %.6g%%", ep, 100 * imb);
        long g = plot_group_index(&groups, label, ep, 100 * imb);
        cell *c = g < 0 ? NULL : plot_new_cell(s, i, p);
        if (!c) {
            rc = g < 0 ? plot_oom(err) : err->code;
            break;
        }
        c->group = g;
        if ((rc = plot_need_metric(res, where, "weighted", &c->v[0], &c->v[1], err)) ||
            (rc = plot_need_metric(res, where, "rho_after", &rho, &rho_std, err)) ||
            (rc = plot_paper_value(res, where, "weighted", &c->v[4], err)) ||
            (rc = paper_residual(res, where, imb, &c->v[5], err)))
            break;
        c->v[2] = 100 * rho;
        c->v[3] = 100 * rho_std;
    }
    if (!rc)
        rc = plot_make_labels(s);
    size_t np = s->planners.n;
    long *col = malloc((np ? np : 1) * sizeof *col);
    bool *paper = calloc(np ? np : 1, sizeof *paper);
    bool *paper_rho = calloc(np ? np : 1, sizeof *paper_rho);
    double *m = NULL;
    if (!rc && (!col || !paper || !paper_rho))
        rc = plot_oom(err);
    for (size_t j = 0; !rc && j < np; j++)
        col[j] = (long)j;
    if (!rc && !(m = plot_matrix(s, 0, groups.keys.n, np, col, NV, "ep and imbalance")))
        rc = err->code;
    text *d = NULL;
    if (!rc && !(d = plot_add_dat(ps, "table1")))
        rc = err->code;
    if (!rc) {
        plot_text_add(d, "# taotsim plot: table1: mean and std; imbalance and rho_after in %%; paper: the "
                    "paper's Table 1 (NaN: none)\n");
        plot_write_na(d, s);
        plot_text_add(d, "# group ep imbalance");
        for (size_t j = 0; j < np; j++) {
            const char *l = s->labels[j];
            plot_text_add(d, " %s:weighted %s:weighted_std %s:rho_after %s:rho_after_std %s:paper_weighted "
                          "%s:paper_rho_after", l, l, l, l, l, l);
        }
        plot_text_add(d, "\n");
        plot_write_bar_rows(d, &groups, m, np, NV, NV);
        for (size_t g = 0; g < groups.keys.n; g++)
            for (size_t j = 0; j < np; j++) {
                paper[j] |= !isnan(m[(g * np + j) * NV + 4]);
                paper_rho[j] |= !isnan(m[(g * np + j) * NV + 5]);
            }
    }
    char ctx[192], title[320];
    plot_study_context(s, ctx, sizeof ctx);
    snprintf(title, sizeof title, "Table 1%s%s%s: weighted communication cost (mean ± std)", ctx[0] ? " (" : "", ctx,
             ctx[0] ? ")" : "");
    text *v = NULL;
    if (!rc && !(v = plot_add_figure(ps, "table1_weighted", "table1_weighted", "table1.dat", title)))
        rc = err->code;
    if (!rc) {
        plot_vars_planners(v, s->labels, np);
        vars_two_level_axis(v, &groups);
        plot_vars_index_list(v, "PAPER", paper, np);
        snprintf(title, sizeof title, "Table 1%s%s%s: residual imbalance after planning (mean ± std)",
                 ctx[0] ? " (" : "", ctx, ctx[0] ? ")" : "");
        if (!(v = plot_add_figure(ps, "table1_residual", "table1_residual", "table1.dat", title)))
            rc = err->code;
    }
    if (!rc) {
        plot_vars_planners(v, s->labels, np);
        vars_two_level_axis(v, &groups);
        plot_vars_index_list(v, "PAPER", paper_rho, np);
    }
    for (size_t g = 0; g < groups.keys.n && !rc; g++)
        rc = pareto_figure(ps, s, groups.coord[g][0], groups.coord[g][1], m + g * np * NV, NV);
    free(m);
    free(col);
    free(paper);
    free(paper_rho);
    plot_groupset_free(&groups);
    return rc;
}
