/* ablation's figure (plot.h): bars of intra, inter and weighted per
 * combination of TAOT's flow hint and comm cost. */
#include "plot_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ablation: bars of intra, inter, weighted per combination of TAOT's flow
 * hint and comm cost (and planner, when there are several). Values: mean,
 * std, paper, for each of the three. */
int plot_ablation(plotset *ps, study *s)
{
    enum { NV = 9 };
    static const char *const series[3] = {"intra", "inter", "weighted"};
    tsim_error *err = s->err;
    int rc = TSIM_OK;
    char where[64];
    /* Planners first: with more than one, group labels name the planner. */
    for (int i = 0; i < s->n && !rc; i++) {
        const cJSON *res;
        long p = 0;
        rc = plot_result_at(s, i, &res, where, sizeof where, &p);
    }

    if (!rc)
        rc = plot_make_labels(s);
    groupset groups = {0};
    bool several = s->planners.n > 1;
    for (int i = 0; i < s->n && !rc; i++) {
        const cJSON *res;
        long p = 0;
        bool hint = false, cost = false;
        if ((rc = plot_result_at_pass(s, i, &res, where, sizeof where, &p, 1)) || p < 0 ||
            (rc = plot_need_bool(res, where, "flow_hint", &hint, err)) ||
            (rc = plot_need_bool(res, where, "comm_cost", &cost, err)))
            continue;
        char label[192];
        snprintf(label, sizeof label, "%s%sflow hint %s, comm cost %s", several ? s->labels[p] : "",
                 several ? ": " : "", hint ? "on" : "off", cost ? "on" : "off");
        long g = plot_group_index(&groups, label, hint, cost);
        cell *c = g < 0 ? NULL : plot_new_cell(s, i, p);
        if (!c) {
            rc = g < 0 ? plot_oom(err) : err->code;
            break;
        }
        c->group = g;
        for (int k = 0; k < 3 && !rc; k++)
            if (!(rc = plot_need_metric(res, where, series[k], &c->v[3 * k], &c->v[3 * k + 1], err)))
                rc = plot_paper_value(res, where, series[k], &c->v[3 * k + 2], err);
    }
    double *m = NULL;
    if (!rc && !(m = plot_matrix(s, 0, groups.keys.n, 1, NULL, NV, "flow_hint and comm_cost")))
        rc = err->code;
    text *d = NULL;
    if (!rc && !(d = plot_add_dat(ps, "ablation")))
        rc = err->code;
    bool paper[3] = {false, false, false};
    if (!rc) {
        plot_text_add(d, "# taotsim plot: ablation: expert transfers per record, mean and std; paper: the "
                    "paper's Table 2 (NaN: none)\n");
        plot_write_na(d, s);
        plot_text_add(d, "# group flow_hint comm_cost intra intra_std paper_intra inter inter_std paper_inter weighted "
                    "weighted_std paper_weighted\n");
        plot_write_bar_rows(d, &groups, m, 1, NV, NV);
        for (size_t g = 0; g < groups.keys.n; g++)
            for (int k = 0; k < 3; k++)
                if (!isnan(m[g * NV + 3 * (size_t)k + 2]))
                    paper[k] = true;
    }
    text *v = NULL;
    if (!rc && !(v = plot_add_figure(ps, "ablation", "ablation", "ablation.dat",
                                     "Ablation: expert transfers per record by TAOT phase (mean ± std)")))
        rc = err->code;
    if (!rc) {
        plot_vars_planners(v, s->labels, s->planners.n);
        plot_vars_groups(v, groups.keys.v, groups.keys.n);
        plot_vars_index_list(v, "PAPER", paper, 3);
        /* Bars take their planner's colour (a shade per series), as 0xRRGGBB
         * numbers for gnuplot's "lc rgb variable". */
        plot_text_add(v, "GROUP_RGB = \"");
        for (size_t g = 0; g < groups.keys.n; g++) {
            long planner = 0;
            for (size_t i = 0; i < s->nc; i++)
                if (s->c[i].group == (long)g)
                    planner = s->c[i].planner;
            const char *hex = tsim_plot_planner_colour(s->labels[planner]);
            plot_text_add(v, "%s%ld", g ? " " : "", strtol(hex + 1, NULL, 16));
        }
        plot_text_add(v, "\"\n");
    }
    free(m);
    plot_groupset_free(&groups);
    return rc;
}
