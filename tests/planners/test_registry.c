/* The test-only planner list that src/registry/registry.c reads through a
 * weak reference: linked into the test programs, never into taotsim. Adding
 * a test planner is its own file plus one line here. */
#include "planner.h"

extern const tsim_planner_desc tsim_planner_greedy;

const tsim_planner_desc *const tsim_test_planners[] = {
    &tsim_planner_greedy,
    NULL,
};
