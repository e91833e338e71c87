/* Planner configurations derived from the registry, for the tests that cover
 * every planner (test_every_planner, test_extremes): no list of names. */
#ifndef TSIM_PLANNER_CONFIGS_H
#define TSIM_PLANNER_CONFIGS_H

#include <stdbool.h>

#include "planner.h"

/* THE cost rule of the tests, in one place. The descriptor has no cost class
 * yet (issue 21 item 3 adds one); until it does, a planner is expensive when
 * it runs a branch-and-bound search, which its option table shows as a
 * NAME-node-limit option (`optimal`, the GLPK MIP). */
bool planner_is_expensive(const tsim_planner_desc *desc);

#define TSIM_CONFIG_SPEC_MAX 192
typedef char tsim_config_spec[TSIM_CONFIG_SPEC_MAX];

/* --planners entries: every registered planner by its name, each followed,
 * with variants, by one entry per other value of each of its choice options
 * and one per flag (LABEL=NAME:--OPTION[=VALUE], LABEL = NAME-VALUE or the
 * flag's name), so that another code path (TAOT's split phase 3, LPLB's
 * exact solver, EPLB's oracle history) is covered as soon as its option
 * exists. Test-only planners (tests/planners/test_registry.c) are in the
 * registry and so in the list. Returns the count; asserts it fits max. */
int tsim_registry_configs(tsim_config_spec *out, int max, bool variants);

#endif
