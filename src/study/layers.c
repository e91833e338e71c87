#include "layers.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

double tsim_vllm_balancedness(double load_mean_mean, double load_max_mean)
{
    return load_max_mean > 0 ? load_mean_mean / load_max_mean : 0.0;
}

cJSON *tsim_vllm_balancedness_json(const tsim_series *metrics)
{
    const double mean = tsim_series_mean(&metrics[TSIM_M_LOAD_MEAN]);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "before",
                            tsim_vllm_balancedness(mean, tsim_series_mean(&metrics[TSIM_M_LOAD_MAX_BEFORE])));
    cJSON_AddNumberToObject(j, "after",
                            tsim_vllm_balancedness(mean, tsim_series_mean(&metrics[TSIM_M_LOAD_MAX_AFTER])));
    return j;
}

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
