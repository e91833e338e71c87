/* Deliberately broken planners for test_every_planner (invalid_planners.c). */
#ifndef TSIM_INVALID_PLANNERS_H
#define TSIM_INVALID_PLANNERS_H

#include "planner.h"

extern const tsim_planner_desc tsim_invalid_home_replica;    /* plans the evaluator rejects */
extern const tsim_planner_desc tsim_invalid_refuses_all;     /* refuses every shape */
extern const tsim_planner_desc tsim_invalid_nondeterministic; /* differs between runs */
extern const tsim_planner_desc tsim_invalid_hidden_state;    /* undeclared memory across records */

#endif
