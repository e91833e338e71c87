/* The planner registry and the --planners list syntax (architecture.md). */
#ifndef TSIM_REGISTRY_H
#define TSIM_REGISTRY_H

#include <stdio.h>

#include "planner.h"

const tsim_planner_desc *tsim_planner_find(const char *name);

/* NULL-terminated list of every registered planner. */
const tsim_planner_desc *const *tsim_planner_all(void);

/* Parses one entry of --planners: NAME, or LABEL=NAME, or LABEL=NAME:--opt=v:--flag
 * (options after the planner name separated by ':'), applied on top of base. */
int tsim_planner_spec_parse(tsim_planner *p, const char *spec, const tsim_planner_options *base, tsim_error *err);

/* Appends one --planners entry to out[0..*n), rejecting a label already there. */
int tsim_planner_list_add(tsim_planner *out, int max, int *n, const char *spec, const tsim_planner_options *base,
                          tsim_error *err);

/* Parses a comma-separated --planners list into out[0..max-1]; *n receives
 * the count (at least one). */
int tsim_planner_list_parse(const char *list, const tsim_planner_options *base, tsim_planner *out, int max, int *n,
                            tsim_error *err);

/* Writes one line per planner of the list that fell back (see fell_back). */
void tsim_planner_report_fallbacks(const tsim_planner *planners, int n, FILE *out);

#endif
