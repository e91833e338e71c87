/* The per-layer tables of --by-layer (markdown and CSV); the data and its
 * JSON come from study/layers.c. */
#include "layers_print.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

cJSON *tsim_layers_json(const tsim_session *s, int planner)
{
    const tsim_planner_result *res = &s->results[planner];
    cJSON *arr = cJSON_CreateArray();
    for (int l = 0; arr && l < res->n_layers; l++) {
        const tsim_layer_result *lr = &res->layers[l];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "layer", (double)lr->layer);
        cJSON_AddNumberToObject(j, "record_count", (double)lr->records);
        cJSON *metrics = cJSON_AddObjectToObject(j, "metrics");
        for (int m = 0; m < TSIM_M_COUNT; m++) {
            if (!tsim_session_metric_on(s, m))
                continue;
            tsim_summary sum = tsim_series_summary(&lr->metrics[m]);
            cJSON_AddItemToObject(metrics, tsim_metric_names[m], tsim_summary_json(&sum));
        }
        cJSON_AddItemToObject(j, "balancedness_vllm", tsim_vllm_balancedness_json(lr->metrics));
        cJSON_AddItemToArray(arr, j);
    }
    return arr;
}

/* A column of the per-layer table: a metric's mean, scaled, or vLLM's form. */
typedef struct {
    const char *header;
    int metric;   /* -1: vLLM before, -2: vLLM after */
    double scale;
    int decimals;
} layer_column;

static int layer_columns(const tsim_session *s, layer_column *cols)
{
    int n = 0;
    cols[n++] = (layer_column){"rho before %", TSIM_M_RHO_BEFORE, 100, 2};
    cols[n++] = (layer_column){"rho after %", TSIM_M_RHO_AFTER, 100, 2};
    cols[n++] = (layer_column){"balancedness before", TSIM_M_BALANCEDNESS_BEFORE, 1, 4};
    cols[n++] = (layer_column){"balancedness after", TSIM_M_BALANCEDNESS_AFTER, 1, 4};
    cols[n++] = (layer_column){"vLLM balancedness before", -1, 1, 4};
    cols[n++] = (layer_column){"vLLM balancedness after", -2, 1, 4};
    if (tsim_session_metric_on(s, TSIM_M_DROPPED_BEFORE)) {
        cols[n++] = (layer_column){"dropped before", TSIM_M_DROPPED_BEFORE, 1, 1};
        cols[n++] = (layer_column){"dropped after", TSIM_M_DROPPED_AFTER, 1, 1};
    }
    cols[n++] = (layer_column){"improve pp", TSIM_M_IMPROVE_PP, 1, 2};
    cols[n++] = (layer_column){"intra", TSIM_M_INTRA, 1, 2};
    cols[n++] = (layer_column){"inter", TSIM_M_INTER, 1, 2};
    cols[n++] = (layer_column){"weighted", TSIM_M_WEIGHTED, 1, 2};
    if (tsim_session_metric_on(s, TSIM_M_REHOMED_INTRA)) {
        cols[n++] = (layer_column){"rehomed intra", TSIM_M_REHOMED_INTRA, 1, 2};
        cols[n++] = (layer_column){"rehomed inter", TSIM_M_REHOMED_INTER, 1, 2};
    }
    cols[n++] = (layer_column){"offloaded", TSIM_M_OFFLOADED, 1, 1};
    cols[n++] = (layer_column){"x-node tokens before", TSIM_M_TRAFFIC_INTER_BEFORE, 1, 1};
    cols[n++] = (layer_column){"x-node tokens after", TSIM_M_TRAFFIC_INTER_AFTER, 1, 1};
    if (tsim_session_metric_on(s, TSIM_M_SPEEDUP)) {
        cols[n++] = (layer_column){"step ms (model)", TSIM_M_STEP_MS, 1, 3};
        cols[n++] = (layer_column){"speedup (model)", TSIM_M_SPEEDUP, 1, 3};
    }
    return n;
}

static double column_value(const layer_column *c, const tsim_series *metrics)
{
    if (c->metric >= 0)
        return c->scale * tsim_series_mean(&metrics[c->metric]);
    const int max = c->metric == -1 ? TSIM_M_LOAD_MAX_BEFORE : TSIM_M_LOAD_MAX_AFTER;
    return tsim_vllm_balancedness(tsim_series_mean(&metrics[TSIM_M_LOAD_MEAN]), tsim_series_mean(&metrics[max]));
}

static int print_csv(FILE *out, const tsim_session *s)
{
    fputs("planner,layer,metric,mean,std,min,p50,p95,max\n", out);
    for (int p = 0; p < s->n_planners; p++)
        for (int l = 0; l < s->results[p].n_layers; l++) {
            const tsim_layer_result *lr = &s->results[p].layers[l];
            for (int m = 0; m < TSIM_M_COUNT; m++) {
                if (!tsim_session_metric_on(s, m))
                    continue;
                tsim_summary x = tsim_series_summary(&lr->metrics[m]);
                fprintf(out, "%s,%lld,%s,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g\n", s->planners[p].label,
                        (long long)lr->layer, tsim_metric_names[m], x.mean, x.std, x.min, x.p50, x.p95, x.max);
            }
        }
    return 0;
}

int tsim_layers_print(FILE *out, const tsim_session *s, tsim_format format)
{
    if (format == TSIM_FORMAT_CSV)
        return print_csv(out, s);
    enum { MAX_COLS = 32, FIXED = 3 };
    layer_column cols[MAX_COLS];
    const int n = layer_columns(s, cols);
    const char *headers[MAX_COLS + FIXED] = {"layer", "planner", "records"};
    for (int k = 0; k < n; k++)
        headers[FIXED + k] = cols[k].header;
    tsim_table t;
    if (tsim_table_init(&t, FIXED + n, headers))
        return -1;
    /* Layer-major, every planner of a layer together: a cursor per planner
     * into its ascending layers, always taking the smallest layer id. */
    int *at = calloc((size_t)(s->n_planners > 0 ? s->n_planners : 1), sizeof *at);
    if (!at) {
        tsim_table_free(&t);
        return -1;
    }
    for (;;) {
        const tsim_layer_result *low = NULL;
        for (int p = 0; p < s->n_planners; p++)
            if (at[p] < s->results[p].n_layers && (!low || s->results[p].layers[at[p]].layer < low->layer))
                low = &s->results[p].layers[at[p]];
        if (!low)
            break;
        const int64_t layer = low->layer;
        for (int p = 0; p < s->n_planners; p++) {
            if (at[p] >= s->results[p].n_layers || s->results[p].layers[at[p]].layer != layer)
                continue;
            const tsim_layer_result *lr = &s->results[p].layers[at[p]++];
            char c[MAX_COLS + FIXED][48];
            snprintf(c[0], sizeof c[0], "%lld", (long long)layer);
            snprintf(c[1], sizeof c[1], "%s", s->planners[p].label);
            snprintf(c[2], sizeof c[2], "%lld", (long long)lr->records);
            for (int k = 0; k < n; k++)
                tsim_fmt_num(c[FIXED + k], sizeof c[0], column_value(&cols[k], lr->metrics), cols[k].decimals);
            const char *cells[MAX_COLS + FIXED];
            for (int k = 0; k < FIXED + n; k++)
                cells[k] = c[k];
            tsim_table_add_row(&t, cells);
        }
    }
    free(at);
    fputs("\n## per layer (means over the layer's records)\n\n", out);
    tsim_table_print(&t, out, format);
    tsim_table_free(&t);
    return 0;
}
