/* Figure replay_layers: balancedness per layer, from a replay result made
 * with --by-layer (a "layers" array in each planner's result). x: the layer
 * id; y: the mean over the layer's records of mean/max load, before planning
 * (grey, dashed) and after each planner (its colour and point), with vLLM's
 * ratio of sums after each planner as a thin dotted line of the same colour
 * (model.md, "Balance and capacity"). Template plots/replay_layers.gp. */
#ifndef TSIM_PLOT_LAYERS_H
#define TSIM_PLOT_LAYERS_H

#include <stdbool.h>

#include "error.h"

struct cJSON;

/* Whether any result of a replay's "results" carries "layers". */
bool tsim_plot_layers_present(const struct cJSON *results);

/* Builds the data file's text (*dat) and the figure's generated variables
 * (*vars: NL, PLANNERS, NP, COLORS, POINTS), both malloc'd. A malformed "layers"
 * entry is TSIM_E_INPUT naming it ("results[1].layers[2]: ..."). */
int tsim_plot_layers_build(const struct cJSON *results, char **dat, char **vars, tsim_error *err);

#endif
