/* Printing a study's result (table1, ablation, sweep, scaling): markdown,
 * CSV, or the JSON result. */
#ifndef TSIM_STUDY_PRINT_H
#define TSIM_STUDY_PRINT_H

#include <stdbool.h>
#include <stdio.h>

#include "error.h"
#include "report.h"
#include "study.h"

struct cJSON;

/* Markdown or CSV of a study (JSON: tsim_study_json). */
int tsim_study_print(FILE *out, const tsim_study *s, tsim_format fmt, bool show_std, tsim_error *err);

/* The JSON result: tool, version, command, study, params, results[], extra fields. */
struct cJSON *tsim_study_json(const tsim_study *s);

/* --bounds: the section of excess metrics per cell and planner (markdown),
 * after a study's table; nothing when no row measured them (bounds_print.c). */
int tsim_study_print_bounds(FILE *out, const tsim_study *s);

#endif
