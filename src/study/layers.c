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
