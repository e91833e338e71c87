/* taotsim advise's tables: markdown (the recommendation, every setting, the
 * Pareto set) and CSV (every setting). */
#ifndef TSIM_ADVISE_PRINT_H
#define TSIM_ADVISE_PRINT_H

#include <stdio.h>

#include "advise.h"
#include "report.h"

int tsim_advise_print(FILE *out, const tsim_study *s, tsim_format fmt, tsim_error *err);

#endif
