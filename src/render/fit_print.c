/* taotsim fit's output (fit_print.h): the ranking as markdown, CSV or JSON,
 * and the provenance a regime file records. Moved out of study/fit.c, which
 * returns the fit's numbers only. */
#include "fit_print.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "provenance.h"

/* ---- output --------------------------------------------------------------------------------- */

static void fmt_hot_experts(char *buf, size_t n, int m)
{
    if (m > 0)
        snprintf(buf, n, "%d", m);
    else
        snprintf(buf, n, "all");
}

static cJSON *regime_summary_json(const tsim_fit_result *r, int index, int rank)
{
    const tsim_fit_regime *fr = &r->regimes[index];
    const tsim_gen_params *p = &fr->regime.gen;
    char spec[64], m[16];
    tsim_gen_hot_ranks_format(p, spec, sizeof spec);
    fmt_hot_experts(m, sizeof m, p->hot_experts);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "rank", rank + 1);
    cJSON_AddNumberToObject(j, "regime", index + 1);
    cJSON_AddStringToObject(j, "hot_ranks", spec);
    cJSON_AddStringToObject(j, "hot_experts", m);
    cJSON_AddNumberToObject(j, "hot_skew", p->hot_skew);
    cJSON_AddNumberToObject(j, "concentration", p->concentration);
    cJSON_AddNumberToObject(j, "tokens", p->tokens);
    cJSON_AddBoolToObject(j, "feasible", fr->feasible);
    if (!fr->feasible) {
        cJSON_AddNullToObject(j, "distance");
        cJSON_AddStringToObject(j, "error", fr->error);
        return j;
    }
    cJSON_AddNumberToObject(j, "distance", fr->distance);
    cJSON *pd = cJSON_AddObjectToObject(j, "planners");
    for (int q = 0; q < TSIM_FIT_PLANNERS; q++)
        cJSON_AddNumberToObject(pd, tsim_fit_planner_names[q], fr->planner_distance[q]);
    return j;
}

static cJSON *cells_json(const tsim_fit_regime *fr)
{
    cJSON *cells = cJSON_CreateArray();
    for (int cell = 0; cell < TSIM_FIT_CELLS; cell++) {
        for (int p = 0; p < TSIM_FIT_PLANNERS; p++) {
            const tsim_fit_entry *e = &fr->entries[cell][p];
            cJSON *j = cJSON_CreateObject();
            cJSON_AddNumberToObject(j, "ep", tsim_fit_cell_ep(cell));
            cJSON_AddNumberToObject(j, "imbalance", tsim_fit_cell_imbalance(cell));
            cJSON_AddNumberToObject(j, "achieved", fr->achieved[cell]);
            cJSON_AddNumberToObject(j, "hot_fraction", fr->hot_fraction[cell]);
            cJSON_AddStringToObject(j, "planner", tsim_fit_planner_names[p]);
            cJSON_AddBoolToObject(j, "ok", e->ok);
            for (int q = 0; q < TSIM_FIT_METRICS; q++) {
                cJSON *m = cJSON_AddObjectToObject(j, tsim_fit_metric_names[q]);
                if (e->ok)
                    cJSON_AddNumberToObject(m, "ours", e->ours[q]);
                else
                    cJSON_AddNullToObject(m, "ours");
                cJSON_AddNumberToObject(m, "paper", e->paper[q]);
                cJSON_AddNumberToObject(m, "residual", e->resid[q]);
            }
            cJSON_AddItemToArray(cells, j);
        }
    }
    return cells;
}

static int shown_regimes(const tsim_fit_result *r)
{
    int top = r->grid.top < r->n ? r->grid.top : r->n;
    int feasible = 0;
    while (feasible < top && r->regimes[r->order[feasible]].feasible)
        feasible++;
    return feasible;
}

