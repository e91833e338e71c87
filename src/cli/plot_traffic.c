/* Heat maps of the traffic matrices (plot_traffic.h). Data and scripts are
 * built in memory, then written and rendered through the CLI's one gnuplot
 * runner (plot_gnuplot.c): atomic files, and images through a temporary
 * name. */
#include "plot_traffic.h"

#include <stdlib.h>
#include <string.h>

#include "plot_internal.h"

/* A file name part from a planner label (labels are identifiers already;
 * '+' becomes 'p' so every shell and gnuplot takes it). */
static void file_label(const char *label, char *out, size_t n)
{
    size_t k = 0;
    for (; label[k] && k + 1 < n; k++)
        out[k] = label[k] == '+' ? 'p' : label[k];
    out[k] = '\0';
}

/* The data file: one line per (source, destination), a blank line after
 * each source row, as gnuplot's `with image` reads a grid. */
static int write_data(const tsim_traffic *t, int i, const char *outdir, const char *name, int64_t *min,
                      int64_t *max, tsim_error *err)
{
    text d = {0};
    const tsim_traffic_planner *p = &t->p[i];
    plot_text_add(&d, "# source destination tokens_before tokens_after\n");
    for (int a = 0; a < t->n; a++) {
        for (int b = 0; b < t->n; b++) {
            const size_t k = (size_t)a * (size_t)t->n + (size_t)b;
            plot_text_add(&d, "%d %d %lld %lld\n", a, b, (long long)p->before[k], (long long)p->after[k]);
            for (int side = 0; side < 2; side++) {
                const int64_t v = side ? p->after[k] : p->before[k];
                *max = v > *max ? v : *max;
                *min = *min < 0 || v < *min ? v : *min;
            }
        }
        plot_text_add(&d, "\n");
    }
    int rc = d.oom ? plot_oom(err) : plot_write_file(outdir, name, &d, NULL, err);
    plot_text_free(&d);
    return rc;
}

/* The script: its own header and variables (not plot_build_script's: this
 * figure comes from a replay, not from a result file), terminal.gp, then
 * plots/traffic.gp. */
static int write_script(const tsim_traffic *t, const char *label, const char *base, int64_t min, int64_t max,
                        const char *terminal, const char *tmpl, const char *outdir, tsim_error *err)
{
    text g = {0};
    const char *unit = t->level == TSIM_TRAFFIC_RANK ? "rank" : "node";
    plot_text_add(&g, "# taotsim replay --traffic %s: heat map of planner %s, from the template plots/traffic.gp.\n",
                  unit, label);
    plot_text_add(&g, "# Render in this directory: gnuplot %s.gp (PNG), gnuplot -e 'fmt=\"svg\"' %s.gp (SVG).\n\n",
                  base, base);
    plot_text_add(&g, "FIGURE = \"%s\"\nDATA = \"%s.dat\"\nUNIT = \"%s\"\nN = %d\nCBMIN = %lld\nCBMAX = %lld\n", base,
                  base, unit, t->n, (long long)min, (long long)max);
    plot_text_add(&g, "TITLE = \"%s: tokens %s x %s, summed over %lld records\"\n\n%s\n%s", label, unit, unit,
                  (long long)t->p[0].records, terminal, tmpl);
    char name[256];
    snprintf(name, sizeof name, "%s.gp", base);
    int rc = g.oom ? plot_oom(err) : plot_write_file(outdir, name, &g, NULL, err);
    plot_text_free(&g);
    return rc;
}

int tsim_plot_traffic(const tsim_traffic *t, const tsim_session *s, const char *trace_path, const char *outdir,
                      int formats, FILE *log, tsim_error *err)
{
    /* The replay checked gnuplot before it ran (tsim_plot_check); checking
     * again here is what finds its path, before any file is written. */
    char gnuplot[4096] = "";
    int rc = formats ? plot_check_gnuplot(formats, gnuplot, sizeof gnuplot, err) : TSIM_OK;
    char *terminal = NULL, *tmpl = NULL;
    if (!rc)
        rc = plot_read_template("terminal", &terminal, err);
    if (!rc)
        rc = plot_read_template("traffic", &tmpl, err);
    if (!rc)
        rc = plot_mkdir_p(outdir, err);
    for (int i = 0; !rc && i < t->n_planners; i++) {
        char label[TSIM_LABEL_MAX], base[TSIM_LABEL_MAX + 16], dat[TSIM_LABEL_MAX + 24];
        file_label(s->planners[i].label, label, sizeof label);
        snprintf(base, sizeof base, "traffic_%s", label);
        snprintf(dat, sizeof dat, "%s.dat", base);
        int64_t min = -1, max = 0;
        rc = write_data(t, i, outdir, dat, &min, &max, err);
        char who[TSIM_LABEL_MAX + 300]; /* the title names the planner, the trace and the planner's K */
        snprintf(who, sizeof who, "%s (trace %s, K = %d)", s->planners[i].label,
                 strrchr(trace_path, '/') ? strrchr(trace_path, '/') + 1 : trace_path, s->ptopo[i].slots);
        if (!rc)
            rc = write_script(t, who, base, min < 0 ? 0 : min, max, terminal, tmpl, outdir, err);
        if (!rc && (formats & TSIM_PLOT_PNG))
            rc = plot_render(gnuplot, outdir, base, "png", log, NULL, err);
        if (!rc && (formats & TSIM_PLOT_SVG))
            rc = plot_render(gnuplot, outdir, base, "svg", log, NULL, err);
    }
    free(terminal);
    free(tmpl);
    return rc;
}
