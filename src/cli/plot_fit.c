/* Residual heat maps of the fit (plot_fit.h), drawn the way plot.c draws the
 * other studies: data and scripts built in memory first, then written
 * atomically, then rendered by the one gnuplot runner (plot_gnuplot.c). */
#include "plot_fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot_internal.h"
#include "provenance.h"

#define FIGURES TSIM_FIT_PLANNERS

static void write_dat(text *f, const tsim_fit_regime *fr, int planner)
{
    plot_text_add(f, "# taotsim fit: residuals of %s, regime: ", tsim_fit_planner_names[planner]);
    char what[200];
    tsim_regime_describe(&fr->regime, what, sizeof what);
    plot_text_add(f, "%s\n# cell metric residual ours paper ours_label paper_label (metric 0 improve_pp, 1 intra, "
                  "2 inter)\n", what);
    for (int q = 0; q < TSIM_FIT_METRICS; q++) {
        for (int cell = 0; cell < TSIM_FIT_CELLS; cell++) {
            const tsim_fit_entry *e = &fr->entries[cell][planner];
            char ours[32] = "NaN", ours_label[32] = "n/a";
            if (e->ok) {
                snprintf(ours, sizeof ours, "%.6g", e->ours[q]);
                snprintf(ours_label, sizeof ours_label, "%.1f", e->ours[q]);
            }
            plot_text_add(f, "%d %d %.6g %s %.6g \"%s\" \"%.1f\"\n", cell, q, e->resid[q], ours, e->paper[q],
                          ours_label, e->paper[q]);
        }
        plot_text_add(f, "\n");
    }
}

/* The figure's variables: FIGURE, DATA, TITLE (its "\n" escape kept: a line
 * break in gnuplot's double quotes), NCELLS and the cells' tick labels. */
static void write_vars(text *v, const char *name, const tsim_fit_regime *fr, int planner, int rank)
{
    char data[96], title[400], what[200];
    snprintf(data, sizeof data, "%s.dat", name);
    tsim_regime_describe(&fr->regime, what, sizeof what);
    snprintf(title, sizeof title, "fit: %s against the paper (rank %d, distance %.3f, %s %.3f)\\n%s",
             tsim_fit_planner_names[planner], rank + 1, fr->distance, tsim_fit_planner_names[planner],
             fr->planner_distance[planner], what);
    plot_text_add(v, "FIGURE = ");
    plot_text_gp_string(v, name);
    plot_text_add(v, "\nDATA = ");
    plot_text_gp_string(v, data);
    plot_text_add(v, "\nTITLE = \"%s\"\n", title);
    plot_text_add(v, "NCELLS = %d\nXTICS = '(", TSIM_FIT_CELLS);
    for (int cell = 0; cell < TSIM_FIT_CELLS; cell++)
        plot_text_add(v, "%s\"EP%d\\n%d%%%%\" %d", cell ? ", " : "", tsim_fit_cell_ep(cell),
                      (int)lround(100 * tsim_fit_cell_imbalance(cell)), cell);
    plot_text_add(v, ")'\n");
}

int tsim_plot_fit(const tsim_fit_result *r, const char *outdir, int formats, FILE *log, tsim_error *err)
{
    if (!outdir || !outdir[0])
        return tsim_error_set(err, TSIM_E_INPUT, "--plots: no output directory given");
    if (r->n == 0 || !r->regimes[r->order[0]].feasible)
        return tsim_error_set(err, TSIM_E_INPUT, "--plots: no feasible regime to plot");
    const tsim_fit_regime *best = &r->regimes[r->order[0]];
    const char *command = tsim_report_command_line();
    /* A gnuplot that cannot draw is found before anything is written (plot.h). */
    char gnuplot[4096] = "";
    int rc = formats ? plot_check_gnuplot(formats, gnuplot, sizeof gnuplot, err) : TSIM_OK;
    char *terminal = NULL;
    if (!rc)
        rc = plot_read_template("terminal", &terminal, err);
    figure fig[FIGURES];
    text dat[FIGURES], gp[FIGURES];
    memset(fig, 0, sizeof fig);
    memset(dat, 0, sizeof dat);
    memset(gp, 0, sizeof gp);
    char names[FIGURES][64];
    for (int p = 0; p < FIGURES && !rc; p++) {
        snprintf(names[p], sizeof names[p], "fit_residual_%s", tsim_fit_planner_names[p]);
        fig[p].name = names[p];
        fig[p].tmpl = "fit_residual";
        write_dat(&dat[p], best, p);
        write_vars(&fig[p].vars, names[p], best, p, 0);
        rc = plot_build_script(&fig[p], "fit", command && command[0] ? command : NULL, terminal, &gp[p], err);
        if (!rc && (dat[p].oom || fig[p].vars.oom || gp[p].oom))
            rc = plot_oom(err);
    }
    if (!rc)
        rc = plot_mkdir_p(outdir, err);
    for (int p = 0; p < FIGURES && !rc; p++) {
        char file[96];
        snprintf(file, sizeof file, "%s.dat", names[p]);
        rc = plot_write_file(outdir, file, &dat[p], NULL, err);
        snprintf(file, sizeof file, "%s.gp", names[p]);
        if (!rc)
            rc = plot_write_file(outdir, file, &gp[p], NULL, err);
    }
    for (int p = 0; p < FIGURES && !rc && formats; p++) {
        if (formats & TSIM_PLOT_PNG)
            rc = plot_render(gnuplot, outdir, names[p], "png", log, NULL, err);
        if (!rc && (formats & TSIM_PLOT_SVG))
            rc = plot_render(gnuplot, outdir, names[p], "svg", log, NULL, err);
    }
    for (int p = 0; p < FIGURES; p++) {
        plot_text_free(&dat[p]);
        plot_text_free(&gp[p]);
        plot_text_free(&fig[p].vars);
    }
    free(terminal);
    return rc;
}