cJSON *tsim_fit_json(const tsim_fit_result *r)
{
    cJSON *root = tsim_result_json_new();
    cJSON_AddStringToObject(root, "study", "fit");
    cJSON *params = cJSON_AddObjectToObject(root, "params");
    const tsim_fit_grid *g = &r->grid;
    cJSON_AddNumberToObject(params, "slots", r->slots);
    cJSON_AddNumberToObject(params, "lambda_plan", r->lambda_plan);
    cJSON_AddNumberToObject(params, "lambda_eval", r->lambda_eval);
    cJSON_AddNumberToObject(params, "experts", g->base.experts);
    cJSON_AddNumberToObject(params, "ranks_per_node", g->base.ranks_per_node);
    cJSON_AddNumberToObject(params, "topk", g->base.topk);
    cJSON_AddNumberToObject(params, "microbatches", g->base.microbatches);
    cJSON_AddNumberToObject(params, "layers", g->base.layers);
    cJSON_AddNumberToObject(params, "drift", g->base.drift);
    cJSON_AddNumberToObject(params, "seed", (double)g->base.seed);
    cJSON *a = cJSON_AddArrayToObject(params, "hot_ranks");
    for (int i = 0; i < g->n_placements; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(g->placements[i]));
    a = cJSON_AddArrayToObject(params, "hot_experts");
    for (int i = 0; i < g->n_hot_experts; i++) {
        char m[16];
        fmt_hot_experts(m, sizeof m, g->hot_experts[i]);
        cJSON_AddItemToArray(a, cJSON_CreateString(m));
    }
    a = cJSON_AddArrayToObject(params, "hot_skew");
    for (int i = 0; i < g->n_skews; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(g->skews[i]));
    a = cJSON_AddArrayToObject(params, "concentration");
    for (int i = 0; i < g->n_concentrations; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(g->concentrations[i]));
    a = cJSON_AddArrayToObject(params, "tokens");
    for (int i = 0; i < g->n_tokens; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(g->tokens[i]));
    cJSON_AddNumberToObject(params, "top", g->top);
    cJSON_AddStringToObject(params, "distance",
                            "sqrt(mean over planners, cells and metrics of e^2), e = (ours - paper) / (|paper| + s), "
                            "s = 1 pp (improve_pp), 2 (intra, inter); n/a counts e = 1");
    cJSON *regimes = cJSON_AddArrayToObject(root, "regimes");
    for (int k = 0; k < r->n; k++)
        cJSON_AddItemToArray(regimes, regime_summary_json(r, r->order[k], k));
    cJSON *closest = cJSON_AddObjectToObject(root, "closest_per_planner");
    for (int p = 0; p < TSIM_FIT_PLANNERS && r->n > 0; p++) {
        int rank = 0;
        while (r->order[rank] != r->closest[p])
            rank++;
        cJSON *j = cJSON_AddObjectToObject(closest, tsim_fit_planner_names[p]);
        cJSON_AddNumberToObject(j, "rank", rank + 1);
        const double d = r->regimes[r->closest[p]].planner_distance[p];
        if (isfinite(d))
            cJSON_AddNumberToObject(j, "distance", d);
        else
            cJSON_AddNullToObject(j, "distance");
    }
    cJSON *best = cJSON_AddArrayToObject(root, "best");
    for (int k = 0; k < shown_regimes(r); k++) {
        cJSON *j = regime_summary_json(r, r->order[k], k);
        cJSON_AddItemToObject(j, "cells", cells_json(&r->regimes[r->order[k]]));
        cJSON_AddItemToArray(best, j);
    }
    return root;
}

cJSON *tsim_fit_provenance(const tsim_fit_result *r, int rank)
{
    const tsim_fit_regime *fr = &r->regimes[r->order[rank]];
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    cJSON_AddStringToObject(j, "command", tsim_report_command_line());
    cJSON_AddNumberToObject(j, "rank", rank + 1);
    cJSON_AddNumberToObject(j, "regimes", r->n);
    if (isfinite(fr->distance)) {
        cJSON_AddNumberToObject(j, "distance", fr->distance);
        cJSON *pd = cJSON_AddObjectToObject(j, "planners");
        for (int p = 0; p < TSIM_FIT_PLANNERS; p++)
            cJSON_AddNumberToObject(pd, tsim_fit_planner_names[p], fr->planner_distance[p]);
    }
    cJSON_AddNumberToObject(j, "slots", r->slots);
    cJSON_AddNumberToObject(j, "lambda_eval", r->lambda_eval);
    return j;
}

#define CELL 64

