/* Metrics per layer (--by-layer) and vLLM's aggregate balancedness, for the
 * replay output (markdown, CSV, JSON). model.md defines both. */
#ifndef TSIM_LAYERS_H
#define TSIM_LAYERS_H

#include "session.h"

struct cJSON;

/* vLLM's form over a set of records: the sum of their mean loads over the
 * sum of their largest loads (0 when every load is 0). Given the means of the
 * load_mean and load_max_* series, which have the same count, that is the
 * ratio of the means. */
double tsim_vllm_balancedness(double load_mean_mean, double load_max_mean);

/* {"before": ..., "after": ...} of vLLM's form over a set of series. */
struct cJSON *tsim_vllm_balancedness_json(const tsim_series *metrics);



#endif
