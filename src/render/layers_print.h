/* The per-layer tables of replay --by-layer (layers.h has the data). */
#ifndef TSIM_LAYERS_PRINT_H
#define TSIM_LAYERS_PRINT_H

#include <stdio.h>

#include "layers.h"
#include "report.h"

/* The per-layer tables: markdown (a "## per layer" section, means) or CSV
 * (planner,layer,metric,mean,std,min,p50,p95,max). Returns -1 when out of
 * memory. */
int tsim_layers_print(FILE *out, const tsim_session *s, tsim_format format);

#endif