static void num(char *buf, double v, int dec)
{
    tsim_fmt_num(buf, CELL, v, dec);
}

static void regime_cells(char (*c)[CELL], const tsim_regime *rg)
{
    tsim_gen_hot_ranks_format(&rg->gen, c[0], CELL);
    fmt_hot_experts(c[1], CELL, rg->gen.hot_experts);
    snprintf(c[2], CELL, "%g", rg->gen.hot_skew);
    snprintf(c[3], CELL, "%g", rg->gen.concentration);
    snprintf(c[4], CELL, "%d", rg->gen.tokens);
}

static int print_md(FILE *out, const tsim_fit_result *r)
{
    const tsim_fit_grid *g = &r->grid;
    fprintf(out, "# Fit: generator regimes against the paper's Table 1\n\n");
    fprintf(out,
            "%d regimes x 10 cells (EP16, EP32 x 10/20/30/50/70%%) x echo, llep, lplb, taot; K = %d, λ = %g; "
            "%lld records per cell (%d microbatches x %d layers), seed %llu.\n",
            r->n, r->slots, r->lambda_eval, (long long)g->base.microbatches * g->base.layers, g->base.microbatches,
            g->base.layers, (unsigned long long)g->base.seed);
    fprintf(out, "Distance: root mean square over planners, cells and {improve pp, intra, inter} of\n"
                 "e = (ours - paper) / (|paper| + s), s = 1 pp for improve, 2 replicas for intra and inter.\n\n");

    fprintf(out, "## Best regimes\n\n");
    const char *h[] = {"rank", "hot ranks", "hot experts", "skew", "concentration", "tokens",
                       "distance", "echo", "llep", "lplb", "taot"};
    tsim_table t;
    if (tsim_table_init(&t, 11, h))
        return -1;
    int listed = r->grid.top * 4 > 10 ? r->grid.top * 4 : 10;
    int infeasible = 0;
    for (int k = 0; k < r->n; k++) {
        const tsim_fit_regime *fr = &r->regimes[r->order[k]];
        if (!fr->feasible) {
            infeasible++;
            continue;
        }
        if (k >= listed)
            continue;
        char c[11][CELL];
        snprintf(c[0], CELL, "%d", k + 1);
        regime_cells(c + 1, &fr->regime);
        num(c[6], fr->distance, 3);
        for (int p = 0; p < TSIM_FIT_PLANNERS; p++)
            num(c[7 + p], fr->planner_distance[p], 3);
        if (tsim_table_add_row_cells(&t, c[0], CELL)) {
            tsim_table_free(&t);
            return -1;
        }
    }
    tsim_table_print(&t, out, TSIM_FORMAT_MD);
    tsim_table_free(&t);
    if (r->n - infeasible > listed)
        fprintf(out, "\n(%d more feasible regimes in --format json.)\n", r->n - infeasible - listed);
    if (infeasible) {
        fprintf(out, "\nInfeasible regimes (some cell cannot be generated):\n\n");
        for (int k = 0; k < r->n; k++) {
            const tsim_fit_regime *fr = &r->regimes[r->order[k]];
            if (fr->feasible)
                continue;
            char what[200];
            tsim_regime_describe(&fr->regime, what, sizeof what);
            fprintf(out, "- %s: %s\n", what, fr->error);
        }
    }

    fprintf(out, "\n## Closest regime per planner\n\n");
    const char *hc[] = {"planner", "distance", "rank", "hot ranks", "hot experts", "skew", "concentration", "tokens"};
    if (tsim_table_init(&t, 8, hc))
        return -1;
    for (int p = 0; p < TSIM_FIT_PLANNERS; p++) {
        const tsim_fit_regime *fr = &r->regimes[r->closest[p]];
        int rank = 0;
        while (r->order[rank] != r->closest[p])
            rank++;
        char c[8][CELL];
        snprintf(c[0], CELL, "%s", tsim_fit_planner_names[p]);
        num(c[1], fr->planner_distance[p], 3);
        snprintf(c[2], CELL, "%d", rank + 1);
        regime_cells(c + 3, &fr->regime);
        if (tsim_table_add_row_cells(&t, c[0], CELL)) {
            tsim_table_free(&t);
            return -1;
        }
    }
    tsim_table_print(&t, out, TSIM_FORMAT_MD);
    tsim_table_free(&t);

    const char *hr[] = {"EP", "init", "measured init %", "method", "improve pp", "paper", "e", "intra", "paper", "e",
                        "inter", "paper", "e"};
    for (int k = 0; k < shown_regimes(r); k++) {
        const tsim_fit_regime *fr = &r->regimes[r->order[k]];
        char what[200];
        tsim_regime_describe(&fr->regime, what, sizeof what);
        fprintf(out, "\n## Rank %d: %s (distance %.3f)\n\n", k + 1, what, fr->distance);
        if (tsim_table_init(&t, 13, hr))
            return -1;
        for (int cell = 0; cell < TSIM_FIT_CELLS; cell++) {
            for (int p = 0; p < TSIM_FIT_PLANNERS; p++) {
                const tsim_fit_entry *e = &fr->entries[cell][p];
                char c[13][CELL];
                snprintf(c[0], CELL, "%d", tsim_fit_cell_ep(cell));
                snprintf(c[1], CELL, "%d%%", (int)lround(tsim_fit_cell_imbalance(cell) * 100));
                num(c[2], 100 * fr->achieved[cell], 1);
                snprintf(c[3], CELL, "%s", tsim_fit_planner_names[p]);
                for (int q = 0; q < TSIM_FIT_METRICS; q++) {
                    if (e->ok)
                        num(c[4 + 3 * q], e->ours[q], 1);
                    else
                        snprintf(c[4 + 3 * q], CELL, "n/a");
                    num(c[5 + 3 * q], e->paper[q], 1);
                    tsim_fmt_signed_num(c[6 + 3 * q], CELL, e->resid[q], 2);
                }
                if (tsim_table_add_row_cells(&t, c[0], CELL)) {
                    tsim_table_free(&t);
                    return -1;
                }
            }
        }
        tsim_table_print(&t, out, TSIM_FORMAT_MD);
        tsim_table_free(&t);
    }
    if (shown_regimes(r) == 0)
        fprintf(out, "\nNo regime of the grid can generate every cell.\n");
    return 0;
}

