/* The per-layer tables of replay --by-layer (layers.h has the data). */
#ifndef TSIM_LAYERS_PRINT_H
#define TSIM_LAYERS_PRINT_H

#include <stdio.h>

#include "layers.h"
#include "report.h"

struct cJSON;

/* The "layers" array of one planner: per layer its id, records, the summary
 * of every metric that is on, and vLLM's form. */
struct cJSON *tsim_layers_json(const tsim_session *s, int planner);

/* The per-layer tables: markdown (a "## per layer" section, means) or CSV
 * (planner,layer,metric,mean,std,min,p50,p95,max). Returns -1 when out of
 * memory. */
int tsim_layers_print(FILE *out, const tsim_session *s, tsim_format format);

#endif
