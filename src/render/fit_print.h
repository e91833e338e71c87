/* Printing a fit (study/fit.h): markdown (ranking, closest regime per planner,
 * per-cell residuals of the top regimes), CSV (one row per top regime, cell,
 * planner and metric) or JSON (tsim_fit_json). */
#ifndef TSIM_FIT_PRINT_H
#define TSIM_FIT_PRINT_H

#include <stdio.h>

#include "error.h"
#include "fit.h"
#include "report.h"

struct cJSON;

int tsim_fit_print(FILE *out, const tsim_fit_result *r, tsim_format fmt, tsim_error *err);
struct cJSON *tsim_fit_json(const tsim_fit_result *r);

/* The "fit" member of a regime file for ranked regime `rank` (0 = best). */
struct cJSON *tsim_fit_provenance(const tsim_fit_result *r, int rank);

#endif
