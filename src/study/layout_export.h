/* The layout a run ends with, for --export-layout (replay, and taotsim
 * advise): the last layout each layer's plans carried, collected from the
 * plans of one planner in record order. Library code: no printing. */
#ifndef TSIM_LAYOUT_EXPORT_H
#define TSIM_LAYOUT_EXPORT_H

#include <stdbool.h>

#include "error.h"
#include "layout_io.h"
#include "plan.h"
#include "planner.h"
#include "record.h"

/* Whether a planner's plans are layouts (eplb, trtllm, swift: production-
 * balancers.md 1.1), the planners --export-layout exports and --X-layout serves. */
bool tsim_planner_has_layouts(const tsim_planner *p);

typedef struct {
    tsim_layout_table layouts; /* the last layout of each layer */
    tsim_layout_table seen;    /* every layer planned (rows of one entry) */
} tsim_layout_collector;

void tsim_layout_collector_init(tsim_layout_collector *c);
void tsim_layout_collector_free(tsim_layout_collector *c);

/* Records the plan's layout (if it carries one) as its layer's latest. */
int tsim_layout_collector_add(tsim_layout_collector *c, const tsim_record *rec, const tsim_plan *plan,
                              tsim_error *err);

/* The collected layouts, once every planned layer has one; TSIM_E_INPUT
 * naming the planner label and the layer otherwise (eplb before its first
 * recomputation), or when nothing was planned. */
int tsim_layout_collector_finish(const tsim_layout_collector *c, const char *label, const tsim_layout_table **out,
                                 tsim_error *err);

#endif