static int print_csv(FILE *out, const tsim_fit_result *r)
{
    fputs("rank,hot_ranks,hot_experts,hot_skew,concentration,tokens,distance,ep,imbalance,achieved,planner,metric,"
          "ours,paper,residual\n",
          out);
    for (int k = 0; k < shown_regimes(r); k++) {
        const tsim_fit_regime *fr = &r->regimes[r->order[k]];
        char c[5][CELL];
        regime_cells(c, &fr->regime);
        for (int cell = 0; cell < TSIM_FIT_CELLS; cell++)
            for (int p = 0; p < TSIM_FIT_PLANNERS; p++)
                for (int q = 0; q < TSIM_FIT_METRICS; q++) {
                    const tsim_fit_entry *e = &fr->entries[cell][p];
                    char ours[32] = "";
                    if (e->ok)
                        snprintf(ours, sizeof ours, "%.10g", e->ours[q]);
                    fprintf(out, "%d,\"%s\",%s,%s,%s,%s,%.10g,%d,%g,%.10g,%s,%s,%s,%.10g,%.10g\n", k + 1, c[0], c[1],
                            c[2], c[3], c[4], fr->distance, tsim_fit_cell_ep(cell), tsim_fit_cell_imbalance(cell),
                            fr->achieved[cell], tsim_fit_planner_names[p], tsim_fit_metric_names[q], ours,
                            e->paper[q], e->resid[q]);
                }
    }
    return 0;
}

int tsim_fit_print(FILE *out, const tsim_fit_result *r, tsim_format fmt, tsim_error *err)
{
    int rc = 0;
    if (fmt == TSIM_FORMAT_JSON) {
        cJSON *j = tsim_fit_json(r);
        rc = j ? tsim_json_print(out, j) : -1;
        cJSON_Delete(j);
    } else if (fmt == TSIM_FORMAT_CSV) {
        rc = print_csv(out, r);
    } else {
        rc = print_md(out, r);
    }
    if (rc)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory while formatting the fit");
    return TSIM_OK;
}
