/* The frontier figure of table1 --bounds (plot_frontier.h). Data and script
 * are built in memory, then written and rendered through the CLI's one
 * gnuplot runner (plot_gnuplot.c), as the other figures are. The script is
 * self-contained rather than made from a template: its plot command has one
 * clause per planner of the cell. */
#include "plot_frontier.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot_internal.h"

/* A number of a result's metric summary, NaN when absent. */
static double metric_mean(const cJSON *res, const char *name)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "metrics"), name);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "mean");
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* One cell's data and script into memory; the caller writes them. ctx (the
 * traces and K, as the other figures' titles name them) goes in the title. */
static int cell_files(const cJSON *cell, const cJSON *results, const char *ctx, const char *name, text *d, text *g,
                      tsim_error *err)
{
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(cell, "key");
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(cell, "weighted");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(cell, "rho_after");
    if (!cJSON_IsString(key) || !cJSON_IsArray(ws) || !cJSON_IsArray(rs) ||
        cJSON_GetArraySize(ws) != cJSON_GetArraySize(rs))
        return tsim_error_set(err, TSIM_E_INPUT, "frontier: each cell needs \"key\" and \"weighted\" and "
                              "\"rho_after\" arrays of one length");
    plot_text_add(d, "# %s: the frontier's lower bound (mean per record)\n# weighted rho_after_pct\n", key->valuestring);
    for (int i = 0; i < cJSON_GetArraySize(ws); i++)
        plot_text_add(d, "%.10g %.10g\n", cJSON_GetArrayItem(ws, i)->valuedouble,
                      100.0 * cJSON_GetArrayItem(rs, i)->valuedouble);
    plot_text_add(d, "\n\n# planners: weighted rho_after_pct (means per record)\n");
    plot_text_add(g, "# taotsim table1 --bounds: planners against the frontier, cell %s\n"
                  "if (!exists(\"fmt\")) fmt = \"png\"\nif (!exists(\"out\")) out = \"%s.\" . fmt\n"
                  "if (fmt eq \"svg\") set terminal svg size 800,560 dynamic; else set terminal pngcairo size 800,560\n"
                  "set output out\nset termoption noenhanced\nset title \"Table 1 (%s), cell %s: planners against the proven frontier\"\n"
                  "set xlabel \"weighted cost (mean per record)\"\nset ylabel \"rho after, %% (mean per record)\"\n"
                  "set key top right\nset grid\nplot \"%s.dat\" index 0 using 1:2 with fsteps lw 2 lc rgb \"#404040\" "
                  "title \"no plan below (lower bound)\"",
                  key->valuestring, name, ctx, key->valuestring, name);
    int k = 0;
    for (const cJSON *r = results ? results->child : NULL; r; r = r->next) {
        const cJSON *rk = cJSON_GetObjectItemCaseSensitive(r, "key");
        const cJSON *pl = cJSON_GetObjectItemCaseSensitive(r, "planner");
        double w = metric_mean(r, "weighted"), rho = metric_mean(r, "rho_after");
        if (!cJSON_IsString(rk) || strcmp(rk->valuestring, key->valuestring) != 0 || !cJSON_IsString(pl) ||
            isnan(w) || isnan(rho))
            continue;
        const bool outside = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(r, "bounds"));
        plot_text_add(d, "%.10g %.10g\n", w, 100.0 * rho);
        plot_text_add(g, ", \\\n  \"%s.dat\" index 1 every ::%d::%d using 1:2 with points pt %d ps 1.8 lc rgb \"%s\" "
                      "title \"%s%s\"",
                      name, k, k, tsim_plot_planner_point(pl->valuestring) - (outside ? 1 : 0),
                      tsim_plot_planner_colour(pl->valuestring), pl->valuestring,
                      outside ? " (outside the bound's model)" : "");
        k++;
    }
    plot_text_add(g, "\n");
    return d->oom || g->oom ? plot_oom(err) : TSIM_OK;
}

/* Each cell: a key and two number arrays of one length. */
int tsim_plot_frontier_check(const cJSON *result, tsim_error *err)
{
    const cJSON *cells = cJSON_GetObjectItemCaseSensitive(result, "frontier");
    if (!cells)
        return TSIM_OK;
    if (!cJSON_IsArray(cells))
        return tsim_error_set(err, TSIM_E_INPUT, "\"frontier\" is not an array");
    int i = 0;
    for (const cJSON *cell = cells->child; cell; cell = cell->next, i++) {
        const cJSON *key = cJSON_GetObjectItemCaseSensitive(cell, "key");
        const cJSON *a[2] = {cJSON_GetObjectItemCaseSensitive(cell, "weighted"),
                             cJSON_GetObjectItemCaseSensitive(cell, "rho_after")};
        if (!cJSON_IsString(key))
            return tsim_error_set(err, TSIM_E_INPUT, "frontier[%d]: missing \"key\"", i);
        for (int k = 0; k < 2; k++) {
            if (!cJSON_IsArray(a[k]) || cJSON_GetArraySize(a[k]) != cJSON_GetArraySize(a[0]))
                return tsim_error_set(err, TSIM_E_INPUT, "frontier[%d]: \"%s\" must be an array as long as "
                                      "\"weighted\"", i, k ? "rho_after" : "weighted");
            for (const cJSON *v = a[k]->child; v; v = v->next)
                if (!cJSON_IsNumber(v))
                    return tsim_error_set(err, TSIM_E_INPUT, "frontier[%d].%s: not a number", i,
                                          k ? "rho_after" : "weighted");
        }
    }
    return TSIM_OK;
}

int tsim_plot_frontier(const cJSON *result, const char *outdir, const char *gnuplot, int formats, FILE *log,
                       tsim_plot_files *written, tsim_error *err)
{
    const cJSON *cells = cJSON_GetObjectItemCaseSensitive(result, "frontier");
    if (!cJSON_IsArray(cells))
        return TSIM_OK;
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(result, "results");
    char ctx[192];
    plot_study_context(&(study){.root = result}, ctx, sizeof ctx);
    int rc = TSIM_OK;
    for (const cJSON *cell = cells->child; cell && rc == TSIM_OK; cell = cell->next) {
        const cJSON *key = cJSON_GetObjectItemCaseSensitive(cell, "key");
        char name[160], file[200];
        snprintf(name, sizeof name, "table1_frontier_%s", cJSON_IsString(key) ? key->valuestring : "cell");
        for (char *p = name; *p; p++)
            *p = *p == '.' ? '_' : *p;
        text dat = {0}, gp = {0};
        rc = cell_files(cell, results, ctx, name, &dat, &gp, err);
        if (rc == TSIM_OK) {
            snprintf(file, sizeof file, "%s.dat", name);
            rc = plot_write_file(outdir, file, &dat, written, err);
        }
        if (rc == TSIM_OK) {
            snprintf(file, sizeof file, "%s.gp", name);
            rc = plot_write_file(outdir, file, &gp, written, err);
        }
        if (rc == TSIM_OK && (formats & TSIM_PLOT_PNG))
            rc = plot_render(gnuplot, outdir, name, "png", log, written, err);
        if (rc == TSIM_OK && (formats & TSIM_PLOT_SVG))
            rc = plot_render(gnuplot, outdir, name, "svg", log, written, err);
        plot_text_free(&dat);
        plot_text_free(&gp);
    }
    return rc;
}
